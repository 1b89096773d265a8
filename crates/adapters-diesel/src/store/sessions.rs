//! Browser sessions, the local directory's password hashes, and housekeeping.

use diesel::dsl::{exists, not};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use medialib_domain::{
    BrowserSession, PurgeCutoffs, Timestamp, TokenDigest, UniqueId, User, UserId,
};
use medialib_ports::{
    CredentialRepository, Housekeeping, PasswordHash, PurgeReport, SessionRepository, StoreError,
};

use super::DieselStore;
use super::rows::{UserRow, ts, user_id};
use crate::error::DbError;
use crate::macros::{with_conn, with_tx, with_write};
use crate::schema::{
    browser_sessions as sessions, local_credentials as creds, oauth_access_tokens as access,
    oauth_codes as codes, oauth_grants as grants, oauth_refresh_tokens as refresh,
    pending_sign_ins as pending, users,
};

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl SessionRepository for DieselStore {
    fn create_session(
        &self,
        digest: &TokenDigest,
        session: &BrowserSession,
    ) -> Result<(), StoreError> {
        let row = (
            sessions::digest.eq(digest.to_hex()),
            sessions::user_id.eq(session.user.to_string()),
            sessions::created_at.eq(session.created_at.epoch_seconds()),
            sessions::expires_at.eq(session.expires_at.epoch_seconds()),
        );
        let r = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::insert_into(sessions::table).values(&row).execute(conn)?)
            })
        })();
        r.map(drop).map_err(StoreError::from)
    }

    fn session(&self, digest: &TokenDigest) -> Result<Option<BrowserSession>, StoreError> {
        let d = digest.to_hex();
        let row: Option<(String, i64, i64)> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(sessions::table
                    .find(&d)
                    .select((sessions::user_id, sessions::created_at, sessions::expires_at))
                    .first(conn)
                    .optional()?)
            })
        })()?;
        row.map(|(user, created, expires)| {
            Ok(BrowserSession {
                user: user_id(&user)?,
                created_at: ts(created),
                expires_at: ts(expires),
            })
        })
        .transpose()
    }

    fn end_session(&self, digest: &TokenDigest) -> Result<bool, StoreError> {
        let d = digest.to_hex();
        let n = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::delete(sessions::table.find(&d)).execute(conn)?)
            })
        })()?;
        Ok(n == 1)
    }

    fn end_user_sessions(&self, user: UserId) -> Result<u64, StoreError> {
        let u = user.to_string();
        let n = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::delete(sessions::table.filter(sessions::user_id.eq(&u))).execute(conn)?)
            })
        })()?;
        Ok(count(n))
    }
}

impl CredentialRepository for DieselStore {
    fn set_password_hash(
        &self,
        user: UserId,
        hash: &PasswordHash,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let u = user.to_string();
        let now = now.epoch_seconds();
        let r: Result<bool, DbError> = with_tx!(self.db, conn => {
            let known: Option<String> = users::table
                .find(&u)
                .select(users::id)
                .first(conn)
                .optional()?;
            if known.is_none() {
                return Ok(false);
            }
            // An upsert, so two concurrent first settings cannot collide on the primary key.
            diesel::insert_into(creds::table)
                .values((
                    creds::user_id.eq(&u),
                    creds::password_hash.eq(hash.as_str()),
                    creds::updated_at.eq(now),
                ))
                .on_conflict(creds::user_id)
                .do_update()
                .set((
                    creds::password_hash.eq(hash.as_str()),
                    creds::updated_at.eq(now),
                ))
                .execute(conn)?;
            Ok(true)
        });
        match r {
            Ok(set) => Ok(set),
            // The user was deleted between the check and the insert (PostgreSQL, READ COMMITTED).
            Err(DbError::Query(DieselError::DatabaseError(
                DatabaseErrorKind::ForeignKeyViolation,
                _,
            ))) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn password_hash(
        &self,
        unique_id: &UniqueId,
    ) -> Result<Option<(User, PasswordHash)>, StoreError> {
        let row: Option<(UserRow, String)> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(users::table
                    .inner_join(creds::table)
                    .filter(users::unique_id.eq(unique_id.as_str()))
                    .select((UserRow::as_select(), creds::password_hash))
                    .first(conn)
                    .optional()?)
            })
        })()?;
        row.map(|(user, hash)| Ok((user.into_domain()?, PasswordHash::new(hash))))
            .transpose()
    }
}

/// Rows one housekeeping statement deletes at most: each batch is its own short transaction,
/// so a large purge never holds a write lock (SQLite) or many row locks (PostgreSQL) for long.
const PURGE_BATCH: i64 = 500;

/// Deletes the rows of `$table` (keyed by `$key`) whose `expires_at` is `$op` the cutoff
/// (`lt`: before it, `le`: at or before it), [`PURGE_BATCH`] at a time ([`in_batches`]);
/// returns how many.
macro_rules! delete_expired {
    ($db:expr, $table:ident by $key:ident, $op:ident $cutoff:expr) => {
        in_batches(|| {
            with_tx!($db, conn => {
                let expired = diesel::alias!($table as expired);
                let batch = expired
                    .filter(expired.field($table::expires_at).$op($cutoff))
                    .select(expired.field($table::$key))
                    .limit(PURGE_BATCH);
                Ok::<_, DbError>(
                    diesel::delete($table::table.filter($table::$key.eq_any(batch)))
                        .execute(conn)?,
                )
            })
        })
    };
}

/// Runs `batch` (one transaction deleting at most [`PURGE_BATCH`] rows, returning how many)
/// until a batch deletes fewer than that; returns the total.
fn in_batches(mut batch: impl FnMut() -> Result<usize, DbError>) -> Result<u64, DbError> {
    let full = usize::try_from(PURGE_BATCH).unwrap_or(usize::MAX);
    let mut total = 0u64;
    loop {
        let n = batch()?;
        total = total.saturating_add(count(n));
        if n < full {
            return Ok(total);
        }
    }
}

impl Housekeeping for DieselStore {
    fn purge_expired(&self, now: Timestamp, code_grace: i64) -> Result<PurgeReport, StoreError> {
        // The rule is the domain's; the comparisons below are its: `lt` for "before", `le`
        // for "by".
        let pass = PurgeCutoffs::at(now, code_grace);
        let codes_before = pass.codes_expired_before().epoch_seconds();
        let tokens_before = pass.tokens_expired_before().epoch_seconds();
        let grants_before = pass.grants_created_before().epoch_seconds();
        let sessions_by = pass.sessions_expired_by().epoch_seconds();
        let db = &self.db;
        let r = (|| -> Result<PurgeReport, DbError> {
            // Codes first: a redeemed code's grant is only considered once its codes are gone.
            let codes = delete_expired!(db, codes by digest, lt codes_before)?;
            let access_tokens = delete_expired!(db, access by digest, lt tokens_before)?;
            let refresh_tokens = delete_expired!(db, refresh by digest, lt tokens_before)?;
            // Only grants older than the code grace (a grant is created with its tokens in one
            // transaction; the code that produced it is purged first, the grant in a later
            // pass), and that nothing refers to any more.
            let grants = in_batches(|| {
                with_tx!(db, conn => {
                    let idle = diesel::alias!(grants as idle_grants);
                    let id = idle.field(grants::id);
                    let batch = idle
                        .filter(idle.field(grants::created_at).lt(grants_before))
                        .filter(not(exists(access::table.filter(access::grant_id.eq(id)))))
                        .filter(not(exists(refresh::table.filter(refresh::grant_id.eq(id)))))
                        .filter(not(exists(codes::table.filter(codes::grant_id.eq(id.nullable())))))
                        .select(id)
                        .limit(PURGE_BATCH);
                    Ok::<_, DbError>(
                        diesel::delete(grants::table.filter(grants::id.eq_any(batch)))
                            .execute(conn)?,
                    )
                })
            })?;
            let sessions = delete_expired!(db, sessions by digest, le sessions_by)?;
            let pending_sign_ins = delete_expired!(db, pending by state_digest, le sessions_by)?;
            Ok(PurgeReport {
                codes,
                access_tokens,
                refresh_tokens,
                grants,
                sessions,
                pending_sign_ins,
            })
        })();
        r.map_err(StoreError::from)
    }
}
