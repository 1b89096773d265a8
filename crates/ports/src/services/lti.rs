//! LTI use cases (DECISIONS.md §8): registered consumers, and a launch: checked, the person
//! signed in, the course library made or joined.

use std::sync::Arc;

use medialib_domain::lti::oauth1::{self, OAuth1Refusal, SignedRequest};
use medialib_domain::lti::v1p1::{self, LaunchRefusal, Message, PickRequest};
use medialib_domain::lti::v1p3::{
    self as v1p3, ContentItem, DeepLinkingRequest, InvalidPlatform, LoginInitiation, Platform,
};
use medialib_domain::lti::{Course, CourseRole, course_level_after_launch, own_page};
use medialib_domain::{
    Action, Description, MediaObject, NewObject, ObjectFields, ObjectId, ObjectType, Properties,
    Secret, ShortCode, hex,
};

use super::{MediaServices, SessionServices, SignInError, StartedSession, World};
use crate::error::StoreError;
use crate::lti::{
    AddConsumerError, IdTokenRefusal, KeyError, LtiConsumer, LtiRepository, LtiTokens,
    PendingLogin, PublicJwk, ToolKey, UsedNonce,
};
use crate::repos::{CreateObjectError, PermissionChangeError};
use crate::sso::SsoIdentity;
use crate::world::RandomExt as _;

/// A form's fields, in order.
pub type Form = Vec<(String, String)>;

/// Where an LTI 1.3 platform posts its launches (the `redirect_uri` of the login).
pub const LAUNCH_PATH: &str = "/api/lti/launch";

/// Where the browser goes after a login: the platform's authorization endpoint with this
/// query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticationRequest {
    /// The platform's authorization endpoint.
    pub url: String,
    /// The authentication request's parameters.
    pub query: Vec<(&'static str, String)>,
}

/// Signing in or storage failed (either launch's own error takes both).
#[derive(Debug, thiserror::Error)]
enum StoreOrSignIn {
    #[error(transparent)]
    SignIn(#[from] SignInError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<StoreOrSignIn> for Lti11LaunchFailed {
    fn from(e: StoreOrSignIn) -> Self {
        match e {
            StoreOrSignIn::SignIn(e) => e.into(),
            StoreOrSignIn::Store(e) => e.into(),
        }
    }
}

impl From<StoreOrSignIn> for Lti13Failed {
    fn from(e: StoreOrSignIn) -> Self {
        match e {
            StoreOrSignIn::SignIn(e) => e.into(),
            StoreOrSignIn::Store(e) => e.into(),
        }
    }
}

/// LTI use cases.
#[derive(Clone)]
pub struct LtiServices {
    world: World,
    lti: Arc<dyn LtiRepository>,
    tokens: Arc<dyn LtiTokens>,
    media: MediaServices,
    sessions: SessionServices,
}

impl std::fmt::Debug for LtiServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LtiServices").finish_non_exhaustive()
    }
}

/// The longest consumer name, in characters.
pub const MAX_CONSUMER_NAME_CHARS: usize = 100;

/// Why a consumer could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddConsumerFailed {
    /// The name is empty, too long or holds a control character.
    #[error(
        "the name must be 1 to {MAX_CONSUMER_NAME_CHARS} characters, without control characters"
    )]
    BadName,
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why an LTI 1.3 platform could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddPlatformFailed {
    /// An option does not hold.
    #[error(transparent)]
    Invalid(#[from] InvalidPlatform),
    /// A platform with this issuer and client id is registered.
    #[error("a platform with this issuer and client id is registered: remove it first")]
    Exists,
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why an LTI 1.1 launch was refused. Each is shown to the person on a page that says why,
/// and counted by outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Lti11LaunchFailed {
    /// The OAuth 1.0a signature is missing, malformed, wrong or stale.
    #[error(transparent)]
    Signature(#[from] OAuth1Refusal),
    /// No consumer has the key the launch names.
    #[error("no LTI consumer is registered with this key (`medialib lti consumer list`)")]
    UnknownConsumer,
    /// The consumer used this nonce already: a replay.
    #[error("this launch was sent before (its nonce was used): start it again from the course")]
    Replay,
    /// A signed launch medialib cannot serve.
    #[error(transparent)]
    Launch(#[from] LaunchRefusal),
    /// A learner asked for the picker.
    #[error("only the course's teachers may pick media for it")]
    LearnerMayNotPick,
    /// The person could not be signed in.
    #[error(transparent)]
    SignIn(#[from] SignInError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Lti11LaunchFailed {
    /// The outcome label of the launch metric.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::Signature(OAuth1Refusal::Stale { .. }) => "stale",
            Self::Signature(OAuth1Refusal::BadSignature) => "bad_signature",
            Self::Signature(_) => "unsigned",
            Self::UnknownConsumer => "unknown_consumer",
            Self::Replay => "replay",
            Self::Launch(_) => "unsupported",
            Self::LearnerMayNotPick => "learner_pick",
            Self::SignIn(_) | Self::Store(_) => "error",
        }
    }
}

/// Why an LTI 1.3 login or launch was refused. Each is shown on a page that says why, and
/// counted by outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Lti13Failed {
    /// The login or the launch does not hold (a claim, the platform, the deployment, …).
    #[error(transparent)]
    Refused(#[from] v1p3::Refusal),
    /// The login names an issuer with several registrations and no client id.
    #[error(
        "several LTI 1.3 registrations have this issuer and the login names no client_id: register the platform with its client id in the login"
    )]
    AmbiguousPlatform,
    /// The launch's state is unknown, used or lapsed.
    #[error(
        "this launch's login is unknown, used already or older than 10 minutes: start it again from the course"
    )]
    UnknownState,
    /// The id_token's signature does not hold against the platform's keys.
    #[error(transparent)]
    Token(#[from] IdTokenRefusal),
    /// A learner asked for the picker.
    #[error("only the course's teachers may pick media for it")]
    LearnerMayNotPick,
    /// medialib's key could not be made or used.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The person could not be signed in.
    #[error(transparent)]
    SignIn(#[from] SignInError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Lti13Failed {
    /// The outcome label of the launch metric.
    pub fn outcome(&self) -> &'static str {
        use v1p3::Refusal as R;
        match self {
            Self::Refused(R::UnknownPlatform) | Self::AmbiguousPlatform => "unknown_platform",
            Self::Refused(R::UnknownDeployment) => "unknown_deployment",
            Self::Refused(R::Expired | R::IssuedInFuture) => "stale",
            Self::Refused(R::WrongNonce) | Self::UnknownState => "replay",
            Self::Refused(R::WrongIssuer | R::WrongAudience | R::WrongAuthorizedParty) => {
                "wrong_audience"
            }
            Self::Refused(_) => "unsupported",
            Self::Token(IdTokenRefusal::KeysUnavailable(_)) => "keys_unavailable",
            Self::Token(_) => "bad_signature",
            Self::LearnerMayNotPick => "learner_pick",
            Self::Key(_) | Self::SignIn(_) | Self::Store(_) => "error",
        }
    }
}

/// A launch that was let in: the person's new session and where they go.
#[derive(Debug, Clone)]
pub struct LtiLaunch {
    /// Who launched: the LTI 1.1 consumer's key (the key a Content-Item answer is signed
    /// with), or the LTI 1.3 platform's `issuer#client_id`.
    pub consumer: String,
    /// The session the launch started.
    pub session: StartedSession,
    /// What the course makes them.
    pub role: CourseRole,
    /// The course's library, when the launch names a course that has one (a teacher's
    /// launch makes it).
    pub course_library: Option<ObjectId>,
    /// What they came for.
    pub next: LaunchNext,
}

/// Where a launch leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchNext {
    /// A page of medialib's that the launch's `returnContext` names (its path and query).
    Page(String),
    /// The player of this object (the page checks the person may view it).
    Player(ObjectId),
    /// The course library, or the person's home page without one.
    Library,
    /// The picker, and where the pick goes back to.
    Pick(PickRequest),
    /// The LTI 1.3 picker: the Deep Linking request and the platform it goes back to.
    DeepLink(DeepLink),
}

/// An LTI 1.3 Deep Linking request, with the platform that sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepLink {
    /// The platform's issuer.
    pub issuer: String,
    /// The platform's client id for medialib.
    pub client_id: String,
    /// What it asked.
    pub request: DeepLinkingRequest,
}

impl LtiServices {
    /// The LTI use cases over `lti`, creating course libraries through `media` and signing
    /// people in through `sessions`.
    pub fn new(
        lti: Arc<dyn LtiRepository>,
        tokens: Arc<dyn LtiTokens>,
        media: MediaServices,
        sessions: SessionServices,
    ) -> Self {
        Self {
            world: media.world.clone(),
            lti,
            tokens,
            media,
            sessions,
        }
    }

    /// Registers a consumer named `name` with a fresh key and secret (shown once, by the
    /// caller).
    pub fn add_consumer(&self, name: &str) -> Result<LtiConsumer, AddConsumerFailed> {
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_CONSUMER_NAME_CHARS
            || name.chars().any(char::is_control)
        {
            return Err(AddConsumerFailed::BadName);
        }
        loop {
            let consumer = LtiConsumer {
                key: format!("ml-{}", self.world.random.hex(12)),
                name: name.to_owned(),
                secret: Secret::new(hex::lower(&self.world.random.bytes32())),
                created_at: self.world.clock.now(),
            };
            match self.lti.add_lti_consumer(&consumer) {
                Ok(()) => return Ok(consumer),
                // 96 random bits: a collision is a fresh draw, not an error.
                Err(AddConsumerError::KeyTaken) => {}
                Err(AddConsumerError::Store(e)) => return Err(e.into()),
            }
        }
    }

    /// Every consumer, by key.
    pub fn consumers(&self) -> Result<Vec<LtiConsumer>, StoreError> {
        self.lti.lti_consumers()
    }

    /// Removes a consumer; `false` when no consumer has this key.
    pub fn remove_consumer(&self, key: &str) -> Result<bool, StoreError> {
        self.lti.remove_lti_consumer(key)
    }

    /// Registers an LTI 1.3 platform, checked.
    pub fn add_platform(&self, platform: Platform) -> Result<Platform, AddPlatformFailed> {
        let platform = platform.checked()?;
        match self.lti.add_lti_platform(&platform, self.world.clock.now()) {
            Ok(()) => Ok(platform),
            Err(crate::lti::AddPlatformError::Exists) => Err(AddPlatformFailed::Exists),
            Err(crate::lti::AddPlatformError::Store(e)) => Err(e.into()),
        }
    }

    /// Every LTI 1.3 platform, by issuer and client id.
    pub fn platforms(&self) -> Result<Vec<Platform>, StoreError> {
        self.lti.lti_platforms()
    }

    /// Removes an LTI 1.3 platform; `false` when none has this issuer and client id.
    pub fn remove_platform(&self, issuer: &str, client_id: &str) -> Result<bool, StoreError> {
        self.lti.remove_lti_platform(issuer, client_id)
    }

    /// An LTI 1.1 launch: `url` is where the consumer sent it (medialib's public base URL and
    /// the path), `params` the query's and the form's parameters. Checks the signature, the
    /// timestamp and the nonce, reads the launch, signs the person in, and makes (a teacher's
    /// first launch) or joins the course library.
    #[tracing::instrument(skip_all)]
    pub fn launch_v1p1(
        &self,
        url: &str,
        params: Vec<(String, String)>,
    ) -> Result<LtiLaunch, Lti11LaunchFailed> {
        let now = self.world.clock.now();
        let signed = SignedRequest::parse("POST", url, params)?;
        let consumer = self
            .lti
            .lti_consumer(signed.consumer_key())?
            .ok_or(Lti11LaunchFailed::UnknownConsumer)?;
        let verified = signed.verify(&consumer.secret, now)?;
        let launch = v1p1::read(&verified)?;
        // `returnContext` names a page of ours to show (Warpwire's activity module sends it
        // to everyone, with a selection request); another site's address is ignored.
        let issuer = self.world.settings.issuer.as_str();
        let page = launch
            .return_context
            .as_deref()
            .and_then(|url| own_page(url, issuer));
        if matches!(launch.message, Message::Pick(_)) && !launch.role.may_pick() && page.is_none() {
            return Err(Lti11LaunchFailed::LearnerMayNotPick);
        }
        // Last, so that a refused launch does not spend its nonce (a fixed platform may
        // send it again); the write is what makes it single use.
        let used = UsedNonce {
            consumer: &consumer.key,
            nonce: verified.nonce(),
            kept_until: verified.nonce_kept_until(),
        };
        if !self.lti.use_lti_nonce(used, now)? {
            tracing::info!(consumer = %consumer.key, "LTI launch replayed");
            return Err(Lti11LaunchFailed::Replay);
        }
        let (session, course_library) =
            self.admit(launch.person, launch.course.as_ref(), launch.role)?;
        tracing::info!(
            consumer = %consumer.key,
            user = %session.user.id,
            teacher = launch.role.may_pick(),
            "LTI 1.1 launch"
        );
        Ok(LtiLaunch {
            consumer: consumer.key,
            session,
            role: launch.role,
            course_library,
            next: match (page, launch.message) {
                (Some(path), _) => LaunchNext::Page(path),
                (None, Message::Resource { media: Some(m), .. }) => LaunchNext::Player(m),
                (None, Message::Resource { media: None, .. }) => LaunchNext::Library,
                (None, Message::Pick(pick)) => LaunchNext::Pick(pick),
            },
        })
    }

    /// Signs the person in and makes or joins the course's library (see [`Self::join_course`]).
    fn admit(
        &self,
        person: medialib_domain::lti::Person,
        course: Option<&Course>,
        role: CourseRole,
    ) -> Result<(StartedSession, Option<ObjectId>), StoreOrSignIn> {
        let session = self.sessions.start_session_for(
            SsoIdentity {
                unique_id: person.unique_id,
                first_name: person.first_name,
                last_name: person.last_name,
            },
            self.world.clock.now(),
        )?;
        let course_library = match course {
            Some(course) => self.join_course(&session, course, role)?,
            None => None,
        };
        Ok((session, course_library))
    }

    /// Makes a new signing key: it signs from now on, the one before it stays published
    /// (a platform may have cached the key set), older ones are deleted.
    pub fn rotate_key(&self) -> Result<ToolKey, Lti13Failed> {
        let now = self.world.clock.now();
        // Strictly newer than the newest: two rotations within a second keep their order.
        let created_at = match self.lti.lti_keys()?.first() {
            Some(newest) if newest.created_at >= now => {
                medialib_domain::Timestamp::from_epoch_seconds(
                    newest.created_at.epoch_seconds() + 1,
                )
            }
            _ => now,
        };
        let key = ToolKey {
            kid: self.world.random.hex(16),
            private_key: self.tokens.generate_key()?,
            created_at,
        };
        self.lti.add_lti_key(&key, v1p3::KEYS_KEPT)?;
        tracing::info!(kid = %key.kid, "new LTI signing key");
        Ok(key)
    }

    /// The key that signs: the newest, made now when there is none.
    fn signing_key(&self) -> Result<ToolKey, Lti13Failed> {
        match self.lti.lti_keys()?.into_iter().next() {
            Some(key) => Ok(key),
            None => self.rotate_key(),
        }
    }

    /// medialib's public keys, newest first (one is made now when there is none).
    pub fn jwks(&self) -> Result<Vec<PublicJwk>, Lti13Failed> {
        let mut keys = self.lti.lti_keys()?;
        if keys.is_empty() {
            keys.push(self.rotate_key()?);
        }
        keys.iter()
            .map(|key| self.tokens.public_jwk(key).map_err(Into::into))
            .collect()
    }

    /// The registered platform of `issuer`: the one with `client_id`, or the only one.
    fn platform_for(&self, issuer: &str, client_id: Option<&str>) -> Result<Platform, Lti13Failed> {
        let mut found = self.lti.lti_platforms_of(issuer)?;
        match client_id {
            Some(id) => found
                .into_iter()
                .find(|p| p.client_id == id)
                .ok_or(v1p3::Refusal::UnknownPlatform.into()),
            None if found.len() == 1 => Ok(found.remove(0)),
            None if found.is_empty() => Err(v1p3::Refusal::UnknownPlatform.into()),
            None => Err(Lti13Failed::AmbiguousPlatform),
        }
    }

    /// A secret for a login's state or nonce, or a response's nonce: 256 random bits.
    fn fresh_secret(&self) -> String {
        hex::lower(&self.world.random.bytes32())
    }

    /// An OIDC third-party-initiated login (LTI Core 1.3 §5.1.1): checks it, keeps a fresh
    /// state and nonce for 10 minutes, and answers where the browser goes: the platform's
    /// authorization endpoint with the authentication request's query.
    #[tracing::instrument(skip_all)]
    pub fn login_v1p3(
        &self,
        params: &[(String, String)],
    ) -> Result<AuthenticationRequest, Lti13Failed> {
        let now = self.world.clock.now();
        let base = self.world.settings.issuer.as_str().trim_end_matches('/');
        let login = LoginInitiation::parse(params, base)?;
        let platform = self.platform_for(&login.issuer, login.client_id.as_deref())?;
        if let Some(deployment) = &login.deployment_id
            && !platform.deployments.contains(deployment)
        {
            return Err(v1p3::Refusal::UnknownDeployment.into());
        }
        let pending = PendingLogin {
            state: self.fresh_secret(),
            nonce: self.fresh_secret(),
            issuer: platform.issuer.clone(),
            client_id: platform.client_id.clone(),
            expires_at: medialib_domain::Timestamp::from_epoch_seconds(
                now.epoch_seconds() + v1p3::LOGIN_LIFETIME_SECS,
            ),
        };
        self.lti.begin_lti_login(&pending, now)?;
        let redirect_uri = format!("{base}{LAUNCH_PATH}");
        let query =
            login.authentication_request(&platform, &redirect_uri, &pending.state, &pending.nonce);
        Ok(AuthenticationRequest {
            url: platform.auth_url,
            query,
        })
    }

    /// An LTI 1.3 launch: the `state` and `id_token` the platform posted. Takes the login the
    /// state names (single use), checks the token's signature against the platform's keys
    /// and every claim (with the login's nonce), signs the person in, and makes (a teacher's
    /// first launch) or joins the course library.
    #[tracing::instrument(skip_all)]
    pub fn launch_v1p3(&self, state: &str, id_token: &str) -> Result<LtiLaunch, Lti13Failed> {
        let now = self.world.clock.now();
        let login = self
            .lti
            .take_lti_login(state, now)?
            .ok_or(Lti13Failed::UnknownState)?;
        let platform = self.platform_for(&login.issuer, Some(&login.client_id))?;
        let token = self.tokens.read_id_token(&platform, id_token)?;
        let launch = v1p3::check_launch(&token, &platform, &login.nonce, now)?;
        if matches!(launch.message, v1p3::Message::DeepLinking(_)) && !launch.role.may_pick() {
            return Err(Lti13Failed::LearnerMayNotPick);
        }
        let (session, course_library) =
            self.admit(launch.person, launch.course.as_ref(), launch.role)?;
        tracing::info!(
            issuer = %platform.issuer,
            user = %session.user.id,
            teacher = launch.role.may_pick(),
            "LTI 1.3 launch"
        );
        Ok(LtiLaunch {
            consumer: platform.course_platform(),
            session,
            role: launch.role,
            course_library,
            next: match launch.message {
                v1p3::Message::ResourceLink { media: Some(m), .. } => LaunchNext::Player(m),
                v1p3::Message::ResourceLink { media: None, .. } => LaunchNext::Library,
                v1p3::Message::DeepLinking(request) => LaunchNext::DeepLink(DeepLink {
                    issuer: platform.issuer,
                    client_id: platform.client_id,
                    request,
                }),
            },
        })
    }

    /// A signed Deep Linking response (a JWT) for each of `items`, to `link`'s platform.
    pub fn sign_deep_links(
        &self,
        link: &DeepLink,
        items: Vec<ContentItem>,
    ) -> Result<Vec<String>, Lti13Failed> {
        let platform = self.platform_for(&link.issuer, Some(&link.client_id))?;
        let key = self.signing_key()?;
        let now = self.world.clock.now();
        items
            .into_iter()
            .map(|item| {
                let response = v1p3::deep_linking_response(
                    &platform,
                    &link.request,
                    vec![item],
                    &self.fresh_secret(),
                    now,
                );
                self.tokens.sign(&key, &response).map_err(Into::into)
            })
            .collect()
    }

    /// Each of `forms` signed by medialib as consumer `consumer`'s tool, for a POST to `url`
    /// (the Content-Item selections a picker offers), with one read of the consumer and a
    /// nonce of its own each; `None` when the consumer is gone.
    pub fn sign_each(
        &self,
        consumer: &str,
        url: &str,
        forms: Vec<Form>,
    ) -> Result<Option<Vec<Form>>, Lti11LaunchFailed> {
        let Some(consumer) = self.lti.lti_consumer(consumer)? else {
            return Ok(None);
        };
        let now = self.world.clock.now();
        let signed = forms
            .into_iter()
            .map(|form| {
                let nonce = self.world.random.hex(16);
                oauth1::sign(url, form, &consumer.key, &consumer.secret, &nonce, now)
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(signed))
    }

    /// The course's library after this person's launch: a teacher's launch creates it when
    /// there is none (through the gate's `CreateLibrary`), and the launch raises the
    /// person's level on it as the domain says (`course_level_after_launch`).
    fn join_course(
        &self,
        session: &StartedSession,
        course: &Course,
        role: CourseRole,
    ) -> Result<Option<ObjectId>, StoreError> {
        let user = &session.user;
        let library = match self.lti.course_library(course.key())? {
            Some(id) => id,
            None if role.may_pick() => {
                if self
                    .media
                    .gate(&user.as_caller(), Action::CreateLibrary)?
                    .is_err()
                {
                    return Ok(None);
                }
                let now = self.world.clock.now();
                let object = MediaObject::create(
                    ObjectId::generate(&self.world.namespace()?, self.world.random.bytes16()),
                    NewObject {
                        object_type: ObjectType::Catalog,
                        fields: ObjectFields {
                            title: course.title().clone(),
                            description: Description::default(),
                            public: false,
                            duration: None,
                            properties: Properties::default(),
                        },
                    },
                    user.id,
                    ShortCode::from_random(self.world.random.bytes16()),
                    now,
                );
                let made = self
                    .lti
                    .create_course_library(course.key(), &object, user.id)
                    .map_err(|e| match e {
                        CreateObjectError::Store(s) => s,
                        other => StoreError::Unexpected(other.to_string()),
                    })?;
                made.id()
            }
            None => return Ok(None),
        };
        let current = self.media.media.explicit_level(library, user.id)?;
        if let Some(level) = course_level_after_launch(role, current) {
            let now = self.world.clock.now();
            match self
                .media
                .media
                .set_permission(library, user.id, level, now)
            {
                Ok(()) => {}
                Err(PermissionChangeError::Store(e)) => return Err(e),
                Err(other) => return Err(StoreError::Unexpected(other.to_string())),
            }
        }
        Ok(Some(library))
    }
}
