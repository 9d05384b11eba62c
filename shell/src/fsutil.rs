//! Small file and process helpers the server, the hook installer, the embedded database and
//! the orchestration runner share.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Who process `pid` is, to tell it from a later process given the same pid: its start time
/// (clock ticks after boot) and its process group, from `/proc/{pid}/stat` (Linux only;
/// `None` elsewhere or when it is gone).
pub fn process_identity(pid: u32) -> Option<(u64, u32)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The start time and process group in the text of a `/proc/{pid}/stat` (see
/// [`process_identity`]).
pub fn parse_stat(stat: &str) -> Option<(u64, u32)> {
    // `pid (comm) state ppid pgrp …`: comm may hold spaces, so fields count from its `)`.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let pgrp = fields.get(2)?.parse().ok()?;
    let started = fields.get(19)?.parse().ok()?;
    Some((started, pgrp))
}

/// Whether process `pid` exists (Linux: `/proc/{pid}`; elsewhere `kill -0`).
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    if Path::new("/proc/self").exists() {
        return Path::new(&format!("/proc/{pid}")).exists();
    }
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Writes `bytes` to `path` so that readers see the old or the new content, never a part:
/// a temporary file in the same folder, fsync, rename over `path`, fsync the folder.
///
/// The new file gets the default mode (0666 less the umask) and the writer's owner, and a
/// symlink at `path` is replaced by a regular file; [`write_atomic_keeping`] keeps all three.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_atomically(path, bytes, None)
}

/// The permission bits and owner a file written by [`write_atomic_as`] is given before it
/// replaces the old one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keep {
    /// Permission bits (masked with `0o7777`).
    pub mode: u32,
    /// `(uid, gid)`; `None` leaves the writing process's own.
    pub owner: Option<(u32, u32)>,
}

impl Keep {
    /// For a file that does not exist yet: readable and writable by its owner only (a
    /// settings file can hold secrets, such as API keys), owned by whoever writes it.
    pub const PRIVATE: Keep = Keep {
        mode: 0o600,
        owner: None,
    };

    /// The mode and owner of an existing file.
    pub fn of(meta: &fs::Metadata) -> Keep {
        Keep {
            mode: meta.mode() & 0o7777,
            owner: Some((meta.uid(), meta.gid())),
        }
    }
}

/// The file a write to `path` must replace so that a symlink stays a link: `path` itself
/// when it is not a symlink (or does not exist yet), else the final target of its chain.
/// A dangling link is a `NotFound` error naming the link: writing a new file where the link
/// is would silently break the user's link (a dotfile manager's, typically).
pub fn write_target(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {}
        Ok(_) => return Ok(path.to_path_buf()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path.to_path_buf()),
        Err(e) => return Err(e),
    }
    fs::canonicalize(path).map_err(|e| {
        let to = fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        let why = if e.kind() == io::ErrorKind::NotFound {
            "which does not exist".to_string()
        } else {
            format!("which cannot be followed ({e})")
        };
        io::Error::new(
            e.kind(),
            format!(
                "{} is a symlink to {to} {why}; nothing was written (create the target file, \
                 or remove the link)",
                path.display()
            ),
        )
    })
}

/// [`write_atomic`], but the new file gets `keep`'s mode and owner before the rename, so the
/// replaced file is never, even for a moment, readable by more users than `keep` allows (the
/// temporary file is created 0600 and widened only to `keep.mode`). `path` itself is
/// replaced, symlink or not.
pub fn write_atomic_as(path: &Path, bytes: &[u8], keep: Keep) -> io::Result<()> {
    replace_atomically(path, bytes, Some(keep))
}

/// Replaces the file at `path` atomically, keeping its mode and owner and writing through a
/// symlink (the link's final target is replaced, in its own folder; the link stays). A new
/// file is created with [`Keep::PRIVATE`]. Returns the file actually replaced.
pub fn write_atomic_keeping(path: &Path, bytes: &[u8]) -> io::Result<PathBuf> {
    let target = write_target(path)?;
    let keep = match fs::metadata(&target) {
        Ok(meta) => Keep::of(&meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Keep::PRIVATE,
        Err(e) => return Err(e),
    };
    write_atomic_as(&target, bytes, keep)?;
    Ok(target)
}

/// The one implementation behind the `write_atomic*` functions; `keep: None` is the umask
/// default and the writer's owner.
fn replace_atomically(path: &Path, bytes: &[u8], keep: Option<Keep>) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let (mut f, tmp) = create_temp(dir, name, keep.map_or(0o666, |_| 0o600))?;
    let result = (|| {
        f.write_all(bytes)?;
        if let Some(keep) = keep {
            give(&f, keep)?;
        }
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // The rename itself is durable only once the folder is synced.
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A new, exclusively created temporary file next to `name` in `dir` (never an existing file
/// or a link someone left under that name).
fn create_temp(dir: &Path, name: &str, mode: u32) -> io::Result<(File, PathBuf)> {
    // The exclusive create decides which name is free: no counter shared by the process.
    for n in 0u64.. {
        let tmp = dir.join(format!(".{name}.tmp.{}.{n}", std::process::id()));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            // Another writer's, or a leftover of an earlier process with the same pid: take
            // the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("a u64 of names runs out")
}

/// Gives the open file `keep`'s owner, then its mode (in that order: a change of owner may
/// clear set-id bits). Failing to give the owner is an error rather than a silent change of
/// owner.
fn give(f: &File, keep: Keep) -> io::Result<()> {
    if let Some((uid, gid)) = keep.owner {
        let meta = f.metadata()?;
        if (meta.uid(), meta.gid()) != (uid, gid) {
            std::os::unix::fs::fchown(f, Some(uid), Some(gid)).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot give the new file the owner {uid}:{gid} of the file it replaces \
                         ({e}); run this as that user, or change the file's owner first"
                    ),
                )
            })?;
        }
    }
    f.set_permissions(fs::Permissions::from_mode(keep.mode & 0o7777))
}

/// `path` with `suffix` appended to its file name.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Opens `rel` beneath the folder `base` for reading (non-blocking), one component at a
/// time with `openat` and `O_NOFOLLOW`: a symlink anywhere on the way, a folder swapped for
/// one included, fails with `ELOOP` or `ENOTDIR` instead of being followed. `rel` must be
/// plain names (no `..`); `base` itself is opened as it is.
pub fn open_beneath(base: &Path, rel: &Path) -> io::Result<File> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            std::path::Component::Normal(n) => Ok(n),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a plain relative path", rel.display()),
            )),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, folders)) = names.split_last() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty path"));
    };
    let mut dir: OwnedFd = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(base)?
        .into();
    let open_at = |dir: &OwnedFd, name: &std::ffi::OsStr, flags: i32| -> io::Result<OwnedFd> {
        let c = CString::new(name.as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a path"))?;
        // SAFETY: a valid directory fd and a NUL-terminated name; the fd returned is ours.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    for name in folders {
        dir = open_at(&dir, name, libc::O_RDONLY | libc::O_DIRECTORY)?;
    }
    let file = open_at(&dir, last, libc::O_RDONLY | libc::O_NONBLOCK)?;
    Ok(File::from(file))
}
