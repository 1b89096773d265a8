//! `GrantRepository`: codes, grants and tokens, stored by digest only.
//!
//! The two contested operations are single transactions whose winner is decided
//! by a conditional update (`... WHERE redeemed_at IS NULL`, `... WHERE used_at
//! IS NULL`): of concurrent callers exactly one changes the row, on SQLite (where
//! `BEGIN IMMEDIATE` serializes writers) and on PostgreSQL (where the loser's
//! update waits for the winner's commit, re-reads the row and matches nothing).

use diesel::prelude::*;
use medialib_domain::oauth::{
    AccessTokenRecord, ClientId, CodeChallenge, IssuedCode, IssuedTokens, MintedToken, RedeemError,
    RedirectUri, RefreshError, RefreshTokenRecord, RefreshTokenState, Rotation, StoredCode,
    mint_tokens,
};
use medialib_domain::{GrantId, Timestamp, TokenDigest, UserId};
use medialib_ports::{
    BearerRecord, CodeExchange, ExchangeError, GrantRepository, RefreshExchange, RevokeOutcome,
    RotateError, StoreError,
};

use super::rows::{client_id, grant_id, scope, ts, user_id};
use super::{DieselStore, facts, flatten};
use crate::error::DbError;
use crate::macros::{with_conn, with_tx};
use crate::schema::{
    oauth_access_tokens as access, oauth_codes as codes, oauth_grants as grants,
    oauth_refresh_tokens as refresh,
};

/// Marks a grant revoked: every access and refresh token descended from it stops working.
macro_rules! revoke_grant {
    ($conn:ident, $grant:expr, $now:expr) => {
        diesel::update(grants::table.find($grant))
            .filter(grants::revoked_at.is_null())
            .set(grants::revoked_at.eq(Some($now)))
            .execute($conn)?
    };
}

/// Inserts a minted access token and, when present, a refresh token of `grant`.
macro_rules! insert_tokens {
    ($conn:ident, $grant:expr, $user:expr, $client:expr, $tokens:expr, $now:expr) => {{
        let t: &IssuedTokens = $tokens;
        diesel::insert_into(access::table)
            .values((
                access::digest.eq(t.access.digest.to_hex()),
                access::grant_id.eq($grant),
                access::user_id.eq($user),
                access::client_id.eq($client),
                access::scope.eq(t.scope.to_string()),
                access::created_at.eq($now),
                access::expires_at.eq(t.access.expires_at.epoch_seconds()),
            ))
            .execute($conn)?;
        if let Some(r) = &t.refresh {
            let r: &MintedToken = r;
            diesel::insert_into(refresh::table)
                .values((
                    refresh::digest.eq(r.digest.to_hex()),
                    refresh::grant_id.eq($grant),
                    refresh::created_at.eq($now),
                    refresh::expires_at.eq(r.expires_at.epoch_seconds()),
                ))
                .execute($conn)?;
        }
    }};
}

type CodeRow = (
    String,
    String,
    String,
    String,
    bool,
    Option<String>,
    i64,
    Option<String>,
);

fn issued_code(
    digest: TokenDigest,
    row: CodeRow,
) -> Result<(IssuedCode, Option<GrantId>), StoreError> {
    let (client, user, redirect, sc, offline, challenge, expires, grant) = row;
    let corrupt = |what: &str| StoreError::Corrupt(format!("code {what}"));
    Ok((
        IssuedCode {
            digest,
            client: client_id(&client)?,
            redirect_uri: RedirectUri::parse(&redirect).map_err(|_| corrupt("redirect_uri"))?,
            user: user_id(&user)?,
            scope: scope(&sc)?,
            offline,
            challenge: challenge
                .map(|c| CodeChallenge::parse_stored(&c))
                .transpose()
                .map_err(|_| corrupt("challenge"))?,
            expires_at: ts(expires),
        },
        grant.map(|g| grant_id(&g)).transpose()?,
    ))
}

type RefreshRow = (
    String,
    i64,
    Option<i64>,
    Option<i64>,
    String,
    String,
    String,
    Option<i64>,
);

fn refresh_record(digest: TokenDigest, row: RefreshRow) -> Result<RefreshTokenRecord, StoreError> {
    let (grant, expires, used, revoked, client, user, sc, grant_revoked) = row;
    let state = if used.is_some() {
        RefreshTokenState::Used
    } else if revoked.is_some() || grant_revoked.is_some() {
        RefreshTokenState::Revoked
    } else {
        RefreshTokenState::Valid
    };
    Ok(RefreshTokenRecord {
        digest,
        grant: grant_id(&grant)?,
        client: client_id(&client)?,
        user: user_id(&user)?,
        scope: scope(&sc)?,
        expires_at: ts(expires),
        state,
    })
}

impl GrantRepository for DieselStore {
    fn store_code(&self, code: &IssuedCode, now: Timestamp) -> Result<(), StoreError> {
        (|| -> Result<(), DbError> {
            with_conn!(self.db, conn => {
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

    fn exchange_code(
        &self,
        req: CodeExchange<'_>,
    ) -> Result<(GrantId, IssuedTokens), ExchangeError> {
        let d = req.digest.to_hex();
        let now = req.now.epoch_seconds();
        let r: Result<Result<(GrantId, IssuedTokens), ExchangeError>, DbError> = with_tx!(self.db, conn => {
            // The conditional update decides the one winner.
            let claimed = diesel::update(codes::table.find(&d))
                .filter(codes::redeemed_at.is_null())
                .set(codes::redeemed_at.eq(Some(now)))
                .execute(conn)?;
            let row: Option<CodeRow> = codes::table
                .find(&d)
                .select((
                    codes::client_id,
                    codes::user_id,
                    codes::redirect_uri,
                    codes::scope,
                    codes::offline,
                    codes::code_challenge,
                    codes::expires_at,
                    codes::grant_id,
                ))
                .first(conn)
                .optional()?;
            let Some(row) = row else {
                return Ok(Err(ExchangeError::UnknownCode));
            };
            let (code, earlier_grant) = match issued_code(req.digest, row) {
                Ok(x) => x,
                Err(e) => return Ok(Err(e.into())),
            };
            let stored = if claimed == 1 {
                StoredCode::Unused(code)
            } else {
                StoredCode::Redeemed { grant: earlier_grant }
            };
            let spec = match stored.redeem(&req.presentation, req.now) {
                Ok(spec) => spec,
                Err(RedeemError::Replayed { grant }) => {
                    if let Some(g) = grant {
                        revoke_grant!(conn, g.to_string(), now);
                    }
                    return Ok(Err(RedeemError::Replayed { grant }.into()));
                }
                // The code stays spent: a failed redemption burns it.
                Err(e) => return Ok(Err(e.into())),
            };
            let tokens = mint_tokens(&spec, req.random, req.now, req.lifetimes);
            let g = req.grant_id.to_string();
            let (user, client) = (spec.user.to_string(), spec.client.as_str().to_owned());
            diesel::insert_into(grants::table)
                .values((
                    grants::id.eq(&g),
                    grants::client_id.eq(&client),
                    grants::user_id.eq(&user),
                    grants::scope.eq(spec.scope.to_string()),
                    grants::offline.eq(spec.offline),
                    grants::created_at.eq(now),
                ))
                .execute(conn)?;
            insert_tokens!(conn, &g, &user, &client, &tokens, now);
            diesel::update(codes::table.find(&d))
                .set(codes::grant_id.eq(Some(&g)))
                .execute(conn)?;
            Ok(Ok((req.grant_id, tokens)))
        });
        flatten(r)
    }

    fn rotate_refresh_token(&self, req: RefreshExchange<'_>) -> Result<Rotation, RotateError> {
        let d = req.digest.to_hex();
        let now = req.now.epoch_seconds();
        let r: Result<Result<Rotation, RotateError>, DbError> = with_tx!(self.db, conn => {
            let row: Option<RefreshRow> = refresh::table
                .inner_join(grants::table)
                .filter(refresh::digest.eq(&d))
                .select((
                    refresh::grant_id,
                    refresh::expires_at,
                    refresh::used_at,
                    refresh::revoked_at,
                    grants::client_id,
                    grants::user_id,
                    grants::scope,
                    grants::revoked_at,
                ))
                .first(conn)
                .optional()?;
            let Some(row) = row else {
                return Ok(Err(RotateError::UnknownToken));
            };
            let record = match refresh_record(req.digest, row) {
                Ok(r) => r,
                Err(e) => return Ok(Err(e.into())),
            };
            let (user, client) = (record.user.to_string(), record.client.as_str().to_owned());
            let rotation = match record.rotate(&req.presentation, req.random, req.now, req.lifetimes) {
                Ok(r) => r,
                Err(RefreshError::Reused { grant }) => {
                    revoke_grant!(conn, grant.to_string(), now);
                    return Ok(Err(RefreshError::Reused { grant }.into()));
                }
                Err(e) => return Ok(Err(e.into())),
            };
            let g = rotation.grant.to_string();
            // Check-and-spend: only the caller whose update matched the unused row wins.
            let spent = diesel::update(refresh::table.find(&d))
                .filter(refresh::used_at.is_null())
                .filter(refresh::revoked_at.is_null())
                .set(refresh::used_at.eq(Some(now)))
                .execute(conn)?;
            if spent != 1 {
                // A concurrent caller spent it first: this presentation is a reuse.
                revoke_grant!(conn, &g, now);
                return Ok(Err(RefreshError::Reused { grant: rotation.grant }.into()));
            }
            insert_tokens!(conn, &g, &user, &client, &rotation.tokens, now);
            Ok(Ok(rotation))
        });
        flatten(r)
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
                revoked: rev.is_some() || grev.is_some(),
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

    fn revoke_token(
        &self,
        digest: &TokenDigest,
        client: &ClientId,
        now: Timestamp,
    ) -> Result<RevokeOutcome, StoreError> {
        let d = digest.to_hex();
        let now = now.epoch_seconds();
        let c = client.as_str();
        let r: Result<RevokeOutcome, DbError> = with_tx!(self.db, conn => {
            let fam: Option<(String, String)> = refresh::table
                .inner_join(grants::table)
                .filter(refresh::digest.eq(&d))
                .select((refresh::grant_id, grants::client_id))
                .first(conn)
                .optional()?;
            if let Some((g, owner)) = fam {
                if owner != c {
                    return Ok(RevokeOutcome::OtherClient);
                }
                revoke_grant!(conn, &g, now);
                return Ok(RevokeOutcome::GrantRevoked);
            }
            let owner: Option<String> = access::table
                .find(&d)
                .select(access::client_id)
                .first(conn)
                .optional()?;
            match owner {
                None => Ok(RevokeOutcome::Unknown),
                Some(o) if o != c => Ok(RevokeOutcome::OtherClient),
                Some(_) => {
                    diesel::update(access::table.find(&d))
                        .filter(access::revoked_at.is_null())
                        .set(access::revoked_at.eq(Some(now)))
                        .execute(conn)?;
                    Ok(RevokeOutcome::AccessTokenRevoked)
                }
            }
        });
        r.map_err(StoreError::from)
    }

    fn revoke_user_access_tokens(&self, user: UserId, now: Timestamp) -> Result<u64, StoreError> {
        let u = user.to_string();
        let now = now.epoch_seconds();
        let n = (|| -> Result<usize, DbError> {
            with_conn!(self.db, conn => {
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
        let d = digest.to_hex();
        let row: Option<RefreshRow> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(refresh::table
                    .inner_join(grants::table)
                    .filter(refresh::digest.eq(&d))
                    .select((
                        refresh::grant_id,
                        refresh::expires_at,
                        refresh::used_at,
                        refresh::revoked_at,
                        grants::client_id,
                        grants::user_id,
                        grants::scope,
                        grants::revoked_at,
                    ))
                    .first(conn)
                    .optional()?)
            })
        })()?;
        let Some(row) = row else {
            return Ok(None);
        };
        // For introspection a revocation outranks use: a used token of a revoked grant is
        // reported `Revoked` (rotation only needs to know that it was used).
        let revoked = row.3.is_some() || row.7.is_some();
        let mut record = refresh_record(*digest, row)?;
        if revoked {
            record.state = RefreshTokenState::Revoked;
        }
        Ok(Some(record))
    }
}
