//! Target `authorization`: the `Authorization` header (`Bearer`/`OAuth` tokens, `Basic`
//! client credentials with base64 and form decoding inside).
//!
//! The first byte picks the mode:
//! - even: the rest is a raw header value. An accepted token is exactly what an
//!   independent reading of RFC 6750 §2.1 finds, and an accepted `Basic` value decodes to
//!   credentials whose canonical encoding parses back to the same credentials;
//! - odd: `arbitrary` builds credentials (any client id and secret, any token of the
//!   `b64token` alphabet) and spells them the ways clients do (scheme case, padding,
//!   extra spaces): each spelling must parse back to exactly those credentials.

use arbitrary::{Arbitrary, Unstructured};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use medialib_domain::Secret;
use medialib_domain::form::encode_component;
use medialib_domain::oauth::{Credentials, InvalidCredentials, parse_authorization};

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        raw(rest);
    } else if let Ok(spelled) = Spelled::arbitrary(&mut Unstructured::new(rest)) {
        spelled.parses_back();
    }
}

/// RFC 6750 §2.1 read independently: `Bearer` (any case) or `OAuth`, one or more spaces,
/// a `b64token`; RFC 9110 optional white space around the value.
fn oracle_bearer(value: &[u8]) -> Option<&str> {
    let value = std::str::from_utf8(value).ok()?;
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    let space = value.find(' ')?;
    let scheme = value[..space].to_ascii_lowercase();
    if scheme != "bearer" && scheme != "oauth" {
        return None;
    }
    let token = value[space..].trim_start_matches(' ');
    let alphabet = |c: char| c.is_ascii_alphanumeric() || "-._~+/".contains(c);
    let body_len = token.trim_end_matches('=').len();
    let ok = body_len > 0 && token[..body_len].chars().all(alphabet);
    ok.then_some(token)
}

/// RFC 7617 with RFC 6749 §2.3.1 read independently: `Basic` (any case), spaces,
/// standard base64 (padded or not) of `id:secret`, each side form-encoded; the id not
/// empty. `Some(Err(()))` when the scheme is Basic but the rest does not decode.
#[allow(clippy::type_complexity)]
fn oracle_basic(value: &[u8]) -> Option<Result<(String, String), ()>> {
    let value = std::str::from_utf8(value).ok()?;
    if !value
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) || b == b'\t')
    {
        return None;
    }
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    let (scheme, rest) = value.split_at(value.find(' ')?);
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let encoded = rest.trim_start_matches(' ');
    let plain = if encoded.len() % 4 == 0 {
        STANDARD.decode(encoded)
    } else {
        STANDARD_NO_PAD.decode(encoded)
    };
    let decode = || {
        let plain = String::from_utf8(plain.ok()?).ok()?;
        let (id, secret) = plain.split_at(plain.find(':')?);
        let id = crate::oracle_component(id.as_bytes()).ok()?;
        let secret = crate::oracle_component(&secret.as_bytes()[1..]).ok()?;
        (!id.is_empty()).then_some((id, secret))
    };
    Some(decode().ok_or(()))
}

fn raw(value: &[u8]) {
    let parsed = parse_authorization(value);
    let oracle = oracle_bearer(value);
    match (&parsed, oracle_basic(value)) {
        (
            Ok(Credentials::Basic {
                client_id,
                client_secret,
            }),
            Some(Ok((id, secret))),
        ) => {
            assert_eq!(
                (client_id, client_secret.as_ref().map_or("", Secret::expose)),
                (&id, secret.as_str())
            );
        }
        (Err(InvalidCredentials::BadBasic), Some(Err(()))) => {}
        (Ok(Credentials::Basic { .. }) | Err(InvalidCredentials::BadBasic), _) | (_, Some(_)) => {
            panic!(
                "{value:?}: parsed {parsed:?}, the oracle reads Basic as {:?}",
                oracle_basic(value)
            );
        }
        _ => {}
    }
    match &parsed {
        Ok(Credentials::Bearer(token)) => {
            assert_eq!(Some(token.expose()), oracle, "{value:?}");
        }
        Ok(Credentials::Basic {
            client_id,
            client_secret,
        }) => {
            assert!(!client_id.is_empty());
            assert!(
                client_secret
                    .as_ref()
                    .is_none_or(|s| !s.expose().is_empty())
            );
            let canonical = basic_header(client_id, client_secret.as_ref(), "Basic", true);
            assert_eq!(
                parse_authorization(canonical.as_bytes()),
                parsed.clone(),
                "canonical re-encoding of {value:?}"
            );
        }
        Err(e) => {
            assert_eq!(
                oracle, None,
                "refused a well-formed bearer token: {value:?}"
            );
            if !value
                .iter()
                .all(|b| (0x20..0x7f).contains(b) || *b == b'\t')
            {
                assert_eq!(*e, InvalidCredentials::Malformed, "{value:?}");
            }
        }
    }
}

fn basic_header(id: &str, secret: Option<&Secret>, scheme: &str, padded: bool) -> String {
    let plain = format!(
        "{}:{}",
        encode_component(id),
        encode_component(secret.map_or("", Secret::expose))
    );
    let encoded = if padded {
        STANDARD.encode(plain)
    } else {
        STANDARD_NO_PAD.encode(plain)
    };
    format!("{scheme} {encoded}")
}

/// Credentials and the way a client spells them.
#[derive(Debug, Arbitrary)]
struct Spelled {
    basic: bool,
    id: String,
    secret: String,
    /// Indexes into the `b64token` alphabet.
    token: Vec<u8>,
    token_padding: u8,
    scheme_case: u8,
    padded: bool,
    extra_spaces: u8,
    trailing_tab: bool,
}

impl Spelled {
    fn parses_back(self) {
        const ALPHABET: &[u8; 68] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/";
        let scheme = match (self.basic, self.scheme_case % 3) {
            (true, 0) => "Basic",
            (true, 1) => "basic",
            (true, _) => "BASIC",
            (false, 0) => "Bearer",
            (false, 1) => "bearer",
            (false, _) => "OAuth",
        };
        let (header, expected) = if self.basic {
            let secret = (!self.secret.is_empty()).then(|| Secret::new(self.secret.clone()));
            let header = basic_header(&self.id, secret.as_ref(), scheme, self.padded);
            let expected = if self.id.is_empty() {
                Err(InvalidCredentials::BadBasic)
            } else {
                Ok(Credentials::Basic {
                    client_id: self.id.clone(),
                    client_secret: secret,
                })
            };
            (header, expected)
        } else {
            let mut token: String = self
                .token
                .iter()
                .map(|i| char::from(ALPHABET[usize::from(*i) % ALPHABET.len()]))
                .collect();
            token.push_str(&"=".repeat(usize::from(self.token_padding % 3)));
            let expected = if token.trim_end_matches('=').is_empty() {
                Err(InvalidCredentials::BadToken)
            } else {
                Ok(Credentials::Bearer(Secret::new(token.clone())))
            };
            (format!("{scheme} {token}"), expected)
        };
        let spaces = " ".repeat(usize::from(self.extra_spaces % 4));
        let mut header = header.replacen(' ', &format!(" {spaces}"), 1);
        if self.trailing_tab {
            header.push('\t');
        }
        let parsed = parse_authorization(header.as_bytes());
        match expected {
            // A scheme followed only by spaces is no `scheme SP credentials` at all.
            Err(InvalidCredentials::BadToken) if header.trim_end().ends_with(scheme) => {
                assert_eq!(parsed, Err(InvalidCredentials::Malformed), "{header:?}");
            }
            expected => assert_eq!(parsed, expected, "{header:?}"),
        }
    }
}
