//! Contract cases of the OAuth ports (clients, codes, grants, tokens), ported from
//! tests/integration/contract.rs, on a `MemoryStore`; and what the exchange does in one
//! atomic step (client authentication first, nothing written when it fails).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

mod common;

use common::{Harness, REDIRECT, race, refresh_digest, secret_str};
use medialib_domain::oauth::{
    AccessTokenInvalid, Client, ClientAuthError, ClientId, ClientKind, ClientName,
    CodePresentation, RedeemError, RedirectUri, RefreshTokenState, TokenRandomness,
};
use medialib_domain::{Secret, TokenDigest, TokenKind};
use medialib_ports::services::{BearerError, ClientCredentials, Introspection, TokenError};
use medialib_ports::{
    ClientRepository, CodeExchange, CreateClientError, ExchangeError, GrantRepository, RandomExt,
    RevokeOutcome, StoreError,
};

#[test]
fn clients_register_and_authenticate() {
    let h = Harness::new();
    let creds = h.client();
    let id = ClientId::parse(&creds.client_id).unwrap();
    let client = h.store.client(&id).unwrap().unwrap();
    assert_eq!(client.redirect_uris()[0].as_str(), REDIRECT);
    assert!(h.services.authenticate_client(&creds).is_ok());
    let wrong = ClientCredentials {
        client_id: creds.client_id.clone(),
        client_secret: Some(Secret::new("mls_wrong")),
    };
    assert!(matches!(
        h.services.authenticate_client(&wrong),
        Err(TokenError::InvalidClient(_))
    ));
    assert_eq!(
        h.store.create_client(&client, h.now()),
        Err(CreateClientError::IdTaken)
    );
    let (new_secret, digest) = TokenKind::ClientSecret.mint(h.random.bytes32());
    assert!(h.store.set_client_secret(&id, &digest).unwrap());
    assert!(
        h.services.authenticate_client(&creds).is_err(),
        "old secret"
    );
    let rotated = ClientCredentials {
        client_id: creds.client_id.clone(),
        client_secret: Some(new_secret),
    };
    assert!(h.services.authenticate_client(&rotated).is_ok());
    // A public client, registered with a redirect URI twice: stored once. Its secret
    // cannot be set.
    let uri = RedirectUri::parse("http://127.0.0.1/cb").unwrap();
    let public = Client::new(
        ClientId::parse("mobile-app").unwrap(),
        ClientName::parse("A mobile app").unwrap(),
        vec![uri.clone(), uri.clone()],
        ClientKind::Public,
    )
    .unwrap();
    h.store.create_client(&public, h.now()).unwrap();
    let stored = h.store.client(public.id()).unwrap().unwrap();
    assert_eq!(stored.redirect_uris(), [uri]);
    assert!(!h.store.set_client_secret(public.id(), &digest).unwrap());
    assert_eq!(
        h.store.client(public.id()).unwrap().unwrap().kind(),
        &ClientKind::Public
    );
    // Ordered by name: "A mobile app" before "LMS".
    let names: Vec<String> = h
        .store
        .list_clients()
        .unwrap()
        .iter()
        .map(|c| c.name().as_str().to_owned())
        .collect();
    assert_eq!(names, ["A mobile app", "LMS"]);
    assert!(h.store.remove_client(&id).unwrap());
    assert!(!h.store.remove_client(&id).unwrap());
    assert_eq!(h.store.client(&id).unwrap(), None);
    assert!(!h.store.set_client_secret(&id, &digest).unwrap());
}

#[test]
fn code_exchange_and_replay_revokes() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let code = h.code(&creds, &alice, true);
    let tokens = h
        .services
        .exchange_code(&creds, &code, Some(REDIRECT), None)
        .unwrap();
    assert_eq!(tokens.expires_in, 3600);
    let access = tokens.access_token.expose().to_owned();
    assert_eq!(
        h.services.authenticate_bearer(&access).unwrap().user.id,
        alice.id
    );
    assert!(tokens.refresh_token.is_some(), "offline was approved");

    let replay = h
        .services
        .exchange_code(&creds, &code, Some(REDIRECT), None);
    assert!(matches!(replay, Err(TokenError::InvalidGrant(_))));
    assert_eq!(
        h.services.authenticate_bearer(&access),
        Err(BearerError::Invalid(AccessTokenInvalid::Revoked)),
        "a replayed code revokes the tokens issued from it"
    );
    let refresh = secret_str(&tokens.refresh_token);
    assert!(h.services.refresh(&creds, &refresh, None).is_err());

    // A wrong redirect_uri burns the code; online access gets no refresh token.
    let code = h.code(&creds, &alice, false);
    assert!(
        h.services
            .exchange_code(&creds, &code, Some("https://lms.example.edu/other"), None)
            .is_err()
    );
    assert!(
        h.services
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .is_err()
    );
    let code = h.code(&creds, &alice, false);
    let online = h
        .services
        .exchange_code(&creds, &code, Some(REDIRECT), None)
        .unwrap();
    assert_eq!(online.refresh_token, None);
    let code = h.code(&creds, &alice, false);
    h.advance(60);
    assert!(
        h.services
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .is_err(),
        "expired"
    );
    assert!(
        h.services
            .exchange_code(&creds, "mlc_nope", Some(REDIRECT), None)
            .is_err()
    );
}

/// The repository's exchange: each outcome, and what it leaves behind.
#[test]
fn exchange_authenticates_first_burns_on_failure_and_writes_nothing_when_refused() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let client = ClientId::parse(&creds.client_id).unwrap();
    let code = h.code(&creds, &alice, true);
    let digest = TokenKind::Code.digest_presented(&code).unwrap();
    let ns = medialib_ports::OrgRepository::namespace(&*h.store).unwrap();
    let exchange = |secret: Option<&Secret>, redirect: &'static str, grant_seed: u8| {
        h.store.exchange_code(CodeExchange {
            digest,
            presentation: CodePresentation {
                client: &client,
                redirect_uri: Some(redirect),
                verifier: None,
            },
            client_secret: secret,
            now: h.now(),
            grant_id: medialib_domain::GrantId::generate(&ns, [grant_seed; 16]),
            random: TokenRandomness {
                access: h.random.bytes32(),
                refresh: h.random.bytes32(),
            },
            lifetimes: h.services.settings().lifetimes,
        })
    };
    // A client that does not authenticate leaves the code unspent.
    assert_eq!(
        exchange(None, REDIRECT, 1).unwrap_err(),
        ExchangeError::ClientRefused(ClientAuthError::MissingSecret)
    );
    let wrong = Secret::new("mls_wrong");
    assert_eq!(
        exchange(Some(&wrong), REDIRECT, 1).unwrap_err(),
        ExchangeError::ClientRefused(ClientAuthError::WrongSecret)
    );
    // A grant id that is taken: refused as the database would, and nothing is written (the
    // code is still unspent afterwards).
    let secret = creds.client_secret.as_ref();
    let (taken, _) = exchange(secret, REDIRECT, 2).unwrap();
    let code2 = h.code(&creds, &alice, true);
    let digest2 = TokenKind::Code.digest_presented(&code2).unwrap();
    let collide = h.store.exchange_code(CodeExchange {
        digest: digest2,
        presentation: CodePresentation {
            client: &client,
            redirect_uri: Some(REDIRECT),
            verifier: None,
        },
        client_secret: secret,
        now: h.now(),
        grant_id: taken,
        random: TokenRandomness {
            access: h.random.bytes32(),
            refresh: h.random.bytes32(),
        },
        lifetimes: h.services.settings().lifetimes,
    });
    assert!(matches!(
        collide,
        Err(ExchangeError::Store(StoreError::Unexpected(_)))
    ));
    let ok = h
        .services
        .exchange_code(&creds, &code2, Some(REDIRECT), None);
    assert!(
        ok.is_ok(),
        "the refused exchange left the code unspent: {ok:?}"
    );
    // The spent code: a replay names the grant it produced, and revokes it.
    assert_eq!(
        exchange(secret, REDIRECT, 3).unwrap_err(),
        ExchangeError::Refused(RedeemError::Replayed { grant: Some(taken) })
    );
    // A failed redemption burns the code; its replay then names no grant.
    let code3 = h.code(&creds, &alice, false);
    let d3 = TokenKind::Code.digest_presented(&code3).unwrap();
    let other = ClientId::parse("someone-else").unwrap();
    let present = |client: &ClientId, redirect: &str| {
        h.store.exchange_code(CodeExchange {
            digest: d3,
            presentation: CodePresentation {
                client,
                redirect_uri: Some(redirect),
                verifier: None,
            },
            client_secret: secret,
            now: h.now(),
            grant_id: medialib_domain::GrantId::generate(&ns, h.random.bytes16()),
            random: TokenRandomness {
                access: h.random.bytes32(),
                refresh: h.random.bytes32(),
            },
            lifetimes: h.services.settings().lifetimes,
        })
    };
    assert_eq!(
        present(&other, REDIRECT).unwrap_err(),
        ExchangeError::UnknownClient
    );
    assert_eq!(
        present(&client, "https://elsewhere.example/cb").unwrap_err(),
        ExchangeError::Refused(RedeemError::RedirectMismatch)
    );
    assert_eq!(
        present(&client, REDIRECT).unwrap_err(),
        ExchangeError::Refused(RedeemError::Replayed { grant: None })
    );
    let unknown = h.session_cookie().1;
    let r = h.store.exchange_code(CodeExchange {
        digest: unknown,
        presentation: CodePresentation {
            client: &client,
            redirect_uri: Some(REDIRECT),
            verifier: None,
        },
        client_secret: secret,
        now: h.now(),
        grant_id: medialib_domain::GrantId::generate(&ns, h.random.bytes16()),
        random: TokenRandomness {
            access: h.random.bytes32(),
            refresh: h.random.bytes32(),
        },
        lifetimes: h.services.settings().lifetimes,
    });
    assert_eq!(r.unwrap_err(), ExchangeError::UnknownCode);
}

#[test]
fn refresh_rotates_and_reuse_revokes_the_family() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let first = h.tokens(&creds, &alice, true);
    h.advance(10);
    let second = h
        .services
        .refresh(&creds, &secret_str(&first.refresh_token), None)
        .unwrap();
    assert_ne!(second.refresh_token, first.refresh_token);
    assert_eq!(second.grant, first.grant);
    let third = h
        .services
        .refresh(&creds, &secret_str(&second.refresh_token), Some("read"))
        .unwrap();
    assert_eq!(third.scope.to_string(), "read");
    assert!(
        h.services
            .authenticate_bearer(third.access_token.expose())
            .is_ok()
    );
    // A refresh with a wrong secret leaves the token unspent.
    let wrong = ClientCredentials {
        client_id: creds.client_id.clone(),
        client_secret: Some(Secret::new("mls_wrong")),
    };
    assert!(matches!(
        h.services
            .refresh(&wrong, &secret_str(&third.refresh_token), None),
        Err(TokenError::InvalidClient(_))
    ));
    assert_eq!(
        h.store
            .refresh_token(&refresh_digest(&third))
            .unwrap()
            .unwrap()
            .state,
        RefreshTokenState::Valid
    );
    // Presenting the used first token again revokes everything of the grant.
    assert!(matches!(
        h.services
            .refresh(&creds, &secret_str(&first.refresh_token), None),
        Err(TokenError::InvalidGrant(_))
    ));
    for t in [&first, &second, &third] {
        assert_eq!(
            h.services.authenticate_bearer(t.access_token.expose()),
            Err(BearerError::Invalid(AccessTokenInvalid::Revoked))
        );
    }
    assert!(
        h.services
            .refresh(&creds, &secret_str(&third.refresh_token), None)
            .is_err()
    );
}

#[test]
fn refresh_tokens_expire_when_idle() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let t = h.tokens(&creds, &alice, true);
    h.advance(3600);
    assert_eq!(
        h.services.authenticate_bearer(t.access_token.expose()),
        Err(BearerError::Invalid(AccessTokenInvalid::Expired))
    );
    h.advance(86_400);
    assert!(
        h.services
            .refresh(&creds, &secret_str(&t.refresh_token), None)
            .is_err()
    );
}

#[test]
fn concurrent_redemptions_and_refreshes_have_one_winner() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    for _ in 0..3 {
        let code = h.code(&creds, &alice, true);
        let results = race(
            (0..6)
                .map(|_| -> Box<dyn FnOnce() -> _ + Send + '_> {
                    Box::new(|| {
                        h.services
                            .exchange_code(&creds, &code, Some(REDIRECT), None)
                    })
                })
                .collect(),
        );
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        assert!(
            results
                .iter()
                .all(|r| matches!(r, Ok(_) | Err(TokenError::InvalidGrant(_))))
        );

        let t = h.tokens(&creds, &alice, true);
        let refresh = secret_str(&t.refresh_token);
        let results = race(
            (0..6)
                .map(|_| -> Box<dyn FnOnce() -> _ + Send + '_> {
                    Box::new(|| h.services.refresh(&creds, &refresh, None))
                })
                .collect(),
        );
        let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "{results:?}");
        assert!(
            h.services
                .authenticate_bearer(winners[0].access_token.expose())
                .is_err()
        );
    }
}

#[test]
fn logout_and_revocation() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let t = h.tokens(&creds, &alice, true);
    assert_eq!(h.services.logout(alice.id).unwrap(), 1);
    assert_eq!(h.services.logout(alice.id).unwrap(), 0, "already revoked");
    assert!(
        h.services
            .authenticate_bearer(t.access_token.expose())
            .is_err()
    );
    let renewed = h
        .services
        .refresh(&creds, &secret_str(&t.refresh_token), None)
        .unwrap();
    assert!(
        h.services
            .authenticate_bearer(renewed.access_token.expose())
            .is_ok()
    );

    let other = h.client();
    let refresh = secret_str(&renewed.refresh_token);
    assert_eq!(
        h.services.revoke(&other, &refresh).unwrap(),
        RevokeOutcome::OtherClient
    );
    assert_eq!(
        h.services
            .revoke(&other, renewed.access_token.expose())
            .unwrap(),
        RevokeOutcome::OtherClient
    );
    assert!(
        h.services
            .authenticate_bearer(renewed.access_token.expose())
            .is_ok()
    );
    assert_eq!(
        h.services.revoke(&creds, &refresh).unwrap(),
        RevokeOutcome::GrantRevoked
    );
    assert!(
        h.services
            .authenticate_bearer(renewed.access_token.expose())
            .is_err()
    );
    assert_eq!(
        h.services.revoke(&creds, "mla_unknown").unwrap(),
        RevokeOutcome::Unknown
    );

    let t = h.tokens(&creds, &alice, false);
    assert_eq!(
        h.services.revoke(&creds, t.access_token.expose()).unwrap(),
        RevokeOutcome::AccessTokenRevoked
    );
    assert_eq!(
        h.services.authenticate_bearer(t.access_token.expose()),
        Err(BearerError::Invalid(AccessTokenInvalid::Revoked))
    );
    // An expired token is not counted by a sign-out.
    let t = h.tokens(&creds, &alice, false);
    h.advance(3600);
    assert_eq!(h.services.logout(alice.id).unwrap(), 0);
    assert!(
        !h.store
            .access_token(&TokenDigest::of(&t.access_token))
            .unwrap()
            .unwrap()
            .revoked
    );
}

#[test]
fn refresh_token_lookup_reports_state() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let client = ClientId::parse(&creds.client_id).unwrap();
    let first = h.tokens(&creds, &alice, true);
    let record = h
        .store
        .refresh_token(&refresh_digest(&first))
        .unwrap()
        .unwrap();
    assert_eq!(record.digest, refresh_digest(&first));
    assert_eq!(record.grant, first.grant);
    assert_eq!(record.client, client);
    assert_eq!(record.user, alice.id);
    assert_eq!(record.scope, first.scope);
    assert_eq!(
        record.expires_at.epoch_seconds(),
        h.now().epoch_seconds() + 86_400
    );
    assert_eq!(record.state, RefreshTokenState::Valid);
    assert!(matches!(
        h.services
            .introspect(&creds, &secret_str(&first.refresh_token))
            .unwrap(),
        Introspection::Active {
            kind: TokenKind::Refresh,
            ..
        }
    ));

    h.advance(10);
    let second = h
        .services
        .refresh(&creds, &secret_str(&first.refresh_token), Some("read"))
        .unwrap();
    let state = |t| {
        h.store
            .refresh_token(&refresh_digest(t))
            .unwrap()
            .unwrap()
            .state
    };
    assert_eq!(state(&first), RefreshTokenState::Used);
    assert_eq!(state(&second), RefreshTokenState::Valid);
    let renewed = h
        .store
        .refresh_token(&refresh_digest(&second))
        .unwrap()
        .unwrap();
    assert_eq!(
        renewed.scope, first.scope,
        "the grant's scope, not the narrowed token's"
    );
    assert_eq!(
        h.services
            .introspect(&creds, &secret_str(&first.refresh_token))
            .unwrap(),
        Introspection::Inactive
    );
    assert!(
        h.services
            .refresh(&creds, &secret_str(&first.refresh_token), None)
            .is_err()
    );
    assert_eq!(
        state(&first),
        RefreshTokenState::Revoked,
        "revoked outranks used"
    );
    assert_eq!(state(&second), RefreshTokenState::Revoked);

    let other = h.tokens(&creds, &alice, true);
    assert_eq!(state(&other), RefreshTokenState::Valid);
    assert_eq!(
        h.services
            .revoke(&creds, &secret_str(&other.refresh_token))
            .unwrap(),
        RevokeOutcome::GrantRevoked
    );
    assert_eq!(state(&other), RefreshTokenState::Revoked);
    assert_eq!(h.store.refresh_token(&h.session_cookie().1).unwrap(), None);
    assert_eq!(
        h.store
            .refresh_token(&TokenDigest::of(&other.access_token))
            .unwrap(),
        None
    );
}

#[test]
fn removing_a_client_takes_its_codes_grants_and_tokens() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let keep = h.client();
    let id = ClientId::parse(&creds.client_id).unwrap();
    let t = h.tokens(&creds, &alice, true);
    let kept = h.tokens(&keep, &alice, true);
    let code = h.code(&creds, &alice, false);
    assert!(h.store.remove_client(&id).unwrap());
    assert_eq!(
        h.store
            .access_token(&TokenDigest::of(&t.access_token))
            .unwrap(),
        None
    );
    assert_eq!(h.store.refresh_token(&refresh_digest(&t)).unwrap(), None);
    assert!(
        h.store
            .refresh_token(&refresh_digest(&kept))
            .unwrap()
            .is_some()
    );
    assert!(
        h.services
            .authenticate_bearer(kept.access_token.expose())
            .is_ok()
    );
    // The code went with it: the re-registered client finds no such code.
    let again = Client::new(
        id.clone(),
        ClientName::parse("LMS").unwrap(),
        vec![RedirectUri::parse(REDIRECT).unwrap()],
        ClientKind::Public,
    )
    .unwrap();
    h.store.create_client(&again, h.now()).unwrap();
    let public = ClientCredentials {
        client_id: creds.client_id.clone(),
        client_secret: None,
    };
    assert_eq!(
        h.services
            .exchange_code(&public, &code, Some(REDIRECT), None),
        Err(TokenError::InvalidGrant(
            "invalid authorization code".into()
        ))
    );
    // A code for a client or user that does not exist is refused, as a foreign key would.
    let mut issued = medialib_domain::oauth::IssuedCode {
        digest: h.session_cookie().1,
        client: ClientId::parse("nobody").unwrap(),
        redirect_uri: RedirectUri::parse(REDIRECT).unwrap(),
        user: alice.id,
        scope: t.scope,
        offline: false,
        challenge: None,
        expires_at: h.now(),
    };
    assert!(matches!(
        h.store.store_code(&issued, h.now()),
        Err(StoreError::Unexpected(_))
    ));
    issued.client = id;
    issued.user = common::unknown_user();
    assert!(matches!(
        h.store.store_code(&issued, h.now()),
        Err(StoreError::Unexpected(_))
    ));
}
