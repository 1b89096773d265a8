//! The `LtiRepository` contract, run unchanged on SQLite, PostgreSQL and the in-memory store
//! with the uploads contract's `Bench`: consumers, single-use nonces (also under
//! concurrency), course libraries made once, medialib's signing keys (the newest kept), and
//! LTI 1.3 logins taken once (also under concurrency).

use std::sync::{Arc, Barrier};

use medialib_domain::lti::CourseKey;
use medialib_domain::lti::v1p3::{Platform, UniqueIdClaim};
use medialib_domain::{ObjectType, PermissionLevel, Secret, Timestamp};
use medialib_ports::{
    AddConsumerError, AddPlatformError, CourseLibrary, LtiConsumer, PendingLogin, Store,
    StoreError, ToolKey, UsedNonce,
};

use crate::uploads_contract::{Bench, T0, at};

fn consumer(key: &str) -> LtiConsumer {
    LtiConsumer {
        key: key.to_owned(),
        name: format!("LMS {key}"),
        secret: Secret::new(format!("secret of {key}")),
        created_at: at(T0),
    }
}

fn use_nonce(
    store: &dyn Store,
    consumer: &str,
    nonce: &str,
    kept_until: Timestamp,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let used = UsedNonce {
        consumer,
        nonce,
        kept_until,
    };
    store.use_lti_nonce(used, now)
}

fn course(context: &str) -> CourseKey {
    CourseKey::new("ml-key", context).unwrap()
}

/// Runs `f` on `n` threads at once; their results.
fn at_once<T: Send + 'static>(
    n: usize,
    store: &Arc<dyn Store>,
    f: impl Fn(&dyn Store, usize) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let barrier = Arc::new(Barrier::new(n));
    let f = Arc::new(f);
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (store, barrier, f) = (store.clone(), barrier.clone(), f.clone());
            std::thread::spawn(move || {
                barrier.wait();
                f(store.as_ref(), i)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

mod cases {
    use super::*;

    pub fn consumers_are_added_found_listed_and_removed(b: &Bench) {
        let s = b.store.as_ref();
        s.add_lti_consumer(&consumer("b")).unwrap();
        s.add_lti_consumer(&consumer("a")).unwrap();
        assert_eq!(
            s.add_lti_consumer(&LtiConsumer {
                name: "other".into(),
                ..consumer("a")
            }),
            Err(AddConsumerError::KeyTaken)
        );
        assert_eq!(s.lti_consumer("a").unwrap(), Some(consumer("a")));
        assert_eq!(s.lti_consumer("c").unwrap(), None);
        assert_eq!(s.lti_consumers().unwrap(), [consumer("a"), consumer("b")]);
        assert!(s.remove_lti_consumer("a").unwrap());
        assert!(!s.remove_lti_consumer("a").unwrap());
        assert_eq!(s.lti_consumers().unwrap(), [consumer("b")]);
    }

    pub fn a_nonce_is_single_use_per_consumer_until_it_is_forgotten(b: &Bench) {
        let s = b.store.as_ref();
        s.add_lti_consumer(&consumer("a")).unwrap();
        s.add_lti_consumer(&consumer("b")).unwrap();
        assert!(use_nonce(s, "a", "n1", at(T0 + 900), at(T0)).unwrap());
        assert!(!use_nonce(s, "a", "n1", at(T0 + 900), at(T0)).unwrap());
        assert!(use_nonce(s, "b", "n1", at(T0 + 900), at(T0)).unwrap());
        // Remembered through its last second, forgotten after it.
        assert!(!use_nonce(s, "a", "n1", at(T0 + 2000), at(T0 + 900)).unwrap());
        assert!(use_nonce(s, "a", "n1", at(T0 + 2000), at(T0 + 901)).unwrap());
        // A consumer's nonces go with it.
        assert!(s.remove_lti_consumer("b").unwrap());
        s.add_lti_consumer(&consumer("b")).unwrap();
        assert!(use_nonce(s, "b", "n1", at(T0 + 900), at(T0)).unwrap());
        // A nonce of no consumer is not stored.
        assert!(use_nonce(s, "nobody", "n1", at(T0 + 900), at(T0)).is_err());
    }

    pub fn concurrent_uses_of_a_nonce_have_one_winner(b: &Bench) {
        b.store.add_lti_consumer(&consumer("a")).unwrap();
        let won = at_once(8, &b.store, |s, _| {
            use_nonce(s, "a", "same", at(T0 + 900), at(T0)).unwrap()
        });
        assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    }

    pub fn a_course_library_is_made_once(b: &Bench) {
        let s = b.store.as_ref();
        assert_eq!(s.course_library(&course("c1")).unwrap(), None);
        let first = b.object(ObjectType::Catalog);
        let made = s
            .create_course_library(&course("c1"), &first, b.owner)
            .unwrap();
        assert_eq!(made, CourseLibrary::Created(first.id()));
        assert_eq!(s.course_library(&course("c1")).unwrap(), Some(first.id()));
        assert_eq!(
            s.explicit_level(first.id(), b.owner).unwrap(),
            Some(PermissionLevel::Admin)
        );
        let second = b.object(ObjectType::Catalog);
        assert_eq!(
            s.create_course_library(&course("c1"), &second, b.owner)
                .unwrap(),
            CourseLibrary::Existing(first.id())
        );
        assert_eq!(
            s.object(second.id()).unwrap(),
            None,
            "the loser's library is not stored"
        );
        assert_eq!(
            s.course_library(&course("c2")).unwrap(),
            None,
            "another course has none"
        );
        let other = CourseKey::new("another-platform", "c1").unwrap();
        assert_eq!(
            s.course_library(&other).unwrap(),
            None,
            "nor another platform's"
        );
    }

    pub fn platforms_are_registered_with_their_deployments_and_removed(b: &Bench) {
        let s = b.store.as_ref();
        let platform = |issuer: &str, client: &str, deployments: &[&str]| Platform {
            issuer: issuer.to_owned(),
            client_id: client.to_owned(),
            deployments: deployments.iter().map(|d| (*d).to_owned()).collect(),
            auth_url: format!("{issuer}/auth"),
            token_url: format!("{issuer}/token"),
            jwks_url: format!("{issuer}/jwks"),
            unique_id_claim: UniqueIdClaim::parse("email").unwrap(),
        };
        let moodle = platform("https://moodle.example.edu", "c1", &["1", "2"]);
        let moodle_two = platform("https://moodle.example.edu", "c2", &["9"]);
        let canvas = platform("https://canvas.example.com", "c1", &["1"]);
        for p in [&moodle, &moodle_two, &canvas] {
            s.add_lti_platform(p, at(T0)).unwrap();
        }
        assert_eq!(
            s.add_lti_platform(
                &platform("https://moodle.example.edu", "c1", &["3"]),
                at(T0)
            ),
            Err(AddPlatformError::Exists)
        );
        assert_eq!(
            s.lti_platforms_of("https://moodle.example.edu").unwrap(),
            [moodle.clone(), moodle_two.clone()]
        );
        assert_eq!(s.lti_platforms_of("https://other.example").unwrap(), []);
        assert_eq!(
            s.lti_platforms().unwrap(),
            [canvas.clone(), moodle.clone(), moodle_two]
        );
        assert!(
            s.remove_lti_platform("https://moodle.example.edu", "c2")
                .unwrap()
        );
        assert!(
            !s.remove_lti_platform("https://moodle.example.edu", "c2")
                .unwrap()
        );
        assert_eq!(s.lti_platforms().unwrap(), [canvas, moodle.clone()]);
        // Its deployments went with it: registered again, it has only the new ones.
        s.add_lti_platform(
            &platform("https://moodle.example.edu", "c2", &["7"]),
            at(T0),
        )
        .unwrap();
        assert_eq!(
            s.lti_platforms_of("https://moodle.example.edu").unwrap()[1].deployments,
            ["7"]
        );
    }

    pub fn signing_keys_are_kept_newest_first_and_the_oldest_dropped(b: &Bench) {
        let s = &b.store;
        assert!(s.lti_keys().unwrap().is_empty());
        let key = |kid: &str, secs: i64| ToolKey {
            kid: kid.to_owned(),
            private_key: Secret::new(format!("pem of {kid}")),
            created_at: at(T0 + secs),
        };
        s.add_lti_key(&key("a", 0), 2).unwrap();
        s.add_lti_key(&key("b", 10), 2).unwrap();
        assert_eq!(s.lti_keys().unwrap(), [key("b", 10), key("a", 0)]);
        s.add_lti_key(&key("c", 20), 2).unwrap();
        assert_eq!(s.lti_keys().unwrap(), [key("c", 20), key("b", 10)]);
        // A kid is a key: adding it twice fails and changes nothing.
        assert!(s.add_lti_key(&key("c", 30), 2).is_err());
        assert_eq!(s.lti_keys().unwrap(), [key("c", 20), key("b", 10)]);
    }

    fn login(state: &str, expires: i64) -> PendingLogin {
        PendingLogin {
            state: state.to_owned(),
            nonce: format!("nonce of {state}"),
            issuer: "https://moodle.example.edu".to_owned(),
            client_id: "c1".to_owned(),
            expires_at: at(expires),
        }
    }

    pub fn a_login_is_taken_once_and_not_after_it_lapsed(b: &Bench) {
        let s = &b.store;
        s.begin_lti_login(&login("s1", T0 + 600), at(T0)).unwrap();
        s.begin_lti_login(&login("s2", T0 + 600), at(T0)).unwrap();
        assert_eq!(
            s.take_lti_login("s1", at(T0 + 5)).unwrap(),
            Some(login("s1", T0 + 600))
        );
        assert_eq!(
            s.take_lti_login("s1", at(T0 + 5)).unwrap(),
            None,
            "taken once"
        );
        assert_eq!(s.take_lti_login("nope", at(T0 + 5)).unwrap(), None);
        assert_eq!(
            s.take_lti_login("s2", at(T0 + 601)).unwrap(),
            None,
            "lapsed"
        );
        // A new login forgets the lapsed ones (and they stay unusable either way).
        s.begin_lti_login(&login("s3", T0 + 100), at(T0)).unwrap();
        s.begin_lti_login(&login("s4", T0 + 2000), at(T0 + 1000))
            .unwrap();
        assert_eq!(
            s.take_lti_login("s3", at(T0 + 50)).unwrap(),
            None,
            "deleted by s4's login"
        );
        assert_eq!(
            s.take_lti_login("s4", at(T0 + 1000)).unwrap(),
            Some(login("s4", T0 + 2000))
        );
    }

    pub fn concurrent_launches_with_one_state_have_one_winner(b: &Bench) {
        b.store
            .begin_lti_login(&login("s1", T0 + 600), at(T0))
            .unwrap();
        let taken = at_once(8, &b.store, |s, _| {
            s.take_lti_login("s1", at(T0 + 1)).unwrap()
        });
        assert_eq!(taken.iter().filter(|t| t.is_some()).count(), 1, "{taken:?}");
    }

    pub fn concurrent_first_launches_make_one_course_library(b: &Bench) {
        let objects: Vec<_> = (0..4).map(|_| b.object(ObjectType::Catalog)).collect();
        let owner = b.owner;
        let made = at_once(4, &b.store, move |s, i| {
            s.create_course_library(&course("c1"), &objects[i], owner)
                .unwrap()
        });
        let created: Vec<_> = made
            .iter()
            .filter(|m| matches!(m, CourseLibrary::Created(_)))
            .collect();
        assert_eq!(created.len(), 1, "{made:?}");
        assert!(made.iter().all(|m| m.id() == created[0].id()), "{made:?}");
    }
}

use cases::*;

medialib_adapters_diesel::backend_tests!(
    on [sqlite, memory, postgres] with Bench::run:
    consumers_are_added_found_listed_and_removed,
    a_nonce_is_single_use_per_consumer_until_it_is_forgotten,
    concurrent_uses_of_a_nonce_have_one_winner,
    a_course_library_is_made_once,
    concurrent_first_launches_make_one_course_library,
    platforms_are_registered_with_their_deployments_and_removed,
    signing_keys_are_kept_newest_first_and_the_oldest_dropped,
    a_login_is_taken_once_and_not_after_it_lapsed,
    concurrent_launches_with_one_state_have_one_winner,
);
