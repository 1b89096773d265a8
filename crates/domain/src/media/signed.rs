//! Signed delivery URLs: `/m/{object}/{expires}/{signature}/{file}`.
//!
//! The signature is an HMAC-SHA256, with a key every process shares, over the object, the
//! expiry and a path scope. The scope is empty: a signature opens every file of one object
//! until it expires, so the relative URIs inside an HLS playlist (`720p.mp4`, `sprites/1.jpg`)
//! inherit it and playlists are never rewritten. URLs are minted only for callers who may view
//! the object, fresh on every read of its record.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::ids::ObjectId;
use crate::time::Timestamp;

/// Bytes of the HMAC kept in a URL (128 bits).
const SIGNATURE_BYTES: usize = 16;

/// The key media URLs are signed with (at least 32 bytes), kept as HMAC's keyed state: the two
/// padded key blocks are hashed once, not on every signature (every describe of processed
/// media signs one URL).
#[derive(Clone)]
pub struct MediaSigningKey(Hmac<Sha256>);

impl std::fmt::Debug for MediaSigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MediaSigningKey(…)")
    }
}

/// A key shorter than 32 bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a media signing key must hold at least 32 bytes")]
pub struct WeakSigningKey;

/// Why a delivery URL does not open its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefused {
    /// The signature is not the one for this object and expiry (tampered, or another key).
    #[error("the media URL's signature is not valid")]
    BadSignature,
    /// The URL's lifetime is over.
    #[error("the media URL has expired")]
    Expired,
}

impl MediaSigningKey {
    /// A key from its bytes.
    pub fn new(bytes: Vec<u8>) -> Result<Self, WeakSigningKey> {
        if bytes.len() < 32 {
            return Err(WeakSigningKey);
        }
        // Every key length is accepted by HMAC: `new_from_slice` cannot fail here.
        <Hmac<Sha256>>::new_from_slice(&bytes)
            .map(Self)
            .map_err(|_| WeakSigningKey)
    }

    fn mac(&self, object: ObjectId, expires: Timestamp) -> [u8; SIGNATURE_BYTES] {
        let mut mac = self.0.clone();
        mac.update(b"medialib media url v1\n");
        mac.update(object.to_string().as_bytes());
        mac.update(b"\n");
        mac.update(expires.epoch_seconds().to_string().as_bytes());
        // The path scope: empty, every file of the object.
        mac.update(b"\n");
        let full = mac.finalize().into_bytes();
        let mut out = [0; SIGNATURE_BYTES];
        out.copy_from_slice(&full[..SIGNATURE_BYTES]);
        out
    }

    /// The signature segment for `object` until `expires`.
    pub fn sign(&self, object: ObjectId, expires: Timestamp) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(object, expires))
    }

    /// Checks a URL's expiry and signature segments at `now`. The signature is checked first
    /// and in constant time, so an expired URL with a forged signature says "bad signature".
    pub fn verify(
        &self,
        object: ObjectId,
        expires: &str,
        signature: &str,
        now: Timestamp,
    ) -> Result<(), UrlRefused> {
        let expires = expires
            .parse::<i64>()
            .ok()
            .filter(|e| *e > 0 && e.to_string() == expires)
            .map(Timestamp::from_epoch_seconds)
            .ok_or(UrlRefused::BadSignature)?;
        let given = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| UrlRefused::BadSignature)?;
        let expected = self.mac(object, expires);
        if given.len() != SIGNATURE_BYTES || !bool::from(expected.ct_eq(given.as_slice())) {
            return Err(UrlRefused::BadSignature);
        }
        if now >= expires {
            return Err(UrlRefused::Expired);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> MediaSigningKey {
        match MediaSigningKey::new(vec![byte; 32]) {
            Ok(k) => k,
            Err(_) => unreachable!("32 bytes"),
        }
    }

    fn object(n: u8) -> ObjectId {
        ObjectId::parse(&format!("{n:032x}")).unwrap_or_else(|_| unreachable!("32 hex digits"))
    }

    #[test]
    fn a_signature_opens_its_object_until_it_expires() {
        let k = key(7);
        let (o, exp) = (object(1), Timestamp::from_epoch_seconds(1_000));
        let sig = k.sign(o, exp);
        assert_eq!(sig.len(), 22);
        let now = Timestamp::from_epoch_seconds(999);
        assert_eq!(k.verify(o, "1000", &sig, now), Ok(()));
        assert_eq!(
            k.verify(o, "1000", &sig, Timestamp::from_epoch_seconds(1_000)),
            Err(UrlRefused::Expired)
        );
    }

    /// The signature is HMAC-SHA256 over the documented message, so URLs minted by another
    /// version of medialib (a rolling restart) still open: the value was computed outside
    /// medialib, with Python's `hmac`.
    #[test]
    fn a_signature_is_the_hmac_of_the_documented_message() {
        let sig = key(7).sign(object(1), Timestamp::from_epoch_seconds(1_000));
        assert_eq!(
            object(1).to_string(),
            "00000000-0000-0000-0000-000000000001"
        );
        assert_eq!(sig, "h0hwaLHUtaAxBeMMkelF5A");
    }

    #[test]
    fn changing_anything_breaks_the_signature() {
        let k = key(7);
        let (o, exp) = (object(1), Timestamp::from_epoch_seconds(1_000));
        let sig = k.sign(o, exp);
        let now = Timestamp::from_epoch_seconds(1);
        let bad = Err(UrlRefused::BadSignature);
        assert_eq!(k.verify(object(2), "1000", &sig, now), bad);
        assert_eq!(k.verify(o, "1001", &sig, now), bad);
        assert_eq!(k.verify(o, "01000", &sig, now), bad);
        assert_eq!(k.verify(o, "+1000", &sig, now), bad);
        assert_eq!(key(8).verify(o, "1000", &sig, now), bad);
        assert_eq!(k.verify(o, "1000", &sig[..21], now), bad);
        assert_eq!(k.verify(o, "1000", "!!", now), bad);
        let mut flipped = sig.into_bytes();
        flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap_or_default();
        assert_eq!(k.verify(o, "1000", &flipped, now), bad);
        assert!(MediaSigningKey::new(vec![1; 31]).is_err());
    }
}
