// Headspace dashboard: the New agent dialog. It starts an agent in a project folder, in its
// own git worktree by default (POST /api/agents, CONTRACT.md "Agents you start, review and
// stop"), then selects it and opens its conversation. The server's refusal (a folder outside
// every projects root, a name taken, git failing) is shown in the dialog, which keeps what
// was typed. Paths and names are data: they go through textContent and `value` only.
import { $, api, el, toast } from './helpers.js';
import { hs } from './state.js';
import { select } from './actions.js';
import { loadAgents } from './cards.js';
import { openConversation } from './conversation.js';

const dialog = {
  starting: false,    // a start is on its way (it can take up to ~20 s)
};

/// The known projects' folders: the folders of the agents on the page, each once; a
/// Headspace worktree (`…/.worktrees/NAME`) counts as its repository's folder.
function projectFolders() {
  const seen = new Set();
  for (const a of hs.agents.values()) {
    if (!a.cwd) continue;
    const cwd = String(a.cwd);
    const at = cwd.indexOf('/.worktrees/');
    seen.add(at > 0 ? cwd.slice(0, at) : cwd);
  }
  return [...seen].sort();
}

function showError(text) {
  const e = $('na-error');
  e.textContent = text || '';
  e.hidden = !text;
}

/// The worktree's name and base apply only to an agent in a worktree.
function syncWorktree() {
  const on = $('na-worktree').checked;
  $('na-name').disabled = !on;
  $('na-base').disabled = !on;
  $('na-tree').classList.toggle('off', !on);
}

function openNewAgent() {
  const d = $('new-agent-dialog');
  if (d.open) return;
  $('na-projects').replaceChildren(...projectFolders().map((p) => {
    const o = el('option');
    o.value = p;
    return o;
  }));
  if (!dialog.starting) showError(null);
  syncWorktree();
  d.showModal();
  ($('na-project').value.trim() ? $('na-prompt') : $('na-project')).focus();
}

function startedText(r) {
  const where = [r.tmux_pane ? `in pane ${r.tmux_pane}` : null, r.branch ? `on branch ${r.branch}` : null].filter(Boolean).join(' ');
  const known = r.id === null || r.id === undefined ? ' (it shows here once its first hook arrives)' : '';
  return `Agent started${where ? ` ${where}` : ''}${known}`;
}

async function start(e) {
  e.preventDefault();
  if (dialog.starting) return;
  const project = $('na-project').value.trim();
  if (!project) {
    showError('Name the project folder to start the agent in.');
    $('na-project').focus();
    return;
  }
  const inTree = $('na-worktree').checked;
  const base = $('na-base').value.trim();
  const prompt = $('na-prompt').value;
  const body = {
    project,
    worktree: inTree ? $('na-name').value.trim() : null, // "": the server picks a name
    base: inTree && base ? base : null,
    agent: $('na-kind').value || 'claude',
    prompt: prompt.trim() ? prompt : null,
  };
  const go = $('na-start');
  dialog.starting = true;
  go.disabled = true;
  go.textContent = 'Starting…';
  $('new-agent-form').setAttribute('aria-busy', 'true');
  $('na-status').textContent = 'Starting… the agent’s pane comes up first (up to about 20 s).';
  showError(null);
  try {
    const r = await api('/api/agents', { method: 'POST', body: JSON.stringify(body) });
    const d = $('new-agent-dialog');
    if (d.open) d.close();
    $('new-agent-form').reset();
    toast(startedText(r), 'ok');
    if (r.id !== null && r.id !== undefined) {
      if (!hs.agents.has(r.id)) await loadAgents().catch(() => {});
      select(r.id);
      openConversation(r.id);
    }
  } catch (err) {
    showError(err.message);
    // Closed while it was on its way: said where it is seen.
    if (!$('new-agent-dialog').open) toast(`Could not start the agent: ${err.message}`, 'error');
  } finally {
    dialog.starting = false;
    go.disabled = false;
    go.textContent = 'Start';
    $('new-agent-form').removeAttribute('aria-busy');
    $('na-status').textContent = '';
    syncWorktree();
  }
}

/// Wires the header's button and the dialog (called once by app.js at load). Esc closes the
/// dialog (the browser's own, for a modal dialog), keeping what was typed for the next time.
export function wireNewAgent() {
  $('new-agent').addEventListener('click', openNewAgent);
  $('new-agent-form').addEventListener('submit', start);
  $('na-cancel').addEventListener('click', () => $('new-agent-dialog').close());
  $('na-worktree').addEventListener('change', syncWorktree);
  // Enter in a field starts it (the form's submit); in the prompt, Ctrl+Enter (or ⌘+Enter).
  $('na-prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !e.isComposing) {
      e.preventDefault();
      $('new-agent-form').requestSubmit();
    }
  });
}
