// Headspace dashboard: push to this device. The header's #push button subscribes this browser
// to Web Push (the service worker, sw.js, shows what the server pushes, even with the page
// closed: an agent needs you, with its options as the notification's buttons) and tells the
// server where to push (POST /api/push/subscriptions); pressed again, the server forgets it
// and the browser unsubscribes. The server's id for this device is kept in localStorage
// `hs.push`. Every failure says what failed and why, the server's own words when it answered.
import { $, api, toast } from './helpers.js';

const STORE = 'hs.push';

const CANNOT = 'This browser cannot receive pushes here (it needs HTTPS, or localhost)';

/// Whether this page can subscribe to pushes.
function pushable() {
  return 'serviceWorker' in navigator && 'PushManager' in window;
}

/// An iPhone's or iPad's browser: it pushes only to a web app added to the Home Screen.
function apple() {
  return /iPhone|iPad|iPod/.test(navigator.userAgent) || (navigator.platform === 'MacIntel' && navigator.maxTouchPoints > 1);
}

/// The bytes of a base64url string (the server's key: the 65 bytes of a P-256 point).
export function base64urlBytes(s) {
  const b64 = String(s).replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/// Whether subscription `sub` was made with key `key` (a browser holds one subscription a
/// worker: one made with another key must go before a new one can be made).
function sameKey(sub, key) {
  const had = sub.options && sub.options.applicationServerKey;
  if (!had) return false;
  const a = new Uint8Array(had);
  return a.length === key.length && a.every((v, i) => v === key[i]);
}

// How long a step may take: a browser whose push service cannot be reached (no network, or
// a build without one) leaves its promise pending for ever.
const STEP_MS = 15000;

/// `promise`, or an error saying `late` once `ms` passed without it.
async function within(promise, ms, late) {
  let timer;
  const timeout = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(late)), ms); });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/// The service worker's registration once it is active (a subscription wants one).
async function activeRegistration() {
  await navigator.serviceWorker.register('/sw.js'); // app.js's registration, or this one
  return within(navigator.serviceWorker.ready, STEP_MS, 'it did not start in time (see the browser console)');
}

/// This browser's push subscription, or null (never throws).
async function currentSubscription() {
  try {
    const reg = await navigator.serviceWorker.getRegistration('/');
    return reg ? await reg.pushManager.getSubscription() : null;
  } catch (e) {
    return null;
  }
}

function setPressed(on) {
  $('push').setAttribute('aria-pressed', String(on));
}

function busy(on) {
  $('push').disabled = on;
  if (on) $('push').setAttribute('aria-busy', 'true'); else $('push').removeAttribute('aria-busy');
}

/// Turns pushes on: permission, the service worker, the server's key, the subscription, the
/// server told. Stops at the first failure, with a toast naming it.
async function turnOn() {
  if (!pushable()) {
    toast(apple() ? `${CANNOT}. On an iPhone or iPad: add Headspace to the Home Screen (Share → Add to Home Screen) and open it from there.` : CANNOT, 'error');
    return;
  }
  if (!('Notification' in window)) { toast('Push: this browser shows no notifications here', 'error'); return; }
  let permission;
  try { permission = await Notification.requestPermission(); } catch (e) { permission = `failed: ${e.message}`; }
  if (permission !== 'granted') {
    toast(`Push: the browser did not allow notifications (${permission}); allow them in this site’s settings`, 'error');
    return;
  }
  let reg;
  try { reg = await activeRegistration(); } catch (e) { toast(`Push: the service worker could not start: ${e.message}`, 'error'); return; }
  let key;
  try {
    const r = await api('/api/push/key');
    key = base64urlBytes(r.public_key || '');
    if (key.length !== 65 || key[0] !== 4) throw new Error('it is not a P-256 public key (65 bytes, base64url)');
  } catch (e) {
    toast(`Push: could not get the server’s push key: ${e.message}`, 'error');
    return;
  }
  let sub;
  try {
    sub = await reg.pushManager.getSubscription();
    if (sub && !sameKey(sub, key)) { await sub.unsubscribe(); sub = null; }
    if (!sub) {
      sub = await within(reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }), STEP_MS,
        `its push service did not answer in ${STEP_MS / 1000} s`);
    }
  } catch (e) {
    toast(`Push: the browser could not subscribe: ${e.message}`, 'error');
    return;
  }
  // An id kept from before (a subscription the browser has since dropped) is forgotten by
  // the server first, so that no dead device stays on its list.
  const old = localStorage.getItem(STORE);
  if (old) {
    await api(`/api/push/subscriptions/${encodeURIComponent(old)}/delete`, { method: 'POST', body: '{}' }).catch(() => {});
    localStorage.removeItem(STORE);
  }
  try {
    const r = await api('/api/push/subscriptions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sub.toJSON()) });
    if (r.id === undefined || r.id === null) throw new Error('its answer has no id');
    localStorage.setItem(STORE, String(r.id));
  } catch (e) {
    // The server does not know it: a subscription nobody pushes to is dropped.
    await sub.unsubscribe().catch(() => {});
    toast(`Push: the server did not take this device: ${e.message}`, 'error');
    return;
  }
  setPressed(true);
  toast('Push on: this device is told when an agent needs you, even with the page closed', 'ok');
}

/// Turns pushes off: the server forgets this device, then the browser unsubscribes (even if
/// the server could not be told: its pushes then bounce, and stop).
async function turnOff() {
  const id = localStorage.getItem(STORE);
  let serverSaid = null;
  if (id) {
    try {
      await api(`/api/push/subscriptions/${encodeURIComponent(id)}/delete`, { method: 'POST', body: '{}' });
    } catch (e) {
      if (e.status !== 404) serverSaid = e.message; // 404: forgotten already
    }
  }
  let browserSaid = null;
  try {
    const sub = await currentSubscription();
    if (sub) await sub.unsubscribe();
  } catch (e) {
    browserSaid = e.message;
  }
  localStorage.removeItem(STORE);
  setPressed(false);
  if (serverSaid) toast(`Push off here, but the server could not forget this device: ${serverSaid}`, 'error');
  else if (browserSaid) toast(`Push: the server forgot this device, but the browser could not unsubscribe: ${browserSaid}`, 'error');
  else toast('Push off for this device', '');
}

async function toggle() {
  const on = $('push').getAttribute('aria-pressed') === 'true';
  busy(true);
  try {
    if (on) await turnOff(); else await turnOn();
  } catch (e) {
    toast(`Push: ${e.message}`, 'error');
  } finally {
    busy(false);
  }
}

/// Wires #push once, at load: hidden where the browser has no service workers at all, shown
/// pressed when this device is subscribed (an id kept, and the browser's subscription there).
export async function wirePush() {
  const b = $('push');
  // A page that is not a secure context (plain HTTP to another machine) has no service
  // workers either: there the button stays, and says why it cannot work.
  b.hidden = !('serviceWorker' in navigator) && window.isSecureContext !== false;
  if (b.hidden) return;
  b.addEventListener('click', toggle);
  setPressed(false);
  if (!pushable()) return;
  // The worker re-subscribed by itself (the push service changed the subscription): the
  // server's new id for this device.
  navigator.serviceWorker.addEventListener('message', (e) => {
    if (e.data && e.data.type === 'push-subscribed' && e.data.id !== undefined) localStorage.setItem(STORE, String(e.data.id));
  });
  const sub = await currentSubscription();
  setPressed(!!(sub && localStorage.getItem(STORE)));
}
