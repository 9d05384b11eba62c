//! Pushes to the user's devices (docs/away.md, CONTRACT.md "Away from the desk"): the same
//! notices the page and `--notify-command` get ([`crate::server::notifier`]), encrypted for
//! each subscribed device and posted to its push service, in the background: a slow or
//! failing push service never holds up a hook, a turn or another device. A subscription
//! its push service says is gone (404, 410) is forgotten.

pub mod book;
pub mod encrypt;
pub mod send;
pub mod vapid;

use book::Book;
use headspace_core::view::push::{
    audience, delivery, message, refusal_hint, subscription, urgency, Delivery, TTL_SECONDS,
};
use headspace_core::Timestamp;
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::{debug, info, warn};
use vapid::Vapid;

/// How long one push may take, connection to answer.
const SEND_TIME: Duration = Duration::from_secs(15);

/// The server's key and the devices subscribed to it.
#[derive(Debug)]
pub struct Push {
    vapid: Vapid,
    book: Mutex<Book>,
    /// Whether a loopback `http://` endpoint is taken (`--allow-loopback-push`, for tests).
    allow_loopback: bool,
}

impl Push {
    /// The key and the book in `home` (both made when missing).
    pub fn load(home: &Path, contact: String, allow_loopback: bool) -> Result<Arc<Push>, String> {
        Ok(Arc::new(Push {
            vapid: Vapid::load(home, contact)?,
            book: Mutex::new(Book::load(home, allow_loopback)?),
            allow_loopback,
        }))
    }

    /// The public key pages subscribe with (base64url).
    pub fn public_key(&self) -> String {
        self.vapid.public_key()
    }

    /// Takes the subscription a page sent; its id and whether it is new, or why not.
    pub fn subscribe(&self, body: &Value) -> Result<(String, bool), String> {
        let s = subscription(body, self.allow_loopback)?;
        self.book.lock().expect("push book").add(s)
    }

    /// Forgets subscription `id`; whether there was one.
    pub fn unsubscribe(&self, id: &str) -> Result<bool, String> {
        self.book.lock().expect("push book").remove(id)
    }

    /// Pushes `notice` to every subscribed device, each in its own task; `now` dates the
    /// pushes' tokens.
    pub fn notify(self: &Arc<Self>, notice: &Value, now: Timestamp) {
        let subscriptions = self.book.lock().expect("push book").all();
        if subscriptions.is_empty() {
            return;
        }
        let message = message(notice);
        info!(
            "[PUSH] {} for agent {} to {} device(s)",
            message["kind"].as_str().unwrap_or("notice"),
            message["agent_id"],
            subscriptions.len()
        );
        for (id, s) in subscriptions {
            let push = self.clone();
            let message = message.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(SEND_TIME, push.send(&s, &message, now)).await {
                    Ok(Ok((status, answer))) => match delivery(status) {
                        Delivery::Taken => debug!("[PUSH] {id}: taken ({status})"),
                        Delivery::Gone => {
                            info!("[PUSH] {id}: the push service says it is gone ({status}); forgotten");
                            if let Err(e) = push.unsubscribe(&id) {
                                warn!("[PUSH] cannot forget {id}: {e}");
                            }
                        }
                        Delivery::Failed => warn!(
                            "[PUSH] {id}: refused ({status}: {}); kept{}",
                            answer.trim(),
                            refusal_hint(status, &s.endpoint, push.vapid.contact())
                        ),
                    },
                    Ok(Err(e)) => warn!("[PUSH] {id}: not sent: {e}"),
                    Err(_) => warn!("[PUSH] {id}: no answer within {}s", SEND_TIME.as_secs()),
                }
            });
        }
    }

    /// Encrypts, signs and posts one push; the push service's status and answer.
    async fn send(
        &self,
        s: &headspace_core::view::push::Subscription,
        message: &Value,
        now: Timestamp,
    ) -> Result<(u16, String), String> {
        let body = encrypt::encrypt(message.to_string().as_bytes(), &s.p256dh, &s.auth)?;
        let audience = audience(&s.endpoint).ok_or("the endpoint has no origin")?;
        let now = now.millis() / 1000;
        let headers = [
            ("authorization", self.vapid.authorization(&audience, now)?),
            ("ttl", TTL_SECONDS.to_string()),
            ("urgency", urgency(message).to_string()),
            ("content-encoding", "aes128gcm".to_string()),
            ("content-type", "application/octet-stream".to_string()),
        ];
        send::post(&s.endpoint, &headers, body).await
    }
}
