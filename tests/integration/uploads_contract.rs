//! The `UploadRepository` contract: every case runs, unchanged, against SQLite, PostgreSQL (a
//! throwaway database per test on 127.0.0.1:5432) and the in-memory store
//! (`uploads_contract::{sqlite,postgres,memory}::*`), straight on the port.
//!
//! Rows that do not parse are in `crates/adapters-diesel/tests/corrupt.rs`; the cascade from a
//! purged object to its upload and media in `crates/adapters-diesel/tests/schema.rs`.

use std::sync::{Arc, Barrier};

use medialib_adapters_diesel::testing::{TestBackend, TestDb};
use medialib_adapters_diesel::{Database, DieselStore, PoolOptions};
use medialib_adapters_memory::MemoryStore;
use medialib_domain::media::derived::{DerivedDir, DerivedFile, DerivedPath, DerivedSet, FileRole};
use medialib_domain::media::probe::Dimensions;
use medialib_domain::media::{FileName, MediaState, ResumableSha256, StorageKey, UploadProgress};
use medialib_domain::{
    Description, MediaObject, NewObject, ObjectFields, ObjectId, ObjectType, PersonName,
    Properties, ShortCode, Timestamp, Title, UniqueId, User, UserId,
};
use medialib_ports::{
    ClaimRequest, CreateObjectError, Finish, JobEnd, JobEnded, LockRequest, MediaRecord, NewMedia,
    Progress, Reader, SourceFile, Staging, Store, UploadLock, UploadRecord,
};

/// When every case starts.
pub(crate) const T0: i64 = 1_700_000_000;

pub(crate) fn at(secs: i64) -> Timestamp {
    Timestamp::from_epoch_seconds(secs)
}

/// A store on one backend with a user and their library (the jobs contract, jobs_contract.rs,
/// runs on it too).
pub(crate) struct Bench {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) owner: UserId,
    pub(crate) library: ObjectId,
    /// Dropped last: removes the database.
    _db: Option<TestDb>,
}

impl Bench {
    /// The runner of `backend_tests!`.
    pub(crate) fn run(backend: TestBackend, case: fn(&Bench)) {
        case(&Self::on(backend));
    }

    fn on(backend: TestBackend) -> Self {
        let (store, db): (Arc<dyn Store>, _) = match backend.database() {
            None => (Arc::new(MemoryStore::new(rand::random())), None),
            Some(database) => {
                let test_db = TestDb::create(database);
                let db = Database::connect(&test_db.url, &PoolOptions::default()).unwrap();
                db.migrate(&mut |_| {}).unwrap();
                db.ensure_namespace(rand::random()).unwrap();
                (Arc::new(DieselStore::new(db)), Some(test_db))
            }
        };
        let owner = User {
            id: UserId::generate(&store.namespace().unwrap(), rand::random()),
            unique_id: UniqueId::parse("uploader").unwrap(),
            first_name: PersonName::parse("Up", "firstName").unwrap(),
            last_name: PersonName::parse("Loader", "lastName").unwrap(),
            org_admin: false,
        };
        store.create_user(&owner, at(T0)).unwrap();
        let library = new_object(store.as_ref(), owner.id, ObjectType::Catalog);
        store.create_library(&library, owner.id).unwrap();
        Self {
            store,
            owner: owner.id,
            library: library.id(),
            _db: db,
        }
    }

    /// A new object, not stored yet.
    pub(crate) fn object(&self, object_type: ObjectType) -> MediaObject {
        new_object(self.store.as_ref(), self.owner, object_type)
    }

    /// An upload of `length` bytes for `object`, expiring at `expires`.
    pub(crate) fn record(&self, object: ObjectId, length: u64, expires: i64) -> UploadRecord {
        UploadRecord {
            object,
            owner: self.owner,
            progress: UploadProgress {
                length,
                offset: 0,
                expires: at(expires),
            },
            staging: Staging {
                key: StorageKey::parse(&format!("objects/{object}/source")).unwrap(),
                state: "staging-0".into(),
            },
            hash: ResumableSha256::new(),
            filename: Some(FileName::parse("clip one.mp4").unwrap()),
            content_type: Some("video/mp4".into()),
            created: at(T0),
        }
    }

    /// A video in the library with an upload of `length` bytes expiring at `expires`.
    pub(crate) fn started(&self, length: u64, expires: i64) -> UploadRecord {
        let object = self.object(ObjectType::Video);
        let upload = self.record(object.id(), length, expires);
        self.store
            .create_with_media(&object, self.library, NewMedia::Upload(&upload))
            .unwrap();
        upload
    }

    pub(crate) fn lock(&self, object: ObjectId, holder: &str, until: i64, now: i64) -> UploadLock {
        self.store
            .lock_upload(
                object,
                LockRequest {
                    holder,
                    until: at(until),
                    now: at(now),
                },
            )
            .unwrap()
    }
}

/// A new object of `owner`'s, created at T0.
fn new_object(store: &dyn Store, owner: UserId, object_type: ObjectType) -> MediaObject {
    MediaObject::create(
        ObjectId::generate(&store.namespace().unwrap(), rand::random()),
        NewObject {
            object_type,
            fields: ObjectFields {
                title: Title::parse("clip").unwrap(),
                description: Description::parse("").unwrap(),
                public: false,
                duration: None,
                properties: Properties::empty(),
            },
        },
        owner,
        ShortCode::from_random(rand::random()),
        at(T0),
    )
}

/// The media record `create_with_media` starts an awaited upload with.
fn uploading(object: ObjectId) -> MediaRecord {
    MediaRecord {
        object,
        state: MediaState::Uploading,
        progress: 0,
        error: None,
        attempts: 0,
        source: None,
        derived: None,
        modified: at(T0),
    }
}

/// A finished upload's media record.
pub(crate) fn ready(object: ObjectId, size: u64, modified: i64) -> MediaRecord {
    MediaRecord {
        object,
        state: MediaState::Ready,
        progress: 100,
        error: Some("an earlier attempt failed".into()),
        attempts: 2,
        source: Some(SourceFile {
            key: StorageKey::parse(&format!("objects/{object}/source")).unwrap(),
            filename: Some(FileName::parse("clip one.mp4").unwrap()),
            size,
            sha256: [0xab; 32],
            content_type: "video/mp4".into(),
        }),
        derived: None,
        modified: at(modified),
    }
}

pub(crate) fn locked(lock: &UploadLock) -> bool {
    matches!(lock, UploadLock::Locked(_))
}

/// A derived set in `dir` with a still of each of `sizes` and an MP4.
fn derived(dir: &str, sizes: &[(u32, u32)]) -> DerivedSet {
    let mut files = vec![DerivedFile {
        role: FileRole::Rendition,
        path: DerivedPath::parse("mp4/360p.mp4").unwrap(),
        size: 1000,
        dimensions: Dimensions::new(640, 360),
        bitrate: Some(900_000),
    }];
    files.extend(sizes.iter().map(|&(w, h)| DerivedFile {
        role: FileRole::Still,
        path: DerivedPath::parse(&format!("stills/{w}x{h}.jpg")).unwrap(),
        size: 10,
        dimensions: Dimensions::new(w, h),
        bitrate: None,
    }));
    DerivedSet::new(DerivedDir::parse(dir).unwrap(), files, None).unwrap()
}

impl Bench {
    /// A video whose one-shot source is stored and whose processing job ended `ready` with
    /// `set`, through the job port as a worker ends it.
    fn processed(&self, set: &DerivedSet) -> ObjectId {
        let object = self.object(ObjectType::Video);
        let id = object.id();
        let queued = MediaRecord {
            state: MediaState::Queued,
            progress: 0,
            error: None,
            attempts: 0,
            ..ready(id, 10, T0)
        };
        self.store
            .create_with_media(&object, self.library, NewMedia::Stored(&queued))
            .unwrap();
        let job = self
            .store
            .claim_job(ClaimRequest {
                holder: "worker",
                now: at(T0 + 10),
                until: at(T0 + 70),
                dir: set.dir(),
            })
            .unwrap()
            .expect("the job of the stored source is due");
        assert_eq!(job.ticket.object, id);
        assert_eq!(
            self.store
                .end_job(job.ticket, JobEnd::Ready(set), at(T0 + 11))
                .unwrap(),
            JobEnded::Ended(None)
        );
        id
    }
}

mod cases {
    use super::*;

    pub fn an_upload_created_with_its_object_reads_back(b: &Bench) {
        let upload = b.started(1000, T0 + 3600);
        let id = upload.object;
        assert_eq!(b.store.upload(id).unwrap(), Some(upload));
        assert_eq!(b.store.media(id).unwrap(), Some(uploading(id)));
        assert!(b.store.is_member(b.library, id).unwrap());
        assert_eq!(
            b.store.object(id).unwrap().map(|o| o.object_type()),
            Some(ObjectType::Video)
        );
        // Nothing of an object that could not be created: not into a video, not into nothing.
        for (collection, expected) in [
            (id, "NotACollection"),
            (b.object(ObjectType::Catalog).id(), "CollectionNotFound"),
        ] {
            let object = b.object(ObjectType::Video);
            let r = b.store.create_with_media(
                &object,
                collection,
                NewMedia::Upload(&b.record(object.id(), 5, T0 + 60)),
            );
            match (&r, expected) {
                (Err(CreateObjectError::NotACollection), "NotACollection")
                | (Err(CreateObjectError::CollectionNotFound), "CollectionNotFound") => {}
                _ => panic!("{r:?} is not {expected}"),
            }
            assert_eq!(b.store.upload(object.id()).unwrap(), None);
            assert_eq!(b.store.media(object.id()).unwrap(), None);
            assert_eq!(b.store.object_any_state(object.id()).unwrap(), None);
        }
        assert_eq!(b.store.stored_bytes().unwrap(), 1000);
    }

    pub fn an_object_created_with_a_stored_source_has_its_media_and_no_upload(b: &Bench) {
        let object = b.object(ObjectType::Video);
        let id = object.id();
        let media = ready(id, 4096, T0);
        b.store
            .create_with_media(&object, b.library, NewMedia::Stored(&media))
            .unwrap();
        assert_eq!(b.store.media(id).unwrap(), Some(media));
        assert_eq!(b.store.upload(id).unwrap(), None);
        assert!(b.store.is_member(b.library, id).unwrap());
        assert_eq!(b.store.stored_bytes().unwrap(), 4096);
        // Media for another object than the one created: refused, and nothing stored.
        let other = b.object(ObjectType::Video);
        let r = b
            .store
            .create_with_media(&other, b.library, NewMedia::Stored(&ready(id, 1, T0)));
        assert!(matches!(r, Err(CreateObjectError::Store(_))), "{r:?}");
        assert_eq!(b.store.object_any_state(other.id()).unwrap(), None);
        // Not into a video: nothing of it, its media record included.
        let third = b.object(ObjectType::Video);
        let r = b
            .store
            .create_with_media(&third, id, NewMedia::Stored(&ready(third.id(), 1, T0)));
        assert!(matches!(r, Err(CreateObjectError::NotACollection)), "{r:?}");
        assert_eq!(b.store.media(third.id()).unwrap(), None);
        assert_eq!(b.store.object_any_state(third.id()).unwrap(), None);
    }

    pub fn replacing_an_upload_returns_the_old_one(b: &Bench) {
        let old = b.started(1000, T0 + 3600);
        let id = old.object;
        assert!(locked(&b.lock(id, "p1/a", T0 + 60, T0)));
        let mut new = b.record(id, 2000, T0 + 7200);
        new.staging.state = "staging-new".into();
        new.filename = None;
        new.content_type = None;
        assert_eq!(b.store.replace_upload(&new).unwrap(), Some(old));
        assert_eq!(b.store.upload(id).unwrap(), Some(new.clone()));
        // The media record stays as it was until the new upload finishes.
        assert_eq!(b.store.media(id).unwrap(), Some(uploading(id)));
        // The new upload is nobody's: its predecessor's lock went with it.
        assert!(locked(&b.lock(id, "p2/b", T0 + 60, T0)));
        // An object with no upload gets one.
        assert_eq!(b.store.remove_upload(id).unwrap(), Some(new.clone()));
        assert_eq!(b.store.replace_upload(&new).unwrap(), None);
        assert_eq!(b.store.upload(id).unwrap(), Some(new));
    }

    pub fn the_lock_is_held_by_one_holder_until_its_lease_ends(b: &Bench) {
        let upload = b.started(1000, T0 + 3600);
        let id = upload.object;
        assert_eq!(
            b.lock(id, "p1/a", T0 + 60, T0),
            UploadLock::Locked(Box::new(upload))
        );
        assert_eq!(b.lock(id, "p1/b", T0 + 60, T0 + 1), UploadLock::Busy);
        // The holder may take it again (and extend its lease).
        assert!(locked(&b.lock(id, "p1/a", T0 + 120, T0 + 2)));
        // The lease ends at T0 + 120: still busy at that second, free after it.
        assert_eq!(b.lock(id, "p1/b", T0 + 200, T0 + 120), UploadLock::Busy);
        assert!(locked(&b.lock(id, "p1/b", T0 + 200, T0 + 121)));
        assert_eq!(b.lock(id, "p1/a", T0 + 300, T0 + 122), UploadLock::Busy);
        // Released, it is anyone's; another holder's release is a no-op.
        b.store.unlock_upload(id, "p1/a").unwrap();
        assert_eq!(b.lock(id, "p1/a", T0 + 300, T0 + 122), UploadLock::Busy);
        b.store.unlock_upload(id, "p1/b").unwrap();
        assert!(locked(&b.lock(id, "p1/a", T0 + 300, T0 + 122)));
        // No upload: missing, whether the object exists or not.
        assert_eq!(b.lock(b.library, "p1/a", T0 + 60, T0), UploadLock::Missing);
        assert_eq!(
            b.lock(b.object(ObjectType::Video).id(), "p1/a", T0 + 60, T0),
            UploadLock::Missing
        );
    }

    pub fn of_racing_lockers_exactly_one_wins(b: &Bench) {
        const RACERS: usize = 4;
        for round in 0..5 {
            let id = b.started(1000, T0 + 3600).object;
            let barrier = Barrier::new(RACERS);
            let wins: usize = std::thread::scope(|s| {
                let handles: Vec<_> = (0..RACERS)
                    .map(|i| {
                        let barrier = &barrier;
                        s.spawn(move || {
                            let holder = format!("racer-{round}-{i}");
                            barrier.wait();
                            b.lock(id, &holder, T0 + 60, T0)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .inspect(|l| assert!(!matches!(l, UploadLock::Missing), "{l:?}"))
                    .filter(locked)
                    .count()
            });
            assert_eq!(wins, 1, "round {round}");
        }
    }

    pub fn progress_is_saved_only_by_the_lock_holder(b: &Bench) {
        let upload = b.started(1000, T0 + 3600);
        let id = upload.object;
        assert!(locked(&b.lock(id, "p1/a", T0 + 60, T0)));
        let mut hash = ResumableSha256::new();
        hash.update(&[7u8; 300]);
        let progress = Progress {
            offset: 300,
            staging_state: "staging-300",
            hash: &hash,
            lock_until: at(T0 + 600),
        };
        assert!(!b.store.save_progress(id, "p1/b", progress).unwrap());
        assert_eq!(b.store.upload(id).unwrap(), Some(upload.clone()));
        assert!(
            !b.store
                .save_progress(b.object(ObjectType::Video).id(), "p1/a", progress)
                .unwrap()
        );
        assert!(b.store.save_progress(id, "p1/a", progress).unwrap());
        let mut expected = upload;
        expected.progress.offset = 300;
        expected.staging.state = "staging-300".into();
        expected.hash = hash.clone();
        assert_eq!(b.store.upload(id).unwrap(), Some(expected));
        // The lease was extended to T0 + 600.
        assert_eq!(b.lock(id, "p1/b", T0 + 900, T0 + 500), UploadLock::Busy);
        assert!(locked(&b.lock(id, "p1/b", T0 + 900, T0 + 601)));
        // Its former holder lost it.
        assert!(!b.store.save_progress(id, "p1/a", progress).unwrap());
    }

    pub fn finishing_needs_the_lock_and_returns_the_replaced_media(b: &Bench) {
        let upload = b.started(1000, T0 + 3600);
        let id = upload.object;
        let done = ready(id, 1000, T0 + 10);
        // Nobody holds the lock, then another holder does.
        assert_eq!(
            b.store.finish_upload(id, "p1/a", &done).unwrap(),
            Finish::LockLost
        );
        assert!(locked(&b.lock(id, "p1/b", T0 + 60, T0)));
        assert_eq!(
            b.store.finish_upload(id, "p1/a", &done).unwrap(),
            Finish::LockLost
        );
        assert_eq!(b.store.upload(id).unwrap(), Some(upload));
        assert_eq!(b.store.media(id).unwrap(), Some(uploading(id)));
        // The holder finishes.
        assert_eq!(
            b.store.finish_upload(id, "p1/b", &done).unwrap(),
            Finish::Finished(Some(uploading(id)))
        );
        assert_eq!(b.store.upload(id).unwrap(), None);
        assert_eq!(b.store.media(id).unwrap(), Some(done.clone()));
        assert_eq!(
            b.store.finish_upload(id, "p1/b", &done).unwrap(),
            Finish::LockLost
        );
        // A second upload of the object replaces the source, and hands back the first.
        let again = b.record(id, 500, T0 + 7200);
        assert_eq!(b.store.replace_upload(&again).unwrap(), None);
        assert_eq!(b.store.media(id).unwrap(), Some(done.clone()));
        assert!(locked(&b.lock(id, "p2/c", T0 + 60, T0 + 20)));
        let mut second = ready(id, 500, T0 + 30);
        second.state = MediaState::Queued;
        second.progress = 0;
        second.error = None;
        second.attempts = 0;
        if let Some(s) = second.source.as_mut() {
            s.filename = None;
            s.sha256 = [0x01; 32];
            s.key = StorageKey::parse(&format!("objects/{id}/source-2")).unwrap();
        }
        assert_eq!(
            b.store.finish_upload(id, "p2/c", &second).unwrap(),
            Finish::Finished(Some(done))
        );
        assert_eq!(b.store.media(id).unwrap(), Some(second));
        // An object with no media record gets one.
        let object = b.object(ObjectType::Video);
        b.store.create_in_collection(&object, b.library).unwrap();
        let fresh = b.record(object.id(), 5, T0 + 60);
        assert_eq!(b.store.replace_upload(&fresh).unwrap(), None);
        assert_eq!(b.store.media(object.id()).unwrap(), None);
        assert!(locked(&b.lock(object.id(), "p1/a", T0 + 60, T0)));
        let done = ready(object.id(), 5, T0 + 1);
        assert_eq!(
            b.store.finish_upload(object.id(), "p1/a", &done).unwrap(),
            Finish::Finished(None)
        );
        assert_eq!(b.store.media(object.id()).unwrap(), Some(done));
    }

    pub fn removing_an_upload_returns_it_and_keeps_the_object(b: &Bench) {
        let upload = b.started(1000, T0 + 3600);
        let id = upload.object;
        assert_eq!(b.store.remove_upload(id).unwrap(), Some(upload));
        assert_eq!(b.store.remove_upload(id).unwrap(), None);
        assert_eq!(b.store.upload(id).unwrap(), None);
        assert_eq!(b.store.media(id).unwrap(), Some(uploading(id)));
        assert!(b.store.object(id).unwrap().is_some());
        assert_eq!(b.lock(id, "p1/a", T0 + 60, T0), UploadLock::Missing);
    }

    pub fn expired_uploads_come_oldest_first_up_to_the_limit(b: &Bench) {
        let late = b.started(1, T0 + 20);
        let first = b.started(1, T0 + 5);
        let second = b.started(1, T0 + 10);
        let due_now = b.started(1, T0 + 15);
        let now = at(T0 + 15);
        // Expired before `now`: not the one expiring at `now`, nor the later one.
        assert_eq!(
            b.store.expired_uploads(now, 10).unwrap(),
            vec![first.clone(), second]
        );
        assert_eq!(b.store.expired_uploads(now, 1).unwrap(), vec![first]);
        assert_eq!(b.store.expired_uploads(now, 0).unwrap(), vec![]);
        assert_eq!(b.store.expired_uploads(at(T0), 10).unwrap(), vec![]);
        assert_eq!(
            b.store.expired_uploads(at(T0 + 100), 10).unwrap().len(),
            4,
            "{due_now:?} {late:?}"
        );
        // Same expiry: by object id.
        let mut same: Vec<UploadRecord> = (0..3).map(|_| b.started(1, T0 + 1)).collect();
        same.sort_by_key(|u| u.object.to_string());
        assert_eq!(b.store.expired_uploads(at(T0 + 2), 10).unwrap(), same);
    }

    pub fn locks_are_released_by_holder_prefix(b: &Bench) {
        let holders = [
            "proc-1/a", "proc-1/b", "proc-2/c", "PROC-1/d", "proc_1/e", "proc-1",
        ];
        let ids: Vec<ObjectId> = holders
            .iter()
            .map(|h| {
                let id = b.started(1, T0 + 3600).object;
                assert!(locked(&b.lock(id, h, T0 + 60, T0)));
                id
            })
            .collect();
        // Neither a case-insensitive nor a LIKE match: `_` and `%` are themselves.
        assert_eq!(b.store.release_upload_locks("proc%").unwrap(), 0);
        assert_eq!(b.store.release_upload_locks("proc-1/").unwrap(), 2);
        for (id, holder) in ids.iter().zip(holders) {
            let free = holder.starts_with("proc-1/");
            assert_eq!(locked(&b.lock(*id, "new", T0 + 60, T0)), free, "{holder}");
        }
        assert_eq!(b.store.release_upload_locks("proc-1/").unwrap(), 0);
        assert_eq!(b.store.release_upload_locks("").unwrap(), 6);
    }

    pub fn stored_bytes_count_sources_and_unfinished_uploads(b: &Bench) {
        assert_eq!(b.store.stored_bytes().unwrap(), 0);
        let one = b.started(100, T0 + 3600).object;
        let two = b.started(50, T0 + 3600).object;
        assert_eq!(b.store.stored_bytes().unwrap(), 150);
        assert!(locked(&b.lock(one, "p", T0 + 60, T0)));
        b.store
            .finish_upload(one, "p", &ready(one, 80, T0))
            .unwrap();
        assert_eq!(b.store.stored_bytes().unwrap(), 130);
        b.store.remove_upload(two).unwrap();
        assert_eq!(b.store.stored_bytes().unwrap(), 80);
        let big = b.started(5_000_000_000, T0 + 3600).object;
        assert_eq!(b.store.stored_bytes().unwrap(), 5_000_000_080);
        b.store.remove_media(big).unwrap();
        b.store.remove_media(one).unwrap();
        assert_eq!(b.store.stored_bytes().unwrap(), 0);
    }

    pub fn the_first_signing_key_stays(b: &Bench) {
        let first = [0x11u8; 32];
        let second = [0x22u8; 32];
        assert_eq!(b.store.media_signing_key(&first).unwrap(), first.to_vec());
        assert_eq!(b.store.media_signing_key(&second).unwrap(), first.to_vec());
        assert_eq!(b.store.media_signing_key(&first).unwrap(), first.to_vec());
    }

    pub fn concurrent_first_starts_share_one_signing_key(b: &Bench) {
        const STARTS: u8 = 4;
        let barrier = Barrier::new(usize::from(STARTS));
        let keys: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..STARTS)
                .map(|i| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        b.store.media_signing_key(&[i; 32]).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
        assert_eq!(b.store.media_signing_key(&[0xff; 32]).unwrap(), keys[0]);
    }

    pub fn removing_media_returns_the_record_and_the_upload(b: &Bench) {
        let upload = b.started(1000, T0 + 3600);
        let id = upload.object;
        assert_eq!(
            b.store.remove_media(id).unwrap(),
            (Some(uploading(id)), Some(upload))
        );
        assert_eq!(b.store.media(id).unwrap(), None);
        assert_eq!(b.store.upload(id).unwrap(), None);
        assert_eq!(b.store.remove_media(id).unwrap(), (None, None));
        // A finished object: its record, no upload.
        let id = b.started(10, T0 + 3600).object;
        assert!(locked(&b.lock(id, "p", T0 + 60, T0)));
        let done = ready(id, 10, T0 + 1);
        b.store.finish_upload(id, "p", &done).unwrap();
        assert_eq!(b.store.remove_media(id).unwrap(), (Some(done), None));
        assert!(b.store.object(id).unwrap().is_some());
    }

    /// Objects with no derived files, beside processed ones.
    struct Underived {
        /// A video whose stored source waits for processing.
        waiting: ObjectId,
        /// A video still uploading.
        uploading: ObjectId,
        /// A catalog, which has no media.
        catalog: ObjectId,
        /// An id no object has.
        unknown: ObjectId,
    }

    fn underived(b: &Bench) -> Underived {
        let waiting = b.object(ObjectType::Video);
        let queued = MediaRecord {
            state: MediaState::Queued,
            ..ready(waiting.id(), 10, T0)
        };
        b.store
            .create_with_media(&waiting, b.library, NewMedia::Stored(&queued))
            .unwrap();
        let catalog = b.object(ObjectType::Catalog);
        b.store.create_in_collection(&catalog, b.library).unwrap();
        Underived {
            waiting: waiting.id(),
            uploading: b.started(100, T0 + 3600).object,
            catalog: catalog.id(),
            unknown: b.object(ObjectType::Video).id(),
        }
    }

    pub fn derived_files_are_read_for_many_objects_in_one_call(b: &Bench) {
        let one = derived("0a", &[(128, 128), (512, 512), (1280, 760)]);
        let two = derived("0b", &[(128, 128)]);
        let a = b.processed(&one);
        let c = b.processed(&two);
        let Underived {
            waiting,
            uploading,
            catalog,
            unknown,
        } = underived(b);

        let sorted = |mut v: Vec<(ObjectId, DerivedSet)>| {
            v.sort_by_key(|(id, _)| *id);
            v
        };
        let asked = [unknown, a, waiting, c, uploading, catalog, a];
        assert_eq!(
            sorted(b.store.derived_of(&asked).unwrap()),
            sorted(vec![(a, one.clone()), (c, two.clone())]),
            "each object with derived files once, the others left out"
        );
        assert_eq!(b.store.derived_of(&[]).unwrap(), vec![]);
        assert_eq!(b.store.derived_of(&[waiting]).unwrap(), vec![]);

        // More ids than one statement binds: still every one is looked at.
        let mut many: Vec<ObjectId> = (0..1200)
            .map(|_| b.object(ObjectType::Video).id())
            .collect();
        many.insert(700, c);
        many.push(a);
        assert_eq!(
            sorted(b.store.derived_of(&many).unwrap()),
            sorted(vec![(a, one.clone()), (c, two.clone())])
        );

        // A new source keeps the files derived from the old one until its own processing
        // ends: records show them meanwhile.
        let again = b.record(a, 10, T0 + 3600);
        b.store.replace_upload(&again).unwrap();
        assert!(locked(&b.lock(a, "p", T0 + 60, T0)));
        let requeued = MediaRecord {
            state: MediaState::Queued,
            ..ready(a, 10, T0 + 20)
        };
        b.store.finish_upload(a, "p", &requeued).unwrap();
        assert_eq!(b.store.derived_of(&[a]).unwrap(), vec![(a, one)]);
    }

    /// The facts a describe is decided on carry the object's derived files (its stills come
    /// from them, with no second read), as `media` reads them, for every reader.
    pub fn read_facts_carry_the_derived_files(b: &Bench) {
        let one = derived("0a", &[(128, 128), (512, 512)]);
        let a = b.processed(&one);
        let u = underived(b);
        let (lib, user) = (b.library, b.owner);
        for reader in [Reader::Anonymous, Reader::User(user)] {
            let facts = |o| b.store.read_facts(reader, lib, o).unwrap().derived;
            assert_eq!(facts(a), Some(one.clone()), "{reader:?}");
            for o in [u.waiting, u.uploading, u.catalog, u.unknown] {
                let stored = b.store.media(o).unwrap().and_then(|m| m.derived);
                assert_eq!(facts(o), stored, "{reader:?} {o}");
                assert_eq!(facts(o), None, "{reader:?} {o}");
            }
            // Through the object itself as the collection, as a catalog is described.
            let own = b.store.read_facts(reader, a, a).unwrap().derived;
            assert_eq!(own, Some(one.clone()), "{reader:?}");
        }
    }

    /// `media_of` reads what `media` reads, for many objects at once.
    pub fn media_records_are_read_for_many_objects_in_one_call(b: &Bench) {
        let a = b.processed(&derived("0a", &[(128, 128)]));
        let Underived {
            waiting,
            uploading,
            catalog,
            unknown,
        } = underived(b);
        let sorted = |mut v: Vec<MediaRecord>| {
            v.sort_by_key(|m| m.object);
            v
        };
        let one_by_one = |ids: &[ObjectId]| {
            sorted(
                ids.iter()
                    .filter_map(|id| b.store.media(*id).unwrap())
                    .collect(),
            )
        };
        let asked = [unknown, a, waiting, uploading, catalog, a];
        let records = sorted(b.store.media_of(&asked).unwrap());
        assert_eq!(
            records.len(),
            3,
            "a, the queued one and the upload, once each"
        );
        assert_eq!(records, one_by_one(&[a, waiting, uploading]));
        assert_eq!(b.store.media_of(&[]).unwrap(), vec![]);
        // More ids than one statement binds: still every one is looked at.
        let mut many: Vec<ObjectId> = (0..1200)
            .map(|_| b.object(ObjectType::Video).id())
            .collect();
        many.insert(700, waiting);
        many.push(a);
        assert_eq!(
            sorted(b.store.media_of(&many).unwrap()),
            one_by_one(&[a, waiting])
        );
    }
}

use cases::*;

medialib_adapters_diesel::backend_tests!(
    on [sqlite, memory, postgres] with Bench::run:
    media_records_are_read_for_many_objects_in_one_call,
    an_upload_created_with_its_object_reads_back,
    an_object_created_with_a_stored_source_has_its_media_and_no_upload,
    replacing_an_upload_returns_the_old_one,
    the_lock_is_held_by_one_holder_until_its_lease_ends,
    of_racing_lockers_exactly_one_wins,
    progress_is_saved_only_by_the_lock_holder,
    finishing_needs_the_lock_and_returns_the_replaced_media,
    removing_an_upload_returns_it_and_keeps_the_object,
    expired_uploads_come_oldest_first_up_to_the_limit,
    locks_are_released_by_holder_prefix,
    stored_bytes_count_sources_and_unfinished_uploads,
    the_first_signing_key_stays,
    concurrent_first_starts_share_one_signing_key,
    removing_media_returns_the_record_and_the_upload,
    derived_files_are_read_for_many_objects_in_one_call,
    read_facts_carry_the_derived_files,
);
