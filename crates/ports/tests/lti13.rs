//! The LTI 1.3 use cases on the in-memory store, with a stand-in for the cryptography (the
//! real one, `LtiCrypto`, is tested with real keys in adapters-sso): the login keeps a state
//! and nonce, the launch takes them once and lets in only what the domain accepts, a teacher's
//! Deep Linking request makes the course library, medialib's keys rotate. No database:
//! `cargo test -p medialib-ports`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use medialib_adapters_memory::testing::Harness;
use medialib_domain::lti::CourseRole;
use medialib_domain::lti::v1p3::{
    ContentItem, DeepLinkingResponse, DeepLinkingSettings, IdToken, Platform, Refusal,
    UniqueIdClaim,
};
use medialib_domain::{ObjectId, PermissionLevel, Secret, UniqueId};
use medialib_ports::services::lti::{AuthenticationRequest, LaunchNext, Lti13Failed, LtiLaunch};
use medialib_ports::{IdTokenRefusal, KeyError, LtiTokens, PublicJwk, ToolKey};

const ISSUER: &str = "https://lms.example.edu";
const TEACHER: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor";
const LEARNER: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner";

/// Stands in for the cryptography: an id_token is a name the test gave its claims; keys are
/// numbered; a "signature" shows what was signed with which key.
#[derive(Default)]
struct Tokens {
    issued: Mutex<HashMap<String, IdToken>>,
    keys_made: Mutex<u32>,
}

impl LtiTokens for Tokens {
    fn generate_key(&self) -> Result<Secret, KeyError> {
        let mut n = self.keys_made.lock().unwrap();
        *n += 1;
        Ok(Secret::new(format!("private-{n}")))
    }
    fn public_jwk(&self, key: &ToolKey) -> Result<PublicJwk, KeyError> {
        Ok(PublicJwk {
            kid: key.kid.clone(),
            n: format!("public of {}", key.private_key.expose()),
            e: "AQAB".into(),
        })
    }
    fn sign(&self, key: &ToolKey, response: &DeepLinkingResponse) -> Result<String, KeyError> {
        Ok(format!("{}|{response:?}", key.kid))
    }
    fn read_id_token(&self, platform: &Platform, token: &str) -> Result<IdToken, IdTokenRefusal> {
        assert!(platform.jwks_url.ends_with("/certs"));
        self.issued
            .lock()
            .unwrap()
            .get(token)
            .cloned()
            .ok_or(IdTokenRefusal::BadSignature)
    }
}

struct Lms {
    h: Harness,
    tokens: Arc<Tokens>,
}

fn platform(client_id: &str) -> Platform {
    Platform {
        issuer: ISSUER.into(),
        client_id: client_id.into(),
        deployments: vec!["d1".into()],
        auth_url: format!("{ISSUER}/auth"),
        token_url: format!("{ISSUER}/token"),
        jwks_url: format!("{ISSUER}/certs"),
        unique_id_claim: UniqueIdClaim::Subject,
    }
}

fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn query(request: &AuthenticationRequest, name: &str) -> String {
    request
        .query
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} in {request:?}"))
}

impl Lms {
    fn new() -> Self {
        let mut h = Harness::new();
        let tokens = Arc::new(Tokens::default());
        h.services = h.services.clone().with_lti_tokens(tokens.clone());
        h.services.lti().add_platform(platform("tool-1")).unwrap();
        Self { h, tokens }
    }

    fn login(&self, extra: &[(&str, &str)]) -> Result<AuthenticationRequest, Lti13Failed> {
        let mut p = params(&[
            ("iss", ISSUER),
            ("login_hint", "u-42"),
            (
                "target_link_uri",
                "https://media.example.edu/api/lti/launch",
            ),
        ]);
        p.extend(params(extra));
        self.h.services.lti().login_v1p3(&p)
    }

    /// The platform's id_token for a login: `sub` with `roles`, in course c-7; `edit` changes it.
    fn token(&self, request: &AuthenticationRequest, sub: &str, role: &str, deep: bool) -> IdToken {
        let now = self.h.now().epoch_seconds();
        IdToken {
            issuer: ISSUER.into(),
            audiences: vec![query(request, "client_id")],
            expires: now + 300,
            issued: now,
            nonce: Some(query(request, "nonce")),
            subject: Some(sub.into()),
            message_type: Some(
                if deep {
                    "LtiDeepLinkingRequest"
                } else {
                    "LtiResourceLinkRequest"
                }
                .into(),
            ),
            version: Some("1.3.0".into()),
            deployment_id: Some("d1".into()),
            resource_link_id: Some("rl-1".into()),
            roles: vec![role.into()],
            context_id: Some("c-7".into()),
            context_title: Some("Biology".into()),
            given_name: Some("Ada".into()),
            family_name: Some("Lovelace".into()),
            deep_linking: deep.then(|| DeepLinkingSettings {
                return_url: Some(format!("{ISSUER}/deep-link-return")),
                accept_types: vec!["ltiResourceLink".into()],
                accept_multiple: false,
                data: Some("opaque".into()),
            }),
            ..IdToken::default()
        }
    }

    /// Posts `token` (registered under a fresh name) with `state`.
    fn launch(&self, state: &str, token: IdToken) -> Result<LtiLaunch, Lti13Failed> {
        let name = format!("token-{}", self.tokens.issued.lock().unwrap().len());
        self.tokens
            .issued
            .lock()
            .unwrap()
            .insert(name.clone(), token);
        self.h.services.lti().launch_v1p3(state, &name)
    }

    /// A whole login and launch by `sub` with `role`.
    fn visit(&self, sub: &str, role: &str, deep: bool) -> Result<LtiLaunch, Lti13Failed> {
        let request = self.login(&[]).unwrap();
        let token = self.token(&request, sub, role, deep);
        self.launch(&query(&request, "state"), token)
    }
}

#[test]
fn the_login_sends_the_browser_to_the_platform_with_a_fresh_state_and_nonce() {
    let lms = Lms::new();
    let request = lms
        .login(&[("lti_message_hint", "rl-1"), ("lti_deployment_id", "d1")])
        .unwrap();
    assert_eq!(request.url, format!("{ISSUER}/auth"));
    for (name, value) in [
        ("scope", "openid"),
        ("response_type", "id_token"),
        ("response_mode", "form_post"),
        ("prompt", "none"),
        ("client_id", "tool-1"),
        ("login_hint", "u-42"),
        ("lti_message_hint", "rl-1"),
    ] {
        assert_eq!(query(&request, name), value, "{name}");
    }
    assert!(query(&request, "redirect_uri").ends_with("/api/lti/launch"));
    let again = lms.login(&[]).unwrap();
    for name in ["state", "nonce"] {
        assert_eq!(query(&request, name).len(), 64, "256 bits in hex");
        assert_ne!(query(&request, name), query(&again, name));
    }
    assert_ne!(query(&request, "state"), query(&request, "nonce"));
}

#[test]
fn logins_that_name_no_registration_are_refused() {
    let lms = Lms::new();
    let refused = |p: &[(&str, &str)]| lms.h.services.lti().login_v1p3(&params(p)).unwrap_err();
    assert_eq!(
        refused(&[
            ("iss", "https://other.example.edu"),
            ("login_hint", "u"),
            (
                "target_link_uri",
                "https://media.example.edu/api/lti/launch"
            )
        ]),
        Lti13Failed::Refused(Refusal::UnknownPlatform)
    );
    assert_eq!(
        lms.login(&[("client_id", "tool-2")]).unwrap_err(),
        Lti13Failed::Refused(Refusal::UnknownPlatform)
    );
    assert_eq!(
        lms.login(&[("lti_deployment_id", "d9")]).unwrap_err(),
        Lti13Failed::Refused(Refusal::UnknownDeployment)
    );
    assert_eq!(
        refused(&[
            ("iss", ISSUER),
            ("login_hint", "u"),
            ("target_link_uri", "https://evil.example/api/lti/launch")
        ]),
        Lti13Failed::Refused(Refusal::ForeignTarget)
    );
    assert_eq!(
        refused(&[
            ("iss", ISSUER),
            ("target_link_uri", "https://media.example.edu/")
        ]),
        Lti13Failed::Refused(Refusal::Missing("login_hint"))
    );
    // Two registrations with one issuer: the login must say which.
    lms.h
        .services
        .lti()
        .add_platform(platform("tool-2"))
        .unwrap();
    assert_eq!(lms.login(&[]).unwrap_err(), Lti13Failed::AmbiguousPlatform);
    assert_eq!(
        query(&lms.login(&[("client_id", "tool-2")]).unwrap(), "client_id"),
        "tool-2"
    );
}

#[test]
fn a_teachers_deep_linking_launch_makes_the_course_library_and_opens_the_picker() {
    let lms = Lms::new();
    let launch = lms.visit("7", TEACHER, true).unwrap();
    assert_eq!(launch.role, CourseRole::Teacher);
    assert_eq!(
        launch.session.user.unique_id,
        UniqueId::parse("tool-1:7").unwrap()
    );
    let library = launch.course_library.expect("a teacher's launch makes it");
    assert_eq!(
        lms.h
            .store
            .object(library)
            .unwrap()
            .unwrap()
            .fields()
            .title
            .as_str(),
        "Biology"
    );
    assert_eq!(
        lms.h.level(&launch.session.user, library),
        PermissionLevel::Admin
    );
    let LaunchNext::DeepLink(link) = &launch.next else {
        panic!("{:?}", launch.next)
    };
    assert_eq!(
        link.request.return_url,
        format!("{ISSUER}/deep-link-return")
    );
    assert!(link.request.accepts_link);

    // The pick is signed with medialib's newest key, one response per item, with a fresh nonce.
    let media = ObjectId::parse("d1d4a5c2-0000-5000-8000-000000000001").unwrap();
    let item = ContentItem::ResourceLink {
        title: "Lecture".into(),
        url: "https://media.example.edu/api/lti/launch".into(),
        media,
        thumbnail: None,
    };
    let signed = lms
        .h
        .services
        .lti()
        .sign_deep_links(link, vec![item.clone(), item])
        .unwrap();
    assert_eq!(signed.len(), 2);
    let kid = lms.h.services.lti().jwks().unwrap()[0].kid.clone();
    for jwt in &signed {
        assert!(jwt.starts_with(&format!("{kid}|")), "{jwt}");
        assert!(jwt.contains("issuer: \"tool-1\""), "{jwt}");
        assert!(jwt.contains(&format!("audience: \"{ISSUER}\"")), "{jwt}");
        assert!(jwt.contains("deployment_id: \"d1\""), "{jwt}");
        assert!(jwt.contains("data: Some(\"opaque\")"), "{jwt}");
    }
    assert_ne!(signed[0], signed[1], "each response has its own nonce");

    // A learner of the course then views it; their link opens the course's media.
    let learner = lms.visit("8", LEARNER, false).unwrap();
    assert_eq!(learner.course_library, Some(library));
    assert_eq!(
        lms.h.level(&learner.session.user, library),
        PermissionLevel::View
    );
    assert!(matches!(learner.next, LaunchNext::Library));
}

#[test]
fn a_learner_may_not_open_the_picker_and_makes_no_library() {
    let lms = Lms::new();
    assert_eq!(
        lms.visit("8", LEARNER, true).unwrap_err(),
        Lti13Failed::LearnerMayNotPick
    );
    let launch = lms.visit("8", LEARNER, false).unwrap();
    assert_eq!(
        launch.course_library, None,
        "only a teacher's launch makes it"
    );
}

#[test]
fn a_state_is_taken_once_and_lapses_after_ten_minutes() {
    let lms = Lms::new();
    let request = lms.login(&[]).unwrap();
    let state = query(&request, "state");
    let token = lms.token(&request, "7", TEACHER, false);
    assert!(lms.launch(&state, token.clone()).is_ok());
    assert_eq!(
        lms.launch(&state, token).unwrap_err(),
        Lti13Failed::UnknownState,
        "the same state twice"
    );
    assert_eq!(
        lms.launch("made-up", lms.token(&request, "7", TEACHER, false))
            .unwrap_err(),
        Lti13Failed::UnknownState
    );

    let request = lms.login(&[]).unwrap();
    lms.h.advance(601);
    assert_eq!(
        lms.launch(
            &query(&request, "state"),
            lms.token(&request, "7", TEACHER, false)
        )
        .unwrap_err(),
        Lti13Failed::UnknownState
    );
    // Positive control: within the ten minutes it works.
    let request = lms.login(&[]).unwrap();
    lms.h.advance(599);
    let token = lms.token(&request, "7", TEACHER, false);
    assert!(lms.launch(&query(&request, "state"), token).is_ok());
}

#[test]
fn a_token_for_another_login_or_a_bad_signature_is_refused_and_spends_the_state() {
    let lms = Lms::new();
    let first = lms.login(&[]).unwrap();
    let second = lms.login(&[]).unwrap();
    // The nonce of the first login with the state of the second.
    let crossed = lms.token(&first, "7", TEACHER, false);
    assert_eq!(
        lms.launch(&query(&second, "state"), crossed).unwrap_err(),
        Lti13Failed::Refused(Refusal::WrongNonce)
    );
    let state = query(&first, "state");
    assert_eq!(
        lms.h
            .services
            .lti()
            .launch_v1p3(&state, "not issued")
            .unwrap_err(),
        Lti13Failed::Token(IdTokenRefusal::BadSignature)
    );
    assert_eq!(
        lms.launch(&state, lms.token(&first, "7", TEACHER, false))
            .unwrap_err(),
        Lti13Failed::UnknownState,
        "a refused launch spent its state: the login starts again"
    );
    // The domain's checks apply: a deployment the platform did not register.
    let request = lms.login(&[]).unwrap();
    let mut token = lms.token(&request, "7", TEACHER, false);
    token.deployment_id = Some("d9".into());
    assert_eq!(
        lms.launch(&query(&request, "state"), token).unwrap_err(),
        Lti13Failed::Refused(Refusal::UnknownDeployment)
    );
}

#[test]
fn keys_are_made_on_first_use_rotated_and_the_newest_two_published() {
    let lms = Lms::new();
    let lti = lms.h.services.lti();
    let first = lti.jwks().unwrap();
    assert_eq!(first.len(), 1, "the first call makes a key");
    assert_eq!(lti.jwks().unwrap(), first, "and keeps it");
    let second = lti.rotate_key().unwrap();
    let third = lti.rotate_key().unwrap();
    let published: Vec<String> = lti.jwks().unwrap().into_iter().map(|k| k.kid).collect();
    assert_eq!(
        published,
        [third.kid.clone(), second.kid],
        "newest first, two kept"
    );
    assert!(third.created_at > first_created(&lms, &published[1]));
    // The newest signs.
    let request = lms.login(&[]).unwrap();
    let launch = lms
        .launch(
            &query(&request, "state"),
            lms.token(&request, "7", TEACHER, true),
        )
        .unwrap();
    let LaunchNext::DeepLink(link) = launch.next else {
        panic!()
    };
    let item = ContentItem::Html {
        title: "t".into(),
        html: "<p>".into(),
    };
    let jwt = lti.sign_deep_links(&link, vec![item]).unwrap().remove(0);
    assert!(jwt.starts_with(&format!("{}|", third.kid)));
}

fn first_created(lms: &Lms, kid: &str) -> medialib_domain::Timestamp {
    lms.h
        .store
        .lti_keys()
        .unwrap()
        .into_iter()
        .find(|k| k.kid == kid)
        .unwrap()
        .created_at
}
