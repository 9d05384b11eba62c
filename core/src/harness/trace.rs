//! The trace format of `headspace serve --record` and `headspace replay` (CONTRACT.md).
//!
//! The shell's recorder writes the [`crate::Input`]s it feeds the core, as they are fed.
//! A [`Step`] is one line read back. It is not a second copy of `Input` but the world as
//! the file records it: transcript bytes are appends to a file (the replayer tracks the
//! offsets and frames them as the shell would), a reconcile carries no request id (the
//! replayer numbers them), and a `restart` stands for the `Restore` the store would give.

use crate::time::Timestamp;
use serde_json::Value;

/// One recorded input.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A hook body.
    Hook {
        /// The kind of agent whose route it came on (`"agent"`, Claude Code when absent).
        agent: crate::kind::AgentKind,
        /// The event named by the route, if any.
        event: Option<String>,
        /// The raw body.
        body: Vec<u8>,
    },
    /// Bytes appended to a transcript file (path relative to the claude dir).
    Append {
        /// The file.
        path: String,
        /// The bytes.
        data: Vec<u8>,
    },
    /// A pane capture.
    Pane {
        /// The pane.
        pane: String,
        /// The screen.
        text: String,
    },
    /// tmux's panes and their processes (an extension of the contract's format).
    Panes {
        /// Every pane listed.
        panes: Vec<crate::pane::discovery::PaneListing>,
    },
    /// Time passed.
    Tick,
    /// A reconcile request for an agent (id, session id or pane).
    Reconcile {
        /// The agent reference.
        agent: String,
    },
    /// The server crashed and restarted: in-memory state is lost, the store is kept.
    Restart,
    /// `send` or `clear` typed into an agent's pane (an extension of the contract's format).
    Sent {
        /// The agent reference.
        agent: String,
        /// The text typed.
        text: Option<String>,
    },
    /// The user stopped an agent through Headspace (an extension of the contract's format).
    Stopped {
        /// The agent reference.
        agent: String,
    },
}

/// A whole trace: its header and its steps with their times.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The instant `at_ms` counts from.
    pub epoch: Timestamp,
    /// The claude dir the hooks' transcript paths are under.
    pub claude_dir: String,
    /// Codex CLI's directory, when the server watched it (`"codex_dir"`).
    pub codex_dir: Option<String>,
    /// Gemini CLI's directory, when the server watched it (`"gemini_dir"`).
    pub gemini_dir: Option<String>,
    /// Steps with their absolute times, in order.
    pub steps: Vec<(Timestamp, Step)>,
}

/// Why a trace could not be read; the line number is 1-based.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TraceError {
    /// The trace is empty.
    #[error(
        "trace is empty: the first line must be a header like {{\"trace\": 1, \"epoch\": \"…\"}}"
    )]
    Empty,
    /// A line is not JSON.
    #[error("line {0}: not JSON: {1}")]
    NotJson(usize, String),
    /// The header is missing or has no valid epoch.
    #[error("line 1: header must be {{\"trace\": 1, \"epoch\": RFC 3339, \"claude_dir\": path}}")]
    BadHeader,
    /// The trace version is newer than this build reads.
    #[error("line 1: trace version {0} is not supported (this build reads version 1)")]
    Version(u64),
    /// A step has no `at_ms` or a negative one.
    #[error("line {0}: missing or invalid at_ms")]
    BadTime(usize),
    /// Times go backwards.
    #[error("line {0}: at_ms {1} is before the previous step's {2}")]
    Backwards(usize, i64, i64),
    /// A step has none of the known input keys, or a known key with the wrong shape.
    #[error("line {0}: {1}")]
    BadStep(usize, String),
}

impl Trace {
    /// Parses a trace. Blank lines are skipped; unknown keys are ignored.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines.next().ok_or(TraceError::Empty)?;
        let header: Value =
            serde_json::from_str(header).map_err(|e| TraceError::NotJson(1, e.to_string()))?;
        match header.get("trace").and_then(Value::as_u64) {
            Some(1) => {}
            Some(v) => return Err(TraceError::Version(v)),
            None => return Err(TraceError::BadHeader),
        }
        let epoch = header
            .get("epoch")
            .and_then(Timestamp::from_json)
            .ok_or(TraceError::BadHeader)?;
        let claude_dir = header
            .get("claude_dir")
            .and_then(Value::as_str)
            .unwrap_or("~/.claude")
            .to_string();
        let dir = |key: &str| header.get(key).and_then(Value::as_str).map(str::to_string);
        let (codex_dir, gemini_dir) = (dir("codex_dir"), dir("gemini_dir"));
        let mut steps = Vec::new();
        let mut last = 0i64;
        for (i, line) in lines {
            let n = i + 1;
            let v: Value =
                serde_json::from_str(line).map_err(|e| TraceError::NotJson(n, e.to_string()))?;
            let at = v
                .get("at_ms")
                .and_then(Value::as_i64)
                .filter(|a| *a >= 0)
                .ok_or(TraceError::BadTime(n))?;
            if at < last {
                return Err(TraceError::Backwards(n, at, last));
            }
            last = at;
            steps.push((epoch.add_millis(at), parse_step(n, &v)?));
        }
        Ok(Trace {
            epoch,
            claude_dir,
            codex_dir,
            gemini_dir,
            steps,
        })
    }
}

fn parse_step(n: usize, v: &Value) -> Result<Step, TraceError> {
    let bad = |m: &str| TraceError::BadStep(n, m.to_string());
    if let Some(h) = v.get("hook") {
        let event = h.get("event").and_then(Value::as_str).map(str::to_string);
        let body = match h.get("body") {
            Some(Value::String(s)) => s.as_bytes().to_vec(),
            Some(b) => serde_json::to_vec(b).map_err(|e| bad(&e.to_string()))?,
            None => return Err(bad("hook needs a body")),
        };
        let agent = match h.get("agent").and_then(Value::as_str) {
            Some(name) => crate::kind::AgentKind::from_name(name).map_err(|e| bad(&e))?,
            None => crate::kind::AgentKind::Claude,
        };
        return Ok(Step::Hook { agent, event, body });
    }
    if let Some(a) = v.get("append") {
        let path = a
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("append needs a path"))?;
        let data = a
            .get("data")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("append needs data"))?;
        return Ok(Step::Append {
            path: path.to_string(),
            data: data.as_bytes().to_vec(),
        });
    }
    if let Some(p) = v.get("pane") {
        let pane = p
            .get("pane")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("pane needs a pane id"))?;
        let text = p.get("text").and_then(Value::as_str).unwrap_or("");
        return Ok(Step::Pane {
            pane: pane.to_string(),
            text: text.to_string(),
        });
    }
    if let Some(p) = v.get("panes") {
        let panes = p
            .get("panes")
            .cloned()
            .ok_or_else(|| bad("panes needs a list of panes"))?;
        let panes = serde_json::from_value(panes).map_err(|e| bad(&format!("panes: {e}")))?;
        return Ok(Step::Panes { panes });
    }
    if v.get("tick").is_some() {
        return Ok(Step::Tick);
    }
    if let Some(r) = v.get("reconcile") {
        let agent = match r.get("agent") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(bad("reconcile needs an agent")),
        };
        return Ok(Step::Reconcile { agent });
    }
    if v.get("restart").is_some() {
        return Ok(Step::Restart);
    }
    if let Some(s) = v.get("sent") {
        let agent = s
            .get("agent")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("sent needs an agent"))?;
        let text = s.get("text").and_then(Value::as_str).map(str::to_string);
        return Ok(Step::Sent {
            agent: agent.to_string(),
            text,
        });
    }
    if let Some(s) = v.get("stopped") {
        let agent = match s.get("agent") {
            Some(Value::String(a)) => a.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(bad("stopped needs an agent")),
        };
        return Ok(Step::Stopped { agent });
    }
    Err(bad(
        "no input: expected one of hook, append, pane, panes, tick, reconcile, restart, sent, stopped",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_contract_example() {
        let t = Trace::parse(concat!(
            "{\"trace\": 1, \"epoch\": \"2026-02-18T10:00:00Z\", \"claude_dir\": \"/home/u/.claude\"}\n",
            "{\"at_ms\": 0, \"hook\": {\"event\": \"UserPromptSubmit\", \"body\": {\"session_id\": \"s\"}}}\n",
            "{\"at_ms\": 40, \"append\": {\"path\": \"projects/-a/s.jsonl\", \"data\": \"{\\\"x\\\":1}\"}}\n",
            "{\"at_ms\": 900, \"pane\": {\"pane\": \"%3\", \"text\": \"❯\"}}\n",
            "{\"at_ms\": 1500, \"tick\": {}, \"later_key\": true}\n",
            "{\"at_ms\": 2000, \"reconcile\": {\"agent\": \"s\"}}\n",
            "{\"at_ms\": 2500, \"restart\": {}}\n",
        ))
        .unwrap();
        assert_eq!(t.claude_dir, "/home/u/.claude");
        assert_eq!(t.steps.len(), 6);
        assert_eq!(t.steps[1].0, t.epoch.add_millis(40));
        assert_eq!(t.steps[5].1, Step::Restart);
    }

    #[test]
    fn errors_name_the_line() {
        let h = "{\"trace\":1,\"epoch\":\"2026-02-18T10:00:00Z\"}\n";
        assert_eq!(Trace::parse(""), Err(TraceError::Empty));
        assert_eq!(
            Trace::parse("{\"trace\":2,\"epoch\":\"x\"}"),
            Err(TraceError::Version(2))
        );
        assert!(matches!(
            Trace::parse(&format!(
                "{h}{{\"at_ms\":5,\"tick\":{{}}}}\n{{\"at_ms\":1,\"tick\":{{}}}}"
            )),
            Err(TraceError::Backwards(3, 1, 5))
        ));
        assert!(matches!(
            Trace::parse(&format!("{h}{{\"at_ms\":5}}")),
            Err(TraceError::BadStep(2, _))
        ));
        assert!(matches!(
            Trace::parse(&format!("{h}nope")),
            Err(TraceError::NotJson(2, _))
        ));
    }
}
