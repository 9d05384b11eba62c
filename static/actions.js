// Headspace dashboard: what the card menu and the keys do to an agent (reconcile, orchestrate,
// info, rename, dismiss) and the menu itself.
import { $, api, clock, el, since, toast } from './helpers.js';
import { hs } from './state.js';
import { SHOWN_LABEL, agentName, drawKeyTarget, shownState } from './needs.js';
import { loadOrchestrations } from './orchestrations.js';
import { renderAgents } from './cards.js';

// ---------- actions -------------------------------------------------------------------------

export async function reconcile(id) {
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
export function orchestrateProject(id) {
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

export function showInfo(id) {
  const a = hs.agents.get(id);
  const rows = [
    ['Name', agentName(a)], ['Project', a.project], ['Folder', a.cwd], ['State', SHOWN_LABEL[shownState(a)] + (a.end_reason ? ` (${a.end_reason.replace('_', ' ')})` : '')],
    ['Since', a.state_since ? `${clock(a.state_since)} (${since(a.state_since)} ago)` : ''], ['tmux pane', a.tmux_pane],
    ['Machine', a.machine], ['Turns', a.turn_count], ['Last heard', a.last_seen_at ? clock(a.last_seen_at) : ''],
    ['Session', a.session_id], ['Earlier sessions', (a.sessions || []).filter((s) => s !== a.session_id).join('\n')],
    ['Transcript', a.transcript_path], ['Agent id', a.id],
  ];
  const table = el('table', 'info-table');
  for (const [k, v] of rows) {
    if (v === undefined || v === null || v === '') continue;
    const tr = el('tr');
    tr.append(el('th', null, k), el('td', null, v));
    table.appendChild(tr);
  }
  $('info-body').replaceChildren(table);
  $('info').showModal();
}

/// Names an agent on the server, so every page, device and the CLI show it (the server sends
/// `agent_renamed`, and each page refreshes the card).
export async function rename(id) {
  const a = hs.agents.get(id);
  const name = prompt('Name this agent (empty: its project)', (a && a.name) || (hs.names || {})[id] || '');
  if (name === null) return;
  try {
    await api(`/api/agents/${id}/rename`, { method: 'POST', body: JSON.stringify({ name }) });
    // A name kept in this browser before names were the server's gives way to it.
    if (hs.names && id in hs.names) { delete hs.names[id]; localStorage.setItem('hs.names', JSON.stringify(hs.names)); }
  } catch (e) {
    toast(`Could not rename: ${e.message}`, 'error');
  }
}

export function dismiss(id) {
  hs.dismissed.add(id);
  localStorage.setItem('hs.dismissed', JSON.stringify([...hs.dismissed]));
  renderAgents();
  toast('Dismissed; it comes back when it does something', '');
}

export function openMenu(id, anchor) {
  const m = $('menu');
  m.dataset.agent = id;
  const r = anchor.getBoundingClientRect();
  m.style.left = `${Math.min(r.left, window.innerWidth - 190)}px`;
  m.style.top = `${r.bottom + 4}px`;
  m.hidden = false;
  m.querySelector('button').focus();
}

export function closeMenu() {
  $('menu').hidden = true;
}

/// Selects agent `id`'s card (its outline); when it waits, number keys answer it, and its
/// "Needs you" item and card say so (drawKeyTarget). `scroll`: bring the card into view.
export function select(id, scroll = true) {
  hs.selected = id;
  for (const c of document.querySelectorAll('.card')) c.classList.toggle('selected', Number(c.dataset.id) === id);
  drawKeyTarget();
  const c = document.querySelector(`.card[data-id="${id}"]`);
  if (c && scroll) c.scrollIntoView({ block: 'nearest' });
}
