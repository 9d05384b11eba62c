//! Pushes to devices, end to end on the real binary: a push receiver of the test's own on
//! 127.0.0.1 (`--allow-loopback-push`) plays a browser's push service and device. It checks
//! every push's VAPID token against `GET /api/push/key` (RFC 8292) and decrypts its payload
//! with the device's own keys (RFC 8291, the decryption checked on the RFC's example in the
//! unit tests of `push::encrypt`). An agent's question arrives as `needs_you` with its
//! options within 5 s, its finished task as `finished`; nothing arrives after unsubscribing;
//! a 410 from the push service removes the subscription. The routes refuse what a hostile
//! page or a careless client sends.

mod common;
use common::*;
use headspace::server::push::encrypt;
use headspace_core::view::push::{base64url, from_base64url};
use headspace_core::Timestamp;
use headspace_testkit::synth::SessionWriter;
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One push as the receiver got it.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A push service on 127.0.0.1: records every POST and answers with `status`.
struct Receiver {
    addr: String,
    got: Arc<Mutex<Vec<Received>>>,
    status: Arc<Mutex<u16>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let got = Arc::new(Mutex::new(Vec::new()));
        let status = Arc::new(Mutex::new(201u16));
        let (sink, answer) = (got.clone(), status.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut headers = Vec::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.trim_end().split_once(':') {
                        headers.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
                let length: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                sink.lock().unwrap().push(Received {
                    path,
                    headers,
                    body,
                });
                let code = *answer.lock().unwrap();
                let mut stream = reader.into_inner();
                let _ = stream.write_all(
                    format!("HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                );
            }
        });
        Receiver { addr, got, status }
    }

    /// The pushes posted to `path` so far.
    fn to(&self, path: &str) -> Vec<Received> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }
}

/// A device: its own P-256 key pair and authentication secret, as a browser makes them.
struct Device {
    secret: p256::SecretKey,
    public: Vec<u8>,
    auth: Vec<u8>,
}

impl Device {
    fn new() -> Device {
        let mut bytes = [0u8; 48];
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut bytes)
            .unwrap();
        let secret = p256::SecretKey::from_slice(&bytes[..32]).expect("a scalar in range");
        let public = p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(
            &secret.public_key(),
            false,
        )
        .as_bytes()
        .to_vec();
        Device {
            secret,
            public,
            auth: bytes[32..].to_vec(),
        }
    }

    /// The subscription a browser's page would send for this device at `endpoint`.
    fn subscription(&self, endpoint: &str) -> Value {
        json!({"endpoint": endpoint, "expirationTime": null,
               "keys": {"p256dh": base64url(&self.public), "auth": base64url(&self.auth)}})
    }

    /// The push's JSON, decrypted with this device's keys.
    fn open(&self, body: &[u8]) -> Value {
        let (_, as_public) = encrypt::header(body).unwrap();
        let sender = p256::PublicKey::from_sec1_bytes(as_public).expect("the sender's key");
        let shared =
            p256::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), sender.as_affine());
        let plain = encrypt::open(body, shared.raw_secret_bytes(), &self.public, &self.auth)
            .expect("the push decrypts with the device's keys");
        serde_json::from_slice(&plain).unwrap()
    }
}

/// Checks the push's VAPID token (RFC 8292) against the server's public key: signed by it,
/// for the receiver's origin, not expired.
fn check_vapid(push: &Received, public_key: &str, origin: &str) {
    let auth = push
        .header("authorization")
        .expect("an Authorization header");
    let rest = auth.strip_prefix("vapid t=").expect("the vapid scheme");
    let (token, k) = rest.split_once(", k=").expect("t= and k=");
    assert_eq!(k, public_key, "k is the key of /api/push/key");
    let (signed, signature) = token.rsplit_once('.').unwrap();
    UnparsedPublicKey::new(
        &ECDSA_P256_SHA256_FIXED,
        from_base64url(public_key).unwrap(),
    )
    .verify(signed.as_bytes(), &from_base64url(signature).unwrap())
    .expect("the token's signature verifies with /api/push/key");
    let claims: Value =
        serde_json::from_slice(&from_base64url(signed.split('.').nth(1).unwrap()).unwrap())
            .unwrap();
    assert_eq!(claims["aud"], origin);
    let now = now_ms() / 1000;
    let exp = claims["exp"].as_i64().unwrap();
    assert!(exp > now && exp <= now + 24 * 3600, "exp {exp}, now {now}");
    assert!(claims["sub"].as_str().unwrap().starts_with("mailto:"));
    assert_eq!(push.header("content-encoding"), Some("aes128gcm"));
    assert!(push.header("ttl").is_some_and(|t| t.parse::<u32>().is_ok()));
}

#[test]
fn a_question_and_a_finish_reach_the_device_and_nothing_after_unsubscribing() {
    let Some(db) = fresh_db("push") else {
        return;
    };
    let claude = temp_dir("push");
    let home = private_temp_dir("push-home");
    let server = Server::start(
        &db,
        &claude,
        &["--home", home.to_str().unwrap(), "--allow-loopback-push"],
    );
    let receiver = Receiver::start();
    let origin = format!("http://{}", receiver.addr);
    let key = server.json("/api/push/key")["public_key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(from_base64url(&key).unwrap().len(), 65);

    // Subscribing: 201 and an id; the same endpoint again keeps its id (200).
    let phone = Device::new();
    let endpoint = format!("{origin}/push/phone");
    let (status, body) = server.post(
        "/api/push/subscriptions",
        phone.subscription(&endpoint).to_string().as_bytes(),
    );
    assert_eq!(status, 201, "{body}");
    let id = serde_json::from_str::<Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, again) = server.post(
        "/api/push/subscriptions",
        phone.subscription(&endpoint).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{again}");
    assert!(again.contains(&id));
    let file = home.join("push-subscriptions.json");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(
        mode & 0o777,
        0o600,
        "the subscriptions are the user's alone"
    );

    // A question: `needs_you`, with its options, within 5 s.
    let s = SessionWriter::new(31, Timestamp(now_ms()));
    let post = |s: &SessionWriter, event: &str, extra: Value| {
        server.post_hook(s, &claude, "%31", event, extra)
    };
    let asked = ask_by_hooks(
        &server,
        &claude,
        &s,
        "%31",
        "draw the diagram",
        (
            "Where should the diagram go?",
            &["docs/diagrams/", "docs/design/"],
        ),
    );
    let first = wait_for(Duration::from_secs(5), || {
        receiver.to("/push/phone").into_iter().next()
    })
    .unwrap_or_else(|| panic!("a push within 5 s: {}", server.log()));
    check_vapid(&first, &key, &origin);
    assert_eq!(first.header("urgency"), Some("high"));
    let told = phone.open(&first.body);
    assert_eq!(told["kind"], "needs_you", "{told}");
    assert_eq!(told["options"], json!(["docs/diagrams/", "docs/design/"]));
    assert_eq!(told["body"], "Where should the diagram go?");
    let agent = server.json(&format!("/api/agents/{}", s.session_id))["id"].clone();
    assert_eq!(told["agent_id"], agent);
    assert!(told["title"].as_str().unwrap().ends_with("needs you"));
    // A notification's button names the label it showed: a question that offers another
    // there now is not answered (the button of an old push never picks a later question's).
    let (status, body) = server.post(
        &format!("/api/agents/{}/answer", s.session_id),
        json!({"option": 1, "expect": "docs/design/"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("changed since"), "{body}");
    assert_eq!(
        server.json(&format!("/api/agents/{}", s.session_id))["activity"],
        "waiting",
        "nothing was answered"
    );

    // Its task finishes: `finished`.
    post(
        &s,
        "PostToolUse",
        json!({"tool_name": "AskUserQuestion", "tool_use_id": asked}),
    );
    post(
        &s,
        "Stop",
        json!({"last_assistant_message": "Drawn in docs/diagrams/.", "stop_hook_active": false}),
    );
    let finished = wait_for(Duration::from_secs(5), || {
        receiver
            .to("/push/phone")
            .iter()
            .map(|p| phone.open(&p.body))
            .find(|m| m["kind"] == "finished")
    })
    .unwrap_or_else(|| panic!("the finish is pushed: {}", server.log()));
    assert!(finished["title"].as_str().unwrap().ends_with(" is done"));
    assert_eq!(receiver.to("/push/phone").len(), 2, "two pushes, no more");

    // Unsubscribed: nothing more arrives, and the id is gone.
    let (status, body) = server.post(&format!("/api/push/subscriptions/{id}/delete"), b"{}");
    assert_eq!(status, 200, "{body}");
    let (status, _) = server.post(&format!("/api/push/subscriptions/{id}/delete"), b"{}");
    assert_eq!(status, 404);
    let t = SessionWriter::new(32, Timestamp(now_ms()));
    let asked = ask_by_hooks(
        &server,
        &claude,
        &t,
        "%32",
        "tidy up",
        ("Delete the old logs?", &["Yes", "No"]),
    );
    wait_for(Duration::from_secs(10), || {
        server
            .try_json(&format!("/api/agents/{}", t.session_id))
            .filter(|a| a["activity"] == "waiting")
    })
    .expect("the second agent waits");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        receiver.to("/push/phone").len(),
        2,
        "nothing pushed after unsubscribing"
    );

    // A push service that answers 410: the subscription is removed.
    let tablet = Device::new();
    let (status, body) = server.post(
        "/api/push/subscriptions",
        tablet
            .subscription(&format!("{origin}/push/tablet"))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 201, "{body}");
    let tablet_id = serde_json::from_str::<Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    *receiver.status.lock().unwrap() = 410;
    server.post_hook(
        &t,
        &claude,
        "%32",
        "PostToolUse",
        json!({"tool_name": "AskUserQuestion", "tool_use_id": asked}),
    );
    server.post_hook(
        &t,
        &claude,
        "%32",
        "Stop",
        json!({"last_assistant_message": "Deleted.", "stop_hook_active": false}),
    );
    let gone = wait_for(Duration::from_secs(10), || {
        let kept = std::fs::read_to_string(&file).unwrap();
        (!receiver.to("/push/tablet").is_empty() && !kept.contains("/push/tablet")).then_some(())
    });
    assert!(
        gone.is_some(),
        "a 410 removes the subscription: {}",
        server.log()
    );
    assert_eq!(
        tablet.open(&receiver.to("/push/tablet")[0].body)["kind"],
        "finished"
    );
    let (status, _) = server.post(
        &format!("/api/push/subscriptions/{tablet_id}/delete"),
        b"{}",
    );
    assert_eq!(status, 404, "the removed subscription is unknown");
    server.stop();
}

#[test]
fn the_push_routes_refuse_what_they_must() {
    let Some(db) = fresh_db("push_refusals") else {
        return;
    };
    let claude = temp_dir("push_refusals");
    let home = private_temp_dir("push-refusals-home");
    // Without --allow-loopback-push.
    let server = Server::start(&db, &claude, &["--home", home.to_str().unwrap()]);
    let device = Device::new();
    let refused = |body: Value, why: &str| {
        let (status, answer) = server.post("/api/push/subscriptions", body.to_string().as_bytes());
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer.contains(why), "{body}: {answer}");
    };
    refused(device.subscription("http://push.example/x"), "https://");
    refused(
        device.subscription("http://127.0.0.1:9/x"),
        "--allow-loopback-push",
    );
    refused(
        device.subscription("https://push.example@127.0.0.1/x"),
        "user name",
    );
    refused(device.subscription("file:///etc/passwd"), "https://");
    let mut short = device.subscription("https://push.example/x");
    short["keys"]["auth"] = json!(base64url(&[1u8; 4]));
    refused(short, "16 bytes");
    let (status, answer) = server.post("/api/push/subscriptions", b"not json");
    assert_eq!(status, 400, "{answer}");
    // A web page or another account: no credential, a foreign origin, a form post.
    let sub = device.subscription("https://push.example/x").to_string();
    let (status, _) = anonymous(
        &server.addr,
        "POST",
        "/api/push/subscriptions",
        sub.as_bytes(),
    );
    assert_eq!(status, 401);
    let (status, _) = anonymous(&server.addr, "GET", "/api/push/key", b"");
    assert_eq!(status, 401);
    let host = format!("Host: {}", server.addr);
    let (status, _) = raw(
        &server.addr,
        "POST",
        "/api/push/subscriptions",
        &[
            &host,
            &bearer(),
            "Origin: https://evil.example",
            "Content-Type: application/json",
        ],
        &sub,
    );
    assert_eq!(status, 403);
    let (status, _) = raw(
        &server.addr,
        "POST",
        "/api/push/subscriptions",
        &[&host, &bearer(), "Content-Type: text/plain"],
        &sub,
    );
    assert!((400..500).contains(&status), "a form-style post: {status}");
    let (status, _) = raw(
        &server.addr,
        "GET",
        "/api/push/subscriptions/x/delete",
        &[&host, &bearer()],
        "",
    );
    assert!(
        (400..500).contains(&status),
        "GET never changes state: {status}"
    );
    // Nothing was kept.
    assert!(
        !home.join("push-subscriptions.json").exists(),
        "no subscription was written"
    );
    server.stop();
}
