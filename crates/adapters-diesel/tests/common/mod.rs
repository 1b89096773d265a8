//! Shared fixtures for the integration tests: one fresh database per test, on either backend.

#![allow(dead_code, reason = "each test file uses a different subset")]

use diesel::sql_types::{BigInt, Text};
use diesel::{Connection, PgConnection, QueryableByName, RunQueryDsl, SqliteConnection};
use medialib_adapters_diesel::testing::{TestBackend, TestDb};
use medialib_adapters_diesel::{Backend, Database, PoolOptions};

/// A fresh, empty database and its pooled handle. `db` is declared first so it is dropped (its
/// connections closed) before `_test_db` removes the database.
pub struct Fixture {
    pub db: Database,
    pub url: String,
    _test_db: TestDb,
}

/// A fresh database on `backend` (PostgreSQL tests ask `testing::skipping_pg()` first).
pub fn fixture(backend: Backend) -> Fixture {
    let test_db = TestDb::create(backend);
    let db = Database::connect(&test_db.url, &PoolOptions::default()).unwrap();
    assert_eq!(db.backend(), backend);
    Fixture {
        db,
        url: test_db.url.clone(),
        _test_db: test_db,
    }
}

/// The runner of `backend_tests!` for tests written as `fn NAME(f: &Fixture)`.
pub fn run(backend: TestBackend, test: fn(&Fixture)) {
    test(&fixture(
        backend.database().expect("a fixture is a database"),
    ));
}

/// A direct (non-pooled) connection to the fixture's database, for inspecting it.
pub enum Raw {
    Sqlite(SqliteConnection),
    Postgres(PgConnection),
}

#[derive(QueryableByName, Debug)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

/// One column as the database reports it.
#[derive(QueryableByName, Debug, Clone, PartialEq, Eq)]
pub struct DbColumn {
    #[diesel(sql_type = Text)]
    pub table: String,
    #[diesel(sql_type = Text)]
    pub column: String,
    /// Upper-case type name: TEXT, BIGINT, BOOLEAN, INTEGER.
    #[diesel(sql_type = Text)]
    pub sql_type: String,
    #[diesel(sql_type = BigInt)]
    pub not_null: i64,
    /// 1-based position in the primary key, 0 if not part of it.
    #[diesel(sql_type = BigInt)]
    pub pk: i64,
}

impl Raw {
    pub fn open(f: &Fixture) -> Raw {
        match f.db.backend() {
            Backend::Sqlite => {
                let path = f.url.strip_prefix("sqlite://").unwrap();
                let mut c = SqliteConnection::establish(path).unwrap();
                // Like the pool's connections, so constraint checks behave the same.
                diesel::sql_query("PRAGMA foreign_keys = ON")
                    .execute(&mut c)
                    .unwrap();
                Raw::Sqlite(c)
            }
            Backend::Postgres => Raw::Postgres(PgConnection::establish(&f.url).unwrap()),
        }
    }

    /// Executes one statement.
    pub fn exec(&mut self, sql: &str) -> Result<usize, diesel::result::Error> {
        match self {
            Raw::Sqlite(c) => diesel::sql_query(sql).execute(c),
            Raw::Postgres(c) => diesel::sql_query(sql).execute(c),
        }
    }

    /// Runs a query returning one BIGINT column named `n`.
    pub fn count(&mut self, sql: &str) -> i64 {
        #[derive(QueryableByName)]
        struct N {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        match self {
            Raw::Sqlite(c) => diesel::sql_query(sql).get_result::<N>(c),
            Raw::Postgres(c) => diesel::sql_query(sql).get_result::<N>(c),
        }
        .unwrap()
        .n
    }

    /// The application's tables (excluding diesel's bookkeeping table), sorted.
    pub fn tables(&mut self) -> Vec<String> {
        let rows: Vec<Name> = match self {
            Raw::Sqlite(c) => diesel::sql_query(
                "SELECT name FROM sqlite_schema WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name <> '__diesel_schema_migrations' ORDER BY name",
            )
            .load(c),
            Raw::Postgres(c) => diesel::sql_query(
                "SELECT table_name::text AS name FROM information_schema.tables \
                 WHERE table_schema = 'public' AND table_name <> '__diesel_schema_migrations' \
                 ORDER BY name",
            )
            .load(c),
        }
        .unwrap();
        rows.into_iter().map(|r| r.name).collect()
    }

    /// The application's `idx_*` indexes, sorted.
    pub fn indexes(&mut self) -> Vec<String> {
        let rows: Vec<Name> = match self {
            Raw::Sqlite(c) => diesel::sql_query(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE 'idx\\_%' ESCAPE '\\' \
                 ORDER BY name",
            )
            .load(c),
            Raw::Postgres(c) => diesel::sql_query(
                "SELECT indexname::text AS name FROM pg_indexes WHERE schemaname = 'public' \
                 AND indexname LIKE 'idx\\_%' ORDER BY name",
            )
            .load(c),
        }
        .unwrap();
        rows.into_iter().map(|r| r.name).collect()
    }

    /// Every column of every application table, sorted by table then column name.
    pub fn columns(&mut self) -> Vec<DbColumn> {
        let mut out = Vec::new();
        match self {
            Raw::Sqlite(c) => {
                let tables = Raw::sqlite_tables(c);
                for table in tables {
                    let cols: Vec<DbColumn> = diesel::sql_query(
                        "SELECT ? AS \"table\", name AS \"column\", upper(type) AS sql_type, \
                         \"notnull\" AS not_null, pk FROM pragma_table_info(?)",
                    )
                    .bind::<Text, _>(&table)
                    .bind::<Text, _>(&table)
                    .load(c)
                    .unwrap();
                    out.extend(cols);
                }
            }
            Raw::Postgres(c) => {
                out = diesel::sql_query(
                    "SELECT c.table_name::text AS \"table\", c.column_name::text AS \"column\", \
                            upper(c.data_type::text) AS sql_type, \
                            CASE WHEN c.is_nullable = 'NO' THEN 1 ELSE 0 END::bigint AS not_null, \
                            COALESCE((SELECT k.ordinal_position FROM information_schema.key_column_usage k \
                                      JOIN information_schema.table_constraints t \
                                        ON t.constraint_name = k.constraint_name \
                                       AND t.table_schema = k.table_schema \
                                     WHERE t.constraint_type = 'PRIMARY KEY' \
                                       AND k.table_schema = c.table_schema \
                                       AND k.table_name = c.table_name \
                                       AND k.column_name = c.column_name), 0)::bigint AS pk \
                       FROM information_schema.columns c \
                      WHERE c.table_schema = 'public' \
                        AND c.table_name <> '__diesel_schema_migrations'",
                )
                .load(c)
                .unwrap();
            }
        }
        out.sort_by(|a, b| (&a.table, &a.column).cmp(&(&b.table, &b.column)));
        out
    }

    fn sqlite_tables(c: &mut SqliteConnection) -> Vec<String> {
        let rows: Vec<Name> = diesel::sql_query(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' AND name <> '__diesel_schema_migrations'",
        )
        .load(c)
        .unwrap();
        rows.into_iter().map(|r| r.name).collect()
    }
}
