//! How the simulated clients talk to the simulated servers over turmoil's network: the
//! server's address, the token every client sends, a POST with its answer, and a pause.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The server's address on turmoil's network.
pub const SERVER: (&str, u16) = ("server", 5055);

/// The token every simulated server requires and every simulated client sends (as Claude
/// Code's hooks and the dashboard do, from the token file).
pub const TOKEN: &str = "simtoken";

/// Posts `body` to `path` on the server; the status, or `None` when it could not be reached
/// within 5 s (like the hook script's curl timeout).
pub async fn post(path: &str, body: &[u8]) -> Option<u16> {
    post_to(SERVER.0, path, body).await
}

/// Posts `body` to `path` on turmoil host `host` (a server or an edge), as [`post`].
pub async fn post_to(host: &str, path: &str, body: &[u8]) -> Option<u16> {
    post_answered(host, path, body)
        .await
        .map(|(status, _)| status)
}

/// Posts `body` to `path` on turmoil host `host`: the answer's status and body, or `None`
/// when there was no answer within 5 s.
pub async fn post_answered(host: &str, path: &str, body: &[u8]) -> Option<(u16, String)> {
    let exchange = async {
        let mut s = turmoil::net::TcpStream::connect((host, SERVER.1))
            .await
            .ok()?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.ok()?;
        s.write_all(body).await.ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        let text = String::from_utf8_lossy(&buf);
        let status = text.split_whitespace().nth(1)?.parse().ok()?;
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        Some((status, body.to_string()))
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}

/// A pane id as a path segment (`%3` is `%253`).
pub fn pane_segment(pane: &str) -> String {
    pane.replace('%', "%25")
}

/// Sleeps `ms` of simulated time.
pub async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
