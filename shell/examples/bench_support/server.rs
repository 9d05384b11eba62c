//! The release server as a real process for the benches: `headspace serve` on a free port
//! (the `headspace` binary next to the examples' folder), stopped when dropped, even when
//! the bench panics.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The token every bench server requires and every bench client sends.
pub const TOKEN: &str = "headspacebenchtoken";

/// One running `headspace serve`.
pub struct Server {
    child: Child,
    /// Its name in the bench's messages (`edge-3`, `hub-1`).
    pub name: String,
    /// Where it listens (`127.0.0.1:PORT`).
    pub addr: String,
}

/// The release binary the examples were built with (`target/release/headspace`).
pub fn headspace_exe() -> PathBuf {
    std::env::current_exe()
        .unwrap()
        .parent()
        .and_then(|examples| examples.parent())
        .unwrap()
        .join("headspace")
}

impl Server {
    /// Starts `headspace serve --addr 127.0.0.1:0` with `args`, `RUST_LOG=warn`, and waits
    /// until it listens. Its ERROR and WARN lines are copied to the bench's stderr, named.
    pub fn start<S: AsRef<OsStr>>(name: &str, args: &[S]) -> Server {
        let mut child = Command::new(headspace_exe())
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "warn")
            .env("HEADSPACE_TOKEN", TOKEN)
            .env_remove("HEADSPACE_TOKEN_FILE")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("release server built (cargo build --release -p headspace --bins)");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let (tx, rx) = std::sync::mpsc::channel();
        let label = name.to_string();
        std::thread::spawn(move || {
            let mut told = 0;
            for line in lines.by_ref().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(rest.split('/').next().unwrap_or("").to_string());
                } else if (line.contains("ERROR") || line.contains("WARN")) && told < 20 {
                    told += 1;
                    eprintln!("{label}: {line}");
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{name} did not start listening within 60 s");
            }
        };
        Server {
            child,
            name: name.to_string(),
            addr,
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it with SIGTERM, as a user does, and waits for it.
    pub fn stop(mut self) {
        // SAFETY: kill has no memory preconditions; the pid is our own child's.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    /// A server the bench did not stop (a panic) is killed, never left behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
