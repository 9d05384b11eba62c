//! HTTPS for browsers on the network (`serve --tls-addr --tls-cert --tls-key`), on the real
//! binary with a certificate `openssl` makes: the page, the API and the login work over TLS,
//! the login cookie set there is `Secure` (and the plain loopback one is not), the token is
//! still required, a plain-HTTP client on the TLS port gets nothing and leaves the server
//! serving, and a server asked to listen off loopback over TLS without a chosen token, or
//! given half the TLS flags, refuses to start and says why.

mod common;
use common::browser::free_port;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A self-signed certificate for 127.0.0.1 and its key, in `dir`.
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    self_signed(
        dir,
        "headspace-test",
        &["-addext", "subjectAltName=IP:127.0.0.1"],
    )
}

/// `curl` over HTTPS trusting `cert`: the status line, headers and body.
fn curl(cert: &Path, url: &str, headers: &[&str]) -> String {
    let mut c = Command::new("curl");
    c.args(["-s", "-i", "--max-time", "20", "--cacert"])
        .arg(cert)
        .arg(url);
    for h in headers {
        c.args(["-H", h]);
    }
    String::from_utf8_lossy(&c.output().unwrap().stdout).to_string()
}

#[test]
fn the_page_api_and_login_work_over_tls_with_a_secure_cookie() {
    let Some(db) = fresh_db("tls") else {
        return;
    };
    let claude = temp_dir("tls");
    let (cert, key) = certificate(&claude);
    let port = free_port();
    let tls_addr = format!("127.0.0.1:{port}");
    let server = Server::start(
        &db,
        &claude,
        &[
            "--tls-addr",
            &tls_addr,
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let base = format!("https://{tls_addr}");
    // Said once the HTTPS listener serves (after the plain one's "listening" line).
    let said = wait_for(std::time::Duration::from_secs(10), || {
        server
            .log()
            .contains(&format!("https://{tls_addr}/"))
            .then_some(())
    });
    assert!(said.is_some(), "{}", server.log());
    let health = curl(&cert, &format!("{base}/healthz"), &[]);
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let page = curl(&cert, &format!("{base}/"), &[]);
    assert!(
        page.starts_with("HTTP/1.1 200") && page.contains("<title>Headspace"),
        "{page}"
    );
    // The token is still needed, and taken.
    let anonymous = curl(&cert, &format!("{base}/api/agents"), &[]);
    assert!(anonymous.starts_with("HTTP/1.1 401"), "{anonymous}");
    let agents = curl(&cert, &format!("{base}/api/agents"), &[&bearer()]);
    assert!(agents.starts_with("HTTP/1.1 200"), "{agents}");
    // The login link over HTTPS sets a Secure cookie; the plain loopback one does not.
    let login = curl(&cert, &format!("{base}/login?token={TEST_TOKEN}"), &[]);
    let cookie = login
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("a cookie: {login}"));
    assert!(cookie.contains("Secure"), "{cookie}");
    let (_, plain) = raw(
        &server.addr,
        "GET",
        &format!("/login?token={TEST_TOKEN}"),
        &[&format!("Host: {}", server.addr)],
        "",
    );
    let plain_cookie = plain
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("a cookie over plain HTTP: {plain}"));
    assert!(!plain_cookie.contains("Secure"), "{plain_cookie}");
    // Plain HTTP on the TLS port gets no answer, and the server goes on.
    let (status, _) = raw(
        &tls_addr,
        "GET",
        "/healthz",
        &[&format!("Host: {tls_addr}")],
        "",
    );
    assert_eq!(status, 0, "no HTTP answer on the TLS port");
    let again = curl(&cert, &format!("{base}/healthz"), &[]);
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    server.stop();
}

#[test]
fn half_the_tls_flags_or_tls_off_loopback_without_a_chosen_token_refuse_to_start() {
    let dir = temp_dir("tls_refusals");
    let (cert, key) = certificate(&dir);
    let home = dir.join("home");
    let serve = |extra: &[&str]| {
        let out = headspace()
            .env_remove("HEADSPACE_TOKEN_FILE")
            .args(["serve", "--addr", "127.0.0.1:0", "--home"])
            .arg(&home)
            .args(extra)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{extra:?} started");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let half = serve(&["--tls-cert", cert.to_str().unwrap()]);
    assert!(half.contains("all three"), "{half}");
    let open = serve(&[
        "--tls-addr",
        "0.0.0.0:0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert!(open.contains("needs a token you chose"), "{open}");
    let wrong = serve(&[
        "--tls-addr",
        "127.0.0.1:0",
        "--tls-cert",
        key.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert!(wrong.contains("--tls-cert"), "{wrong}");
}
