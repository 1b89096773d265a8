//! Codes, access tokens and refresh tokens as state machines.
//!
//! The adapter that stores them makes each transition atomic ("spend this code",
//! "rotate this refresh token"); the rules of each transition live here.

use super::client::ClientId;
use super::error::OAuthErrorCode;
use super::pkce::{CodeChallenge, CodeVerifier};
use super::redirect::RedirectUri;
use super::scope::ScopeSet;
use crate::ids::{GrantId, UserId};
use crate::secret::{Secret, TokenDigest, TokenKind};
use crate::time::{Lifetime, Timestamp};

/// An authorization code that was issued and not yet redeemed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCode {
    /// Digest of the code (the code itself is never stored).
    pub digest: TokenDigest,
    /// The client it was issued to.
    pub client: ClientId,
    /// The redirect URI of the authorization request.
    pub redirect_uri: RedirectUri,
    /// The approving user.
    pub user: UserId,
    /// Approved scopes.
    pub scope: ScopeSet,
    /// Whether offline access was approved.
    pub offline: bool,
    /// PKCE challenge, when the request carried one.
    pub challenge: Option<CodeChallenge>,
    /// End of validity.
    pub expires_at: Timestamp,
}

/// A stored code in either of its states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredCode {
    /// Waiting to be redeemed.
    Unused(IssuedCode),
    /// Already redeemed (or burnt by a failed redemption); `grant` is what it produced.
    Redeemed {
        /// The grant issued from it, if the redemption succeeded.
        grant: Option<GrantId>,
    },
}

/// What the client presents at the token endpoint with a code.
#[derive(Debug, Clone, Copy)]
pub struct CodePresentation<'a> {
    /// The authenticated client.
    pub client: &'a ClientId,
    /// `redirect_uri` of the token request.
    pub redirect_uri: Option<&'a str>,
    /// PKCE `code_verifier`.
    pub verifier: Option<&'a str>,
}

/// Why a code does not yield tokens. Every variant is `invalid_grant`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedeemError {
    /// The code was already redeemed: the tokens issued from it must be revoked.
    #[error("the authorization code was already used")]
    Replayed {
        /// The grant to revoke.
        grant: Option<GrantId>,
    },
    /// Past its lifetime.
    #[error("the authorization code has expired")]
    Expired,
    /// Issued to another client.
    #[error("the authorization code was issued to another client")]
    WrongClient,
    /// `redirect_uri` differs from the authorization request's.
    #[error("redirect_uri does not match the authorization request")]
    RedirectMismatch,
    /// A challenge was sent but no verifier is presented.
    #[error("code_verifier is required")]
    MissingVerifier,
    /// The verifier does not answer the challenge (or is malformed).
    #[error("code_verifier does not match the code_challenge")]
    VerifierMismatch,
    /// A verifier without a challenge: a PKCE downgrade attempt.
    #[error("code_verifier given but the authorization request had no code_challenge")]
    UnexpectedVerifier,
}

impl RedeemError {
    /// The RFC 6749 error code.
    pub fn error_code(&self) -> OAuthErrorCode {
        OAuthErrorCode::InvalidGrant
    }
}

/// What a successful redemption or rotation grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantSpec {
    /// The client.
    pub client: ClientId,
    /// The user.
    pub user: UserId,
    /// The scopes.
    pub scope: ScopeSet,
    /// Whether refresh tokens are issued.
    pub offline: bool,
}

impl StoredCode {
    /// Redeems the code: consumes it and yields what to grant, or says why not.
    pub fn redeem(
        self,
        p: &CodePresentation<'_>,
        now: Timestamp,
    ) -> Result<GrantSpec, RedeemError> {
        let code = match self {
            StoredCode::Redeemed { grant } => return Err(RedeemError::Replayed { grant }),
            StoredCode::Unused(c) => c,
        };
        if now >= code.expires_at {
            return Err(RedeemError::Expired);
        }
        if &code.client != p.client {
            return Err(RedeemError::WrongClient);
        }
        if p.redirect_uri != Some(code.redirect_uri.as_str()) {
            return Err(RedeemError::RedirectMismatch);
        }
        match (&code.challenge, p.verifier) {
            (Some(_), None) => return Err(RedeemError::MissingVerifier),
            (None, Some(_)) => return Err(RedeemError::UnexpectedVerifier),
            (Some(ch), Some(v)) => {
                let ok = CodeVerifier::parse(v).is_ok_and(|v| ch.verify(&v));
                if !ok {
                    return Err(RedeemError::VerifierMismatch);
                }
            }
            (None, None) => {}
        }
        Ok(GrantSpec {
            client: code.client,
            user: code.user,
            scope: code.scope,
            offline: code.offline,
        })
    }
}

/// Token lifetimes (from configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLifetimes {
    /// Access token lifetime.
    pub access: Lifetime,
    /// Refresh token idle lifetime.
    pub refresh: Lifetime,
}

/// Random input for minting a token pair.
#[derive(Clone, Copy)]
pub struct TokenRandomness {
    /// For the access token.
    pub access: [u8; 32],
    /// For the refresh token.
    pub refresh: [u8; 32],
}

impl std::fmt::Debug for TokenRandomness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenRandomness([redacted])")
    }
}

/// A freshly minted token: the secret for the client, the digest for the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintedToken {
    /// Shown once to the client.
    pub secret: Secret,
    /// Stored.
    pub digest: TokenDigest,
    /// End of validity.
    pub expires_at: Timestamp,
}

/// The tokens of one token response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedTokens {
    /// The access token.
    pub access: MintedToken,
    /// The refresh token, only for offline grants.
    pub refresh: Option<MintedToken>,
    /// The scopes of the access token.
    pub scope: ScopeSet,
}

/// Mints the tokens a grant gets: always an access token, a refresh token only when offline.
pub fn mint_tokens(
    grant: &GrantSpec,
    random: TokenRandomness,
    now: Timestamp,
    lifetimes: TokenLifetimes,
) -> IssuedTokens {
    let mint = |kind: TokenKind, bytes, ttl| {
        let (secret, digest) = kind.mint(bytes);
        MintedToken {
            secret,
            digest,
            expires_at: now.plus(ttl),
        }
    };
    IssuedTokens {
        access: mint(TokenKind::Access, random.access, lifetimes.access),
        refresh: grant
            .offline
            .then(|| mint(TokenKind::Refresh, random.refresh, lifetimes.refresh)),
        scope: grant.scope,
    }
}

/// A stored access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessTokenRecord {
    /// The grant it descends from.
    pub grant: GrantId,
    /// The user it acts for.
    pub user: UserId,
    /// The client holding it.
    pub client: ClientId,
    /// Its scopes.
    pub scope: ScopeSet,
    /// End of validity.
    pub expires_at: Timestamp,
    /// Revoked itself (logout, RFC 7009) or through its grant.
    pub revoked: bool,
}

/// Why an access token no longer works (401 `invalid_token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AccessTokenInvalid {
    /// Past its lifetime.
    #[error("the access token has expired")]
    Expired,
    /// Revoked by logout, revocation or a replay.
    #[error("the access token was revoked")]
    Revoked,
}

/// An access token that is good now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveAccess {
    /// The grant.
    pub grant: GrantId,
    /// The user.
    pub user: UserId,
    /// The client.
    pub client: ClientId,
    /// Scopes.
    pub scope: ScopeSet,
    /// Seconds left.
    pub expires_in: i64,
}

impl AccessTokenRecord {
    /// Checks the token at `now`.
    pub fn check(self, now: Timestamp) -> Result<ActiveAccess, AccessTokenInvalid> {
        if self.revoked {
            return Err(AccessTokenInvalid::Revoked);
        }
        if now >= self.expires_at {
            return Err(AccessTokenInvalid::Expired);
        }
        Ok(ActiveAccess {
            grant: self.grant,
            user: self.user,
            client: self.client,
            scope: self.scope,
            expires_in: now.seconds_until(self.expires_at),
        })
    }
}

/// The state of a stored refresh token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshTokenState {
    /// Unused: may be rotated once.
    Valid,
    /// Already rotated: presenting it again is reuse.
    Used,
    /// Revoked with its grant.
    Revoked,
}

/// A stored refresh token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshTokenRecord {
    /// Its digest.
    pub digest: TokenDigest,
    /// The grant family it belongs to.
    pub grant: GrantId,
    /// The grant's client.
    pub client: ClientId,
    /// The grant's user.
    pub user: UserId,
    /// The grant's scopes.
    pub scope: ScopeSet,
    /// Idle expiry.
    pub expires_at: Timestamp,
    /// Valid, used or revoked.
    pub state: RefreshTokenState,
}

/// What the client presents with a refresh token.
#[derive(Debug, Clone, Copy)]
pub struct RefreshPresentation<'a> {
    /// The authenticated client.
    pub client: &'a ClientId,
    /// A narrower scope, if asked (RFC 6749 §6).
    pub scope: Option<ScopeSet>,
}

/// Why a refresh is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefreshError {
    /// The token was already used: the whole grant must be revoked.
    #[error("the refresh token was already used")]
    Reused {
        /// The grant to revoke.
        grant: GrantId,
    },
    /// Revoked.
    #[error("the refresh token was revoked")]
    Revoked,
    /// Idle too long.
    #[error("the refresh token has expired")]
    Expired,
    /// Issued to another client.
    #[error("the refresh token was issued to another client")]
    WrongClient,
    /// Asks for scopes the grant does not have.
    #[error("the requested scope exceeds the granted scope")]
    ScopeWidened,
}

impl RefreshError {
    /// The RFC 6749 error code.
    pub fn error_code(&self) -> OAuthErrorCode {
        match self {
            Self::ScopeWidened => OAuthErrorCode::InvalidScope,
            _ => OAuthErrorCode::InvalidGrant,
        }
    }
}

/// A rotation: the spent token and the new pair that replaces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rotation {
    /// The token that is now used.
    pub spent: TokenDigest,
    /// The grant family.
    pub grant: GrantId,
    /// The new tokens (the refresh token is always present).
    pub tokens: IssuedTokens,
}

impl RefreshTokenRecord {
    /// Rotates the token: it becomes used and a new pair is minted, or the refusal says why.
    pub fn rotate(
        self,
        p: &RefreshPresentation<'_>,
        random: TokenRandomness,
        now: Timestamp,
        lifetimes: TokenLifetimes,
    ) -> Result<Rotation, RefreshError> {
        match self.state {
            RefreshTokenState::Used => return Err(RefreshError::Reused { grant: self.grant }),
            RefreshTokenState::Revoked => return Err(RefreshError::Revoked),
            RefreshTokenState::Valid => {}
        }
        if &self.client != p.client {
            return Err(RefreshError::WrongClient);
        }
        if now >= self.expires_at {
            return Err(RefreshError::Expired);
        }
        let scope = match p.scope {
            Some(s) if !s.is_subset_of(self.scope) => return Err(RefreshError::ScopeWidened),
            Some(s) => s,
            None => self.scope,
        };
        let spec = GrantSpec {
            client: self.client,
            user: self.user,
            scope,
            offline: true,
        };
        Ok(Rotation {
            spent: self.digest,
            grant: self.grant,
            tokens: mint_tokens(&spec, random, now, lifetimes),
        })
    }
}
