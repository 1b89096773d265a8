//! The units of work of the token endpoint's two grants: read the facts, write a decision.
//!
//! A [`Unit`] decides nothing. It reads the facts of one presentation in one statement (the
//! presented client's secret digest and the code or refresh token, [`CodeFactsSql`] /
//! [`RefreshFactsSql`]), parses the columns into domain values, and writes whatever the
//! domain decided (`medialib_domain::oauth::decide_code` / `decide_refresh`, called by the
//! service). Its one judgement is whether a conditional write still matched: claiming a code
//! (`... WHERE redeemed_at IS NULL`) or spending a refresh token (`... WHERE used_at IS NULL
//! AND revoked_at IS NULL`). Of concurrent callers exactly one changes the row, on SQLite
//! (where `BEGIN IMMEDIATE` serializes writers) and on PostgreSQL (where the loser's update
//! waits for the winner's commit, re-reads the row and matches nothing); the loser reports
//! [`Applied::Lost`], and the service decides again on the facts the winner left.
//!
//! The token endpoint's grants are the hot path, so on PostgreSQL a unit is four round
//! trips: `BEGIN`, the read of the facts, the write of the outcome (claim or spend, grant and
//! tokens, as one statement of data-modifying common table expressions: [`RedeemPg`] /
//! [`RotatePg`]), `COMMIT`. SQLite, in process, writes with plain statements.

use diesel::prelude::*;
use diesel::query_dsl::LoadQuery;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use diesel::{PgConnection, SqliteConnection};
use medialib_domain::oauth::{
    ClientKind, CodeChallenge, CodeDecision, CodeFacts, IssuedCode, NewTokens, RedirectUri,
    RefreshDecision, RefreshFacts, RefreshTokenRecord, Revocation, RevocationFacts, RevokeDecision,
    Spent, StoredCode, Successor,
};
use medialib_domain::{Timestamp, TokenDigest};
use medialib_ports::{Applied, GrantUnit, StoreError};

use super::fixed::{Fixed, FixedSql};
use super::rows::{client_id, digest, grant_id, scope, ts, user_id};
use crate::error::DbError;

use crate::schema::{
    oauth_access_tokens as access, oauth_grants as grants, oauth_refresh_tokens as refresh,
};
use statements::{
    LinkCode, RedeemCode, RedeemPg, RevokeAccess, RevokeGrant, RotatePg, SpendRefresh,
};

mod statements;
#[cfg(test)]
mod tests;

/// The Rust type of a column of SQL type `Text`, `Bool` or `BigInt`.
macro_rules! rust_of {
    (Text) => {
        String
    };
    (Bool) => {
        bool
    };
    (BigInt) => {
        i64
    };
}

/// Declares a statement whose columns may all be `NULL` (the left-joined facts): its SQL, its
/// `Nullable` column types and the Rust tuple `$values` of one row, from one list of types.
macro_rules! nullable_facts {
    ($(#[$doc:meta])* $name:ident -> $values:ident ($($col:ident),+ $(,)?) = $sql:expr) => {
        $(#[$doc])*
        pub(crate) struct $name;
        impl FixedSql for $name {
            const SQL: &'static str = $sql;
            type Row = ($(Nullable<$col>,)+);
        }
        type $values = ($(Option<rust_of!($col)>,)+);
    };
}

nullable_facts! {
    /// The presented client's secret digest (`NULL` for a public client) and the code, if
    /// any: no row when no client has the id.
    CodeFactsSql -> CodeFactsRow (Text, Text, Text, Text, Text, Bool, Text, BigInt, BigInt, Text) =
        "SELECT c.secret_digest, k.client_id, k.user_id, k.redirect_uri, \
            k.scope, k.offline, k.code_challenge, k.expires_at, k.redeemed_at, k.grant_id \
        FROM oauth_clients c LEFT JOIN oauth_codes k ON k.digest = ? \
        WHERE c.id = ?"
}

nullable_facts! {
    /// The presented client's secret digest and the refresh token with its grant, if any: no
    /// row when no client has the id.
    RefreshFactsSql -> RefreshFactsRow
        (Text, Text, BigInt, BigInt, BigInt, Text, Text, Text, BigInt, Text, Text, Text, BigInt, BigInt) =
        "SELECT c.secret_digest, r.grant_id, r.expires_at, r.used_at, \
            r.revoked_at, g.client_id, g.user_id, g.scope, g.revoked_at, \
            r.successor_digest, r.successor_access_digest, s.digest, s.used_at, s.revoked_at \
        FROM oauth_clients c \
        LEFT JOIN oauth_refresh_tokens r ON r.digest = ? \
        LEFT JOIN oauth_grants g ON g.id = r.grant_id \
        LEFT JOIN oauth_refresh_tokens s ON s.digest = r.successor_digest \
        WHERE c.id = ?"
}

/// A refresh token with its grant: grant, expiry, used, revoked, client, user, scope, grant
/// revoked.
pub(crate) type RefreshRow = (
    String,
    i64,
    Option<i64>,
    Option<i64>,
    String,
    String,
    String,
    Option<i64>,
);

/// Parses a [`RefreshRow`]: the columns as they are; the domain says what they mean. A spent
/// token's `successor` is what the caller read of the pair its rotation gave (introspection
/// reads none: it asks only whether the token is spent).
pub(crate) fn refresh_record(
    digest: TokenDigest,
    row: RefreshRow,
    successor: Option<Successor>,
) -> Result<RefreshTokenRecord, StoreError> {
    let (grant, expires, used, revoked, client, user, sc, grant_revoked) = row;
    Ok(RefreshTokenRecord {
        digest,
        grant: grant_id(&grant)?,
        client: client_id(&client)?,
        user: user_id(&user)?,
        scope: scope(&sc)?,
        expires_at: ts(expires),
        spent: used.map(|at| Spent {
            at: ts(at),
            successor,
        }),
        revoked: Revocation {
            token: revoked.is_some(),
            grant: grant_revoked.is_some(),
        },
    })
}

/// The token rows of a decision, as column values, written at `now`.
pub(crate) struct TokenRows {
    grant: String,
    user: String,
    client: String,
    scope: String,
    access: (String, i64),
    refresh: Option<(String, i64)>,
    now: i64,
}

impl TokenRows {
    fn of(t: &NewTokens<'_>, now: i64) -> Self {
        Self {
            grant: t.grant.to_string(),
            user: t.user.to_string(),
            client: t.client.as_str().to_owned(),
            scope: t.scope.to_string(),
            access: (
                t.access.digest.to_hex(),
                t.access.expires_at.epoch_seconds(),
            ),
            refresh: t
                .refresh
                .map(|r| (r.digest.to_hex(), r.expires_at.epoch_seconds())),
            now,
        }
    }

    /// The text parameters of the pair in [`with_token_pair`]: access digest, user, client,
    /// scope, now, access expiry, refresh digest (empty when none), now, refresh expiry (0
    /// when none), whether there is a refresh token.
    fn pair_params(&self) -> [String; 10] {
        let (r_digest, r_expiry) = self.refresh.clone().unwrap_or_default();
        [
            self.access.0.clone(),
            self.user.clone(),
            self.client.clone(),
            self.scope.clone(),
            self.now.to_string(),
            self.access.1.to_string(),
            r_digest,
            self.now.to_string(),
            r_expiry.to_string(),
            self.refresh.is_some().to_string(),
        ]
    }

    /// The digests the spent token records as its successor: the new refresh token (when
    /// there is one) and access token.
    fn successor(&self) -> (Option<String>, &str) {
        (self.refresh.as_ref().map(|r| r.0.clone()), &self.access.0)
    }

    /// Executes the PostgreSQL statement `S` with `head` then the pair's parameters; whether
    /// its conditional change matched.
    fn write_pg<S: FixedSql<Row = BigInt>>(
        &self,
        conn: &mut PgConnection,
        head: &[&str],
    ) -> QueryResult<bool> {
        let pair = self.pair_params();
        let mut params = head.to_vec();
        params.extend(pair.iter().map(String::as_str));
        let changed: i64 = Fixed::<S>::new(&params).get_result(conn)?;
        Ok(changed == 1)
    }
}

/// The conditional writes of the two grants, per backend; `false`: another caller claimed
/// the code or spent the token first, and nothing was written.
pub(crate) trait GrantWrites {
    /// Claims `code` and creates the grant of `rows` (`offline`: with a refresh token).
    fn claim_code(&mut self, code: &str, offline: bool, rows: &TokenRows) -> QueryResult<bool>;
    /// Spends the refresh token `spent` and adds the pair of `rows`.
    fn spend_refresh(&mut self, spent: &str, rows: &TokenRows) -> QueryResult<bool>;
}

impl GrantWrites for SqliteConnection {
    fn claim_code(&mut self, code: &str, offline: bool, rows: &TokenRows) -> QueryResult<bool> {
        if !self.redeem_code(code, rows.now)? {
            return Ok(false);
        }
        diesel::insert_into(grants::table)
            .values((
                grants::id.eq(&rows.grant),
                grants::client_id.eq(&rows.client),
                grants::user_id.eq(&rows.user),
                grants::scope.eq(&rows.scope),
                grants::offline.eq(offline),
                grants::created_at.eq(rows.now),
            ))
            .execute(self)?;
        self.insert_tokens(rows)?;
        Fixed::<LinkCode>::new(&[&rows.grant, code]).execute(self)?;
        Ok(true)
    }

    fn spend_refresh(&mut self, spent: &str, rows: &TokenRows) -> QueryResult<bool> {
        let (successor, access) = rows.successor();
        let successor = successor.unwrap_or_default();
        let n = Fixed::<SpendRefresh>::new(&[&rows.now.to_string(), &successor, access, spent])
            .execute(self)?;
        if n != 1 {
            return Ok(false);
        }
        self.insert_tokens(rows)?;
        Ok(true)
    }
}

impl GrantWrites for PgConnection {
    fn claim_code(&mut self, code: &str, offline: bool, rows: &TokenRows) -> QueryResult<bool> {
        let now = rows.now.to_string();
        let offline = offline.to_string();
        let head = [
            &now,
            &rows.grant,
            code,
            &rows.grant,
            &rows.client,
            &rows.user,
            &rows.scope,
            &offline,
            &now,
        ];
        rows.write_pg::<RedeemPg>(self, &head)
    }

    fn spend_refresh(&mut self, spent: &str, rows: &TokenRows) -> QueryResult<bool> {
        let (successor, access) = rows.successor();
        let successor = successor.unwrap_or_default();
        rows.write_pg::<RotatePg>(self, &[&rows.now.to_string(), &successor, access, spent])
    }
}

/// A refresh token's grant and the grant's client, or else an access token's client.
pub(crate) type RevocationRow = (Option<(String, String)>, Option<String>);

/// The reads and the writes of the grants that are the same on both backends.
pub(crate) trait GrantReads {
    /// A refresh token with its grant.
    fn refresh_token(&mut self, digest: &str) -> QueryResult<Option<RefreshRow>>;
    /// Marks a code redeemed (without a grant: burnt) if it is not already; whether this
    /// call did.
    fn redeem_code(&mut self, digest: &str, now: i64) -> QueryResult<bool>;
    /// Marks a grant revoked (if it is not already): every access and refresh token
    /// descended from it stops working.
    fn revoke_grant(&mut self, grant: &str, now: i64) -> QueryResult<()>;
    /// Inserts the access token and, when there is one, the refresh token of `rows`.
    fn insert_tokens(&mut self, rows: &TokenRows) -> QueryResult<()>;
    /// What a digest presented for revocation names: a refresh token's grant and the
    /// grant's client, else an access token's client.
    fn revocation_facts(&mut self, digest: &str) -> QueryResult<RevocationRow>;
    /// Marks one access token revoked, if it is not already.
    fn revoke_access_token(&mut self, digest: &str, now: i64) -> QueryResult<()>;
    /// A retry of the spent token `spent` within the grace: only if its successor `before`
    /// (refresh, access) is still unused and unrevoked, spends that successor (with no pair of
    /// its own, presenting it later is reuse), revokes its access token, records the new pair
    /// of `rows` as `spent`'s successor and inserts it. `false`: the successor was touched
    /// first, and nothing was written. (The successor's row is the contested one, and its
    /// conditional update decides; but the spent token's row is locked before it, as every
    /// writer of the family does, lest two retries lock the two rows in opposite orders: on
    /// PostgreSQL a rotation that lost keeps the spent row locked, and then retries.)
    fn retake_refresh(
        &mut self,
        spent: &str,
        before: (&str, &str),
        rows: &TokenRows,
    ) -> QueryResult<bool>;
}

/// Implements [`GrantReads`] for a connection type: one body, compiled per backend.
macro_rules! grant_reads {
    ($conn:ty) => {
        impl GrantReads for $conn {
            fn refresh_token(&mut self, digest: &str) -> QueryResult<Option<RefreshRow>> {
                refresh::table
                    .inner_join(grants::table)
                    .filter(refresh::digest.eq(digest))
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
                    .first(self)
                    .optional()
            }

            fn redeem_code(&mut self, digest: &str, now: i64) -> QueryResult<bool> {
                Fixed::<RedeemCode>::new(&[&now.to_string(), digest])
                    .execute(self)
                    .map(|n| n == 1)
            }

            fn revoke_grant(&mut self, grant: &str, now: i64) -> QueryResult<()> {
                Fixed::<RevokeGrant>::new(&[&now.to_string(), grant])
                    .execute(self)
                    .map(drop)
            }

            fn revocation_facts(&mut self, digest: &str) -> QueryResult<RevocationRow> {
                let family = refresh::table
                    .inner_join(grants::table)
                    .filter(refresh::digest.eq(digest))
                    .select((refresh::grant_id, grants::client_id))
                    .first(self)
                    .optional()?;
                if family.is_some() {
                    return Ok((family, None));
                }
                let holder = access::table
                    .find(digest)
                    .select(access::client_id)
                    .first(self)
                    .optional()?;
                Ok((None, holder))
            }

            fn revoke_access_token(&mut self, digest: &str, now: i64) -> QueryResult<()> {
                Fixed::<RevokeAccess>::new(&[&now.to_string(), digest])
                    .execute(self)
                    .map(drop)
            }

            fn retake_refresh(
                &mut self,
                spent: &str,
                (refresh, access_token): (&str, &str),
                rows: &TokenRows,
            ) -> QueryResult<bool> {
                // The spent row first, as a lost rotation in this transaction may already
                // hold it (PostgreSQL keeps the lock of a row whose recheck failed): taking
                // the successor first deadlocked with a retry holding it and wanting this.
                diesel::update(refresh::table.find(spent))
                    .set(refresh::used_at.eq(refresh::used_at))
                    .execute(self)?;
                let taken = diesel::update(refresh::table.find(refresh))
                    .filter(refresh::used_at.is_null())
                    .filter(refresh::revoked_at.is_null())
                    .set(refresh::used_at.eq(Some(rows.now)))
                    .execute(self)?;
                if taken != 1 {
                    return Ok(false);
                }
                self.revoke_access_token(access_token, rows.now)?;
                diesel::update(refresh::table.find(spent))
                    .set((
                        refresh::successor_digest.eq(rows.successor().0),
                        refresh::successor_access_digest.eq(Some(&rows.access.0)),
                    ))
                    .execute(self)?;
                self.insert_tokens(rows)?;
                Ok(true)
            }

            fn insert_tokens(&mut self, rows: &TokenRows) -> QueryResult<()> {
                diesel::insert_into(access::table)
                    .values((
                        access::digest.eq(&rows.access.0),
                        access::grant_id.eq(&rows.grant),
                        access::user_id.eq(&rows.user),
                        access::client_id.eq(&rows.client),
                        access::scope.eq(&rows.scope),
                        access::created_at.eq(rows.now),
                        access::expires_at.eq(rows.access.1),
                    ))
                    .execute(self)?;
                if let Some((digest, expires)) = &rows.refresh {
                    diesel::insert_into(refresh::table)
                        .values((
                            refresh::digest.eq(digest),
                            refresh::grant_id.eq(&rows.grant),
                            refresh::created_at.eq(rows.now),
                            refresh::expires_at.eq(*expires),
                        ))
                        .execute(self)?;
                }
                Ok(())
            }
        }
    };
}
grant_reads!(SqliteConnection);
grant_reads!(PgConnection);

/// How the presented client authenticates: confidential with this digest, or public.
fn client_kind(secret_digest: Option<String>) -> Result<ClientKind, StoreError> {
    Ok(match secret_digest {
        Some(d) => ClientKind::Confidential {
            secret_digest: digest(&d)?,
        },
        None => ClientKind::Public,
    })
}

/// Parses a [`CodeFactsSql`] row (`None`: no such client).
fn code_facts(digest: TokenDigest, row: Option<CodeFactsRow>) -> Result<CodeFacts, StoreError> {
    let Some((secret, client, user, redirect, sc, offline, challenge, expires, redeemed, grant)) =
        row
    else {
        return Ok(CodeFacts {
            client: None,
            code: None,
        });
    };
    let client_kind = client_kind(secret)?;
    let (Some(client), Some(user), Some(redirect), Some(sc), Some(offline), Some(expires)) =
        (client, user, redirect, sc, offline, expires)
    else {
        return Ok(CodeFacts {
            client: Some(client_kind),
            code: None,
        });
    };
    let corrupt = |what: &str| StoreError::Corrupt(format!("code {what}"));
    let code = match redeemed {
        Some(_) => StoredCode::Redeemed {
            grant: grant.map(|g| grant_id(&g)).transpose()?,
        },
        None => StoredCode::Unused(IssuedCode {
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
        }),
    };
    Ok(CodeFacts {
        client: Some(client_kind),
        code: Some(code),
    })
}

/// Parses a [`RefreshFactsSql`] row (`None`: no such client).
fn refresh_facts(
    digest: TokenDigest,
    row: Option<RefreshFactsRow>,
) -> Result<RefreshFacts, StoreError> {
    let Some((
        secret,
        grant,
        expires,
        used,
        revoked,
        client,
        user,
        sc,
        grant_revoked,
        successor,
        successor_access,
        successor_found,
        successor_used,
        successor_revoked,
    )) = row
    else {
        return Ok(RefreshFacts {
            client: None,
            token: None,
        });
    };
    let client_kind = client_kind(secret)?;
    let successor = match (successor, successor_access) {
        (Some(refresh), Some(access)) => Some(Successor {
            refresh: super::rows::digest(&refresh)?,
            access: super::rows::digest(&access)?,
            // A successor row that is gone (housekeeping deleted it) counts as touched.
            untouched: successor_found.is_some()
                && successor_used.is_none()
                && successor_revoked.is_none(),
        }),
        (None, None) => None,
        _ => {
            return Err(StoreError::Corrupt(
                "a refresh token has one successor digest without the other".into(),
            ));
        }
    };
    let token = match (grant, expires, client, user, sc) {
        (Some(grant), Some(expires), Some(client), Some(user), Some(sc)) => Some(refresh_record(
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
            successor,
        )?),
        _ => None,
    };
    Ok(RefreshFacts {
        client: Some(client_kind),
        token,
    })
}

/// One contested grant's unit of work on a transaction's connection.
pub(crate) struct Unit<'c, C> {
    conn: &'c mut C,
    digest: TokenDigest,
    hex: &'c str,
    client: &'c str,
}

impl<'c, C> Unit<'c, C> {
    /// The unit over the code or token `digest` (`hex`) presented by `client`.
    pub(crate) fn new(conn: &'c mut C, digest: TokenDigest, hex: &'c str, client: &'c str) -> Self {
        Self {
            conn,
            digest,
            hex,
            client,
        }
    }
}

fn db(e: diesel::result::Error) -> StoreError {
    DbError::Query(e).into()
}

/// One of the two contested grants as its unit sees it: the statement that reads its facts,
/// how they parse, and how a decision of the domain is written.
pub(crate) trait Step: Sized {
    /// The statement of the facts, with the parameters digest, client.
    type Sql: FixedSql;
    /// One row of [`Step::Sql`].
    type Values;
    /// What the domain decides on these facts.
    type Decision;
    /// Parses the row (`None`: no such client).
    fn parse(digest: TokenDigest, row: Option<Self::Values>) -> Result<Self, StoreError>;
    /// Writes `decision` about the code or token `hex` at `now`; `false`: it lost the race.
    fn write<C: GrantReads + GrantWrites>(
        conn: &mut C,
        hex: &str,
        decision: &Self::Decision,
        now: i64,
    ) -> QueryResult<bool>;
}

impl Step for CodeFacts {
    type Sql = CodeFactsSql;
    type Values = CodeFactsRow;
    type Decision = CodeDecision;

    fn parse(digest: TokenDigest, row: Option<CodeFactsRow>) -> Result<Self, StoreError> {
        code_facts(digest, row)
    }

    fn write<C: GrantReads + GrantWrites>(
        conn: &mut C,
        hex: &str,
        decision: &CodeDecision,
        now: i64,
    ) -> QueryResult<bool> {
        match decision {
            CodeDecision::Redeem(r) => conn.claim_code(
                hex,
                r.spec().offline(),
                &TokenRows::of(&r.new_tokens(), now),
            ),
            CodeDecision::BurnCode(_) => conn.redeem_code(hex, now).map(|_| true),
            CodeDecision::RevokeGrant(g) => conn.revoke_grant(&g.to_string(), now).map(|()| true),
            CodeDecision::Refuse(_) => Ok(true),
        }
    }
}

impl Step for RefreshFacts {
    type Sql = RefreshFactsSql;
    type Values = RefreshFactsRow;
    type Decision = RefreshDecision;

    fn parse(digest: TokenDigest, row: Option<RefreshFactsRow>) -> Result<Self, StoreError> {
        refresh_facts(digest, row)
    }

    fn write<C: GrantReads + GrantWrites>(
        conn: &mut C,
        hex: &str,
        decision: &RefreshDecision,
        now: i64,
    ) -> QueryResult<bool> {
        match decision {
            RefreshDecision::Rotate(r) => {
                let rows = TokenRows::of(&r.new_tokens(), now);
                match r.supersedes() {
                    None => conn.spend_refresh(hex, &rows),
                    Some(before) => conn.retake_refresh(
                        hex,
                        (&before.refresh.to_hex(), &before.access.to_hex()),
                        &rows,
                    ),
                }
            }
            RefreshDecision::RevokeGrant(g) => {
                conn.revoke_grant(&g.to_string(), now).map(|()| true)
            }
            RefreshDecision::Refuse(_) => Ok(true),
        }
    }
}

impl<C, F> GrantUnit<F, F::Decision> for Unit<'_, C>
where
    C: GrantReads + GrantWrites,
    F: Step,
    for<'p> Fixed<'p, F::Sql>: LoadQuery<'p, C, F::Values>,
{
    fn facts(&mut self) -> Result<F, StoreError> {
        let row = Fixed::<F::Sql>::new(&[self.hex, self.client])
            .get_result(self.conn)
            .optional()
            .map_err(db)?;
        F::parse(self.digest, row)
    }

    fn apply(&mut self, decision: &F::Decision, now: Timestamp) -> Result<Applied, StoreError> {
        let written = F::write(self.conn, self.hex, decision, now.epoch_seconds()).map_err(db)?;
        Ok(if written {
            Applied::Written
        } else {
            Applied::Lost
        })
    }
}

impl<C: GrantReads + GrantWrites> GrantUnit<RevocationFacts, RevokeDecision> for Unit<'_, C> {
    fn facts(&mut self) -> Result<RevocationFacts, StoreError> {
        Ok(match self.conn.revocation_facts(self.hex).map_err(db)? {
            (Some((grant, holder)), _) => RevocationFacts::RefreshToken {
                grant: grant_id(&grant)?,
                holder: client_id(&holder)?,
            },
            (None, Some(holder)) => RevocationFacts::AccessToken {
                holder: client_id(&holder)?,
            },
            (None, None) => RevocationFacts::Unknown,
        })
    }

    fn apply(&mut self, decision: &RevokeDecision, now: Timestamp) -> Result<Applied, StoreError> {
        let now = now.epoch_seconds();
        match decision {
            RevokeDecision::RevokeGrant(g) => self.conn.revoke_grant(&g.to_string(), now),
            RevokeDecision::RevokeAccessToken => self.conn.revoke_access_token(self.hex, now),
            RevokeDecision::OtherClient | RevokeDecision::Unknown => Ok(()),
        }
        .map_err(db)?;
        Ok(Applied::Written)
    }
}
