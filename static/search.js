// Search over all history and the history view. The `/` filter keeps filtering the cards
// (app.js) and, debounced, asks /api/search for turns of every agent, ended ones too; a
// result opens its conversation scrolled to that turn. Snippets are text: highlights are
// code-point ranges the server returns, drawn as <mark> elements through the DOM, never
// innerHTML.
import { $, api, clock, el, toast } from './helpers.js';
import { hs } from './state.js';
import { agentName } from './needs.js';
import { openConversation } from './conversation.js';

export const search = {
  timer: null,
  asked: '',        // the query whose results are shown (or on their way)
  delayMs: 250,
  minChars: 2,
  historyShown: false,
};

// The snippet as text nodes and <mark>s. Ranges count code points, as Array.from does.
function snippetNode(snippet, highlights) {
  const chars = Array.from(snippet || '');
  const box = el('span', 'snippet');
  let at = 0;
  const ranges = (highlights || [])
    .map(([a, b]) => [Math.max(0, a), Math.min(chars.length, b)])
    .filter(([a, b]) => a < b)
    .sort((x, y) => x[0] - y[0]);
  for (const [a, b] of ranges) {
    if (a < at) continue; // overlapping ranges: the first wins
    if (a > at) box.appendChild(document.createTextNode(chars.slice(at, a).join('')));
    box.appendChild(el('mark', null, chars.slice(a, b).join('')));
    at = b;
  }
  if (at < chars.length) box.appendChild(document.createTextNode(chars.slice(at).join('')));
  return box;
}

function hitLabel(h) {
  const a = hs.agents.get(h.agent_id);
  const who = a ? agentName(a) : `agent ${h.agent_id}`;
  return `${h.project || 'other'} · ${who}${h.ended ? ' (ended)' : ''} · ${h.actor} · ${clock(h.timestamp)} ${String(h.timestamp).slice(0, 10)}`;
}

function renderHits(q, hits) {
  const box = $('search-results');
  const frag = document.createDocumentFragment();
  frag.appendChild(el('h2', null, hits.length ? `History: ${hits.length} turn${hits.length === 1 ? '' : 's'} matching “${q}”` : `History: no turn matches “${q}”`));
  for (const h of hits) {
    const b = el('button', 'search-hit');
    b.type = 'button';
    b.dataset.turn = String(h.turn_id);
    b.dataset.agent = String(h.agent_id);
    if (h.exact) b.dataset.exact = 'true';
    b.appendChild(el('span', 'hit-meta', hitLabel(h)));
    b.appendChild(snippetNode(h.snippet, h.highlights));
    frag.appendChild(b);
  }
  box.replaceChildren(frag);
  box.hidden = false;
}

async function runSearch(q) {
  search.asked = q;
  try {
    const hits = await api(`/api/search?q=${encodeURIComponent(q)}&limit=20`);
    if (search.asked !== q) return; // a newer query went out meanwhile
    renderHits(q, hits);
  } catch (e) {
    if (search.asked !== q) return;
    $('search-results').replaceChildren(el('p', 'empty', `Search failed: ${e.message}`));
    $('search-results').hidden = false;
  }
}

function onFilterInput() {
  clearTimeout(search.timer);
  const q = $('filter').value.trim();
  if (Array.from(q).length < search.minChars) {
    search.asked = '';
    $('search-results').hidden = true;
    $('search-results').replaceChildren();
    return;
  }
  search.timer = setTimeout(() => runSearch(q), search.delayMs);
}

// Opens an agent's conversation and brings one turn into view, marked. The turns around it
// load (conversation.js), more as the reader scrolls; the turn's task is unfolded if it was
// collapsed.
async function openAtTurn(agentId, turnId) {
  const shown = await openConversation(agentId, turnId);
  if (hs.open !== agentId) return; // another conversation was opened meanwhile
  const entry = shown ? hs.turns.get(turnId) : null;
  if (!entry) {
    toast(`Turn ${turnId} is no longer in this conversation`, 'error');
    openConversation(agentId); // at its end instead
    return;
  }
  hs.atEnd = false; // stop following the end: the reader asked for this turn
  for (const old of document.querySelectorAll('.bubble.search-target')) old.classList.remove('search-target');
  entry.el.classList.remove('collapsed');
  entry.el.classList.add('search-target');
  // Bubbles are laid out lazily (content-visibility): aim again while heights settle.
  let frames = 10;
  const aim = () => {
    if (hs.open !== agentId || hs.atEnd) return;
    entry.el.scrollIntoView({ block: 'center' });
    if (frames-- > 0) requestAnimationFrame(aim);
  };
  aim();
}

// ---------- history view ----------------------------------------------------------------------

export async function showHistory(on) {
  search.historyShown = on;
  $('history-toggle').setAttribute('aria-pressed', String(on));
  $('history').hidden = !on;
  $('cards').hidden = on;
  if (!on) return;
  const box = $('history');
  box.replaceChildren(el('p', 'empty', 'loading…'));
  try {
    const groups = await api('/api/history');
    const frag = document.createDocumentFragment();
    if (!groups.length) frag.appendChild(el('p', 'empty', 'No ended agents yet. Ended agents and their conversations stay here until `headspace prune --before DATE`.'));
    for (const g of groups) {
      const section = el('section', 'project history-day');
      section.dataset.day = g.day;
      section.dataset.project = g.project;
      section.appendChild(el('h2', null, `${g.day} · ${g.project || 'other'} (${g.agents.length})`));
      for (const a of g.agents) {
        const b = el('button', 'history-agent');
        b.type = 'button';
        b.dataset.agent = String(a.id);
        const known = hs.agents.get(a.id);
        b.appendChild(el('span', 'hit-meta', `${known ? agentName(known) : `agent ${a.id}`} · ${a.turn_count} turn${a.turn_count === 1 ? '' : 's'} · last seen ${clock(a.last_seen_at)}${a.end_reason ? ` · ${a.end_reason.replace('_', ' ')}` : ''}`));
        b.appendChild(el('span', 'snippet', a.first_command || '(no command)'));
        section.appendChild(b);
      }
      frag.appendChild(section);
    }
    box.replaceChildren(frag);
  } catch (e) {
    box.replaceChildren(el('p', 'empty', `Cannot load the history: ${e.message}`));
  }
}

/// The filter's history search, its results and the History button (called once by app.js at
/// load, after the filter is wired to the cards).
export function wireSearch() {
  $('filter').addEventListener('input', onFilterInput);
  $('filter').setAttribute('placeholder', 'Filter agents, search history  /');
  $('search-results').addEventListener('click', (e) => {
    const b = e.target.closest('.search-hit');
    if (b) openAtTurn(Number(b.dataset.agent), Number(b.dataset.turn));
  });
  $('history').addEventListener('click', (e) => {
    const b = e.target.closest('.history-agent');
    if (b) openConversation(Number(b.dataset.agent));
  });
  $('history-toggle').addEventListener('click', () => showHistory(!search.historyShown));
}

window.__search = { openAtTurn, runSearch, showHistory, state: search };
