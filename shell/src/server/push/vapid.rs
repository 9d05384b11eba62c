//! The server's VAPID key (RFC 8292): a P-256 key made on first start and kept in
//! `$HEADSPACE_HOME/push-key` (0600). Its public half is the `applicationServerKey` a page
//! subscribes with; every push carries a token signed with it, so a push service delivers
//! only this server's pushes to a subscription made for it.

use crate::private_files::{hex, unhex};
use headspace_core::view::push::base64url;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;
use std::path::Path;

/// How long a token is good for (RFC 8292 allows at most 24 hours).
const TOKEN_SECONDS: i64 = 12 * 3600;

/// The signing key.
pub struct Vapid {
    key: EcdsaKeyPair,
    rng: SystemRandom,
    /// Who runs this server, for the push service (the token's `sub`).
    contact: String,
}

impl std::fmt::Debug for Vapid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vapid")
            .field("public", &self.public_key())
            .finish()
    }
}

impl Vapid {
    /// The key in `home/push-key`, made when there is none.
    pub fn load(home: &Path, contact: String) -> Result<Vapid, String> {
        let rng = SystemRandom::new();
        let pkcs8 = crate::private_files::secret_or_make(&home.join("push-key"), || {
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                .map(|doc| hex(doc.as_ref()))
                .map_err(|_| "no random bytes for a key".to_string())
        })
        .map_err(|e| format!("the push key: {e}"))?;
        let bytes = unhex(&pkcs8).ok_or("the push key file is not hex")?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &bytes, &rng)
            .map_err(|e| format!("the push key file holds no P-256 key ({e})"))?;
        Ok(Vapid { key, rng, contact })
    }

    /// Who runs this server, as the tokens say (`--push-contact`).
    pub fn contact(&self) -> &str {
        &self.contact
    }

    /// The public key, base64url (65 bytes, uncompressed): `GET /api/push/key`.
    pub fn public_key(&self) -> String {
        base64url(self.key.public_key().as_ref())
    }

    /// The `Authorization` header for a push to `audience` (the endpoint's origin), at
    /// `now_seconds` (Unix time): `vapid t=<ES256 JWT>, k=<public key>`.
    pub fn authorization(&self, audience: &str, now_seconds: i64) -> Result<String, String> {
        let header = base64url(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = base64url(
            json!({"aud": audience, "exp": now_seconds + TOKEN_SECONDS, "sub": self.contact})
                .to_string()
                .as_bytes(),
        );
        let signed = format!("{header}.{claims}");
        let signature = self
            .key
            .sign(&self.rng, signed.as_bytes())
            .map_err(|_| "the push token cannot be signed".to_string())?;
        Ok(format!(
            "vapid t={signed}.{}, k={}",
            base64url(signature.as_ref()),
            self.public_key()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headspace_core::view::push::from_base64url;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    #[test]
    fn the_token_verifies_with_the_public_key_and_names_its_audience() {
        let home = std::env::temp_dir().join(format!("hs-vapid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).unwrap();
        let vapid = Vapid::load(&home, "mailto:me@example.org".into()).unwrap();
        // The same key after a restart.
        let again = Vapid::load(&home, "mailto:me@example.org".into()).unwrap();
        assert_eq!(vapid.public_key(), again.public_key());
        let auth = vapid.authorization("https://push.example", 1_000).unwrap();
        let rest = auth.strip_prefix("vapid t=").unwrap();
        let (token, k) = rest.split_once(", k=").unwrap();
        assert_eq!(k, vapid.public_key());
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let key = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, from_base64url(k).unwrap());
        key.verify(signed.as_bytes(), &from_base64url(signature).unwrap())
            .expect("the signature verifies");
        let claims: serde_json::Value =
            serde_json::from_slice(&from_base64url(signed.split('.').nth(1).unwrap()).unwrap())
                .unwrap();
        assert_eq!(claims["aud"], "https://push.example");
        assert_eq!(claims["exp"], 1_000 + TOKEN_SECONDS);
        assert_eq!(claims["sub"], "mailto:me@example.org");
        let _ = std::fs::remove_dir_all(&home);
    }
}
