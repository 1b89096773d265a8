//! Opening the database: the data directory, the pool, migrations and the
//! organization's namespace. Shared by `serve` and `migrate`.

use std::fmt;

use medialib_adapters_diesel::{ConnectError, Database, MigrateError, PoolOptions};
use medialib_api_actix::Readiness;
use rand::TryRngCore;
use rand::rngs::OsRng;

use crate::configuration::{DatabaseUrl, Settings};

/// Why the database could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    /// The URL is refused, the pool could not be built or the server refused
    /// the connection (the adapter's message names the URL, password redacted).
    #[error(transparent)]
    Connect(ConnectError),
    /// A migration failed (the database keeps the migrations before it).
    #[error("migrations failed: {0}")]
    Migrate(#[source] MigrateError),
    /// The organization's namespace could not be stored.
    #[error("cannot initialise the organization: {0}")]
    Namespace(String),
    /// The OS random source failed.
    #[error("the operating system's random source failed: {0}")]
    Random(String),
}

/// The pool size and checkout timeout the settings ask for (`db_pool_size`, `db_timeout`).
pub fn pool_options(settings: &Settings) -> PoolOptions {
    PoolOptions {
        max_size: settings.db_pool_size.get(),
        connection_timeout: std::time::Duration::from_secs(u64::from(
            settings.db_timeout.seconds(),
        )),
    }
}

/// Connects to `url` (the adapter creates a SQLite file's directory if missing).
pub fn connect(url: &DatabaseUrl, pool: &PoolOptions) -> Result<Database, DatabaseError> {
    Database::connect(url.expose(), pool).map_err(DatabaseError::Connect)
}

/// Applies pending migrations, calling `progress` before each, and returns the versions applied.
pub fn migrate(
    database: &Database,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<String>, DatabaseError> {
    database.migrate(progress).map_err(DatabaseError::Migrate)
}

/// Creates the organization's namespace on first use (16 bytes from the OS CSPRNG).
pub fn ensure_namespace(database: &Database) -> Result<String, DatabaseError> {
    let mut random = [0u8; 16];
    OsRng
        .try_fill_bytes(&mut random)
        .map_err(|error| DatabaseError::Random(error.to_string()))?;
    database
        .ensure_namespace(random)
        .map_err(|error| DatabaseError::Namespace(error.to_string()))
}

/// Connects, migrates (logging each migration) and ensures the namespace: what `serve` needs.
pub fn prepare(url: &DatabaseUrl, pool: &PoolOptions) -> Result<Database, DatabaseError> {
    let database = connect(url, pool)?;
    let applied = migrate(&database, &mut |version| {
        tracing::info!(version, "applying migration");
    })?;
    if applied.is_empty() {
        tracing::info!("database schema is up to date");
    } else {
        tracing::info!(count = applied.len(), "migrations applied");
    }
    let namespace = ensure_namespace(&database)?;
    tracing::debug!(%namespace, backend = %database.backend(), "database ready");
    Ok(database)
}

/// `GET /readyz` for the HTTP layer: a database round trip.
pub struct DatabaseReadiness(Database);

impl DatabaseReadiness {
    /// Probes this database.
    pub fn new(database: Database) -> Self {
        Self(database)
    }
}

impl Readiness for DatabaseReadiness {
    fn ready(&self) -> Result<(), String> {
        self.0.ping().map_err(|error| error.to_string())
    }
}

impl fmt::Debug for DatabaseReadiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DatabaseReadiness")
            .field(&self.0.backend().to_string())
            .finish()
    }
}
