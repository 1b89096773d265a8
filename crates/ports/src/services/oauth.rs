//! OAuth use cases: authorization, token endpoint, bearer authentication, revocation.

use medialib_domain::oauth::{
    AccessTokenInvalid, AuthenticatedCaller, AuthorizationRequest, AuthorizationResponse,
    AuthorizeParams, AuthorizeRejection, Client, ClientAuthError, ClientId, CodeExchange,
    CodePresentation, CodeRefusal, InvalidScope, IssuedTokens, OAuthErrorCode, RefreshExchange,
    RefreshPresentation, RefreshRefusal, ScopeSet, TokenRandomness, decide_code, decide_refresh,
    decide_revocation, validate_authorization_request,
};
use medialib_domain::{GrantId, Secret, Timestamp, TokenKind, User, UserId};

use super::OAuthServices;
use crate::error::StoreError;
use crate::failures::failures;
use crate::repos::{BearerRecord, Contest, RevokeOutcome, decide_and_write};
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
        StoreError::Unavailable(_) | StoreError::Full => OAuthErrorCode::TemporarilyUnavailable,
        _ => OAuthErrorCode::ServerError,
    }
}

failures! {
    /// A client did not authenticate at the token, revocation or introspection endpoint.
    pub enum ClientAuthFailed {
        /// No client has the id (or it is malformed): the same words as a wrong secret.
        #[error("client authentication failed")]
        Unknown,
        /// The client's credentials do not authenticate it.
        #[error(transparent)]
        Refused(#[from] ClientAuthError),
        Store(StoreError),
    }
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

failures! {
    /// `grant_type=authorization_code` failed.
    pub enum CodeGrantFailed {
        /// The client or the code was refused (a replay has revoked the grant, a failed
        /// redemption has burnt the code).
        #[error(transparent)]
        Refused(#[from] CodeRefusal),
        Store(StoreError),
    }
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

failures! {
    /// `grant_type=refresh_token` failed.
    pub enum RefreshGrantFailed {
        /// The `scope` parameter does not parse (`invalid_scope`).
        #[error(transparent)]
        Scope(#[from] InvalidScope),
        /// The client or the token was refused (a reuse has revoked the grant family).
        #[error(transparent)]
        Refused(#[from] RefreshRefusal),
        Store(StoreError),
    }
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

failures! {
    /// An authorization request that cannot go on to the consent page.
    pub enum StartAuthorizationFailed {
        /// The domain rejected it: an error page (untrusted client or redirect URI) or an error
        /// for the client's redirect URI.
        #[error("the authorization request was rejected")]
        Rejected(AuthorizeRejection),
        Store(StoreError),
    }
}

impl From<AuthorizeRejection> for StartAuthorizationFailed {
    fn from(r: AuthorizeRejection) -> Self {
        Self::Rejected(r)
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

/// What RFC 7662 introspection says about a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Introspection {
    /// Unknown, expired, revoked, used, or another client's token.
    Inactive,
    /// A token that works now.
    Active {
        /// `access_token` or `refresh_token`.
        kind: TokenKind,
        /// Whose.
        user: User,
        /// Held by.
        client: ClientId,
        /// Scopes.
        scope: ScopeSet,
        /// End of validity.
        expires_at: Timestamp,
    },
}

failures! {
    /// A bearer token that does not authenticate (401 `invalid_token`).
    pub enum BearerError {
        /// Unknown or malformed.
        #[error("unknown access token")]
        Unknown,
        /// Expired or revoked.
        #[error(transparent)]
        Invalid(#[from] AccessTokenInvalid),
        Store(StoreError),
    }
}

/// Decides on a token looked up by digest (`None`: no such token): the caller behind it at
/// `now`, or why it does not authenticate.
/// The user a token acts for, in introspection: read with the token, or still to read.
enum Subject {
    /// Read with the token; `None` when that user no longer exists.
    Read(Option<User>),
    /// To read once the token is known to be the asking client's.
    ToRead(UserId),
}

pub(super) fn bearer_caller(
    record: Option<BearerRecord>,
    now: Timestamp,
) -> Result<AuthenticatedCaller, BearerError> {
    let record = record.ok_or(BearerError::Unknown)?;
    let active = record.token.check(now)?;
    active.acting_for(record.user).ok_or(BearerError::Unknown)
}

impl OAuthServices {
    fn token_randomness(&self) -> TokenRandomness {
        TokenRandomness {
            access: self.world.random.bytes32(),
            refresh: self.world.random.bytes32(),
        }
    }

    /// Validates an authorization request against the registered client.
    pub fn start_authorization(
        &self,
        params: &AuthorizeParams<'_>,
    ) -> Result<AuthorizationRequest, StartAuthorizationFailed> {
        let client = match params.client_id.map(ClientId::parse) {
            Some(Ok(id)) => self.clients.client(&id)?,
            _ => None,
        };
        Ok(validate_authorization_request(
            params,
            client.as_ref(),
            &self.world.settings.issuer,
        )?)
    }

    /// The user approved: mints and stores a code, returns the redirect.
    #[tracing::instrument(skip(self, request), fields(client = %request.client().id()))]
    pub fn approve_authorization(
        &self,
        request: AuthorizationRequest,
        user: UserId,
    ) -> Result<AuthorizationResponse, StoreError> {
        let now = self.world.clock.now();
        let code = TokenKind::Code.mint(self.world.random.bytes32());
        let (issued, response) = request.approve(
            user,
            code,
            now,
            self.world.settings.code_ttl,
            &self.world.settings.issuer,
        );
        self.grants.store_code(&issued, now)?;
        Ok(response)
    }

    /// The user denied.
    pub fn deny_authorization(&self, request: AuthorizationRequest) -> AuthorizationResponse {
        request.deny(&self.world.settings.issuer)
    }

    /// Authenticates a client at the token endpoint.
    pub fn authenticate_client(
        &self,
        creds: &ClientCredentials,
    ) -> Result<Client, ClientAuthFailed> {
        let id = ClientId::parse(&creds.client_id).map_err(|_| ClientAuthFailed::Unknown)?;
        authenticated(self.clients.client(&id)?, creds)
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
        let now = self.world.clock.now();
        let grant = self.world.new_grant_id(now);
        // The work owns what it decides on (`GrantWork`): the store may run it on another thread.
        let (presented, secret) = (client.clone(), creds.client_secret.clone());
        let (redirect_uri, verifier) = (
            redirect_uri.map(str::to_owned),
            code_verifier.map(str::to_owned),
        );
        let (random, lifetimes) = (self.token_randomness(), self.world.settings.lifetimes);
        let decision = self.grants.code_grant(Contest {
            digest: &digest,
            client: &client,
            work: Box::new(move |unit| {
                let exchange = CodeExchange {
                    presentation: CodePresentation {
                        client: &presented,
                        redirect_uri: redirect_uri.as_deref(),
                        verifier: verifier.as_deref(),
                    },
                    client_secret: secret.as_ref(),
                    now,
                    random,
                    lifetimes,
                };
                decide_and_write(unit, now, |facts| decide_code(facts, &exchange, grant))
            }),
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
        let now = self.world.clock.now();
        // Owned by the work, as in `exchange_code`.
        let (presented, secret) = (client.clone(), creds.client_secret.clone());
        let (random, lifetimes) = (self.token_randomness(), self.world.settings.lifetimes);
        let decision = self.grants.refresh_grant(Contest {
            digest: &digest,
            client: &client,
            work: Box::new(move |unit| {
                let exchange = RefreshExchange {
                    presentation: RefreshPresentation {
                        client: &presented,
                        scope,
                    },
                    client_secret: secret.as_ref(),
                    now,
                    random,
                    lifetimes,
                };
                decide_and_write(unit, now, |facts| decide_refresh(facts, &exchange))
            }),
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
        let record = self.grants.bearer(&digest)?;
        bearer_caller(record, self.world.clock.now())
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
        let Some(digest) = digest else {
            return Ok(RevokeOutcome::Unknown);
        };
        let now = self.world.clock.now();
        let decision = self.grants.revocation(&digest, &mut |unit| {
            decide_and_write(unit, now, |facts| decide_revocation(facts, client.id()))
        })?;
        Ok(decision.into())
    }

    /// Sign out (DECISIONS.md §5): every access token of the user stops working and every
    /// browser session of theirs ends; refresh tokens survive, so offline clients can renew.
    /// Returns how many access tokens were revoked.
    pub fn logout(&self, user: UserId) -> Result<u64, StoreError> {
        let revoked = self
            .grants
            .revoke_user_access_tokens(user, self.world.clock.now())?;
        let sessions = self.sessions.end_user_sessions(user)?;
        tracing::info!(%user, revoked, sessions, "signed out");
        Ok(revoked)
    }

    /// RFC 7662: what `token` is, for the authenticated client that holds it; a public client
    /// may not ask ([`Client::may_introspect`]). Another client's token is reported inactive,
    /// like an unknown one.
    pub fn introspect(
        &self,
        creds: &ClientCredentials,
        token: &str,
    ) -> Result<Introspection, ClientAuthFailed> {
        // An access token is read with the client presenting it and the token's user in one
        // step (`client_and_bearer`); a refresh token once the client has authenticated, and
        // its user once the token is known to be the client's.
        let access = TokenKind::Access.digest_presented(token);
        let (client, bearer) = match &access {
            Some(d) => {
                let id =
                    ClientId::parse(&creds.client_id).map_err(|_| ClientAuthFailed::Unknown)?;
                let (client, bearer) = self.grants.client_and_bearer(&id, d)?;
                (authenticated(client, creds)?, bearer)
            }
            None => (self.authenticate_client(creds)?, None),
        };
        client.may_introspect()?;
        let now = self.world.clock.now();
        let found = if access.is_some() {
            bearer.and_then(|r| {
                let expires_at = r.token.expires_at;
                let active = r.token.check(now).ok()?;
                Some((
                    TokenKind::Access,
                    Subject::Read(r.user),
                    active.client().clone(),
                    active.scope(),
                    expires_at,
                ))
            })
        } else if let Some(d) = TokenKind::Refresh.digest_presented(token) {
            self.grants.refresh_token(&d)?.and_then(|r| {
                r.is_active(now).then_some((
                    TokenKind::Refresh,
                    Subject::ToRead(r.user),
                    r.client,
                    r.scope,
                    r.expires_at,
                ))
            })
        } else {
            None
        };
        let Some((kind, subject, holder, scope, expires_at)) = found else {
            return Ok(Introspection::Inactive);
        };
        if &holder != client.id() {
            return Ok(Introspection::Inactive);
        }
        let user = match subject {
            Subject::Read(user) => user,
            Subject::ToRead(id) => self.users.user(id)?,
        };
        match user {
            Some(user) => Ok(Introspection::Active {
                kind,
                user,
                client: holder,
                scope,
                expires_at,
            }),
            None => Ok(Introspection::Inactive),
        }
    }
}

/// `client` (as read for the id presented) once its secret is checked: an unknown client and a
/// wrong secret are refused alike by the caller's mapping.
fn authenticated(
    client: Option<Client>,
    creds: &ClientCredentials,
) -> Result<Client, ClientAuthFailed> {
    let client = client.ok_or(ClientAuthFailed::Unknown)?;
    client.authenticate(creds.client_secret.as_ref())?;
    Ok(client)
}
