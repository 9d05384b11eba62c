//! Files only the user's account may read: Headspace's own folder, the secrets in it (the
//! token, the database's password, signing keys) and the files that copy what agents wrote
//! (a recorded trace).
//!
//! Two rules hold for all of them. Nothing is ever created in a place another account can
//! write to, so no planted link is followed there: the folder must belong to the user and be
//! closed to others, and files are opened with `O_NOFOLLOW`. And a secret is 0600 from the
//! moment it exists: it is created with that mode, never chmod-ed after being written.

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The effective uid of this process.
pub fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The user's home folder: `$HOME` when it is set to an absolute path, else the account's
/// home in the password database. Never a shared place such as `/tmp`: without either, the
/// error says what to set.
pub fn user_home() -> Result<PathBuf, String> {
    home_from(std::env::var_os("HOME").map(PathBuf::from), passwd_home)
}

/// [`user_home`]'s rule, with the password database as a function (for tests).
fn home_from(
    env: Option<PathBuf>,
    passwd: impl FnOnce() -> Option<PathBuf>,
) -> Result<PathBuf, String> {
    if let Some(h) = env.filter(|h| h.is_absolute()) {
        return Ok(h);
    }
    passwd()
        .filter(|h| h.is_absolute() && h != Path::new("/"))
        .ok_or_else(|| {
            "HOME is not set and this account has no home folder in the password database; \
             set HOME, or give --home and --claude-dir"
                .to_string()
        })
}

/// The home folder of this process's account in the password database.
fn passwd_home() -> Option<PathBuf> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value of the struct (null pointers, zero ids);
    // getpwuid_r fills it with pointers into `buf`, which outlives every use below.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to memory we own, with its true length.
    let rc = unsafe {
        libc::getpwuid_r(
            own_uid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points to a NUL-terminated string inside `buf`.
    let dir = unsafe { CStr::from_ptr(pwd.pw_dir) };
    let dir = dir.to_str().ok()?;
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// Makes `dir` (and its missing parents) and checks it is the user's own and closed to
/// other accounts: owned by this account (root may use a folder of its own only), and
/// writable by no one else. A folder another account could write to is refused, never
/// used: files planted there (links to the user's files, a fake transcript) would be taken.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let meta = std::fs::metadata(dir).map_err(|e| format!("cannot use {}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a folder", dir.display()));
    }
    if meta.uid() != own_uid() {
        return Err(format!(
            "{} belongs to another account (uid {}); Headspace keeps its secrets only in a \
             folder of its own account's (give --home)",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} can be written by other accounts (mode {:o}); `chmod 700 {}` first",
            dir.display(),
            meta.mode() & 0o777,
            dir.display()
        ));
    }
    Ok(())
}

/// 32 random bytes from the kernel, as 64 hex digits.
pub fn random_hex() -> io::Result<String> {
    let mut bytes = [0u8; 32];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `bytes` as lowercase hex digits (how key files keep their keys: a secret is letters and
/// digits).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of hex digits; `None` when they are not.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Creates `path` with `bytes`, mode 0600 from its creation on, synced with its folder; an
/// `AlreadyExists` error when something (a file, a link) is there already.
pub fn create_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    if let Some(parent) = path.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// Opens `path` to read and append to (created 0600; an existing file made 0600), never
/// through a link: for files that copy secrets, such as a recorded trace.
pub fn open_private(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::new(
                    e.kind(),
                    format!("{} is a symbolic link; not followed", path.display()),
                )
            } else {
                e
            }
        })?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

/// The secret in `path`: its first line, which must be letters and digits (it goes into
/// headers, SQL and connection strings). Read without following a link, from a file of this
/// account's; a file others may read is made 0600 again, with a note.
pub fn read_secret(path: &Path) -> Result<String, String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("{} does not exist", path.display()))
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(format!(
                "{} is a symbolic link; a secret is read from a plain file only",
                path.display()
            ))
        }
        Err(e) => return Err(format!("{} cannot be read ({e})", path.display())),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    if meta.uid() != own_uid() {
        return Err(format!(
            "{} belongs to another account (uid {}); not used",
            path.display(),
            meta.uid()
        ));
    }
    let mut text = String::new();
    (&file)
        .take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    let secret = text.lines().next().unwrap_or("").trim();
    if secret.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    if !secret.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!(
            "{} holds characters other than letters and digits",
            path.display()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        eprintln!(
            "headspace: {} could be read by other accounts; making it mode 0600",
            path.display()
        );
        let _ = file.set_permissions(std::fs::Permissions::from_mode(0o600));
    }
    Ok(secret.to_string())
}

/// The secret in `path`, created (64 random hex digits, mode 0600) when there is none yet.
/// Two processes creating it at once agree: one creates, the other reads what it wrote.
pub fn secret_or_new(path: &Path) -> Result<String, String> {
    secret_or_make(path, || {
        random_hex().map_err(|e| format!("no random bytes ({e})"))
    })
}

/// The secret in `path`, created from `make` (letters and digits) when there is none yet, as
/// [`secret_or_new`] does.
pub fn secret_or_make(
    path: &Path,
    make: impl FnOnce() -> Result<String, String>,
) -> Result<String, String> {
    match read_secret(path) {
        Ok(s) => return Ok(s),
        Err(_) if !path.exists() && std::fs::symlink_metadata(path).is_err() => {}
        Err(e) => return Err(e),
    }
    let secret = make()?;
    // Written to a private temporary file and linked into place: the name appears with its
    // whole content, so a concurrent reader never sees it empty.
    let tmp = crate::fsutil::with_suffix(path, &format!(".new-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    create_private(&tmp, format!("{secret}\n").as_bytes())
        .map_err(|e| format!("{} cannot be created ({e})", path.display()))?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(secret),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_secret(path),
        Err(e) => Err(format!("{} cannot be created ({e})", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hs-private-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }

    #[test]
    fn the_home_comes_from_home_else_the_password_database_never_tmp() {
        let from_env = home_from(Some("/home/u".into()), || Some("/root".into()));
        assert_eq!(from_env.unwrap(), PathBuf::from("/home/u"));
        let relative = home_from(Some("u".into()), || Some("/home/p".into()));
        assert_eq!(relative.unwrap(), PathBuf::from("/home/p"));
        let passwd = home_from(None, || Some("/home/p".into()));
        assert_eq!(passwd.unwrap(), PathBuf::from("/home/p"));
        let none = home_from(None, || None).unwrap_err();
        assert!(none.contains("HOME is not set"), "{none}");
        assert!(home_from(None, || Some("/".into())).is_err());
        // The account running this test has a home in the password database.
        assert!(passwd_home().is_some_and(|h| h.is_absolute()));
    }

    #[test]
    fn a_secret_is_created_private_once_and_read_back() {
        let d = scratch("secret");
        let path = d.join("token");
        let made = secret_or_new(&path).unwrap();
        assert_eq!(made.len(), 64);
        let mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(secret_or_new(&path).unwrap(), made, "the same secret again");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read_secret(&path).unwrap(), made);
        let mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "made private again");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_planted_link_is_never_followed() {
        let d = scratch("link");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let link = d.join("token");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = secret_or_new(&link).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        let trace = d.join("trace.jsonl");
        std::os::unix::fs::symlink(&victim, &trace).unwrap();
        let err = open_private(&trace).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_folder_others_can_write_is_refused() {
        let d = scratch("dir");
        assert!(private_dir(&d).is_ok());
        assert!(private_dir(&d.join("a/b")).is_ok(), "made with its parents");
        let mode = std::fs::metadata(d.join("a/b")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = private_dir(&d).unwrap_err();
        assert!(err.contains("chmod 700"), "{err}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
