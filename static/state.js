// Headspace dashboard: the page's shared state, in one module that imports nothing. The
// modules that share it import these objects and change their properties (an imported
// binding cannot be assigned: `hs.open = id`, never `hs = ...`).

export const hs = {
  agents: new Map(),        // id -> agent JSON
  open: null,               // agent id whose conversation is shown
  turns: new Map(),         // turn id -> { turn, el }
  order: [],                // [timestamp ms, id] sorted: the conversation's order
  done: new Set(),          // task ids with a completion: their progress collapses
  selected: null,           // selected card's agent id
  lastEventId: 0,           // the last SSE event applied: an event is never applied twice
  refresh: new Map(),       // agent id -> pending refresh timer
  dismissed: new Set(JSON.parse(localStorage.getItem('hs.dismissed') || '[]')),
  names: JSON.parse(localStorage.getItem('hs.names') || '{}'), // agent id -> the user's name for it
  frozenSince: null,        // ms when the server stopped answering (its timers stand still)
  backTimer: null,          // hides the "back" banner
  metrics: { firstRenderMs: null, lastLoadMs: null, eventsApplied: 0, gaps: 0, draws: 0, drawMs: 0,
    tones: [],   // voice.js: the tone names played ('needs-you', 'sent', 'error'), heard or not
    spoken: [] }, // voice.js: each text handed to speechSynthesis.speak
};
window.__hs = hs; // for the browser tests (they read window.__hs.metrics, .open, .selected) and the curious

// The cards drawn (cards.js draws them; needs.js finds a card by its agent, machines.js
// counts a machine's cards).
export const cards = {
  els: new Map(),       // agent id -> its card element
  groups: new Map(),    // group (see groupOf) -> { section, head, grid, project, machine }
  counts: new Map(),    // shown state -> how many agents (the summary)
  countEls: new Map(),  // shown state -> its span in the summary
  drawnTotal: null,     // the agent count the summary shows
  dirty: new Set(),     // agent ids whose cards wait for the next frame
  needsDirty: false,    // the "Needs you" strip waits for the next frame
  orchDirty: false,     // orchestration panels wait for the next frame
  scheduled: false,     // a draw is on its way
  frame: null,          // the pending animation frame
  timer: null,          // its stand-in when frames do not come (a hidden tab)
  drawnAt: -Infinity,   // when the cards were last drawn (performance.now())
  empty: null,          // the "no agents yet" note, when it is shown
  emptyTemplate: null,  // that note as the page came with it (kept by app.js at load)
};
