//! The installable app, in a real headless Chromium against the real server (issue 35): the
//! manifest is valid and its icons load; the service worker registers, and with the server
//! stopped the app shell still opens and says it is offline; every page module is in the
//! worker's shell list; the voice controls exist where the browser offers speech; the tones
//! and the read-aloud of hands-free mode are driven by the server's `notice` events, the same
//! that drive browser notifications; and the push button subscribes the page's device
//! through the server's routes.

mod common;
use common::browser::*;
use common::*;
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use serde_json::{json, Value};
use std::time::Duration;

#[test]
fn every_page_module_is_in_the_service_workers_shell() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../static");
    let worker = std::fs::read_to_string(dir.join("sw.js")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        let shell_file = [".js", ".css", ".png", ".svg", ".webmanifest"]
            .iter()
            .any(|e| name.ends_with(e));
        if shell_file && name != "sw.js" {
            assert!(
                worker.contains(&format!("'/{name}'")),
                "static/{name} is missing from SHELL in static/sw.js: the installed app would not open without the server"
            );
        }
    }
}

#[test]
fn the_app_installs_opens_offline_speaks_notices_and_subscribes_to_pushes() {
    let Some(db) = fresh_db("dashboard_app") else {
        return;
    };
    let Some(browser) = Browser::start() else {
        return;
    };
    let claude = temp_dir("dashboard-app");
    let home = private_temp_dir("dashboard-app-home");
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Server::start_on(&db, &claude, &addr, &["--home", home.to_str().unwrap()]);
    browser.goto(&format!("http://{addr}/"));
    browser.until(
        "live",
        "return document.getElementById('conn').dataset.state === 'live'",
    );

    // The manifest: served as a manifest, with what an install needs, its icons real PNGs of
    // their stated sizes.
    let manifest = browser.js_async(
        "const done = arguments[arguments.length - 1];
         (async () => {
           const link = document.querySelector('link[rel=manifest]');
           const res = await fetch(link.href);
           const m = await res.json();
           const icons = [];
           for (const i of m.icons) {
             const r = await fetch(new URL(i.src, link.href));
             const bmp = await createImageBitmap(await r.blob());
             icons.push([i.sizes, i.purpose, r.status, r.headers.get('content-type'), `${bmp.width}x${bmp.height}`]);
           }
           return { type: res.headers.get('content-type'), name: m.name, start: m.start_url,
                    display: m.display, scope: m.scope, theme: m.theme_color, icons };
         })().then(done, e => done(String(e)));",
    );
    assert_eq!(manifest["type"], "application/manifest+json", "{manifest}");
    assert_eq!(manifest["name"], "Headspace");
    assert_eq!(manifest["start"], "/");
    assert_eq!(manifest["display"], "standalone");
    assert!(manifest["theme"].is_string());
    let icons = manifest["icons"].as_array().unwrap();
    for size in ["192x192", "512x512"] {
        assert!(
            icons
                .iter()
                .any(|i| i[0] == size && i[2] == 200 && i[3] == "image/png" && i[4] == size),
            "a {size} icon: {manifest}"
        );
    }
    assert!(icons.iter().any(|i| i[1] == "maskable"), "{manifest}");

    // The service worker: registered, active, and in control of the page after a reload.
    let scope = browser.js_async(
        "const done = arguments[arguments.length - 1];
         navigator.serviceWorker.ready.then(r => done([r.scope, r.active && r.active.scriptURL]), e => done(String(e)));",
    );
    assert_eq!(
        scope,
        json!([format!("http://{addr}/"), format!("http://{addr}/sw.js")])
    );
    browser.goto(&format!("http://{addr}/"));
    browser.until(
        "the worker controls the page",
        "return !!navigator.serviceWorker.controller",
    );
    browser.until(
        "live again",
        "return document.getElementById('conn').dataset.state === 'live'",
    );

    // Voice: each control exists exactly where the browser offers what it needs.
    let offers = browser.js(
        "return { recognition: !!(window.SpeechRecognition || window.webkitSpeechRecognition),
                  synthesis: 'speechSynthesis' in window,
                  dictate: !!document.getElementById('dictate') && !document.getElementById('dictate').hidden,
                  speak: !!document.getElementById('conv-speak') && !document.getElementById('conv-speak').hidden,
                  voice: !!document.getElementById('voice') }",
    );
    assert_eq!(offers["voice"], true, "{offers}");
    assert_eq!(offers["dictate"], offers["recognition"], "{offers}");
    assert_eq!(offers["speak"], offers["synthesis"], "{offers}");

    // Hands-free: the server's notice of a waiting agent plays the needs-you tone and reads
    // the question and its options aloud (the same event a browser notification shows).
    browser.js("localStorage.setItem('hs.voice', 'hands-free'); return true");
    browser.goto(&format!("http://{addr}/"));
    browser.until(
        "live, hands-free",
        "return document.getElementById('conn').dataset.state === 'live' && document.getElementById('voice').dataset.mode",
    );
    let hands_free = browser.js("return document.getElementById('voice').dataset.mode");
    let s = SessionWriter::new(61, Timestamp(now_ms()));
    ask_by_hooks(
        &server,
        &claude,
        &s,
        "%61",
        "draw it",
        ("Which colour?", &["Teal", "Amber"]),
    );
    let tones = browser.until(
        "the needs-you tone",
        "const t = window.__hs.metrics.tones || []; return t.includes('needs-you') && t",
    );
    assert!(tones.as_array().unwrap().contains(&json!("needs-you")));
    if hands_free == "hands-free" {
        let spoken = browser.until(
            "the question read aloud",
            "const s = (window.__hs.metrics.spoken || []).join(' '); return s.includes('Which colour?') && s",
        );
        let spoken = spoken.as_str().unwrap();
        assert!(
            spoken.contains("Teal") && spoken.contains("Amber"),
            "{spoken}"
        );
    } else {
        // A browser without speech synthesis offers tones only.
        assert_eq!(
            offers["synthesis"], false,
            "hands-free offered: {hands_free}"
        );
    }

    // The push button: the page asks the server for its key, subscribes its device (the
    // browser's push service stands in: headless Chromium has none) and the server keeps it.
    assert_eq!(
        browser.js("const b = document.getElementById('push'); return !!b && !b.hidden"),
        json!(true)
    );
    let stubbed = browser.js_async(
        "const done = arguments[arguments.length - 1];
         (async () => {
           const reg = await navigator.serviceWorker.ready;
           const point = new Uint8Array(65); point[0] = 4; point.fill(7, 1);
           const b64 = a => btoa(String.fromCharCode(...a)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
           let current = null;
           const sub = { endpoint: 'https://push.example/device-1',
             toJSON: () => ({ endpoint: 'https://push.example/device-1', expirationTime: null,
                              keys: { p256dh: b64(point), auth: b64(new Uint8Array(16).fill(3)) } }),
             unsubscribe: async () => { current = null; return true; } };
           reg.pushManager.subscribe = async (o) => { window.__askedKey = b64(new Uint8Array(o.applicationServerKey)); current = sub; return sub; };
           reg.pushManager.getSubscription = async () => current;
           if (window.Notification) Object.defineProperty(Notification, 'permission', { get: () => 'granted', configurable: true });
           Notification.requestPermission = async () => 'granted';
           return true;
         })().then(done, e => done(String(e)));",
    );
    assert_eq!(stubbed, json!(true));
    browser.click("#push");
    let id = browser.until(
        "subscribed",
        "return document.getElementById('push').getAttribute('aria-pressed') === 'true' && localStorage.getItem('hs.push')",
    );
    let key = server.json("/api/push/key")["public_key"].clone();
    assert_eq!(
        browser.js("return window.__askedKey"),
        key,
        "subscribed with the server's key"
    );
    let kept = std::fs::read_to_string(home.join("push-subscriptions.json")).unwrap();
    assert!(kept.contains("https://push.example/device-1"), "{kept}");
    assert!(kept.contains(id.as_str().unwrap()), "{kept}");

    // The phone-sized app, for the README.
    browser.resize(390, 844);
    browser.screenshot("app-phone");
    browser.resize(1280, 900);

    // Off again: the server forgets the device.
    browser.click("#push");
    browser.until(
        "unsubscribed",
        "return document.getElementById('push').getAttribute('aria-pressed') === 'false'",
    );
    wait_for(Duration::from_secs(5), || {
        let kept = std::fs::read_to_string(home.join("push-subscriptions.json")).unwrap();
        (!kept.contains("device-1")).then_some(())
    })
    .expect("the server forgot the device");

    // The server stops: the installed app still opens, from the worker's cache, and says
    // that the server is not answering.
    server.stop();
    browser.goto_anonymous(&format!("http://{addr}/"));
    let title = browser.until("the shell", "return document.title");
    assert!(title.as_str().unwrap().contains("Headspace"), "{title}");
    let said = browser.until(
        "the offline banner",
        "const b = document.getElementById('offline'); return !b.hidden && b.textContent",
    );
    assert!(
        said.as_str().unwrap().contains("stopped answering"),
        "{said}"
    );
    let modules: Value = browser.js("return typeof window.__hs === 'object'");
    assert_eq!(
        modules,
        json!(true),
        "the page's modules ran from the cache"
    );
}
