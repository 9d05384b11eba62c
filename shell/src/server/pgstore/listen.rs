//! Waking on `NOTIFY`: a connection of its own that `LISTEN`s on one channel, reopened with
//! a pause whenever it drops. A hub's fan-out (`hs_events`) and every edge's pane-command
//! executor (`pane_commands`) wake on it; both also look once a second on their own, which
//! covers a notification lost with its connection.

use super::tls::DbTarget;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls, Socket};
use tracing::debug;

/// How long a dropped listening connection waits before it is reopened.
const REOPEN_AFTER: Duration = Duration::from_secs(1);

/// Listens on `channel` for as long as the process runs; the returned [`Notify`] is woken
/// for every notification whose payload is `payload` (any payload when `None`), and once
/// each time listening (re)starts, so that whatever came while no one listened is looked at.
pub fn wake_on(url: String, channel: &'static str, payload: Option<String>) -> Arc<Notify> {
    let wake = Arc::new(Notify::new());
    let woken = wake.clone();
    tokio::spawn(async move {
        loop {
            match listen_once(&url, channel, payload.as_deref(), &woken).await {
                Ok(()) => debug!("[LISTEN] {channel}: the connection closed; reopening"),
                Err(e) => debug!("[LISTEN] {channel}: cannot listen: {e}"),
            }
            tokio::time::sleep(REOPEN_AFTER).await;
        }
    });
    wake
}

async fn listen_once(
    url: &str,
    channel: &str,
    payload: Option<&str>,
    wake: &Notify,
) -> Result<(), String> {
    let target = DbTarget::parse(url)?;
    let listened = match target.tls {
        Some(tls) => match target.config.connect(tls).await {
            Ok(c) => listen_on(c, channel, payload, wake).await,
            Err(e) => Err(e),
        },
        None => match target.config.connect(NoTls).await {
            Ok(c) => listen_on(c, channel, payload, wake).await,
            Err(e) => Err(e),
        },
    };
    listened.map_err(|e| e.to_string())
}

/// Listens on an open connection (plain or TLS) until it fails or ends.
async fn listen_on<T>(
    (client, mut connection): (Client, Connection<Socket, T>),
    channel: &str,
    payload: Option<&str>,
    wake: &Notify,
) -> Result<(), tokio_postgres::Error>
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let listen = async {
        client.batch_execute(&format!("LISTEN {channel}")).await?;
        wake.notify_one();
        // Keep the client alive while the connection is polled below.
        std::future::pending::<Result<(), tokio_postgres::Error>>().await
    };
    let poll = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n)))
                    if payload.is_none_or(|p| p == n.payload()) =>
                {
                    wake.notify_one()
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    };
    tokio::select! {
        r = listen => r,
        r = poll => r,
    }
}
