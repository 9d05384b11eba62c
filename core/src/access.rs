//! Who may call the server: the checks every request passes before any route runs.
//!
//! Headspace types into terminals whose agents can run any command, so its routes are as
//! sensitive as an SSH agent. The threat model (`SECURITY.md`) trusts the user's own account
//! and nothing else: not other local accounts, not the web pages the user visits (which can
//! reach loopback, and can rebind a name of theirs to 127.0.0.1), not other machines.
//!
//! Trust comes from a credential, never from where a connection seems to come from: every
//! server has a token (created on first start when none is given), and every route but the
//! health check, the dashboard's own files and the login needs it. An earlier version took
//! the owner of a loopback socket from the kernel's tables instead; a client that closed its
//! socket before the server looked showed up as root's.
//!
//! The rules, in the order they are applied (the first refusal wins):
//!
//! 1. **Host.** The `Host` header names this server: a loopback name, the address it listens
//!    on, or a name the user allowed. A page whose own name resolves to 127.0.0.1 (DNS
//!    rebinding) sends its own name, and is refused.
//! 2. **Same origin.** A browser request from another site carries `Origin` or
//!    `Sec-Fetch-Site: cross-site` / `same-site` (another port of localhost is the same site):
//!    refused. Tools (curl, the hook forwarder, the CLI) send neither.
//! 3. **Credential.** Every route but `/healthz`, the dashboard's static files and the login
//!    needs the token: as `Authorization: Bearer …` or as the login cookie the dashboard gets
//!    from the login link or `POST /api/login`. A wrong credential is marked
//!    ([`Refusal::wrong_credential`]): the shell makes each one cost the guesser time.
//! 4. **Methods.** A state change is a `POST` with `Content-Type: application/json`: a page
//!    cannot send that across origins without a preflight, which this server never grants.
//!    `GET` and `HEAD` read; every other method is refused.
//!
//! All of this is a pure function of the request's facts, so it is tested without a socket.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// The name of the cookie `POST /api/login` sets.
pub const LOGIN_COOKIE: &str = "headspace_login";

/// The facts of one request that the checks look at (header values as sent).
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestFacts<'a> {
    /// `GET`, `POST`, …
    pub method: &'a str,
    /// The path as the router sees it: without the query, percent-decoded segment by
    /// segment, joined by `/` (see [`route_path`]). Never the raw path: `/%61pi/agents` must
    /// be judged as the `/api/agents` it is routed to.
    pub path: &'a str,
    /// The `Host` header.
    pub host: Option<&'a str>,
    /// The `Origin` header.
    pub origin: Option<&'a str>,
    /// The `Sec-Fetch-Site` header.
    pub sec_fetch_site: Option<&'a str>,
    /// The `Content-Type` header.
    pub content_type: Option<&'a str>,
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The `Cookie` header.
    pub cookie: Option<&'a str>,
}

/// Why a request is refused: the status and a message that says what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status (400, 401, 403, 405 or 415).
    pub status: u16,
    /// What was wrong, for the JSON `{"error": …}`.
    pub message: String,
    /// A credential was given and is wrong: a guess, which the shell makes cost time (at most
    /// a few a second in all), never a request that simply carried none.
    pub wrong_credential: bool,
}

impl Refusal {
    fn new(status: u16, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
            wrong_credential: false,
        }
    }
}

/// The request policy of one server: the names it answers to and its token.
#[derive(Clone)]
pub struct AccessPolicy {
    hosts: BTreeSet<String>,
    /// SHA-256 of the token: compared digest to digest, in constant time.
    token: [u8; 32],
    /// The login cookie's value: derived from the token, so the cookie is not the token.
    cookie: String,
    /// SHA-256 of the hook key: a credential that posts hooks and opens nothing else (it is
    /// written into Claude Code's settings for its HTTP hooks, where the token must not be).
    hook_key: Option<[u8; 32]>,
}

impl std::fmt::Debug for AccessPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessPolicy")
            .field("hosts", &self.hosts)
            .field("token", &"<set>")
            .finish()
    }
}

impl AccessPolicy {
    /// A policy answering to the loopback names plus `hosts` (host names or addresses,
    /// without port; the listen address belongs here), requiring `token`.
    pub fn new<'a>(hosts: impl IntoIterator<Item = &'a str>, token: &str) -> AccessPolicy {
        let mut names: BTreeSet<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_string)
            .collect();
        for h in hosts {
            let h = host_name(h.trim());
            if !h.is_empty() && h != "0.0.0.0" && h != "::" {
                names.insert(h.to_ascii_lowercase());
            }
        }
        AccessPolicy {
            hosts: names,
            token: sha256(token),
            cookie: login_cookie_value(token),
            hook_key: None,
        }
    }

    /// This policy, also taking `key` as the credential of the hook routes (and of nothing
    /// else).
    pub fn with_hook_key(mut self, key: &str) -> AccessPolicy {
        self.hook_key = Some(sha256(key));
        self
    }

    /// Whether `token` is the server's token (constant time).
    pub fn token_matches(&self, token: &str) -> bool {
        constant_time_eq(&self.token, &sha256(token))
    }

    /// The `Set-Cookie` value that logs a browser in (`secure`: only over HTTPS).
    pub fn login_cookie(&self, secure: bool) -> String {
        let v = &self.cookie;
        let secure = if secure { "; Secure" } else { "" };
        format!("{LOGIN_COOKIE}={v}; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000{secure}")
    }

    /// Checks a request; `Err` says why it is refused.
    pub fn check(&self, r: &RequestFacts<'_>) -> Result<(), Refusal> {
        let host = match r.host.map(str::trim).filter(|h| !h.is_empty()) {
            Some(h) => h,
            None => return Err(Refusal::new(400, "the request has no Host header")),
        };
        let name = host_name(host).to_ascii_lowercase();
        if !self.hosts.contains(&name) {
            return Err(Refusal::new(
                403,
                format!(
                    "this server does not answer to the name {name:?} (a web page rebinding its name to this machine?); \
                     it answers to {}; start it with --allow-host {name} if that name is yours",
                    self.hosts.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if let Some(site) = r.sec_fetch_site.map(str::trim) {
            if !site.eq_ignore_ascii_case("same-origin") && !site.eq_ignore_ascii_case("none") {
                return Err(Refusal::new(
                    403,
                    format!("cross-site request refused (Sec-Fetch-Site: {site})"),
                ));
            }
        }
        if let Some(origin) = r.origin.map(str::trim) {
            let same = ["http://", "https://"]
                .iter()
                .any(|scheme| origin.strip_prefix(scheme) == Some(host));
            if !same {
                return Err(Refusal::new(
                    403,
                    format!("cross-origin request from {origin} refused"),
                ));
            }
        }
        if !self.open_route(r) {
            match self.credential(r) {
                Credential::Right => {}
                Credential::None => {
                    return Err(Refusal::new(
                        401,
                        "this server needs its token: `Authorization: Bearer TOKEN` (the CLI reads \
                         $HEADSPACE_HOME/token itself), or open the login link `headspace serve` printed",
                    ))
                }
                Credential::Wrong => {
                    return Err(Refusal {
                        wrong_credential: true,
                        ..Refusal::new(
                            401,
                            "wrong token (or a login from before the token changed): log in again",
                        )
                    })
                }
            }
        }
        match r.method {
            "GET" | "HEAD" => Ok(()),
            "POST" => {
                let json = r.content_type.is_some_and(|c| {
                    c.split(';')
                        .next()
                        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
                });
                if json {
                    Ok(())
                } else {
                    Err(Refusal::new(
                        415,
                        format!("POST {} needs Content-Type: application/json", r.path),
                    ))
                }
            }
            other => Err(Refusal::new(
                405,
                format!("method {other} is not allowed here; reads are GET, actions are POST"),
            )),
        }
    }

    /// Routes anyone who passed the host and origin checks may call, by an explicit list: the
    /// health check, the dashboard's own files (code, no data) and the login, which checks
    /// the token it is given itself.
    fn open_route(&self, r: &RequestFacts<'_>) -> bool {
        match r.method {
            "GET" | "HEAD" => {
                r.path == "/healthz" || r.path == "/login" || is_dashboard_file(r.path)
            }
            "POST" => r.path == "/api/login",
            _ => false,
        }
    }

    /// What the request carries: the right credential (the token or its login cookie; on a
    /// hook route, also the hook key), a wrong one, or none.
    fn credential(&self, r: &RequestFacts<'_>) -> Credential {
        let hook_route = r.method == "POST" && is_hook_route(r.path);
        let bearer = r
            .authorization
            .map(|v| match v.trim().strip_prefix("Bearer ") {
                Some(t) => {
                    let t = t.trim();
                    self.token_matches(t)
                        || (hook_route
                            && self
                                .hook_key
                                .is_some_and(|k| constant_time_eq(&k, &sha256(t))))
                }
                None => false,
            });
        let cookie = r.cookie.and_then(|header| {
            let mut values = header
                .split(';')
                .filter_map(|kv| kv.trim().split_once('='))
                .filter(|(k, _)| *k == LOGIN_COOKIE)
                .peekable();
            values.peek()?;
            Some(values.any(|(_, v)| constant_time_eq(&sha256(v), &sha256(&self.cookie))))
        });
        match (bearer, cookie) {
            (Some(true), _) | (_, Some(true)) => Credential::Right,
            (None, None) => Credential::None,
            _ => Credential::Wrong,
        }
    }
}

/// What credential a request carries.
enum Credential {
    /// The token, or the login cookie of the token.
    Right,
    /// An `Authorization` header or a login cookie that is not the token's.
    Wrong,
    /// Neither.
    None,
}

/// The routes that take hooks: `/hook/{event}`, `/hook/{agent kind}/{event}`, `/hooks/claude`.
pub fn is_hook_route(path: &str) -> bool {
    path.starts_with("/hook/") || path == "/hooks/claude"
}

/// The dashboard's own files: `/`, or one plain file name with a static extension.
fn is_dashboard_file(path: &str) -> bool {
    if path == "/" {
        return true;
    }
    let Some(name) = path.strip_prefix('/') else {
        return false;
    };
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    let ext = name.rsplit_once('.').map(|(_, e)| e);
    plain
        && matches!(
            ext,
            Some("html" | "js" | "css" | "svg" | "png" | "ico" | "woff2" | "webmanifest")
        )
}

/// The path a router sees: the raw path's segments, percent-decoded, joined by `/` with one
/// leading `/` (`//%61pi/agents/` → `/api/agents`). The access checks and the router must
/// both use it.
pub fn route_path(raw: &str) -> String {
    let segments: Vec<String> = raw
        .trim_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    format!("/{}", segments.join("/"))
}

/// Decodes `%XX` escapes in a path segment (pane ids like `%3` arrive as `%253`); invalid
/// escapes are kept as they are.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The host part of a `Host` header or address: `[::1]:5055` → `::1`, `a.b:80` → `a.b`.
pub fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        // One colon: name and port. More than one: a bare IPv6 address.
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

fn sha256(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

/// The login cookie's value for `token`: a digest, so a leaked cookie is not the token.
fn login_cookie_value(token: &str) -> String {
    sha256(&format!("headspace-login-v1\0{token}"))
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Equality whose time does not depend on where the bytes differ.
pub fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "s3cret";

    /// A request with the right bearer token.
    fn facts<'a>(method: &'a str, path: &'a str, host: &'a str) -> RequestFacts<'a> {
        RequestFacts {
            method,
            path,
            host: Some(host),
            content_type: (method == "POST").then_some("application/json"),
            authorization: Some("Bearer s3cret"),
            ..RequestFacts::default()
        }
    }

    /// The same request with no credential.
    fn anonymous<'a>(method: &'a str, path: &'a str, host: &'a str) -> RequestFacts<'a> {
        RequestFacts {
            authorization: None,
            ..facts(method, path, host)
        }
    }

    fn policy() -> AccessPolicy {
        AccessPolicy::new([], TOKEN)
    }

    #[test]
    fn an_encoded_or_doubled_path_is_judged_as_the_route_it_reaches() {
        let p = policy();
        for sneaky in [
            "/%61pi/agents",
            "//api/agents",
            "/api//agents",
            "/%61pi/events",
            "/%6detrics",
            "/metrics/",
            "/hook%2FStop",
            "/x/../api/agents",
        ] {
            let path = route_path(sneaky);
            let f = anonymous("GET", &path, "127.0.0.1");
            assert_eq!(
                p.check(&f).map_err(|r| r.status),
                Err(401),
                "{sneaky} → {path}"
            );
        }
        assert_eq!(route_path("/%61pi/agents/%253/send"), "/api/agents/%3/send");
        assert_eq!(route_path("/"), "/");
        for open in [
            "/",
            "/app.js",
            "/app.css",
            "/index.html",
            "/manifest.webmanifest",
            "/sw.js",
            "/icon-192.png",
            "/healthz",
            "/login",
        ] {
            let f = anonymous("GET", open, "127.0.0.1");
            assert_eq!(p.check(&f), Ok(()), "{open}");
        }
        let login = anonymous("POST", "/api/login", "127.0.0.1");
        assert_eq!(p.check(&login), Ok(()));
    }

    #[test]
    fn host_names_with_ports_and_brackets() {
        assert_eq!(host_name("127.0.0.1:5055"), "127.0.0.1");
        assert_eq!(host_name("[::1]:5055"), "::1");
        assert_eq!(host_name("::1"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
        assert_eq!(host_name("evil.example:5055"), "evil.example");
    }

    #[test]
    fn a_rebinding_name_is_refused_and_loopback_names_pass() {
        let p = AccessPolicy::new(["127.0.0.1"], TOKEN);
        for ok in [
            "127.0.0.1:5055",
            "localhost:5055",
            "[::1]:5055",
            "LOCALHOST",
        ] {
            assert_eq!(p.check(&facts("GET", "/api/agents", ok)), Ok(()));
        }
        let r = p
            .check(&facts("POST", "/api/agents/1/send", "evil.example:5055"))
            .unwrap_err();
        assert_eq!(r.status, 403);
        assert!(r.message.contains("evil.example"), "{}", r.message);
        let none = RequestFacts {
            host: None,
            ..facts("GET", "/", "x")
        };
        assert_eq!(p.check(&none).unwrap_err().status, 400);
        let allowed = AccessPolicy::new(["box.lan"], TOKEN);
        assert!(allowed.check(&facts("GET", "/", "box.lan:5055")).is_ok());
    }

    #[test]
    fn cross_site_requests_are_refused() {
        let p = policy();
        let mut f = facts("POST", "/api/agents/1/send", "127.0.0.1:5055");
        f.origin = Some("http://evil.example");
        assert_eq!(p.check(&f).unwrap_err().status, 403);
        f.origin = Some("http://127.0.0.1:5055");
        assert_eq!(p.check(&f), Ok(()));
        f.origin = Some("http://127.0.0.1:8080"); // another port is another origin
        assert_eq!(p.check(&f).unwrap_err().status, 403);
        f.origin = Some("null");
        assert_eq!(p.check(&f).unwrap_err().status, 403);
        let mut g = facts("GET", "/api/orchestrate/status", "localhost:5055");
        g.sec_fetch_site = Some("cross-site");
        assert_eq!(p.check(&g).unwrap_err().status, 403);
        g.sec_fetch_site = Some("same-site");
        assert_eq!(p.check(&g).unwrap_err().status, 403);
        g.sec_fetch_site = Some("same-origin");
        assert_eq!(p.check(&g), Ok(()));
        g.sec_fetch_site = Some("none");
        assert_eq!(p.check(&g), Ok(()));
    }

    #[test]
    fn actions_are_json_posts_and_other_methods_are_refused() {
        let p = policy();
        let mut f = facts("POST", "/hook/Stop", "127.0.0.1");
        f.content_type = Some("text/plain");
        assert_eq!(p.check(&f).unwrap_err().status, 415);
        f.content_type = Some("application/json; charset=utf-8");
        assert_eq!(p.check(&f), Ok(()));
        f.content_type = None;
        assert_eq!(p.check(&f).unwrap_err().status, 415);
        let d = facts("DELETE", "/api/agents/1", "127.0.0.1");
        assert_eq!(p.check(&d).unwrap_err().status, 405);
    }

    #[test]
    fn every_route_but_the_open_ones_needs_the_token_whoever_connects() {
        let p = policy();
        for closed in [
            "/metrics",
            "/api/agents",
            "/hook/stop",
            "/api/audit",
            "/api/agents/1/audit",
            "/api/events",
        ] {
            let r = p.check(&anonymous("GET", closed, "127.0.0.1")).unwrap_err();
            assert_eq!(r.status, 401, "{closed}");
            assert!(!r.wrong_credential, "no credential is no guess: {closed}");
            assert_eq!(p.check(&facts("GET", closed, "127.0.0.1")), Ok(()));
        }
        let send = anonymous("POST", "/api/agents/1/send", "127.0.0.1");
        assert_eq!(p.check(&send).unwrap_err().status, 401);
    }

    #[test]
    fn the_hook_key_posts_hooks_and_opens_nothing_else() {
        let p = policy().with_hook_key("hookkey1");
        let mut hook = anonymous("POST", "/hook/Stop", "127.0.0.1:5055");
        hook.authorization = Some("Bearer hookkey1");
        assert_eq!(p.check(&hook), Ok(()));
        let mut kind = hook;
        kind.path = "/hook/codex/Stop";
        assert_eq!(p.check(&kind), Ok(()));
        for (method, path) in [
            ("GET", "/api/agents"),
            ("POST", "/api/agents/1/send"),
            ("GET", "/api/events"),
            ("GET", "/hook/Stop"),
        ] {
            let mut f = anonymous(method, path, "127.0.0.1:5055");
            f.authorization = Some("Bearer hookkey1");
            let r = p.check(&f).unwrap_err();
            assert_eq!(r.status, 401, "{method} {path}");
            assert!(r.wrong_credential, "{method} {path}");
        }
        // Without a hook key configured, nothing but the token posts hooks.
        let mut plain = anonymous("POST", "/hook/Stop", "127.0.0.1");
        plain.authorization = Some("Bearer hookkey1");
        assert_eq!(policy().check(&plain).unwrap_err().status, 401);
    }

    #[test]
    fn a_token_opens_the_server_by_header_or_login_cookie_only() {
        let p = AccessPolicy::new(["0.0.0.0"], TOKEN);
        let f = anonymous("GET", "/api/agents", "127.0.0.1");
        assert_eq!(p.check(&f).unwrap_err().status, 401);
        let mut with = f;
        with.authorization = Some("Bearer s3cret");
        assert_eq!(p.check(&with), Ok(()));
        with.authorization = Some("Bearer s3cre");
        let wrong = p.check(&with).unwrap_err();
        assert_eq!(wrong.status, 401);
        assert!(wrong.wrong_credential, "a wrong bearer is a guess");
        with.authorization = Some("Basic czNjcmV0");
        assert!(p.check(&with).unwrap_err().wrong_credential);
        let set = p.login_cookie(false);
        assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"));
        assert!(!set.contains("Secure"));
        assert!(p.login_cookie(true).ends_with("; Secure"));
        assert!(!set.contains("s3cret"), "the cookie is not the token");
        let value = set.split(';').next().unwrap();
        let mut c = f;
        c.cookie = Some(value);
        assert_eq!(p.check(&c), Ok(()));
        c.cookie = Some("other=1; headspace_login=00");
        let stale = p.check(&c).unwrap_err();
        assert_eq!(stale.status, 401);
        assert!(stale.wrong_credential);
        c.cookie = Some("other=1");
        assert!(
            !p.check(&c).unwrap_err().wrong_credential,
            "no login cookie at all"
        );
        assert!(p.token_matches("s3cret") && !p.token_matches("s3cret "));
        // 0.0.0.0 is no name a client can send.
        assert_eq!(
            p.check(&facts("GET", "/", "0.0.0.0")).unwrap_err().status,
            403
        );
    }
}
