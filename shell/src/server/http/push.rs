//! The push routes (CONTRACT.md, "Away from the desk"): the key pages subscribe with, and
//! subscribing and unsubscribing a device. Behind the token like every `/api` route; a
//! subscription is checked by the core's rules before it is kept.

use super::body::{error, json_response, Body};
use super::App;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

/// The 501 of a server that pushes nothing (the simulation's).
fn no_push() -> Response<Body> {
    error(
        StatusCode::NOT_IMPLEMENTED,
        "this server sends no pushes (it has no home folder for the push key)",
    )
}

/// `GET /api/push/key`: `{"public_key"}`.
pub(super) fn key(app: &App) -> Response<Body> {
    match &app.push {
        Some(push) => json_response(StatusCode::OK, &json!({"public_key": push.public_key()})),
        None => no_push(),
    }
}

/// `POST /api/push/subscriptions`: 201 `{"id"}` for a new device, 200 for one known already.
pub(super) fn subscribe(app: &App, body: &[u8]) -> Response<Body> {
    let Some(push) = &app.push else {
        return no_push();
    };
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the body must be a subscription as JSON (PushSubscription.toJSON())",
        );
    };
    match push.subscribe(&v) {
        Ok((id, true)) => json_response(StatusCode::CREATED, &json!({"id": id})),
        Ok((id, false)) => json_response(StatusCode::OK, &json!({"id": id})),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

/// `POST /api/push/subscriptions/{id}/delete`: 200, or 404 for an id not subscribed.
pub(super) fn unsubscribe(app: &App, id: &str) -> Response<Body> {
    let Some(push) = &app.push else {
        return no_push();
    };
    match push.unsubscribe(id) {
        Ok(true) => json_response(StatusCode::OK, &json!({"id": id, "deleted": true})),
        Ok(false) => error(StatusCode::NOT_FOUND, format!("no subscription {id}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}
