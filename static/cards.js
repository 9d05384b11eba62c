// Headspace dashboard: the agent cards, grouped by project (by machine first when agents span
// several: machines.js), who needs attention first, and the header's counts. A full render
// happens on load, on a filter and on a rename; a live change touches only its own card: the
// card is made again and put at its place in its group, the group moves only if its place
// changed, and the counts are kept by adding and subtracting. Changes that arrive together
// are drawn once, on an animation frame at most ten times a second. What is drawn is kept in
// `cards` (state.js).
import { $, api, el, since } from './helpers.js';
import { cards, hs } from './state.js';
import { icon } from './icons.js';
import { inline } from './markdown.js';
import { SHOWN_LABEL, SHOWN_ORDER, agentName, attention, drawKeyTarget, noteAttention, noteTransition, renderNeeds, shownState, waitingAgents } from './needs.js';
import { dropEmptyMachine, groupOf, groupParent, machineLastSeen, machineOf, machines, multiMachine, offlineLabel, renderMachineHead } from './machines.js';
import { nowLine, usageLine } from './steps.js';
import { orchestrationNames, rerenderOrchestrations } from './orchestrations.js';
import { convTitle } from './conversation.js';

// Cards are drawn at most this often: at a hundred events a second, the changes of the last
// quarter second share one style, layout and paint instead of one each (and Chromium's
// visibility check of every `content-visibility: auto` card, 5 ms a frame at 1,000 cards).
// A change after a quiet spell is drawn at the next frame.
const DRAW_GAP_MS = 250;

const END_REASON = {
  pane_closed: 'its tmux pane closed',
  process_exited: 'its agent process exited',
  silent: 'nothing was heard from it for hours',
};

// The agent CLIs other than Claude Code, as their cards name them.
const KIND_LABEL = { codex: 'Codex', gemini: 'Gemini' };

function card(a) {
  const c = el('article', 'card');
  c.dataset.id = a.id;
  c.dataset.state = a.state;
  c.dataset.activity = a.activity;
  c.dataset.shown = shownState(a);
  c.tabIndex = -1;
  if (hs.selected === a.id) c.classList.add('selected');
  const row = el('div', 'row');
  const stateTag = el('span', 'state', SHOWN_LABEL[c.dataset.shown]);
  // Why the reaper ended it, in plain words (the card's end_reason).
  if (a.end_reason) stateTag.title = END_REASON[a.end_reason] || a.end_reason;
  row.append(stateTag);
  // Its machine stopped reporting: what it does is not known, only since when.
  if (c.dataset.shown === 'unknown') row.appendChild(el('span', 'offline', offlineLabel(machineLastSeen(machineOf(a), a))));
  if (KIND_LABEL[a.kind]) row.appendChild(el('span', 'kind', KIND_LABEL[a.kind]));
  if (a.tmux_pane) row.appendChild(el('span', 'pane', a.tmux_pane));
  const kebab = el('button', 'kebab');
  kebab.appendChild(icon('more'));
  kebab.title = 'Actions';
  kebab.setAttribute('aria-label', 'Actions');
  kebab.dataset.kebab = a.id;
  row.appendChild(kebab);
  c.appendChild(row);
  c.appendChild(el('div', 'title', agentName(a)));
  // Every card has the same lines, present or empty, each of a fixed height: a card never
  // grows or shrinks with what its agent does, so no card around it moves (issue 33, point 4).
  c.appendChild(el('div', 'command', a.command || ''));
  const last = el('div', 'last');
  if (a.last_turn && a.last_turn.text !== a.command) {
    last.append(icon(a.last_turn.actor === 'user' ? 'user' : 'agent'), document.createTextNode(' '));
    inline(last, a.last_turn.text); // bold, code and links; blocks stay lines of text
  }
  c.appendChild(last);
  // One status line: what it does now, or what it waits on (answered under "Needs you",
  // where the options are: the card does not repeat them).
  let status = nowLine(a);
  if (c.dataset.shown === 'waiting') {
    status = el('div', 'question');
    const q = a.question;
    const what = q ? (q.question && q.question.tool && q.question.tool.name ? `${q.question.tool.name}: ${q.text}` : q.text) : 'a permission';
    status.append(el('span', 'question-text', `Waits on ${what}`), el('span', 'question-where', ' · answer under Needs you'));
  }
  if (!status) status = el('div'); // nothing to say: the line stays, empty
  status.classList.add('status-line');
  c.appendChild(status);
  const foot = el('div', 'foot');
  foot.append(el('span', null, `${a.turn_count} turn${a.turn_count === 1 ? '' : 's'}`));
  const t = el('span', 'since', since(a.state_since));
  t.dataset.since = a.state_since || '';
  foot.append(t);
  const spent = usageLine(a);
  if (spent) foot.append(spent);
  c.appendChild(foot);
  return c;
}

/// Whether the agent's card is shown: not dismissed, and matching the filter.
function cardShown(a, filter) {
  if (hs.dismissed.has(a.id)) return false;
  const f = filter === undefined ? $('filter').value.trim().toLowerCase() : filter;
  return !f || [agentName(a), a.project, a.machine, a.session_id, a.tmux_pane, a.state, SHOWN_LABEL[shownState(a)], a.command, KIND_LABEL[a.kind]].some((v) => v && String(v).toLowerCase().includes(f));
}

function visibleAgents() {
  const f = $('filter').value.trim().toLowerCase();
  return [...hs.agents.values()].filter((a) => cardShown(a, f));
}

// A stable order: cards in the order their agents were first seen (a new one appends), groups
// by their oldest agent. Attention shows in place (the card's state, the strip, the title),
// never by moving cards: the card under the pointer stays the one the user meant.
function cardOrder(x, y) {
  return x.id - y.id;
}

function groupKey(project, first) {
  return { project, first: first.id };
}

function groupOrder(x, y) {
  return x.first - y.first || x.project.localeCompare(y.project);
}

function groupTitle(project, n) {
  return `${project} (${n})`;
}

/// A new group of cards `id` (see groupOf), appended to `parent` (orderGroups places it).
function newGroup(id, project, machine, parent) {
  const section = el('section', 'project');
  section.dataset.project = project;
  section.dataset.group = id;
  const head = el('h2', null, groupTitle(project, 0));
  const grid = el('div', 'grid');
  section.append(head, grid);
  const g = { section, head, grid, project, machine };
  cards.groups.set(id, g);
  parent.appendChild(section);
  return g;
}

export function renderAgents() {
  const root = $('cards');
  const agents = visibleAgents();
  machines.multi = multiMachine();
  machines.blocks = new Map();
  const lists = new Map();
  for (const a of agents) {
    const id = groupOf(a);
    if (!lists.has(id)) lists.set(id, []);
    lists.get(id).push(a);
  }
  cards.els = new Map();
  cards.groups = new Map();
  cards.dirty.clear();
  const frag = document.createDocumentFragment();
  const keyed = [...lists.values()].map((list) => {
    list.sort(cardOrder);
    return [groupKey(list[0].project || 'other', list[0]), list];
  });
  for (const [key, list] of keyed.sort((x, y) => groupOrder(x[0], y[0]))) {
    const machine = machineOf(list[0]);
    const g = newGroup(groupOf(list[0]), key.project, machine, groupParent(machine, frag));
    g.head.textContent = groupTitle(key.project, list.length);
    for (const a of list) {
      const c = card(a);
      cards.els.set(a.id, c);
      g.grid.appendChild(c);
    }
  }
  root.replaceChildren(frag);
  for (const name of machines.blocks.keys()) renderMachineHead(name);
  cards.empty = agents.length ? null : root.appendChild(emptyNote());
  recount();
  renderSummary();
  renderNeeds();
  rerenderOrchestrations();
}

// ---------- the summary ---------------------------------------------------------------------

/// Counts every agent's shown state again (after a full load).
function recount() {
  cards.counts = new Map();
  for (const a of hs.agents.values()) count(shownState(a), 1);
}

function count(shown, by) {
  const n = (cards.counts.get(shown) || 0) + by;
  if (n) cards.counts.set(shown, n); else cards.counts.delete(shown);
}

/// The header's counts, from the same shown state as the cards; kept current on every change
/// and touching only the numbers that changed.
function renderSummary() {
  const box = $('summary');
  const total = hs.agents.size;
  const shown = SHOWN_ORDER.filter((k) => cards.counts.get(k));
  const same = box.childElementCount === shown.length + 1 && shown.every((k) => cards.countEls.has(k)) && cards.countEls.size === shown.length;
  if (!same) {
    cards.countEls = new Map();
    const parts = [el('span', 'count-total')];
    for (const k of shown) {
      const c = el('span', 'count');
      c.dataset.shown = k;
      cards.countEls.set(k, c);
      parts.push(c);
    }
    box.replaceChildren(...parts);
    cards.drawnTotal = null;
  }
  if (cards.drawnTotal !== total) {
    box.firstChild.textContent = `${total} agent${total === 1 ? '' : 's'}`;
    cards.drawnTotal = total;
  }
  for (const k of shown) {
    const text = `${cards.counts.get(k)} ${SHOWN_LABEL[k]}`;
    const c = cards.countEls.get(k);
    if (c.textContent !== text) c.textContent = text;
  }
}

/// What the cards area says when it shows no card: how to start, when there is no agent at
/// all; else that the filter (or dismissing) hides every agent there is.
function emptyNote() {
  const note = cards.emptyTemplate.cloneNode(true);
  const known = hs.agents.size;
  if (known) {
    const f = $('filter').value.trim();
    note.textContent = f
      ? `No agent matches “${f}” (${known} ${known === 1 ? 'agent' : 'agents'} in all): clear the filter to see them.`
      : `Every agent's card is dismissed (${known} in all).`;
  }
  return note;
}

// ---------- one card at a time --------------------------------------------------------------

/// A card's agent changed: its data now, its card on the next frame.
function updateCard(a) {
  const before = hs.agents.get(a.id);
  // A refresh that finds nothing new (a watchdog's card_refresh, say) changes nothing.
  if (before && cards.els.has(a.id) === cardShown(a) && JSON.stringify(before) === JSON.stringify(a)) return;
  hs.agents.set(a.id, a);
  noteTransition(a);
  if (before) count(shownState(before), -1);
  count(shownState(a), 1);
  const waiting = shownState(a) === 'waiting' || (before && shownState(before) === 'waiting');
  // The tab's title and notifications do not wait for a frame (a hidden tab gets none).
  if (waiting) { cards.needsDirty = true; attention.waitingCount = waitingAgents().length; }
  noteAttention(attention.waitingCount || 0);
  if (orchestrationNames(a)) cards.orchDirty = true;
  cards.dirty.add(a.id);
  if (hs.open === a.id) convTitle(a);
  if (cards.scheduled) return;
  cards.scheduled = true;
  setTimeout(() => {
    cards.frame = requestAnimationFrame(drawCards);
    cards.timer = setTimeout(drawCards, 250); // a hidden tab gets no frames
  }, Math.max(0, cards.drawnAt + DRAW_GAP_MS - performance.now()));
}

/// Draws every change queued since the last frame.
function drawCards() {
  cancelAnimationFrame(cards.frame);
  clearTimeout(cards.timer);
  cards.frame = null;
  cards.scheduled = false;
  const started = cards.drawnAt = performance.now();
  // Agents came to span several machines, or one again: the cards regroup, all at once.
  if (multiMachine() !== machines.multi) {
    renderAgents();
    cards.needsDirty = cards.orchDirty = false; // drawn by renderAgents
    hs.metrics.draws += 1;
    hs.metrics.drawMs += performance.now() - started;
    return;
  }
  const ids = [...cards.dirty];
  cards.dirty.clear();
  const touched = new Set();
  // First every changed card leaves its group, so that the groups hold only cards in order.
  for (const id of ids) {
    const old = cards.els.get(id);
    if (!old) continue;
    cards.els.delete(id);
    const group = old.parentNode && old.parentNode.parentNode && old.parentNode.parentNode.dataset.group;
    old.remove();
    if (group !== undefined) touched.add(group);
  }
  const filter = $('filter').value.trim().toLowerCase();
  for (const id of ids) {
    const a = hs.agents.get(id);
    if (!a || !cardShown(a, filter)) continue;
    const gid = groupOf(a);
    const g = cards.groups.get(gid) || newGroup(gid, a.project || 'other', machineOf(a), groupParent(machineOf(a)));
    const c = card(a);
    cards.els.set(id, c);
    g.grid.insertBefore(c, g.grid.children[cardIndex(g.grid, a)] || null);
    touched.add(gid);
  }
  const parents = new Set();
  const touchedMachines = new Set();
  for (const gid of touched) {
    const g = cards.groups.get(gid);
    if (!g) continue;
    touchedMachines.add(g.machine);
    const n = g.grid.childElementCount;
    if (!n) { g.section.remove(); cards.groups.delete(gid); continue; }
    parents.add(g.section.parentNode);
    const title = groupTitle(g.project, n);
    if (g.head.textContent !== title) g.head.textContent = title;
  }
  for (const parent of parents) orderGroups(parent);
  if (machines.multi) {
    for (const name of touchedMachines) { dropEmptyMachine(name); renderMachineHead(name); }
  }
  // Kept by reference: a selector would walk every card.
  if (cards.groups.size && cards.empty) { cards.empty.remove(); cards.empty = null; }
  else if (!cards.groups.size && !cards.empty) cards.empty = $('cards').appendChild(emptyNote());
  renderSummary();
  if (cards.needsDirty) { cards.needsDirty = false; renderNeeds(); } else drawKeyTarget(); // its card may be new
  if (cards.orchDirty) { cards.orchDirty = false; rerenderOrchestrations(); }
  hs.metrics.draws += 1;
  hs.metrics.drawMs += performance.now() - started;
}

/// Where the agent's card goes in its group's grid (whose cards are in order).
function cardIndex(grid, a) {
  const list = grid.children;
  let lo = 0, hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const other = hs.agents.get(Number(list[mid].dataset.id));
    if (other && cardOrder(other, a) < 0) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/// Puts the groups under `root` (the cards, or a machine's block) in order, moving as few as
/// it can: a moved group's cards are styled again.
function orderGroups(root) {
  const current = [...root.children].filter((s) => s.matches('section.project') && cards.groups.has(s.dataset.group));
  const keyOf = new Map(current.map((s) => {
    const first = hs.agents.get(Number(cards.groups.get(s.dataset.group).grid.firstElementChild.dataset.id));
    return [s, groupKey(s.dataset.project, first)];
  }));
  const want = [...current].sort((x, y) => groupOrder(keyOf.get(x), keyOf.get(y)));
  if (want.every((s, i) => s === current[i])) return;
  // The longest run already in order stays; the others move in front of their successor.
  const place = new Map(want.map((s, i) => [s, i]));
  const seq = current.map((s) => place.get(s));
  const len = seq.map(() => 1), prev = seq.map(() => -1);
  let best = 0;
  for (let i = 0; i < seq.length; i++) {
    for (let j = 0; j < i; j++) if (seq[j] < seq[i] && len[j] + 1 > len[i]) { len[i] = len[j] + 1; prev[i] = j; }
    if (len[i] > len[best]) best = i;
  }
  const stay = new Set();
  for (let i = best; i >= 0; i = prev[i]) stay.add(current[i]);
  for (let i = want.length - 1; i >= 0; i--) {
    if (!stay.has(want[i])) root.insertBefore(want[i], i + 1 < want.length ? want[i + 1] : null);
  }
}

/// Every card again from the server (a machine went offline or came back: machines.js); drawn
/// again from what the page has when the server does not answer.
export async function reloadAgents() {
  try { await loadAgents(); } catch (e) { renderAgents(); }
}

export async function loadAgents() {
  const { body: list, lastEventId } = await api('/api/agents', { withEventId: true });
  // The stream starts where this list ends: an event committed in between is not missed.
  if (!hs.streamFrom) hs.streamFrom = lastEventId;
  hs.agents = new Map(list.map((a) => [a.id, a]));
  for (const a of list) noteTransition(a);
  renderAgents();
  if (hs.open !== null) convTitle(hs.agents.get(hs.open));
}

export function refreshAgent(id) {
  if (hs.refresh.has(id)) return;
  hs.refresh.set(id, setTimeout(async () => {
    hs.refresh.delete(id);
    try {
      updateCard(await api(`/api/agents/${id}`));
    } catch (e) { /* gone or server down: the next event or gap refetches */ }
  }, 80));
}
