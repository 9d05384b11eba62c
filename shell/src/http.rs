//! HTTP: hook routes, the JSON API, SSE, health, metrics and the static dashboard.

use crate::connections::{Busy, Connections};
use crate::driver::{Health, Msg};
use crate::metrics::Metrics;
use crate::orchestrate::command::{perform, Command};
use crate::orchestrate::control::ControlError;
use crate::orchestrate::files::FileError;
use crate::orchestrate::launch::{log_path, spawn_runner, Launch};
use crate::pgstore::AgentView;
use crate::sse::Hub;
use crate::world::{Panes, Store, Waited};
use bytes::Bytes;
use headspace_core::access::{percent_decode, route_path, AccessPolicy, Peer, RequestFacts};
use headspace_core::activity::{agent_activity, agent_state};
use headspace_core::hook::Hook;
use headspace_core::question::{open_question, preview, OpenQuestion};
use headspace_core::Reply;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

/// Everything a request handler needs.
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
    pub token: Option<String>,
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
}

/// A response body.
pub type Body = BoxBody<Bytes, Infallible>;

/// `body`, holding `guard` until its last frame is sent (or the client goes away).
pub fn with_guard(body: Body, guard: Busy) -> Body {
    GuardedBody {
        inner: body,
        _guard: guard,
    }
    .boxed()
}

/// A body that keeps its connection marked busy while it streams.
struct GuardedBody {
    inner: Body,
    _guard: Busy,
}

impl hyper::body::Body for GuardedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn json_response(status: StatusCode, v: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("cache-control", "no-store")
        .body(full(v.to_string()))
        .expect("response")
}

fn error(status: StatusCode, message: impl std::fmt::Display) -> Response<Body> {
    json_response(status, &json!({"error": message.to_string()}))
}

/// Handles one request from `peer`: the access checks first ([`AccessPolicy::check`]), then
/// the route; every answer forbids framing and sniffing.
pub async fn handle(
    app: Arc<App>,
    req: Request<Incoming>,
    peer: Peer,
) -> Result<Response<Body>, Infallible> {
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
    if let Err(refusal) = app.access.check(&facts, peer) {
        app.metrics.requests_refused.fetch_add(1, Relaxed);
        debug!(
            "[HTTP] refused {} {}: {}",
            facts.method, facts.path, refusal.message
        );
        let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
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

/// `POST /api/login {"token": …}`: sets the login cookie the dashboard uses off loopback
/// (`HttpOnly`, `SameSite=Strict`: no script and no other site can send or read it).
async fn login(app: &App, body: &[u8]) -> Response<Body> {
    let Some(cookie) = app.access.login_cookie() else {
        return json_response(
            StatusCode::OK,
            &json!({"status": "open", "message": "this server needs no token"}),
        );
    };
    let token = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["token"].as_str().map(str::to_string));
    match token {
        Some(t) if app.access.token_matches(&t) => {
            let mut r = json_response(StatusCode::OK, &json!({"status": "logged in"}));
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                r.headers_mut().insert("set-cookie", v);
            }
            r
        }
        Some(_) => {
            // Guessing costs time; the user typing a wrong token barely notices.
            tokio::time::sleep(Duration::from_millis(500)).await;
            warn!("[HTTP] a login with a wrong token");
            error(StatusCode::UNAUTHORIZED, "wrong token")
        }
        None => error(StatusCode::BAD_REQUEST, "body must be {\"token\": \"…\"}"),
    }
}

/// `POST /api/logout`: forgets the login cookie.
fn logout() -> Response<Body> {
    let mut r = json_response(StatusCode::OK, &json!({"status": "logged out"}));
    r.headers_mut().insert(
        "set-cookie",
        HeaderValue::from_static("headspace_login=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
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
    match (&method, segments.as_slice()) {
        (&Method::POST, ["hook", event]) => {
            let event = event.to_string();
            hook(&app, Some(event), req).await
        }
        (&Method::POST, ["hooks", "claude"]) => hook(&app, None, req).await,
        (&Method::GET, ["healthz"]) => healthz(&app).await,
        (&Method::GET, ["metrics"]) => Response::builder()
            .header("content-type", "text/plain; version=0.0.4")
            .body(full(app.metrics.render(
                app.hub.clients.load(Relaxed),
                app.health.healthy.load(Relaxed),
            )))
            .expect("response"),
        (&Method::GET, ["api", "agents"]) => {
            // Read before the list: a page that streams events from this id misses nothing
            // committed after the list was read.
            let last_event = app.hub.last_id();
            match app.store.agents().await {
                Ok(rows) => {
                    let mut r = json_response(
                        StatusCode::OK,
                        &Value::Array(rows.iter().map(agent_json).collect()),
                    );
                    r.headers_mut()
                        .insert("x-last-event-id", HeaderValue::from(last_event));
                    r
                }
                Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
            }
        }
        (&Method::GET, ["api", "agents", id]) => {
            with_agent(&app, id, |row| {
                json_response(StatusCode::OK, &agent_json(row))
            })
            .await
        }
        (&Method::GET, ["api", "agents", id, "turns"]) => turns(&app, id, req.uri().query()).await,
        (&Method::POST, ["api", "agents", id, "reconcile"]) => reconcile(&app, id).await,
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
        (&Method::POST, ["api", "agents", id, "clear"]) => send(&app, id, "/clear").await,
        (&Method::POST, ["api", "agents", id, "interrupt"]) => interrupt(&app, id).await,
        (&Method::POST, ["api", "agents", id, "answer"]) => {
            let id = id.to_string();
            match read_body(&app, req).await {
                Ok(body) => match serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["option"].as_u64())
                {
                    Some(n) => answer(&app, &id, n as usize).await,
                    None => error(
                        StatusCode::BAD_REQUEST,
                        "body must be {\"option\": N}, N numbered from 1 as on screen",
                    ),
                },
                Err(r) => r,
            }
        }
        (&Method::GET, ["api", "orchestrations"]) => orchestrations(&app).await,
        (&Method::GET, ["api", "orchestrate", command]) => match Command::parse(command) {
            Some(c) if !c.read_only() => post_only(&path),
            _ => {
                let project = query_param(req.uri().query(), "project").map(percent_decode);
                orchestrate(&app, command, project).await
            }
        },
        (&Method::POST, ["api", "orchestrate", command]) => {
            let command = command.to_string();
            match read_body(&app, req).await {
                Ok(body) if command == "start" => start_orchestration(&app, &body).await,
                Ok(body) => {
                    let project = serde_json::from_slice::<Value>(&body)
                        .ok()
                        .and_then(|v| v["project"].as_str().map(str::to_string));
                    orchestrate(&app, &command, project).await
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
        (&Method::GET, ["hook", _] | ["hooks", "claude"] | ["api", "login" | "logout"])
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

/// A request's body, at most `max_body` bytes, within the header timeout: a client that
/// trickles its body must not hold a connection slot for long.
async fn read_body(app: &App, req: Request<Incoming>) -> Result<Bytes, Response<Body>> {
    let read = Limited::new(req.into_body(), app.max_body).collect();
    let Ok(collected) = tokio::time::timeout(app.header_timeout, read).await else {
        return Err(error(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the body did not arrive within {} s",
                app.header_timeout.as_secs_f64()
            ),
        ));
    };
    match collected {
        Ok(b) => Ok(b.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("body larger than {} bytes", app.max_body),
            ))
        }
        Err(e) => Err(error(
            StatusCode::BAD_REQUEST,
            format!("cannot read body: {e}"),
        )),
    }
}

/// Answers at once; the core does the work behind. A malformed body is refused with what was
/// wrong, and nothing else is affected.
async fn hook(app: &App, event: Option<String>, req: Request<Incoming>) -> Response<Body> {
    let body = match read_body(app, req).await {
        Ok(b) => b,
        Err(resp) => {
            app.metrics.hooks_rejected.fetch_add(1, Relaxed);
            return resp;
        }
    };
    match Hook::parse(event.as_deref(), &body) {
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
            let _ = app.core.send(Msg::Hook {
                event,
                body: body.to_vec(),
            });
            json_response(StatusCode::OK, &json!({}))
        }
        Err(e) => {
            app.metrics.hooks_rejected.fetch_add(1, Relaxed);
            warn!("[HOOK_RECEIVER] refused a hook: {e}");
            error(StatusCode::BAD_REQUEST, e)
        }
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

/// The JSON of an agent as the API shows it.
pub fn agent_json(v: &AgentView) -> Value {
    let (a, task) = (&v.agent, v.task.as_ref());
    json!({
        "id": a.id,
        "session_id": a.session_id,
        "sessions": a.sessions,
        "project": a.project,
        "cwd": a.cwd,
        "transcript_path": a.transcript_path,
        "tmux_pane": a.tmux_pane,
        "state": agent_state(task).as_str(),
        "activity": agent_activity(a, task).as_str(),
        "task_id": task.map(|t| t.id),
        "state_since": task.map(|t| t.state_since),
        "command": v.command.as_deref().map(|c| preview(c).0),
        "last_turn": v.last_turn.as_ref().map(|l| {
            let (text, truncated) = preview(&l.text);
            json!({"actor": l.actor, "intent": l.intent, "text": text, "truncated": truncated, "timestamp": l.timestamp})
        }),
        "question": open_question_of(v).map(|q| q.to_json()),
        "last_seen_at": a.last_seen_at,
        "turn_count": v.turn_count,
    })
}

/// The question the agent waits on (the core decides which one counts).
fn open_question_of(v: &AgentView) -> Option<OpenQuestion> {
    open_question(
        v.agent.permission.as_ref(),
        v.question
            .as_ref()
            .map(|(text, q)| (text.as_str(), q.as_ref())),
    )
}

async fn resolve(app: &App, reference: &str) -> Result<u64, Response<Body>> {
    match app.store.resolve(reference).await {
        Ok(Some(id)) => Ok(id),
        Ok(None) => Err(error(
            StatusCode::NOT_FOUND,
            format!("no agent {reference}"),
        )),
        Err(e) => Err(error(StatusCode::SERVICE_UNAVAILABLE, e)),
    }
}

/// The agent a reference names, with its card; or the response that says why not.
async fn agent_view(app: &App, reference: &str) -> Result<AgentView, Response<Body>> {
    let id = resolve(app, reference).await?;
    match app.store.agent(id).await {
        Ok(Some(view)) => Ok(view),
        Ok(None) => Err(error(
            StatusCode::NOT_FOUND,
            format!("no agent {reference}"),
        )),
        Err(e) => Err(error(StatusCode::SERVICE_UNAVAILABLE, e)),
    }
}

/// The 409 for an agent with no tmux pane to type into.
fn no_pane(reference: &str) -> Response<Body> {
    error(
        StatusCode::CONFLICT,
        format!("agent {reference} has no tmux pane to type into"),
    )
}

async fn with_agent(
    app: &App,
    reference: &str,
    f: impl FnOnce(&AgentView) -> Response<Body>,
) -> Response<Body> {
    match agent_view(app, reference).await {
        Ok(view) => f(&view),
        Err(r) => r,
    }
}

fn query_param<'a>(query: Option<&'a str>, key: &str) -> Option<&'a str> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

async fn turns(app: &App, reference: &str, query: Option<&str>) -> Response<Body> {
    let id = match resolve(app, reference).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    let after = match query_param(query, "after").map(str::parse::<u64>) {
        None => None,
        Some(Ok(a)) => Some(a),
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "after must be a turn id"),
    };
    let limit = match query_param(query, "limit").map(str::parse::<i64>) {
        None => 100_000,
        Some(Ok(l)) if (1..=100_000).contains(&l) => l,
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "limit must be between 1 and 100000",
            )
        }
    };
    match app.store.turns(id, after, limit).await {
        Ok(rows) => json_response(
            StatusCode::OK,
            &Value::Array(rows.iter().map(headspace_core::engine::turn_json).collect()),
        ),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

async fn reconcile(app: &App, reference: &str) -> Response<Body> {
    let id = match resolve(app, reference).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    let run = Box::pin(async {
        let (tx, rx) = oneshot::channel();
        let _ = app.core.send(Msg::Reconcile {
            agent: id.to_string(),
            reply: tx,
        });
        match tokio::time::timeout(app.reconcile_budget, rx).await {
            Ok(Ok(reply)) => Waited::Reply(reply),
            Ok(Err(_)) => Waited::CoreStopped,
            Err(_) => Waited::StillRunning,
        }
    });
    let waited = app.store.with_reconcile_lock(id, run).await;
    let busy =
        json!({"status": "ok", "created": 0, "message": "Reconciliation already in progress"});
    match waited {
        Ok(None) | Ok(Some(Waited::Reply(Reply::ReconcileBusy))) => {
            json_response(StatusCode::OK, &busy)
        }
        Ok(Some(Waited::Reply(Reply::Reconciled { created, .. }))) => {
            json_response(StatusCode::OK, &json!({"status": "ok", "created": created}))
        }
        Ok(Some(Waited::Reply(Reply::UnknownAgent))) => {
            error(StatusCode::NOT_FOUND, format!("no agent {reference}"))
        }
        Ok(Some(Waited::CoreStopped)) => error(StatusCode::SERVICE_UNAVAILABLE, "the core stopped"),
        // Still running (a huge transcript, or the database is down): it goes on behind.
        Ok(Some(Waited::StillRunning)) => json_response(
            StatusCode::OK,
            &json!({"status": "partial", "created": 0, "remaining": 1}),
        ),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Long-polls until the agent is idle (finished its turn, waiting for input, or ended): two
/// consecutive idle readings a quarter second apart, so a transient never counts.
async fn wait(app: &App, reference: &str, query: Option<&str>) -> Response<Body> {
    let id = match resolve(app, reference).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    let timeout = match query_param(query, "timeout").map(str::parse::<f64>) {
        None => 600.0,
        Some(Ok(t)) if (0.0..=86_400.0).contains(&t) => t,
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "timeout must be a number of seconds",
            )
        }
    };
    // tokio's clock, so the simulation's virtual time drives it too.
    let started = tokio::time::Instant::now();
    let deadline = started + Duration::from_secs_f64(timeout);
    let mut idle_readings = 0;
    loop {
        let activity = match app.store.agent(id).await {
            Ok(Some(v)) => agent_activity(&v.agent, v.task.as_ref()),
            Ok(None) => return error(StatusCode::NOT_FOUND, format!("no agent {reference}")),
            Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e),
        };
        idle_readings = if activity == headspace_core::Activity::Running {
            0
        } else {
            idle_readings + 1
        };
        let waited_ms = started.elapsed().as_millis() as u64;
        if idle_readings >= 2 {
            return json_response(
                StatusCode::OK,
                &json!({"status": "idle", "activity": activity.as_str(), "waited_ms": waited_ms}),
            );
        }
        if tokio::time::Instant::now() >= deadline {
            return json_response(
                StatusCode::OK,
                &json!({"status": "timeout", "activity": activity.as_str(), "waited_ms": waited_ms}),
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Every project of a known agent that has an orchestration: its status, with `project`.
async fn orchestrations(app: &App) -> Response<Body> {
    let projects = match agent_projects(app).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (token, addr) = (app.token.clone(), app.self_addr.clone());
    let found = tokio::task::spawn_blocking(move || {
        projects
            .into_iter()
            .filter(|p| p.join(".specflow/workflows").is_dir())
            .filter_map(|p| {
                let mut v = perform(&p, Command::Status, Some(addr.clone()), token.clone()).ok()?;
                v["project"] = json!(p);
                Some(v)
            })
            .collect::<Vec<Value>>()
    })
    .await
    .unwrap_or_default();
    json_response(StatusCode::OK, &Value::Array(found))
}

/// The folders of the agents the server knows, as they are on disk (canonical; folders that
/// are gone are left out).
async fn agent_projects(app: &App) -> Result<std::collections::BTreeSet<PathBuf>, Response<Body>> {
    let agents = app
        .store
        .agents()
        .await
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, e))?;
    Ok(agents
        .iter()
        .filter_map(|v| v.agent.cwd.as_deref())
        .filter_map(|cwd| std::fs::canonicalize(cwd).ok())
        .collect())
}

/// The project folder a request names, if it is the folder of an agent the server knows:
/// the routes act on the user's own projects, not on any folder a request names.
async fn known_project(app: &App, project: &str) -> Result<PathBuf, Response<Body>> {
    let wanted = std::fs::canonicalize(project).map_err(|e| {
        error(
            StatusCode::NOT_FOUND,
            format!("project {project}: no such directory ({e})"),
        )
    })?;
    if agent_projects(app).await?.contains(&wanted) {
        Ok(wanted)
    } else {
        Err(error(
            StatusCode::FORBIDDEN,
            format!("project {project} is no known agent's folder; start an agent there first"),
        ))
    }
}

/// An orchestration command on a project (`status` and `decide` by GET, the rest by POST).
async fn orchestrate(app: &App, command: &str, project: Option<String>) -> Response<Body> {
    let Some(command) = Command::parse(command) else {
        let names: Vec<&str> = Command::ALL.iter().map(|c| c.name()).collect();
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "no orchestration command {command:?}; there are start, {}",
                names.join(", ")
            ),
        );
    };
    let Some(project) = project.filter(|p| !p.trim().is_empty()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "name the project folder: ?project=DIR, or {\"project\": DIR} in the body",
        );
    };
    let project = match known_project(app, &project).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (token, addr) = (app.token.clone(), Some(app.self_addr.clone()));
    let done = tokio::task::spawn_blocking(move || perform(&project, command, addr, token)).await;
    match done {
        Ok(Ok(v)) => json_response(StatusCode::OK, &v),
        Ok(Err(e)) => {
            let status = match &e {
                ControlError::File(FileError::Corrupt { .. }) => StatusCode::UNPROCESSABLE_ENTITY,
                ControlError::File(FileError::Io { .. }) => StatusCode::INTERNAL_SERVER_ERROR,
                ControlError::File(_) | ControlError::NoOrchestration(_) => StatusCode::NOT_FOUND,
                ControlError::Refused(_) => StatusCode::CONFLICT,
            };
            error(status, e.to_string())
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Starts a runner for a project (the dashboard's play button); it talks back to this server.
async fn start_orchestration(app: &App, body: &[u8]) -> Response<Body> {
    let launch: Launch = match serde_json::from_slice(body) {
        Ok(l) => l,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("body must be {{\"project\": DIR, \"agent\": ID, \"auto_merge\"?: bool, \"budget\"?: dollars}}: {e}"),
            )
        }
    };
    let launch = match known_project(app, &launch.project.to_string_lossy()).await {
        Ok(project) => Launch { project, ..launch },
        Err(r) => return r,
    };
    if launch.agent.trim().is_empty() || launch.agent.starts_with('-') {
        return error(
            StatusCode::BAD_REQUEST,
            "name the agent that runs the steps",
        );
    }
    if launch.budget.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
        return error(
            StatusCode::BAD_REQUEST,
            "the budget must be a positive number of dollars",
        );
    }
    // The runner talks back to this server at its own address, never one a request names.
    match spawn_runner(&launch, &app.self_addr, app.token.as_deref()) {
        Ok(pid) => json_response(
            StatusCode::OK,
            &json!({"status": "started", "pid": pid, "log": log_path(&launch.project)}),
        ),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

/// Picks an option of the question the agent waits on, in its pane. The question clears
/// when the agent goes on (its answer line or PostToolUse hook, or the dialog leaving the pane).
async fn answer(app: &App, reference: &str, n: usize) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Some(question) = open_question_of(&view) else {
        return error(
            StatusCode::CONFLICT,
            format!("agent {reference} is not waiting on a question"),
        );
    };
    let label = match question.choose(n) {
        Ok(l) => l,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let Some(pane) = view.agent.tmux_pane.clone() else {
        return no_pane(reference);
    };
    match app.panes.choose(&pane, n, &label).await {
        Ok(s) => json_response(
            StatusCode::OK,
            &json!({"status": "answered", "pane": pane, "option": n, "label": label, "question": question.text, "verified": s.verified, "retried_enter": s.retried_enter}),
        ),
        Err(e) => error(
            StatusCode::BAD_GATEWAY,
            format!("could not answer in pane {pane}: {e}"),
        ),
    }
}

/// Presses Escape in the agent's pane (an orchestration cancelling a step), through the
/// server's own tmux socket.
async fn interrupt(app: &App, reference: &str) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Some(pane) = view.agent.tmux_pane.clone() else {
        return no_pane(reference);
    };
    match app.panes.interrupt(&pane).await {
        Ok(()) => json_response(
            StatusCode::OK,
            &json!({"status": "interrupted", "pane": pane}),
        ),
        Err(e) => error(
            StatusCode::BAD_GATEWAY,
            format!("could not press Escape in pane {pane}: {e}"),
        ),
    }
}

/// Types text into the agent's pane. The core hears of it first, so the agent counts as
/// running from this moment: a `wait` right after never sees a false idle.
async fn send(app: &App, reference: &str, text: &str) -> Response<Body> {
    let view = match agent_view(app, reference).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Some(pane) = view.agent.tmux_pane.clone() else {
        return no_pane(reference);
    };
    let id = view.agent.id;
    let _ = app.core.send(Msg::Sent(id.to_string(), text.to_string()));
    match app.panes.send(&pane, text).await {
        Ok(s) => json_response(
            StatusCode::OK,
            &json!({"status": "sent", "pane": pane, "verified": s.verified, "retried_enter": s.retried_enter, "cleared_input": s.cleared_input}),
        ),
        Err(e) => error(
            StatusCode::BAD_GATEWAY,
            format!("could not type into pane {pane}: {e}"),
        ),
    }
}

fn events(app: &App, req: &Request<Incoming>) -> Response<Body> {
    let last = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or_else(|| query_param(req.uri().query(), "last_event_id").and_then(|v| v.parse().ok()));
    let rx = app.hub.connect(last, Duration::from_secs(15));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        .header("x-accel-buffering", "no")
        .body(BodyExt::boxed(http_body_util::StreamBody::new(stream)))
        .expect("response")
}

async fn static_file(app: &App, path: &str) -> Response<Body> {
    let rel = if path == "/" {
        "index.html"
    } else {
        path.trim_start_matches('/')
    };
    if rel.split('/').any(|c| c == ".." || c.starts_with('.')) {
        return error(StatusCode::NOT_FOUND, "not found");
    }
    let file = app.static_dir.join(rel);
    match tokio::fs::read(&file).await {
        Ok(bytes) => {
            let ct = match file.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html; charset=utf-8",
                Some("css") => "text/css; charset=utf-8",
                Some("js") => "text/javascript; charset=utf-8",
                Some("svg") => "image/svg+xml",
                Some("png") => "image/png",
                Some("json") => "application/json",
                _ => "application/octet-stream",
            };
            Response::builder()
                .header("content-type", ct)
                .header(
                    "content-security-policy",
                    "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
                )
                .body(full(bytes))
                .expect("response")
        }
        Err(_) => {
            debug!("static file not found: {rel}");
            error(StatusCode::NOT_FOUND, format!("not found: {path}"))
        }
    }
}
