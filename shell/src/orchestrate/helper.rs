//! The helper model as a command (for example `claude -p --output-format json`): the case's
//! question and context go in as the last argument, one JSON object comes back. Any failure —
//! no command, a crash, a timeout, an answer that is not JSON — is `None`, and the runner
//! takes the case's fallback without bothering the user.

use super::runner::HelperCase;
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A configured helper command.
#[derive(Clone, Debug)]
pub struct HelperCommand {
    /// The command and its arguments; the prompt is added last.
    pub command: Vec<String>,
    /// Where it runs (the project, so its tools can read the files).
    pub cwd: PathBuf,
    /// How long it may take.
    pub timeout: Duration,
}

impl HelperCommand {
    /// Asks about `case`; the answer object, or `None`.
    pub fn ask(&self, case: HelperCase, context: &Value) -> Option<Value> {
        let (program, args) = self.command.split_first()?;
        let mut child = Command::new(program)
            .args(args)
            .arg(prompt(case, context))
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| tracing::info!("helper command {program} did not start: {e}"))
            .ok()?;
        let mut stdout = child.stdout.take()?;
        // Read on a thread so a chatty helper cannot fill the pipe and stall the timeout.
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        });
        let deadline = crate::clock::instant() + self.timeout;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if crate::clock::instant() < deadline => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                _ => {
                    tracing::info!(task = case.task(), "helper command timed out");
                    let _ = child.kill();
                    let _ = child.wait();
                    return None;
                }
            }
        }
        parse_answer(&reader.join().ok()?)
    }
}

/// The question for `case` with its context and the answer's shape.
pub fn prompt(case: HelperCase, context: &Value) -> String {
    let (question, shape) = match case {
        HelperCase::CorruptState => (
            "The orchestration state file .specflow/orchestration-state.json of this project is missing or corrupt. Rebuild it from what the project shows (specs, tasks, git branch).",
            r#"{"recoverable": true|false, "confidence": 0.0-1.0, "reasoning": "...", "state": {"orchestration": {"phase": {"number": "...", "name": "..."}, "step": {"current": "design|analyze|implement|verify|merge", "index": 0-4, "status": "not_started|in_progress|complete|failed|blocked"}}}}"#,
        ),
        HelperCase::StaleWorkflow => (
            "A workflow of this project's orchestration has shown no activity for over 10 minutes. Diagnose it.",
            r#"{"action": "continue|restart_task|skip_task|abort", "reasoning": "...", "task": "T001 (skip_task only)", "blockReason": "... (skip_task only)"}"#,
        ),
        HelperCase::FailedStep => (
            "A step of this project's orchestration failed. Diagnose it.",
            r#"{"action": "retry|skip_tasks|run_prerequisite|abort", "reasoning": "...", "tasksToSkip": ["T001"], "prerequisiteStep": "design|analyze|implement|verify"}"#,
        ),
    };
    format!(
        "{question}\n\nTask: {}\nContext: {context}\n\nAnswer with one JSON object only, of this shape:\n{shape}",
        case.task()
    )
}

/// The answer object in a helper's output: the object itself, or the one Claude's JSON
/// output wraps (`structured_output`, or the text of `result`, fenced or not).
fn parse_answer(stdout: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(stdout.trim())
        .ok()
        .or_else(|| embedded_object(stdout))?;
    if let Some(s) = v.get("structured_output").filter(|s| s.is_object()) {
        return Some(s.clone());
    }
    if let Some(text) = v.get("result").and_then(Value::as_str) {
        return embedded_object(text);
    }
    v.is_object().then_some(v)
}

/// The first `{` to the last `}` of `text`, if that is a JSON object.
fn embedded_object(text: &str) -> Option<Value> {
    let (start, end) = (text.find('{')?, text.rfind('}')?);
    serde_json::from_str::<Value>(text.get(start..=end)?)
        .ok()
        .filter(Value::is_object)
}
