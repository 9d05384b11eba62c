//! The TLS options of a database URL, taken out before the PostgreSQL client reads it.
//!
//! Users write libpq's options (`sslmode=verify-full sslrootcert=/etc/ca.pem`, in the
//! key=value form or as a `postgres://…?sslmode=…` URL): the client library knows only
//! `disable`, `prefer` and `require`, and leaves certificates to its caller. So the TLS
//! options are read here, the URL is handed on without them (with `sslmode=require` when
//! TLS is needed), and `pgstore/tls.rs` checks the server's certificate as libpq would.

use std::path::PathBuf;

/// libpq's `sslmode`, as Headspace honours it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS only if asked for elsewhere; plain otherwise (the default, as before: `allow`
    /// and `prefer` connect in the clear).
    Prefer,
    /// Encrypted; the certificate checked against `sslrootcert` when one is given (libpq's
    /// rule), else not checked.
    Require,
    /// Encrypted; the certificate signed by a CA of `sslrootcert`, any host name.
    VerifyCa,
    /// Encrypted; the certificate signed by a CA of `sslrootcert` and naming the host.
    VerifyFull,
}

/// A database URL split into what the client library reads and the TLS options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbUrl {
    /// The URL without the TLS options, `sslmode=require` added when TLS is needed.
    pub client_url: String,
    /// The mode asked for.
    pub mode: SslMode,
    /// The CA file `sslrootcert` names.
    pub root_cert: Option<PathBuf>,
}

/// The options libpq has for client certificates, which Headspace does not take: refused with
/// a clear error rather than silently ignored.
const UNSUPPORTED: [&str; 4] = ["sslcert", "sslkey", "sslpassword", "sslcrl"];

/// Splits `url` (libpq key=value form or a `postgres://` / `postgresql://` URL).
pub fn split_tls(url: &str) -> Result<DbUrl, String> {
    let trimmed = url.trim();
    let is_uri = trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://");
    let (base, pairs) = if is_uri {
        match trimmed.split_once('?') {
            Some((base, query)) => (base.to_string(), query_pairs(query)?),
            None => (trimmed.to_string(), Vec::new()),
        }
    } else {
        (String::new(), keyword_pairs(trimmed)?)
    };
    let mut mode = SslMode::Prefer;
    let mut root_cert = None;
    let mut kept = Vec::new();
    for (key, value) in pairs {
        match key.as_str() {
            "sslmode" => mode = parse_mode(&value)?,
            "sslrootcert" if value == "system" => {
                return Err("sslrootcert=system is not supported: name the CA file".into())
            }
            "sslrootcert" => root_cert = Some(PathBuf::from(value)),
            k if UNSUPPORTED.contains(&k) => {
                return Err(format!(
                    "{k} is not supported: client certificates are not taken; use the database's password authentication"
                ))
            }
            _ => kept.push((key, value)),
        }
    }
    let client_mode = match mode {
        SslMode::Disable => "disable",
        SslMode::Prefer => "prefer",
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => "require",
    };
    kept.push(("sslmode".to_string(), client_mode.to_string()));
    let client_url = if is_uri {
        let query: Vec<String> = kept
            .iter()
            .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
            .collect();
        format!("{base}?{}", query.join("&"))
    } else {
        let parts: Vec<String> = kept
            .iter()
            .map(|(k, v)| format!("{k}={}", quote(v)))
            .collect();
        parts.join(" ")
    };
    Ok(DbUrl {
        client_url,
        mode,
        root_cert,
    })
}

fn parse_mode(value: &str) -> Result<SslMode, String> {
    Ok(match value {
        "disable" => SslMode::Disable,
        "allow" | "prefer" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        other => {
            return Err(format!(
            "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full"
        ))
        }
    })
}

/// The pairs of libpq's key=value form: values bare or in single quotes, `\` escaping the
/// next character in both.
fn keyword_pairs(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut chars = s.chars().peekable();
    let mut pairs = Vec::new();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!("database URL: \"{key}\" has no \"=value\""));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                    None => {
                        return Err(format!(
                            "database URL: the value of {key} has no closing quote"
                        ))
                    }
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

/// A value in single quotes, as the key=value form reads it back.
fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The `key=value` pairs of a URL's query, percent-decoded.
fn query_pairs(query: &str) -> Result<Vec<(String, String)>, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Ok((percent_decode(k)?, percent_decode(v)?))
        })
        .collect()
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("database URL: bad percent escape in {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("database URL: {s:?} is not UTF-8 once decoded"))
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{split_tls, SslMode};
    use std::path::PathBuf;

    #[test]
    fn the_tls_options_leave_the_keyword_form_and_the_rest_stays_as_written() {
        let u = split_tls("host=db.example user=hs dbname='my db' sslmode=verify-full sslrootcert='/etc/hs/ca.pem'").unwrap();
        assert_eq!(u.mode, SslMode::VerifyFull);
        assert_eq!(u.root_cert, Some(PathBuf::from("/etc/hs/ca.pem")));
        assert_eq!(
            u.client_url,
            "host='db.example' user='hs' dbname='my db' sslmode='require'"
        );
        let cfg: tokio_postgres::Config = u.client_url.parse().unwrap();
        assert_eq!(cfg.get_dbname(), Some("my db"));
        assert_eq!(cfg.get_ssl_mode(), tokio_postgres::config::SslMode::Require);
    }

    #[test]
    fn quotes_and_escapes_survive_the_round_trip() {
        let u = split_tls(r"password='it\'s a \\ secret' host = h sslmode = disable").unwrap();
        assert_eq!(u.mode, SslMode::Disable);
        let cfg: tokio_postgres::Config = u.client_url.parse().unwrap();
        assert_eq!(cfg.get_password(), Some(r"it's a \ secret".as_bytes()));
        assert_eq!(cfg.get_ssl_mode(), tokio_postgres::config::SslMode::Disable);
    }

    #[test]
    fn the_url_form_keeps_its_other_parameters() {
        let u = split_tls("postgresql://hs:pw@db.example:5433/headspace?application_name=hs&sslmode=verify-ca&sslrootcert=%2Fetc%2Fca.pem").unwrap();
        assert_eq!(u.mode, SslMode::VerifyCa);
        assert_eq!(u.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        let cfg: tokio_postgres::Config = u.client_url.parse().unwrap();
        assert_eq!(cfg.get_application_name(), Some("hs"));
        assert_eq!(cfg.get_dbname(), Some("headspace"));
        assert_eq!(cfg.get_ports(), [5433]);
        assert_eq!(cfg.get_ssl_mode(), tokio_postgres::config::SslMode::Require);
    }

    #[test]
    fn without_tls_options_nothing_changes_but_the_explicit_default() {
        let u = split_tls("host=/tmp/pg user=postgres dbname=postgres").unwrap();
        assert_eq!(u.mode, SslMode::Prefer);
        assert_eq!(u.root_cert, None);
        let cfg: tokio_postgres::Config = u.client_url.parse().unwrap();
        assert_eq!(cfg.get_ssl_mode(), tokio_postgres::config::SslMode::Prefer);
        let u = split_tls("postgres://localhost/db").unwrap();
        assert_eq!(u.client_url, "postgres://localhost/db?sslmode=prefer");
    }

    #[test]
    fn wrong_options_are_refused_with_the_reason() {
        let e = split_tls("host=h sslmode=verify_full").unwrap_err();
        assert!(e.contains("verify-full"), "{e}");
        let e = split_tls("host=h sslcert=/c.pem").unwrap_err();
        assert!(e.contains("sslcert is not supported"), "{e}");
        let e = split_tls("host=h sslrootcert=system").unwrap_err();
        assert!(e.contains("name the CA file"), "{e}");
        let e = split_tls("host=h password='open").unwrap_err();
        assert!(e.contains("closing quote"), "{e}");
        let e = split_tls("host").unwrap_err();
        assert!(e.contains("no \"=value\""), "{e}");
        let e = split_tls("postgres://h/db?sslrootcert=%zz").unwrap_err();
        assert!(e.contains("percent"), "{e}");
    }
}
