//! OAuth 1.0a request signatures (RFC 5849 §3.4), HMAC-SHA1 only: how an LTI 1.1 consumer
//! signs a launch, and how medialib signs the ContentItemSelection it sends back
//! (DECISIONS.md §8).
//!
//! A launch goes through two types: [`SignedRequest`] (parsed, not yet trusted: only its
//! consumer key may be read, to look up the secret) and [`VerifiedRequest`] (signature and
//! timestamp checked), which only [`SignedRequest::verify`] makes. Whether the nonce was seen
//! before is the store's to say: [`VerifiedRequest::nonce_kept_until`] is how long it must
//! remember it.

use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac as _};
use sha1::Sha1;
use subtle::ConstantTimeEq as _;

use crate::{Secret, Timestamp};

/// How far a request's `oauth_timestamp` may be from the server's clock, either way
/// (15 minutes: Moodle's Warpwire plugin signs its launches 600 s in the future).
pub const TIMESTAMP_WINDOW_SECS: i64 = 15 * 60;

/// The longest `oauth_nonce` accepted (Moodle sends 32 hexadecimal digits, oauthlib 30 digits).
pub const MAX_NONCE_CHARS: usize = 128;

/// Why a signed request is refused. Each says what a platform's administrator must fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuth1Refusal {
    /// A protocol parameter is missing.
    #[error("the request is not signed with OAuth 1.0a: `{0}` is missing")]
    Missing(&'static str),
    /// A protocol parameter appears more than once (RFC 5849 §3.1).
    #[error("`{0}` appears more than once")]
    Repeated(String),
    /// A signature method other than HMAC-SHA1.
    #[error("the signature method must be HMAC-SHA1")]
    UnsupportedMethod,
    /// An `oauth_version` other than `1.0`.
    #[error("`oauth_version` must be 1.0")]
    UnsupportedVersion,
    /// A timestamp that is not a whole number of seconds.
    #[error("`oauth_timestamp` is not a whole number of seconds since 1970")]
    BadTimestamp,
    /// An empty, overlong or unprintable nonce.
    #[error("`oauth_nonce` must be 1 to 128 printable ASCII characters")]
    BadNonce,
    /// A signature that is not base64 of 20 bytes.
    #[error("`oauth_signature` is not base64 of an HMAC-SHA1")]
    MalformedSignature,
    /// The URL the request is checked against is not an absolute `http(s)` URL.
    #[error("the launch URL is not an absolute http or https URL")]
    BadUrl,
    /// The signature does not match the request and the consumer's secret.
    #[error(
        "the signature does not match: the consumer's key and secret, or the launch URL, differ from what medialib has"
    )]
    BadSignature,
    /// The timestamp is outside the window.
    #[error(
        "the request was signed {skew} s from this server's clock; at most {TIMESTAMP_WINDOW_SECS} s either way are accepted (check both clocks)"
    )]
    Stale {
        /// The timestamp minus the server's clock, in seconds.
        skew: i64,
    },
}

/// The names a request must carry.
const CONSUMER_KEY: &str = "oauth_consumer_key";
const SIGNATURE: &str = "oauth_signature";
const SIGNATURE_METHOD: &str = "oauth_signature_method";
const TIMESTAMP: &str = "oauth_timestamp";
const NONCE: &str = "oauth_nonce";
const VERSION: &str = "oauth_version";

/// A request that carries an OAuth 1.0a signature, parsed but not yet trusted.
#[derive(Debug, Clone)]
pub struct SignedRequest {
    method: String,
    uri: BaseUri,
    params: Vec<(String, String)>,
    consumer_key: String,
    nonce: String,
    timestamp: i64,
    signature: [u8; 20],
}

impl SignedRequest {
    /// Parses a request: `method` as sent, `url` as the consumer addressed it (medialib's
    /// public base URL and the path; a query or fragment is ignored), `params` every
    /// parameter of the query and the form body, decoded, in any order.
    pub fn parse(
        method: &str,
        url: &str,
        params: Vec<(String, String)>,
    ) -> Result<Self, OAuth1Refusal> {
        let uri = BaseUri::parse(url)?;
        for (i, (name, _)) in params.iter().enumerate() {
            if name.starts_with("oauth_") && params[..i].iter().any(|(n, _)| n == name) {
                return Err(OAuth1Refusal::Repeated(name.chars().take(64).collect()));
            }
        }
        let one = |name: &'static str| {
            params
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .ok_or(OAuth1Refusal::Missing(name))
        };
        if one(SIGNATURE_METHOD)? != "HMAC-SHA1" {
            return Err(OAuth1Refusal::UnsupportedMethod);
        }
        if one(VERSION).is_ok_and(|v| v != "1.0") {
            return Err(OAuth1Refusal::UnsupportedVersion);
        }
        let consumer_key = one(CONSUMER_KEY)?.to_owned();
        let nonce = one(NONCE)?;
        if nonce.is_empty()
            || nonce.len() > MAX_NONCE_CHARS
            || !nonce.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(OAuth1Refusal::BadNonce);
        }
        let nonce = nonce.to_owned();
        let timestamp = one(TIMESTAMP)?;
        if timestamp.is_empty() || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(OAuth1Refusal::BadTimestamp);
        }
        let timestamp = timestamp.parse().map_err(|_| OAuth1Refusal::BadTimestamp)?;
        let signature = STANDARD
            .decode(one(SIGNATURE)?)
            .ok()
            .and_then(|bytes| <[u8; 20]>::try_from(bytes).ok())
            .ok_or(OAuth1Refusal::MalformedSignature)?;
        Ok(Self {
            method: method.to_ascii_uppercase(),
            uri,
            params,
            consumer_key,
            nonce,
            timestamp,
            signature,
        })
    }

    /// The consumer key the request names, to look its secret up with.
    pub fn consumer_key(&self) -> &str {
        &self.consumer_key
    }

    /// Checks the signature with the consumer's `secret`, then the timestamp against `now`.
    ///
    /// The signature is checked over the standard base string URI first, then (only where
    /// the URL has a port that is not its scheme's default) over the same URI without the
    /// port: the Warpwire Moodle plugin signs `scheme://host/path` whatever the port.
    pub fn verify(self, secret: &Secret, now: Timestamp) -> Result<VerifiedRequest, OAuth1Refusal> {
        let matches = |uri: &str| {
            let expected = hmac_sha1(secret, &base_string(&self.method, uri, &self.params));
            bool::from(expected.ct_eq(&self.signature))
        };
        let signed =
            matches(&self.uri.standard) || self.uri.portless.as_deref().is_some_and(matches);
        if !signed {
            return Err(OAuth1Refusal::BadSignature);
        }
        let skew = self.timestamp.saturating_sub(now.epoch_seconds());
        if skew.abs() > TIMESTAMP_WINDOW_SECS {
            return Err(OAuth1Refusal::Stale { skew });
        }
        Ok(VerifiedRequest {
            consumer_key: self.consumer_key,
            nonce: self.nonce,
            timestamp: self.timestamp,
            params: self.params,
        })
    }
}

/// A request whose signature and timestamp were checked. Only [`SignedRequest::verify`]
/// makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRequest {
    consumer_key: String,
    nonce: String,
    timestamp: i64,
    params: Vec<(String, String)>,
}

impl VerifiedRequest {
    /// The consumer that signed it.
    pub fn consumer_key(&self) -> &str {
        &self.consumer_key
    }

    /// Its nonce: a second request with the same consumer and nonce is a replay.
    pub fn nonce(&self) -> &str {
        &self.nonce
    }

    /// Until when the nonce must be remembered: past it, the timestamp alone refuses a
    /// replay.
    pub fn nonce_kept_until(&self) -> Timestamp {
        Timestamp::from_epoch_seconds(self.timestamp.saturating_add(TIMESTAMP_WINDOW_SECS))
    }

    /// The first value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every parameter, as received.
    pub fn params(&self) -> &[(String, String)] {
        &self.params
    }
}

/// Signs `params` for a POST to `url` as consumer `key` with `secret`: the OAuth protocol
/// parameters are added (with `nonce` and `now`, which the caller draws and reads), then
/// `oauth_signature`.
pub fn sign(
    url: &str,
    mut params: Vec<(String, String)>,
    key: &str,
    secret: &Secret,
    nonce: &str,
    now: Timestamp,
) -> Result<Vec<(String, String)>, OAuth1Refusal> {
    let uri = BaseUri::parse(url)?;
    params.retain(|(n, _)| !n.starts_with("oauth_"));
    // The URL's query is signed too (RFC 5849 §3.4.1.3.1), though it is not sent in the form:
    // Moodle's Content-Item return URL carries its course in it.
    for (name, value) in [
        (CONSUMER_KEY, key),
        (SIGNATURE_METHOD, "HMAC-SHA1"),
        (TIMESTAMP, &now.epoch_seconds().to_string()),
        (NONCE, nonce),
        (VERSION, "1.0"),
        ("oauth_callback", "about:blank"),
    ] {
        params.push((name.to_owned(), value.to_owned()));
    }
    let mut signed = query_pairs(url);
    signed.extend(params.iter().cloned());
    let signature = hmac_sha1(secret, &base_string("POST", &uri.standard, &signed));
    params.push((SIGNATURE.to_owned(), STANDARD.encode(signature)));
    Ok(params)
}

/// The base string URI of a URL (RFC 5849 §3.4.1.2), and the same without a port that is
/// not the scheme's default.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BaseUri {
    standard: String,
    portless: Option<String>,
}

impl BaseUri {
    fn parse(url: &str) -> Result<Self, OAuth1Refusal> {
        let (scheme, rest) = url.split_once("://").ok_or(OAuth1Refusal::BadUrl)?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => "80",
            "https" => "443",
            _ => return Err(OAuth1Refusal::BadUrl),
        };
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
        let (host, port) = match authority.rfind(':') {
            Some(i) if !authority[i..].contains(']') => {
                (&authority[..i], Some(&authority[i + 1..]))
            }
            _ => (authority, None),
        };
        let bad_port = port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()));
        if host.is_empty() || host.contains('@') || bad_port {
            return Err(OAuth1Refusal::BadUrl);
        }
        let host = host.to_ascii_lowercase();
        let port = port.filter(|p| *p != default_port);
        Ok(Self {
            standard: match port {
                Some(port) => format!("{scheme}://{host}:{port}{path}"),
                None => format!("{scheme}://{host}{path}"),
            },
            portless: port.map(|_| format!("{scheme}://{host}{path}")),
        })
    }
}

/// The parameters of `url`'s query, decoded as a form is (`+` is a space).
fn query_pairs(url: &str) -> Vec<(String, String)> {
    let Some((_, query)) = url.split('#').next().unwrap_or_default().split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (form_decode(name), form_decode(value))
        })
        .collect()
}

/// Decodes `application/x-www-form-urlencoded` text; a malformed escape stays as it is.
fn form_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let escaped = match (byte, bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) => hex(h).zip(hex(l)).map(|(h, l)| h * 16 + l),
            _ => None,
        };
        match (byte, escaped) {
            (_, Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (b, None) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `METHOD&uri&normalized-parameters` (RFC 5849 §3.4.1), without `oauth_signature`.
fn base_string(method: &str, uri: &str, params: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> = params
        .iter()
        .filter(|(name, _)| name != SIGNATURE)
        .map(|(name, value)| (encode(name), encode(value)))
        .collect();
    pairs.sort_unstable();
    let normalized = pairs
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&");
    format!("{method}&{}&{}", encode(uri), encode(&normalized))
}

/// HMAC-SHA1 keyed with `secret&` (no token secret: LTI has no token).
fn hmac_sha1(secret: &Secret, base: &str) -> [u8; 20] {
    let key = format!("{}&", encode(secret.expose()));
    // HMAC takes a key of any length, so `new_from_slice` cannot fail here.
    let mut mac = Hmac::<Sha1>::new_from_slice(key.as_bytes()).unwrap_or_else(|_| unreachable!());
    mac.update(base.as_bytes());
    mac.finalize().into_bytes().into()
}

/// Percent-encodes UTF-8 as RFC 5849 §3.6 says: all but `A-Z a-z 0-9 - . _ ~`, in upper-case
/// hexadecimal.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    type Params = Vec<(String, String)>;

    fn pairs(list: &[(&str, &str)]) -> Params {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_base_string_is_rfc_5849s_own_example() {
        // RFC 5849 §3.4.1.1: the query, the body and the Authorization header's parameters.
        let params = pairs(&[
            ("b5", "=%3D"),
            ("a3", "a"),
            ("c@", ""),
            ("a2", "r b"),
            ("oauth_consumer_key", "9djdj82h48djs9d2"),
            ("oauth_token", "kkk9d7dh3k39sjv7"),
            ("oauth_signature_method", "HMAC-SHA1"),
            ("oauth_timestamp", "137131201"),
            ("oauth_nonce", "7d8f3e4a"),
            ("oauth_signature", "bYT5CMsGcbgUdFHObYMEfcx6bsw="),
            ("c2", ""),
            ("a3", "2 q"),
        ]);
        let uri = BaseUri::parse("http://EXAMPLE.COM:80/request?b5=%3D%253D").unwrap();
        assert_eq!(uri.standard, "http://example.com/request");
        assert_eq!(uri.portless, None);
        assert_eq!(
            base_string("POST", &uri.standard, &params),
            "POST&http%3A%2F%2Fexample.com%2Frequest&a2%3Dr%2520b%26a3%3D2%2520q\
             %26a3%3Da%26b5%3D%253D%25253D%26c%2540%3D%26c2%3D%26oauth_consumer_\
             key%3D9djdj82h48djs9d2%26oauth_nonce%3D7d8f3e4a%26oauth_signature_m\
             ethod%3DHMAC-SHA1%26oauth_timestamp%3D137131201%26oauth_token%3Dkkk\
             9d7dh3k39sjv7"
        );
    }

    #[test]
    fn base_uris_keep_a_port_that_is_not_the_default_and_offer_it_dropped() {
        let uri = BaseUri::parse("HTTPS://Media.Example.edu:8443/api/lti/").unwrap();
        assert_eq!(uri.standard, "https://media.example.edu:8443/api/lti/");
        assert_eq!(
            uri.portless.as_deref(),
            Some("https://media.example.edu/api/lti/")
        );
        let uri = BaseUri::parse("https://media.example.edu:443").unwrap();
        assert_eq!(uri.standard, "https://media.example.edu/");
        let uri = BaseUri::parse("http://[::1]:8080/api/lti/#x").unwrap();
        assert_eq!(uri.standard, "http://[::1]:8080/api/lti/");
        let uri = BaseUri::parse("http://[::1]/a").unwrap();
        assert_eq!(uri.standard, "http://[::1]/a");
        for bad in [
            "ftp://x/",
            "media.example.edu/api",
            "http:///x",
            "http://u@h/",
            "http://h:x/",
        ] {
            assert_eq!(BaseUri::parse(bad), Err(OAuth1Refusal::BadUrl), "{bad}");
        }
    }

    /// A launch signed by PyPI `lti` 0.9.5's `ToolConsumer` (oauthlib) for
    /// `https://Media.Example.EDU:443/api/lti/?a=1&b=x y`, secret `s3cret+&=`.
    fn tool_consumer_launch() -> Vec<(String, String)> {
        pairs(&[
            ("a", "1"),
            ("b", "x y"),
            ("lti_message_type", "basic-lti-launch-request"),
            ("lti_version", "LTI-1p0"),
            ("resource_link_id", "rl 1"),
            ("user_id", "u42"),
            ("roles", "Instructor,urn:lti:role:ims/lis/TeachingAssistant"),
            ("context_id", "c-9"),
            ("context_title", "Café ☕ 101"),
            ("ext_user_username", "ada"),
            ("custom_weird", "a+b%20c&d=e~*"),
            ("oauth_nonce", "167285819502498098141795931101"),
            ("oauth_timestamp", "1795931101"),
            ("oauth_version", "1.0"),
            ("oauth_signature_method", "HMAC-SHA1"),
            ("oauth_consumer_key", "key-one"),
            ("oauth_signature", "HFZ6kyUuaLaqPYnoGACt/h4hfAk="),
        ])
    }

    const TC_URL: &str = "https://Media.Example.EDU:443/api/lti/?a=1&b=x%20y";
    const TC_TIME: i64 = 1_795_931_101;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_epoch_seconds(secs)
    }

    #[test]
    fn a_launch_signed_by_another_implementation_verifies() {
        let signed = SignedRequest::parse("POST", TC_URL, tool_consumer_launch()).unwrap();
        assert_eq!(signed.consumer_key(), "key-one");
        let verified = signed
            .verify(&Secret::new("s3cret+&="), at(TC_TIME + 5))
            .unwrap();
        assert_eq!(verified.consumer_key(), "key-one");
        assert_eq!(verified.nonce(), "167285819502498098141795931101");
        assert_eq!(verified.get("context_title"), Some("Café ☕ 101"));
        assert_eq!(
            verified.nonce_kept_until(),
            at(TC_TIME + TIMESTAMP_WINDOW_SECS)
        );
    }

    #[test]
    fn a_change_to_any_part_breaks_the_signature() {
        let secret = Secret::new("s3cret+&=");
        let refused = |url: &str, params: Vec<(String, String)>, secret: &Secret| {
            SignedRequest::parse("POST", url, params)
                .unwrap()
                .verify(secret, at(TC_TIME))
                .unwrap_err()
        };
        let wrong = Secret::new("s3cret+&");
        assert_eq!(
            refused(TC_URL, tool_consumer_launch(), &wrong),
            OAuth1Refusal::BadSignature
        );
        let other_path = "https://media.example.edu/api/ltix/";
        assert_eq!(
            refused(other_path, tool_consumer_launch(), &secret),
            OAuth1Refusal::BadSignature
        );
        for i in 0..tool_consumer_launch().len() {
            let mut params = tool_consumer_launch();
            if params[i].0 == "oauth_signature" {
                continue;
            }
            params[i].1.push('x');
            let refusal = SignedRequest::parse("POST", TC_URL, params)
                .and_then(|s| s.verify(&secret, at(TC_TIME)));
            assert!(
                refusal.is_err(),
                "a changed {} was accepted",
                tool_consumer_launch()[i].0
            );
        }
        let mut added = tool_consumer_launch();
        added.push(("roles".into(), "Administrator".into()));
        assert_eq!(refused(TC_URL, added, &secret), OAuth1Refusal::BadSignature);
    }

    #[test]
    fn the_timestamp_is_accepted_within_fifteen_minutes_either_way() {
        let secret = Secret::new("s3cret+&=");
        let check = |now: i64| {
            SignedRequest::parse("POST", TC_URL, tool_consumer_launch())
                .unwrap()
                .verify(&secret, at(now))
                .map(|_| ())
        };
        assert_eq!(check(TC_TIME - 900), Ok(()));
        assert_eq!(check(TC_TIME + 900), Ok(()));
        assert_eq!(
            check(TC_TIME - 901),
            Err(OAuth1Refusal::Stale { skew: 901 })
        );
        assert_eq!(
            check(TC_TIME + 3600),
            Err(OAuth1Refusal::Stale { skew: -3600 })
        );
    }

    #[test]
    fn warpwires_moodle_plugin_signs_without_the_port_and_is_accepted() {
        // Computed by the plugin's own `build_signature` steps (scheme://host/path: the port
        // dropped), for a launch to http://127.0.0.1:8080/api/lti/ with secret `ww-secret`.
        let params = pairs(&[
            ("oauth_version", "1.0"),
            ("oauth_nonce", "b5e4c1a0d7f2e3c4b5a69788f1e2d3c4"),
            ("oauth_timestamp", "1800000600"),
            ("oauth_consumer_key", "moodle"),
            ("user_id", "7"),
            ("lis_person_sourcedid", "ada"),
            ("roles", "Instructor"),
            ("context_id", "12"),
            ("context_label", "BIO101"),
            ("oauth_callback", "about:blank"),
            ("lti_version", "LTI-1p0"),
            ("lti_message_type", "ContentItemSelectionRequest"),
            ("oauth_signature_method", "HMAC-SHA1"),
            (
                "launch_presentation_return_url",
                "https://moodle.example.edu/local/warpwire/html/warpwire.html",
            ),
            ("oauth_signature", "VLHQcxXFo4zEaxiggBsWLsFng7c="),
        ]);
        let secret = Secret::new("ww-secret");
        // Signed 600 s ahead, as the plugin does.
        let now = at(1_800_000_000);
        let url = "http://127.0.0.1:8080/api/lti/";
        assert!(
            SignedRequest::parse("POST", url, params.clone())
                .unwrap()
                .verify(&secret, now)
                .is_ok()
        );
        // The port-less form is a fallback, not a different URL: another path still fails.
        let other = "http://127.0.0.1:8080/api/ltix/";
        assert_eq!(
            SignedRequest::parse("POST", other, params)
                .unwrap()
                .verify(&secret, now)
                .unwrap_err(),
            OAuth1Refusal::BadSignature
        );
    }

    #[test]
    fn what_medialib_signs_is_what_oauthlib_signs_query_included() {
        // oauthlib 3's `Client(..., signature_type=BODY, nonce='abc', timestamp='1800000000',
        // callback_uri='about:blank').sign(URL, 'POST', body)` gives this signature: the
        // URL's query (`course`, `id`) is signed though only the form is sent.
        let secret = Secret::new("k&y");
        let now = at(1_800_000_000);
        let url = "http://lms.example.edu:8000/mod/lti/contentitem_return.php?course=2&id=7";
        let form = pairs(&[
            ("lti_message_type", "ContentItemSelection"),
            ("content_items", r#"{"@graph": [1]}"#),
        ]);
        let signed = sign(url, form, "medialib", &secret, "abc", now).unwrap();
        let signature: Vec<_> = signed
            .iter()
            .filter(|(n, _)| n == "oauth_signature")
            .collect();
        assert_eq!(signature.len(), 1);
        assert_eq!(signature[0].1, "9ifcS7eE7o/AhjJsPlV8ZJ49KW8=");
        assert!(
            !signed.iter().any(|(n, _)| n == "course"),
            "the query stays in the URL"
        );
        // The platform's verifier sees the query's parameters and the form's.
        let mut received = pairs(&[("course", "2"), ("id", "7")]);
        received.extend(signed);
        let verified = SignedRequest::parse("POST", url, received)
            .unwrap()
            .verify(&secret, now)
            .unwrap();
        assert_eq!(
            verified.get("lti_message_type"),
            Some("ContentItemSelection")
        );
    }

    #[test]
    fn form_decoding_reads_plus_and_escapes_and_keeps_a_broken_escape() {
        assert_eq!(form_decode("a+b%20c%3D%e2%98%95"), "a b c=☕");
        assert_eq!(form_decode("100%"), "100%");
        assert_eq!(form_decode("%zz%4"), "%zz%4");
        assert_eq!(
            query_pairs("https://x/p?a=1&b=&c&d=x+y#f"),
            pairs(&[("a", "1"), ("b", ""), ("c", ""), ("d", "x y")])
        );
        assert!(query_pairs("https://x/p#a?b=1").is_empty());
    }

    #[test]
    fn malformed_protocol_parameters_are_refused_before_any_secret_is_looked_up() {
        let parse = |change: &dyn Fn(&mut Params)| {
            let mut params = tool_consumer_launch();
            change(&mut params);
            SignedRequest::parse("POST", TC_URL, params)
                .map(|_| ())
                .unwrap_err()
        };
        let set = |name: &'static str, value: &str| {
            let value = value.to_owned();
            move |p: &mut Params| {
                p.retain(|(n, _)| n != name);
                if !value.is_empty() {
                    p.push((name.into(), value.clone()));
                }
            }
        };
        assert_eq!(
            parse(&set("oauth_signature_method", "PLAINTEXT")),
            OAuth1Refusal::UnsupportedMethod
        );
        assert_eq!(
            parse(&set("oauth_version", "2.0")),
            OAuth1Refusal::UnsupportedVersion
        );
        assert_eq!(
            parse(&set("oauth_consumer_key", "")),
            OAuth1Refusal::Missing("oauth_consumer_key")
        );
        assert_eq!(
            parse(&set("oauth_signature", "")),
            OAuth1Refusal::Missing("oauth_signature")
        );
        assert_eq!(
            parse(&set("oauth_signature", "c2hvcnQ=")),
            OAuth1Refusal::MalformedSignature
        );
        assert_eq!(
            parse(&set("oauth_timestamp", "-5")),
            OAuth1Refusal::BadTimestamp
        );
        assert_eq!(
            parse(&set("oauth_timestamp", "99999999999999999999")),
            OAuth1Refusal::BadTimestamp
        );
        assert_eq!(parse(&set("oauth_nonce", "a b")), OAuth1Refusal::BadNonce);
        let long = "n".repeat(MAX_NONCE_CHARS + 1);
        assert_eq!(parse(&set("oauth_nonce", &long)), OAuth1Refusal::BadNonce);
        assert_eq!(
            parse(&|p| p.push(("oauth_nonce".into(), "again".into()))),
            OAuth1Refusal::Repeated("oauth_nonce".into())
        );
        // A repeated parameter that is not the protocol's is part of what is signed.
        let mut params = tool_consumer_launch();
        params.push(("b".into(), "x y".into()));
        assert!(SignedRequest::parse("POST", TC_URL, params).is_ok());
    }

    #[test]
    fn encoding_leaves_only_the_unreserved_characters() {
        assert_eq!(encode("aZ09-._~"), "aZ09-._~");
        assert_eq!(encode("a b+c&d=e%*/"), "a%20b%2Bc%26d%3De%25%2A%2F");
        assert_eq!(encode("é☕"), "%C3%A9%E2%98%95");
    }
}
