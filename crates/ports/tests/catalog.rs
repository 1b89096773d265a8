//! The catalog use cases on the in-memory store: listing a collection (order, `since`,
//! keyset pages, streaming into a sink) and a sub-catalog through its parent, reading an
//! object or a video the caller may view, and resolving permLinks with and without a
//! session. No database: `cargo test -p medialib-ports`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use medialib_adapters_memory::testing::{Harness, START, World, forbidden, world};
use medialib_domain::{
    Caller, ObjectId, ObjectPatch, ObjectType, OrgNamespace, PageCursor, PageRequest, PageSize,
    PermissionLevel, Refusal, ShortCode, Since, Timestamp, Title, User,
};
use medialib_ports::CatalogItem;
use medialib_ports::services::catalog::{
    PermLinkFailed, PublicObjectFailed, SubCatalogFailed, VideoFailed, ViewObjectFailed,
};
use medialib_ports::services::{CatalogPage, CatalogSink, MembershipChangeFailed};

use PermissionLevel::{Admin, None as NoLevel, View};

/// The refusal of a reader whose level on the call's collection is `actual`.
fn no_view(actual: PermissionLevel) -> Refusal {
    forbidden(View, actual)
}

fn unknown_object() -> ObjectId {
    ObjectId::generate(&OrgNamespace::from_random([9; 16]), [9; 16])
}

fn since(secs: i64) -> Option<Since> {
    Some(Since::parse(&secs.to_string()).unwrap())
}

fn page(size: u16, after: Option<PageCursor>) -> Option<PageRequest> {
    Some(PageRequest::new(
        PageSize::parse(&size.to_string()).unwrap(),
        after,
    ))
}

fn ids(items: &[CatalogItem]) -> Vec<ObjectId> {
    items.iter().map(|i| i.object.id()).collect()
}

fn touch(w: &World, object: ObjectId) {
    let patch = ObjectPatch {
        title: Some(Title::parse("touched").unwrap()),
        ..ObjectPatch::default()
    };
    w.h.services
        .media()
        .update_object(&w.olga.as_caller(), w.lib, object, patch)
        .unwrap();
}

fn list(w: &World, who: &Caller, collection: ObjectId) -> Vec<ObjectId> {
    let page =
        w.h.services
            .media()
            .list_catalog(who, collection, None, None)
            .unwrap();
    ids(&page.items)
}

/// What a sink was handed, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Start(Timestamp, PermissionLevel),
    Member(ObjectId),
    Next(PageCursor),
}

#[derive(Debug, Default)]
struct Recorder(Vec<Event>);

impl CatalogSink for Recorder {
    fn start(&mut self, ts: Timestamp, level: PermissionLevel) {
        self.0.push(Event::Start(ts, level));
    }
    fn member(&mut self, item: CatalogItem) {
        self.0.push(Event::Member(item.object.id()));
    }
    fn next(&mut self, cursor: PageCursor) {
        self.0.push(Event::Next(cursor));
    }
}

// ------------------------------------------------------------------ list_catalog

#[test]
fn a_catalog_lists_its_live_members_most_recently_modified_first() {
    let w = world();
    let media = w.h.services.media();
    let a = w.video;
    w.h.advance(10);
    let b = w.h.object_in(&w.alice, w.lib, ObjectType::Audio, "b");
    w.h.advance(10);
    let c = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "c");
    w.h.advance(10);
    touch(&w, a);
    w.h.advance(10);
    let d = w.h.object_in(&w.alice, w.lib, ObjectType::Image, "d");
    let e = w.h.object_in(&w.alice, w.lib, ObjectType::File, "e");
    let gone = w.h.object_in(&w.alice, w.lib, ObjectType::File, "gone");
    media
        .remove_member(&w.alice.as_caller(), w.lib, gone)
        .unwrap();
    w.h.advance(5);
    let answer = media
        .list_catalog(&w.bob.as_caller(), w.lib, None, None)
        .unwrap();
    // Same second: by id. Then newest change first; the deleted one is not listed.
    let (first, second) = if d < e { (d, e) } else { (e, d) };
    assert_eq!(ids(&answer.items), [first, second, a, c, b]);
    assert_eq!(
        (answer.ts, answer.level, answer.next),
        (w.h.now(), View, None)
    );
    let stored = w.h.store.object(a).unwrap().unwrap();
    assert_eq!(answer.items[2].object, stored);
    // The level is the caller's; a read-only token lists too.
    for (who, level) in [
        (w.alice.as_caller(), Admin),
        (w.olga.as_caller(), Admin),
        (w.h.token_caller(&w.bob, "read"), View),
    ] {
        let answer = media.list_catalog(&who, w.lib, None, None).unwrap();
        assert_eq!(answer.level, level);
        assert_eq!(answer.items.len(), 5);
    }
}

#[test]
fn since_lists_members_changed_or_added_at_or_after_it() {
    let w = world();
    let media = w.h.services.media();
    let bob = w.bob.as_caller();
    let a = w.video;
    let second = w.h.library(&w.alice, "second");
    let x = w.h.object_in(&w.alice, second, ObjectType::Audio, "x");
    w.h.advance(10);
    let b = w.h.object_in(&w.alice, w.lib, ObjectType::Audio, "b");
    w.h.advance(10);
    // An old object joins: listed from the time it was added, in the place its
    // modification time gives it.
    media.add_member(&w.alice.as_caller(), w.lib, x).unwrap();
    w.h.advance(10);
    touch(&w, a);
    let changed = |s| {
        ids(&media
            .list_catalog(&bob, w.lib, since(s), None)
            .unwrap()
            .items)
    };
    assert_eq!(changed(START + 10), [a, b, x]);
    assert_eq!(changed(START + 11), [a, x]);
    assert_eq!(changed(START + 20), [a, x], "at or after: >=");
    assert_eq!(changed(START + 21), [a]);
    assert_eq!(changed(START + 31), []);
    // A client passing back `ts` misses nothing changed in that very second.
    w.h.advance(1);
    let ts = media.list_catalog(&bob, w.lib, None, None).unwrap().ts;
    touch(&w, b);
    assert_eq!(changed(ts.epoch_seconds()), [b]);
}

/// Walks `collection` page by page; returns the pages' members.
fn walk(
    w: &World,
    collection: ObjectId,
    size: u16,
    s: Option<Since>,
    between: &mut dyn FnMut(usize),
) -> Vec<Vec<ObjectId>> {
    let media = w.h.services.media();
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let answer = media
            .list_catalog(&w.bob.as_caller(), collection, s, page(size, after))
            .unwrap();
        assert!(answer.items.len() <= usize::from(size));
        if let Some(next) = answer.next {
            let last = &answer.items.last().unwrap().object;
            assert_eq!(next, PageCursor::at(last.modified(), last.id()));
        }
        pages.push(ids(&answer.items));
        between(pages.len());
        match answer.next {
            Some(next) => after = Some(next),
            None => return pages,
        }
        assert!(pages.len() < 20, "the walk ends");
    }
}

#[test]
fn pages_walk_the_listing_once() {
    let w = world();
    let mut made = vec![w.video];
    for i in 0..6 {
        if i % 2 == 0 {
            w.h.advance(1);
        }
        made.push(w.h.object_in(&w.alice, w.lib, ObjectType::Audio, &format!("m{i}")));
    }
    let all = list(&w, &w.bob.as_caller(), w.lib);
    assert_eq!(all.len(), 7);
    let pages = walk(&w, w.lib, 3, None, &mut |_| {});
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1]);
    assert_eq!(pages.concat(), all);
    // A page that ends exactly at the end says no more follow; one short of it does.
    assert_eq!(
        walk(&w, w.lib, 7, None, &mut |_| {}),
        std::slice::from_ref(&all)
    );
    assert_eq!(walk(&w, w.lib, 6, None, &mut |_| {}).len(), 2);
    // Pages of a `since` listing.
    let recent = walk(&w, w.lib, 2, since(START + 2), &mut |_| {}).concat();
    assert_eq!(recent, all[..4]);
    // A member changed during the walk moves ahead of the cursor: never listed twice,
    // and no other member is skipped.
    let moved = all[4];
    w.h.advance(1);
    let first_ts = w.h.now().epoch_seconds();
    let pages = walk(&w, w.lib, 3, None, &mut |n| {
        if n == 1 {
            w.h.advance(1);
            touch(&w, moved);
        }
    });
    let walked = pages.concat();
    let mut expected = all.clone();
    expected.retain(|id| *id != moved);
    assert_eq!(walked, expected);
    // The next listing since the walk's first `ts` catches it.
    let caught =
        w.h.services
            .media()
            .list_catalog(&w.bob.as_caller(), w.lib, since(first_ts), None)
            .unwrap();
    assert_eq!(ids(&caught.items), [moved]);
}

#[test]
fn listing_is_refused_like_every_read() {
    let w = world();
    let media = w.h.services.media();
    let listing = |who: &Caller, c| media.list_catalog(who, c, None, None).map(drop);
    assert_eq!(
        listing(&w.carol.as_caller(), w.lib),
        Err(MembershipChangeFailed::Refused(no_view(NoLevel)))
    );
    assert_eq!(
        listing(&w.alice.as_caller(), unknown_object()),
        Err(MembershipChangeFailed::NotFound)
    );
    assert_eq!(
        listing(&w.alice.as_caller(), w.video),
        Err(MembershipChangeFailed::NotACollection)
    );
    // The gate answers before the type is told.
    assert_eq!(
        listing(&w.carol.as_caller(), w.video),
        Err(MembershipChangeFailed::Refused(no_view(NoLevel)))
    );
    // An explicit none on a sub-library blocks the view Bob inherits from `lib`.
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    assert_eq!(listing(&w.bob.as_caller(), sub), Ok(()));
    w.h.grant(&w.alice, sub, &w.bob, NoLevel);
    assert_eq!(
        listing(&w.bob.as_caller(), sub),
        Err(MembershipChangeFailed::Refused(no_view(NoLevel)))
    );
    // A deleted sub-library is not found, even by its admin.
    media
        .remove_member(&w.alice.as_caller(), w.lib, sub)
        .unwrap();
    assert_eq!(
        listing(&w.alice.as_caller(), sub),
        Err(MembershipChangeFailed::NotFound)
    );
}

#[test]
fn a_listing_streams_into_its_sink_and_a_refused_one_hands_it_nothing() {
    let w = world();
    let media = w.h.services.media();
    let b = w.h.object_in(&w.alice, w.lib, ObjectType::Audio, "b");
    let c = w.h.object_in(&w.alice, w.lib, ObjectType::Audio, "c");
    let all = list(&w, &w.alice.as_caller(), w.lib);
    for (who, collection) in [
        (w.carol.as_caller(), w.lib),
        (w.alice.as_caller(), unknown_object()),
        (w.alice.as_caller(), w.video),
    ] {
        let mut sink = Recorder::default();
        let r = media.list_catalog_into(&who, collection, None, page(1, None), &mut sink);
        assert!(r.is_err());
        assert_eq!(sink.0, []);
    }
    let mut sink = Recorder::default();
    media
        .list_catalog_into(&w.bob.as_caller(), w.lib, None, page(2, None), &mut sink)
        .unwrap();
    let second = w.h.store.object(all[1]).unwrap().unwrap();
    assert_eq!(
        sink.0,
        [
            Event::Start(w.h.now(), View),
            Event::Member(all[0]),
            Event::Member(all[1]),
            Event::Next(PageCursor::at(second.modified(), second.id())),
        ]
    );
    // `list_catalog` is the same answer collected.
    let collected: CatalogPage = media
        .list_catalog(&w.bob.as_caller(), w.lib, None, page(2, None))
        .unwrap();
    assert_eq!(
        collected.next,
        Some(PageCursor::at(second.modified(), second.id()))
    );
    assert_eq!(ids(&collected.items), all[..2]);
    assert!(all.contains(&b) && all.contains(&c));
}

// ------------------------------------------------------------------ list_sub_catalog

/// `lib` holds sub-library `sub`, which holds `m1` then `m2` (a second later).
fn with_sub(w: &World) -> (ObjectId, ObjectId, ObjectId) {
    let sub = w.h.object_in(&w.alice, w.lib, ObjectType::Catalog, "sub");
    let m1 = w.h.object_in(&w.alice, sub, ObjectType::Video, "m1");
    w.h.advance(1);
    let m2 = w.h.object_in(&w.alice, sub, ObjectType::Video, "m2");
    (sub, m1, m2)
}

#[test]
fn a_sub_catalog_lists_with_the_callers_level_on_itself() {
    let w = world();
    let media = w.h.services.media();
    let (sub, m1, m2) = with_sub(&w);
    let listing = |who: &Caller, s, p| {
        CatalogPage::collect(|sink| media.list_sub_catalog_into(who, w.lib, sub, s, p, sink))
            .unwrap()
    };
    let inherited = listing(&w.bob.as_caller(), None, None);
    assert_eq!(
        (inherited.level, ids(&inherited.items)),
        (View, vec![m2, m1])
    );
    assert_eq!((inherited.ts, inherited.next), (w.h.now(), None));
    w.h.grant(&w.alice, sub, &w.bob, Admin);
    assert_eq!(listing(&w.bob.as_caller(), None, None).level, Admin);
    assert_eq!(listing(&w.olga.as_caller(), None, None).level, Admin);
    assert_eq!(
        listing(&w.h.token_caller(&w.bob, "read"), None, None).level,
        Admin
    );
    // Pages and `since` as for any listing.
    let first = listing(&w.bob.as_caller(), None, page(1, None));
    assert_eq!(ids(&first.items), [m2]);
    let rest = listing(&w.bob.as_caller(), None, page(1, first.next));
    assert_eq!((ids(&rest.items), rest.next), (vec![m1], None));
    assert_eq!(
        ids(&listing(&w.bob.as_caller(), since(START + 1), None).items),
        [m2]
    );
}

#[test]
fn a_sub_catalog_is_listed_only_through_a_parent_the_caller_views() {
    let w = world();
    let media = w.h.services.media();
    let (sub, _, _) = with_sub(&w);
    let sub_listing = |who: &User, c, s| {
        let mut sink = Recorder::default();
        let r = media.list_sub_catalog_into(&who.as_caller(), c, s, None, None, &mut sink);
        if r.is_err() {
            assert_eq!(sink.0, [], "a refused listing hands the sink nothing");
        }
        r
    };
    let other = w.h.library(&w.alice, "other");
    let elsewhere =
        w.h.object_in(&w.alice, other, ObjectType::Catalog, "elsewhere");
    for (c, s) in [
        (unknown_object(), sub),
        (w.lib, unknown_object()),
        (w.lib, elsewhere),
    ] {
        assert_eq!(sub_listing(&w.alice, c, s), Err(SubCatalogFailed::NotFound));
    }
    // Carol administers `sub` but holds nothing on `lib`: not through `lib`, but directly.
    w.h.grant(&w.alice, sub, &w.carol, Admin);
    assert_eq!(
        sub_listing(&w.carol, w.lib, sub),
        Err(SubCatalogFailed::Refused(no_view(NoLevel)))
    );
    assert_eq!(list(&w, &w.carol.as_caller(), sub).len(), 2);
    // Only a catalog member is listed; the gate on `lib` answers first.
    assert_eq!(
        sub_listing(&w.bob, w.lib, w.video),
        Err(SubCatalogFailed::NotACollection)
    );
    assert_eq!(
        sub_listing(&w.carol, w.lib, w.video),
        Err(SubCatalogFailed::Refused(no_view(NoLevel)))
    );
    // An explicit none on `sub` hides it even from viewers of `lib`.
    assert!(sub_listing(&w.bob, w.lib, sub).is_ok());
    w.h.grant(&w.alice, sub, &w.bob, NoLevel);
    assert_eq!(
        sub_listing(&w.bob, w.lib, sub),
        Err(SubCatalogFailed::Refused(no_view(NoLevel)))
    );
    // Once removed from `lib` it is not reached through it.
    media
        .remove_member(&w.alice.as_caller(), w.lib, sub)
        .unwrap();
    assert_eq!(
        sub_listing(&w.alice, w.lib, sub),
        Err(SubCatalogFailed::NotFound)
    );
}

// ------------------------------------------------------------------ view_object, view_video

#[test]
fn viewing_an_object_needs_view_on_the_collection_even_when_it_is_public() {
    let w = world();
    let media = w.h.services.media();
    let public = w.h.create_in(
        &w.alice,
        w.lib,
        Harness::public_object(ObjectType::Video, "trailer"),
    );
    let view = |who: &Caller, c, o| media.view_object(who, c, o).map(|o| o.id());
    for who in [
        w.alice.as_caller(),
        w.bob.as_caller(),
        w.olga.as_caller(),
        w.h.token_caller(&w.bob, "read"),
    ] {
        assert_eq!(view(&who, w.lib, w.video), Ok(w.video));
        assert_eq!(view(&who, w.lib, w.lib), Ok(w.lib));
    }
    for object in [public, w.video] {
        assert_eq!(
            view(&w.carol.as_caller(), w.lib, object),
            Err(ViewObjectFailed::Refused(no_view(NoLevel)))
        );
    }
    let other = w.h.library(&w.alice, "other");
    for (c, o) in [
        (other, w.video),
        (unknown_object(), w.video),
        (w.lib, unknown_object()),
    ] {
        assert_eq!(
            view(&w.alice.as_caller(), c, o),
            Err(ViewObjectFailed::NotFound)
        );
    }
    media
        .remove_member(&w.alice.as_caller(), w.lib, w.video)
        .unwrap();
    assert_eq!(
        view(&w.alice.as_caller(), w.lib, w.video),
        Err(ViewObjectFailed::NotFound)
    );
}

#[test]
fn only_a_video_or_an_audio_recording_has_a_video_record() {
    let w = world();
    let media = w.h.services.media();
    let song = w.h.object_in(&w.alice, w.lib, ObjectType::Audio, "song");
    let picture = w.h.object_in(&w.alice, w.lib, ObjectType::Image, "picture");
    let bob = w.bob.as_caller();
    let stored = w.h.store.object(w.video).unwrap().unwrap();
    assert_eq!(media.view_video(&bob, w.lib, w.video), Ok(stored));
    let stored = w.h.store.object(song).unwrap().unwrap();
    assert_eq!(media.view_video(&bob, w.lib, song), Ok(stored));
    assert_eq!(
        media.view_video(&bob, w.lib, picture),
        Err(VideoFailed::NotPlayable(ObjectType::Image))
    );
    assert_eq!(
        media.view_video(&bob, w.lib, w.lib),
        Err(VideoFailed::NotPlayable(ObjectType::Catalog))
    );
    // Refused, or not found, before the type is told.
    assert_eq!(
        media.view_video(&w.carol.as_caller(), w.lib, song),
        Err(VideoFailed::Refused(no_view(NoLevel)))
    );
    assert_eq!(
        media.view_video(&bob, w.lib, unknown_object()),
        Err(VideoFailed::NotFound)
    );
}

// ------------------------------------------------------------------ permLinks

#[test]
fn a_perm_link_names_any_live_object_public_or_not() {
    let w = world();
    let media = w.h.services.media();
    let public = w.h.create_in(
        &w.alice,
        w.lib,
        Harness::public_object(ObjectType::Image, "poster"),
    );
    for id in [w.video, public, w.lib] {
        let object = w.h.store.object(id).unwrap().unwrap();
        assert_eq!(media.follow_perm_link(object.shortcode()), Ok(object));
    }
    let nobody = ShortCode::parse("0000000000").unwrap();
    assert_eq!(
        media.follow_perm_link(&nobody),
        Err(PermLinkFailed::NotFound)
    );
    let video = w.h.store.object(w.video).unwrap().unwrap();
    media
        .remove_member(&w.alice.as_caller(), w.lib, w.video)
        .unwrap();
    assert_eq!(
        media.follow_perm_link(video.shortcode()),
        Err(PermLinkFailed::NotFound)
    );
    media.restore_object(w.video, None).unwrap();
    assert_eq!(
        media.follow_perm_link(video.shortcode()).map(|o| o.id()),
        Ok(w.video)
    );
}

#[test]
fn only_a_public_object_shows_without_a_session() {
    let w = world();
    let media = w.h.services.media();
    let public = w.h.create_in(
        &w.alice,
        w.lib,
        Harness::public_object(ObjectType::Image, "poster"),
    );
    let code = |id| w.h.store.object(id).unwrap().unwrap().shortcode().clone();
    assert_eq!(
        media.public_object(&code(public)).map(|o| o.id()),
        Ok(public)
    );
    for private in [w.video, w.lib] {
        assert_eq!(
            media.public_object(&code(private)),
            Err(PublicObjectFailed::SignInRequired)
        );
    }
    // Made public, it shows.
    let publish = ObjectPatch {
        public: Some(true),
        ..ObjectPatch::default()
    };
    media
        .update_object(&w.alice.as_caller(), w.lib, w.video, publish)
        .unwrap();
    assert_eq!(
        media.public_object(&code(w.video)).map(|o| o.id()),
        Ok(w.video)
    );
    // Deleted or unknown: not found.
    let poster = code(public);
    media
        .remove_member(&w.alice.as_caller(), w.lib, public)
        .unwrap();
    assert_eq!(
        media.public_object(&poster),
        Err(PublicObjectFailed::NotFound)
    );
    assert_eq!(
        media.public_object(&ShortCode::parse("0000000000").unwrap()),
        Err(PublicObjectFailed::NotFound)
    );
}

#[test]
fn a_landing_page_shows_a_private_object_to_a_signed_in_viewer_only() {
    let w = world();
    let media = w.h.services.media();
    let code = |id| w.h.store.object(id).unwrap().unwrap().shortcode().clone();
    let public = w.h.create_in(
        &w.alice,
        w.lib,
        Harness::public_object(ObjectType::Image, "poster"),
    );
    // A public object shows to anyone, signed in or not.
    for who in [None, Some(w.carol.as_caller())] {
        assert_eq!(
            media
                .page_object(who.as_ref(), &code(public))
                .map(|o| o.id()),
            Ok(public)
        );
    }
    // A private one to whoever may view it (alice administers, bob views, olga is an
    // organization admin) ...
    for who in [&w.alice, &w.bob, &w.olga] {
        assert_eq!(
            media
                .page_object(Some(&who.as_caller()), &code(w.video))
                .map(|o| o.id()),
            Ok(w.video),
            "{}",
            who.unique_id.as_str()
        );
    }
    // ... asks a browser without a session to sign in, and tells a signed-in stranger no
    // more than of an unknown link (positive control above: the same object shows to bob).
    assert_eq!(
        media.page_object(None, &code(w.video)),
        Err(PublicObjectFailed::SignInRequired)
    );
    assert_eq!(
        media.page_object(Some(&w.carol.as_caller()), &code(w.video)),
        Err(PublicObjectFailed::NotFound)
    );
    // An entry of level none on the library hides it from bob again.
    w.h.grant(&w.alice, w.lib, &w.bob, NoLevel);
    assert_eq!(
        media.page_object(Some(&w.bob.as_caller()), &code(w.video)),
        Err(PublicObjectFailed::NotFound)
    );
    assert_eq!(
        media.page_object(None, &ShortCode::parse("0000000000").unwrap()),
        Err(PublicObjectFailed::NotFound)
    );
}

#[test]
fn the_home_page_lists_the_libraries_a_person_reads_by_title() {
    let w = world();
    let media = w.h.services.media();
    let titles = |who: &User| -> Vec<String> {
        media
            .libraries_of(&who.as_caller())
            .unwrap()
            .iter()
            .map(|l| l.fields().title.as_str().to_owned())
            .collect()
    };
    let archive = w.h.library(&w.bob, "Archive");
    w.h.grant(&w.bob, archive, &w.alice, View);
    assert_eq!(titles(&w.alice), ["Alice's library", "Archive"]);
    assert_eq!(titles(&w.bob), ["Alice's library", "Archive"]);
    assert!(titles(&w.carol).is_empty());
    // A level of none is an entry, but no library to show.
    w.h.grant(&w.alice, w.lib, &w.bob, NoLevel);
    assert_eq!(titles(&w.bob), ["Archive"]);
}
