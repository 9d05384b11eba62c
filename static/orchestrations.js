// Headspace dashboard: the orchestration panels (loaded before app.js, which wires them).
'use strict';

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
  head.append(el('span', 'title', `${name}${phase}`), el('span', 'status', String(o.status).replace(/_/g, ' ')));
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
  if (o.runner) facts.push(o.runner.alive ? `runner ${o.runner.pid}` : 'runner stopped');
  p.appendChild(el('div', 'facts', facts.join(' · ')));
  if (o.stateError) p.appendChild(el('div', 'attention', o.stateError));
  if (o.recoveryContext) {
    const r = el('div', 'attention', o.recoveryContext.issue || 'Needs attention');
    const opts = o.recoveryContext.options || [];
    if (opts.length) r.appendChild(el('div', 'hint', `Options: ${opts.map((x) => (typeof x === 'string' ? x : x.label || x.action || JSON.stringify(x))).join(' · ')}`));
    p.appendChild(r);
  }
  const log = el('ul', 'decisions');
  for (const d of (o.decisions || []).slice(-5).reverse()) {
    const li = el('li');
    li.append(el('span', 'time', clock(d.timestamp)), el('b', null, ` ${d.decision}`), document.createTextNode(` ${d.reason || ''}`));
    log.appendChild(li);
  }
  if (log.childElementCount) p.appendChild(log);
  const actions = el('div', 'actions');
  for (const [command, label] of ORCH_ACTIONS[o.status] || []) {
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
  root.replaceChildren(...list.map(orchestrationPanel));
  root.hidden = list.length === 0;
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
