//! Backend dispatch: one body of diesel DSL code, compiled once per backend.
//!
//! Diesel's query types are generic over the connection, so a repository method cannot hold "a
//! connection of either kind". Instead these macros expand the body twice, once with
//! `conn: &mut SqliteConnection` and once with `conn: &mut PgConnection`, and pick the arm that
//! matches the [`Database`](crate::Database)'s pool at run time. Both expansions must have the same
//! type. Helpers called from the body must therefore be generic over the connection (or be macros).
//!
//! Do not check out a second connection (nested `with_conn!`/`with_tx!`, or a `Database` method)
//! while the body holds one: besides wasting the pool, it waits until `connection_timeout` and fails
//! on `sqlite::memory:`, whose pool has a single connection. Pass `conn` down instead.
//!
//! ```ignore
//! use crate::error::DbError;
//! use crate::schema::organization;
//!
//! fn namespace(db: &Database) -> Result<Option<String>, DbError> {
//!     // `?` on the pool checkout returns `PoolError` through `From`, so the enclosing fn's error
//!     // type must implement `From<PoolError>` (DbError and StoreError do).
//!     with_conn!(db, conn => {
//!         Ok(organization::table.find(1).select(organization::namespace).first(conn).optional()?)
//!     })
//! }
//!
//! fn set_namespace(db: &Database, ns: &str) -> Result<usize, DbError> {
//!     // The whole body runs in one transaction; it evaluates to `Result<T, E>` with
//!     // `E: From<diesel::result::Error> + From<PoolError>`; an `Err` rolls back.
//!     with_tx!(db, conn => {
//!         let n = diesel::update(organization::table).set(organization::namespace.eq(ns)).execute(conn)?;
//!         Ok(n)
//!     })
//! }
//! ```

/// Runs `$body` with `$conn` bound to a pooled `&mut SqliteConnection` or `&mut PgConnection`.
///
/// `$db` is a [`Database`](crate::Database) (or a reference to one). Inside
/// [`without_waiting`](medialib_ports::no_wait::without_waiting) only an idle SQLite connection
/// is taken, and a PostgreSQL one never ([`checkout_sqlite`](crate::db::checkout_sqlite)).
/// Checking out a connection uses `?` with a [`PoolError`](crate::error::PoolError), so this must be used inside a function
/// returning `Result<_, E>` where `E: From<PoolError>` (pool timeouts become
/// `StoreError::Unavailable`). The macro evaluates to the value of `$body`; `?` inside `$body`
/// returns from the enclosing function.
macro_rules! with_conn {
    ($db:expr, $conn:ident => $body:block) => {
        match $crate::db::Database::pools(&$db) {
            $crate::db::Pools::Sqlite(pool) => {
                let mut pooled = $crate::db::checkout_sqlite(pool)?;
                let $conn: &mut ::diesel::SqliteConnection = &mut pooled;
                $body
            }
            $crate::db::Pools::Postgres(pool) => {
                let mut pooled = $crate::db::checkout_pg(pool)?;
                let $conn: &mut ::diesel::PgConnection = &mut pooled;
                $body
            }
        }
    };
}

/// Like [`with_conn!`], for a single statement that writes outside a transaction: on SQLite the
/// process's [`WriteGate`](crate::db::WriteGate) is taken first (before the connection), so the
/// write never waits on SQLite's lock behind another write of this process.
macro_rules! with_write {
    ($db:expr, $conn:ident => $body:block) => {{
        let _turn = $crate::db::Database::write_turn(&$db)?;
        $crate::macros::with_conn!($db, $conn => $body)
    }};
}

/// The PostgreSQL half of [`with_tx!`] and [`with_grouped_tx!`]: `$body` in a plain transaction
/// (READ COMMITTED) on a connection of `$pool`.
macro_rules! pg_tx {
    ($pool:expr, $conn:ident => $body:block) => {
        match $crate::db::checkout_pg($pool) {
            Ok(mut pooled) => {
                let conn: &mut ::diesel::PgConnection = &mut pooled;
                ::diesel::Connection::transaction(conn, |$conn| $body)
            }
            Err(e) => Err(::core::convert::From::from(e)),
        }
    };
}

/// Runs `$body` in a transaction, with `$conn` bound to the transaction's connection.
///
/// SQLite takes the process's [`WriteGate`](crate::db::WriteGate) first, then the connection,
/// then uses `BEGIN IMMEDIATE`, so the write lock is taken up front: writers of this process
/// queue on the gate, other processes' writers on `busy_timeout`, and none fails when a read
/// transaction tries to upgrade. PostgreSQL uses a plain `BEGIN` (READ COMMITTED).
///
/// `$body` is the body of a closure returning `Result<T, E>` with `E: From<diesel::result::Error>`
/// (`?` inside it returns from that closure, not from the enclosing function); `Ok` commits and
/// `Err` rolls back. The macro evaluates to that `Result<T, E>`; a failed connection checkout is
/// folded into it as `E::from(PoolError)`, so `E` must also implement `From<PoolError>`.
macro_rules! with_tx {
    ($db:expr, $conn:ident => $body:block) => {
        match $crate::db::Database::pools(&$db) {
            $crate::db::Pools::Sqlite(pool) => {
                match $crate::db::Database::write_gate(&$db)
                    .enter()
                    .and_then(|gate| Ok((gate, $crate::db::checkout_sqlite(pool)?)))
                {
                    Ok((_gate, mut pooled)) => {
                        let conn: &mut ::diesel::SqliteConnection = &mut pooled;
                        conn.immediate_transaction(|$conn| $body)
                    }
                    Err(e) => Err(::core::convert::From::from(e)),
                }
            }
            $crate::db::Pools::Postgres(pool) => $crate::macros::pg_tx!(pool, $conn => $body),
        }
    };
}

/// Like [`with_tx!`], for a contested grant: on a SQLite file database the transaction may be
/// shared with the grants queued behind it and committed with theirs (group commit,
/// `WriteGate::grouped`; `$body` then runs in its own savepoint). The macro still returns only
/// once `$body`'s writes are committed. PostgreSQL, which commits its own concurrent
/// transactions together, uses a plain transaction, as `with_tx!` does.
macro_rules! with_grouped_tx {
    ($db:expr, $conn:ident => $body:block) => {
        match $crate::db::Database::pools(&$db) {
            $crate::db::Pools::Sqlite(pool) => {
                $crate::db::Database::write_gate(&$db).grouped(pool, |$conn| $body)
            }
            $crate::db::Pools::Postgres(pool) => $crate::macros::pg_tx!(pool, $conn => $body),
        }
    };
}

pub(crate) use {pg_tx, with_conn, with_grouped_tx, with_tx, with_write};
