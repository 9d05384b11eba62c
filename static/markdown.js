// Headspace dashboard: a small, safe Markdown renderer for agent and user text.
// It builds DOM nodes and sets only textContent and a few known attributes: agent text is
// data and never becomes HTML. The subset: fenced code blocks, headings, lists, quotes,
// paragraphs; inline code, bold, italics and http(s) links.
//
// The parse is hand-written and takes time linear in the text's length, whatever the text:
// no pattern that can backtrack runs over a turn (one did, and 120 KB of unclosed backticks
// froze the page for tens of seconds). It is pure (mdBlocks, mdInline: tokens, no DOM) and
// counts its work in `steps`, which scripts/markdown-linear.mjs bounds per character (it runs
// this file in node with a stand-in `document`, as a function's body with its `export`s taken
// off: so this module imports nothing, and exports only by `export function`). An ES module:
// conversation.js and composer.js use `renderMarkdown`, cards.js `inline`.

// ---------- characters ----------------------------------------------------------------------

/// JavaScript's `\s`: whitespace and line terminators (what String.prototype.trim removes).
function mdSpace(c) {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a)
    || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/// JavaScript's `\w` (ASCII letters, digits and `_`), as `\b` sees words.
function mdWord(c) {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

function mdDigit(c) {
  return c >= 48 && c <= 57;
}

/// A line terminator: what starts a line for a multi-line `^` and what `.` does not match.
function mdLineEnd(c) {
  return c === 10 || c === 13 || c === 0x2028 || c === 0x2029;
}

/// A finder of the first index at or after `p` whose character `stops` (or `s.length`). It
/// remembers its last answer: a later question from inside the span it scanned is answered
/// without scanning again, so that questions asked left to right (as the inline scanner
/// does) look at each character once, however many openers share one unclosed span.
function mdFinder(s, stops, work) {
  let from = -1;
  let at = -1;
  return (p) => {
    work.steps += 1;
    if (p >= from && p <= at) return at;
    let k = p;
    while (k < s.length && !stops(s.charCodeAt(k))) { k += 1; work.steps += 1; }
    from = p;
    at = k;
    return k;
  };
}

// ---------- inline marks ----------------------------------------------------------------------

/// The backtick runs of `s` from `from` on, by length: length -> { at: [starts], next }.
function mdTickRuns(s, from, work) {
  const runs = new Map();
  let i = from;
  while (i < s.length) {
    work.steps += 1;
    if (s.charCodeAt(i) !== 96) { i += 1; continue; }
    let j = i + 1;
    while (j < s.length && s.charCodeAt(j) === 96) { j += 1; work.steps += 1; }
    const len = j - i;
    if (!runs.has(len)) runs.set(len, { at: [], next: 0 });
    runs.get(len).at.push(i);
    i = j;
  }
  return runs;
}

/// The start of the first backtick run of exactly `len` starting at or after `p`, or -1.
/// Questions come left to right: each run is passed over once.
function mdNextRun(runs, len, p, work) {
  const r = runs.get(len);
  work.steps += 1;
  if (!r) return -1;
  while (r.next < r.at.length && r.at[r.next] < p) { r.next += 1; work.steps += 1; }
  return r.next < r.at.length ? r.at[r.next] : -1;
}

/// The inline marks of `text`, left to right, as tokens: { type: 'text' | 'code' | 'strong'
/// | 'em' | 'link', text, href (links) }; and the work done (`steps`, characters looked at).
/// At each place the first mark that starts there wins, in this order:
/// - code: a backtick run closed by the next run of the same length (the text between is
///   the code, as it is); a run with no such closer is text;
/// - bold: `**x**` or `__x__`, x one line with no `*` (`_`);
/// - italics: `*x*` (x one line with no `*`, not starting with a space) or `_x_` standing
///   as a word (no letter, digit or `_` just outside);
/// - a link: `[text](http://…)` or https, the text one line with no `]`, the address with
///   no space or `)`: nothing but http(s) ever becomes an href.
/// Everything else is text, and marks do not nest.
function mdInline(text) {
  const s = String(text);
  const n = s.length;
  const work = { steps: 0 };
  const tokens = [];
  const stars = mdFinder(s, (c) => c === 42 || c === 10, work);           // `*` or a newline
  const unders = mdFinder(s, (c) => c === 95 || c === 10, work);          // `_` or a newline
  const closes = mdFinder(s, (c) => c === 93 || c === 10, work);          // `]` or a newline
  const urlEnds = mdFinder(s, (c) => c === 41 || mdSpace(c), work);       // `)` or a space
  let ticks = null; // the backtick runs after the first one, found when it is met
  let lit = 0;      // where the text not yet emitted starts
  let i = 0;
  const mark = (token, from, to) => {
    if (from > lit) tokens.push({ type: 'text', text: s.slice(lit, from) });
    tokens.push(token);
    i = lit = to;
  };
  while (i < n) {
    work.steps += 1;
    const c = s.charCodeAt(i);
    if (c === 96) { // `
      let j = i + 1;
      while (j < n && s.charCodeAt(j) === 96) { j += 1; work.steps += 1; }
      const len = j - i;
      if (!ticks) ticks = mdTickRuns(s, j, work);
      const close = mdNextRun(ticks, len, j, work);
      if (close >= 0) mark({ type: 'code', text: s.slice(j, close) }, i, close + len);
      else i = j; // unclosed: the whole run is text
      continue;
    }
    if (c === 42 || c === 95) { // * or _
      const find = c === 42 ? stars : unders;
      if (s.charCodeAt(i + 1) === c) {
        const k = find(i + 2);
        if (k > i + 2 && s.charCodeAt(k) === c && s.charCodeAt(k + 1) === c) {
          mark({ type: 'strong', text: s.slice(i + 2, k) }, i, k + 2);
          continue;
        }
      } else if (c === 42 ? i + 1 < n && !mdSpace(s.charCodeAt(i + 1)) : !mdWord(s.charCodeAt(i - 1))) {
        const k = find(i + 1);
        if (k > i + 1 && s.charCodeAt(k) === c && (c === 42 || !mdWord(s.charCodeAt(k + 1)))) {
          mark({ type: 'em', text: s.slice(i + 1, k) }, i, k + 1);
          continue;
        }
      }
      i += 1;
      continue;
    }
    if (c === 91) { // [
      const j = closes(i + 1);
      if (j > i + 1 && s.charCodeAt(j) === 93 && s.charCodeAt(j + 1) === 40) {
        let u = j + 2;
        work.steps += 1;
        if (s.startsWith('http', u)) {
          u += s.charCodeAt(u + 4) === 115 ? 5 : 4; // https or http
          if (s.startsWith('://', u)) {
            u += 3;
            const e = urlEnds(u);
            if (e > u && s.charCodeAt(e) === 41) {
              mark({ type: 'link', text: s.slice(i + 1, j), href: s.slice(j + 2, e) }, i, e + 1);
              continue;
            }
          }
        }
      }
      i += 1;
      continue;
    }
    i += 1;
  }
  if (lit < n) tokens.push({ type: 'text', text: s.slice(lit) });
  return { tokens, steps: work.steps };
}

// ---------- blocks ----------------------------------------------------------------------------

/// Whether `s` may hold any Markdown: one of `` ` * _ # > [ ] ``, or a list marker (`-`, `+`,
/// `1.`) followed by a space as a line's first other character. Text without is one
/// paragraph, as it is.
function mdHint(s, work) {
  let lineLead = true; // at a line's start or in its leading whitespace
  for (let i = 0; i < s.length; i++) {
    work.steps += 1;
    const c = s.charCodeAt(i);
    if (c === 96 || c === 42 || c === 95 || c === 35 || c === 62 || c === 91 || c === 93) return true;
    if (mdLineEnd(c)) { lineLead = true; continue; }
    if (!lineLead || mdSpace(c)) continue;
    lineLead = false;
    if (c === 45 || c === 43) {
      if (mdSpace(s.charCodeAt(i + 1))) return true;
    } else if (mdDigit(c)) {
      let k = i + 1;
      while (mdDigit(s.charCodeAt(k))) { k += 1; work.steps += 1; }
      if (s.charCodeAt(k) === 46 && mdSpace(s.charCodeAt(k + 1))) return true;
      i = k - 1;
    }
  }
  return false;
}

/// How many `c` (a char code) `line` has from `p` on, counting no further than `max`.
function mdCount(line, p, c, max, work) {
  let k = 0;
  while (k < max && line.charCodeAt(p + k) === c) { k += 1; work.steps += 1; }
  return k;
}

/// After `p`: the index past the whitespace there.
function mdSkipSpace(line, p, work) {
  while (p < line.length && mdSpace(line.charCodeAt(p))) { p += 1; work.steps += 1; }
  return p;
}

/// A fence line (``` or ~~~ after any whitespace, then an optional language of letters,
/// digits and `_+.-`, then nothing but whitespace): { mark, lang }, else null.
function mdFence(line, p, work) {
  work.steps += 1;
  const mark = line.startsWith('```', p) ? '```' : line.startsWith('~~~', p) ? '~~~' : null;
  if (!mark) return null;
  let q = mdSkipSpace(line, p + 3, work);
  const from = q;
  for (let c = line.charCodeAt(q); mdWord(c) || c === 43 || c === 46 || c === 45; c = line.charCodeAt(++q)) work.steps += 1;
  const lang = line.slice(from, q);
  return mdSkipSpace(line, q, work) === line.length ? { mark, lang } : null;
}

/// A heading (1 to 6 `#` at the line's start, whitespace, then the rest on one line):
/// { level, text }, else null.
function mdHeading(line, work) {
  const k = mdCount(line, 0, 35, 7, work);
  if (k < 1 || k > 6 || !mdSpace(line.charCodeAt(k))) return null;
  const from = mdSkipSpace(line, k, work);
  for (let q = from; q < line.length; q++) {
    work.steps += 1;
    if (mdLineEnd(line.charCodeAt(q))) return null;
  }
  return { level: Math.min(6, k + 2), text: line.slice(from) };
}

/// After a line's leading whitespace (at `p`): the end of a list marker (`-`, `+`, `*`,
/// `12.`) when whitespace follows it, else -1.
function mdMarkerEnd(line, p, work) {
  const c = line.charCodeAt(p);
  let q;
  if (c === 45 || c === 43 || c === 42) q = p + 1;
  else if (mdDigit(c)) {
    q = p;
    while (mdDigit(line.charCodeAt(q))) { q += 1; work.steps += 1; }
    if (line.charCodeAt(q) !== 46) return -1;
    q += 1;
  } else return -1;
  work.steps += 1;
  return mdSpace(line.charCodeAt(q)) ? q : -1;
}

/// Whether a line (leading whitespace up to `p`) starts a block and so ends a paragraph: a
/// fence mark, 1 to 6 `#` and a space, a `>`, or a list marker and a space.
function mdBlockStart(line, p, work) {
  work.steps += 1;
  if (line.startsWith('```', p) || line.startsWith('~~~', p) || line.charCodeAt(p) === 62) return true;
  const k = mdCount(line, p, 35, 7, work);
  if (k >= 1 && k <= 6 && mdSpace(line.charCodeAt(p + k))) return true;
  return mdMarkerEnd(line, p, work) >= 0;
}

/// The blocks of `text`, as tokens: { type: 'p' | 'quote', inline } (inline: the tokens of
/// mdInline), { type: 'h', level, inline }, { type: 'code', lang, text }, { type: 'list',
/// ordered, items: [inline] }; and the work done (`steps`, with mdInline's).
function mdBlocks(text) {
  const s = String(text);
  const work = { steps: 0 };
  const blocks = [];
  const inlineOf = (t) => {
    const r = mdInline(t);
    work.steps += r.steps;
    return r.tokens;
  };
  if (!mdHint(s, work)) { // plain text: one paragraph, as it is
    blocks.push({ type: 'p', inline: s ? [{ type: 'text', text: s }] : [] });
    return { blocks, steps: work.steps };
  }
  const lines = s.split('\n');
  const leads = new Int32Array(lines.length).fill(-1);
  const lead = (i) => { // where line i's leading whitespace ends (its length when blank)
    if (leads[i] < 0) leads[i] = mdSkipSpace(lines[i], 0, work);
    return leads[i];
  };
  const blank = (i) => lead(i) === lines[i].length;
  let i = 0;
  while (i < lines.length) {
    work.steps += 1;
    const line = lines[i];
    const fence = mdFence(line, lead(i), work);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].startsWith(fence.mark, lead(i))) { work.steps += 1; body.push(lines[i++]); }
      i += 1; // the closing fence (or the end)
      blocks.push({ type: 'code', lang: fence.lang, text: body.join('\n') });
      continue;
    }
    const heading = mdHeading(line, work);
    if (heading) {
      blocks.push({ type: 'h', level: heading.level, inline: inlineOf(heading.text) });
      i += 1;
      continue;
    }
    if (mdMarkerEnd(line, lead(i), work) >= 0) {
      const p = lead(i);
      const ordered = mdDigit(line.charCodeAt(p));
      const items = [];
      for (let q; i < lines.length && (q = mdMarkerEnd(lines[i], lead(i), work)) >= 0; i++) {
        items.push(inlineOf(lines[i].slice(mdSkipSpace(lines[i], q, work))));
      }
      blocks.push({ type: 'list', ordered, items });
      continue;
    }
    if (line.charCodeAt(lead(i)) === 62) { // >
      const quote = [];
      for (; i < lines.length && lines[i].charCodeAt(lead(i)) === 62; i++) {
        work.steps += 1;
        const q = lead(i) + 1; // past the `>` and one whitespace after it
        quote.push(lines[i].slice(mdSpace(lines[i].charCodeAt(q)) ? q + 1 : q));
      }
      blocks.push({ type: 'quote', inline: inlineOf(quote.join('\n')) });
      continue;
    }
    if (blank(i)) { i += 1; continue; }
    const para = [];
    while (i < lines.length && !blank(i) && !mdBlockStart(lines[i], lead(i), work)) para.push(lines[i++]);
    if (!para.length) para.push(lines[i++]);
    blocks.push({ type: 'p', inline: inlineOf(para.join('\n')) });
  }
  return { blocks, steps: work.steps };
}

// ---------- the DOM ---------------------------------------------------------------------------

/// The rendered text: a fragment of block elements.
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  for (const b of mdBlocks(text).blocks) {
    if (b.type === 'code') {
      const pre = mdEl('pre', null);
      const code = mdEl('code', b.text);
      if (b.lang) code.dataset.lang = b.lang;
      pre.appendChild(code);
      frag.appendChild(pre);
    } else if (b.type === 'list') {
      const list = mdEl(b.ordered ? 'ol' : 'ul');
      for (const item of b.items) list.appendChild(mdAppend(mdEl('li'), item));
      frag.appendChild(list);
    } else {
      const tag = b.type === 'h' ? `h${b.level}` : b.type === 'quote' ? 'blockquote' : 'p';
      frag.appendChild(mdAppend(mdEl(tag), b.inline));
    }
  }
  return frag;
}

function mdEl(tag, text) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

/// Appends inline tokens to `parent`: marks as elements, the rest as text nodes.
function mdAppend(parent, tokens) {
  for (const t of tokens) {
    if (t.type === 'text') parent.appendChild(document.createTextNode(t.text));
    else if (t.type === 'code') parent.appendChild(mdEl('code', t.text));
    else if (t.type === 'strong') parent.appendChild(mdEl('strong', t.text));
    else if (t.type === 'em') parent.appendChild(mdEl('em', t.text));
    else if (t.type === 'link') {
      const a = mdEl('a', t.text);
      a.href = t.href; // only http(s): mdInline makes no other link
      a.rel = 'noopener noreferrer';
      a.target = '_blank';
      parent.appendChild(a);
    }
  }
  return parent;
}

/// Appends `text` to `parent` with its inline marks as elements, the rest as text nodes.
export function inline(parent, text) {
  return mdAppend(parent, mdInline(text).tokens);
}
