//! HTTPS served by Headspace itself (`serve --tls-cert FILE --tls-key FILE`): rustls with
//! the ring provider, the certificate chain and key read once at start. A phone installs the
//! app and takes pushes only from an HTTPS origin (or localhost); a reverse proxy in front
//! does as well (SECURITY.md).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The server's TLS: the acceptor of its certificate.
#[derive(Clone)]
pub struct Tls(pub tokio_rustls::TlsAcceptor);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

/// The acceptor for the chain in `cert` and the key in `key` (PEM), or why not.
pub fn acceptor(cert: &Path, key: &Path) -> Result<Tls, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "--tls-cert {}: no certificate in it",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: no private key in it ({e})", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert and --tls-key do not go together: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
}
