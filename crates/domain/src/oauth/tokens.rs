//! Codes, access tokens and refresh tokens as state machines.
//!
//! The adapter that stores them makes each transition atomic ("spend this code",
//! "rotate this refresh token"); the rules of each transition live here.

use super::client::ClientId;
use super::error::OAuthErrorCode;
use super::pkce::{CodeChallenge, CodeVerifier};
use super::redirect::RedirectUri;
use super::scope::ScopeSet;
use crate::User;
use crate::authz::Caller;
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

/// What a successful redemption or rotation grants: a proof that only
/// [`StoredCode::redeem`] and [`RefreshTokenRecord::rotate`] make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantSpec {
    client: ClientId,
    user: UserId,
    scope: ScopeSet,
    offline: bool,
}

impl GrantSpec {
    /// The client.
    pub fn client(&self) -> &ClientId {
        &self.client
    }

    /// The user.
    pub fn user(&self) -> UserId {
        self.user
    }

    /// The scopes.
    pub fn scope(&self) -> ScopeSet {
        self.scope
    }

    /// Whether refresh tokens are issued.
    pub fn offline(&self) -> bool {
        self.offline
    }
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
    /// How long after a refresh token was spent a retry with it may still get a pair, while
    /// the pair it gave is untouched (docs/security.md, "Refresh retries"); `None`: never.
    pub retry_grace: Option<Lifetime>,
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

/// Mints one token valid until `expires_at`.
fn minted(kind: TokenKind, bytes: [u8; 32], expires_at: Timestamp) -> MintedToken {
    let (secret, digest) = kind.mint(bytes);
    MintedToken {
        secret,
        digest,
        expires_at,
    }
}

/// Mints the tokens a grant gets: always an access token, a refresh token only when offline.
pub fn mint_tokens(
    grant: &GrantSpec,
    random: TokenRandomness,
    now: Timestamp,
    lifetimes: TokenLifetimes,
) -> IssuedTokens {
    let mint = |kind: TokenKind, bytes, ttl| minted(kind, bytes, now.plus(ttl));
    IssuedTokens {
        access: mint(TokenKind::Access, random.access, lifetimes.access),
        refresh: grant
            .offline
            .then(|| mint(TokenKind::Refresh, random.refresh, lifetimes.refresh)),
        scope: grant.scope,
    }
}

/// Whether a stored token was revoked, as the store records it: the token itself (logout,
/// RFC 7009) or its whole grant (a replay, a reuse, RFC 7009 on a refresh token).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Revocation {
    /// The token itself was revoked.
    pub token: bool,
    /// Its grant was revoked.
    pub grant: bool,
}

impl Revocation {
    /// Not revoked at all.
    pub const NONE: Revocation = Revocation {
        token: false,
        grant: false,
    };

    /// Whether the token no longer works because of a revocation, its own or its grant's.
    pub fn is_revoked(self) -> bool {
        self.token || self.grant
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
    pub revoked: Revocation,
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

/// An access token that is good now: a proof that only [`AccessTokenRecord::check`] makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveAccess {
    grant: GrantId,
    user: UserId,
    client: ClientId,
    scope: ScopeSet,
    expires_in: i64,
}

impl ActiveAccess {
    /// The grant.
    pub fn grant(&self) -> GrantId {
        self.grant
    }

    /// The user.
    pub fn user(&self) -> UserId {
        self.user
    }

    /// The client.
    pub fn client(&self) -> &ClientId {
        &self.client
    }

    /// Scopes.
    pub fn scope(&self) -> ScopeSet {
        self.scope
    }

    /// Seconds left.
    pub fn expires_in(&self) -> i64 {
        self.expires_in
    }
}

impl ActiveAccess {
    /// The caller behind the token, if `user` (read with it) is the user it acts for.
    pub fn acting_for(self, user: Option<User>) -> Option<AuthenticatedCaller> {
        let user = user.filter(|u| u.id == self.user)?;
        Some(AuthenticatedCaller { user, access: self })
    }
}

/// The caller behind a valid bearer token: a proof that only
/// [`ActiveAccess::acting_for`] makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatedCaller {
    user: User,
    access: ActiveAccess,
}

impl AuthenticatedCaller {
    /// The user.
    pub fn user(&self) -> &User {
        &self.user
    }

    /// The token's scopes.
    pub fn scope(&self) -> ScopeSet {
        self.access.scope
    }

    /// The client holding the token.
    pub fn client(&self) -> &ClientId {
        &self.access.client
    }

    /// The grant.
    pub fn grant(&self) -> GrantId {
        self.access.grant
    }

    /// Seconds left.
    pub fn expires_in(&self) -> i64 {
        self.access.expires_in
    }

    /// The caller the authorization gate sees: the token's user, limited by its scopes.
    pub fn caller(&self) -> Caller {
        self.user.as_caller().with_scope(self.access.scope)
    }

    /// The user, for what follows authentication (sign out).
    pub fn into_user(self) -> User {
        self.user
    }
}

impl AccessTokenRecord {
    /// Checks the token at `now`.
    pub fn check(self, now: Timestamp) -> Result<ActiveAccess, AccessTokenInvalid> {
        if self.revoked.is_revoked() {
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

/// The pair a refresh token's rotation gave, as stored with the spent token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Successor {
    /// The refresh token it gave.
    pub refresh: TokenDigest,
    /// The access token it gave.
    pub access: TokenDigest,
    /// Whether that refresh token is still unused and unrevoked: as far as the server can
    /// tell, the pair may never have reached its client.
    pub untouched: bool,
}

/// When a refresh token was spent, and what it gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spent {
    /// When it was rotated.
    pub at: Timestamp,
    /// The pair it gave; `None` when it was superseded by a retry of its parent (its pair
    /// then was taken back), or spent before successors were recorded.
    pub successor: Option<Successor>,
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
    /// Whether, when and into what it was rotated already.
    pub spent: Option<Spent>,
    /// Whether it, or its grant, was revoked.
    pub revoked: Revocation,
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

/// A rotation: the spent token and the new pair that replaces it. Only
/// [`RefreshTokenRecord::rotate`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rotation {
    spent: TokenDigest,
    supersedes: Option<Successor>,
    grant: GrantId,
    client: ClientId,
    user: UserId,
    access: MintedToken,
    refresh: MintedToken,
    scope: ScopeSet,
}

impl Rotation {
    /// The token that is now used.
    pub fn spent(&self) -> TokenDigest {
        self.spent
    }

    /// For a retry within the grace period: the untouched pair the spent token gave before,
    /// which this rotation takes back (its refresh token becomes spent, so that presenting it
    /// later is reuse; its access token is revoked). `None` for a first rotation.
    pub fn supersedes(&self) -> Option<Successor> {
        self.supersedes
    }

    /// The grant family.
    pub fn grant(&self) -> GrantId {
        self.grant
    }

    /// The new access token.
    pub fn access(&self) -> &MintedToken {
        &self.access
    }

    /// The new refresh token (a rotation always has one).
    pub fn refresh(&self) -> &MintedToken {
        &self.refresh
    }

    /// The scopes of the new access token.
    pub fn scope(&self) -> ScopeSet {
        self.scope
    }

    /// The rows to write: the new pair of the grant.
    pub fn new_tokens(&self) -> NewTokens<'_> {
        NewTokens {
            grant: self.grant,
            user: self.user,
            client: &self.client,
            access: &self.access,
            refresh: Some(&self.refresh),
            scope: self.scope,
        }
    }

    /// The new pair, for the token response.
    pub fn into_tokens(self) -> IssuedTokens {
        IssuedTokens {
            access: self.access,
            refresh: Some(self.refresh),
            scope: self.scope,
        }
    }
}

/// The token rows a redemption or a rotation writes, all of one grant.
#[derive(Debug, Clone, Copy)]
pub struct NewTokens<'a> {
    /// The grant they descend from.
    pub grant: GrantId,
    /// The user they act for.
    pub user: UserId,
    /// The client holding them.
    pub client: &'a ClientId,
    /// The access token.
    pub access: &'a MintedToken,
    /// The refresh token, for offline grants.
    pub refresh: Option<&'a MintedToken>,
    /// The access token's scopes.
    pub scope: ScopeSet,
}

impl RefreshTokenRecord {
    /// The token's state as introspection reports it (RFC 7662): a revocation outranks use,
    /// so a used token of a revoked grant is `Revoked`.
    pub fn state(&self) -> RefreshTokenState {
        if self.revoked.is_revoked() {
            RefreshTokenState::Revoked
        } else if self.spent.is_some() {
            RefreshTokenState::Used
        } else {
            RefreshTokenState::Valid
        }
    }

    /// Whether introspection reports the token active at `now`: neither used nor revoked,
    /// and not past its idle expiry.
    pub fn is_active(&self, now: Timestamp) -> bool {
        self.state() == RefreshTokenState::Valid && now < self.expires_at
    }

    /// Whether presenting this spent token again is a retry of a rotation whose answer never
    /// reached its client (a crash, a cut connection) rather than a replay: the same client,
    /// within `grace` of the rotation, while the pair the rotation gave is untouched. Then
    /// that pair is what the retry supersedes. Real replays are still caught: once the pair
    /// was used, after the grace, or when the superseded pair is presented later (it counts
    /// as spent), the grant family is revoked.
    fn retry_of(
        &self,
        spent: Spent,
        p: &RefreshPresentation<'_>,
        now: Timestamp,
        grace: Option<Lifetime>,
    ) -> Option<Successor> {
        let grace = grace?;
        let successor = spent.successor.filter(|s| s.untouched)?;
        let in_time = now < spent.at.plus(grace);
        (in_time && &self.client == p.client && !self.revoked.is_revoked()).then_some(successor)
    }

    /// Rotates the token: it becomes used and a new pair is minted, or the refusal says why.
    ///
    /// Here use outranks revocation: a used token presented again is a reuse, and revokes
    /// its grant family (again, if it already was), whatever else happened to it; but for a
    /// retry, which gets a new pair in place of the one it got before (see
    /// `RefreshTokenRecord::retry_of`, private).
    pub fn rotate(
        self,
        p: &RefreshPresentation<'_>,
        random: TokenRandomness,
        now: Timestamp,
        lifetimes: TokenLifetimes,
    ) -> Result<Rotation, RefreshError> {
        let supersedes = match self.spent {
            Some(spent) => match self.retry_of(spent, p, now, lifetimes.retry_grace) {
                Some(successor) => Some(successor),
                None => return Err(RefreshError::Reused { grant: self.grant }),
            },
            None => None,
        };
        if self.revoked.is_revoked() {
            return Err(RefreshError::Revoked);
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
        let mint = |kind: TokenKind, bytes, ttl| minted(kind, bytes, now.plus(ttl));
        Ok(Rotation {
            spent: self.digest,
            supersedes,
            grant: self.grant,
            client: self.client,
            user: self.user,
            access: mint(TokenKind::Access, random.access, lifetimes.access),
            refresh: mint(TokenKind::Refresh, random.refresh, lifetimes.refresh),
            scope,
        })
    }
}
