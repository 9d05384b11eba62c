//! A real headless Chromium driven through chromedriver's WebDriver API, for the dashboard's
//! tests. Skipped (with a note) where chromium is not installed, except on CI.

use super::{request, temp_dir, wait_for};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A chromedriver process and one browser session.
pub struct Browser {
    driver: Child,
    addr: String,
    session: String,
    _profile: PathBuf,
    /// The origins this browser logged in to (see [`Browser::goto`]).
    logged_in: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

/// A free TCP port on loopback.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    pub fn start() -> Option<Browser> {
        Browser::start_with(false)
    }

    /// A browser that records the renderer's trace events (devtools.timeline), read with
    /// [`Browser::trace_events`]: where the page's main-thread time goes, for benchmarks.
    pub fn start_traced() -> Option<Browser> {
        Browser::start_with(true)
    }

    fn start_with(traced: bool) -> Option<Browser> {
        let have =
            Path::new("/usr/bin/chromedriver").exists() && Path::new("/usr/bin/chromium").exists();
        if !have {
            assert!(
                std::env::var_os("CI").is_none(),
                "chromium and chromedriver must be installed on CI (make test installs them)"
            );
            eprintln!("skipped: chromium / chromedriver not installed");
            return None;
        }
        let port = free_port();
        let driver = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr = format!("127.0.0.1:{port}");
        wait_for(Duration::from_secs(20), || {
            request(&addr, "GET", "/status", b"").filter(|(s, _)| *s == 200)
        })
        .expect("chromedriver starts");
        let profile = temp_dir(&format!("chromium-profile-{port}"));
        let mut caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                     "--disable-dev-shm-usage", "--disable-component-update", "--disable-sync", "--disable-quic",
                     "--window-size=1400,900", format!("--user-data-dir={}", profile.display())]}}}});
        if traced {
            let always = &mut caps["capabilities"]["alwaysMatch"];
            always["goog:loggingPrefs"] = json!({"performance": "ALL"});
            always["goog:chromeOptions"]["perfLoggingPrefs"] = json!({
                "enableNetwork": false, "enablePage": false,
                "traceCategories": "devtools.timeline,disabled-by-default-devtools.timeline,v8"});
        }
        let (status, body) =
            request(&addr, "POST", "/session", caps.to_string().as_bytes()).expect("session");
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        let session = v["value"]["sessionId"].as_str().unwrap().to_string();
        Some(Browser {
            driver,
            addr,
            session,
            _profile: profile,
            logged_in: Default::default(),
        })
    }

    pub fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let body = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let (status, text) = request(
            &self.addr,
            method,
            &format!("/session/{}{path}", self.session),
            &body,
        )
        .expect("webdriver answers");
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_eq!(status, 200, "{method} {path}: {text}");
        v["value"].clone()
    }

    /// The trace events recorded so far (a browser from [`Browser::start_traced`]); read
    /// once: chromedriver hands the trace over when asked and records no more after.
    pub fn trace_events(&self) -> Vec<Value> {
        let log = self.call("POST", "/se/log", json!({"type": "performance"}));
        log.as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                let m: Value = serde_json::from_str(entry["message"].as_str()?).ok()?;
                (m["message"]["method"] == "Tracing.dataCollected")
                    .then(|| m["message"]["params"].clone())
            })
            .collect()
    }

    /// Opens `url`, logged in: the first visit to a server's origin goes through its login
    /// link with the test token first, as a user opens the link `serve` prints.
    pub fn goto(&self, url: &str) {
        let origin = url
            .strip_prefix("http://")
            .map(|rest| rest.split('/').next().unwrap_or(rest).to_string());
        if let Some(origin) = origin {
            let fresh = self.logged_in.lock().unwrap().insert(origin.clone());
            if fresh {
                self.goto_anonymous(&format!(
                    "http://{origin}/login?token={}",
                    super::TEST_TOKEN
                ));
            }
        }
        self.goto_anonymous(url);
    }

    /// Opens `url` as it is, with no login step.
    pub fn goto_anonymous(&self, url: &str) {
        self.call("POST", "/url", json!({"url": url}));
    }

    /// Runs a script in the page (its body, with `return`).
    pub fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    pub fn js_async(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/async",
            json!({"script": script, "args": []}),
        )
    }

    pub fn until(&self, what: &str, script: &str) -> Value {
        wait_for(Duration::from_secs(15), || {
            let v = self.js(script);
            (!v.is_null() && v != json!(false)).then_some(v)
        })
        .unwrap_or_else(|| {
            panic!(
                "timed out waiting for {what}; page: {}",
                self.js("return document.body.innerText")
            )
        })
    }

    /// Saves a screenshot as `NAME.png` in the run's temp dir (`headspace-screenshots-PID`,
    /// printed) and in `test-artifacts/`.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let b64 = self.call("GET", "/screenshot", Value::Null);
        let png = base64(b64.as_str().unwrap());
        let artifacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-artifacts");
        std::fs::create_dir_all(&artifacts).unwrap();
        std::fs::write(artifacts.join(format!("{name}.png")), &png).unwrap();
        let dir =
            std::env::temp_dir().join(format!("headspace-screenshots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{name}.png"));
        std::fs::write(&file, &png).unwrap();
        println!("screenshot: {}", file.display());
        file
    }

    /// The WebDriver id of the first element `css` finds.
    pub fn element(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// Types `text` into the element `css` finds, key by key, as a user would
    /// (`\u{E007}` is Enter, `\u{E008}` Shift, `\u{E00C}` Escape).
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            json!({"text": text}),
        );
    }

    /// Clicks the element `css` finds, with the pointer.
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        // As a user scrolls to what they click: WebDriver scrolls only an element whose
        // middle is off screen, not one under the docked Needs-you strip (the page leaves
        // room for the strip when scrolling into view: `scroll-padding-bottom`).
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": "const e = document.querySelector(arguments[0]); if (e) e.scrollIntoView({block: 'nearest', inline: 'nearest'}); return true", "args": [css]}),
        );
        self.call("POST", &format!("/element/{id}/click"), json!({}));
    }

    /// Sets the window's size; returns the page's inner width and height.
    pub fn resize(&self, width: u32, height: u32) -> (u64, u64) {
        self.call(
            "POST",
            "/window/rect",
            json!({"width": width, "height": height}),
        );
        let v = self.js("return [window.innerWidth, window.innerHeight]");
        (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = request(
            &self.addr,
            "DELETE",
            &format!("/session/{}", self.session),
            b"",
        );
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Decodes standard base64 (a WebDriver screenshot).
pub fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let clean: Vec<u8> = s
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, c)| {
            acc | (u32::from(val(*c)) << (18 - 6 * i))
        });
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    out
}
