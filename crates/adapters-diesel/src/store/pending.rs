//! Redirect-based sign-ins (OpenID Connect) in progress: stored under the digest of their
//! `state`, taken once.

use diesel::prelude::*;
use medialib_domain::{Secret, Timestamp, TokenDigest};
use medialib_ports::{PendingSignInRepository, StoreError, StoredPendingSignIn};

use super::DieselStore;
use crate::error::DbError;
use crate::macros::with_write;
use crate::schema::pending_sign_ins as pending;

impl PendingSignInRepository for DieselStore {
    fn put_pending_sign_in(
        &self,
        state_digest: &TokenDigest,
        record: &StoredPendingSignIn,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let row = (
            pending::state_digest.eq(state_digest.to_hex()),
            pending::nonce.eq(record.nonce.expose()),
            pending::pkce_verifier.eq(record.pkce_verifier.expose()),
            pending::return_to.eq(record.return_to.as_str()),
            pending::expires_at.eq(expires_at.epoch_seconds()),
        );
        let r = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::insert_into(pending::table).values(&row).execute(conn)?)
            })
        })();
        r.map(drop).map_err(StoreError::from)
    }

    fn take_pending_sign_in(
        &self,
        state_digest: &TokenDigest,
        now: Timestamp,
    ) -> Result<Option<StoredPendingSignIn>, StoreError> {
        let d = state_digest.to_hex();
        // One statement that deletes and returns the row: of two concurrent callbacks with
        // the same state, only one sees it (on SQLite and PostgreSQL alike).
        let row: Option<(String, String, String, i64)> = (|| -> Result<_, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::delete(pending::table.find(&d))
                    .returning((
                        pending::nonce,
                        pending::pkce_verifier,
                        pending::return_to,
                        pending::expires_at,
                    ))
                    .get_result(conn)
                    .optional()?)
            })
        })()?;
        Ok(row
            .filter(|(_, _, _, expires_at)| now.epoch_seconds() < *expires_at)
            .map(|(nonce, pkce_verifier, return_to, _)| StoredPendingSignIn {
                nonce: Secret::new(nonce),
                pkce_verifier: Secret::new(pkce_verifier),
                return_to,
            }))
    }
}
