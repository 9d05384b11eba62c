// What agents spent, by project and by day (the Usage view), and the files each task
// changed, shown at the task's first turn. Every figure comes from the usage routes; every
// path and name goes in through textContent.
'use strict';

const usageView = { shown: false };

// One table: a header row, then one row per item, cells from `cells(item)`.
function usageTable(caption, heads, items, cells) {
  const t = el('table', 'usage-table');
  t.appendChild(el('caption', null, caption));
  const hr = el('tr');
  for (const h of heads) hr.appendChild(el('th', null, h));
  t.appendChild(hr);
  for (const it of items) {
    const tr = el('tr');
    for (const c of cells(it)) tr.appendChild(el('td', null, c));
    t.appendChild(tr);
  }
  return t;
}

function spentCells(g) {
  return [formatTokens(tokenTotal(g.tokens)), formatCost(g.cost_usd), String(g.messages)];
}

async function showUsage(on) {
  usageView.shown = on;
  $('usage-toggle').setAttribute('aria-pressed', String(on));
  $('usage').hidden = !on;
  $('cards').hidden = on || search.historyShown;
  if (!on) return;
  const box = $('usage');
  box.replaceChildren(el('p', 'empty', 'loading…'));
  try {
    const [projects, days] = await Promise.all([api('/api/usage?by=project'), api('/api/usage?by=project_day')]);
    if (!projects.length) {
      box.replaceChildren(el('p', 'empty', 'No tokens spent yet: usage comes from the transcripts’ assistant lines.'));
      return;
    }
    const byCost = projects.slice().sort((a, b) => b.cost_usd - a.cost_usd);
    // Newest day first; within a day, the costliest project first.
    const cells = days.slice().sort((a, b) => (a.day === b.day ? b.cost_usd - a.cost_usd : a.day < b.day ? 1 : -1));
    box.replaceChildren(
      usageTable('By project', ['project', 'tokens', 'cost', 'messages'], byCost, (g) => [g.project || 'other', ...spentCells(g)]),
      usageTable('By day (UTC) and project', ['day', 'project', 'tokens', 'cost', 'messages'], cells.slice(0, 90),
        (g) => [g.day, g.project || 'other', ...spentCells(g)]),
    );
  } catch (e) {
    box.replaceChildren(el('p', 'empty', `Cannot load the usage: ${e.message}`));
  }
}

// ---------- files changed, by task ---------------------------------------------------------------

const taskFiles = { agent: null, byTask: new Map() };

// A path under the agent's folder is shown relative to it.
function shortPath(path, cwd) {
  return cwd && path.startsWith(`${cwd}/`) ? path.slice(cwd.length + 1) : path;
}

// Puts each task's changed files at its first turn ("changed src/lib.rs, README.md").
function placeTaskFiles() {
  const agent = hs.agents.get(hs.open);
  for (const [, turnId] of hs.order) {
    const entry = hs.turns.get(turnId);
    if (!entry || !entry.el.classList.contains('task-start')) continue;
    const files = taskFiles.byTask.get(entry.turn.task_id);
    const old = entry.el.querySelector(':scope > .task-files');
    if (!files) { if (old) old.remove(); continue; }
    const line = el('div', 'task-files');
    line.appendChild(el('span', 'task-files-tag', `changed ${files.length} file${files.length === 1 ? '' : 's'}:`));
    for (const f of files) {
      const c = el('code', null, shortPath(f, agent && agent.cwd));
      c.title = f;
      line.append(' ', c);
    }
    if (old) old.replaceWith(line); else entry.el.prepend(line);
  }
}

async function refreshTaskFiles(agentId) {
  try {
    const u = await api(`/api/agents/${agentId}/usage`);
    if (hs.open !== agentId) return;
    taskFiles.agent = agentId;
    taskFiles.byTask = new Map(u.tasks.filter((t) => t.files && t.files.length).map((t) => [t.task_id, t.files]));
    placeTaskFiles();
  } catch (e) { /* the next step event tries again */ }
}

document.addEventListener('DOMContentLoaded', () => {
  $('usage-toggle').addEventListener('click', () => {
    if (search.historyShown) showHistory(false);
    showUsage(!usageView.shown);
  });
  $('history-toggle').addEventListener('click', () => { if (usageView.shown) showUsage(false); });
});

window.__usage = { showUsage, refreshTaskFiles, state: usageView };
