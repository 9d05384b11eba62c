//! Posting one push to a push service: HTTPS (the system's certificate authorities, rustls
//! with ring), or plain HTTP to a loopback endpoint the rules let through (tests). One
//! request per connection; the status is all that is read.

use bytes::Bytes;
use headspace_core::view::push::Endpoint;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::{Arc, OnceLock};
use tokio::net::TcpStream;

/// Where the system's certificate authorities are, when `SSL_CERT_FILE` does not say.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The TLS client, made on first use from the system's certificate authorities.
fn tls() -> Result<tokio_rustls::TlsConnector, String> {
    static CONNECTOR: OnceLock<Result<tokio_rustls::TlsConnector, String>> = OnceLock::new();
    CONNECTOR
        .get_or_init(|| {
            let file = std::env::var("SSL_CERT_FILE").unwrap_or_else(|_| SYSTEM_ROOTS.into());
            let mut roots = rustls::RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(&file)
                .map_err(|e| format!("the certificate authorities in {file}: {e}"))?;
            for cert in certs.flatten() {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(format!("no certificate authority in {file}"));
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("TLS: {e}"))?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
        })
        .clone()
}

/// The most of a push service's answer kept, for the log.
const ANSWER_BYTES: usize = 300;

/// POSTs `body` with `headers` to `endpoint`; the status the push service answered and the
/// start of its answer (why it refused, when it did).
pub async fn post(
    endpoint: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> Result<(u16, String), String> {
    let Endpoint {
        secure,
        host,
        port,
        authority,
        path,
    } = headspace_core::view::push::endpoint(endpoint)?;
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let mut request = hyper::Request::post(path.as_str()).header("host", authority.as_str());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let request = request
        .header("content-length", body.len())
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    if secure {
        let name = ServerName::try_from(host).map_err(|e| e.to_string())?;
        let stream = tls()?
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {authority}: {e}"))?;
        send(TokioIo::new(stream), request).await
    } else {
        send(TokioIo::new(tcp), request).await
    }
}

async fn send<T>(io: T, request: hyper::Request<Full<Bytes>>) -> Result<(u16, String), String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    // Read (bounded by the caller's timeout) so the connection closes cleanly; its start
    // says why a push was refused.
    let answer = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let kept = &answer[..answer.len().min(ANSWER_BYTES)];
    Ok((status, String::from_utf8_lossy(kept).into_owned()))
}
