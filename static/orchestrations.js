// Headspace dashboard: the orchestration panels (app.js wires their buttons).
import { $, api, clock, el, toast } from './helpers.js';
import { hs } from './state.js';
import { askedBlock, shownState } from './needs.js';

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
  const asking = runAgentAsking(o);
  if (asking) {
    const q = el('div', 'run-asks');
    q.dataset.agent = asking.id;
    q.append(el('div', 'hint', 'The run\u2019s agent asks:'), askedBlock(asking, true, 'orch'));
    p.appendChild(q);
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
    d.dataset.key = `past ${o.project}`;
    d.appendChild(el('summary', 'hint', `${past.length} earlier run${past.length > 1 ? 's' : ''}`));
    const ul = el('ul', 'decisions');
    for (const r of past) {
      const why = r.error || (r.lastDecision && r.lastDecision.reason) || '';
      const li = el('li', null, `${clock(r.startedAt)} ${String(r.status).replace(/_/g, ' ')} · $${Number(r.costUsd || 0).toFixed(2)} of $${Number(r.budgetUsd || 0).toFixed(2)}${why ? ` · ${why}` : ''}`);
      li.dataset.run = r.id;
      const decisions = r.decisions || [];
      if (decisions.length) li.appendChild(pastDecisions(r.id, decisions));
      ul.appendChild(li);
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

/// A past run's decision log (the last ones the server gives), newest first, collapsed.
/// Reasons are the agents' and the helper's words: set as text, never as HTML.
function pastDecisions(id, decisions) {
  const d = el('details', 'run-log');
  d.dataset.key = `log ${id}`;
  d.appendChild(el('summary', 'hint', `${decisions.length} decision${decisions.length > 1 ? 's' : ''}`));
  const ul = el('ul', 'decisions');
  for (const x of decisions.slice().reverse()) {
    const li = el('li');
    li.append(el('span', 'time', clock(x.timestamp)), el('b', null, ` ${x.decision}`), document.createTextNode(` ${x.reason || ''}`));
    ul.appendChild(li);
  }
  d.appendChild(ul);
  return d;
}

/// The agent running `o`'s steps (by id, pane or session, as the run names it) when it waits
/// on a question or a permission: a run stands still until someone answers it.
function runAgentAsking(o) {
  for (const a of hs.agents.values()) {
    if (runIsIn(o, a)) return shownState(a) === 'waiting' ? a : null;
  }
  return null;
}

/// Whether run `o` runs its steps in agent `a`: the run names its agent by id, pane or
/// session.
function runIsIn(o, a) {
  if (o.agent == null) return false;
  const ref = String(o.agent);
  return ref !== '' && [String(a.id), a.tmux_pane, a.session_id].includes(ref);
}

export let lastOrchestrations = [];
export function renderOrchestrations(list) {
  lastOrchestrations = list;
  const root = $('orchestrations');
  // A start form being filled in stays across refreshes.
  const form = root.querySelector('.orch-start');
  // The past runs and logs someone opened stay open across refreshes.
  const open = new Set([...root.querySelectorAll('details[open][data-key]')].map((d) => d.dataset.key));
  root.replaceChildren(...(form ? [form] : []), ...list.map(orchestrationPanel));
  for (const d of root.querySelectorAll('details[data-key]')) if (open.has(d.dataset.key)) d.open = true;
  root.hidden = list.length === 0 && !form;
}

export async function loadOrchestrations() {
  try {
    renderOrchestrations(await api('/api/orchestrations'));
  } catch (e) { /* the server is down: the next refresh tries again */ }
}

/// Panels again from the last list, when an agent's card changed (its question may be a
/// run's).
export function rerenderOrchestrations() {
  if (lastOrchestrations.some((o) => o.agent != null)) renderOrchestrations(lastOrchestrations);
}

/// Whether a shown orchestration runs its steps in this agent (its panel shows the agent's
/// question).
export function orchestrationNames(a) {
  return lastOrchestrations.some((o) => runIsIn(o, a));
}

let orchTimer = null;
export function refreshOrchestrations() {
  if (orchTimer) return;
  orchTimer = setTimeout(() => { orchTimer = null; loadOrchestrations(); }, 500);
}

export async function orchestrate(command, project, button) {
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
