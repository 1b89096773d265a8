//! LTI 1.3 (1EdTech LTI Core 1.3 and Deep Linking 2.0), the rules without the cryptography:
//! a registered [`Platform`], the OIDC third-party-initiated login it starts
//! ([`LoginInitiation`], and the authentication request medialib answers with), the claims of
//! a launch's `id_token` checked and read into a [`Launch`], and the claims of the Deep
//! Linking response medialib sends back. The signature of the `id_token` (RS256 against the
//! platform's JWKS) is checked before these rules by the adapter that fetches the keys; the
//! state and nonce are kept and taken once by the store.

use std::collections::BTreeMap;

use super::{Course, CourseRole, Person, name};
use crate::{ObjectId, Timestamp, UniqueId};

/// The LTI version a launch must carry.
pub const VERSION: &str = "1.3.0";

/// How far `exp` and `iat` may be off this server's clock (seconds).
pub const CLOCK_SKEW_SECS: i64 = 60;

/// How long a Deep Linking response is valid for the platform (seconds).
pub const RESPONSE_LIFETIME_SECS: i64 = 600;

/// How long a login's state and nonce wait for the launch (seconds; DECISIONS.md §8).
pub const LOGIN_LIFETIME_SECS: i64 = 600;

/// How many of medialib's signing keys are kept and published, newest first: the one that
/// signs, and the one before it, which a platform's cached key set may still hold.
pub const KEYS_KEPT: usize = 2;

/// Which claim of the `id_token` names the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UniqueIdClaim {
    /// `sub`, the platform's own id of the user: medialib's uniqueId is `CLIENT_ID:SUB`, as an
    /// LTI 1.1 `user_id` is keyed by its consumer.
    Subject,
    /// Another string claim (`email`, `preferred_username`, or
    /// `lis.person_sourcedid` for the LIS claim's `person_sourcedid`), taken as it is, so
    /// that the person is the same medialib user as at their SSO sign-in.
    Named(String),
}

impl UniqueIdClaim {
    /// `sub` or the name of another claim.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim() {
            "" => None,
            "sub" => Some(Self::Subject),
            other if other.chars().any(|c| c.is_control() || c.is_whitespace()) => None,
            other => Some(Self::Named(other.to_owned())),
        }
    }

    /// Its name, as the operator gave it.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Subject => "sub",
            Self::Named(name) => name,
        }
    }
}

/// A registered LTI 1.3 platform (`medialib lti platform add`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// Its `iss`.
    pub issuer: String,
    /// The client id it gave medialib (the `aud` of its tokens).
    pub client_id: String,
    /// The deployments of medialib it may launch.
    pub deployments: Vec<String>,
    /// Where the login sends the browser (the platform's OIDC authorization endpoint).
    pub auth_url: String,
    /// Its OAuth 2.0 token endpoint (for the LTI Advantage services).
    pub token_url: String,
    /// Where its signing keys are published.
    pub jwks_url: String,
    /// Which claim names the person.
    pub unique_id_claim: UniqueIdClaim,
}

/// A platform registration that does not hold together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct InvalidPlatform {
    /// The option at fault (`--issuer`, …).
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl Platform {
    /// The longest issuer, client id or deployment id, in characters.
    pub const MAX_CHARS: usize = 255;

    /// The same registration, checked: the issuer and the three URLs are `http(s)` URLs, the
    /// client id and each deployment id 1 to 255 characters without control characters, at
    /// least one deployment; repeated deployments are kept once.
    pub fn checked(mut self) -> Result<Self, InvalidPlatform> {
        let invalid = |field, reason| Err(InvalidPlatform { field, reason });
        let id = |s: &str| {
            !s.is_empty()
                && s.chars().count() <= Self::MAX_CHARS
                && !s.chars().any(char::is_control)
        };
        for (field, url) in [
            ("--issuer", &self.issuer),
            ("--auth-url", &self.auth_url),
            ("--token-url", &self.token_url),
            ("--jwks-url", &self.jwks_url),
        ] {
            if !super::v1p1::is_http_url(url) || url.chars().count() > 2048 {
                return invalid(field, "must be an http or https URL");
            }
        }
        if self.issuer.chars().count() > Self::MAX_CHARS {
            return invalid("--issuer", "must be at most 255 characters");
        }
        if !id(&self.client_id) {
            return invalid(
                "--client-id",
                "must be 1 to 255 characters, without control characters",
            );
        }
        if self.deployments.is_empty() {
            return invalid("--deployment-id", "at least one is needed");
        }
        if !self.deployments.iter().all(|d| id(d)) {
            return invalid(
                "--deployment-id",
                "must be 1 to 255 characters, without control characters",
            );
        }
        self.deployments.sort();
        self.deployments.dedup();
        Ok(self)
    }

    /// The platform part of its courses' keys: the issuer and the client id.
    pub fn course_platform(&self) -> String {
        format!("{}#{}", self.issuer, self.client_id)
    }
}

/// Why a login initiation or a launch is refused. Each says what a platform's administrator
/// must fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A required login or claim parameter is missing.
    #[error("the platform did not send `{0}`")]
    Missing(&'static str),
    /// No platform is registered with this issuer (and client id).
    #[error(
        "no LTI 1.3 platform is registered with this issuer and client id (`medialib lti platform list`)"
    )]
    UnknownPlatform,
    /// The login's `target_link_uri` is not one of medialib's addresses.
    #[error("the target link URI is not an address of this medialib")]
    ForeignTarget,
    /// `iss` is not the registered platform's.
    #[error("the id_token's issuer is not the platform's")]
    WrongIssuer,
    /// `aud` does not hold medialib's client id.
    #[error("the id_token is not for this tool (aud)")]
    WrongAudience,
    /// Several audiences and `azp` missing or not medialib's client id.
    #[error("the id_token has several audiences and azp is not this tool")]
    WrongAuthorizedParty,
    /// `exp` is past.
    #[error("the id_token expired")]
    Expired,
    /// `iat` is in the future.
    #[error("the id_token was issued in the future (check both clocks)")]
    IssuedInFuture,
    /// `nonce` is not the one the login sent.
    #[error("the id_token's nonce is not the one this login sent")]
    WrongNonce,
    /// The deployment is not registered.
    #[error(
        "this deployment of the tool is not registered (`medialib lti platform add --deployment-id`)"
    )]
    UnknownDeployment,
    /// The LTI version is not 1.3.0.
    #[error("the LTI version must be 1.3.0")]
    WrongVersion,
    /// A message type medialib does not answer.
    #[error("medialib answers LtiResourceLinkRequest and LtiDeepLinkingRequest, not `{0}`")]
    MessageType(String),
    /// The person's identifier does not make a uniqueId.
    #[error("the user's identifier (claim `{0}`) is missing or not a valid uniqueId")]
    BadUser(String),
    /// The custom parameter `media` is not an object id.
    #[error("the custom parameter `media` is not a media id")]
    BadMedia,
    /// A Deep Linking request without an `http(s)` return URL.
    #[error("the deep linking settings have no return URL")]
    NoReturnUrl,
}

/// An OIDC third-party-initiated login (LTI Core 1.3 §5.1.1), parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginInitiation {
    /// `iss`.
    pub issuer: String,
    /// `login_hint`, sent back as it came.
    pub login_hint: String,
    /// `target_link_uri`.
    pub target_link_uri: String,
    /// `lti_message_hint`, sent back as it came.
    pub lti_message_hint: Option<String>,
    /// `client_id`, when the platform names it (an issuer may register several).
    pub client_id: Option<String>,
    /// `lti_deployment_id`, when the platform names it.
    pub deployment_id: Option<String>,
}

impl LoginInitiation {
    /// Parses the login's parameters (query or form); `base` is medialib's public base URL,
    /// under which `target_link_uri` must be.
    pub fn parse(params: &[(String, String)], base: &str) -> Result<Self, Refusal> {
        let get = |n: &str| {
            params
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.trim())
                .filter(|v| !v.is_empty())
        };
        let need = |n: &'static str| get(n).map(str::to_owned).ok_or(Refusal::Missing(n));
        let target_link_uri = need("target_link_uri")?;
        if super::own_page(&target_link_uri, base).is_none() {
            return Err(Refusal::ForeignTarget);
        }
        Ok(Self {
            issuer: need("iss")?,
            login_hint: need("login_hint")?,
            target_link_uri,
            lti_message_hint: get("lti_message_hint").map(str::to_owned),
            client_id: get("client_id").map(str::to_owned),
            deployment_id: get("lti_deployment_id").map(str::to_owned),
        })
    }

    /// The query of the authentication request the browser is sent to at the platform's
    /// `auth_url` (LTI Core 1.3 §5.1.1.2): an implicit-flow `id_token`, posted back to
    /// `redirect_uri`, with a fresh `state` and `nonce` (kept by the caller, single use).
    pub fn authentication_request(
        &self,
        platform: &Platform,
        redirect_uri: &str,
        state: &str,
        nonce: &str,
    ) -> Vec<(&'static str, String)> {
        let mut query = vec![
            ("scope", "openid".to_owned()),
            ("response_type", "id_token".to_owned()),
            ("response_mode", "form_post".to_owned()),
            ("prompt", "none".to_owned()),
            ("client_id", platform.client_id.clone()),
            ("redirect_uri", redirect_uri.to_owned()),
            ("login_hint", self.login_hint.clone()),
            ("state", state.to_owned()),
            ("nonce", nonce.to_owned()),
        ];
        if let Some(hint) = &self.lti_message_hint {
            query.push(("lti_message_hint", hint.clone()));
        }
        query
    }
}

/// The claims of a launch's `id_token` medialib reads, as the adapter found them after the
/// signature held. Strings are as sent; absent claims are `None` or empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdToken {
    /// `iss`.
    pub issuer: String,
    /// `aud`, one or several.
    pub audiences: Vec<String>,
    /// `azp`.
    pub authorized_party: Option<String>,
    /// `exp`.
    pub expires: i64,
    /// `iat`.
    pub issued: i64,
    /// `nonce`.
    pub nonce: Option<String>,
    /// `sub`.
    pub subject: Option<String>,
    /// The LTI message type.
    pub message_type: Option<String>,
    /// The LTI version.
    pub version: Option<String>,
    /// The deployment id.
    pub deployment_id: Option<String>,
    /// The resource link's id.
    pub resource_link_id: Option<String>,
    /// The roles.
    pub roles: Vec<String>,
    /// The context's id, label and title.
    pub context_id: Option<String>,
    /// The context's label.
    pub context_label: Option<String>,
    /// The context's title.
    pub context_title: Option<String>,
    /// The custom parameter `media`.
    pub custom_media: Option<String>,
    /// `given_name`.
    pub given_name: Option<String>,
    /// `family_name`.
    pub family_name: Option<String>,
    /// Every other top-level string claim (`email`, `preferred_username`, …) and the LIS
    /// claim's `person_sourcedid` as `lis.person_sourcedid`: where a configured unique-id
    /// claim is looked up.
    pub strings: BTreeMap<String, String>,
    /// The Deep Linking settings of a Deep Linking request.
    pub deep_linking: Option<DeepLinkingSettings>,
}

/// The `deep_linking_settings` claim.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeepLinkingSettings {
    /// `deep_link_return_url`.
    pub return_url: Option<String>,
    /// `accept_types`.
    pub accept_types: Vec<String>,
    /// `accept_multiple`.
    pub accept_multiple: bool,
    /// `data`, sent back as it came.
    pub data: Option<String>,
}

/// What an LTI 1.3 launch asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// `LtiResourceLinkRequest`: the player of `media`, or the course's media.
    ResourceLink {
        /// The resource link's id.
        link: String,
        /// The custom parameter `media`.
        media: Option<ObjectId>,
    },
    /// `LtiDeepLinkingRequest`: the picker.
    DeepLinking(DeepLinkingRequest),
}

/// Where and how a Deep Linking pick goes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepLinkingRequest {
    /// `deep_link_return_url`.
    pub return_url: String,
    /// Whether the platform takes an `ltiResourceLink` (else an `html` item).
    pub accepts_link: bool,
    /// `data`, to send back.
    pub data: Option<String>,
    /// The deployment, named again in the response.
    pub deployment_id: String,
}

/// A launch that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Who.
    pub person: Person,
    /// What the course makes them.
    pub role: CourseRole,
    /// Which course, when the launch names a context.
    pub course: Option<Course>,
    /// What they came for.
    pub message: Message,
}

/// The claim names of LTI 1.3 (for the adapter that reads and writes tokens).
pub mod claim {
    /// The message type.
    pub const MESSAGE_TYPE: &str = "https://purl.imsglobal.org/spec/lti/claim/message_type";
    /// The LTI version.
    pub const VERSION: &str = "https://purl.imsglobal.org/spec/lti/claim/version";
    /// The deployment id.
    pub const DEPLOYMENT_ID: &str = "https://purl.imsglobal.org/spec/lti/claim/deployment_id";
    /// The target link URI.
    pub const TARGET_LINK_URI: &str = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri";
    /// The resource link.
    pub const RESOURCE_LINK: &str = "https://purl.imsglobal.org/spec/lti/claim/resource_link";
    /// The roles.
    pub const ROLES: &str = "https://purl.imsglobal.org/spec/lti/claim/roles";
    /// The context.
    pub const CONTEXT: &str = "https://purl.imsglobal.org/spec/lti/claim/context";
    /// The custom parameters.
    pub const CUSTOM: &str = "https://purl.imsglobal.org/spec/lti/claim/custom";
    /// The LIS claim.
    pub const LIS: &str = "https://purl.imsglobal.org/spec/lti/claim/lis";
    /// The Deep Linking settings.
    pub const DEEP_LINKING_SETTINGS: &str =
        "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings";
    /// The Deep Linking response's items.
    pub const CONTENT_ITEMS: &str = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items";
    /// The Deep Linking response's data.
    pub const DATA: &str = "https://purl.imsglobal.org/spec/lti-dl/claim/data";
}

/// The message types.
const RESOURCE_LINK_REQUEST: &str = "LtiResourceLinkRequest";
const DEEP_LINKING_REQUEST: &str = "LtiDeepLinkingRequest";

/// Checks the claims of a launch whose signature held against `platform`'s keys, with the
/// `nonce` its login sent (the caller took it once, with the state) and the clock at `now`,
/// and reads what the launch says.
pub fn check_launch(
    token: &IdToken,
    platform: &Platform,
    nonce: &str,
    now: Timestamp,
) -> Result<Launch, Refusal> {
    if token.issuer != platform.issuer {
        return Err(Refusal::WrongIssuer);
    }
    if !token.audiences.contains(&platform.client_id) {
        return Err(Refusal::WrongAudience);
    }
    let azp_fits = match (&token.authorized_party, token.audiences.len()) {
        (Some(azp), _) => *azp == platform.client_id,
        (None, n) => n == 1,
    };
    if !azp_fits {
        return Err(Refusal::WrongAuthorizedParty);
    }
    let now = now.epoch_seconds();
    if token.expires.saturating_add(CLOCK_SKEW_SECS) < now {
        return Err(Refusal::Expired);
    }
    if token.issued.saturating_sub(CLOCK_SKEW_SECS) > now {
        return Err(Refusal::IssuedInFuture);
    }
    if token.nonce.as_deref() != Some(nonce) {
        return Err(Refusal::WrongNonce);
    }
    let deployment = token
        .deployment_id
        .as_deref()
        .ok_or(Refusal::Missing("deployment_id"))?;
    if !platform.deployments.iter().any(|d| d == deployment) {
        return Err(Refusal::UnknownDeployment);
    }
    if token.version.as_deref() != Some(VERSION) {
        return Err(Refusal::WrongVersion);
    }
    let message = match token.message_type.as_deref().unwrap_or_default() {
        RESOURCE_LINK_REQUEST => Message::ResourceLink {
            link: token
                .resource_link_id
                .clone()
                .filter(|l| !l.is_empty())
                .ok_or(Refusal::Missing("resource_link.id"))?,
            media: token
                .custom_media
                .as_deref()
                .map(|m| ObjectId::parse(m.trim()).map_err(|_| Refusal::BadMedia))
                .transpose()?,
        },
        DEEP_LINKING_REQUEST => {
            let settings = token
                .deep_linking
                .as_ref()
                .ok_or(Refusal::Missing("deep_linking_settings"))?;
            let return_url = settings
                .return_url
                .clone()
                .filter(|u| super::v1p1::is_http_url(u))
                .ok_or(Refusal::NoReturnUrl)?;
            Message::DeepLinking(DeepLinkingRequest {
                return_url,
                accepts_link: settings.accept_types.iter().any(|t| t == "ltiResourceLink"),
                data: settings.data.clone(),
                deployment_id: deployment.to_owned(),
            })
        }
        other => return Err(Refusal::MessageType(other.chars().take(64).collect())),
    };
    let person = Person {
        unique_id: unique_id(token, platform)?,
        first_name: name(token.given_name.as_deref()),
        last_name: name(token.family_name.as_deref()),
    };
    Ok(Launch {
        person,
        role: CourseRole::of(token.roles.iter().map(String::as_str)),
        course: Course::from_context(
            &platform.course_platform(),
            token.context_id.as_deref(),
            token.context_title.as_deref(),
            token.context_label.as_deref(),
        ),
        message,
    })
}

/// The person's uniqueId from the platform's configured claim.
fn unique_id(token: &IdToken, platform: &Platform) -> Result<UniqueId, Refusal> {
    let claim = &platform.unique_id_claim;
    let value = match claim {
        UniqueIdClaim::Subject => token
            .subject
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| format!("{}:{s}", platform.client_id)),
        UniqueIdClaim::Named(name) => token
            .strings
            .get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty()),
    };
    value
        .and_then(|v| UniqueId::parse(&v).ok())
        .ok_or_else(|| Refusal::BadUser(claim.as_str().to_owned()))
}

/// One item of a Deep Linking response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentItem {
    /// An `ltiResourceLink` that launches `url` with the custom parameter `media`.
    ResourceLink {
        /// Its title.
        title: String,
        /// Where it launches (medialib's launch URL).
        url: String,
        /// The object.
        media: ObjectId,
        /// A still, when there is one.
        thumbnail: Option<String>,
    },
    /// An `html` item: a fragment that frames the player.
    Html {
        /// Its title.
        title: String,
        /// The fragment.
        html: String,
    },
}

/// The claims of a Deep Linking response (LTI Deep Linking 2.0 §4.2), for the adapter to sign
/// with medialib's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepLinkingResponse {
    /// `iss`: medialib's client id at the platform.
    pub issuer: String,
    /// `aud`: the platform.
    pub audience: String,
    /// `iat`.
    pub issued: i64,
    /// `exp`.
    pub expires: i64,
    /// `nonce`.
    pub nonce: String,
    /// The deployment the request named.
    pub deployment_id: String,
    /// The items picked.
    pub items: Vec<ContentItem>,
    /// The request's `data`, sent back.
    pub data: Option<String>,
}

/// The response to `request` from `platform` with `items`, at `now`, with a fresh `nonce`.
pub fn deep_linking_response(
    platform: &Platform,
    request: &DeepLinkingRequest,
    items: Vec<ContentItem>,
    nonce: &str,
    now: Timestamp,
) -> DeepLinkingResponse {
    let issued = now.epoch_seconds();
    DeepLinkingResponse {
        issuer: platform.client_id.clone(),
        audience: platform.issuer.clone(),
        issued,
        expires: issued.saturating_add(RESPONSE_LIFETIME_SECS),
        nonce: nonce.to_owned(),
        deployment_id: request.deployment_id.clone(),
        items,
        data: request.data.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OrgNamespace;

    const NOW: i64 = 1_800_000_000;

    fn platform() -> Platform {
        Platform {
            issuer: "https://moodle.example.edu".into(),
            client_id: "client-1".into(),
            deployments: vec!["1".into(), "2".into()],
            auth_url: "https://moodle.example.edu/mod/lti/auth.php".into(),
            token_url: "https://moodle.example.edu/mod/lti/token.php".into(),
            jwks_url: "https://moodle.example.edu/mod/lti/certs.php".into(),
            unique_id_claim: UniqueIdClaim::Subject,
        }
    }

    fn token() -> IdToken {
        IdToken {
            issuer: "https://moodle.example.edu".into(),
            audiences: vec!["client-1".into()],
            expires: NOW + 300,
            issued: NOW - 5,
            nonce: Some("n-1".into()),
            subject: Some("42".into()),
            message_type: Some("LtiResourceLinkRequest".into()),
            version: Some("1.3.0".into()),
            deployment_id: Some("2".into()),
            resource_link_id: Some("rl-9".into()),
            roles: vec!["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner".into()],
            context_id: Some("c-7".into()),
            context_title: Some("Biology 101".into()),
            given_name: Some("Ada".into()),
            family_name: Some("Lovelace".into()),
            ..IdToken::default()
        }
    }

    fn check(token: &IdToken) -> Result<Launch, Refusal> {
        check_launch(
            token,
            &platform(),
            "n-1",
            Timestamp::from_epoch_seconds(NOW),
        )
    }

    #[test]
    fn a_resource_link_launch_names_the_person_course_and_link() {
        let launch = check(&token()).unwrap();
        assert_eq!(launch.person.unique_id.as_str(), "client-1:42");
        assert_eq!(launch.person.first_name.unwrap().as_str(), "Ada");
        assert_eq!(launch.role, CourseRole::Learner);
        let course = launch.course.unwrap();
        assert_eq!(
            course.key().platform(),
            "https://moodle.example.edu#client-1"
        );
        assert_eq!(course.key().context(), "c-7");
        assert_eq!(course.title().as_str(), "Biology 101");
        assert_eq!(
            launch.message,
            Message::ResourceLink {
                link: "rl-9".into(),
                media: None
            }
        );
        let media = ObjectId::generate(&OrgNamespace::from_random([1; 16]), [2; 16]);
        let with_media = IdToken {
            custom_media: Some(media.to_string()),
            ..token()
        };
        assert_eq!(
            check(&with_media).unwrap().message,
            Message::ResourceLink {
                link: "rl-9".into(),
                media: Some(media)
            }
        );
    }

    #[test]
    fn every_claim_is_checked() {
        let refused = |t: IdToken| check(&t).unwrap_err();
        assert_eq!(
            refused(IdToken {
                issuer: "https://evil.example".into(),
                ..token()
            }),
            Refusal::WrongIssuer
        );
        assert_eq!(
            refused(IdToken {
                audiences: vec!["other".into()],
                ..token()
            }),
            Refusal::WrongAudience
        );
        let two = vec!["other".into(), "client-1".into()];
        assert_eq!(
            refused(IdToken {
                audiences: two.clone(),
                ..token()
            }),
            Refusal::WrongAuthorizedParty
        );
        assert!(
            check(&IdToken {
                audiences: two.clone(),
                authorized_party: Some("client-1".into()),
                ..token()
            })
            .is_ok()
        );
        assert_eq!(
            refused(IdToken {
                audiences: two,
                authorized_party: Some("other".into()),
                ..token()
            }),
            Refusal::WrongAuthorizedParty
        );
        assert_eq!(
            refused(IdToken {
                expires: NOW - 61,
                ..token()
            }),
            Refusal::Expired
        );
        assert!(
            check(&IdToken {
                expires: NOW - 60,
                ..token()
            })
            .is_ok(),
            "within the skew"
        );
        assert_eq!(
            refused(IdToken {
                issued: NOW + 61,
                ..token()
            }),
            Refusal::IssuedInFuture
        );
        assert_eq!(
            refused(IdToken {
                nonce: Some("n-2".into()),
                ..token()
            }),
            Refusal::WrongNonce
        );
        assert_eq!(
            refused(IdToken {
                nonce: None,
                ..token()
            }),
            Refusal::WrongNonce
        );
        assert_eq!(
            refused(IdToken {
                deployment_id: Some("3".into()),
                ..token()
            }),
            Refusal::UnknownDeployment
        );
        assert_eq!(
            refused(IdToken {
                deployment_id: None,
                ..token()
            }),
            Refusal::Missing("deployment_id")
        );
        assert_eq!(
            refused(IdToken {
                version: Some("1.1".into()),
                ..token()
            }),
            Refusal::WrongVersion
        );
        assert_eq!(
            refused(IdToken {
                message_type: Some("LtiSubmissionReviewRequest".into()),
                ..token()
            }),
            Refusal::MessageType("LtiSubmissionReviewRequest".into())
        );
        assert_eq!(
            refused(IdToken {
                resource_link_id: None,
                ..token()
            }),
            Refusal::Missing("resource_link.id")
        );
        assert_eq!(
            refused(IdToken {
                subject: None,
                ..token()
            }),
            Refusal::BadUser("sub".into())
        );
        assert_eq!(
            refused(IdToken {
                custom_media: Some("x".into()),
                ..token()
            }),
            Refusal::BadMedia
        );
    }

    #[test]
    fn a_configured_claim_names_the_person_as_the_sso_does() {
        let mut p = platform();
        p.unique_id_claim = UniqueIdClaim::parse("email").unwrap();
        let mut t = token();
        t.strings.insert("email".into(), "ada@example.edu".into());
        let launch = check_launch(&t, &p, "n-1", Timestamp::from_epoch_seconds(NOW)).unwrap();
        assert_eq!(launch.person.unique_id.as_str(), "ada@example.edu");
        t.strings.clear();
        assert_eq!(
            check_launch(&t, &p, "n-1", Timestamp::from_epoch_seconds(NOW)).unwrap_err(),
            Refusal::BadUser("email".into())
        );
        assert_eq!(UniqueIdClaim::parse("sub"), Some(UniqueIdClaim::Subject));
        assert_eq!(UniqueIdClaim::parse(" "), None);
        assert_eq!(UniqueIdClaim::parse("a b"), None);
    }

    #[test]
    fn a_deep_linking_request_is_read_and_answered() {
        let t = IdToken {
            message_type: Some("LtiDeepLinkingRequest".into()),
            resource_link_id: None,
            roles: vec!["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor".into()],
            deep_linking: Some(DeepLinkingSettings {
                return_url: Some(
                    "https://moodle.example.edu/mod/lti/contentitem_return.php".into(),
                ),
                accept_types: vec!["ltiResourceLink".into(), "html".into()],
                accept_multiple: true,
                data: Some("opaque".into()),
            }),
            ..token()
        };
        let launch = check(&t).unwrap();
        assert_eq!(launch.role, CourseRole::Teacher);
        let Message::DeepLinking(request) = launch.message else {
            panic!("not deep linking")
        };
        assert!(request.accepts_link);
        assert_eq!(request.deployment_id, "2");
        let media = ObjectId::generate(&OrgNamespace::from_random([1; 16]), [3; 16]);
        let item = ContentItem::ResourceLink {
            title: "Cells".into(),
            url: "https://media.example.edu/api/lti/launch".into(),
            media,
            thumbnail: None,
        };
        let response = deep_linking_response(
            &platform(),
            &request,
            vec![item.clone()],
            "r-1",
            Timestamp::from_epoch_seconds(NOW),
        );
        assert_eq!(response.issuer, "client-1");
        assert_eq!(response.audience, "https://moodle.example.edu");
        assert_eq!(response.expires, NOW + RESPONSE_LIFETIME_SECS);
        assert_eq!(response.deployment_id, "2");
        assert_eq!(response.items, vec![item]);
        assert_eq!(response.data.as_deref(), Some("opaque"));

        let no_return = IdToken {
            deep_linking: Some(DeepLinkingSettings {
                return_url: Some("javascript:x".into()),
                ..DeepLinkingSettings::default()
            }),
            ..t.clone()
        };
        assert_eq!(check(&no_return).unwrap_err(), Refusal::NoReturnUrl);
        let no_settings = IdToken {
            deep_linking: None,
            ..t
        };
        assert_eq!(
            check(&no_settings).unwrap_err(),
            Refusal::Missing("deep_linking_settings")
        );
    }

    #[test]
    fn a_registration_is_checked_option_by_option() {
        let ok = platform().checked().unwrap();
        assert_eq!(ok.deployments, ["1", "2"]);
        let twice = Platform {
            deployments: vec!["2".into(), "1".into(), "2".into()],
            ..platform()
        };
        assert_eq!(twice.checked().unwrap().deployments, ["1", "2"]);
        let field = |p: Platform| p.checked().unwrap_err().field;
        assert_eq!(
            field(Platform {
                issuer: "moodle".into(),
                ..platform()
            }),
            "--issuer"
        );
        assert_eq!(
            field(Platform {
                auth_url: "ftp://x/".into(),
                ..platform()
            }),
            "--auth-url"
        );
        assert_eq!(
            field(Platform {
                token_url: String::new(),
                ..platform()
            }),
            "--token-url"
        );
        assert_eq!(
            field(Platform {
                jwks_url: "https://".into(),
                ..platform()
            }),
            "--jwks-url"
        );
        assert_eq!(
            field(Platform {
                client_id: String::new(),
                ..platform()
            }),
            "--client-id"
        );
        assert_eq!(
            field(Platform {
                deployments: vec![],
                ..platform()
            }),
            "--deployment-id"
        );
        assert_eq!(
            field(Platform {
                deployments: vec!["a\nb".into()],
                ..platform()
            }),
            "--deployment-id"
        );
    }

    #[test]
    fn a_login_initiation_is_answered_with_an_authentication_request() {
        let base = "https://media.example.edu";
        let params: Vec<(String, String)> = [
            ("iss", "https://moodle.example.edu"),
            ("login_hint", "u42"),
            (
                "target_link_uri",
                "https://media.example.edu/api/lti/launch",
            ),
            ("lti_message_hint", "m-1"),
            ("client_id", "client-1"),
            ("lti_deployment_id", "2"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        let init = LoginInitiation::parse(&params, base).unwrap();
        assert_eq!(init.client_id.as_deref(), Some("client-1"));
        let query = init.authentication_request(
            &platform(),
            "https://media.example.edu/api/lti/launch",
            "s-1",
            "n-1",
        );
        let get = |n: &str| query.iter().find(|(k, _)| *k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("response_type"), Some("id_token"));
        assert_eq!(get("response_mode"), Some("form_post"));
        assert_eq!(get("scope"), Some("openid"));
        assert_eq!(get("prompt"), Some("none"));
        assert_eq!(get("client_id"), Some("client-1"));
        assert_eq!(get("login_hint"), Some("u42"));
        assert_eq!(get("lti_message_hint"), Some("m-1"));
        assert_eq!((get("state"), get("nonce")), (Some("s-1"), Some("n-1")));

        let without = |name: &str| {
            let p: Vec<_> = params.iter().filter(|(n, _)| n != name).cloned().collect();
            LoginInitiation::parse(&p, base)
        };
        assert_eq!(without("iss").unwrap_err(), Refusal::Missing("iss"));
        assert_eq!(
            without("login_hint").unwrap_err(),
            Refusal::Missing("login_hint")
        );
        assert_eq!(
            without("target_link_uri").unwrap_err(),
            Refusal::Missing("target_link_uri")
        );
        assert!(without("client_id").is_ok());
        let mut foreign = params.clone();
        foreign[2].1 = "https://evil.example/launch".into();
        assert_eq!(
            LoginInitiation::parse(&foreign, base).unwrap_err(),
            Refusal::ForeignTarget
        );
    }
}
