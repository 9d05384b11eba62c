//! `serve --record FILE`: every core input written as a trace that `headspace replay` runs
//! again. Transcript bytes are written once, as appends, whatever re-reads the core asked for.

use headspace_core::{Input, Timestamp};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write as _;

/// Appends trace lines to a file (or any sink: the simulator keeps its traces in memory).
pub struct Recorder {
    out: Box<dyn std::io::Write + Send>,
    epoch: Timestamp,
    recorded: HashMap<String, u64>,
}

/// The agent CLIs' folders a trace's header names (its hooks' paths lie under them).
pub struct TraceDirs {
    /// Claude Code's (`"claude_dir"`).
    pub claude: String,
    /// Codex CLI's, when watched (`"codex_dir"`).
    pub codex: Option<String>,
    /// Gemini CLI's, when watched (`"gemini_dir"`).
    pub gemini: Option<String>,
}

impl Recorder {
    /// Opens `path`: a new trace gets a header; an existing one gets a `restart` step.
    pub fn open(
        path: &std::path::Path,
        dirs: &TraceDirs,
        now: Timestamp,
    ) -> std::io::Result<Recorder> {
        // A trace copies what agents wrote: 0600, and never written through a planted link.
        let mut file = crate::private_files::open_private(path)?;
        let mut existing = String::new();
        std::io::Read::read_to_string(&mut file, &mut existing)?;
        let existing = Some(existing).filter(|s| !s.trim().is_empty());
        Recorder::start(
            existing.as_deref(),
            Box::new(std::io::BufWriter::new(file)),
            dirs,
            now,
        )
    }

    /// Starts recording into `out`, after the trace `existing` already holds (a `restart`
    /// step), or from a new header.
    pub fn start(
        existing: Option<&str>,
        out: Box<dyn std::io::Write + Send>,
        dirs: &TraceDirs,
        now: Timestamp,
    ) -> std::io::Result<Recorder> {
        let mut r = Recorder {
            out,
            epoch: now,
            recorded: HashMap::new(),
        };
        match existing {
            Some(text) => {
                // Continue the old trace's clock and file lengths.
                let trace = headspace_core::harness::trace::Trace::parse(text)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
                r.epoch = trace.epoch;
                for (_, step) in &trace.steps {
                    if let headspace_core::harness::trace::Step::Append { path, data } = step {
                        *r.recorded.entry(path.clone()).or_default() += data.len() as u64;
                    }
                }
                r.line(now, json!({"restart": {}}));
            }
            None => {
                let mut header =
                    json!({"trace": 1, "epoch": now.to_string(), "claude_dir": dirs.claude});
                if let Some(d) = &dirs.codex {
                    header["codex_dir"] = json!(d);
                }
                if let Some(d) = &dirs.gemini {
                    header["gemini_dir"] = json!(d);
                }
                writeln!(r.out, "{header}")?;
            }
        }
        r.out.flush()?;
        Ok(r)
    }

    fn line(&mut self, now: Timestamp, mut v: Value) {
        v["at_ms"] = json!((now.millis() - self.epoch.millis()).max(0));
        let _ = writeln!(self.out, "{v}");
        let _ = self.out.flush();
    }

    /// Records an input.
    pub fn record(&mut self, now: Timestamp, input: &Input) {
        match input {
            Input::Hook { agent, event, body } => {
                let body: Value = serde_json::from_slice(body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
                let mut hook = json!({"event": event, "body": body});
                if *agent != headspace_core::kind::AgentKind::Claude {
                    hook["agent"] = json!(agent.name());
                }
                self.line(now, json!({ "hook": hook }));
            }
            Input::Transcript {
                path, offset, data, ..
            } => {
                let have = self.recorded.get(path).copied().unwrap_or(0);
                let end = offset + data.len() as u64;
                if end <= have || *offset > have {
                    return;
                }
                let new = &data[(have - offset) as usize..];
                self.recorded.insert(path.clone(), end);
                self.line(
                    now,
                    json!({"append": {"path": path, "data": String::from_utf8_lossy(new)}}),
                );
            }
            Input::Reconcile { agent, .. } => {
                self.line(now, json!({"reconcile": {"agent": agent}}))
            }
            Input::Pane { pane, text } => {
                self.line(now, json!({"pane": {"pane": pane, "text": text}}))
            }
            Input::Panes(panes) => self.line(now, json!({"panes": {"panes": panes}})),
            Input::Tick => self.line(now, json!({"tick": {}})),
            Input::Sent { agent, text } => {
                self.line(now, json!({"sent": {"agent": agent, "text": text}}))
            }
            Input::Stopped { agent } => self.line(now, json!({"stopped": {"agent": agent}})),
            // Restore and loads come from the store, which a replay has of its own.
            Input::TranscriptReset { .. } | Input::Restore(_) | Input::AgentsLoaded(_) => {}
        }
    }
}
