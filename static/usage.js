// What agents spent, by project and by day (the Usage view). Every figure comes from the
// usage routes; every name goes in through textContent.
import { $, api, el } from './helpers.js';
import { formatCost, formatTokens, refreshTaskFiles, tokenTotal } from './steps.js';
import { search, showHistory } from './search.js';

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

/// The Usage button (called once by app.js at load, after the History button is wired).
export function wireUsage() {
  $('usage-toggle').addEventListener('click', () => {
    if (search.historyShown) showHistory(false);
    showUsage(!usageView.shown);
  });
  $('history-toggle').addEventListener('click', () => { if (usageView.shown) showUsage(false); });
}

window.__usage = { showUsage, refreshTaskFiles, state: usageView };
