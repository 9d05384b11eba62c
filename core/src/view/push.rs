//! Pushes to the user's devices (Web Push, RFC 8030): which subscriptions a server takes,
//! what a notice says in a push, and what a push service's answer means. The shell encrypts
//! (RFC 8291), signs (RFC 8292) and sends; every decision about a push is here.

use serde_json::{json, Value};

/// The longest endpoint taken (browsers' are under 500 bytes).
const MAX_ENDPOINT: usize = 2048;
/// How long a push service keeps a push for a device that is away: a wait an hour old is
/// still news, a day old is not.
pub const TTL_SECONDS: u32 = 3600;
/// The most characters of a notice's body a push carries (the encrypted record holds at most
/// 3,993 bytes: RFC 8291, section 4).
const BODY_CHARS: usize = 600;
/// The most bytes a push's JSON may take: what one `aes128gcm` record holds with a P-256
/// key id (RFC 8291, section 4).
pub const MAX_MESSAGE_BYTES: usize = 3993;
/// The most options a push offers, and the most characters of each.
const OPTIONS: usize = 6;
const OPTION_CHARS: usize = 80;

/// A device's subscription, as its browser's `PushSubscription.toJSON()` gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    /// Where pushes for the device are posted.
    pub endpoint: String,
    /// The device's P-256 public key (65 bytes, uncompressed).
    pub p256dh: Vec<u8>,
    /// The device's authentication secret (16 bytes).
    pub auth: Vec<u8>,
}

/// Checks a subscription a page sent (`{"endpoint", "keys": {"p256dh", "auth"}}`): an
/// `https://` endpoint (a loopback `http://` one only when `allow_loopback`, for tests), a
/// P-256 point and a 16-byte secret, both base64url. The error says what is wrong.
pub fn subscription(body: &Value, allow_loopback: bool) -> Result<Subscription, String> {
    let endpoint = body
        .get("endpoint")
        .and_then(Value::as_str)
        .ok_or("the subscription has no \"endpoint\" (send PushSubscription.toJSON())")?;
    check_endpoint(endpoint, allow_loopback)?;
    let key = |name: &str| -> Result<Vec<u8>, String> {
        let text = body
            .get("keys")
            .and_then(|k| k.get(name))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("the subscription has no keys.{name}"))?;
        from_base64url(text).ok_or_else(|| format!("keys.{name} is not base64url"))
    };
    let p256dh = key("p256dh")?;
    if p256dh.len() != 65 || p256dh[0] != 4 {
        return Err(format!(
            "keys.p256dh must be an uncompressed P-256 point (65 bytes), not {} bytes",
            p256dh.len()
        ));
    }
    let auth = key("auth")?;
    if auth.len() != 16 {
        return Err(format!(
            "keys.auth must be 16 bytes, not {} bytes",
            auth.len()
        ));
    }
    Ok(Subscription {
        endpoint: endpoint.to_string(),
        p256dh,
        auth,
    })
}

/// Whether `url` is an endpoint a push may go to (see [`subscription`]).
fn check_endpoint(url: &str, allow_loopback: bool) -> Result<(), String> {
    if url.len() > MAX_ENDPOINT {
        return Err(format!("the endpoint is longer than {MAX_ENDPOINT} bytes"));
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("the endpoint holds spaces or control characters".into());
    }
    let e = endpoint(url)?;
    let loopback = is_loopback(&e.host);
    if loopback && !allow_loopback {
        return Err("a loopback endpoint is taken only with serve --allow-loopback-push".into());
    }
    if !e.secure && !loopback {
        return Err("the endpoint must be an https:// URL".into());
    }
    Ok(())
}

/// A push endpoint taken apart: where a push is posted. The one reading of an endpoint: the
/// checks and the sender both use it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `https` (else `http`).
    pub secure: bool,
    /// The host, lowercase, an IPv6 address without its brackets.
    pub host: String,
    /// The port, the scheme's own when none is given.
    pub port: u16,
    /// The authority as written (`host[:port]`): the `Host` header and the audience.
    pub authority: String,
    /// The path and query (`/` at least); never the fragment.
    pub path: String,
}

/// `url` taken apart, or why it is no endpoint: an `http(s)://` URL with a host and no user
/// name (`user@host`, a way to make a URL look like another host's).
pub fn endpoint(url: &str) -> Result<Endpoint, String> {
    let (secure, rest) = match url.split_once("://") {
        Some(("https", rest)) => (true, rest),
        Some(("http", rest)) => (false, rest),
        _ => return Err("the endpoint must be an https:// URL".into()),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let no_host = || "the endpoint names no host (or has a user name in it)".to_string();
    if authority.is_empty() || authority.contains('@') {
        return Err(no_host());
    }
    let default_port = if secure { 443 } else { 80 };
    let bad_port = |_| "the endpoint's port is not a number".to_string();
    // `[v6]:port`, `host:port`, or either without a port.
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (h, after) = v6.split_once(']').ok_or_else(no_host)?;
            let port = after.strip_prefix(':').map(str::parse).transpose();
            (h, port.map_err(bad_port)?.unwrap_or(default_port))
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().map_err(bad_port)?),
            None => (authority, default_port),
        },
    };
    if host.is_empty() {
        return Err(no_host());
    }
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    Ok(Endpoint {
        secure,
        host: host.to_ascii_lowercase(),
        port,
        authority: authority.to_string(),
        path,
    })
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// The origin a VAPID token names as its audience (RFC 8292, section 2): the endpoint's
/// scheme and authority.
pub fn audience(url: &str) -> Option<String> {
    let e = endpoint(url).ok()?;
    let scheme = if e.secure { "https" } else { "http" };
    Some(format!("{scheme}://{}", e.authority))
}

/// What a push says, from a notice ([`super::notice`]): `{"title", "body", "agent_id",
/// "kind", "options"}` (CONTRACT.md, "Away from the desk"), short enough for one record.
pub fn message(notice: &Value) -> Value {
    let text = |key: &str, most: usize| -> String {
        notice
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(most)
            .collect()
    };
    let options: Vec<String> = notice
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .take(OPTIONS)
        .map(|o| o.chars().take(OPTION_CHARS).collect())
        .collect();
    let (mut title, mut body, mut options) =
        (text("title", 120), text("body", BODY_CHARS), options);
    // Characters are not bytes (CJK, emoji, escapes): cut further until the JSON fits one
    // record, the body first, then the options, then the title.
    loop {
        let m = json!({
            "title": title,
            "body": body,
            "agent_id": notice.get("agent_id"),
            "kind": notice.get("event"),
            "options": options,
        });
        if m.to_string().len() <= MAX_MESSAGE_BYTES {
            return m;
        }
        let half = |t: &str| t.chars().take(t.chars().count() / 2).collect::<String>();
        if !body.is_empty() {
            body = half(&body);
        } else if !options.is_empty() {
            options.pop();
        } else {
            title = half(&title);
        }
    }
}

/// How soon the push service should wake the device (RFC 8030, section 5.3): at once for a
/// wait, when convenient for a finish.
pub fn urgency(message: &Value) -> &'static str {
    if message["kind"] == "needs_you" {
        "high"
    } else {
        "normal"
    }
}

/// What the log adds to a push service's refusal, when what to do about it is known:
/// Apple's push service refuses a token whose contact (`--push-contact`) is at localhost
/// (403, `BadJwtToken`).
pub fn refusal_hint(status: u16, endpoint: &str, contact: &str) -> &'static str {
    let apple = audience(endpoint).is_some_and(|a| a.ends_with(".push.apple.com"));
    if status == 403 && apple && contact.ends_with("@localhost") {
        ". Apple's push service takes no contact at localhost: give serve --push-contact mailto:you@your.domain"
    } else {
        ""
    }
}

/// What a push service's status says of a subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Taken (201, or any 2xx).
    Taken,
    /// The subscription is gone for good (404, 410): forget it.
    Gone,
    /// Refused or failed this time (429, 5xx, a bad request): kept, logged.
    Failed,
}

/// [`Delivery`] of an HTTP status.
pub fn delivery(status: u16) -> Delivery {
    match status {
        200..=299 => Delivery::Taken,
        404 | 410 => Delivery::Gone,
        _ => Delivery::Failed,
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `bytes` in base64url without padding (RFC 4648, section 5), as Web Push writes keys.
pub fn base64url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// The bytes of base64url text, with or without padding; `None` when it is not base64url.
pub fn from_base64url(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|a| *a == c)? as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sub(endpoint: &str) -> Value {
        let mut point = vec![4u8];
        point.extend([7u8; 64]);
        json!({"endpoint": endpoint, "keys": {"p256dh": base64url(&point), "auth": base64url(&[1u8; 16])}})
    }

    #[test]
    fn only_https_endpoints_and_loopback_ones_when_allowed() {
        assert!(subscription(&sub("https://fcm.googleapis.com/fcm/send/abc"), false).is_ok());
        let http = subscription(&sub("http://push.example/x"), true).unwrap_err();
        assert!(http.contains("https://"), "{http}");
        let loopback = subscription(&sub("http://127.0.0.1:9/p"), false).unwrap_err();
        assert!(loopback.contains("--allow-loopback-push"), "{loopback}");
        assert!(subscription(&sub("http://127.0.0.1:9/p"), true).is_ok());
        assert!(subscription(&sub("https://localhost/p"), false).is_err());
        // A user name that makes a URL look like another host's; no host; other schemes.
        for bad in [
            "https://fcm.googleapis.com@127.0.0.1/x",
            "https:///x",
            "file:///etc/passwd",
            "https://a b/",
            "javascript:alert(1)",
        ] {
            assert!(subscription(&sub(bad), true).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_of_the_wrong_size_are_refused_with_the_reason() {
        let mut body = sub("https://push.example/x");
        body["keys"]["p256dh"] = json!(base64url(&[4u8; 33]));
        assert!(subscription(&body, false).unwrap_err().contains("65 bytes"));
        let mut body = sub("https://push.example/x");
        body["keys"]["auth"] = json!("!!");
        assert!(subscription(&body, false)
            .unwrap_err()
            .contains("base64url"));
        assert!(
            subscription(&json!({"endpoint": "https://p.example/"}), false)
                .unwrap_err()
                .contains("keys.p256dh")
        );
    }

    #[test]
    fn the_message_is_the_contracts_and_short() {
        let notice = json!({"event": "needs_you", "agent_id": 7, "title": "shop needs you",
            "body": "x".repeat(5000), "options": ["Yes", "No"], "cwd": "/secret"});
        let m = message(&notice);
        assert_eq!(m["kind"], "needs_you");
        assert_eq!(m["agent_id"], 7);
        assert_eq!(m["options"], json!(["Yes", "No"]));
        assert_eq!(m["body"].as_str().unwrap().len(), BODY_CHARS);
        assert!(m.get("cwd").is_none());
        assert_eq!(urgency(&m), "high");
        assert!(m.to_string().len() < 3993);
    }

    #[test]
    fn wide_characters_are_cut_to_fit_one_record() {
        let options = vec!["選択".repeat(40); 6];
        let notice = json!({"event": "needs_you", "agent_id": 7, "title": "仕事".repeat(100),
            "body": "😀\u{1}".repeat(2000), "options": options});
        let m = message(&notice);
        assert!(
            m.to_string().len() <= MAX_MESSAGE_BYTES,
            "{}",
            m.to_string().len()
        );
        assert_eq!(m["kind"], "needs_you");
        assert!(!m["title"].as_str().unwrap().is_empty());
    }

    #[test]
    fn an_endpoint_is_read_once_whole() {
        let e = endpoint("https://Push.Example:8443/a/b?x=1#frag").unwrap();
        assert_eq!(
            e,
            Endpoint {
                secure: true,
                host: "push.example".into(),
                port: 8443,
                authority: "Push.Example:8443".into(),
                path: "/a/b?x=1".into(),
            }
        );
        let v6 = endpoint("http://[::1]:9/p").unwrap();
        assert_eq!(
            (v6.host.as_str(), v6.port, v6.path.as_str()),
            ("::1", 9, "/p")
        );
        assert_eq!(endpoint("https://p.example").unwrap().path, "/");
        assert_eq!(endpoint("https://p.example?x").unwrap().path, "/?x");
        assert!(endpoint("https://p.example:port/").is_err());
        assert!(endpoint("https://[::1/").is_err());
        assert!(subscription(&sub("http://[::1]:9/p"), false).is_err());
        assert!(subscription(&sub("http://[::1]:9/p"), true).is_ok());
    }

    #[test]
    fn audiences_and_deliveries() {
        assert_eq!(
            audience("https://fcm.googleapis.com/fcm/send/abc").as_deref(),
            Some("https://fcm.googleapis.com")
        );
        assert_eq!(
            audience("http://127.0.0.1:8080/p?x").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(delivery(201), Delivery::Taken);
        assert_eq!(delivery(410), Delivery::Gone);
        assert_eq!(delivery(404), Delivery::Gone);
        assert_eq!(delivery(429), Delivery::Failed);
        let apple = "https://web.push.apple.com/QGx";
        assert!(refusal_hint(403, apple, "mailto:headspace@localhost").contains("--push-contact"));
        assert_eq!(refusal_hint(403, apple, "mailto:me@example.org"), "");
        assert_eq!(
            refusal_hint(403, "https://fcm.googleapis.com/x", "mailto:h@localhost"),
            ""
        );
    }

    #[test]
    fn base64url_of_the_rfc_examples() {
        // RFC 4648, section 10, in the URL-safe alphabet without padding.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64url(plain.as_bytes()), coded);
            assert_eq!(from_base64url(coded).unwrap(), plain.as_bytes());
        }
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(from_base64url("Zg==").unwrap(), b"f");
        assert!(from_base64url("Z").is_none());
        assert!(from_base64url("a+b/").is_none());
    }

    proptest! {
        #[test]
        fn base64url_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            prop_assert_eq!(from_base64url(&base64url(&bytes)).unwrap(), bytes);
        }
    }
}
