//! `GrantRepository`: codes, grants and tokens, stored by digest only.
//!
//! The two contested operations are single transactions whose winner is decided
//! by a conditional update (`... WHERE redeemed_at IS NULL`, `... WHERE used_at
//! IS NULL`): of concurrent callers exactly one changes the row, on SQLite (where
//! `BEGIN IMMEDIATE` serializes writers) and on PostgreSQL (where the loser's
//! update waits for the winner's commit, re-reads the row and matches nothing).
//!
//! The token endpoint's two grants are the hot path, so each is one checkout and, on
//! PostgreSQL, four round trips: `BEGIN`, one read of the facts (the presented client's
//! secret digest and the code or refresh token, [`CodeFacts`] / [`RefreshFacts`]), one
//! write of the outcome (claim or spend, grant and tokens, as one statement of data-modifying
//! common table expressions: [`RedeemPg`] / [`RotatePg`]), `COMMIT`. The domain decides
//! between the read and the write (`ClientKind::authenticate`, `StoredCode::redeem`,
//! `RefreshTokenRecord::rotate`); the write's conditional update still picks the one winner,
//! and a loser (nothing claimed) is treated as a replay. SQLite, in process, writes with
//! plain statements ([`GrantWrites`]).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use diesel::{PgConnection, SqliteConnection};
use medialib_domain::oauth::{
    AccessTokenRecord, ClientId, ClientKind, CodeChallenge, IssuedCode, IssuedTokens, MintedToken,
    RedeemError, RedirectUri, RefreshError, RefreshTokenRecord, RefreshTokenState, Rotation,
    StoredCode, mint_tokens,
};
use medialib_domain::{GrantId, Timestamp, TokenDigest, UserId};
use medialib_ports::{
    BearerRecord, CodeExchange, ExchangeError, GrantRepository, RefreshExchange, RevokeOutcome,
    RotateError, StoreError,
};

use super::fixed::{Fixed, FixedSql};
use super::rows::{client_id, digest, grant_id, scope, ts, user_id};
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

/// The presented client's secret digest (`NULL` for a public client) and the code, if any:
/// no row when no client has the id.
struct CodeFacts;
impl FixedSql for CodeFacts {
    const SQL: &'static str = "SELECT c.secret_digest, k.client_id, k.user_id, k.redirect_uri, \
            k.scope, k.offline, k.code_challenge, k.expires_at, k.redeemed_at, k.grant_id \
        FROM oauth_clients c LEFT JOIN oauth_codes k ON k.digest = ? \
        WHERE c.id = ?";
    type Row = (
        Nullable<Text>,
        Nullable<Text>,
        Nullable<Text>,
        Nullable<Text>,
        Nullable<Text>,
        Nullable<Bool>,
        Nullable<Text>,
        Nullable<BigInt>,
        Nullable<BigInt>,
        Nullable<Text>,
    );
}
type CodeFactsRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<bool>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

/// The presented client's secret digest and the refresh token with its grant, if any: no
/// row when no client has the id.
struct RefreshFacts;
impl FixedSql for RefreshFacts {
    const SQL: &'static str = "SELECT c.secret_digest, r.grant_id, r.expires_at, r.used_at, \
            r.revoked_at, g.client_id, g.user_id, g.scope, g.revoked_at \
        FROM oauth_clients c \
        LEFT JOIN oauth_refresh_tokens r ON r.digest = ? \
        LEFT JOIN oauth_grants g ON g.id = r.grant_id \
        WHERE c.id = ?";
    type Row = (
        Nullable<Text>,
        Nullable<Text>,
        Nullable<BigInt>,
        Nullable<BigInt>,
        Nullable<BigInt>,
        Nullable<Text>,
        Nullable<Text>,
        Nullable<Text>,
        Nullable<BigInt>,
    );
}
type RefreshFactsRow = (
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// PostgreSQL: claims the code (only if unredeemed) and, only then, inserts the grant, its
/// access token and its refresh token (when `offline`) and links the code to the grant;
/// returns how many codes it claimed (0 or 1). Parameters: now, grant, code digest; grant,
/// client, user, scope, offline, now; then those of [`pair_params`].
struct RedeemPg;
impl FixedSql for RedeemPg {
    const SQL: &'static str = "WITH claim AS (\
            UPDATE oauth_codes SET redeemed_at = CAST(? AS BIGINT), grant_id = ? \
            WHERE digest = ? AND redeemed_at IS NULL RETURNING digest\
        ), g AS (\
            INSERT INTO oauth_grants (id, client_id, user_id, scope, offline, created_at) \
            SELECT ?, ?, ?, ?, CAST(? AS BOOLEAN), CAST(? AS BIGINT) FROM claim RETURNING id\
        ), a AS (\
            INSERT INTO oauth_access_tokens \
                (digest, grant_id, user_id, client_id, scope, created_at, expires_at) \
            SELECT ?, id, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT) FROM g\
        ), r AS (\
            INSERT INTO oauth_refresh_tokens (digest, grant_id, created_at, expires_at) \
            SELECT ?, id, CAST(? AS BIGINT), CAST(? AS BIGINT) FROM g WHERE CAST(? AS BOOLEAN)\
        ) SELECT count(*) FROM claim";
    type Row = BigInt;
}

/// PostgreSQL: spends the refresh token (only if unused and unrevoked) and, only then,
/// inserts the new access and refresh tokens of its grant; returns how many tokens it spent
/// (0 or 1). Parameters: now, spent digest; then those of [`pair_params`].
struct RotatePg;
impl FixedSql for RotatePg {
    const SQL: &'static str = "WITH spent AS (\
            UPDATE oauth_refresh_tokens SET used_at = CAST(? AS BIGINT) \
            WHERE digest = ? AND used_at IS NULL AND revoked_at IS NULL RETURNING grant_id\
        ), a AS (\
            INSERT INTO oauth_access_tokens \
                (digest, grant_id, user_id, client_id, scope, created_at, expires_at) \
            SELECT ?, grant_id, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT) FROM spent\
        ), r AS (\
            INSERT INTO oauth_refresh_tokens (digest, grant_id, created_at, expires_at) \
            SELECT ?, grant_id, CAST(? AS BIGINT), CAST(? AS BIGINT) FROM spent \
            WHERE CAST(? AS BOOLEAN)\
        ) SELECT count(*) FROM spent";
    type Row = BigInt;
}

/// The write of a redemption the domain approved: the code to claim, the grant to create.
struct NewGrant<'a> {
    code: &'a str,
    grant: &'a str,
    client: &'a str,
    user: &'a str,
    offline: bool,
    now: i64,
    tokens: &'a IssuedTokens,
}

/// The write of a rotation the domain approved: the token to spend, the pair to add.
struct NewPair<'a> {
    spent: &'a str,
    grant: &'a str,
    client: &'a str,
    user: &'a str,
    now: i64,
    tokens: &'a IssuedTokens,
}

/// The conditional writes of the two grants, per backend; `false`: another caller claimed
/// the code or spent the token first, and nothing was written.
trait GrantWrites {
    fn claim_code(&mut self, w: &NewGrant<'_>) -> QueryResult<bool>;
    fn spend_refresh(&mut self, w: &NewPair<'_>) -> QueryResult<bool>;
}

impl GrantWrites for SqliteConnection {
    fn claim_code(&mut self, w: &NewGrant<'_>) -> QueryResult<bool> {
        let conn = self;
        let claimed = diesel::update(codes::table.find(w.code))
            .filter(codes::redeemed_at.is_null())
            .set(codes::redeemed_at.eq(Some(w.now)))
            .execute(conn)?;
        if claimed != 1 {
            return Ok(false);
        }
        diesel::insert_into(grants::table)
            .values((
                grants::id.eq(w.grant),
                grants::client_id.eq(w.client),
                grants::user_id.eq(w.user),
                grants::scope.eq(w.tokens.scope.to_string()),
                grants::offline.eq(w.offline),
                grants::created_at.eq(w.now),
            ))
            .execute(conn)?;
        insert_tokens!(conn, w.grant, w.user, w.client, w.tokens, w.now);
        diesel::update(codes::table.find(w.code))
            .set(codes::grant_id.eq(Some(w.grant)))
            .execute(conn)?;
        Ok(true)
    }

    fn spend_refresh(&mut self, w: &NewPair<'_>) -> QueryResult<bool> {
        let conn = self;
        let spent = diesel::update(refresh::table.find(w.spent))
            .filter(refresh::used_at.is_null())
            .filter(refresh::revoked_at.is_null())
            .set(refresh::used_at.eq(Some(w.now)))
            .execute(conn)?;
        if spent != 1 {
            return Ok(false);
        }
        insert_tokens!(conn, w.grant, w.user, w.client, w.tokens, w.now);
        Ok(true)
    }
}

/// The text parameters of a token pair: access digest, user, client, scope, now, access
/// expiry, refresh digest (empty when none), now, refresh expiry (0 when none), whether
/// there is a refresh token.
fn pair_params(user: &str, client: &str, now: i64, t: &IssuedTokens) -> [String; 10] {
    let (r_digest, r_expiry) = t.refresh.as_ref().map_or((String::new(), 0), |r| {
        (r.digest.to_hex(), r.expires_at.epoch_seconds())
    });
    [
        t.access.digest.to_hex(),
        user.to_owned(),
        client.to_owned(),
        t.scope.to_string(),
        now.to_string(),
        t.access.expires_at.epoch_seconds().to_string(),
        r_digest,
        now.to_string(),
        r_expiry.to_string(),
        t.refresh.is_some().to_string(),
    ]
}

impl GrantWrites for PgConnection {
    fn claim_code(&mut self, w: &NewGrant<'_>) -> QueryResult<bool> {
        let now = w.now.to_string();
        let pair = pair_params(w.user, w.client, w.now, w.tokens);
        let scope = w.tokens.scope.to_string();
        let offline = w.offline.to_string();
        let mut params: Vec<&str> = vec![
            &now, w.grant, w.code, w.grant, w.client, w.user, &scope, &offline, &now,
        ];
        params.extend(pair.iter().map(String::as_str));
        let claimed: i64 = Fixed::<RedeemPg>::new(&params).get_result(self)?;
        Ok(claimed == 1)
    }

    fn spend_refresh(&mut self, w: &NewPair<'_>) -> QueryResult<bool> {
        let now = w.now.to_string();
        let pair = pair_params(w.user, w.client, w.now, w.tokens);
        let mut params: Vec<&str> = vec![&now, w.spent];
        params.extend(pair.iter().map(String::as_str));
        let spent: i64 = Fixed::<RotatePg>::new(&params).get_result(self)?;
        Ok(spent == 1)
    }
}

/// How the presented client authenticates: confidential with this digest, or public.
fn client_kind(secret_digest: Option<String>) -> Result<ClientKind, StoreError> {
    Ok(match secret_digest {
        Some(d) => ClientKind::Confidential {
            secret_digest: digest(&d)?,
        },
        None => ClientKind::Public,
    })
}

/// The code part of a [`CodeFacts`] row: `None` when there is no such code; the grant is
/// what an earlier redemption produced, if the code is spent.
fn code_from_facts(
    digest: TokenDigest,
    row: CodeFactsRow,
) -> Result<Option<StoredCode>, StoreError> {
    let (_, client, user, redirect, sc, offline, challenge, expires, redeemed, grant) = row;
    let (Some(client), Some(user), Some(redirect), Some(sc), Some(offline), Some(expires)) =
        (client, user, redirect, sc, offline, expires)
    else {
        return Ok(None);
    };
    let (code, grant) = issued_code(
        digest,
        (
            client, user, redirect, sc, offline, challenge, expires, grant,
        ),
    )?;
    Ok(Some(match redeemed {
        None => StoredCode::Unused(code),
        Some(_) => StoredCode::Redeemed { grant },
    }))
}

/// The refresh token part of a [`RefreshFacts`] row: `None` when there is no such token.
fn refresh_from_facts(
    digest: TokenDigest,
    row: RefreshFactsRow,
) -> Result<Option<RefreshTokenRecord>, StoreError> {
    let (_, grant, expires, used, revoked, client, user, sc, grant_revoked) = row;
    let (Some(grant), Some(expires), Some(client), Some(user), Some(sc)) =
        (grant, expires, client, user, sc)
    else {
        return Ok(None);
    };
    refresh_record(
        digest,
        (
            grant,
            expires,
            used,
            revoked,
            client,
            user,
            sc,
            grant_revoked,
        ),
    )
    .map(Some)
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
        let presented = req.presentation.client.as_str();
        let r: Result<Result<(GrantId, IssuedTokens), ExchangeError>, DbError> = with_tx!(self.db, conn => {
            let row: Option<CodeFactsRow> =
                Fixed::<CodeFacts>::new(&[&d, presented]).get_result(conn).optional()?;
            let Some(row) = row else {
                return Ok(Err(ExchangeError::UnknownClient));
            };
            // The client authenticates before the code is touched.
            let kind = match client_kind(row.0.clone()) {
                Ok(k) => k,
                Err(e) => return Ok(Err(e.into())),
            };
            if let Err(e) = kind.authenticate(req.client_secret) {
                return Ok(Err(ExchangeError::ClientRefused(e)));
            }
            let stored = match code_from_facts(req.digest, row) {
                Ok(Some(code)) => code,
                Ok(None) => return Ok(Err(ExchangeError::UnknownCode)),
                Err(e) => return Ok(Err(e.into())),
            };
            let spec = match stored.redeem(&req.presentation, req.now) {
                Ok(spec) => spec,
                Err(RedeemError::Replayed { grant }) => {
                    if let Some(g) = grant {
                        revoke_grant!(conn, g.to_string(), now);
                    }
                    return Ok(Err(RedeemError::Replayed { grant }.into()));
                }
                Err(e) => {
                    // The code stays spent: a failed redemption burns it.
                    diesel::update(codes::table.find(&d))
                        .filter(codes::redeemed_at.is_null())
                        .set(codes::redeemed_at.eq(Some(now)))
                        .execute(conn)?;
                    return Ok(Err(e.into()));
                }
            };
            let tokens = mint_tokens(&spec, req.random, req.now, req.lifetimes);
            let g = req.grant_id.to_string();
            let (user, client) = (spec.user.to_string(), spec.client.as_str().to_owned());
            let claimed = GrantWrites::claim_code(conn, &NewGrant {
                code: &d,
                grant: &g,
                client: &client,
                user: &user,
                offline: spec.offline,
                now,
                tokens: &tokens,
            })?;
            if !claimed {
                // A concurrent caller redeemed it first: this presentation is a replay,
                // which revokes what the winner got.
                let earlier: Option<Option<String>> = codes::table
                    .find(&d)
                    .select(codes::grant_id)
                    .first(conn)
                    .optional()?;
                let grant = match earlier.flatten().map(|g| grant_id(&g)).transpose() {
                    Ok(g) => g,
                    Err(e) => return Ok(Err(e.into())),
                };
                if let Some(g) = grant {
                    revoke_grant!(conn, g.to_string(), now);
                }
                return Ok(Err(RedeemError::Replayed { grant }.into()));
            }
            Ok(Ok((req.grant_id, tokens)))
        });
        flatten(r)
    }

    fn rotate_refresh_token(&self, req: RefreshExchange<'_>) -> Result<Rotation, RotateError> {
        let d = req.digest.to_hex();
        let now = req.now.epoch_seconds();
        let presented = req.presentation.client.as_str();
        let r: Result<Result<Rotation, RotateError>, DbError> = with_tx!(self.db, conn => {
            let row: Option<RefreshFactsRow> =
                Fixed::<RefreshFacts>::new(&[&d, presented]).get_result(conn).optional()?;
            let Some(row) = row else {
                return Ok(Err(RotateError::UnknownClient));
            };
            // The client authenticates before the token is touched.
            let kind = match client_kind(row.0.clone()) {
                Ok(k) => k,
                Err(e) => return Ok(Err(e.into())),
            };
            if let Err(e) = kind.authenticate(req.client_secret) {
                return Ok(Err(RotateError::ClientRefused(e)));
            }
            let record = match refresh_from_facts(req.digest, row) {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(Err(RotateError::UnknownToken)),
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
            let spent = GrantWrites::spend_refresh(conn, &NewPair {
                spent: &d,
                grant: &g,
                client: &client,
                user: &user,
                now,
                tokens: &rotation.tokens,
            })?;
            if !spent {
                // A concurrent caller spent it first: this presentation is a reuse.
                revoke_grant!(conn, &g, now);
                return Ok(Err(RefreshError::Reused { grant: rotation.grant }.into()));
            }
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
