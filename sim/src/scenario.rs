//! Named scenarios: the recorded incidents replayed against the real server, and `random`,
//! whose plan and faults come from the seed.

use crate::faults::Faults;
use crate::plan::{AgentPlan, Exchange, Fate, Plan, Step, PREAMBLE};
use crate::rng::Rng;

/// A scenario: its name, what it replays, and how to build its plan from a seed.
pub struct Scenario {
    /// Its name on the command line.
    pub name: &'static str,
    /// What it shows.
    pub about: &'static str,
    /// Its plan for a seed.
    pub plan: fn(&mut Rng) -> Plan,
}

fn agent(new_shape: bool, steps: Vec<Step>) -> AgentPlan {
    AgentPlan {
        start_ms: 500,
        new_shape,
        turn_duration: false,
        http_hooks: false,
        steps,
        kind: headspace_core::kind::AgentKind::Claude,
    }
}

fn calm(agents: Vec<AgentPlan>) -> Plan {
    Plan {
        orchestration: false,
        cluster: false,
        agents,
        faults: Faults::none(),
        settle_ms: 60_000,
        idle_within_ms: None,
    }
}

/// One calm agent (old payload shapes) doing `x` twice.
fn twice(x: Exchange) -> Plan {
    calm(vec![agent(
        false,
        vec![Step::Prompt(x.clone()), Step::Prompt(x)],
    )])
}

fn long_work(prompt: &str) -> Exchange {
    Exchange {
        progress: vec![
            "Reading the code.".into(),
            "Running the tests.".into(),
            "Fixing.".into(),
        ],
        step_ms: 4_000,
        ..Exchange::simple(prompt, "All tests pass.")
    }
}

/// Every named scenario, `random` first.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "random",
        about: "five agents, plan and faults drawn from the seed",
        plan: |rng| Plan::random(rng, 5),
    },
    Scenario {
        name: "agent-583",
        about: "a question while awaiting input (AWAITING_INPUT + agent QUESTION), hooks late",
        plan: |_| {
            let x = Exchange {
                questions: vec![3_000, 2_000],
                ..Exchange::simple("Which database should we use?", "Done.")
            };
            let mut p = calm(vec![agent(true, vec![Step::Prompt(x)])]);
            p.faults.hook_delay_ms = 1_500;
            p
        },
    },
    Scenario {
        name: "sm232-late-clear-stop",
        about: "/clear's Stop arrives 12 s late, while the next prompt (sent through the server) runs",
        plan: |_| {
            let mut next = long_work("run the tests");
            next.via_send = true;
            let mut p = calm(vec![agent(
                false,
                vec![
                    Step::Prompt(Exchange::simple("fix it", "Done.")),
                    Step::Clear {
                        stop_hook: Fate::Late(12_000),
                    },
                    Step::Prompt(next),
                ],
            )]);
            p.idle_within_ms = Some(5_000);
            p
        },
    },
    Scenario {
        name: "sm232-lost-clear-stop-fast-task",
        about: "/clear's Stop is lost and the next task ends within 8 s: idle at once (the fence's blind spot)",
        plan: |_| {
            let fast = Exchange {
                step_ms: 300,
                via_send: true,
                stop_hook: Fate::OnTime,
                ..Exchange::simple("go on", "Done.")
            };
            let mut p = calm(vec![agent(
                false,
                vec![
                    Step::Prompt(Exchange::simple("fix it", "Done.")),
                    Step::Clear {
                        stop_hook: Fate::Lost,
                    },
                    Step::Prompt(fast),
                    Step::Pause(20_000),
                ],
            )]);
            p.idle_within_ms = Some(3_000);
            p
        },
    },
    Scenario {
        name: "sm240-lost-stop",
        about: "the Stop hook is lost and the transcript has no end marker: the pane makes it idle within the trust window",
        plan: |_| {
            let x = Exchange {
                stop_hook: Fate::Lost,
                ..long_work("run the tests")
            };
            let mut p = calm(vec![agent(false, vec![Step::Prompt(x), Step::Pause(30_000)])]);
            // Trust window (10 s) + two pane readings (2 s apart) + a margin.
            p.idle_within_ms = Some(16_000);
            p
        },
    },
    Scenario {
        name: "user-turn-data-loss",
        about: "a tool hook lands before the prompt's hook (0.7 ms apart in the incident)",
        plan: |_| {
            let x = Exchange {
                step_ms: 1,
                prompt_hook: Fate::Late(40),
                ..Exchange::simple("run the tests", "All tests pass.")
            };
            twice(x)
        },
    },
    Scenario {
        name: "orchestration",
        about: "a runner drives an agent through design, analyze, implement (2 batches), verify and merge while hooks are lost or late, the server crashes, the runner itself crashes and restarts, and some runs have a budget the phase exceeds: no step is worked on twice (O1) and the run completes or stops for a stated reason (O2)",
        plan: |rng| {
            let mut faults = Faults::draw(rng);
            faults.hook_drop = 0.25;
            faults.hook_late = 0.15;
            faults.crashes = 2;
            faults.reconciles = 0;
            Plan {
                orchestration: true,
                cluster: false,
                agents: vec![agent(true, vec![Step::Serve])],
                faults,
                settle_ms: 60_000,
                idle_within_ms: None,
            }
        },
    },
    Scenario {
        name: "hook-storm",
        about: "hundreds of copies of the same prompt hook",
        plan: |_| {
            let x = Exchange {
                prompt_hook: Fate::Repeated(300),
                ..Exchange::simple("fix it", "Done.")
            };
            twice(x)
        },
    },
    Scenario {
        name: "identical-short-replies",
        about: "many \"yes\" prompts and \"Done.\" replies, hooks dropped and reordered",
        plan: |_| {
            let x = Exchange::simple("yes", "Done.");
            let mut p = calm(vec![
                agent(false, vec![Step::Prompt(x.clone()); 6]),
                agent(false, vec![Step::Prompt(x); 6]),
            ]);
            p.faults.hook_drop = 0.3;
            p.faults.hook_delay_ms = 2_500;
            p.faults.transcript_lag_ms = 1_500;
            p
        },
    },
    Scenario {
        name: "compaction-new-session",
        about: "compaction and /clear give new session ids and files in the same pane: one agent",
        plan: |_| {
            let x = Exchange::simple("go on", "Done.");
            let mut p = calm(vec![agent(
                true,
                vec![
                    Step::Prompt(x.clone()),
                    Step::Compact,
                    Step::Prompt(x.clone()),
                    Step::Clear {
                        stop_hook: Fate::Drawn,
                    },
                    Step::Prompt(x),
                ],
            )]);
            p.faults.hook_delay_ms = 1_000;
            p.faults.transcript_lag_ms = 2_000;
            p
        },
    },
    Scenario {
        name: "stop-before-transcript",
        about: "every Stop arrives before the transcript holds the final text",
        plan: |_| {
            let x = Exchange {
                stop_hook: Fate::OnTime,
                ..Exchange::simple("fix it", "All tests pass.")
            };
            let mut p = calm(vec![agent(true, vec![Step::Prompt(x.clone()), Step::Prompt(x)])]);
            p.faults.transcript_lag_ms = 3_000;
            p
        },
    },
    Scenario {
        name: "long-shared-prefix",
        about: "long prompts alike for their first 200 characters, one prompt hook lost: each keeps its own text",
        plan: |rng| {
            let first = Exchange {
                prompt_hook: Fate::Lost,
                ..Exchange::simple(&format!("{PREAMBLE}fix the parser"), "Done.")
            };
            let second = Exchange {
                step_ms: rng.range(100, 2_000),
                ..Exchange::simple(&format!("{PREAMBLE}fix the lexer"), "All tests pass.")
            };
            let mut p = calm(vec![agent(false, vec![Step::Prompt(first), Step::Prompt(second)])]);
            // The transcript comes after both hooks.
            p.faults.transcript_lag_ms = 4_000;
            p.faults.transcript_stall = 0.5;
            p
        },
    },
    Scenario {
        name: "transcript-stall",
        about: "the transcript writer stalls 30–45 s (a slow disk, a synced folder) while hooks arrive on time",
        plan: |_| {
            let x = Exchange::simple("run the tests", "All tests pass.");
            let mut p = calm(vec![
                agent(false, vec![Step::Prompt(x.clone()), Step::Prompt(x.clone())]),
                agent(true, vec![Step::Prompt(x)]),
            ]);
            p.faults.transcript_stall = 0.3;
            p.settle_ms = 120_000;
            p
        },
    },
    Scenario {
        name: "every-hook-lost",
        about: "no hook ever arrives (not installed, or all lost): each agent is made from its pane's Claude Code process, and its session joins it once its transcript is tied to the pane (D1: never two cards)",
        plan: |_| {
            let mut p = calm(vec![
                // Claude Code waits at its prompt a while first: its process is listed
                // long before its first line.
                agent(
                    true,
                    vec![
                        Step::Pause(6_000),
                        Step::Prompt(Exchange::simple("fix the build", "Done.")),
                        Step::Prompt(long_work("run the tests")),
                    ],
                ),
                agent(
                    false,
                    vec![
                        Step::Pause(4_000),
                        Step::Prompt(Exchange::simple("tidy the docs", "Tidied.")),
                    ],
                ),
            ]);
            p.faults.hook_drop = 1.0;
            p
        },
    },
    Scenario {
        name: "cluster",
        about: "two edges commit into one simulated database (ids committing out of order, commits rolled back, an edge partitioned or crashed), two hubs (crashed and restarted) fan events out to SSE clients that switch hubs with Last-Event-ID, NOTIFY lost or late: every client sees every event once, in position order (E1)",
        plan: |rng| {
            let mut p = Plan::random(rng, 4);
            for a in &mut p.agents {
                // A prompt may be sent through a hub (to the edge, through the shared
                // pane-command table); /clear is not.
                a.steps.retain(|s| !matches!(s, Step::Clear { .. }));
            }
            p.faults.reconciles = 0;
            p.cluster = true;
            p.settle_ms = 90_000;
            p
        },
    },
    Scenario {
        name: "kinds",
        about: "Claude Code, Codex CLI and Gemini CLI agents side by side under the random faults: Codex's rollout (context it injects each turn, aborted turns), its hooks without a pane (the pane comes from its process) and its screen; Gemini's chat file (a reply written again with its tool call, refused tools after which it writes its earlier messages again, Escape), its hooks under its own names (SessionEnd three times), its screen and its two node processes; every invariant holds for every kind",
        plan: |rng| {
            let mut p = Plan::random(rng, 4);
            p.agents = p
                .agents
                .into_iter()
                .enumerate()
                .map(|(i, a)| match i % 3 {
                    0 => a.as_codex(),
                    1 => a.as_gemini(),
                    _ => a,
                })
                .collect();
            p
        },
    },
];

/// The scenario of a name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}
