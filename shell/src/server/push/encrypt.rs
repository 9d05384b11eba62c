//! A push's payload, encrypted for one device (RFC 8291, `aes128gcm` of RFC 8188): a fresh
//! P-256 key and salt per push, the device's key and secret, one record. [`open`] is the
//! device's side, for the tests and the RFC's own example.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use ring::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey, ECDH_P256};
use ring::hkdf::{KeyType, Salt, HKDF_SHA256};
use ring::rand::{SecureRandom, SystemRandom};

/// The record size a push states: one record holds any payload Headspace sends.
const RECORD_SIZE: u32 = 4096;
/// The largest plaintext one record holds: the record less the tag and the delimiter.
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - 16 - 1 - 86;
const _: () = assert!(MAX_PLAINTEXT == headspace_core::view::push::MAX_MESSAGE_BYTES);

/// A length for HKDF's output.
struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// HKDF-SHA-256 (RFC 5869): `n` bytes from `ikm` under `salt` and `info`.
fn hkdf(salt: &[u8], ikm: &[u8], info: &[&[u8]], n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    Salt::new(HKDF_SHA256, salt)
        .extract(ikm)
        .expand(info, Len(n))
        .and_then(|okm| okm.fill(&mut out))
        .expect("HKDF-SHA-256 gives up to 8,160 bytes");
    out
}

/// The content key and nonce for one push (RFC 8291, section 3.4).
pub fn keys(
    ecdh_secret: &[u8],
    as_public: &[u8],
    ua_public: &[u8],
    auth: &[u8],
    salt: &[u8],
) -> ([u8; 16], [u8; 12]) {
    let ikm = hkdf(
        auth,
        ecdh_secret,
        &[b"WebPush: info\0", ua_public, as_public],
        32,
    );
    let mut cek = [0u8; 16];
    cek.copy_from_slice(&hkdf(salt, &ikm, &[b"Content-Encoding: aes128gcm\0"], 16));
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&hkdf(salt, &ikm, &[b"Content-Encoding: nonce\0"], 12));
    (cek, nonce)
}

/// `plain` sealed with a given key agreement and salt: the header (salt, record size, the
/// sender's public key) and one record. [`encrypt`] draws the key and the salt.
pub fn seal(
    plain: &[u8],
    ecdh_secret: &[u8],
    as_public: &[u8],
    ua_public: &[u8],
    auth: &[u8],
    salt: &[u8; 16],
) -> Result<Vec<u8>, String> {
    if plain.len() > MAX_PLAINTEXT {
        return Err(format!(
            "a push holds at most {MAX_PLAINTEXT} bytes, not {}",
            plain.len()
        ));
    }
    let (cek, nonce) = keys(ecdh_secret, as_public, ua_public, auth, salt);
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| "AES key")?);
    // The last (and only) record ends with the delimiter 2 and no padding.
    let mut record = plain.to_vec();
    record.push(2);
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::empty(),
        &mut record,
    )
    .map_err(|_| "the payload cannot be sealed".to_string())?;
    let mut body = Vec::with_capacity(21 + as_public.len() + record.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(as_public.len() as u8);
    body.extend_from_slice(as_public);
    body.extend_from_slice(&record);
    Ok(body)
}

/// `plain` encrypted for the device whose public key is `ua_public` (65 bytes) and whose
/// secret is `auth`, with a new key pair and salt.
pub fn encrypt(plain: &[u8], ua_public: &[u8], auth: &[u8]) -> Result<Vec<u8>, String> {
    let rng = SystemRandom::new();
    let mut salt = [0u8; 16];
    rng.fill(&mut salt).map_err(|_| "no random bytes")?;
    let private = EphemeralPrivateKey::generate(&ECDH_P256, &rng).map_err(|_| "no key")?;
    let public = private.compute_public_key().map_err(|_| "no key")?;
    let peer = UnparsedPublicKey::new(&ECDH_P256, ua_public);
    let secret = agreement::agree_ephemeral(private, &peer, |s| s.to_vec())
        .map_err(|_| "the device's key is not a point on P-256".to_string())?;
    seal(plain, &secret, public.as_ref(), ua_public, auth, &salt)
}

/// A push's header: its salt and the sender's public key.
pub fn header(body: &[u8]) -> Result<([u8; 16], &[u8]), String> {
    if body.len() < 21 {
        return Err("shorter than a header".into());
    }
    let id_len = body[20] as usize;
    let key = body
        .get(21..21 + id_len)
        .ok_or("the key id runs past the end")?;
    let mut salt = [0u8; 16];
    salt.copy_from_slice(&body[..16]);
    Ok((salt, key))
}

/// The device's side: the plaintext of a one-record `body`, given the key agreement the
/// device computed with the header's public key.
pub fn open(
    body: &[u8],
    ecdh_secret: &[u8],
    ua_public: &[u8],
    auth: &[u8],
) -> Result<Vec<u8>, String> {
    let (salt, as_public) = header(body)?;
    let (cek, nonce) = keys(ecdh_secret, as_public, ua_public, auth, &salt);
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| "AES key")?);
    let mut record = body[21 + as_public.len()..].to_vec();
    let plain = key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::empty(),
            &mut record,
        )
        .map_err(|_| "the record does not authenticate".to_string())?;
    match plain.iter().rposition(|b| *b != 0) {
        Some(end) if plain[end] == 2 => Ok(plain[..end].to_vec()),
        _ => Err("the record does not end with the last record's delimiter".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headspace_core::view::push::{base64url, from_base64url};

    // RFC 8291, section 5 and appendix A.
    const PLAINTEXT: &str = "V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24";
    const AS_PUBLIC: &str =
        "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8";
    const UA_PUBLIC: &str =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    const SALT: &str = "DGv6ra1nlYgDCS1FRnbzlw";
    const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";
    const ECDH: &str = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs";
    const BODY: &str = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN";

    fn b(s: &str) -> Vec<u8> {
        from_base64url(s).unwrap()
    }

    #[test]
    fn the_rfc_example_seals_to_its_published_body_and_opens_again() {
        let (cek, nonce) = keys(&b(ECDH), &b(AS_PUBLIC), &b(UA_PUBLIC), &b(AUTH), &b(SALT));
        assert_eq!(base64url(&cek), "oIhVW04MRdy2XN9CiKLxTg");
        assert_eq!(base64url(&nonce), "4h_95klXJ5E_qnoN");
        let salt: [u8; 16] = b(SALT).try_into().unwrap();
        let body = seal(
            &b(PLAINTEXT),
            &b(ECDH),
            &b(AS_PUBLIC),
            &b(UA_PUBLIC),
            &b(AUTH),
            &salt,
        )
        .unwrap();
        assert_eq!(base64url(&body), BODY);
        let plain = open(&b(BODY), &b(ECDH), &b(UA_PUBLIC), &b(AUTH)).unwrap();
        assert_eq!(plain, b"When I grow up, I want to be a watermelon");
    }

    #[test]
    fn a_tampered_body_or_a_wrong_secret_does_not_open() {
        let mut body = b(BODY);
        let last = body.len() - 1;
        body[last] ^= 1;
        assert!(open(&body, &b(ECDH), &b(UA_PUBLIC), &b(AUTH)).is_err());
        assert!(open(&b(BODY), &b(ECDH), &b(UA_PUBLIC), &[0u8; 16]).is_err());
        assert!(open(&b(BODY)[..20], &b(ECDH), &b(UA_PUBLIC), &b(AUTH)).is_err());
    }

    #[test]
    fn too_long_a_payload_is_refused_and_a_bad_device_key_too() {
        let salt = [0u8; 16];
        let long = vec![b'x'; MAX_PLAINTEXT + 1];
        assert!(seal(
            &long,
            &b(ECDH),
            &b(AS_PUBLIC),
            &b(UA_PUBLIC),
            &b(AUTH),
            &salt
        )
        .is_err());
        let mut not_a_point = b(UA_PUBLIC);
        not_a_point[10] ^= 1;
        assert!(encrypt(b"hi", &not_a_point, &b(AUTH)).is_err());
    }
}
