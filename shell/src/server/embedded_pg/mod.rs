//! The embedded database: a private PostgreSQL cluster under `$HEADSPACE_HOME/pg`, created on
//! first use, reached over a Unix socket in `pg/sock` (no TCP port), stopped on exit.
//!
//! As root, `initdb` and `postgres` refuse to run, so the cluster's processes run as a system
//! account of its own, `headspace-db` (created on first use), which owns the data folder. Not
//! the shared `postgres` account: whoever can run code as that one (through the system's own
//! PostgreSQL, say) would own the cluster, could let itself in, and would reach root's panes.
//! Since that account cannot enter root's home, the data lives in
//! `/var/lib/headspace/<home path>` and `$HEADSPACE_HOME/pg` is a link to it. Who may connect
//! is then decided by a `pg_hba.conf` that root owns, beside the data folder and named on the
//! server's command line (`-c hba_file=…`, which no configuration file can override): the
//! cluster's own account cannot change it either.
//!
//! Only the account that runs Headspace may use the cluster: any account that gets in is its
//! superuser, reads every turn and runs programs with `COPY … TO PROGRAM`. So the role
//! `headspace` has a password (SCRAM), a random secret kept in `$HEADSPACE_HOME/pg-secret`
//! (mode 0600), and `pg_hba.conf` accepts nothing else; the socket's folder is mode 0700 and
//! owned by the cluster's user. A cluster made by an older version (`initdb --auth=trust`,
//! socket in `pg/` itself) is secured on its next start.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod lockdown;
use lockdown::{
    conn_value, read_secret, secret_or_new, set_mode, trusts, with_safe_settings,
    write_for_cluster, HBA,
};

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
    /// The cluster requires a password, and its secret file is missing, unreadable or wrong.
    /// The message names the file and says how to restore or replace it.
    #[error("{0}")]
    Secret(String),
}

/// A running embedded cluster; stopped by [`EmbeddedPg::stop`].
pub struct EmbeddedPg {
    bin: PathBuf,
    /// The real pg folder (not the link under the home).
    dir: PathBuf,
    data: PathBuf,
    /// The socket's folder: mode 0700, owned by the cluster's user.
    sock: PathBuf,
    run_as: Option<&'static str>,
    /// As root: the root-owned `pg_hba.conf` outside the data folder.
    root_hba: Option<PathBuf>,
    lock: PathBuf,
    /// The connection string. It holds the password: never print it.
    pub url: String,
}

/// The system account the cluster runs under when Headspace runs as root.
pub const DB_ACCOUNT: &str = "headspace-db";

/// The port in the socket's name (`.s.PGSQL.5432`), given explicitly so that a `PGPORT` in
/// the environment moves neither the server nor its clients.
const PORT: &str = "5432";

fn step(step: &'static str, out: std::io::Result<Output>) -> Result<String, EmbeddedError> {
    match out {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => Err(EmbeddedError::Step {
            step,
            detail: output_text(&o),
        }),
        Err(e) => Err(EmbeddedError::Step {
            step,
            detail: e.to_string(),
        }),
    }
}

/// A command's stdout and stderr, trimmed.
fn output_text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
    .trim()
    .to_string()
}

fn io_step(step: &'static str) -> impl FnOnce(std::io::Error) -> EmbeddedError {
    move |e| EmbeddedError::Step {
        step,
        detail: e.to_string(),
    }
}

/// The newest PostgreSQL server binary folder on this machine.
pub fn find_bin() -> Option<PathBuf> {
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
    crate::private_files::own_uid() == 0
}

/// Takes `home` for this process (`home/serve.pid`), unless another headspace server has it.
fn lock_home(home: &Path) -> Result<PathBuf, EmbeddedError> {
    crate::private_files::private_dir(home).map_err(|detail| EmbeddedError::Step {
        step: "use the home folder",
        detail,
    })?;
    let lock = home.join("serve.pid");
    if let Ok(pid) = std::fs::read_to_string(&lock).map(|s| s.trim().parse::<u32>().unwrap_or(0)) {
        if pid != 0
            && pid != std::process::id()
            && crate::fsutil::pid_alive(pid)
            && is_headspace(pid)
        {
            return Err(EmbeddedError::Locked(pid, home.display().to_string()));
        }
    }
    // Never through a link: the lock is rewritten by every start.
    let _ = std::fs::remove_file(&lock);
    crate::private_files::create_private(&lock, std::process::id().to_string().as_bytes())
        .map_err(io_step("write lock file"))?;
    Ok(lock)
}

/// The pg folder as the user knows it (`home/pg`) and the real one, with its socket folder
/// `sock`; both private to the cluster's user (postgres as root), who owns them.
fn pg_folder(home: &Path, root: bool) -> Result<(PathBuf, PathBuf), EmbeddedError> {
    let dir = home.join("pg");
    if root && !dir.exists() {
        let real = PathBuf::from("/var/lib/headspace").join(
            home.display()
                .to_string()
                .trim_start_matches('/')
                .replace('/', "_"),
        );
        std::fs::create_dir_all(&real).map_err(io_step("create data folder"))?;
        std::os::unix::fs::symlink(&real, &dir).map_err(io_step("link data folder"))?;
    }
    std::fs::create_dir_all(&dir).map_err(io_step("create pg folder"))?;
    // Work on the real folder: the postgres user may not be able to pass through `home`.
    let real = std::fs::canonicalize(&dir).unwrap_or(dir.clone());
    let sock = real.join("sock");
    std::fs::create_dir_all(&sock).map_err(io_step("create socket folder"))?;
    if root {
        stop_older_owners_cluster(&real)?;
        step(
            "give the pg folder to the database's own account",
            Command::new("chown")
                .arg("-R")
                .arg(format!("{DB_ACCOUNT}:"))
                .arg(real.join("."))
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
    // No other account may enter the socket's folder, nor the pg folder (where older
    // versions put the socket).
    set_mode(&real, 0o700).map_err(io_step("make the pg folder private"))?;
    set_mode(&sock, 0o700).map_err(io_step("make the socket folder private"))?;
    Ok((dir, real))
}

/// Makes sure the database's own system account exists (root only): created as a system
/// account with no home and no login shell, or a clear refusal.
fn ensure_db_account() -> Result<(), EmbeddedError> {
    if account_uid(DB_ACCOUNT).is_some() {
        return Ok(());
    }
    let shell = ["/usr/sbin/nologin", "/sbin/nologin", "/bin/false"]
        .into_iter()
        .find(|s| Path::new(s).exists())
        .unwrap_or("/bin/false");
    eprintln!("headspace: creating the system account {DB_ACCOUNT} for the embedded database");
    let out = Command::new("useradd")
        .args([
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
        ])
        .args(["--shell", shell, "--comment", "Headspace embedded database"])
        .arg(DB_ACCOUNT)
        .output();
    match out {
        Ok(o) if o.status.success() || account_uid(DB_ACCOUNT).is_some() => Ok(()),
        other => Err(EmbeddedError::Step {
            step: "create the embedded database's account",
            detail: format!(
                "as root, the embedded database runs under a system account no other service                  shares ({DB_ACCOUNT}), and it could not be created ({}); create it with                  `useradd --system --user-group {DB_ACCOUNT}`, run Headspace as your own                  account, or give --database-url",
                match other {
                    Ok(o) => output_text(&o),
                    Err(e) => e.to_string(),
                }
            ),
        }),
    }
}

/// The uid of account `name`, if it exists.
fn account_uid(name: &str) -> Option<u32> {
    let out = Command::new("id").args(["-u", name]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// A cluster an older version left running as the shared `postgres` account is stopped (as
/// that account) before its folder changes hands: a running server whose files are taken
/// from it fails at its next write.
fn stop_older_owners_cluster(real: &Path) -> Result<(), EmbeddedError> {
    use std::os::unix::fs::MetadataExt;
    let data = real.join("data");
    let (Ok(meta), Some(old)) = (std::fs::metadata(&data), account_uid("postgres")) else {
        return Ok(());
    };
    if meta.uid() != old || !data.join("postmaster.pid").exists() {
        return Ok(());
    }
    let Some(bin) = find_bin() else {
        return Ok(());
    };
    eprintln!(
        "headspace: restarting the embedded database that is already running as postgres \
         (an older version's), to run it as {DB_ACCOUNT}"
    );
    let _ = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(bin.join("pg_ctl"))
        .arg("-D")
        .arg(&data)
        .args(["-m", "fast", "-w", "stop"])
        .output();
    Ok(())
}

impl EmbeddedPg {
    /// Creates (first time) and starts the cluster under `home/pg`, its secret in
    /// `home/pg-secret`; secures a cluster made by an older version.
    pub fn start(home: &Path) -> Result<EmbeddedPg, EmbeddedError> {
        let bin = find_bin().ok_or(EmbeddedError::NoBinaries)?;
        let lock = lock_home(home)?;
        let root = is_root();
        if root {
            ensure_db_account()?;
        }
        let (shown, dir) = pg_folder(home, root)?;
        // Beside the data folder, in root's /var/lib/headspace: readable by the cluster, which
        // cannot write it.
        let root_hba = root.then(|| {
            let mut name = dir.file_name().unwrap_or_default().to_os_string();
            name.push(".pg_hba.conf");
            dir.with_file_name(name)
        });
        let pg = EmbeddedPg {
            bin,
            data: dir.join("data"),
            sock: dir.join("sock"),
            dir,
            run_as: root.then_some(DB_ACCOUNT),
            root_hba,
            lock,
            url: String::new(),
        };
        let secret_file = home.join("pg-secret");
        let fresh = !pg.data.join("PG_VERSION").exists();
        let old = !fresh && pg.hba_trusts()?;
        let secret = if fresh || old {
            secret_or_new(&secret_file)
        } else {
            read_secret(&secret_file)
        }
        .map_err(|problem| pg.secret_error(&secret_file, &problem))?;
        if fresh {
            eprintln!(
                "headspace: creating the embedded database in {}",
                shown.display()
            );
            pg.initdb(&secret_file, &secret)?;
            pg.write_hba()?;
        } else if pg.root_hba.is_some() && !old {
            // Every start as root: the file that decides who connects is root's and safe.
            pg.write_root_hba()?;
        }
        if old {
            eprintln!(
                "headspace: securing the embedded database created by an older version in {}: \
                 it let any local account in as its superuser",
                shown.display()
            );
        }
        pg.write_conf()?;
        pg.run(old)?;
        let ready = if old {
            pg.remove_trust(&secret, &secret_file).and_then(|()| {
                // Secured with its own pg_hba.conf (the role had no password to use root's
                // yet); as root, started again on root's.
                if pg.root_hba.is_some() {
                    pg.stop_cluster()?;
                    pg.run(false)?;
                }
                Ok(())
            })
        } else {
            Ok(())
        }
        .and_then(|()| pg.check_password(&secret, &secret_file));
        if let Err(e) = ready {
            pg.stop();
            return Err(e);
        }
        let url = format!(
            "host={} port={PORT} user=headspace dbname=postgres password={}",
            conn_value(&pg.sock.display().to_string()),
            conn_value(&secret)
        );
        Ok(EmbeddedPg { url, ..pg })
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

    fn hba_trusts(&self) -> Result<bool, EmbeddedError> {
        let hba = std::fs::read_to_string(self.data.join("pg_hba.conf"))
            .map_err(io_step("read pg_hba.conf"))?;
        Ok(trusts(&hba))
    }

    /// `initdb` with the password and no `trust`. As root, initdb runs as postgres, which
    /// cannot read the secret in root's home: it gets a copy of its own in the (0700) pg
    /// folder, removed right after.
    fn initdb(&self, secret_file: &Path, secret: &str) -> Result<(), EmbeddedError> {
        let copy = self.run_as.map(|_| self.dir.join(".initdb-pwfile"));
        if let Some(copy) = &copy {
            write_for_cluster(copy, format!("{secret}\n").as_bytes(), &self.dir)
                .map_err(io_step("write the password file for initdb"))?;
        }
        let mut pwfile = std::ffi::OsString::from("--pwfile=");
        pwfile.push(copy.as_deref().unwrap_or(secret_file));
        let out = self
            .command("initdb")
            .arg("-D")
            .arg(&self.data)
            .args([
                "-U",
                "headspace",
                "--auth-local=scram-sha-256",
                "--auth-host=reject",
                "-E",
                "UTF8",
            ])
            .arg(pwfile)
            .output();
        if let Some(copy) = &copy {
            let _ = std::fs::remove_file(copy);
        }
        step("initdb", out).map(|_| ())
    }

    fn write_hba(&self) -> Result<(), EmbeddedError> {
        write_for_cluster(&self.data.join("pg_hba.conf"), HBA.as_bytes(), &self.data)
            .map_err(io_step("write pg_hba.conf"))?;
        self.write_root_hba()
    }

    /// As root: the `pg_hba.conf` the server is told to use, owned by root (mode 0644: the
    /// cluster reads it and cannot change it).
    fn write_root_hba(&self) -> Result<(), EmbeddedError> {
        let Some(path) = &self.root_hba else {
            return Ok(());
        };
        let keep = crate::fsutil::Keep {
            mode: 0o644,
            owner: Some((0, 0)),
        };
        crate::fsutil::write_atomic_as(path, HBA.as_bytes(), keep)
            .map_err(io_step("write root's pg_hba.conf"))
    }

    fn write_conf(&self) -> Result<(), EmbeddedError> {
        let path = self.data.join("postgresql.conf");
        let conf = std::fs::read_to_string(&path).map_err(io_step("read postgresql.conf"))?;
        let safe = with_safe_settings(&conf, &self.sock);
        if safe == conf {
            return Ok(());
        }
        write_for_cluster(&path, safe.as_bytes(), &self.data)
            .map_err(io_step("write postgresql.conf"))
    }

    fn running(&self) -> bool {
        self.command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("status")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    /// Whether the running server has its socket in our private folder, on our port, and no
    /// TCP address (from `postmaster.pid`: port, socket folder, listen address on lines 4–6).
    fn started_safely(&self) -> bool {
        let Ok(pid) = std::fs::read_to_string(self.data.join("postmaster.pid")) else {
            return false;
        };
        let lines: Vec<&str> = pid.lines().collect();
        let hba_named = match &self.root_hba {
            // postmaster.opts keeps the command line the server was started with.
            Some(hba) => std::fs::read_to_string(self.data.join("postmaster.opts"))
                .is_ok_and(|opts| opts.contains(&format!("hba_file={}", hba.display()))),
            None => true,
        };
        hba_named
            && lines.get(3).map(|l| l.trim()) == Some(PORT)
            && lines.get(4).map(|l| Path::new(l.trim())) == Some(self.sock.as_path())
            && lines.get(5).map(|l| l.trim()) == Some("")
    }

    /// Starts the server with the safe settings; one already running is reused if it was
    /// started that way, else restarted (`old`: its pg_hba.conf trusts, so always).
    fn run(&self, old: bool) -> Result<(), EmbeddedError> {
        if self.running() {
            if !old && self.started_safely() {
                eprintln!("headspace: reusing the embedded database that is already running");
                return Ok(());
            }
            eprintln!(
                "headspace: restarting the embedded database that is already running, \
                 with its socket in {} (mode 0700)",
                self.sock.display()
            );
            step(
                "stop the embedded database",
                self.command("pg_ctl")
                    .arg("-D")
                    .arg(&self.data)
                    .args(["-m", "fast", "-w", "stop"])
                    .output(),
            )?;
        }
        step(
            "start the embedded database",
            self.command("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .arg("-l")
                .arg(self.data.join("server.log"))
                .args(["-w", "-o"])
                .arg(format!(
                    "-c listen_addresses='' -k {} -c unix_socket_permissions=0700 -c port={PORT} \
                     -c max_connections=100{}",
                    self.sock.display(),
                    // An older cluster is first secured on its own file (see `start`).
                    self.root_hba
                        .as_ref()
                        .filter(|_| !old)
                        .map(|h| format!(" -c hba_file={}", h.display()))
                        .unwrap_or_default()
                ))
                .arg("start")
                .output(),
        )
        .map(|_| ())
    }

    /// psql on the socket as `headspace`, with `password` (or none), never prompting; `sql`
    /// goes through stdin so that no password shows in a command line. Runs as the current
    /// account, which can enter the socket's folder (its owner, or root).
    fn psql(&self, password: Option<&str>, sql: &str) -> std::io::Result<Output> {
        let exe = self.bin.join("psql");
        let mut c = Command::new(if exe.exists() { exe } else { "psql".into() });
        c.args(["-X", "-w", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(&self.sock)
            .args(["-p", PORT, "-U", "headspace", "-d", "postgres", "-f", "-"])
            .env("PGPASSFILE", "/dev/null")
            .env("PGCONNECT_TIMEOUT", "10")
            .env_remove("PGSERVICE")
            .env_remove("PGOPTIONS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match password {
            Some(p) => c.env("PGPASSWORD", p),
            None => c.env_remove("PGPASSWORD"),
        };
        let mut child = c.spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            // A psql that could not connect may exit before reading: its output says why.
            let _ = stdin.write_all(sql.as_bytes());
        }
        child.wait_with_output()
    }

    /// Secures a cluster of an older version, started with the safe settings (so only this
    /// account reaches it while it still trusts): the role gets the password, pg_hba.conf is
    /// rewritten and reloaded, and a connection without the password must then be refused.
    fn remove_trust(&self, secret: &str, secret_file: &Path) -> Result<(), EmbeddedError> {
        let redact = |e: EmbeddedError| match e {
            EmbeddedError::Step { step, detail } => EmbeddedError::Step {
                step,
                detail: detail.replace(secret, "<secret>"),
            },
            e => e,
        };
        step(
            "set the embedded database's password",
            self.psql(
                None,
                &format!(
                    "SET password_encryption = 'scram-sha-256';\n\
                     ALTER ROLE headspace PASSWORD '{secret}';\n"
                ),
            ),
        )
        .map_err(redact)?;
        self.write_hba()?;
        step(
            "reload pg_hba.conf",
            self.psql(None, "SELECT pg_reload_conf();\n"),
        )?;
        // pg_reload_conf only signals the server: wait until the password is required.
        let end = crate::clock::instant() + Duration::from_secs(10);
        loop {
            match self.psql(None, "SELECT 1;\n") {
                Ok(o) if !o.status.success() && output_text(&o).contains("password") => break,
                Ok(o) if crate::clock::instant() > end => {
                    return Err(EmbeddedError::Step {
                        step: "remove trust from pg_hba.conf",
                        detail: format!(
                            "a connection without the password should be refused after the \
                             reload, but got: {}",
                            if o.status.success() {
                                "accepted".to_string()
                            } else {
                                output_text(&o)
                            }
                        ),
                    })
                }
                Err(e) => return Err(io_step("run psql")(e)),
                Ok(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        eprintln!(
            "headspace: the embedded database now requires the password in {} \
             (pg_hba.conf no longer trusts anyone) and its socket is in {} (mode 0700)",
            secret_file.display(),
            self.sock.display()
        );
        Ok(())
    }

    /// Checks that the server takes the password, to say so clearly here rather than after
    /// the migrations' retries. A server still starting up is waited for.
    fn check_password(&self, secret: &str, secret_file: &Path) -> Result<(), EmbeddedError> {
        let end = crate::clock::instant() + Duration::from_secs(10);
        loop {
            let out = self
                .psql(Some(secret), "SELECT 1;\n")
                .map_err(io_step("run psql"))?;
            let text = output_text(&out);
            if out.status.success() {
                return Ok(());
            }
            if text.contains("password authentication failed") {
                return Err(
                    self.secret_error(secret_file, "the database refuses the password in it")
                );
            }
            if crate::clock::instant() > end {
                return Err(EmbeddedError::Step {
                    step: "connect to the embedded database",
                    detail: text.replace(secret, "<secret>"),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What is wrong with the secret file, and how to restore or replace it. Never a fall back
    /// to `trust`.
    fn secret_error(&self, file: &Path, problem: &str) -> EmbeddedError {
        let as_owner = match self.run_as {
            Some(user) => format!("runuser -u {user} -- "),
            None => String::new(),
        };
        let (f, bin, data) = (file.display(), self.bin.display(), self.data.display());
        EmbeddedError::Secret(format!(
            "the embedded database in {dir} accepts only the password kept in {f}, but {problem}.\n\
             Restore that file (one line, mode 0600), or give the database a new password: with \
             headspace stopped, run\n  \
             {as_owner}{bin}/pg_ctl -D {data} -m fast stop   # if it still runs\n  \
             head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \\n' > {f} && chmod 600 {f}\n  \
             echo \"ALTER ROLE headspace PASSWORD '$(cat {f})'\" | {as_owner}{bin}/postgres --single -D {data} postgres\n\
             then start headspace again.",
            dir = self.dir.display(),
        ))
    }

    /// Stops the cluster (fast shutdown) and releases the home.
    pub fn stop(&self) {
        let _ = self.stop_cluster();
        let _ = std::fs::remove_file(&self.lock);
    }

    /// Stops the cluster (fast shutdown).
    fn stop_cluster(&self) -> Result<(), EmbeddedError> {
        step(
            "stop the embedded database",
            self.command("pg_ctl")
                .arg("-D")
                .arg(&self.data)
                .args(["-m", "fast", "-w", "stop"])
                .output(),
        )
        .map(|_| ())
    }
}

fn is_headspace(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .map(|c| c.contains("headspace"))
        .unwrap_or(false)
}
