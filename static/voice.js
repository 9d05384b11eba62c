// Headspace dashboard: voice, for the user away from the keyboard (as the Python Headspace's
// Voice Bridge did). Dictation into the prompt box and the free-text answer boxes (the
// browser's speech recognition), Read aloud of what the open agent asks or last said (speech
// synthesis), short tones (WebAudio) for "needs you", "sent" and errors, and a hands-free
// mode that reads each new "needs you" notice aloud as it arrives. The header's #voice button
// cycles off → tones → hands-free (localStorage `hs.voice`); off is the default: a page that
// beeps unasked is noise. Each part is shown only where the browser has what it needs, and
// none of it ever throws into the page: a browser blocks audio until the user touches the
// page, so the AudioContext is made and resumed lazily.
//
// For the browser tests, what was driven is recorded whether or not it could sound (a
// headless browser has no speakers): hs.metrics.tones (the tone names played) and
// hs.metrics.spoken (each text handed to speechSynthesis.speak).
//
// This module imports no other page module but the leaves (helpers, state, icons): needs.js,
// questions.js and composer.js import it, and what is read aloud (which needs.js composes) is
// handed to wireVoice by app.js.
import { $, el, toast, toastWatchers } from './helpers.js';
import { hs } from './state.js';
import { icon, setIcon } from './icons.js';

/// The sound modes #voice cycles through, in order.
export const VOICE_MODES = ['off', 'tones', 'hands-free'];

const MODE = {
  off: { icon: 'sound-off', label: 'off', said: 'Sounds off' },
  tones: { icon: 'tones', label: 'tones', said: 'Sounds on: a tone when an agent needs you, when a message is sent, and on an error' },
  'hands-free': { icon: 'hands-free', label: 'hands-free', said: 'Hands-free: tones, and each agent that needs you is read aloud with its options' },
};

// The tones: notes of [frequency Hz, start s, length s, peak gain, glide-to Hz, wave]. Quiet
// (a peak of a few hundredths) and short: they tell, they do not alarm.
const TONES = {
  'needs-you': [[660, 0, 0.12, 0.07], [880, 0.14, 0.18, 0.07]], // two rising notes
  sent: [[587, 0, 0.09, 0.035]],                                 // one short soft note
  error: [[330, 0, 0.32, 0.06, 165, 'triangle']],                // low, falling
};

// What the browser's speech recognition errors mean, in plain words.
const MIC_ERRORS = {
  'not-allowed': 'Microphone: not allowed (allow it in the site’s settings)',
  'service-not-allowed': 'Microphone: the browser’s speech service is not allowed here',
  'audio-capture': 'Microphone: none found',
  'no-speech': 'Microphone: no speech heard',
  network: 'Microphone: the speech service could not be reached',
  'language-not-supported': 'Microphone: the speech service does not know this language',
};

// Reading aloud is cut at sentence ends into pieces this long at most: some voices stop
// after some fifteen seconds of one utterance.
const SPEECH_PIECE = 200;
// A longer text (a long reply) is read this far, then says the rest is on screen.
const SPEECH_MAX = 3000;

const voice = {
  ctx: null,          // the AudioContext, made at the first tone or touch
  dictation: null,    // { rec, button, target, base, interim, written, folded }
  reading: null,      // the button whose reading is under way (aria-pressed)
  readAloud: null,    // () => the text Read aloud says for the open conversation (app.js)
  noticeText: null,   // async (notice) => what hands-free says for it (app.js)
  told: new Set(),    // the speech errors already said (each is said once a page)
};

/// The sound mode: 'off' (the default), 'tones' or 'hands-free'.
export function voiceMode() {
  const m = localStorage.getItem('hs.voice');
  return VOICE_MODES.includes(m) ? m : 'off';
}

// ---------- tones ---------------------------------------------------------------------------

/// Whether the page was touched (a click, a key): before that, browsers let no page sound.
/// True where the browser does not say.
function touched() {
  const ua = navigator.userActivation;
  return !ua || ua.hasBeenActive;
}

/// The AudioContext, made and resumed on demand; null where there is none, or while the page
/// was not touched yet (the browser would refuse it, and say so in the console each time).
function audio() {
  const AC = window.AudioContext || window.webkitAudioContext;
  if (!AC || !touched()) return null;
  if (!voice.ctx) voice.ctx = new AC();
  if (voice.ctx.state === 'suspended') voice.ctx.resume().catch(() => {});
  return voice.ctx;
}

/// Plays tone `name` ('needs-you', 'sent' or 'error') when sounds are on; true when it was
/// played (recorded in hs.metrics.tones even where nothing can sound). Never throws.
export function playTone(name) {
  if (voiceMode() === 'off' || !TONES[name]) return false;
  hs.metrics.tones.push(name);
  try {
    const ctx = audio();
    if (!ctx) return true;
    const t0 = ctx.currentTime + 0.02;
    for (const [freq, at, length, peak, glide, wave] of TONES[name]) {
      const o = ctx.createOscillator();
      const g = ctx.createGain();
      const t = t0 + at;
      o.type = wave || 'sine';
      o.frequency.setValueAtTime(freq, t);
      if (glide) o.frequency.exponentialRampToValueAtTime(glide, t + length);
      // A soft attack and decay: no click at either end.
      g.gain.setValueAtTime(0.0001, t);
      g.gain.exponentialRampToValueAtTime(peak, t + 0.015);
      g.gain.exponentialRampToValueAtTime(0.0001, t + length);
      o.connect(g).connect(ctx.destination);
      o.start(t);
      o.stop(t + length + 0.03);
    }
  } catch (e) { /* no audio here: the tone is recorded, not heard */ }
  return true;
}

// ---------- speech --------------------------------------------------------------------------

/// Whether this browser can read aloud.
export function canSpeak() {
  return 'speechSynthesis' in window && typeof window.SpeechSynthesisUtterance === 'function';
}

/// Markdown made speakable: code blocks named, not spelled out; marks dropped; lines ended.
function speakable(text) {
  let s = String(text || '')
    .replace(/```[\s\S]*?(```|$)/g, ' (a code block) ')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/https?:\/\/\S+/g, 'a link')
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/gm, '')
    .replace(/(\*\*|__|~~)/g, '')
    .replace(/([^.!?:;,\s])[ \t]*\n+/g, '$1.\n')
    .replace(/\s+/g, ' ')
    .trim();
  if (s.length > SPEECH_MAX) s = `${s.slice(0, SPEECH_MAX).replace(/\s\S*$/, '')}… The rest is on screen.`;
  return s;
}

/// `text` in pieces of at most SPEECH_PIECE characters, cut at sentence ends (else spaces).
function pieces(text) {
  const out = [];
  let rest = text;
  while (rest.length > SPEECH_PIECE) {
    const head = rest.slice(0, SPEECH_PIECE);
    let cut = Math.max(head.lastIndexOf('. '), head.lastIndexOf('? '), head.lastIndexOf('! '), head.lastIndexOf(': '));
    if (cut < SPEECH_PIECE / 3) cut = head.lastIndexOf(' ');
    if (cut <= 0) cut = SPEECH_PIECE - 1;
    out.push(rest.slice(0, cut + 1).trim());
    rest = rest.slice(cut + 1).trim();
  }
  if (rest) out.push(rest);
  return out;
}

function setReading(button) {
  if (voice.reading && voice.reading !== button) voice.reading.setAttribute('aria-pressed', 'false');
  voice.reading = button;
  if (button) button.setAttribute('aria-pressed', 'true');
}

/// Stops reading aloud (what is said and what waits to be).
export function stopSpeaking() {
  try { if (canSpeak()) window.speechSynthesis.cancel(); } catch (e) { /* nothing to stop */ }
  setReading(null);
}

/// Reads `text` aloud: after what is being said, or in its place with `interrupt`; `button`
/// shows it pressed until the reading ends. Each piece handed to speechSynthesis.speak is
/// recorded in hs.metrics.spoken. False when nothing was read.
export function speak(text, { interrupt = false, button = null } = {}) {
  const clean = speakable(text);
  if (!clean || !canSpeak()) return false;
  const synth = window.speechSynthesis;
  try {
    if (interrupt) { synth.cancel(); setReading(null); }
    const parts = pieces(clean);
    if (button) setReading(button);
    parts.forEach((part, i) => {
      const u = new window.SpeechSynthesisUtterance(part);
      const last = i === parts.length - 1;
      u.onend = () => { if (last && button && voice.reading === button) setReading(null); };
      u.onerror = (e) => {
        if (button && voice.reading === button) setReading(null);
        // A cancel (Stop, or the next reading) is no failure.
        if (e.error === 'canceled' || e.error === 'interrupted') return;
        // Each failure is said once: hands-free would repeat it at every notice.
        const why = e.error || 'the browser could not speak';
        if (voice.told.has(why)) return;
        voice.told.add(why);
        // Without the error tone: untouched, that could not sound either.
        if (why === 'not-allowed') toast('Read aloud: the browser lets this page speak only after a click or key on it', '');
        else toast(`Read aloud: ${why === 'synthesis-failed' ? 'the browser has no voice to speak with (synthesis-failed)' : why}`, 'error');
      };
      hs.metrics.spoken.push(part);
      synth.speak(u);
    });
    // Chrome can be left paused by a cancel in another tab: what was queued would wait.
    if (synth.paused) synth.resume();
    return true;
  } catch (e) {
    setReading(null);
    toast(`Read aloud: ${e.message}`, 'error');
    return false;
  }
}

/// The conversation head's Read aloud: what the open agent asks, or its last reply; pressed
/// again, it stops.
function toggleReadAloud() {
  const b = $('conv-speak');
  if (voice.reading === b) { stopSpeaking(); return; }
  let text = null;
  try { text = voice.readAloud ? voice.readAloud() : null; } catch (e) { text = null; }
  if (!text) { toast('Nothing to read aloud: it has not said anything yet', ''); return; }
  speak(text, { interrupt: true, button: b });
}

/// A `notice` from the server (app.js hands it here beside needs.js's showNotice): "needs
/// you" plays its tone, and in hands-free mode is read aloud, queued after what is being said
/// (two at once are both read). Other notices say nothing here.
export async function hearNotice(n) {
  if (!n || n.event !== 'needs_you') return;
  playTone('needs-you');
  if (voiceMode() !== 'hands-free' || !canSpeak()) return;
  let text = '';
  try { text = voice.noticeText ? await voice.noticeText(n) : ''; } catch (e) { text = ''; }
  if (!text) text = [n.title, n.body].filter(Boolean).join('. ');
  speak(text);
}

// ---------- dictation -----------------------------------------------------------------------

/// The browser's speech recognition, or null.
function recognition() {
  return window.SpeechRecognition || window.webkitSpeechRecognition || null;
}

/// Whether this browser can turn speech into text.
export function canDictate() {
  return !!recognition();
}

/// `a` and `b` with one space between them where neither brings one.
function joined(a, b) {
  if (!a || !b || /\s$/.test(a) || /^\s/.test(b)) return a + b;
  return `${a} ${b}`;
}

function endDictation(d) {
  if (voice.dictation === d) voice.dictation = null;
  d.button.setAttribute('aria-pressed', 'false');
  d.button.classList.remove('listening');
}

/// Stops the dictation under way, if any: its box is being sent (what was heard so far is
/// in it; what the recogniser would still finalise must not come back into the emptied box).
export function stopDictation() {
  const running = voice.dictation;
  if (!running) return;
  running.rec.onresult = null;
  try { running.rec.stop(); } catch (e) { /* already ended */ }
  endDictation(running);
}

/// Starts dictating into `target` (a textarea or text input) for `button`, or stops the
/// dictation under way; one at a time (a second box's button moves it there).
export function toggleDictation(button, target) {
  const running = voice.dictation;
  if (running) {
    try { running.rec.stop(); } catch (e) { /* already ended */ }
    endDictation(running);
    if (running.button === button) return;
  }
  const SR = recognition();
  if (!SR) { toast('Microphone: this browser cannot turn speech into text', 'error'); return; }
  if (target.disabled) return;
  let rec;
  try { rec = new SR(); } catch (e) { toast(`Microphone: ${e.message}`, 'error'); return; }
  rec.continuous = true;
  rec.interimResults = true;
  rec.lang = navigator.language || 'en-US';
  // The text is the box's as it was (`base`), what was heard for sure appended to it, and
  // what is being heard (`interim`) shown after, replaced as it firms up.
  const d = { rec, button, target, base: target.value, interim: '', written: target.value, folded: 0 };
  rec.onresult = (e) => {
    if (!target.isConnected) { try { rec.stop(); } catch (err) { /* ended */ } return; }
    // Emptied meanwhile (sent): what was heard went with it; nothing comes back.
    if (d.written && !target.value) {
      d.folded = e.results.length;
      d.base = '';
      d.interim = '';
      d.written = '';
      return;
    }
    // Typed into meanwhile: the typing is kept, the shown guess dropped from it.
    if (target.value !== d.written) {
      d.base = d.interim && target.value.endsWith(d.interim) ? target.value.slice(0, -d.interim.length) : target.value;
    }
    // Results come in order; each final one, once those before it are, joins the base.
    let interim = '';
    for (let i = d.folded; i < e.results.length; i++) {
      const r = e.results[i];
      const said = ((r[0] && r[0].transcript) || '').trim();
      if (r.isFinal && !interim) { d.base = joined(d.base, said); d.folded = i + 1; } else interim = joined(interim, said);
    }
    d.interim = interim ? joined(d.base, interim).slice(d.base.length) : '';
    target.value = d.base + d.interim;
    d.written = target.value;
    // The box's own listeners hear it as typing (the composer's history walk ends).
    target.dispatchEvent(new Event('input', { bubbles: true }));
  };
  rec.onerror = (e) => {
    if (e.error === 'aborted') return; // stopped by us
    toast(MIC_ERRORS[e.error] || `Microphone: ${e.error || 'it stopped'}`, 'error');
  };
  rec.onend = () => {
    // Whatever was still a guess stays: the user saw it, and can edit it.
    endDictation(d);
  };
  try {
    rec.start();
  } catch (e) {
    toast(`Microphone: ${e.message}`, 'error');
    return;
  }
  voice.dictation = d;
  button.setAttribute('aria-pressed', 'true');
  button.classList.add('listening');
  target.focus();
}

/// A microphone button that dictates into `target` (a free-text answer box): hidden where
/// the browser cannot turn speech into text.
export function micButton(target) {
  const b = el('button', 'mic icon');
  b.type = 'button';
  b.title = 'Dictate the answer: speak, and the words are added to the box (again: stop)';
  b.setAttribute('aria-label', 'Dictate the answer');
  b.setAttribute('aria-pressed', 'false');
  b.appendChild(icon('mic'));
  b.hidden = !canDictate();
  b.addEventListener('click', (e) => {
    // The strip item and the card under it take clicks too (select, open).
    e.preventDefault();
    e.stopPropagation();
    toggleDictation(b, target);
  });
  return b;
}

// ---------- wiring --------------------------------------------------------------------------

/// Draws #voice for the sound mode.
function showMode() {
  const b = $('voice');
  const m = voiceMode();
  b.dataset.mode = m;
  b.setAttribute('aria-pressed', String(m !== 'off'));
  b.setAttribute('aria-label', `Sounds and hands-free voice: ${MODE[m].label}`);
  b.title = `Sounds and hands-free voice: ${MODE[m].label} (click for ${MODE[nextMode(m)].label}). Tones: when an agent needs you, a message is sent, an error. Hands-free: each agent that needs you is read aloud too.`;
  setIcon(b, MODE[m].icon);
}

/// The mode after `m`: hands-free is skipped where the browser cannot speak.
function nextMode(m) {
  let next = VOICE_MODES[(VOICE_MODES.indexOf(m) + 1) % VOICE_MODES.length];
  if (next === 'hands-free' && !canSpeak()) next = 'off';
  return next;
}

function cycleMode() {
  const next = nextMode(voiceMode());
  if (next === 'off') localStorage.removeItem('hs.voice'); else localStorage.setItem('hs.voice', next);
  showMode();
  if (next === 'off') stopSpeaking();
  else {
    // This click is the touch the browser wants before a page may sound.
    try { audio(); } catch (e) { /* no audio here */ }
  }
  toast(MODE[next].said, next === 'off' ? '' : 'ok');
}

/// Wires voice once, at load: #voice, the prompt box's microphone, Read aloud, the error
/// tone of error toasts. `readAloud()` gives what Read aloud says for the open conversation
/// (null: nothing); `noticeText(notice)` (async) what hands-free says for a notice.
export function wireVoice({ readAloud, noticeText } = {}) {
  voice.readAloud = readAloud || null;
  voice.noticeText = noticeText || null;
  showMode();
  $('voice').addEventListener('click', cycleMode);
  const mic = $('dictate');
  mic.hidden = !canDictate();
  mic.addEventListener('click', () => toggleDictation(mic, $('prompt')));
  const read = $('conv-speak');
  read.hidden = !canSpeak();
  read.addEventListener('click', toggleReadAloud);
  toastWatchers.push((message, kind) => { if (kind === 'error') playTone('error'); });
  // A tone made before any touch stays silent: the first touch wakes the audio.
  const wake = () => {
    if (voiceMode() !== 'off') { try { audio(); } catch (e) { /* no audio here */ } }
  };
  document.addEventListener('pointerdown', wake, { once: true, capture: true });
  document.addEventListener('keydown', wake, { once: true, capture: true });
}
