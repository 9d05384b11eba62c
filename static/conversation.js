// Headspace dashboard: the open conversation. It opens at its end with the newest page of
// turns (or around one turn, from a search result) and pages back when the reader scrolls to
// the top, keeping what they look at in place; a window opened around a turn pages forward
// at the bottom. Turns live by id: the same turn from an event and a page is one bubble.
import { $, api, clock, el } from './helpers.js';
import { hs } from './state.js';
import { renderMarkdown } from './markdown.js';
import { options } from './questions.js';
import { SHOWN_LABEL, agentName, renderConvPending, shownState } from './needs.js';
import { placeTaskFiles, refreshSteps, refreshTaskFiles, setSteps, taskFiles, usageLine } from './steps.js';
import { composerFor, dropPending, followEnd } from './composer.js';
import { changesAgentChanged, hideChanges } from './changes.js';

const conv = {
  firstPage: 200,   // turns shown when a conversation opens
  page: 500,        // turns each further page brings
  older: false,     // the server may hold turns before the first fetched one
  newer: false,     // ... after the last fetched one (a window opened around a turn)
  oldest: null,     // the first fetched turn's key: older pages start before it
  newest: null,     // the last fetched turn's key
  loading: false,   // a page is on its way
  opening: 0,       // which opening a page belongs to: a page for a closed one is dropped
  held: new Map(),  // turn id -> live turn held while the window does not reach the end
};

export function convTitle(a) {
  $('conv-title').textContent = a ? `${agentName(a)} · ${SHOWN_LABEL[shownState(a)]}` : '';
  $('conv-title').title = a ? `session ${a.session_id}` : '';
  const spent = usageLine(a, 'conv-usage');
  if (spent) $('conv-title').append(' · ', spent);
  renderConvPending(a);
  changesAgentChanged(a);
  composerFor(a);
}

function bubble(t) {
  const b = el('div', `bubble ${t.actor} ${t.intent}`);
  b.dataset.id = t.id;
  const meta = el('div', 'meta');
  meta.append(el('span', null, t.actor === 'user' ? 'You' : speaker(t.agent_id)), el('span', 'time', clock(t.timestamp)));
  if (t.intent === 'question') meta.appendChild(el('span', 'tag', 'asks you'));
  markRewound(b, t);
  b.appendChild(meta);
  const text = el('div', 'text');
  text.appendChild(renderMarkdown(t.text));
  b.appendChild(text);
  if (t.question) {
    const o = options(t.question);
    if (o) b.appendChild(o);
  }
  if (t.steps) setSteps(b, t.steps);
  return b;
}

// The agent's name in its bubbles: the CLI it runs.
const SPEAKER = { codex: 'Codex', gemini: 'Gemini' };
function speaker(agentId) {
  return SPEAKER[hs.agents.get(agentId)?.kind] || 'Claude';
}

// A turn the agent CLI took back (Gemini's /rewind) stays, dimmed and tagged.
function markRewound(b, t) {
  const rewound = Boolean(t.rewound_at);
  b.classList.toggle('rewound', rewound);
  const tag = b.querySelector('.tag.rewound-tag');
  if (rewound && !tag) {
    const label = el('span', 'tag rewound-tag', 'rewound');
    label.title = `taken back with /rewind at ${clock(t.rewound_at)}`;
    b.querySelector('.meta').appendChild(label);
  } else if (!rewound && tag) tag.remove();
}

function key(t) {
  return [Date.parse(t.timestamp), t.id];
}

function before(a, b) {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

function position(k) {
  let lo = 0, hi = hs.order.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (before(hs.order[mid], k)) lo = mid + 1; else hi = mid;
  }
  return lo;
}

function placeAt(entry, index) {
  const container = $('turns');
  const next = index + 1 < hs.order.length ? hs.turns.get(hs.order[index + 1][1]) : null;
  container.insertBefore(entry.el, next ? next.el : null);
}

function fixTaskMark(index) {
  if (index < 0 || index >= hs.order.length) return;
  const cur = hs.turns.get(hs.order[index][1]);
  const prev = index > 0 ? hs.turns.get(hs.order[index - 1][1]) : null;
  const starts = !prev || prev.turn.task_id !== cur.turn.task_id;
  cur.el.classList.toggle('task-start', starts);
  if (starts) cur.el.dataset.taskLabel = `Task ${cur.turn.task_id}`;
}

// A finished task's progress steps: folded behind a "show N steps" button on its completion.
function collapse(taskId) {
  collapseGroup(taskId, taskGroups(taskId).get(taskId));
}

// After a page: every finished task in one pass over the conversation, not one per task.
function collapseAll() {
  const groups = taskGroups();
  for (const task of hs.done) collapseGroup(task, groups.get(task));
}

// Each task's progress steps and its last completion, in order (one task's, or all).
function taskGroups(only) {
  const groups = new Map();
  for (const [, id] of hs.order) {
    const e = hs.turns.get(id);
    const task = e.turn.task_id;
    if (only !== undefined && task !== only) continue;
    if (!groups.has(task)) groups.set(task, { steps: [], last: null });
    const g = groups.get(task);
    if (e.turn.intent === 'progress') g.steps.push(e);
    if (e.turn.intent === 'completion' || e.turn.intent === 'end_of_task') g.last = e;
  }
  return groups;
}

function collapseGroup(taskId, group) {
  if (!group) return;
  for (const e of group.steps) e.el.classList.add('collapsed');
  const n = group.steps.length;
  const last = group.last;
  if (!last || !n) return;
  const label = `show ${n} step${n === 1 ? '' : 's'}`;
  const shown = last.el.querySelector('.steps');
  // An older page can bring more of the task's steps: the count follows.
  if (shown) { if (shown.textContent !== label) shown.textContent = label; return; }
  const b = el('button', 'steps', label);
  b.addEventListener('click', (ev) => {
    ev.stopPropagation();
    for (const [, id] of hs.order) {
      const e = hs.turns.get(id);
      if (e.turn.task_id === taskId && e.turn.intent === 'progress') e.el.classList.toggle('collapsed');
    }
  });
  last.el.appendChild(b);
}

// Inserts or updates a turn at its place in (timestamp, id) order. Idempotent: the same turn
// twice (from an event and a refetch) is one bubble.
export function upsertTurn(t, bulk) {
  const existing = hs.turns.get(t.id);
  if (existing) {
    const oldKey = key(existing.turn);
    const oldTask = existing.turn.task_id;
    existing.turn = Object.assign({}, existing.turn, t);
    const newKey = key(existing.turn);
    existing.el.querySelector('.time').textContent = clock(existing.turn.timestamp);
    markRewound(existing.el, existing.turn);
    if (t.steps) setSteps(existing.el, t.steps);
    if (oldKey[0] !== newKey[0]) {
      const from = position(oldKey);
      hs.order.splice(from, 1);
      const to = position(newKey);
      hs.order.splice(to, 0, newKey);
      placeAt(existing, to);
      for (const i of [from - 1, from, to - 1, to, to + 1]) fixTaskMark(i);
    } else if (oldTask !== existing.turn.task_id) {
      // A claim moved the turn to another task in place: its divider and its neighbour's.
      const at = position(newKey);
      fixTaskMark(at);
      fixTaskMark(at + 1);
    }
    return;
  }
  const entry = { turn: t, el: bubble(t) };
  hs.turns.set(t.id, entry);
  const k = key(t);
  const atEnd = !hs.order.length || before(hs.order[hs.order.length - 1], k);
  const index = atEnd ? hs.order.length : position(k);
  hs.order.splice(index, 0, k);
  if (bulk && atEnd) bulk.appendChild(entry.el); else placeAt(entry, index);
  fixTaskMark(index);
  fixTaskMark(index + 1);
  if (hs.done.has(t.task_id) && t.intent === 'progress') entry.el.classList.add('collapsed');
  if (t.intent === 'completion' || t.intent === 'end_of_task') {
    hs.done.add(t.task_id);
    if (!bulk) collapse(t.task_id);
  }
  if (!bulk && index === hs.order.length - 1) followEnd(false);
}

/// A turn from the live stream. One that falls outside the fetched span waits: before it,
/// the older pages bring it; after it, while the window does not reach the end, it is held
/// until the pages forward do.
export function liveTurn(t) {
  const k = key(t);
  if (conv.newer) {
    conv.held.set(t.id, t);
    $('new-below').hidden = false;
    return;
  }
  if (conv.older && conv.oldest && before(k, conv.oldest) && !hs.turns.has(t.id)) return;
  upsertTurn(t);
  showTurnCount();
}

// The open conversation's turn count, kept current as turns arrive live; while older or
// newer turns are still on the server, how many of the agent's are shown.
function showTurnCount(suffix) {
  const n = hs.turns.size;
  const a = hs.agents.get(hs.open);
  const more = conv.older || conv.newer;
  const total = a && Number.isFinite(a.turn_count) ? Math.max(a.turn_count, n) : null;
  const shown = !more ? `${n} turn${n === 1 ? '' : 's'}` : total !== null ? `${n} of ${total} turns` : `${n} turns shown`;
  $('conv-status').textContent = `${shown}${suffix || ''}`;
}

// Notes the span a fetched page covers.
function spanOf(page) {
  if (!page.length) return;
  const first = key(page[0]), last = key(page[page.length - 1]);
  if (!conv.oldest || before(first, conv.oldest)) conv.oldest = first;
  if (!conv.newest || before(conv.newest, last)) conv.newest = last;
}

/// Adds a page of turns all older than those shown, keeping in place what the reader sees.
function prependPage(page) {
  const box = $('turns');
  const first = hs.order.length ? hs.order[0] : null;
  // A turn that is not older than every shown one (it came live meanwhile) goes in its place.
  const fresh = page.filter((t) => !hs.turns.has(t.id) && (!first || before(key(t), first)));
  for (const t of page) if (!hs.turns.has(t.id) && !fresh.includes(t)) upsertTurn(t);
  if (!fresh.length) return;
  const anchor = hs.order.length ? hs.turns.get(hs.order[0][1]).el : null;
  const top = anchor ? anchor.getBoundingClientRect().top : 0;
  const frag = document.createDocumentFragment();
  const keys = [];
  for (const t of fresh) {
    const entry = { turn: t, el: bubble(t) };
    hs.turns.set(t.id, entry);
    keys.push(key(t));
    frag.appendChild(entry.el);
    if (t.intent === 'completion' || t.intent === 'end_of_task') hs.done.add(t.task_id);
  }
  hs.order.splice(0, 0, ...keys);
  box.insertBefore(frag, anchor || box.firstChild);
  for (let i = 0; i <= fresh.length; i++) fixTaskMark(i);
  collapseAll();
  if (taskFiles.agent === hs.open) placeTaskFiles();
  // Scroll anchoring may already have kept the old first turn in place; if not, this does.
  if (anchor) box.scrollTop += anchor.getBoundingClientRect().top - top;
}

/// Adds a page of turns in (timestamp, id) order where they belong.
function addPage(page) {
  const frag = document.createDocumentFragment();
  for (const t of page) upsertTurn(t, frag);
  $('turns').appendChild(frag);
  collapseAll();
  if (taskFiles.agent === hs.open) placeTaskFiles(); // an older page brings task starts
}

/// Opens an agent's conversation at its end, or around one of its turns; true once shown.
export async function openConversation(id, around) {
  hideChanges(false); // another conversation (or this one again) opens on its turns
  hs.open = id;
  hs.turns = new Map();
  hs.order = [];
  hs.done = new Set();
  // Opened around a turn, the window may not reach the end: live turns wait until it is known.
  Object.assign(conv, { older: false, newer: around !== undefined, oldest: null, newest: null, loading: true, held: new Map() });
  const opening = ++conv.opening;
  dropPending();
  hs.atEnd = around === undefined;
  $('new-below').hidden = true;
  $('turns').replaceChildren();
  $('conversation').hidden = false;
  // Steps committed while the first page was read come with no event of their own.
  refreshSteps(id);
  convTitle(hs.agents.get(id));
  $('conv-status').textContent = 'loading…';
  const started = performance.now();
  try {
    const n = conv.firstPage;
    const page = await api(`/api/agents/${id}/turns?${around === undefined ? `newest=${n}` : `around=${around}&limit=${n}`}`);
    if (conv.opening !== opening) return false;
    spanOf(page);
    if (around === undefined) conv.older = page.length === n;
    else {
      // The server gives n/2 turns before the sought one and the rest from it on: a full
      // side may have more behind it.
      const at = page.findIndex((t) => t.id === around);
      conv.older = at === n >> 1;
      conv.newer = page.length - at === n - (n >> 1);
    }
    addPage(page);
    if (!conv.newer) joinHeld();
    conv.loading = false;
    showTurnCount();
    hs.metrics.lastLoadMs = performance.now() - started;
    if (around === undefined) followEnd(true);
    requestAnimationFrame(fillView);
    refreshTaskFiles(id);
    return true;
  } catch (e) {
    if (conv.opening === opening) Object.assign(conv, { loading: false, newer: false });
    $('conv-status').textContent = `could not load: ${e.message}`;
    return false;
  }
}

/// Fetches the next page back (`older`) or forward, unless one is on its way.
async function loadPage(older) {
  if (hs.open === null || conv.loading || !(older ? conv.older : conv.newer)) return;
  const id = hs.open, opening = conv.opening;
  const from = older ? conv.oldest : conv.newest;
  conv.loading = true;
  showTurnCount(' · loading…');
  try {
    const page = await api(`/api/agents/${id}/turns?${older ? 'before' : 'after'}=${from[1]}&limit=${conv.page}`);
    if (conv.opening !== opening) return;
    spanOf(page);
    if (older) { conv.older = page.length === conv.page; prependPage(page); } else {
      conv.newer = page.length === conv.page;
      addPage(page);
      if (!conv.newer) joinHeld();
    }
    conv.loading = false;
    showTurnCount();
    requestAnimationFrame(fillView);
  } catch (e) {
    if (conv.opening === opening) { conv.loading = false; showTurnCount(` · could not load: ${e.message}`); }
  }
}

/// The window reaches the end now: the turns that arrived live meanwhile join it.
function joinHeld() {
  for (const t of conv.held.values()) upsertTurn(t);
  conv.held = new Map();
}

/// Near the top, older turns come; near the bottom of a window, newer ones.
function fillView() {
  const box = $('turns');
  if ($('conversation').hidden || conv.loading) return;
  if (box.scrollTop < box.clientHeight && conv.older) loadPage(true);
  else if (box.scrollHeight - box.scrollTop - box.clientHeight < box.clientHeight && conv.newer) loadPage(false);
}

/// After a gap in the stream: the fetched span again, from its first turn on, merged by id
/// (nothing doubled), so a turn committed meanwhile anywhere in it shows.
export async function refetchOpen() {
  const id = hs.open, opening = conv.opening;
  if (id === null) return;
  if (!conv.oldest) {
    // Nothing fetched yet (an empty conversation, or its first page failed): the newest page.
    const page = await api(`/api/agents/${id}/turns?newest=${conv.firstPage}`);
    if (conv.opening !== opening) return;
    spanOf(page);
    conv.older = page.length === conv.firstPage;
    addPage(page);
    showTurnCount();
    return;
  }
  let after = conv.oldest[1];
  for (;;) {
    const page = await api(`/api/agents/${id}/turns?after=${after}&limit=2000`);
    if (conv.opening !== opening) return;
    const keep = conv.newer ? page.filter((t) => !before(conv.newest, key(t))) : page;
    for (const t of keep) upsertTurn(t);
    spanOf(keep);
    if (page.length < 2000 || keep.length < page.length) break;
    after = page[page.length - 1].id;
  }
  collapseAll();
  showTurnCount();
}

export function closeConversation() {
  hideChanges(false);
  hs.open = null;
  conv.opening++;
  conv.loading = false;
  $('conversation').hidden = true;
}

/// Wires the conversation's scrolling (called once by app.js at load): older or newer pages
/// as the reader nears an edge, and following its end.
export function wireConversation() {
  $('turns').addEventListener('scroll', fillView, { passive: true });
  wireFollow();
}

function wireFollow() {
  const box = $('turns');
  hs.atEnd = true;
  let last = 0;
  box.addEventListener('scroll', () => {
    // Only the reader moving up leaves the end (content growing below does not); reaching
    // the end again follows again (the conversation's end: not a window's opened around a turn).
    if (!conv.newer && box.scrollHeight - box.scrollTop - box.clientHeight < 48) hs.atEnd = true;
    else if (box.scrollTop < last - 2) hs.atEnd = false;
    last = box.scrollTop;
    if (hs.atEnd) $('new-below').hidden = true;
  });
  // Below a window opened around a turn, the end is a page away: the conversation opens there.
  $('new-below').addEventListener('click', () => (conv.newer && hs.open !== null ? openConversation(hs.open) : followEnd(true)));
}
