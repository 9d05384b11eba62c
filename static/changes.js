// Headspace dashboard: the open conversation's Changes view. It shows what the agent changed
// (GET /api/agents/{id}/diff: a worktree agent's branch against the commit it started from,
// any other agent's folder against HEAD), file by file, each opening to its patch; for an
// agent Headspace started in a worktree (a `headspace/…` branch) it merges or squashes that
// work into the branch it started from, discards it, and stops the agent. Discard and Stop
// ask first, in place: the first click turns the button into "Really …?" for 4 s. Every
// path and patch line goes through textContent: a file's contents are data.
import { $, api, el } from './helpers.js';
import { hs } from './state.js';
import { shownState } from './needs.js';
import { pinEnd } from './composer.js';

const BRANCH_PREFIX = 'headspace/';
const CONFIRM_MS = 4000;
const MAX_PATCH_LINES = 5000; // a file's patch shows at most these; the rest is counted
// The tools whose step summary is the file they write (core/src/usage/step.rs, file_of).
const EDIT_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);

const view = {
  agent: null,          // the agent whose changes are shown; null: the view is closed
  diff: null,           // its last diff
  error: null,          // why the diff could not be read
  note: null,           // the last action's outcome: { kind: busy|ok|error, text, conflicts }
  expanded: new Set(),  // paths whose patch is open
  busy: false,          // an action is on its way
  loading: 0,           // the latest fetch: an older answer is dropped
  stopped: false,       // stopped from here: no Stop, even before its card says it ended
  running: null,        // whether the drawn actions were a running agent's
  saved: null,          // the turns' scroll place while they are hidden
};

/// Shows the open conversation's changes in place of its turns.
function showChanges() {
  if (hs.open === null) return;
  if (view.agent === null) view.saved = { top: $('turns').scrollTop, atEnd: hs.atEnd };
  Object.assign(view, { agent: hs.open, diff: null, error: null, note: null, expanded: new Set(), busy: false, stopped: false, running: null });
  $('conversation').classList.add('showing-changes');
  $('changes').hidden = false;
  $('conv-changes').setAttribute('aria-pressed', 'true');
  $('changes').replaceChildren(el('p', 'changes-status', 'Reading the changes…'));
  loadDiff();
}

/// Back to the turns, where the reader was (`restore`; not when another conversation opens
/// or it closes). False when the view was not shown.
export function hideChanges(restore = true) {
  if (view.agent === null) return false;
  view.agent = null;
  view.loading += 1;
  $('conversation').classList.remove('showing-changes');
  $('changes').hidden = true;
  $('changes').replaceChildren();
  $('conv-changes').setAttribute('aria-pressed', 'false');
  const saved = view.saved;
  view.saved = null;
  if (restore && saved) {
    hs.atEnd = saved.atEnd;
    if (saved.atEnd) pinEnd(30); else $('turns').scrollTop = saved.top;
  }
  return true;
}

/// The open agent's card changed: Stop goes once it no longer runs.
export function changesAgentChanged(a) {
  if (view.agent === null || !a || a.id !== view.agent || view.busy || !ours(view.diff)) return;
  if (running(a) !== view.running) render();
}

export function wireChanges() {
  $('conv-changes').addEventListener('click', () => (view.agent !== null ? hideChanges() : showChanges()));
}

/// A diff of a branch Headspace made (`headspace/…`): its work merges and discards from here.
function ours(d) {
  return !!d && typeof d.branch === 'string' && d.branch.startsWith(BRANCH_PREFIX);
}

function running(a) {
  return !view.stopped && !!a && shownState(a) !== 'ended';
}

async function loadDiff() {
  const id = view.agent;
  if (id === null) return;
  const ticket = ++view.loading;
  try {
    const d = await api(`/api/agents/${id}/diff`);
    if (ticket !== view.loading) return;
    view.diff = d;
    view.error = null;
  } catch (e) {
    if (ticket !== view.loading) return;
    view.diff = null;
    view.error = e.message;
  }
  render();
}

// ---------- drawing -----------------------------------------------------------------------

function render() {
  const id = view.agent;
  if (id === null) return;
  const root = $('changes');
  const parts = [];
  const d = view.diff;
  const head = el('div', 'changes-head');
  const summary = el('p', 'changes-summary');
  if (d) {
    const n = d.files.length;
    summary.textContent = n ? `${n} file${n === 1 ? '' : 's'} changed against ${d.base}` : `No changes against ${d.base}`;
    if (n) {
      const added = d.files.reduce((s, f) => s + (f.added || 0), 0);
      const removed = d.files.reduce((s, f) => s + (f.removed || 0), 0);
      summary.append(' ', el('span', 'change-added', `+${added}`), ' ', el('span', 'change-removed', `−${removed}`));
    }
    if (d.branch) summary.append(' ', el('span', 'changes-branch', `· branch ${d.branch}`));
  } else if (!view.error) {
    summary.textContent = 'Reading the changes…';
  }
  const refresh = el('button', 'small', 'Refresh');
  refresh.type = 'button';
  refresh.dataset.act = 'refresh';
  refresh.title = 'Read the changes again';
  refresh.disabled = view.busy;
  refresh.addEventListener('click', loadDiff);
  head.append(summary, refresh);
  parts.push(head);
  if (view.note) parts.push(noteBlock(view.note));
  if (view.error) parts.push(el('p', 'changes-error', `Could not read the changes: ${view.error}`));
  if (ours(d)) parts.push(actionsBlock(d));
  if (d && d.files.length) {
    const steps = stepCounts(d.files.map((f) => f.path));
    const list = el('div', 'changes-files');
    for (const f of d.files) list.appendChild(fileBlock(f, steps.get(f.path) || 0));
    parts.push(list);
  }
  root.replaceChildren(...parts);
}

function noteBlock(note) {
  const box = el('div', 'changes-note');
  box.dataset.kind = note.kind;
  box.setAttribute('role', note.kind === 'error' ? 'alert' : 'status');
  box.appendChild(el('div', null, note.text));
  if (note.conflicts && note.conflicts.length) {
    box.appendChild(el('div', 'changes-conflicts-title', `Conflicting file${note.conflicts.length === 1 ? '' : 's'}:`));
    const ul = el('ul', 'changes-conflicts');
    for (const p of note.conflicts) {
      const li = el('li');
      li.appendChild(el('code', null, p));
      ul.appendChild(li);
    }
    box.appendChild(ul);
  }
  return box;
}

function actionsBlock(d) {
  const box = el('div', 'changes-actions');
  const into = d.base || 'its base branch';
  box.append(
    actionButton('Merge', 'merge', `Merge ${d.branch} into ${into} in the main checkout (a merge commit); what its worktree holds uncommitted is committed first`, () => merge('merge')),
    actionButton('Squash', 'squash', `Merge ${d.branch} into ${into} as one commit`, () => merge('squash')),
    confirmButton('Discard', 'Really discard?', 'discard', `Remove its worktree and delete ${d.branch} (once the agent stopped)`, discard),
  );
  const a = hs.agents.get(view.agent);
  view.running = running(a);
  if (view.running) box.appendChild(confirmButton('Stop', 'Really stop?', 'stop', 'Type /exit in its pane; killed if still there after 10 s', stop));
  return box;
}

function actionButton(label, act, title, run) {
  const b = el('button', 'small', label);
  b.type = 'button';
  b.dataset.act = act;
  b.title = title;
  b.disabled = view.busy;
  b.addEventListener('click', run);
  return b;
}

/// A button that asks first: the first click makes it "Really …?" for a few seconds; a click
/// then runs it.
function confirmButton(label, ask, act, title, run) {
  let timer = null;
  const b = actionButton(label, act, title, () => {
    if (!timer) {
      b.textContent = ask;
      b.classList.add('confirming');
      timer = setTimeout(() => {
        timer = null;
        b.textContent = label;
        b.classList.remove('confirming');
      }, CONFIRM_MS);
      return;
    }
    clearTimeout(timer);
    timer = null;
    b.textContent = label;
    b.classList.remove('confirming');
    run();
  });
  return b;
}

function fileBlock(f, steps) {
  const d = el('details', 'change-file');
  d.dataset.path = f.path;
  d.dataset.status = f.status;
  const row = el('summary', 'change-row');
  row.append(el('span', 'change-status', f.status), el('code', 'change-path', f.path));
  if (f.binary) row.appendChild(el('span', 'change-binary', 'binary'));
  else {
    const added = el('span', 'change-added', `+${f.added}`);
    added.title = `${f.added} line${f.added === 1 ? '' : 's'} added`;
    const removed = el('span', 'change-removed', `−${f.removed}`);
    removed.title = `${f.removed} line${f.removed === 1 ? '' : 's'} removed`;
    row.append(added, removed);
  }
  if (steps) {
    const s = el('span', 'change-steps', `changed in ${steps} step${steps === 1 ? '' : 's'}`);
    s.title = 'Write and Edit tool calls on this file, in the turns loaded in the conversation';
    row.appendChild(s);
  }
  d.appendChild(row);
  const fill = () => {
    if (d.querySelector(':scope > .patch, :scope > .change-binary-note')) return;
    d.appendChild(f.binary ? el('p', 'change-binary-note', 'A binary file: its contents are not shown.') : patchBlock(f.patch || ''));
  };
  if (view.expanded.has(f.path)) { d.open = true; fill(); }
  d.addEventListener('toggle', () => {
    if (d.open) { view.expanded.add(f.path); fill(); } else view.expanded.delete(f.path);
  });
  return d;
}

/// A file's patch, a line an element, each with its kind's class: the file's header lines
/// (`diff --git`, `index`, `---`, `+++`, modes, renames), hunk headers, added, removed and
/// context lines, and git's notes (`\ No newline at end of file`).
function patchBlock(patch) {
  const pre = el('pre', 'patch');
  pre.tabIndex = 0; // scrolled sideways from the keyboard too
  const lines = el('div', 'patch-lines');
  const all = (patch.endsWith('\n') ? patch.slice(0, -1) : patch).split('\n');
  let header = true;
  for (const line of all.slice(0, MAX_PATCH_LINES)) {
    let kind;
    if (line.startsWith('diff --git ')) { header = true; kind = 'diff-file'; }
    else if (line.startsWith('@@')) { header = false; kind = 'diff-hunk'; }
    else if (header) kind = 'diff-file';
    else if (line.startsWith('+')) kind = 'diff-add';
    else if (line.startsWith('-')) kind = 'diff-del';
    else if (line.startsWith('\\')) kind = 'diff-note';
    else kind = 'diff-context';
    lines.appendChild(el('span', `diff-line ${kind}`, line));
  }
  if (all.length > MAX_PATCH_LINES) {
    const more = all.length - MAX_PATCH_LINES;
    lines.appendChild(el('span', 'diff-line diff-note', `… ${more} more line${more === 1 ? '' : 's'} not shown (headspace diff shows them all)`));
  }
  pre.appendChild(lines);
  return pre;
}

/// How many of the loaded turns' successful Write/Edit steps changed each path: a step's
/// summary is the file's path, absolute, and the diff's paths are the repository's.
function stepCounts(paths) {
  const counts = new Map();
  if (hs.open !== view.agent) return counts;
  const wanted = new Set(paths);
  const match = (summary) => {
    if (wanted.has(summary)) return summary;
    for (let i = summary.indexOf('/'); i >= 0; i = summary.indexOf('/', i + 1)) {
      const rest = summary.slice(i + 1);
      if (wanted.has(rest)) return rest;
    }
    return null;
  };
  for (const { turn } of hs.turns.values()) {
    for (const s of turn.steps || []) {
      if (!EDIT_TOOLS.has(s.tool) || s.outcome !== 'ok' || !s.summary) continue;
      const p = match(String(s.summary));
      if (p !== null) counts.set(p, (counts.get(p) || 0) + 1);
    }
  }
  return counts;
}

// ---------- actions -----------------------------------------------------------------------

/// Runs an action on the shown agent, says how it went in the view, then reads the diff again.
async function act(busyText, request, done) {
  const id = view.agent;
  if (id === null || view.busy) return;
  view.busy = true;
  view.note = { kind: 'busy', text: busyText };
  render();
  try {
    const r = await request(id);
    if (view.agent !== id) return;
    view.note = { kind: 'ok', text: done(r) };
  } catch (e) {
    if (view.agent !== id) return;
    const conflicts = e.body && Array.isArray(e.body.conflicts) ? e.body.conflicts : [];
    view.note = { kind: 'error', text: e.message, conflicts };
  } finally {
    if (view.agent === id) view.busy = false;
  }
  await loadDiff();
}

const post = (path, body) => api(path, { method: 'POST', body: JSON.stringify(body) });
const short = (commit) => (commit ? String(commit).slice(0, 10) : '');

function merge(strategy) {
  return act(
    strategy === 'squash' ? 'Squashing…' : 'Merging…',
    (id) => post(`/api/agents/${id}/merge`, { strategy }),
    (r) => strategy === 'squash'
      ? `Squashed ${r.branch} into ${r.into} as one commit${r.commit ? ` (${short(r.commit)})` : ''}.`
      : `Merged ${r.branch} into ${r.into}${r.commit ? ` (commit ${short(r.commit)})` : ''}.`,
  );
}

function discard() {
  return act(
    'Discarding…',
    (id) => post(`/api/agents/${id}/discard`, {}),
    (r) => `Discarded: the worktree${r.worktree ? ` ${r.worktree}` : ''} and the branch${r.branch ? ` ${r.branch}` : ''} are gone.`,
  );
}

function stop() {
  return act(
    'Stopping… (it is asked to exit, and killed after 10 s)',
    async (id) => {
      const r = await post(`/api/agents/${id}/stop`, { force: false });
      view.stopped = true;
      return r;
    },
    (r) => (r.how === 'killed' ? 'Stopped: it did not exit in time and was killed.' : 'Stopped: it exited.'),
  );
}
