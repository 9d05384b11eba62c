#!/usr/bin/env node
// The dashboard's Markdown renderer (static/markdown.js) takes time linear in its input.
//
//   node scripts/markdown-linear.mjs [path/to/markdown.js]
//
// 1. Every 120 KB input an agent's turn once froze the page with (unclosed backticks,
//    brackets, stars, long blank runs, ...) renders within a second (the file runs in a
//    `vm` context with a stand-in `document`, interrupted at the limit: this part also runs
//    against an older markdown.js, which fails it).
// 2. Exact tokens for a few inputs (an unclosed backtick run is text; "``a`b``" is one code
//    span "a`b"; bold, italics, links and their URL rule).
// 3. A property, on inputs from a seeded generator of its own (long and short runs of
//    backticks, `*`, `_`, brackets, parentheses, newlines, list and heading marks, URLs and
//    words, up to ~100 KB): the scanner's work (its `steps`, characters looked at) is at most
//    STEPS_PER_CHAR per character plus a constant, for the whole parse (mdBlocks) and for the
//    inline scanner alone (mdInline, what a card's last line uses). It prints the worst ratio.
//
// Exits 1 on any failure. SEED=n picks the generator's seed (default 1), CASES=n how many
// inputs (default 400).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import vm from 'node:vm';
import assert from 'node:assert/strict';

const STEPS_PER_CHAR = 8;
const STEPS_EXTRA = 100;
const RENDER_LIMIT_MS = 1000;

const here = dirname(fileURLToPath(import.meta.url));
const file = process.argv[2] || join(here, '..', 'static', 'markdown.js');
let failures = 0;
const fail = (what) => { failures += 1; console.log(`FAIL ${what}`); };

// ---------- the renderer, in a context with a stand-in document ------------------------------

class FakeNode {
  constructor(tag, text) { this.tag = tag; this.text = text; this.children = []; this.dataset = {}; }
  appendChild(c) { if (c.tag === '#fragment') this.children.push(...c.children); else this.children.push(c); return c; }
  set textContent(v) { this.children = v === '' ? [] : [new FakeNode('#text', String(v))]; }
  get textContent() { return this.tag === '#text' ? this.text : this.children.map((c) => c.textContent).join(''); }
}
const fakeDocument = {
  createElement: (tag) => new FakeNode(tag),
  createTextNode: (text) => new FakeNode('#text', String(text)),
  createDocumentFragment: () => new FakeNode('#fragment'),
};
// The file runs as the body of a function (its functions local to it, as fast as a page's
// globals; a vm context's own globals are much slower to call), which hands them out. It is
// an ES module that imports nothing: its `export` keywords are taken off (a function body
// cannot export), and an older, classic markdown.js has none.
const context = vm.createContext({ document: fakeDocument });
const exported = (name) => `${name}: typeof ${name} === 'function' ? ${name} : undefined`;
const body = readFileSync(file, 'utf8').replace(/^export (?=(async )?function |const |let )/gm, '');
context.__md = vm.runInContext(
  `(function () { ${body}\n; return { ${['renderMarkdown', 'mdInline', 'mdBlocks'].map(exported).join(', ')} }; })()`,
  context,
  { filename: file },
);

/// Runs `renderMarkdown(input)` in the page's stand-in; the ms it took, or null when it did
/// not finish within `limit` ms.
function timedRender(input, limit) {
  context.__input = input;
  const started = performance.now();
  try {
    vm.runInContext('__md.renderMarkdown(__input), 0', context, { timeout: limit });
  } catch (e) {
    if (e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return null;
    throw e;
  }
  return performance.now() - started;
}

// ---------- 1. the inputs that froze the page ----------------------------------------------

const KB120 = 120 * 1024;
const repeat = (unit, n) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
const frozen = {
  'backticks': repeat('`', KB120),
  'text then backticks': 'see `' + repeat('`', KB120 - 5),
  '``a``b``c': repeat('``a``b``c', KB120),
  '`a``b': repeat('`a``b', KB120),
  'growing backtick runs': (() => { let s = ''; for (let k = 1; s.length < KB120; k++) s += '`'.repeat(k) + 'x'; return s.slice(0, KB120); })(),
  'stars': repeat('*', KB120),
  '**a': repeat('**a', KB120),
  'underscores': repeat(' _a', KB120),
  'brackets': repeat('[', KB120),
  '[a': repeat('[a', KB120),
  '[a](http:// (no closers)': repeat('[a](http://', KB120),
  'newlines then [': repeat('\n', KB120 - 1) + '[',
  'spaces and newlines': repeat(' \n', KB120) + '*',
  'fence and spaces': '```' + repeat(' ', KB120 - 4) + '!',
  'digits': '*\n' + repeat('1', KB120),
};
let slowest = { ms: 0, name: '' };
for (const [name, input] of Object.entries(frozen)) {
  const ms = timedRender(input, RENDER_LIMIT_MS);
  if (ms === null) { fail(`render of ${input.length} chars of ${name}: not done in ${RENDER_LIMIT_MS} ms`); continue; }
  if (ms > slowest.ms) slowest = { ms, name };
}
console.log(`120 KB inputs: ${Object.keys(frozen).length}, slowest ${slowest.ms.toFixed(1)} ms (${slowest.name}), limit ${RENDER_LIMIT_MS} ms`);

const { mdInline, mdBlocks } = context.__md;
if (typeof mdInline !== 'function' || typeof mdBlocks !== 'function') {
  fail(`${file} has no mdInline / mdBlocks (the linear scanner and its step counts)`);
  process.exit(1);
}

// ---------- 2. exact tokens ----------------------------------------------------------------

const plain = (v) => JSON.parse(JSON.stringify(v)); // out of the vm context, for deepEqual
const text = (t) => ({ type: 'text', text: t });
const exact = [
  ['an unclosed run is text', 'a ``b', [text('a ``b')]],
  ['unclosed runs everywhere', '``a`b```', [text('``a`b```')]],
  ['a shorter run inside a code span', '``a`b``', [{ type: 'code', text: 'a`b' }]],
  ['a longer run inside a code span', '`a``b`', [{ type: 'code', text: 'a``b' }]],
  ['a run closed by the next of its length', 'x ```a`` b``` y', [text('x '), { type: 'code', text: 'a`` b' }, text(' y')]],
  ['code spans and text', 'run `make test` now', [text('run '), { type: 'code', text: 'make test' }, text(' now')]],
  ['bold, then italics', '**bold** and *it*', [{ type: 'strong', text: 'bold' }, text(' and '), { type: 'em', text: 'it' }]],
  ['bold with underscores, italics as a word', '__b__ _i_ snake_case_name', [{ type: 'strong', text: 'b' }, text(' '), { type: 'em', text: 'i' }, text(' snake_case_name')]],
  ['an unclosed star is text', '2 * 3 and **no', [text('2 * 3 and **no')]],
  ['a link', 'see [the docs](https://example.com/a?b=c#d).', [text('see '), { type: 'link', text: 'the docs', href: 'https://example.com/a?b=c#d' }, text('.')]],
  ['http links too', '[x](http://h)', [{ type: 'link', text: 'x', href: 'http://h' }]],
  ['no other scheme', '[x](javascript:alert(1)) [y](ftp://h) [z](HTTP://h)', [text('[x](javascript:alert(1)) [y](ftp://h) [z](HTTP://h)')]],
  ['no space in a URL', '[x](https://a b)', [text('[x](https://a b)')]],
  ['marks do not nest', '**a `b` c**', [{ type: 'strong', text: 'a `b` c' }]],
  ['the first mark to start wins', '*a `b* c`', [{ type: 'em', text: 'a `b' }, text(' c`')]],
];
for (const [name, input, want] of exact) {
  try {
    assert.deepEqual(plain(mdInline(input).tokens), want);
  } catch (e) {
    fail(`tokens of ${JSON.stringify(input)} (${name}): got ${JSON.stringify(plain(mdInline(input).tokens))}`);
  }
}
try {
  assert.deepEqual(plain(mdBlocks('# Title\n\n```rust\nlet a = `x`;\n```\n- one\n- **two**\n> said\n\nplain `code`').blocks), [
    { type: 'h', level: 3, inline: [text('Title')] },
    { type: 'code', lang: 'rust', text: 'let a = `x`;' },
    { type: 'list', ordered: false, items: [[text('one')], [{ type: 'strong', text: 'two' }]] },
    { type: 'quote', inline: [text('said')] },
    { type: 'p', inline: [text('plain '), { type: 'code', text: 'code' }] },
  ]);
  assert.deepEqual(plain(mdBlocks('no marks at all\n\njust text').blocks), [{ type: 'p', inline: [text('no marks at all\n\njust text')] }]);
} catch (e) {
  fail(`blocks: ${e.message}`);
}

// ---------- 3. work per character, on generated inputs ----------------------------------------

/// xorshift32: a small PRNG of this script's own, so that a seed names one run.
function prng(seed) {
  let x = (seed >>> 0) || 0x9e3779b9;
  const next = () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x / 4294967296;
  };
  return {
    float: next,
    int: (n) => Math.floor(next() * n),
    pick: (a) => a[Math.floor(next() * a.length)],
  };
}

const UNITS = ['`', '*', '_', '[', ']', '(', ')', '\n', ' ', '\t', '\r', '#', '>', '-', '+', '.', '~',
  '1.', '](', '](http://', 'https://', 'http://', '```', '~~~', 'a', 'word', 'snake_case', 'é', '\u00a0'];

/// One input of about `length` characters; `style` says how it is made.
function generate(r, length, style) {
  const parts = [];
  let n = 0;
  const push = (s) => { parts.push(s); n += s.length; };
  if (style === 'pattern') { // a short random pattern, repeated: ``a``b``c and its kind
    let unit = '';
    for (let k = 1 + r.int(6); k > 0; k--) unit += r.pick(UNITS).repeat(1 + r.int(3));
    return repeat(unit, length);
  }
  if (style === 'growing') { // runs of one mark, each longer than the last
    const unit = r.pick(['`', '*', '_', '[', '#', '\n', ' ']);
    const sep = r.pick(['x', ' ', '\n', '`', 'a b']);
    for (let k = 1; n < length; k++) push(unit.repeat(k) + sep);
    return parts.join('').slice(0, length);
  }
  while (n < length) {
    const unit = r.pick(UNITS);
    // long runs: up to the whole input; mixed: mostly short.
    const times = style === 'long' ? 1 + r.int(r.float() < 0.3 ? length : 200) : 1 + r.int(r.float() < 0.1 ? 50 : 3);
    push(unit.repeat(Math.min(times, Math.ceil((length - n) / unit.length))));
  }
  return parts.join('').slice(0, length);
}

const seed = Number(process.env.SEED || 1);
const cases = Number(process.env.CASES || 400);
const r = prng(seed);
const worst = { ratio: 0, what: '' };
let chars = 0;
const started = performance.now();
const check = (label, input) => {
  for (const [fn, f] of [['mdBlocks', mdBlocks], ['mdInline', mdInline]]) {
    const { steps } = f(input);
    const ratio = steps / Math.max(1, input.length);
    if (ratio > worst.ratio) worst.ratio = ratio, worst.what = `${fn} on ${label} (${input.length} chars, ${steps} steps)`;
    if (steps > STEPS_PER_CHAR * input.length + STEPS_EXTRA) {
      fail(`${fn}: ${steps} steps for ${input.length} chars of ${label}: more than ${STEPS_PER_CHAR} per char + ${STEPS_EXTRA}; starts ${JSON.stringify(input.slice(0, 80))}`);
    }
  }
  chars += input.length;
};
for (const [name, input] of Object.entries(frozen)) check(`120 KB of ${name}`, input);
for (let k = 0; k < cases; k++) {
  const style = r.pick(['long', 'mixed', 'pattern', 'growing']);
  // Mostly large inputs, some small ones (the constant term matters there).
  const length = r.float() < 0.2 ? 1 + r.int(200) : 1 + r.int(100_000);
  check(`case ${k} (${style}, seed ${seed})`, generate(r, length, style));
}
const seconds = (performance.now() - started) / 1000;
console.log(`${cases + Object.keys(frozen).length} inputs, ${(chars / 1e6).toFixed(1)} M chars in ${seconds.toFixed(1)} s; worst ${worst.ratio.toFixed(2)} steps per char (bound ${STEPS_PER_CHAR} + ${STEPS_EXTRA}): ${worst.what}`);

if (failures) {
  console.log(`${failures} failure(s)`);
  process.exit(1);
}
console.log('ok');
