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

const STATE_LABEL = { idle: 'Idle', commanded: 'Commanded', processing: 'Processing', awaiting_input: 'Awaiting input', complete: 'Complete' };

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

// ---------- orchestrations ------------------------------------------------------------------
// One panel per project with a run (`headspace orchestrate`): phase and steps, batches, cost
// against budget, the last decisions, what needs attention, and the buttons the run's status
// allows. Refreshed every few seconds and when a session's transcript grows.

const STEPS = ['design', 'analyze', 'implement', 'verify', 'merge'];
const ORCH_ACTIONS = {
  running: [['pause', 'Pause'], ['cancel', 'Cancel']],
  paused: [['resume', 'Resume'], ['cancel', 'Cancel']],
  needs_attention: [['resume', 'Resume'], ['cancel', 'Cancel']],
  waiting_merge: [['merge', 'Merge'], ['cancel', 'Cancel']],
  waiting_user_gate: [['confirm-gate', 'Confirm gate'], ['cancel', 'Cancel']],
};

function orchestrationPanel(o) {
  const p = el('article', 'orch');
  p.dataset.project = o.project;
  p.dataset.status = o.status;
  const head = el('div', 'row');
  const name = String(o.project).split('/').filter(Boolean).pop() || o.project;
  const phase = o.phase && o.phase.number ? ` · phase ${o.phase.number}${o.phase.name ? ` ${o.phase.name}` : ''}` : '';
  // A run nothing drives is not shown as running: its runner is gone until it is resumed.
  const shown = o.runnerGone ? `${String(o.status).replace(/_/g, ' ')} · runner gone` : String(o.status).replace(/_/g, ' ');
  head.append(el('span', 'title', `${name}${phase}`), el('span', 'status', shown));
  p.appendChild(head);
  const bar = el('ol', 'steps-bar');
  const current = o.step && o.step.current;
  const at = STEPS.indexOf(current);
  STEPS.forEach((s, i) => {
    const li = el('li', null, s);
    li.dataset.step = s;
    if (i < at || (i === at && o.step.status === 'complete') || o.status === 'completed') li.classList.add('done');
    if (i === at && o.status !== 'completed') li.classList.add('current');
    if (i === at && (o.step.status === 'failed' || o.step.status === 'blocked')) li.classList.add('failed');
    bar.appendChild(li);
  });
  p.appendChild(bar);
  const facts = [];
  if (o.batches && o.batches.total > 0) facts.push(`batch ${Math.min(o.batches.current + 1, o.batches.total)} of ${o.batches.total}`);
  facts.push(`$${Number(o.costUsd || 0).toFixed(2)} of $${Number(o.budgetUsd || 0).toFixed(2)}`);
  if (o.runner && o.runner.alive) facts.push(`runner ${o.runner.pid}`);
  else if (o.runner || o.runnerGone) facts.push('runner stopped');
  p.appendChild(el('div', 'facts', facts.join(' · ')));
  if (o.stateError) p.appendChild(el('div', 'attention', o.stateError));
  if (o.recoveryContext) {
    const r = el('div', 'attention', o.recoveryContext.issue || 'Needs attention');
    const opts = o.recoveryContext.options || [];
    if (opts.length) r.appendChild(el('div', 'hint', `Options: ${opts.map((x) => (typeof x === 'string' ? x : x.label || x.action || JSON.stringify(x))).join(' · ')}`));
    p.appendChild(r);
  }
  const blocked = o.blockedTasks || [];
  if (blocked.length) {
    p.appendChild(el('div', 'hint blocked', `Skipped: ${blocked.map((b) => (b.reason ? `${b.task} (${b.reason})` : b.task)).join(', ')}`));
  }
  const log = el('ul', 'decisions');
  for (const d of (o.decisions || []).slice(-5).reverse()) {
    const li = el('li');
    li.append(el('span', 'time', clock(d.timestamp)), el('b', null, ` ${d.decision}`), document.createTextNode(` ${d.reason || ''}`));
    log.appendChild(li);
  }
  if (log.childElementCount) p.appendChild(log);
  const past = o.pastRuns || [];
  if (past.length) {
    const d = el('details', 'past-runs');
    d.appendChild(el('summary', 'hint', `${past.length} earlier run${past.length > 1 ? 's' : ''}`));
    const ul = el('ul', 'decisions');
    for (const r of past) {
      const why = r.error || (r.lastDecision && r.lastDecision.reason) || '';
      ul.appendChild(el('li', null, `${clock(r.startedAt)} ${String(r.status).replace(/_/g, ' ')} · $${Number(r.costUsd || 0).toFixed(2)} of $${Number(r.budgetUsd || 0).toFixed(2)}${why ? ` · ${why}` : ''}`));
    }
    d.appendChild(ul);
    p.appendChild(d);
  }
  const actions = el('div', 'actions');
  const buttons = [...(ORCH_ACTIONS[o.status] || [])];
  // Resume restarts a gone runner, whatever the run's status.
  if (o.runnerGone && !buttons.some(([c]) => c === 'resume')) buttons.unshift(['resume', 'Resume']);
  if (blocked.length && ORCH_ACTIONS[o.status]) buttons.push(['unblock', 'Unblock tasks']);
  for (const [command, label] of buttons) {
    const b = el('button', 'small', label);
    b.dataset.orch = command;
    b.dataset.project = o.project;
    actions.appendChild(b);
  }
  if (actions.childElementCount) p.appendChild(actions);
  return p;
}

function renderOrchestrations(list) {
  const root = $('orchestrations');
  // A start form being filled in stays across refreshes.
  const form = root.querySelector('.orch-start');
  root.replaceChildren(...(form ? [form] : []), ...list.map(orchestrationPanel));
  root.hidden = list.length === 0 && !form;
}

async function loadOrchestrations() {
  try {
    renderOrchestrations(await api('/api/orchestrations'));
  } catch (e) { /* the server is down: the next refresh tries again */ }
}

let orchTimer = null;
function refreshOrchestrations() {
  if (orchTimer) return;
  orchTimer = setTimeout(() => { orchTimer = null; loadOrchestrations(); }, 500);
}

async function orchestrate(command, project, button) {
  button.disabled = true;
  try {
    const r = await api(`/api/orchestrate/${command}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project }),
    });
    toast(`Orchestration ${String(r.status).replace(/_/g, ' ')}`, 'ok');
  } catch (e) {
    toast(`Could not ${command}: ${e.message}`, 'error');
  }
  await loadOrchestrations();
}

// ---------- cards ---------------------------------------------------------------------------

function card(a) {
  const c = el('article', 'card');
  c.dataset.id = a.id;
  c.dataset.state = a.state;
  c.dataset.activity = a.activity;
  c.tabIndex = -1;
  if (hs.selected === a.id) c.classList.add('selected');
  const row = el('div', 'row');
  row.append(el('span', 'state', STATE_LABEL[a.state] || a.state), el('span', 'activity', a.activity));
  if (a.tmux_pane) row.appendChild(el('span', 'pane', a.tmux_pane));
  const kebab = el('button', 'kebab', '⋯');
  kebab.title = 'Actions';
  kebab.setAttribute('aria-label', 'Actions');
  kebab.dataset.kebab = a.id;
  row.appendChild(kebab);
  c.appendChild(row);
  c.appendChild(el('div', 'title', `${a.project || 'agent'} · ${String(a.session_id).slice(0, 8)}`));
  if (a.command) c.appendChild(el('div', 'command', a.command));
  if (a.last_turn && a.last_turn.text !== a.command) {
    c.appendChild(el('div', 'last', `${a.last_turn.actor === 'user' ? '›' : '⏺'} ${a.last_turn.text}`));
  }
  if ((a.state === 'awaiting_input' || a.activity === 'waiting') && a.question) {
    const q = el('div', 'question', a.question.text);
    const o = options(a.question.question, a.id);
    if (o) q.appendChild(o);
    c.appendChild(q);
  }
  const foot = el('div', 'foot');
  foot.append(el('span', null, `${a.turn_count} turn${a.turn_count === 1 ? '' : 's'}`));
  const t = el('span', 'since', since(a.state_since));
  t.dataset.since = a.state_since || '';
  foot.append(t);
  c.appendChild(foot);
  return c;
}

function visibleAgents() {
  const f = $('filter').value.trim().toLowerCase();
  return [...hs.agents.values()]
    .filter((a) => !hs.dismissed.has(a.id))
    .filter((a) => !f || [a.project, a.session_id, a.tmux_pane, a.state, a.command].some((v) => v && String(v).toLowerCase().includes(f)));
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
  for (const [p, list] of [...groups.entries()].sort((x, y) => x[0].localeCompare(y[0]))) {
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
  const counts = {};
  for (const a of hs.agents.values()) counts[a.activity] = (counts[a.activity] || 0) + 1;
  $('summary').textContent = `${hs.agents.size} agent${hs.agents.size === 1 ? '' : 's'}` +
    ['running', 'waiting', 'idle', 'ended'].filter((k) => counts[k]).map((k) => ` · ${counts[k]} ${k}`).join('');
}

let emptyTemplate = null;
function emptyNote() {
  return emptyTemplate.cloneNode(true);
}

function updateCard(a) {
  hs.agents.set(a.id, a);
  const old = document.querySelector(`.card[data-id="${a.id}"]`);
  const sameProject = old && old.closest('.project') && old.closest('.project').dataset.project === (a.project || 'other');
  if (old && sameProject && !hs.dismissed.has(a.id)) old.replaceWith(card(a));
  else renderAgents();
  if (hs.open === a.id) convTitle(a);
}

async function loadAgents() {
  const { body: list, lastEventId } = await api('/api/agents', { withEventId: true });
  // The stream starts where this list ends: an event committed in between is not missed.
  if (!hs.streamFrom) hs.streamFrom = lastEventId;
  hs.agents = new Map(list.map((a) => [a.id, a]));
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
  $('conv-title').textContent = a ? `${a.project || 'agent'} · ${a.session_id} · ${STATE_LABEL[a.state] || a.state}` : '';
}

function bubble(t) {
  const b = el('div', `bubble ${t.actor} ${t.intent}`);
  b.dataset.id = t.id;
  const meta = el('div', 'meta');
  meta.append(el('span', null, t.actor === 'user' ? 'You' : 'Claude'), el('span', 'time', clock(t.timestamp)), el('span', 'tag', t.intent.replace('_', ' ')));
  b.appendChild(meta);
  b.appendChild(el('div', 'text', t.text));
  if (t.question) {
    const o = options(t.question);
    if (o) b.appendChild(o);
  }
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
  $('turns').replaceChildren();
  $('conversation').hidden = false;
  convTitle(hs.agents.get(id));
  $('conv-status').textContent = 'loading…';
  try {
    await loadTurns(id);
    const box = $('turns');
    box.scrollTop = box.scrollHeight;
  } catch (e) {
    $('conv-status').textContent = `could not load: ${e.message}`;
  }
}

function closeConversation() {
  hs.open = null;
  $('conversation').hidden = true;
}

// ---------- actions -------------------------------------------------------------------------

async function reconcile(id) {
  try {
    const r = await api(`/api/agents/${id}/reconcile`, { method: 'POST' });
    if (r.message) toast(r.message, '');
    else if (r.status === 'partial') toast(`${r.created} turn(s) recovered so far; still reading`, '');
    else if (r.created > 0) toast(`${r.created} turn(s) recovered`, 'ok');
    else toast('No missing turns found', 'ok');
  } catch (e) {
    toast(`Reconcile failed: ${e.message}`, 'error');
  }
}

// Starts (or continues) the orchestration of the agent's project, run by this agent: a form
// with the run's options (auto-merge, budget, heal attempts, pause between batches, restart
// when the server starts) opens above the panels, and nothing starts until it is confirmed.
function orchestrateProject(id) {
  const a = hs.agents.get(id);
  if (!a || !a.cwd) { toast('This agent has no project folder', 'error'); return; }
  const root = $('orchestrations');
  root.querySelectorAll('.orch-start').forEach((f) => f.remove());
  const f = el('form', 'orch-start');
  f.dataset.project = a.cwd;
  const name = String(a.cwd).split('/').filter(Boolean).pop() || a.cwd;
  f.appendChild(el('div', 'title', `Orchestrate ${name}, run by this agent?`));
  const check = (key, label) => {
    const l = el('label', 'hint');
    const i = el('input');
    i.type = 'checkbox';
    i.name = key;
    l.append(i, document.createTextNode(` ${label}`));
    return l;
  };
  const number = (key, label, value, step) => {
    const l = el('label', 'hint', `${label} `);
    const i = el('input');
    i.type = 'number';
    i.name = key;
    i.min = step === 1 ? '0' : '0.01';
    i.step = String(step);
    i.value = String(value);
    i.style.width = '6em';
    l.appendChild(i);
    return l;
  };
  f.append(
    check('auto_merge', 'merge when verify is done'),
    check('pause_between_batches', 'pause between batches'),
    check('restart_on_server_start', 'restart its runner when the server starts'),
    number('budget', 'budget $', 50, 0.01),
    number('max_heal_attempts', 'heal attempts', 1, 1),
  );
  const actions = el('div', 'actions');
  const go = el('button', 'small', 'Start');
  go.type = 'submit';
  go.dataset.start = '';
  const no = el('button', 'small', 'Cancel');
  no.type = 'button';
  no.addEventListener('click', () => { f.remove(); root.hidden = !root.querySelector('.orch'); });
  actions.append(go, no);
  f.appendChild(actions);
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    go.disabled = true;
    const v = (k) => f.elements[k];
    const body = {
      project: a.cwd,
      agent: String(a.id),
      auto_merge: v('auto_merge').checked,
      pause_between_batches: v('pause_between_batches').checked,
      restart_on_server_start: v('restart_on_server_start').checked,
      budget: Number(v('budget').value) || undefined,
      max_heal_attempts: v('max_heal_attempts').value === '' ? undefined : Number(v('max_heal_attempts').value),
    };
    try {
      const r = await api('/api/orchestrate/start', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      f.remove();
      toast(`Orchestration started (runner ${r.pid}); its log is ${r.log}`, 'ok');
      setTimeout(loadOrchestrations, 1000);
    } catch (err) {
      go.disabled = false;
      toast(`Could not start the orchestration: ${err.message}`, 'error');
    }
  });
  root.prepend(f);
  root.hidden = false;
  go.focus();
}

function showInfo(id) {
  const a = hs.agents.get(id);
  $('info-body').textContent = JSON.stringify(a, null, 2);
  $('info').showModal();
}

function dismiss(id) {
  hs.dismissed.add(id);
  localStorage.setItem('hs.dismissed', JSON.stringify([...hs.dismissed]));
  renderAgents();
  toast('Dismissed; it comes back when it does something', '');
}

function openMenu(id, anchor) {
  const m = $('menu');
  m.dataset.agent = id;
  const r = anchor.getBoundingClientRect();
  m.style.left = `${Math.min(r.left, window.innerWidth - 190)}px`;
  m.style.top = `${r.bottom + 4}px`;
  m.hidden = false;
  m.querySelector('button').focus();
}

function closeMenu() {
  $('menu').hidden = true;
}

function select(id) {
  hs.selected = id;
  for (const c of document.querySelectorAll('.card')) c.classList.toggle('selected', Number(c.dataset.id) === id);
  const c = document.querySelector(`.card[data-id="${id}"]`);
  if (c) c.scrollIntoView({ block: 'nearest' });
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
    if (hs.open === t.agent_id) { upsertTurn(t); showTurnCount(); }
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
  es.addEventListener('session_activity', (ev) => applyOnce(ev, () => refreshOrchestrations()));
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
    ({ open: openConversation, info: showInfo, reconcile, dismiss, orchestrate: orchestrateProject })[b.dataset.action](id);
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
  connect();
});
