//! PKCE (RFC 7636), S256 only.

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::secret::b64url;

/// A stored code challenge: base64url(SHA-256(verifier)), 43 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeChallenge(String);

/// A code verifier: 43..=128 unreserved characters.
#[derive(Clone, PartialEq, Eq)]
pub struct CodeVerifier(String);

impl std::fmt::Debug for CodeVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodeVerifier([redacted])")
    }
}

/// A malformed PKCE parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidPkce {
    /// Only S256 is supported.
    #[error("code_challenge_method must be S256")]
    UnsupportedMethod,
    /// The challenge is not 43 base64url characters.
    #[error("code_challenge must be 43 base64url characters")]
    BadChallenge,
    /// The verifier is not 43..=128 unreserved characters.
    #[error("code_verifier must be 43 to 128 unreserved characters")]
    BadVerifier,
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

impl CodeChallenge {
    /// Parses a challenge with its method (absent method means `plain`, which is refused).
    pub fn parse(challenge: &str, method: Option<&str>) -> Result<Self, InvalidPkce> {
        if method != Some("S256") {
            return Err(InvalidPkce::UnsupportedMethod);
        }
        Self::parse_stored(challenge)
    }

    /// Rebuilds a stored challenge.
    pub fn parse_stored(challenge: &str) -> Result<Self, InvalidPkce> {
        let ok = challenge.len() == 43
            && challenge
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(Self(challenge.to_owned()))
        } else {
            Err(InvalidPkce::BadChallenge)
        }
    }

    /// The challenge a verifier yields.
    pub fn of(verifier: &CodeVerifier) -> Self {
        Self(b64url(&Sha256::digest(verifier.0.as_bytes())))
    }

    /// Whether `verifier` answers this challenge (constant time).
    pub fn verify(&self, verifier: &CodeVerifier) -> bool {
        Self::of(verifier)
            .0
            .as_bytes()
            .ct_eq(self.0.as_bytes())
            .into()
    }

    /// The stored form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl CodeVerifier {
    /// Parses a presented verifier.
    pub fn parse(input: &str) -> Result<Self, InvalidPkce> {
        if (43..=128).contains(&input.len()) && input.bytes().all(unreserved) {
            Ok(Self(input.to_owned()))
        } else {
            Err(InvalidPkce::BadVerifier)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b_vector() {
        let v = CodeVerifier::parse("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk").unwrap();
        let c = CodeChallenge::parse("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Some("S256"))
            .unwrap();
        assert!(c.verify(&v));
        assert_eq!(CodeChallenge::of(&v), c);
        let other = CodeVerifier::parse(&"a".repeat(43)).unwrap();
        assert!(!c.verify(&other));
    }

    #[test]
    fn only_s256() {
        let ch = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert_eq!(
            CodeChallenge::parse(ch, None),
            Err(InvalidPkce::UnsupportedMethod)
        );
        assert_eq!(
            CodeChallenge::parse(ch, Some("plain")),
            Err(InvalidPkce::UnsupportedMethod)
        );
        assert_eq!(
            CodeChallenge::parse("short", Some("S256")),
            Err(InvalidPkce::BadChallenge)
        );
    }

    #[test]
    fn verifier_bounds() {
        assert!(CodeVerifier::parse(&"a".repeat(42)).is_err());
        assert!(CodeVerifier::parse(&"a".repeat(43)).is_ok());
        assert!(CodeVerifier::parse(&"a".repeat(128)).is_ok());
        assert!(CodeVerifier::parse(&"a".repeat(129)).is_err());
        assert!(CodeVerifier::parse(&format!("{}+", "a".repeat(43))).is_err());
        assert_eq!(
            format!("{:?}", CodeVerifier::parse(&"a".repeat(43)).unwrap()),
            "CodeVerifier([redacted])"
        );
    }
}
