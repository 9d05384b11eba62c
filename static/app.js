// Headspace dashboard: agent cards and conversations, live over SSE.
// Plain JavaScript, no dependencies. Every piece of agent or user text goes through
// textContent, never innerHTML: agent text is data.
'use strict';

const $ = (id) => document.getElementById(id);

const hs = {
  agents: new Map(),        // id -> agent JSON
  open: null,               // agent id whose conversation is shown
  turns: new Map(),         // turn id -> { turn, el }
  order: [],                // [timestamp ms, id] sorted: the conversation's order
  done: new Set(),          // task ids with a completion: their progress collapses
  selected: null,           // selected card's agent id
  lastEventId: 0,           // the last SSE event applied: an event is never applied twice
  refresh: new Map(),       // agent id -> pending refresh timer
  dismissed: new Set(JSON.parse(localStorage.getItem('hs.dismissed') || '[]')),
  names: JSON.parse(localStorage.getItem('hs.names') || '{}'), // agent id -> the user's name for it
  metrics: { firstRenderMs: null, lastLoadMs: null, eventsApplied: 0, gaps: 0 },
};
window.__hs = hs; // for the browser test and the curious

// ---------- helpers -------------------------------------------------------------------------

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

async function api(path, options) {
  // The server takes actions only as JSON (a cross-site page cannot send that unasked).
  const o = Object.assign({}, options || {});
  if (o.method && o.method !== 'GET') o.headers = Object.assign({ 'content-type': 'application/json' }, o.headers || {});
  const r = await fetch(path, o);
  const body = await r.json().catch(() => ({}));
  if (r.status === 401) showLogin();
  if (!r.ok) throw new Error(body.error || `${r.status} ${r.statusText}`);
  if (o.withEventId) return { body, lastEventId: Number(r.headers.get('x-last-event-id') || 0) };
  return body;
}

// Off loopback the server wants its token: the page asks for it once and the server answers
// with an HttpOnly cookie, which EventSource sends too.
function showLogin() {
  const d = $('login');
  if (!d || d.open) return;
  d.showModal();
  $('login-token').focus();
}

async function login(e) {
  e.preventDefault();
  try {
    await api('/api/login', { method: 'POST', body: JSON.stringify({ token: $('login-token').value }) });
    location.reload();
  } catch (err) {
    $('login-error').textContent = err.message;
  }
}

function toast(message, kind) {
  const t = el('div', `toast ${kind || ''}`, message);
  $('toasts').appendChild(t);
  setTimeout(() => t.remove(), 4500);
}

function since(iso) {
  if (!iso) return '';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d`;
}

function clock(iso) {
  const d = new Date(iso);
  return isNaN(d) ? '' : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}


function options(question, agentId) {
  // AskUserQuestion: {questions: [{question, options: [{label}]}]}; permission: {options: [...]}.
  // With an agent, the first question's options are buttons that answer it in the pane (the
  // terminal numbers them from 1); the rest are shown as they are.
  const box = el('div', 'options');
  const qs = (question && question.questions) || (question ? [question] : []);
  qs.forEach((q, qi) => {
    (q.options || []).forEach((o, i) => {
      const label = typeof o === 'string' ? o : o.label;
      if (agentId !== undefined && qi === 0) {
        const b = el('button', 'answer', `${i + 1}. ${label}`);
        b.dataset.answer = String(i + 1);
        b.dataset.agent = String(agentId);
        box.appendChild(b);
      } else {
        box.appendChild(el('span', null, label));
      }
    });
  });
  return box.childElementCount ? box : null;
}

async function answer(agentId, option, button) {
  button.disabled = true;
  try {
    const r = await api(`/api/agents/${agentId}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ option: Number(option) }),
    });
    toast(`Answered “${r.label}”${r.verified ? '' : ' (the pane did not change; check it)'}`, r.verified ? 'ok' : 'error');
  } catch (e) {
    button.disabled = false;
    toast(`Could not answer: ${e.message}`, 'error');
  }
}

// ---------- cards ---------------------------------------------------------------------------

const END_REASON = {
  pane_closed: 'its tmux pane closed',
  process_exited: 'its Claude Code process exited',
  silent: 'nothing was heard from it for hours',
};

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
  if (a.tmux_pane) row.appendChild(el('span', 'pane', a.tmux_pane));
  const kebab = el('button', 'kebab');
  kebab.appendChild(icon('more'));
  kebab.title = 'Actions';
  kebab.setAttribute('aria-label', 'Actions');
  kebab.dataset.kebab = a.id;
  row.appendChild(kebab);
  c.appendChild(row);
  c.appendChild(el('div', 'title', agentName(a)));
  if (a.command) c.appendChild(el('div', 'command', a.command));
  if (a.last_turn && a.last_turn.text !== a.command) {
    const last = el('div', 'last');
    last.append(icon(a.last_turn.actor === 'user' ? 'user' : 'agent'), document.createTextNode(' '));
    inline(last, a.last_turn.text); // bold, code and links; blocks stay lines of text
    c.appendChild(last);
  }
  const now = nowLine(a);
  if (now) c.appendChild(now);
  if (c.dataset.shown === 'waiting') {
    const q = el('div', 'question');
    q.appendChild(askedBlock(a, true));
    c.appendChild(q);
  }
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

function visibleAgents() {
  const f = $('filter').value.trim().toLowerCase();
  return [...hs.agents.values()]
    .filter((a) => !hs.dismissed.has(a.id))
    .filter((a) => !f || [agentName(a), a.project, a.session_id, a.tmux_pane, a.state, SHOWN_LABEL[shownState(a)], a.command].some((v) => v && String(v).toLowerCase().includes(f)));
}

function renderAgents() {
  const root = $('cards');
  const agents = visibleAgents();
  const groups = new Map();
  for (const a of agents) {
    const p = a.project || 'other';
    if (!groups.has(p)) groups.set(p, []);
    groups.get(p).push(a);
  }
  const frag = document.createDocumentFragment();
  // Who needs attention first: groups by their most urgent agent, cards likewise.
  const rank = (a) => SHOWN_ORDER.indexOf(shownState(a));
  for (const list of groups.values()) list.sort((x, y) => rank(x) - rank(y) || (rank(x) === 0 ? waitingSince(x) - waitingSince(y) : 0) || x.id - y.id);
  const urgency = (list) => Math.min(...list.map(rank));
  const waited = (list) => (urgency(list) === 0 ? waitingSince(list[0]) : 0);
  for (const [p, list] of [...groups.entries()].sort((x, y) => urgency(x[1]) - urgency(y[1]) || waited(x[1]) - waited(y[1]) || x[0].localeCompare(y[0]))) {
    const section = el('section', 'project');
    section.dataset.project = p;
    section.appendChild(el('h2', null, `${p} (${list.length})`));
    const grid = el('div', 'grid');
    for (const a of list) grid.appendChild(card(a));
    section.appendChild(grid);
    frag.appendChild(section);
  }
  root.replaceChildren(frag);
  if (!agents.length) root.appendChild(emptyNote());
  renderSummary();
  renderNeeds();
  rerenderOrchestrations();
}

/// The header's counts, from the same shown state as the cards; kept current on every change.
function renderSummary() {
  const counts = {};
  for (const a of hs.agents.values()) { const k = shownState(a); counts[k] = (counts[k] || 0) + 1; }
  const parts = [el('span', 'count-total', `${hs.agents.size} agent${hs.agents.size === 1 ? '' : 's'}`)];
  for (const k of SHOWN_ORDER.filter((x) => counts[x])) {
    const c = el('span', 'count', `${counts[k]} ${SHOWN_LABEL[k]}`);
    c.dataset.shown = k;
    parts.push(c);
  }
  $('summary').replaceChildren(...parts);
}

let emptyTemplate = null;
function emptyNote() {
  return emptyTemplate.cloneNode(true);
}

function updateCard(a) {
  const before = hs.agents.get(a.id);
  hs.agents.set(a.id, a);
  noteTransition(a);
  const old = document.querySelector(`.card[data-id="${a.id}"]`);
  const sameProject = old && old.closest('.project') && old.closest('.project').dataset.project === (a.project || 'other');
  const sameRank = before && shownState(before) === shownState(a);
  if (old && sameProject && sameRank && !hs.dismissed.has(a.id)) {
    old.replaceWith(card(a));
    renderSummary();
    renderNeeds();
    rerenderOrchestrations();
  } else renderAgents();
  if (hs.open === a.id) convTitle(a);
}

async function loadAgents() {
  const { body: list, lastEventId } = await api('/api/agents', { withEventId: true });
  // The stream starts where this list ends: an event committed in between is not missed.
  if (!hs.streamFrom) hs.streamFrom = lastEventId;
  hs.agents = new Map(list.map((a) => [a.id, a]));
  for (const a of list) noteTransition(a);
  renderAgents();
  if (hs.open !== null) convTitle(hs.agents.get(hs.open));
}

function refreshAgent(id) {
  if (hs.refresh.has(id)) return;
  hs.refresh.set(id, setTimeout(async () => {
    hs.refresh.delete(id);
    try {
      updateCard(await api(`/api/agents/${id}`));
    } catch (e) { /* gone or server down: the next event or gap refetches */ }
  }, 80));
}

// ---------- conversation --------------------------------------------------------------------

function convTitle(a) {
  $('conv-title').textContent = a ? `${agentName(a)} · ${SHOWN_LABEL[shownState(a)]}` : '';
  $('conv-title').title = a ? `session ${a.session_id}` : '';
  const spent = usageLine(a, 'conv-usage');
  if (spent) $('conv-title').append(' · ', spent);
}

function bubble(t) {
  const b = el('div', `bubble ${t.actor} ${t.intent}`);
  b.dataset.id = t.id;
  const meta = el('div', 'meta');
  meta.append(el('span', null, t.actor === 'user' ? 'You' : 'Claude'), el('span', 'time', clock(t.timestamp)));
  if (t.intent === 'question') meta.appendChild(el('span', 'tag', 'asks you'));
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

// After a bulk load: every finished task in one pass over the conversation, not one per task.
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
  if (last && n && !last.el.querySelector('.steps')) {
    const b = el('button', 'steps', `show ${n} step${n === 1 ? '' : 's'}`);
    b.addEventListener('click', (ev) => {
      ev.stopPropagation();
      for (const [, id] of hs.order) {
        const e = hs.turns.get(id);
        if (e.turn.task_id === taskId && e.turn.intent === 'progress') e.el.classList.toggle('collapsed');
      }
    });
    last.el.appendChild(b);
  }
}

// Inserts or updates a turn at its place in (timestamp, id) order. Idempotent: the same turn
// twice (from an event and a refetch) is one bubble.
function upsertTurn(t, bulk) {
  const existing = hs.turns.get(t.id);
  if (existing) {
    const oldKey = key(existing.turn);
    const oldTask = existing.turn.task_id;
    existing.turn = Object.assign({}, existing.turn, t);
    const newKey = key(existing.turn);
    existing.el.querySelector('.time').textContent = clock(existing.turn.timestamp);
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

// The open conversation's turn count, kept current as turns arrive live.
function showTurnCount(suffix) {
  const n = hs.turns.size;
  $('conv-status').textContent = `${n} turn${n === 1 ? '' : 's'}${suffix || ''}`;
}

async function loadTurns(id) {
  const started = performance.now();
  let after = null;
  for (;;) {
    const page = await api(`/api/agents/${id}/turns?limit=2000${after ? `&after=${after}` : ''}`);
    if (hs.open !== id) return;
    const frag = document.createDocumentFragment();
    for (const t of page) upsertTurn(t, frag);
    $('turns').appendChild(frag);
    showTurnCount(page.length === 2000 ? ' · loading…' : '');
    if (page.length < 2000) break;
    after = page[page.length - 1].id;
  }
  collapseAll();
  hs.metrics.lastLoadMs = performance.now() - started;
}

async function openConversation(id) {
  hs.open = id;
  hs.turns = new Map();
  hs.order = [];
  hs.done = new Set();
  dropPending();
  hs.atEnd = true;
  $('new-below').hidden = true;
  $('turns').replaceChildren();
  $('conversation').hidden = false;
  convTitle(hs.agents.get(id));
  $('conv-status').textContent = 'loading…';
  try {
    await loadTurns(id);
    followEnd(true);
    refreshTaskFiles(id);
  } catch (e) {
    $('conv-status').textContent = `could not load: ${e.message}`;
  }
}

function closeConversation() {
  hs.open = null;
  $('conversation').hidden = true;
}

// ---------- live updates --------------------------------------------------------------------

function applyOnce(ev, fn) {
  const id = Number(ev.lastEventId || 0);
  if (id && id <= hs.lastEventId) return; // already applied
  if (id) hs.lastEventId = id;
  hs.metrics.eventsApplied += 1;
  fn(JSON.parse(ev.data));
}

async function refetchAll() {
  await loadAgents();
  if (hs.open !== null) await loadTurns(hs.open); // merged by id: nothing doubled
}

function connect() {
  const es = new EventSource(`/api/events${hs.streamFrom ? `?last_event_id=${hs.streamFrom}` : ''}`);
  es.onopen = () => { $('conn').dataset.state = 'live'; $('conn').title = 'Live'; };
  es.onerror = () => { $('conn').dataset.state = 'down'; $('conn').title = 'Reconnecting…'; };
  es.addEventListener('turn_created', (ev) => applyOnce(ev, (t) => {
    if (hs.open === t.agent_id) { settlePending(t); upsertTurn(t); showTurnCount(); }
    if (!hs.agents.has(t.agent_id)) loadAgents(); else refreshAgent(t.agent_id);
    if (hs.dismissed.delete(t.agent_id)) localStorage.setItem('hs.dismissed', JSON.stringify([...hs.dismissed]));
  }));
  es.addEventListener('turn_updated', (ev) => applyOnce(ev, (u) => {
    if (hs.open === u.agent_id && hs.turns.has(u.turn_id)) {
      upsertTurn({ id: u.turn_id, timestamp: u.timestamp, timestamp_source: u.timestamp_source, task_id: u.task_id, entry_uuid: u.entry_uuid });
    }
  }));
  for (const name of ['state_changed', 'card_refresh', 'session_ended']) {
    es.addEventListener(name, (ev) => applyOnce(ev, (d) => refreshAgent(d.agent_id)));
  }
  es.addEventListener('session_created', (ev) => applyOnce(ev, () => loadAgents()));
  es.addEventListener('session_activity', (ev) => applyOnce(ev, (d) => {
    refreshOrchestrations();
    // A transcript grew: its tool calls and tokens may have too.
    if (hs.agents.has(d.agent_id)) refreshAgent(d.agent_id);
    refreshSteps(d.agent_id);
  }));
  es.addEventListener('step_updated', (ev) => applyOnce(ev, (d) => { refreshAgent(d.agent_id); refreshSteps(d.agent_id); }));
  es.addEventListener('agent_merged', (ev) => applyOnce(ev, (m) => {
    // A session seen first in its transcript turned out to be this pane's agent.
    if (hs.open === m.from) openConversation(m.into);
    loadAgents();
  }));
  es.addEventListener('gap', (ev) => applyOnce(ev, () => {
    hs.metrics.gaps += 1;
    refetchAll().catch(() => {});
  }));
}

// ---------- wiring --------------------------------------------------------------------------

function applyTheme(t) {
  if (t) document.documentElement.dataset.theme = t; else delete document.documentElement.dataset.theme;
}

document.addEventListener('DOMContentLoaded', async () => {
  emptyTemplate = $('empty').cloneNode(true);
  drawIcons();
  wireComposer();
  wireFollow();
  $('notify').addEventListener('click', toggleNotifications);
  $('notify').setAttribute('aria-pressed', String(localStorage.getItem('hs.notify') === '1'));
  $('needs').addEventListener('click', (e) => {
    const b = e.target.closest('[data-answer]');
    if (b) { e.stopPropagation(); answer(b.dataset.agent, b.dataset.answer, b); return; }
    const o = e.target.closest('[data-open]');
    if (o) { openConversation(Number(o.dataset.open)); return; }
    const item = e.target.closest('.need');
    if (item) { attention.focusAgent = Number(item.dataset.id); renderNeeds(); }
  });
  applyTheme(localStorage.getItem('hs.theme'));
  $('agents').addEventListener('click', (e) => {
    const k = e.target.closest('[data-kebab]');
    if (k) { e.stopPropagation(); openMenu(Number(k.dataset.kebab), k); return; }
    const b = e.target.closest('[data-answer]');
    if (b) { e.stopPropagation(); answer(b.dataset.agent, b.dataset.answer, b); return; }
    const o = e.target.closest('[data-orch]');
    if (o) { e.stopPropagation(); orchestrate(o.dataset.orch, o.dataset.project, o); return; }
    const c = e.target.closest('.card');
    if (c) { const id = Number(c.dataset.id); select(id); openConversation(id); }
  });
  $('menu').addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (!b) return;
    const id = Number($('menu').dataset.agent);
    closeMenu();
    ({ open: openConversation, info: showInfo, rename, reconcile, dismiss, orchestrate: orchestrateProject })[b.dataset.action](id);
  });
  document.addEventListener('click', (e) => { if (!e.target.closest('#menu')) closeMenu(); });
  $('conv-close').addEventListener('click', closeConversation);
  $('conv-reconcile').addEventListener('click', () => hs.open !== null && reconcile(hs.open));
  $('filter').addEventListener('input', renderAgents);
  $('theme').addEventListener('click', () => {
    const dark = getComputedStyle(document.documentElement).getPropertyValue('--bg').trim() === '#14171c';
    const next = dark ? 'light' : 'dark';
    localStorage.setItem('hs.theme', next);
    applyTheme(next);
  });
  $('help').addEventListener('click', () => $('keys').showModal());
  $('login-form').addEventListener('submit', login);
  document.addEventListener('keydown', (e) => {
    if (e.target.matches('input, textarea') || document.querySelector('dialog[open]')) {
      if (e.key === 'Escape') e.target.blur();
      return;
    }
    const ids = [...document.querySelectorAll('.card')].map((c) => Number(c.dataset.id));
    const at = ids.indexOf(hs.selected);
    if (e.key === 'j' || e.key === 'ArrowDown') select(ids[Math.min(ids.length - 1, at + 1)] ?? ids[0]);
    else if (e.key === 'k' || e.key === 'ArrowUp') select(ids[Math.max(0, at - 1)] ?? ids[0]);
    else if (e.key === 'Enter' && hs.selected !== null) openConversation(hs.selected);
    else if (e.key === 'Escape') { closeMenu(); closeConversation(); }
    else if (e.key === 'r' && (hs.selected ?? hs.open) !== null) reconcile(hs.selected ?? hs.open);
    else if (e.key === '/') { e.preventDefault(); $('filter').focus(); }
    else if (e.key === 't') $('theme').click();
    else if (e.key === '?') $('keys').showModal();
    else if (/^[1-9]$/.test(e.key) && !e.ctrlKey && !e.metaKey && !e.altKey) { if (!answerByKey(Number(e.key))) return; }
    else return;
    e.preventDefault();
  });
  setInterval(() => {
    for (const s of document.querySelectorAll('.since')) s.textContent = since(s.dataset.since);
  }, 5000);
  try {
    await loadAgents();
  } catch (e) {
    toast(`Cannot load agents: ${e.message}`, 'error');
  }
  hs.metrics.firstRenderMs = performance.now();
  loadOrchestrations();
  setInterval(loadOrchestrations, 5000);
  loadAudit();
  setInterval(loadAudit, 30000);
  connect();
});
