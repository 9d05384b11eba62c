// Headspace dashboard: agent cards and conversations, live over SSE. The page's entry module
// (index.html loads only this file): it imports the others, wires the page once it is parsed,
// and applies the server's events. Plain JavaScript, no dependencies and no build step: ES
// modules, as the browser loads them. Every piece of agent or user text goes through
// textContent, never innerHTML: agent text is data.
import { $, login, since, toast } from './helpers.js';
import { cards, hs } from './state.js';
import { drawIcons } from './icons.js';
import { renderMarkdown } from './markdown.js';
import { answer } from './questions.js';
import { answerByKey, attention, noticeSpeech, showNotice, spokenFor, toggleNotifications } from './needs.js';
import { interrupt, isInterruptKey, settlePending, wireComposer } from './composer.js';
import { lastOrchestrations, loadOrchestrations, orchestrate, refreshOrchestrations, renderOrchestrations } from './orchestrations.js';
import { closeMenu, dismiss, openMenu, orchestrateProject, reconcile, rename, select, showInfo } from './actions.js';
import { loadAudit } from './audit.js';
import { refreshSteps } from './steps.js';
import { loadMachines } from './machines.js';
import { loadAgents, refreshAgent, reloadAgents, renderAgents } from './cards.js';
import { closeConversation, liveTurn, openConversation, refetchOpen, upsertTurn, wireConversation } from './conversation.js';
import { wireSearch } from './search.js';
import { wireUsage } from './usage.js';
import { wireNewAgent } from './newagent.js';
import { hideChanges, wireChanges } from './changes.js';
import { wirePush } from './push.js';
import { hearNotice, wireVoice } from './voice.js';

// The browser tests call these in the page, by name, as globals (they were, while the scripts
// were classic): loadAudit and renderOrchestrations(lastOrchestrations) (dashboard.rs),
// loadAgents and refreshAgent (dashboard_machines.rs), openConversation and renderMarkdown
// (dashboard_keys.rs), and handleNotice (a server `notice` as the page takes it, for the
// voice tests). Modules have no globals: these are put on `window` for them, and nothing in
// the page reads them there. lastOrchestrations is read through a getter: the list it names
// changes.
Object.assign(window, { loadAudit, renderOrchestrations, loadAgents, refreshAgent, openConversation, renderMarkdown, handleNotice });
Object.defineProperty(window, 'lastOrchestrations', { get: () => lastOrchestrations, configurable: true });

// ---------- live updates --------------------------------------------------------------------

/// A `notice` from the server (news of the moment: an agent needs the user, or finished): a
/// browser notification (needs.js decides when), and its tone, or its reading aloud in
/// hands-free mode (voice.js).
function handleNotice(n) {
  showNotice(n);
  hearNotice(n).catch(() => {});
}

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

/// The connection to the server as the page shows it: while it is lost, a banner says so and
/// since when, the page is dimmed and its timers stand still (what it shows is as of then);
/// once back, it says so for a moment and everything is fetched again.
function setConnection(state) {
  const was = $('conn').dataset.state;
  $('conn').dataset.state = state;
  $('conn').title = state === 'live' ? 'Live' : 'Reconnecting…';
  const banner = $('offline');
  if (state === 'down' && was !== 'down') {
    hs.frozenSince = Date.now();
    document.body.dataset.conn = 'down';
    banner.dataset.state = 'down';
    banner.textContent = `The server stopped answering at ${new Date().toLocaleTimeString()}. Reconnecting… What this page shows is as of then; its timers are stopped.`;
    banner.hidden = false;
  } else if (state === 'live' && was === 'down') {
    hs.frozenSince = null;
    delete document.body.dataset.conn;
    banner.dataset.state = 'back';
    banner.textContent = 'Back: the server answers again; the page is up to date.';
    banner.hidden = false;
    clearTimeout(hs.backTimer);
    hs.backTimer = setTimeout(() => { if (banner.dataset.state === 'back') banner.hidden = true; }, 4000);
    refetchAll().catch(() => {});
  }
}

function connect() {
  const es = new EventSource(`/api/events${hs.streamFrom ? `?last_event_id=${hs.streamFrom}` : ''}`);
  es.onopen = () => setConnection('live');
  es.onerror = () => setConnection('down');
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
  // The agent CLI took its conversation back (Gemini's /rewind): its turns from there are
  // marked, so the open conversation is read again.
  es.addEventListener('turns_rewound', (ev) => applyOnce(ev, (d) => {
    if (hs.open === d.agent_id) refetchOpen().catch(() => {});
  }));
  // News of the moment, with no id: told as it comes, never replayed.
  es.addEventListener('notice', (ev) => handleNotice(JSON.parse(ev.data)));
  // A name given on any device: news of the moment too (no id).
  es.addEventListener('agent_renamed', (ev) => refreshAgent(JSON.parse(ev.data).agent_id));
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

// The browser's bar in the header's colour (--panel) of a theme the user chose; with none,
// the page's own <meta name="theme-color">s follow the system's.
const BAR = { light: '#ffffff', dark: '#1c2027' };

function applyTheme(t) {
  if (t) document.documentElement.dataset.theme = t; else delete document.documentElement.dataset.theme;
  for (const m of document.querySelectorAll('meta[name="theme-color"]')) {
    if (!m.dataset.system) m.dataset.system = m.content;
    m.content = BAR[t] || m.dataset.system;
  }
}

// ---------- the installed app -----------------------------------------------------------------

/// The agent a URL's `?agent=ID` names (a push notification's click opens /?agent=ID), or
/// null.
function agentInUrl() {
  const v = new URLSearchParams(location.search).get('agent');
  return v && /^\d+$/.test(v) ? Number(v) : null;
}

/// Registers the service worker (sw.js: the app shell offline, and pushes) once the page has
/// loaded, and opens the agent it names when a notification is clicked. A browser without
/// one, or a failed registration, leaves the page as it is (said in the console).
function registerWorker() {
  if (!('serviceWorker' in navigator)) return;
  navigator.serviceWorker.addEventListener('message', (e) => {
    const d = e.data || {};
    if (d.type === 'open-agent' && d.agent_id !== undefined && d.agent_id !== null) {
      const id = Number(d.agent_id);
      select(id, false);
      openConversation(id);
    }
  });
  // Messages wait until the page says it listens (push.js listens too).
  navigator.serviceWorker.startMessages();
  const register = () => navigator.serviceWorker.register('/sw.js').catch((e) => console.warn(`Headspace: no service worker: ${e.message}`));
  if (document.readyState === 'complete') register(); else window.addEventListener('load', register, { once: true });
}

// Module scripts run once the page is parsed, before DOMContentLoaded: the page is wired then,
// as it was when the scripts were classic.
document.addEventListener('DOMContentLoaded', async () => {
  cards.emptyTemplate = $('empty').cloneNode(true);
  attention.openConversation = openConversation; // a notification's click (needs.js)
  drawIcons();
  wireComposer();
  wireConversation();
  wireNewAgent();
  wireChanges();
  $('notify').addEventListener('click', toggleNotifications);
  $('notify').setAttribute('aria-pressed', String(localStorage.getItem('hs.notify') === '1'));
  wireVoice({ readAloud: () => spokenFor(hs.agents.get(hs.open)), noticeText: noticeSpeech });
  wirePush().catch((e) => console.warn(`Headspace: push: ${e.message}`));
  registerWorker();
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
  // The Needs-you strip is docked over the bottom of the agents' view: a card scrolled into
  // view (a click, the keys) is put above it, never under it.
  new ResizeObserver(() => {
    const h = $('needs').hidden ? 0 : $('needs').offsetHeight;
    $('agents').style.scrollPaddingBottom = `${h}px`;
    document.documentElement.style.scrollPaddingBottom = `${h}px`;
  }).observe($('needs'));
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
    else if (e.key === 'Escape') { closeMenu(); if (!hideChanges()) closeConversation(); } // Changes first, then the conversation
    else if (e.key === 'r' && (hs.selected ?? hs.open) !== null) reconcile(hs.selected ?? hs.open);
    else if (e.key === '/') { e.preventDefault(); $('filter').focus(); }
    else if (e.key === 't') $('theme').click();
    else if (e.key === '?') $('keys').showModal();
    else if (isInterruptKey(e) && hs.open !== null) interrupt();
    else if (/^[1-9]$/.test(e.key) && !e.ctrlKey && !e.metaKey && !e.altKey) { if (!answerByKey(Number(e.key))) return; }
    else return;
    e.preventDefault();
  });
  wireSearch(); // after the filter and the keys: its listeners run after theirs
  wireUsage();
  setInterval(() => {
    if (hs.frozenSince) return; // the server is away: times as of then
    for (const s of document.querySelectorAll('.since')) s.textContent = since(s.dataset.since);
  }, 5000);
  try {
    await loadAgents();
  } catch (e) {
    toast(`Cannot load agents: ${e.message}`, 'error');
  }
  hs.metrics.firstRenderMs = performance.now();
  // Opened from a push notification (/?agent=ID): that agent's conversation. The address
  // loses the parameter, so that a reload opens the page as usual.
  const asked = agentInUrl();
  if (asked !== null) {
    const url = new URL(location.href);
    url.searchParams.delete('agent');
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    select(asked, false);
    openConversation(asked);
  }
  loadMachines(reloadAgents);
  setInterval(() => loadMachines(reloadAgents), 5000);
  loadOrchestrations();
  setInterval(loadOrchestrations, 5000);
  loadAudit();
  setInterval(loadAudit, 30000);
  connect();
});
