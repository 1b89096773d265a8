//! Browser sign-in through the SSO provider, server-side sessions, the failed-login
//! slowdown, token introspection (RFC 7662) and housekeeping.

use std::collections::HashMap;
use std::sync::Mutex;

use medialib_domain::{
    BrowserSession, DurationSecs, FailedLogins, Lifetime, Secret, Timestamp, TokenDigest,
    TokenKind, User,
};

use super::SessionServices;
use crate::error::StoreError;
use crate::failures::failures;
use crate::repos::{CreateUserError, StoredPendingSignIn};
use crate::sso::{
    Credentials, PendingSignIn, RedirectCallback, SignInMethod, SsoError, SsoIdentity,
};
use crate::world::RandomExt as _;

/// Why a browser sign-in failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    /// Wrong username or password (never says which), or an untrusted header.
    #[error("wrong username or password")]
    InvalidCredentials,
    /// Too many recent failures for this account: try again after the wait.
    #[error("too many failed sign-ins for this account; try again in {} seconds", .0.seconds())]
    SlowDown(DurationSecs),
    /// The configured SSO does not take these credentials.
    #[error("this sign-in method is not enabled")]
    Unsupported,
    /// The identity provider cannot be reached.
    #[error("the identity provider is unavailable")]
    Unavailable(String),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<SsoError> for SignInError {
    fn from(e: SsoError) -> Self {
        match e {
            SsoError::InvalidCredentials => Self::InvalidCredentials,
            SsoError::Unsupported => Self::Unsupported,
            SsoError::Unavailable(why) => Self::Unavailable(why),
        }
    }
}

/// How long a redirect-based sign-in may stay at the identity provider (seconds).
pub const PENDING_SIGN_IN_SECONDS: u32 = 600;

/// The longest `state` a callback may present (longer ones are never ours).
const MAX_STATE_BYTES: usize = 512;

failures! {
    /// Why a redirect-based sign-in (OpenID Connect) could not be finished.
    pub enum FinishSignInError {
        /// No sign-in is pending under this `state`: unknown, expired, or already finished
        /// (callbacks are single use).
        #[error("no sign-in is pending under this state: it is unknown, expired or already used")]
        UnknownState,
        Store(StoreError),
        /// The sign-in failed (refused or cancelled at the provider, an invalid ID token, the
        /// provider unreachable, storage) after its pending record was taken.
        #[error("{error}")]
        Failed {
            /// Why.
            error: SignInError,
            /// The authorization request the sign-in was for (the authorize query string), so
            /// the client can be told.
            return_to: String,
        },
    }
}

/// A finished redirect-based sign-in.
#[derive(Debug, Clone)]
pub struct RedirectSignIn {
    /// The new browser session.
    pub session: StartedSession,
    /// The authorization request to resume (the authorize query string).
    pub return_to: String,
}

/// A started browser session: the cookie value (shown once, to the browser) and the user.
#[derive(Debug, Clone)]
pub struct StartedSession {
    /// The cookie value (`mlb_...`).
    pub cookie: Secret,
    /// Who signed in.
    pub user: User,
    /// When the session ends.
    pub expires_at: Timestamp,
}

/// Failed sign-ins per account, in this process (DECISIONS.md §5: slow down, never lock out).
#[derive(Debug, Default)]
pub(crate) struct LoginThrottle {
    failures: Mutex<HashMap<String, FailedLogins>>,
}

impl LoginThrottle {
    /// Bound on remembered accounts; stale entries are dropped when it is reached.
    const MAX_TRACKED: usize = 10_000;

    fn key(username: &str) -> String {
        username.trim().to_lowercase()
    }

    fn retry_after(&self, username: &str, now: Timestamp) -> Option<DurationSecs> {
        let map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&Self::key(username))
            .and_then(|f| f.retry_after(now))
    }

    fn failed(&self, username: &str, now: Timestamp) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= Self::MAX_TRACKED {
            map.retain(|_, f| !f.is_stale(now));
        }
        map.entry(Self::key(username))
            .and_modify(|f| *f = f.record_failure(now))
            .or_insert_with(|| FailedLogins::first(now));
    }

    fn succeeded(&self, username: &str) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(&Self::key(username));
    }
}

impl SessionServices {
    /// Signs a browser in through the configured SSO: checks the credentials (subject to the
    /// per-account slowdown), provisions the user on first sign-in, updates names the IdP
    /// sends, and starts a server-side session.
    #[tracing::instrument(skip_all)]
    pub fn sign_in(&self, credentials: Credentials<'_>) -> Result<StartedSession, SignInError> {
        let now = self.world.clock.now();
        let account = match credentials {
            Credentials::Password { username, .. } => Some(username),
            Credentials::ProxyHeader { .. } => None,
        };
        if let Some(wait) = account.and_then(|a| self.login_throttle.retry_after(a, now)) {
            return Err(SignInError::SlowDown(wait));
        }
        let identity = match self.sso.authenticate(credentials, now) {
            Ok(identity) => identity,
            Err(e) => {
                if let (SsoError::InvalidCredentials, Some(a)) = (&e, account) {
                    self.login_throttle.failed(a, now);
                    tracing::info!("failed sign-in");
                }
                return Err(e.into());
            }
        };
        if let Some(a) = account {
            self.login_throttle.succeeded(a);
        }
        self.start_session_for(identity, now)
    }

    /// How the configured SSO signs browsers in.
    pub fn sign_in_method(&self) -> SignInMethod {
        self.sso.method()
    }

    /// Starts a redirect-based sign-in (OpenID Connect) for the authorization request
    /// `return_to` (its authorize query string): keeps the nonce and PKCE verifier for
    /// [`PENDING_SIGN_IN_SECONDS`] under the digest of a fresh `state`, and returns the
    /// identity provider's URL to send the browser to.
    #[tracing::instrument(skip_all)]
    pub fn begin_redirect_sign_in(&self, return_to: &str) -> Result<String, SignInError> {
        let now = self.world.clock.now();
        let start = self.sso.begin_redirect(now)?;
        let pending = StoredPendingSignIn {
            nonce: start.pending.nonce,
            pkce_verifier: start.pending.pkce_verifier,
            return_to: return_to.to_owned(),
        };
        let ttl = Lifetime::from_nonzero(
            std::num::NonZeroU32::new(PENDING_SIGN_IN_SECONDS).unwrap_or(std::num::NonZeroU32::MIN),
        );
        self.pending.put_pending_sign_in(
            &TokenDigest::of(&start.pending.state),
            &pending,
            now.plus(ttl),
        )?;
        Ok(start.url)
    }

    /// Finishes a redirect-based sign-in when the browser comes back from the identity
    /// provider with `state` and `callback`: takes the pending sign-in (single use), lets the
    /// provider check the answer, provisions the user on first sign-in, updates the names
    /// the provider sends, and starts a server-side session.
    #[tracing::instrument(skip_all)]
    pub fn finish_redirect_sign_in(
        &self,
        state: &str,
        callback: RedirectCallback<'_>,
    ) -> Result<RedirectSignIn, FinishSignInError> {
        let now = self.world.clock.now();
        if state.is_empty() || state.len() > MAX_STATE_BYTES {
            return Err(FinishSignInError::UnknownState);
        }
        let state = Secret::new(state);
        let Some(stored) = self
            .pending
            .take_pending_sign_in(&TokenDigest::of(&state), now)?
        else {
            tracing::info!("identity provider callback with an unknown, expired or used state");
            return Err(FinishSignInError::UnknownState);
        };
        let StoredPendingSignIn {
            nonce,
            pkce_verifier,
            return_to,
        } = stored;
        let pending = PendingSignIn {
            state,
            nonce,
            pkce_verifier,
        };
        let identity = match self.sso.finish_redirect(callback, &pending, now) {
            Ok(identity) => identity,
            Err(e) => {
                tracing::info!(error = %e, "redirect sign-in failed");
                return Err(FinishSignInError::Failed {
                    error: e.into(),
                    return_to,
                });
            }
        };
        match self.start_session_for(identity, now) {
            Ok(session) => Ok(RedirectSignIn { session, return_to }),
            Err(error) => Err(FinishSignInError::Failed { error, return_to }),
        }
    }

    /// After a successful authentication: provisions the user on first sign-in, updates the
    /// names the SSO sends (each one it sends), and starts a server-side session.
    pub(crate) fn start_session_for(
        &self,
        identity: SsoIdentity,
        now: Timestamp,
    ) -> Result<StartedSession, SignInError> {
        let mut user = self
            .people
            .provision_user(&identity.unique_id)
            .map_err(|e| match e {
                CreateUserError::Store(s) => SignInError::Store(s),
                CreateUserError::UniqueIdTaken => SignInError::Store(StoreError::Unexpected(
                    "user vanished while provisioning".into(),
                )),
            })?;
        if identity.first_name.is_some() || identity.last_name.is_some() {
            let first = identity
                .first_name
                .unwrap_or_else(|| user.first_name.clone());
            let last = identity.last_name.unwrap_or_else(|| user.last_name.clone());
            if first != user.first_name || last != user.last_name {
                self.users.update_user_names(user.id, &first, &last, now)?;
                user.first_name = first;
                user.last_name = last;
            }
        }
        let (cookie, digest) = TokenKind::Session.mint(self.world.random.bytes32());
        let session = BrowserSession::start(user.id, now, self.world.settings.session_ttl);
        self.sessions.create_session(&digest, &session)?;
        tracing::info!(user = %user.id, "signed in");
        Ok(StartedSession {
            cookie,
            user,
            expires_at: session.expires_at,
        })
    }

    /// The user signed in with session cookie `cookie`, if it is a live session.
    pub fn session_user(&self, cookie: &str) -> Result<Option<User>, StoreError> {
        let Some(digest) = TokenKind::Session.digest_presented(cookie) else {
            return Ok(None);
        };
        let Some(session) = self.sessions.session(&digest)? else {
            return Ok(None);
        };
        if !session.is_active(self.world.clock.now()) {
            return Ok(None);
        }
        self.users.user(session.user)
    }

    /// Ends the session with cookie `cookie`; `false` when there was none.
    pub fn end_session(&self, cookie: &str) -> Result<bool, StoreError> {
        match TokenKind::Session.digest_presented(cookie) {
            Some(d) => self.sessions.end_session(&d),
            None => Ok(false),
        }
    }

    /// A fresh value for the cookie that binds the sign-in form's CSRF token.
    pub fn new_login_form_cookie(&self) -> Secret {
        TokenKind::LoginForm.mint(self.world.random.bytes32()).0
    }
}
