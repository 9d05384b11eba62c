//! The devices subscribed to pushes: `$HEADSPACE_HOME/push-subscriptions.json` (0600, never
//! through a link), next to the key they subscribed with. Each entry is what the page sent,
//! checked by the core's rules ([`headspace_core::view::push::subscription`]) when taken and
//! again when read back.

use headspace_core::view::push::{base64url, subscription, Subscription};
use serde_json::{json, Value};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use tracing::warn;

/// The most devices one server pushes to.
pub const MAX_SUBSCRIPTIONS: usize = 64;

/// The subscriptions, as kept on disk.
#[derive(Debug)]
pub struct Book {
    path: PathBuf,
    entries: Vec<(String, Subscription)>,
}

impl Book {
    /// The book in `home` (empty when there is none yet). An entry the rules no longer take
    /// (a loopback endpoint without `--allow-loopback-push`) is left out, with a warning.
    pub fn load(home: &Path, allow_loopback: bool) -> Result<Book, String> {
        let path = home.join("push-subscriptions.json");
        let text = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
        {
            Ok(file) => {
                let meta = file.metadata().map_err(|e| e.to_string())?;
                if meta.uid() != crate::private_files::own_uid() {
                    return Err(format!("{} belongs to another account", path.display()));
                }
                let mut text = String::new();
                (&file)
                    .take(4 << 20)
                    .read_to_string(&mut text)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                text
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "[]".into(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let stored: Vec<Value> = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a list of subscriptions ({e})", path.display()))?;
        let mut entries = Vec::new();
        for v in stored {
            let id = v["id"].as_str().unwrap_or_default().to_string();
            match subscription(&v, allow_loopback) {
                Ok(s) if !id.is_empty() => entries.push((id, s)),
                Ok(_) => warn!("[PUSH] a stored subscription without an id; left out"),
                Err(e) => warn!("[PUSH] stored subscription {id} left out: {e}"),
            }
        }
        Ok(Book { path, entries })
    }

    /// Every subscription, with its id.
    pub fn all(&self) -> Vec<(String, Subscription)> {
        self.entries.clone()
    }

    /// Adds `s` (the same endpoint again replaces its keys and keeps its id); its id, and
    /// whether it is new.
    pub fn add(&mut self, s: Subscription) -> Result<(String, bool), String> {
        if let Some(i) = self
            .entries
            .iter()
            .position(|(_, o)| o.endpoint == s.endpoint)
        {
            let before = std::mem::replace(&mut self.entries[i].1, s);
            if let Err(e) = self.save() {
                self.entries[i].1 = before; // as on disk: a failed subscribe changes nothing
                return Err(e);
            }
            return Ok((self.entries[i].0.clone(), false));
        }
        if self.entries.len() >= MAX_SUBSCRIPTIONS {
            return Err(format!(
                "{MAX_SUBSCRIPTIONS} devices are subscribed already; unsubscribe one first"
            ));
        }
        let id = crate::private_files::random_hex().map_err(|e| e.to_string())?[..16].to_string();
        self.entries.push((id.clone(), s));
        if let Err(e) = self.save() {
            self.entries.pop();
            return Err(e);
        }
        Ok((id, true))
    }

    /// Removes subscription `id`; whether there was one.
    pub fn remove(&mut self, id: &str) -> Result<bool, String> {
        let Some(i) = self.entries.iter().position(|(e, _)| e == id) else {
            return Ok(false);
        };
        let removed = self.entries.remove(i);
        if let Err(e) = self.save() {
            self.entries.insert(i, removed);
            return Err(e);
        }
        Ok(true)
    }

    /// Writes the book: a new private file renamed over the old one.
    fn save(&self) -> Result<(), String> {
        let list: Vec<Value> = self
            .entries
            .iter()
            .map(|(id, s)| {
                json!({"id": id, "endpoint": s.endpoint,
                       "keys": {"p256dh": base64url(&s.p256dh), "auth": base64url(&s.auth)}})
            })
            .collect();
        let tmp = crate::fsutil::with_suffix(&self.path, &format!(".new-{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        crate::private_files::create_private(&tmp, Value::Array(list).to_string().as_bytes())
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| format!("{} cannot be written ({e})", self.path.display()))
    }
}
