// What agents did and spent: the tool calls (steps) folded under each turn, the card's
// "now" line, tokens and cost on cards and in the conversation header, and the files each
// task changed, shown at the task's first turn. Every piece of agent text goes through
// textContent (see helpers.js): a command or a path is data.
import { api, el } from './helpers.js';
import { hs } from './state.js';

const OUTCOME_LABEL = { pending: 'running', ok: 'ok', error: 'error', denied: 'denied', interrupted: 'interrupted' };

export function formatTokens(n) {
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}k`;
  return String(n);
}

export function formatCost(usd) {
  if (!usd) return '$0';
  return usd < 0.01 ? '<$0.01' : `$${usd.toFixed(2)}`;
}

function formatDuration(ms) {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)}m ${Math.round(s % 60)}s`;
}

export function tokenTotal(t) {
  return t ? t.input + t.output + t.cache_read + t.cache_creation : 0;
}

// "12k tokens · $0.42", with the kinds in its title; null before the agent used any.
export function usageLine(a, cls) {
  if (!a || !a.tokens || !tokenTotal(a.tokens)) return null;
  const t = a.tokens;
  const s = el('span', cls || 'usage', `${formatTokens(tokenTotal(t))} tokens · ${formatCost(a.cost_usd)}`);
  s.title = `input ${t.input}, output ${t.output}, cache read ${t.cache_read}, cache write ${t.cache_creation}` +
    (a.models && a.models.length ? ` · ${a.models.join(', ')}` : '');
  return s;
}

// The card's line saying which tool runs now ("Bash: cargo test"), while one does.
export function nowLine(a) {
  if (!a.now) return null;
  const n = el('div', 'now');
  n.append(el('span', 'now-tag', 'now'), document.createTextNode(' '), el('span', 'now-label', a.now.label));
  n.title = a.now.label;
  return n;
}

// A turn's tool calls, folded: "3 tool calls · 1 error", opened to one line each.
function stepsBlock(steps) {
  const d = el('details', 'tool-steps');
  const bad = steps.filter((s) => s.outcome !== 'ok' && s.outcome !== 'pending').length;
  const sum = el('summary', null, `${steps.length} tool call${steps.length === 1 ? '' : 's'}${bad ? ` · ${bad} not ok` : ''}`);
  d.appendChild(sum);
  const list = el('ol', 'step-list');
  for (const s of steps) {
    const li = el('li', 'step');
    li.dataset.outcome = s.outcome;
    li.dataset.toolUseId = s.tool_use_id;
    li.append(el('span', 'step-outcome', OUTCOME_LABEL[s.outcome] || s.outcome), el('span', 'step-tool', s.tool));
    if (s.summary) li.appendChild(el('code', 'step-summary', s.summary));
    const took = formatDuration(s.duration_ms);
    if (took) li.appendChild(el('span', 'step-time', took));
    list.appendChild(li);
  }
  d.appendChild(list);
  return d;
}

// Puts `steps` under a bubble, replacing what it showed (kept open if it was).
export function setSteps(bubbleEl, steps) {
  const old = bubbleEl.querySelector(':scope > .tool-steps');
  if (!steps || !steps.length) return;
  const block = stepsBlock(steps);
  if (old) { block.open = old.open; old.replaceWith(block); } else bubbleEl.appendChild(block);
}

// Steps arrive after their turn (hooks, then the transcript): the open conversation's last
// turns are read again, at most once a second, and their steps put in place. One timer per
// agent: a refresh asked for the conversation just opened is never swallowed by one still
// pending for the conversation open before it.
const stepRefresh = new Map(); // agent id → its pending timer
export function refreshSteps(agentId) {
  if (hs.open !== agentId || stepRefresh.has(agentId)) return;
  stepRefresh.set(agentId, setTimeout(async () => {
    stepRefresh.delete(agentId);
    if (hs.open !== agentId) return;
    const from = hs.order.length > 20 ? hs.order[hs.order.length - 21][1] : null;
    try {
      const page = await api(`/api/agents/${agentId}/turns${from ? `?after=${from}&limit=50` : '?newest=50'}`);
      if (hs.open !== agentId) return;
      for (const t of page) {
        const e = hs.turns.get(t.id);
        if (e && t.steps) { e.turn.steps = t.steps; setSteps(e.el, t.steps); }
      }
      refreshTaskFiles(agentId); // an edit that went through changes the task's files
    } catch (e) { /* the next event tries again */ }
  }, 1000));
}

// ---------- files changed, by task ---------------------------------------------------------------

export const taskFiles = { agent: null, byTask: new Map() };

// A path under the agent's folder is shown relative to it.
function shortPath(path, cwd) {
  return cwd && path.startsWith(`${cwd}/`) ? path.slice(cwd.length + 1) : path;
}

// Puts each task's changed files at its first turn ("changed src/lib.rs, README.md").
export function placeTaskFiles() {
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

export async function refreshTaskFiles(agentId) {
  try {
    const u = await api(`/api/agents/${agentId}/usage`);
    if (hs.open !== agentId) return;
    taskFiles.agent = agentId;
    taskFiles.byTask = new Map(u.tasks.filter((t) => t.files && t.files.length).map((t) => [t.task_id, t.files]));
    placeTaskFiles();
  } catch (e) { /* the next step event tries again */ }
}
