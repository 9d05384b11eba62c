//! The stand-in's `/flow.*` skills (`--skills`): what specflow's sub-commands do to the
//! project they run in, so that `headspace orchestrate` can drive the stand-in end to end.
//!
//! A skill marks its step in `.specflow/orchestration-state.json` of the agent's current
//! folder: `in_progress` when it starts, `complete` when it is done (or `failed`, with an
//! `error`, when told to fail). `/flow.implement` also ticks its tasks (`- [ ] T003` →
//! `- [x] T003`) in the phase's `tasks.md` and marks the step complete only once no task is
//! left open, as specflow's does: a batch leaves the step `in_progress`. Every edit of the
//! state holds the orchestration lock and is written atomically, so the runner never reads
//! half a file nor loses its own write.

use headspace::orchestrate::project_files::{write_atomic, ProjectFiles};
use headspace::orchestrate::runner::find_tasks;
use headspace_core::orchestration::Step;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// How the skills behave: which fail, which ask a question first.
#[derive(Debug, Default)]
pub struct Skills {
    /// Step → how many more runs fail (`None`: every run).
    fail: HashMap<String, Option<u32>>,
    /// Steps whose skill asks an AskUserQuestion and waits for the answer.
    ask: HashSet<String>,
}

/// A typed `/flow.<step> [context]`.
#[derive(Debug, PartialEq)]
pub struct Invocation {
    /// `design`, `implement`, … (unknown names are played too, and touch nothing).
    pub step: String,
    /// What follows the skill's name (a batch's tasks, a healer's instructions).
    pub context: String,
}

/// How a skill ended.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Its step is complete (or, for a batch, its tasks are ticked).
    Done(String),
    /// It failed as told; the state says `failed` with this error.
    Failed(String),
}

impl Outcome {
    /// The agent's last reply for it.
    pub fn reply(&self) -> String {
        match self {
            Outcome::Done(s) => s.clone(),
            Outcome::Failed(e) => format!("Failed: {e}"),
        }
    }
}

impl Skills {
    /// From `--fail-skills` (`implement` fails every run, `implement:1` the first run only)
    /// and `--ask-in-skill` (step names).
    pub fn new(fail: &[String], ask: &[String]) -> Result<Skills, String> {
        let mut skills = Skills::default();
        for f in fail.iter().filter(|f| !f.is_empty()) {
            let (step, times) = match f.split_once(':') {
                Some((s, n)) => (
                    s,
                    Some(n.parse::<u32>().map_err(|_| {
                        format!("--fail-skills {f}: the count after ':' must be a number")
                    })?),
                ),
                None => (f.as_str(), None),
            };
            skills.fail.insert(step.to_string(), times);
        }
        skills.ask = ask.iter().filter(|a| !a.is_empty()).cloned().collect();
        Ok(skills)
    }

    /// Whether this run of `step`'s skill asks a question before finishing.
    pub fn asks(&self, step: &str) -> bool {
        self.ask.contains(step)
    }

    /// Whether this run of `step`'s skill fails; counts the run against `STEP:N`.
    fn fails_now(&mut self, step: &str) -> bool {
        match self.fail.get_mut(step) {
            None => false,
            Some(None) => true,
            Some(Some(0)) => false,
            Some(Some(n)) => {
                *n -= 1;
                true
            }
        }
    }

    /// The skill's start: its step becomes the current one, in progress.
    pub fn begin(&self, dir: &Path, inv: &Invocation) -> Result<(), String> {
        let step = Step::parse(&inv.step);
        let Some(index) = step.index() else {
            return Ok(());
        };
        edit_state(dir, |s| {
            let st = &mut s["orchestration"]["step"];
            st["current"] = json!(inv.step);
            st["index"] = json!(index);
            st["status"] = json!("in_progress");
            if let Some(o) = st.as_object_mut() {
                o.remove("error");
            }
        })
    }

    /// The skill's work and verdict, written to the project before the turn ends (the
    /// runner takes the turn's end as the skill's end).
    pub fn finish(&mut self, dir: &Path, inv: &Invocation) -> Result<Outcome, String> {
        if !Step::parse(&inv.step).is_known() {
            return Ok(Outcome::Done(format!("No such step: {}.", inv.step)));
        }
        if self.fails_now(&inv.step) {
            let error = format!("flow.{} was told to fail", inv.step);
            edit_state(dir, |s| {
                s["orchestration"]["step"]["status"] = json!("failed");
                s["orchestration"]["step"]["error"] = json!(error);
            })?;
            return Ok(Outcome::Failed(error));
        }
        let mut status = "complete";
        let mut summary = format!("flow.{} complete.", inv.step);
        if inv.step == "implement" {
            let (ticked, open) = tick_tasks(dir, &inv.context)?;
            if open > 0 {
                status = "in_progress";
            }
            summary = format!(
                "Implemented {} ({} task(s) left open).",
                if ticked.is_empty() {
                    "nothing".to_string()
                } else {
                    ticked.join(", ")
                },
                open
            );
        }
        edit_state(dir, |s| {
            s["orchestration"]["step"]["status"] = json!(status);
        })?;
        Ok(Outcome::Done(summary))
    }
}

/// `/flow.design` → `design`, `/flow.implement Execute tasks T001` → `implement` and the rest;
/// none for other text.
pub fn parse(line: &str) -> Option<Invocation> {
    let rest = line.trim().strip_prefix("/flow.")?;
    let (step, context) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    (!step.is_empty()).then(|| Invocation {
        step: step.to_string(),
        context: context.trim().to_string(),
    })
}

/// Task ids named in a skill's context (`Execute tasks T003, T004 in …`).
fn task_ids(context: &str) -> Vec<String> {
    context
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() > 1 && w.starts_with('T') && w[1..].bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_string)
        .collect()
}

/// The phase's `tasks.md`, found as the runner finds it.
fn tasks_file(dir: &Path) -> Option<PathBuf> {
    let phase = ProjectFiles::new(dir)
        .read_state()
        .ok()
        .and_then(|s| s.orchestration.phase.number.get().cloned())
        .and_then(|n| n.as_str().map(str::to_string));
    find_tasks(dir, phase.as_deref())
}

/// Ticks the open tasks `context` names (all open tasks when it names none); returns the
/// ticked ids and how many tasks remain open.
fn tick_tasks(dir: &Path, context: &str) -> Result<(Vec<String>, usize), String> {
    let Some(path) = tasks_file(dir) else {
        return Ok((Vec::new(), 0));
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let wanted = task_ids(context);
    let (mut ticked, mut open) = (Vec::new(), 0);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let id = line.trim_start().strip_prefix("- [ ] ").and_then(|r| {
            r.split_whitespace()
                .next()
                .filter(|w| w.starts_with('T'))
                .map(str::to_string)
        });
        match id {
            Some(id) if wanted.is_empty() || wanted.contains(&id) => {
                out.push_str(&line[..indent]);
                out.push_str("- [x] ");
                out.push_str(&line[indent + "- [ ] ".len()..]);
                ticked.push(id);
            }
            Some(_) => {
                open += 1;
                out.push_str(line);
            }
            None => out.push_str(line),
        }
    }
    write_atomic(&path, out.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((ticked, open))
}

/// Reads, edits and writes the project state under the orchestration lock, keeping every
/// key it does not touch (as specflow's `state set` does).
fn edit_state(dir: &Path, f: impl FnOnce(&mut Value)) -> Result<(), String> {
    let files = ProjectFiles::new(dir);
    let _lock = files.lock().map_err(|e| e.to_string())?;
    let path = files.state_path();
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut state: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    // Indexing a JSON value for writing panics on a non-object: refuse such a state.
    let shaped = state.is_object()
        && matches!(state["orchestration"], Value::Object(_) | Value::Null)
        && matches!(
            state["orchestration"]["step"],
            Value::Object(_) | Value::Null
        );
    if !shaped {
        return Err(format!("{}: not an orchestration state", path.display()));
    }
    f(&mut state);
    let mut text = serde_json::to_vec_pretty(&state).map_err(|e| e.to_string())?;
    text.push(b'\n');
    write_atomic(&path, &text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_prompt_names_its_step_and_context() {
        assert_eq!(
            parse("/flow.implement Execute tasks T003, T004 in section \"Core\""),
            Some(Invocation {
                step: "implement".into(),
                context: "Execute tasks T003, T004 in section \"Core\"".into()
            })
        );
        assert_eq!(parse("/flow.design").unwrap().context, "");
        assert_eq!(parse("/flow."), None);
        assert_eq!(parse("fix the build"), None);
        assert_eq!(
            task_ids("Heal batch 1 (section \"Phase 2: Core\", tasks T003, T004): it failed"),
            ["T003", "T004"]
        );
    }

    #[test]
    fn told_failures_count_down_and_bad_counts_are_refused() {
        let mut s = Skills::new(&["implement:1".into(), "verify".into()], &[]).unwrap();
        assert!(s.fails_now("implement"));
        assert!(!s.fails_now("implement"), "implement:1 fails once");
        assert!(
            s.fails_now("verify") && s.fails_now("verify"),
            "verify always"
        );
        assert!(!s.fails_now("design"));
        assert!(Skills::new(&["implement:x".into()], &[]).is_err());
    }

    #[test]
    fn implement_ticks_its_tasks_and_completes_the_step_when_none_is_open() {
        let dir =
            std::env::temp_dir().join(format!("headspace-agent-skills-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".specflow")).unwrap();
        std::fs::write(
            dir.join("tasks.md"),
            "## A\n- [ ] T001 a\n  - [ ] T002 b\n## B\n- [ ] T003 c\n",
        )
        .unwrap();
        let state = json!({"keep": 1, "orchestration": {"phase": {"number": "0001"},
            "step": {"current": "analyze", "index": 1, "status": "complete"}}});
        std::fs::write(
            dir.join(".specflow/orchestration-state.json"),
            state.to_string(),
        )
        .unwrap();
        let read = || -> Value {
            serde_json::from_slice(
                &std::fs::read(dir.join(".specflow/orchestration-state.json")).unwrap(),
            )
            .unwrap()
        };
        let mut skills = Skills::new(&[], &[]).unwrap();
        let batch = parse("/flow.implement Execute tasks T001, T002 in section \"A\"").unwrap();
        skills.begin(&dir, &batch).unwrap();
        assert_eq!(
            read()["orchestration"]["step"],
            json!({"current": "implement", "index": 2, "status": "in_progress"})
        );
        assert_eq!(
            skills.finish(&dir, &batch).unwrap(),
            Outcome::Done("Implemented T001, T002 (1 task(s) left open).".into())
        );
        assert_eq!(
            read()["orchestration"]["step"]["status"],
            "in_progress",
            "T003 is open"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("tasks.md")).unwrap(),
            "## A\n- [x] T001 a\n  - [x] T002 b\n## B\n- [ ] T003 c\n"
        );
        let rest = parse("/flow.implement").unwrap();
        skills.finish(&dir, &rest).unwrap();
        assert_eq!(read()["orchestration"]["step"]["status"], "complete");
        assert_eq!(read()["keep"], 1, "other keys are kept");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
