//! LTI 1.3's cryptography (DECISIONS.md §8), an implementation of
//! [`medialib_ports::LtiTokens`]: medialib's RSA keys (made with `rsa`, kept as PKCS#8 PEM),
//! the RS256 signature of its Deep Linking responses (with `ring`, whose RSA signing is
//! constant-time), and the check of a platform's `id_token` (with `jsonwebtoken`) against the
//! keys the platform publishes at its `jwks_url`: fetched on first use, cached by URL for an
//! hour, and fetched again once when a token names a `kid` the cached set lacks (at most every
//! [`REFETCH_AFTER`], so that made-up `kid`s cannot make medialib hammer the platform).
//!
//! The claims are read here into the domain's [`IdToken`]; the domain checks them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use medialib_domain::Secret;
use medialib_domain::lti::v1p3::{
    ContentItem, DeepLinkingResponse, DeepLinkingSettings, IdToken, Platform, claim,
};
use medialib_ports::{IdTokenRefusal, KeyError, LtiTokens, PublicJwk, ToolKey};
use rsa::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _, LineEnding};
use rsa::traits::PublicKeyParts as _;
use serde_json::{Map, Value, json};

/// How long a fetched key set is used before it is fetched again.
const KEYS_TTL: Duration = Duration::from_secs(3600);
/// The least time between two fetches of one key set for an unknown `kid`.
pub const REFETCH_AFTER: Duration = Duration::from_secs(10);
/// The size of medialib's RSA keys, in bits.
const KEY_BITS: usize = 2048;
/// The longest key set read, in bytes.
const MAX_JWKS_BYTES: u64 = 1 << 20;

/// A platform's key set as last fetched.
struct Fetched {
    keys: JwkSet,
    at: Instant,
}

/// medialib's LTI 1.3 cryptography, with its cache of the platforms' key sets.
pub struct LtiCrypto {
    /// The least time between two fetches of one key set for an unknown `kid`.
    refetch_after: Duration,
    /// Built on first use, on a blocking thread (reqwest's blocking client must not be made
    /// on an async worker).
    http: OnceLock<Result<reqwest::blocking::Client, String>>,
    /// By `jwks_url`.
    cache: Mutex<HashMap<String, Fetched>>,
}

impl std::fmt::Debug for LtiCrypto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LtiCrypto").finish_non_exhaustive()
    }
}

impl Default for LtiCrypto {
    fn default() -> Self {
        Self::new()
    }
}

impl LtiCrypto {
    /// No key set fetched yet.
    pub fn new() -> Self {
        Self::with_refetch_after(REFETCH_AFTER)
    }

    /// Fetches a key set again for an unknown `kid` at most every `refetch_after` (tests
    /// shorten it).
    pub fn with_refetch_after(refetch_after: Duration) -> Self {
        Self {
            refetch_after,
            http: OnceLock::new(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The HTTP client for the platforms: no redirects followed (SSRF), bounded timeouts.
    fn http(&self) -> Result<&reqwest::blocking::Client, IdTokenRefusal> {
        self.http
            .get_or_init(crate::http::client)
            .as_ref()
            .map_err(|e| IdTokenRefusal::KeysUnavailable(format!("no HTTP client: {e}")))
    }

    /// Fetches the key set at `url`.
    fn fetch(&self, url: &str) -> Result<JwkSet, IdTokenRefusal> {
        use std::io::Read as _;
        let unavailable = |e: String| {
            tracing::warn!(url, error = %e, "cannot fetch an LTI platform's keys");
            IdTokenRefusal::KeysUnavailable(e)
        };
        let response = self
            .http()?
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .map_err(|e| unavailable(e.to_string()))?;
        if !response.status().is_success() {
            return Err(unavailable(format!("{url} answered {}", response.status())));
        }
        let mut body = Vec::new();
        response
            .take(MAX_JWKS_BYTES)
            .read_to_end(&mut body)
            .map_err(|e| unavailable(e.to_string()))?;
        serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("{url} is not a JSON Web Key Set: {e}")))
    }

    /// The key `kid` of the set at `url`: from the cache when it is there and fresh, else
    /// from the set fetched now (once).
    fn key(&self, url: &str, kid: &str) -> Result<DecodingKey, IdTokenRefusal> {
        let now = Instant::now();
        let decoding = |set: &JwkSet| {
            set.find(kid).map(|jwk| {
                DecodingKey::from_jwk(jwk).map_err(|e| {
                    IdTokenRefusal::KeysUnavailable(format!("key `{kid}` is not usable: {e}"))
                })
            })
        };
        {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(fetched) = cache.get(url) {
                let fresh = now.duration_since(fetched.at) < KEYS_TTL;
                if fresh && let Some(key) = decoding(&fetched.keys) {
                    return key;
                }
                if fresh && now.duration_since(fetched.at) < self.refetch_after {
                    return Err(IdTokenRefusal::UnknownKey(kid.to_owned()));
                }
            }
        }
        let keys = self.fetch(url)?;
        let key = decoding(&keys);
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(url.to_owned(), Fetched { keys, at: now });
        key.unwrap_or_else(|| Err(IdTokenRefusal::UnknownKey(kid.to_owned())))
    }
}

fn key_error(e: impl std::fmt::Display) -> KeyError {
    KeyError(e.to_string())
}

/// The RSA private key of `key`.
fn private_key(key: &ToolKey) -> Result<rsa::RsaPrivateKey, KeyError> {
    rsa::RsaPrivateKey::from_pkcs8_pem(key.private_key.expose()).map_err(key_error)
}

impl LtiTokens for LtiCrypto {
    fn generate_key(&self) -> Result<Secret, KeyError> {
        let key =
            rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, KEY_BITS).map_err(key_error)?;
        let pem = key.to_pkcs8_pem(LineEnding::LF).map_err(key_error)?;
        Ok(Secret::new(pem.as_str()))
    }

    fn public_jwk(&self, key: &ToolKey) -> Result<PublicJwk, KeyError> {
        let private = private_key(key)?;
        Ok(PublicJwk {
            kid: key.kid.clone(),
            n: B64.encode(private.n().to_bytes_be()),
            e: B64.encode(private.e().to_bytes_be()),
        })
    }

    fn sign(&self, key: &ToolKey, response: &DeepLinkingResponse) -> Result<String, KeyError> {
        let der = private_key(key)?.to_pkcs8_der().map_err(key_error)?;
        let pair = ring::signature::RsaKeyPair::from_pkcs8(der.as_bytes()).map_err(key_error)?;
        let header = json!({ "alg": "RS256", "typ": "JWT", "kid": key.kid });
        let input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(response_claims(response).to_string())
        );
        let mut signature = vec![0; pair.public().modulus_len()];
        pair.sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            input.as_bytes(),
            &mut signature,
        )
        .map_err(key_error)?;
        Ok(format!("{input}.{}", B64.encode(signature)))
    }

    fn read_id_token(
        &self,
        platform: &Platform,
        id_token: &str,
    ) -> Result<IdToken, IdTokenRefusal> {
        let header = jsonwebtoken::decode_header(id_token)
            .map_err(|e| IdTokenRefusal::Malformed(e.to_string()))?;
        if header.alg != Algorithm::RS256 {
            return Err(IdTokenRefusal::Algorithm(format!("{:?}", header.alg)));
        }
        let kid = header
            .kid
            .ok_or_else(|| IdTokenRefusal::Malformed("its header names no kid".into()))?;
        let key = self.key(&platform.jwks_url, &kid)?;
        // The signature only: the domain checks every claim, with this server's clock.
        let mut validation = Validation::new(Algorithm::RS256);
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let data = jsonwebtoken::decode::<Map<String, Value>>(id_token, &key, &validation)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => IdTokenRefusal::BadSignature,
                _ => IdTokenRefusal::Malformed(e.to_string()),
            })?;
        Ok(id_token_of(&data.claims))
    }
}

/// The string at `key` of `object`.
fn string(object: &Map<String, Value>, key: &str) -> Option<String> {
    object.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The object at `key` of `object`.
fn object<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    object.get(key).and_then(Value::as_object)
}

/// The strings of the array (or the one string) at `key`.
fn strings(object: &Map<String, Value>, key: &str) -> Vec<String> {
    match object.get(key) {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A NumericDate: whole seconds (a fraction is dropped); absent or not a number is 0, which
/// the domain refuses as expired.
fn seconds(object: &Map<String, Value>, key: &str) -> i64 {
    object
        .get(key)
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
        .unwrap_or(0)
}

/// The claims medialib reads, as the domain takes them.
fn id_token_of(claims: &Map<String, Value>) -> IdToken {
    let context = object(claims, claim::CONTEXT);
    let lis = object(claims, claim::LIS);
    let mut named: BTreeMap<String, String> = claims
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
        .collect();
    if let Some(sourcedid) = lis.and_then(|l| string(l, "person_sourcedid")) {
        named.insert("lis.person_sourcedid".into(), sourcedid);
    }
    IdToken {
        issuer: string(claims, "iss").unwrap_or_default(),
        audiences: strings(claims, "aud"),
        authorized_party: string(claims, "azp"),
        expires: seconds(claims, "exp"),
        issued: seconds(claims, "iat"),
        nonce: string(claims, "nonce"),
        subject: string(claims, "sub"),
        message_type: string(claims, claim::MESSAGE_TYPE),
        version: string(claims, claim::VERSION),
        deployment_id: string(claims, claim::DEPLOYMENT_ID),
        resource_link_id: object(claims, claim::RESOURCE_LINK).and_then(|l| string(l, "id")),
        roles: strings(claims, claim::ROLES),
        context_id: context.and_then(|c| string(c, "id")),
        context_label: context.and_then(|c| string(c, "label")),
        context_title: context.and_then(|c| string(c, "title")),
        custom_media: object(claims, claim::CUSTOM).and_then(|c| string(c, "media")),
        given_name: string(claims, "given_name"),
        family_name: string(claims, "family_name"),
        strings: named,
        deep_linking: object(claims, claim::DEEP_LINKING_SETTINGS).map(|s| DeepLinkingSettings {
            return_url: string(s, "deep_link_return_url"),
            accept_types: strings(s, "accept_types"),
            accept_multiple: s.get("accept_multiple").and_then(Value::as_bool) == Some(true),
            data: string(s, "data"),
        }),
    }
}

/// The claims of a Deep Linking response (LTI Deep Linking 2.0 §4.2).
fn response_claims(response: &DeepLinkingResponse) -> Value {
    let items: Vec<Value> = response
        .items
        .iter()
        .map(|item| match item {
            ContentItem::ResourceLink {
                title,
                url,
                media,
                thumbnail,
            } => {
                let mut link = json!({
                    "type": "ltiResourceLink",
                    "title": title,
                    "url": url,
                    "custom": { "media": media.to_string() },
                });
                if let Some(still) = thumbnail {
                    link["thumbnail"] = json!({ "url": still });
                }
                link
            }
            ContentItem::Html { title, html } => {
                json!({ "type": "html", "title": title, "html": html })
            }
        })
        .collect();
    let mut claims = json!({
        "iss": response.issuer,
        "aud": response.audience,
        "iat": response.issued,
        "exp": response.expires,
        "nonce": response.nonce,
        (claim::MESSAGE_TYPE): "LtiDeepLinkingResponse",
        (claim::VERSION): medialib_domain::lti::v1p3::VERSION,
        (claim::DEPLOYMENT_ID): response.deployment_id,
        (claim::CONTENT_ITEMS): items,
    });
    if let Some(data) = &response.data {
        claims[claim::DATA] = json!(data);
    }
    claims
}
