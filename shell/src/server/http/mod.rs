//! HTTP: hook routes, the JSON API, SSE, health, metrics and the static dashboard.

use crate::orchestrate::command::Command;
use crate::server::connections::Connections;
use crate::server::driver::{Health, Msg};
use crate::server::metrics::Metrics;
use crate::server::sse::Hub;
use crate::server::store::Store;
use crate::server::world::Panes;
use headspace_core::access::{percent_decode, route_path, AccessPolicy, RequestFacts};
use headspace_core::kind::AgentKind;
use headspace_core::view::AgentView;
use headspace_core::Input;
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::{debug, warn};

mod agents;
mod answer;
mod assets;
pub(crate) mod audit;
mod body;
mod guesses;
mod launch;
mod login;
mod orchestration;
mod pane_executor;
mod push;
mod remote_panes;
mod search;
mod usage;

use agents::*;
use answer::{answer, answer_questions};
use assets::*;
use audit::{audit_agent, audit_all, audit_summary};
use body::*;
pub use body::{with_guard, Body};
pub use guesses::GuessGate;
use login::*;
pub use orchestration::revive_runners;
use orchestration::*;
pub use pane_executor::start_pane_executor;

/// Everything a request handler needs. A clone shares every part (they are handles); the
/// HTTPS listener's app is a clone with `https` and `tls` set.
#[derive(Clone)]
pub struct App {
    /// Messages to the core.
    pub core: mpsc::UnboundedSender<Msg>,
    /// The store, for reads.
    pub store: Arc<dyn Store>,
    /// SSE.
    pub hub: Arc<Hub>,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Store health.
    pub health: Arc<Health>,
    /// Largest accepted request body.
    pub max_body: usize,
    /// Who may call which route (host, origin, token, account, method).
    pub access: AccessPolicy,
    /// The token, handed to runners this server starts (in their environment, never argv).
    pub token: String,
    /// The key this server signs forwarded pane commands with, and the keys it trusts.
    pub pane_keys: Arc<crate::server::pane_keys::PaneKeys>,
    /// Where wrong credentials wait their turn.
    pub guesses: Arc<GuessGate>,
    /// Whether browsers reach this server over HTTPS (the login cookie is then `Secure`).
    pub https: bool,
    /// The TLS this server speaks itself (`--tls-cert`), `None` for plain HTTP.
    pub tls: Option<crate::server::tls::Tls>,
    /// This server's own address (`127.0.0.1:PORT`): the one runners it starts talk back to.
    pub self_addr: String,
    /// The dashboard's files.
    pub static_dir: PathBuf,
    /// How long a reconcile may take before it answers `partial`.
    pub reconcile_budget: Duration,
    /// The panes, for send and clear.
    pub panes: Arc<dyn Panes>,
    /// The open connections, capped.
    pub connections: Arc<Connections>,
    /// Time allowed for a request's headers, and between requests.
    pub header_timeout: Duration,
    /// The transcripts, read by the audit through the watcher's bounded reader.
    pub files: crate::server::audit_loop::SharedFiles,
    /// The longest transcript line kept whole (as the core reads).
    pub max_line_bytes: usize,
    /// The latest audit's summary.
    pub audit: Arc<crate::server::audit_loop::AuditStatus>,
    /// The clock (the audit's time).
    pub clock: Arc<dyn crate::server::world::Clock>,
    /// Prices per model, for the tokens cards, usage routes and `/metrics` show.
    pub prices: Arc<headspace_core::usage::PriceTable>,
    /// The `--prices` file, handed to the orchestration runners this server starts.
    pub prices_file: Option<PathBuf>,
    /// This machine's name (`--machine`); empty on a hub.
    pub machine: String,
    /// What this process does (`--role`): an edge serves no page, a hub no hooks.
    pub role: crate::server::role::Role,
    /// The pane commands shared with the database's other machines: how a command for a
    /// pane elsewhere gets there (`http/remote_panes.rs`); `None` when every pane is this server's.
    pub pane_queue: Option<Arc<dyn crate::server::pane_queue::PaneQueue>>,
    /// Search, history and prune; `None` when the store has no search indexes (the
    /// simulation's), and those routes answer 501.
    pub archive: Option<Arc<dyn crate::server::archive::Archive>>,
    /// Starting, reviewing and stopping agents; `None` where the server starts none (501).
    pub launcher: Option<crate::launch::Launcher>,
    /// Pushes to the user's devices; `None` where the server sends none (501).
    pub push: Option<std::sync::Arc<crate::server::push::Push>>,
    /// The core's configuration, for the rules a route applies itself (how the wait on a
    /// forwarded command goes: [`headspace_core::cluster::pane_commands::await_step`]).
    pub rules: headspace_core::Config,
}

/// Handles one request: the access checks first ([`AccessPolicy::check`]), then the route;
/// every answer forbids framing and sniffing.
pub async fn handle(app: Arc<App>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    // Judged as routed: `/%61pi/agents` is `/api/agents` (see `route_path`).
    let path = route_path(req.uri().path());
    let facts = RequestFacts {
        method: req.method().as_str(),
        path: &path,
        host: header("host"),
        origin: header("origin"),
        sec_fetch_site: header("sec-fetch-site"),
        content_type: header("content-type"),
        authorization: header("authorization"),
        cookie: header("cookie"),
    };
    if let Err(refusal) = app.access.check(&facts) {
        app.metrics.requests_refused.fetch_add(1, Relaxed);
        debug!(
            "[HTTP] refused {} {}: {}",
            facts.method, facts.path, refusal.message
        );
        let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
        if refusal.wrong_credential {
            app.guesses.pay().await;
        }
        return Ok(hardened(error(status, refusal.message)));
    }
    Ok(hardened(route(&app, req).await))
}

/// Headers every answer carries: no framing (clickjacking an answer button), no content
/// sniffing, no referrer, readable by this origin only.
fn hardened(mut resp: Response<Body>) -> Response<Body> {
    let h = resp.headers_mut();
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.entry("content-security-policy")
        .or_insert(HeaderValue::from_static(
            "default-src 'none'; frame-ancestors 'none'",
        ));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    resp
}

/// The 405 for a route that changes state, asked with GET.
fn post_only(path: &str) -> Response<Body> {
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{path} changes state: use POST with Content-Type: application/json"),
    );
    r.headers_mut()
        .insert("allow", HeaderValue::from_static("POST"));
    r
}

async fn route(app: &Arc<App>, req: Request<Incoming>) -> Response<Body> {
    let app = app.clone();
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let decoded: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    if !app.role.serves_route(&segments) {
        return error(StatusCode::NOT_FOUND, app.role.refusal());
    }
    match (&method, segments.as_slice()) {
        (&Method::POST, ["hook", event]) => {
            let event = event.to_string();
            hook(&app, AgentKind::Claude, Some(event), req).await
        }
        (&Method::POST, ["hook", kind, event]) => match AgentKind::from_name(kind) {
            Ok(kind) => {
                let event = event.to_string();
                hook(&app, kind, Some(event), req).await
            }
            Err(e) => error(StatusCode::NOT_FOUND, e),
        },
        (&Method::POST, ["hooks", "claude"]) => hook(&app, AgentKind::Claude, None, req).await,
        (&Method::GET, ["healthz"]) => healthz(&app).await,
        (&Method::GET, ["metrics"]) => Response::builder()
            .header("content-type", "text/plain; version=0.0.4")
            .body(full(
                app.metrics.render(
                    app.hub.clients.load(Relaxed),
                    app.health.healthy.load(Relaxed),
                ) + &app.audit.render()
                    + &usage::metrics_text(&app).await,
            ))
            .expect("response"),
        (&Method::GET, ["api", "agents"]) if query_param(req.uri().query(), "ids").is_some() => {
            let ids = query_param(req.uri().query(), "ids").unwrap_or_default();
            cards_of(&app, ids).await
        }
        (&Method::GET, ["api", "agents"]) => {
            // Read before the list: a page that streams events from this id misses nothing
            // committed after the list was read.
            let last_event = app.hub.last_id();
            let cards = match app.store.agents().await {
                Ok(mut rows) => {
                    rows.retain(AgentView::listed);
                    usage::cards(&app, &rows).await
                }
                Err(e) => Err(e),
            };
            match cards {
                Ok(cards) => {
                    let mut r = json_response(StatusCode::OK, &Value::Array(cards));
                    r.headers_mut()
                        .insert("x-last-event-id", HeaderValue::from(last_event));
                    r
                }
                Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
            }
        }
        (&Method::GET, ["api", "agents", id]) => match agent_view(&app, id).await {
            Ok(view) => match usage::cards(&app, std::slice::from_ref(&view)).await {
                Ok(mut cards) => json_response(StatusCode::OK, &cards.remove(0)),
                Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
            },
            Err(r) => r,
        },
        (&Method::GET, ["api", "agents", id, "usage"]) => match resolve(&app, id).await {
            Ok(agent) => match query_param(req.uri().query(), "since") {
                Some(since) => usage::agent_usage_since(&app, agent, since).await,
                None => usage::agent_usage(&app, agent).await,
            },
            Err(r) => r,
        },
        (&Method::GET, ["api", "usage"]) => usage::usage(&app, req.uri().query()).await,
        (&Method::GET, ["api", "agents", id, "turns"]) => turns(&app, id, req.uri().query()).await,
        (&Method::POST, ["api", "agents", id, "reconcile"]) => reconcile(&app, id).await,
        (&Method::GET, ["api", "agents", id, "audit"]) => audit_agent(&app, id).await,
        (&Method::GET, ["api", "audit"]) => audit_all(&app).await,
        (&Method::GET, ["api", "audit", "summary"]) => audit_summary(&app).await,
        (&Method::GET, ["api", "agents", id, "wait"]) => wait(&app, id, req.uri().query()).await,
        (&Method::POST, ["api", "agents", id, "send"]) => {
            let id = id.to_string();
            match read_body(&app, req).await {
                Ok(body) => match serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["text"].as_str().map(str::to_string))
                {
                    Some(text) if !text.trim().is_empty() => send(&app, &id, &text).await,
                    _ => error(
                        StatusCode::BAD_REQUEST,
                        "body must be {\"text\": \"…\"} with some text",
                    ),
                },
                Err(r) => r,
            }
        }
        (&Method::POST, ["api", "agents"]) => match read_body(&app, req).await {
            Ok(body) => launch::create(&app, &body).await,
            Err(r) => r,
        },
        (&Method::GET, ["api", "agents", id, "diff"]) => launch::diff(&app, id).await,
        (&Method::POST, ["api", "agents", id, "merge"]) => {
            let id = id.to_string();
            match read_body(&app, req).await {
                Ok(body) => launch::merge(&app, &id, &body).await,
                Err(r) => r,
            }
        }
        (&Method::POST, ["api", "agents", id, "discard"]) => launch::discard(&app, id).await,
        (&Method::POST, ["api", "agents", id, "fork"]) => {
            let id = id.to_string();
            match read_body(&app, req).await {
                Ok(body) => launch::fork(&app, &id, &body).await,
                Err(r) => r,
            }
        }
        (&Method::POST, ["api", "agents", id, "stop"]) => {
            let id = id.to_string();
            match read_body(&app, req).await {
                Ok(body) => launch::stop_agent(&app, &id, &body).await,
                Err(r) => r,
            }
        }
        (&Method::POST, ["api", "agents", id, "rename"]) => {
            let id = id.to_string();
            match read_body(&app, req).await {
                Ok(body) => rename(&app, &id, &body).await,
                Err(r) => r,
            }
        }
        (&Method::POST, ["api", "agents", id, "clear"]) => clear(&app, id).await,
        (&Method::POST, ["api", "agents", id, "interrupt"]) => interrupt(&app, id).await,
        (&Method::POST, ["api", "agents", id, "answer"]) => {
            let id = id.to_string();
            match read_body(&app, req).await {
                Ok(body) => {
                    let v = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
                    if v.get("answers").is_some() {
                        match headspace_core::pane::dialog::answers_of(&v) {
                            Ok(answers) => answer_questions(&app, &id, answers).await,
                            Err(e) => error(StatusCode::BAD_REQUEST, e),
                        }
                    } else {
                        match v["option"].as_u64() {
                            Some(n) => answer(&app, &id, n as usize, v["expect"].as_str()).await,
                            None => error(
                                StatusCode::BAD_REQUEST,
                                "body must be {\"option\": N}, N numbered from 1 as on screen, or {\"answers\": [...]}, one per question",
                            ),
                        }
                    }
                }
                Err(r) => r,
            }
        }
        (&Method::GET, ["api", "search"]) => search::search(&app, req.uri().query()).await,
        (&Method::GET, ["api", "machines"]) => machines_list(&app).await,
        (&Method::GET, ["api", "history"]) => search::history(&app, req.uri().query()).await,
        (&Method::POST, ["api", "prune"]) => match read_body(&app, req).await {
            Ok(body) => search::prune(&app, &body).await,
            Err(r) => r,
        },
        (&Method::GET, ["api", "push", "key"]) => push::key(&app),
        (&Method::POST, ["api", "push", "subscriptions"]) => match read_body(&app, req).await {
            Ok(body) => push::subscribe(&app, &body),
            Err(r) => r,
        },
        (&Method::POST, ["api", "push", "subscriptions", id, "delete"]) => {
            push::unsubscribe(&app, id)
        }
        (&Method::GET, ["api", "orchestrations"]) => orchestrations(&app).await,
        (&Method::GET, ["api", "orchestrate", command]) => match Command::parse(command) {
            Some(c) if !c.read_only() => post_only(&path),
            _ => {
                let project = query_param(req.uri().query(), "project").map(percent_decode);
                let machine = query_param(req.uri().query(), "machine").map(percent_decode);
                orchestrate(&app, command, project, machine).await
            }
        },
        (&Method::POST, ["api", "orchestrate", command]) => {
            let command = command.to_string();
            match read_body(&app, req).await {
                Ok(body) if command == "start" => start_orchestration(&app, &body).await,
                Ok(body) => {
                    let v = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
                    let field = |name: &str| v[name].as_str().map(str::to_string);
                    orchestrate(&app, &command, field("project"), field("machine")).await
                }
                Err(r) => r,
            }
        }
        (&Method::GET, ["api", "events"]) => events(&app, &req),
        (&Method::POST, ["api", "login"]) => match read_body(&app, req).await {
            Ok(body) => login(&app, &body).await,
            Err(r) => r,
        },
        (&Method::POST, ["api", "logout"]) => logout(),
        (&Method::GET, ["login"]) => login_link(&app, req.uri().query()).await,
        (
            &Method::GET,
            ["hook", _]
            | ["hook", _, _]
            | ["hooks", "claude"]
            | ["api", "login" | "logout" | "prune"],
        )
        | (
            &Method::GET,
            ["api", "agents", _, "reconcile" | "send" | "clear" | "interrupt" | "answer"],
        ) => post_only(&path),
        (&Method::GET, _) => static_file(&app, &path).await,
        _ => error(
            StatusCode::NOT_FOUND,
            format!("no route for {method} {path}"),
        ),
    }
}

/// Answers at once; the core does the work behind. A malformed body is refused with what was
/// wrong, and nothing else is affected.
async fn hook(
    app: &App,
    kind: AgentKind,
    event: Option<String>,
    req: Request<Incoming>,
) -> Response<Body> {
    // Claude Code's own HTTP hooks cannot add to the payload: the pane comes as a header
    // (from `$TMUX_PANE`, see `hooks install`).
    let pane = req
        .headers()
        .get(PANE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|p| p.starts_with('%') && p.len() < 32)
        .map(str::to_string);
    let body = match read_body(app, req).await {
        Ok(b) => b,
        Err(resp) => {
            app.metrics.hooks_rejected.fetch_add(1, Relaxed);
            return resp;
        }
    };
    let body = match pane {
        Some(p) => with_pane(&body, &p),
        None => body,
    };
    // The same parser the core runs on these bytes, the route's kind's.
    match kind.parse_hook(event.as_deref(), &body).map(|(h, _)| h) {
        Ok(h) if h.session_id.is_none() => {
            app.metrics.hooks_rejected.fetch_add(1, Relaxed);
            warn!(
                "[HOOK_RECEIVER] refused a {} hook without a session",
                h.event.name()
            );
            error(
                StatusCode::BAD_REQUEST,
                "the hook names no session: session_id (or headspace_session_id) is required",
            )
        }
        Ok(h) => {
            app.metrics.hook(h.event.name());
            let _ = app.core.send(Msg::Input(Input::Hook {
                agent: kind,
                event,
                body: body.to_vec(),
            }));
            json_response(StatusCode::OK, &json!({}))
        }
        Err(e) => {
            app.metrics.hooks_rejected.fetch_add(1, Relaxed);
            warn!("[HOOK_RECEIVER] refused a hook: {e}");
            error(StatusCode::BAD_REQUEST, e)
        }
    }
}

/// The header an HTTP hook names its tmux pane with.
pub const PANE_HEADER: &str = "x-headspace-pane";

/// A hook body with `tmux_pane` set to `pane` when it names none (a body that is not a JSON
/// object is kept as it is: the hook's parse says what is wrong with it).
fn with_pane(body: &[u8], pane: &str) -> bytes::Bytes {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(mut obj)) if !obj.contains_key("tmux_pane") => {
            obj.insert("tmux_pane".into(), Value::String(pane.to_string()));
            serde_json::to_vec(&obj)
                .map(bytes::Bytes::from)
                .unwrap_or_else(|_| bytes::Bytes::copy_from_slice(body))
        }
        _ => bytes::Bytes::copy_from_slice(body),
    }
}

async fn healthz(app: &App) -> Response<Body> {
    let ping = tokio::time::timeout(Duration::from_secs(2), app.store.ping()).await;
    let backlog = app.health.backlog.load(Relaxed);
    match ping {
        Ok(Ok(())) if app.health.healthy.load(Relaxed) || backlog == 0 => {
            json_response(StatusCode::OK, &json!({"status": "ok", "backlog": backlog}))
        }
        Ok(Ok(())) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "catching up", "backlog": backlog}),
        ),
        Ok(Err(e)) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "database unreachable", "error": e.to_string(), "backlog": backlog}),
        ),
        Err(_) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "database timed out", "backlog": backlog}),
        ),
    }
}

fn query_param<'a>(query: Option<&'a str>, key: &str) -> Option<&'a str> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// `GET /api/machines`: every machine writing into the database, this one included even
/// when the store keeps no machines (the in-memory store of the simulation).
async fn machines_list(app: &App) -> Response<Body> {
    match app.store.machines().await {
        Ok(rows) => {
            let mut list: Vec<Value> = rows.iter().map(|m| m.to_json()).collect();
            // A store that keeps no machines (in memory) still has this one; a hub is none.
            if app.role.has_agents() && !rows.iter().any(|m| m.name == app.machine) {
                let live = app
                    .store
                    .agents()
                    .await
                    .map_or(0, |v| v.iter().filter(|a| !a.agent.ended).count() as u64);
                let me = crate::server::machines::MachineRow {
                    name: app.machine.clone(),
                    id: 0,
                    last_seen_ms: app.clock.now().millis(),
                    online: true,
                    version: env!("CARGO_PKG_VERSION").into(),
                    agents: live,
                };
                list.push(me.to_json());
            }
            json_response(StatusCode::OK, &Value::Array(list))
        }
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}
