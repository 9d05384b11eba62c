// Headspace dashboard: the prompt box under a conversation. Enter sends, Shift+Enter makes a
// new line, ↑ and ↓ walk the prompts sent before, Escape leaves the box (and never reaches the
// agent); Interrupt (its button, or Alt+I) and Clear use the agent's routes. What was sent
// shows at once as a pending turn, which the real turn (from the transcript or the prompt
// hook) replaces. Following the conversation's end (followEnd, pinEnd) is here too; its
// wiring (wireFollow) is conversation.js's.
import { $, api, el, toast } from './helpers.js';
import { hs } from './state.js';
import { renderMarkdown } from './markdown.js';
import { playTone, stopDictation } from './voice.js';

const composer = {
  history: JSON.parse(localStorage.getItem('hs.history') || '[]'), // newest last
  at: null,      // index into history while walking it
  draft: '',     // what was typed before walking the history
  pending: [],   // [{ agentId, text, el }]
};

function rememberPrompt(text) {
  composer.history = composer.history.filter((h) => h !== text).concat([text]).slice(-100);
  localStorage.setItem('hs.history', JSON.stringify(composer.history));
  composer.at = null;
}

/// Shows `text` as the user's turn, pending until the real one arrives.
function showPending(agentId, text) {
  const b = el('div', 'bubble user command pending');
  const meta = el('div', 'meta');
  meta.append(el('span', null, 'You'), el('span', 'time', 'sending…'));
  const body = el('div', 'text');
  body.appendChild(renderMarkdown(text));
  b.append(meta, body);
  $('turns').appendChild(b);
  const entry = { agentId, text: text.trim(), el: b };
  composer.pending.push(entry);
  followEnd(true);
  return entry;
}

/// A real user turn arrived: the pending one with its text goes.
export function settlePending(turn) {
  if (turn.actor !== 'user') return;
  const i = composer.pending.findIndex((p) => p.agentId === turn.agent_id && p.text === String(turn.text).trim());
  if (i < 0) return;
  composer.pending[i].el.remove();
  composer.pending.splice(i, 1);
}

export function dropPending() {
  for (const p of composer.pending) p.el.remove();
  composer.pending = [];
}

async function sendPrompt() {
  const box = $('prompt');
  const text = box.value;
  const id = hs.open;
  if (!text.trim() || id === null) return;
  rememberPrompt(text);
  stopDictation();
  box.value = '';
  const pending = showPending(id, text);
  try {
    const r = await api(`/api/agents/${id}/send`, { method: 'POST', body: JSON.stringify({ text }) });
    pending.el.querySelector('.time').textContent = r.verified ? 'sent' : 'sent (not confirmed on screen)';
    playTone('sent');
  } catch (e) {
    pending.el.classList.add('failed');
    pending.el.querySelector('.time').textContent = `not sent: ${e.message}`;
    composer.pending = composer.pending.filter((p) => p !== pending);
    if (!box.value) box.value = text; // nothing lost
  }
}

async function paneAction(action, label) {
  const id = hs.open;
  if (id === null) return;
  try {
    await api(`/api/agents/${id}/${action}`, { method: 'POST', body: '{}' });
    toast(label, 'ok');
  } catch (e) {
    toast(`Could not ${action}: ${e.message}`, 'error');
  }
}

function walkHistory(step) {
  const box = $('prompt');
  const h = composer.history;
  if (!h.length) return false;
  if (composer.at === null) { if (step > 0) return false; composer.draft = box.value; composer.at = h.length; }
  const next = composer.at + step;
  if (next < 0) return true;
  if (next >= h.length) { composer.at = null; box.value = composer.draft; return true; }
  composer.at = next;
  box.value = h[next];
  return true;
}

/// Alt+I: the interrupt's key, in the prompt box and on the page. Escape is not: it leaves the
/// box. Known by the character it would type, never by the key's place: on a Mac, Option+I
/// is the circumflex's dead key (ê), typed in ordinary text, and must not interrupt.
export function isInterruptKey(e) {
  return e.altKey && !e.ctrlKey && !e.metaKey && (e.key === 'i' || e.key === 'I');
}

export function interrupt() {
  paneAction('interrupt', 'Interrupted (Escape sent)');
}

/// Why nothing can be typed into an agent, in plain words; null when something can.
export function cannotSend(a) {
  if (!a) return null;
  if (a.activity === 'ended') {
    const why = {
      stopped: 'it was stopped from Headspace',
      pane_closed: 'its tmux pane closed',
      process_exited: 'its Claude Code process exited',
      silent: 'nothing was heard of it for too long',
    }[a.end_reason] || 'it exited';
    return `This agent has ended (${why}): nothing can be sent to it.`;
  }
  if (!a.tmux_pane) return 'This agent runs in no known tmux pane: Headspace cannot type into it.';
  return null;
}

const PROMPT_HINT = 'Message this agent — Enter sends, Shift+Enter new line, ↑ history';

/// The prompt box and its buttons for the open agent: disabled, with the reason in the box,
/// for one that cannot take text (ended, no pane); what was typed is kept.
export function composerFor(a) {
  const why = cannotSend(a);
  const box = $('prompt');
  box.disabled = why !== null;
  box.placeholder = why || PROMPT_HINT;
  box.title = why || '';
  for (const b of ['send', 'dictate', 'interrupt', 'clear']) {
    $(b).disabled = why !== null;
    $(b).title = why || $(b).dataset.hint || $(b).title;
  }
}

export function wireComposer() {
  for (const b of ['send', 'dictate', 'interrupt', 'clear']) $(b).dataset.hint = $(b).title;
  const box = $('prompt');
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); sendPrompt(); return; }
    // Escape leaves the box, what was typed kept; a second one (on the page) closes the panel.
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); box.blur(); return; }
    if (isInterruptKey(e)) { e.preventDefault(); e.stopPropagation(); interrupt(); return; }
    const before = box.value.slice(0, box.selectionStart);
    if (e.key === 'ArrowUp' && !before.includes('\n') && walkHistory(-1)) e.preventDefault();
    else if (e.key === 'ArrowDown' && !box.value.slice(box.selectionEnd).includes('\n') && walkHistory(1)) e.preventDefault();
  });
  box.addEventListener('input', () => { composer.at = null; });
  $('composer').addEventListener('submit', (e) => { e.preventDefault(); sendPrompt(); });
  $('interrupt').addEventListener('click', interrupt);
  $('clear').addEventListener('click', () => {
    if (confirm('Send /clear to this agent? Its context is emptied.')) paneAction('clear', 'Cleared (/clear sent)');
  });
}

/// Keeps the conversation at its end while the user reads the end; otherwise shows "new below".
export function followEnd(force) {
  if (force) hs.atEnd = true;
  if (hs.atEnd) {
    $('new-below').hidden = true;
    pinEnd(30);
  } else {
    $('new-below').hidden = false;
  }
}

// Bubbles off screen are laid out lazily (content-visibility), so the height grows for a few
// frames after a jump to the end: stay pinned to it until then, unless the user scrolls away.
export function pinEnd(frames) {
  const box = $('turns');
  if (!hs.atEnd) return;
  box.scrollTop = box.scrollHeight;
  if (frames > 0) requestAnimationFrame(() => pinEnd(frames - 1));
}
