//! `Database`: connecting, migrations (up, no-op, down, up again), the organization namespace,
//! health checks, on SQLite and PostgreSQL.

#![cfg(test)]

mod common;

use common::{Fixture, Raw};
use diesel::connection::SimpleConnection;
use medialib_adapters_diesel::{Backend, ConnectError, Database, MigrateError, PoolOptions};

medialib_adapters_diesel::backend_tests!(
    on [sqlite, postgres] with common::run:
    migrate_applies_everything_once,
    down_and_up_round_trip,
    member_modified_at_is_backfilled_and_reverted,
    clustered_keys_keep_every_row_and_reference,
    namespace_is_created_once,
    concurrent_first_calls_agree,
    ping_and_pool_state,
);

/// Every migration version shipped, in order.
const ALL_VERSIONS: [&str; 10] = [
    "20261122000000",
    "20261122000001",
    "20261122000002",
    "20261122000003",
    "20261123000004",
    "20261125000005",
    "20261125000006",
    "20261128000007",
    "20261129000008",
    "20261202000009",
];

/// The media tables.
const MEDIA: &str = "20261125000005";
/// Jobs and derived files.
const JOBS: &str = "20261125000006";
/// Refresh tokens' successors.
const SUCCESSORS: &str = "20261128000007";
/// LTI.
const LTI: &str = "20261129000008";
/// The read-mostly tables clustered on their keys (SQLite), reverted first to reach older ones.
const CLUSTERED: &str = "20261202000009";

fn migrate_applies_everything_once(f: &Fixture) {
    assert_eq!(f.db.pending_migrations().unwrap(), ALL_VERSIONS);
    assert!(Raw::open(f).tables().is_empty());

    let mut seen = Vec::new();
    let applied = f.db.migrate(&mut |v| seen.push(v.to_owned())).unwrap();
    assert_eq!(applied, ALL_VERSIONS);
    assert_eq!(seen, ALL_VERSIONS, "progress is called once per version");
    assert!(f.db.pending_migrations().unwrap().is_empty());
    assert_eq!(Raw::open(f).tables().len(), 25);

    let mut called = false;
    let again = f.db.migrate(&mut |_| called = true).unwrap();
    assert!(again.is_empty(), "second migrate is a no-op: {again:?}");
    assert!(!called);

    // A second handle (a new process, in effect) agrees.
    let other = Database::connect(&f.url, &PoolOptions::default()).unwrap();
    assert!(other.migrate(&mut |_| {}).unwrap().is_empty());
}

fn down_and_up_round_trip(f: &Fixture) {
    f.db.migrate(&mut |_| {}).unwrap();
    let tables = Raw::open(f).tables();
    let ns = f.db.ensure_namespace([1; 16]).unwrap();

    let reverted = f.db.revert_all().unwrap();
    let newest_first: Vec<&str> = ALL_VERSIONS.iter().rev().copied().collect();
    assert_eq!(reverted, newest_first);
    assert!(
        Raw::open(f).tables().is_empty(),
        "down.sql leaves tables behind: {:?}",
        Raw::open(f).tables()
    );
    assert!(Raw::open(f).indexes().is_empty());
    assert_eq!(f.db.pending_migrations().unwrap(), ALL_VERSIONS);
    assert!(
        f.db.revert_all().unwrap().is_empty(),
        "nothing left to revert"
    );

    assert_eq!(f.db.migrate(&mut |_| {}).unwrap(), ALL_VERSIONS);
    assert_eq!(Raw::open(f).tables(), tables);
    // The data went with the tables: a new namespace is created.
    assert_ne!(f.db.ensure_namespace([2; 16]).unwrap(), ns);
}

/// `20261123000004`: memberships written before it get their member's `modified_at`; its
/// `down.sql` drops the column and its index and keeps the rows.
fn member_modified_at_is_backfilled_and_reverted(f: &Fixture) {
    const COPY: &str = "20261123000004";
    const INDEX: &str = "idx_memberships_collection_id_member_modified_at";
    let has_column = |raw: &mut Raw| {
        raw.columns()
            .iter()
            .any(|c| c.table == "memberships" && c.column == "member_modified_at")
    };
    assert_eq!(f.db.revert_last().unwrap(), None, "nothing applied yet");
    f.db.migrate(&mut |_| {}).unwrap();
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(CLUSTERED));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(LTI));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(SUCCESSORS));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(JOBS));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(MEDIA));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(COPY));
    let mut raw = Raw::open(f);
    assert!(!has_column(&mut raw));
    for sql in [
        "INSERT INTO users (id, unique_id, first_name, last_name, created_at, modified_at) \
         VALUES ('u1', 'alice', 'A', 'L', 0, 0)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('c1', 'catalog', 't', '', TRUE, 'u1', 'sc1', 0, 10)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('v1', 'video', 't', '', FALSE, 'u1', 'sc2', 0, 20)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at, deleted_at) \
         VALUES ('v2', 'video', 't', '', FALSE, 'u1', 'sc3', 0, 30, 30)",
        "INSERT INTO memberships (collection_id, member_id, added_at) VALUES ('c1', 'v1', 5)",
        "INSERT INTO memberships (collection_id, member_id, added_at) VALUES ('c1', 'v2', 6)",
    ] {
        raw.exec(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    drop(raw);

    assert_eq!(
        f.db.migrate(&mut |_| {}).unwrap(),
        [COPY, MEDIA, JOBS, SUCCESSORS, LTI, CLUSTERED]
    );
    let mut raw = Raw::open(f);
    assert!(has_column(&mut raw));
    assert!(raw.indexes().iter().any(|i| i == INDEX));
    for (member, added, modified) in [("v1", 5, 20), ("v2", 6, 30)] {
        let sql = format!(
            "SELECT count(*) AS n FROM memberships WHERE collection_id = 'c1' \
             AND member_id = '{member}' AND added_at = {added} AND member_modified_at = {modified}"
        );
        assert_eq!(raw.count(&sql), 1, "{sql}");
    }
    drop(raw);

    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(CLUSTERED));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(LTI));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(SUCCESSORS));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(JOBS));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(MEDIA));
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(COPY));
    let mut raw = Raw::open(f);
    assert!(!has_column(&mut raw));
    assert!(!raw.indexes().iter().any(|i| i == INDEX));
    assert_eq!(
        raw.count("SELECT count(*) AS n FROM memberships WHERE collection_id = 'c1'"),
        2,
        "down.sql keeps the memberships"
    );
    drop(raw);
    assert_eq!(
        f.db.migrate(&mut |_| {}).unwrap(),
        [COPY, MEDIA, JOBS, SUCCESSORS, LTI, CLUSTERED]
    );
}

/// `20261202000009`: the read-mostly tables rebuilt clustered on their keys (SQLite; nothing on
/// PostgreSQL) keep every row, of their own and of the tables that point at them, and their
/// foreign keys still act afterwards; `down.sql` rebuilds them as rowid tables, rows kept.
fn clustered_keys_keep_every_row_and_reference(f: &Fixture) {
    /// The tables the migration rebuilds on SQLite.
    const REBUILT: [&str; 8] = [
        "users",
        "oauth_clients",
        "oauth_client_redirect_uris",
        "oauth_grants",
        "objects",
        "object_properties",
        "memberships",
        "permissions",
    ];
    const CLUSTERED_TABLES: &str = "SELECT count(*) AS n FROM sqlite_schema \
        WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID'";
    let sqlite = f.db.backend() == Backend::Sqlite;
    f.db.migrate(&mut |_| {}).unwrap();
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(CLUSTERED));
    let mut raw = Raw::open(f);
    if sqlite {
        assert_eq!(
            raw.count(CLUSTERED_TABLES),
            0,
            "down.sql left a table clustered"
        );
    }
    for sql in [
        "INSERT INTO users (id, unique_id, first_name, last_name, org_admin, created_at, \
         modified_at) VALUES ('u1', 'alice', 'A', 'L', TRUE, 1, 2)",
        "INSERT INTO users (id, unique_id, first_name, last_name, created_at, modified_at) \
         VALUES ('u2', 'bob', 'B', 'M', 3, 4)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('c1', 'catalog', 'Library', '', TRUE, 'u1', 'sc1', 0, 10)",
        "INSERT INTO objects (id, object_type, title, description, public, duration, owner_id, \
         shortcode, created_at, modified_at, deleted_at, deleted_from) VALUES ('v1', 'video', \
         'Clip', 'About the clip', FALSE, 42, 'u2', 'sc2', 5, 20, 30, 'c1')",
        "INSERT INTO memberships (collection_id, member_id, added_at, member_modified_at) \
         VALUES ('c1', 'v1', 6, 20)",
        "INSERT INTO object_properties (object_id, key, value) VALUES ('v1', 'course', 'CS101')",
        "INSERT INTO permissions (collection_id, user_id, level, granted_at) \
         VALUES ('c1', 'u2', 'view', 7)",
        "INSERT INTO oauth_clients (id, name, secret_digest, created_at) \
         VALUES ('k1', 'LMS', 'abc', 8)",
        "INSERT INTO oauth_client_redirect_uris (client_id, uri, position) \
         VALUES ('k1', 'https://lms.example/cb', 0)",
        "INSERT INTO oauth_grants (id, client_id, user_id, scope, offline, created_at) \
         VALUES ('g1', 'k1', 'u2', 'read', TRUE, 9)",
        "INSERT INTO oauth_access_tokens (digest, grant_id, user_id, client_id, scope, \
         created_at, expires_at) VALUES ('d1', 'g1', 'u2', 'k1', 'read', 9, 99)",
        "INSERT INTO oauth_refresh_tokens (digest, grant_id, created_at, expires_at) \
         VALUES ('r1', 'g1', 9, 99)",
        "INSERT INTO media (object_id, state, modified_at) VALUES ('v1', 'ready', 20)",
    ] {
        raw.exec(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let tables = raw.tables();
    let counts = |raw: &mut Raw| -> Vec<i64> {
        tables
            .iter()
            .map(|t| raw.count(&format!("SELECT count(*) AS n FROM {t}")))
            .collect()
    };
    let before = counts(&mut raw);
    assert_eq!(before.iter().sum::<i64>(), 13, "the rows above");
    drop(raw);

    assert_eq!(f.db.migrate(&mut |_| {}).unwrap(), [CLUSTERED]);
    let mut raw = Raw::open(f);
    assert_eq!(counts(&mut raw), before, "a row was lost: {tables:?}");
    if sqlite {
        assert_eq!(raw.count(CLUSTERED_TABLES), REBUILT.len() as i64);
        for t in REBUILT {
            let sql = format!(
                "SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table' AND name = '{t}' \
                 AND sql LIKE '%WITHOUT ROWID'"
            );
            assert_eq!(raw.count(&sql), 1, "{t} is not clustered");
        }
    }
    // A crash between the migration's COMMIT and diesel's record of its version runs it
    // again at the next start (docs/storage.md): the second run rebuilds the same tables to
    // the same result.
    if let Raw::Sqlite(c) = &mut raw {
        c.batch_execute(include_str!(
            "../../../migrations/sqlite/2026-12-02-000009_clustered_keys/up.sql"
        ))
        .unwrap();
        assert_eq!(counts(&mut raw), before, "a second run lost a row");
        assert_eq!(raw.count(CLUSTERED_TABLES), REBUILT.len() as i64);
    }
    // Every column came across, NULLs and all.
    assert_eq!(
        raw.count(
            "SELECT count(*) AS n FROM objects WHERE id = 'v1' AND object_type = 'video' \
             AND title = 'Clip' AND description = 'About the clip' AND public = FALSE \
             AND duration = 42 AND owner_id = 'u2' AND shortcode = 'sc2' AND created_at = 5 \
             AND modified_at = 20 AND deleted_at = 30 AND deleted_from = 'c1'"
        ),
        1
    );
    assert_eq!(
        raw.count(
            "SELECT count(*) AS n FROM users WHERE id = 'u1' AND org_admin = TRUE \
             AND created_at = 1 AND modified_at = 2"
        ),
        1
    );
    assert_eq!(
        raw.count(
            "SELECT count(*) AS n FROM oauth_grants WHERE id = 'g1' AND revoked_at IS NULL \
             AND offline = TRUE"
        ),
        1
    );
    // The constraints came across: a duplicate key, a second shortcode, a bad level and a
    // reference to nothing are refused.
    for sql in [
        "INSERT INTO users (id, unique_id, first_name, last_name, created_at, modified_at) \
         VALUES ('u1', 'carol', 'C', 'N', 0, 0)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('v9', 'video', 't', '', FALSE, 'u1', 'sc2', 0, 0)",
        "INSERT INTO permissions (collection_id, user_id, level, granted_at) \
         VALUES ('c1', 'u1', 'owner', 0)",
        "INSERT INTO object_properties (object_id, key, value) VALUES ('nope', 'k', 'v')",
    ] {
        assert!(raw.exec(sql).is_err(), "accepted after the rebuild: {sql}");
    }
    // The children's ON DELETE CASCADE still acts: the grant takes its tokens with it, the
    // object its membership, property and media.
    raw.exec("DELETE FROM oauth_grants WHERE id = 'g1'")
        .unwrap();
    raw.exec("DELETE FROM objects WHERE id = 'v1'").unwrap();
    for table in [
        "oauth_access_tokens",
        "oauth_refresh_tokens",
        "memberships",
        "object_properties",
        "media",
    ] {
        let n = raw.count(&format!("SELECT count(*) AS n FROM {table}"));
        assert_eq!(n, 0, "{table} kept a row of a deleted parent");
    }
    let left = counts(&mut raw);
    drop(raw);

    // down.sql: rowid tables again, with every row left (none cascaded away).
    assert_eq!(f.db.revert_last().unwrap().as_deref(), Some(CLUSTERED));
    let mut raw = Raw::open(f);
    if sqlite {
        assert_eq!(raw.count(CLUSTERED_TABLES), 0);
    }
    assert_eq!(counts(&mut raw), left, "down.sql lost a row: {tables:?}");
    drop(raw);
    assert_eq!(f.db.migrate(&mut |_| {}).unwrap(), [CLUSTERED]);
}

fn namespace_is_created_once(f: &Fixture) {
    f.db.migrate(&mut |_| {}).unwrap();
    let first = f.db.ensure_namespace([0x42; 16]).unwrap();
    assert_eq!(first, "42424242-4242-4242-8242-424242424242");
    let second = f.db.ensure_namespace([0x99; 16]).unwrap();
    assert_eq!(second, first, "ensure_namespace is idempotent");
    let other = Database::connect(&f.url, &PoolOptions::default()).unwrap();
    assert_eq!(other.ensure_namespace([0x17; 16]).unwrap(), first);
}

fn concurrent_first_calls_agree(f: &Fixture) {
    f.db.migrate(&mut |_| {}).unwrap();
    let results: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8u8)
            .map(|i| {
                let db = f.db.clone();
                s.spawn(move || db.ensure_namespace([i; 16]).unwrap())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results.iter().all(|r| r == &results[0]), "{results:?}");
}

fn ping_and_pool_state(f: &Fixture) {
    f.db.ping().unwrap();
    let (connections, idle) = f.db.pool_state();
    assert!(
        connections >= 1 && idle <= connections,
        "{connections} {idle}"
    );
    assert_eq!(
        f.db.backend().to_string(),
        match f.db.backend() {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    );
    // Handles are cheap clones sharing the pool.
    f.db.clone().ping().unwrap();
}

/// Concurrent migrators on one PostgreSQL database: the advisory lock lets exactly one apply.
#[test]
fn postgres_concurrent_migrate_applies_once() {
    if medialib_adapters_diesel::testing::skipping_pg() {
        return;
    }
    let f = common::fixture(Backend::Postgres);
    let applied: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let url = f.url.clone();
                s.spawn(move || {
                    let db = Database::connect(&url, &PoolOptions::default()).unwrap();
                    db.migrate(&mut |_| {}).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: usize = applied.iter().map(Vec::len).sum();
    assert_eq!(total, ALL_VERSIONS.len(), "{applied:?}");
}

#[test]
fn sqlite_memory_works_through_the_pool() {
    let db = Database::connect("sqlite::memory:", &PoolOptions::default()).unwrap();
    assert_eq!(db.backend(), Backend::Sqlite);
    assert_eq!(db.migrate(&mut |_| {}).unwrap(), ALL_VERSIONS);
    assert!(db.pending_migrations().unwrap().is_empty());
    let ns = db.ensure_namespace([3; 16]).unwrap();
    assert_eq!(db.clone().ensure_namespace([4; 16]).unwrap(), ns);
    assert_eq!(db.pool_state(), (1, 1));
}

#[test]
fn sqlite_url_forms_and_directory_creation() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b/c.db");
    let db = Database::connect(
        &format!("sqlite://{}", nested.display()),
        &PoolOptions::default(),
    )
    .unwrap();
    db.migrate(&mut |_| {}).unwrap();
    assert!(nested.exists());
    drop(db);
    // `sqlite:PATH` opens the same file.
    let db = Database::connect(
        &format!("sqlite:{}", nested.display()),
        &PoolOptions::default(),
    )
    .unwrap();
    assert!(db.pending_migrations().unwrap().is_empty());
}

#[test]
fn bad_urls_are_rejected() {
    for url in [
        "",
        "mysql://root@localhost/db",
        "/tmp/x.db",
        "sqlite://",
        "http://x",
    ] {
        let err = Database::connect(url, &PoolOptions::default()).unwrap_err();
        assert!(
            matches!(err, ConnectError::UnsupportedUrl(_)),
            "{url}: {err:?}"
        );
    }
    let err = Database::connect("mysql://root:hunter22@db/x", &PoolOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("mysql://root:***@db/x"), "{msg}");
    assert!(!msg.contains("hunter22"), "{msg}");
    assert!(!format!("{err:?}").contains("hunter22"));
}

#[test]
fn unreachable_postgres_is_a_pool_error_without_password() {
    let opts = PoolOptions {
        connection_timeout: std::time::Duration::from_secs(1),
        ..PoolOptions::default()
    };
    // Port 1 on loopback: connection refused at once.
    let err = Database::connect("postgres://postgres:hunter22@127.0.0.1:1/x", &opts).unwrap_err();
    assert!(matches!(err, ConnectError::Pool(_)), "{err:?}");
    let msg = err.to_string();
    assert!(!msg.contains("hunter22"), "{msg}");
    assert!(
        msg.contains("postgres://postgres:***@127.0.0.1:1/x"),
        "{msg}"
    );
}

#[test]
fn unopenable_sqlite_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // The "directory" is a file, so it cannot be created.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let url = format!("sqlite://{}/db.sqlite", blocker.display());
    let err = Database::connect(&url, &PoolOptions::default()).unwrap_err();
    assert!(matches!(err, ConnectError::Io(_)), "{err:?}");
}

#[test]
fn migrate_error_messages() {
    assert_eq!(
        MigrateError::Failed("x".into()).to_string(),
        "migration failed: x"
    );
}
