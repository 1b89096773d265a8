//! Test helpers (cargo feature `testing`): throwaway PostgreSQL databases and SQLite test URLs.
//!
//! PostgreSQL tests connect to an admin URL,
//! `postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable` unless the environment variable [`PG_URL_ENV`] (`MEDIALIB_TEST_PG_URL`) says otherwise, and create one
//! database per test. If PostgreSQL is unreachable the test fails with an explanation, unless
//! [`SKIP_PG_ENV`] (`MEDIALIB_TEST_SKIP_PG=1`) is set, in which case
//! [`PgTestDb::create_or_skip`] returns `None` without trying.
//!
//! ```ignore
//! let Some(pg) = PgTestDb::create_or_skip() else { return };
//! let db = Database::connect(&pg.url, &PoolOptions::default())?;
//! // ... `pg` drops the database when it goes out of scope (declare it before `db`).
//! ```
//!
//! A test written once for several backends is instantiated by [`backend_tests!`]: one module
//! per backend (`sqlite`, `postgres`, `memory`), each with one test per name, so the tests are
//! named `…::sqlite::NAME`, `…::postgres::NAME` and `…::memory::NAME`. The PostgreSQL ones
//! return at once when [`skip_pg`] is set, before anything connects.
//!
//! [`backend_tests!`]: crate::backend_tests

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use diesel::{Connection, PgConnection, RunQueryDsl};

use crate::{Backend, url};

/// Environment variable holding the PostgreSQL admin URL for tests.
pub const PG_URL_ENV: &str = "MEDIALIB_TEST_PG_URL";
/// Environment variable that, set to `1`, skips the PostgreSQL tests.
pub const SKIP_PG_ENV: &str = "MEDIALIB_TEST_SKIP_PG";
/// The admin URL used when [`PG_URL_ENV`] is unset.
///
/// Without TLS: the server is on loopback, and with libpq's default `sslmode=prefer` every test
/// connection sets up OpenSSL, whose clean-up at process exit is the likely cause of a test
/// binary that had passed dying on SIGSEGV as it exited (once, in CI, 2026-11-25).
pub const DEFAULT_PG_ADMIN_URL: &str =
    "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable";

/// Whether `MEDIALIB_TEST_SKIP_PG` asks to skip the PostgreSQL tests (`1` or `true`).
pub fn skip_pg() -> bool {
    std::env::var(SKIP_PG_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// [`skip_pg`], with a note on stderr when it is set: every PostgreSQL test asks this first
/// (directly, or through [`PgTestDb::create_or_skip`] and the test macros) and returns.
pub fn skipping_pg() -> bool {
    let skip = skip_pg();
    if skip {
        eprintln!("{SKIP_PG_ENV} is set: skipping a PostgreSQL test");
    }
    skip
}

/// The PostgreSQL admin URL for tests ([`PG_URL_ENV`] or [`DEFAULT_PG_ADMIN_URL`]).
pub fn pg_admin_url() -> String {
    std::env::var(PG_URL_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_PG_ADMIN_URL.to_owned())
}

/// A `sqlite://` URL for a database file named `medialib.db` inside `dir` (e.g. a temp dir).
pub fn sqlite_test_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("medialib.db").display())
}

/// A freshly created, empty PostgreSQL database `medialib_t_<random hex>`, dropped (with
/// `WITH (FORCE)`, so open connections do not block it) when this value is dropped.
#[derive(Debug)]
pub struct PgTestDb {
    /// URL of the new database (the admin URL with the database name replaced).
    pub url: String,
    /// The database name.
    name: String,
    /// The admin URL used to create and drop it.
    admin_url: String,
}

impl PgTestDb {
    /// Creates the database; panics with an explanation if PostgreSQL is unreachable.
    #[allow(
        clippy::panic,
        reason = "a test helper: failing the test loudly is the point"
    )]
    pub fn create() -> PgTestDb {
        let admin_url = pg_admin_url();
        let mut admin = PgConnection::establish(&admin_url).unwrap_or_else(|e| {
            panic!(
                "PostgreSQL is unreachable at {} ({}). Start PostgreSQL (trust auth for user \
                 postgres on 127.0.0.1:5432), point {PG_URL_ENV} at an admin URL, or set \
                 {SKIP_PG_ENV}=1 to skip the PostgreSQL tests.",
                url::redact(&admin_url),
                url::scrub(e.to_string().trim_end(), &admin_url),
            )
        });
        let name = format!("medialib_t_{}", random_hex());
        if let Err(e) = diesel::sql_query(format!("CREATE DATABASE \"{name}\"")).execute(&mut admin)
        {
            panic!(
                "cannot create test database {name} via {}: {e}",
                url::redact(&admin_url)
            );
        }
        let Some(url) = with_database(&admin_url, &name) else {
            panic!(
                "{PG_URL_ENV} is not a postgres:// URL: {}",
                url::redact(&admin_url)
            );
        };
        PgTestDb {
            url,
            name,
            admin_url,
        }
    }

    /// `None` (after a note on stderr) when [`skip_pg`] is set; otherwise [`PgTestDb::create`].
    pub fn create_or_skip() -> Option<PgTestDb> {
        if skipping_pg() {
            return None;
        }
        Some(PgTestDb::create())
    }

    /// The database name (`medialib_t_<hex>`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for PgTestDb {
    fn drop(&mut self) {
        let dropped = PgConnection::establish(&self.admin_url)
            .map_err(|e| e.to_string())
            .and_then(|mut admin| {
                diesel::sql_query(format!(
                    "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                    self.name
                ))
                .execute(&mut admin)
                .map_err(|e| e.to_string())
            });
        if let Err(e) = dropped {
            eprintln!("warning: cannot drop test database {}: {e}", self.name);
        }
    }
}

/// A store that a test of [`backend_tests!`](crate::backend_tests) runs on; its module in the
/// test names is the variant's name in lower case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBackend {
    /// A SQLite file in a temporary directory.
    Sqlite,
    /// A throwaway database on the PostgreSQL server of [`PG_URL_ENV`].
    Postgres,
    /// The in-memory store of `medialib-adapters-memory` (no database).
    Memory,
}

impl TestBackend {
    /// Whether tests on this backend are skipped: the PostgreSQL ones when [`skip_pg`] is set
    /// (with the note of [`skipping_pg`]).
    pub fn skipped(self) -> bool {
        self == TestBackend::Postgres && skipping_pg()
    }

    /// The database engine of this backend; `None` for the in-memory store.
    pub fn database(self) -> Option<Backend> {
        match self {
            TestBackend::Sqlite => Some(Backend::Sqlite),
            TestBackend::Postgres => Some(Backend::Postgres),
            TestBackend::Memory => None,
        }
    }
}

/// A fresh, empty database for one test: a SQLite file in its own temporary directory, or a
/// [`PgTestDb`]. Dropping it removes the database.
#[derive(Debug)]
pub struct TestDb {
    /// The database's URL (`sqlite://…` or `postgres://…`).
    pub url: String,
    /// Removes the database when dropped.
    _keep: Keep,
}

#[derive(Debug)]
enum Keep {
    Sqlite(#[allow(dead_code, reason = "dropping it removes the file")] tempfile::TempDir),
    Postgres(#[allow(dead_code, reason = "dropping it drops the database")] PgTestDb),
}

impl TestDb {
    /// A fresh database on `backend`; panics when it cannot be made (PostgreSQL unreachable:
    /// see [`PgTestDb::create`]). It does not look at [`skip_pg`]: the tests of
    /// [`backend_tests!`](crate::backend_tests) do before they get here.
    #[allow(
        clippy::expect_used,
        reason = "a test helper: failing the test loudly is the point"
    )]
    pub fn create(backend: Backend) -> TestDb {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("cannot create a temporary directory");
                TestDb {
                    url: sqlite_test_url(dir.path()),
                    _keep: Keep::Sqlite(dir),
                }
            }
            Backend::Postgres => {
                let pg = PgTestDb::create();
                TestDb {
                    url: pg.url.clone(),
                    _keep: Keep::Postgres(pg),
                }
            }
        }
    }
}

/// The runner of [`backend_tests!`](crate::backend_tests) for tests written as
/// `fn NAME(db_url: &str)`: runs `test` on the URL of a fresh, empty [`TestDb`] of `backend`.
#[allow(
    clippy::panic,
    reason = "a test helper: failing the test loudly is the point"
)]
pub fn with_database_url(backend: TestBackend, test: impl FnOnce(&str)) {
    let Some(database) = backend.database() else {
        panic!("{backend:?} is not a database: a database URL test runs on sqlite or postgres");
    };
    let db = TestDb::create(database);
    test(&db.url);
}

/// Instantiates tests written once for several backends: for each backend listed, a module
/// of that name holding one test per name, which calls the runner with the [`TestBackend`]
/// and the function of that name in the invoking module. The runner prepares what the test
/// takes (a database URL, a fixture, a running app) and calls it.
///
/// ```ignore
/// // fn NAME(db_url: &str) on SQLite and PostgreSQL: `sqlite::NAME`, `postgres::NAME`.
/// backend_tests!(on [sqlite, postgres] with testing::with_database_url: first, second);
/// // async fn NAME(b: Backend) under tokio: `run(TestBackend, NAME)` is awaited.
/// backend_tests!(async on [sqlite, postgres] with crate::api::run: third, fourth);
/// ```
///
/// The runner's path is resolved in the invoking module. A test on `postgres` returns before
/// calling the runner when [`skip_pg`] is set (`MEDIALIB_TEST_SKIP_PG=1`), so no test made
/// here connects to PostgreSQL then.
#[macro_export]
macro_rules! backend_tests {
    (on [$($backend:ident),+ $(,)?] with $run:path : $($name:ident),+ $(,)?) => {
        $crate::backend_tests!(@each [$($backend)+] ([test] [] []) $run [$($name)+]);
    };
    (async on [$($backend:ident),+ $(,)?] with $run:path : $($name:ident),+ $(,)?) => {
        $crate::backend_tests!(
            @each [$($backend)+] ([::tokio::test] [async] [.await]) $run [$($name)+]
        );
    };
    // One module per backend.
    (@each [] $($rest:tt)*) => {};
    (@each [$backend:ident $($more:ident)*] $mode:tt $run:tt $names:tt) => {
        $crate::backend_tests!(@module $backend $mode $run $names);
        $crate::backend_tests!(@each [$($more)*] $mode $run $names);
    };
    (@module $backend:ident $mode:tt $run:tt [$($name:ident)+]) => {
        mod $backend {
            #[allow(unused_imports, reason = "the runner's path is the invoking module's")]
            use super::*;
            $( $crate::backend_tests!(@test $mode $backend $run $name); )+
        }
    };
    // One test: `mode` is its attribute, `async` or not, and `.await` or not.
    (@test ([$($attr:tt)+] [$($async:tt)?] [$($await:tt)*]) $backend:ident $run:tt $name:ident) => {
        #[$($attr)+]
        $($async)? fn $name() {
            let backend = $crate::backend_tests!(@backend $backend);
            if backend.skipped() {
                return;
            }
            $run(backend, super::$name) $($await)*;
        }
    };
    (@backend sqlite) => {
        $crate::testing::TestBackend::Sqlite
    };
    (@backend postgres) => {
        $crate::testing::TestBackend::Postgres
    };
    (@backend memory) => {
        $crate::testing::TestBackend::Memory
    };
}

/// `admin_url` with its database name replaced by `name` (query string kept).
fn with_database(admin_url: &str, name: &str) -> Option<String> {
    if !(admin_url.starts_with("postgres://") || admin_url.starts_with("postgresql://")) {
        return None;
    }
    let authority_start = admin_url.find("://")? + 3;
    let after = &admin_url[authority_start..];
    let authority_end = authority_start + after.find(['/', '?']).unwrap_or(after.len());
    let query = admin_url[authority_end..]
        .find('?')
        .map(|i| &admin_url[authority_end + i..])
        .unwrap_or("");
    Some(format!("{}/{name}{query}", &admin_url[..authority_end]))
}

/// 16 hex digits, distinct across calls and processes.
fn random_hex() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.write_u128(nanos);
    format!("{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_database_name() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "x").as_deref(),
            Some("postgres://postgres@127.0.0.1:5432/x")
        );
        assert_eq!(
            with_database("postgresql://u:p@h/admin?sslmode=disable", "x").as_deref(),
            Some("postgresql://u:p@h/x?sslmode=disable")
        );
        assert_eq!(
            with_database("postgres://h:5432", "x").as_deref(),
            Some("postgres://h:5432/x")
        );
        assert_eq!(
            with_database("postgres://h?sslmode=disable", "x").as_deref(),
            Some("postgres://h/x?sslmode=disable")
        );
        assert_eq!(with_database("sqlite://x", "x"), None);
    }

    #[test]
    fn random_names_differ() {
        assert_ne!(random_hex(), random_hex());
        assert_eq!(random_hex().len(), 16);
    }
}
