//! The embedded database: a private PostgreSQL cluster under `$HEADSPACE_HOME/pg`, created on
//! first use, reached over a Unix socket in that folder (no TCP port), stopped on exit.
//!
//! As root, `initdb` and `postgres` refuse to run, so the cluster's processes run as the
//! `postgres` system user, which owns the data folder. Since that user cannot enter root's
//! home, the data then lives in `/var/lib/headspace/<home path>` and `$HEADSPACE_HOME/pg`
//! is a link to it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the embedded database could not be started.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// No PostgreSQL server binaries.
    #[error("PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and pg_config --bindir); install the Debian package `postgresql` or pass --database-url")]
    NoBinaries,
    /// Another headspace server uses this home.
    #[error("another headspace server (pid {0}) is using {1}; stop it or pass another --home")]
    Locked(u32, String),
    /// A step failed.
    #[error("{step} failed: {detail}")]
    Step {
        /// What was being done.
        step: &'static str,
        /// Its output.
        detail: String,
    },
}

/// A running embedded cluster; stopped by [`EmbeddedPg::stop`].
pub struct EmbeddedPg {
    bin: PathBuf,
    data: PathBuf,
    run_as: Option<&'static str>,
    lock: PathBuf,
    /// The connection string.
    pub url: String,
}

fn step(
    step: &'static str,
    out: std::io::Result<std::process::Output>,
) -> Result<String, EmbeddedError> {
    match out {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => Err(EmbeddedError::Step {
            step,
            detail: format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
            .trim()
            .to_string(),
        }),
        Err(e) => Err(EmbeddedError::Step {
            step,
            detail: e.to_string(),
        }),
    }
}

/// The newest PostgreSQL server binary folder on this machine.
fn find_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists())
        .collect();
    dirs.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(d) = dirs.pop() {
        return Some(d);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.join("initdb").exists().then_some(p)
}

fn is_root() -> bool {
    // SAFETY-free check: the effective uid via `id -u`, to avoid a libc dependency.
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl EmbeddedPg {
    /// Creates (first time) and starts the cluster under `home/pg`.
    pub fn start(home: &Path) -> Result<EmbeddedPg, EmbeddedError> {
        let bin = find_bin().ok_or(EmbeddedError::NoBinaries)?;
        std::fs::create_dir_all(home).map_err(|e| EmbeddedError::Step {
            step: "create home",
            detail: e.to_string(),
        })?;
        let lock = home.join("serve.pid");
        if let Ok(pid) =
            std::fs::read_to_string(&lock).map(|s| s.trim().parse::<u32>().unwrap_or(0))
        {
            if pid != 0
                && pid != std::process::id()
                && crate::fsutil::pid_alive(pid)
                && is_headspace(pid)
            {
                return Err(EmbeddedError::Locked(pid, home.display().to_string()));
            }
        }
        std::fs::write(&lock, std::process::id().to_string()).map_err(|e| EmbeddedError::Step {
            step: "write lock file",
            detail: e.to_string(),
        })?;
        let root = is_root();
        let dir = home.join("pg");
        if root && !dir.exists() {
            let real = PathBuf::from("/var/lib/headspace").join(
                home.display()
                    .to_string()
                    .trim_start_matches('/')
                    .replace('/', "_"),
            );
            std::fs::create_dir_all(&real).map_err(|e| EmbeddedError::Step {
                step: "create data folder",
                detail: e.to_string(),
            })?;
            std::os::unix::fs::symlink(&real, &dir).map_err(|e| EmbeddedError::Step {
                step: "link data folder",
                detail: e.to_string(),
            })?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| EmbeddedError::Step {
            step: "create pg folder",
            detail: e.to_string(),
        })?;
        // Work on the real folder: the postgres user may not be able to pass through `home`.
        let shown = dir.clone();
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        let run_as = root.then_some("postgres");
        if root {
            step(
                "chown the pg folder to postgres",
                Command::new("chown")
                    .arg("-R")
                    .arg("postgres:")
                    .arg(dir.join("."))
                    .output(),
            )?;
            step(
                "open the data folder path",
                Command::new("chmod")
                    .arg("711")
                    .arg("/var/lib/headspace")
                    .output(),
            )
            .ok();
        }
        let data = dir.join("data");
        let pg = EmbeddedPg {
            url: format!(
                "host={} user=headspace dbname=postgres",
                std::fs::canonicalize(&dir).unwrap_or(dir.clone()).display()
            ),
            bin,
            data,
            run_as,
            lock,
        };
        if !pg.data.join("PG_VERSION").exists() {
            eprintln!(
                "headspace: creating the embedded database in {}",
                shown.display()
            );
            step(
                "initdb",
                pg.command("initdb")
                    .arg("-D")
                    .arg(&pg.data)
                    .args(["-U", "headspace", "--auth=trust", "-E", "UTF8"])
                    .output(),
            )?;
        }
        let running = pg
            .command("pg_ctl")
            .arg("-D")
            .arg(&pg.data)
            .arg("status")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if running {
            eprintln!("headspace: reusing the embedded database that is already running");
        } else {
            let sock = &dir;
            step(
                "start the embedded database",
                pg.command("pg_ctl")
                    .arg("-D")
                    .arg(&pg.data)
                    .arg("-l")
                    .arg(pg.data.join("server.log"))
                    .args(["-w", "-o"])
                    .arg(format!(
                        "-c listen_addresses='' -k {} -c max_connections=100",
                        sock.display()
                    ))
                    .arg("start")
                    .output(),
            )?;
        }
        Ok(pg)
    }

    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        match self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        }
    }

    /// Stops the cluster (fast shutdown) and releases the home.
    pub fn stop(&self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "fast", "-w", "stop"])
            .output();
        let _ = std::fs::remove_file(&self.lock);
    }
}

fn is_headspace(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .map(|c| c.contains("headspace"))
        .unwrap_or(false)
}
