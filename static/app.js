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
  metrics: { firstRenderMs: null, lastLoadMs: null, eventsApplied: 0, gaps: 0, draws: 0, drawMs: 0 },
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
  if (hs.open !== null) await refetchOpen(); // merged by id: nothing doubled
}

function connect() {
  const es = new EventSource(`/api/events${hs.streamFrom ? `?last_event_id=${hs.streamFrom}` : ''}`);
  es.onopen = () => { $('conn').dataset.state = 'live'; $('conn').title = 'Live'; };
  es.onerror = () => { $('conn').dataset.state = 'down'; $('conn').title = 'Reconnecting…'; };
  es.addEventListener('turn_created', (ev) => applyOnce(ev, (t) => {
    // Steps commit before the turns after them: a new turn may bring its predecessors' steps.
    if (hs.open === t.agent_id) { settlePending(t); liveTurn(t); refreshSteps(t.agent_id); }
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
    // A click on an item selects its agent: number keys answer it from then on, and say so.
    const o = e.target.closest('[data-open]');
    if (o) { select(Number(o.dataset.open), false); openConversation(Number(o.dataset.open)); return; }
    const item = e.target.closest('.need');
    if (item) select(Number(item.dataset.id), false);
  });
  // The pending request at a conversation's end answers as its strip item does.
  $('conv-pending').addEventListener('click', (e) => {
    const b = e.target.closest('[data-answer]');
    if (b) answer(b.dataset.agent, b.dataset.answer, b);
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
    else if (isInterruptKey(e) && hs.open !== null) interrupt();
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
  loadMachines();
  setInterval(loadMachines, 5000);
  loadOrchestrations();
  setInterval(loadOrchestrations, 5000);
  loadAudit();
  setInterval(loadAudit, 30000);
  connect();
});
