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
use medialib_domain::{ObjectId, UniqueId, UserId};
use medialib_ports::{MediaRepository, StoreError, UserRepository};

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

medialib_adapters_diesel::backend_tests!(
    on [sqlite, postgres] with common::run:
    corrupt_rows_are_corrupt_errors,
);
