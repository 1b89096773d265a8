//! The purge of long-deleted objects (`UploadRepository::deleted_before` and `purge_deleted`),
//! run unchanged on SQLite, PostgreSQL and the in-memory store with the uploads contract's
//! `Bench`: an object soft-deleted before the cutoff goes with everything that hangs on it,
//! one deleted after it stays, and a purged library's members left in no collection are
//! soft-deleted in their turn.

use medialib_domain::{Lifecycle, ObjectId, ObjectType};
use medialib_ports::{NewMedia, Store};

use crate::uploads_contract::{Bench, T0, at};

/// Soft-deletes `member` by removing it from `collection` at `when`.
fn remove(store: &dyn Store, collection: ObjectId, member: ObjectId, when: i64) {
    store.remove_member(collection, member, at(when)).unwrap();
}

fn lifecycle(store: &dyn Store, id: ObjectId) -> Option<Lifecycle> {
    store.object_any_state(id).unwrap().map(|o| o.lifecycle())
}

mod cases {
    use super::*;

    pub fn an_object_deleted_before_the_cutoff_goes_with_its_upload_and_media(b: &Bench) {
        let upload = b.started(1000, T0 + 3600);
        let id = upload.object;
        remove(b.store.as_ref(), b.library, id, T0 + 10);
        assert!(b.store.upload(id).unwrap().is_some());
        assert!(b.store.media(id).unwrap().is_some());

        // Deleted at T0 + 10: not before T0 + 10, before T0 + 11.
        assert!(b.store.deleted_before(at(T0 + 10), 10).unwrap().is_empty());
        assert!(!b.store.purge_deleted(id, at(T0 + 10), at(T0 + 20)).unwrap());
        assert_eq!(
            lifecycle(b.store.as_ref(), id),
            Some(Lifecycle::SoftDeleted { at: at(T0 + 10) }),
            "not purged: deleted too recently"
        );
        assert_eq!(b.store.deleted_before(at(T0 + 11), 10).unwrap(), [id]);
        assert!(b.store.purge_deleted(id, at(T0 + 11), at(T0 + 20)).unwrap());
        assert_eq!(lifecycle(b.store.as_ref(), id), None);
        assert_eq!(b.store.upload(id).unwrap(), None);
        assert_eq!(b.store.media(id).unwrap(), None);
        assert!(b.store.deleted_before(at(T0 + 11), 10).unwrap().is_empty());
        assert!(
            !b.store.purge_deleted(id, at(T0 + 11), at(T0 + 20)).unwrap(),
            "a second purge finds nothing"
        );
    }

    pub fn a_live_object_is_never_purged(b: &Bench) {
        let live = b.started(10, T0 + 3600).object;
        assert!(
            b.store
                .deleted_before(at(T0 + 1_000_000), 10)
                .unwrap()
                .is_empty()
        );
        assert!(
            !b.store
                .purge_deleted(live, at(T0 + 1_000_000), at(T0 + 1_000_000))
                .unwrap()
        );
        assert_eq!(lifecycle(b.store.as_ref(), live), Some(Lifecycle::Live));
    }

    pub fn deleted_objects_come_oldest_first_up_to_the_limit(b: &Bench) {
        let ids: Vec<ObjectId> = (0..3).map(|_| b.started(10, T0 + 3600).object).collect();
        // Deleted in the order 2, 0, 1.
        remove(b.store.as_ref(), b.library, ids[2], T0 + 1);
        remove(b.store.as_ref(), b.library, ids[0], T0 + 2);
        remove(b.store.as_ref(), b.library, ids[1], T0 + 3);
        assert_eq!(
            b.store.deleted_before(at(T0 + 100), 2).unwrap(),
            [ids[2], ids[0]]
        );
        assert_eq!(
            b.store.deleted_before(at(T0 + 100), 10).unwrap(),
            [ids[2], ids[0], ids[1]]
        );
    }

    pub fn a_purged_librarys_members_left_in_no_collection_are_deleted_softly(b: &Bench) {
        let store = b.store.as_ref();
        let sub = b.object(ObjectType::Catalog);
        store.create_in_collection(&sub, b.library).unwrap();
        // `only` is in the sub-library alone; `shared` also in the library.
        let only = b.object(ObjectType::Video);
        let upload = b.record(only.id(), 10, T0 + 3600);
        store
            .create_with_media(&only, sub.id(), NewMedia::Upload(&upload))
            .unwrap();
        let shared = b.object(ObjectType::Video);
        store.create_in_collection(&shared, sub.id()).unwrap();
        store
            .add_member(b.library, shared.id(), at(T0 + 1))
            .unwrap();
        remove(store, b.library, sub.id(), T0 + 5);
        // Positive control: until the purge, both members stay live inside the deleted
        // sub-library.
        assert_eq!(lifecycle(store, only.id()), Some(Lifecycle::Live));

        assert!(
            store
                .purge_deleted(sub.id(), at(T0 + 6), at(T0 + 50))
                .unwrap()
        );
        assert_eq!(lifecycle(store, sub.id()), None);
        assert_eq!(
            lifecycle(store, only.id()),
            Some(Lifecycle::SoftDeleted { at: at(T0 + 50) }),
            "left in no collection: deleted softly, 30 days of its own"
        );
        assert!(
            store.media(only.id()).unwrap().is_some(),
            "its media waits for its own purge"
        );
        assert_eq!(lifecycle(store, shared.id()), Some(Lifecycle::Live));
        assert!(store.is_member(b.library, shared.id()).unwrap());
        // Its own turn comes after its own cutoff.
        assert_eq!(store.deleted_before(at(T0 + 51), 10).unwrap(), [only.id()]);
    }
}

use cases::*;

medialib_adapters_diesel::backend_tests!(
    on [sqlite, memory, postgres] with Bench::run:
    an_object_deleted_before_the_cutoff_goes_with_its_upload_and_media,
    a_live_object_is_never_purged,
    deleted_objects_come_oldest_first_up_to_the_limit,
    a_purged_librarys_members_left_in_no_collection_are_deleted_softly,
);
