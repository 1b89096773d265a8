//! Secrets and their digests: tokens, codes and client secrets are random, shown
//! once, and stored only as SHA-256 digests (DECISIONS.md §5).

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// A secret value (token, code, client secret, password) whose `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself; call only where it must leave the process (a response, a hash).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// The SHA-256 digest of a secret, as stored.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenDigest([u8; 32]);

/// A stored digest that is not 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a digest is 64 hexadecimal digits")]
pub struct InvalidDigest;

impl TokenDigest {
    /// Digests a secret.
    pub fn of(secret: &Secret) -> Self {
        Self(Sha256::digest(secret.expose().as_bytes()).into())
    }

    /// Parses the stored hex form.
    pub fn from_hex(input: &str) -> Result<Self, InvalidDigest> {
        let b = input.as_bytes();
        if b.len() != 64
            || !b
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        {
            return Err(InvalidDigest);
        }
        let mut out = [0u8; 32];
        for (i, pair) in b.chunks_exact(2).enumerate() {
            let v = |c: u8| {
                if c.is_ascii_digit() {
                    c - b'0'
                } else {
                    c - b'a' + 10
                }
            };
            out[i] = (v(pair[0]) << 4) | v(pair[1]);
        }
        Ok(Self(out))
    }

    /// Lowercase hex, as stored.
    pub fn to_hex(&self) -> String {
        crate::hex::lower(&self.0)
    }

    /// Compares in constant time.
    pub fn ct_eq(&self, other: &TokenDigest) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Digests are not secret, but a short prefix is enough to tell them apart in logs.
        write!(f, "TokenDigest({}…)", &self.to_hex()[..8])
    }
}

/// The kinds of opaque credentials the service mints, each with a readable prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// `mla_`: an access token.
    Access,
    /// `mlr_`: a refresh token.
    Refresh,
    /// `mlc_`: an authorization code.
    Code,
    /// `mls_`: a client secret.
    ClientSecret,
    /// `mlb_`: a browser session cookie.
    Session,
    /// `mlf_`: the cookie that binds a sign-in form's CSRF token before any session exists.
    LoginForm,
}

impl TokenKind {
    /// The readable prefix.
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::Access => "mla_",
            Self::Refresh => "mlr_",
            Self::Code => "mlc_",
            Self::ClientSecret => "mls_",
            Self::Session => "mlb_",
            Self::LoginForm => "mlf_",
        }
    }

    /// Mints a credential from 32 random bytes: the secret (shown once) and its digest (stored).
    pub fn mint(self, random: [u8; 32]) -> (Secret, TokenDigest) {
        let secret = Secret(format!(
            "{}{}",
            self.prefix(),
            URL_SAFE_NO_PAD.encode(random)
        ));
        let digest = TokenDigest::of(&secret);
        (secret, digest)
    }

    /// Digests a presented credential, refusing one that cannot be of this kind
    /// (wrong prefix or length) without looking anything up.
    pub fn digest_presented(self, presented: &str) -> Option<TokenDigest> {
        let body = presented.strip_prefix(self.prefix())?;
        let well_formed = body.len() == 43
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        // Digested as presented, without a copy into a `Secret` first.
        well_formed.then(|| TokenDigest(Sha256::digest(presented.as_bytes()).into()))
    }
}

/// Base64url without padding (used by PKCE and token encoding).
pub(crate) fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "Secret([redacted])");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn minted_tokens_have_prefix_and_256_bits() {
        let (s, d) = TokenKind::Access.mint([7; 32]);
        assert!(s.expose().starts_with("mla_"));
        assert_eq!(s.expose().len(), 4 + 43);
        assert_eq!(TokenKind::Access.digest_presented(s.expose()), Some(d));
        assert_eq!(
            TokenKind::Refresh.digest_presented(s.expose()),
            None,
            "prefix is checked"
        );
        assert_eq!(TokenKind::Access.digest_presented("mla_short"), None);
        let (s2, d2) = TokenKind::Access.mint([8; 32]);
        assert_ne!(s, s2);
        assert_ne!(d, d2);
    }

    #[test]
    fn digest_hex_round_trips() {
        let d = TokenDigest::of(&Secret::new("x"));
        let hex = d.to_hex();
        assert_eq!(hex.len(), 64);
        assert_eq!(TokenDigest::from_hex(&hex), Ok(d));
        assert!(TokenDigest::from_hex(&hex.to_uppercase()).is_err());
        assert!(TokenDigest::from_hex("abc").is_err());
        assert!(d.ct_eq(&d));
        assert!(!d.ct_eq(&TokenDigest::of(&Secret::new("y"))));
        // sha256("x")
        assert_eq!(
            hex,
            "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
        );
    }
}
