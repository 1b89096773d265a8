//! The grants' writes as statements of constant text, which diesel prepares once a connection
//! (`store/fixed.rs`): on PostgreSQL a claim or a spend with everything it inserts, as one statement
//! of data-modifying common table expressions; on both backends the conditional stamps.

use diesel::sql_types::BigInt;

use super::super::fixed::FixedSql;

/// Declares an `UPDATE` of constant text, run with `Fixed`. Diesel never caches its own
/// `UPDATE`s (`UpdateStatement` marks them unsafe to cache, as a changeset's `Option`s may
/// change the text), so a `diesel::update` is parsed and planned on every call; these are
/// prepared once a connection. Timestamps are bound as text and cast (on both backends).
macro_rules! fixed_update {
    ($(#[$doc:meta])* $name:ident = $sql:expr) => {
        $(#[$doc])*
        pub(super) struct $name;
        impl FixedSql for $name {
            const SQL: &'static str = $sql;
            type Row = ();
        }
    };
}

/// An `UPDATE` that sets the timestamp `$column` of the row whose `$key` is the second
/// parameter to the first, if it is still `NULL`.
macro_rules! stamp_if_null {
    ($(#[$doc:meta])* $name:ident: $table:literal, $key:literal, $column:literal) => {
        fixed_update! {
            $(#[$doc])*
            $name = concat!(
                "UPDATE ", $table, " SET ", $column, " = CAST(? AS BIGINT) WHERE ", $key,
                " = ? AND ", $column, " IS NULL"
            )
        }
    };
}

stamp_if_null! {
    /// Redeems a code (now, digest), unless it was already.
    RedeemCode: "oauth_codes", "digest", "redeemed_at"
}
stamp_if_null! {
    /// Revokes a grant (now, id), unless it was already.
    RevokeGrant: "oauth_grants", "id", "revoked_at"
}
stamp_if_null! {
    /// Revokes an access token (now, digest), unless it was already.
    RevokeAccess: "oauth_access_tokens", "digest", "revoked_at"
}
fixed_update! {
    /// SQLite: links a redeemed code to the grant it gave (grant, digest); after the grant's
    /// row exists, which the foreign key requires.
    LinkCode = "UPDATE oauth_codes SET grant_id = ? WHERE digest = ?"
}
fixed_update! {
    /// SQLite: spends a refresh token, only if unused and unrevoked, recording the pair it
    /// gives (now, the new refresh digest or `''` for none, the new access digest, digest).
    SpendRefresh = "UPDATE oauth_refresh_tokens SET used_at = CAST(? AS BIGINT), \
            successor_digest = NULLIF(?, ''), successor_access_digest = ? \
        WHERE digest = ? AND used_at IS NULL AND revoked_at IS NULL"
}

/// A PostgreSQL statement that makes one conditional change (`$head`, the common table
/// expression `$changed`) and, only if it matched, inserts the access token and, when there
/// is one, the refresh token of the grant `$grant` of the rows `$source`; returns how many
/// rows `$changed` changed (0 or 1). The pair's parameters are those of `TokenRows::pair_params`.
macro_rules! with_token_pair {
    ($head:literal, $changed:literal, $source:literal, $grant:literal) => {
        concat!(
            "WITH ",
            $head,
            ", a AS (INSERT INTO oauth_access_tokens \
                (digest, grant_id, user_id, client_id, scope, created_at, expires_at) \
            SELECT ?, ",
            $grant,
            ", ?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT) FROM ",
            $source,
            "), r AS (INSERT INTO oauth_refresh_tokens (digest, grant_id, created_at, expires_at) \
            SELECT ?, ",
            $grant,
            ", CAST(? AS BIGINT), CAST(? AS BIGINT) FROM ",
            $source,
            " WHERE CAST(? AS BOOLEAN)) SELECT count(*) FROM ",
            $changed
        )
    };
}

/// PostgreSQL: claims the code (only if unredeemed) and, only then, inserts the grant, its
/// tokens and links the code to the grant. Parameters: now, grant, code digest; grant,
/// client, user, scope, offline, now; then the pair's.
pub(super) struct RedeemPg;
impl FixedSql for RedeemPg {
    const SQL: &'static str = with_token_pair!(
        "claim AS (\
            UPDATE oauth_codes SET redeemed_at = CAST(? AS BIGINT), grant_id = ? \
            WHERE digest = ? AND redeemed_at IS NULL RETURNING digest\
        ), g AS (\
            INSERT INTO oauth_grants (id, client_id, user_id, scope, offline, created_at) \
            SELECT ?, ?, ?, ?, CAST(? AS BOOLEAN), CAST(? AS BIGINT) FROM claim RETURNING id\
        )",
        "claim",
        "g",
        "id"
    );
    type Row = BigInt;
}

/// PostgreSQL: spends the refresh token (only if unused and unrevoked), recording the pair it
/// gives, and, only then, inserts the new tokens of its grant. Parameters: now, the new refresh
/// and access digests, the spent digest; then the pair's.
pub(super) struct RotatePg;
impl FixedSql for RotatePg {
    const SQL: &'static str = with_token_pair!(
        "spent AS (\
            UPDATE oauth_refresh_tokens SET used_at = CAST(? AS BIGINT), \
                successor_digest = NULLIF(?, ''), successor_access_digest = ? \
            WHERE digest = ? AND used_at IS NULL AND revoked_at IS NULL RETURNING grant_id\
        )",
        "spent",
        "spent",
        "grant_id"
    );
    type Row = BigInt;
}
