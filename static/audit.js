// Headspace dashboard: the proof that no turn is lost or doubled. The header says what the
// server's latest audit found (every transcript line against the stored turns), and when it
// found something, a Repair button reconciles the agents it named and audits again.
import { $, api, clock, el, toast } from './helpers.js';
import { hs } from './state.js';
import { openConversation } from './conversation.js';

/// Shows the latest audit's summary in the header (`GET /api/audit/summary`).
export async function loadAudit() {
  let s;
  try {
    s = await api('/api/audit/summary');
  } catch (e) {
    return; // the header keeps what it showed; the next poll tries again
  }
  renderAudit(s);
}

function renderAudit(s) {
  const box = $('audit');
  if (!box) return;
  if (!s || s.status !== 'done') { box.replaceChildren(); return; }
  box.dataset.clean = String(s.clean);
  if (s.clean) {
    box.replaceChildren(el('span', 'audit-ok', `all ${s.checked} turns accounted for`));
    box.title = `Audited ${clock(s.at)}: every transcript line has exactly one turn`;
    return;
  }
  const found = [
    s.missing && `${s.missing} missing`,
    s.doubled && `${s.doubled} doubled`,
    s.misassigned && `${s.misassigned} mis-assigned`,
  ].filter(Boolean).join(' · ');
  const repair = el('button', 'audit-repair', 'Repair');
  repair.title = 'Reconcile the agents the audit named, then audit again';
  repair.addEventListener('click', () => repairAudit(s.agents || [], repair));
  box.replaceChildren(el('span', 'audit-bad', `${found} of ${s.checked} turns`), repair);
  box.title = `Audited ${clock(s.at)}; agents ${(s.agents || []).join(', ')}`;
}

/// Reconciles every agent the audit named (restores missing turns), then audits again. A
/// doubled turn is only reported: a reconcile never deletes.
async function repairAudit(agents, button) {
  button.disabled = true;
  let created = 0;
  try {
    for (const id of agents) {
      const r = await api(`/api/agents/${id}/reconcile`, { method: 'POST', body: '{}' });
      created += r.created || 0;
    }
    const all = await api('/api/audit');
    toast(all.clean ? `Repaired: ${created} turn(s) restored` : `${created} turn(s) restored; doubled or mis-assigned turns remain (see headspace audit)`, all.clean ? 'ok' : 'error');
    await loadAudit();
    // The conversation open now is read again whole: restored turns have new ids.
    if (hs.open !== null) await openConversation(hs.open);
  } catch (e) {
    toast(`Repair failed: ${e.message}`, 'error');
  } finally {
    button.disabled = false;
  }
}
