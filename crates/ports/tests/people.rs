//! The people use cases on the in-memory store: creating and provisioning users, local
//! passwords, reading, renaming and adding users through a collection, the permission
//! calls that name people, the info record and the contribute list. No database:
//! `cargo test -p medialib-ports`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use medialib_adapters_memory::testing::{Harness, World, forbidden, unknown_user, world};
use medialib_domain::projection::UserFieldVisibility;
use medialib_domain::{
    Caller, IdOrZero, LastAdmin, ObjectId, ObjectPatch, ObjectType, OrgNamespace, PermissionLevel,
    PersonName, Refusal, UniqueId, User, UserId,
};
use medialib_ports::services::NewUserInput;
use medialib_ports::services::people::{
    AddUserFailed, AddUserInput, ContributeFailed, GrantPermissionFailed, Grantee, InfoFailed,
    ListPermissionsFailed, ObjectInfo, ReadUserFailed, RevokePermissionFailed, UpdateUserFailed,
    UserPatch,
};
use medialib_ports::{CreateUserError, PasswordHash};

use PermissionLevel::{Admin, None as NoLevel, View};

fn unknown_object() -> ObjectId {
    ObjectId::generate(&OrgNamespace::from_random([9; 16]), [9; 16])
}

fn uid(s: &str) -> UniqueId {
    UniqueId::parse(s).unwrap()
}

fn name(s: &str) -> PersonName {
    PersonName::parse(s, "firstName").unwrap()
}

fn names(first: Option<&str>, last: Option<&str>) -> UserPatch {
    UserPatch {
        first_name: first.map(name),
        last_name: last.map(name),
        unique_id: None,
    }
}

/// The user as stored now.
fn stored(h: &Harness, id: UserId) -> User {
    h.store.user(id).unwrap().unwrap()
}

fn explicit(h: &Harness, collection: ObjectId, user: UserId) -> Option<PermissionLevel> {
    h.store.explicit_level(collection, user).unwrap()
}

fn sub_of(w: &World, title: &str) -> ObjectId {
    w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, title)
}

fn remove(w: &World, collection: ObjectId, member: ObjectId) {
    w.h.services
        .media()
        .remove_member(&w.alice.as_caller(), collection, member)
        .unwrap();
}

const ALL_FIELDS: UserFieldVisibility = UserFieldVisibility {
    names: true,
    identifiers: true,
};
const NAMES_ONLY: UserFieldVisibility = UserFieldVisibility {
    names: true,
    identifiers: false,
};

// ------------------------------------------------------------------ create, provision, password

#[test]
fn a_unique_id_names_one_user() {
    let h = Harness::new();
    let people = h.services.people();
    let input = |first: &str, org_admin| NewUserInput {
        unique_id: uid("ann"),
        first_name: name(first),
        last_name: name("Lee"),
        org_admin,
    };
    let ann = people.create_user(input("Ann", false)).unwrap();
    assert_eq!(ann.unique_id, uid("ann"));
    assert_eq!(ann.first_name, name("Ann"));
    assert!(!ann.org_admin);
    assert_eq!(stored(&h, ann.id), ann);
    assert_eq!(
        people.create_user(input("Impostor", true)),
        Err(CreateUserError::UniqueIdTaken)
    );
    assert_eq!(h.store.user_by_unique_id(&uid("ann")).unwrap(), Some(ann));
    assert_eq!(h.store.list_users().unwrap().len(), 1);
    // Positive control: another uniqueId is another user.
    let other = people
        .create_user(NewUserInput {
            unique_id: uid("ann2"),
            ..input("Ann", true)
        })
        .unwrap();
    assert!(other.org_admin);
    assert_eq!(h.store.list_users().unwrap().len(), 2);
}

#[test]
fn provisioning_finds_a_user_or_creates_one_with_blank_names() {
    let w = world();
    let people = w.h.services.people();
    assert_eq!(
        people.provision_user(&w.alice.unique_id),
        Ok(w.alice.clone())
    );
    let before = w.h.store.list_users().unwrap().len();
    let newbie = people.provision_user(&uid("newbie")).unwrap();
    assert_eq!(newbie.unique_id, uid("newbie"));
    assert_eq!(newbie.first_name, PersonName::default());
    assert_eq!(newbie.last_name, PersonName::default());
    assert!(!newbie.org_admin);
    assert_eq!(stored(&w.h, newbie.id), newbie);
    assert_eq!(people.provision_user(&uid("newbie")), Ok(newbie));
    assert_eq!(w.h.store.list_users().unwrap().len(), before + 1);
}

#[test]
fn a_password_is_set_only_for_a_known_user() {
    let w = world();
    let people = w.h.services.people();
    let hash = PasswordHash::new("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA");
    assert_eq!(people.set_password(&uid("nobody"), &hash), Ok(None));
    assert_eq!(w.h.store.password_hash(&uid("nobody")).unwrap(), None);
    assert_eq!(w.h.store.user_by_unique_id(&uid("nobody")).unwrap(), None);
    assert_eq!(
        people.set_password(&w.alice.unique_id, &hash),
        Ok(Some(w.alice.clone()))
    );
    assert_eq!(
        w.h.store.password_hash(&w.alice.unique_id).unwrap(),
        Some((w.alice.clone(), hash))
    );
    // Set again: replaced.
    let other = PasswordHash::new("$argon2id$v=19$m=19456,t=2,p=1$c2FsdDI$aGFzaDI");
    people.set_password(&w.alice.unique_id, &other).unwrap();
    assert_eq!(
        w.h.store.password_hash(&w.alice.unique_id).unwrap(),
        Some((w.alice.clone(), other))
    );
    assert_eq!(w.h.store.password_hash(&w.bob.unique_id).unwrap(), None);
}

// ------------------------------------------------------------------ read_user

#[test]
fn identifiers_show_to_the_user_itself_and_to_admins_of_the_collection() {
    let w = world();
    let people = w.h.services.people();
    let read = |who: &Caller, target| people.read_user(who, w.lib, target);
    let bob = w.bob.as_caller();
    for target in [IdOrZero::Zero, IdOrZero::Id(w.bob.id)] {
        let me = read(&bob, target).unwrap();
        assert_eq!((me.user, me.visibility), (w.bob.clone(), ALL_FIELDS));
    }
    let by_admin = read(&w.alice.as_caller(), IdOrZero::Id(w.bob.id)).unwrap();
    assert_eq!(
        (by_admin.user, by_admin.visibility),
        (w.bob.clone(), ALL_FIELDS)
    );
    let by_org = read(&w.olga.as_caller(), IdOrZero::Id(w.bob.id)).unwrap();
    assert_eq!(by_org.visibility, ALL_FIELDS);
    // A viewer sees another member's names only; a read-only token reads as well.
    for who in [bob, w.h.token_caller(&w.bob, "read")] {
        let by_viewer = read(&who, IdOrZero::Id(w.alice.id)).unwrap();
        assert_eq!(
            (by_viewer.user, by_viewer.visibility),
            (w.alice.clone(), NAMES_ONLY)
        );
    }
}

#[test]
fn without_view_or_an_entry_a_user_is_not_found() {
    let w = world();
    let people = w.h.services.people();
    let read = |who: &User, c, target| people.read_user(&who.as_caller(), c, target).map(drop);
    // Carol views nothing: every user of `lib` is not found, herself included.
    for target in [
        IdOrZero::Zero,
        IdOrZero::Id(w.alice.id),
        IdOrZero::Id(w.carol.id),
    ] {
        assert_eq!(read(&w.carol, w.lib, target), Err(ReadUserFailed::NotFound));
    }
    // Bob inherits `view` on `sub` but holds no entry there: he reads himself through
    // it, nobody else reads him through it.
    let sub = sub_of(&w, "sub");
    assert_eq!(read(&w.bob, sub, IdOrZero::Zero), Ok(()));
    assert_eq!(
        read(&w.alice, sub, IdOrZero::Id(w.bob.id)),
        Err(ReadUserFailed::NotFound)
    );
    assert_eq!(read(&w.alice, w.lib, IdOrZero::Id(w.bob.id)), Ok(()));
    assert_eq!(
        read(&w.alice, w.lib, IdOrZero::Id(unknown_user())),
        Err(ReadUserFailed::NotFound)
    );
    // An explicit none on `sub` takes his view away.
    w.h.grant(&w.alice, sub, &w.bob, NoLevel);
    assert_eq!(
        read(&w.bob, sub, IdOrZero::Zero),
        Err(ReadUserFailed::NotFound)
    );
    // The collection must be a live catalog.
    assert_eq!(
        read(&w.alice, unknown_object(), IdOrZero::Zero),
        Err(ReadUserFailed::CollectionNotFound)
    );
    assert_eq!(
        read(&w.alice, w.video, IdOrZero::Zero),
        Err(ReadUserFailed::NotACollection)
    );
    remove(&w, w.lib, sub);
    assert_eq!(
        read(&w.alice, sub, IdOrZero::Zero),
        Err(ReadUserFailed::CollectionNotFound)
    );
}

// ------------------------------------------------------------------ update_user

#[test]
fn a_user_renames_itself_through_a_collection_it_views() {
    let w = world();
    let people = w.h.services.people();
    let bob = w.bob.as_caller();
    let renamed = people
        .update_user(&bob, w.lib, w.bob.id, names(Some("Robert"), None))
        .unwrap();
    assert_eq!(renamed.first_name, name("Robert"));
    assert_eq!(renamed.last_name, w.bob.last_name);
    assert_eq!(stored(&w.h, w.bob.id), renamed);
    // Naming its own uniqueId is fine; naming another is refused.
    let same_id = UserPatch {
        unique_id: Some(w.bob.unique_id.clone()),
        ..names(None, Some("Builder"))
    };
    let renamed = people.update_user(&bob, w.lib, w.bob.id, same_id).unwrap();
    assert_eq!(renamed.last_name, name("Builder"));
    let other_id = UserPatch {
        unique_id: Some(uid("robert")),
        ..names(Some("X"), None)
    };
    assert_eq!(
        people.update_user(&bob, w.lib, w.bob.id, other_id),
        Err(UpdateUserFailed::UniqueIdFixed)
    );
    // Without `view`, or through a read-only token, nothing changes.
    assert_eq!(
        people.update_user(
            &w.carol.as_caller(),
            w.lib,
            w.carol.id,
            names(Some("X"), None)
        ),
        Err(UpdateUserFailed::Refused(forbidden(View, NoLevel)))
    );
    let read_only = w.h.token_caller(&w.bob, "read");
    for patch in [names(Some("X"), None), UserPatch::default()] {
        assert_eq!(
            people.update_user(&read_only, w.lib, w.bob.id, patch),
            Err(UpdateUserFailed::Refused(Refusal::ReadOnly))
        );
    }
    assert_eq!(stored(&w.h, w.bob.id), renamed);
    assert_eq!(stored(&w.h, w.carol.id), w.carol);
}

#[test]
fn only_the_user_itself_or_an_org_admin_changes_someone_s_names() {
    let w = world();
    let people = w.h.services.people();
    let alice = w.alice.as_caller();
    // Alice administers `lib`, where Bob holds an entry: she may address him, not rename him.
    assert_eq!(
        people.update_user(&alice, w.lib, w.bob.id, names(Some("Bobby"), None)),
        Err(UpdateUserFailed::Refused(Refusal::NotSelf))
    );
    assert_eq!(stored(&w.h, w.bob.id), w.bob);
    let same = names(
        Some(w.bob.first_name.as_str()),
        Some(w.bob.last_name.as_str()),
    );
    for patch in [same, UserPatch::default()] {
        assert_eq!(
            people.update_user(&alice, w.lib, w.bob.id, patch),
            Ok(w.bob.clone())
        );
    }
    // A viewer may not even address someone else.
    assert_eq!(
        people.update_user(&w.bob.as_caller(), w.lib, w.alice.id, UserPatch::default()),
        Err(UpdateUserFailed::Refused(forbidden(Admin, View)))
    );
    assert_eq!(
        people.update_user(
            &w.h.token_caller(&w.alice, "read"),
            w.lib,
            w.bob.id,
            UserPatch::default()
        ),
        Err(UpdateUserFailed::Refused(Refusal::ReadOnly))
    );
    // An organization admin renames.
    let renamed = people
        .update_user(
            &w.olga.as_caller(),
            w.lib,
            w.bob.id,
            names(Some("Bobby"), None),
        )
        .unwrap();
    assert_eq!(renamed.first_name, name("Bobby"));
    assert_eq!(stored(&w.h, w.bob.id), renamed);
}

#[test]
fn a_user_is_updated_through_a_live_catalog_it_holds_an_entry_on() {
    let w = world();
    let people = w.h.services.people();
    let alice = w.alice.as_caller();
    let empty = UserPatch::default;
    assert_eq!(
        people.update_user(&alice, w.lib, w.carol.id, empty()),
        Err(UpdateUserFailed::UserNotFound)
    );
    assert_eq!(
        people.update_user(&alice, w.lib, unknown_user(), empty()),
        Err(UpdateUserFailed::UserNotFound)
    );
    assert_eq!(
        people.update_user(&alice, unknown_object(), w.bob.id, empty()),
        Err(UpdateUserFailed::CollectionNotFound)
    );
    assert_eq!(
        people.update_user(&alice, w.video, w.bob.id, empty()),
        Err(UpdateUserFailed::NotACollection)
    );
    let other_id = UserPatch {
        unique_id: Some(uid("someone")),
        ..empty()
    };
    assert_eq!(
        people.update_user(&alice, w.lib, w.bob.id, other_id),
        Err(UpdateUserFailed::UniqueIdFixed)
    );
    // Positive control: with an entry, Carol is found.
    w.h.grant(&w.alice, w.lib, &w.carol, NoLevel);
    assert_eq!(
        people.update_user(&alice, w.lib, w.carol.id, empty()),
        Ok(w.carol.clone())
    );
}

// ------------------------------------------------------------------ add_user

fn adding(unique_id: &str, first: Option<&str>, last: Option<&str>) -> AddUserInput {
    AddUserInput {
        unique_id: uid(unique_id),
        first_name: first.map(name),
        last_name: last.map(name),
    }
}

#[test]
fn adding_an_unknown_unique_id_provisions_it_with_its_names_and_view() {
    let w = world();
    let people = w.h.services.people();
    let alice = w.alice.as_caller();
    let newbie = people
        .add_user(&alice, w.lib, adding("newbie", Some("New"), Some("Bie")))
        .unwrap();
    assert_eq!(
        (newbie.first_name.as_str(), newbie.last_name.as_str()),
        ("New", "Bie")
    );
    assert_eq!(
        w.h.store.user_by_unique_id(&uid("newbie")).unwrap(),
        Some(newbie.clone())
    );
    assert_eq!(explicit(&w.h, w.lib, newbie.id), Some(View));
    // Without names, blank ones.
    let quiet = people
        .add_user(&alice, w.lib, adding("quiet", None, None))
        .unwrap();
    assert_eq!(quiet.first_name, PersonName::default());
    assert_eq!(explicit(&w.h, w.lib, quiet.id), Some(View));
    // An existing user is reused, names untouched when none are given.
    let carol = people
        .add_user(&alice, w.lib, adding("carol", None, None))
        .unwrap();
    assert_eq!(carol, w.carol);
    assert_eq!(explicit(&w.h, w.lib, w.carol.id), Some(View));
}

#[test]
fn adding_never_demotes_and_lifts_a_none_to_view() {
    let w = world();
    let people = w.h.services.people();
    let alice = w.alice.as_caller();
    let dave = w.h.user("dave", false);
    w.h.grant(&w.alice, w.lib, &dave, Admin);
    w.h.grant(&w.alice, w.lib, &w.carol, NoLevel);
    for (who, before, after) in [
        (&dave, Some(Admin), Some(Admin)),
        (&w.bob, Some(View), Some(View)),
        (&w.carol, Some(NoLevel), Some(View)),
        (&w.alice, Some(Admin), Some(Admin)),
    ] {
        assert_eq!(explicit(&w.h, w.lib, who.id), before);
        let added = people
            .add_user(&alice, w.lib, adding(who.unique_id.as_str(), None, None))
            .unwrap();
        assert_eq!(added.id, who.id);
        assert_eq!(explicit(&w.h, w.lib, who.id), after, "{}", who.unique_id);
    }
}

#[test]
fn adding_someone_under_other_names_is_refused_before_anything_is_written() {
    let w = world();
    let people = w.h.services.people();
    let alice = w.alice.as_caller();
    assert_eq!(
        people.add_user(&alice, w.lib, adding("carol", Some("Caroline"), None)),
        Err(AddUserFailed::Refused(Refusal::NotSelf))
    );
    assert_eq!(explicit(&w.h, w.lib, w.carol.id), None);
    assert_eq!(stored(&w.h, w.carol.id), w.carol);
    // The names she already has are no rename.
    let same = adding(
        "carol",
        Some(w.carol.first_name.as_str()),
        Some(w.carol.last_name.as_str()),
    );
    assert_eq!(people.add_user(&alice, w.lib, same), Ok(w.carol.clone()));
    assert_eq!(explicit(&w.h, w.lib, w.carol.id), Some(View));
    // Alice may rename herself; an organization admin may rename anyone.
    let me = people
        .add_user(&alice, w.lib, adding("alice", Some("Alicia"), None))
        .unwrap();
    assert_eq!(me.first_name, name("Alicia"));
    assert_eq!(explicit(&w.h, w.lib, w.alice.id), Some(Admin));
    let erin = w.h.user("erin", false);
    let renamed = people
        .add_user(
            &w.olga.as_caller(),
            w.lib,
            adding("erin", None, Some("Renamed")),
        )
        .unwrap();
    assert_eq!(
        (renamed.id, &renamed.last_name),
        (erin.id, &name("Renamed"))
    );
    assert_eq!(stored(&w.h, erin.id), renamed);
}

#[test]
fn adding_needs_admin_on_a_live_catalog_and_a_refusal_provisions_nobody() {
    let w = world();
    let people = w.h.services.people();
    let newbie = || adding("newbie", Some("N"), None);
    let sub = sub_of(&w, "sub");
    remove(&w, w.lib, sub);
    for (who, c, want) in [
        (
            w.bob.as_caller(),
            w.lib,
            AddUserFailed::Refused(forbidden(Admin, View)),
        ),
        (
            w.h.token_caller(&w.alice, "read"),
            w.lib,
            AddUserFailed::Refused(Refusal::ReadOnly),
        ),
        (
            w.alice.as_caller(),
            unknown_object(),
            AddUserFailed::CollectionNotFound,
        ),
        (w.alice.as_caller(), sub, AddUserFailed::CollectionNotFound),
        (w.alice.as_caller(), w.video, AddUserFailed::NotACollection),
    ] {
        assert_eq!(people.add_user(&who, c, newbie()), Err(want));
        assert_eq!(w.h.store.user_by_unique_id(&uid("newbie")).unwrap(), None);
    }
    // Positive control.
    people
        .add_user(&w.alice.as_caller(), w.lib, newbie())
        .unwrap();
    assert!(
        w.h.store
            .user_by_unique_id(&uid("newbie"))
            .unwrap()
            .is_some()
    );
}

// ------------------------------------------------------------------ permission calls

fn listed(entries: &[medialib_ports::PermissionEntry]) -> Vec<(&str, PermissionLevel)> {
    entries
        .iter()
        .map(|e| (e.user.unique_id.as_str(), e.level))
        .collect()
}

#[test]
fn an_admin_lists_the_entries_of_a_collection_all_or_one() {
    let w = world();
    let people = w.h.services.people();
    let aaron = w.h.user("aaron", false);
    w.h.grant(&w.alice, w.lib, &aaron, NoLevel);
    let list = |who: &Caller, only| people.list_permissions(who, w.lib, only);
    let alice = w.alice.as_caller();
    let all = list(&alice, None).unwrap();
    assert_eq!(
        listed(&all),
        [("aaron", NoLevel), ("alice", Admin), ("bob", View)]
    );
    assert_eq!(all[2].user, w.bob);
    assert_eq!(
        listed(&list(&alice, Some(w.bob.id)).unwrap()),
        [("bob", View)]
    );
    assert_eq!(list(&alice, Some(w.carol.id)), Ok(Vec::new()));
    assert_eq!(list(&alice, Some(unknown_user())), Ok(Vec::new()));
    // Reading entries needs admin, not a token that writes.
    for who in [w.olga.as_caller(), w.h.token_caller(&w.alice, "read")] {
        assert_eq!(list(&who, None).unwrap().len(), 3);
    }
    assert_eq!(
        list(&w.bob.as_caller(), None),
        Err(ListPermissionsFailed::Refused(forbidden(Admin, View)))
    );
    assert_eq!(
        list(&w.carol.as_caller(), Some(w.carol.id)),
        Err(ListPermissionsFailed::Refused(forbidden(Admin, NoLevel)))
    );
    assert_eq!(
        people.list_permissions(&alice, unknown_object(), None),
        Err(ListPermissionsFailed::CollectionNotFound)
    );
    assert_eq!(
        people.list_permissions(&alice, w.video, None),
        Err(ListPermissionsFailed::NotACollection)
    );
}

#[test]
fn granting_by_unique_id_provisions_after_the_caller_is_checked() {
    let w = world();
    let people = w.h.services.people();
    let alice = w.alice.as_caller();
    let grant = |who: &Caller, c, g, l| people.grant_permission(who, c, g, l);
    assert_eq!(
        grant(&alice, w.lib, Grantee::Id(w.carol.id), Admin),
        Ok(w.carol.id)
    );
    assert_eq!(explicit(&w.h, w.lib, w.carol.id), Some(Admin));
    assert_eq!(
        grant(&alice, w.lib, Grantee::UniqueId(uid("bob")), Admin),
        Ok(w.bob.id)
    );
    assert_eq!(explicit(&w.h, w.lib, w.bob.id), Some(Admin));
    // Refusals provision nobody.
    let newbie = || Grantee::UniqueId(uid("newbie"));
    let dave = w.h.user("dave", false);
    w.h.grant(&w.alice, w.lib, &dave, View);
    let sub = sub_of(&w, "sub");
    for (who, c, want) in [
        (
            dave.as_caller(),
            w.lib,
            GrantPermissionFailed::Refused(forbidden(Admin, View)),
        ),
        (
            w.h.token_caller(&w.alice, "read"),
            w.lib,
            GrantPermissionFailed::Refused(Refusal::ReadOnly),
        ),
        (
            alice,
            unknown_object(),
            GrantPermissionFailed::CollectionNotFound,
        ),
        (alice, w.video, GrantPermissionFailed::NotACollection),
    ] {
        assert_eq!(grant(&who, c, newbie(), View), Err(want));
        assert_eq!(w.h.store.user_by_unique_id(&uid("newbie")).unwrap(), None);
    }
    // An admin of `lib` grants on `sub` (inherited admin) and provisions there.
    let id = grant(&alice, sub, newbie(), View).unwrap();
    let provisioned = stored(&w.h, id);
    assert_eq!(provisioned.unique_id, uid("newbie"));
    assert_eq!(provisioned.first_name, PersonName::default());
    assert_eq!(explicit(&w.h, sub, id), Some(View));
    assert_eq!(
        grant(&alice, w.lib, Grantee::Id(unknown_user()), View),
        Err(GrantPermissionFailed::UserNotFound)
    );
}

#[test]
fn the_last_admin_of_a_collection_is_kept() {
    let w = world();
    let people = w.h.services.people();
    let alice = w.alice.as_caller();
    assert_eq!(
        people
            .grant_permission(&alice, w.lib, Grantee::Id(w.alice.id), View)
            .map(drop),
        Err(GrantPermissionFailed::LastAdmin(LastAdmin))
    );
    assert_eq!(
        people.revoke_permission(&alice, w.lib, Grantee::UniqueId(uid("alice"))),
        Err(RevokePermissionFailed::LastAdmin(LastAdmin))
    );
    assert_eq!(explicit(&w.h, w.lib, w.alice.id), Some(Admin));
    // With a second admin, she may go.
    people
        .grant_permission(&alice, w.lib, Grantee::Id(w.bob.id), Admin)
        .unwrap();
    people
        .revoke_permission(&alice, w.lib, Grantee::Id(w.alice.id))
        .unwrap();
    assert_eq!(explicit(&w.h, w.lib, w.alice.id), None);
}

#[test]
fn revoking_looks_users_up_and_never_provisions() {
    let w = world();
    let people = w.h.services.people();
    let alice = w.alice.as_caller();
    let revoke = |who: &Caller, g| people.revoke_permission(who, w.lib, g);
    assert_eq!(
        revoke(&alice, Grantee::UniqueId(uid("newbie"))),
        Err(RevokePermissionFailed::UserNotFound)
    );
    assert_eq!(w.h.store.user_by_unique_id(&uid("newbie")).unwrap(), None);
    assert_eq!(
        revoke(&alice, Grantee::Id(unknown_user())),
        Err(RevokePermissionFailed::UserNotFound)
    );
    assert_eq!(
        revoke(&alice, Grantee::Id(w.carol.id)),
        Err(RevokePermissionFailed::NoEntry)
    );
    assert_eq!(
        revoke(&w.bob.as_caller(), Grantee::Id(w.bob.id)),
        Err(RevokePermissionFailed::Refused(forbidden(Admin, View)))
    );
    assert_eq!(
        revoke(&w.h.token_caller(&w.alice, "read"), Grantee::Id(w.bob.id)),
        Err(RevokePermissionFailed::Refused(Refusal::ReadOnly))
    );
    assert_eq!(
        people.revoke_permission(&alice, unknown_object(), Grantee::Id(w.bob.id)),
        Err(RevokePermissionFailed::CollectionNotFound)
    );
    assert_eq!(explicit(&w.h, w.lib, w.bob.id), Some(View));
    // By uniqueId, then by id.
    revoke(&alice, Grantee::UniqueId(uid("bob"))).unwrap();
    assert_eq!(explicit(&w.h, w.lib, w.bob.id), None);
    w.h.grant(&w.alice, w.lib, &w.carol, View);
    revoke(&w.olga.as_caller(), Grantee::Id(w.carol.id)).unwrap();
    assert_eq!(explicit(&w.h, w.lib, w.carol.id), None);
    assert_eq!(w.h.level(&w.bob, w.video), NoLevel);
}

// ------------------------------------------------------------------ object_info

#[test]
fn the_info_record_needs_view_and_names_the_owner() {
    let w = world();
    let people = w.h.services.people();
    let public = w.h.create_in(
        &w.olga,
        w.lib,
        Harness::public_object(ObjectType::Audio, "song"),
    );
    let info = |who: &Caller, c, o| people.object_info(who, c, o);
    let video = w.h.store.object(w.video).unwrap().unwrap();
    for who in [
        w.bob.as_caller(),
        w.olga.as_caller(),
        w.h.token_caller(&w.bob, "read"),
    ] {
        assert_eq!(
            info(&who, w.lib, w.video),
            Ok(ObjectInfo {
                object: video.clone(),
                owner: Some(w.alice.clone())
            })
        );
    }
    assert_eq!(
        info(&w.bob.as_caller(), w.lib, public).unwrap().owner,
        Some(w.olga.clone())
    );
    assert_eq!(
        info(&w.bob.as_caller(), w.lib, w.lib).unwrap().owner,
        Some(w.alice.clone())
    );
    // The limited record of a public object is not enough.
    for object in [public, w.video] {
        assert_eq!(
            info(&w.carol.as_caller(), w.lib, object),
            Err(InfoFailed::Forbidden)
        );
    }
    let other = w.h.library(&w.alice, "other");
    for (c, o) in [
        (other, w.video),
        (unknown_object(), w.video),
        (w.lib, unknown_object()),
    ] {
        assert_eq!(info(&w.alice.as_caller(), c, o), Err(InfoFailed::NotFound));
    }
    remove(&w, w.lib, w.video);
    assert_eq!(
        info(&w.alice.as_caller(), w.lib, w.video),
        Err(InfoFailed::NotFound)
    );
}

// ------------------------------------------------------------------ contribute_libraries

fn contribute(
    w: &World,
    who: &Caller,
    object: ObjectId,
) -> Result<Vec<(String, bool)>, ContributeFailed> {
    w.h.services
        .people()
        .contribute_libraries(who, object)
        .map(|libs| {
            libs.into_iter()
                .map(|l| (l.library.fields().title.as_str().to_owned(), l.member))
                .collect()
        })
}

fn titled(entries: &[(&str, bool)]) -> Vec<(String, bool)> {
    entries.iter().map(|(t, m)| ((*t).to_owned(), *m)).collect()
}

#[test]
fn contribute_lists_the_libraries_the_caller_administers_by_title() {
    let w = world();
    let zeta = w.h.library(&w.alice, "Zeta");
    w.h.library(&w.alice, "Beta");
    // Where Alice only views, or is blocked, or only inherits admin: not listed.
    let carols = w.h.library(&w.carol, "Carol's view");
    w.h.grant(&w.carol, carols, &w.alice, View);
    let blocked = w.h.library(&w.carol, "Carol's none");
    w.h.grant(&w.carol, blocked, &w.alice, NoLevel);
    sub_of(&w, "Inherited");
    let explicit_sub = sub_of(&w, "Sub with entry");
    w.h.grant(&w.alice, explicit_sub, &w.alice, Admin);
    w.h.services
        .media()
        .add_member(&w.alice.as_caller(), zeta, w.video)
        .unwrap();
    let expected = titled(&[
        ("Alice's library", true),
        ("Beta", false),
        ("Sub with entry", false),
        ("Zeta", true),
    ]);
    assert_eq!(
        contribute(&w, &w.alice.as_caller(), w.video),
        Ok(expected.clone())
    );
    // Listing is no write: a read-only token gets the same.
    assert_eq!(
        contribute(&w, &w.h.token_caller(&w.alice, "read"), w.video),
        Ok(expected)
    );
    // Bob views the video but administers nothing.
    assert_eq!(contribute(&w, &w.bob.as_caller(), w.video), Ok(Vec::new()));
    let bobs = w.h.library(&w.bob, "Bob's");
    assert_eq!(
        contribute(&w, &w.bob.as_caller(), w.video),
        Ok(titled(&[("Bob's", false)]))
    );
    assert!(w.h.store.object(bobs).unwrap().is_some());
}

#[test]
fn libraries_of_one_title_are_ordered_by_id() {
    let w = world();
    let one = w.h.library(&w.alice, "Twin");
    let two = w.h.library(&w.alice, "Twin");
    let libs =
        w.h.services
            .people()
            .contribute_libraries(&w.alice.as_caller(), w.video)
            .unwrap();
    let twins: Vec<ObjectId> = libs
        .iter()
        .filter(|l| l.library.fields().title.as_str() == "Twin")
        .map(|l| l.library.id())
        .collect();
    assert_eq!(twins, [one.min(two), one.max(two)]);
    // Code points: an upper-case title sorts before a lower-case one.
    w.h.library(&w.alice, "alpha");
    let titles: Vec<String> = contribute(&w, &w.alice.as_caller(), w.video)
        .unwrap()
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert_eq!(titles, ["Alice's library", "Twin", "Twin", "alpha"]);
}

#[test]
fn an_org_admin_may_contribute_to_every_live_library() {
    let w = world();
    let carols = w.h.library(&w.carol, "Carol's");
    let sub = sub_of(&w, "Sub");
    let gone = sub_of(&w, "Gone");
    remove(&w, w.lib, gone);
    let listed: Vec<ObjectId> =
        w.h.services
            .people()
            .contribute_libraries(&w.olga.as_caller(), w.video)
            .unwrap()
            .into_iter()
            .map(|l| l.library.id())
            .collect();
    assert_eq!(listed, [w.lib, carols, sub]);
}

#[test]
fn contribute_for_what_the_caller_cannot_see_is_not_found() {
    let w = world();
    let carols = w.h.library(&w.carol, "Carol's");
    let carol = w.carol.as_caller();
    assert_eq!(
        contribute(&w, &carol, w.video),
        Err(ContributeFailed::NotFound)
    );
    assert_eq!(
        contribute(&w, &carol, unknown_object()),
        Err(ContributeFailed::NotFound)
    );
    // A public object's existence is no secret.
    let publish = ObjectPatch {
        public: Some(true),
        ..ObjectPatch::default()
    };
    w.h.services
        .media()
        .update_object(&w.alice.as_caller(), w.lib, w.video, publish)
        .unwrap();
    assert_eq!(
        contribute(&w, &carol, w.video),
        Ok(titled(&[("Carol's", false)]))
    );
    assert!(w.h.store.object(carols).unwrap().is_some());
    // A deleted object is not found, even by its admin.
    remove(&w, w.lib, w.video);
    assert_eq!(
        contribute(&w, &w.alice.as_caller(), w.video),
        Err(ContributeFailed::NotFound)
    );
    assert_eq!(
        contribute(&w, &w.olga.as_caller(), w.video),
        Err(ContributeFailed::NotFound)
    );
}
