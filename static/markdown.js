// Headspace dashboard: a small, safe Markdown renderer for agent and user text.
// It builds DOM nodes and sets only textContent and a few known attributes: agent text is
// data and never becomes HTML. The subset: fenced code blocks, headings, lists, quotes,
// paragraphs; inline code, bold, italics and http(s) links.
'use strict';

const MD_HINT = /[`*_#>[\]]|^\s*([-+]|\d+\.)\s/m;

/// The rendered text: a fragment of block elements.
function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  const s = String(text);
  if (!MD_HINT.test(s)) { // plain text: one paragraph, fast
    frag.appendChild(mdEl('p', s));
    return frag;
  }
  const lines = s.split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*(```|~~~)\s*([\w+.-]*)\s*$/.exec(line);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1; // the closing fence (or the end)
      const pre = mdEl('pre', null);
      const code = mdEl('code', body.join('\n'));
      if (fence[2]) code.dataset.lang = fence[2];
      pre.appendChild(code);
      frag.appendChild(pre);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      frag.appendChild(inline(mdEl(`h${Math.min(6, heading[1].length + 2)}`), heading[2]));
      i += 1;
      continue;
    }
    if (/^\s*([-+*]|\d+\.)\s+/.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const list = mdEl(ordered ? 'ol' : 'ul');
      while (i < lines.length && /^\s*([-+*]|\d+\.)\s+/.test(lines[i])) {
        const item = lines[i].replace(/^\s*([-+*]|\d+\.)\s+/, '');
        list.appendChild(inline(mdEl('li'), item));
        i += 1;
      }
      frag.appendChild(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quote = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quote.push(lines[i++].replace(/^\s*>\s?/, ''));
      frag.appendChild(inline(mdEl('blockquote'), quote.join('\n')));
      continue;
    }
    if (!line.trim()) { i += 1; continue; }
    const para = [];
    while (i < lines.length && lines[i].trim() && !/^\s*(```|~~~|#{1,6}\s|>|([-+*]|\d+\.)\s)/.test(lines[i])) para.push(lines[i++]);
    if (!para.length) para.push(lines[i++]);
    frag.appendChild(inline(mdEl('p'), para.join('\n')));
  }
  return frag;
}

function mdEl(tag, text) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

const INLINE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+)\*\*|__([^_\n]+)__|\*([^*\s][^*\n]*)\*|\b_([^_\n]+)_\b|\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g;

/// Appends `text` to `parent` with its inline marks as elements, the rest as text nodes.
function inline(parent, text) {
  let at = 0;
  INLINE.lastIndex = 0;
  for (let m = INLINE.exec(text); m; m = INLINE.exec(text)) {
    if (m.index > at) parent.appendChild(document.createTextNode(text.slice(at, m.index)));
    if (m[2] !== undefined) parent.appendChild(mdEl('code', m[2]));
    else if (m[3] !== undefined || m[4] !== undefined) parent.appendChild(mdEl('strong', m[3] ?? m[4]));
    else if (m[5] !== undefined || m[6] !== undefined) parent.appendChild(mdEl('em', m[5] ?? m[6]));
    else {
      const a = mdEl('a', m[7]);
      a.href = m[8]; // only http(s): the pattern allows nothing else
      a.rel = 'noopener noreferrer';
      a.target = '_blank';
      parent.appendChild(a);
    }
    at = m.index + m[0].length;
  }
  if (at < text.length) parent.appendChild(document.createTextNode(text.slice(at)));
  return parent;
}
