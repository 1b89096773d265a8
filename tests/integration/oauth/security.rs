//! Security checklist lines that need more than one endpoint to prove
//! (docs/security.md): nothing secret is stored in plain text, and forwarded headers
//! from an untrusted peer do not change who a rate limit counts. (Refresh rotation
//! across two server processes: `reliability::race`.)

use std::process::Command;

use medialib_domain::oauth::AuthorizeParams;
use medialib_domain::{Secret, TokenDigest};
use medialib_ports::Credentials;

use super::{Backend, OAuthApp, PASSWORD};
use crate::api::REDIRECT;

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    secrets_are_stored_only_as_digests,
    forwarded_headers_from_untrusted_peers_do_not_change_the_rate_limit_key,
    forwarded_headers_from_a_trusted_proxy_change_the_rate_limit_key,
    forwarded_chains_resolve_to_the_right_most_untrusted_address,
);

/// Everything the database holds, as text: the SQLite file and its WAL, or a `pg_dump`.
fn database_contents(db_url: &str) -> Vec<u8> {
    if let Some(path) = db_url.strip_prefix("sqlite://") {
        let mut bytes = std::fs::read(path).unwrap();
        if let Ok(wal) = std::fs::read(format!("{path}-wal")) {
            bytes.extend(wal);
        }
        bytes
    } else {
        let out = Command::new("pg_dump")
            .args(["--data-only", "--dbname", db_url])
            .output()
            .expect("pg_dump (the PostgreSQL client) is needed");
        assert!(
            out.status.success(),
            "pg_dump failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Checklist #22: codes, access and refresh tokens, client secrets, session cookies and
/// passwords never reach the database in plain text; their digests (or hash) do.
async fn secrets_are_stored_only_as_digests(b: Backend) {
    let app = OAuthApp::start(b).await;
    let client = app.register("Digest LMS", &[REDIRECT], false);
    let user = app.user_with_password("digest", PASSWORD);
    let s = &app.api.services;
    let session = s
        .sessions()
        .sign_in(Credentials::Password {
            username: "digest",
            password: &Secret::new(PASSWORD),
        })
        .unwrap();
    let params = AuthorizeParams {
        response_type: Some("code"),
        client_id: Some(&client.client_id),
        redirect_uri: Some(REDIRECT),
        state: Some("st"),
        access_type: Some("offline"),
        ..AuthorizeParams::default()
    };
    let request = s.oauth().start_authorization(&params).unwrap();
    let code = s
        .oauth()
        .approve_authorization(request, user.id)
        .unwrap()
        .param("code")
        .unwrap()
        .to_owned();
    let first = s
        .oauth()
        .exchange_code(&client, &code, Some(REDIRECT), None)
        .unwrap();
    let refresh = first.refresh_token.clone().unwrap();
    let second = s.oauth().refresh(&client, refresh.expose(), None).unwrap();
    let secrets = [
        ("password", PASSWORD.to_owned()),
        (
            "client secret",
            client.client_secret.clone().unwrap().expose().to_owned(),
        ),
        ("code", code.clone()),
        ("session cookie", session.cookie.expose().to_owned()),
        ("access token", first.access_token.expose().to_owned()),
        ("refresh token", refresh.expose().to_owned()),
        (
            "rotated access token",
            second.access_token.expose().to_owned(),
        ),
        (
            "rotated refresh token",
            second.refresh_token.unwrap().expose().to_owned(),
        ),
    ];
    let dump = database_contents(&app.api.app.db_url);
    for (what, value) in &secrets {
        assert!(
            !contains(&dump, value),
            "the {what} is stored in plain text"
        );
    }
    // The dump does hold the credentials, as digests: the check above looked in the right place.
    for (what, value) in secrets.iter().skip(1) {
        let digest = TokenDigest::of(&Secret::new(value.clone())).to_hex();
        assert!(
            contains(&dump, &digest),
            "the {what}'s digest is not in the dump"
        );
    }
    assert!(
        contains(&dump, "$argon2id$"),
        "the password hash is in the dump"
    );
}

/// Checklist #19: `X-Forwarded-For` / `Forwarded` from a peer that is not a configured proxy
/// are ignored: a client cannot dodge the per-address limit by inventing addresses.
async fn forwarded_headers_from_untrusted_peers_do_not_change_the_rate_limit_key(b: Backend) {
    let app = OAuthApp::start_with(b, |l| l.set("rate_limit_token", "2")).await;
    let statuses = token_calls_with(
        &app,
        &[
            &[
                ("X-Forwarded-For", "203.0.113.0"),
                ("Forwarded", "for=198.51.100.0"),
                ("X-Real-IP", "192.0.2.0"),
            ],
            &[
                ("X-Forwarded-For", "203.0.113.1"),
                ("Forwarded", "for=198.51.100.1"),
                ("X-Real-IP", "192.0.2.1"),
            ],
            &[
                ("X-Forwarded-For", "203.0.113.2"),
                ("Forwarded", "for=198.51.100.2"),
                ("X-Real-IP", "192.0.2.2"),
            ],
        ],
    )
    .await;
    assert_eq!(statuses, [401, 401, 429]);
}

/// Token-endpoint calls with an unknown client (a fresh client id each, so only the
/// per-address limit can bite), each with its own forwarded `headers`: the statuses.
async fn token_calls_with(app: &OAuthApp, calls: &[&[(&str, &str)]]) -> Vec<u16> {
    let mut statuses = Vec::new();
    for headers in calls {
        let mut req = app.api.app.client.post(app.url("/api/oauth/access_token"));
        for (name, value) in *headers {
            req = req.header(*name, *value);
        }
        let r = req
            .form(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", "mlr_x"),
                (
                    "client_id",
                    &format!("unknown-client-{}", rand::random::<u64>()),
                ),
                ("client_secret", "nope"),
            ])
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        if status == 429 {
            assert!(r.headers().get("retry-after").is_some());
        }
        statuses.push(status);
    }
    statuses
}

/// Checklist #19, the other half: behind a configured proxy (the test client connects from
/// 127.0.0.1), the address the proxy forwards is the one a limit counts, so clients behind
/// one proxy do not share a limit, while one client still meets its own.
async fn forwarded_headers_from_a_trusted_proxy_change_the_rate_limit_key(b: Backend) {
    let app = OAuthApp::start_with(b, |l| {
        l.set("rate_limit_token", "2")
            .set("trusted_proxies", "127.0.0.1/32")
    })
    .await;
    let different = token_calls_with(
        &app,
        &[
            &[("X-Forwarded-For", "203.0.113.1")],
            &[("X-Forwarded-For", "203.0.113.2")],
            &[("X-Forwarded-For", "203.0.113.3")],
            &[("Forwarded", "for=198.51.100.1")],
            &[("Forwarded", r#"for="[2001:db8::1]:4711";proto=https"#)],
        ],
    )
    .await;
    assert_eq!(different, [401; 5], "different clients are counted apart");
    let same = token_calls_with(
        &app,
        &[
            &[("X-Forwarded-For", "203.0.113.9")],
            &[("X-Forwarded-For", "203.0.113.9:5555")],
            &[("Forwarded", "for=203.0.113.9")],
        ],
    )
    .await;
    assert_eq!(same, [401, 401, 429], "one client is counted once");
    // Without forwarded headers the client is the proxy itself.
    let proxy = token_calls_with(&app, &[&[], &[], &[]]).await;
    assert_eq!(proxy, [401, 401, 429]);
}

/// Forwarded chains are walked from the right (docs/security.md, line 19): entries a client
/// forges stay to the left of its real address and are never reached; trusted proxies in
/// the chain are skipped; garbage falls back to the peer; and a peer that is not a proxy
/// cannot borrow a proxy's address to be believed.
async fn forwarded_chains_resolve_to_the_right_most_untrusted_address(b: Backend) {
    let app = OAuthApp::start_with(b, |l| {
        l.set("rate_limit_token", "2")
            .set("trusted_proxies", "127.0.0.1/32, 10.0.0.0/8")
    })
    .await;
    // The client 198.51.100.7 forges different left-hand entries: one key.
    let forged_left = token_calls_with(
        &app,
        &[
            &[("X-Forwarded-For", "1.2.3.4, 198.51.100.7")],
            &[("X-Forwarded-For", "5.6.7.8, 10.0.0.9, 198.51.100.7")],
            &[("Forwarded", "for=9.9.9.9, for=198.51.100.7")],
        ],
    )
    .await;
    assert_eq!(forged_left, [401, 401, 429]);
    // Trusted proxies in the chain are skipped: all three are 1.2.3.4.
    let through_proxies = token_calls_with(
        &app,
        &[
            &[("X-Forwarded-For", "1.2.3.4, 127.0.0.1")],
            &[("X-Forwarded-For", "1.2.3.4, 10.1.2.3, 127.0.0.1")],
            &[("X-Forwarded-For", "1.2.3.4")],
        ],
    )
    .await;
    assert_eq!(through_proxies, [401, 401, 429]);
    // Unusable entries: the peer (127.0.0.1), whatever stands further left.
    let garbage = token_calls_with(
        &app,
        &[
            &[("X-Forwarded-For", "203.0.113.50, garbage")],
            &[("X-Forwarded-For", "203.0.113.51, unknown")],
            &[("Forwarded", "for=203.0.113.52, for=_hidden")],
        ],
    )
    .await;
    assert_eq!(garbage, [401, 401, 429]);

    // A peer that is not a proxy gains nothing by naming one.
    let untrusted = OAuthApp::start_with(b, |l| {
        l.set("rate_limit_token", "2")
            .set("trusted_proxies", "10.0.0.1")
    })
    .await;
    let spoofed = token_calls_with(
        &untrusted,
        &[
            &[("X-Forwarded-For", "203.0.113.60, 10.0.0.1")],
            &[("X-Forwarded-For", "203.0.113.61, 10.0.0.1")],
            &[("Forwarded", "for=203.0.113.62, for=10.0.0.1")],
        ],
    )
    .await;
    assert_eq!(spoofed, [401, 401, 429]);
}
