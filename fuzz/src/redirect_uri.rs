//! Target `redirect_uri`: redirect-URI parsing, matching, and the authorization request
//! that trusts (or refuses) a requested URI.
//!
//! Input: lines, each a form component as it arrives in the query string (so `%0D%0A`
//! spells a line break): the `state`, the requested `redirect_uri`, then up to four
//! URIs the client registered.
//!
//! Properties:
//! - a parsed URI is the input verbatim and keeps to the documented syntax;
//! - matching is exact string equality, except that two `http` loopback IP literal URIs
//!   (`127.0.0.1`, `[::1]`) that differ only in their port match (RFC 8252 §7.3); the
//!   oracle for "differ only in the port" is written here independently;
//! - the authorization request goes back to the requested URI only when it matches a
//!   registered one by that rule, and is refused with an error page (never a redirect)
//!   otherwise;
//! - every `Location` it produces starts with that URI, is visible ASCII without spaces
//!   (no header injection through `state` or the description) and decodes back to its
//!   parameters.

use medialib_domain::form::parse_urlencoded;
use medialib_domain::oauth::{
    AuthorizationResponse, AuthorizeParams, AuthorizeRejection, Client, ClientId, ClientKind,
    ClientName, ErrorPage, Issuer, RedirectUri, validate_authorization_request,
};
use medialib_domain::{Lifetime, Timestamp};
use medialib_domain::{OrgNamespace, TokenKind, UserId};

/// A PKCE challenge (RFC 7636 appendix B): the client is public, so PKCE is required.
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some(lines) = crate::form_lines(data) else {
        return;
    };
    let [state, requested, registered @ ..] = lines.as_slice() else {
        return;
    };
    let registered = &registered[..registered.len().min(4)];
    for uri in std::iter::once(requested).chain(registered) {
        parsed_uri_keeps_the_syntax(uri);
    }
    let reg: Vec<RedirectUri> = registered
        .iter()
        .filter_map(|r| RedirectUri::parse(r).ok())
        .collect();
    if let Ok(req) = RedirectUri::parse(requested) {
        for r in &reg {
            let expected = oracle_matches(r.as_str(), req.as_str());
            assert_eq!(r.matches(&req), expected, "{r} vs {req}");
            assert_eq!(req.matches(r), expected, "matching is symmetric");
        }
    }
    authorization_request(state, requested, reg);
}

fn parsed_uri_keeps_the_syntax(input: &str) {
    let Ok(uri) = RedirectUri::parse(input) else {
        return;
    };
    assert_eq!(uri.as_str(), input, "kept verbatim");
    assert_eq!(uri.to_string(), input);
    assert!(input.len() <= RedirectUri::MAX_LEN);
    assert!(
        input.bytes().all(|b| b.is_ascii_graphic() && b != b'#'),
        "no space, control, non-ASCII or fragment in {input:?}"
    );
    let authority = input
        .strip_prefix("https://")
        .or_else(|| input.strip_prefix("http://"));
    let Some(authority) = authority else {
        panic!("{input:?} is neither https nor http");
    };
    let authority = authority.split(['/', '?']).next().unwrap_or_default();
    assert!(
        !authority.is_empty() && !authority.contains('@'),
        "{input:?}"
    );
    if input.starts_with("http://") {
        let host = authority
            .rsplit_once(':')
            .filter(|(_, port)| !port.contains(']'))
            .map_or(authority, |(host, _)| host)
            .to_ascii_lowercase();
        assert!(
            ["127.0.0.1", "[::1]", "localhost"].contains(&host.as_str()),
            "plain http to {host:?}"
        );
    }
    assert!(uri.matches(&uri), "matching is reflexive");
    assert_eq!(RedirectUri::parse(uri.as_str()), Ok(uri.clone()));
}

/// `(host, rest)` of an `http` URI whose host is a loopback IP literal, with its
/// `:port` left out; `None` for every other URI.
fn loopback_without_port(uri: &str) -> Option<(&str, &str)> {
    let after = uri.strip_prefix("http://")?;
    let (host, tail) = match after.strip_prefix("127.0.0.1") {
        Some(tail) => ("127.0.0.1", tail),
        None => ("[::1]", after.strip_prefix("[::1]")?),
    };
    let tail = match tail.strip_prefix(':') {
        Some(port) => {
            let digits = port.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return None;
            }
            &port[digits..]
        }
        None => tail,
    };
    let ends_authority = tail.is_empty() || tail.starts_with('/') || tail.starts_with('?');
    ends_authority.then_some((host, tail))
}

fn oracle_matches(registered: &str, requested: &str) -> bool {
    registered == requested
        || matches!(
            (loopback_without_port(registered), loopback_without_port(requested)),
            (Some(a), Some(b)) if a == b
        )
}

fn authorization_request(state: &str, requested: &str, registered: Vec<RedirectUri>) {
    let trusted = RedirectUri::parse(requested).is_ok_and(|_| {
        registered
            .iter()
            .any(|r| oracle_matches(r.as_str(), requested))
    });
    let (Ok(id), Ok(name)) = (ClientId::parse("fuzz-client"), ClientName::parse("Fuzz")) else {
        panic!("fixed client fields parse");
    };
    let Ok(client) = Client::new(id, name, registered, ClientKind::Public) else {
        return; // nothing registered
    };
    let params = AuthorizeParams {
        response_type: Some("code"),
        client_id: Some("fuzz-client"),
        redirect_uri: Some(requested),
        state: Some(state),
        scope: None,
        access_type: None,
        code_challenge: Some(CHALLENGE),
        code_challenge_method: Some("S256"),
        repeated: None,
    };
    let issuer = Issuer::new("https://media.example/");
    match validate_authorization_request(&params, Some(&client), &issuer) {
        Ok(request) => {
            assert!(
                trusted,
                "{requested:?} accepted but matches no registered URI"
            );
            assert_eq!(request.redirect_uri().as_str(), requested);
            assert_eq!(request.state().as_str(), state);
            let ns = OrgNamespace::from_random([5; 16]);
            let Ok(ttl) = Lifetime::from_seconds(60) else {
                panic!("a positive lifetime");
            };
            let (issued, response) = request.approve(
                UserId::generate(&ns, [6; 16]),
                TokenKind::Code.mint([7; 32]),
                Timestamp::from_epoch_seconds(1_000),
                ttl,
                &issuer,
            );
            assert_eq!(issued.redirect_uri.as_str(), requested);
            location_is_safe(&response, requested);
            assert_eq!(response.param("state"), Some(state));
        }
        Err(AuthorizeRejection::Redirect(response)) => {
            assert!(
                trusted,
                "redirected to {requested:?}, which matches nothing registered"
            );
            location_is_safe(&response, requested);
        }
        Err(AuthorizeRejection::ErrorPage(page)) => {
            assert_eq!(page, ErrorPage::UnregisteredRedirectUri);
            assert!(
                !trusted,
                "{requested:?} matches a registered URI but was refused"
            );
        }
    }
}

fn location_is_safe(response: &AuthorizationResponse, requested: &str) {
    let location = response.location();
    assert!(location.starts_with(requested));
    assert!(
        location.bytes().all(|b| b.is_ascii_graphic()),
        "Location must be visible ASCII: {location:?}"
    );
    let query = &location[requested.len() + 1..];
    let Ok(decoded) = parse_urlencoded(query.as_bytes()) else {
        panic!("the appended parameters must decode: {query:?}");
    };
    let expected: Vec<(String, String)> = response
        .params()
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    assert_eq!(decoded, expected);
}
