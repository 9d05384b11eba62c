//! TLS to PostgreSQL, as libpq's `sslmode` promises it (docs/multi-machine.md, "Security"):
//! edges and hubs on other machines reach the shared database over the network, and the
//! only thing between them is PostgreSQL's own authentication and TLS. `verify-full` checks
//! that a CA of `sslrootcert` signed the server's certificate and that it names the host;
//! `verify-ca` the signature only; `require` encrypts (and checks the signature when a CA
//! file is given, as libpq does). rustls with the ring provider: no system OpenSSL.

use super::db_url::{split_tls, DbUrl, SslMode};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Where and how to connect: the client library's config and, when TLS is asked for, the
/// connector that checks the server's certificate.
#[derive(Clone)]
pub struct DbTarget {
    /// The connection options without the TLS ones.
    pub config: tokio_postgres::Config,
    /// `None`: no TLS (`disable`, or `prefer`/`allow`, which connect in the clear).
    pub tls: Option<MakeRustlsConnect>,
}

impl DbTarget {
    /// Reads a database URL (libpq's key=value form or a `postgres://` URL) and, for a mode
    /// that checks certificates, its CA file.
    pub fn parse(url: &str) -> Result<DbTarget, String> {
        let split = split_tls(url)?;
        let config = split
            .client_url
            .parse::<tokio_postgres::Config>()
            .map_err(|e| format!("database URL: {e}"))?;
        Ok(DbTarget {
            config,
            tls: connector(&split)?,
        })
    }
}

/// libpq's default CA file, `~/.postgresql/root.crt`.
fn default_root_cert() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".postgresql/root.crt"))
}

/// The connector for the mode asked for, `None` without TLS.
fn connector(url: &DbUrl) -> Result<Option<MakeRustlsConnect>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let given = url.root_cert.clone();
    let default = default_root_cert().filter(|p| p.is_file());
    let verifier: Arc<dyn ServerCertVerifier> = match url.mode {
        SslMode::Disable | SslMode::Prefer => return Ok(None),
        SslMode::Require => match given.or(default) {
            Some(ca) => Arc::new(ChainOnly(webpki(&ca, &provider)?)),
            None => Arc::new(EncryptOnly(provider.clone())),
        },
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let ca = given.or(default).ok_or_else(|| {
                "sslmode=verify-ca and verify-full need the CA that signed the server's certificate: sslrootcert=FILE (or ~/.postgresql/root.crt)".to_string()
            })?;
            let checked = webpki(&ca, &provider)?;
            if url.mode == SslMode::VerifyFull {
                checked
            } else {
                Arc::new(ChainOnly(checked))
            }
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

/// The standard check (chain to a CA of the file, validity, host name) with the file's CAs.
fn webpki(ca: &Path, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, String> {
    let shown = ca.display();
    let certs = CertificateDer::pem_file_iter(ca)
        .map_err(|e| format!("sslrootcert {shown}: cannot read it: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("sslrootcert {shown}: not a PEM certificate file: {e}"))?;
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!(
            "sslrootcert {shown}: holds no usable CA certificate"
        ));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("sslrootcert {shown}: {e}"))
}

/// `verify-ca`: the chain must hold; the name the certificate gives is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The chain is checked before the name: a name error means the chain held.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `require` without a CA file: encrypted, the certificate not checked (libpq's meaning);
/// the handshake's signatures still are, so the session is bound to the key presented.
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
