//! Application services: the use cases, run against the ports.

pub mod catalog;
pub mod clients;
mod media;
mod oauth;
pub mod people;
mod sessions;
mod users;

use std::sync::{Arc, OnceLock};

use medialib_domain::oauth::{Issuer, TokenLifetimes};
use medialib_domain::{Lifetime, OrgNamespace};

use crate::error::StoreError;
use crate::repos::Store;
use crate::sso::{NoSso, SsoProvider};
use crate::world::{Clock, RandomSource};

pub use media::{
    AddMemberFailed, CatalogPage, CatalogSink, CreateObjectFailed, DescribeFailed,
    DescribeWithTokenFailed, MembershipChangeFailed, PermissionFailed, Placement,
    UpdateObjectFailed,
};
pub use medialib_domain::oauth::AuthenticatedCaller;
pub use oauth::{
    BearerError, ClientAuthFailed, ClientCredentials, CodeGrantFailed, OAuthFailure,
    RefreshGrantFailed, TokenResponse,
};
pub use sessions::{
    FinishSignInError, Introspection, PENDING_SIGN_IN_SECONDS, RedirectSignIn, SignInError,
    StartedSession,
};
pub use users::NewUserInput;

/// Settings the services need.
#[derive(Debug, Clone)]
pub struct ServiceSettings {
    /// Token lifetimes.
    pub lifetimes: TokenLifetimes,
    /// Authorization code lifetime.
    pub code_ttl: Lifetime,
    /// The issuer (base URL).
    pub issuer: Issuer,
    /// Browser session lifetime after sign-in.
    pub session_ttl: Lifetime,
}

/// The use cases of medialib, wired to a store, a clock and a random source.
#[derive(Clone)]
pub struct Services {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    random: Arc<dyn RandomSource>,
    settings: ServiceSettings,
    sso: Arc<dyn SsoProvider>,
    login_throttle: Arc<sessions::LoginThrottle>,
    /// The organization's namespace, read once: it never changes after the first migration.
    namespace: Arc<OnceLock<OrgNamespace>>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Services {
    /// Wires the services.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        random: Arc<dyn RandomSource>,
        settings: ServiceSettings,
    ) -> Self {
        Self {
            store,
            clock,
            random,
            settings,
            sso: Arc::new(NoSso),
            login_throttle: Arc::default(),
            namespace: Arc::default(),
        }
    }

    /// Signs browsers in through `sso` (the default refuses every sign-in).
    #[must_use]
    pub fn with_sso(mut self, sso: Arc<dyn SsoProvider>) -> Self {
        self.sso = sso;
        self
    }

    /// The store (for adapters that need read models directly).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The settings.
    pub fn settings(&self) -> &ServiceSettings {
        &self.settings
    }

    fn namespace(&self) -> Result<OrgNamespace, StoreError> {
        if let Some(ns) = self.namespace.get() {
            return Ok(*ns);
        }
        let ns = self.store.namespace()?;
        Ok(*self.namespace.get_or_init(|| ns))
    }
}
