//! What a run does: the agents' sessions step by step, and the world's faults.

use crate::faults::Faults;
use crate::rng::Rng;
use headspace_core::kind::AgentKind;

/// What happens to one particular hook, when a scenario decides rather than the dice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The faults table decides.
    Drawn,
    /// Delivered at once.
    OnTime,
    /// Delivered this many ms late.
    Late(u64),
    /// Lost.
    Lost,
    /// Posted this many times at once (a hook storm).
    Repeated(u32),
}

/// One exchange: a prompt and the agent's work on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// The prompt.
    pub prompt: String,
    /// Typed through the server's `send` route rather than at the keyboard.
    pub via_send: bool,
    /// Progress texts, each followed by a tool call.
    pub progress: Vec<String>,
    /// AskUserQuestions in the middle, each answered after this many ms.
    pub questions: Vec<u64>,
    /// A permission dialog in the middle.
    pub permission: bool,
    /// The final text.
    pub last: String,
    /// The user interrupts instead of the final text (no Stop hook at all).
    pub interrupt: bool,
    /// Time between the agent's steps.
    pub step_ms: u64,
    /// The prompt hook's fate.
    pub prompt_hook: Fate,
    /// The Stop hook's fate.
    pub stop_hook: Fate,
}

/// One thing the user does.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A prompt and its answer.
    Prompt(Exchange),
    /// `/clear` through the server's route: a new session in the same pane.
    Clear {
        /// The /clear Stop hook's fate (sm#232: late).
        stop_hook: Fate,
    },
    /// Compaction: a new session id and transcript, same pane.
    Compact,
    /// The user thinks.
    Pause(u64),
    /// Works on whatever `send` types into the pane (an orchestration's `/flow.*` steps)
    /// until the orchestration is over.
    Serve,
}

/// One agent (one pane) and its sessions.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentPlan {
    /// When its first session starts (ms after the simulation's start).
    pub start_ms: u64,
    /// The new payload shapes: `prompt_id`, `last_assistant_message`, `stop_hook_summary`.
    pub new_shape: bool,
    /// Writes `turn_duration` at each turn end.
    pub turn_duration: bool,
    /// Its hooks come over Claude Code's own HTTP transport: posted one at a time, in order,
    /// each waited for (at most 2 s) before the agent goes on, with no emission stamp; lost
    /// when the server does not take them, never reordered, doubled or late. SessionStart
    /// still comes through the command hook.
    pub http_hooks: bool,
    /// What the user does.
    pub steps: Vec<Step>,
    /// The agent CLI it runs: Claude Code, or Codex CLI (its rollout under the codex dir, its
    /// hooks on `/hook/codex/…` without a pane, its own screen and process).
    pub kind: AgentKind,
}

impl AgentPlan {
    /// This plan played by Codex CLI: what Codex has no equivalent of is left out (`/clear`
    /// through the route, compaction as a new session, AskUserQuestion, permissions), and its
    /// hooks are command hooks.
    pub fn as_codex(self) -> AgentPlan {
        self.played_by(AgentKind::Codex)
    }

    /// This plan played by Gemini CLI: as for Codex, but a permission stays: the user
    /// refuses the tool, which ends the turn with no hook and makes Gemini write its earlier
    /// messages again (a restatement).
    pub fn as_gemini(self) -> AgentPlan {
        self.played_by(AgentKind::Gemini)
    }

    /// This plan played by another CLI than Claude Code (see [`AgentPlan::as_codex`],
    /// [`AgentPlan::as_gemini`]).
    fn played_by(mut self, kind: AgentKind) -> AgentPlan {
        self.kind = kind;
        self.http_hooks = false;
        self.steps
            .retain(|s| !matches!(s, Step::Clear { .. } | Step::Compact | Step::Serve));
        for s in &mut self.steps {
            if let Step::Prompt(x) = s {
                x.questions.clear();
                x.permission &= kind == AgentKind::Gemini;
            }
        }
        self
    }
}

/// A whole run.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The agents.
    pub agents: Vec<AgentPlan>,
    /// The world.
    pub faults: Faults,
    /// Simulated ms of calm after the sessions end, for liveness.
    pub settle_ms: u64,
    /// A2: once a session is idle, the server must show it idle within this many ms (set
    /// by calm scenarios; hostile runs only check the end).
    pub idle_within_ms: Option<u64>,
    /// An orchestration runner drives the first agent (which should [`Step::Serve`]).
    pub orchestration: bool,
    /// Many machines (`cluster.rs`): two edges share the agents (the first half on the
    /// first), two hubs serve SSE clients from the shared events table.
    pub cluster: bool,
}

/// Short texts repeat on purpose (two "yes" are two turns); long ones share 200-character
/// prefixes on purpose (a prefix hash would merge them).
const PROMPTS: &[&str] = headspace_testkit::synth::SHORT_PROMPTS;
/// Final texts: no question among them (the session would be left waiting, not idle).
const TEXTS: &[&str] = &[
    "Looking at it.",
    "Done.",
    "Done.",
    "All tests pass.",
    "Let me check the logs.",
];
const PROGRESS: &[&str] = &[
    "Looking at it.",
    "Let me check the logs.",
    "Let me check the logs.",
];
/// Over 200 characters, the start of every long text.
pub const PREAMBLE: &str = "Please review the following change carefully, keeping in mind the project's conventions, the error handling policy, the logging format, the test layout and the documentation rules that the README describes in detail: ";

fn text(rng: &mut Rng, short: &[&str], tail: &str) -> String {
    if rng.chance(0.2) {
        format!("{PREAMBLE}{tail} {}", rng.range(0, 4))
    } else {
        rng.pick(short).to_string()
    }
}

impl Exchange {
    /// A plain exchange with everything on time.
    pub fn simple(prompt: &str, last: &str) -> Exchange {
        Exchange {
            prompt: prompt.to_string(),
            via_send: false,
            progress: vec!["Looking at it.".into()],
            questions: Vec::new(),
            permission: false,
            last: last.to_string(),
            interrupt: false,
            step_ms: 400,
            prompt_hook: Fate::Drawn,
            stop_hook: Fate::Drawn,
        }
    }

    fn random(rng: &mut Rng, first: bool) -> Exchange {
        Exchange {
            prompt: text(rng, PROMPTS, "the parser"),
            via_send: !first && rng.chance(0.3),
            // Progress texts read as progress: a mid-turn text that reads like a completion
            // ("Done.") still idles the agent until its next tool call is read (known gap,
            // see the closing note of issue 4).
            progress: (0..rng.range(0, 3))
                .map(|_| text(rng, PROGRESS, "now checking"))
                .collect(),
            questions: if rng.chance(0.15) {
                vec![rng.range(500, 15_000)]
            } else {
                Vec::new()
            },
            permission: rng.chance(0.1),
            last: text(rng, TEXTS, "finished"),
            interrupt: rng.chance(0.08),
            step_ms: rng.range(50, 3_000),
            prompt_hook: Fate::Drawn,
            stop_hook: Fate::Drawn,
        }
    }
}

impl Plan {
    /// A random plan of `agents` agents, its faults drawn too.
    pub fn random(rng: &mut Rng, agents: usize) -> Plan {
        let agents = (0..agents)
            .map(|i| {
                let n = rng.range(1, 6);
                let mut steps = Vec::new();
                for k in 0..n {
                    if k > 0 {
                        match rng.range(0, 10) {
                            // sm#232 is the incident: its late /clear Stop comes often.
                            0 => steps.push(Step::Clear {
                                stop_hook: match rng.range(0, 10) {
                                    0..=2 => Fate::Late(rng.range(3_000, 20_000)),
                                    3 => Fate::Lost,
                                    _ => Fate::Drawn,
                                },
                            }),
                            1 => steps.push(Step::Compact),
                            2..=4 => steps.push(Step::Pause(rng.range(100, 20_000))),
                            _ => {}
                        }
                    }
                    steps.push(Step::Prompt(Exchange::random(rng, k == 0)));
                }
                AgentPlan {
                    start_ms: 500 + i as u64 * 37 + rng.range(0, 2_000),
                    new_shape: rng.chance(0.6),
                    turn_duration: rng.chance(0.5),
                    // Every other agent: drawn from no randomness, so each seed's plan is
                    // otherwise what it was.
                    http_hooks: i % 2 == 1,
                    steps,
                    kind: AgentKind::Claude,
                }
            })
            .collect();
        Plan {
            orchestration: false,
            cluster: false,
            agents,
            faults: Faults::draw(rng),
            settle_ms: 90_000,
            idle_within_ms: None,
        }
    }
}
