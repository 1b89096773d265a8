//! Contract cases of users, credentials, browser sessions, pending sign-ins and
//! housekeeping, ported from tests/integration/contract.rs, on a `MemoryStore`; and the
//! store itself (its namespace, clones sharing the data).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

mod common;

use std::sync::Arc;

use common::{Harness, REDIRECT, race, refresh_digest, secret_str, unknown_user};
use medialib_adapters_memory::MemoryStore;
use medialib_domain::oauth::RefreshTokenState;
use medialib_domain::{
    BrowserSession, Lifetime, OrgNamespace, PersonName, Secret, TokenDigest, TokenKind, UniqueId,
};
use medialib_ports::services::{BearerError, NewUserInput};
use medialib_ports::{
    CreateUserError, CredentialRepository, GrantRepository, Housekeeping, OrgRepository,
    PasswordHash, PendingSignInRepository, PurgeReport, SessionRepository, Store, StoreError,
    StoredPendingSignIn, UserRepository,
};

#[test]
fn the_namespace_is_made_as_the_diesel_adapter_makes_it() {
    let store = MemoryStore::new([0xAB; 16]);
    let ns = store.namespace().unwrap();
    // `Database::ensure_namespace([0xAB; 16])` stores exactly this (its own unit test).
    assert_eq!(ns.to_string(), "abababab-abab-4bab-abab-abababababab");
    let fixed = OrgNamespace::from_random([1; 16]);
    assert_eq!(
        MemoryStore::with_namespace(fixed).namespace().unwrap(),
        fixed
    );
    // Clones share the data; a `Store` trait object is what the services take.
    let h = Harness::new();
    let alice = h.user("alice", false);
    let clone: Arc<dyn Store> = Arc::new((*h.store).clone());
    assert_eq!(clone.user(alice.id).unwrap(), Some(alice));
    assert!(format!("{:?}", h.store).contains("users: 1"));
}

#[test]
fn users_are_unique_by_unique_id() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    assert_eq!(h.store.user(alice.id).unwrap(), Some(alice.clone()));
    assert_eq!(
        h.store.user_by_unique_id(&alice.unique_id).unwrap(),
        Some(alice.clone())
    );
    let dup = h.services.create_user(NewUserInput {
        unique_id: alice.unique_id.clone(),
        first_name: PersonName::default(),
        last_name: PersonName::default(),
        org_admin: false,
    });
    assert_eq!(dup.unwrap_err(), CreateUserError::UniqueIdTaken);
    // A taken id is a unique violation as well.
    let mut same_id = alice.clone();
    same_id.unique_id = UniqueId::parse("someone-else").unwrap();
    assert_eq!(
        h.store.create_user(&same_id, h.now()),
        Err(CreateUserError::UniqueIdTaken)
    );
    let first = PersonName::parse("Alicia", "firstName").unwrap();
    assert!(
        h.store
            .update_user_names(alice.id, &first, &alice.last_name, h.now())
            .unwrap()
    );
    assert_eq!(h.store.user(alice.id).unwrap().unwrap().first_name, first);
    assert!(
        !h.store
            .update_user_names(unknown_user(), &first, &first, h.now())
            .unwrap()
    );
    h.user("aaron", false);
    h.user("Zed", false);
    let names: Vec<String> = h
        .store
        .list_users()
        .unwrap()
        .into_iter()
        .map(|u| u.unique_id.as_str().to_owned())
        .collect();
    assert_eq!(names, ["Zed", "aaron", "alice"], "byte order");
    assert_eq!(
        h.services.provision_user(&alice.unique_id).unwrap().id,
        alice.id
    );
    let carol = UniqueId::parse("carol").unwrap();
    assert_eq!(h.services.provision_user(&carol).unwrap().unique_id, carol);
}

#[test]
fn sessions_round_trip_and_end() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let bob = h.user("bob", false);
    let hour = Lifetime::from_seconds(3600).unwrap();
    let (cookie, d1) = h.session_cookie();
    let s1 = BrowserSession::start(alice.id, h.now(), hour);
    h.store.create_session(&d1, &s1).unwrap();
    assert_eq!(h.store.session(&d1).unwrap(), Some(s1));
    assert_eq!(
        h.services.session_user(cookie.expose()).unwrap(),
        Some(alice.clone())
    );
    assert!(
        matches!(
            h.store.create_session(&d1, &s1),
            Err(StoreError::Unexpected(_))
        ),
        "a digest is stored once"
    );
    let (_, orphan) = h.session_cookie();
    let nobody = BrowserSession::start(unknown_user(), h.now(), hour);
    assert!(matches!(
        h.store.create_session(&orphan, &nobody),
        Err(StoreError::Unexpected(_))
    ));
    assert_eq!(h.store.session(&orphan).unwrap(), None);

    let (_, d2) = h.session_cookie();
    let short = BrowserSession::start(alice.id, h.now(), Lifetime::from_seconds(10).unwrap());
    h.store.create_session(&d2, &short).unwrap();
    let (_, d3) = h.session_cookie();
    let s3 = BrowserSession::start(bob.id, h.now(), hour);
    h.store.create_session(&d3, &s3).unwrap();
    h.advance(10);
    let stored = h.store.session(&d2).unwrap().unwrap();
    assert_eq!(stored, short, "an expired session is still returned");
    assert!(!stored.is_active(h.now()));

    assert!(h.store.end_session(&d1).unwrap());
    assert!(!h.store.end_session(&d1).unwrap(), "already ended");
    assert_eq!(h.services.session_user(cookie.expose()).unwrap(), None);
    let (_, d4) = h.session_cookie();
    h.store
        .create_session(&d4, &BrowserSession::start(alice.id, h.now(), hour))
        .unwrap();
    assert_eq!(h.store.end_user_sessions(alice.id).unwrap(), 2);
    assert_eq!(h.store.session(&d4).unwrap(), None);
    assert_eq!(h.store.session(&d3).unwrap(), Some(s3));
    assert_eq!(h.store.end_user_sessions(alice.id).unwrap(), 0);
    assert_eq!(h.store.end_user_sessions(unknown_user()).unwrap(), 0);
}

#[test]
fn local_credentials_set_replace_and_look_up() {
    let h = Harness::new();
    let alice = h.user("o'alice", false);
    let bob = h.user("bob", false);
    let first = PasswordHash::new("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$first");
    let second = PasswordHash::new("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$second");
    assert_eq!(
        h.store
            .password_hash(&alice.unique_id)
            .unwrap()
            .map(|p| p.0),
        None
    );
    assert!(
        h.store
            .set_password_hash(alice.id, &first, h.now())
            .unwrap()
    );
    let (user, hash) = h.store.password_hash(&alice.unique_id).unwrap().unwrap();
    assert_eq!(user, alice);
    assert_eq!(hash.as_str(), first.as_str());
    assert!(
        h.store
            .set_password_hash(alice.id, &second, h.now())
            .unwrap(),
        "replacing"
    );
    assert_eq!(
        h.store
            .password_hash(&alice.unique_id)
            .unwrap()
            .unwrap()
            .1
            .as_str(),
        second.as_str()
    );
    assert_eq!(
        h.store.password_hash(&bob.unique_id).unwrap().map(|p| p.0),
        None
    );
    let nobody = UniqueId::parse("nobody").unwrap();
    assert_eq!(h.store.password_hash(&nobody).unwrap().map(|p| p.0), None);
    assert!(
        !h.store
            .set_password_hash(unknown_user(), &first, h.now())
            .unwrap()
    );
}

fn pending(h: &Harness, tag: &str) -> (TokenDigest, StoredPendingSignIn) {
    let (_, digest) = TokenKind::LoginForm.mint(medialib_ports::RandomExt::bytes32(&*h.random));
    let record = StoredPendingSignIn {
        nonce: Secret::new(format!("nonce-{tag}")),
        pkce_verifier: Secret::new(format!("verifier-{tag}")),
        return_to: format!("response_type=code&client_id=c&state={tag}%20%26x"),
    };
    (digest, record)
}

#[test]
fn pending_sign_ins_are_taken_once_and_expire() {
    let h = Harness::new();
    let now = h.now();
    let minutes = |n: i64| now.plus(Lifetime::from_seconds(n).unwrap());
    let (d1, p1) = pending(&h, "one");
    h.store.put_pending_sign_in(&d1, &p1, minutes(600)).unwrap();
    assert!(matches!(
        h.store.put_pending_sign_in(&d1, &p1, minutes(600)),
        Err(StoreError::Unexpected(_))
    ));
    assert_eq!(h.store.take_pending_sign_in(&d1, now).unwrap(), Some(p1));
    assert_eq!(
        h.store.take_pending_sign_in(&d1, now).unwrap(),
        None,
        "single use"
    );

    let (d2, p2) = pending(&h, "two");
    h.store.put_pending_sign_in(&d2, &p2, minutes(10)).unwrap();
    let (d3, p3) = pending(&h, "three");
    h.store.put_pending_sign_in(&d3, &p3, minutes(10)).unwrap();
    let (d4, p4) = pending(&h, "four");
    h.store.put_pending_sign_in(&d4, &p4, minutes(600)).unwrap();
    h.advance(9);
    assert_eq!(
        h.store.take_pending_sign_in(&d2, h.now()).unwrap(),
        Some(p2),
        "last second"
    );
    h.advance(1);
    assert_eq!(h.store.take_pending_sign_in(&d3, h.now()).unwrap(), None);
    h.store
        .put_pending_sign_in(&d3, &p3, minutes(10))
        .unwrap_or_else(|e| panic!("the expired record was deleted when taken: {e}"));
    assert_eq!(
        h.store.purge_expired(h.now(), 0).unwrap(),
        PurgeReport {
            pending_sign_ins: 1,
            ..PurgeReport::default()
        }
    );
    assert_eq!(
        h.store.take_pending_sign_in(&d4, h.now()).unwrap(),
        Some(p4)
    );

    // Of concurrent takers, exactly one gets it.
    let (d, p) = pending(&h, "race");
    h.store.put_pending_sign_in(&d, &p, minutes(600)).unwrap();
    let jobs: Vec<Box<dyn FnOnce() -> Option<StoredPendingSignIn> + Send>> = (0..8)
        .map(|_| {
            let store = h.store.clone();
            Box::new(move || store.take_pending_sign_in(&d, now).unwrap())
                as Box<dyn FnOnce() -> Option<StoredPendingSignIn> + Send>
        })
        .collect();
    let winners: Vec<_> = race(jobs).into_iter().flatten().collect();
    assert_eq!(winners, vec![p]);
}

#[test]
fn purge_deletes_exactly_what_expired() {
    const GRACE: i64 = 7200;
    let h = Harness::new();
    let t0 = h.now().epoch_seconds();
    let purge = |at: i64| {
        h.set_time(t0 + at);
        h.store.purge_expired(h.now(), GRACE).unwrap()
    };
    let alice = h.user("alice", false);
    let creds = h.client();
    let a = h.tokens(&creds, &alice, true);
    let b = h.tokens(&creds, &alice, false);
    let code_c = h.code(&creds, &alice, false);
    let c = h
        .services
        .exchange_code(&creds, &code_c, Some(REDIRECT), None)
        .unwrap();
    let _unused = h.code(&creds, &alice, false);
    let (_, short) = h.session_cookie();
    let (_, long) = h.session_cookie();
    let now = h.now();
    for (d, secs) in [(&short, 3600), (&long, 7200)] {
        let s = BrowserSession::start(alice.id, now, Lifetime::from_seconds(secs).unwrap());
        h.store.create_session(d, &s).unwrap();
    }

    assert_eq!(purge(0), PurgeReport::default(), "nothing has expired");
    assert_eq!(
        purge(600),
        PurgeReport::default(),
        "codes are kept for the grace"
    );
    assert!(
        h.services
            .exchange_code(&creds, &code_c, Some(REDIRECT), None)
            .is_err()
    );
    assert_eq!(
        h.services.authenticate_bearer(c.access_token.expose()),
        Err(BearerError::Invalid(
            medialib_domain::oauth::AccessTokenInvalid::Revoked
        )),
        "a late replay still revokes"
    );
    assert_eq!(purge(3599), PurgeReport::default());
    assert_eq!(
        purge(3600),
        PurgeReport {
            sessions: 1,
            ..PurgeReport::default()
        }
    );
    assert_eq!(h.store.session(&short).unwrap(), None);
    assert!(h.store.session(&long).unwrap().is_some());
    assert_eq!(
        purge(3601),
        PurgeReport {
            access_tokens: 3,
            ..PurgeReport::default()
        }
    );
    assert_eq!(
        h.store
            .access_token(&TokenDigest::of(&b.access_token))
            .unwrap(),
        None
    );
    assert_eq!(
        h.store
            .refresh_token(&refresh_digest(&a))
            .unwrap()
            .unwrap()
            .state,
        RefreshTokenState::Valid
    );
    assert_eq!(
        purge(7260),
        PurgeReport {
            sessions: 1,
            ..PurgeReport::default()
        }
    );
    assert_eq!(
        purge(7261),
        PurgeReport {
            codes: 4,
            grants: 2,
            ..PurgeReport::default()
        }
    );
    assert_eq!(
        purge(7261),
        PurgeReport::default(),
        "a second pass deletes nothing"
    );
    assert!(
        h.services
            .refresh(&creds, &secret_str(&a.refresh_token), None)
            .is_ok()
    );
    assert_eq!(
        purge(86_400),
        PurgeReport {
            access_tokens: 1,
            ..PurgeReport::default()
        }
    );
    assert_eq!(
        purge(86_401),
        PurgeReport {
            refresh_tokens: 1,
            ..PurgeReport::default()
        }
    );
    assert_eq!(h.store.refresh_token(&refresh_digest(&a)).unwrap(), None);
    assert_eq!(purge(7261 + 86_400), PurgeReport::default());
    assert_eq!(
        purge(7261 + 86_401),
        PurgeReport {
            refresh_tokens: 1,
            grants: 1,
            ..PurgeReport::default()
        }
    );
    assert_eq!(purge(7261 + 86_401), PurgeReport::default());
}

#[test]
fn purge_counts_every_expired_session() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let now = h.now();
    let second = Lifetime::from_seconds(1).unwrap();
    let day = Lifetime::from_seconds(86_400).unwrap();
    let mut live = Vec::new();
    for i in 0..1_011 {
        let (_, d) = h.session_cookie();
        let lifetime = if i % 100 == 0 { day } else { second };
        h.store
            .create_session(&d, &BrowserSession::start(alice.id, now, lifetime))
            .unwrap();
        if i % 100 == 0 {
            live.push(d);
        }
    }
    h.advance(1);
    assert_eq!(
        h.store.purge_expired(h.now(), 60).unwrap(),
        PurgeReport {
            sessions: 1_000,
            ..PurgeReport::default()
        }
    );
    for d in &live {
        assert!(h.store.session(d).unwrap().is_some());
    }
    assert_eq!(h.store.end_user_sessions(alice.id).unwrap(), 11);
}

/// A grant with nothing left is kept while it is younger than the grace of the pass (its
/// code may have gone in an earlier pass with a shorter grace).
#[test]
fn purge_keeps_grants_younger_than_the_code_grace() {
    let h = Harness::new();
    let t0 = h.now().epoch_seconds();
    let alice = h.user("alice", false);
    let creds = h.client();
    let t = h.tokens(&creds, &alice, true);
    // No grace: the expired code goes; the grant keeps its live tokens.
    h.set_time(t0 + 61);
    assert_eq!(
        h.store.purge_expired(h.now(), 0).unwrap(),
        PurgeReport {
            codes: 1,
            ..PurgeReport::default()
        }
    );
    // Every token expired; a grace longer than the grant's age keeps the empty grant.
    h.set_time(t0 + 86_401);
    let long_grace = 100_000;
    assert_eq!(
        h.store.purge_expired(h.now(), long_grace).unwrap(),
        PurgeReport {
            access_tokens: 1,
            refresh_tokens: 1,
            ..PurgeReport::default()
        }
    );
    assert_eq!(
        h.store.purge_expired(h.now(), 0).unwrap(),
        PurgeReport {
            grants: 1,
            ..PurgeReport::default()
        }
    );
    assert_eq!(h.store.refresh_token(&refresh_digest(&t)).unwrap(), None);
}
