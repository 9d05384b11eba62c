//! Logging a browser in with the server's token (off loopback), and out.

use super::body::{error, json_response, Body};
use super::App;
use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;
use tracing::warn;

/// `POST /api/login {"token": …}`: sets the login cookie the dashboard uses off loopback
/// (`HttpOnly`, `SameSite=Strict`: no script and no other site can send or read it).
pub(super) async fn login(app: &App, body: &[u8]) -> Response<Body> {
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
pub(super) fn logout() -> Response<Body> {
    let mut r = json_response(StatusCode::OK, &json!({"status": "logged out"}));
    r.headers_mut().insert(
        "set-cookie",
        HeaderValue::from_static("headspace_login=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    r
}
