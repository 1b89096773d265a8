//! The token endpoint's two grants, decided from facts.
//!
//! A store reads the facts of one presentation in one read ([`CodeFacts`],
//! [`RefreshFacts`]: the presented client's kind and the code or refresh token, each
//! `None` when unknown); [`decide_code`] and [`decide_refresh`] turn them into a decision;
//! the store writes what the decision says and nothing else, in the same transaction. The
//! store's one judgement is whether its conditional write still found the code unredeemed
//! (the token unused): if a concurrent caller got there first, the facts have changed, and
//! the same function decides again on the new facts, which then say "replay" or "reuse".
//!
//! Every rule of the lifecycle is here: the client authenticates before the code or token
//! is looked at; a failed redemption burns the code; a replayed code revokes the grant it
//! produced; a reused refresh token revokes its whole grant family.

use super::client::{ClientAuthError, ClientId, ClientKind};
use super::error::OAuthErrorCode;
use super::tokens::{
    CodePresentation, GrantSpec, IssuedTokens, NewTokens, RedeemError, RefreshError,
    RefreshPresentation, RefreshTokenRecord, Rotation, StoredCode, TokenLifetimes, TokenRandomness,
    mint_tokens,
};
use crate::ids::GrantId;
use crate::secret::Secret;
use crate::time::Timestamp;

/// What a store read for a code exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeFacts {
    /// How the presented client authenticates; `None`: no client has the presented id.
    pub client: Option<ClientKind>,
    /// The code; `None`: no code has the presented digest.
    pub code: Option<StoredCode>,
}

/// What a store read for a refresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshFacts {
    /// How the presented client authenticates; `None`: no client has the presented id.
    pub client: Option<ClientKind>,
    /// The refresh token with its grant; `None`: no token has the presented digest.
    pub token: Option<RefreshTokenRecord>,
}

/// Everything a grant brings besides the facts: what the client presented with the code
/// ([`CodeExchange`]) or the refresh token ([`RefreshExchange`]), and what the new tokens
/// are made of.
#[derive(Debug, Clone, Copy)]
pub struct Exchange<'a, P> {
    /// What the client presented with the code or token.
    pub presentation: P,
    /// The client secret it presented (`None` for a public client).
    pub client_secret: Option<&'a Secret>,
    /// Now.
    pub now: Timestamp,
    /// Random bytes for the new tokens.
    pub random: TokenRandomness,
    /// Token lifetimes.
    pub lifetimes: TokenLifetimes,
}

/// Everything a code exchange brings besides the facts (and the new grant's id).
pub type CodeExchange<'a> = Exchange<'a, CodePresentation<'a>>;

/// Everything a refresh brings besides the facts.
pub type RefreshExchange<'a> = Exchange<'a, RefreshPresentation<'a>>;

/// Why a code exchange yields no tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeRefusal {
    /// No client has the presented id (the same words as a wrong secret: it names nothing).
    #[error("client authentication failed")]
    UnknownClient,
    /// The client did not authenticate: the code was not looked at.
    #[error(transparent)]
    Client(ClientAuthError),
    /// No code has the presented digest (or the code is malformed).
    #[error("invalid authorization code")]
    UnknownCode,
    /// The code was refused.
    #[error(transparent)]
    Code(RedeemError),
}

impl CodeRefusal {
    /// The RFC 6749 error code: `invalid_client` for the client, `invalid_grant` for the code.
    pub fn error_code(&self) -> OAuthErrorCode {
        match self {
            Self::UnknownClient | Self::Client(_) => OAuthErrorCode::InvalidClient,
            Self::UnknownCode => OAuthErrorCode::InvalidGrant,
            Self::Code(e) => e.error_code(),
        }
    }
}

/// Why a refresh yields no tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefreshRefusal {
    /// No client has the presented id.
    #[error("client authentication failed")]
    UnknownClient,
    /// The client did not authenticate: the token was not looked at.
    #[error(transparent)]
    Client(ClientAuthError),
    /// No refresh token has the presented digest (or the token is malformed).
    #[error("invalid refresh token")]
    UnknownToken,
    /// The token was refused.
    #[error(transparent)]
    Token(RefreshError),
}

impl RefreshRefusal {
    /// The RFC 6749 error code.
    pub fn error_code(&self) -> OAuthErrorCode {
        match self {
            Self::UnknownClient | Self::Client(_) => OAuthErrorCode::InvalidClient,
            Self::UnknownToken => OAuthErrorCode::InvalidGrant,
            Self::Token(e) => e.error_code(),
        }
    }
}

/// A redemption the domain approved: the code to claim and the grant with its first tokens.
/// Only [`decide_code`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redemption {
    grant: GrantId,
    spec: GrantSpec,
    tokens: IssuedTokens,
}

impl Redemption {
    /// The new grant's id.
    pub fn grant(&self) -> GrantId {
        self.grant
    }

    /// What the grant is: client, user, scopes, offline.
    pub fn spec(&self) -> &GrantSpec {
        &self.spec
    }

    /// The token rows to write.
    pub fn new_tokens(&self) -> NewTokens<'_> {
        NewTokens {
            grant: self.grant,
            user: self.spec.user(),
            client: self.spec.client(),
            access: &self.tokens.access,
            refresh: self.tokens.refresh.as_ref(),
            scope: self.tokens.scope,
        }
    }
}

/// What a store does with a code exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeDecision {
    /// Claim the code, if it is still unredeemed when written, and create the grant with
    /// its tokens; if it is not, write nothing and decide again.
    Redeem(Redemption),
    /// A failed redemption: mark the code redeemed (burnt, with no grant), then refuse.
    BurnCode(RedeemError),
    /// A replayed code: revoke the grant it produced, then refuse.
    RevokeGrant(GrantId),
    /// Refuse, writing nothing.
    Refuse(CodeRefusal),
}

impl CodeDecision {
    /// The answer to the client once the decision is written.
    pub fn outcome(self) -> Result<(GrantId, IssuedTokens), CodeRefusal> {
        match self {
            Self::Redeem(r) => Ok((r.grant, r.tokens)),
            Self::BurnCode(e) => Err(CodeRefusal::Code(e)),
            Self::RevokeGrant(grant) => Err(CodeRefusal::Code(RedeemError::Replayed {
                grant: Some(grant),
            })),
            Self::Refuse(r) => Err(r),
        }
    }
}

/// What a store does with a refresh.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one decision per request, made once and moved once: boxing would only add an allocation"
)]
pub enum RefreshDecision {
    /// Spend the token, if it is still unused and unrevoked when written, and add the new
    /// pair; if it is not, write nothing and decide again.
    Rotate(Rotation),
    /// A reused token: revoke its whole grant family, then refuse.
    RevokeGrant(GrantId),
    /// Refuse, writing nothing.
    Refuse(RefreshRefusal),
}

impl RefreshDecision {
    /// The answer to the client once the decision is written.
    pub fn outcome(self) -> Result<Rotation, RefreshRefusal> {
        match self {
            Self::Rotate(r) => Ok(r),
            Self::RevokeGrant(grant) => Err(RefreshRefusal::Token(RefreshError::Reused { grant })),
            Self::Refuse(r) => Err(r),
        }
    }
}

/// The rule both grants begin with: the presented client authenticates before its code or
/// token is looked at. `Err(None)`: no client has the presented id; `Err(Some(e))`: it did
/// not authenticate.
fn authenticate_client(
    client: Option<&ClientKind>,
    secret: Option<&Secret>,
) -> Result<(), Option<ClientAuthError>> {
    client.ok_or(None)?.authenticate(secret).map_err(Some)
}

/// Decides a code exchange from what the store read; a redemption creates the grant `grant`.
pub fn decide_code(facts: CodeFacts, x: &CodeExchange<'_>, grant: GrantId) -> CodeDecision {
    // The client authenticates before the code is looked at: a client that fails leaves
    // the code unspent.
    if let Err(e) = authenticate_client(facts.client.as_ref(), x.client_secret) {
        return CodeDecision::Refuse(e.map_or(CodeRefusal::UnknownClient, CodeRefusal::Client));
    }
    let Some(code) = facts.code else {
        return CodeDecision::Refuse(CodeRefusal::UnknownCode);
    };
    match code.redeem(&x.presentation, x.now) {
        Ok(spec) => {
            let tokens = mint_tokens(&spec, x.random, x.now, x.lifetimes);
            CodeDecision::Redeem(Redemption {
                grant,
                spec,
                tokens,
            })
        }
        // A replay revokes every token issued from the code; a code burnt by a failed
        // redemption produced none, and its replay revokes nothing.
        Err(RedeemError::Replayed { grant: Some(g) }) => CodeDecision::RevokeGrant(g),
        Err(e @ RedeemError::Replayed { grant: None }) => {
            CodeDecision::Refuse(CodeRefusal::Code(e))
        }
        // Expired, another client's, a redirect or PKCE mismatch: the code stays spent, so
        // whoever guessed wrong cannot try again with the same code.
        Err(e) => CodeDecision::BurnCode(e),
    }
}

/// Decides a refresh from what the store read.
pub fn decide_refresh(facts: RefreshFacts, x: &RefreshExchange<'_>) -> RefreshDecision {
    if let Err(e) = authenticate_client(facts.client.as_ref(), x.client_secret) {
        return RefreshDecision::Refuse(
            e.map_or(RefreshRefusal::UnknownClient, RefreshRefusal::Client),
        );
    }
    let Some(token) = facts.token else {
        return RefreshDecision::Refuse(RefreshRefusal::UnknownToken);
    };
    match token.rotate(&x.presentation, x.random, x.now, x.lifetimes) {
        Ok(rotation) => RefreshDecision::Rotate(rotation),
        // A used token presented again (a concurrent loser's included) revokes its family.
        Err(RefreshError::Reused { grant }) => RefreshDecision::RevokeGrant(grant),
        Err(e) => RefreshDecision::Refuse(RefreshRefusal::Token(e)),
    }
}

/// What a store found under the digest of a token presented for revocation (RFC 7009).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevocationFacts {
    /// A refresh token of `grant`, whose client is `holder`.
    RefreshToken {
        /// Its grant family.
        grant: GrantId,
        /// The grant's client.
        holder: ClientId,
    },
    /// An access token held by `holder`.
    AccessToken {
        /// The client it was issued to.
        holder: ClientId,
    },
    /// No token has the digest.
    Unknown,
}

/// What a store does with a revocation request (RFC 7009).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevokeDecision {
    /// Revoke the grant a refresh token belongs to: every token of the family stops working.
    RevokeGrant(GrantId),
    /// Revoke the access token alone.
    RevokeAccessToken,
    /// Another client's token: leave it alone (answered 200 all the same).
    OtherClient,
    /// No such token (answered 200 all the same).
    Unknown,
}

/// Decides a revocation by the authenticated `client`: only its own tokens are revoked, and
/// a refresh token takes its whole grant with it (RFC 7009 §2.1).
pub fn decide_revocation(facts: RevocationFacts, client: &ClientId) -> RevokeDecision {
    match facts {
        RevocationFacts::RefreshToken { grant, holder } if holder == *client => {
            RevokeDecision::RevokeGrant(grant)
        }
        RevocationFacts::AccessToken { holder } if holder == *client => {
            RevokeDecision::RevokeAccessToken
        }
        RevocationFacts::RefreshToken { .. } | RevocationFacts::AccessToken { .. } => {
            RevokeDecision::OtherClient
        }
        RevocationFacts::Unknown => RevokeDecision::Unknown,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;
    use crate::ids::OrgNamespace;

    fn client(name: &str) -> ClientId {
        ClientId::parse(name).unwrap()
    }

    #[test]
    fn a_client_revokes_only_its_own_tokens_and_a_refresh_token_takes_its_grant() {
        let grant = GrantId::generate(&OrgNamespace::from_random([1; 16]), [2; 16]);
        let (lms, other) = (client("lms"), client("other"));
        let refresh = |holder: &ClientId| RevocationFacts::RefreshToken {
            grant,
            holder: holder.clone(),
        };
        let access = |holder: &ClientId| RevocationFacts::AccessToken {
            holder: holder.clone(),
        };
        for (facts, want) in [
            (refresh(&lms), RevokeDecision::RevokeGrant(grant)),
            (access(&lms), RevokeDecision::RevokeAccessToken),
            (refresh(&other), RevokeDecision::OtherClient),
            (access(&other), RevokeDecision::OtherClient),
            (RevocationFacts::Unknown, RevokeDecision::Unknown),
        ] {
            assert_eq!(decide_revocation(facts.clone(), &lms), want, "{facts:?}");
        }
    }

    #[test]
    fn a_code_exchange_is_refused_before_the_code_is_looked_at() {
        let lms = client("lms");
        let x = CodeExchange {
            presentation: CodePresentation {
                client: &lms,
                redirect_uri: Some("https://lms.example.edu/cb"),
                verifier: None,
            },
            client_secret: None,
            now: Timestamp::from_epoch_seconds(100),
            random: TokenRandomness {
                access: [4; 32],
                refresh: [5; 32],
            },
            lifetimes: TokenLifetimes {
                access: crate::time::Lifetime::from_seconds(60).unwrap(),
                refresh: crate::time::Lifetime::from_seconds(600).unwrap(),
                retry_grace: None,
            },
        };
        let grant = GrantId::generate(&OrgNamespace::from_random([1; 16]), [3; 16]);
        let replayed = StoredCode::Redeemed { grant: Some(grant) };
        // Unknown client, then a failed client authentication: the code is not even read.
        let facts = |client, code| CodeFacts { client, code };
        assert_eq!(
            decide_code(facts(None, Some(replayed.clone())), &x, grant),
            CodeDecision::Refuse(CodeRefusal::UnknownClient)
        );
        let confidential = ClientKind::Confidential {
            secret_digest: crate::secret::TokenDigest::of(&Secret::new("mls_s")),
        };
        assert_eq!(
            decide_code(facts(Some(confidential), Some(replayed.clone())), &x, grant),
            CodeDecision::Refuse(CodeRefusal::Client(ClientAuthError::MissingSecret))
        );
        // Then the code: unknown, replayed (revoke what it produced), burnt (nothing to revoke).
        assert_eq!(
            decide_code(facts(Some(ClientKind::Public), None), &x, grant),
            CodeDecision::Refuse(CodeRefusal::UnknownCode)
        );
        assert_eq!(
            decide_code(facts(Some(ClientKind::Public), Some(replayed)), &x, grant),
            CodeDecision::RevokeGrant(grant)
        );
        let burnt = StoredCode::Redeemed { grant: None };
        assert_eq!(
            decide_code(facts(Some(ClientKind::Public), Some(burnt)), &x, grant).outcome(),
            Err(CodeRefusal::Code(RedeemError::Replayed { grant: None }))
        );
    }
}
