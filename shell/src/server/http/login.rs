//! Logging a browser in with the server's token, and out: the login link `headspace serve`
//! prints (`GET /login?token=…`, as Jupyter's), and the dashboard's own form
//! (`POST /api/login`). Either sets the login cookie: `HttpOnly` (no script reads it),
//! `SameSite=Strict` (no other site sends it), `Secure` when browsers come over HTTPS. A
//! wrong token waits its turn at the guess gate, as on every route.

use super::body::{error, full, json_response, Body};
use super::App;
use headspace_core::access::percent_decode;
use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use tracing::warn;

/// `POST /api/login {"token": …}`: the dashboard's login form.
pub(super) async fn login(app: &App, body: &[u8]) -> Response<Body> {
    let token = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["token"].as_str().map(str::to_string));
    match token {
        Some(t) if app.access.token_matches(&t) => {
            let mut r = json_response(StatusCode::OK, &json!({"status": "logged in"}));
            set_login_cookie(app, &mut r);
            r
        }
        Some(_) => {
            app.guesses.pay().await;
            warn!("[HTTP] a login with a wrong token");
            error(StatusCode::UNAUTHORIZED, "wrong token")
        }
        None => error(StatusCode::BAD_REQUEST, "body must be {\"token\": \"…\"}"),
    }
}

/// `GET /login?token=…`: the link `headspace serve` prints. The right token sets the cookie
/// and sends the browser on to the dashboard, which drops the token from the address bar
/// (and from the history's current entry); nothing is cached.
pub(super) async fn login_link(app: &App, query: Option<&str>) -> Response<Body> {
    let token = query
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(percent_decode);
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return redirect_home();
    };
    if !app.access.token_matches(&token) {
        app.guesses.pay().await;
        warn!("[HTTP] a login link with a wrong token");
        let mut r = Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header("content-type", "text/plain; charset=utf-8")
            .header("cache-control", "no-store")
            .body(full(
                "This login link holds a wrong or old token. `headspace serve` prints the \
                 current link when it starts; the token is in $HEADSPACE_HOME/token.\n",
            ))
            .expect("response");
        r.headers_mut()
            .insert("referrer-policy", HeaderValue::from_static("no-referrer"));
        return r;
    }
    let mut r = redirect_home();
    set_login_cookie(app, &mut r);
    r
}

/// 303 to the dashboard, never cached.
fn redirect_home() -> Response<Body> {
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header("location", "/")
        .header("cache-control", "no-store")
        .body(full(""))
        .expect("response")
}

fn set_login_cookie(app: &App, r: &mut Response<Body>) {
    if let Ok(v) = HeaderValue::from_str(&app.access.login_cookie(app.https)) {
        r.headers_mut().insert("set-cookie", v);
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
