//! OAuth use cases: authorization, token endpoint, bearer authentication, revocation.

use medialib_domain::oauth::{
    AccessTokenInvalid, AuthorizationRequest, AuthorizationResponse, AuthorizeParams,
    AuthorizeRejection, Client, ClientId, CodePresentation, OAuthErrorCode, RefreshPresentation,
    ScopeSet, TokenRandomness, validate_authorization_request,
};
use medialib_domain::{GrantId, Secret, TokenKind, User, UserId};

use super::Services;
use crate::error::StoreError;
use crate::repos::{
    BearerRecord, CodeExchange, ExchangeError, RefreshExchange, RevokeOutcome, RotateError,
};
use crate::world::RandomExt as _;

/// How a client authenticated at the token endpoint (body fields or HTTP Basic).
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, absent for public clients.
    pub client_secret: Option<Secret>,
}

/// A token endpoint failure, named after RFC 6749 §5.2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Malformed request.
    #[error("{0}")]
    InvalidRequest(String),
    /// Unknown client or failed client authentication.
    #[error("{0}")]
    InvalidClient(String),
    /// Bad, expired, used or foreign code / refresh token.
    #[error("{0}")]
    InvalidGrant(String),
    /// Scope wider than granted.
    #[error("{0}")]
    InvalidScope(String),
    /// Only `authorization_code` and `refresh_token` are supported.
    #[error("grant_type must be authorization_code or refresh_token")]
    UnsupportedGrantType,
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl TokenError {
    /// The RFC 6749 error code.
    pub fn error_code(&self) -> OAuthErrorCode {
        match self {
            Self::InvalidRequest(_) => OAuthErrorCode::InvalidRequest,
            Self::InvalidClient(_) => OAuthErrorCode::InvalidClient,
            Self::InvalidGrant(_) => OAuthErrorCode::InvalidGrant,
            Self::InvalidScope(_) => OAuthErrorCode::InvalidScope,
            Self::UnsupportedGrantType => OAuthErrorCode::UnsupportedGrantType,
            Self::Store(StoreError::Unavailable(_)) => OAuthErrorCode::TemporarilyUnavailable,
            Self::Store(_) => OAuthErrorCode::ServerError,
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

/// The caller behind a valid bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatedCaller {
    /// The user.
    pub user: User,
    /// The token's scopes.
    pub scope: ScopeSet,
    /// The client holding the token.
    pub client: ClientId,
    /// The grant.
    pub grant: GrantId,
    /// Seconds left.
    pub expires_in: i64,
}

impl AuthenticatedCaller {
    /// The caller the authorization gate sees: the token's user, limited by its scopes.
    pub fn caller(&self) -> medialib_domain::Caller {
        self.user.as_caller().with_scope(self.scope)
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

/// An unknown or malformed client id: the same answer as a wrong secret, naming nothing.
fn client_failed() -> TokenError {
    TokenError::InvalidClient("client authentication failed".into())
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
    pub fn authenticate_client(&self, creds: &ClientCredentials) -> Result<Client, TokenError> {
        let id = ClientId::parse(&creds.client_id).map_err(|_| client_failed())?;
        let client = self.store.client(&id)?.ok_or_else(client_failed)?;
        client
            .authenticate(creds.client_secret.as_ref())
            .map_err(|e| TokenError::InvalidClient(e.to_string()))?;
        Ok(client)
    }

    /// `grant_type=authorization_code`. The client is authenticated in the same atomic
    /// step as the exchange (one checkout); a client that fails leaves the code unspent.
    #[tracing::instrument(skip_all, fields(client = %creds.client_id))]
    pub fn exchange_code(
        &self,
        creds: &ClientCredentials,
        code: &str,
        redirect_uri: Option<&str>,
        code_verifier: Option<&str>,
    ) -> Result<TokenResponse, TokenError> {
        let client = ClientId::parse(&creds.client_id).map_err(|_| client_failed())?;
        let invalid = || TokenError::InvalidGrant("invalid authorization code".into());
        let Some(digest) = TokenKind::Code.digest_presented(code) else {
            // Client authentication still comes first (invalid_client before invalid_grant).
            self.authenticate_client(creds)?;
            return Err(invalid());
        };
        let now = self.clock.now();
        let grant_id = GrantId::generate(&self.namespace()?, self.random.bytes16());
        let result = self.store.exchange_code(CodeExchange {
            digest,
            presentation: CodePresentation {
                client: &client,
                redirect_uri,
                verifier: code_verifier,
            },
            client_secret: creds.client_secret.as_ref(),
            now,
            grant_id,
            random: self.token_randomness(),
            lifetimes: self.settings.lifetimes,
        });
        match result {
            Ok((grant, tokens)) => Ok(TokenResponse {
                grant,
                expires_in: now.seconds_until(tokens.access.expires_at),
                access_token: tokens.access.secret,
                refresh_token: tokens.refresh.map(|r| r.secret),
                scope: tokens.scope,
            }),
            Err(ExchangeError::UnknownClient) => Err(client_failed()),
            Err(ExchangeError::ClientRefused(e)) => Err(TokenError::InvalidClient(e.to_string())),
            Err(ExchangeError::UnknownCode) => Err(invalid()),
            Err(ExchangeError::Refused(e)) => {
                tracing::warn!(reason = %e, "authorization code refused");
                Err(TokenError::InvalidGrant(e.to_string()))
            }
            Err(ExchangeError::Store(s)) => Err(s.into()),
        }
    }

    /// `grant_type=refresh_token`. The client is authenticated in the same atomic step as
    /// the rotation (one checkout); a client that fails leaves the token unspent.
    #[tracing::instrument(skip_all, fields(client = %creds.client_id))]
    pub fn refresh(
        &self,
        creds: &ClientCredentials,
        refresh_token: &str,
        scope: Option<&str>,
    ) -> Result<TokenResponse, TokenError> {
        let client = ClientId::parse(&creds.client_id).map_err(|_| client_failed())?;
        let invalid = || TokenError::InvalidGrant("invalid refresh token".into());
        let parsed = TokenKind::Refresh
            .digest_presented(refresh_token)
            .ok_or_else(invalid)
            .and_then(|digest| {
                let scope = scope
                    .map(ScopeSet::parse)
                    .transpose()
                    .map_err(|e| TokenError::InvalidScope(e.to_string()))?;
                Ok((digest, scope))
            });
        let (digest, scope) = match parsed {
            Ok(p) => p,
            Err(e) => {
                // Client authentication still comes first (invalid_client before the rest).
                self.authenticate_client(creds)?;
                return Err(e);
            }
        };
        let now = self.clock.now();
        let result = self.store.rotate_refresh_token(RefreshExchange {
            digest,
            presentation: RefreshPresentation {
                client: &client,
                scope,
            },
            client_secret: creds.client_secret.as_ref(),
            now,
            random: self.token_randomness(),
            lifetimes: self.settings.lifetimes,
        });
        match result {
            Ok(rotation) => Ok(TokenResponse {
                grant: rotation.grant,
                expires_in: now.seconds_until(rotation.tokens.access.expires_at),
                access_token: rotation.tokens.access.secret,
                refresh_token: rotation.tokens.refresh.map(|r| r.secret),
                scope: rotation.tokens.scope,
            }),
            Err(RotateError::UnknownClient) => Err(client_failed()),
            Err(RotateError::ClientRefused(e)) => Err(TokenError::InvalidClient(e.to_string())),
            Err(RotateError::UnknownToken) => Err(invalid()),
            Err(RotateError::Refused(e)) => {
                tracing::warn!(reason = %e, "refresh token refused");
                Err(match e.error_code() {
                    OAuthErrorCode::InvalidScope => TokenError::InvalidScope(e.to_string()),
                    _ => TokenError::InvalidGrant(e.to_string()),
                })
            }
            Err(RotateError::Store(s)) => Err(s.into()),
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
        let user = record
            .user
            .filter(|u| u.id == active.user)
            .ok_or(BearerError::Unknown)?;
        Ok(AuthenticatedCaller {
            user,
            scope: active.scope,
            client: active.client,
            grant: active.grant,
            expires_in: active.expires_in,
        })
    }

    /// Revokes a token of the authenticated client (RFC 7009).
    pub fn revoke(
        &self,
        creds: &ClientCredentials,
        token: &str,
    ) -> Result<RevokeOutcome, TokenError> {
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
