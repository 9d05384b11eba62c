//! The hook spool: where hooks go while the database is away and the server's memory is full
//! ([`headspace_core::store::outage`]). An append-only file of JSON lines under
//! `$HEADSPACE_HOME/spool/` (the folder 0700, the file 0600: hooks hold prompts), synced in
//! batches, read back in order once the database is back, then removed. A spool left by a
//! server that died is replayed by the next start.

use crate::private_files::{open_private, private_dir};
use headspace_core::kind::AgentKind;
use headspace_core::Timestamp;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Hooks written since the last sync, past which the spool syncs at once.
const SYNC_EVERY: usize = 256;

/// One spooled hook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spooled {
    /// When it arrived (milliseconds since the epoch).
    pub at_ms: i64,
    /// The kind of agent whose route it came on, when not Claude Code (spools written
    /// before other kinds have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The hook event from the route, if it named one.
    pub event: Option<String>,
    /// The hook's body, as sent.
    pub body: String,
}

/// The spool of one server.
pub struct Spool {
    /// Held locked for as long as the spool is this server's (released when it exits).
    _lock: File,
    path: PathBuf,
    out: Option<BufWriter<File>>,
    unsynced: usize,
    /// Hooks appended since the spool was last emptied.
    pub count: u64,
}

impl Spool {
    /// The spool in `dir` (made private on first use); a file left there is kept. `None`
    /// when another running server holds it (two servers on one home): hooks spooled by one
    /// must never be replayed by the other.
    pub fn new(dir: &Path) -> Result<Option<Spool>, String> {
        use std::os::fd::AsRawFd;
        private_dir(dir)?;
        let lock = open_private(&dir.join("lock"))
            .map_err(|e| format!("cannot open {}: {e}", dir.join("lock").display()))?;
        // SAFETY: flock on a descriptor we own; it is released when the file is closed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Ok(None);
        }
        Ok(Some(Spool {
            _lock: lock,
            path: dir.join("hooks.jsonl"),
            out: None,
            unsynced: 0,
            count: 0,
        }))
    }

    /// Whether hooks wait in it.
    pub fn has_hooks(&self) -> bool {
        std::fs::metadata(&self.path).is_ok_and(|m| m.len() > 0)
    }

    /// Appends a hook; synced once `SYNC_EVERY` are waiting (and by [`Spool::sync`]).
    pub fn append(
        &mut self,
        at: Timestamp,
        agent: AgentKind,
        event: Option<&str>,
        body: &[u8],
    ) -> std::io::Result<()> {
        let out = match &mut self.out {
            Some(out) => out,
            None => self.out.insert(BufWriter::new(open_private(&self.path)?)),
        };
        let line = Spooled {
            at_ms: at.millis(),
            agent: (agent != AgentKind::Claude).then(|| agent.name().to_string()),
            event: event.map(str::to_string),
            body: String::from_utf8_lossy(body).into_owned(),
        };
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
        self.count += 1;
        self.unsynced += 1;
        if self.unsynced >= SYNC_EVERY {
            self.sync()?;
        }
        Ok(())
    }

    /// Writes out and syncs what was appended.
    pub fn sync(&mut self) -> std::io::Result<()> {
        if let Some(out) = &mut self.out {
            out.flush()?;
            out.get_ref().sync_data()?;
        }
        self.unsynced = 0;
        Ok(())
    }

    /// Moves the spooled hooks aside to be replayed, in order, and empties the spool: hooks
    /// spooled while they replay go to a new file. The caller removes the returned file once
    /// every hook in it was fed.
    pub fn take(&mut self) -> std::io::Result<Option<Taken>> {
        self.sync()?;
        self.out = None;
        self.count = 0;
        let aside = self.path.with_extension("replaying");
        if self.has_hooks() {
            // A replay cut short before (a crash) is finished first: its hooks are older.
            if aside.exists() {
                let mut old = std::fs::OpenOptions::new().append(true).open(&aside)?;
                std::io::copy(&mut File::open(&self.path)?, &mut old)?;
                old.sync_data()?;
                std::fs::remove_file(&self.path)?;
            } else {
                std::fs::rename(&self.path, &aside)?;
            }
        }
        Ok(aside.exists().then_some(Taken { path: aside }))
    }
}

/// Spooled hooks taken to be replayed.
pub struct Taken {
    path: PathBuf,
}

impl Taken {
    /// The hooks, in the order they came; a line that does not read is skipped with a WARN.
    pub fn hooks(&self) -> std::io::Result<impl Iterator<Item = Spooled>> {
        let reader = BufReader::new(File::open(&self.path)?);
        Ok(reader.lines().map_while(Result::ok).filter_map(|line| {
            serde_json::from_str(&line)
                .map_err(|e| tracing::warn!("[SPOOL] a spooled hook does not read ({e}); skipped"))
                .ok()
        }))
    }

    /// Removes the file: every hook in it was fed.
    pub fn done(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn hooks_come_back_in_order_once_and_the_file_is_private() {
        let dir = std::env::temp_dir().join(format!("hs-spool-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut spool = Spool::new(&dir).unwrap().expect("the spool");
        assert!(Spool::new(&dir).unwrap().is_none(), "held by the first");
        assert!(!spool.has_hooks());
        for i in 0..300 {
            let body = format!("{{\"n\": {i}, \"prompt\": \"line\\nbreak\"}}");
            spool
                .append(
                    Timestamp(i),
                    AgentKind::Claude,
                    Some("UserPromptSubmit"),
                    body.as_bytes(),
                )
                .unwrap();
        }
        spool.sync().unwrap();
        let mode = std::fs::metadata(dir.join("hooks.jsonl"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let taken = spool.take().unwrap().expect("hooks");
        // Spooled while the others replay: a new file.
        spool
            .append(Timestamp(999), AgentKind::Codex, None, b"{}")
            .unwrap();
        let back: Vec<Spooled> = taken.hooks().unwrap().collect();
        assert_eq!(back.len(), 300);
        assert_eq!(back[7].at_ms, 7);
        assert!(back[7].body.contains("\"n\": 7"));
        taken.done();
        let next = spool.take().unwrap().expect("the new one");
        assert_eq!(next.hooks().unwrap().count(), 1);
        next.done();
        assert!(spool.take().unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
