// Headspace dashboard: the machines agents run on (issue 21). With agents on more than one
// machine, the cards are grouped by machine, then project, under a header with the machine's
// name, whether it reports and how many agents it shows. A machine that stopped reporting is
// offline: the server gives its agents' activity as unknown (never a stale "working" or
// "idle"), drawn in a neutral colour and labelled "offline since HH:MM". The list is read at
// load and every five seconds and serves the headers only; a machine going offline or coming
// back reloads the cards (their activity changed without an event: an offline machine sends
// none), so a card's state always comes from the server.
import { $, api, el } from './helpers.js';
import { cards, hs } from './state.js';

export const machines = {
  list: new Map(),   // machine name -> its row of /api/machines
  blocks: new Map(), // machine name -> { section, head, body } while grouped by machine
  multi: false,      // whether the cards are drawn grouped by machine
  signature: null,   // which machines were online at the last load
};

/// The machine an agent runs on (the server's name for its own).
export function machineOf(a) {
  return a.machine || '';
}

/// Whether agents span more than one machine: then the cards group by machine.
export function multiMachine() {
  let first = null;
  for (const a of hs.agents.values()) {
    const m = machineOf(a);
    if (first === null) first = m;
    else if (m !== first) return true;
  }
  return false;
}

/// When the agent's machine was last heard from (ISO time), if known.
export function machineLastSeen(name, a) {
  const m = machines.list.get(name);
  return (m && (m.last_seen_at || m.last_seen)) || (a && a.machine_last_seen) || null;
}

/// "offline since 10:42" (or just "offline" when it never reported).
export function offlineLabel(lastSeen) {
  const d = new Date(lastSeen || '');
  if (!lastSeen || isNaN(d)) return 'offline';
  return `offline since ${d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hour12: false })}`;
}

/// The group a card goes in: its project, under its machine when grouped by machine.
export function groupOf(a) {
  const project = a.project || 'other';
  return machines.multi ? `${machineOf(a)}\u0000${project}` : project;
}

/// Where the groups of `machine` go: the cards' root, or the machine's block.
export function groupParent(machine, root) {
  return machines.multi ? machineBlock(machine, root || $('cards')).body : root || $('cards');
}

/// The block of one machine, made and put in name order under `parent` the first time.
function machineBlock(name, parent) {
  let b = machines.blocks.get(name);
  if (b) return b;
  const section = el('section', 'machine');
  section.dataset.machine = name;
  const head = el('h2', 'machine-head');
  const body = el('div', 'machine-groups');
  section.append(head, body);
  b = { section, head, body };
  machines.blocks.set(name, b);
  const after = [...parent.children].find((s) => s.matches('section.machine') && s.dataset.machine.localeCompare(name) > 0);
  parent.insertBefore(section, after || null);
  return b;
}

/// A machine's header: its name, online or offline since when, and its agents shown.
export function renderMachineHead(name) {
  const b = machines.blocks.get(name);
  if (!b) return;
  let n = 0;
  for (const g of cards.groups.values()) if (g.machine === name) n += g.grid.childElementCount;
  const m = machines.list.get(name);
  // Not in the list (not loaded yet): as its agents' cards said.
  const sample = m ? null : [...hs.agents.values()].find((a) => machineOf(a) === name);
  const online = m ? m.online !== false : !(sample && sample.machine_online === false);
  const status = el('span', 'machine-status', online ? 'online' : offlineLabel(machineLastSeen(name, sample)));
  status.dataset.online = String(online);
  b.section.dataset.online = String(online);
  const parts = [el('span', 'machine-name', name), status, el('span', 'machine-count', `${n} agent${n === 1 ? '' : 's'}`)];
  const text = parts.map((p) => p.textContent).join('|');
  if (b.head.dataset.text === text) return;
  b.head.dataset.text = text;
  b.head.replaceChildren(...parts);
}

/// Drops a machine's block when it holds no group any more.
export function dropEmptyMachine(name) {
  const b = machines.blocks.get(name);
  if (b && !b.body.childElementCount) {
    b.section.remove();
    machines.blocks.delete(name);
  }
}

/// Reads /api/machines; a machine gone offline or back reloads the cards with `reload` (app.js
/// passes cards.js's reloadAgents: cards.js imports this module, so this module does not
/// import it back).
export async function loadMachines(reload) {
  let list;
  try {
    list = await api('/api/machines');
  } catch (e) {
    return; // the server is down: the connection dot says so, the next round retries
  }
  machines.list = new Map(list.map((m) => [m.name, m]));
  const signature = list.map((m) => `${m.name}:${m.online}`).join(',');
  const changed = machines.signature !== null && signature !== machines.signature;
  machines.signature = signature;
  if (changed) {
    await reload();
  } else {
    for (const name of machines.blocks.keys()) renderMachineHead(name);
  }
}
