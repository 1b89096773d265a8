//! Test helpers (cargo feature `testing`): throwaway PostgreSQL databases and SQLite test URLs.
//!
//! PostgreSQL tests connect to an admin URL, `postgres://postgres@127.0.0.1:5432/postgres` unless
//! the environment variable [`PG_URL_ENV`] (`MEDIALIB_TEST_PG_URL`) says otherwise, and create one
//! database per test. If PostgreSQL is unreachable the test fails with an explanation, unless
//! [`SKIP_PG_ENV`] (`MEDIALIB_TEST_SKIP_PG=1`) is set, in which case
//! [`PgTestDb::create_or_skip`] returns `None` without trying.
//!
//! ```ignore
//! let Some(pg) = PgTestDb::create_or_skip() else { return };
//! let db = Database::connect(&pg.url, &PoolOptions::default())?;
//! // ... `pg` drops the database when it goes out of scope (declare it before `db`).
//! ```

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use diesel::{Connection, PgConnection, RunQueryDsl};

use crate::url;

/// Environment variable holding the PostgreSQL admin URL for tests.
pub const PG_URL_ENV: &str = "MEDIALIB_TEST_PG_URL";
/// Environment variable that, set to `1`, skips the PostgreSQL tests.
pub const SKIP_PG_ENV: &str = "MEDIALIB_TEST_SKIP_PG";
/// The admin URL used when [`PG_URL_ENV`] is unset.
pub const DEFAULT_PG_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

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
