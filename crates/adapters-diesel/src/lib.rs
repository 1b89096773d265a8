//! medialib's persistence adapter: diesel 2 on SQLite (the embedded default) and PostgreSQL.
//!
//! [`Database`] owns a connection pool for either backend, applies the embedded migrations
//! (`migrations/sqlite`, `migrations/postgres`) and answers health checks. Repository code inside
//! this crate uses the `with_conn!` / `with_tx!` macros (module `macros`) to write one body of
//! diesel DSL that is compiled for both backends.

mod db;
mod error;
mod macros;
pub mod schema;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod url;

pub use db::{Backend, ConnectError, Database, MigrateError, PoolOptions};
pub use store::DieselStore;
