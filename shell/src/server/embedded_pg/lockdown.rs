//! What keeps the embedded cluster its user's alone: the generated secret (a 0600 file),
//! `pg_hba.conf` with SCRAM and no `trust`, and the safe settings block of
//! `postgresql.conf` (no TCP port, a 0700 socket folder).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The only way in. Written at creation and when securing a cluster of an older version.
pub(super) const HBA: &str = "\
# Written by Headspace.
#
# Only the role `headspace`, over the Unix socket, with its password (SCRAM). The password is
# the secret in $HEADSPACE_HOME/pg-secret, which only the account running Headspace can read.
# Never `trust`: any local account that reached the socket would be a superuser, read every
# turn and run programs with COPY ... TO PROGRAM. No `host` lines: the server listens on no
# TCP address (listen_addresses = ''), and a connection no line matches is refused.
local all headspace scram-sha-256
";

/// First line of Headspace's block at the end of `postgresql.conf`.
pub(super) const CONF_BEGIN: &str = "# headspace: begin";

/// Last line of that block.
pub(super) const CONF_END: &str = "# headspace: end";

/// 32 random bytes from the kernel, as 64 hex digits.
pub(super) fn new_secret() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Creates the secret file: mode 0600 from its creation on, synced before the cluster is
/// given the password (a crash must not leave a cluster whose password is nowhere).
fn create_secret(path: &Path) -> std::io::Result<String> {
    let secret = new_secret()?;
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(format!("{secret}\n").as_bytes())?;
    f.sync_all()?;
    if let Some(parent) = path.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(secret)
}

/// The secret in `path`, or what is wrong with the file. A file others may read is made
/// 0600 again.
pub(super) fn read_secret(path: &Path) -> Result<String, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("that file does not exist".into())
        }
        Err(e) => return Err(format!("that file cannot be read ({e})")),
    };
    let secret = text.trim();
    if secret.is_empty() {
        return Err("that file is empty".into());
    }
    // It goes into SQL and into a connection string: letters and digits only.
    if !secret.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err("that file holds characters other than letters and digits".into());
    }
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "headspace: {} could be read by other accounts; making it mode 0600",
                path.display()
            );
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
    }
    Ok(secret.to_string())
}

/// The secret in `path`, created when there is none yet (a new cluster, or one of an older
/// version being secured).
pub(super) fn secret_or_new(path: &Path) -> Result<String, String> {
    if path.exists() {
        return read_secret(path);
    }
    create_secret(path).map_err(|e| format!("it cannot be created ({e})"))
}

/// Whether `pg_hba.conf` lets connections in without a password: a `trust` line, as every
/// cluster made by an older version had.
pub(super) fn trusts(hba: &str) -> bool {
    hba.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .any(|l| {
            l.split_whitespace()
                .any(|w| w.eq_ignore_ascii_case("trust"))
        })
}

/// `conf` (a `postgresql.conf`) with Headspace's block, replacing an earlier one, at its end:
/// a cluster started by hand is then as closed as one Headspace starts.
pub(super) fn with_safe_settings(conf: &str, sock: &Path) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in conf.lines() {
        if line.starts_with(CONF_BEGIN) {
            inside = true;
        } else if inside {
            inside = line != CONF_END;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "{CONF_BEGIN} (rewritten by every start)\n\
         # The socket only in a folder no other account may enter, no TCP listener, and\n\
         # passwords stored as SCRAM: see pg_hba.conf.\n\
         listen_addresses = ''\n\
         unix_socket_directories = '{}'\n\
         unix_socket_permissions = 0700\n\
         password_encryption = 'scram-sha-256'\n\
         {CONF_END}\n",
        sock.display().to_string().replace('\'', "''")
    ));
    out
}

/// A value for a libpq-style connection string: quoted, `'` and `\` escaped.
pub(super) fn conn_value(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Writes a file the cluster reads: mode 0600 and owned like `like` (the cluster's user) from
/// its creation on, then renamed over `path`.
pub(super) fn write_for_cluster(path: &Path, bytes: &[u8], like: &Path) -> std::io::Result<()> {
    let owner = std::fs::metadata(like)?;
    let tmp = crate::fsutil::with_suffix(path, ".headspace-tmp");
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        std::os::unix::fs::chown(&tmp, Some(owner.uid()), Some(owner.gid()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        match path.parent() {
            Some(dir) => File::open(dir)?.sync_all(),
            None => Ok(()),
        }
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

pub(super) fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trust_line_is_found_and_comments_are_not() {
        assert!(trusts("local all all trust\n"));
        assert!(trusts("# x\nhost all all 127.0.0.1/32   TRUST # old\n"));
        assert!(!trusts(HBA));
        assert!(!trusts(
            "# local all all trust\nlocal all headspace scram-sha-256\n"
        ));
    }

    #[test]
    fn the_safe_settings_block_is_replaced_not_repeated() {
        let once = with_safe_settings("max_connections = 100\n", Path::new("/a/sock"));
        assert!(once.starts_with("max_connections = 100\n"));
        assert!(once.contains("unix_socket_directories = '/a/sock'\n"));
        assert!(once.contains("unix_socket_permissions = 0700\n"));
        assert!(once.contains("listen_addresses = ''\n"));
        let twice = with_safe_settings(&once, Path::new("/b/it's"));
        assert_eq!(twice.matches(CONF_BEGIN).count(), 1);
        assert!(twice.contains("unix_socket_directories = '/b/it''s'\n"));
        assert!(!twice.contains("/a/sock"));
        assert_eq!(with_safe_settings(&twice, Path::new("/b/it's")), twice);
    }

    #[test]
    fn connection_values_are_quoted() {
        let cfg: tokio_postgres::Config = format!("host={} user=u", conn_value("/a b/it's\\x"))
            .parse()
            .unwrap();
        assert_eq!(
            cfg.get_hosts(),
            &[tokio_postgres::config::Host::Unix("/a b/it's\\x".into())]
        );
    }
}
