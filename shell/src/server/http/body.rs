//! Request and response bodies: the JSON answers, errors, bounded body reads, and a body
//! that keeps its connection marked busy while it streams.

use super::App;
use crate::server::connections::Busy;
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use std::convert::Infallible;

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
pub(super) struct GuardedBody {
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

pub(super) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

pub(super) fn json_response(status: StatusCode, v: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("cache-control", "no-store")
        .body(full(v.to_string()))
        .expect("response")
}

pub(super) fn error(status: StatusCode, message: impl std::fmt::Display) -> Response<Body> {
    json_response(status, &json!({"error": message.to_string()}))
}

/// A request's body, at most `max_body` bytes, within the header timeout: a client that
/// trickles its body must not hold a connection slot for long.
pub(super) async fn read_body(app: &App, req: Request<Incoming>) -> Result<Bytes, Response<Body>> {
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
