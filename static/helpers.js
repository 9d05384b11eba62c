// Headspace dashboard: the helpers every module uses: elements, the server's API, toasts and
// times. Every piece of agent or user text goes through textContent, never innerHTML: agent
// text is data.

export const $ = (id) => document.getElementById(id);

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

export async function api(path, options) {
  // The server takes actions only as JSON (a cross-site page cannot send that unasked).
  const o = Object.assign({}, options || {});
  if (o.method && o.method !== 'GET') o.headers = Object.assign({ 'content-type': 'application/json' }, o.headers || {});
  const r = await fetch(path, o);
  const body = await r.json().catch(() => ({}));
  if (r.status === 401) showLogin();
  if (!r.ok) {
    // The status and the whole answer go with the error: a 409 of a merge names its files.
    const err = new Error(body.error || `${r.status} ${r.statusText}`);
    err.status = r.status;
    err.body = body;
    throw err;
  }
  if (o.withEventId) return { body, lastEventId: Number(r.headers.get('x-last-event-id') || 0) };
  return body;
}

// Off loopback the server wants its token: the page asks for it once and the server answers
// with an HttpOnly cookie, which EventSource sends too.
function showLogin() {
  const d = $('login');
  if (!d || d.open) return;
  d.showModal();
  $('login-token').focus();
}

export async function login(e) {
  e.preventDefault();
  try {
    await api('/api/login', { method: 'POST', body: JSON.stringify({ token: $('login-token').value }) });
    location.reload();
  } catch (err) {
    $('login-error').textContent = err.message;
  }
}

/// Who hears of every toast shown, as `(message, kind)`: voice.js sounds its error tone for
/// the 'error' ones. A list here, filled at wiring, so that this module imports nothing.
export const toastWatchers = [];

export function toast(message, kind) {
  const t = el('div', `toast ${kind || ''}`, message);
  $('toasts').appendChild(t);
  setTimeout(() => t.remove(), 4500);
  for (const watch of toastWatchers) {
    try { watch(message, kind); } catch (e) { /* a watcher never stops the toast */ }
  }
}

export function since(iso) {
  if (!iso) return '';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d`;
}

export function clock(iso) {
  const d = new Date(iso);
  return isNaN(d) ? '' : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}
