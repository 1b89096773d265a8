//! Crate-internal error types for repository code built on
//! [`with_conn!`](crate::macros::with_conn) and [`with_tx!`](crate::macros::with_tx), and their
//! mapping to [`StoreError`].

use diesel::result::{DatabaseErrorKind, Error as DieselError};

use medialib_ports::StoreError;

/// No pooled connection could be obtained (pool timeout / database unreachable).
///
/// Maps to [`StoreError::Unavailable`].
#[derive(Debug, thiserror::Error)]
#[error("no database connection available: {0}")]
pub(crate) struct PoolError(String);

impl PoolError {
    /// A connection (or the SQLite write gate) that could not be had, for this reason.
    pub(crate) fn new(reason: String) -> Self {
        PoolError(reason)
    }
}

impl From<diesel::r2d2::PoolError> for PoolError {
    fn from(e: diesel::r2d2::PoolError) -> Self {
        PoolError(e.to_string())
    }
}

impl From<PoolError> for StoreError {
    fn from(e: PoolError) -> Self {
        StoreError::Unavailable(e.to_string())
    }
}

/// What repository code inside this crate returns; convert to [`StoreError`] at the port boundary
/// with `?` / `From`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DbError {
    /// No connection could be obtained.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A query or the transaction failed.
    #[error("database error: {0}")]
    Query(#[from] DieselError),
    /// Work inside a transaction failed with a port error (a row that does not parse, say):
    /// the transaction rolls back and the error passes through unchanged.
    #[error(transparent)]
    Store(StoreError),
}

impl From<DbError> for StoreError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Pool(e) => e.into(),
            DbError::Query(e) if is_connection_loss(&e) => StoreError::Unavailable(e.to_string()),
            DbError::Query(e) if is_out_of_space(&e) => {
                tracing::error!(error = %e, "the database is out of space");
                StoreError::Full
            }
            DbError::Query(e) => StoreError::Unexpected(e.to_string()),
            DbError::Store(e) => e,
        }
    }
}

/// Whether a diesel error means the database is gone or busy beyond the wait limit (rather than
/// the query being wrong): a lost connection, or SQLite's `database is locked` after
/// `busy_timeout`.
pub(crate) fn is_connection_loss(e: &DieselError) -> bool {
    match e {
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        )
        | DieselError::BrokenTransactionManager => true,
        DieselError::DatabaseError(_, info) => info.message().contains("database is locked"),
        _ => false,
    }
}

/// Whether a diesel error means the database's disk is full: SQLite's `SQLITE_FULL`
/// ("database or disk is full"), PostgreSQL's `disk_full` (53100: "could not extend file …: No
/// space left on device"; diesel shows the message, not the SQLSTATE).
pub(crate) fn is_out_of_space(e: &DieselError) -> bool {
    match e {
        DieselError::DatabaseError(_, info) => {
            let m = info.message();
            m.contains("database or disk is full")
                || m.contains("No space left on device")
                || m.contains("could not extend file")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use diesel::result::DatabaseErrorInformation;

    use super::*;

    /// A database error with `message`, as a driver reports it.
    fn database_error(message: &str) -> DieselError {
        #[derive(Debug)]
        struct Info(String);
        impl DatabaseErrorInformation for Info {
            fn message(&self) -> &str {
                &self.0
            }
            fn details(&self) -> Option<&str> {
                None
            }
            fn hint(&self) -> Option<&str> {
                None
            }
            fn table_name(&self) -> Option<&str> {
                None
            }
            fn column_name(&self) -> Option<&str> {
                None
            }
            fn constraint_name(&self) -> Option<&str> {
                None
            }
            fn statement_position(&self) -> Option<i32> {
                None
            }
        }
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, Box::new(Info(message.into())))
    }

    #[test]
    fn a_full_disk_is_told_apart_on_both_databases() {
        // SQLite's SQLITE_FULL (the full-disk test meets it on a real file system), and
        // PostgreSQL's disk_full as its server words it (not reproduced in a test here).
        for full in [
            "database or disk is full",
            "could not extend file \"base/16384/2619\": No space left on device",
            "could not write to file \"pg_wal/xlogtemp.123\": No space left on device",
        ] {
            let e = DbError::Query(database_error(full));
            assert_eq!(StoreError::from(e), StoreError::Full, "{full}");
        }
        let other = DbError::Query(database_error("syntax error at or near \"SELEC\""));
        assert!(matches!(StoreError::from(other), StoreError::Unexpected(_)));
    }
}
