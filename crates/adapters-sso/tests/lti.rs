//! `LtiCrypto` against real keys and a real HTTP key set: medialib's signatures verify with
//! the public key it publishes; a platform's id_token is read only when its RS256 signature
//! holds against the platform's JWKS, which is fetched once, cached by `kid`, and fetched
//! again once for a `kid` it lacks.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use medialib_adapters_sso::LtiCrypto;
use medialib_domain::lti::v1p3::{
    ContentItem, DeepLinkingResponse, Platform, UniqueIdClaim, claim,
};
use medialib_domain::{ObjectId, Secret, Timestamp};
use medialib_ports::{IdTokenRefusal, LtiTokens, ToolKey};
use rsa::pkcs1::EncodeRsaPrivateKey as _;
use rsa::pkcs8::DecodePrivateKey as _;
use serde_json::{Value, json};

/// A JWKS endpoint on 127.0.0.1 that serves what `body` holds (or a 500 when `None`) and
/// counts the requests.
struct KeySet {
    url: String,
    body: Arc<Mutex<Option<String>>>,
    fetches: Arc<AtomicUsize>,
}

impl KeySet {
    fn serve(body: Option<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        let body = Arc::new(Mutex::new(body));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (body.clone(), fetches.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let answer = match served.lock().unwrap().clone() {
                    Some(json) => format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
                        json.len()
                    ),
                    None => "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
                };
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        Self { url, body, fetches }
    }

    fn set(&self, body: Option<String>) {
        *self.body.lock().unwrap() = body;
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// A platform's signing key: its id, its JWK and its encoding key.
struct PlatformKey {
    kid: String,
    jwk: Value,
    encoding: EncodingKey,
}

impl PlatformKey {
    fn new(crypto: &LtiCrypto, kid: &str) -> Self {
        let key = ToolKey {
            kid: kid.to_owned(),
            private_key: crypto.generate_key().unwrap(),
            created_at: Timestamp::from_epoch_seconds(0),
        };
        let public = crypto.public_jwk(&key).unwrap();
        let der = rsa::RsaPrivateKey::from_pkcs8_pem(key.private_key.expose())
            .unwrap()
            .to_pkcs1_der()
            .unwrap();
        Self {
            kid: kid.to_owned(),
            jwk: json!({ "kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid, "n": public.n, "e": public.e }),
            encoding: EncodingKey::from_rsa_der(der.as_bytes()),
        }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

fn jwks(keys: &[&PlatformKey]) -> String {
    json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() }).to_string()
}

fn platform(jwks_url: &str) -> Platform {
    Platform {
        issuer: "https://lms.example.edu".into(),
        client_id: "tool-1".into(),
        deployments: vec!["d1".into()],
        auth_url: "https://lms.example.edu/auth".into(),
        token_url: "https://lms.example.edu/token".into(),
        jwks_url: jwks_url.into(),
        unique_id_claim: UniqueIdClaim::Subject,
    }
}

fn launch_claims() -> Value {
    json!({
        "iss": "https://lms.example.edu",
        "aud": ["tool-1", "other"],
        "azp": "tool-1",
        "exp": 1_900_000_000,
        "iat": 1_800_000_000.7,
        "nonce": "n-1",
        "sub": "42",
        "given_name": "Ada",
        "family_name": "Lovelace",
        "email": "ada@example.edu",
        (claim::MESSAGE_TYPE): "LtiDeepLinkingRequest",
        (claim::VERSION): "1.3.0",
        (claim::DEPLOYMENT_ID): "d1",
        (claim::RESOURCE_LINK): { "id": "rl-1" },
        (claim::ROLES): ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"],
        (claim::CONTEXT): { "id": "c-7", "label": "BIO101", "title": "Biology" },
        (claim::CUSTOM): { "media": "d1d4a5c2-0000-5000-8000-000000000001" },
        (claim::LIS): { "person_sourcedid": "sis-42" },
        (claim::DEEP_LINKING_SETTINGS): {
            "deep_link_return_url": "https://lms.example.edu/dl",
            "accept_types": ["ltiResourceLink", "html"],
            "accept_multiple": true,
            "data": "opaque",
        },
    })
}

#[test]
fn a_platform_token_is_read_when_its_signature_holds() {
    let crypto = LtiCrypto::new();
    let key = PlatformKey::new(&crypto, "p1");
    let set = KeySet::serve(Some(jwks(&[&key])));
    let token = crypto
        .read_id_token(&platform(&set.url), &key.sign(&launch_claims()))
        .unwrap();
    assert_eq!(token.issuer, "https://lms.example.edu");
    assert_eq!(token.audiences, ["tool-1", "other"]);
    assert_eq!(token.authorized_party.as_deref(), Some("tool-1"));
    assert_eq!(
        (token.expires, token.issued),
        (1_900_000_000, 1_800_000_000)
    );
    assert_eq!(token.nonce.as_deref(), Some("n-1"));
    assert_eq!(token.subject.as_deref(), Some("42"));
    assert_eq!(token.message_type.as_deref(), Some("LtiDeepLinkingRequest"));
    assert_eq!(token.version.as_deref(), Some("1.3.0"));
    assert_eq!(token.deployment_id.as_deref(), Some("d1"));
    assert_eq!(token.resource_link_id.as_deref(), Some("rl-1"));
    assert_eq!(token.roles.len(), 1);
    assert_eq!(
        (
            token.context_id.as_deref(),
            token.context_label.as_deref(),
            token.context_title.as_deref()
        ),
        (Some("c-7"), Some("BIO101"), Some("Biology"))
    );
    assert_eq!(
        token.custom_media.as_deref(),
        Some("d1d4a5c2-0000-5000-8000-000000000001")
    );
    assert_eq!(
        token.strings.get("email").map(String::as_str),
        Some("ada@example.edu")
    );
    assert_eq!(
        token
            .strings
            .get("lis.person_sourcedid")
            .map(String::as_str),
        Some("sis-42")
    );
    let settings = token.deep_linking.unwrap();
    assert_eq!(
        settings.return_url.as_deref(),
        Some("https://lms.example.edu/dl")
    );
    assert_eq!(settings.accept_types, ["ltiResourceLink", "html"]);
    assert!(settings.accept_multiple);
    assert_eq!(settings.data.as_deref(), Some("opaque"));
    assert_eq!(set.fetches(), 1);
}

#[test]
fn the_key_set_is_cached_and_fetched_again_once_for_an_unknown_kid() {
    let crypto = LtiCrypto::with_refetch_after(Duration::ZERO);
    let (p1, p2) = (
        PlatformKey::new(&crypto, "p1"),
        PlatformKey::new(&crypto, "p2"),
    );
    let set = KeySet::serve(Some(jwks(&[&p1])));
    let platform = platform(&set.url);
    for _ in 0..3 {
        crypto
            .read_id_token(&platform, &p1.sign(&launch_claims()))
            .unwrap();
    }
    assert_eq!(set.fetches(), 1, "one fetch, then the cache");
    // The platform rotates: a token with the new kid makes one fetch, which finds it.
    set.set(Some(jwks(&[&p1, &p2])));
    crypto
        .read_id_token(&platform, &p2.sign(&launch_claims()))
        .unwrap();
    assert_eq!(set.fetches(), 2);
    crypto
        .read_id_token(&platform, &p2.sign(&launch_claims()))
        .unwrap();
    assert_eq!(set.fetches(), 2);
    // A kid the set does not have, even fetched again.
    let stranger = PlatformKey::new(&crypto, "p3");
    assert_eq!(
        crypto.read_id_token(&platform, &stranger.sign(&launch_claims())),
        Err(IdTokenRefusal::UnknownKey("p3".into()))
    );
    assert_eq!(set.fetches(), 3);
}

#[test]
fn unknown_kids_do_not_refetch_within_the_interval() {
    let crypto = LtiCrypto::new();
    let p1 = PlatformKey::new(&crypto, "p1");
    let set = KeySet::serve(Some(jwks(&[&p1])));
    let platform = platform(&set.url);
    crypto
        .read_id_token(&platform, &p1.sign(&launch_claims()))
        .unwrap();
    for kid in ["x1", "x2", "x3"] {
        let made_up = PlatformKey::new(&crypto, kid);
        assert_eq!(
            crypto.read_id_token(&platform, &made_up.sign(&launch_claims())),
            Err(IdTokenRefusal::UnknownKey(kid.into()))
        );
    }
    assert_eq!(set.fetches(), 1, "made-up kids within 10 s fetch nothing");
}

#[test]
fn forged_tampered_and_malformed_tokens_are_refused() {
    let crypto = LtiCrypto::new();
    let p1 = PlatformKey::new(&crypto, "p1");
    let set = KeySet::serve(Some(jwks(&[&p1])));
    let platform = platform(&set.url);
    let good = p1.sign(&launch_claims());
    // Positive control: the untouched token is read.
    assert!(crypto.read_id_token(&platform, &good).is_ok());

    // The claims changed after signing (a learner making themselves an instructor).
    let parts: Vec<&str> = good.split('.').collect();
    let mut claims = launch_claims();
    claims["sub"] = json!("1");
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        B64.encode(claims.to_string()),
        parts[2]
    );
    assert_eq!(
        crypto.read_id_token(&platform, &tampered),
        Err(IdTokenRefusal::BadSignature)
    );

    // Signed by another key that claims the platform's kid.
    let impostor = PlatformKey::new(&crypto, "p1");
    assert_eq!(
        crypto.read_id_token(&platform, &impostor.sign(&launch_claims())),
        Err(IdTokenRefusal::BadSignature)
    );

    // HS256 with the public key's text as the secret (the classic algorithm confusion).
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("p1".into());
    let hs = jsonwebtoken::encode(
        &header,
        &launch_claims(),
        &EncodingKey::from_secret(p1.jwk.to_string().as_bytes()),
    )
    .unwrap();
    assert!(matches!(
        crypto.read_id_token(&platform, &hs),
        Err(IdTokenRefusal::Algorithm(_))
    ));

    // alg none.
    let none = format!(
        "{}.{}.",
        B64.encode(r#"{"alg":"none","kid":"p1"}"#),
        B64.encode(launch_claims().to_string())
    );
    assert!(matches!(
        crypto.read_id_token(&platform, &none),
        Err(IdTokenRefusal::Malformed(_) | IdTokenRefusal::Algorithm(_))
    ));

    // No kid.
    let unnamed = jsonwebtoken::encode(
        &Header::new(Algorithm::RS256),
        &launch_claims(),
        &p1.encoding,
    )
    .unwrap();
    assert!(matches!(
        crypto.read_id_token(&platform, &unnamed),
        Err(IdTokenRefusal::Malformed(_))
    ));

    for garbage in ["", "a.b", "not a token", "a.b.c.d"] {
        assert!(
            matches!(
                crypto.read_id_token(&platform, garbage),
                Err(IdTokenRefusal::Malformed(_))
            ),
            "{garbage:?}"
        );
    }
}

#[test]
fn a_key_set_that_cannot_be_fetched_is_said_so() {
    let crypto = LtiCrypto::new();
    let p1 = PlatformKey::new(&crypto, "p1");
    let set = KeySet::serve(None);
    assert!(matches!(
        crypto.read_id_token(&platform(&set.url), &p1.sign(&launch_claims())),
        Err(IdTokenRefusal::KeysUnavailable(_))
    ));
    // Not JSON.
    set.set(Some("<html>".into()));
    let other = platform(&format!("{}?again", set.url));
    assert!(matches!(
        crypto.read_id_token(&other, &p1.sign(&launch_claims())),
        Err(IdTokenRefusal::KeysUnavailable(_))
    ));
    // Nobody listening.
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/jwks", listener.local_addr().unwrap())
    };
    assert!(matches!(
        crypto.read_id_token(&platform(&closed), &p1.sign(&launch_claims())),
        Err(IdTokenRefusal::KeysUnavailable(_))
    ));
}

#[test]
fn medialib_signs_deep_linking_responses_that_its_published_key_verifies() {
    let crypto = LtiCrypto::new();
    let key = ToolKey {
        kid: "k-1".into(),
        private_key: crypto.generate_key().unwrap(),
        created_at: Timestamp::from_epoch_seconds(0),
    };
    let media = ObjectId::parse("d1d4a5c2-0000-5000-8000-000000000001").unwrap();
    let response = DeepLinkingResponse {
        issuer: "tool-1".into(),
        audience: "https://lms.example.edu".into(),
        issued: 1_800_000_000,
        expires: 1_800_000_600,
        nonce: "r-1".into(),
        deployment_id: "d1".into(),
        items: vec![
            ContentItem::ResourceLink {
                title: "Lecture 1".into(),
                url: "https://media.example.edu/api/lti/launch".into(),
                media,
                thumbnail: Some("https://media.example.edu/still.jpg".into()),
            },
            ContentItem::Html {
                title: "Lecture 2".into(),
                html: "<iframe></iframe>".into(),
            },
        ],
        data: Some("opaque".into()),
    };
    let jwt = crypto.sign(&key, &response).unwrap();
    let public = crypto.public_jwk(&key).unwrap();
    assert_eq!(public.kid, "k-1");
    assert_eq!(public.e, "AQAB");
    let header = jsonwebtoken::decode_header(&jwt).unwrap();
    assert_eq!(
        (header.alg, header.kid.as_deref()),
        (Algorithm::RS256, Some("k-1"))
    );
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    validation.set_audience(&["https://lms.example.edu"]);
    let claims = jsonwebtoken::decode::<Value>(
        &jwt,
        &DecodingKey::from_rsa_components(&public.n, &public.e).unwrap(),
        &validation,
    )
    .unwrap()
    .claims;
    assert_eq!(claims["iss"], "tool-1");
    assert_eq!(claims["nonce"], "r-1");
    assert_eq!(claims[claim::MESSAGE_TYPE], "LtiDeepLinkingResponse");
    assert_eq!(claims[claim::VERSION], "1.3.0");
    assert_eq!(claims[claim::DEPLOYMENT_ID], "d1");
    assert_eq!(claims[claim::DATA], "opaque");
    let items = &claims[claim::CONTENT_ITEMS];
    assert_eq!(items[0]["type"], "ltiResourceLink");
    assert_eq!(items[0]["custom"]["media"], media.to_string());
    assert_eq!(
        items[0]["thumbnail"]["url"],
        "https://media.example.edu/still.jpg"
    );
    assert_eq!(items[1]["type"], "html");
    // Another key does not verify it (the check above is not vacuous).
    let other = ToolKey {
        kid: "k-2".into(),
        private_key: crypto.generate_key().unwrap(),
        created_at: Timestamp::from_epoch_seconds(0),
    };
    let other = crypto.public_jwk(&other).unwrap();
    assert!(
        jsonwebtoken::decode::<Value>(
            &jwt,
            &DecodingKey::from_rsa_components(&other.n, &other.e).unwrap(),
            &validation,
        )
        .is_err()
    );
}

#[test]
fn a_broken_stored_key_is_an_error_not_a_panic() {
    let crypto = LtiCrypto::new();
    let broken = ToolKey {
        kid: "k".into(),
        private_key: Secret::new("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n"),
        created_at: Timestamp::from_epoch_seconds(0),
    };
    assert!(crypto.public_jwk(&broken).is_err());
}
