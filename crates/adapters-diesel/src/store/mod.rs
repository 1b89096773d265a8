//! The repository ports of `medialib-ports`, implemented on [`Database`].

mod clients;
mod facts;
mod fixed;
mod grant_units;
mod grants;
mod jobs;
mod listing;
mod lti;
mod media;
mod pending;
mod rows;
mod sessions;
mod uploads;
mod users;

use diesel::prelude::*;
use diesel::{PgConnection, SqliteConnection};
use medialib_domain::OrgNamespace;
use medialib_ports::{OrgRepository, StoreError};

use crate::db::Database;
use crate::error::DbError;

/// medialib's store: every repository port over one [`Database`].
#[derive(Debug, Clone)]
pub struct DieselStore {
    db: Database,
}

impl DieselStore {
    /// Wraps a connected, migrated database.
    pub fn new(db: Database) -> Self {
        Self { db }
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.db
    }
}

/// Backend-specific locking used inside write transactions.
///
/// SQLite transactions start with `BEGIN IMMEDIATE`, which already serializes
/// writers, so its locks are no-ops. PostgreSQL runs READ COMMITTED, where a
/// read-check-write sequence needs an explicit lock to stay atomic.
pub(crate) trait Locks {
    /// Serializes changes to the membership graph (cycle checks read the graph).
    fn lock_graph(&mut self) -> QueryResult<()>;
    /// Serializes permission changes on one collection (last-admin checks).
    fn lock_collection(&mut self, collection: &str) -> QueryResult<()>;
    /// Locks one object's row before its memberships are inserted or deleted, as updating the
    /// row does, so that a membership's copy of `modified_at` cannot miss a concurrent change
    /// (and the row comes before its memberships in every transaction: no deadlock).
    fn lock_object(&mut self, object: &str) -> QueryResult<()>;
}

impl Locks for SqliteConnection {
    fn lock_graph(&mut self) -> QueryResult<()> {
        Ok(())
    }
    fn lock_collection(&mut self, _collection: &str) -> QueryResult<()> {
        Ok(())
    }
    fn lock_object(&mut self, _object: &str) -> QueryResult<()> {
        Ok(())
    }
}

/// Advisory lock class for the membership graph.
const LOCK_GRAPH: i32 = 0x6d6c_0001;
/// Advisory lock class for one collection's permissions.
const LOCK_COLLECTION: i32 = 0x6d6c_0002;

impl Locks for PgConnection {
    fn lock_graph(&mut self) -> QueryResult<()> {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, 0)")
            .bind::<diesel::sql_types::Integer, _>(LOCK_GRAPH)
            .execute(self)
            .map(drop)
    }
    fn lock_collection(&mut self, collection: &str) -> QueryResult<()> {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind::<diesel::sql_types::Integer, _>(LOCK_COLLECTION)
            .bind::<diesel::sql_types::Text, _>(collection)
            .execute(self)
            .map(drop)
    }
    fn lock_object(&mut self, object: &str) -> QueryResult<()> {
        // The lock an UPDATE of the row takes; foreign-key checks (FOR KEY SHARE) pass it.
        crate::schema::objects::table
            .find(object)
            .select(crate::schema::objects::id)
            .for_no_key_update()
            .execute(self)
            .map(drop)
    }
}

/// Whether a diesel error is a unique-constraint violation.
pub(crate) fn is_unique_violation(e: &diesel::result::Error) -> bool {
    matches!(
        e,
        diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _)
    )
}

impl OrgRepository for DieselStore {
    fn namespace(&self) -> Result<OrgNamespace, StoreError> {
        let ns = crate::db::read_namespace(&self.db)
            .map_err(StoreError::from)?
            .ok_or_else(|| {
                StoreError::Corrupt(
                    "the organization namespace is missing: run `medialib migrate`".into(),
                )
            })?;
        OrgNamespace::parse(&ns).map_err(|e| StoreError::Corrupt(format!("namespace: {e}")))
    }
}

/// Converts the result of a transaction that carries a business outcome inside.
pub(crate) fn flatten<T, E: From<StoreError>>(r: Result<Result<T, E>, DbError>) -> Result<T, E> {
    r.map_err(|e| E::from(StoreError::from(e)))?
}
