//! A stored row that does not parse into a domain value is a `StoreError::Corrupt`, never a
//! panic and never a default: rows written behind the service's back (by hand, by an older
//! or broken version) are read through the repository ports on both backends.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

mod common;

use common::{Fixture, Raw};
use medialib_adapters_diesel::DieselStore;
use medialib_domain::{ObjectId, Timestamp, UniqueId, UserId};
use medialib_ports::{
    LockRequest, MediaRepository, StoreError, UploadLock, UploadRepository, UserRepository,
};

const USER: &str = "01234567-89ab-cdef-0123-456789abcdef";
const OBJECT: &str = "fedcba98-7654-3210-fedc-ba9876543210";

fn corrupt_rows_are_corrupt_errors(f: &Fixture) {
    f.db.migrate(&mut |_| {}).unwrap();
    let mut raw = Raw::open(f);
    // A user whose uniqueId is empty, and one whose id is no id at all.
    raw.exec(&format!(
        "INSERT INTO users (id, unique_id, first_name, last_name, org_admin, created_at, \
         modified_at) VALUES ('{USER}', '', 'A', 'B', FALSE, 0, 0), \
         ('not-an-id', 'bob', 'B', 'C', FALSE, 0, 0)"
    ))
    .unwrap();
    // An object whose title is empty, owned by the user.
    raw.exec(&format!(
        "INSERT INTO objects (id, object_type, title, description, public, duration, owner_id, \
         shortcode, created_at, modified_at) \
         VALUES ('{OBJECT}', 'video', '', 'd', FALSE, NULL, '{USER}', 'abcdefgh', 0, 0)"
    ))
    .unwrap();
    let store = DieselStore::new(f.db.clone());
    // Rows are stored in the ids' hyphenated form, as the adapter writes them.
    assert_eq!(UserId::parse(USER).unwrap().to_string(), USER);
    let corrupt = |r: Result<(), StoreError>, what: &str| {
        assert!(
            matches!(r, Err(StoreError::Corrupt(_))),
            "{what}: {r:?} is not a Corrupt error"
        );
    };
    corrupt(
        store.user(UserId::parse(USER).unwrap()).map(drop),
        "an empty uniqueId",
    );
    corrupt(
        store
            .user_by_unique_id(&UniqueId::parse("bob").unwrap())
            .map(drop),
        "a malformed user id",
    );
    corrupt(
        store.object(ObjectId::parse(OBJECT).unwrap()).map(drop),
        "an empty title",
    );
    // Positive control: a row that parses reads back.
    raw.exec(
        "INSERT INTO users (id, unique_id, first_name, last_name, org_admin, created_at, \
         modified_at) VALUES ('00000000-0000-0000-0000-000000000001', 'carol', 'C', 'D', FALSE, 0, 0)",
    )
    .unwrap();
    let carol = store
        .user_by_unique_id(&UniqueId::parse("carol").unwrap())
        .unwrap()
        .expect("carol reads back");
    assert_eq!(carol.unique_id.as_str(), "carol");
}

/// Objects with an upload and media rows, one for each call that reads a corrupt row.
const UPLOADING: [&str; 4] = [
    "00000000-0000-0000-0000-0000000000a1",
    "00000000-0000-0000-0000-0000000000a2",
    "00000000-0000-0000-0000-0000000000a3",
    "00000000-0000-0000-0000-0000000000a4",
];

fn corrupt_upload_and_media_rows_are_corrupt_errors(f: &Fixture) {
    f.db.migrate(&mut |_| {}).unwrap();
    f.db.ensure_namespace([7; 16]).unwrap();
    let mut raw = Raw::open(f);
    raw.exec(&format!(
        "INSERT INTO users (id, unique_id, first_name, last_name, org_admin, created_at, \
         modified_at) VALUES ('{USER}', 'alice', 'A', 'B', FALSE, 0, 0)"
    ))
    .unwrap();
    let good_hash = medialib_domain::media::ResumableSha256::new().to_text();
    for (i, id) in UPLOADING.iter().enumerate() {
        raw.exec(&format!(
            "INSERT INTO objects (id, object_type, title, description, public, duration, \
             owner_id, shortcode, created_at, modified_at) \
             VALUES ('{id}', 'video', 't', 'd', FALSE, NULL, '{USER}', 'code{i}', 0, 0)"
        ))
        .unwrap();
        raw.exec(&format!(
            "INSERT INTO uploads (object_id, owner_id, length, offset_bytes, storage_key, \
             staging_state, sha256_state, created_at, expires_at) \
             VALUES ('{id}', '{USER}', 10, 0, 'objects/{id}/source', '', '{good_hash}', 0, 60)"
        ))
        .unwrap();
        raw.exec(&format!(
            "INSERT INTO media (object_id, state, source_key, source_size, source_sha256, \
             source_content_type, modified_at) VALUES ('{id}', 'ready', 'objects/{id}/source', \
             10, '{}', 'video/mp4', 0)",
            "ab".repeat(32)
        ))
        .unwrap();
    }
    let store = DieselStore::new(f.db.clone());
    let id = |i: usize| ObjectId::parse(UPLOADING[i]).unwrap();
    // Positive control: the rows as written read back.
    for i in 0..UPLOADING.len() {
        assert!(store.upload(id(i)).unwrap().is_some());
        assert!(store.media(id(i)).unwrap().is_some());
    }
    // The CHECK constraints keep out a state that is none.
    assert!(raw.exec("UPDATE media SET state = 'done'").is_err());
    for (table, column, value) in [
        ("uploads", "sha256_state", "'sha256:xyz'"),
        ("uploads", "storage_key", "'../escape'"),
        ("uploads", "filename", "'a/b'"),
        ("media", "source_sha256", "'not hex'"),
        ("media", "source_key", "'/rooted'"),
        ("media", "source_size", "NULL"),
        ("media", "source_filename", "'..'"),
    ] {
        // Every object's row: each call below reads another one.
        raw.exec(&format!("UPDATE {table} SET {column} = {value}"))
            .unwrap();
        let corrupt = |r: Result<(), StoreError>, how: &str| {
            assert!(
                matches!(r, Err(StoreError::Corrupt(_))),
                "{table}.{column} = {value}, {how}: {r:?} is not a Corrupt error"
            );
        };
        let now = Timestamp::from_epoch_seconds(0);
        let lock = LockRequest {
            holder: "h",
            until: now,
            now,
        };
        if table == "uploads" {
            corrupt(store.upload(id(0)).map(drop), "upload");
            corrupt(
                store.lock_upload(id(1), lock).map(|l| {
                    assert!(!matches!(l, UploadLock::Locked(_)), "{l:?}");
                }),
                "lock_upload",
            );
            corrupt(store.remove_upload(id(2)).map(drop), "remove_upload");
            corrupt(
                store
                    .expired_uploads(Timestamp::from_epoch_seconds(100), 10)
                    .map(drop),
                "expired_uploads",
            );
        } else {
            corrupt(store.media(id(0)).map(drop), "media");
            store.lock_upload(id(1), lock).unwrap();
            corrupt(
                store
                    .finish_upload(id(1), "h", &store_media_for(id(1)))
                    .map(drop),
                "finish_upload",
            );
        }
        corrupt(store.remove_media(id(3)).map(drop), "remove_media");
        // A Corrupt error rolled its transaction back: the rows are still there to be seen.
        assert_eq!(raw.count("SELECT count(*) AS n FROM uploads"), 4);
        assert_eq!(raw.count("SELECT count(*) AS n FROM media"), 4);
        // Put the good rows back for the next column.
        raw.exec(&format!(
            "UPDATE uploads SET sha256_state = '{good_hash}', filename = NULL, \
             storage_key = 'objects/' || object_id || '/source', lock_holder = NULL, lock_until = NULL"
        ))
        .unwrap();
        raw.exec(&format!(
            "UPDATE media SET source_sha256 = '{}', source_key = 'objects/' || object_id || '/source', \
             source_size = 10, source_filename = NULL",
            "ab".repeat(32)
        ))
        .unwrap();
    }
    // Derived files: a set reads back one by one and in a batch (positive control); text
    // that is no set is a Corrupt error either way.
    raw.exec("UPDATE media SET derived = 'v1 0a -\nstill\tstills/128x128.jpg\t10\t128x128\t-'")
        .unwrap();
    assert!(store.media(id(0)).unwrap().unwrap().derived.is_some());
    assert_eq!(store.derived_of(&[id(0), id(1)]).unwrap().len(), 2);
    raw.exec("UPDATE media SET derived = 'v1 0a -\nposter\ta.jpg\t1\t-\t-'")
        .unwrap();
    for (r, how) in [
        (store.media(id(0)).map(drop), "media"),
        (store.derived_of(&[id(1), id(2)]).map(drop), "derived_of"),
    ] {
        assert!(
            matches!(r, Err(StoreError::Corrupt(_))),
            "media.derived, {how}: {r:?} is not a Corrupt error"
        );
    }
    raw.exec("UPDATE media SET derived = NULL").unwrap();
    // A signing key that is no hex.
    raw.exec("UPDATE organization SET media_signing_key = 'xyz1'")
        .unwrap();
    assert!(matches!(
        store.media_signing_key(&[1; 32]),
        Err(StoreError::Corrupt(_))
    ));
    raw.exec("UPDATE organization SET media_signing_key = '0A0b'")
        .unwrap();
    assert_eq!(store.media_signing_key(&[1; 32]).unwrap(), vec![10, 11]);
}

/// A finished upload's media record for `object`.
fn store_media_for(object: ObjectId) -> medialib_ports::MediaRecord {
    medialib_ports::MediaRecord {
        object,
        state: medialib_domain::media::MediaState::Queued,
        progress: 0,
        error: None,
        attempts: 0,
        source: None,
        derived: None,
        modified: Timestamp::from_epoch_seconds(1),
    }
}

/// LTI rows: a platform whose unique-id claim is blank, a course whose library id is no id.
fn corrupt_lti_rows_are_corrupt_errors(f: &Fixture) {
    use medialib_domain::lti::CourseKey;
    use medialib_ports::LtiRepository;
    f.db.migrate(&mut |_| {}).unwrap();
    let mut raw = Raw::open(f);
    raw.exec(
        "INSERT INTO lti_platforms (issuer, client_id, auth_url, token_url, jwks_url, \
         unique_id_claim, created_at) VALUES ('https://lms.example', 'c1', 'https://lms.example/a', \
         'https://lms.example/t', 'https://lms.example/k', ' ', 0)",
    )
    .unwrap();
    raw.exec(&format!(
        "INSERT INTO users (id, unique_id, first_name, last_name, org_admin, created_at, \
         modified_at) VALUES ('{USER}', 'ann', 'A', 'B', FALSE, 0, 0)"
    ))
    .unwrap();
    raw.exec(&format!(
        "INSERT INTO objects (id, object_type, title, description, public, duration, owner_id, \
         shortcode, created_at, modified_at) \
         VALUES ('not-an-id', 'catalog', 't', 'd', FALSE, NULL, '{USER}', 'abcdefgh', 0, 0)"
    ))
    .unwrap();
    raw.exec(
        "INSERT INTO lti_courses (platform, context_id, library_id, created_at) \
         VALUES ('k', 'c', 'not-an-id', 0)",
    )
    .unwrap();
    let store = DieselStore::new(f.db.clone());
    let platforms = store.lti_platforms();
    assert!(
        matches!(platforms, Err(StoreError::Corrupt(_))),
        "{platforms:?}"
    );
    let course = store.course_library(&CourseKey::new("k", "c").unwrap());
    assert!(matches!(course, Err(StoreError::Corrupt(_))), "{course:?}");
    // Positive control: another course of the same shape but a real id reads back.
    assert_eq!(
        store
            .course_library(&CourseKey::new("k", "other").unwrap())
            .unwrap(),
        None
    );
}

medialib_adapters_diesel::backend_tests!(
    on [sqlite, postgres] with common::run:
    corrupt_rows_are_corrupt_errors,
    corrupt_upload_and_media_rows_are_corrupt_errors,
    corrupt_lti_rows_are_corrupt_errors,
);
