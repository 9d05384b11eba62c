//! The keys that sign and check commands to panes on other machines (docs/multi-machine.md,
//! "Signed commands"). Every server has an Ed25519 key of its own, made on its first start
//! (`$HEADSPACE_HOME/pane-key`, 0600; its public half in `pane-key.pub`). A server that
//! forwards a user's request signs it; an executor runs a row only when its signature
//! verifies against its own key or one listed in its trusted-keys file, and the core's
//! [`admit`] accepts the envelope (this machine, the row's agent and kind, fresh, never seen).
//! The database carries the rows and proves nothing: a client of it that holds no key file
//! cannot make any machine type.

use super::pane_queue::{PaneCommand, Signed};
use crate::private_files::{hex, unhex};
use headspace_core::cluster::pane_commands::{
    admit, Envelope, PaneCommandKind, NONCE_MEMORY_MS, SIGNED_PREFIX,
};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{Ed25519KeyPair, KeyPair, UnparsedPublicKey, ED25519};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// This server's signing key, the public keys it trusts, and the nonces it has seen.
pub struct PaneKeys {
    key: Ed25519KeyPair,
    /// Trusted public keys (this server's own first), with the name their line gave.
    trusted: Vec<(Vec<u8>, String)>,
    /// Nonces of envelopes taken, until they are too old to matter.
    seen: Mutex<BTreeMap<String, i64>>,
    rng: SystemRandom,
}

impl std::fmt::Debug for PaneKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaneKeys")
            .field("public", &self.public_hex())
            .field("trusted", &self.trusted.len())
            .finish()
    }
}

/// The file of keys a server trusts besides its own, when none is named.
pub fn default_trusted_file(home: &Path) -> PathBuf {
    home.join("trusted-pane-keys")
}

impl PaneKeys {
    /// The key in `home/pane-key` (made on first use) and the keys listed in `trusted` (one
    /// hex public key a line, a name after it, `#` comments; a missing file lists none).
    pub fn load(home: &Path, trusted: &Path) -> Result<PaneKeys, String> {
        crate::private_files::private_dir(home)?;
        let rng = SystemRandom::new();
        let pkcs8 = crate::private_files::secret_or_make(&home.join("pane-key"), || {
            Ed25519KeyPair::generate_pkcs8(&rng)
                .map(|doc| hex(doc.as_ref()))
                .map_err(|_| "no random bytes for a key".to_string())
        })
        .map_err(|e| format!("the pane-command key: {e}"))?;
        let bytes = unhex(&pkcs8).ok_or("the pane-command key file is not hex")?;
        let key = Ed25519KeyPair::from_pkcs8(&bytes)
            .map_err(|e| format!("the pane-command key file holds no Ed25519 key ({e})"))?;
        let keys = PaneKeys::with_key(key, read_trusted(trusted)?);
        // The public half, for the user to copy to the other machines (docs/multi-machine.md).
        let public = home.join("pane-key.pub");
        let line = format!(
            "{} {}\n",
            keys.public_hex(),
            super::machines::default_name()
        );
        if std::fs::read_to_string(&public).ok().as_deref() != Some(line.as_str()) {
            let _ = std::fs::remove_file(&public);
            let _ = crate::private_files::create_private(&public, line.as_bytes());
        }
        Ok(keys)
    }

    /// A new key held in memory only, trusting itself alone (the simulation, tests).
    pub fn ephemeral() -> PaneKeys {
        let doc = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("random bytes");
        let key = Ed25519KeyPair::from_pkcs8(doc.as_ref()).expect("a key just made");
        PaneKeys::with_key(key, Vec::new())
    }

    fn with_key(key: Ed25519KeyPair, others: Vec<(Vec<u8>, String)>) -> PaneKeys {
        let own = (
            key.public_key().as_ref().to_vec(),
            "this server".to_string(),
        );
        PaneKeys {
            key,
            trusted: std::iter::once(own).chain(others).collect(),
            seen: Mutex::new(BTreeMap::new()),
            rng: SystemRandom::new(),
        }
    }

    /// This server's public key, in hex.
    pub fn public_hex(&self) -> String {
        hex(self.key.public_key().as_ref())
    }

    /// Signs a command for `machine`'s pane of agent `agent_id`, at `now_ms`.
    pub fn sign(
        &self,
        machine: &str,
        agent_id: u64,
        kind: PaneCommandKind,
        body: &serde_json::Value,
        now_ms: i64,
    ) -> Signed {
        let mut nonce = [0u8; 16];
        self.rng.fill(&mut nonce).expect("random bytes");
        let envelope = Envelope {
            machine: machine.to_string(),
            agent_id,
            kind: kind.as_str().to_string(),
            body: body.clone(),
            issued_at_ms: now_ms,
            nonce: hex(&nonce),
        };
        let text = serde_json::to_string(&envelope).expect("an envelope is JSON");
        let signature = self.key.sign(&message(&text));
        Signed {
            envelope: text,
            signature: hex(signature.as_ref()),
            signer: self.public_hex(),
        }
    }

    /// The envelope of a row taken for `this_machine`, when its signature verifies against a
    /// trusted key and the core admits it at `now_ms`; `Err` says why it must not run. An
    /// admitted envelope's nonce is remembered: a copy of the row is refused.
    pub fn check(
        &self,
        command: &PaneCommand,
        this_machine: &str,
        now_ms: i64,
    ) -> Result<Envelope, String> {
        let (Some(text), Some(signature), Some(signer)) =
            (&command.envelope, &command.signature, &command.signer)
        else {
            return Err("it is not signed".into());
        };
        let signer = unhex(signer).ok_or("its signer is not hex")?;
        let Some((public, _)) = self.trusted.iter().find(|(k, _)| *k == signer) else {
            return Err("it is signed by a key this machine does not trust".into());
        };
        let signature = unhex(signature).ok_or("its signature is not hex")?;
        UnparsedPublicKey::new(&ED25519, public)
            .verify(&message(text), &signature)
            .map_err(|_| "its signature does not verify".to_string())?;
        let envelope: Envelope =
            serde_json::from_str(text).map_err(|e| format!("its envelope is unreadable ({e})"))?;
        let mut seen = self.seen.lock().expect("nonces");
        seen.retain(|_, until| *until > now_ms);
        let was_seen = seen.contains_key(&envelope.nonce);
        admit(
            &envelope,
            command.agent_id,
            command.kind,
            this_machine,
            now_ms,
            was_seen,
        )?;
        seen.insert(envelope.nonce.clone(), now_ms + NONCE_MEMORY_MS);
        Ok(envelope)
    }
}

/// The signed message of an envelope's text.
fn message(text: &str) -> Vec<u8> {
    [SIGNED_PREFIX, text.as_bytes()].concat()
}

/// The keys listed in `path` (none when it does not exist).
fn read_trusted(path: &Path) -> Result<Vec<(Vec<u8>, String)>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (key, name) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match unhex(key).filter(|k| k.len() == 32) {
            Some(k) => keys.push((k, name.trim().to_string())),
            None => {
                return Err(format!(
                    "{} line {}: {key:?} is not a public key (64 hex digits, as in another \
                     server's pane-key.pub)",
                    path.display(),
                    n + 1
                ))
            }
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn taken(s: &Signed, agent_id: u64, kind: PaneCommandKind) -> PaneCommand {
        PaneCommand {
            id: 1,
            agent_id,
            kind,
            body: json!({"text": "from the row"}),
            envelope: Some(s.envelope.clone()),
            signature: Some(s.signature.clone()),
            signer: Some(s.signer.clone()),
        }
    }

    #[test]
    fn a_signed_command_runs_once_and_a_forged_or_foreign_one_never() {
        let hub = PaneKeys::ephemeral();
        let send = PaneCommandKind::Send;
        let signed = hub.sign("B", 3, send, &json!({"text": "ls"}), 1_000);
        // An edge that trusts the hub.
        let edge = PaneKeys::with_key(
            Ed25519KeyPair::from_pkcs8(
                Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
                    .unwrap()
                    .as_ref(),
            )
            .unwrap(),
            vec![(unhex(&hub.public_hex()).unwrap(), "hub".into())],
        );
        let ran = edge.check(&taken(&signed, 3, send), "B", 2_000).unwrap();
        assert_eq!(
            ran.body,
            json!({"text": "ls"}),
            "the signed body, not the row's"
        );
        let again = edge
            .check(&taken(&signed, 3, send), "B", 2_500)
            .unwrap_err();
        assert!(again.contains("already taken"), "{again}");
        // Unsigned; signed by an untrusted key; a tampered envelope; another machine's.
        let mut unsigned = taken(&signed, 3, send);
        unsigned.signature = None;
        assert!(edge
            .check(&unsigned, "B", 2_000)
            .unwrap_err()
            .contains("not signed"));
        let stranger = PaneKeys::ephemeral().sign("B", 3, send, &json!({"text": "id"}), 1_000);
        let err = edge
            .check(&taken(&stranger, 3, send), "B", 2_000)
            .unwrap_err();
        assert!(err.contains("does not trust"), "{err}");
        let mut forged = taken(
            &hub.sign("B", 3, send, &json!({"text": "ls"}), 1_000),
            3,
            send,
        );
        forged.envelope = Some(forged.envelope.unwrap().replace("\"ls\"", "\"rm -rf ~\""));
        assert!(edge
            .check(&forged, "B", 2_000)
            .unwrap_err()
            .contains("does not verify"));
        let elsewhere = hub.sign("C", 3, send, &json!({"text": "ls"}), 1_000);
        assert!(edge.check(&taken(&elsewhere, 3, send), "B", 2_000).is_err());
    }

    #[test]
    fn the_trusted_file_lists_keys_and_refuses_garbage() {
        let dir = std::env::temp_dir().join(format!("hs-panekeys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("trusted");
        let k = PaneKeys::ephemeral().public_hex();
        std::fs::write(&file, format!("# hubs\n{k} hub-1\n\n")).unwrap();
        assert_eq!(read_trusted(&file).unwrap().len(), 1);
        std::fs::write(&file, "not-a-key\n").unwrap();
        assert!(read_trusted(&file).unwrap_err().contains("line 1"));
        assert!(read_trusted(&dir.join("none")).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
