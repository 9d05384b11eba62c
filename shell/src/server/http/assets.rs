//! The dashboard's files and its event stream.

use super::body::{error, full, Body};
use super::{query_param, App};
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::time::Duration;
use tracing::debug;

pub(super) fn events(app: &App, req: &Request<Incoming>) -> Response<Body> {
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

pub(super) async fn static_file(app: &App, path: &str) -> Response<Body> {
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
                Some("webmanifest") => "application/manifest+json",
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
