//! An orchestration under simulation: the real runner (`headspace::orchestrate`: its
//! decisions, spawn guard, files and recovery) drives a simulated agent through design →
//! analyze → implement (two batches) → verify → merge, each step typed into the agent's pane
//! through the server's `send` route and over when the server shows the agent idle, while
//! hooks are lost or late and the server crashes.
//!
//! The runner's files are real files in a temporary folder; its workflows, clock and calls to
//! the server are the simulation's ([`SimDeps`]). Each iteration drives the core's
//! orchestration machine directly ([`iteration`]): inputs fed, effects drained and carried
//! out by the runner's own executor, but for the spawn, which the simulation types itself. What the agent really worked on is recorded
//! in [`Truth`]. The runner itself crashes too (an iteration cut short after any of its
//! effects, then a restart a few seconds later), and some runs get a budget the whole phase
//! exceeds (each finished step costs [`STEP_COST_USD`]). The run is held to two invariants:
//! - O1 once: no `/flow.*` step or batch is worked on twice;
//! - O2 over: the run completes, or stops for a stated reason (its budget, with no step
//!   started once it was spent); it is never left running forever.

use crate::net::{pane_segment, post, sleep_ms};
use crate::rng::Rng;
use crate::world::{sim_now, SimWorld, Truth};
use headspace::orchestrate::control::{self, StartOptions};
use headspace::orchestrate::live::Settings;
use headspace::orchestrate::project_files::FileError;
use headspace::orchestrate::project_files::ProjectFiles;
use headspace::orchestrate::runner::{self, Deps, HelperCase, Next, Outcome, SpawnRequest};
use headspace_core::orchestration::{
    follow_agent, prompt_for, Effect, Input, Progress, WorkflowStatus, WorkflowView,
};
use headspace_core::view::activity::Activity;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What each finished step costs, as its workflow reports it.
pub const STEP_COST_USD: f64 = 1.0;

/// The phase's tasks: two sections, so implement runs two batches.
const TASKS: &str = "# Tasks\n\n## Setup\n- [ ] T001 Create the crate\n\n## Core\n- [ ] T002 Write the core\n- [ ] T003 Test it\n";

/// A fresh project folder for a run: the phase's tasks, no state yet.
pub fn new_project(seed: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "headspace-sim-orchestra-{}-{seed}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("specs/0001-sim")).expect("temp folder");
    std::fs::write(dir.join("specs/0001-sim/tasks.md"), TASKS).expect("temp folder");
    dir
}

/// What a `/flow.*` skill does to the project before its last words: it marks its step
/// complete (implement's batches are judged by their workflows). Like specflow's skills, it
/// writes the state file under the project lock.
pub fn apply_skill(project: &Path, prompt: &str) {
    let skill = prompt
        .trim_start_matches('/')
        .split_whitespace()
        .next()
        .unwrap_or("");
    let Some(step) = skill.strip_prefix("flow.") else {
        return;
    };
    if step == "implement" {
        return;
    }
    let files = ProjectFiles::new(project);
    let Ok(_lock) = files.lock() else { return };
    let path = files.state_path();
    let Ok(mut state) = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .ok_or(())
    else {
        return;
    };
    if state["orchestration"]["step"]["current"] == step {
        state["orchestration"]["step"]["status"] = json!("complete");
        let _ = headspace::orchestrate::project_files::write_atomic(
            &path,
            state.to_string().as_bytes(),
        );
    }
}

/// One workflow as the runner sees it.
#[derive(Clone, Debug)]
struct Workflow {
    status: WorkflowStatus,
    last_activity_ms: i64,
    /// Consecutive idle readings since it was typed (two end it, as `headspace wait`).
    idle_readings: u32,
    typed: bool,
}

/// The runner's dependencies in the simulation: real files, the simulated clock, workflows
/// typed into the agent's pane by the driver, and the agent's activity as the server's
/// store shows it (what `GET /api/agents/{id}` answers). Calls fail while the server is down.
pub struct SimDeps {
    files: ProjectFiles,
    world: SimWorld,
    pane: String,
    workflows: Mutex<BTreeMap<String, Workflow>>,
    /// Prompts to type, oldest first: the driver sends them after the iteration.
    outbox: Mutex<VecDeque<(String, String)>>,
}

impl SimDeps {
    /// Dependencies for a run in `project` whose steps go to `pane`.
    pub fn new(project: &Path, world: SimWorld, pane: &str) -> SimDeps {
        SimDeps {
            files: ProjectFiles::new(project),
            world,
            pane: pane.to_string(),
            workflows: Mutex::new(BTreeMap::new()),
            outbox: Mutex::new(VecDeque::new()),
        }
    }

    fn take_outbox(&self) -> Vec<(String, String)> {
        self.outbox.lock().expect("outbox").drain(..).collect()
    }

    fn typed(&self, id: &str, ok: bool) {
        if let Some(w) = self.workflows.lock().expect("workflows").get_mut(id) {
            if ok {
                w.typed = true;
            } else {
                w.status = WorkflowStatus::Failed;
            }
        }
    }
}

impl Deps for SimDeps {
    fn files(&self) -> &ProjectFiles {
        &self.files
    }

    fn lookup_workflow(&self, id: &str) -> Option<WorkflowView> {
        let now = self.now_ms();
        let (down, shown) = {
            let s = self.world.lock();
            (
                s.server_down,
                crate::check::activity_of_pane(&s.store, &self.pane),
            )
        };
        let mut all = self.workflows.lock().expect("workflows");
        let w = all.get_mut(id)?;
        let running = matches!(
            w.status,
            WorkflowStatus::Running | WorkflowStatus::WaitingForInput
        );
        if running && w.typed {
            if down {
                return None; // the server cannot be asked: the runner backs off
            }
            let activity = shown?;
            // Two idle readings end a step, as `headspace wait` settles it: a transient
            // idle between two tool calls never does.
            if activity == Activity::Idle {
                w.idle_readings += 1;
            } else {
                w.idle_readings = 0;
            }
            if activity != Activity::Idle || w.idle_readings >= 2 {
                let mut p = Progress {
                    status: w.status.clone(),
                    last_activity_ms: w.last_activity_ms,
                    cost_usd: 0.0,
                    error: None,
                };
                follow_agent(&mut p, activity, Some(now), &self.pane, now);
                w.status = p.status;
                w.last_activity_ms = p.last_activity_ms;
            }
        }
        Some(WorkflowView {
            id: id.to_string(),
            status: w.status.clone(),
            last_activity_ms: w.last_activity_ms,
            // A step costs once it has done its work.
            cost_usd: if w.status.is_final() {
                STEP_COST_USD
            } else {
                0.0
            },
        })
    }

    fn spawn(&self, req: &SpawnRequest) -> Result<String, String> {
        self.start(None, prompt_for(req))
    }

    fn kill(&self, id: &str) {
        if let Some(w) = self.workflows.lock().expect("workflows").get_mut(id) {
            w.status = WorkflowStatus::Cancelled;
        }
    }

    fn helper(&self, _case: HelperCase, _context: &Value) -> Option<Value> {
        None // no helper model: the fallbacks run
    }

    fn now_ms(&self) -> i64 {
        sim_now().millis()
    }
}

impl SimDeps {
    /// A workflow for `prompt` (as `id` when given), queued for the driver to type after the
    /// iteration; fails while the server is down.
    fn start(&self, id: Option<String>, prompt: String) -> Result<String, String> {
        if self.world.lock().server_down {
            return Err("the server does not answer".into());
        }
        let mut all = self.workflows.lock().expect("workflows");
        // The id the machine chose (recorded in its spawn intent), as the live runner uses.
        let id = id
            .filter(|id| !all.contains_key(id))
            .unwrap_or_else(|| format!("wf-{}", all.len() + 1));
        all.insert(
            id.clone(),
            Workflow {
                status: WorkflowStatus::Running,
                last_activity_ms: self.now_ms(),
                idle_readings: 0,
                typed: false,
            },
        );
        self.outbox
            .lock()
            .expect("outbox")
            .push_back((id.clone(), prompt));
        Ok(id)
    }
}

/// One runner iteration of run `id` on the orchestration machine: [`Input::Begin`] fed,
/// then each effect carried out in order (by the runner's executor, but for the spawn, whose
/// prompt is queued here) and each answer fed back, as the core's drain rule says.
/// With `crash_after`, the runner dies after carrying out that many effects: the rest of the
/// iteration never happens (its lock goes with it), and `None` is returned.
pub fn iteration(
    deps: &SimDeps,
    id: &str,
    crash_after: Option<usize>,
) -> Result<Option<Next>, FileError> {
    let mut machine = runner::machine(deps);
    let (mut lock, mut outcome) = (None, Outcome::default());
    let mut input = Some(Input::Begin);
    let mut done = 0usize;
    while let Some(now) = input.take() {
        machine.handle(sim_now().millis(), now);
        while let Some(effect) = machine.poll_effect() {
            if crash_after == Some(done) {
                return Ok(None);
            }
            done += 1;
            let answer = match effect {
                Effect::Spawn {
                    prompt,
                    workflow_id,
                    ..
                } => Some(Input::Spawned(deps.start(Some(workflow_id), prompt))),
                other => runner::execute(deps, id, other, &mut lock, &mut outcome)?,
            };
            input = answer.or(input);
        }
    }
    Ok(Some(outcome.next.unwrap_or(Next::Poll)))
}

/// How the runner fails in a run: at most this many crashes, each iteration crashing with
/// [`CRASH_CHANCE`].
pub const MAX_RUNNER_CRASHES: u32 = 3;
/// The chance that an iteration is cut short by a crash.
pub const CRASH_CHANCE: f64 = 0.05;
/// The budget of a run that is given one too small for the phase: two steps and a half.
pub const SMALL_BUDGET_USD: f64 = 2.5;

/// The outcome when the server never showed the agent, so no run could start.
pub const NO_AGENT: &str = "not started: the server never showed the agent";

/// How long the runner goes on before the run counts as never ending (O2).
pub const GIVE_UP_MS: i64 = 15 * 60_000;

/// The runner for an orchestration on the agent of `pane`: starts the run with auto-merge,
/// then iterates as `headspace orchestrate start` does, typing each spawned step into the pane
/// through the server. Records the outcome in [`Truth`].
pub async fn run_orchestration(world: SimWorld, pane: String, start_ms: u64, mut rng: Rng) {
    let budget = rng.chance(0.25).then_some(SMALL_BUDGET_USD);
    world.lock().orchestra.budget = budget;
    sleep_ms(start_ms).await;
    let project = world
        .lock()
        .orchestra
        .project
        .clone()
        .expect("an orchestration scenario has a project");
    // The user picks an agent the server shows, as on the dashboard. One whose every hook
    // was lost (or died with a crash before it was stored) cannot be picked: no run then.
    let known = |w: &SimWorld| {
        w.lock()
            .store
            .agents()
            .any(|a| a.tmux_pane.as_deref() == Some(pane.as_str()))
    };
    let wait_until = sim_now().millis() + 60_000;
    while !known(&world) {
        if sim_now().millis() > wait_until {
            let mut s = world.lock();
            s.orchestra.status = Some(NO_AGENT.into());
            s.orchestra.over = true;
            return;
        }
        sleep_ms(500).await;
    }
    let deps = SimDeps::new(&project, world.clone(), &pane);
    let opts = StartOptions {
        auto_merge: true,
        budget,
        settings: Settings {
            agent: Some(pane.clone()),
            no_clear: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let id = match control::start(&deps, &opts) {
        Ok((e, _)) => e.id,
        Err(e) => {
            world.lock().orchestra.status = Some(format!("could not start: {e}"));
            world.lock().orchestra.over = true;
            return;
        }
    };
    let send_path = format!("/api/agents/{}/send", pane_segment(&pane));
    // Bounded: a run that never ends is O2's business, not a hung simulation.
    let deadline = sim_now().millis() + GIVE_UP_MS;
    while sim_now().millis() < deadline {
        let crashes = world.lock().orchestra.runner_crashes;
        let crash_after = (crashes < MAX_RUNNER_CRASHES && rng.chance(CRASH_CHANCE))
            .then(|| rng.range(0, 12) as usize);
        let next = match iteration(&deps, &id, crash_after) {
            Ok(next) => next,
            Err(e) => {
                world.lock().orchestra.status = Some(format!("file error: {e}"));
                break;
            }
        };
        for (wf, prompt) in deps.take_outbox() {
            // As the live runner does when a send fails (a spawn failure, retried with a
            // backoff): the server may be restarting or its store catching up.
            let body = json!({"text": prompt}).to_string();
            let mut ok = false;
            for attempt in 0..6 {
                if post(&send_path, body.as_bytes()).await == Some(200) {
                    ok = true;
                    break;
                }
                sleep_ms(1_000 << attempt).await;
            }
            deps.typed(&wf, ok);
        }
        let Some(next) = next else {
            // The runner died (what it had sent was sent); a new one starts a little later
            // and goes on from the files.
            world.lock().orchestra.runner_crashes += 1;
            sleep_ms(rng.range(1_000, 8_000)).await;
            continue;
        };
        match next {
            Next::Stop => break,
            Next::Again => sleep_ms(10).await,
            Next::Poll => sleep_ms(1_000).await,
            Next::Backoff(ms) => sleep_ms(ms.clamp(10, 5_000)).await,
        }
    }
    let (status, decisions, error, cost) = match deps.files().read_execution(&id) {
        Ok(e) => (
            e.status.to_string(),
            e.decision_log
                .iter()
                .map(|d| format!("{}: {}", d.decision, d.reason))
                .collect(),
            e.error_message.clone(),
            e.total_cost_usd,
        ),
        Err(e) => (format!("unreadable: {e}"), Vec::new(), None, 0.0),
    };
    let mut s = world.lock();
    s.orchestra.status.get_or_insert(status);
    s.orchestra.decisions = decisions;
    s.orchestra.error = error;
    s.orchestra.cost_usd = cost;
    s.orchestra.over = true;
}

/// O1 and O2 on what happened: `(invariant, detail)` for each that broke.
pub fn check(truth: &Truth) -> Vec<(&'static str, String)> {
    let mut problems = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &truth.worked {
        *seen.entry(p.as_str()).or_default() += 1;
    }
    for (prompt, n) in seen.iter().filter(|(_, n)| **n > 1) {
        problems.push(("O1", format!("{prompt:?} was worked on {n} times")));
    }
    // Design, analyze, two batches, verify, merge.
    if truth.status.as_deref() == Some("completed") && seen.len() != 6 {
        problems.push((
            "O2",
            format!(
                "completed after {} distinct steps, not 6: {:?}",
                seen.len(),
                truth.worked
            ),
        ));
    }
    // A run over its budget stops for that reason, once the budget is spent, and starts
    // no step after: each step costs STEP_COST_USD once done, so at most the steps the
    // budget paid for plus the one that spent it.
    if let (Some(budget), Some("failed")) = (truth.budget, truth.status.as_deref()) {
        let stated = truth
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("Budget exceeded"));
        let most = (budget / STEP_COST_USD).floor() as usize + 1;
        if !stated || truth.cost_usd < budget || seen.len() > most {
            problems.push((
                "O2",
                format!(
                    "a run over its ${budget:.2} budget stopped as {:?} at ${:.2} after {} steps (at most {most}): {:?} (decisions: {:?})",
                    truth.error, truth.cost_usd, seen.len(), truth.worked, truth.decisions
                ),
            ));
        }
        return problems;
    }
    match truth.status.as_deref() {
        Some("completed") | Some(NO_AGENT) => {}
        other => problems.push((
            "O2",
            format!(
                "the run did not complete: {} (steps worked on: {:?}; decisions: {:?})",
                other.unwrap_or("still running"),
                truth.worked,
                truth.decisions
            ),
        )),
    }
    problems
}
