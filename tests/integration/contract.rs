//! The repository-port contract suite: every case runs, unchanged, against SQLite,
//! against PostgreSQL (a throwaway database per test on 127.0.0.1:5432) and against the
//! in-memory store (`contract::sqlite::*`, `contract::postgres::*`, `contract::memory::*`).
//!
//! The cases drive the real `DieselStore` through the application services of
//! `medialib-ports`, so they check the adapter's atomicity and the domain rules
//! together. Time is a settable test clock; randomness is the OS RNG.

use std::collections::BTreeSet;

use std::sync::{Arc, Barrier};

use medialib::world::OsRandom;
use medialib_adapters_diesel::testing::{TestBackend, TestDb};
use medialib_adapters_diesel::{Database, DieselStore, PoolOptions};
use medialib_adapters_memory::MemoryStore;
use medialib_adapters_memory::testing::{self, REDIRECT, refresh_digest, unknown_user};
// The cases, named here for `backend_tests!` at the end.
use cases::*;
use medialib_domain::oauth::{
    Client, ClientId, ClientKind, ClientName, OAuthErrorCode, RedirectUri, RefreshTokenState,
};
use medialib_domain::{
    AfterRemoval, BrowserSession, Lifecycle, Lifetime, MembershipError, ObjectId, ObjectPatch,
    ObjectType, PageCursor, PageRequest, PageSize, PermissionLevel, PersonName, Properties,
    Refusal, Secret, Since, Timestamp, Title, TokenDigest, TokenKind, UniqueId, UpdateError, User,
};
use medialib_ports::services::people::{GrantPermissionFailed, Grantee, RevokePermissionFailed};
use medialib_ports::services::{
    AddMemberFailed, BearerError, ClientAuthFailed, ClientCredentials, FinishSignInError,
    Introspection, NewUserInput, OAuthFailure, PENDING_SIGN_IN_SECONDS, Placement, SignInError,
    TokenResponse, UpdateObjectFailed,
};
use medialib_ports::{
    AddOutcome, CatalogItem, Clock, CreateClientError, CreateUserError, Members, PasswordHash,
    PurgeReport, RevokeOutcome, Store,
};
use medialib_ports::{
    PendingSignIn, RedirectCallback, RedirectStart, SignInMethod, SsoError, SsoIdentity,
    SsoProvider, StoredPendingSignIn,
};

/// One backend, migrated, under the harness of the use-case tests
/// (`medialib_adapters_memory::testing::Harness`): the same helpers, the OS RNG.
struct Harness {
    h: testing::Harness,
    /// The database under a diesel store (none under the in-memory store); dropped last, it
    /// removes the database.
    _db: Option<TestDb>,
}

impl std::ops::Deref for Harness {
    type Target = testing::Harness;

    fn deref(&self) -> &testing::Harness {
        &self.h
    }
}

impl Harness {
    /// The runner of `backend_tests!`: `case` on a fresh harness on `backend`.
    fn run(backend: TestBackend, case: fn(&Harness)) {
        case(&Self::on(backend));
    }

    /// `DieselStore` on a fresh, migrated database, or the in-memory store
    /// (`medialib-adapters-memory`): the same contract, no database.
    fn on(backend: TestBackend) -> Self {
        let Some(database) = backend.database() else {
            return Self::with_store(Arc::new(MemoryStore::new(rand::random())), None);
        };
        let test_db = TestDb::create(database);
        let db = Database::connect(&test_db.url, &PoolOptions::default()).unwrap();
        db.migrate(&mut |_| {}).unwrap();
        db.ensure_namespace(rand::random()).unwrap();
        Self::with_store(Arc::new(DieselStore::new(db)), Some(test_db))
    }

    fn with_store(store: Arc<dyn Store>, db: Option<TestDb>) -> Self {
        Self {
            h: testing::Harness::with_store(store, Arc::new(OsRandom)),
            _db: db,
        }
    }
}

fn secret_str(s: &Option<Secret>) -> String {
    s.as_ref().unwrap().expose().to_owned()
}

/// A fresh session cookie and its digest.
fn session_cookie() -> (Secret, TokenDigest) {
    TokenKind::Session.mint(rand::random())
}

/// Runs every job on its own thread, released together by a barrier, and
/// returns their results in order: the way the suite makes callers race.
fn race<T: Send>(jobs: Vec<Box<dyn FnOnce() -> T + Send + '_>>) -> Vec<T> {
    let barrier = Barrier::new(jobs.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|job| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    job()
                })
            })
            .collect();
        handles.into_iter().map(|t| t.join().unwrap()).collect()
    })
}

mod cases {
    use super::*;

    pub fn users_are_unique_by_unique_id(h: &Harness) {
        let alice = h.user("alice", false);
        assert_eq!(h.store.user(alice.id).unwrap(), Some(alice.clone()));
        assert_eq!(
            h.store.user_by_unique_id(&alice.unique_id).unwrap(),
            Some(alice.clone())
        );
        let dup = h.services.people().create_user(NewUserInput {
            unique_id: alice.unique_id.clone(),
            first_name: PersonName::default(),
            last_name: PersonName::default(),
            org_admin: false,
        });
        assert_eq!(dup.unwrap_err(), CreateUserError::UniqueIdTaken);
        let first = PersonName::parse("Alicia", "firstName").unwrap();
        assert!(
            h.store
                .update_user_names(alice.id, &first, &alice.last_name, h.clock.now())
                .unwrap()
        );
        assert_eq!(h.store.user(alice.id).unwrap().unwrap().first_name, first);
        h.user("aaron", false);
        let names: Vec<String> = h
            .store
            .list_users()
            .unwrap()
            .into_iter()
            .map(|u| u.unique_id.as_str().to_owned())
            .collect();
        assert_eq!(names, ["aaron", "alice"]);
        // Provisioning finds the existing user, or creates one.
        assert_eq!(
            h.services
                .people()
                .provision_user(&alice.unique_id)
                .unwrap()
                .id,
            alice.id
        );
        let carol = UniqueId::parse("carol").unwrap();
        let provisioned = h.services.people().provision_user(&carol).unwrap();
        assert_eq!(provisioned.unique_id, carol);
        // SQL metacharacters are stored verbatim.
        let odd = h.user("o'brien\"; DROP TABLE users; --", false);
        assert_eq!(
            h.store.user(odd.id).unwrap().unwrap().unique_id,
            odd.unique_id
        );
    }

    pub fn objects_round_trip_and_type_is_fixed(h: &Harness) {
        let alice = h.user("alice", false);
        let bob = h.user("bob", false);
        let lib = h.library(&alice, "Lectures");
        let entries = h.store.permission_entries(lib).unwrap();
        assert_eq!(entries.len(), 1, "the creator becomes the library's admin");
        assert_eq!(entries[0].user.id, alice.id);
        assert_eq!(entries[0].level, PermissionLevel::Admin);

        let mut new = testing::Harness::new_object(ObjectType::Video, "Intro ünïcödé");
        new.fields.properties = Properties::parse([("course", "CS101"), ("term", "fall")]).unwrap();
        new.fields.public = true;
        let created = h
            .services
            .media()
            .create_object(&alice.as_caller(), Placement::In(lib), new)
            .unwrap();
        let stored = h.store.object(created.id()).unwrap().unwrap();
        assert_eq!(stored, created);
        assert_eq!(
            h.store.object_by_shortcode(created.shortcode()).unwrap(),
            Some(created.clone())
        );

        h.advance(10);
        let patch = ObjectPatch {
            object_type: Some(ObjectType::Video),
            title: Some(Title::parse("Intro, revised").unwrap()),
            properties: Some(Properties::parse([("term", "spring")]).unwrap()),
            ..ObjectPatch::default()
        };
        let updated = h
            .services
            .media()
            .update_object(&alice.as_caller(), lib, created.id(), patch)
            .unwrap();
        assert_eq!(h.store.object(created.id()).unwrap().unwrap(), updated);
        assert_eq!(updated.modified(), h.clock.now());
        let props: Vec<_> = updated.fields().properties.iter().collect();
        assert_eq!(props, [("course", "CS101"), ("term", "spring")]);

        let change = ObjectPatch {
            object_type: Some(ObjectType::Audio),
            ..ObjectPatch::default()
        };
        assert!(matches!(
            h.services
                .media()
                .update_object(&alice.as_caller(), lib, created.id(), change.clone()),
            Err(UpdateObjectFailed::Rule(UpdateError::TypeChange { .. }))
        ));
        assert!(matches!(
            h.services.media().update_object(
                &bob.as_caller(),
                lib,
                created.id(),
                ObjectPatch::default()
            ),
            Err(UpdateObjectFailed::Refused(Refusal::Forbidden(_)))
        ));
        let other = h.library(&alice, "Other");
        assert!(matches!(
            h.services.media().update_object(
                &alice.as_caller(),
                other,
                created.id(),
                ObjectPatch::default()
            ),
            Err(UpdateObjectFailed::NotFound)
        ));
        // A top-level object must be a catalog.
        assert!(
            h.services
                .media()
                .create_object(
                    &alice.as_caller(),
                    Placement::TopLevel,
                    testing::Harness::new_object(ObjectType::Video, "x")
                )
                .is_err()
        );
    }

    pub fn membership_is_many_to_many_and_acyclic(h: &Harness) {
        let alice = h.user("alice", false);
        let a = h.library(&alice, "A");
        let b = h.library(&alice, "B");
        let s = h.object_in(&alice, a, ObjectType::Catalog, "S");
        let v = h.object_in(&alice, s, ObjectType::Video, "V");
        let c = alice.as_caller();

        assert_eq!(
            h.services.media().add_member(&c, b, s).unwrap(),
            AddOutcome::Added
        );
        assert_eq!(
            h.services.media().add_member(&c, b, s).unwrap(),
            AddOutcome::AlreadyMember
        );
        let mut parents = h.store.collections_of(s).unwrap();
        parents.sort();
        let mut expected = vec![a, b];
        expected.sort();
        assert_eq!(parents, expected);

        for (coll, member) in [(s, a), (s, s), (s, b)] {
            assert_eq!(
                h.services.media().add_member(&c, coll, member),
                Err(AddMemberFailed::Rule(MembershipError::Cycle)),
                "adding an ancestor must be refused"
            );
        }
        assert_eq!(
            h.services.media().add_member(&c, v, a),
            Err(AddMemberFailed::Rule(MembershipError::NotACollection))
        );
        let ghost = ObjectId::parse("00000000000000000000000000000000").unwrap();
        // An unknown object is refused exactly as one the caller cannot see (no oracle).
        assert_eq!(
            h.services.media().add_member(&c, a, ghost),
            Err(AddMemberFailed::Refused(Refusal::Hidden))
        );
        assert_eq!(
            h.services.media().add_member(&c, ghost, v),
            Err(AddMemberFailed::CollectionNotFound)
        );
        // The caller must be admin of the target and of what it links.
        let bob = h.user("bob", false);
        let bobs = h.library(&bob, "Bob's");
        assert_eq!(
            h.services.media().add_member(&bob.as_caller(), bobs, v),
            Err(AddMemberFailed::Refused(Refusal::Hidden))
        );
        assert!(matches!(
            h.services.media().add_member(&bob.as_caller(), a, v),
            Err(AddMemberFailed::Refused(Refusal::Forbidden(_)))
        ));
        h.services
            .people()
            .grant_permission(&c, a, Grantee::Id(bob.id), PermissionLevel::View)
            .unwrap();
        for member in [s, v, a] {
            assert!(
                matches!(
                    h.services
                        .media()
                        .add_member(&bob.as_caller(), bobs, member),
                    Err(AddMemberFailed::Refused(Refusal::Forbidden(_)))
                ),
                "a viewer links nothing it only views"
            );
        }
        assert!(!h.store.collections_of(s).unwrap().contains(&bobs));
    }

    pub fn last_membership_soft_deletes(h: &Harness) {
        let alice = h.user("alice", false);
        let a = h.library(&alice, "A");
        let b = h.library(&alice, "B");
        let v = h.object_in(&alice, a, ObjectType::Video, "V");
        let c = alice.as_caller();
        h.services.media().add_member(&c, b, v).unwrap();
        assert_eq!(
            h.services.media().remove_member(&c, a, v).unwrap(),
            AfterRemoval::StillListed
        );
        assert!(h.store.object(v).unwrap().is_some());
        h.advance(5);
        assert_eq!(
            h.services.media().remove_member(&c, b, v).unwrap(),
            AfterRemoval::SoftDelete
        );
        assert_eq!(h.store.object(v).unwrap(), None);
        let gone = h.store.object_any_state(v).unwrap().unwrap();
        assert_eq!(
            gone.lifecycle(),
            Lifecycle::SoftDeleted { at: h.clock.now() }
        );
        assert!(
            h.services.media().remove_member(&c, b, v).is_err(),
            "no longer a member"
        );
        assert!(h.store.list_members(Members::all(b)).unwrap().is_empty());
    }

    pub fn catalog_lists_changes_since_ts(h: &Harness) {
        let alice = h.user("alice", false);
        let c = alice.as_caller();
        h.set_time(1000);
        let lib = h.library(&alice, "L");
        let o1 = h.object_in(&alice, lib, ObjectType::Video, "one");
        h.set_time(1001);
        let o2 = h.object_in(&alice, lib, ObjectType::Audio, "two");
        let o3 = h.object_in(&alice, lib, ObjectType::File, "three");
        h.set_time(1002);
        let page = h
            .services
            .media()
            .list_catalog(&c, lib, None, None)
            .unwrap();
        assert_eq!(page.ts, Timestamp::from_epoch_seconds(1002));
        assert_eq!(page.level, PermissionLevel::Admin);
        let ids: Vec<ObjectId> = page.items.iter().map(|i| i.object.id()).collect();
        let (first, second) = if o2 < o3 { (o2, o3) } else { (o3, o2) };
        assert_eq!(ids, [first, second, o1], "newest first, ties by uuid");

        let since = |t: i64| Since::parse(&t.to_string()).unwrap();
        let ids_since = |t: i64| -> BTreeSet<ObjectId> {
            h.services
                .media()
                .list_catalog(&c, lib, Some(since(t)), None)
                .unwrap()
                .items
                .iter()
                .map(|i| i.object.id())
                .collect()
        };
        assert_eq!(ids_since(1001), [o2, o3].into_iter().collect());
        assert!(ids_since(1002).is_empty());

        // An update, and a change in the same second as the previous response's ts.
        h.services
            .media()
            .update_object(
                &c,
                lib,
                o1,
                ObjectPatch {
                    title: Some(Title::parse("1!").unwrap()),
                    ..ObjectPatch::default()
                },
            )
            .unwrap();
        let o4 = h.object_in(&alice, lib, ObjectType::Image, "four");
        assert_eq!(ids_since(1002), [o1, o4].into_iter().collect());

        // A membership addition of an old object counts as a change.
        let other = h.library(&alice, "Other");
        h.set_time(1100);
        h.services.media().add_member(&c, other, o2).unwrap();
        let listed: BTreeSet<ObjectId> = h
            .services
            .media()
            .list_catalog(&c, other, Some(since(1100)), None)
            .unwrap()
            .items
            .iter()
            .map(|i| i.object.id())
            .collect();
        assert_eq!(listed, [o2].into_iter().collect());
        assert!(
            h.services.media().list_catalog(&c, o1, None, None).is_err(),
            "a video is not a catalog"
        );
    }

    /// Walks `collection` through the repository in pages of `size` (each page asks for one
    /// member more, whose presence says that another page follows); all pages in order.
    fn walk_pages(
        h: &Harness,
        collection: ObjectId,
        since: Option<Since>,
        size: &str,
    ) -> Vec<CatalogItem> {
        let size = PageSize::parse(size).unwrap();
        let mut walked: Vec<CatalogItem> = Vec::new();
        let mut after = None;
        // A cursor that does not advance (the membership copy of `modified_at` out of step
        // with the object) would walk forever: more pages than members is a failure.
        let members = h
            .store
            .list_members(Members {
                collection,
                since,
                page: None,
            })
            .unwrap()
            .len();
        for _ in 0..=members {
            let mut page = h
                .store
                .list_members(Members {
                    collection,
                    since,
                    page: Some(PageRequest::new(size, after)),
                })
                .unwrap();
            assert!(
                page.len() <= size.get() + 1,
                "{} > {size:?} + 1",
                page.len()
            );
            let more = page.len() > size.get();
            page.truncate(size.get());
            after = page
                .last()
                .map(|i| PageCursor::at(i.object.modified(), i.object.id()));
            walked.extend(page);
            if !more {
                return walked;
            }
        }
        panic!("the walk of {members} members does not end: {walked:?}");
    }

    /// The listing's order: most recently modified first, ties by id.
    fn assert_listing_order(items: &[CatalogItem]) {
        for pair in items.windows(2) {
            let key = |i: &CatalogItem| (std::cmp::Reverse(i.object.modified()), i.object.id());
            assert!(key(&pair[0]) < key(&pair[1]), "out of order: {pair:?}");
        }
    }

    pub fn catalog_pages_walk_the_unpaged_listing(h: &Harness) {
        let alice = h.user("alice", false);
        let c = alice.as_caller();
        let lib = h.library(&alice, "L");
        let other = h.library(&alice, "Other");
        // Members created over three seconds, several in each (ties broken by id), some with
        // properties (a member is then several rows, which a page must keep together).
        let mut members = Vec::new();
        for n in 0..9_i64 {
            h.set_time(1000 + n % 3);
            let id = h.object_in(&alice, lib, ObjectType::Video, &format!("v{n}"));
            if n % 2 == 0 {
                let patch = ObjectPatch {
                    properties: Some(Properties::parse([("k", "v"), ("n", "m")]).unwrap()),
                    ..ObjectPatch::default()
                };
                h.services
                    .media()
                    .update_object(&c, lib, id, patch)
                    .unwrap();
            }
            members.push(id);
        }
        // An older object of another library, added later: listed by when it was modified,
        // not by when it was added.
        h.set_time(900);
        let old = h.object_in(&alice, other, ObjectType::Audio, "old");
        h.set_time(1500);
        h.services.media().add_member(&c, lib, old).unwrap();

        let ids = |items: &[CatalogItem]| items.iter().map(|i| i.object.id()).collect::<Vec<_>>();
        let first = |collection| {
            let size = PageSize::parse("1").unwrap();
            let page = h
                .store
                .list_members(Members {
                    page: Some(PageRequest::new(size, None)),
                    ..Members::all(collection)
                })
                .unwrap();
            page[0].object.id()
        };
        let all = h.store.list_members(Members::all(lib)).unwrap();
        assert_eq!(all.len(), 10);
        assert_eq!(all.last().unwrap().object.id(), old, "modified at 900");
        assert_listing_order(&all);

        // The member's modification moves it in every collection it is in.
        h.set_time(2000);
        let title = Title::parse("changed").unwrap();
        let patch = ObjectPatch {
            title: Some(title),
            ..ObjectPatch::default()
        };
        h.services
            .media()
            .update_object(&c, lib, old, patch.clone())
            .unwrap();
        assert_eq!(first(lib), old);
        assert_eq!(first(other), old);
        // So does one of the original members, modified later still.
        h.set_time(2001);
        h.services
            .media()
            .update_object(&c, lib, members[4], patch.clone())
            .unwrap();
        assert_eq!(first(lib), members[4]);
        assert_eq!(first(other), old, "not a member of Other");

        // A soft-deleted member leaves the listing; restored, it is listed as modified then.
        h.set_time(2100);
        assert_eq!(
            h.services
                .media()
                .remove_member(&c, lib, members[7])
                .unwrap(),
            AfterRemoval::SoftDelete
        );
        // A membership removed while another remains changes nothing in the other.
        assert_eq!(
            h.services.media().remove_member(&c, other, old).unwrap(),
            AfterRemoval::StillListed
        );
        let without = h.store.list_members(Members::all(lib)).unwrap();
        assert!(!ids(&without).contains(&members[7]));
        assert_eq!(ids(&without)[0], members[4]);
        assert_eq!(walk_pages(h, lib, None, "2"), without);
        h.set_time(2200);
        h.services.media().restore_object(members[7], None).unwrap();
        assert_eq!(first(lib), members[7]);
        // Removed and soft-deleted a second time, then restored into the other library.
        h.set_time(2300);
        h.services
            .media()
            .remove_member(&c, lib, members[1])
            .unwrap();
        h.services
            .media()
            .restore_object(members[1], Some(other))
            .unwrap();
        assert_eq!(first(other), members[1]);

        // Every page size walks exactly the unpaged listing, in its order.
        let all = h.store.list_members(Members::all(lib)).unwrap();
        assert_eq!(all.len(), 9);
        assert_listing_order(&all);
        assert_eq!(ids(&all)[..3], [members[7], members[4], old]);
        for size in ["1", "2", "3", "4", "8", "9", "10", "1000"] {
            assert_eq!(walk_pages(h, lib, None, size), all, "size {size}");
        }
        // With `ts`: modified or added since, still in the listing's order.
        let since = Since::parse("1500").unwrap();
        let changed = h
            .store
            .list_members(Members {
                since: Some(since),
                ..Members::all(lib)
            })
            .unwrap();
        assert_eq!(ids(&changed), [members[7], members[4], old]);
        for size in ["1", "2", "1000"] {
            assert_eq!(
                walk_pages(h, lib, Some(since), size),
                changed,
                "size {size}"
            );
        }
        let other_all = h.store.list_members(Members::all(other)).unwrap();
        assert_eq!(ids(&other_all), [members[1]]);
        assert_eq!(walk_pages(h, other, None, "1"), other_all);
    }

    /// A member updated while it is added to another library: the new membership's copy of
    /// `modified_at` is the one the update wrote, whichever commits first.
    pub fn concurrent_update_and_add_keep_the_page_order(h: &Harness) {
        let alice = h.user("alice", false);
        let c = alice.as_caller();
        let lib = h.library(&alice, "L");
        for round in 0..8_i64 {
            let base = 10_000 + round * 100;
            h.set_time(base);
            let other = h.library(&alice, &format!("Other {round}"));
            let member = h.object_in(&alice, lib, ObjectType::Video, "m");
            // Listed between the member's old and new modification times.
            h.set_time(base + 10);
            let marker = h.object_in(&alice, other, ObjectType::File, "marker");
            h.set_time(base + 20);
            let patch = ObjectPatch {
                title: Some(Title::parse("changed").unwrap()),
                ..ObjectPatch::default()
            };
            race(vec![
                Box::new(|| {
                    h.services
                        .media()
                        .update_object(&c, lib, member, patch)
                        .unwrap();
                }),
                Box::new(|| {
                    h.services.media().add_member(&c, other, member).unwrap();
                }),
            ]);
            let all = h.store.list_members(Members::all(other)).unwrap();
            let ids: Vec<ObjectId> = all.iter().map(|i| i.object.id()).collect();
            assert_eq!(ids, [member, marker], "round {round}");
            assert_eq!(walk_pages(h, other, None, "1"), all, "round {round}");
        }
    }

    pub fn access_flows_down_and_explicit_entries_override(h: &Harness) {
        let alice = h.user("alice", false);
        let bob = h.user("bob", false);
        let root_admin = h.user("root", true);
        let c = alice.as_caller();
        let r = h.library(&alice, "R");
        let s = h.object_in(&alice, r, ObjectType::Catalog, "S");
        let t = h.object_in(&alice, s, ObjectType::Catalog, "T");
        assert_eq!(h.level(&bob, t), PermissionLevel::None);
        h.services
            .people()
            .grant_permission(&c, r, Grantee::Id(bob.id), PermissionLevel::View)
            .unwrap();
        assert_eq!(h.level(&bob, s), PermissionLevel::View);
        assert_eq!(h.level(&bob, t), PermissionLevel::View);
        h.services
            .people()
            .grant_permission(&c, s, Grantee::Id(bob.id), PermissionLevel::None)
            .unwrap();
        assert_eq!(h.level(&bob, s), PermissionLevel::None);
        assert_eq!(
            h.level(&bob, t),
            PermissionLevel::None,
            "explicit none blocks inheritance"
        );
        h.services
            .people()
            .grant_permission(&c, t, Grantee::Id(bob.id), PermissionLevel::Admin)
            .unwrap();
        assert_eq!(h.level(&bob, t), PermissionLevel::Admin);
        assert_eq!(h.level(&alice, t), PermissionLevel::Admin);
        assert_eq!(h.level(&root_admin, t), PermissionLevel::Admin);
        // A second parent with a higher level wins.
        let other = h.library(&alice, "O");
        h.services.media().add_member(&c, other, s).unwrap();
        h.services
            .people()
            .grant_permission(&c, other, Grantee::Id(bob.id), PermissionLevel::Admin)
            .unwrap();
        h.services
            .people()
            .revoke_permission(&c, s, Grantee::Id(bob.id))
            .unwrap();
        assert_eq!(h.level(&bob, s), PermissionLevel::Admin);
        // Bob, now admin of S, may not manage R.
        assert!(matches!(
            h.services.people().grant_permission(
                &bob.as_caller(),
                r,
                Grantee::Id(bob.id),
                PermissionLevel::Admin
            ),
            Err(GrantPermissionFailed::Refused(Refusal::Forbidden(_)))
        ));
    }

    pub fn last_admin_cannot_go(h: &Harness) {
        let alice = h.user("alice", false);
        let bob = h.user("bob", false);
        let c = alice.as_caller();
        let lib = h.library(&alice, "L");
        assert_eq!(
            h.services.people().grant_permission(
                &c,
                lib,
                Grantee::Id(alice.id),
                PermissionLevel::View
            ),
            Err(GrantPermissionFailed::LastAdmin(medialib_domain::LastAdmin))
        );
        assert_eq!(
            h.services
                .people()
                .revoke_permission(&c, lib, Grantee::Id(alice.id)),
            Err(RevokePermissionFailed::LastAdmin(
                medialib_domain::LastAdmin
            ))
        );
        assert_eq!(
            h.services
                .people()
                .revoke_permission(&c, lib, Grantee::Id(bob.id)),
            Err(RevokePermissionFailed::NoEntry)
        );
        let ghost = medialib_domain::UserId::parse("00000000000000000000000000000000").unwrap();
        assert_eq!(
            h.services.people().grant_permission(
                &c,
                lib,
                Grantee::Id(ghost),
                PermissionLevel::View
            ),
            Err(GrantPermissionFailed::UserNotFound)
        );
        h.services
            .people()
            .grant_permission(&c, lib, Grantee::Id(bob.id), PermissionLevel::Admin)
            .unwrap();
        h.services
            .people()
            .grant_permission(&c, lib, Grantee::Id(alice.id), PermissionLevel::View)
            .unwrap();
        let levels: Vec<_> = h
            .store
            .permission_entries(lib)
            .unwrap()
            .into_iter()
            .map(|e| (e.user.unique_id.as_str().to_owned(), e.level))
            .collect();
        assert_eq!(
            levels,
            [
                ("alice".to_owned(), PermissionLevel::View),
                ("bob".to_owned(), PermissionLevel::Admin)
            ]
        );
    }

    pub fn concurrent_demotions_keep_an_admin(h: &Harness) {
        // Two admins demote each other at the same moment: at most one may succeed.
        for round in 0..5 {
            let a = h.user(&format!("a{round}"), false);
            let b = h.user(&format!("b{round}"), false);
            let lib = h.library(&a, "L");
            h.services
                .people()
                .grant_permission(
                    &a.as_caller(),
                    lib,
                    Grantee::Id(b.id),
                    PermissionLevel::Admin,
                )
                .unwrap();
            // Each demotes itself; together they would leave none.
            let demote = |who: User| -> Box<dyn FnOnce() -> _ + Send + '_> {
                Box::new(move || {
                    h.services.people().grant_permission(
                        &who.as_caller(),
                        lib,
                        Grantee::Id(who.id),
                        PermissionLevel::View,
                    )
                })
            };
            let results = race(vec![demote(a.clone()), demote(b.clone())]);
            let ok = results.iter().filter(|r| r.is_ok()).count();
            assert_eq!(ok, 1, "round {round}: {results:?}");
        }
    }

    pub fn concurrent_adds_never_make_a_cycle(h: &Harness) {
        let alice = h.user("alice", false);
        let c = alice.as_caller();
        for round in 0..5 {
            let x = h.library(&alice, &format!("X{round}"));
            let y = h.library(&alice, &format!("Y{round}"));
            let add = |coll, member| -> Box<dyn FnOnce() -> _ + Send + '_> {
                Box::new(move || h.services.media().add_member(&c, coll, member))
            };
            let results = race(vec![add(x, y), add(y, x)]);
            let ok = results.iter().filter(|r| r.is_ok()).count();
            assert_eq!(
                ok, 1,
                "round {round}: exactly one of X⊂Y, Y⊂X may win: {results:?}"
            );
        }
    }

    pub fn clients_register_and_authenticate(h: &Harness) {
        let creds = h.client();
        let id = ClientId::parse(&creds.client_id).unwrap();
        let client = h.store.client(&id).unwrap().unwrap();
        assert_eq!(client.redirect_uris()[0].as_str(), REDIRECT);
        assert!(h.services.oauth().authenticate_client(&creds).is_ok());
        let wrong = ClientCredentials {
            client_id: creds.client_id.clone(),
            client_secret: Some(Secret::new("mls_wrong")),
        };
        assert!(matches!(
            h.services.oauth().authenticate_client(&wrong),
            Err(ClientAuthFailed::Refused(_))
        ));
        assert_eq!(
            h.store.create_client(&client, h.clock.now()),
            Err(CreateClientError::IdTaken)
        );
        let (new_secret, digest) = TokenKind::ClientSecret.mint(rand::random());
        assert!(h.store.set_client_secret(&id, &digest).unwrap());
        assert!(
            h.services.oauth().authenticate_client(&creds).is_err(),
            "old secret no longer works"
        );
        let rotated = ClientCredentials {
            client_id: creds.client_id.clone(),
            client_secret: Some(new_secret),
        };
        assert!(h.services.oauth().authenticate_client(&rotated).is_ok());
        let public = Client::new(
            ClientId::parse("mobile-app").unwrap(),
            ClientName::parse("Mobile").unwrap(),
            vec![RedirectUri::parse("http://127.0.0.1/cb").unwrap()],
            ClientKind::Public,
        )
        .unwrap();
        h.store.create_client(&public, h.clock.now()).unwrap();
        assert_eq!(h.store.list_clients().unwrap().len(), 2);
        assert!(h.store.remove_client(&id).unwrap());
        assert!(!h.store.remove_client(&id).unwrap());
        assert_eq!(h.store.client(&id).unwrap(), None);
    }

    pub fn client_and_bearer_read_what_their_two_reads_do(h: &Harness) {
        let alice = h.user("alice", false);
        let creds = h.client();
        let id = ClientId::parse(&creds.client_id).unwrap();
        let tokens = h.tokens(&creds, &alice, false);
        let access = TokenKind::Access
            .digest_presented(tokens.access_token.expose())
            .unwrap();
        let (_, unknown) = TokenKind::Access.mint(rand::random());
        // The control: what the client read and the bearer read return on their own.
        let client = h.store.client(&id).unwrap();
        let bearer = h.store.bearer(&access).unwrap();
        assert!(client.is_some() && bearer.is_some());
        assert_eq!(
            h.store.client_and_bearer(&id, &access).unwrap(),
            (client.clone(), bearer.clone())
        );
        assert_eq!(
            h.store.client_and_bearer(&id, &unknown).unwrap(),
            (client, None)
        );
        let nobody = ClientId::parse("nobody").unwrap();
        assert_eq!(
            h.store.client_and_bearer(&nobody, &access).unwrap(),
            (None, bearer)
        );
        // A public client with redirect URIs out of alphabetical order keeps their order.
        let uris = [
            "https://b.example/cb",
            "https://a.example/cb",
            "https://c.example/x",
        ];
        let public = Client::new(
            ClientId::parse("mobile-app").unwrap(),
            ClientName::parse("Mobile").unwrap(),
            uris.iter()
                .map(|u| RedirectUri::parse(u).unwrap())
                .collect(),
            ClientKind::Public,
        )
        .unwrap();
        h.store.create_client(&public, h.clock.now()).unwrap();
        let (read, none) = h.store.client_and_bearer(public.id(), &unknown).unwrap();
        assert_eq!(read.as_ref(), Some(&public));
        assert_eq!(none, None);
        let order: Vec<_> = read
            .unwrap()
            .redirect_uris()
            .iter()
            .map(|u| u.as_str().to_owned())
            .collect();
        assert_eq!(order, uris);
    }

    pub fn code_exchange_and_replay_revokes(h: &Harness) {
        let alice = h.user("alice", false);
        let creds = h.client();
        let code = h.code(&creds, &alice, true);
        let tokens = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        assert_eq!(tokens.expires_in, 3600);
        let access = tokens.access_token.expose().to_owned();
        let caller = h.services.oauth().authenticate_bearer(&access).unwrap();
        assert_eq!(caller.user().id, alice.id);
        assert!(tokens.refresh_token.is_some(), "offline was approved");

        let replay = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None);
        assert_eq!(oauth_code(&replay), Some(OAuthErrorCode::InvalidGrant));
        assert_eq!(
            h.services.oauth().authenticate_bearer(&access),
            Err(BearerError::Invalid(
                medialib_domain::oauth::AccessTokenInvalid::Revoked
            )),
            "a replayed code revokes the tokens issued from it"
        );
        let refresh = secret_str(&tokens.refresh_token);
        assert!(h.services.oauth().refresh(&creds, &refresh, None).is_err());

        // Online access gets no refresh token; a wrong redirect_uri burns the code.
        let code = h.code(&creds, &alice, false);
        assert!(
            h.services
                .oauth()
                .exchange_code(&creds, &code, Some("https://lms.example.edu/other"), None)
                .is_err()
        );
        assert!(
            h.services
                .oauth()
                .exchange_code(&creds, &code, Some(REDIRECT), None)
                .is_err()
        );
        let code = h.code(&creds, &alice, false);
        let online = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        assert_eq!(online.refresh_token, None);
        // Codes expire.
        let code = h.code(&creds, &alice, false);
        h.advance(60);
        assert!(
            h.services
                .oauth()
                .exchange_code(&creds, &code, Some(REDIRECT), None)
                .is_err()
        );
        // Unknown codes.
        assert!(
            h.services
                .oauth()
                .exchange_code(&creds, "mlc_nope", Some(REDIRECT), None)
                .is_err()
        );
    }

    pub fn refresh_rotates_and_reuse_revokes_the_family(h: &Harness) {
        let alice = h.user("alice", false);
        let creds = h.client();
        let code = h.code(&creds, &alice, true);
        let first = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        h.advance(10);
        let second = h
            .services
            .oauth()
            .refresh(&creds, &secret_str(&first.refresh_token), None)
            .unwrap();
        assert_ne!(second.refresh_token, first.refresh_token);
        assert_eq!(second.grant, first.grant);
        let third = h
            .services
            .oauth()
            .refresh(&creds, &secret_str(&second.refresh_token), Some("read"))
            .unwrap();
        assert_eq!(third.scope.to_string(), "read");
        assert!(
            h.services
                .oauth()
                .authenticate_bearer(third.access_token.expose())
                .is_ok()
        );

        // Presenting the used first token again revokes everything of the grant.
        assert_eq!(
            oauth_code(&h.services.oauth().refresh(
                &creds,
                &secret_str(&first.refresh_token),
                None
            )),
            Some(OAuthErrorCode::InvalidGrant)
        );
        for t in [&first, &second, &third] {
            assert!(
                h.services
                    .oauth()
                    .authenticate_bearer(t.access_token.expose())
                    .is_err()
            );
        }
        assert!(
            h.services
                .oauth()
                .refresh(&creds, &secret_str(&third.refresh_token), None)
                .is_err()
        );
    }

    /// A retry of a refresh whose answer was lost, within the grace: a new pair in place of
    /// the untouched one, which dies; the lost pair's refresh token presented later is reuse.
    pub fn a_refresh_retry_within_the_grace_replaces_the_untouched_pair(h: &Harness) {
        let services = h.services_with_retry_grace(Lifetime::from_seconds(30).unwrap());
        let oauth = services.oauth();
        let alice = h.user("alice", false);
        let creds = h.client();
        let code = h.code(&creds, &alice, true);
        let first = oauth
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        let r1 = secret_str(&first.refresh_token);
        h.advance(10);
        let lost = oauth.refresh(&creds, &r1, None).unwrap();
        h.advance(5);
        let retry = oauth.refresh(&creds, &r1, None).unwrap();
        assert_eq!(retry.grant, first.grant);
        assert_ne!(retry.refresh_token, lost.refresh_token);
        assert!(
            oauth
                .authenticate_bearer(retry.access_token.expose())
                .is_ok()
        );
        assert!(
            oauth
                .authenticate_bearer(lost.access_token.expose())
                .is_err()
        );
        // A second retry supersedes the first's pair in turn.
        let again = oauth.refresh(&creds, &r1, None).unwrap();
        assert!(
            oauth
                .authenticate_bearer(retry.access_token.expose())
                .is_err()
        );
        let next = oauth
            .refresh(&creds, &secret_str(&again.refresh_token), None)
            .unwrap();
        assert!(
            oauth
                .authenticate_bearer(next.access_token.expose())
                .is_ok()
        );
        // The lost pair's refresh token after all: reuse, and the family goes.
        assert_eq!(
            oauth_code(&oauth.refresh(&creds, &secret_str(&lost.refresh_token), None)),
            Some(OAuthErrorCode::InvalidGrant)
        );
        assert!(
            oauth
                .authenticate_bearer(next.access_token.expose())
                .is_err()
        );
        assert!(
            oauth
                .refresh(&creds, &secret_str(&next.refresh_token), None)
                .is_err()
        );
    }

    /// With the grace, a spent token presented once its pair was used, or after the grace,
    /// is still reuse and revokes the family.
    pub fn replays_are_reuse_despite_the_retry_grace(h: &Harness) {
        let services = h.services_with_retry_grace(Lifetime::from_seconds(30).unwrap());
        let oauth = services.oauth();
        let alice = h.user("alice", false);
        let creds = h.client();
        for (why, use_the_pair, wait) in [
            ("the pair was used", true, 1),
            ("after the grace", false, 30),
        ] {
            let code = h.code(&creds, &alice, true);
            let first = oauth
                .exchange_code(&creds, &code, Some(REDIRECT), None)
                .unwrap();
            let r1 = secret_str(&first.refresh_token);
            let second = oauth.refresh(&creds, &r1, None).unwrap();
            let mut newest = second.access_token.clone();
            if use_the_pair {
                let third = oauth
                    .refresh(&creds, &secret_str(&second.refresh_token), None)
                    .unwrap();
                newest = third.access_token;
            }
            h.advance(wait);
            assert!(oauth.authenticate_bearer(newest.expose()).is_ok(), "{why}");
            assert_eq!(
                oauth_code(&oauth.refresh(&creds, &r1, None)),
                Some(OAuthErrorCode::InvalidGrant),
                "{why}"
            );
            assert!(oauth.authenticate_bearer(newest.expose()).is_err(), "{why}");
        }
    }

    pub fn refresh_tokens_expire_when_idle(h: &Harness) {
        let alice = h.user("alice", false);
        let creds = h.client();
        let code = h.code(&creds, &alice, true);
        let t = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        h.advance(3600);
        assert!(matches!(
            h.services
                .oauth()
                .authenticate_bearer(t.access_token.expose()),
            Err(BearerError::Invalid(
                medialib_domain::oauth::AccessTokenInvalid::Expired
            ))
        ));
        h.advance(86_400);
        assert!(
            h.services
                .oauth()
                .refresh(&creds, &secret_str(&t.refresh_token), None)
                .is_err()
        );
    }

    pub fn concurrent_code_redemption_has_one_winner(h: &Harness) {
        let alice = h.user("alice", false);
        let creds = h.client();
        for _ in 0..3 {
            let code = h.code(&creds, &alice, true);
            let results = race(
                (0..6)
                    .map(|_| -> Box<dyn FnOnce() -> _ + Send + '_> {
                        Box::new(|| {
                            h.services
                                .oauth()
                                .exchange_code(&creds, &code, Some(REDIRECT), None)
                        })
                    })
                    .collect(),
            );
            let winners = results.iter().filter(|r| r.is_ok()).count();
            assert_eq!(winners, 1, "{results:?}");
            for r in &results {
                if let Err(e) = r {
                    assert!(
                        e.error_code() == OAuthErrorCode::InvalidGrant,
                        "losers get invalid_grant: {e:?}"
                    );
                }
            }
        }
    }

    pub fn concurrent_refresh_has_one_winner(h: &Harness) {
        let alice = h.user("alice", false);
        let creds = h.client();
        for _ in 0..3 {
            let code = h.code(&creds, &alice, true);
            let t = h
                .services
                .oauth()
                .exchange_code(&creds, &code, Some(REDIRECT), None)
                .unwrap();
            let refresh = secret_str(&t.refresh_token);
            let results = race(
                (0..6)
                    .map(|_| -> Box<dyn FnOnce() -> _ + Send + '_> {
                        Box::new(|| h.services.oauth().refresh(&creds, &refresh, None))
                    })
                    .collect(),
            );
            let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
            assert_eq!(winners.len(), 1, "{results:?}");
            // The losers presented a used token: the whole family is revoked.
            assert!(
                h.services
                    .oauth()
                    .authenticate_bearer(winners[0].access_token.expose())
                    .is_err()
            );
            assert!(
                h.services
                    .oauth()
                    .refresh(&creds, &secret_str(&winners[0].refresh_token), None)
                    .is_err()
            );
        }
    }

    pub fn logout_and_revocation(h: &Harness) {
        let alice = h.user("alice", false);
        let creds = h.client();
        let code = h.code(&creds, &alice, true);
        let t = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        assert_eq!(h.services.oauth().logout(alice.id).unwrap(), 1);
        assert!(
            h.services
                .oauth()
                .authenticate_bearer(t.access_token.expose())
                .is_err()
        );
        // Refresh tokens survive sign-out.
        let renewed = h
            .services
            .oauth()
            .refresh(&creds, &secret_str(&t.refresh_token), None)
            .unwrap();
        assert!(
            h.services
                .oauth()
                .authenticate_bearer(renewed.access_token.expose())
                .is_ok()
        );

        // RFC 7009: another client cannot revoke; the owner revokes the whole grant.
        let other = h.client();
        let refresh = secret_str(&renewed.refresh_token);
        assert_eq!(
            h.services.oauth().revoke(&other, &refresh).unwrap(),
            RevokeOutcome::OtherClient
        );
        assert_eq!(
            h.services.oauth().revoke(&creds, &refresh).unwrap(),
            RevokeOutcome::GrantRevoked
        );
        assert!(
            h.services
                .oauth()
                .authenticate_bearer(renewed.access_token.expose())
                .is_err()
        );
        assert_eq!(
            h.services.oauth().revoke(&creds, "mla_unknown").unwrap(),
            RevokeOutcome::Unknown
        );

        let code = h.code(&creds, &alice, false);
        let t = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        assert_eq!(
            h.services
                .oauth()
                .revoke(&creds, t.access_token.expose())
                .unwrap(),
            RevokeOutcome::AccessTokenRevoked
        );
        assert!(
            h.services
                .oauth()
                .authenticate_bearer(t.access_token.expose())
                .is_err()
        );
    }

    pub fn sessions_round_trip_and_end(h: &Harness) {
        let alice = h.user("alice", false);
        let bob = h.user("bob", false);
        let hour = Lifetime::from_seconds(3600).unwrap();
        let (cookie, d1) = session_cookie();
        let s1 = BrowserSession::start(alice.id, h.clock.now(), hour);
        h.store.create_session(&d1, &s1).unwrap();
        assert_eq!(h.store.session(&d1).unwrap(), Some(s1));
        // The service finds the user behind the cookie.
        assert_eq!(
            h.services.sessions().session_user(cookie.expose()).unwrap(),
            Some(alice.clone())
        );

        // An expired session is still returned; the caller checks it.
        let (_, d2) = session_cookie();
        let short =
            BrowserSession::start(alice.id, h.clock.now(), Lifetime::from_seconds(10).unwrap());
        h.store.create_session(&d2, &short).unwrap();
        let (_, d3) = session_cookie();
        let s3 = BrowserSession::start(bob.id, h.clock.now(), hour);
        h.store.create_session(&d3, &s3).unwrap();
        h.advance(10);
        let stored = h.store.session(&d2).unwrap().unwrap();
        assert_eq!(stored, short);
        assert!(!stored.is_active(h.clock.now()));
        assert_eq!(h.store.session(&session_cookie().1).unwrap(), None);

        // Ending one session.
        assert!(h.store.end_session(&d1).unwrap());
        assert!(!h.store.end_session(&d1).unwrap(), "already ended");
        assert_eq!(h.store.session(&d1).unwrap(), None);
        assert_eq!(
            h.services.sessions().session_user(cookie.expose()).unwrap(),
            None
        );

        // Ending every session of a user leaves the others alone.
        let (_, d4) = session_cookie();
        h.store
            .create_session(&d4, &BrowserSession::start(alice.id, h.clock.now(), hour))
            .unwrap();
        assert_eq!(h.store.end_user_sessions(alice.id).unwrap(), 2);
        assert_eq!(h.store.session(&d2).unwrap(), None);
        assert_eq!(h.store.session(&d4).unwrap(), None);
        assert_eq!(h.store.session(&d3).unwrap(), Some(s3));
        assert_eq!(h.store.end_user_sessions(alice.id).unwrap(), 0);
        assert_eq!(h.store.end_user_sessions(unknown_user()).unwrap(), 0);
    }

    pub fn local_credentials_set_replace_and_look_up(h: &Harness) {
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
                .set_password_hash(alice.id, &first, h.clock.now())
                .unwrap()
        );
        let (user, hash) = h.store.password_hash(&alice.unique_id).unwrap().unwrap();
        assert_eq!(user, alice);
        assert_eq!(hash.as_str(), first.as_str());

        h.advance(5);
        assert!(
            h.store
                .set_password_hash(alice.id, &second, h.clock.now())
                .unwrap(),
            "replacing"
        );
        let (user, hash) = h.store.password_hash(&alice.unique_id).unwrap().unwrap();
        assert_eq!(user, alice);
        assert_eq!(hash.as_str(), second.as_str());

        // A user without a password, an unknown uniqueId, an unknown user.
        assert_eq!(
            h.store.password_hash(&bob.unique_id).unwrap().map(|p| p.0),
            None
        );
        let nobody = UniqueId::parse("nobody").unwrap();
        assert_eq!(h.store.password_hash(&nobody).unwrap().map(|p| p.0), None);
        assert!(
            !h.store
                .set_password_hash(unknown_user(), &first, h.clock.now())
                .unwrap(),
            "no such user: false, not an error"
        );
        // Bob's hash is his own.
        assert!(
            h.store
                .set_password_hash(bob.id, &first, h.clock.now())
                .unwrap()
        );
        assert_eq!(
            h.store
                .password_hash(&bob.unique_id)
                .unwrap()
                .unwrap()
                .1
                .as_str(),
            first.as_str()
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
    }

    pub fn concurrent_password_sets_both_succeed(h: &Harness) {
        for round in 0..4 {
            // A fresh user each round, so both callers race to insert the first row.
            let user = h.user(&format!("racer{round}"), false);
            let hashes = [format!("hash-a-{round}"), format!("hash-b-{round}")];
            let id = user.id;
            let set = |phc: String| -> Box<dyn FnOnce() -> _ + Send + '_> {
                Box::new(move || {
                    h.store
                        .set_password_hash(id, &PasswordHash::new(phc), h.clock.now())
                })
            };
            let results = race(vec![set(hashes[0].clone()), set(hashes[1].clone())]);
            assert_eq!(results, [Ok(true), Ok(true)], "round {round}");
            let (_, stored) = h.store.password_hash(&user.unique_id).unwrap().unwrap();
            assert!(
                hashes.iter().any(|w| w == stored.as_str()),
                "round {round}: one of the two hashes wins"
            );
        }
    }

    pub fn refresh_token_lookup_reports_state(h: &Harness) {
        let alice = h.user("alice", false);
        let creds = h.client();
        let client = ClientId::parse(&creds.client_id).unwrap();
        let code = h.code(&creds, &alice, true);
        let first = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
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
            h.clock.now().epoch_seconds() + 86_400
        );
        assert_eq!(record.state(), RefreshTokenState::Valid);
        assert!(matches!(
            h.services
                .oauth()
                .introspect(&creds, &secret_str(&first.refresh_token))
                .unwrap(),
            Introspection::Active {
                kind: TokenKind::Refresh,
                ..
            }
        ));

        // After a rotation the old token is used, the new one valid.
        h.advance(10);
        let second = h
            .services
            .oauth()
            .refresh(&creds, &secret_str(&first.refresh_token), Some("read"))
            .unwrap();
        let state = |t: &TokenResponse| {
            h.store
                .refresh_token(&refresh_digest(t))
                .unwrap()
                .unwrap()
                .state()
        };
        assert_eq!(state(&first), RefreshTokenState::Used);
        assert_eq!(state(&second), RefreshTokenState::Valid);
        let renewed = h
            .store
            .refresh_token(&refresh_digest(&second))
            .unwrap()
            .unwrap();
        assert_eq!(renewed.grant, first.grant);
        assert_eq!(
            renewed.scope, first.scope,
            "the grant's scope, not the narrowed token's"
        );
        assert_eq!(
            h.services
                .oauth()
                .introspect(&creds, &secret_str(&first.refresh_token))
                .unwrap(),
            Introspection::Inactive
        );

        // Reuse of the first token revokes the grant: both report revoked (over used).
        assert!(
            h.services
                .oauth()
                .refresh(&creds, &secret_str(&first.refresh_token), None)
                .is_err()
        );
        assert_eq!(state(&first), RefreshTokenState::Revoked);
        assert_eq!(state(&second), RefreshTokenState::Revoked);

        // RFC 7009 revocation of another grant's refresh token.
        let code = h.code(&creds, &alice, true);
        let other = h
            .services
            .oauth()
            .exchange_code(&creds, &code, Some(REDIRECT), None)
            .unwrap();
        assert_eq!(state(&other), RefreshTokenState::Valid);
        assert_eq!(
            h.services
                .oauth()
                .revoke(&creds, &secret_str(&other.refresh_token))
                .unwrap(),
            RevokeOutcome::GrantRevoked
        );
        assert_eq!(state(&other), RefreshTokenState::Revoked);

        // Unknown digests, and an access token's digest, are not refresh tokens.
        assert_eq!(h.store.refresh_token(&session_cookie().1).unwrap(), None);
        assert_eq!(
            h.store
                .refresh_token(&TokenDigest::of(&other.access_token))
                .unwrap(),
            None
        );
    }

    pub fn purge_deletes_exactly_what_expired(h: &Harness) {
        const GRACE: i64 = 7200;
        let t0 = h.clock.now().epoch_seconds();
        let purge = |at: i64| {
            h.set_time(t0 + at);
            h.store.purge_expired(h.clock.now(), GRACE).unwrap()
        };
        let alice = h.user("alice", false);
        let creds = h.client();
        // Grant A: offline (access + refresh). Grants B and C: online (access only).
        let code_a = h.code(&creds, &alice, true);
        let a = h
            .services
            .oauth()
            .exchange_code(&creds, &code_a, Some(REDIRECT), None)
            .unwrap();
        let code_b = h.code(&creds, &alice, false);
        let b = h
            .services
            .oauth()
            .exchange_code(&creds, &code_b, Some(REDIRECT), None)
            .unwrap();
        let code_c = h.code(&creds, &alice, false);
        let c = h
            .services
            .oauth()
            .exchange_code(&creds, &code_c, Some(REDIRECT), None)
            .unwrap();
        // A code never redeemed.
        let _unused = h.code(&creds, &alice, false);
        // Sessions ending at t0+3600 and t0+7200.
        let (_, short) = session_cookie();
        let (_, long) = session_cookie();
        let now = h.clock.now();
        for (d, secs) in [(&short, 3600), (&long, 7200)] {
            let s = BrowserSession::start(alice.id, now, Lifetime::from_seconds(secs).unwrap());
            h.store.create_session(d, &s).unwrap();
        }

        assert_eq!(purge(0), PurgeReport::default(), "nothing has expired");

        // The codes expired at t0+60 but are kept for the grace: a late replay still revokes.
        assert_eq!(purge(600), PurgeReport::default());
        assert!(
            h.services
                .oauth()
                .exchange_code(&creds, &code_c, Some(REDIRECT), None)
                .is_err()
        );
        assert_eq!(
            h.services
                .oauth()
                .authenticate_bearer(c.access_token.expose()),
            Err(BearerError::Invalid(
                medialib_domain::oauth::AccessTokenInvalid::Revoked
            ))
        );

        // A session ends at its expiry; access tokens only after theirs.
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
        // Every access token expired at t0+3600. Grants B and C have nothing else but their
        // codes, which are still within the grace: the grants stay.
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
                .state(),
            RefreshTokenState::Valid
        );

        // The codes go once the grace has passed (expiry t0+60 + 7200), and with them the
        // empty grants B and C; grant A keeps its refresh token. The long session ended too.
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
                .oauth()
                .refresh(&creds, &secret_str(&a.refresh_token), None)
                .is_ok()
        );

        // After that rotation: the new access token expires at t0+7261+3600, grant A's first
        // (now used) refresh token at t0+86400, the new one at t0+7261+86400.
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
        // The last token goes, and with it the grant that has nothing left.
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

    /// A grant with nothing left is kept while it is younger than the grace of the pass (its
    /// code may have gone in an earlier pass with a shorter grace).
    pub fn purge_keeps_grants_younger_than_the_code_grace(h: &Harness) {
        let t0 = h.clock.now().epoch_seconds();
        let alice = h.user("alice", false);
        let creds = h.client();
        let t = h.tokens(&creds, &alice, true);
        // No grace: the expired code goes; the grant keeps its live tokens.
        h.set_time(t0 + 61);
        assert_eq!(
            h.store.purge_expired(h.clock.now(), 0).unwrap(),
            PurgeReport {
                codes: 1,
                ..PurgeReport::default()
            }
        );
        // Every token expired; a grace longer than the grant's age keeps the empty grant.
        h.set_time(t0 + 86_401);
        assert_eq!(
            h.store.purge_expired(h.clock.now(), 100_000).unwrap(),
            PurgeReport {
                access_tokens: 1,
                refresh_tokens: 1,
                ..PurgeReport::default()
            }
        );
        assert_eq!(
            h.store.purge_expired(h.clock.now(), 0).unwrap(),
            PurgeReport {
                grants: 1,
                ..PurgeReport::default()
            }
        );
        assert_eq!(h.store.refresh_token(&refresh_digest(&t)).unwrap(), None);
    }

    pub fn purge_works_in_batches(h: &Harness) {
        let alice = h.user("alice", false);
        let now = h.clock.now();
        let second = Lifetime::from_seconds(1).unwrap();
        let day = Lifetime::from_seconds(86_400).unwrap();
        // Exactly two full batches of expired sessions (the third batch finds none), and
        // some live ones.
        let mut live = Vec::new();
        for i in 0..1_011 {
            let (_, d) = session_cookie();
            let lifetime = if i % 100 == 0 { day } else { second };
            h.store
                .create_session(&d, &BrowserSession::start(alice.id, now, lifetime))
                .unwrap();
            if i % 100 == 0 {
                live.push(d);
            }
        }
        h.advance(1);
        let report = h.store.purge_expired(h.clock.now(), 60).unwrap();
        assert_eq!(
            report,
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

    pub fn library_lookups_for_people_calls(h: &Harness) {
        let alice = h.user("alice", false);
        let bob = h.user("bob", false);
        let a = h.library(&alice, "A");
        let b = h.library(&bob, "B");
        let sub = h.object_in(&alice, a, ObjectType::Catalog, "Sub");
        let _video = h.object_in(&alice, a, ObjectType::Video, "V");
        let c = alice.as_caller();
        h.services
            .people()
            .grant_permission(&c, a, Grantee::Id(bob.id), PermissionLevel::View)
            .unwrap();
        h.services
            .people()
            .grant_permission(&c, sub, Grantee::Id(bob.id), PermissionLevel::None)
            .unwrap();
        let patch = ObjectPatch {
            properties: Some(Properties::parse([("k", "v")]).unwrap()),
            ..ObjectPatch::default()
        };
        h.services.media().update_object(&c, a, a, patch).unwrap();

        // explicit_level: the entry on that very collection, nothing inherited.
        assert_eq!(
            h.store.explicit_level(a, alice.id).unwrap(),
            Some(PermissionLevel::Admin)
        );
        assert_eq!(
            h.store.explicit_level(a, bob.id).unwrap(),
            Some(PermissionLevel::View)
        );
        assert_eq!(
            h.store.explicit_level(sub, bob.id).unwrap(),
            Some(PermissionLevel::None)
        );
        assert_eq!(h.store.explicit_level(sub, alice.id).unwrap(), None);
        assert_eq!(h.store.explicit_level(b, alice.id).unwrap(), None);

        let ids = |v: Vec<medialib_domain::MediaObject>| -> Vec<ObjectId> {
            v.iter().map(|o| o.id()).collect()
        };
        let sorted = |mut v: Vec<ObjectId>| {
            v.sort();
            v
        };
        // Catalogs with an entry of any level, ordered by id, loaded whole.
        let alices = h.store.catalogs_with_entries_for(alice.id).unwrap();
        assert_eq!(ids(alices.clone()), [a]);
        assert_eq!(alices[0], h.store.object(a).unwrap().unwrap());
        let props: Vec<_> = alices[0].fields().properties.iter().collect();
        assert_eq!(props, [("k", "v")]);
        assert_eq!(
            ids(h.store.catalogs_with_entries_for(bob.id).unwrap()),
            sorted(vec![a, b, sub])
        );
        // Every live catalog; videos are no catalogs.
        let all = h.store.all_catalogs().unwrap();
        assert_eq!(ids(all.clone()), sorted(vec![a, b, sub]));
        assert_eq!(all.iter().find(|o| o.id() == a), alices.first());
        // A soft-deleted catalog is in neither list.
        h.services.media().remove_member(&c, a, sub).unwrap();
        assert_eq!(
            ids(h.store.catalogs_with_entries_for(bob.id).unwrap()),
            sorted(vec![a, b])
        );
        assert_eq!(ids(h.store.all_catalogs().unwrap()), sorted(vec![a, b]));
    }

    pub fn soft_deleted_objects_are_restored(h: &Harness) {
        use medialib_domain::object::SOFT_DELETE_RETENTION_SECS;
        use medialib_ports::repos::RestoreObjectError;

        let alice = h.user("alice", false);
        let c = alice.as_caller();
        let a = h.library(&alice, "A");
        let b = h.library(&alice, "B");
        let v = h.object_in(&alice, a, ObjectType::Video, "V");
        let live = h.store.object(v).unwrap().unwrap();

        // Live objects and unknown ids cannot be restored.
        assert_eq!(
            h.services.media().restore_object(v, None),
            Err(RestoreObjectError::NotDeleted)
        );
        let ns = medialib_ports::OrgRepository::namespace(&*h.store).unwrap();
        let unknown_id = ObjectId::generate(&ns, rand::random());
        assert_eq!(
            h.services.media().restore_object(unknown_id, None),
            Err(RestoreObjectError::NotFound)
        );

        // Back into the collection it was removed from, as it was, and listed again.
        h.set_time(2_000_000_000);
        h.services.media().remove_member(&c, a, v).unwrap();
        assert_eq!(h.store.object(v).unwrap(), None);
        h.set_time(2_000_000_000 + SOFT_DELETE_RETENTION_SECS - 1);
        let restored = h.services.media().restore_object(v, None).unwrap();
        assert_eq!(restored.collection, a);
        assert_eq!(restored.object.lifecycle(), Lifecycle::Live);
        assert_eq!(restored.object.fields(), live.fields());
        assert_eq!(restored.object.shortcode(), live.shortcode());
        assert_eq!(restored.object.modified(), h.clock.now());
        assert_eq!(h.store.object(v).unwrap(), Some(restored.object.clone()));
        assert!(h.store.is_member(a, v).unwrap());
        let listed = h.store.list_members(Members::all(a)).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].object.id(), v);
        assert_eq!(listed[0].added_at, h.clock.now());
        assert_eq!(
            h.services.media().restore_object(v, None),
            Err(RestoreObjectError::NotDeleted)
        );

        // Into another collection when one is named; the recorded one is then forgotten.
        h.services.media().remove_member(&c, a, v).unwrap();
        assert_eq!(
            h.services
                .media()
                .restore_object(v, Some(b))
                .unwrap()
                .collection,
            b
        );
        assert!(!h.store.is_member(a, v).unwrap());
        assert!(h.store.is_member(b, v).unwrap());
        h.services.media().remove_member(&c, b, v).unwrap();
        assert_eq!(
            h.services
                .media()
                .restore_object(v, None)
                .unwrap()
                .collection,
            b
        );

        // Not after the retention period.
        h.set_time(2_100_000_000);
        h.services.media().remove_member(&c, b, v).unwrap();
        h.advance(SOFT_DELETE_RETENTION_SECS);
        assert_eq!(
            h.services.media().restore_object(v, None),
            Err(RestoreObjectError::Expired {
                deleted_at: Timestamp::from_epoch_seconds(2_100_000_000)
            })
        );
        assert_eq!(h.store.object(v).unwrap(), None);
        assert!(!h.store.is_member(b, v).unwrap());

        // A deleted collection cannot take it back until it is restored itself.
        let sub = h.object_in(&alice, a, ObjectType::Catalog, "Sub");
        let f = h.object_in(&alice, sub, ObjectType::File, "F");
        h.services.media().remove_member(&c, sub, f).unwrap();
        h.services.media().remove_member(&c, a, sub).unwrap();
        assert_eq!(
            h.services.media().restore_object(f, None),
            Err(RestoreObjectError::CollectionGone(sub))
        );
        assert_eq!(h.store.object(f).unwrap(), None);
        assert_eq!(
            h.services
                .media()
                .restore_object(sub, None)
                .unwrap()
                .collection,
            a
        );
        assert_eq!(
            h.services
                .media()
                .restore_object(f, None)
                .unwrap()
                .collection,
            sub
        );

        // The graph rules hold: only into catalogs, and never into its own descendants.
        let inner = h.object_in(&alice, sub, ObjectType::Catalog, "Inner");
        h.services.media().remove_member(&c, a, sub).unwrap();
        assert_eq!(
            h.services.media().restore_object(sub, Some(inner)),
            Err(RestoreObjectError::Rule(MembershipError::Cycle))
        );
        assert_eq!(
            h.services.media().restore_object(sub, Some(sub)),
            Err(RestoreObjectError::Rule(MembershipError::Cycle))
        );
        let file_in_b = h.object_in(&alice, b, ObjectType::File, "not a catalog");
        assert_eq!(
            h.services.media().restore_object(sub, Some(file_in_b)),
            Err(RestoreObjectError::Rule(MembershipError::NotACollection))
        );
        assert_eq!(
            h.services.media().restore_object(sub, Some(unknown_id)),
            Err(RestoreObjectError::CollectionGone(unknown_id))
        );
        assert_eq!(
            h.store.object(sub).unwrap(),
            None,
            "refusals change nothing"
        );
        assert_eq!(
            h.services
                .media()
                .restore_object(sub, None)
                .unwrap()
                .collection,
            a
        );
        assert!(h.store.is_member(sub, inner).unwrap());
    }

    fn pending(tag: &str) -> (TokenDigest, StoredPendingSignIn) {
        let (_, digest) = TokenKind::LoginForm.mint(rand::random());
        let record = StoredPendingSignIn {
            nonce: Secret::new(format!("nonce-{tag}")),
            pkce_verifier: Secret::new(format!("verifier-{tag}")),
            return_to: format!("response_type=code&client_id=c&state={tag}%20%26x"),
        };
        (digest, record)
    }

    pub fn pending_sign_ins_are_taken_once_and_expire(h: &Harness) {
        let now = h.clock.now();
        let (d1, p1) = pending("one");
        h.store
            .put_pending_sign_in(&d1, &p1, now.plus(Lifetime::from_seconds(600).unwrap()))
            .unwrap();
        assert_eq!(h.store.take_pending_sign_in(&d1, now).unwrap(), Some(p1));
        assert_eq!(
            h.store.take_pending_sign_in(&d1, now).unwrap(),
            None,
            "single use"
        );
        assert_eq!(
            h.store.take_pending_sign_in(&pending("x").0, now).unwrap(),
            None
        );

        // Expired records are never returned, and taking one deletes it.
        let (d2, p2) = pending("two");
        h.store
            .put_pending_sign_in(&d2, &p2, now.plus(Lifetime::from_seconds(10).unwrap()))
            .unwrap();
        let (d3, p3) = pending("three");
        h.store
            .put_pending_sign_in(&d3, &p3, now.plus(Lifetime::from_seconds(10).unwrap()))
            .unwrap();
        let (d4, p4) = pending("four");
        h.store
            .put_pending_sign_in(&d4, &p4, now.plus(Lifetime::from_seconds(600).unwrap()))
            .unwrap();
        h.advance(9);
        assert_eq!(
            h.store.take_pending_sign_in(&d2, h.clock.now()).unwrap(),
            Some(p2),
            "live until its last second"
        );
        h.advance(1);
        assert_eq!(
            h.store.take_pending_sign_in(&d3, h.clock.now()).unwrap(),
            None
        );
        h.store
            .put_pending_sign_in(&d3, &p3, now.plus(Lifetime::from_seconds(10).unwrap()))
            .unwrap_or_else(|e| panic!("the expired record was deleted when taken: {e}"));

        // Housekeeping deletes the expired ones, not the live one.
        assert_eq!(
            h.store.purge_expired(h.clock.now(), 0).unwrap(),
            PurgeReport {
                pending_sign_ins: 1,
                ..PurgeReport::default()
            }
        );
        assert_eq!(
            h.store.take_pending_sign_in(&d4, h.clock.now()).unwrap(),
            Some(p4)
        );
    }

    pub fn concurrent_takes_of_a_pending_sign_in_have_one_winner(h: &Harness) {
        for round in 0..3 {
            let (d, p) = pending(&format!("race-{round}"));
            let now = h.clock.now();
            h.store
                .put_pending_sign_in(&d, &p, now.plus(Lifetime::from_seconds(600).unwrap()))
                .unwrap();
            let jobs: Vec<Box<dyn FnOnce() -> Option<StoredPendingSignIn> + Send>> = (0..8)
                .map(|_| {
                    let store = h.store.clone();
                    Box::new(move || store.take_pending_sign_in(&d, now).unwrap())
                        as Box<dyn FnOnce() -> Option<StoredPendingSignIn> + Send>
                })
                .collect();
            let winners: Vec<_> = race(jobs).into_iter().flatten().collect();
            assert_eq!(winners, vec![p], "round {round}: exactly one taker gets it");
        }
    }

    /// A redirect-based provider that accepts any code as `dana` (names from the code) and
    /// refuses `error=access_denied`; `begin_redirect` hands out fresh random values.
    struct FakeRedirect;

    impl SsoProvider for FakeRedirect {
        fn method(&self) -> SignInMethod {
            SignInMethod::Redirect
        }
        fn begin_redirect(&self, _: Timestamp) -> Result<RedirectStart, SsoError> {
            let r = || Secret::new(TokenKind::LoginForm.mint(rand::random()).0.expose());
            let pending = PendingSignIn {
                state: r(),
                nonce: r(),
                pkce_verifier: r(),
            };
            Ok(RedirectStart {
                url: format!("https://idp.example/auth?state={}", pending.state.expose()),
                pending,
            })
        }
        fn finish_redirect(
            &self,
            callback: RedirectCallback<'_>,
            pending: &PendingSignIn,
            _: Timestamp,
        ) -> Result<SsoIdentity, SsoError> {
            assert!(pending.nonce.expose().starts_with("mlf_"), "the kept nonce");
            match (callback.code, callback.error) {
                (Some("down"), _) => Err(SsoError::Unavailable("down".into())),
                (Some(names), None) => {
                    let (first, last) = names.split_once(' ').unwrap();
                    Ok(SsoIdentity {
                        unique_id: UniqueId::parse("dana").unwrap(),
                        first_name: Some(PersonName::parse(first, "firstName").unwrap()),
                        last_name: Some(PersonName::parse(last, "lastName").unwrap()),
                    })
                }
                _ => Err(SsoError::InvalidCredentials),
            }
        }
    }

    pub fn redirect_sign_ins_provision_update_and_are_single_use(h: &Harness) {
        let services = h.services.clone().with_sso(Arc::new(FakeRedirect));
        assert_eq!(services.sessions().sign_in_method(), SignInMethod::Redirect);
        let state_of = |url: &str| url.split_once("state=").unwrap().1.to_owned();
        let code = |c: &'static str| RedirectCallback {
            code: Some(c),
            ..RedirectCallback::default()
        };

        // First sign-in provisions dana with the provider's names.
        let url = services
            .sessions()
            .begin_redirect_sign_in("client_id=a&state=1")
            .unwrap();
        let state = state_of(&url);
        let done = services
            .sessions()
            .finish_redirect_sign_in(&state, code("Dana Scully"))
            .unwrap();
        assert_eq!(done.return_to, "client_id=a&state=1");
        assert_eq!(done.session.user.unique_id.as_str(), "dana");
        assert_eq!(done.session.user.first_name.as_str(), "Dana");
        assert_eq!(
            services
                .sessions()
                .session_user(done.session.cookie.expose())
                .unwrap()
                .map(|u| u.id),
            Some(done.session.user.id)
        );
        assert_eq!(
            services
                .sessions()
                .finish_redirect_sign_in(&state, code("Dana Scully"))
                .unwrap_err(),
            FinishSignInError::UnknownState,
            "single use"
        );

        // A later sign-in updates the names of the same user.
        let state = state_of(&services.sessions().begin_redirect_sign_in("again").unwrap());
        let later = services
            .sessions()
            .finish_redirect_sign_in(&state, code("Katherine Scully"))
            .unwrap();
        assert_eq!(later.session.user.id, done.session.user.id);
        assert_eq!(
            h.store
                .user(done.session.user.id)
                .unwrap()
                .unwrap()
                .first_name
                .as_str(),
            "Katherine"
        );

        // Failures keep the request to resume, and use up the state.
        let state = state_of(
            &services
                .sessions()
                .begin_redirect_sign_in("resume-me")
                .unwrap(),
        );
        let cancelled = RedirectCallback {
            error: Some("access_denied"),
            ..RedirectCallback::default()
        };
        assert_eq!(
            services
                .sessions()
                .finish_redirect_sign_in(&state, cancelled)
                .unwrap_err(),
            FinishSignInError::Failed {
                error: SignInError::InvalidCredentials,
                return_to: "resume-me".into()
            }
        );
        assert_eq!(
            services
                .sessions()
                .finish_redirect_sign_in(&state, code("Dana Scully"))
                .unwrap_err(),
            FinishSignInError::UnknownState
        );
        let state = state_of(&services.sessions().begin_redirect_sign_in("down").unwrap());
        assert!(matches!(
            services.sessions().finish_redirect_sign_in(&state, code("down")).unwrap_err(),
            FinishSignInError::Failed { error: SignInError::Unavailable(_), return_to } if return_to == "down"
        ));

        // Unknown, empty, overlong and expired states.
        for bad in ["", "nope", &"x".repeat(600)] {
            assert_eq!(
                services
                    .sessions()
                    .finish_redirect_sign_in(bad, code("Dana Scully"))
                    .unwrap_err(),
                FinishSignInError::UnknownState
            );
        }
        let state = state_of(&services.sessions().begin_redirect_sign_in("late").unwrap());
        h.advance(i64::from(PENDING_SIGN_IN_SECONDS));
        assert_eq!(
            services
                .sessions()
                .finish_redirect_sign_in(&state, code("Dana Scully"))
                .unwrap_err(),
            FinishSignInError::UnknownState,
            "ten minutes at most"
        );
    }
}

/// The RFC 6749 error code of a token endpoint failure, if it failed.
fn oauth_code<T, E: OAuthFailure>(r: &Result<T, E>) -> Option<OAuthErrorCode> {
    r.as_ref().err().map(OAuthFailure::error_code)
}

medialib_adapters_diesel::backend_tests!(
    on [sqlite, memory, postgres] with Harness::run:
    users_are_unique_by_unique_id,
    objects_round_trip_and_type_is_fixed,
    membership_is_many_to_many_and_acyclic,
    last_membership_soft_deletes,
    catalog_lists_changes_since_ts,
    catalog_pages_walk_the_unpaged_listing,
    concurrent_update_and_add_keep_the_page_order,
    access_flows_down_and_explicit_entries_override,
    last_admin_cannot_go,
    concurrent_demotions_keep_an_admin,
    concurrent_adds_never_make_a_cycle,
    clients_register_and_authenticate,
    client_and_bearer_read_what_their_two_reads_do,
    code_exchange_and_replay_revokes,
    refresh_rotates_and_reuse_revokes_the_family,
    a_refresh_retry_within_the_grace_replaces_the_untouched_pair,
    replays_are_reuse_despite_the_retry_grace,
    refresh_tokens_expire_when_idle,
    concurrent_code_redemption_has_one_winner,
    concurrent_refresh_has_one_winner,
    logout_and_revocation,
    library_lookups_for_people_calls,
    sessions_round_trip_and_end,
    local_credentials_set_replace_and_look_up,
    concurrent_password_sets_both_succeed,
    refresh_token_lookup_reports_state,
    purge_deletes_exactly_what_expired,
    purge_works_in_batches,
    purge_keeps_grants_younger_than_the_code_grace,
    soft_deleted_objects_are_restored,
    pending_sign_ins_are_taken_once_and_expire,
    concurrent_takes_of_a_pending_sign_in_have_one_winner,
    redirect_sign_ins_provision_update_and_are_single_use,
);
