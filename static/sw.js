// Headspace service worker (a classic script, registered by app.js at /sw.js, scope /). Two
// jobs:
//
// - The app shell, for the installed app (manifest.webmanifest): the page's own files are
//   fetched from the network first and kept in a cache, so that the page still opens when
//   the server cannot be reached (it then says so, and shows nothing stale as live: its data
//   all comes from /api, which is never cached here). Only same-origin GETs of the shell
//   are handled; the API, the event stream, the login, the hooks and the health check go to
//   the network untouched.
// - Web Push (push.js subscribes): each push is shown as a notification; a "needs you" one
//   carries the agent's options as buttons, which answer it (POST /api/agents/ID/answer,
//   the login cookie as the credential), and a click on it opens the agent's conversation.
'use strict';

// The cache of this version of the shell: a new name (v2, v3…) when SHELL changes, so that
// installing the new worker fetches it all again and activating it drops the old one.
const CACHE = 'headspace-shell-v1';
const CACHE_PREFIX = 'headspace-shell-';

// The app shell, by URL. Every module of static/ is listed: a NEW MODULE MUST BE ADDED HERE
// (and CACHE's version raised), or the installed app cannot open without the server.
const SHELL = [
  '/',
  '/index.html',
  '/app.css',
  '/manifest.webmanifest',
  '/app.js',
  '/actions.js',
  '/audit.js',
  '/cards.js',
  '/changes.js',
  '/composer.js',
  '/conversation.js',
  '/helpers.js',
  '/icons.js',
  '/machines.js',
  '/markdown.js',
  '/needs.js',
  '/newagent.js',
  '/orchestrations.js',
  '/push.js',
  '/questions.js',
  '/search.js',
  '/state.js',
  '/steps.js',
  '/usage.js',
  '/voice.js',
  '/icon.svg',
  '/icon-192.png',
  '/icon-512.png',
  '/icon-maskable-512.png',
  '/badge-96.png',
];
const SHELL_PATHS = new Set(SHELL);

// Never answered from here, whatever they look like: the data, the event stream, the login
// link, the hooks, the health check.
const NEVER = ['/api', '/events', '/login', '/hook', '/hooks', '/healthz'];

function never(path) {
  return NEVER.some((p) => path === p || path.startsWith(`${p}/`));
}

// ---------- the shell -----------------------------------------------------------------------

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    // One by one: a file that fails (a server older than this list) leaves the rest cached
    // and the worker installed (push works without the shell).
    await Promise.all(SHELL.map((path) => cache.add(new Request(path, { cache: 'reload' })).catch((e) => {
      console.warn(`headspace sw: not cached: ${path}: ${e.message}`);
    })));
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(CACHE_PREFIX) && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  let url;
  try { url = new URL(req.url); } catch (e) { return; }
  if (url.origin !== self.location.origin || never(url.pathname)) return;
  const navigation = req.mode === 'navigate';
  if (!navigation && !(SHELL_PATHS.has(url.pathname) && !url.search)) return;
  // The page's own URL keeps its answer under `/` (`/?agent=7` is the page too); another
  // navigation (a 404) is passed through, and falls back to the page only when offline.
  const key = navigation
    ? (url.pathname === '/' || url.pathname === '/index.html' ? url.pathname : null)
    : url.pathname;
  event.respondWith(networkFirst(event, req, key, navigation));
});

/// The network's answer, kept under `key` when good; the kept one when the network fails
/// (for a navigation, the page itself).
async function networkFirst(event, req, key, navigation) {
  try {
    const res = await fetch(req);
    if (key && res.status === 200 && res.type === 'basic' && !res.redirected) {
      const copy = res.clone();
      event.waitUntil(caches.open(CACHE).then((c) => c.put(key, copy)).catch(() => {}));
    }
    return res;
  } catch (err) {
    try {
      const cache = await caches.open(CACHE);
      const hit = (key && await cache.match(key)) || (navigation && (await cache.match('/') || await cache.match('/index.html')));
      if (hit) return hit;
    } catch (e) { /* no cache either */ }
    return Response.error();
  }
}

// ---------- push ----------------------------------------------------------------------------

const ICON = '/icon-192.png';
const BADGE = '/badge-96.png';

/// How many buttons a notification may carry here (the platform's; 2 when it does not say).
function maxActions() {
  const n = self.Notification && self.Notification.maxActions;
  return typeof n === 'number' && n >= 0 ? n : 2;
}

self.addEventListener('push', (event) => {
  event.waitUntil((async () => {
    // {"title", "body", "agent_id", "kind": "needs_you" | "finished", "options": [labels]}
    let d = {};
    try {
      d = event.data ? event.data.json() : {};
    } catch (e) {
      d = { body: event.data ? event.data.text() : '' };
    }
    if (!d || typeof d !== 'object') d = {};
    const kind = d.kind === 'finished' ? 'finished' : 'needs_you';
    const agent = d.agent_id === undefined || d.agent_id === null ? 'unknown' : d.agent_id;
    const options = Array.isArray(d.options) ? d.options.map(String) : [];
    const actions = kind === 'needs_you'
      ? options.slice(0, maxActions()).map((label, i) => ({ action: `option-${i + 1}`, title: label }))
      : [];
    // One tag an agent and kind: a newer push replaces the older one, and says so (renotify).
    await self.registration.showNotification(String(d.title || 'Headspace'), {
      body: String(d.body || ''),
      tag: `hs-${agent}-${kind}`,
      renotify: true,
      icon: ICON,
      badge: BADGE,
      data: { agent_id: d.agent_id, kind, options },
      actions,
    });
  })().catch((e) => console.warn(`headspace sw: push not shown: ${e.message}`)));
});

self.addEventListener('notificationclick', (event) => {
  const note = event.notification;
  const data = note.data || {};
  note.close();
  const m = /^option-(\d+)$/.exec(event.action || '');
  event.waitUntil((m ? answer(data, Number(m[1])) : openAgent(data.agent_id))
    .catch((e) => console.warn(`headspace sw: click not handled: ${e.message}`)));
});

/// Answers agent `data.agent_id` with option `option` (a notification's button); tells when
/// it could not, in the server's words.
async function answer(data, option) {
  const shown = (data.options || [])[option - 1];
  const label = shown || `option ${option}`;
  let failed = null;
  let unverified = false;
  try {
    const r = await fetch(`/api/agents/${encodeURIComponent(data.agent_id)}/answer`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      // The label the button showed: the server refuses (409) when the question changed
      // since the push, instead of picking that number in a question asked later.
      body: JSON.stringify(shown ? { option, expect: shown } : { option }),
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) failed = body.error || `${r.status} ${r.statusText}`;
    else unverified = body.verified === false;
  } catch (e) {
    failed = `the server did not answer (${e.message})`;
  }
  if (!failed && !unverified) return;
  await self.registration.showNotification(failed ? `Could not answer: ${failed}` : `Answered “${label}”, but the pane did not change`, {
    body: failed ? `“${label}” was not sent. Tap to open the agent and answer there.` : 'Tap to open the agent and check it.',
    tag: `hs-${data.agent_id}-answer`,
    renotify: true,
    icon: ICON,
    badge: BADGE,
    data: { agent_id: data.agent_id, kind: 'answer' },
  });
}

/// Shows agent `id`'s conversation: in an open Headspace window (focused, and told by a
/// message), else in a new one at /?agent=ID.
async function openAgent(id) {
  const all = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const mine = all.filter((c) => { try { return new URL(c.url).origin === self.location.origin; } catch (e) { return false; } });
  const client = mine.find((c) => c.focused) || mine.find((c) => c.visibilityState === 'visible') || mine[0];
  if (client) {
    try { await client.focus(); } catch (e) { /* focus not allowed: the message still opens it */ }
    if (id !== undefined && id !== null) client.postMessage({ type: 'open-agent', agent_id: id });
    return;
  }
  await self.clients.openWindow(id !== undefined && id !== null ? `/?agent=${encodeURIComponent(id)}` : '/');
}

// The push service replaced the subscription (it expired, or its keys rotated): the new one
// is made with the old one's key and given to the server; an open page keeps its new id.
self.addEventListener('pushsubscriptionchange', (event) => {
  event.waitUntil((async () => {
    const old = event.oldSubscription;
    const key = old && old.options && old.options.applicationServerKey;
    const sub = event.newSubscription
      || (key ? await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }) : null);
    if (!sub) return;
    const r = await fetch('/api/push/subscriptions', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(sub.toJSON()),
    });
    if (!r.ok) return;
    const { id } = await r.json();
    for (const c of await self.clients.matchAll({ type: 'window', includeUncontrolled: true })) c.postMessage({ type: 'push-subscribed', id });
  })().catch((e) => console.warn(`headspace sw: resubscribe failed: ${e.message}`)));
});
