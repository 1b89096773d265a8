//! The media use cases on the in-memory store: creating, describing and updating objects,
//! linking and unlinking members (soft delete and restore), permission entries, and the
//! gate's levels as `effective_level` and `permits` report them. No database:
//! `cargo test -p medialib-ports`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use medialib_adapters_memory::testing::{Harness, REDIRECT, World, forbidden, world};
use medialib_domain::oauth::AccessTokenInvalid;
use medialib_domain::{
    Action, AfterRemoval, Caller, DescribeRefused, DescribeView, Forbidden, Lifecycle,
    MembershipError, ObjectId, ObjectPatch, ObjectType, OrgNamespace, PermissionLevel, Properties,
    Refusal, Subject, Title, UpdateError, User,
};
use medialib_ports::repos::{RestoreObjectError, RestoredObject};
use medialib_ports::services::people::Grantee;
use medialib_ports::services::{
    AddMemberFailed, BearerError, CreateObjectFailed, DescribeFailed, DescribeWithTokenFailed,
    MembershipChangeFailed, Placement, UpdateObjectFailed,
};
use medialib_ports::{AddOutcome, Members};

use PermissionLevel::{Admin, None as NoLevel, View};

/// The refusal of a link whose caller has `actual` on what it links.
fn linked(actual: PermissionLevel) -> Refusal {
    Refusal::Forbidden(Forbidden {
        subject: Subject::Linked,
        required: Admin,
        actual,
    })
}

/// The live members of `collection`, as the store holds them.
fn members(h: &Harness, collection: ObjectId) -> Vec<ObjectId> {
    h.store
        .list_members(Members::all(collection))
        .unwrap()
        .into_iter()
        .map(|i| i.object.id())
        .collect()
}

fn live_catalogs(h: &Harness) -> usize {
    h.store.all_catalogs().unwrap().len()
}

fn title(t: &str) -> ObjectPatch {
    ObjectPatch {
        title: Some(Title::parse(t).unwrap()),
        ..ObjectPatch::default()
    }
}

/// An object id no object has.
fn unknown_object() -> ObjectId {
    ObjectId::generate(&OrgNamespace::from_random([9; 16]), [9; 16])
}

fn remove(w: &World, collection: ObjectId, member: ObjectId) -> AfterRemoval {
    w.h.services
        .media()
        .remove_member(&w.alice.as_caller(), collection, member)
        .unwrap()
}

// ------------------------------------------------------------------ create_object

#[test]
fn a_new_library_is_a_catalog_its_creator_administers() {
    let w = world();
    let media = w.h.services.media();
    let before = live_catalogs(&w.h);
    w.h.advance(5);
    // Carol holds no entry anywhere: any authenticated user may create a library.
    let made = media
        .create_object(
            &w.carol.as_caller(),
            Placement::TopLevel,
            Harness::new_object(ObjectType::Catalog, "Carol's"),
        )
        .unwrap();
    assert_eq!(made.object_type(), ObjectType::Catalog);
    assert_eq!(made.owner(), w.carol.id);
    assert_eq!((made.created(), made.modified()), (w.h.now(), w.h.now()));
    assert_eq!(made.lifecycle(), Lifecycle::Live);
    assert_eq!(w.h.store.object(made.id()).unwrap(), Some(made.clone()));
    assert_eq!(live_catalogs(&w.h), before + 1);
    let entries =
        w.h.services
            .people()
            .list_permissions(&w.carol.as_caller(), made.id(), None)
            .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!((&entries[0].user, entries[0].level), (&w.carol, Admin));
    assert_eq!(w.h.level(&w.alice, made.id()), NoLevel);
    // Every create mints a new id and permLink.
    let again = media
        .create_object(
            &w.carol.as_caller(),
            Placement::TopLevel,
            Harness::new_object(ObjectType::Catalog, "Carol's"),
        )
        .unwrap();
    assert_ne!(again.id(), made.id());
    assert_ne!(again.shortcode(), made.shortcode());
}

#[test]
fn a_library_must_be_a_catalog_and_needs_a_token_that_writes() {
    let w = world();
    let media = w.h.services.media();
    let before = live_catalogs(&w.h);
    for t in [
        ObjectType::Video,
        ObjectType::Audio,
        ObjectType::Image,
        ObjectType::File,
    ] {
        let r = media.create_object(
            &w.alice.as_caller(),
            Placement::TopLevel,
            Harness::new_object(t, "not a library"),
        );
        assert_eq!(r, Err(CreateObjectFailed::LibraryMustBeCatalog), "{t}");
    }
    let read_only = w.h.token_caller(&w.alice, "read");
    let r = media.create_object(
        &read_only,
        Placement::TopLevel,
        Harness::new_object(ObjectType::Catalog, "lib"),
    );
    assert_eq!(r, Err(CreateObjectFailed::Refused(Refusal::ReadOnly)));
    // Even an organization admin's read-only token.
    let r = media.create_object(
        &w.h.token_caller(&w.olga, "read"),
        Placement::TopLevel,
        Harness::new_object(ObjectType::Catalog, "lib"),
    );
    assert_eq!(r, Err(CreateObjectFailed::Refused(Refusal::ReadOnly)));
    assert_eq!(live_catalogs(&w.h), before);
    // Positive control: a token with `write` creates.
    let writer = w.h.token_caller(&w.alice, "read write");
    media
        .create_object(
            &writer,
            Placement::TopLevel,
            Harness::new_object(ObjectType::Catalog, "lib"),
        )
        .unwrap();
    assert_eq!(live_catalogs(&w.h), before + 1);
}

#[test]
fn creating_in_a_collection_needs_admin_on_it() {
    let w = world();
    let media = w.h.services.media();
    let new = || Harness::new_object(ObjectType::Audio, "song");
    let into = Placement::In(w.lib);
    assert_eq!(
        media.create_object(&w.bob.as_caller(), into, new()),
        Err(CreateObjectFailed::Refused(forbidden(Admin, View)))
    );
    assert_eq!(
        media.create_object(&w.carol.as_caller(), into, new()),
        Err(CreateObjectFailed::Refused(forbidden(Admin, NoLevel)))
    );
    assert_eq!(
        media.create_object(&w.h.token_caller(&w.alice, "read"), into, new()),
        Err(CreateObjectFailed::Refused(Refusal::ReadOnly))
    );
    assert_eq!(members(&w.h, w.lib), [w.video]);
    // The admin and an organization admin create; the member joins when it is created.
    w.h.advance(3);
    let song = media
        .create_object(&w.alice.as_caller(), into, new())
        .unwrap();
    let by_olga = media
        .create_object(&w.olga.as_caller(), into, new())
        .unwrap();
    assert_eq!(by_olga.owner(), w.olga.id);
    let listed = w.h.store.list_members(Members::all(w.lib)).unwrap();
    let item = listed.iter().find(|i| i.object.id() == song.id()).unwrap();
    assert_eq!(item.added_at, song.created());
    assert_eq!(item.object, song);
    assert_eq!(listed.len(), 3);
}

#[test]
fn creating_in_what_is_not_a_live_catalog_fails() {
    let w = world();
    let media = w.h.services.media();
    let new = || Harness::new_object(ObjectType::Image, "pic");
    let alice = w.alice.as_caller();
    assert_eq!(
        media.create_object(&alice, Placement::In(unknown_object()), new()),
        Err(CreateObjectFailed::CollectionNotFound)
    );
    assert_eq!(
        media.create_object(&alice, Placement::In(w.video), new()),
        Err(CreateObjectFailed::NotACollection)
    );
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    // Positive control: the live sub-library takes new members.
    media
        .create_object(&alice, Placement::In(sub), new())
        .unwrap();
    assert_eq!(remove(&w, w.lib, sub), AfterRemoval::SoftDelete);
    assert_eq!(
        media.create_object(&alice, Placement::In(sub), new()),
        Err(CreateObjectFailed::CollectionNotFound)
    );
    assert_eq!(members(&w.h, w.video), []);
}

#[test]
fn admin_is_inherited_into_sub_libraries_unless_an_explicit_none_blocks_it() {
    let w = world();
    let media = w.h.services.media();
    let dave = w.h.user("dave", false);
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    let new = || Harness::new_object(ObjectType::File, "doc");
    // No entry: nothing to inherit.
    assert_eq!(
        media.create_object(&dave.as_caller(), Placement::In(sub), new()),
        Err(CreateObjectFailed::Refused(forbidden(Admin, NoLevel)))
    );
    w.h.grant(&w.alice, w.lib, &dave, Admin);
    media
        .create_object(&dave.as_caller(), Placement::In(sub), new())
        .unwrap();
    w.h.grant(&w.alice, sub, &dave, NoLevel);
    assert_eq!(
        media.create_object(&dave.as_caller(), Placement::In(sub), new()),
        Err(CreateObjectFailed::Refused(forbidden(Admin, NoLevel)))
    );
    // The block is on `sub` only: `lib` still takes Dave's objects.
    media
        .create_object(&dave.as_caller(), Placement::In(w.lib), new())
        .unwrap();
    // An organization admin passes the block too.
    media
        .create_object(&w.olga.as_caller(), Placement::In(sub), new())
        .unwrap();
}

// ------------------------------------------------------------------ describe

#[test]
fn describe_picks_the_record_by_the_level_on_the_collection() {
    let w = world();
    let media = w.h.services.media();
    let public = w.h.create_in(
        &w.alice,
        w.lib,
        Harness::public_object(ObjectType::Video, "trailer"),
    );
    let describe = |who: Option<&User>, object| {
        let caller = who.map(User::as_caller);
        media
            .describe(caller.as_ref(), w.lib, object)
            .map(|(o, view)| (o.id(), view))
    };
    for who in [&w.alice, &w.bob, &w.olga] {
        assert_eq!(
            describe(Some(who), w.video),
            Ok((w.video, DescribeView::Full))
        );
        assert_eq!(
            describe(Some(who), public),
            Ok((public, DescribeView::Full))
        );
    }
    // Without `view`: the limited record of a public object, else refused.
    assert_eq!(
        describe(Some(&w.carol), public),
        Ok((public, DescribeView::Limited))
    );
    assert_eq!(
        describe(Some(&w.carol), w.video),
        Err(DescribeFailed::Refused(DescribeRefused::Forbidden))
    );
    assert_eq!(describe(None, public), Ok((public, DescribeView::Limited)));
    assert_eq!(
        describe(None, w.video),
        Err(DescribeFailed::Refused(
            DescribeRefused::AuthenticationRequired
        ))
    );
    // A read-only token reads everything its user may read.
    let read_only = w.h.token_caller(&w.bob, "read");
    assert_eq!(
        media.describe(Some(&read_only), w.lib, w.video).unwrap().1,
        DescribeView::Full
    );
    // The record is the stored object.
    let (object, _) = media
        .describe(Some(&w.bob.as_caller()), w.lib, w.video)
        .unwrap();
    assert_eq!(Some(object), w.h.store.object(w.video).unwrap());
}

#[test]
fn describe_reaches_only_live_objects_through_a_live_collection_holding_them() {
    let w = world();
    let media = w.h.services.media();
    let bob = w.bob.as_caller();
    // A collection reads through itself.
    assert_eq!(
        media.describe(Some(&bob), w.lib, w.lib).unwrap().1,
        DescribeView::Full
    );
    // An object of another library, even public, is not found through `lib`, even by an
    // organization admin, and anonymously not found rather than 401.
    let other = w.h.library(&w.carol, "Carol's");
    let elsewhere = w.h.create_in(
        &w.carol,
        other,
        Harness::public_object(ObjectType::Video, "theirs"),
    );
    for caller in [Some(&bob), Some(&w.olga.as_caller()), None] {
        assert_eq!(
            media.describe(caller, w.lib, elsewhere).map(drop),
            Err(DescribeFailed::NotFound)
        );
        assert_eq!(
            media.describe(caller, unknown_object(), w.video).map(drop),
            Err(DescribeFailed::NotFound)
        );
        assert_eq!(
            media.describe(caller, w.lib, unknown_object()).map(drop),
            Err(DescribeFailed::NotFound)
        );
    }
    // Positive control: it is found through its own library.
    assert!(media.describe(None, other, elsewhere).is_ok());
    // A soft-deleted object is not found, and neither is anything through a deleted
    // sub-library.
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    let inner = w.h.object_in(&w.alice, sub, ObjectType::Video, "inner");
    assert!(media.describe(Some(&bob), sub, inner).is_ok());
    assert_eq!(remove(&w, w.lib, w.video), AfterRemoval::SoftDelete);
    assert_eq!(remove(&w, w.lib, sub), AfterRemoval::SoftDelete);
    let alice = w.alice.as_caller();
    for (c, o) in [(w.lib, w.video), (sub, inner), (sub, sub), (w.lib, sub)] {
        assert_eq!(
            media.describe(Some(&alice), c, o).map(drop),
            Err(DescribeFailed::NotFound)
        );
    }
}

#[test]
fn an_explicit_none_blocks_the_view_a_collection_would_inherit() {
    let w = world();
    let media = w.h.services.media();
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    let clip = w.h.object_in(&w.alice, sub, ObjectType::Video, "clip");
    let poster = w.h.create_in(
        &w.alice,
        sub,
        Harness::public_object(ObjectType::Image, "poster"),
    );
    let bob = w.bob.as_caller();
    let view = |o| media.describe(Some(&bob), sub, o).map(|(_, v)| v);
    assert_eq!(view(clip), Ok(DescribeView::Full));
    w.h.grant(&w.alice, sub, &w.bob, NoLevel);
    assert_eq!(
        view(clip),
        Err(DescribeFailed::Refused(DescribeRefused::Forbidden))
    );
    assert_eq!(view(poster), Ok(DescribeView::Limited));
    // The block is on `sub`: `sub` itself is still read through `lib` in full.
    assert_eq!(
        media.describe(Some(&bob), w.lib, sub).unwrap().1,
        DescribeView::Full
    );
    // Removing the entry gives the inherited level back.
    w.h.services
        .people()
        .revoke_permission(&w.alice.as_caller(), sub, Grantee::Id(w.bob.id))
        .unwrap();
    assert_eq!(view(clip), Ok(DescribeView::Full));
}

// ------------------------------------------------------------------ describe_with_token

#[test]
fn describe_with_a_token_decides_for_its_holder() {
    let w = world();
    let media = w.h.services.media();
    let public = w.h.create_in(
        &w.alice,
        w.lib,
        Harness::public_object(ObjectType::Audio, "song"),
    );
    let creds = w.h.client();
    let bob = w.h.tokens(&creds, &w.bob, false);
    let carol = w.h.tokens(&creds, &w.carol, false);
    let with = |token: Option<&str>, object| {
        media
            .describe_with_token(token, w.lib, object)
            .map(|d| (d.object.id(), d.view))
    };
    let bob_token = Some(bob.access_token.expose());
    let carol_token = Some(carol.access_token.expose());
    assert_eq!(with(bob_token, w.video), Ok((w.video, DescribeView::Full)));
    assert_eq!(
        with(carol_token, public),
        Ok((public, DescribeView::Limited))
    );
    assert_eq!(
        with(carol_token, w.video),
        Err(DescribeWithTokenFailed::Describe(DescribeFailed::Refused(
            DescribeRefused::Forbidden
        )))
    );
    // No token: anonymous.
    assert_eq!(with(None, public), Ok((public, DescribeView::Limited)));
    assert_eq!(
        with(None, w.video),
        Err(DescribeWithTokenFailed::Describe(DescribeFailed::Refused(
            DescribeRefused::AuthenticationRequired
        )))
    );
    assert_eq!(
        with(bob_token, unknown_object()),
        Err(DescribeWithTokenFailed::Describe(DescribeFailed::NotFound))
    );
    // A read-only token reads.
    let read = w.h.code_with_scope(&creds, &w.bob, false, Some("read"));
    let read =
        w.h.services
            .oauth()
            .exchange_code(&creds, &read, Some(REDIRECT), None)
            .unwrap();
    assert_eq!(
        with(Some(read.access_token.expose()), w.video),
        Ok((w.video, DescribeView::Full))
    );
}

#[test]
fn a_token_that_does_not_authenticate_fails_whatever_the_object() {
    let w = world();
    let media = w.h.services.media();
    let public = w.h.create_in(
        &w.alice,
        w.lib,
        Harness::public_object(ObjectType::Audio, "song"),
    );
    let creds = w.h.client();
    let t = w.h.tokens(&creds, &w.bob, false);
    let token = t.access_token.expose();
    let bearer = |token: &str, object| {
        media
            .describe_with_token(Some(token), w.lib, object)
            .map(drop)
    };
    // Malformed, or well-formed and unknown: refused before the object is looked at.
    let mut forged = token.to_owned();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    for bad in ["junk", "", forged.as_str()] {
        for object in [public, w.video, unknown_object()] {
            assert_eq!(
                bearer(bad, object),
                Err(DescribeWithTokenFailed::Bearer(BearerError::Unknown)),
                "{bad:?}"
            );
        }
    }
    // Positive control: the token itself authenticates, until it expires.
    assert_eq!(bearer(token, public), Ok(()));
    w.h.advance(3599);
    assert_eq!(bearer(token, w.video), Ok(()));
    w.h.advance(1);
    for object in [public, unknown_object()] {
        assert_eq!(
            bearer(token, object),
            Err(DescribeWithTokenFailed::Bearer(BearerError::Invalid(
                AccessTokenInvalid::Expired
            )))
        );
    }
    // A revoked one fails as revoked.
    let t = w.h.tokens(&creds, &w.bob, false);
    let token = t.access_token.expose();
    assert_eq!(bearer(token, public), Ok(()));
    w.h.services.oauth().revoke(&creds, token).unwrap();
    assert_eq!(
        bearer(token, public),
        Err(DescribeWithTokenFailed::Bearer(BearerError::Invalid(
            AccessTokenInvalid::Revoked
        )))
    );
}

// ------------------------------------------------------------------ update_object

#[test]
fn an_update_changes_the_named_fields_only() {
    let w = world();
    let media = w.h.services.media();
    let before = w.h.store.object(w.video).unwrap().unwrap();
    w.h.advance(10);
    let patch = ObjectPatch {
        object_type: Some(ObjectType::Video),
        title: Some(Title::parse("renamed").unwrap()),
        public: Some(true),
        properties: Some(Properties::parse([("a", "1")]).unwrap()),
        ..ObjectPatch::default()
    };
    let after = media
        .update_object(&w.alice.as_caller(), w.lib, w.video, patch)
        .unwrap();
    assert_eq!(after.fields().title.as_str(), "renamed");
    assert!(after.is_public());
    assert_eq!(after.fields().description, before.fields().description);
    assert_eq!(after.created(), before.created());
    assert_eq!(after.modified(), w.h.now());
    assert_eq!(after.shortcode(), before.shortcode());
    assert_eq!(w.h.store.object(w.video).unwrap(), Some(after.clone()));
    // Properties merge over the stored ones; an organization admin may update too.
    w.h.advance(1);
    let props = ObjectPatch {
        properties: Some(Properties::parse([("b", "2")]).unwrap()),
        ..ObjectPatch::default()
    };
    let merged = media
        .update_object(&w.olga.as_caller(), w.lib, w.video, props)
        .unwrap();
    let pairs: Vec<_> = merged.fields().properties.iter().collect();
    assert_eq!(pairs, [("a", "1"), ("b", "2")]);
    assert!(merged.is_public(), "an unnamed field keeps its value");
    // A collection is updated through itself.
    let lib = media
        .update_object(&w.alice.as_caller(), w.lib, w.lib, title("Library"))
        .unwrap();
    assert_eq!(lib.fields().title.as_str(), "Library");
}

#[test]
fn refused_updates_change_nothing() {
    let w = world();
    let media = w.h.services.media();
    let before = w.h.store.object(w.video).unwrap();
    w.h.advance(10);
    let update = |caller: &Caller, patch| media.update_object(caller, w.lib, w.video, patch);
    assert_eq!(
        update(&w.bob.as_caller(), title("x")),
        Err(UpdateObjectFailed::Refused(forbidden(Admin, View)))
    );
    assert_eq!(
        update(&w.carol.as_caller(), title("x")),
        Err(UpdateObjectFailed::Refused(forbidden(Admin, NoLevel)))
    );
    assert_eq!(
        update(&w.h.token_caller(&w.alice, "read"), title("x")),
        Err(UpdateObjectFailed::Refused(Refusal::ReadOnly))
    );
    let retype = ObjectPatch {
        object_type: Some(ObjectType::Audio),
        ..title("x")
    };
    assert_eq!(
        update(&w.alice.as_caller(), retype),
        Err(UpdateObjectFailed::Rule(UpdateError::TypeChange {
            stored: ObjectType::Video,
            requested: ObjectType::Audio
        }))
    );
    // 64 keys are allowed; merged with one more they are too many.
    let keys: Vec<(String, String)> = (0..64).map(|i| (format!("k{i}"), "v".into())).collect();
    let full = ObjectPatch {
        properties: Some(Properties::parse(keys).unwrap()),
        ..ObjectPatch::default()
    };
    let full = update(&w.alice.as_caller(), full).unwrap();
    let one_more = ObjectPatch {
        properties: Some(Properties::parse([("extra", "v")]).unwrap()),
        ..title("x")
    };
    assert!(matches!(
        update(&w.alice.as_caller(), one_more),
        Err(UpdateObjectFailed::Rule(UpdateError::Properties(_)))
    ));
    assert_eq!(w.h.store.object(w.video).unwrap(), Some(full.clone()));
    assert_ne!(
        Some(full),
        before,
        "the positive control changed the object"
    );
}

#[test]
fn an_update_finds_only_live_objects_reached_through_a_live_collection() {
    let w = world();
    let media = w.h.services.media();
    let alice = w.alice.as_caller();
    let other = w.h.library(&w.alice, "Alice's other");
    let there = w.h.object_in(&w.alice, other, ObjectType::Audio, "there");
    // Alice administers both, but `there` is not in `lib`.
    assert_eq!(
        media.update_object(&alice, w.lib, there, title("x")),
        Err(UpdateObjectFailed::NotFound)
    );
    assert_eq!(
        media.update_object(&alice, unknown_object(), w.video, title("x")),
        Err(UpdateObjectFailed::NotFound)
    );
    assert_eq!(
        media.update_object(&alice, w.lib, unknown_object(), title("x")),
        Err(UpdateObjectFailed::NotFound)
    );
    // Positive control: through its own library it updates.
    media
        .update_object(&alice, other, there, title("x"))
        .unwrap();
    remove(&w, w.lib, w.video);
    assert_eq!(
        media.update_object(&alice, w.lib, w.video, title("x")),
        Err(UpdateObjectFailed::NotFound)
    );
    assert_eq!(
        w.h.store
            .object_any_state(w.video)
            .unwrap()
            .unwrap()
            .fields()
            .title
            .as_str(),
        "clip"
    );
}

// ------------------------------------------------------------------ add_member

#[test]
fn linking_needs_admin_on_the_collection_and_on_what_is_linked() {
    let w = world();
    let media = w.h.services.media();
    let alices = w.h.library(&w.alice, "Alice's second");
    let bobs = w.h.library(&w.bob, "Bob's");
    let link = |who: &User, c, m| media.add_member(&who.as_caller(), c, m);
    // Bob views `lib` and administers his own library: he may not re-share what he only
    // views, nor gain a level on `lib` by placing it under his library.
    assert_eq!(
        link(&w.bob, bobs, w.video),
        Err(AddMemberFailed::Refused(linked(View)))
    );
    assert_eq!(
        link(&w.bob, bobs, w.lib),
        Err(AddMemberFailed::Refused(linked(View)))
    );
    assert_eq!(w.h.level(&w.bob, w.lib), View);
    assert_eq!(members(&w.h, bobs), []);
    // Into a collection he only views: refused on the collection first.
    assert_eq!(
        link(&w.bob, w.lib, bobs),
        Err(AddMemberFailed::Refused(forbidden(Admin, View)))
    );
    // What the caller cannot see is refused exactly as what does not exist.
    let carols = w.h.library(&w.carol, "Carol's");
    assert_eq!(
        link(&w.carol, carols, w.video),
        Err(AddMemberFailed::Refused(Refusal::Hidden))
    );
    assert_eq!(
        link(&w.carol, carols, unknown_object()),
        Err(AddMemberFailed::Refused(Refusal::Hidden))
    );
    assert_eq!(
        media.add_member(&w.h.token_caller(&w.alice, "read"), alices, w.video),
        Err(AddMemberFailed::Refused(Refusal::ReadOnly))
    );
    // The admin of both sides links; again is idempotent.
    w.h.advance(7);
    assert_eq!(link(&w.alice, alices, w.video), Ok(AddOutcome::Added));
    assert_eq!(
        link(&w.alice, alices, w.video),
        Ok(AddOutcome::AlreadyMember)
    );
    let listed = w.h.store.list_members(Members::all(alices)).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].object.id(), listed[0].added_at),
        (w.video, w.h.now())
    );
    // Made admin of `lib`, Bob may link it.
    w.h.grant(&w.alice, w.lib, &w.bob, Admin);
    assert_eq!(link(&w.bob, bobs, w.lib), Ok(AddOutcome::Added));
    // An organization admin passes both checks; an unknown member is then not found.
    assert_eq!(link(&w.olga, carols, w.video), Ok(AddOutcome::Added));
    assert_eq!(
        link(&w.olga, carols, unknown_object()),
        Err(AddMemberFailed::MemberNotFound)
    );
}

#[test]
fn a_linked_object_is_read_through_its_new_collection() {
    let w = world();
    let media = w.h.services.media();
    let dave = w.h.user("dave", false);
    let second = w.h.library(&w.alice, "second");
    w.h.grant(&w.alice, second, &dave, View);
    let read = || {
        media
            .describe(Some(&dave.as_caller()), second, w.video)
            .map(|(_, v)| v)
    };
    assert_eq!(read(), Err(DescribeFailed::NotFound));
    assert_eq!(w.h.level(&dave, w.video), NoLevel);
    media
        .add_member(&w.alice.as_caller(), second, w.video)
        .unwrap();
    assert_eq!(read(), Ok(DescribeView::Full));
    assert_eq!(w.h.level(&dave, w.video), View);
    // Not through `lib`, where Dave holds nothing.
    assert_eq!(
        media
            .describe(Some(&dave.as_caller()), w.lib, w.video)
            .map(drop),
        Err(DescribeFailed::Refused(DescribeRefused::Forbidden))
    );
}

#[test]
fn linking_into_a_missing_or_non_collection_or_making_a_cycle_fails() {
    let w = world();
    let media = w.h.services.media();
    let alice = w.alice.as_caller();
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    let subsub = w.h.object_in(&w.alice, sub, ObjectType::Catalog, "subsub");
    let song = w.h.object_in(&w.alice, w.lib, ObjectType::Audio, "song");
    assert_eq!(
        media.add_member(&alice, unknown_object(), song),
        Err(AddMemberFailed::CollectionNotFound)
    );
    assert_eq!(
        media.add_member(&alice, w.video, song),
        Err(AddMemberFailed::Rule(MembershipError::NotACollection))
    );
    for (c, m) in [(sub, w.lib), (subsub, w.lib), (w.lib, w.lib), (subsub, sub)] {
        assert_eq!(
            media.add_member(&alice, c, m),
            Err(AddMemberFailed::Rule(MembershipError::Cycle))
        );
    }
    assert_eq!(members(&w.h, subsub), []);
    // Positive control: downwards is fine.
    assert_eq!(
        media.add_member(&alice, subsub, song),
        Ok(AddOutcome::Added)
    );
    remove(&w, w.lib, sub);
    assert_eq!(
        media.add_member(&alice, sub, w.video),
        Err(AddMemberFailed::CollectionNotFound)
    );
}

// ------------------------------------------------------------------ remove_member

#[test]
fn removing_the_last_membership_soft_deletes_the_object() {
    let w = world();
    let media = w.h.services.media();
    let second = w.h.library(&w.alice, "second");
    media
        .add_member(&w.alice.as_caller(), second, w.video)
        .unwrap();
    w.h.advance(5);
    assert_eq!(remove(&w, second, w.video), AfterRemoval::StillListed);
    let still = w.h.store.object(w.video).unwrap().unwrap();
    assert_eq!(still.lifecycle(), Lifecycle::Live);
    assert!(
        media
            .describe(Some(&w.bob.as_caller()), w.lib, w.video)
            .is_ok()
    );
    assert_eq!(members(&w.h, second), []);
    w.h.advance(5);
    assert_eq!(remove(&w, w.lib, w.video), AfterRemoval::SoftDelete);
    let gone = w.h.store.object_any_state(w.video).unwrap().unwrap();
    assert_eq!(gone.lifecycle(), Lifecycle::SoftDeleted { at: w.h.now() });
    assert_eq!(gone.modified(), w.h.now());
    assert_eq!(w.h.store.object(w.video).unwrap(), None);
    assert_eq!(
        media.follow_perm_link(gone.shortcode()).map(drop),
        Err(medialib_ports::services::catalog::PermLinkFailed::NotFound)
    );
    // Removing it again: it is no longer a member.
    assert_eq!(
        media.remove_member(&w.alice.as_caller(), w.lib, w.video),
        Err(MembershipChangeFailed::NotFound)
    );
}

#[test]
fn removing_needs_admin_on_the_collection_and_an_existing_membership() {
    let w = world();
    let media = w.h.services.media();
    let remove_as = |caller: &Caller, c, m| media.remove_member(caller, c, m);
    assert_eq!(
        remove_as(&w.bob.as_caller(), w.lib, w.video),
        Err(MembershipChangeFailed::Refused(forbidden(Admin, View)))
    );
    assert_eq!(
        remove_as(&w.carol.as_caller(), w.lib, w.video),
        Err(MembershipChangeFailed::Refused(forbidden(Admin, NoLevel)))
    );
    assert_eq!(
        remove_as(&w.h.token_caller(&w.alice, "read"), w.lib, w.video),
        Err(MembershipChangeFailed::Refused(Refusal::ReadOnly))
    );
    let alice = w.alice.as_caller();
    assert_eq!(
        remove_as(&alice, unknown_object(), w.video),
        Err(MembershipChangeFailed::NotFound)
    );
    let other = w.h.library(&w.alice, "other");
    assert_eq!(
        remove_as(&alice, other, w.video),
        Err(MembershipChangeFailed::NotFound)
    );
    assert_eq!(members(&w.h, w.lib), [w.video]);
    // Positive control: an organization admin removes it.
    assert_eq!(
        remove_as(&w.olga.as_caller(), w.lib, w.video),
        Ok(AfterRemoval::SoftDelete)
    );
}

// ------------------------------------------------------------------ restore_object

#[test]
fn restore_brings_a_deleted_object_back_where_it_was_removed() {
    let w = world();
    let media = w.h.services.media();
    remove(&w, w.lib, w.video);
    w.h.advance(100);
    let RestoredObject { object, collection } = media.restore_object(w.video, None).unwrap();
    assert_eq!(collection, w.lib);
    assert_eq!(object.lifecycle(), Lifecycle::Live);
    assert_eq!(object.modified(), w.h.now());
    assert_eq!(w.h.store.object(w.video).unwrap(), Some(object.clone()));
    assert_eq!(members(&w.h, w.lib), [w.video]);
    // Bob reads it again, and the permLink works again.
    assert!(
        media
            .describe(Some(&w.bob.as_caller()), w.lib, w.video)
            .is_ok()
    );
    assert_eq!(media.follow_perm_link(object.shortcode()), Ok(object));
    // Into another collection when named.
    remove(&w, w.lib, w.video);
    let second = w.h.library(&w.alice, "second");
    let restored = media.restore_object(w.video, Some(second)).unwrap();
    assert_eq!(restored.collection, second);
    assert_eq!(members(&w.h, second), [w.video]);
    assert_eq!(members(&w.h, w.lib), []);
}

#[test]
fn a_restored_library_keeps_its_members_and_entries() {
    let w = world();
    let media = w.h.services.media();
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    let inner = w.h.object_in(&w.alice, sub, ObjectType::Video, "inner");
    let dave = w.h.user("dave", false);
    w.h.grant(&w.alice, sub, &dave, Admin);
    remove(&w, w.lib, sub);
    assert_eq!(
        media
            .list_catalog(&dave.as_caller(), sub, None, None)
            .map(drop),
        Err(MembershipChangeFailed::NotFound)
    );
    media.restore_object(sub, None).unwrap();
    let page = media
        .list_catalog(&dave.as_caller(), sub, None, None)
        .unwrap();
    assert_eq!(page.level, Admin);
    let listed: Vec<_> = page.items.iter().map(|i| i.object.id()).collect();
    assert_eq!(listed, [inner]);
    assert_eq!(w.h.level(&w.bob, sub), View, "inherits from lib again");
}

#[test]
fn restore_refuses_what_it_cannot_bring_back() {
    let w = world();
    let media = w.h.services.media();
    assert_eq!(
        media.restore_object(unknown_object(), None),
        Err(RestoreObjectError::NotFound)
    );
    assert_eq!(
        media.restore_object(w.video, None),
        Err(RestoreObjectError::NotDeleted)
    );
    // `inner` was removed from `sub`, then `sub` from `lib`: `sub` is gone.
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    let child = w.h.object_in(&w.alice, sub, ObjectType::Catalog, "child");
    let inner = w.h.object_in(&w.alice, sub, ObjectType::Video, "inner");
    remove(&w, sub, inner);
    remove(&w, w.lib, sub);
    assert_eq!(
        media.restore_object(inner, None),
        Err(RestoreObjectError::CollectionGone(sub))
    );
    // A library into itself or its own descendant is a cycle; into a video, no collection.
    assert_eq!(
        media.restore_object(sub, Some(sub)),
        Err(RestoreObjectError::Rule(MembershipError::Cycle))
    );
    assert_eq!(
        media.restore_object(sub, Some(child)),
        Err(RestoreObjectError::Rule(MembershipError::Cycle))
    );
    assert_eq!(
        media.restore_object(sub, Some(w.video)),
        Err(RestoreObjectError::Rule(MembershipError::NotACollection))
    );
    assert_eq!(
        media.restore_object(sub, Some(unknown_object())),
        Err(RestoreObjectError::CollectionGone(unknown_object()))
    );
    assert_eq!(
        w.h.store.object(sub).unwrap(),
        None,
        "refusals restore nothing"
    );
    // Parent first, then the child.
    media.restore_object(sub, None).unwrap();
    assert_eq!(media.restore_object(inner, None).unwrap().collection, sub);
}

#[test]
fn restore_is_possible_for_thirty_days() {
    let w = world();
    let media = w.h.services.media();
    let song = w.h.object_in(&w.alice, w.lib, ObjectType::Audio, "song");
    remove(&w, w.lib, w.video);
    remove(&w, w.lib, song);
    let deleted_at = w.h.now();
    w.h.advance(30 * 24 * 3600 - 1);
    assert!(media.restore_object(w.video, None).is_ok());
    w.h.advance(1);
    assert_eq!(
        media.restore_object(song, None),
        Err(RestoreObjectError::Expired { deleted_at })
    );
    assert_eq!(w.h.store.object(song).unwrap(), None);
}

// ------------------------------------------------------------------ effective_level, permits

#[test]
fn effective_levels_follow_the_membership_graph() {
    let w = world();
    let media = w.h.services.media();
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    let clip = w.h.object_in(&w.alice, sub, ObjectType::Video, "clip");
    let level = |who: &User, o| media.effective_level(&who.as_caller(), o).unwrap();
    // Inherited down the tree, for collections and for what they hold.
    assert_eq!(level(&w.bob, sub), View);
    assert_eq!(level(&w.bob, clip), View);
    assert_eq!(level(&w.alice, clip), Admin);
    assert_eq!(level(&w.carol, clip), NoLevel);
    // The highest over the holders wins.
    let second = w.h.library(&w.alice, "second");
    w.h.grant(&w.alice, second, &w.bob, Admin);
    media
        .add_member(&w.alice.as_caller(), second, clip)
        .unwrap();
    assert_eq!(level(&w.bob, clip), Admin);
    // An explicit none blocks what `sub` inherits, not what `clip` gets elsewhere.
    w.h.grant(&w.alice, sub, &w.bob, NoLevel);
    assert_eq!(level(&w.bob, sub), NoLevel);
    assert_eq!(level(&w.bob, clip), Admin);
    // An explicit entry beats a higher inherited level.
    w.h.grant(&w.alice, sub, &w.alice, View);
    assert_eq!(level(&w.alice, sub), View);
    // Organization admins: admin on everything, even an unknown id.
    assert_eq!(level(&w.olga, sub), Admin);
    assert_eq!(level(&w.olga, unknown_object()), Admin);
    assert_eq!(level(&w.alice, unknown_object()), NoLevel);
}

#[test]
fn permits_answers_as_the_use_cases_decide() {
    let w = world();
    let media = w.h.services.media();
    let read_only = w.h.token_caller(&w.alice, "read");
    let permits = |c: &Caller, a| media.permits(c, a).unwrap();
    let read = Action::Read { collection: w.lib };
    let edit = Action::Edit { collection: w.lib };
    assert!(permits(&w.bob.as_caller(), read));
    assert!(!permits(&w.bob.as_caller(), edit));
    assert!(!permits(&w.carol.as_caller(), read));
    assert!(permits(&w.alice.as_caller(), edit));
    assert!(permits(&read_only, read));
    assert!(!permits(&read_only, edit));
    assert!(!permits(&read_only, Action::CreateLibrary));
    assert!(permits(
        &w.olga.as_caller(),
        Action::Grant { collection: w.lib }
    ));
    // The same answers as the use cases.
    for (caller, allowed) in [
        (w.bob.as_caller(), false),
        (read_only, false),
        (w.alice.as_caller(), true),
    ] {
        assert_eq!(permits(&caller, edit), allowed);
        let done = media.update_object(&caller, w.lib, w.video, title("t"));
        assert_eq!(done.is_ok(), allowed, "{caller:?}");
    }
    let carols = w.h.library(&w.carol, "Carol's");
    let link = Action::Link {
        collection: carols,
        member: w.video,
    };
    assert!(!permits(&w.carol.as_caller(), link));
    w.h.grant(&w.alice, w.lib, &w.carol, Admin);
    assert!(permits(&w.carol.as_caller(), link));
}

// ------------------------------------------------------------------ permission entries
