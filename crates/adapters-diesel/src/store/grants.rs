//! `GrantRepository`: codes, grants and tokens, stored by digest only.
//!
//! The two contested operations (a code exchange, a refresh) run as a unit of work in one
//! transaction (see `grant_units.rs`): the service reads the facts, the domain decides,
//! this adapter writes the decision. The rest are plain reads and writes.

use diesel::prelude::*;
use diesel::{PgConnection, SqliteConnection};
use medialib_domain::oauth::{
    AccessTokenRecord, Client, ClientId, CodeDecision, IssuedCode, RefreshDecision,
    RefreshTokenRecord, Revocation, RevokeDecision,
};
use medialib_domain::{Timestamp, TokenDigest, UserId};
use medialib_ports::{
    BearerRecord, CodeContest, Contest, GrantRepository, GrantUnit, RefreshContest, RevokeUnit,
    StoreError,
};

use super::DieselStore;
use super::facts;
use super::grant_units::{GrantReads, RefreshRow, Unit, refresh_record};
use super::rows::{client_id, grant_id, scope, ts, user_id};
use crate::db::Pools;
use crate::error::DbError;
use crate::macros::{pg_tx, with_conn, with_grouped_tx, with_write};
use crate::schema::{oauth_access_tokens as access, oauth_codes as codes, oauth_grants as grants};

impl DieselStore {
    /// Runs a contested grant's work over its unit in one transaction: on a SQLite file, one
    /// shared with the grants queued with it, run by the thread that holds the write gate
    /// (`WriteGate::queue`); on PostgreSQL, a transaction of its own.
    fn contest<F: 'static, D: Send + 'static>(&self, c: Contest<'_, F, D>) -> Result<D, StoreError>
    where
        for<'c> Unit<'c, SqliteConnection>: GrantUnit<F, D>,
        for<'c> Unit<'c, PgConnection>: GrantUnit<F, D>,
    {
        let (digest, hex, presented) = (*c.digest, c.digest.to_hex(), c.client.as_str());
        let work = c.work;
        let r: Result<D, DbError> = match self.db.pools() {
            Pools::Sqlite(pool) => {
                let presented = presented.to_owned();
                self.db.write_gate().queue(pool, move |conn| {
                    work(&mut Unit::new(conn, digest, &hex, &presented)).map_err(DbError::Store)
                })
            }
            Pools::Postgres(pool) => pg_tx!(pool, conn => {
                work(&mut Unit::new(conn, digest, &hex, presented)).map_err(DbError::Store)
            }),
        };
        Ok(r?)
    }
}

impl GrantRepository for DieselStore {
    fn store_code(&self, code: &IssuedCode, now: Timestamp) -> Result<(), StoreError> {
        (|| -> Result<(), DbError> {
            with_write!(self.db, conn => {
                diesel::insert_into(codes::table)
                    .values((
                        codes::digest.eq(code.digest.to_hex()),
                        codes::client_id.eq(code.client.as_str()),
                        codes::user_id.eq(code.user.to_string()),
                        codes::redirect_uri.eq(code.redirect_uri.as_str()),
                        codes::scope.eq(code.scope.to_string()),
                        codes::offline.eq(code.offline),
                        codes::code_challenge.eq(code.challenge.as_ref().map(|c| c.as_str())),
                        codes::created_at.eq(now.epoch_seconds()),
                        codes::expires_at.eq(code.expires_at.epoch_seconds()),
                    ))
                    .execute(conn)?;
                Ok(())
            })
        })()
        .map_err(StoreError::from)
    }

    fn code_grant(&self, contest: CodeContest<'_>) -> Result<CodeDecision, StoreError> {
        self.contest(contest)
    }

    fn refresh_grant(&self, contest: RefreshContest<'_>) -> Result<RefreshDecision, StoreError> {
        self.contest(contest)
    }

    fn access_token(&self, digest: &TokenDigest) -> Result<Option<AccessTokenRecord>, StoreError> {
        let d = digest.to_hex();
        type Row = (
            String,
            String,
            String,
            String,
            i64,
            Option<i64>,
            Option<i64>,
        );
        let row: Option<Row> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(access::table
                    .inner_join(grants::table)
                    .filter(access::digest.eq(&d))
                    .select((
                        access::grant_id,
                        access::user_id,
                        access::client_id,
                        access::scope,
                        access::expires_at,
                        access::revoked_at,
                        grants::revoked_at,
                    ))
                    .first(conn)
                    .optional()?)
            })
        })()?;
        row.map(|(g, u, c, s, exp, rev, grev)| {
            Ok(AccessTokenRecord {
                grant: grant_id(&g)?,
                user: user_id(&u)?,
                client: client_id(&c)?,
                scope: scope(&s)?,
                expires_at: ts(exp),
                revoked: Revocation {
                    token: rev.is_some(),
                    grant: grev.is_some(),
                },
            })
        })
        .transpose()
    }

    fn bearer(&self, digest: &TokenDigest) -> Result<Option<BearerRecord>, StoreError> {
        let rows = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => { Ok(facts::read_bearer(conn, digest)?) })
        })()?;
        Ok(facts::into_facts(rows)?.bearer)
    }

    fn client_and_bearer(
        &self,
        client: &ClientId,
        digest: &TokenDigest,
    ) -> Result<(Option<Client>, Option<BearerRecord>), StoreError> {
        let rows = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(facts::read_client_and_bearer(conn, client.as_str(), digest)?)
            })
        })()?;
        let client = super::clients::from_fact_rows(&rows)?;
        let token_rows = rows.into_iter().filter(|r| r.0 != "k" && r.0 != "r");
        Ok((client, facts::into_facts(token_rows.collect())?.bearer))
    }

    fn revocation(
        &self,
        digest: &TokenDigest,
        work: &mut dyn FnMut(&mut RevokeUnit<'_>) -> Result<RevokeDecision, StoreError>,
    ) -> Result<RevokeDecision, StoreError> {
        let hex = digest.to_hex();
        // The revoking client is authenticated already; its facts name only the holder.
        let r: Result<RevokeDecision, DbError> = with_grouped_tx!(self.db, conn => {
            work(&mut Unit::new(conn, *digest, &hex, "")).map_err(DbError::Store)
        });
        Ok(r?)
    }

    fn revoke_user_access_tokens(&self, user: UserId, now: Timestamp) -> Result<u64, StoreError> {
        let u = user.to_string();
        let now = now.epoch_seconds();
        let n = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::update(access::table)
                    .filter(access::user_id.eq(&u))
                    .filter(access::revoked_at.is_null())
                    .filter(access::expires_at.gt(now))
                    .set(access::revoked_at.eq(Some(now)))
                    .execute(conn)?)
            })
        })()?;
        Ok(u64::try_from(n).unwrap_or(u64::MAX))
    }

    fn refresh_token(
        &self,
        digest: &TokenDigest,
    ) -> Result<Option<RefreshTokenRecord>, StoreError> {
        let row: Option<RefreshRow> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => { Ok(GrantReads::refresh_token(conn, &digest.to_hex())?) })
        })()?;
        row.map(|row| refresh_record(*digest, row, None))
            .transpose()
    }
}
