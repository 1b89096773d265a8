//! The upload, media and delivery use cases on the in-memory store and the in-memory media
//! store: tus creation, appends that break off and resume, checksums, limits, the lock, the
//! stored source and its delivery through signed URLs. No database, no disk:
//! `cargo test -p medialib-ports --test uploads`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use std::io::{self, Read};
use std::sync::Arc;

use medialib_adapters_memory::storage::MemoryStorage;
use medialib_adapters_memory::testing::{World, forbidden, world};
use medialib_domain::media::{
    MediaState, PatchChecksum, PatchRefused, UploadDescription, UploadLimits, UploadNotAdmitted,
    UrlRefused,
};
use medialib_domain::{IdOrZero, Lifetime, ObjectId, ObjectType, PermissionLevel, Refusal};
use medialib_ports::services::{
    AppendFailed, BeginUploadFailed, DeliverFailed, MediaFailed, PutFileFailed, Services,
    UploadSettings, UploadTarget,
};
use medialib_ports::{LockRequest, SourceFile, UploadLock};
use sha2::{Digest, Sha256};

/// The world with uploads into an in-memory media store that checkpoints every 4 bytes.
struct Uploads {
    w: World,
    s: Services,
    storage: Arc<MemoryStorage>,
}

fn settings() -> UploadSettings {
    UploadSettings {
        limits: UploadLimits {
            max_size: 1_000,
            quota: Some(2_000),
        },
        expiry: Lifetime::from_seconds(3_600).unwrap(),
        url_ttl: Lifetime::from_seconds(600).unwrap(),
        signing_key: None,
        instance: "test".into(),
    }
}

fn uploads() -> Uploads {
    let w = world();
    let storage = Arc::new(MemoryStorage::new(4));
    let s =
        w.h.services
            .clone()
            .with_storage(storage.clone(), settings());
    Uploads { w, s, storage }
}

fn into_lib(u: &Uploads) -> UploadTarget {
    UploadTarget {
        collection: u.w.lib,
        object: IdOrZero::Zero,
    }
}

fn described(pairs: &[(&str, &str)]) -> UploadDescription {
    UploadDescription::from_fields(pairs).unwrap()
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

/// A body that yields `bytes` and then fails as a dropped connection does.
struct BreaksOff(io::Cursor<Vec<u8>>);

impl Read for BreaksOff {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0.read(buf)? {
            0 => Err(io::Error::new(io::ErrorKind::ConnectionAborted, "gone")),
            n => Ok(n),
        }
    }
}

/// The source alice's upload to `object` stored.
fn source_of(u: &Uploads, object: ObjectId) -> SourceFile {
    u.s.uploads()
        .media(Some(&u.w.alice.as_caller()), u.w.lib, object)
        .unwrap()
        .record
        .source
        .unwrap()
}

/// Sends the rest of `bytes` from `offset` as alice; the upload finishes with it.
fn finish_from(u: &Uploads, object: ObjectId, offset: u64, bytes: &[u8]) {
    let alice = u.w.alice.as_caller();
    let done =
        u.s.uploads()
            .append(
                &alice,
                u.w.lib,
                object,
                offset,
                None,
                &mut &bytes[offset as usize..],
            )
            .unwrap();
    assert!(done.finished);
}

/// Begins an upload of `bytes` as alice into her library; returns the new object.
fn begin(u: &Uploads, length: usize) -> ObjectId {
    let alice = u.w.alice.as_caller();
    u.s.uploads()
        .begin(
            &alice,
            into_lib(u),
            length as u64,
            described(&[("filename", "clip.mp4"), ("title", "Clip")]),
        )
        .unwrap()
        .object
}

#[test]
fn an_upload_in_pieces_that_break_off_resumes_and_stores_the_exact_source() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let bytes = data(103);
    let object = begin(&u, bytes.len());
    // The new object is in the library, of the type the file name says, titled as asked.
    let stored = u.w.h.store.object(object).unwrap().unwrap();
    assert_eq!(stored.object_type(), ObjectType::Video);
    assert_eq!(stored.fields().title.as_str(), "Clip");
    assert!(u.w.h.store.is_member(u.w.lib, object).unwrap());
    assert_eq!(
        u.s.uploads()
            .media(Some(&alice), u.w.lib, object)
            .unwrap()
            .record
            .state,
        MediaState::Uploading
    );

    // 30 bytes, then the connection drops: the 30 stay (checkpointed every 4 bytes + at the break).
    let first = &bytes[..30];
    let r = u.s.uploads().append(
        &alice,
        u.w.lib,
        object,
        0,
        None,
        &mut BreaksOff(io::Cursor::new(first.to_vec())),
    );
    assert!(matches!(r, Err(AppendFailed::Body(_))), "{r:?}");
    let offset =
        u.s.uploads()
            .status(&alice, u.w.lib, object)
            .unwrap()
            .progress
            .offset;
    assert_eq!(offset, 30);

    // Resuming from a stale offset is a conflict; from the right one it continues.
    let r =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 10, None, &mut &bytes[10..]);
    assert_eq!(
        r,
        Err(AppendFailed::Patch(PatchRefused::OffsetMismatch {
            given: 10,
            expected: 30
        }))
    );
    let done =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 30, None, &mut &bytes[30..60])
            .unwrap();
    assert_eq!((done.offset, done.finished), (60, false));
    let done =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 60, None, &mut &bytes[60..])
            .unwrap();
    assert_eq!((done.offset, done.finished), (103, true));

    // The source is stored whole, its SHA-256 recorded; a video waits for processing.
    let view = u.s.uploads().media(Some(&alice), u.w.lib, object).unwrap();
    assert_eq!(view.record.state, MediaState::Queued);
    let source = view.record.source.clone().unwrap();
    assert_eq!(source.size, 103);
    assert_eq!(source.sha256, <[u8; 32]>::from(Sha256::digest(&bytes)));
    assert_eq!(u.storage.bytes(&source.key).unwrap(), bytes);
    assert_eq!(source.content_type, "video/mp4");
    // The upload is gone: HEAD says so.
    assert!(u.s.uploads().status(&alice, u.w.lib, object).is_err());
    let (_, staged) = u.storage.inventory();
    assert_eq!(staged, 0);
}

#[test]
fn the_delivery_url_opens_the_source_until_it_expires_and_not_when_tampered() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let bytes = data(50);
    let object = begin(&u, bytes.len());
    u.s.uploads()
        .append(&alice, u.w.lib, object, 0, None, &mut &bytes[..])
        .unwrap();
    let view = u.s.uploads().media(Some(&alice), u.w.lib, object).unwrap();
    let url = &view.files[0].path;
    let parts: Vec<&str> = url.trim_start_matches("/m/").split('/').collect();
    let [obj, expires, sig, file] = parts[..] else {
        panic!("{url}")
    };
    assert_eq!(obj, object.to_string());
    assert_eq!(file, "source.mp4");

    let delivery =
        u.s.uploads()
            .open_delivery(obj, expires, sig, file, false)
            .unwrap();
    assert_eq!(delivery.info.as_ref().unwrap().size, 50);
    assert_eq!(delivery.content_type, "video/mp4");
    let span = medialib_domain::media::ByteSpan::new(10, 5);
    let mut part = Vec::new();
    u.s.uploads()
        .read_delivery(&delivery, span)
        .unwrap()
        .body
        .read_to_end(&mut part)
        .unwrap();
    assert_eq!(part, bytes[10..15]);

    let mut forged = sig.to_owned();
    forged.replace_range(0..1, if sig.starts_with('A') { "B" } else { "A" });
    for (e, s, f) in [(expires, forged.as_str(), file), ("99999999999", sig, file)] {
        assert_eq!(
            u.s.uploads().open_delivery(obj, e, s, f, false).err(),
            Some(DeliverFailed::Url(UrlRefused::BadSignature))
        );
    }
    assert_eq!(
        u.s.uploads()
            .open_delivery(obj, expires, sig, "other.mp4", false)
            .err(),
        Some(DeliverFailed::Missing)
    );
    u.w.h.advance(601 + 60);
    assert_eq!(
        u.s.uploads()
            .open_delivery(obj, expires, sig, file, false)
            .err(),
        Some(DeliverFailed::Url(UrlRefused::Expired))
    );
}

#[test]
fn only_admins_with_a_writing_credential_may_upload() {
    let u = uploads();
    let (bob, carol) = (u.w.bob.as_caller(), u.w.carol.as_caller());
    let d = || described(&[("filename", "a.mp4")]);
    assert_eq!(
        u.s.uploads().begin(&bob, into_lib(&u), 10, d()).err(),
        Some(BeginUploadFailed::Refused(forbidden(
            PermissionLevel::Admin,
            PermissionLevel::View
        )))
    );
    assert_eq!(
        u.s.uploads().begin(&carol, into_lib(&u), 10, d()).err(),
        Some(BeginUploadFailed::Refused(forbidden(
            PermissionLevel::Admin,
            PermissionLevel::None
        )))
    );
    let read_only = u.w.h.token_caller(&u.w.alice, "read");
    assert_eq!(
        u.s.uploads().begin(&read_only, into_lib(&u), 10, d()).err(),
        Some(BeginUploadFailed::Refused(Refusal::ReadOnly))
    );
    assert!(!u.s.uploads().may_upload(&bob, into_lib(&u)).unwrap());
    assert!(
        u.s.uploads()
            .may_upload(&u.w.alice.as_caller(), into_lib(&u))
            .unwrap()
    );
    // Nothing was created for the refused ones.
    assert_eq!(u.storage.inventory().1, 0);
}

#[test]
fn limits_refuse_before_any_byte_and_the_quota_counts_unfinished_uploads() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let d = || described(&[("filename", "a.mp4")]);
    assert_eq!(
        u.s.uploads().begin(&alice, into_lib(&u), 1_001, d()).err(),
        Some(BeginUploadFailed::NotAdmitted(
            UploadNotAdmitted::TooLarge { max: 1_000 }
        ))
    );
    begin(&u, 1_000);
    begin(&u, 900);
    assert_eq!(
        u.s.uploads().begin(&alice, into_lib(&u), 101, d()).err(),
        Some(BeginUploadFailed::NotAdmitted(
            UploadNotAdmitted::QuotaExceeded
        ))
    );
    assert!(u.s.uploads().may_upload(&alice, into_lib(&u)).unwrap());
    begin(&u, 100);
    assert!(
        !u.s.uploads().may_upload(&alice, into_lib(&u)).unwrap(),
        "OPTIONS says no once the quota is full"
    );
}

#[test]
fn a_body_longer_than_the_upload_is_refused_and_a_bad_checksum_keeps_nothing() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let object = begin(&u, 10);
    let r =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 0, None, &mut &data(11)[..]);
    assert_eq!(r, Err(AppendFailed::TooLong));

    let other = begin(&u, 10);
    let wrong = PatchChecksum([0; 32]);
    let r =
        u.s.uploads()
            .append(&alice, u.w.lib, other, 0, Some(wrong), &mut &data(6)[..]);
    assert_eq!(r, Err(AppendFailed::ChecksumMismatch));
    assert_eq!(
        u.s.uploads()
            .status(&alice, u.w.lib, other)
            .unwrap()
            .progress
            .offset,
        0
    );
    let right = PatchChecksum(Sha256::digest(&data(6)[..]).into());
    let done =
        u.s.uploads()
            .append(&alice, u.w.lib, other, 0, Some(right), &mut &data(6)[..])
            .unwrap();
    assert_eq!(done.offset, 6);
}

#[test]
fn a_locked_upload_is_busy_until_its_lease_ends_and_a_restart_frees_its_own_locks() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let object = begin(&u, 10);
    let now = u.w.h.now();
    let later = medialib_domain::Timestamp::from_epoch_seconds(now.epoch_seconds() + 60);
    let held =
        u.w.h
            .store
            .lock_upload(
                object,
                LockRequest {
                    holder: "elsewhere:1",
                    until: later,
                    now,
                },
            )
            .unwrap();
    assert!(matches!(held, UploadLock::Locked(_)));
    let r =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 0, None, &mut &data(4)[..]);
    assert_eq!(r, Err(AppendFailed::Busy));
    u.w.h.advance(61);
    u.s.uploads()
        .append(&alice, u.w.lib, object, 0, None, &mut &data(4)[..])
        .unwrap();

    // A lock of this instance's earlier life ("test:…") is freed at start.
    let now = u.w.h.now();
    let later = medialib_domain::Timestamp::from_epoch_seconds(now.epoch_seconds() + 60);
    u.w.h
        .store
        .lock_upload(
            object,
            LockRequest {
                holder: "test:dead",
                until: later,
                now,
            },
        )
        .unwrap();
    assert_eq!(u.s.uploads().release_stale_locks().unwrap(), 1);
    u.s.uploads()
        .append(&alice, u.w.lib, object, 4, None, &mut &data(6)[4..])
        .unwrap();
}

#[test]
fn storage_failing_mid_upload_keeps_the_durable_prefix_and_the_upload_resumes() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let bytes = data(40);
    let object = begin(&u, bytes.len());
    u.storage.fail_after(13);
    let r =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 0, None, &mut &bytes[..]);
    assert!(matches!(r, Err(AppendFailed::Storage(_))), "{r:?}");
    let offset =
        u.s.uploads()
            .status(&alice, u.w.lib, object)
            .unwrap()
            .progress
            .offset;
    assert_eq!(offset, 12, "the last checkpoint before the failure");
    u.storage.set_down(false);
    finish_from(&u, object, offset, &bytes);
    let source = source_of(&u, object);
    assert_eq!(source.sha256, <[u8; 32]>::from(Sha256::digest(&bytes)));
}

#[test]
fn expired_uploads_are_refused_and_housekeeping_deletes_their_bytes() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let object = begin(&u, 10);
    u.s.uploads()
        .append(&alice, u.w.lib, object, 0, None, &mut &data(4)[..])
        .unwrap();
    assert_eq!(u.storage.inventory().1, 1);
    u.w.h.advance(3_601);
    let r =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 4, None, &mut &data(6)[..]);
    assert_eq!(r, Err(AppendFailed::Patch(PatchRefused::Expired)));
    assert_eq!(u.s.uploads().purge_expired_uploads().unwrap(), 1);
    assert_eq!(u.storage.inventory().1, 0);
    assert_eq!(u.s.uploads().purge_expired_uploads().unwrap(), 0);
}

#[test]
fn termination_and_media_removal_delete_the_bytes() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let object = begin(&u, 10);
    u.s.uploads().terminate(&alice, u.w.lib, object).unwrap();
    assert_eq!(u.storage.inventory().1, 0);

    let object = begin(&u, 4);
    u.s.uploads()
        .append(&alice, u.w.lib, object, 0, None, &mut &data(4)[..])
        .unwrap();
    assert_eq!(u.storage.inventory().0.len(), 1);
    // Viewers may read the media record, not remove it.
    let bob = u.w.bob.as_caller();
    assert!(u.s.uploads().media(Some(&bob), u.w.lib, object).is_ok());
    assert!(matches!(
        u.s.uploads().remove_media(&bob, u.w.lib, object),
        Err(MediaFailed::Refused(_))
    ));
    u.s.uploads().remove_media(&alice, u.w.lib, object).unwrap();
    assert!(u.storage.inventory().0.is_empty());
    assert_eq!(
        u.s.uploads().media(Some(&alice), u.w.lib, object).err(),
        Some(MediaFailed::NoMedia)
    );
    // The object itself stays.
    assert!(u.w.h.store.object(object).unwrap().is_some());
}

#[test]
fn a_new_upload_to_an_object_replaces_its_source_when_it_finishes() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let object = begin(&u, 4);
    u.s.uploads()
        .append(&alice, u.w.lib, object, 0, None, &mut &b"abcd"[..])
        .unwrap();
    let again = UploadTarget {
        collection: u.w.lib,
        object: IdOrZero::Id(object),
    };
    let upload =
        u.s.uploads()
            .begin(&alice, again, 3, described(&[("filename", "new.m4v")]))
            .unwrap();
    assert_eq!(upload.object, object);
    // Until it finishes, the old source stays.
    let old = source_of(&u, object);
    assert_eq!(u.storage.bytes(&old.key).unwrap(), b"abcd");
    u.s.uploads()
        .append(&alice, u.w.lib, object, 0, None, &mut &b"xyz"[..])
        .unwrap();
    let new = source_of(&u, object);
    assert_eq!(u.storage.bytes(&new.key).unwrap(), b"xyz");
    assert!(
        u.storage.bytes(&old.key).is_none(),
        "the replaced source is deleted"
    );
    // A catalog carries no media.
    let not_media = UploadTarget {
        collection: u.w.lib,
        object: IdOrZero::Id(u.w.lib),
    };
    assert_eq!(
        u.s.uploads()
            .begin(&alice, not_media, 3, described(&[]))
            .err(),
        Some(BeginUploadFailed::NotMedia)
    );
}

#[test]
fn the_one_shot_upload_stores_the_file_and_describes_the_object() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let body = data(77);
    let id =
        u.s.uploads()
            .put_file(
                &alice,
                u.w.lib,
                Some("notes.pdf"),
                &mut &body[..],
                &mut || vec![("description".to_owned(), "Week 1".to_owned())],
            )
            .unwrap();
    let object = u.w.h.store.object(id).unwrap().unwrap();
    assert_eq!(object.object_type(), ObjectType::File);
    assert_eq!(object.fields().title.as_str(), "notes.pdf");
    assert_eq!(object.fields().description.as_str(), "Week 1");
    let view = u.s.uploads().media(Some(&alice), u.w.lib, id).unwrap();
    assert_eq!(
        view.record.state,
        MediaState::Ready,
        "a file needs no processing"
    );
    assert_eq!(view.record.source.unwrap().size, 77);
    assert_eq!(
        u.w.h.store.upload(id).unwrap(),
        None,
        "the one-shot upload leaves no upload behind"
    );

    let too_big = data(1_001);
    assert_eq!(
        u.s.uploads()
            .put_file(
                &alice,
                u.w.lib,
                Some("big.bin"),
                &mut &too_big[..],
                &mut Vec::new
            )
            .err(),
        Some(PutFileFailed::NotAdmitted(UploadNotAdmitted::TooLarge {
            max: 1_000
        }))
    );
    assert_eq!(
        u.storage.inventory().0.len(),
        1,
        "nothing of the refused file is kept"
    );
    assert!(matches!(
        u.s.uploads()
            .put_file(&alice, u.w.lib, Some("../x"), &mut &body[..], &mut Vec::new),
        Err(PutFileFailed::Description(_))
    ));
}

#[test]
fn an_empty_upload_is_complete_with_its_first_empty_append() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let object = begin(&u, 0);
    let done =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 0, None, &mut &b""[..])
            .unwrap();
    assert!(done.finished);
    let source = source_of(&u, object);
    assert_eq!(source.size, 0);
    assert_eq!(source.sha256, <[u8; 32]>::from(Sha256::digest(b"")));
}

#[test]
fn a_finished_upload_whose_source_was_not_recorded_finishes_on_the_next_patch() {
    let u = uploads();
    let alice = u.w.alice.as_caller();
    let bytes = data(20);
    let object = begin(&u, bytes.len());
    // The last bytes arrive while the store fails at the very end: the bytes are durable and
    // the offset recorded, but the source was not stored.
    u.s.uploads()
        .append(&alice, u.w.lib, object, 0, None, &mut &bytes[..12])
        .unwrap();
    u.storage.fail_next_finish();
    let r =
        u.s.uploads()
            .append(&alice, u.w.lib, object, 12, None, &mut &bytes[12..]);
    assert!(matches!(r, Err(AppendFailed::Storage(_))), "{r:?}");
    let offset =
        u.s.uploads()
            .status(&alice, u.w.lib, object)
            .unwrap()
            .progress
            .offset;
    assert_eq!(
        offset, 20,
        "every byte is durable, the source not yet recorded"
    );
    finish_from(&u, object, offset, &bytes);
    let source = source_of(&u, object);
    assert_eq!(u.storage.bytes(&source.key).unwrap(), bytes);
}
