//! What the in-memory exchange does in one atomic step (client authentication first, nothing
//! written when it fails), and client removal taking its codes, grants and tokens. (The
//! OAuth contract cases themselves are the contract suite's, `contract::memory::*`.)

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

mod common;

use common::{Harness, REDIRECT, refresh_digest};
use medialib_domain::oauth::{
    Client, ClientAuthError, ClientId, ClientKind, ClientName, CodePresentation, RedeemError,
    RedirectUri, TokenRandomness,
};
use medialib_domain::{Secret, TokenDigest, TokenKind};
use medialib_ports::services::{ClientCredentials, TokenError};
use medialib_ports::{
    ClientRepository, CodeExchange, ExchangeError, GrantRepository, RandomExt, StoreError,
};

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
