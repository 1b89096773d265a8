//! Contract cases of the media ports (objects, the membership graph, permissions, catalog
//! listing, restore), ported from tests/integration/contract.rs, on a `MemoryStore`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

mod common;

use std::collections::BTreeSet;

use common::{Harness, race};
use medialib_domain::object::SOFT_DELETE_RETENTION_SECS;
use medialib_domain::{
    AfterRemoval, Caller, Lifecycle, MembershipError, ObjectId, ObjectPatch, ObjectType,
    PageCursor, PageRequest, PageSize, PermissionLevel, Properties, Refusal, Since, Timestamp,
    Title, UpdateError, User,
};
use medialib_ports::repos::RestoreObjectError;
use medialib_ports::services::{AddMemberFailed, PermissionFailed, Placement, UpdateObjectFailed};
use medialib_ports::{
    AddOutcome, CatalogItem, MediaRepository, OrgRepository, PermissionChangeError,
    RemoveMemberError,
};

#[test]
fn objects_round_trip_and_type_is_fixed() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let bob = h.user("bob", false);
    let lib = h.library(&alice, "Lectures");
    let entries = h.store.permission_entries(lib).unwrap();
    assert_eq!(entries.len(), 1, "the creator becomes the library's admin");
    assert_eq!(entries[0].user.id, alice.id);
    assert_eq!(entries[0].level, PermissionLevel::Admin);

    let mut new = Harness::new_object(ObjectType::Video, "Intro ünïcödé");
    new.fields.properties = Properties::parse([("course", "CS101"), ("term", "fall")]).unwrap();
    new.fields.public = true;
    let created = h
        .services
        .create_object(&alice.as_caller(), Placement::In(lib), new)
        .unwrap();
    assert_eq!(h.store.object(created.id()).unwrap().unwrap(), created);
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
        .update_object(&alice.as_caller(), lib, created.id(), patch)
        .unwrap();
    assert_eq!(h.store.object(created.id()).unwrap().unwrap(), updated);
    assert_eq!(updated.modified(), h.now());
    let props: Vec<_> = updated.fields().properties.iter().collect();
    assert_eq!(props, [("course", "CS101"), ("term", "spring")]);

    let change = ObjectPatch {
        object_type: Some(ObjectType::Audio),
        ..ObjectPatch::default()
    };
    assert_eq!(
        h.services
            .update_object(&alice.as_caller(), lib, created.id(), change),
        Err(UpdateObjectFailed::Rule(UpdateError::TypeChange {
            stored: ObjectType::Video,
            requested: ObjectType::Audio
        }))
    );
    assert_eq!(
        h.store.object(created.id()).unwrap().unwrap(),
        updated,
        "a refused update changes nothing"
    );
    assert!(matches!(
        h.services
            .update_object(&bob.as_caller(), lib, created.id(), ObjectPatch::default()),
        Err(UpdateObjectFailed::Refused(Refusal::Forbidden(_)))
    ));
    let other = h.library(&alice, "Other");
    assert_eq!(
        h.services.update_object(
            &alice.as_caller(),
            other,
            created.id(),
            ObjectPatch::default()
        ),
        Err(UpdateObjectFailed::NotFound)
    );
    assert!(
        h.services
            .create_object(
                &alice.as_caller(),
                Placement::TopLevel,
                Harness::new_object(ObjectType::Video, "x")
            )
            .is_err(),
        "a top-level object must be a catalog"
    );
}

#[test]
fn membership_is_many_to_many_and_acyclic() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let a = h.library(&alice, "A");
    let b = h.library(&alice, "B");
    let s = h.object_in(&alice, a, ObjectType::Catalog, "S");
    let v = h.object_in(&alice, s, ObjectType::Video, "V");
    let c = alice.as_caller();

    assert_eq!(h.services.add_member(&c, b, s).unwrap(), AddOutcome::Added);
    assert_eq!(
        h.services.add_member(&c, b, s).unwrap(),
        AddOutcome::AlreadyMember
    );
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(h.store.collections_of(s).unwrap(), expected);

    for (coll, member) in [(s, a), (s, s), (s, b)] {
        assert_eq!(
            h.services.add_member(&c, coll, member),
            Err(AddMemberFailed::Rule(MembershipError::Cycle)),
            "adding an ancestor must be refused"
        );
    }
    assert_eq!(
        h.services.add_member(&c, v, a),
        Err(AddMemberFailed::Rule(MembershipError::NotACollection))
    );
    let ghost = ObjectId::parse("00000000000000000000000000000000").unwrap();
    assert_eq!(
        h.services.add_member(&c, a, ghost),
        Err(AddMemberFailed::Refused(Refusal::Hidden))
    );
    assert_eq!(
        h.services.add_member(&c, ghost, v),
        Err(AddMemberFailed::CollectionNotFound)
    );
    let bob = h.user("bob", false);
    let bobs = h.library(&bob, "Bob's");
    assert_eq!(
        h.services.add_member(&bob.as_caller(), bobs, v),
        Err(AddMemberFailed::Refused(Refusal::Hidden))
    );
    h.services
        .set_permission(&c, a, bob.id, PermissionLevel::View)
        .unwrap();
    for member in [s, v, a] {
        assert!(
            matches!(
                h.services.add_member(&bob.as_caller(), bobs, member),
                Err(AddMemberFailed::Refused(Refusal::Forbidden(_)))
            ),
            "a viewer links nothing it only views"
        );
    }
    assert_eq!(h.store.collections_of(s).unwrap(), expected);
    // The repository itself: a missing member, the cycle check through the whole ancestry.
    use medialib_ports::AddMemberError;
    assert_eq!(
        h.store.add_member(a, ghost, h.now()),
        Err(AddMemberError::MemberNotFound)
    );
    assert_eq!(
        h.store.add_member(s, a, h.now()),
        Err(AddMemberError::Rule(MembershipError::Cycle))
    );
    assert!(
        !h.store.is_member(s, a).unwrap(),
        "refused adds write nothing"
    );
}

#[test]
fn last_membership_soft_deletes() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let a = h.library(&alice, "A");
    let b = h.library(&alice, "B");
    let v = h.object_in(&alice, a, ObjectType::Video, "V");
    let c = alice.as_caller();
    h.services.add_member(&c, b, v).unwrap();
    assert_eq!(
        h.services.remove_member(&c, a, v).unwrap(),
        AfterRemoval::StillListed
    );
    assert!(h.store.object(v).unwrap().is_some());
    h.advance(5);
    assert_eq!(
        h.services.remove_member(&c, b, v).unwrap(),
        AfterRemoval::SoftDelete
    );
    assert_eq!(h.store.object(v).unwrap(), None);
    let gone = h.store.object_any_state(v).unwrap().unwrap();
    assert_eq!(gone.lifecycle(), Lifecycle::SoftDeleted { at: h.now() });
    assert_eq!(gone.modified(), h.now());
    assert_eq!(
        h.store.remove_member(b, v, h.now()),
        Err(RemoveMemberError::NotAMember)
    );
    assert!(h.store.list_members(b, None, None).unwrap().is_empty());
    assert_eq!(h.store.object_by_shortcode(gone.shortcode()).unwrap(), None);
}

fn since(t: i64) -> Since {
    Since::parse(&t.to_string()).unwrap()
}

#[test]
fn catalog_lists_changes_since_ts() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let c = alice.as_caller();
    h.set_time(1000);
    let lib = h.library(&alice, "L");
    let o1 = h.object_in(&alice, lib, ObjectType::Video, "one");
    h.set_time(1001);
    let o2 = h.object_in(&alice, lib, ObjectType::Audio, "two");
    let o3 = h.object_in(&alice, lib, ObjectType::File, "three");
    h.set_time(1002);
    let page = h.services.list_catalog(&c, lib, None, None).unwrap();
    assert_eq!(page.ts, Timestamp::from_epoch_seconds(1002));
    assert_eq!(page.level, PermissionLevel::Admin);
    let ids: Vec<ObjectId> = page.items.iter().map(|i| i.object.id()).collect();
    let (first, second) = if o2 < o3 { (o2, o3) } else { (o3, o2) };
    assert_eq!(ids, [first, second, o1], "newest first, ties by uuid");

    let ids_since = |t: i64| -> BTreeSet<ObjectId> {
        h.services
            .list_catalog(&c, lib, Some(since(t)), None)
            .unwrap()
            .items
            .iter()
            .map(|i| i.object.id())
            .collect()
    };
    assert_eq!(ids_since(1001), [o2, o3].into_iter().collect());
    assert!(ids_since(1002).is_empty());

    let patch = ObjectPatch {
        title: Some(Title::parse("1!").unwrap()),
        ..ObjectPatch::default()
    };
    h.services.update_object(&c, lib, o1, patch).unwrap();
    let o4 = h.object_in(&alice, lib, ObjectType::Image, "four");
    assert_eq!(ids_since(1002), [o1, o4].into_iter().collect());

    // A membership addition of an old object counts as a change.
    let other = h.library(&alice, "Other");
    h.set_time(1100);
    h.services.add_member(&c, other, o2).unwrap();
    let listed = h
        .services
        .list_catalog(&c, other, Some(since(1100)), None)
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].object.id(), o2);
    assert_eq!(
        listed.items[0].added_at,
        Timestamp::from_epoch_seconds(1100)
    );
    assert!(
        h.services.list_catalog(&c, o1, None, None).is_err(),
        "a video is not a catalog"
    );
}

/// Walks `collection` through the repository in pages of `size`; all pages in order.
fn walk_pages(
    h: &Harness,
    collection: ObjectId,
    since: Option<Since>,
    size: &str,
) -> Vec<CatalogItem> {
    let size = PageSize::parse(size).unwrap();
    let mut walked: Vec<CatalogItem> = Vec::new();
    let mut after = None;
    let members = h.store.list_members(collection, since, None).unwrap().len();
    for _ in 0..=members {
        let mut page = h
            .store
            .list_members(collection, since, Some(PageRequest::new(size, after)))
            .unwrap();
        assert!(page.len() <= size.get() + 1);
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

fn assert_listing_order(items: &[CatalogItem]) {
    for pair in items.windows(2) {
        let key = |i: &CatalogItem| (std::cmp::Reverse(i.object.modified()), i.object.id());
        assert!(key(&pair[0]) < key(&pair[1]), "out of order: {pair:?}");
    }
}

#[test]
fn catalog_pages_walk_the_unpaged_listing() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let c = alice.as_caller();
    let lib = h.library(&alice, "L");
    let other = h.library(&alice, "Other");
    let mut members = Vec::new();
    for n in 0..9_i64 {
        h.set_time(1000 + n % 3);
        let id = h.object_in(&alice, lib, ObjectType::Video, &format!("v{n}"));
        if n % 2 == 0 {
            let patch = ObjectPatch {
                properties: Some(Properties::parse([("k", "v"), ("n", "m")]).unwrap()),
                ..ObjectPatch::default()
            };
            h.services.update_object(&c, lib, id, patch).unwrap();
        }
        members.push(id);
    }
    h.set_time(900);
    let old = h.object_in(&alice, other, ObjectType::Audio, "old");
    h.set_time(1500);
    h.services.add_member(&c, lib, old).unwrap();

    let ids = |items: &[CatalogItem]| items.iter().map(|i| i.object.id()).collect::<Vec<_>>();
    let first = |collection| {
        let size = PageSize::parse("1").unwrap();
        let page = h
            .store
            .list_members(collection, None, Some(PageRequest::new(size, None)))
            .unwrap();
        assert_eq!(page.len(), 2, "a page of one brings one more");
        page[0].object.id()
    };
    let all = h.store.list_members(lib, None, None).unwrap();
    assert_eq!(all.len(), 10);
    assert_eq!(all.last().unwrap().object.id(), old, "modified at 900");
    assert_listing_order(&all);

    h.set_time(2000);
    let patch = ObjectPatch {
        title: Some(Title::parse("changed").unwrap()),
        ..ObjectPatch::default()
    };
    h.services
        .update_object(&c, lib, old, patch.clone())
        .unwrap();
    assert_eq!(first(lib), old);
    h.set_time(2001);
    h.services
        .update_object(&c, lib, members[4], patch.clone())
        .unwrap();
    assert_eq!(first(lib), members[4]);

    h.set_time(2100);
    assert_eq!(
        h.services.remove_member(&c, lib, members[7]).unwrap(),
        AfterRemoval::SoftDelete
    );
    assert_eq!(
        h.services.remove_member(&c, other, old).unwrap(),
        AfterRemoval::StillListed
    );
    let without = h.store.list_members(lib, None, None).unwrap();
    assert!(!ids(&without).contains(&members[7]));
    assert_eq!(ids(&without)[0], members[4]);
    assert_eq!(walk_pages(&h, lib, None, "2"), without);
    h.set_time(2200);
    h.services.restore_object(members[7], None).unwrap();
    assert_eq!(first(lib), members[7]);
    h.set_time(2300);
    h.services.remove_member(&c, lib, members[1]).unwrap();
    h.services.restore_object(members[1], Some(other)).unwrap();

    let all = h.store.list_members(lib, None, None).unwrap();
    assert_eq!(all.len(), 9);
    assert_listing_order(&all);
    assert_eq!(ids(&all)[..3], [members[7], members[4], old]);
    for size in ["1", "2", "3", "4", "8", "9", "10", "1000"] {
        assert_eq!(walk_pages(&h, lib, None, size), all, "size {size}");
    }
    let since = Since::parse("1500").unwrap();
    let changed = h.store.list_members(lib, Some(since), None).unwrap();
    assert_eq!(ids(&changed), [members[7], members[4], old]);
    for size in ["1", "2", "1000"] {
        assert_eq!(
            walk_pages(&h, lib, Some(since), size),
            changed,
            "size {size}"
        );
    }
    assert_eq!(
        ids(&h.store.list_members(other, None, None).unwrap()),
        [members[1]]
    );
    // each_member hands over exactly what list_members lists, and may call the store.
    let mut visited = Vec::new();
    h.store
        .each_member(lib, None, None, &mut |item| {
            assert!(h.store.object(item.object.id()).unwrap().is_some());
            visited.push(item);
        })
        .unwrap();
    assert_eq!(visited, all);
}

#[test]
fn access_flows_down_and_explicit_entries_override() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let bob = h.user("bob", false);
    let root_admin = h.user("root", true);
    let c = alice.as_caller();
    let r = h.library(&alice, "R");
    let s = h.object_in(&alice, r, ObjectType::Catalog, "S");
    let t = h.object_in(&alice, s, ObjectType::Catalog, "T");
    assert_eq!(h.level(&bob, t), PermissionLevel::None);
    h.services
        .set_permission(&c, r, bob.id, PermissionLevel::View)
        .unwrap();
    assert_eq!(h.level(&bob, s), PermissionLevel::View);
    assert_eq!(h.level(&bob, t), PermissionLevel::View);
    h.services
        .set_permission(&c, s, bob.id, PermissionLevel::None)
        .unwrap();
    assert_eq!(h.level(&bob, s), PermissionLevel::None);
    assert_eq!(
        h.level(&bob, t),
        PermissionLevel::None,
        "explicit none blocks"
    );
    h.services
        .set_permission(&c, t, bob.id, PermissionLevel::Admin)
        .unwrap();
    assert_eq!(h.level(&bob, t), PermissionLevel::Admin);
    assert_eq!(h.level(&alice, t), PermissionLevel::Admin);
    assert_eq!(h.level(&root_admin, t), PermissionLevel::Admin);
    let other = h.library(&alice, "O");
    h.services.add_member(&c, other, s).unwrap();
    h.services
        .set_permission(&c, other, bob.id, PermissionLevel::Admin)
        .unwrap();
    h.services.remove_permission(&c, s, bob.id).unwrap();
    assert_eq!(
        h.level(&bob, s),
        PermissionLevel::Admin,
        "the higher parent wins"
    );
    assert!(matches!(
        h.services
            .set_permission(&bob.as_caller(), r, bob.id, PermissionLevel::Admin),
        Err(PermissionFailed::Refused(Refusal::Forbidden(_)))
    ));
}

#[test]
fn last_admin_cannot_go() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let bob = h.user("bob", false);
    let c = alice.as_caller();
    let lib = h.library(&alice, "L");
    let last =
        PermissionFailed::Change(PermissionChangeError::LastAdmin(medialib_domain::LastAdmin));
    assert_eq!(
        h.services
            .set_permission(&c, lib, alice.id, PermissionLevel::View),
        Err(last.clone())
    );
    assert_eq!(h.services.remove_permission(&c, lib, alice.id), Err(last));
    assert_eq!(
        h.services.remove_permission(&c, lib, bob.id),
        Err(PermissionFailed::Change(PermissionChangeError::NoEntry))
    );
    assert_eq!(
        h.services
            .set_permission(&c, lib, common::unknown_user(), PermissionLevel::View),
        Err(PermissionFailed::Change(
            PermissionChangeError::UserNotFound
        ))
    );
    h.services
        .set_permission(&c, lib, bob.id, PermissionLevel::Admin)
        .unwrap();
    h.services
        .set_permission(&c, lib, alice.id, PermissionLevel::View)
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
    // The repository refuses non-collections and unknown collections itself.
    let v = h.object_in(&bob, lib, ObjectType::Video, "V");
    assert_eq!(
        h.store
            .set_permission(v, bob.id, PermissionLevel::View, h.now()),
        Err(PermissionChangeError::NotACollection)
    );
    assert_eq!(
        h.store
            .remove_permission(ObjectId::parse(&"0".repeat(32)).unwrap(), bob.id),
        Err(PermissionChangeError::CollectionNotFound)
    );
}

#[test]
fn concurrent_demotions_and_adds_have_one_winner() {
    let h = &Harness::new();
    for round in 0..5 {
        let a = h.user(&format!("a{round}"), false);
        let b = h.user(&format!("b{round}"), false);
        let lib = h.library(&a, "L");
        h.services
            .set_permission(&a.as_caller(), lib, b.id, PermissionLevel::Admin)
            .unwrap();
        let demote = |who: User| -> Box<dyn FnOnce() -> _ + Send + '_> {
            Box::new(move || {
                h.services
                    .set_permission(&who.as_caller(), lib, who.id, PermissionLevel::View)
            })
        };
        let results = race(vec![demote(a.clone()), demote(b.clone())]);
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );

        let c: &Caller = &a.as_caller();
        let x = h.library(&a, "X");
        let y = h.library(&a, "Y");
        let add = |coll, member| -> Box<dyn FnOnce() -> _ + Send + '_> {
            Box::new(move || h.services.add_member(c, coll, member))
        };
        let results = race(vec![add(x, y), add(y, x)]);
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        assert!(results.contains(&Err(AddMemberFailed::Rule(MembershipError::Cycle))));
    }
}

#[test]
fn library_lookups_for_people_calls() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let bob = h.user("bob", false);
    let a = h.library(&alice, "A");
    let b = h.library(&bob, "B");
    let sub = h.object_in(&alice, a, ObjectType::Catalog, "Sub");
    let _video = h.object_in(&alice, a, ObjectType::Video, "V");
    let c = alice.as_caller();
    h.services
        .set_permission(&c, a, bob.id, PermissionLevel::View)
        .unwrap();
    h.services
        .set_permission(&c, sub, bob.id, PermissionLevel::None)
        .unwrap();
    let patch = ObjectPatch {
        properties: Some(Properties::parse([("k", "v")]).unwrap()),
        ..ObjectPatch::default()
    };
    h.services.update_object(&c, a, a, patch).unwrap();

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
    let alices = h.store.catalogs_with_entries_for(alice.id).unwrap();
    assert_eq!(ids(alices.clone()), [a]);
    assert_eq!(alices[0], h.store.object(a).unwrap().unwrap());
    let props: Vec<_> = alices[0].fields().properties.iter().collect();
    assert_eq!(props, [("k", "v")]);
    assert_eq!(
        ids(h.store.catalogs_with_entries_for(bob.id).unwrap()),
        sorted(vec![a, b, sub])
    );
    let all = h.store.all_catalogs().unwrap();
    assert_eq!(ids(all.clone()), sorted(vec![a, b, sub]));
    h.services.remove_member(&c, a, sub).unwrap();
    assert_eq!(
        ids(h.store.catalogs_with_entries_for(bob.id).unwrap()),
        sorted(vec![a, b])
    );
    assert_eq!(ids(h.store.all_catalogs().unwrap()), sorted(vec![a, b]));
}

#[test]
fn soft_deleted_objects_are_restored() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let c = alice.as_caller();
    let a = h.library(&alice, "A");
    let b = h.library(&alice, "B");
    let v = h.object_in(&alice, a, ObjectType::Video, "V");
    let live = h.store.object(v).unwrap().unwrap();
    assert_eq!(
        h.services.restore_object(v, None),
        Err(RestoreObjectError::NotDeleted)
    );
    let ns = OrgRepository::namespace(&*h.store).unwrap();
    let unknown_id = ObjectId::generate(&ns, [0xEE; 16]);
    assert_eq!(
        h.services.restore_object(unknown_id, None),
        Err(RestoreObjectError::NotFound)
    );

    h.set_time(2_000_000_000);
    h.services.remove_member(&c, a, v).unwrap();
    h.set_time(2_000_000_000 + SOFT_DELETE_RETENTION_SECS - 1);
    let restored = h.services.restore_object(v, None).unwrap();
    assert_eq!(restored.collection, a);
    assert_eq!(restored.object.lifecycle(), Lifecycle::Live);
    assert_eq!(restored.object.fields(), live.fields());
    assert_eq!(restored.object.shortcode(), live.shortcode());
    assert_eq!(restored.object.modified(), h.now());
    assert_eq!(h.store.object(v).unwrap(), Some(restored.object.clone()));
    let listed = h.store.list_members(a, None, None).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].added_at, h.now());

    h.services.remove_member(&c, a, v).unwrap();
    assert_eq!(h.services.restore_object(v, Some(b)).unwrap().collection, b);
    assert!(!h.store.is_member(a, v).unwrap());
    h.services.remove_member(&c, b, v).unwrap();
    assert_eq!(h.services.restore_object(v, None).unwrap().collection, b);

    h.set_time(2_100_000_000);
    h.services.remove_member(&c, b, v).unwrap();
    h.advance(SOFT_DELETE_RETENTION_SECS);
    assert_eq!(
        h.services.restore_object(v, None),
        Err(RestoreObjectError::Expired {
            deleted_at: Timestamp::from_epoch_seconds(2_100_000_000)
        })
    );
    assert!(!h.store.is_member(b, v).unwrap());

    let sub = h.object_in(&alice, a, ObjectType::Catalog, "Sub");
    let f = h.object_in(&alice, sub, ObjectType::File, "F");
    h.services.remove_member(&c, sub, f).unwrap();
    h.services.remove_member(&c, a, sub).unwrap();
    assert_eq!(
        h.services.restore_object(f, None),
        Err(RestoreObjectError::CollectionGone(sub))
    );
    assert_eq!(h.services.restore_object(sub, None).unwrap().collection, a);
    assert_eq!(h.services.restore_object(f, None).unwrap().collection, sub);

    let inner = h.object_in(&alice, sub, ObjectType::Catalog, "Inner");
    h.services.remove_member(&c, a, sub).unwrap();
    assert_eq!(
        h.services.restore_object(sub, Some(inner)),
        Err(RestoreObjectError::Rule(MembershipError::Cycle))
    );
    assert_eq!(
        h.services.restore_object(sub, Some(sub)),
        Err(RestoreObjectError::Rule(MembershipError::Cycle))
    );
    let file_in_b = h.object_in(&alice, b, ObjectType::File, "not a catalog");
    assert_eq!(
        h.services.restore_object(sub, Some(file_in_b)),
        Err(RestoreObjectError::Rule(MembershipError::NotACollection))
    );
    assert_eq!(
        h.services.restore_object(sub, Some(unknown_id)),
        Err(RestoreObjectError::CollectionGone(unknown_id))
    );
    assert_eq!(
        h.store.object(sub).unwrap(),
        None,
        "refusals change nothing"
    );
    assert_eq!(h.services.restore_object(sub, None).unwrap().collection, a);
    assert!(h.store.is_member(sub, inner).unwrap());
}
