//! The whole OAuth 2.0 authorization lifecycle through the public API of
//! `medialib_domain::oauth`: authorization request validation (every refusal),
//! the two exits of a valid request (approve, deny), code redemption, token
//! minting, access-token checks and refresh-token rotation.
//!
//! Numbers in comments (`#4`, `#23`, ...) refer to lines of
//! `SECURITY-CHECKLIST.md`; `§5` is DECISIONS.md §5.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use medialib_domain::oauth::{
    AccessTokenInvalid, AccessTokenRecord, AuthorizationRequest, AuthorizationResponse,
    AuthorizeParams, AuthorizeRejection, Client, ClientId, ClientKind, ClientName,
    CodePresentation, ErrorPage, GrantSpec, IssuedCode, Issuer, OAuthErrorCode, RedeemError,
    RedirectUri, RefreshError, RefreshPresentation, RefreshTokenRecord, RefreshTokenState,
    Revocation, ScopeSet, Spent, StoredCode, Successor, TokenLifetimes, TokenRandomness,
    mint_tokens, validate_authorization_request,
};
use medialib_domain::{
    GrantId, Lifetime, OrgNamespace, Secret, Timestamp, TokenDigest, TokenKind, UserId,
};

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

const ISS: &str = "https://media.example.edu";
const REDIRECT: &str = "https://lms.example.edu/cb";
/// A registered URI that already carries a query.
const REDIRECT_Q: &str = "https://lms.example.edu/cb?tenant=7";
/// A registered native-app loopback URI (the port may vary, RFC 8252 §7.3).
const REDIRECT_LOOPBACK: &str = "http://127.0.0.1/native";
const PUBLIC_REDIRECT: &str = "https://app.example.org/done";

/// RFC 7636 appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

const NOW: i64 = 1_700_000_000;
const CODE_TTL: i64 = 60;
const ACCESS_TTL: i64 = 3600;
const REFRESH_TTL: i64 = 30 * 86_400;

fn issuer() -> Issuer {
    // The trailing slash is dropped: `iss` must equal the metadata's issuer exactly.
    Issuer::new("https://media.example.edu/")
}

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_epoch_seconds(secs)
}

fn ttl(secs: i64) -> Lifetime {
    Lifetime::from_seconds(secs).unwrap()
}

fn lifetimes() -> TokenLifetimes {
    TokenLifetimes {
        access: ttl(ACCESS_TTL),
        refresh: ttl(REFRESH_TTL),
        retry_grace: None,
    }
}

fn rnd(access: u8, refresh: u8) -> TokenRandomness {
    TokenRandomness {
        access: [access; 32],
        refresh: [refresh; 32],
    }
}

fn ns() -> OrgNamespace {
    OrgNamespace::from_random([42; 16])
}

fn user() -> UserId {
    UserId::generate(&ns(), [1; 16])
}

fn grant_id(n: u8) -> GrantId {
    GrantId::parse(&format!("{n:02x}").repeat(16)).unwrap()
}

fn cid(s: &str) -> ClientId {
    ClientId::parse(s).unwrap()
}

fn scope(s: &str) -> ScopeSet {
    ScopeSet::parse(s).unwrap()
}

/// A confidential client with three registered URIs.
fn confidential() -> Client {
    let (_, digest) = TokenKind::ClientSecret.mint([9; 32]);
    Client::new(
        cid("lms"),
        ClientName::parse("LMS plugin").unwrap(),
        [REDIRECT, REDIRECT_Q, REDIRECT_LOOPBACK]
            .into_iter()
            .map(|u| RedirectUri::parse(u).unwrap())
            .collect(),
        ClientKind::Confidential {
            secret_digest: digest,
        },
    )
    .unwrap()
}

/// A public client (PKCE required).
fn public() -> Client {
    Client::new(
        cid("mobile"),
        ClientName::parse("Mobile app").unwrap(),
        vec![RedirectUri::parse(PUBLIC_REDIRECT).unwrap()],
        ClientKind::Public,
    )
    .unwrap()
}

/// A complete, valid request of the confidential client.
fn good() -> AuthorizeParams<'static> {
    AuthorizeParams {
        response_type: Some("code"),
        client_id: Some("lms"),
        redirect_uri: Some(REDIRECT),
        state: Some("xyz-123"),
        scope: None,
        access_type: None,
        code_challenge: None,
        code_challenge_method: None,
        repeated: None,
    }
}

/// A complete, valid request of the public client.
fn good_public() -> AuthorizeParams<'static> {
    AuthorizeParams {
        client_id: Some("mobile"),
        redirect_uri: Some(PUBLIC_REDIRECT),
        code_challenge: Some(CHALLENGE),
        code_challenge_method: Some("S256"),
        ..good()
    }
}

fn validate(
    p: &AuthorizeParams<'_>,
    c: Option<&Client>,
) -> Result<AuthorizationRequest, AuthorizeRejection> {
    validate_authorization_request(p, c, &issuer())
}

/// Splits a `Location` into its base and decoded query pairs.
fn split_location(location: &str) -> (String, Vec<(String, String)>) {
    let (base, query) = location.split_once('?').unwrap_or((location, ""));
    let pairs = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    (base.to_owned(), pairs)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn query_value<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let mut found = pairs.iter().filter(|(k, _)| k == name);
    let first = found.next().map(|(_, v)| v.as_str());
    assert!(found.next().is_none(), "parameter {name} appears twice");
    first
}

/// Every authorization response (success or error) carries `iss` (#6), and the
/// `Location` starts with the redirect URI and decodes back to the params.
fn assert_well_formed(resp: &AuthorizationResponse, redirect: &str) {
    assert_eq!(
        resp.param("iss"),
        Some(ISS),
        "iss in every authorization response (#6)"
    );
    let location = resp.location();
    assert!(
        location.starts_with(redirect),
        "{location} must start with {redirect}"
    );
    let (_, pairs) = split_location(&location);
    for (k, v) in resp.params() {
        assert_eq!(
            query_value(&pairs, k),
            Some(v.as_str()),
            "{k} in {location}"
        );
    }
}

/// Validates a request, approves it and returns the code secret and what is stored.
fn issue(p: &AuthorizeParams<'_>, c: &Client, code_random: u8) -> (Secret, IssuedCode) {
    let req = validate(p, Some(c)).unwrap();
    let code = TokenKind::Code.mint([code_random; 32]);
    let (issued, resp) = req.approve(user(), code, ts(NOW), ttl(CODE_TTL), &issuer());
    (Secret::new(resp.param("code").unwrap()), issued)
}

// ---------------------------------------------------------------------------
// Authorization request: refusals
// ---------------------------------------------------------------------------

#[test]
fn untrusted_client_or_redirect_gets_an_error_page_never_a_redirect() {
    let conf = confidential();
    let publ = public();
    let long_uri = format!("https://lms.example.edu/{}", "x".repeat(2048));
    // (case, params, client found for client_id, expected page)
    let cases: Vec<(&str, AuthorizeParams<'_>, Option<&Client>, ErrorPage)> = vec![
        (
            "no client_id",
            AuthorizeParams {
                client_id: None,
                ..good()
            },
            None,
            ErrorPage::MissingClient,
        ),
        (
            "no client_id even if a client was looked up",
            AuthorizeParams {
                client_id: None,
                ..good()
            },
            Some(&conf),
            ErrorPage::MissingClient,
        ),
        (
            "empty query",
            AuthorizeParams::default(),
            None,
            ErrorPage::MissingClient,
        ),
        (
            "unknown client",
            AuthorizeParams {
                client_id: Some("nope"),
                ..good()
            },
            None,
            ErrorPage::UnknownClient,
        ),
        (
            "client_id repeated (RFC 6749 §3.1): which client is meant is unknown",
            AuthorizeParams {
                repeated: Some("client_id"),
                ..good()
            },
            Some(&conf),
            ErrorPage::RepeatedClient,
        ),
        (
            "redirect_uri repeated: where to answer is unknown",
            AuthorizeParams {
                repeated: Some("redirect_uri"),
                ..good()
            },
            Some(&conf),
            ErrorPage::RepeatedRedirectUri,
        ),
        (
            "another parameter repeated, but the client is unknown",
            AuthorizeParams {
                client_id: Some("nope"),
                repeated: Some("scope"),
                ..good()
            },
            None,
            ErrorPage::UnknownClient,
        ),
        (
            "unknown client, everything else broken too",
            AuthorizeParams {
                client_id: Some("nope"),
                redirect_uri: Some("https://evil.example/cb"),
                state: None,
                response_type: Some("token"),
                ..good()
            },
            None,
            ErrorPage::UnknownClient,
        ),
        (
            "no redirect_uri",
            AuthorizeParams {
                redirect_uri: None,
                ..good()
            },
            Some(&conf),
            ErrorPage::MissingRedirectUri,
        ),
        (
            "malformed redirect_uri",
            AuthorizeParams {
                redirect_uri: Some("not a uri"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "empty redirect_uri",
            AuthorizeParams {
                redirect_uri: Some(""),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "javascript: redirect_uri",
            AuthorizeParams {
                redirect_uri: Some("javascript:alert(1)"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "relative redirect_uri",
            AuthorizeParams {
                redirect_uri: Some("/cb"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "http to a non-loopback host (#15)",
            AuthorizeParams {
                redirect_uri: Some("http://lms.example.edu/cb"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "fragment",
            AuthorizeParams {
                redirect_uri: Some("https://lms.example.edu/cb#x"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "user info",
            AuthorizeParams {
                redirect_uri: Some("https://lms.example.edu@evil.example/cb"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "CRLF injection",
            AuthorizeParams {
                redirect_uri: Some("https://lms.example.edu/cb\r\nSet-Cookie: a=b"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "too long",
            AuthorizeParams {
                redirect_uri: Some(&long_uri),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "unregistered host",
            AuthorizeParams {
                redirect_uri: Some("https://evil.example/cb"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "trailing slash (#1 exact match)",
            AuthorizeParams {
                redirect_uri: Some("https://lms.example.edu/cb/"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "host case differs (#1)",
            AuthorizeParams {
                redirect_uri: Some("https://LMS.example.edu/cb"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "explicit default port (#1)",
            AuthorizeParams {
                redirect_uri: Some("https://lms.example.edu:443/cb"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "extra query (#1)",
            AuthorizeParams {
                redirect_uri: Some("https://lms.example.edu/cb?x=1"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "registered query changed (#1)",
            AuthorizeParams {
                redirect_uri: Some("https://lms.example.edu/cb?tenant=8"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "loopback path differs",
            AuthorizeParams {
                redirect_uri: Some("http://127.0.0.1:5000/other"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "localhost instead of the registered IP literal",
            AuthorizeParams {
                redirect_uri: Some("http://localhost/native"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "another client's registered URI",
            AuthorizeParams {
                redirect_uri: Some(PUBLIC_REDIRECT),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "public client, confidential client's URI",
            AuthorizeParams {
                redirect_uri: Some(REDIRECT),
                ..good_public()
            },
            Some(&publ),
            ErrorPage::UnregisteredRedirectUri,
        ),
        (
            "bad redirect wins over every later error",
            AuthorizeParams {
                redirect_uri: Some("https://evil.example/cb"),
                state: None,
                response_type: Some("token"),
                scope: Some("admin"),
                code_challenge_method: Some("plain"),
                ..good()
            },
            Some(&conf),
            ErrorPage::UnregisteredRedirectUri,
        ),
    ];
    for (case, params, client, page) in cases {
        match validate(&params, client) {
            Err(AuthorizeRejection::ErrorPage(got)) => assert_eq!(got, page, "{case}"),
            other => panic!("{case}: expected error page {page:?}, got {other:?}"),
        }
    }
}

/// How a redirecting refusal must look.
#[derive(Debug, Clone, Copy)]
struct Refusal {
    error: OAuthErrorCode,
    /// Whether the (valid) state is echoed; an invalid state is never echoed.
    state_echoed: bool,
}

const fn refused(error: OAuthErrorCode, state_echoed: bool) -> Refusal {
    Refusal {
        error,
        state_echoed,
    }
}

#[test]
fn request_errors_redirect_with_error_state_and_iss() {
    use OAuthErrorCode::{InvalidRequest, InvalidScope, UnsupportedResponseType};
    let conf = confidential();
    let publ = public();
    let long_state = "s".repeat(513);
    let cases: Vec<(&str, AuthorizeParams<'_>, &Client, Refusal)> = vec![
        // A repeated parameter (RFC 6749 §3.1) of a trusted client and redirect URI: the
        // state is echoed unless it is the repeated one.
        (
            "scope repeated",
            AuthorizeParams {
                repeated: Some("scope"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        (
            "state repeated",
            AuthorizeParams {
                repeated: Some("state"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        // state: required, 1..=512 visible ASCII; an invalid one is not echoed.
        (
            "missing state",
            AuthorizeParams {
                state: None,
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "empty state",
            AuthorizeParams {
                state: Some(""),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "state of 513 chars",
            AuthorizeParams {
                state: Some(&long_state),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "state with LF",
            AuthorizeParams {
                state: Some("ab\ncd"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "state with CR",
            AuthorizeParams {
                state: Some("ab\rcd"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "state with tab",
            AuthorizeParams {
                state: Some("ab\tcd"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "state with NUL",
            AuthorizeParams {
                state: Some("ab\0cd"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "state with DEL",
            AuthorizeParams {
                state: Some("ab\u{7f}"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "state non-ASCII",
            AuthorizeParams {
                state: Some("état"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        (
            "missing state, response_type=token too",
            AuthorizeParams {
                state: None,
                response_type: Some("token"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, false),
        ),
        // response_type: only code (#8).
        (
            "implicit flow (#8)",
            AuthorizeParams {
                response_type: Some("token"),
                ..good()
            },
            &conf,
            refused(UnsupportedResponseType, true),
        ),
        (
            "hybrid",
            AuthorizeParams {
                response_type: Some("code token"),
                ..good()
            },
            &conf,
            refused(UnsupportedResponseType, true),
        ),
        (
            "response_type case",
            AuthorizeParams {
                response_type: Some("CODE"),
                ..good()
            },
            &conf,
            refused(UnsupportedResponseType, true),
        ),
        (
            "missing response_type",
            AuthorizeParams {
                response_type: None,
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        // scope
        (
            "unknown scope",
            AuthorizeParams {
                scope: Some("admin"),
                ..good()
            },
            &conf,
            refused(InvalidScope, true),
        ),
        (
            "empty scope",
            AuthorizeParams {
                scope: Some(""),
                ..good()
            },
            &conf,
            refused(InvalidScope, true),
        ),
        (
            "comma scope",
            AuthorizeParams {
                scope: Some("read,write"),
                ..good()
            },
            &conf,
            refused(InvalidScope, true),
        ),
        (
            "scope case",
            AuthorizeParams {
                scope: Some("READ"),
                ..good()
            },
            &conf,
            refused(InvalidScope, true),
        ),
        (
            "one good one bad scope",
            AuthorizeParams {
                scope: Some("read admin"),
                ..good()
            },
            &conf,
            refused(InvalidScope, true),
        ),
        // access_type
        (
            "bogus access_type",
            AuthorizeParams {
                access_type: Some("bogus"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        (
            "empty access_type",
            AuthorizeParams {
                access_type: Some(""),
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        // PKCE: S256 only (#3).
        (
            "plain method (#3)",
            AuthorizeParams {
                code_challenge: Some(CHALLENGE),
                code_challenge_method: Some("plain"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        (
            "challenge without method (implies plain)",
            AuthorizeParams {
                code_challenge: Some(CHALLENGE),
                code_challenge_method: None,
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        (
            "method case",
            AuthorizeParams {
                code_challenge: Some(CHALLENGE),
                code_challenge_method: Some("s256"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        (
            "method without challenge",
            AuthorizeParams {
                code_challenge_method: Some("S256"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        (
            "challenge too short",
            AuthorizeParams {
                code_challenge: Some("abc"),
                code_challenge_method: Some("S256"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        (
            "challenge with padding",
            AuthorizeParams {
                code_challenge: Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c="),
                code_challenge_method: Some("S256"),
                ..good()
            },
            &conf,
            refused(InvalidRequest, true),
        ),
        (
            "public client without PKCE (#3)",
            AuthorizeParams {
                code_challenge: None,
                code_challenge_method: None,
                ..good_public()
            },
            &publ,
            refused(InvalidRequest, true),
        ),
        (
            "public client with plain",
            AuthorizeParams {
                code_challenge_method: Some("plain"),
                ..good_public()
            },
            &publ,
            refused(InvalidRequest, true),
        ),
        (
            "error on a registered URI that has a query",
            AuthorizeParams {
                redirect_uri: Some(REDIRECT_Q),
                response_type: Some("token"),
                ..good()
            },
            &conf,
            refused(UnsupportedResponseType, true),
        ),
        (
            "error on a loopback URI with an ephemeral port",
            AuthorizeParams {
                redirect_uri: Some("http://127.0.0.1:49152/native"),
                scope: Some("x"),
                ..good()
            },
            &conf,
            refused(InvalidScope, true),
        ),
    ];
    for (case, params, client, want) in cases {
        let resp = match validate(&params, Some(client)) {
            Err(AuthorizeRejection::Redirect(resp)) => resp,
            other => panic!(
                "{case}: expected a redirect with {:?}, got {other:?}",
                want.error
            ),
        };
        let redirect = params.redirect_uri.unwrap();
        assert_well_formed(&resp, redirect);
        assert_eq!(resp.param("error"), Some(want.error.as_str()), "{case}");
        assert!(
            resp.param("error_description")
                .is_some_and(|d| !d.is_empty()),
            "{case}: error_description"
        );
        assert_eq!(resp.param("code"), None, "{case}: no code on an error");
        if want.state_echoed {
            assert_eq!(
                resp.param("state"),
                params.state,
                "{case}: state echoed (#23)"
            );
        } else {
            assert_eq!(
                resp.param("state"),
                None,
                "{case}: an invalid state is not echoed"
            );
        }
        // The redirect goes exactly where the request said, with nothing else in between.
        let (base, pairs) = split_location(&resp.location());
        let (req_base, req_pairs) = split_location(redirect);
        assert_eq!(base, req_base, "{case}");
        assert_eq!(
            pairs[..req_pairs.len()],
            req_pairs[..],
            "{case}: registered query kept first"
        );
        assert_eq!(pairs.len(), req_pairs.len() + resp.params().len(), "{case}");
    }
}

#[test]
fn valid_requests_are_accepted() {
    let conf = confidential();
    let publ = public();
    let state_512: String = (0x20u8..=0x7e).map(char::from).cycle().take(512).collect();
    // (case, params, client, scope, offline, redirect the response goes to)
    let cases: Vec<(&str, AuthorizeParams<'_>, &Client, ScopeSet, bool, &str)> = vec![
        (
            "minimal confidential",
            good(),
            &conf,
            ScopeSet::DEFAULT,
            false,
            REDIRECT,
        ),
        (
            "read only",
            AuthorizeParams {
                scope: Some("read"),
                ..good()
            },
            &conf,
            scope("read"),
            false,
            REDIRECT,
        ),
        (
            "write read",
            AuthorizeParams {
                scope: Some("write read"),
                ..good()
            },
            &conf,
            ScopeSet::DEFAULT,
            false,
            REDIRECT,
        ),
        (
            "offline",
            AuthorizeParams {
                access_type: Some("offline"),
                ..good()
            },
            &conf,
            ScopeSet::DEFAULT,
            true,
            REDIRECT,
        ),
        (
            "online",
            AuthorizeParams {
                access_type: Some("online"),
                ..good()
            },
            &conf,
            ScopeSet::DEFAULT,
            false,
            REDIRECT,
        ),
        (
            "confidential with optional PKCE",
            AuthorizeParams {
                code_challenge: Some(CHALLENGE),
                code_challenge_method: Some("S256"),
                ..good()
            },
            &conf,
            ScopeSet::DEFAULT,
            false,
            REDIRECT,
        ),
        (
            "public with PKCE",
            good_public(),
            &publ,
            ScopeSet::DEFAULT,
            false,
            PUBLIC_REDIRECT,
        ),
        (
            "state of 512 visible chars",
            AuthorizeParams {
                state: Some(&state_512),
                ..good()
            },
            &conf,
            ScopeSet::DEFAULT,
            false,
            REDIRECT,
        ),
        (
            "state of 1 char",
            AuthorizeParams {
                state: Some(" "),
                ..good()
            },
            &conf,
            ScopeSet::DEFAULT,
            false,
            REDIRECT,
        ),
        (
            "registered query",
            AuthorizeParams {
                redirect_uri: Some(REDIRECT_Q),
                ..good()
            },
            &conf,
            ScopeSet::DEFAULT,
            false,
            REDIRECT_Q,
        ),
        (
            "loopback IP with an ephemeral port",
            AuthorizeParams {
                redirect_uri: Some("http://127.0.0.1:49152/native"),
                ..good()
            },
            &conf,
            ScopeSet::DEFAULT,
            false,
            "http://127.0.0.1:49152/native",
        ),
    ];
    for (case, params, client, want_scope, want_offline, want_redirect) in cases {
        let req = validate(&params, Some(client)).unwrap_or_else(|e| panic!("{case}: {e:?}"));
        assert_eq!(req.client(), client, "{case}");
        assert_eq!(req.scope(), want_scope, "{case}");
        assert_eq!(req.offline_requested(), want_offline, "{case}");
        assert_eq!(
            req.redirect_uri().as_str(),
            want_redirect,
            "{case}: the requested URI is used"
        );
        assert_eq!(Some(req.state().as_str()), params.state, "{case}");
    }
}

// ---------------------------------------------------------------------------
// Location encoding
// ---------------------------------------------------------------------------

#[test]
fn location_percent_encodes_values_and_appends_to_an_existing_query() {
    let tricky = "a b&c=d/?#%+\"<>'x~y.z_-";
    let conf = confidential();
    for (redirect, sep) in [(REDIRECT, '?'), (REDIRECT_Q, '&')] {
        let params = AuthorizeParams {
            redirect_uri: Some(redirect),
            state: Some(tricky),
            ..good()
        };
        let resp = validate(&params, Some(&conf)).unwrap().deny(&issuer());
        let location = resp.location();
        let rest = location.strip_prefix(redirect).unwrap();
        assert!(rest.starts_with(sep), "{location}: separator {sep}");
        assert_eq!(location.matches('?').count(), 1, "{location}: a single '?'");
        assert!(!rest.contains('#') && !rest.contains(' ') && !rest.contains('"'));
        assert!(
            rest.contains("state=a%20b%26c%3Dd%2F%3F%23%25%2B%22%3C%3E%27x~y.z_-"),
            "{location}: only unreserved characters stay as they are"
        );
        assert!(
            rest.contains("iss=https%3A%2F%2Fmedia.example.edu"),
            "{location}"
        );
        assert!(rest.contains("error=access_denied"), "{location}");
        // Round trip: decoding gives back the exact values.
        let (_, pairs) = split_location(&location);
        assert_eq!(query_value(&pairs, "state"), Some(tricky));
        assert_eq!(query_value(&pairs, "iss"), Some(ISS));
        if redirect == REDIRECT_Q {
            assert_eq!(
                pairs[0],
                ("tenant".to_owned(), "7".to_owned()),
                "registered query first"
            );
        }
    }
}

#[test]
fn issuer_drops_a_trailing_slash() {
    assert_eq!(Issuer::new("https://media.example.edu/").as_str(), ISS);
    assert_eq!(Issuer::new(ISS).as_str(), ISS);
}

// ---------------------------------------------------------------------------
// Approve and deny
// ---------------------------------------------------------------------------

#[test]
fn approve_issues_a_bound_code_and_redirects_with_code_state_iss() {
    let conf = confidential();
    let params = AuthorizeParams {
        redirect_uri: Some(REDIRECT_Q),
        scope: Some("read"),
        access_type: Some("offline"),
        code_challenge: Some(CHALLENGE),
        code_challenge_method: Some("S256"),
        ..good()
    };
    let req = validate(&params, Some(&conf)).unwrap();
    let (secret, digest) = TokenKind::Code.mint([3; 32]);
    let (issued, resp) = req.approve(
        user(),
        (secret.clone(), digest),
        ts(NOW),
        ttl(CODE_TTL),
        &issuer(),
    );

    // The response: code, state, iss — nothing else.
    assert_well_formed(&resp, REDIRECT_Q);
    let names: Vec<&str> = resp.params().iter().map(|(k, _)| *k).collect();
    assert_eq!(names, ["code", "state", "iss"]);
    assert_eq!(resp.param("code"), Some(secret.expose()));
    assert!(secret.expose().starts_with("mlc_"));
    assert_eq!(resp.param("state"), Some("xyz-123"));
    assert!(
        resp.location()
            .starts_with("https://lms.example.edu/cb?tenant=7&code=mlc_")
    );

    // What is stored: the digest, never the code, bound to everything (§5).
    assert_eq!(issued.digest, digest);
    assert_eq!(issued.digest, TokenDigest::of(&secret));
    assert_eq!(
        TokenKind::Code.digest_presented(secret.expose()),
        Some(digest)
    );
    assert_eq!(issued.client, cid("lms"));
    assert_eq!(issued.redirect_uri.as_str(), REDIRECT_Q);
    assert_eq!(issued.user, user());
    assert_eq!(issued.scope, scope("read"));
    assert!(issued.offline);
    assert_eq!(
        issued.challenge.as_ref().map(|c| c.as_str()),
        Some(CHALLENGE)
    );
    assert_eq!(issued.expires_at, ts(NOW + CODE_TTL));
}

#[test]
fn approve_without_offline_or_pkce_stores_exactly_that() {
    let (_, issued) = issue(&good(), &confidential(), 4);
    assert!(!issued.offline);
    assert_eq!(issued.challenge, None);
    assert_eq!(issued.scope, ScopeSet::DEFAULT);
    assert_eq!(issued.redirect_uri.as_str(), REDIRECT);
}

#[test]
fn approve_on_a_loopback_port_binds_the_requested_uri() {
    let params = AuthorizeParams {
        redirect_uri: Some("http://127.0.0.1:49152/native"),
        ..good()
    };
    let (_, issued) = issue(&params, &confidential(), 5);
    assert_eq!(
        issued.redirect_uri.as_str(),
        "http://127.0.0.1:49152/native"
    );
}

#[test]
fn deny_redirects_with_access_denied_description_state_and_iss() {
    for redirect in [REDIRECT, REDIRECT_Q] {
        let params = AuthorizeParams {
            redirect_uri: Some(redirect),
            ..good()
        };
        let resp = validate(&params, Some(&confidential()))
            .unwrap()
            .deny(&issuer());
        assert_well_formed(&resp, redirect);
        assert_eq!(resp.param("error"), Some("access_denied"));
        assert!(
            resp.param("error_description")
                .is_some_and(|d| !d.is_empty())
        );
        assert_eq!(resp.param("state"), Some("xyz-123"), "#23");
        assert_eq!(resp.param("code"), None);
    }
}

#[test]
fn a_failed_sign_in_redirects_with_the_code_description_state_and_iss() {
    for (code, word) in [
        (OAuthErrorCode::AccessDenied, "access_denied"),
        (OAuthErrorCode::ServerError, "server_error"),
    ] {
        for redirect in [REDIRECT, REDIRECT_Q] {
            let params = AuthorizeParams {
                redirect_uri: Some(redirect),
                ..good()
            };
            let resp = validate(&params, Some(&confidential())).unwrap().fail(
                code,
                "the identity provider said no",
                &issuer(),
            );
            assert_well_formed(&resp, redirect);
            assert_eq!(resp.param("error"), Some(word));
            assert_eq!(
                resp.param("error_description"),
                Some("the identity provider said no")
            );
            assert_eq!(resp.param("state"), Some("xyz-123"), "#23");
            assert_eq!(resp.param("iss"), Some(issuer().as_str()), "#6");
            assert_eq!(resp.param("code"), None);
        }
    }
}

// ---------------------------------------------------------------------------
// Code redemption
// ---------------------------------------------------------------------------

fn pkce_params() -> AuthorizeParams<'static> {
    AuthorizeParams {
        code_challenge: Some(CHALLENGE),
        code_challenge_method: Some("S256"),
        ..good()
    }
}

#[test]
fn a_code_redeems_into_its_grant() {
    let conf = confidential();
    let lms = cid("lms");
    for (case, params, verifier) in [
        ("no PKCE", good(), None),
        ("PKCE", pkce_params(), Some(VERIFIER)),
        (
            "offline read",
            AuthorizeParams {
                scope: Some("read"),
                access_type: Some("offline"),
                ..good()
            },
            None,
        ),
    ] {
        let (_, issued) = issue(&params, &conf, 6);
        let want = (lms.clone(), user(), issued.scope, issued.offline);
        let p = CodePresentation {
            client: &lms,
            redirect_uri: Some(REDIRECT),
            verifier,
        };
        // One second before expiry is still fine.
        let got = StoredCode::Unused(issued).redeem(&p, ts(NOW + CODE_TTL - 1));
        let got = got.map(|g| (g.client().clone(), g.user(), g.scope(), g.offline()));
        assert_eq!(got, Ok(want), "{case}");
    }
    // A public client with PKCE.
    let publ = public();
    let (_, issued) = issue(&good_public(), &publ, 7);
    let p = CodePresentation {
        client: publ.id(),
        redirect_uri: Some(PUBLIC_REDIRECT),
        verifier: Some(VERIFIER),
    };
    assert!(StoredCode::Unused(issued).redeem(&p, ts(NOW)).is_ok());
}

#[test]
fn code_redemption_refusals() {
    let conf = confidential();
    let lms = cid("lms");
    let other = cid("other");
    let (_, plain) = issue(&good(), &conf, 8);
    let (_, pkce) = issue(&pkce_params(), &conf, 9);
    let loopback_params = AuthorizeParams {
        redirect_uri: Some("http://127.0.0.1:49152/native"),
        ..good()
    };
    let (_, loopback) = issue(&loopback_params, &conf, 10);
    let long_verifier = "a".repeat(129);
    let wrong_verifier = "a".repeat(43);
    let ok = CodePresentation {
        client: &lms,
        redirect_uri: Some(REDIRECT),
        verifier: None,
    };
    let ok_pkce = CodePresentation {
        verifier: Some(VERIFIER),
        ..ok
    };
    let g = grant_id(1);
    let at = ts(NOW);
    // (case, stored code, presentation, time, expected error)
    let cases: Vec<(
        &str,
        StoredCode,
        CodePresentation<'_>,
        Timestamp,
        RedeemError,
    )> = vec![
        (
            "replay (#5)",
            StoredCode::Redeemed { grant: Some(g) },
            ok,
            at,
            RedeemError::Replayed { grant: Some(g) },
        ),
        (
            "replay of a burnt code",
            StoredCode::Redeemed { grant: None },
            ok,
            at,
            RedeemError::Replayed { grant: None },
        ),
        (
            "replay wins over every other defect",
            StoredCode::Redeemed { grant: Some(g) },
            CodePresentation {
                client: &other,
                redirect_uri: None,
                verifier: Some("x"),
            },
            ts(i64::MAX),
            RedeemError::Replayed { grant: Some(g) },
        ),
        (
            "expired exactly at expires_at",
            StoredCode::Unused(plain.clone()),
            ok,
            ts(NOW + CODE_TTL),
            RedeemError::Expired,
        ),
        (
            "expired after",
            StoredCode::Unused(plain.clone()),
            ok,
            ts(NOW + CODE_TTL + 1),
            RedeemError::Expired,
        ),
        (
            "wrong client",
            StoredCode::Unused(plain.clone()),
            CodePresentation {
                client: &other,
                ..ok
            },
            at,
            RedeemError::WrongClient,
        ),
        (
            "redirect_uri absent",
            StoredCode::Unused(plain.clone()),
            CodePresentation {
                redirect_uri: None,
                ..ok
            },
            at,
            RedeemError::RedirectMismatch,
        ),
        (
            "redirect_uri differs",
            StoredCode::Unused(plain.clone()),
            CodePresentation {
                redirect_uri: Some(REDIRECT_Q),
                ..ok
            },
            at,
            RedeemError::RedirectMismatch,
        ),
        (
            "redirect_uri trailing slash",
            StoredCode::Unused(plain.clone()),
            CodePresentation {
                redirect_uri: Some("https://lms.example.edu/cb/"),
                ..ok
            },
            at,
            RedeemError::RedirectMismatch,
        ),
        (
            "redirect_uri empty",
            StoredCode::Unused(plain.clone()),
            CodePresentation {
                redirect_uri: Some(""),
                ..ok
            },
            at,
            RedeemError::RedirectMismatch,
        ),
        (
            "loopback redirect_uri on another port than the request's",
            StoredCode::Unused(loopback.clone()),
            CodePresentation {
                redirect_uri: Some("http://127.0.0.1:49153/native"),
                ..ok
            },
            at,
            RedeemError::RedirectMismatch,
        ),
        (
            "loopback redirect_uri as registered, not as requested",
            StoredCode::Unused(loopback.clone()),
            CodePresentation {
                redirect_uri: Some(REDIRECT_LOOPBACK),
                ..ok
            },
            at,
            RedeemError::RedirectMismatch,
        ),
        (
            "PKCE: missing verifier (#3)",
            StoredCode::Unused(pkce.clone()),
            ok,
            at,
            RedeemError::MissingVerifier,
        ),
        (
            "PKCE: wrong verifier",
            StoredCode::Unused(pkce.clone()),
            CodePresentation {
                verifier: Some(&wrong_verifier),
                ..ok
            },
            at,
            RedeemError::VerifierMismatch,
        ),
        (
            "PKCE: the challenge itself as verifier (plain)",
            StoredCode::Unused(pkce.clone()),
            CodePresentation {
                verifier: Some(CHALLENGE),
                ..ok
            },
            at,
            RedeemError::VerifierMismatch,
        ),
        (
            "PKCE: verifier too short",
            StoredCode::Unused(pkce.clone()),
            CodePresentation {
                verifier: Some(&VERIFIER[..42]),
                ..ok
            },
            at,
            RedeemError::VerifierMismatch,
        ),
        (
            "PKCE: verifier too long",
            StoredCode::Unused(pkce.clone()),
            CodePresentation {
                verifier: Some(&long_verifier),
                ..ok
            },
            at,
            RedeemError::VerifierMismatch,
        ),
        (
            "PKCE: verifier with a reserved character",
            StoredCode::Unused(pkce.clone()),
            CodePresentation {
                verifier: Some("dBjftJeZ4CVP+mB92K27uhbUJU1p1r/wW1gFWFOEjXk"),
                ..ok
            },
            at,
            RedeemError::VerifierMismatch,
        ),
        (
            "PKCE: empty verifier",
            StoredCode::Unused(pkce.clone()),
            CodePresentation {
                verifier: Some(""),
                ..ok
            },
            at,
            RedeemError::VerifierMismatch,
        ),
        (
            "PKCE downgrade: verifier without challenge (#4)",
            StoredCode::Unused(plain.clone()),
            ok_pkce,
            at,
            RedeemError::UnexpectedVerifier,
        ),
        (
            "PKCE downgrade: even an empty verifier",
            StoredCode::Unused(plain.clone()),
            CodePresentation {
                verifier: Some(""),
                ..ok
            },
            at,
            RedeemError::UnexpectedVerifier,
        ),
    ];
    for (case, stored, p, now, want) in cases {
        let got = stored.redeem(&p, now);
        assert_eq!(got, Err(want.clone()), "{case}");
        assert_eq!(
            want.error_code(),
            OAuthErrorCode::InvalidGrant,
            "{case}: every refusal is invalid_grant"
        );
        assert!(!want.to_string().is_empty());
    }
}

// ---------------------------------------------------------------------------
// Minting and access tokens
// ---------------------------------------------------------------------------

/// A grant as only the domain makes one: by redeeming a code.
fn spec(offline: bool, s: ScopeSet) -> GrantSpec {
    let lms = cid("lms");
    let code = IssuedCode {
        digest: TokenDigest::of(&Secret::new("mlc_spec")),
        client: lms.clone(),
        redirect_uri: RedirectUri::parse(REDIRECT).unwrap(),
        user: user(),
        scope: s,
        offline,
        challenge: None,
        expires_at: ts(NOW + CODE_TTL),
    };
    let p = CodePresentation {
        client: &lms,
        redirect_uri: Some(REDIRECT),
        verifier: None,
    };
    StoredCode::Unused(code).redeem(&p, ts(NOW)).unwrap()
}

#[test]
fn mint_tokens_gives_a_refresh_token_only_when_offline() {
    for (offline, s) in [
        (false, ScopeSet::DEFAULT),
        (true, ScopeSet::DEFAULT),
        (true, scope("read")),
        (false, scope("write")),
    ] {
        let t = mint_tokens(&spec(offline, s), rnd(1, 2), ts(NOW), lifetimes());
        assert_eq!(t.scope, s);
        let a = &t.access;
        assert!(a.secret.expose().starts_with("mla_"), "access prefix");
        assert_eq!(a.secret.expose().len(), 4 + 43, "256 bits");
        assert_eq!(a.digest, TokenDigest::of(&a.secret));
        assert_eq!(
            TokenKind::Access.digest_presented(a.secret.expose()),
            Some(a.digest)
        );
        assert_eq!(a.expires_at, ts(NOW + ACCESS_TTL));
        match (&t.refresh, offline) {
            (None, false) => {}
            (Some(r), true) => {
                assert!(r.secret.expose().starts_with("mlr_"), "refresh prefix");
                assert_eq!(r.digest, TokenDigest::of(&r.secret));
                assert_eq!(
                    TokenKind::Refresh.digest_presented(r.secret.expose()),
                    Some(r.digest)
                );
                assert_eq!(TokenKind::Access.digest_presented(r.secret.expose()), None);
                assert_eq!(r.expires_at, ts(NOW + REFRESH_TTL));
                assert_ne!(r.digest, a.digest);
            }
            (r, _) => panic!("offline={offline}: refresh {r:?}"),
        }
    }
}

fn access_record(revoked: bool) -> AccessTokenRecord {
    AccessTokenRecord {
        grant: grant_id(2),
        user: user(),
        client: cid("lms"),
        scope: scope("read"),
        expires_at: ts(NOW + ACCESS_TTL),
        revoked: Revocation {
            token: revoked,
            grant: false,
        },
    }
}

#[test]
fn access_token_checks() {
    let exp = NOW + ACCESS_TTL;
    let cases: Vec<(&str, bool, i64, Result<i64, AccessTokenInvalid>)> = vec![
        ("fresh", false, NOW, Ok(ACCESS_TTL)),
        ("last second", false, exp - 1, Ok(1)),
        (
            "expired exactly at expires_at",
            false,
            exp,
            Err(AccessTokenInvalid::Expired),
        ),
        (
            "expired after",
            false,
            exp + 1,
            Err(AccessTokenInvalid::Expired),
        ),
        ("revoked", true, NOW, Err(AccessTokenInvalid::Revoked)),
        (
            "revoked and expired",
            true,
            exp + 1,
            Err(AccessTokenInvalid::Revoked),
        ),
    ];
    for (case, revoked, now, want) in cases {
        let got = access_record(revoked).check(ts(now));
        match (got, want) {
            (Ok(active), Ok(expires_in)) => {
                assert_eq!(active.expires_in(), expires_in, "{case}");
                assert_eq!(active.grant(), grant_id(2), "{case}");
                assert_eq!(active.user(), user(), "{case}");
                assert_eq!(active.client(), &cid("lms"), "{case}");
                assert_eq!(active.scope(), scope("read"), "{case}");
            }
            (got, want) => assert_eq!(got.map(|a| a.expires_in()), want, "{case}"),
        }
    }
}

// ---------------------------------------------------------------------------
// Refresh rotation
// ---------------------------------------------------------------------------

fn refresh_record(state: RefreshTokenState, s: ScopeSet) -> (Secret, RefreshTokenRecord) {
    let (secret, digest) = TokenKind::Refresh.mint([20; 32]);
    let rec = RefreshTokenRecord {
        digest,
        grant: grant_id(3),
        client: cid("lms"),
        user: user(),
        scope: s,
        expires_at: ts(NOW + REFRESH_TTL),
        spent: (state == RefreshTokenState::Used).then_some(Spent {
            at: ts(NOW),
            successor: None,
        }),
        revoked: Revocation {
            token: false,
            grant: state == RefreshTokenState::Revoked,
        },
    };
    assert_eq!(rec.state(), state);
    (secret, rec)
}

#[test]
fn refresh_rotation_mints_a_new_pair() {
    let lms = cid("lms");
    for (case, asked, want_scope) in [
        ("same scope", None, ScopeSet::DEFAULT),
        (
            "explicitly the same",
            Some(ScopeSet::DEFAULT),
            ScopeSet::DEFAULT,
        ),
        ("narrower: read", Some(scope("read")), scope("read")),
        ("narrower: write", Some(scope("write")), scope("write")),
    ] {
        let (_, rec) = refresh_record(RefreshTokenState::Valid, ScopeSet::DEFAULT);
        let spent = rec.digest;
        let p = RefreshPresentation {
            client: &lms,
            scope: asked,
        };
        let now = NOW + REFRESH_TTL - 1;
        let rot = rec.rotate(&p, rnd(21, 22), ts(now), lifetimes()).unwrap();
        assert_eq!(rot.spent(), spent, "{case}");
        assert_eq!(rot.grant(), grant_id(3), "{case}");
        assert_eq!(rot.scope(), want_scope, "{case}");
        let new_refresh = rot.refresh();
        assert!(new_refresh.secret.expose().starts_with("mlr_"));
        assert!(rot.access().secret.expose().starts_with("mla_"));
        assert_ne!(
            new_refresh.digest, spent,
            "{case}: new refresh digest differs from the spent one"
        );
        assert_ne!(rot.access().digest, spent, "{case}");
        assert_ne!(rot.access().digest, new_refresh.digest, "{case}");
        assert_eq!(
            new_refresh.expires_at,
            ts(now + REFRESH_TTL),
            "{case}: idle expiry restarts"
        );
        assert_eq!(rot.access().expires_at, ts(now + ACCESS_TTL), "{case}");
    }
}

#[test]
fn refresh_rotation_refusals() {
    let lms = cid("lms");
    let other = cid("other");
    let exp = NOW + REFRESH_TTL;
    let ok = RefreshPresentation {
        client: &lms,
        scope: None,
    };
    use RefreshTokenState::{Revoked, Used, Valid};
    // (case, state, granted scope, presentation, now, expected)
    let cases: Vec<(
        &str,
        RefreshTokenState,
        ScopeSet,
        RefreshPresentation<'_>,
        i64,
        RefreshError,
    )> = vec![
        (
            "reuse (#10)",
            Used,
            ScopeSet::DEFAULT,
            ok,
            NOW,
            RefreshError::Reused { grant: grant_id(3) },
        ),
        (
            "reuse by another client, expired, widened: still reuse",
            Used,
            scope("read"),
            RefreshPresentation {
                client: &other,
                scope: Some(ScopeSet::DEFAULT),
            },
            exp + 10,
            RefreshError::Reused { grant: grant_id(3) },
        ),
        (
            "revoked",
            Revoked,
            ScopeSet::DEFAULT,
            ok,
            NOW,
            RefreshError::Revoked,
        ),
        (
            "wrong client (#9)",
            Valid,
            ScopeSet::DEFAULT,
            RefreshPresentation {
                client: &other,
                ..ok
            },
            NOW,
            RefreshError::WrongClient,
        ),
        (
            "expired exactly at expires_at (#11)",
            Valid,
            ScopeSet::DEFAULT,
            ok,
            exp,
            RefreshError::Expired,
        ),
        (
            "expired after",
            Valid,
            ScopeSet::DEFAULT,
            ok,
            exp + 1,
            RefreshError::Expired,
        ),
        (
            "wider scope (#9)",
            Valid,
            scope("read"),
            RefreshPresentation {
                scope: Some(ScopeSet::DEFAULT),
                ..ok
            },
            NOW,
            RefreshError::ScopeWidened,
        ),
        (
            "other scope",
            Valid,
            scope("read"),
            RefreshPresentation {
                scope: Some(scope("write")),
                ..ok
            },
            NOW,
            RefreshError::ScopeWidened,
        ),
    ];
    for (case, state, granted, p, now, want) in cases {
        let (_, rec) = refresh_record(state, granted);
        let got = rec.rotate(&p, rnd(30, 31), ts(now), lifetimes());
        assert_eq!(got, Err(want.clone()), "{case}");
        let code = if want == RefreshError::ScopeWidened {
            OAuthErrorCode::InvalidScope
        } else {
            OAuthErrorCode::InvalidGrant
        };
        assert_eq!(want.error_code(), code, "{case}");
    }
    assert_eq!(
        RefreshError::ScopeWidened.error_code().as_str(),
        "invalid_scope"
    );
    assert_eq!(RefreshError::Revoked.error_code().as_str(), "invalid_grant");
}

// ---------------------------------------------------------------------------
// End to end
// ---------------------------------------------------------------------------

/// authorize → approve → redeem → mint → use → refresh → refresh reuse, with an
/// in-memory "adapter" doing what the stores do.
#[test]
fn whole_lifecycle() {
    let conf = confidential();
    let lms = cid("lms");
    let params = AuthorizeParams {
        access_type: Some("offline"),
        scope: Some("read"),
        ..pkce_params()
    };
    let (code, issued) = issue(&params, &conf, 40);

    // The token endpoint finds the code by the digest of what is presented.
    let presented = TokenKind::Code.digest_presented(code.expose()).unwrap();
    assert_eq!(presented, issued.digest);
    let p = CodePresentation {
        client: &lms,
        redirect_uri: Some(REDIRECT),
        verifier: Some(VERIFIER),
    };
    let now = NOW + 5;
    let grant = StoredCode::Unused(issued).redeem(&p, ts(now)).unwrap();
    assert!(grant.offline());
    let g = grant_id(4);
    // The adapter marks the code redeemed; a replay names the grant to revoke.
    assert_eq!(
        StoredCode::Redeemed { grant: Some(g) }.redeem(&p, ts(now + 1)),
        Err(RedeemError::Replayed { grant: Some(g) })
    );

    let tokens = mint_tokens(&grant, rnd(41, 42), ts(now), lifetimes());
    let access = AccessTokenRecord {
        grant: g,
        user: grant.user(),
        client: grant.client().clone(),
        scope: tokens.scope,
        expires_at: tokens.access.expires_at,
        revoked: Revocation::NONE,
    };
    let active = access.check(ts(now + 10)).unwrap();
    assert_eq!(active.expires_in(), ACCESS_TTL - 10);
    assert_eq!(active.scope(), scope("read"));

    let refresh = tokens.refresh.unwrap();
    let record = RefreshTokenRecord {
        digest: refresh.digest,
        grant: g,
        client: grant.client().clone(),
        user: grant.user(),
        scope: tokens.scope,
        expires_at: refresh.expires_at,
        spent: None,
        revoked: Revocation::NONE,
    };
    let rp = RefreshPresentation {
        client: &lms,
        scope: None,
    };
    let rot = record
        .clone()
        .rotate(&rp, rnd(43, 44), ts(now + 100), lifetimes())
        .unwrap();
    assert_eq!(rot.spent(), refresh.digest);
    assert_eq!(
        rot.scope(),
        scope("read"),
        "the consented scope carries over"
    );
    let spent = RefreshTokenRecord {
        spent: Some(Spent {
            at: ts(now + 100),
            successor: None,
        }),
        ..record
    };
    assert_eq!(
        spent.rotate(&rp, rnd(45, 46), ts(now + 200), lifetimes()),
        Err(RefreshError::Reused { grant: g })
    );
}

// ---------------------------------------------------------------------------
// Refresh retries (docs/security.md, "Refresh retries")
// ---------------------------------------------------------------------------

const GRACE: i64 = 30;

/// A refresh token of client `lms`, spent at `NOW` into the pair `successor`.
fn spent_token(successor: Option<Successor>) -> RefreshTokenRecord {
    let (_, digest) = TokenKind::Refresh.mint([7; 32]);
    RefreshTokenRecord {
        digest,
        grant: grant_id(9),
        client: cid("lms"),
        user: user(),
        scope: scope("read write"),
        expires_at: ts(NOW + REFRESH_TTL),
        spent: Some(Spent {
            at: ts(NOW),
            successor,
        }),
        revoked: Revocation::NONE,
    }
}

fn successor(untouched: bool) -> Successor {
    Successor {
        refresh: TokenKind::Refresh.mint([8; 32]).1,
        access: TokenKind::Access.mint([9; 32]).1,
        untouched,
    }
}

fn with_grace() -> TokenLifetimes {
    TokenLifetimes {
        retry_grace: Some(ttl(GRACE)),
        ..lifetimes()
    }
}

/// A retry of a rotation whose answer was lost (the same client, soon, the pair it gave
/// untouched) gets a new pair in place of that one; the strict rule still holds without a
/// grace.
#[test]
fn a_retry_within_the_grace_gets_a_new_pair_in_place_of_the_untouched_one() {
    let lms = cid("lms");
    let rp = RefreshPresentation {
        client: &lms,
        scope: None,
    };
    let before = successor(true);
    let rot = spent_token(Some(before))
        .rotate(&rp, rnd(50, 51), ts(NOW + GRACE - 1), with_grace())
        .unwrap();
    assert_eq!(rot.supersedes(), Some(before));
    assert_ne!(rot.refresh().digest, before.refresh, "a new pair");
    assert_eq!(rot.scope(), scope("read write"));
    // A first rotation supersedes nothing.
    let fresh = RefreshTokenRecord {
        spent: None,
        ..spent_token(None)
    };
    let first = fresh
        .rotate(&rp, rnd(52, 53), ts(NOW), with_grace())
        .unwrap();
    assert_eq!(first.supersedes(), None);
    // Without a grace it is reuse, as before.
    assert_eq!(
        spent_token(Some(before)).rotate(&rp, rnd(54, 55), ts(NOW + 1), lifetimes()),
        Err(RefreshError::Reused { grant: grant_id(9) })
    );
}

/// What still counts as reuse and revokes the family: the pair was used, the grace is over,
/// another client presents it, the grant was revoked, or the token was superseded by an
/// earlier retry (it has no pair of its own any more).
#[test]
fn replays_are_still_reuse_with_a_grace() {
    let lms = cid("lms");
    let other = cid("other");
    let rp = RefreshPresentation {
        client: &lms,
        scope: None,
    };
    let reused = Err(RefreshError::Reused { grant: grant_id(9) });
    let cases = [
        (
            "the pair it gave was used",
            spent_token(Some(successor(false))),
            &lms,
            NOW + 1,
        ),
        (
            "the grace is over",
            spent_token(Some(successor(true))),
            &lms,
            NOW + GRACE,
        ),
        (
            "another client",
            spent_token(Some(successor(true))),
            &other,
            NOW + 1,
        ),
        ("superseded by a retry", spent_token(None), &lms, NOW + 1),
        (
            "its grant was revoked",
            RefreshTokenRecord {
                revoked: Revocation {
                    token: false,
                    grant: true,
                },
                ..spent_token(Some(successor(true)))
            },
            &lms,
            NOW + 1,
        ),
    ];
    for (why, record, client, at) in cases {
        let p = RefreshPresentation { client, ..rp };
        assert_eq!(
            record.rotate(&p, rnd(60, 61), ts(at), with_grace()),
            reused,
            "{why}"
        );
    }
}
