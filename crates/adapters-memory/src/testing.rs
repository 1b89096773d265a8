//! Test helpers (cargo feature `testing`): the application services on a store, a clock the
//! test sets and a random source, with the helpers the use-case tests (`crates/ports/tests`,
//! on a [`MemoryStore`] and a deterministic random source) and the repository contract suite
//! (tests/integration/contract.rs, on every backend) build their cases from. One harness, so
//! that the cases read the same and a helper is written once.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::missing_panics_doc,
    reason = "a test harness fails by panicking, at the line of the test that misused it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::MemoryStore;
use medialib_domain::oauth::{
    AuthorizeParams, Client, ClientId, ClientKind, ClientName, Issuer, RedirectUri, TokenLifetimes,
};
use medialib_domain::{
    Caller, Description, Forbidden, Lifetime, NewObject, ObjectFields, ObjectId, ObjectType,
    PermissionLevel, PersonName, Properties, Refusal, Secret, Subject, Timestamp, Title,
    TokenDigest, TokenKind, UniqueId, User, UserId,
};
use medialib_ports::services::people::Grantee;
use medialib_ports::services::{ClientCredentials, NewUserInput, Placement, TokenResponse};
use medialib_ports::{
    Clock, ManualClock, OrgRepository, RandomExt, RandomSource, ServiceSettings, Services, Store,
};

/// Deterministic "randomness": every draw is different (a counter in the first eight bytes,
/// a fixed pattern after them), and the same from run to run.
#[derive(Debug)]
pub struct CountingRandom(AtomicU64);

impl Default for CountingRandom {
    fn default() -> Self {
        Self(AtomicU64::new(1))
    }
}

impl RandomSource for CountingRandom {
    fn fill(&self, buf: &mut [u8]) {
        let n = self.0.fetch_add(1, Ordering::SeqCst).to_le_bytes();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = n
                .get(i)
                .copied()
                .unwrap_or(0xA5 ^ u8::try_from(i % 256).unwrap());
        }
    }
}

/// The store, the services on it, the clock and the random source.
#[allow(
    missing_debug_implementations,
    reason = "a test harness is never printed"
)]
pub struct Harness {
    pub store: Arc<dyn Store>,
    pub services: Services,
    pub clock: Arc<ManualClock>,
    pub random: Arc<dyn RandomSource>,
}

pub const START: i64 = 1_700_000_000;
pub const ISSUER: &str = "https://media.example.edu";
pub const REDIRECT: &str = "https://lms.example.edu/callback";

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// A fresh [`MemoryStore`] with [`CountingRandom`]: the same draws from run to run.
    pub fn new() -> Self {
        Self::with_store(
            Arc::new(MemoryStore::new([7; 16])),
            Arc::new(CountingRandom::default()),
        )
    }

    /// The services over this harness's store, clock and randomness, with a refresh retry
    /// grace of `grace` (the harness's own have none, so that presenting a spent refresh
    /// token again is reuse at once).
    pub fn services_with_retry_grace(&self, grace: Lifetime) -> Services {
        let mut settings = self.services.settings().clone();
        settings.lifetimes.retry_grace = Some(grace);
        Services::new(
            self.store.clone(),
            self.clock.clone(),
            self.random.clone(),
            settings,
        )
    }

    /// The services on `store`, drawing from `random`, with the clock at [`START`].
    pub fn with_store(store: Arc<dyn Store>, random: Arc<dyn RandomSource>) -> Self {
        let clock = Arc::new(ManualClock::at(START));
        let services = Services::new(
            store.clone(),
            clock.clone(),
            random.clone(),
            ServiceSettings {
                lifetimes: TokenLifetimes {
                    access: Lifetime::from_seconds(3600).unwrap(),
                    refresh: Lifetime::from_seconds(86_400).unwrap(),
                    retry_grace: None,
                },
                code_ttl: Lifetime::from_seconds(60).unwrap(),
                issuer: Issuer::new(ISSUER),
                session_ttl: Lifetime::from_seconds(3600).unwrap(),
            },
        );
        Self {
            store,
            services,
            clock,
            random,
        }
    }

    pub fn set_time(&self, secs: i64) {
        self.clock.set(secs);
    }

    pub fn advance(&self, secs: i64) {
        self.clock.advance(secs);
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    pub fn user(&self, unique_id: &str, org_admin: bool) -> User {
        self.services
            .people()
            .create_user(NewUserInput {
                unique_id: UniqueId::parse(unique_id).unwrap(),
                first_name: PersonName::parse("First", "firstName").unwrap(),
                last_name: PersonName::parse(unique_id, "lastName").unwrap(),
                org_admin,
            })
            .unwrap()
    }

    pub fn new_object(t: ObjectType, title: &str) -> NewObject {
        NewObject {
            object_type: t,
            fields: ObjectFields {
                title: Title::parse(title).unwrap(),
                description: Description::parse("d").unwrap(),
                public: false,
                duration: None,
                properties: Properties::empty(),
            },
        }
    }

    pub fn library(&self, owner: &User, title: &str) -> ObjectId {
        self.services
            .media()
            .create_object(
                &owner.as_caller(),
                Placement::TopLevel,
                Self::new_object(ObjectType::Catalog, title),
            )
            .unwrap()
            .id()
    }

    pub fn object_in(
        &self,
        owner: &User,
        collection: ObjectId,
        t: ObjectType,
        title: &str,
    ) -> ObjectId {
        self.create_in(owner, collection, Self::new_object(t, title))
    }

    /// Like [`new_object`](Self::new_object), but public: its limited record is anyone's.
    pub fn public_object(t: ObjectType, title: &str) -> NewObject {
        let mut new = Self::new_object(t, title);
        new.fields.public = true;
        new
    }

    /// Creates `new` in `collection`, as `owner`.
    pub fn create_in(&self, owner: &User, collection: ObjectId, new: NewObject) -> ObjectId {
        self.services
            .media()
            .create_object(&owner.as_caller(), Placement::In(collection), new)
            .unwrap()
            .id()
    }

    /// Sets `who`'s explicit level on `collection`, as `admin` (who administers it) would.
    pub fn grant(&self, admin: &User, collection: ObjectId, who: &User, level: PermissionLevel) {
        self.services
            .people()
            .grant_permission(&admin.as_caller(), collection, Grantee::Id(who.id), level)
            .unwrap();
    }

    pub fn level(&self, who: &User, collection: ObjectId) -> PermissionLevel {
        self.services
            .media()
            .effective_level(&who.as_caller(), collection)
            .unwrap()
    }

    /// Registers a confidential client; returns its credentials.
    pub fn client(&self) -> ClientCredentials {
        let ns = OrgRepository::namespace(&*self.store).unwrap();
        let id = ClientId::generate(&ns, self.random.bytes16());
        let (secret, digest) = TokenKind::ClientSecret.mint(self.random.bytes32());
        let client = Client::new(
            id.clone(),
            ClientName::parse("LMS").unwrap(),
            vec![RedirectUri::parse(REDIRECT).unwrap()],
            ClientKind::Confidential {
                secret_digest: digest,
            },
        )
        .unwrap();
        self.store.create_client(&client, self.now()).unwrap();
        ClientCredentials {
            client_id: id.as_str().to_owned(),
            client_secret: Some(secret),
        }
    }

    /// Runs the authorization step for `user` and returns the code.
    pub fn code(&self, creds: &ClientCredentials, user: &User, offline: bool) -> String {
        self.code_with_scope(creds, user, offline, None)
    }

    /// [`code`](Self::code), asking for `scope` (`None`: the default scope).
    pub fn code_with_scope(
        &self,
        creds: &ClientCredentials,
        user: &User,
        offline: bool,
        scope: Option<&str>,
    ) -> String {
        let params = AuthorizeParams {
            response_type: Some("code"),
            client_id: Some(&creds.client_id),
            redirect_uri: Some(REDIRECT),
            scope,
            state: Some("xyz"),
            access_type: offline.then_some("offline"),
            ..AuthorizeParams::default()
        };
        let request = self.services.oauth().start_authorization(&params).unwrap();
        let response = self
            .services
            .oauth()
            .approve_authorization(request, user.id)
            .unwrap();
        assert_eq!(response.param("state"), Some("xyz"));
        assert_eq!(response.param("iss"), Some(ISSUER));
        response.param("code").unwrap().to_owned()
    }

    /// Authorizes and exchanges a code: the tokens of a fresh grant.
    pub fn tokens(&self, creds: &ClientCredentials, user: &User, offline: bool) -> TokenResponse {
        let code = self.code(creds, user, offline);
        self.services
            .oauth()
            .exchange_code(creds, &code, Some(REDIRECT), None)
            .unwrap()
    }

    /// `user` as the gate sees it behind an access token of a fresh grant with `scope`
    /// (`"read"`: a token that may not write), made by bearer authentication.
    pub fn token_caller(&self, user: &User, scope: &str) -> Caller {
        let creds = self.client();
        let code = self.code_with_scope(&creds, user, false, Some(scope));
        let tokens = self
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        self.services
            .oauth()
            .authenticate_bearer(tokens.access_token.expose())
            .unwrap()
            .caller()
    }

    /// A fresh session cookie and its digest.
    pub fn session_cookie(&self) -> (Secret, TokenDigest) {
        TokenKind::Session.mint(self.random.bytes32())
    }
}

/// The stored digest of a token response's refresh token.
pub fn refresh_digest(t: &TokenResponse) -> TokenDigest {
    TokenDigest::of(t.refresh_token.as_ref().unwrap())
}

/// A user id that no stored user has.
pub fn unknown_user() -> UserId {
    UserId::parse("0123456789abcdef0123456789abcdef").unwrap()
}

/// Alice created library `lib` (its one admin) holding a private `video`; Bob has `view`
/// on `lib`; Carol has no entry anywhere; Olga administers the organization.
#[allow(
    missing_debug_implementations,
    reason = "a test fixture is never printed"
)]
pub struct World {
    pub h: Harness,
    pub alice: User,
    pub bob: User,
    pub carol: User,
    pub olga: User,
    pub lib: ObjectId,
    pub video: ObjectId,
}

/// The cast of [`World`], on a fresh harness.
pub fn world() -> World {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let bob = h.user("bob", false);
    let carol = h.user("carol", false);
    let olga = h.user("olga", true);
    let lib = h.library(&alice, "Alice's library");
    let video = h.object_in(&alice, lib, ObjectType::Video, "clip");
    h.grant(&alice, lib, &bob, PermissionLevel::View);
    World {
        h,
        alice,
        bob,
        carol,
        olga,
        lib,
        video,
    }
}

/// The gate's refusal of a caller whose level on the call's collection is `actual`.
pub fn forbidden(required: PermissionLevel, actual: PermissionLevel) -> Refusal {
    Refusal::Forbidden(Forbidden {
        subject: Subject::Collection,
        required,
        actual,
    })
}
