//! OAuth use cases: authorization, token endpoint, bearer authentication, revocation.

use medialib_domain::oauth::{
    AccessTokenInvalid, AuthenticatedCaller, AuthorizationRequest, AuthorizationResponse,
    AuthorizeParams, AuthorizeRejection, Client, ClientAuthError, ClientId, CodeExchange,
    CodePresentation, CodeRefusal, InvalidScope, IssuedTokens, OAuthErrorCode, RefreshExchange,
    RefreshPresentation, RefreshRefusal, ScopeSet, TokenRandomness, decide_code, decide_refresh,
    validate_authorization_request,
};
use medialib_domain::{GrantId, Secret, Timestamp, TokenKind, UserId};

use super::Services;
use crate::error::StoreError;
use crate::repos::{BearerRecord, RevokeOutcome, decide_and_write};
use crate::world::RandomExt as _;

/// How a client authenticated at the token endpoint (body fields or HTTP Basic).
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, absent for public clients.
    pub client_secret: Option<Secret>,
}

/// Names the RFC 6749 §5.2 error code of a token, revocation or introspection failure;
/// its `Display` is the `error_description`.
pub trait OAuthFailure: std::fmt::Display {
    /// The RFC 6749 error code.
    fn error_code(&self) -> OAuthErrorCode;
    /// The storage failure behind it, if that is what it is (its text is not for clients).
    fn store_failure(&self) -> Option<&StoreError>;
}

/// The code of a storage failure: `temporarily_unavailable` when it may pass, else
/// `server_error`.
fn store_code(e: &StoreError) -> OAuthErrorCode {
    match e {
        StoreError::Unavailable(_) => OAuthErrorCode::TemporarilyUnavailable,
        _ => OAuthErrorCode::ServerError,
    }
}

/// A client did not authenticate at the token, revocation or introspection endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientAuthFailed {
    /// No client has the id (or it is malformed): the same words as a wrong secret.
    #[error("client authentication failed")]
    Unknown,
    /// The client's credentials do not authenticate it.
    #[error(transparent)]
    Refused(#[from] ClientAuthError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl OAuthFailure for ClientAuthFailed {
    fn error_code(&self) -> OAuthErrorCode {
        match self {
            Self::Unknown | Self::Refused(_) => OAuthErrorCode::InvalidClient,
            Self::Store(e) => store_code(e),
        }
    }

    fn store_failure(&self) -> Option<&StoreError> {
        match self {
            Self::Store(e) => Some(e),
            _ => None,
        }
    }
}

/// `grant_type=authorization_code` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeGrantFailed {
    /// The client or the code was refused (a replay has revoked the grant, a failed
    /// redemption has burnt the code).
    #[error(transparent)]
    Refused(#[from] CodeRefusal),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl OAuthFailure for CodeGrantFailed {
    fn error_code(&self) -> OAuthErrorCode {
        match self {
            Self::Refused(r) => r.error_code(),
            Self::Store(e) => store_code(e),
        }
    }

    fn store_failure(&self) -> Option<&StoreError> {
        match self {
            Self::Store(e) => Some(e),
            Self::Refused(_) => None,
        }
    }
}

/// `grant_type=refresh_token` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefreshGrantFailed {
    /// The `scope` parameter does not parse (`invalid_scope`).
    #[error(transparent)]
    Scope(#[from] InvalidScope),
    /// The client or the token was refused (a reuse has revoked the grant family).
    #[error(transparent)]
    Refused(#[from] RefreshRefusal),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl OAuthFailure for RefreshGrantFailed {
    fn error_code(&self) -> OAuthErrorCode {
        match self {
            Self::Scope(_) => OAuthErrorCode::InvalidScope,
            Self::Refused(r) => r.error_code(),
            Self::Store(e) => store_code(e),
        }
    }

    fn store_failure(&self) -> Option<&StoreError> {
        match self {
            Self::Store(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ClientAuthFailed> for CodeGrantFailed {
    fn from(e: ClientAuthFailed) -> Self {
        match e {
            ClientAuthFailed::Unknown => Self::Refused(CodeRefusal::UnknownClient),
            ClientAuthFailed::Refused(e) => Self::Refused(CodeRefusal::Client(e)),
            ClientAuthFailed::Store(e) => Self::Store(e),
        }
    }
}

impl From<ClientAuthFailed> for RefreshGrantFailed {
    fn from(e: ClientAuthFailed) -> Self {
        match e {
            ClientAuthFailed::Unknown => Self::Refused(RefreshRefusal::UnknownClient),
            ClientAuthFailed::Refused(e) => Self::Refused(RefreshRefusal::Client(e)),
            ClientAuthFailed::Store(e) => Self::Store(e),
        }
    }
}

/// A successful token response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenResponse {
    /// The grant these tokens belong to.
    pub grant: GrantId,
    /// `access_token`.
    pub access_token: Secret,
    /// `expires_in`, seconds.
    pub expires_in: i64,
    /// `refresh_token`, only for offline grants.
    pub refresh_token: Option<Secret>,
    /// `scope`.
    pub scope: ScopeSet,
}

impl TokenResponse {
    fn new(grant: GrantId, tokens: IssuedTokens, now: Timestamp) -> Self {
        Self {
            grant,
            expires_in: now.seconds_until(tokens.access.expires_at),
            access_token: tokens.access.secret,
            refresh_token: tokens.refresh.map(|r| r.secret),
            scope: tokens.scope,
        }
    }
}

/// A bearer token that does not authenticate (401 `invalid_token`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BearerError {
    /// Unknown or malformed.
    #[error("unknown access token")]
    Unknown,
    /// Expired or revoked.
    #[error(transparent)]
    Invalid(#[from] AccessTokenInvalid),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Services {
    fn token_randomness(&self) -> TokenRandomness {
        TokenRandomness {
            access: self.random.bytes32(),
            refresh: self.random.bytes32(),
        }
    }

    /// Validates an authorization request against the registered client.
    pub fn start_authorization(
        &self,
        params: &AuthorizeParams<'_>,
    ) -> Result<Result<AuthorizationRequest, AuthorizeRejection>, StoreError> {
        let client = match params.client_id.map(ClientId::parse) {
            Some(Ok(id)) => self.store.client(&id)?,
            _ => None,
        };
        Ok(validate_authorization_request(
            params,
            client.as_ref(),
            &self.settings.issuer,
        ))
    }

    /// The user approved: mints and stores a code, returns the redirect.
    #[tracing::instrument(skip(self, request), fields(client = %request.client().id()))]
    pub fn approve_authorization(
        &self,
        request: AuthorizationRequest,
        user: UserId,
    ) -> Result<AuthorizationResponse, StoreError> {
        let now = self.clock.now();
        let code = TokenKind::Code.mint(self.random.bytes32());
        let (issued, response) = request.approve(
            user,
            code,
            now,
            self.settings.code_ttl,
            &self.settings.issuer,
        );
        self.store.store_code(&issued, now)?;
        Ok(response)
    }

    /// The user denied.
    pub fn deny_authorization(&self, request: AuthorizationRequest) -> AuthorizationResponse {
        request.deny(&self.settings.issuer)
    }

    /// Authenticates a client at the token endpoint.
    pub fn authenticate_client(
        &self,
        creds: &ClientCredentials,
    ) -> Result<Client, ClientAuthFailed> {
        let id = ClientId::parse(&creds.client_id).map_err(|_| ClientAuthFailed::Unknown)?;
        let client = self.store.client(&id)?.ok_or(ClientAuthFailed::Unknown)?;
        client.authenticate(creds.client_secret.as_ref())?;
        Ok(client)
    }

    /// `grant_type=authorization_code`: the facts are read, decided by the domain
    /// ([`decide_code`]) and the decision written in one transaction (one checkout). The
    /// client authenticates first; a client that fails leaves the code unspent.
    #[tracing::instrument(skip_all, fields(client = %creds.client_id))]
    pub fn exchange_code(
        &self,
        creds: &ClientCredentials,
        code: &str,
        redirect_uri: Option<&str>,
        code_verifier: Option<&str>,
    ) -> Result<TokenResponse, CodeGrantFailed> {
        let client = ClientId::parse(&creds.client_id)
            .map_err(|_| CodeGrantFailed::Refused(CodeRefusal::UnknownClient))?;
        let Some(digest) = TokenKind::Code.digest_presented(code) else {
            // Client authentication still comes first (invalid_client before invalid_grant).
            self.authenticate_client(creds)?;
            return Err(CodeRefusal::UnknownCode.into());
        };
        let now = self.clock.now();
        let exchange = CodeExchange {
            presentation: CodePresentation {
                client: &client,
                redirect_uri,
                verifier: code_verifier,
            },
            client_secret: creds.client_secret.as_ref(),
            now,
            grant: GrantId::generate(&self.namespace()?, self.random.bytes16()),
            random: self.token_randomness(),
            lifetimes: self.settings.lifetimes,
        };
        let decision = self.store.code_grant(&digest, &client, &mut |unit| {
            decide_and_write(unit, now, |facts| decide_code(facts, &exchange))
        })?;
        match decision.outcome() {
            Ok((grant, tokens)) => Ok(TokenResponse::new(grant, tokens, now)),
            Err(refusal) => {
                tracing::warn!(reason = %refusal, "authorization code refused");
                Err(refusal.into())
            }
        }
    }

    /// `grant_type=refresh_token`: decided by the domain ([`decide_refresh`]) between one
    /// read and one write of one transaction, as [`exchange_code`](Self::exchange_code).
    #[tracing::instrument(skip_all, fields(client = %creds.client_id))]
    pub fn refresh(
        &self,
        creds: &ClientCredentials,
        refresh_token: &str,
        scope: Option<&str>,
    ) -> Result<TokenResponse, RefreshGrantFailed> {
        let client = ClientId::parse(&creds.client_id)
            .map_err(|_| RefreshGrantFailed::Refused(RefreshRefusal::UnknownClient))?;
        let parsed = TokenKind::Refresh
            .digest_presented(refresh_token)
            .ok_or(RefreshGrantFailed::Refused(RefreshRefusal::UnknownToken))
            .and_then(|digest| Ok((digest, scope.map(ScopeSet::parse).transpose()?)));
        let (digest, scope) = match parsed {
            Ok(p) => p,
            Err(e) => {
                // Client authentication still comes first (invalid_client before the rest).
                self.authenticate_client(creds)?;
                return Err(e);
            }
        };
        let now = self.clock.now();
        let exchange = RefreshExchange {
            presentation: RefreshPresentation {
                client: &client,
                scope,
            },
            client_secret: creds.client_secret.as_ref(),
            now,
            random: self.token_randomness(),
            lifetimes: self.settings.lifetimes,
        };
        let decision = self.store.refresh_grant(&digest, &client, &mut |unit| {
            decide_and_write(unit, now, |facts| decide_refresh(facts, &exchange))
        })?;
        match decision.outcome() {
            Ok(rotation) => Ok(TokenResponse::new(
                rotation.grant(),
                rotation.into_tokens(),
                now,
            )),
            Err(refusal) => {
                tracing::warn!(reason = %refusal, "refresh token refused");
                Err(refusal.into())
            }
        }
    }

    /// Resolves `Authorization: Bearer|OAuth TOKEN` to a caller.
    pub fn authenticate_bearer(&self, token: &str) -> Result<AuthenticatedCaller, BearerError> {
        let digest = TokenKind::Access
            .digest_presented(token)
            .ok_or(BearerError::Unknown)?;
        let record = self.store.bearer(&digest)?;
        self.bearer_caller(record)
    }

    /// Decides on a token looked up by digest (`None`: no such token): the caller behind it,
    /// or why it does not authenticate.
    pub(super) fn bearer_caller(
        &self,
        record: Option<BearerRecord>,
    ) -> Result<AuthenticatedCaller, BearerError> {
        let record = record.ok_or(BearerError::Unknown)?;
        let active = record.token.check(self.clock.now())?;
        active.acting_for(record.user).ok_or(BearerError::Unknown)
    }

    /// Revokes a token of the authenticated client (RFC 7009).
    pub fn revoke(
        &self,
        creds: &ClientCredentials,
        token: &str,
    ) -> Result<RevokeOutcome, ClientAuthFailed> {
        let client = self.authenticate_client(creds)?;
        let digest = TokenKind::Access
            .digest_presented(token)
            .or_else(|| TokenKind::Refresh.digest_presented(token));
        match digest {
            Some(d) => Ok(self.store.revoke_token(&d, client.id(), self.clock.now())?),
            None => Ok(RevokeOutcome::Unknown),
        }
    }

    /// Sign out (DECISIONS.md §5): every access token of the user stops working and every
    /// browser session of theirs ends; refresh tokens survive, so offline clients can renew.
    /// Returns how many access tokens were revoked.
    pub fn logout(&self, user: UserId) -> Result<u64, StoreError> {
        let revoked = self
            .store
            .revoke_user_access_tokens(user, self.clock.now())?;
        let sessions = self.store.end_user_sessions(user)?;
        tracing::info!(%user, revoked, sessions, "signed out");
        Ok(revoked)
    }
}
