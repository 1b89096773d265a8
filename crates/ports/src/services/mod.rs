//! Application services: the use cases, run against the ports.

pub mod catalog;
pub mod clients;
pub mod lti;
mod media;
mod oauth;
pub mod people;
pub mod processing;
pub mod records;
mod sessions;
pub mod uploads;
mod users;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use medialib_domain::oauth::{Issuer, TokenLifetimes};
use medialib_domain::{GrantId, Lifetime, OrgNamespace, Timestamp};

use crate::error::StoreError;
use crate::processing::MediaProcessor;
use crate::repos::{
    ClientRepository, CredentialRepository, GrantRepository, MediaRepository, OrgRepository,
    PendingSignInRepository, PurgeReport, SessionRepository, Store, UserRepository,
};
use crate::sso::{NoSso, SsoProvider};
use crate::storage::{MediaStorage, NoStorage};
use crate::world::{Clock, RandomExt, RandomSource};
use processing::{ProcessingServices, ProcessingSettings};

pub use media::{
    AddMemberFailed, CatalogPage, CatalogSink, CreateObjectFailed, DescribeFailed,
    DescribeWithTokenFailed, Described, MembershipChangeFailed, Placement, UpdateObjectFailed,
};
pub use medialib_domain::oauth::AuthenticatedCaller;
pub use oauth::{
    BearerError, ClientAuthFailed, ClientCredentials, CodeGrantFailed, Introspection, OAuthFailure,
    RefreshGrantFailed, StartAuthorizationFailed, TokenResponse,
};
pub use records::{ImageLinks, LibraryView, PlayableFile, PlayerMedia, VideoView};
pub use sessions::{
    FinishSignInError, PENDING_SIGN_IN_SECONDS, RedirectSignIn, SignInError, StartedSession,
};
pub use uploads::{
    AppendDone, AppendFailed, BeginUploadFailed, DeliverFailed, Delivery, MediaFailed, MediaFile,
    MediaView, PutFileFailed, UploadLookupFailed, UploadServices, UploadSettings, UploadTarget,
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

/// What every area of use cases shares: time, randomness, settings and the organization's
/// namespace (read once: it never changes after the first migration).
#[derive(Clone)]
pub struct World {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) random: Arc<dyn RandomSource>,
    pub(crate) settings: ServiceSettings,
    org: Arc<dyn OrgRepository>,
    namespace: Arc<OnceLock<OrgNamespace>>,
    grants_minted: Arc<AtomicU32>,
}

impl World {
    /// The shared part of every area.
    pub fn new(
        clock: Arc<dyn Clock>,
        random: Arc<dyn RandomSource>,
        settings: ServiceSettings,
        org: Arc<dyn OrgRepository>,
    ) -> Self {
        Self {
            clock,
            random,
            settings,
            org,
            namespace: Arc::default(),
            grants_minted: Arc::default(),
        }
    }

    /// A new grant's id, after every id this process minted before ([`GrantId::ordered`]).
    pub(crate) fn new_grant_id(&self, now: Timestamp) -> GrantId {
        let sequence = self.grants_minted.fetch_add(1, Ordering::Relaxed);
        GrantId::ordered(now, sequence, self.random.bytes16())
    }

    /// The organization's namespace, from the store the first time.
    pub(crate) fn namespace(&self) -> Result<OrgNamespace, StoreError> {
        if let Some(ns) = self.namespace.get() {
            return Ok(*ns);
        }
        let ns = self.org.namespace()?;
        Ok(*self.namespace.get_or_init(|| ns))
    }
}

/// Media use cases: objects, memberships, permissions on objects, catalog listing, describe.
/// The authorization gate's callers all go through `MediaServices::gate`.
#[derive(Clone)]
pub struct MediaServices {
    pub(crate) world: World,
    pub(crate) media: Arc<dyn MediaRepository>,
}

/// People use cases: users, their records read through collections, permission grants
/// that name people, contribute candidates.
#[derive(Clone)]
pub struct PeopleServices {
    pub(crate) world: World,
    pub(crate) users: Arc<dyn UserRepository>,
    pub(crate) credentials: Arc<dyn CredentialRepository>,
    pub(crate) media: Arc<dyn MediaRepository>,
    /// The gate and describe, for what people may see and change.
    pub(crate) objects: MediaServices,
}

/// OAuth use cases: clients, authorization, the token endpoint, bearer authentication,
/// revocation, introspection, sign out.
#[derive(Clone)]
pub struct OAuthServices {
    pub(crate) world: World,
    pub(crate) clients: Arc<dyn ClientRepository>,
    pub(crate) grants: Arc<dyn GrantRepository>,
    pub(crate) users: Arc<dyn UserRepository>,
    pub(crate) sessions: Arc<dyn SessionRepository>,
}

/// Browser sign-in through the SSO provider, server-side sessions, the failed-login
/// slowdown.
#[derive(Clone)]
pub struct SessionServices {
    pub(crate) world: World,
    pub(crate) sessions: Arc<dyn SessionRepository>,
    pub(crate) pending: Arc<dyn PendingSignInRepository>,
    pub(crate) users: Arc<dyn UserRepository>,
    /// Provisions the people who sign in.
    pub(crate) people: PeopleServices,
    pub(crate) sso: Arc<dyn SsoProvider>,
    pub(crate) login_throttle: Arc<sessions::LoginThrottle>,
}

impl MediaServices {
    /// The media use cases on a media repository.
    pub fn new(world: World, media: Arc<dyn MediaRepository>) -> Self {
        Self { world, media }
    }
}

impl PeopleServices {
    /// The people use cases: users and credentials, and the media area for what people
    /// may see and change.
    pub fn new(
        objects: MediaServices,
        users: Arc<dyn UserRepository>,
        credentials: Arc<dyn CredentialRepository>,
    ) -> Self {
        Self {
            world: objects.world.clone(),
            media: objects.media.clone(),
            users,
            credentials,
            objects,
        }
    }
}

impl OAuthServices {
    /// The OAuth use cases: clients, grants, the users tokens act for, and the sessions
    /// sign out ends.
    pub fn new(
        world: World,
        clients: Arc<dyn ClientRepository>,
        grants: Arc<dyn GrantRepository>,
        users: Arc<dyn UserRepository>,
        sessions: Arc<dyn SessionRepository>,
    ) -> Self {
        Self {
            world,
            clients,
            grants,
            users,
            sessions,
        }
    }
}

impl SessionServices {
    /// Browser sign-in and sessions, provisioning people through `people`; signs nobody in
    /// until [`Services::with_sso`] names the provider.
    pub fn new(
        people: PeopleServices,
        sessions: Arc<dyn SessionRepository>,
        pending: Arc<dyn PendingSignInRepository>,
    ) -> Self {
        Self {
            world: people.world.clone(),
            users: people.users.clone(),
            sessions,
            pending,
            people,
            sso: Arc::new(NoSso),
            login_throttle: Arc::default(),
        }
    }
}

/// The use cases of medialib by area, wired to a store, a clock and a random source. Each
/// area holds only the ports it uses, so it can be built and tested with no more.
#[derive(Clone)]
pub struct Services {
    store: Arc<dyn Store>,
    media: MediaServices,
    people: PeopleServices,
    oauth: OAuthServices,
    sessions: SessionServices,
    uploads: UploadServices,
    lti_tokens: Arc<dyn crate::lti::LtiTokens>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// `Debug` for the services: their name and settings (ports are trait objects).
macro_rules! debug_by_world {
    ($($area:ident),*) => {$(
        impl std::fmt::Debug for $area {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($area))
                    .field("world", &self.world)
                    .finish_non_exhaustive()
            }
        }
    )*};
}
debug_by_world!(
    MediaServices,
    PeopleServices,
    OAuthServices,
    SessionServices
);

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("world", &self.media.world)
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
        let world = World::new(clock, random, settings, store.clone());
        let media = MediaServices::new(world.clone(), store.clone());
        let people = PeopleServices::new(media.clone(), store.clone(), store.clone());
        let oauth = OAuthServices::new(
            world,
            store.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
        );
        let sessions = SessionServices::new(people.clone(), store.clone(), store.clone());
        let uploads = UploadServices::new(
            media.clone(),
            store.clone(),
            store.clone(),
            Arc::new(NoStorage),
            UploadSettings::default(),
        );
        Self {
            store,
            media,
            people,
            oauth,
            sessions,
            uploads,
            lti_tokens: Arc::new(crate::lti::NoLtiTokens),
        }
    }

    /// Keeps media in `storage` with `settings` (the default stores nothing: every upload
    /// and delivery answers that no media storage is configured).
    #[must_use]
    pub fn with_storage(
        mut self,
        storage: Arc<dyn MediaStorage>,
        settings: UploadSettings,
    ) -> Self {
        self.uploads = UploadServices::new(
            self.media.clone(),
            self.store.clone(),
            self.store.clone(),
            storage,
            settings,
        );
        self
    }

    /// Upload, media and delivery use cases.
    pub fn uploads(&self) -> &UploadServices {
        &self.uploads
    }

    /// The processing use cases on this store and media storage, deriving files with
    /// `processor` (a worker's: `medialib serve` with `workers`, or `medialib worker`).
    pub fn processing(
        &self,
        processor: Arc<dyn MediaProcessor>,
        settings: ProcessingSettings,
    ) -> ProcessingServices {
        ProcessingServices::new(
            self.media.world.clone(),
            self.store.clone(),
            self.uploads.storage().clone(),
            processor,
            settings,
        )
    }

    /// Signs browsers in through `sso` (the default refuses every sign-in).
    #[must_use]
    pub fn with_sso(mut self, sso: Arc<dyn SsoProvider>) -> Self {
        self.sessions.sso = sso;
        self
    }

    /// Signs and checks LTI 1.3 messages with `tokens` (the default refuses: no LTI 1.3).
    #[must_use]
    pub fn with_lti_tokens(mut self, tokens: Arc<dyn crate::lti::LtiTokens>) -> Self {
        self.lti_tokens = tokens;
        self
    }

    /// Media use cases.
    pub fn media(&self) -> &MediaServices {
        &self.media
    }

    /// People use cases.
    pub fn people(&self) -> &PeopleServices {
        &self.people
    }

    /// OAuth use cases.
    pub fn oauth(&self) -> &OAuthServices {
        &self.oauth
    }

    /// Browser sign-in and sessions.
    pub fn sessions(&self) -> &SessionServices {
        &self.sessions
    }

    /// LTI: consumers and launches (made on demand: it signs people in with the sessions'
    /// current SSO settings).
    pub fn lti(&self) -> lti::LtiServices {
        lti::LtiServices::new(
            self.store.clone(),
            self.lti_tokens.clone(),
            self.media.clone(),
            self.sessions.clone(),
        )
    }

    /// The store (for adapters that need read models directly).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The settings.
    pub fn settings(&self) -> &ServiceSettings {
        &self.media.world.settings
    }

    /// One housekeeping pass: deletes expired codes, tokens and sessions.
    pub fn purge_expired(&self) -> Result<PurgeReport, StoreError> {
        // Codes are kept a day past expiry so that a late replay still revokes its tokens.
        const CODE_GRACE_SECONDS: i64 = 86_400;
        self.store
            .purge_expired(self.media.world.clock.now(), CODE_GRACE_SECONDS)
    }
}
