//! The authorization server's JSON endpoints over real HTTP, on SQLite and PostgreSQL:
//! the token endpoint (code exchange, refresh, client authentication, every refusal),
//! revocation (RFC 7009), introspection (RFC 7662), the metadata document (RFC 8414),
//! token info, and logout.
//!
//! Codes come from the authorization use cases on the app's database (the browser pages
//! are tested in `pages`); everything a client does with them goes over HTTP.

use std::time::Duration;

use medialib::configuration::{BaseUrl, SettingsLoader};
use medialib::startup;
use medialib_adapters_diesel::{Database, PoolOptions};
use medialib_domain::oauth::{AuthorizeParams, CodeChallenge, CodeVerifier};
use medialib_domain::{Secret, User};
use medialib_ports::services::ClientCredentials;
use medialib_ports::{Credentials, Services};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use super::{Answer, Backend, OAuthApp, PASSWORD};
use crate::api::REDIRECT;

const TOKEN: &str = "/api/oauth/access_token";
const REVOKE: &str = "/api/oauth/revoke";
const INTROSPECT: &str = "/api/oauth/introspect";
const LOGOUT: &str = "/api/logout";
const OTHER_REDIRECT: &str = "https://lms.example.edu/other-callback";
/// RFC 7636 Appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
/// Well-formed, but not the verifier of [`VERIFIER`]'s challenge.
const WRONG_VERIFIER: &str = "0000000000000000000000000000000000000000000";
const LMS: &str = "https://lms.example.edu";
/// Well-formed (prefix and 43 characters) but never issued: reaches the store.
const WELL_FORMED_UNKNOWN_CODE: &str = "mlc_0000000000000000000000000000000000000000000";
/// Well-formed but never issued.
const WELL_FORMED_UNKNOWN_REFRESH: &str = "mlr_0000000000000000000000000000000000000000000";

/// What the user is asked to approve.
#[derive(Debug, Clone, Copy, Default)]
struct Ask<'a> {
    scope: Option<&'a str>,
    offline: bool,
    challenge: Option<&'a str>,
    redirect_uri: Option<&'a str>,
}

impl Ask<'_> {
    fn offline() -> Self {
        Self {
            offline: true,
            ..Self::default()
        }
    }
}

/// A running app with a confidential client and a user.
struct Setup {
    app: OAuthApp,
    client: ClientCredentials,
    user: User,
}

impl Setup {
    async fn start(b: Backend) -> Self {
        Self::start_with(b, |l| l).await
    }

    async fn start_with(
        b: Backend,
        configure: impl FnOnce(SettingsLoader) -> SettingsLoader,
    ) -> Self {
        let app = OAuthApp::start_with(b, configure).await;
        let client = app.register("LMS", &[REDIRECT, OTHER_REDIRECT], false);
        let user = app.user_with_password("alice", PASSWORD);
        Self { app, client, user }
    }

    fn services(&self) -> &Services {
        &self.app.api.services
    }

    /// A code for `client`, approved by the user.
    fn code_for(&self, client: &ClientCredentials, ask: Ask<'_>) -> String {
        code_from(self.services(), client, &self.user, ask)
    }

    /// A code for the setup's client.
    fn code(&self, ask: Ask<'_>) -> String {
        self.code_for(&self.client, ask)
    }

    fn post(&self, path: &str) -> RequestBuilder {
        self.app.api.app.client.post(self.app.url(path))
    }

    async fn send(&self, req: RequestBuilder) -> Answer {
        self.app.api.send(req).await
    }

    /// A form POST to `path` with `client`'s credentials in the body.
    async fn form(
        &self,
        path: &str,
        client: &ClientCredentials,
        fields: &[(&str, &str)],
    ) -> Answer {
        let mut all = fields.to_vec();
        all.extend(body_credentials(client));
        self.send(self.post(path).form(&all)).await
    }

    /// Redeems `code` (form body, body credentials, the default redirect URI).
    async fn exchange(&self, client: &ClientCredentials, code: &str) -> Answer {
        self.form(
            TOKEN,
            client,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", REDIRECT),
            ],
        )
        .await
    }

    /// Redeems `code` and asserts success.
    async fn tokens(&self, code: &str) -> Value {
        let a = self.exchange(&self.client, code).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        a.json
    }

    async fn refresh(&self, client: &ClientCredentials, refresh_token: &str) -> Answer {
        self.form(
            TOKEN,
            client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
            ],
        )
        .await
    }

    /// `GET /api/authenticate` with `token`: whether the API takes it.
    async fn authenticated(&self, token: &str) -> bool {
        let a = self.app.api.get("/api/authenticate", Some(token)).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        a.json["authenticated"] == "true"
    }

    /// A media call that needs authentication (a 404 for an unknown object once past it).
    async fn media_call(&self, token: &str) -> Answer {
        self.app
            .api
            .get(
                "/api/contribute/o/0123456789abcdef0123456789abcdef",
                Some(token),
            )
            .await
    }

    async fn assert_alive(&self, token: &str) {
        assert!(self.authenticated(token).await, "token should work");
        let a = self.media_call(token).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{a:?}");
    }

    async fn assert_dead(&self, token: &str) {
        assert!(!self.authenticated(token).await, "token should not work");
        let a = self.media_call(token).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{a:?}");
        assert_eq!(a.json["message"], "invalid or expired credentials");
        assert_eq!(
            header(&a.headers, "www-authenticate"),
            r#"Bearer error="invalid_token""#
        );
    }
}

fn code_from(services: &Services, client: &ClientCredentials, user: &User, ask: Ask<'_>) -> String {
    let params = AuthorizeParams {
        response_type: Some("code"),
        client_id: Some(&client.client_id),
        redirect_uri: Some(ask.redirect_uri.unwrap_or(REDIRECT)),
        state: Some("st"),
        scope: ask.scope,
        access_type: ask.offline.then_some("offline"),
        code_challenge: ask.challenge,
        code_challenge_method: ask.challenge.map(|_| "S256"),
        repeated: None,
    };
    let request = services.oauth().start_authorization(&params).unwrap();
    let response = services
        .oauth()
        .approve_authorization(request, user.id)
        .unwrap();
    response.param("code").unwrap().to_owned()
}

fn body_credentials(client: &ClientCredentials) -> Vec<(&str, &str)> {
    let mut fields = vec![("client_id", client.client_id.as_str())];
    if let Some(s) = &client.client_secret {
        fields.push(("client_secret", s.expose()));
    }
    fields
}

fn secret(client: &ClientCredentials) -> &str {
    client.client_secret.as_ref().unwrap().expose()
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or_else(|| panic!("no {name} header in {h:?}"))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

fn challenge() -> String {
    CodeChallenge::of(&CodeVerifier::parse(VERIFIER).unwrap())
        .as_str()
        .to_owned()
}

/// An RFC 6749 §5.2 error: status, `error`, `error_description` = `message`, no-store.
fn assert_oauth_error(a: &Answer, status: u16, error: &str) {
    assert_eq!(a.status.as_u16(), status, "{a:?}");
    assert_eq!(a.json["error"], error, "{a:?}");
    assert!(a.json["error_description"].is_string(), "{a:?}");
    assert_eq!(a.json["message"], a.json["error_description"], "{a:?}");
    assert_eq!(header(&a.headers, "cache-control"), "no-store");
    if error == "invalid_client" {
        assert!(header(&a.headers, "www-authenticate").starts_with("Basic"));
    }
}

/// A successful token response: shape and headers (RFC 6749 §5.1).
fn assert_token_response(a: &Answer, scope: &str, refresh: bool) {
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(header(&a.headers, "cache-control"), "no-store");
    assert_eq!(header(&a.headers, "pragma"), "no-cache");
    assert!(header(&a.headers, "content-type").starts_with("application/json"));
    let j = &a.json;
    assert_eq!(j["token_type"], "Bearer");
    assert!(str_of(j, "access_token").starts_with("mla_"));
    let expires_in = j["expires_in"].as_i64().unwrap();
    assert!((3590..=3600).contains(&expires_in), "{expires_in}");
    assert_eq!(j["scope"], scope);
    assert_eq!(
        j.get("refresh_token").is_some(),
        refresh,
        "refresh_token present only for offline grants: {j}"
    );
    if refresh {
        assert!(str_of(j, "refresh_token").starts_with("mlr_"));
    }
}

// ---------------------------------------------------------------- the token endpoint

async fn code_exchange_with_a_json_body_and_body_credentials(b: Backend) {
    let s = Setup::start(b).await;
    let code = s.code(Ask::default());
    let body = json!({
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": s.client.client_id,
        "client_secret": secret(&s.client),
    });
    let a = s.send(s.post(TOKEN).json(&body)).await;
    assert_token_response(&a, "read write", false);
    s.assert_alive(str_of(&a.json, "access_token")).await;
}

async fn code_exchange_with_a_form_body_and_basic_credentials(b: Backend) {
    let s = Setup::start(b).await;
    let code = s.code(Ask::default());
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
    ];
    // RFC 6749 §2.3.1: the id and secret are form-urlencoded inside Basic; a client that
    // encodes a character that needs none (here a dash as %2D) must still be understood.
    let encoded_id = s.client.client_id.replacen('-', "%2D", 1);
    assert_ne!(encoded_id, s.client.client_id);
    let req = s
        .post(TOKEN)
        .basic_auth(encoded_id, Some(secret(&s.client)))
        .form(&fields);
    let a = s.send(req).await;
    assert_token_response(&a, "read write", false);
    s.assert_alive(str_of(&a.json, "access_token")).await;
}

async fn both_authorization_schemes_work_on_media_calls(b: Backend) {
    let s = Setup::start(b).await;
    let tokens = s.tokens(&s.code(Ask::default())).await;
    let token = str_of(&tokens, "access_token");
    let create = s
        .app
        .api
        .app
        .client
        .put(s.app.url("/api/describe/c/0/o/0"))
        .header("Authorization", format!("Bearer {token}"))
        .form(&[("type", "catalog"), ("title", "Lectures")]);
    let a = s.send(create).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let lib = str_of(&a.json, "uuid").to_owned();
    let read = s
        .app
        .api
        .app
        .client
        .get(s.app.url(&format!("/api/describe/c/{lib}/o/{lib}")))
        .header("Authorization", format!("OAuth {token}"));
    let a = s.send(read).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["title"], "Lectures");
    assert_eq!(a.json["authenticated"], "true");
    assert_eq!(a.json["userId"], s.user.id.to_string());
}

async fn refresh_token_only_with_offline_access(b: Backend) {
    let s = Setup::start(b).await;
    let online = s.exchange(&s.client, &s.code(Ask::default())).await;
    assert_token_response(&online, "read write", false);
    let offline = s.exchange(&s.client, &s.code(Ask::offline())).await;
    assert_token_response(&offline, "read write", true);
    let read_only = Ask {
        scope: Some("read"),
        offline: true,
        ..Ask::default()
    };
    let a = s.exchange(&s.client, &s.code(read_only)).await;
    assert_token_response(&a, "read", true);
}

async fn redirect_uri_must_match_the_authorization_request(b: Backend) {
    let s = Setup::start(b).await;
    // Both URIs are registered; the code was issued for REDIRECT only.
    let code = s.code(Ask::default());
    let a = s
        .form(
            TOKEN,
            &s.client,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", OTHER_REDIRECT),
            ],
        )
        .await;
    assert_oauth_error(&a, 400, "invalid_grant");
    // Leaving redirect_uri out does not skip the check.
    let code = s.code(Ask::default());
    let a = s
        .form(
            TOKEN,
            &s.client,
            &[("grant_type", "authorization_code"), ("code", &code)],
        )
        .await;
    assert_oauth_error(&a, 400, "invalid_grant");
    // The other URI works for a code issued for it.
    let code = s.code(Ask {
        redirect_uri: Some(OTHER_REDIRECT),
        ..Ask::default()
    });
    let a = s
        .form(
            TOKEN,
            &s.client,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", OTHER_REDIRECT),
            ],
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
}

async fn wrong_client_secret_is_invalid_client(b: Backend) {
    let s = Setup::start(b).await;
    let code = s.code(Ask::default());
    let wrong = ClientCredentials {
        client_id: s.client.client_id.clone(),
        client_secret: Some(Secret::new("mls_not-the-secret")),
    };
    let a = s.exchange(&wrong, &code).await;
    assert_oauth_error(&a, 401, "invalid_client");
    assert_eq!(
        header(&a.headers, "www-authenticate"),
        r#"Basic realm="medialib""#
    );
    // Over Basic too.
    let req = s
        .post(TOKEN)
        .basic_auth(&s.client.client_id, Some("mls_wrong"))
        .form(&[("grant_type", "authorization_code"), ("code", &code)]);
    assert_oauth_error(&s.send(req).await, 401, "invalid_client");
    // No secret for a confidential client, and an unknown client.
    let none = ClientCredentials {
        client_id: s.client.client_id.clone(),
        client_secret: None,
    };
    assert_oauth_error(&s.exchange(&none, &code).await, 401, "invalid_client");
    let unknown = ClientCredentials {
        client_id: "0123456789abcdef0123456789abcdef".into(),
        client_secret: Some(Secret::new("mls_x")),
    };
    assert_oauth_error(&s.exchange(&unknown, &code).await, 401, "invalid_client");
    // The code was never reached: the right client can still redeem it.
    s.tokens(&code).await;
}

async fn code_replay_fails_and_revokes_the_first_tokens(b: Backend) {
    let s = Setup::start(b).await;
    let code = s.code(Ask::offline());
    let first = s.tokens(&code).await;
    let access = str_of(&first, "access_token");
    s.assert_alive(access).await;
    let again = s.exchange(&s.client, &code).await;
    assert_oauth_error(&again, 400, "invalid_grant");
    s.assert_dead(access).await;
    let a = s.refresh(&s.client, str_of(&first, "refresh_token")).await;
    assert_oauth_error(&a, 400, "invalid_grant");
}

async fn expired_codes_are_refused(b: Backend) {
    let s = Setup::start_with(b, |l| l.set("code_ttl", "1")).await;
    // Codes get their expiry when issued, in whole seconds. A code issued with a one-second
    // lifetime at x.999 s has expired at x+1 s, so the fresh code gets the default lifetime
    // (a one-second code failed this way once, its exchange on a loaded machine crossing
    // the second), and the expiring one a second and then over two seconds of waiting.
    let fresh = code_from(
        &services_with(&s.app, |l| l),
        &s.client,
        &s.user,
        Ask::default(),
    );
    s.tokens(&fresh).await;
    let services = services_with(&s.app, |l| l.set("code_ttl", "1"));
    let code = code_from(&services, &s.client, &s.user, Ask::default());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let a = s.exchange(&s.client, &code).await;
    assert_oauth_error(&a, 400, "invalid_grant");
}

/// With the retry grace off, the used refresh token presented again is reuse at once.
async fn refresh_rotates_and_reuse_revokes_the_family(b: Backend) {
    let s = Setup::start_with(b, |l| l.set("refresh_token_retry_grace", "0")).await;
    let first = s.tokens(&s.code(Ask::offline())).await;
    let r1 = str_of(&first, "refresh_token");
    let a = s.refresh(&s.client, r1).await;
    assert_token_response(&a, "read write", true);
    let second = a.json;
    let (a2, r2) = (
        str_of(&second, "access_token"),
        str_of(&second, "refresh_token"),
    );
    assert_ne!(r1, r2, "rotated");
    s.assert_alive(a2).await;
    // The used refresh token again: refused, and the whole grant goes.
    let reuse = s.refresh(&s.client, r1).await;
    assert_oauth_error(&reuse, 400, "invalid_grant");
    s.assert_dead(a2).await;
    s.assert_dead(str_of(&first, "access_token")).await;
    assert_oauth_error(&s.refresh(&s.client, r2).await, 400, "invalid_grant");
}

/// The answer to a refresh was lost (a crash, a cut connection) and the client retries with
/// the same token within the grace (30 s by default): it gets a new pair in place of the one
/// it never received, which is dead; presenting that lost pair's refresh token later is reuse
/// and revokes the family, so a replay is still caught.
async fn a_refresh_whose_answer_was_lost_is_retried_within_the_grace(b: Backend) {
    let s = Setup::start(b).await;
    let first = s.tokens(&s.code(Ask::offline())).await;
    let r1 = str_of(&first, "refresh_token");
    let lost = s.refresh(&s.client, r1).await;
    assert_token_response(&lost, "read write", true);
    let (lost_access, lost_refresh) = (
        str_of(&lost.json, "access_token"),
        str_of(&lost.json, "refresh_token"),
    );
    let retry = s.refresh(&s.client, r1).await;
    assert_token_response(&retry, "read write", true);
    let (a2, r2) = (
        str_of(&retry.json, "access_token"),
        str_of(&retry.json, "refresh_token"),
    );
    assert_ne!(r2, lost_refresh, "a new pair");
    s.assert_alive(a2).await;
    s.assert_dead(lost_access).await;
    // The retry's pair rotates as any other.
    let next = s.refresh(&s.client, r2).await;
    assert_token_response(&next, "read write", true);
    let a3 = str_of(&next.json, "access_token");
    s.assert_alive(a3).await;
    // The lost pair's refresh token, presented after all: reuse, the family goes.
    assert_oauth_error(
        &s.refresh(&s.client, lost_refresh).await,
        400,
        "invalid_grant",
    );
    s.assert_dead(a3).await;
    assert_oauth_error(
        &s.refresh(&s.client, str_of(&next.json, "refresh_token"))
            .await,
        400,
        "invalid_grant",
    );
}

/// With the grace on, what is not a retry is still reuse: the spent token presented once its
/// pair was used, or after the grace, revokes the family.
async fn replays_are_caught_despite_the_retry_grace(b: Backend) {
    let s = Setup::start_with(b, |l| l.set("refresh_token_retry_grace", "1")).await;
    // The pair was used: the old token again is a replay.
    let first = s.tokens(&s.code(Ask::offline())).await;
    let r1 = str_of(&first, "refresh_token");
    let second = s.refresh(&s.client, r1).await;
    let r2 = str_of(&second.json, "refresh_token");
    let third = s.refresh(&s.client, r2).await;
    let a3 = str_of(&third.json, "access_token");
    s.assert_alive(a3).await;
    assert_oauth_error(&s.refresh(&s.client, r1).await, 400, "invalid_grant");
    s.assert_dead(a3).await;
    // After the grace (1 s here): a replay, though the pair is untouched.
    let other = s.tokens(&s.code(Ask::offline())).await;
    let r1 = str_of(&other, "refresh_token");
    let second = s.refresh(&s.client, r1).await;
    let a2 = str_of(&second.json, "access_token");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_oauth_error(&s.refresh(&s.client, r1).await, 400, "invalid_grant");
    s.assert_dead(a2).await;
}

async fn refresh_by_another_client_is_invalid_grant(b: Backend) {
    let s = Setup::start(b).await;
    let other = s.app.register("Other LMS", &[REDIRECT], false);
    let tokens = s.tokens(&s.code(Ask::offline())).await;
    let a = s.refresh(&other, str_of(&tokens, "refresh_token")).await;
    assert_oauth_error(&a, 400, "invalid_grant");
}

/// The refresh grant authenticates the client in the same atomic step as the rotation: a
/// wrong, missing or unknown client is `invalid_client` and leaves the token unspent (and
/// its family alive), and that check comes before any check of the token itself.
async fn refresh_with_failed_client_authentication_leaves_the_token_unspent(b: Backend) {
    let s = Setup::start(b).await;
    let tokens = s.tokens(&s.code(Ask::offline())).await;
    let access = str_of(&tokens, "access_token");
    let refresh = str_of(&tokens, "refresh_token");
    let wrong = ClientCredentials {
        client_id: s.client.client_id.clone(),
        client_secret: Some(Secret::new("mls_not-the-secret")),
    };
    let none = ClientCredentials {
        client_id: s.client.client_id.clone(),
        client_secret: None,
    };
    let unknown = ClientCredentials {
        client_id: "0123456789abcdef0123456789abcdef".into(),
        client_secret: Some(Secret::new("mls_x")),
    };
    for client in [&wrong, &none, &unknown] {
        let a = s.refresh(client, refresh).await;
        assert_oauth_error(&a, 401, "invalid_client");
        // An unknown or malformed token with bad credentials: still the client's error.
        for token in [WELL_FORMED_UNKNOWN_REFRESH, "not-a-refresh-token"] {
            let a = s.refresh(client, token).await;
            assert_oauth_error(&a, 401, "invalid_client");
        }
    }
    s.assert_alive(access).await;
    // The token was never spent: the right client rotates it once.
    let a = s.refresh(&s.client, refresh).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    s.assert_alive(str_of(&a.json, "access_token")).await;
}

/// A code presented by another, authenticated client is `invalid_grant` and burns the code
/// (a failed redemption spends it): the client it was issued to gets nothing afterwards, and
/// unknown or malformed codes with bad credentials are the client's error first.
async fn code_presented_by_another_client_is_invalid_grant_and_burnt(b: Backend) {
    let s = Setup::start(b).await;
    let other = s.app.register("Other LMS", &[REDIRECT], false);
    let code = s.code(Ask::offline());
    let a = s.exchange(&other, &code).await;
    assert_oauth_error(&a, 400, "invalid_grant");
    let a = s.exchange(&s.client, &code).await;
    assert_oauth_error(&a, 400, "invalid_grant");
    // Client authentication comes before the code's own checks.
    let wrong = ClientCredentials {
        client_id: other.client_id.clone(),
        client_secret: Some(Secret::new("mls_not-the-secret")),
    };
    for code in [WELL_FORMED_UNKNOWN_CODE, "not-a-code", code.as_str()] {
        assert_oauth_error(&s.exchange(&wrong, code).await, 401, "invalid_client");
        assert_oauth_error(&s.exchange(&other, code).await, 400, "invalid_grant");
    }
    // The other client's own code still works for it.
    let its_own = s.code_for(&other, Ask::default());
    let a = s.exchange(&other, &its_own).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
}

async fn narrower_scope_on_refresh(b: Backend) {
    let s = Setup::start(b).await;
    let tokens = s.tokens(&s.code(Ask::offline())).await;
    let a = s
        .form(
            TOKEN,
            &s.client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", str_of(&tokens, "refresh_token")),
                ("scope", "read"),
            ],
        )
        .await;
    assert_token_response(&a, "read", true);
    let a = s
        .form(
            TOKEN,
            &s.client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", str_of(&a.json, "refresh_token")),
                ("scope", "admin"),
            ],
        )
        .await;
    assert_oauth_error(&a, 400, "invalid_scope");
}

async fn pkce_is_enforced(b: Backend) {
    let s = Setup::start(b).await;
    let public = s.app.register("Desktop app", &[REDIRECT], true);
    let challenge = challenge();
    let with_challenge = Ask {
        challenge: Some(&challenge),
        ..Ask::default()
    };
    let redeem = |code: String, verifier: Option<&'static str>| {
        let mut fields = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", REDIRECT.to_owned()),
            ("client_id", public.client_id.clone()),
        ];
        if let Some(v) = verifier {
            fields.push(("code_verifier", v.to_owned()));
        }
        s.send(s.post(TOKEN).form(&fields))
    };
    // The right verifier: a public client authenticates with its id alone.
    let a = redeem(s.code_for(&public, with_challenge), Some(VERIFIER)).await;
    assert_token_response(&a, "read write", false);
    // A wrong verifier, and none.
    let a = redeem(s.code_for(&public, with_challenge), Some(WRONG_VERIFIER)).await;
    assert_oauth_error(&a, 400, "invalid_grant");
    let a = redeem(s.code_for(&public, with_challenge), None).await;
    assert_oauth_error(&a, 400, "invalid_grant");
    // A verifier when the request had no challenge (a downgrade), confidential client.
    let code = s.code(Ask::default());
    let a = s
        .form(
            TOKEN,
            &s.client,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
            ],
        )
        .await;
    assert_oauth_error(&a, 400, "invalid_grant");
    // A confidential client that sent a challenge must answer it.
    let code = s.code(with_challenge);
    let a = s.exchange(&s.client, &code).await;
    assert_oauth_error(&a, 400, "invalid_grant");
}

/// Sends the same refresh token 8 times at once; the answers.
async fn eight_concurrent_refreshes(s: &Setup) -> Vec<(StatusCode, Value)> {
    let tokens = s.tokens(&s.code(Ask::offline())).await;
    let refresh = str_of(&tokens, "refresh_token").to_owned();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let fields = [
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh.clone()),
            ("client_id", s.client.client_id.clone()),
            ("client_secret", secret(&s.client).to_owned()),
        ];
        let req = s.post(TOKEN).form(&fields);
        set.spawn(async move {
            let res = req.send().await.unwrap();
            let status = res.status();
            (status, res.json::<Value>().await.unwrap())
        });
    }
    set.join_all().await
}

/// With the retry grace off, one of 8 concurrent refreshes wins; the others are reuse.
async fn concurrent_refreshes_have_one_winner(b: Backend) {
    let s = Setup::start_with(b, |l| l.set("refresh_token_retry_grace", "0")).await;
    let results = eight_concurrent_refreshes(&s).await;
    let winners = results
        .iter()
        .filter(|(st, _)| *st == StatusCode::OK)
        .count();
    assert_eq!(winners, 1, "{results:?}");
    for (status, body) in results.iter().filter(|(st, _)| *st != StatusCode::OK) {
        assert_eq!(*status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"], "invalid_grant", "{body}");
    }
}

/// With the grace, concurrent refreshes of one token are retries of each other: each takes
/// back the pair the one before got, so of all the pairs answered exactly one works.
async fn concurrent_retries_under_the_grace_leave_one_pair_alive(b: Backend) {
    let s = Setup::start(b).await;
    let results = eight_concurrent_refreshes(&s).await;
    let mut alive = 0;
    for (status, body) in &results {
        if *status != StatusCode::OK {
            assert_eq!(body["error"], "invalid_grant", "{body}");
            continue;
        }
        if s.authenticated(str_of(body, "access_token")).await {
            alive += 1;
        }
    }
    assert_eq!(alive, 1, "{results:?}");
}

async fn read_only_tokens_cannot_write(b: Backend) {
    let s = Setup::start(b).await;
    let read = s
        .tokens(&s.code(Ask {
            scope: Some("read"),
            ..Ask::default()
        }))
        .await;
    let token = str_of(&read, "access_token");
    s.assert_alive(token).await;
    let a = s
        .app
        .api
        .call(
            Method::PUT,
            "/api/describe/c/0/o/0",
            Some(token),
            &[("type", "catalog"), ("title", "Nope")],
        )
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN, "{a:?}");
    assert!(a.json["message"].is_string());
}

async fn expired_access_tokens_are_401_with_a_message(b: Backend) {
    // Expiry is stored in whole seconds: a token issued with a lifetime of n seconds lives
    // at least n - 1. Three seconds leave the first check two, however loaded the machine.
    let s = Setup::start_with(b, |l| l.set("access_token_ttl", "3")).await;
    let tokens = s.tokens(&s.code(Ask::default())).await;
    assert_eq!(tokens["expires_in"], 3);
    let token = str_of(&tokens, "access_token");
    s.assert_alive(token).await;
    tokio::time::sleep(Duration::from_millis(4100)).await;
    s.assert_dead(token).await;
}

async fn client_authentication_methods(b: Backend) {
    let s = Setup::start(b).await;
    let code = s.code(Ask::default());
    let grant = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
    ];
    // Basic and body credentials at once.
    let mut with_body = grant.to_vec();
    with_body.extend(body_credentials(&s.client));
    let req = s
        .post(TOKEN)
        .basic_auth(&s.client.client_id, Some(secret(&s.client)))
        .form(&with_body);
    assert_oauth_error(&s.send(req).await, 400, "invalid_request");
    // Malformed Basic, and another scheme.
    for value in ["Basic !!!notbase64", "Basic Zm9v", "Bearer mla_abc"] {
        let req = s.post(TOKEN).header("Authorization", value).form(&grant);
        assert_oauth_error(&s.send(req).await, 401, "invalid_client");
    }
    // No client authentication at all.
    let a = s.send(s.post(TOKEN).form(&grant)).await;
    assert_oauth_error(&a, 401, "invalid_client");
    // Credentials in the query string are not read.
    let url = format!(
        "{TOKEN}?client_id={}&client_secret={}",
        s.client.client_id,
        secret(&s.client)
    );
    let a = s.send(s.post(&url).form(&grant)).await;
    assert_oauth_error(&a, 401, "invalid_client");
    // None of this spent the code.
    s.tokens(&code).await;
}

async fn malformed_token_requests(b: Backend) {
    let s = Setup::start(b).await;
    let code = s.code(Ask::default());
    for (fields, error) in [
        (vec![("code", code.as_str())], "invalid_request"),
        (vec![("grant_type", "")], "invalid_request"),
        (
            vec![("grant_type", "authorization_code")],
            "invalid_request",
        ),
        (vec![("grant_type", "refresh_token")], "invalid_request"),
        (
            vec![
                ("grant_type", "password"),
                ("username", "alice"),
                ("password", PASSWORD),
            ],
            "unsupported_grant_type",
        ),
        (
            vec![("grant_type", "client_credentials")],
            "unsupported_grant_type",
        ),
        (vec![("grant_type", "implicit")], "unsupported_grant_type"),
        (
            vec![
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("code", code.as_str()),
                ("redirect_uri", REDIRECT),
            ],
            "invalid_request",
        ),
    ] {
        let a = s.form(TOKEN, &s.client, &fields).await;
        assert_oauth_error(&a, 400, error);
    }
    // A client_id given twice.
    let mut twice = body_credentials(&s.client);
    twice.push(("client_id", "someone-else"));
    twice.push(("grant_type", "client_credentials"));
    let a = s.send(s.post(TOKEN).form(&twice)).await;
    assert_oauth_error(&a, 400, "invalid_request");
    // Bodies that cannot be read.
    let bad_json = s
        .post(TOKEN)
        .header("Content-Type", "application/json")
        .body("{\"grant_type\":");
    assert_oauth_error(&s.send(bad_json).await, 400, "invalid_request");
    let text = s
        .post(TOKEN)
        .header("Content-Type", "text/plain")
        .body("grant_type=authorization_code");
    assert_oauth_error(&s.send(text).await, 400, "invalid_request");
    // No refusal above reached the code: it can still be redeemed.
    s.tokens(&code).await;
}

async fn methods_and_options(b: Backend) {
    let s = Setup::start(b).await;
    for path in [TOKEN, REVOKE, INTROSPECT, LOGOUT] {
        for method in [Method::GET, Method::PUT, Method::DELETE] {
            let a = s
                .send(
                    s.app
                        .api
                        .app
                        .client
                        .request(method.clone(), s.app.url(path)),
                )
                .await;
            assert_eq!(a.status, StatusCode::NOT_IMPLEMENTED, "{method} {path}");
            assert_eq!(header(&a.headers, "allow"), "POST, OPTIONS");
            assert!(a.json["message"].is_string());
        }
        let a = s
            .send(
                s.app
                    .api
                    .app
                    .client
                    .request(Method::OPTIONS, s.app.url(path)),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{path}");
        assert_eq!(header(&a.headers, "allow"), "POST, OPTIONS");
        assert_eq!(a.json["methods"], json!(["POST", "OPTIONS"]));
    }
    // A trailing slash is fine.
    let a = s
        .form(
            &format!("{TOKEN}/"),
            &s.client,
            &[("grant_type", "password")],
        )
        .await;
    assert_oauth_error(&a, 400, "unsupported_grant_type");
}

// ---------------------------------------------------------------- revocation

async fn revoke_access_and_refresh_tokens(b: Backend) {
    let s = Setup::start(b).await;
    let tokens = s.tokens(&s.code(Ask::offline())).await;
    let access = str_of(&tokens, "access_token");
    let a = s.form(REVOKE, &s.client, &[("token", access)]).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, json!({}));
    s.assert_dead(access).await;
    // Revoking it again, or something unknown, answers the same.
    for token in [access, "mla_unknown", "not a token at all"] {
        let a = s
            .form(
                REVOKE,
                &s.client,
                &[("token", token), ("token_type_hint", "access_token")],
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.json, json!({}));
    }
    // The refresh token still works (it is another token), until it is revoked, over Basic.
    let renewed = s.refresh(&s.client, str_of(&tokens, "refresh_token")).await;
    assert_eq!(renewed.status, StatusCode::OK, "{renewed:?}");
    let refresh = str_of(&renewed.json, "refresh_token");
    let req = s
        .post(REVOKE)
        .basic_auth(&s.client.client_id, Some(secret(&s.client)))
        .form(&[("token", refresh), ("token_type_hint", "refresh_token")]);
    let a = s.send(req).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, json!({}));
    assert_oauth_error(&s.refresh(&s.client, refresh).await, 400, "invalid_grant");
    // Revoking a refresh token ends its grant: the access token issued with it too.
    s.assert_dead(str_of(&renewed.json, "access_token")).await;
}

async fn revoking_another_clients_token_does_nothing(b: Backend) {
    let s = Setup::start(b).await;
    let other = s.app.register("Other LMS", &[REDIRECT], false);
    let tokens = s.tokens(&s.code(Ask::offline())).await;
    let access = str_of(&tokens, "access_token");
    let refresh = str_of(&tokens, "refresh_token");
    for token in [access, refresh] {
        let a = s.form(REVOKE, &other, &[("token", token)]).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.json, json!({}), "not an oracle");
    }
    s.assert_alive(access).await;
    let a = s.refresh(&s.client, refresh).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
}

async fn revoke_refusals(b: Backend) {
    let s = Setup::start(b).await;
    let tokens = s.tokens(&s.code(Ask::default())).await;
    let access = str_of(&tokens, "access_token");
    let a = s.form(REVOKE, &s.client, &[]).await;
    assert_oauth_error(&a, 400, "invalid_request");
    let a = s.send(s.post(REVOKE).form(&[("token", access)])).await;
    assert_oauth_error(&a, 401, "invalid_client");
    let req = s
        .post(REVOKE)
        .basic_auth(&s.client.client_id, Some("mls_wrong"))
        .form(&[("token", access)]);
    assert_oauth_error(&s.send(req).await, 401, "invalid_client");
    s.assert_alive(access).await;
}

/// What the metadata's `none` for revocation promises: a public client revokes its own token
/// with its `client_id` alone (RFC 7009 §2.1), and still cannot revoke another client's.
async fn a_public_client_revokes_with_its_id_alone(b: Backend) {
    let s = Setup::start(b).await;
    let (public, tokens) = public_client_tokens(&s).await;
    let access = str_of(&tokens, "access_token");
    // Another client's token, by the public client: nothing happens (not an oracle).
    let theirs = s.tokens(&s.code(Ask::default())).await;
    let theirs = str_of(&theirs, "access_token");
    for token in [theirs, access] {
        let a = s
            .send(
                s.post(REVOKE)
                    .form(&[("client_id", public.client_id.as_str()), ("token", token)]),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.json, json!({}));
    }
    s.assert_alive(theirs).await;
    s.assert_dead(access).await;
}

/// A public client, registered, and the tokens of a code it redeemed with PKCE and its id.
async fn public_client_tokens(s: &Setup) -> (ClientCredentials, Value) {
    let public = s.app.register("Desktop app", &[REDIRECT], true);
    let challenge = challenge();
    let code = s.code_for(
        &public,
        Ask {
            challenge: Some(&challenge),
            ..Ask::default()
        },
    );
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", REDIRECT),
        ("client_id", &public.client_id),
        ("code_verifier", VERIFIER),
    ];
    let tokens = s.send(s.post(TOKEN).form(&fields)).await;
    assert_token_response(&tokens, "read write", false);
    (public, tokens.json)
}

// ---------------------------------------------------------------- introspection

/// Introspection is client-authenticated (DECISIONS.md §5, RFC 7662 §2.1): a public client's
/// id, which anyone can read, is not enough, even for its own live token.
async fn a_public_client_may_not_introspect(b: Backend) {
    let s = Setup::start(b).await;
    let (public, tokens) = public_client_tokens(&s).await;
    let access = str_of(&tokens, "access_token");
    let a = s
        .send(
            s.post(INTROSPECT)
                .form(&[("client_id", public.client_id.as_str()), ("token", access)]),
        )
        .await;
    assert_oauth_error(&a, 401, "invalid_client");
    // The token itself is fine: it works, and the refusal was the client's.
    s.assert_alive(access).await;
}

async fn introspection(b: Backend) {
    let s = Setup::start(b).await;
    let tokens = s.tokens(&s.code(Ask::offline())).await;
    let access = str_of(&tokens, "access_token");
    let refresh = str_of(&tokens, "refresh_token");
    let a = s.form(INTROSPECT, &s.client, &[("token", access)]).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(header(&a.headers, "cache-control"), "no-store");
    let j = &a.json;
    assert_eq!(j["active"], json!(true), "a JSON boolean (RFC 7662)");
    assert_eq!(j["scope"], "read write");
    assert_eq!(j["client_id"], s.client.client_id);
    assert_eq!(j["username"], "alice");
    assert_eq!(j["sub"], s.user.id.to_string());
    assert_eq!(j["token_type"], "Bearer");
    assert_eq!(j["iss"], s.app.base());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let now = i64::try_from(now).unwrap();
    let exp = j["exp"].as_i64().unwrap();
    assert!((now + 3500..=now + 3700).contains(&exp), "{exp} vs {now}");

    // The refresh token, over Basic.
    let req = s
        .post(INTROSPECT)
        .basic_auth(&s.client.client_id, Some(secret(&s.client)))
        .form(&[("token", refresh)]);
    let a = s.send(req).await;
    assert_eq!(a.json["active"], json!(true), "{a:?}");
    assert_eq!(a.json["token_type"], "refresh_token");
    assert_eq!(a.json["sub"], s.user.id.to_string());

    // Another client learns nothing.
    let other = s.app.register("Other LMS", &[REDIRECT], false);
    for token in [access, refresh] {
        let a = s.form(INTROSPECT, &other, &[("token", token)]).await;
        assert_eq!(a.json, json!({"active": false}), "{a:?}");
    }
    // Unknown and garbage tokens.
    for token in ["mla_unknown", "hello"] {
        let a = s.form(INTROSPECT, &s.client, &[("token", token)]).await;
        assert_eq!(a.json, json!({"active": false}), "{a:?}");
    }
    // Revoked: inactive.
    let a = s.form(REVOKE, &s.client, &[("token", access)]).await;
    assert_eq!(a.status, StatusCode::OK);
    let a = s.form(INTROSPECT, &s.client, &[("token", access)]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json, json!({"active": false}));
    // Client authentication is required; the token is required.
    let a = s.send(s.post(INTROSPECT).form(&[("token", refresh)])).await;
    assert_oauth_error(&a, 401, "invalid_client");
    let a = s.form(INTROSPECT, &s.client, &[]).await;
    assert_oauth_error(&a, 400, "invalid_request");
}

// ---------------------------------------------------------------- metadata and CORS

async fn metadata_document(b: Backend) {
    let s = Setup::start(b).await;
    let a = s
        .app
        .api
        .get("/.well-known/oauth-authorization-server", None)
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let base = s.app.base();
    let url = |p: &str| format!("{base}{p}");
    assert_eq!(
        a.json,
        json!({
            "issuer": base,
            "authorization_endpoint": url("/api/oauth/authorize"),
            "token_endpoint": url(TOKEN),
            "revocation_endpoint": url(REVOKE),
            "introspection_endpoint": url(INTROSPECT),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported":
                ["client_secret_basic", "client_secret_post", "none"],
            "revocation_endpoint_auth_methods_supported":
                ["client_secret_basic", "client_secret_post", "none"],
            "introspection_endpoint_auth_methods_supported":
                ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["read", "write"],
            "authorization_response_iss_parameter_supported": true,
            "service_documentation": url("/api/openapi.json"),
        })
    );
    // The issuer is the one the authorization responses carry (RFC 9207).
    let services = s.services();
    let params = AuthorizeParams {
        response_type: Some("code"),
        client_id: Some(&s.client.client_id),
        redirect_uri: Some(REDIRECT),
        state: Some("st"),
        ..AuthorizeParams::default()
    };
    let request = services.oauth().start_authorization(&params).unwrap();
    let response = services
        .oauth()
        .approve_authorization(request, s.user.id)
        .unwrap();
    assert_eq!(response.param("iss"), a.json["issuer"].as_str());
    // Other methods.
    let a = s
        .send(s.post("/.well-known/oauth-authorization-server"))
        .await;
    assert_eq!(a.status, StatusCode::NOT_IMPLEMENTED);
    assert_eq!(header(&a.headers, "allow"), "GET, HEAD, OPTIONS");
}

async fn cors_on_token_and_metadata_never_on_authorize(b: Backend) {
    let s = Setup::start_with(b, |l| l.set("cors_origins", LMS)).await;
    let preflight = |path: &str| {
        s.app
            .api
            .app
            .client
            .request(Method::OPTIONS, s.app.url(path))
            .header("Origin", LMS)
            .header("Access-Control-Request-Method", "POST")
    };
    let allow_origin = |h: &HeaderMap| h.get("access-control-allow-origin").cloned();
    for path in ["/.well-known/oauth-authorization-server", TOKEN] {
        let res = preflight(path).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        assert_eq!(
            allow_origin(res.headers()),
            Some(HeaderValue::from_static(LMS))
        );
    }
    let res = s
        .app
        .api
        .app
        .client
        .get(s.app.url("/.well-known/oauth-authorization-server"))
        .header("Origin", LMS)
        .send()
        .await
        .unwrap();
    assert_eq!(
        allow_origin(res.headers()),
        Some(HeaderValue::from_static(LMS))
    );
    // The token endpoint's answers (errors included) are readable cross-origin.
    let req = s
        .post(TOKEN)
        .header("Origin", LMS)
        .form(&[("grant_type", "password")]);
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        allow_origin(res.headers()),
        Some(HeaderValue::from_static(LMS))
    );
    // Another origin gets nothing.
    let res = s
        .app
        .api
        .app
        .client
        .get(s.app.url("/.well-known/oauth-authorization-server"))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(allow_origin(res.headers()), None);
    // The authorization endpoint: no CORS, whatever the spelling (checklist #16).
    let tokens = s.tokens(&s.code(Ask::default())).await;
    let token = str_of(&tokens, "access_token");
    for path in [
        "/api/oauth/authorize",
        "/api/oauth/authorize/",
        "/api/oauth//authorize",
    ] {
        let res = preflight(path).send().await.unwrap();
        assert_eq!(allow_origin(res.headers()), None, "{path}");
        let res = s
            .app
            .api
            .app
            .client
            .get(s.app.url(path))
            .header("Origin", LMS)
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(allow_origin(res.headers()), None, "{path}");
    }
}

// ---------------------------------------------------------------- token info

async fn token_info(b: Backend) {
    let s = Setup::start(b).await;
    let tokens = s
        .tokens(&s.code(Ask {
            scope: Some("read"),
            ..Ask::default()
        }))
        .await;
    let token = str_of(&tokens, "access_token");
    for (path, scheme) in [
        ("/api/oauth/authorize/", "Bearer"),
        ("/api/oauth/authorize", "OAuth"),
    ] {
        let req = s
            .app
            .api
            .app
            .client
            .get(s.app.url(path))
            .header("Authorization", format!("{scheme} {token}"));
        let a = s.send(req).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(header(&a.headers, "cache-control"), "no-store");
        let j = &a.json;
        assert_eq!(j["type"], "authorize");
        assert_eq!(j["authenticated"], "true");
        assert_eq!(j["userId"], s.user.id.to_string());
        assert_eq!(j["client_id"], s.client.client_id);
        assert_eq!(j["scope"], "read");
        let expires_in = j["expires_in"].as_i64().unwrap();
        assert!((3590..=3600).contains(&expires_in), "{expires_in}");
    }
    let info = |value: String| {
        s.app
            .api
            .app
            .client
            .get(s.app.url("/api/oauth/authorize/"))
            .header("Authorization", value)
    };
    for value in [
        "Bearer mla_unknown".to_owned(),
        "Bearer".to_owned(),
        "Basic Zm9vOmJhcg==".to_owned(),
    ] {
        let a = s.send(info(value.clone())).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{value}: {a:?}");
        assert_eq!(a.json["message"], "invalid or expired credentials");
    }
    s.form(REVOKE, &s.client, &[("token", token)]).await;
    let a = s.send(info(format!("Bearer {token}"))).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{a:?}");
    assert!(a.json["message"].is_string());
}

// ---------------------------------------------------------------- logout

async fn logout_with_a_bearer_token(b: Backend) {
    let s = Setup::start(b).await;
    let first = s.tokens(&s.code(Ask::offline())).await;
    let second = s.tokens(&s.code(Ask::default())).await;
    // Someone else's token is untouched.
    let bob = s.app.user_with_password("bob", PASSWORD);
    let bobs = code_from(s.services(), &s.client, &bob, Ask::default());
    let bobs = s.tokens(&bobs).await;
    // A browser session of alice's ends too.
    let session = sign_in(&s, "alice");

    let token = str_of(&first, "access_token");
    let req = s.post(LOGOUT).bearer_auth(token);
    let a = s.send(req).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, json!({"type": "logout", "signedOut": "true"}));
    assert_eq!(header(&a.headers, "cache-control"), "no-store");
    assert!(!a.headers.contains_key("set-cookie"));

    s.assert_dead(token).await;
    s.assert_dead(str_of(&second, "access_token")).await;
    s.assert_alive(str_of(&bobs, "access_token")).await;
    assert!(
        s.services()
            .sessions()
            .session_user(&session)
            .unwrap()
            .is_none()
    );
    // Refresh tokens survive sign-out (DECISIONS.md §5).
    let a = s.refresh(&s.client, str_of(&first, "refresh_token")).await;
    assert_token_response(&a, "read write", true);
    s.assert_alive(str_of(&a.json, "access_token")).await;
    // The dead token cannot sign out again.
    let a = s.send(s.post(LOGOUT).bearer_auth(token)).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{a:?}");
}

/// Signs `unique_id` in through the local directory; the session cookie's value.
fn sign_in(s: &Setup, unique_id: &str) -> String {
    let password = Secret::new(PASSWORD);
    let started = s
        .services()
        .sessions()
        .sign_in(Credentials::Password {
            username: unique_id,
            password: &password,
        })
        .unwrap();
    started.cookie.expose().to_owned()
}

async fn logout_with_the_session_cookie(b: Backend) {
    let s = Setup::start(b).await;
    let tokens = s.tokens(&s.code(Ask::offline())).await;
    let cookie = sign_in(&s, "alice");
    let elsewhere = sign_in(&s, "alice");
    s.app.user_with_password("bob", PASSWORD);
    let bobs = sign_in(&s, "bob");
    let req = s
        .post(LOGOUT)
        .header("Cookie", format!("other=1; medialib_session={cookie}"));
    let a = s.send(req).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, json!({"type": "logout", "signedOut": "true"}));
    assert_eq!(
        header(&a.headers, "set-cookie"),
        "medialib_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax"
    );
    for c in [&cookie, &elsewhere] {
        assert!(s.services().sessions().session_user(c).unwrap().is_none());
    }
    assert!(
        s.services()
            .sessions()
            .session_user(&bobs)
            .unwrap()
            .is_some()
    );
    s.assert_dead(str_of(&tokens, "access_token")).await;
    let a = s.refresh(&s.client, str_of(&tokens, "refresh_token")).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    // The ended session no longer signs anyone out: 401, and the stale cookie is cleared.
    let req = s
        .post(LOGOUT)
        .header("Cookie", format!("medialib_session={cookie}"));
    let a = s.send(req).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{a:?}");
    assert_eq!(a.json["message"], "authentication required");
    assert!(header(&a.headers, "set-cookie").starts_with("medialib_session=;"));
}

async fn logout_without_credentials_is_401(b: Backend) {
    let s = Setup::start(b).await;
    let a = s.send(s.post(LOGOUT)).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{a:?}");
    assert_eq!(a.json["message"], "authentication required");
    assert_eq!(header(&a.headers, "www-authenticate"), "Bearer");
    assert!(!a.headers.contains_key("set-cookie"));
    // Other cookies are no session, and are not touched.
    let a = s.send(s.post(LOGOUT).header("Cookie", "other=1")).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{a:?}");
    assert!(!a.headers.contains_key("set-cookie"));
    let a = s.send(s.post(LOGOUT).bearer_auth("mla_nope")).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{a:?}");
    assert_eq!(a.json["message"], "invalid or expired credentials");
}

// ---------------------------------------------------------------- rate limits

async fn token_endpoint_rate_limit(b: Backend) {
    let s = Setup::start_with(b, |l| l.set("rate_limit_token", "3")).await;
    for _ in 0..3 {
        let a = s.refresh(&s.client, "mlr_unknown").await;
        assert_oauth_error(&a, 400, "invalid_grant");
    }
    let a = s.refresh(&s.client, "mlr_unknown").await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{a:?}");
    let wait: u32 = header(&a.headers, "retry-after").parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(a.json["message"].is_string());
    // The limit covers revocation and introspection too, and any client from this address.
    let other = s.app.register("Other LMS", &[REDIRECT], false);
    for path in [REVOKE, INTROSPECT] {
        let a = s.form(path, &other, &[("token", "mla_x")]).await;
        assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{path}: {a:?}");
    }
}

/// Services on the app's database with extra settings (codes get their expiry from the
/// services that issue them).
fn services_with(
    app: &OAuthApp,
    configure: impl FnOnce(SettingsLoader) -> SettingsLoader,
) -> Services {
    let db_url = app.api.app.db_url.clone();
    let settings = configure(
        SettingsLoader::new()
            .set("database_url", db_url.clone())
            .set("storage_url", crate::helpers::shared_media_url()),
    )
    .load()
    .unwrap();
    let db = Database::connect(&db_url, &PoolOptions::default()).unwrap();
    let base = BaseUrl::parse(app.base()).unwrap();
    startup::services(&settings, &base, db).expect("the use cases could not be wired")
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    code_exchange_with_a_json_body_and_body_credentials,
    code_exchange_with_a_form_body_and_basic_credentials,
    both_authorization_schemes_work_on_media_calls,
    refresh_token_only_with_offline_access,
    redirect_uri_must_match_the_authorization_request,
    wrong_client_secret_is_invalid_client,
    code_replay_fails_and_revokes_the_first_tokens,
    expired_codes_are_refused,
    refresh_rotates_and_reuse_revokes_the_family,
    a_refresh_whose_answer_was_lost_is_retried_within_the_grace,
    replays_are_caught_despite_the_retry_grace,
    refresh_by_another_client_is_invalid_grant,
    refresh_with_failed_client_authentication_leaves_the_token_unspent,
    code_presented_by_another_client_is_invalid_grant_and_burnt,
    narrower_scope_on_refresh,
    pkce_is_enforced,
    concurrent_refreshes_have_one_winner,
    concurrent_retries_under_the_grace_leave_one_pair_alive,
    read_only_tokens_cannot_write,
    expired_access_tokens_are_401_with_a_message,
    client_authentication_methods,
    malformed_token_requests,
    methods_and_options,
    revoke_access_and_refresh_tokens,
    revoking_another_clients_token_does_nothing,
    revoke_refusals,
    a_public_client_revokes_with_its_id_alone,
    introspection,
    a_public_client_may_not_introspect,
    metadata_document,
    cors_on_token_and_metadata_never_on_authorize,
    token_info,
    logout_with_a_bearer_token,
    logout_with_the_session_cookie,
    logout_without_credentials_is_401,
    token_endpoint_rate_limit,
);
