//! Connection pools for SQLite and PostgreSQL, embedded migrations and health checks.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::r2d2::{
    ConnectionManager, CustomizeConnection, HandleError, ManageConnection, Pool, PooledConnection,
    R2D2Connection,
};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use medialib_ports::{StoreError, no_wait};

use crate::error::{DbError, PoolError};
use crate::macros::{with_conn, with_tx};
use crate::schema::organization;
use crate::url::{self, Target};

mod checkpoint;
mod gate;
use checkpoint::Checkpointer;
pub(crate) use gate::{Turn, WriteGate};

/// The SQLite migrations (`migrations/sqlite`), compiled in.
const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
/// The PostgreSQL migrations (`migrations/postgres`), compiled in.
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// Key of the PostgreSQL session advisory lock that serializes concurrent migrators
/// (the ASCII bytes of "medialib").
const PG_MIGRATION_LOCK: i64 = 0x6d65_6469_616c_6962;

/// Statements run on every new pooled SQLite connection, after `PRAGMA busy_timeout` (set to the
/// pool's `connection_timeout` and run first, so that even the switch to WAL waits for a
/// concurrent opener instead of failing with `SQLITE_BUSY`).
///
/// `journal_size_limit`: under a steady stream of overlapping transactions no checkpoint can
/// restart the WAL, so it grows (607 MB while the benchmark seeded 11 000 objects through four
/// connections; docs/storage.md); once the WAL is restarted, SQLite truncates the file back to
/// this size instead of keeping its high-water mark on disk.
const SQLITE_PRAGMAS: &str = "PRAGMA journal_mode = WAL; \
                              PRAGMA foreign_keys = ON; \
                              PRAGMA synchronous = NORMAL; \
                              PRAGMA journal_size_limit = 67108864;";

/// Which database engine a [`Database`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite (file or in-memory), the embedded default.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        })
    }
}

/// Connection-pool settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOptions {
    /// Maximum number of pooled connections (at least 1; `sqlite::memory:` always uses 1).
    pub max_size: u32,
    /// How long a checkout (and opening the pool) waits for a connection.
    pub connection_timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_size: 8,
            connection_timeout: Duration::from_secs(5),
        }
    }
}

/// Why [`Database::connect`] failed. Messages never contain a password from the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The URL is not one of the supported forms (the payload is the URL, password redacted).
    #[error(
        "unsupported database URL `{0}`: expected sqlite://PATH, sqlite:PATH, sqlite::memory:, \
         postgres://... or postgresql://..."
    )]
    UnsupportedUrl(String),
    /// A filesystem operation failed (e.g. creating the SQLite file's directory).
    #[error("database I/O error: {0}")]
    Io(String),
    /// The pool could not be built or its first connection could not be opened.
    #[error("cannot connect to the database: {0}")]
    Pool(String),
}

/// Why a migration operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrateError {
    /// No connection could be obtained.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A migration (or reading the migration state) failed.
    #[error("migration failed: {0}")]
    Failed(String),
}

type SqlitePool = Pool<ConnectionManager<SqliteConnection>>;
type PgPool = Pool<PgManager>;

/// How long a PostgreSQL connection that passed its liveness check is handed out again without
/// another one. r2d2 checks on every checkout by default, a `SELECT 1` round trip that was half of
/// the round trips of a describe; within this window a connection that just answered is trusted
/// (the same trade as HikariCP's `aliveBypassWindowMs`). A connection that dies inside the window
/// fails one request with a 503 and is checked at its next checkout after the window.
const PG_CHECK_WINDOW: Duration = Duration::from_secs(1);

/// A pooled PostgreSQL connection and when it last proved alive.
pub(crate) struct PgConn {
    conn: PgConnection,
    checked: Instant,
}

impl Deref for PgConn {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl DerefMut for PgConn {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}

/// diesel's PostgreSQL connection manager, with the liveness check limited to once per
/// [`PG_CHECK_WINDOW`] per connection.
#[derive(Debug)]
pub(crate) struct PgManager {
    inner: ConnectionManager<PgConnection>,
    window: Duration,
}

impl ManageConnection for PgManager {
    type Connection = PgConn;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PgConn, Self::Error> {
        Ok(PgConn {
            conn: self.inner.connect()?,
            checked: Instant::now(),
        })
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), Self::Error> {
        if conn.checked.elapsed() < self.window {
            return Ok(());
        }
        conn.conn.ping().map_err(diesel::r2d2::Error::QueryError)?;
        conn.checked = Instant::now();
        Ok(())
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        self.inner.has_broken(&mut conn.conn)
    }
}

/// The pool of one backend; matched on by [`with_conn!`] and [`with_tx!`].
#[derive(Debug, Clone)]
pub(crate) enum Pools {
    /// SQLite connections (pragmas applied on acquire).
    Sqlite(SqlitePool),
    /// PostgreSQL connections.
    Postgres(PgPool),
}

/// A pooled database handle; cheap to clone (clones share the pool).
#[derive(Debug, Clone)]
pub struct Database {
    pools: Pools,
    gate: WriteGate,
    /// The WAL's checkpoint thread, on a SQLite file (db/checkpoint.rs); stopped with the last
    /// clone.
    _checkpoints: Option<Arc<Checkpointer>>,
}

impl Database {
    /// Parses the URL (`sqlite://PATH`, `sqlite:PATH`, `sqlite::memory:`, `postgres://…`,
    /// `postgresql://…`) and builds the pool.
    ///
    /// `sqlite://PATH` creates PATH's parent directory if missing. Every SQLite connection runs
    /// with WAL journaling, foreign keys on, a 5 s busy timeout and `synchronous=NORMAL`.
    ///
    /// `sqlite::memory:` gets a pool of exactly one connection that is never recycled: every
    /// SQLite in-memory connection is a separate, empty database, so a larger pool would scatter
    /// the data. Callers therefore serialize on that connection; it is meant for tests and demos.
    ///
    /// The first connection is opened eagerly, so an unreachable or unopenable database fails
    /// here with [`ConnectError::Pool`].
    pub fn connect(url: &str, opts: &PoolOptions) -> Result<Database, ConnectError> {
        if opts.max_size == 0 {
            return Err(ConnectError::Pool("max_size must be at least 1".to_owned()));
        }
        if opts.connection_timeout.is_zero() {
            return Err(ConnectError::Pool(
                "connection_timeout must be positive".to_owned(),
            ));
        }
        let target =
            url::parse(url).ok_or_else(|| ConnectError::UnsupportedUrl(url::redact(url)))?;
        let grouped = matches!(target, Target::SqliteFile(_));
        let gate = WriteGate::new(opts.connection_timeout, grouped);
        let mut checkpoints = None;
        let pools = match target {
            Target::SqliteFile(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        ConnectError::Io(format!("cannot create directory {}: {e}", dir.display()))
                    })?;
                }
                let path = path.to_string_lossy().into_owned();
                let pragmas = SqlitePragmas::new(opts, true);
                let pool = sqlite_pool(&path, opts, pragmas, false)?;
                let thread = Checkpointer::spawn(path, pragmas, gate.clone()).map_err(|e| {
                    ConnectError::Io(format!("cannot start the WAL checkpoint thread: {e}"))
                })?;
                checkpoints = Some(Arc::new(thread));
                Pools::Sqlite(pool)
            }
            Target::SqliteMemory => {
                let pragmas = SqlitePragmas::new(opts, false);
                Pools::Sqlite(sqlite_pool(":memory:", opts, pragmas, true)?)
            }
            Target::Postgres(url) => Pools::Postgres(pg_pool(&url, opts)?),
        };
        Ok(Database {
            pools,
            gate,
            _checkpoints: checkpoints,
        })
    }

    /// The engine behind this handle.
    pub fn backend(&self) -> Backend {
        match self.pools {
            Pools::Sqlite(_) => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
        }
    }

    /// Applies pending migrations, calling `progress` with each version before it is applied;
    /// returns the versions applied (empty = no-op).
    ///
    /// Each migration runs in its own transaction. On PostgreSQL a session advisory lock
    /// serializes concurrent migrators (e.g. several replicas starting at once).
    pub fn migrate(&self, progress: &mut dyn FnMut(&str)) -> Result<Vec<String>, MigrateError> {
        match &self.pools {
            Pools::Sqlite(pool) => {
                let mut conn = checkout(pool)?;
                MigrationSteps::apply_pending(&mut *conn, SQLITE_MIGRATIONS, progress)
            }
            Pools::Postgres(pool) => {
                let mut conn = checkout(pool)?;
                with_pg_migration_lock(&mut conn, |conn| {
                    conn.apply_pending(POSTGRES_MIGRATIONS, progress)
                })
            }
        }
    }

    /// Versions not yet applied, in the order [`migrate`](Self::migrate) would apply them.
    pub fn pending_migrations(&self) -> Result<Vec<String>, MigrateError> {
        match &self.pools {
            Pools::Sqlite(pool) => {
                MigrationSteps::pending_versions(&mut *checkout(pool)?, SQLITE_MIGRATIONS)
            }
            Pools::Postgres(pool) => {
                MigrationSteps::pending_versions(&mut **checkout(pool)?, POSTGRES_MIGRATIONS)
            }
        }
    }

    /// Reverts every applied migration, newest first (tests and `down.sql` round-trips);
    /// returns the versions reverted.
    pub fn revert_all(&self) -> Result<Vec<String>, MigrateError> {
        match &self.pools {
            Pools::Sqlite(pool) => {
                MigrationSteps::revert_everything(&mut *checkout(pool)?, SQLITE_MIGRATIONS)
            }
            Pools::Postgres(pool) => {
                let mut conn = checkout(pool)?;
                with_pg_migration_lock(&mut conn, |conn| {
                    conn.revert_everything(POSTGRES_MIGRATIONS)
                })
            }
        }
    }

    /// Reverts the newest applied migration (a migration's tests: rows written under the
    /// previous schema, then migrated); returns its version, `None` when none is applied.
    pub fn revert_last(&self) -> Result<Option<String>, MigrateError> {
        match &self.pools {
            Pools::Sqlite(pool) => {
                MigrationSteps::revert_newest(&mut *checkout(pool)?, SQLITE_MIGRATIONS)
            }
            Pools::Postgres(pool) => {
                let mut conn = checkout(pool)?;
                with_pg_migration_lock(&mut conn, |conn| conn.revert_newest(POSTGRES_MIGRATIONS))
            }
        }
    }

    /// Cheap reachability check for `/readyz`: checks out a connection and runs `SELECT 1`.
    pub fn ping(&self) -> Result<(), StoreError> {
        with_conn!(self, conn => {
            diesel::sql_query("SELECT 1")
                .execute(conn)
                .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        });
        Ok(())
    }

    /// Pool state for metrics: (connections, idle).
    pub fn pool_state(&self) -> (u32, u32) {
        let state = match &self.pools {
            Pools::Sqlite(pool) => pool.state(),
            Pools::Postgres(pool) => pool.state(),
        };
        (state.connections, state.idle_connections)
    }

    /// The most connections the pool opens (for the `/metrics` pool gauges).
    pub fn pool_max_size(&self) -> u32 {
        match &self.pools {
            Pools::Sqlite(pool) => pool.max_size(),
            Pools::Postgres(pool) => pool.max_size(),
        }
    }

    /// Returns the organization's namespace UUID, creating the organization row (id 1,
    /// `created_at` 0) with a version-4 UUID built from `random` if there is none yet.
    ///
    /// Idempotent: once a namespace is stored, later calls return it and ignore `random`
    /// (concurrent first calls agree too, thanks to `ON CONFLICT DO NOTHING`).
    pub fn ensure_namespace(&self, random: [u8; 16]) -> Result<String, StoreError> {
        if let Some(namespace) = read_namespace(self)? {
            return Ok(namespace);
        }
        let candidate = uuid::Builder::from_random_bytes(random)
            .into_uuid()
            .hyphenated()
            .to_string();
        let namespace = with_tx!(self, conn => {
            diesel::insert_into(organization::table)
                .values((
                    organization::id.eq(1),
                    organization::namespace.eq(&candidate),
                    organization::created_at.eq(0_i64),
                ))
                .on_conflict_do_nothing()
                .execute(conn)?;
            organization::table
                .find(1)
                .select(organization::namespace)
                .first::<String>(conn)
                .map_err(DbError::from)
        })?;
        Ok(namespace)
    }

    /// The backend's pool, for [`with_conn!`] and [`with_tx!`].
    pub(crate) fn pools(&self) -> &Pools {
        &self.pools
    }

    /// The gate every SQLite write of this process passes ([`with_tx!`], `with_write!`).
    pub(crate) fn write_gate(&self) -> &WriteGate {
        &self.gate
    }

    /// This process's turn to write: on SQLite the write gate, held until dropped; on
    /// PostgreSQL nothing (its writers wait on row locks).
    pub(crate) fn write_turn(&self) -> Result<Option<Turn<'_>>, PoolError> {
        match self.pools {
            Pools::Sqlite(_) => self.gate.enter().map(Some),
            Pools::Postgres(_) => Ok(None),
        }
    }
}

/// A SQLite connection for [`with_conn!`] and [`with_tx!`]: where waiting is allowed, the next
/// one free (at most `connection_timeout`); inside [`without_waiting`](no_wait::without_waiting),
/// an idle one or a refusal ([`no_wait::refuse`]).
pub(crate) fn checkout_sqlite(
    pool: &SqlitePool,
) -> Result<PooledConnection<ConnectionManager<SqliteConnection>>, PoolError> {
    if no_wait::may_wait() {
        return Ok(pool.get()?);
    }
    pool.try_get()
        .ok_or_else(|| would_wait("no idle SQLite connection"))
}

/// A PostgreSQL connection for [`with_conn!`] and [`with_tx!`], never inside
/// [`without_waiting`](no_wait::without_waiting): every statement is a round trip over the
/// network, which must not hold the calling thread.
pub(crate) fn checkout_pg(pool: &PgPool) -> Result<PooledConnection<PgManager>, PoolError> {
    if no_wait::may_wait() {
        return Ok(pool.get()?);
    }
    Err(would_wait("PostgreSQL"))
}

/// The error of a store that refused to wait ([`no_wait::refuse`] called): never seen by a
/// client, since the read is run again where it may wait.
fn would_wait(what: &str) -> PoolError {
    no_wait::refuse();
    PoolError::new(format!("{what} would wait where no waiting is allowed"))
}

/// Reads the organization namespace, if the row exists (an example of [`with_conn!`]).
pub(crate) fn read_namespace(db: &Database) -> Result<Option<String>, DbError> {
    with_conn!(db, conn => {
        Ok(organization::table
            .find(1)
            .select(organization::namespace)
            .first::<String>(conn)
            .optional()?)
    })
}

/// Applies `busy_timeout` and [`SQLITE_PRAGMAS`] to every new SQLite connection: a writer
/// waits for the write lock as long as a request waits for a connection, then gets
/// `database is locked` (a 503). With `manual_checkpoints` (a file database, whose
/// [`Checkpointer`] thread checkpoints the WAL), also `wal_autocheckpoint = 0`: no commit runs a
/// checkpoint of its own.
#[derive(Debug, Clone, Copy)]
struct SqlitePragmas {
    busy_timeout: Duration,
    manual_checkpoints: bool,
}

impl SqlitePragmas {
    fn new(opts: &PoolOptions, manual_checkpoints: bool) -> Self {
        Self {
            busy_timeout: opts.connection_timeout,
            manual_checkpoints,
        }
    }
}

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for SqlitePragmas {
    fn on_acquire(&self, conn: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        let millis = self.busy_timeout.as_millis().clamp(1, u128::from(u32::MAX));
        let autocheckpoint = if self.manual_checkpoints { 0 } else { 1000 };
        conn.batch_execute(&format!(
            "PRAGMA busy_timeout = {millis}; {SQLITE_PRAGMAS} \
             PRAGMA wal_autocheckpoint = {autocheckpoint};"
        ))
        .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// Reports background connection failures through `tracing` (r2d2 would use `log`), with any
/// password scrubbed from the message.
struct TracingErrorHandler {
    /// The database URL, used only to scrub its password from messages.
    url: String,
}

impl fmt::Debug for TracingErrorHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TracingErrorHandler")
            .field("url", &url::redact(&self.url))
            .finish()
    }
}

impl HandleError<diesel::r2d2::Error> for TracingErrorHandler {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        tracing::warn!(
            error = %url::scrub(&error.to_string(), &self.url),
            "database connection error"
        );
    }
}

/// Builds the SQLite pool; `memory` pins it to one never-recycled connection.
fn sqlite_pool(
    path: &str,
    opts: &PoolOptions,
    pragmas: SqlitePragmas,
    memory: bool,
) -> Result<SqlitePool, ConnectError> {
    // Open one connection directly first, so a permanent error (unwritable path, ...) is reported
    // at once instead of after `connection_timeout` of retries inside r2d2.
    let mut probe = SqliteConnection::establish(path)
        .map_err(|e| ConnectError::Pool(format!("cannot open SQLite database {path}: {e}")))?;
    pragmas
        .on_acquire(&mut probe)
        .map_err(|e| ConnectError::Pool(format!("cannot configure SQLite database {path}: {e}")))?;
    drop(probe);

    // No liveness check on checkout: a SQLite connection is a file handle in this process and
    // cannot go away; r2d2's default `SELECT 1` would be prepared afresh on every request.
    let builder = Pool::builder()
        .test_on_check_out(false)
        .connection_timeout(opts.connection_timeout)
        .connection_customizer(Box::new(pragmas))
        .error_handler(Box::new(TracingErrorHandler {
            url: path.to_owned(),
        }));
    let builder = if memory {
        builder
            .max_size(1)
            .min_idle(Some(1))
            .idle_timeout(None)
            .max_lifetime(None)
    } else {
        builder.max_size(opts.max_size).min_idle(Some(0))
    };
    builder
        .build(ConnectionManager::new(path))
        .map_err(|e| ConnectError::Pool(e.to_string()))
}

/// `url` with libpq's network timeouts added where neither it nor libpq's environment sets
/// them, so that a server that vanishes without closing its connections (a dead switch, a
/// failed-over host) is noticed: `connect_timeout` (the pool's wait, in whole seconds, at least
/// 2), TCP keepalives on an idle connection (first probe after 30 s, then every 10 s, 3
/// unanswered: dead), and `tcp_user_timeout` (30 s for data sent and never acknowledged). Only a
/// URI (`postgres://…`) is changed; a `key=value` connection string is left as it is.
///
/// Also `gssencmode=disable`: libpq's default, `prefer`, looks for Kerberos credentials on
/// every connection, and a process that exits while one of its threads is inside that (a pool
/// opening a connection on its own thread) aborts in libkrb5's teardown (`krb5int_getspecific:
/// Assertion ... failed`, seen in CI). `prefer` falls back to an unencrypted connection anyway;
/// a deployment that wants GSSAPI encryption says `gssencmode=require` (docs/operations.md).
///
/// Also `sslmode=disable` when every host the URL names is loopback (`127.0.0.1`, `[::1]`,
/// `localhost`; and no `PGHOSTADDR` points elsewhere) and nothing in the URL or libpq's
/// environment says anything about TLS: libpq's default, `prefer`, encrypts such a connection
/// without checking whom it talks to, which protects nothing on a path that never leaves the
/// machine and costs about a fifth of a describe's CPU on both ends (docs/performance.md). An
/// operator who wants TLS there anyway says so (`sslmode=require` in the URL, or `PGSSLMODE`;
/// docs/operations.md).
///
/// `env_sets` says whether libpq's environment variable of that name is set
/// (`PGCONNECT_TIMEOUT`, `PGGSSENCMODE`, `PGHOSTADDR`, the TLS ones); a parameter set there is
/// the operator's, and a parameter in the URL would override it.
pub(crate) fn tuned_pg_url(
    url: &str,
    connect: Duration,
    env_sets: impl Fn(&str) -> bool,
) -> String {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return url.to_owned();
    }
    let has = |name: &str| url::has_parameter(url, name);
    let connect = connect.as_secs().max(2).to_string();
    // Each parameter with libpq's environment variable for it, where it has one.
    let wanted = [
        (
            "connect_timeout",
            connect.as_str(),
            Some("PGCONNECT_TIMEOUT"),
        ),
        ("keepalives", "1", None),
        ("keepalives_idle", "30", None),
        ("keepalives_interval", "10", None),
        ("keepalives_count", "3", None),
        ("tcp_user_timeout", "30000", None),
        ("gssencmode", "disable", Some("PGGSSENCMODE")),
    ];
    let mut out = url.to_owned();
    // `PGHOSTADDR` would send a URL's loopback name to another address.
    if url::only_loopback_hosts(url)
        && !env_sets("PGHOSTADDR")
        && !TLS_PARAMETERS.iter().any(|name| has(name))
        && !TLS_ENVIRONMENT.iter().any(|name| env_sets(name))
    {
        out.push(if out.contains('?') { '&' } else { '?' });
        out.push_str("sslmode=disable");
    }
    for (name, value, env) in wanted {
        let set_elsewhere = has(name) || env.is_some_and(&env_sets);
        if !set_elsewhere {
            out.push(if out.contains('?') { '&' } else { '?' });
            out.push_str(name);
            out.push('=');
            out.push_str(value);
        }
    }
    out
}

/// libpq's connection parameters about TLS: a URL that sets any of them keeps libpq's own
/// `sslmode` (the operator is configuring TLS).
const TLS_PARAMETERS: [&str; 8] = [
    "sslmode",
    "requiressl",
    "sslnegotiation",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "sslcrldir",
];

/// libpq's environment variables about TLS, in the same way.
const TLS_ENVIRONMENT: [&str; 8] = [
    "PGSSLMODE",
    "PGREQUIRESSL",
    "PGSSLNEGOTIATION",
    "PGSSLROOTCERT",
    "PGSSLCERT",
    "PGSSLKEY",
    "PGSSLCRL",
    "PGSSLCRLDIR",
];

/// Builds the PostgreSQL pool.
fn pg_pool(url: &str, opts: &PoolOptions) -> Result<PgPool, ConnectError> {
    let fail = |e: &dyn fmt::Display| {
        ConnectError::Pool(format!(
            "{}: {}",
            url::redact(url),
            url::scrub(e.to_string().trim_end(), url)
        ))
    };
    let tuned = tuned_pg_url(url, opts.connection_timeout, |name| {
        std::env::var_os(name).is_some()
    });
    let url = tuned.as_str();
    // See `sqlite_pool`: report permanent errors (bad credentials, unknown database) at once.
    drop(PgConnection::establish(url).map_err(|e| fail(&e))?);
    // No idle connections are kept warm: with `min_idle` above zero, r2d2 replenishes the
    // pool on a background thread whenever a connection is checked out, and a process that
    // exits while that thread is inside libpq's connect crashes in libpq's GSSAPI (Kerberos)
    // teardown. Connections open on demand instead and are reused while in use.
    Pool::builder()
        .max_size(opts.max_size)
        .min_idle(Some(0))
        .connection_timeout(opts.connection_timeout)
        .error_handler(Box::new(TracingErrorHandler {
            url: url.to_owned(),
        }))
        .build(PgManager {
            inner: ConnectionManager::new(url),
            window: PG_CHECK_WINDOW,
        })
        .map_err(|e| fail(&e))
}

/// Checks out a connection for a migration operation.
fn checkout<M: ManageConnection>(pool: &Pool<M>) -> Result<PooledConnection<M>, MigrateError> {
    pool.get()
        .map_err(|e| MigrateError::Unavailable(e.to_string()))
}

/// The migration steps of [`Database`], on a connection of either backend.
trait MigrationSteps<DB: diesel::backend::Backend>: MigrationHarness<DB> {
    /// Runs every pending migration of `source`, reporting each version to `progress` first.
    fn apply_pending(
        &mut self,
        source: EmbeddedMigrations,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<String>, MigrateError> {
        let pending = self
            .pending_migrations(source)
            .map_err(failed("cannot read the migration state"))?;
        let mut applied = Vec::with_capacity(pending.len());
        for migration in pending {
            let version = migration.name().version().to_string();
            progress(&version);
            self.run_migration(migration.as_ref())
                .map_err(|e| MigrateError::Failed(format!("{}: {e}", migration.name())))?;
            tracing::info!(migration = %migration.name(), "applied database migration");
            applied.push(version);
        }
        Ok(applied)
    }

    /// The versions of `source` not yet applied, in ascending order.
    fn pending_versions(
        &mut self,
        source: EmbeddedMigrations,
    ) -> Result<Vec<String>, MigrateError> {
        let pending = self
            .pending_migrations(source)
            .map_err(failed("cannot read the migration state"))?;
        Ok(pending
            .iter()
            .map(|m| m.name().version().to_string())
            .collect())
    }

    /// Reverts every applied migration of `source`, newest first.
    fn revert_everything(
        &mut self,
        source: EmbeddedMigrations,
    ) -> Result<Vec<String>, MigrateError> {
        let reverted = self
            .revert_all_migrations(source)
            .map_err(failed("cannot revert migrations"))?;
        Ok(reverted.iter().map(ToString::to_string).collect())
    }

    /// Reverts the newest applied migration of `source`, if any; returns its version.
    fn revert_newest(
        &mut self,
        source: EmbeddedMigrations,
    ) -> Result<Option<String>, MigrateError> {
        let applied = self
            .applied_migrations()
            .map_err(failed("cannot read the migration state"))?;
        if applied.is_empty() {
            return Ok(None);
        }
        let reverted = self
            .revert_last_migration(source)
            .map_err(failed("cannot revert the last migration"))?;
        Ok(Some(reverted.to_string()))
    }
}

impl<DB: diesel::backend::Backend, C: MigrationHarness<DB>> MigrationSteps<DB> for C {}

/// A migration step that failed, saying what it was doing.
fn failed<E: fmt::Display>(doing: &'static str) -> impl FnOnce(E) -> MigrateError {
    move |e| MigrateError::Failed(format!("{doing}: {e}"))
}

/// Runs `f` while holding the PostgreSQL migration advisory lock on `conn`'s session.
fn with_pg_migration_lock<T>(
    conn: &mut PgConnection,
    f: impl FnOnce(&mut PgConnection) -> Result<T, MigrateError>,
) -> Result<T, MigrateError> {
    diesel::sql_query(format!("SELECT pg_advisory_lock({PG_MIGRATION_LOCK})"))
        .execute(conn)
        .map_err(failed("cannot take the migration lock"))?;
    let result = f(conn);
    if let Err(e) =
        diesel::sql_query(format!("SELECT pg_advisory_unlock({PG_MIGRATION_LOCK})")).execute(conn)
    {
        tracing::warn!(error = %e, "cannot release the migration lock");
    }
    result
}

#[cfg(test)]
pub(crate) mod tests;
