//! The executor of commands other machines write for this one's panes (docs/multi-machine.md,
//! "Commands to panes"): every server whose database is shared (it has a [`PaneQueue`])
//! takes its machine's commands, checks each was signed by a server it trusts, and runs it
//! with the routes' own code (`send_here`, `interrupt_here`, `answer_here`,
//! `answer_questions_here`, `reconcile_here`, `orchestrate_forwarded`); the asking server
//! waits for the result (`remote_panes.rs`).

use super::agents::{interrupt_here, reconcile_here, send_here};
use super::answer::{answer_here, answer_questions_here};
use super::orchestration::orchestrate_forwarded;
use super::remote_panes::{fail, Outcome};
use super::App;
use crate::clock;
use crate::server::backoff::Backoff;
use crate::server::pane_queue::{PaneCommand, PaneQueue};
use headspace_core::cluster::pane_commands::PaneCommandKind;
use headspace_core::pane::dialog::answers_of;
use hyper::StatusCode;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, error, info, warn};

/// How often the executor looks for commands when no notification came (one may be lost:
/// the listening connection dropped, or the command was written while it was down).
const POLL_EVERY: Duration = Duration::from_secs(1);
/// How often old commands are deleted (any server may; a day's rows are kept).
const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// Most commands taken at one look.
const CLAIM_BATCH: i64 = 16;

/// Runs, for as long as the server runs, the commands other servers write for this machine:
/// woken by the queue ([`PaneQueue::wake_for`]: `NOTIFY pane_commands` on PostgreSQL), and
/// every second without a wake-up. Nothing when the server has no queue.
pub fn start_pane_executor(app: Arc<App>) {
    let Some(store) = app.pane_queue.clone() else {
        return;
    };
    tokio::spawn(async move {
        info!(
            "[PANE_COMMANDS] running commands for machine {:?}",
            app.machine
        );
        let wake = store.wake_for(&app.machine);
        let mut prune_at = clock::instant();
        loop {
            if clock::instant() >= prune_at {
                prune_at = clock::instant() + PRUNE_EVERY;
                if let Err(e) = store.prune().await {
                    debug!("[PANE_COMMANDS] cannot prune old commands: {e}");
                }
            }
            run_claimed(&app, &store).await;
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(POLL_EVERY) => {}
            }
        }
    });
}

/// Takes this machine's pending commands and runs each on its own task (a question wizard
/// may take seconds; it must not hold up a send to another pane).
async fn run_claimed(app: &Arc<App>, store: &Arc<dyn PaneQueue>) {
    loop {
        let taken = match store.claim(&app.machine, CLAIM_BATCH).await {
            Ok(t) => t,
            Err(e) => {
                debug!("[PANE_COMMANDS] cannot look for commands: {e}");
                return;
            }
        };
        let full = taken.len() as i64 == CLAIM_BATCH;
        for command in taken {
            let app = app.clone();
            let store = store.clone();
            tokio::spawn(async move {
                // The claim took it before its deadline (on the database's clock); it runs
                // only if the user's server signed it (a database client alone cannot).
                let now = app.clock.now().millis();
                let (status, body) = match app.pane_keys.check(&command, &app.machine, now) {
                    Ok(envelope) => {
                        let signed = PaneCommand {
                            body: envelope.body,
                            ..command.clone()
                        };
                        run_here(&app, &signed).await
                    }
                    Err(why) => {
                        warn!(
                            "[PANE_COMMANDS] refused command {} ({} for agent {}): {why}",
                            command.id,
                            command.kind.as_str(),
                            command.agent_id
                        );
                        fail(
                            StatusCode::FORBIDDEN,
                            format!("machine {} refused the command: {why}", app.machine),
                        )
                    }
                };
                let result = json!({"status": status.as_u16(), "body": body});
                finish(store.as_ref(), command.id, &result).await;
            });
        }
        if !full {
            return;
        }
    }
}

/// Writes a result, retrying a while: the asking server waits for it.
async fn finish(store: &dyn PaneQueue, id: i64, result: &Value) {
    let mut pause = Backoff::new(Duration::from_millis(100), Duration::from_secs(13));
    for _ in 0..8 {
        match store.finish(id, result).await {
            Ok(()) => return,
            Err(e) => {
                warn!("[PANE_COMMANDS] could not write the result of command {id} (retrying): {e}");
                pause.pause().await;
            }
        }
    }
    error!("[PANE_COMMANDS] gave up writing the result of command {id}: its asker answers 504");
}

/// Runs a command taken for this machine with the routes' own code.
async fn run_here(app: &App, command: &PaneCommand) -> Outcome {
    let reference = command.body["reference"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| command.agent_id.to_string());
    let view = match app.store.agent(command.agent_id).await {
        Ok(Some(v)) => v,
        Ok(None) => return fail(StatusCode::NOT_FOUND, format!("no agent {reference}")),
        Err(e) => return fail(StatusCode::SERVICE_UNAVAILABLE, e),
    };
    let body = &command.body;
    match command.kind {
        PaneCommandKind::Send => match body["text"].as_str() {
            Some(text) => send_here(app, &view, &reference, text).await,
            None => fail(StatusCode::BAD_REQUEST, "the command has no text"),
        },
        PaneCommandKind::Clear => match view.agent.kind.clear_text() {
            Some(text) => send_here(app, &view, &reference, text).await,
            None => fail(StatusCode::CONFLICT, super::agents::no_clear(&view)),
        },
        PaneCommandKind::Interrupt => interrupt_here(app, &view, &reference).await,
        PaneCommandKind::Answer => match body["option"].as_u64() {
            Some(n) => {
                answer_here(app, &view, &reference, n as usize, body["expect"].as_str()).await
            }
            None => fail(StatusCode::BAD_REQUEST, "the command has no option"),
        },
        PaneCommandKind::AnswerQuestions => match answers_of(body) {
            Ok(answers) => answer_questions_here(app, &view, &reference, answers).await,
            Err(e) => fail(StatusCode::BAD_REQUEST, e),
        },
        PaneCommandKind::Reconcile => reconcile_here(app, view.agent.id, &reference).await,
        PaneCommandKind::Orchestrate => orchestrate_forwarded(app, body).await,
    }
}
