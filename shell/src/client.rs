//! A minimal HTTP/1.1 client for the CLI commands that talk to a running server.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Sends one request (`Connection: close`) and returns the status and body.
pub fn request(
    base: &str,
    method: &str,
    path: &str,
    body: &[u8],
    token: Option<&str>,
    timeout: Duration,
) -> Result<(u16, String), String> {
    let mut s = connect(base, timeout)?;
    let head = request_head(base, method, path, body, token, &[], false);
    exchange(&mut s, base, method, path, &head, body)
}

/// One HTTP/1.1 connection kept open for request after request, sent one at a time: the
/// shape in which Claude Code posts its HTTP hooks (and the benches measure it). A
/// connection the server closed while idle is opened again for the next request.
pub struct KeptAlive {
    base: String,
    token: Option<String>,
    timeout: Duration,
    stream: Option<TcpStream>,
}

impl KeptAlive {
    /// A connection to `base`, opened at the first request.
    pub fn new(base: &str, token: Option<&str>, timeout: Duration) -> KeptAlive {
        KeptAlive {
            base: base.to_string(),
            token: token.map(str::to_string),
            timeout,
            stream: None,
        }
    }

    /// POSTs `body` to `path` with `headers` besides the usual ones; returns the status and
    /// body. A request the server never read (its kept connection had closed) is sent once
    /// more on a new connection.
    pub fn post(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(u16, String), String> {
        let head = request_head(
            &self.base,
            "POST",
            path,
            body,
            self.token.as_deref(),
            headers,
            true,
        );
        for fresh in [false, true] {
            let reused = !fresh && self.stream.is_some();
            if fresh || self.stream.is_none() {
                self.stream = Some(connect(&self.base, self.timeout)?);
            }
            let s = self.stream.as_mut().expect("connected above");
            match exchange(s, &self.base, "POST", path, &head, body) {
                Ok(answer) => return Ok(answer),
                // Only a reused connection can have been closed by the server while idle.
                Err(_) if reused => self.stream = None,
                Err(e) => {
                    self.stream = None;
                    return Err(e);
                }
            }
        }
        Err(format!(
            "the server at {} closed every connection",
            self.base
        ))
    }
}

fn connect(base: &str, timeout: Duration) -> Result<TcpStream, String> {
    let hostport = host_port(base);
    let addr = hostport
        .to_socket_addrs()
        .map_err(|e| format!("bad server address {base}: {e}"))?
        .next()
        .ok_or_else(|| format!("bad server address {base}"))?;
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|e| {
        format!("cannot reach the headspace server at {base}: {e} (is `headspace serve` running?)")
    })?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let _ = s.set_nodelay(true);
    Ok(s)
}

fn host_port(base: &str) -> &str {
    base.trim_start_matches("http://").trim_end_matches('/')
}

fn request_head(
    base: &str,
    method: &str,
    path: &str,
    body: &[u8],
    token: Option<&str>,
    headers: &[(&str, &str)],
    keep_alive: bool,
) -> String {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let connection = if keep_alive { "keep-alive" } else { "close" };
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{auth}{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n",
        host_port(base),
        body.len()
    )
}

/// Sends one request on `s` and reads its answer.
fn exchange(
    s: &mut TcpStream,
    base: &str,
    method: &str,
    path: &str,
    head: &str,
    body: &[u8],
) -> Result<(u16, String), String> {
    // One write: a body sent apart from its head waits, on a kept connection, for the
    // server's delayed acknowledgement of the head (Nagle's algorithm), 40 ms a request.
    let mut request = Vec::with_capacity(head.len() + body.len());
    request.extend_from_slice(head.as_bytes());
    request.extend_from_slice(body);
    s.write_all(&request).map_err(|e| e.to_string())?;
    let text = read_response(s).map_err(|e| format!("no answer from {base}: {e}"))?;
    if text.is_empty() {
        return Err(format!(
            "the server at {base} closed the connection without answering {method} {path}"
        ));
    }
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("malformed answer")?;
    let (headers, rest) = text.split_once("\r\n\r\n").ok_or("malformed answer")?;
    let body = if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Ok((status, body))
}

/// Reads one response: up to its Content-Length, its last chunk, or the end of the stream.
fn read_response(s: &mut TcpStream) -> std::io::Result<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(end) = complete(&buf) {
            buf.truncate(end);
            break;
        }
        // A socket with a read timeout is never restarted after a signal (signal(7)), even
        // under SA_RESTART: a child exiting in a process that handles SIGCHLD (tokio's
        // process support does) would otherwise fail the request with EINTR.
        let n = match s.read(&mut chunk) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            read => read?,
        };
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The length of a complete response in `buf`, if it is complete.
fn complete(buf: &[u8]) -> Option<usize> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    if let Some(len) = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return (buf.len() >= head_end + len).then_some(head_end + len);
    }
    if head.contains("transfer-encoding: chunked") {
        return buf[head_end..]
            .windows(5)
            .position(|w| w == b"0\r\n\r\n")
            .map(|p| head_end + p + 5);
    }
    None
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// Percent-encodes a path segment (pane ids such as `%3`).
pub fn encode_segment(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Requests go one after another on one kept connection; once the server closes it
    /// while idle, the next request opens a new one and is answered, not lost.
    #[test]
    fn a_kept_connection_carries_request_after_request_and_comes_back_when_closed() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            let mut requests_per_connection = Vec::new();
            for keep in [2, 1] {
                let (mut conn, _) = listener.accept().unwrap();
                let mut served = 0;
                let mut buf = Vec::new();
                while served < keep {
                    let mut chunk = [0u8; 1024];
                    let n = conn.read(&mut chunk).unwrap();
                    assert!(n > 0, "the client closed a kept connection");
                    buf.extend_from_slice(&chunk[..n]);
                    // Each request here is a head and a two-byte body.
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        if buf.len() < end + 6 {
                            break;
                        }
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        assert!(head.contains("Connection: keep-alive"), "{head}");
                        assert!(head.contains("X-Pane: %3"), "{head}");
                        buf.drain(..end + 6);
                        served += 1;
                        let answer = format!("n{served}");
                        conn.write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{answer}",
                                answer.len()
                            )
                            .as_bytes(),
                        )
                        .unwrap();
                    }
                }
                requests_per_connection.push(served);
                // Dropping `conn` closes it while the client holds it idle.
            }
            requests_per_connection
        });
        let mut kept = KeptAlive::new(&addr, None, Duration::from_secs(5));
        let mut answers = Vec::new();
        for _ in 0..3 {
            answers.push(
                kept.post("/hook/Stop", &[("X-Pane", "%3")], b"{}")
                    .unwrap()
                    .1,
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(answers, ["n1", "n2", "n1"]);
        assert_eq!(server.join().unwrap(), [2, 1]);
    }

    extern "C" fn ignore(_: libc::c_int) {}

    /// A signal caught while the request waits for its answer (as SIGCHLD is, in a process
    /// with tokio's child handling) does not fail the request: the answer is still read.
    #[test]
    fn a_signal_while_waiting_for_the_answer_does_not_fail_the_request() {
        // SAFETY: installs a do-nothing handler for SIGUSR2, which nothing else here uses.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = ignore as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            assert_eq!(
                libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()),
                0
            );
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut head = [0u8; 1024];
            let _ = conn.read(&mut head).unwrap();
            std::thread::sleep(Duration::from_millis(600));
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
        });
        let (tid_in, tid_out) = std::sync::mpsc::channel();
        let client = std::thread::spawn(move || {
            // SAFETY: pthread_self has no preconditions.
            tid_in.send(unsafe { libc::pthread_self() }).unwrap();
            request(&addr, "GET", "/", b"", None, Duration::from_secs(10))
        });
        let tid = tid_out.recv().unwrap();
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: the client thread is alive until it has its answer (600 ms from now).
            unsafe { libc::pthread_kill(tid, libc::SIGUSR2) };
        }
        assert_eq!(client.join().unwrap(), Ok((200, "ok".to_string())));
        server.join().unwrap();
    }
}
