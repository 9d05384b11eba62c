// Headspace dashboard: what needs the user. The plain-word state of an agent (the one rule
// the cards, the summary, the strip and the title all use), the "Needs you" strip (agents
// waiting on a question or a permission, longest-waiting first, answered by button or
// number key), and the notifications (tab title, opt-in browser notifications).
// shell/tests/page_rules.rs imports this module in Node (stand-ins for window, document and
// localStorage) and checks shownState, isSubAgent and notableFinish against the core's cards.
import { $, api, el, since, toast } from './helpers.js';
import { cards, hs } from './state.js';
import { icon } from './icons.js';
import { answer, answerForm, isWizard, options, otherAnswer } from './questions.js';
import { pinEnd } from './composer.js';
import { micButton } from './voice.js';

export const SHOWN_LABEL = { waiting: 'needs you', working: 'working', done: 'done', idle: 'idle', unknown: 'unknown', ended: 'ended' };
export const SHOWN_ORDER = ['waiting', 'working', 'done', 'idle', 'unknown', 'ended'];

/// The one state an agent is shown in: the card's `shown`.
export function shownState(a) {
  // The server decides it (core/src/view/shown.rs: a task awaiting input that the user just sent
  // text to is working, not waiting; a machine that stopped reporting makes it unknown); the
  // page draws it and never decides it again.
  return SHOWN_LABEL[a.shown] ? a.shown : 'unknown';
}

export const attention = {
  waitingSince: new Map(), // agent id -> ms: when the page first saw it waiting (no server time)
  shown: new Map(),        // agent id -> the shown state last rendered
  unseenDone: new Set(),   // agents that finished while the page was not looked at
  markers: [],             // the "keys 1–N answer this" notes drawn (drawKeyTarget)
  markedFor: '',           // what they say, and of which agent ('' when none)
  markedAt: 0,             // when that last changed (performance.now())
  waitingCount: 0,         // agents in the strip, as last counted
  convPending: '',         // what the open conversation's pending request shows, as drawn
  // What a notification's click does: open the agent's conversation. Set by app.js:
  // conversation.js imports this module, so this module does not import it back.
  openConversation: null,
};

/// When the agent started waiting, in ms: its question's time, when its permission dialog
/// began showing (the server's), or when the page saw it.
export function waitingSince(a) {
  if (a.state === 'awaiting_input' && a.state_since) return Date.parse(a.state_since);
  const dialogSince = a.question && a.question.question && a.question.question.since;
  if (dialogSince) return Date.parse(dialogSince);
  if (!attention.waitingSince.has(a.id)) attention.waitingSince.set(a.id, Date.now());
  return attention.waitingSince.get(a.id);
}

/// Agents waiting on the user, longest-waiting first.
export function waitingAgents() {
  return [...hs.agents.values()]
    .filter((a) => shownState(a) === 'waiting' && !hs.dismissed.has(a.id))
    .sort((x, y) => waitingSince(x) - waitingSince(y) || x.id - y.id);
}

/// The display name: the user's, else the project (and the worktree's folder when it differs).
export function agentName(a) {
  // The server's name for it (every device shows it), else one this browser kept before.
  const own = a.name || (hs.names || {})[a.id];
  if (own) return own;
  const folder = a.cwd ? String(a.cwd).split('/').filter(Boolean).pop() : null;
  const p = a.project || folder || 'agent';
  const base = folder && folder !== p ? `${p} (${folder})` : p;
  // Two agents of one project often differ only by branch; the default branch says nothing.
  const branch = a.git_branch && !['main', 'master'].includes(a.git_branch) ? a.git_branch : null;
  return branch ? `${base} · ${branch}` : base;
}

/// What the agent asks, as elements: the question, the tool and its input, the options.
export function askedBlock(a, withOptions, place) {
  const box = el('div', 'asked');
  const q = a.question;
  if (!q) {
    box.appendChild(el('div', 'asked-text', 'Waiting for a permission (open its pane to see it).'));
    return box;
  }
  const dialog = q.question || {};
  const tool = dialog.tool;
  if (tool && (tool.summary || tool.name)) {
    const t = el('div', 'tool');
    const head = el('div', 'tool-name');
    head.append(icon('tool'), document.createTextNode(` ${tool.name}`));
    t.appendChild(head);
    if (tool.summary) t.appendChild(el('pre', 'tool-input', tool.summary));
    if (tool.detail) t.appendChild(el('div', 'tool-detail', tool.detail));
    box.appendChild(t);
  } else if (Array.isArray(dialog.detail) && dialog.detail.length) {
    box.appendChild(el('pre', 'tool-input', dialog.detail.join('\n')));
  }
  if (isWizard(dialog)) {
    // Several questions or several picks: a form where there is room, a pointer on a card.
    if (withOptions && place) box.appendChild(answerForm(dialog, a.id, place));
    else {
      box.appendChild(el('div', 'asked-text', q.text));
      box.appendChild(el('div', 'hint', 'Answer it under “Needs you”.'));
    }
    return box;
  }
  box.appendChild(el('div', 'asked-text', q.text));
  if (withOptions) {
    const o = options(dialog, a.id);
    if (o) box.appendChild(o);
    // An AskUserQuestion also takes a typed answer (its "Type something." row).
    if (o && dialog.questions && place) box.appendChild(otherAnswer(a.id, place, q.text));
    else box.appendChild(replyBox(a.id));
  }
  return box;
}

/// A free-text answer for a question with no options to pick (typed into the pane).
function replyBox(agentId) {
  const f = el('form', 'reply');
  const input = el('input');
  input.type = 'text';
  input.placeholder = 'Answer…';
  input.setAttribute('aria-label', 'Answer');
  const b = el('button', 'small', 'Send');
  f.append(input, micButton(input), b);
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!input.value.trim()) return;
    b.disabled = true;
    try {
      await api(`/api/agents/${agentId}/send`, { method: 'POST', body: JSON.stringify({ text: input.value }) });
      toast('Sent', 'ok');
      input.value = '';
    } catch (err) {
      toast(`Could not send: ${err.message}`, 'error');
    }
    b.disabled = false;
  });
  return f;
}

export function renderNeeds() {
  const root = $('needs');
  const list = waitingAgents();
  root.hidden = list.length === 0;
  const items = list.map((a) => {
    const item = el('article', 'need');
    item.dataset.id = a.id;
    const head = el('div', 'need-head');
    const name = el('button', 'need-name', agentName(a));
    name.dataset.open = a.id;
    const from = new Date(waitingSince(a)).toISOString();
    const waited = el('span', 'since', since(from));
    waited.dataset.since = from;
    head.append(name, el('span', 'need-pane', a.tmux_pane || ''), waited);
    item.append(head, askedBlock(a, true, 'needs'));
    return item;
  });
  const title = el('h2', 'needs-title', `Needs you (${list.length})`);
  title.appendChild(el('span', 'needs-keys'));
  root.replaceChildren(title, ...items);
  attention.waitingCount = list.length;
  noteAttention(list.length);
  drawKeyTarget();
}

/// The request the open conversation's agent waits on, at the conversation's end: the same
/// question, tool input and answers as its "Needs you" item (drawn by askedBlock), gone once
/// it stops waiting. On a phone the conversation covers the strip: this is where it answers.
export function renderConvPending(a) {
  const box = $('conv-pending');
  const waiting = a && a.id === hs.open && shownState(a) === 'waiting';
  // Drawn again only when what is asked changes: a reply being typed there stays.
  const drawn = waiting ? JSON.stringify([a.id, a.question]) : '';
  if (attention.convPending === drawn) return;
  attention.convPending = drawn;
  if (!waiting) { box.hidden = true; box.replaceChildren(); return; }
  box.replaceChildren(el('h2', 'needs-title', 'Needs you'), askedBlock(a, true, 'conv'));
  box.hidden = false;
  if (hs.atEnd) pinEnd(2); // the turns' box got shorter: its end stays in view
}

// ---------- spoken ----------------------------------------------------------------------------
// What voice.js reads aloud (app.js hands these to wireVoice): composed here, where questions
// are known. Options are numbered as the terminal and the number keys number them.

/// `parts` as spoken sentences: each ends with a stop unless it has its own.
function sentences(parts) {
  return parts
    .map((p) => String(p || '').trim())
    .filter(Boolean)
    .map((p) => (/[.!?:;…]$/.test(p) ? p : `${p}.`))
    .join(' ');
}

/// The labels of a question's options, as the terminal numbers them.
function optionLabels(q) {
  return (q.options || []).map((o) => (typeof o === 'string' ? o : o && o.label)).filter(Boolean);
}

/// What agent `a` asks, spoken: the question, the tool and what it would run, the options
/// numbered ("Option 1: Yes."); null when it does not wait.
export function spokenRequest(a) {
  if (!a || shownState(a) !== 'waiting') return null;
  const q = a.question;
  if (!q) return 'It waits on a permission; its pane shows which.';
  const dialog = q.question || {};
  const parts = [q.text];
  const tool = dialog.tool;
  if (tool && tool.name) {
    const what = String(tool.summary || '').slice(0, 200);
    parts.push(what ? `${tool.name}: ${what}` : tool.name);
  }
  const qs = Array.isArray(dialog.questions) && dialog.questions.length ? dialog.questions : [dialog];
  for (const one of qs) {
    // A question of several is named; the one question is the text already said.
    if (qs.length > 1 && one.question && one.question !== q.text) parts.push(one.question);
    optionLabels(one).forEach((label, i) => parts.push(`Option ${i + 1}: ${label}`));
  }
  return sentences(parts);
}

/// What Read aloud says for agent `a` (the open conversation's): what it asks if it waits,
/// else its last reply (the conversation's, whole; else the card's preview); null when it
/// has said nothing.
export function spokenFor(a) {
  if (!a) return null;
  const asked = spokenRequest(a);
  if (asked) return sentences([`${agentName(a)} asks`, asked]);
  let reply = null;
  if (hs.open === a.id) {
    for (let i = hs.order.length - 1; i >= 0 && !reply; i--) {
      const e = hs.turns.get(hs.order[i][1]);
      if (e && e.turn.actor !== 'user' && e.turn.text) reply = e.turn.text;
    }
  }
  if (!reply && a.last_turn && a.last_turn.actor !== 'user') reply = a.last_turn.text;
  return reply ? sentences([`${agentName(a)} said`, reply]) : null;
}

/// What hands-free says for a "needs you" notice `n`: its title, then what the agent asks
/// with its options, from the notice's own options when it brings them, else from the agent
/// as the server has it now (a card on the page may be a moment behind the notice).
export async function noticeSpeech(n) {
  if (Array.isArray(n.options) && n.options.length) {
    return sentences([n.title, n.body, ...n.options.map((o, i) => `Option ${i + 1}: ${o}`)]);
  }
  try {
    const asked = spokenRequest(await api(`/api/agents/${n.agent_id}`));
    if (asked) return sentences([n.title, asked]);
  } catch (e) { /* the notice's own words, below */ }
  return sentences([n.title, n.body]);
}

// ---------- number keys -----------------------------------------------------------------------
// A number key answers one request only: the selected card's (hs.selected: its outline),
// when that agent waits on options in the strip. Nothing else is ever picked for the key (not
// the top of the strip, not the next one when the selected agent is answered), and the
// target is named on screen first: its strip item and its card carry "keys 1–N answer this:
// <name>". keyTarget() is the one rule; drawKeyTarget() draws it and answerByKey() acts only
// on what is drawn, on screen, and has been for a moment (a key pressed in the same instant
// as the selection moved is not taken for the new one).

const KEY_SETTLE_MS = 100;

/// The agent number keys answer now, or null.
function keyTarget() {
  const a = hs.agents.get(hs.selected);
  if (!a || shownState(a) !== 'waiting' || hs.dismissed.has(a.id)) return null;
  return keyButtons(a.id).length ? a : null;
}

/// The option buttons of agent `id`'s strip item.
function keyButtons(id) {
  return [...$('needs').querySelectorAll(`.need[data-id="${id}"] button.answer`)];
}

/// What the note naming key target `a` says.
function keyNoteText(a) {
  const n = keyButtons(a.id).length;
  return `${n === 1 ? 'key 1 answers' : `keys 1–${n} answer`} this: ${agentName(a)}`;
}

/// Draws the key target: the strip item's outline and a note on it and on its card, or, with
/// none, how to pick one. Called whenever the selection, the strip or a card is drawn; draws
/// again only what changed.
export function drawKeyTarget() {
  const strip = $('needs');
  const a = keyTarget();
  for (const item of strip.querySelectorAll('.need')) item.classList.toggle('focused', !!a && Number(item.dataset.id) === a.id);
  const hint = strip.querySelector('.needs-keys');
  const hintText = a ? '' : ' · number keys: select one first (click it, or j / k)';
  if (hint && hint.textContent !== hintText) hint.textContent = hintText;
  const card = a && cards.els.get(a.id);
  const places = a ? [strip.querySelector(`.need[data-id="${a.id}"]`), card && card.querySelector('.question')].filter(Boolean) : [];
  const text = a ? keyNoteText(a) : '';
  const marked = a ? `${a.id}|${text}` : '';
  if (attention.markedFor !== marked) { attention.markedFor = marked; attention.markedAt = performance.now(); }
  const drawn = attention.markers;
  if (drawn.length === places.length && drawn.every((m, i) => m.isConnected && m.parentNode === places[i] && m.textContent === text)) return;
  for (const m of drawn) m.remove();
  attention.markers = places.map((place) => {
    const note = el('div', 'key-target', text);
    note.dataset.agent = String(a.id);
    const head = place.querySelector(':scope > .need-head');
    return place.insertBefore(note, head ? head.nextSibling : place.firstChild);
  });
}

/// Whether element `e` can be seen: inside the window and not covered (by the conversation
/// on a narrow screen, say).
function onScreen(e) {
  if (!e.isConnected) return false;
  const r = e.getBoundingClientRect();
  const x = r.left + r.width / 2;
  const y = r.top + r.height / 2;
  if (!r.width || !r.height || x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) return false;
  const hit = document.elementFromPoint(x, y);
  return !!hit && (hit === e || e.contains(hit));
}

/// Number key `n`: answers the key target with option `n` when its note is drawn and seen.
export function answerByKey(n) {
  const a = keyTarget();
  if (!a) {
    const chosen = hs.agents.get(hs.selected);
    if (chosen && shownState(chosen) === 'waiting') toast(`${agentName(chosen)}’s request has no options for number keys: answer it under “Needs you”`, '');
    else if (attention.waitingCount) toast('Number keys answer the selected “Needs you” request: select one first (click it, or j / k)', '');
    return false;
  }
  const named = attention.markers.filter((m) => m.isConnected && Number(m.dataset.agent) === a.id);
  // Not drawn yet (the next frame names it), or named only just now: not yet seen.
  if (!named.length || performance.now() - attention.markedAt < KEY_SETTLE_MS) return false;
  if (!named.some(onScreen)) {
    toast(`Number keys answer ${agentName(a)}: scroll its request into view first`, '');
    return false;
  }
  const b = keyButtons(a.id).find((x) => x.dataset.answer === String(n));
  if (!b || b.disabled) return false;
  answer(b.dataset.agent, b.dataset.answer, b);
  return true;
}

// ---------- notifications ---------------------------------------------------------------------

function notificationsOn() {
  return localStorage.getItem('hs.notify') === '1' && 'Notification' in window && Notification.permission === 'granted';
}

export async function toggleNotifications() {
  if (localStorage.getItem('hs.notify') === '1') {
    localStorage.removeItem('hs.notify');
    toast('Browser notifications off', '');
  } else if ('Notification' in window) {
    const p = await Notification.requestPermission();
    if (p === 'granted') { localStorage.setItem('hs.notify', '1'); toast('Browser notifications on', 'ok'); }
    else toast('The browser did not allow notifications', 'error');
  }
  $('notify').setAttribute('aria-pressed', String(localStorage.getItem('hs.notify') === '1'));
}

/// After a card changes: remembers what it shows, and counts a notable finish the user did
/// not see for the tab title. Whether to tell the user is not decided here: the server's
/// `notice` events say (showNotice).
export function noteTransition(a) {
  const now = shownState(a);
  const before = attention.shown.get(a.id);
  attention.shown.set(a.id, now);
  if (now !== 'waiting') attention.waitingSince.delete(a.id);
  if (before === undefined || before === now) return;
  const finished = now === 'done' && (before === 'working' || before === 'waiting');
  if (finished && notableFinish(a) && (document.hidden || !document.hasFocus())) attention.unseenDone.add(a.id);
}

/// A sub-agent's session: its parent's news is what the user follows (the card says).
export function isSubAgent(a) {
  return a.sub_agent === true;
}

/// Whether a finished task is news (the card says: not a sub-agent's, not `/clear`'s).
export function notableFinish(a) {
  return a.notable_finish === true;
}

/// A `notice` event from the server (core/src/view/notice.rs decides which news is told and
/// how often, for every page and --notify-command alike): a browser notification, when
/// they are on and the user is not looking at the page. One tag per notice, so several
/// open tabs show it once.
export function showNotice(n) {
  hs.metrics.notices = (hs.metrics.notices || 0) + 1;
  if (!notificationsOn() || (!document.hidden && document.hasFocus())) return;
  try {
    // The title is the server's (its name for the agent, else its project: notice.rs).
    const note = new Notification(String(n.title || ''), { body: String(n.body || '').slice(0, 300), tag: `hs-${n.agent_id}-${n.event}-${n.at}` });
    note.onclick = () => { window.focus(); attention.openConversation(n.agent_id); };
  } catch (e) { /* notifications unavailable here */ }
}

/// The tab title: how many agents need the user, plus those that finished unseen.
export function noteAttention(waiting) {
  const n = waiting + attention.unseenDone.size;
  const title = n ? `(${n}) Headspace` : 'Headspace';
  if (document.title !== title) document.title = title; // called on every card change
}

document.addEventListener('visibilitychange', () => {
  if (!document.hidden) { attention.unseenDone.clear(); noteAttention(waitingAgents().length); }
});
window.addEventListener('focus', () => { attention.unseenDone.clear(); noteAttention(waitingAgents().length); });
