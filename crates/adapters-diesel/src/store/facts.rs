//! The read models of the hot paths, each one statement: [`MediaRepository::read_facts`]
//! (describe GET, catalog GET, embed), [`GrantRepository::bearer`] (every bearer call) and
//! [`GrantRepository::client_and_bearer`] (introspection).
//!
//! A statement is a `UNION ALL` of small branches, each an index lookup, that all return the
//! same fifteen columns: a one-letter kind, then six text, four integer, one boolean and three
//! more text columns, filled as the kind needs (NULL otherwise). One round trip answers what used to
//! take five to fifteen; the services still decide, on the rows as read. Only a collection
//! that has parents costs a second statement, the recursive walk up the graph ([`Ancestry`]):
//! the common case (a library, which is top-level) never runs a recursive query, whose
//! set-union PostgreSQL sizes from statistics (1.5 ms per execution before the first
//! `ANALYZE` of a large `memberships`, 0.1 ms after).
//!
//! | kind | what | text columns | integers | boolean | more text |
//! |---|---|---|---|---|---|
//! | `c` | the collection is live | | | | |
//! | `m` | the object is a direct member of the collection | | | | |
//! | `o` | the object (any lifecycle) | id, type, title, description, owner, shortcode | duration, created, modified, deleted | public | |
//! | `p` | one property of the object | key, value | | | |
//! | `e` | a membership edge above the collection (direct ones, or all from [`Ancestry`]) | collection, member | | | |
//! | `l` | an explicit entry of the reader there | collection, level | | | |
//! | `t` | the access token, its user (NULL when the user is gone) and, in [`BearerFacts`], the holder's entry on the collection (NULL without one): one read of the token | grant, user, client, scope, uniqueId, first name | expires, revoked, grant revoked | org admin | last name, entry's collection, entry's level |
//! | `d` | the files derived from the object's media (`DerivedSet` as text) | text | | | |
//! | `k` | a registered client ([`ClientAndBearer`] only) | id, name, secret digest | | | |
//! | `r` | one of its redirect URIs ([`ClientAndBearer`] only) | uri | position | | |
//!
//! The first branch of each statement casts its NULLs, so PostgreSQL types every column from
//! it (it resolves a `UNION` pairwise, and two untyped NULLs would become text).
//!
//! [`MediaRepository::read_facts`]: medialib_ports::MediaRepository::read_facts
//! [`GrantRepository::bearer`]: medialib_ports::GrantRepository::bearer
//! [`GrantRepository::client_and_bearer`]: medialib_ports::GrantRepository::client_and_bearer

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use medialib_domain::media::derived::DerivedSet;
use medialib_domain::oauth::{AccessTokenRecord, Revocation};
use medialib_domain::{AccessView, PermissionLevel, TokenDigest};
use medialib_ports::{BearerRecord, ReadFacts, Reader, StoreError};

use super::fixed::{Fixed, FixedSql};
use super::rows::{ObjectRow, UserRow, client_id, grant_id, object_id, scope, ts, user_id};

/// The column types every branch returns.
type FactColumns = (
    Text,
    Nullable<Text>,
    Nullable<Text>,
    Nullable<Text>,
    Nullable<Text>,
    Nullable<Text>,
    Nullable<Text>,
    Nullable<BigInt>,
    Nullable<BigInt>,
    Nullable<BigInt>,
    Nullable<BigInt>,
    Nullable<Bool>,
    Nullable<Text>,
    Nullable<Text>,
    Nullable<Text>,
);

/// One row as read.
pub(crate) type FactRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<bool>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// Branches `c`, `m`, `o`, `p`, `d`; parameters: collection, collection, object, object, object,
/// object.
macro_rules! object_branches {
    () => {
        "SELECT 'c', CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT), \
                CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT), \
                CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), \
                CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN), \
                CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT) \
            FROM objects WHERE id = ? AND deleted_at IS NULL \
        UNION ALL SELECT 'm', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
                NULL, NULL, NULL \
            FROM memberships WHERE collection_id = ? AND member_id = ? \
        UNION ALL SELECT 'o', id, object_type, title, description, owner_id, shortcode, \
                duration, created_at, modified_at, deleted_at, public, NULL, NULL, NULL \
            FROM objects WHERE id = ? \
        UNION ALL SELECT 'p', key, value, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
                NULL, NULL, NULL \
            FROM object_properties WHERE object_id = ? \
        UNION ALL SELECT 'd', derived, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
                NULL, NULL, NULL \
            FROM media WHERE object_id = ? AND derived IS NOT NULL "
    };
}

/// Branch `e` for the collection's direct parents only; parameter: collection.
macro_rules! parent_edges {
    () => {
        "UNION ALL SELECT 'e', collection_id, member_id, NULL, NULL, NULL, NULL, \
                NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL \
            FROM memberships WHERE member_id = ? "
    };
}

/// Branch `t`: the access token by its digest, with its grant's revocation, its user and,
/// where `$entry` joins `permissions` as `p`, the user's entry there (`$entry` ends with the
/// digest's `WHERE`). The token is read once for all three. `$union` is `"UNION ALL "` unless
/// the branch comes first, and then the NULLs are typed (see the module). Parameter: digest
/// (after any of `$entry`'s).
macro_rules! token_branch {
    ($union:literal) => {
        token_branch!(
            $union,
            "CAST(NULL AS TEXT), CAST(NULL AS TEXT) ",
            "WHERE t.digest = ? "
        )
    };
    ($union:literal, $entry_columns:literal, $entry:literal) => {
        concat!(
            $union,
            "SELECT 't', t.grant_id, t.user_id, t.client_id, t.scope, \
                    u.unique_id, u.first_name, \
                    t.expires_at, t.revoked_at, g.revoked_at, \
                    CAST(NULL AS BIGINT), u.org_admin, u.last_name, ",
            $entry_columns,
            "FROM oauth_access_tokens t JOIN oauth_grants g ON g.id = t.grant_id \
                LEFT JOIN users u ON u.id = t.user_id ",
            $entry
        )
    };
}

/// Anonymous reads: parameters collection, collection, then object four times.
pub(crate) struct AnonymousFacts;
impl FixedSql for AnonymousFacts {
    const SQL: &'static str = object_branches!();
    type Row = FactColumns;
}

/// A known user's reads: the six of [`AnonymousFacts`], collection (parents), user and
/// collection (the user's entry on it).
pub(crate) struct UserFacts;
impl FixedSql for UserFacts {
    const SQL: &'static str = concat!(
        object_branches!(),
        parent_edges!(),
        "UNION ALL SELECT 'l', collection_id, level, NULL, NULL, NULL, NULL, \
                NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL \
            FROM permissions WHERE user_id = ? AND collection_id = ?"
    );
    type Row = FactColumns;
}

/// A token holder's reads: the six of [`AnonymousFacts`], collection (parents), then
/// collection and digest (the token with its user and the holder's entry on the collection).
pub(crate) struct BearerFacts;
impl FixedSql for BearerFacts {
    const SQL: &'static str = concat!(
        object_branches!(),
        parent_edges!(),
        token_branch!(
            "UNION ALL ",
            "p.collection_id, p.level ",
            "LEFT JOIN permissions p ON p.user_id = t.user_id AND p.collection_id = ? \
                WHERE t.digest = ? "
        )
    );
    type Row = FactColumns;
}

/// Every edge above the collection (`e`) and the user's entries on the collection and all its
/// ancestors (`l`); parameters: collection, user, collection. Run only when the collection
/// has a parent. The recursive walk yields the edges themselves, so branch `e` reads them
/// from `up` instead of joining `memberships` against it (which PostgreSQL plans as a scan
/// of the whole table); `UNION` (not `ALL`) ends the walk on a cycle, which adds refuse.
pub(crate) struct Ancestry;
impl FixedSql for Ancestry {
    const SQL: &'static str = "WITH RECURSIVE up(collection_id, member_id) AS (\
            SELECT collection_id, member_id FROM memberships WHERE member_id = ? \
            UNION SELECT m.collection_id, m.member_id \
                FROM memberships m JOIN up ON m.member_id = up.collection_id\
        ) \
        SELECT 'e', collection_id, member_id, CAST(NULL AS TEXT), CAST(NULL AS TEXT), \
                CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS BIGINT), \
                CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), \
                CAST(NULL AS BOOLEAN), CAST(NULL AS TEXT), CAST(NULL AS TEXT), \
                CAST(NULL AS TEXT) \
            FROM up \
        UNION ALL SELECT 'l', collection_id, level, NULL, NULL, NULL, NULL, \
                NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL \
            FROM permissions WHERE user_id = ? \
                AND (collection_id = ? OR collection_id IN (SELECT collection_id FROM up))";
    type Row = FactColumns;
}

/// An access token and its user: the digest.
pub(crate) struct BearerOnly;
impl FixedSql for BearerOnly {
    const SQL: &'static str = token_branch!("");
    type Row = FactColumns;
}

/// A client (`k`), its redirect URIs (`r`), then an access token and its user (`t`):
/// introspection's reads in one statement. Parameters: client, client, digest.
pub(crate) struct ClientAndBearer;
impl FixedSql for ClientAndBearer {
    const SQL: &'static str = concat!(
        "SELECT 'k', id, name, secret_digest, CAST(NULL AS TEXT), CAST(NULL AS TEXT), \
                CAST(NULL AS TEXT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), \
                CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN), \
                CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT) \
            FROM oauth_clients WHERE id = ? \
        UNION ALL SELECT 'r', uri, NULL, NULL, NULL, NULL, NULL, CAST(position AS BIGINT), \
                NULL, NULL, NULL, NULL, NULL, NULL, NULL \
            FROM oauth_client_redirect_uris WHERE client_id = ? ",
        token_branch!("UNION ALL ")
    );
    type Row = FactColumns;
}

/// Reads a client with its redirect URIs and an access token with its user on one
/// connection, in one statement ([`ClientAndBearer`]).
pub(crate) fn read_client_and_bearer<C>(
    conn: &mut C,
    client: &str,
    digest: &TokenDigest,
) -> QueryResult<Vec<FactRow>>
where
    C: Connection,
    for<'a> Fixed<'a, ClientAndBearer>: diesel::query_dsl::LoadQuery<'a, C, FactRow>,
{
    let d = digest.to_hex();
    Fixed::<ClientAndBearer>::new(&[client, client, &d]).load(conn)
}

/// Reads the facts of `object` through `collection` for `reader` on one connection: one
/// statement, and a second (the recursive walk up the graph) only when a reader's entries
/// matter and the collection has a parent.
pub(crate) fn read_facts<C>(
    conn: &mut C,
    reader: Reader<'_>,
    collection: &str,
    object: &str,
) -> QueryResult<Vec<FactRow>>
where
    C: Connection,
    for<'a> Fixed<'a, AnonymousFacts>: diesel::query_dsl::LoadQuery<'a, C, FactRow>,
    for<'a> Fixed<'a, UserFacts>: diesel::query_dsl::LoadQuery<'a, C, FactRow>,
    for<'a> Fixed<'a, BearerFacts>: diesel::query_dsl::LoadQuery<'a, C, FactRow>,
    for<'a> Fixed<'a, Ancestry>: diesel::query_dsl::LoadQuery<'a, C, FactRow>,
{
    let (c, o) = (collection, object);
    let (mut rows, user) = match reader {
        Reader::Anonymous => {
            return Fixed::<AnonymousFacts>::new(&[c, c, o, o, o, o]).load(conn);
        }
        Reader::User(u) => {
            let u = u.to_string();
            let rows = Fixed::<UserFacts>::new(&[c, c, o, o, o, o, c, &u, c]).load(conn)?;
            (rows, Some(u))
        }
        Reader::Bearer(d) => {
            let d = d.to_hex();
            let rows: Vec<FactRow> =
                Fixed::<BearerFacts>::new(&[c, c, o, o, o, o, c, c, &d]).load(conn)?;
            // The token's user, whose entries count (none when the token is unknown).
            let user = rows.iter().find(|r| r.0 == "t").and_then(|r| r.2.clone());
            (rows, user)
        }
    };
    if let Some(u) = user {
        if rows.iter().any(|r| r.0 == "e") {
            rows.extend(Fixed::<Ancestry>::new(&[c, &u, c]).load::<FactRow>(conn)?);
        }
    }
    Ok(rows)
}

/// Reads an access token and its user on one connection.
pub(crate) fn read_bearer<C>(conn: &mut C, digest: &TokenDigest) -> QueryResult<Vec<FactRow>>
where
    C: Connection,
    for<'a> Fixed<'a, BearerOnly>: diesel::query_dsl::LoadQuery<'a, C, FactRow>,
{
    let d = digest.to_hex();
    Fixed::<BearerOnly>::new(&[&d]).load(conn)
}

/// A permission level as stored; anything else is `Corrupt`.
pub(super) fn level(text: &str) -> Result<PermissionLevel, StoreError> {
    PermissionLevel::parse(text).map_err(|e| StoreError::Corrupt(format!("level: {e}")))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("read facts: a `{what}` row lacks a column"))
}

/// `v`, or a `Corrupt` error naming the row kind `what` that lacks it.
pub(super) fn need<T>(v: Option<T>, what: &str) -> Result<T, StoreError> {
    v.ok_or_else(|| corrupt(what))
}

/// Sorts the rows into [`ReadFacts`] (the rows' order does not matter).
pub(crate) fn into_facts(rows: Vec<FactRow>) -> Result<ReadFacts, StoreError> {
    let mut facts = ReadFacts::default();
    let mut object: Option<ObjectRow> = None;
    let mut properties = Vec::new();
    let mut edges = Vec::new();
    let mut entries = Vec::new();
    let mut token: Option<AccessTokenRecord> = None;
    let mut user = None;
    for (kind, s1, s2, s3, s4, s5, s6, n1, n2, n3, n4, f1, s7, s8, s9) in rows {
        match kind.as_str() {
            "c" => facts.collection_live = true,
            "m" => facts.member = true,
            "o" => {
                object = Some(ObjectRow {
                    id: need(s1, "o")?,
                    object_type: need(s2, "o")?,
                    title: need(s3, "o")?,
                    description: need(s4, "o")?,
                    public: need(f1, "o")?,
                    duration: n1,
                    owner_id: need(s5, "o")?,
                    shortcode: need(s6, "o")?,
                    created_at: need(n2, "o")?,
                    modified_at: need(n3, "o")?,
                    deleted_at: n4,
                });
            }
            "p" => properties.push((need(s1, "p")?, need(s2, "p")?)),
            "e" => edges.push((object_id(&need(s1, "e")?)?, object_id(&need(s2, "e")?)?)),
            "l" => entries.push((object_id(&need(s1, "l")?)?, level(&need(s2, "l")?)?)),
            "t" => {
                let holder = need(s2, "t")?;
                token = Some(AccessTokenRecord {
                    grant: grant_id(&need(s1, "t")?)?,
                    user: user_id(&holder)?,
                    client: client_id(&need(s3, "t")?)?,
                    scope: scope(&need(s4, "t")?)?,
                    expires_at: ts(need(n1, "t")?),
                    revoked: Revocation {
                        token: n2.is_some(),
                        grant: n3.is_some(),
                    },
                });
                // The user's columns are NULL when no user has the token's user id.
                if let Some(unique_id) = s5 {
                    let row = UserRow {
                        id: holder,
                        unique_id,
                        first_name: need(s6, "t")?,
                        last_name: need(s7, "t")?,
                        org_admin: need(f1, "t")?,
                        created_at: 0,
                        modified_at: 0,
                    };
                    user = Some(row.into_domain()?);
                }
                // The holder's entry on the collection ([`BearerFacts`] only).
                if let Some(collection) = s8 {
                    entries.push((object_id(&collection)?, level(&need(s9, "t")?)?));
                }
            }
            "d" => {
                let text = need(s1, "d")?;
                let set = DerivedSet::from_text(&text)
                    .map_err(|e| StoreError::Corrupt(format!("media derived: {e}")))?;
                facts.derived = Some(set);
            }
            other => {
                return Err(StoreError::Corrupt(format!(
                    "read facts: unknown row kind `{other}`"
                )));
            }
        }
    }
    facts.object = object.map(|row| row.into_domain(properties)).transpose()?;
    facts.access = AccessView::new(edges, entries);
    facts.bearer = token.map(|token| BearerRecord { token, user });
    Ok(facts)
}

#[cfg(test)]
mod tests {
    //! `read_facts` and `bearer` against the fine-grained repository methods they replace
    //! on the hot paths, on both backends, over a small graph with every kind of fact.

    use diesel::prelude::*;
    use medialib_domain::{
        Caller, Description, MediaObject, NewObject, ObjectFields, ObjectId, ObjectType,
        OrgNamespace, PermissionLevel, PersonName, Properties, ShortCode, Timestamp, Title,
        TokenDigest, UniqueId, User,
    };
    use medialib_ports::{GrantRepository, MediaRepository, Reader, UserRepository};

    use crate::macros::with_conn;
    use crate::schema::{oauth_access_tokens, oauth_clients, oauth_grants};
    use crate::{Database, DieselStore, PoolOptions};

    const NOW: i64 = 1_700_000_000;

    struct World {
        store: DieselStore,
        objects: Vec<ObjectId>,
        users: Vec<User>,
        tokens: Vec<TokenDigest>,
    }

    fn store(url: &str) -> DieselStore {
        let db = Database::connect(url, &PoolOptions::default()).unwrap();
        db.migrate(&mut |_| {}).unwrap();
        DieselStore::new(db)
    }

    fn user(ns: &OrgNamespace, n: u8, org_admin: bool) -> User {
        User {
            id: medialib_domain::UserId::generate(ns, [n; 16]),
            unique_id: UniqueId::parse(&format!("user{n}")).unwrap(),
            first_name: PersonName::parse("First", "firstName").unwrap(),
            last_name: PersonName::parse("Last", "lastName").unwrap(),
            org_admin,
        }
    }

    fn object(
        ns: &OrgNamespace,
        n: u8,
        t: ObjectType,
        owner: &User,
        props: &[(&str, &str)],
    ) -> MediaObject {
        MediaObject::create(
            ObjectId::generate(ns, [n; 16]),
            NewObject {
                object_type: t,
                fields: ObjectFields {
                    title: Title::parse(&format!("Object {n}")).unwrap(),
                    description: Description::parse("d").unwrap(),
                    public: n % 2 == 0,
                    duration: None,
                    properties: Properties::parse(props.iter().copied()).unwrap(),
                },
            },
            owner.id,
            ShortCode::from_random([n; 16]),
            Timestamp::from_epoch_seconds(NOW),
        )
    }

    /// Libraries A and B; catalog S in A and in B; video V in S; image I in B (soft-deleted
    /// by its removal); catalog T in A, video X in T; user 0 views A (so T and X through
    /// it), has `none` on S, admins B; user 1 is an org admin;
    /// tokens: user 0's live one, user 0's revoked one, user 2's whose user row is gone.
    fn world(url: &str) -> World {
        let store = store(url);
        let ns = OrgNamespace::from_random([9; 16]);
        let now = Timestamp::from_epoch_seconds(NOW);
        let users: Vec<User> = (0..3).map(|n| user(&ns, n, n == 1)).collect();
        for u in &users {
            store.create_user(u, now).unwrap();
        }
        let owner = &users[1];
        let a = object(&ns, 10, ObjectType::Catalog, owner, &[("course", "A1")]);
        let b = object(&ns, 11, ObjectType::Catalog, owner, &[]);
        let s = object(&ns, 12, ObjectType::Catalog, owner, &[]);
        let v = object(
            &ns,
            13,
            ObjectType::Video,
            owner,
            &[("k1", "v1"), ("k2", "v2")],
        );
        let i = object(&ns, 14, ObjectType::Image, owner, &[]);
        let t = object(&ns, 15, ObjectType::Catalog, owner, &[]);
        let x = object(&ns, 16, ObjectType::Video, owner, &[]);
        store.create_library(&a, owner.id).unwrap();
        store.create_library(&b, owner.id).unwrap();
        store.create_in_collection(&s, a.id()).unwrap();
        store.add_member(b.id(), s.id(), now).unwrap();
        store.create_in_collection(&v, s.id()).unwrap();
        store.create_in_collection(&i, b.id()).unwrap();
        store.remove_member(b.id(), i.id(), now).unwrap();
        store.create_in_collection(&t, a.id()).unwrap();
        store.create_in_collection(&x, t.id()).unwrap();
        store
            .set_permission(a.id(), users[0].id, PermissionLevel::View, now)
            .unwrap();
        store
            .set_permission(s.id(), users[0].id, PermissionLevel::None, now)
            .unwrap();
        store
            .set_permission(b.id(), users[0].id, PermissionLevel::Admin, now)
            .unwrap();
        let tokens: Vec<TokenDigest> = (0..4u8)
            .map(|n| TokenDigest::from_hex(&format!("{:02x}", n + 1).repeat(32)).unwrap())
            .collect();
        let grant = |n: u8, u: &User, revoked: Option<i64>| {
            let g = format!("00000000-0000-4000-8000-0000000000{n:02}");
            let d = tokens[usize::from(n)].to_hex();
            let uid = u.id.to_string();
            (|| -> Result<(), crate::error::DbError> {
                with_conn!(store.db, conn => {
                    if n == 0 {
                        diesel::insert_into(oauth_clients::table)
                            .values((
                                oauth_clients::id.eq("client-1"),
                                oauth_clients::name.eq("c"),
                                oauth_clients::created_at.eq(NOW),
                            ))
                            .execute(conn)?;
                    }
                    diesel::insert_into(oauth_grants::table)
                        .values((
                            oauth_grants::id.eq(&g),
                            oauth_grants::client_id.eq("client-1"),
                            oauth_grants::user_id.eq(&uid),
                            oauth_grants::scope.eq("read write"),
                            oauth_grants::offline.eq(false),
                            oauth_grants::created_at.eq(NOW),
                            oauth_grants::revoked_at.eq(revoked),
                        ))
                        .execute(conn)?;
                    diesel::insert_into(oauth_access_tokens::table)
                        .values((
                            oauth_access_tokens::digest.eq(&d),
                            oauth_access_tokens::grant_id.eq(&g),
                            oauth_access_tokens::user_id.eq(&uid),
                            oauth_access_tokens::client_id.eq("client-1"),
                            oauth_access_tokens::scope.eq("read"),
                            oauth_access_tokens::created_at.eq(NOW),
                            oauth_access_tokens::expires_at.eq(NOW + 60),
                        ))
                        .execute(conn)?;
                    Ok(())
                })
            })()
            .unwrap();
        };
        grant(0, &users[0], None);
        grant(1, &users[0], Some(NOW));
        grant(2, &users[2], None);
        // User 2 goes away; its grant and token stay (they are deleted with it only on
        // PostgreSQL's cascade, so the token row is re-pointed at a missing user id).
        (|| -> Result<(), crate::error::DbError> {
            with_conn!(store.db, conn => {
                diesel::update(oauth_access_tokens::table.find(tokens[2].to_hex()))
                    .set(oauth_access_tokens::user_id.eq("00000000-0000-5000-8000-00000000dead"))
                    .execute(conn)?;
                Ok(())
            })
        })()
        .unwrap();
        World {
            store,
            objects: vec![
                a.id(),
                b.id(),
                s.id(),
                v.id(),
                i.id(),
                t.id(),
                x.id(),
                ObjectId::generate(&ns, [99; 16]),
            ],
            users,
            tokens,
        }
    }

    fn same_facts_as_the_fine_grained_reads(url: &str) {
        let w = world(url);
        let st = &w.store;
        let mut readers = vec![Reader::Anonymous];
        readers.extend(w.users.iter().map(|u| Reader::User(u.id)));
        readers.extend(w.tokens.iter().map(Reader::Bearer));
        let mut seen_levels = std::collections::BTreeSet::new();
        for reader in &readers {
            for &c in &w.objects {
                for &o in &w.objects {
                    let facts = st.read_facts(*reader, c, o).unwrap();
                    let what = format!("{reader:?} c={c} o={o}");
                    assert_eq!(
                        facts.collection_live,
                        st.object(c).unwrap().is_some(),
                        "{what}"
                    );
                    assert_eq!(facts.member, st.is_member(c, o).unwrap(), "{what}");
                    assert_eq!(facts.object, st.object_any_state(o).unwrap(), "{what}");
                    let bearer = match reader {
                        Reader::Bearer(d) => st.bearer(d).unwrap(),
                        _ => None,
                    };
                    assert_eq!(facts.bearer, bearer, "{what}");
                    let holder = match reader {
                        Reader::Anonymous => None,
                        Reader::User(u) => Some(*u),
                        Reader::Bearer(d) => st.access_token(d).unwrap().map(|t| t.user),
                    };
                    if let Some(u) = holder {
                        let caller = Caller::new(u, false);
                        let expected = st.access_view(u, &[c]).unwrap().effective_level(&caller, c);
                        assert_eq!(facts.access.effective_level(&caller, c), expected, "{what}");
                        seen_levels.insert(expected);
                    }
                }
            }
        }
        assert_eq!(
            seen_levels.len(),
            3,
            "the world exercises none, view and admin"
        );
    }

    fn bearer_reads_the_token_and_its_user(url: &str) {
        let w = world(url);
        let live = w.store.bearer(&w.tokens[0]).unwrap().unwrap();
        assert_eq!(live.user.as_ref(), Some(&w.users[0]));
        assert!(!live.token.revoked.is_revoked());
        assert_eq!(
            live.token.expires_at,
            Timestamp::from_epoch_seconds(NOW + 60)
        );
        let revoked = w.store.bearer(&w.tokens[1]).unwrap().unwrap();
        assert!(
            revoked.token.revoked.grant && !revoked.token.revoked.token,
            "a revoked grant revokes its tokens"
        );
        let orphan = w.store.bearer(&w.tokens[2]).unwrap().unwrap();
        assert_eq!(orphan.user, None);
        assert_eq!(w.store.bearer(&w.tokens[3]).unwrap(), None);
        let user0 = w.store.user(w.users[0].id).unwrap();
        assert_eq!(user0.as_ref(), live.user.as_ref());
    }

    fn reached_object_facts(url: &str) {
        let w = world(url);
        let (a, s, v, i) = (w.objects[0], w.objects[2], w.objects[3], w.objects[4]);
        let f = w
            .store
            .read_facts(Reader::User(w.users[0].id), s, v)
            .unwrap();
        assert!(f.collection_live && f.member);
        let o = f.object.unwrap();
        assert_eq!(o.id(), v);
        assert_eq!(o.fields().properties.iter().count(), 2);
        let caller = Caller::new(w.users[0].id, false);
        assert_eq!(f.access.effective_level(&caller, s), PermissionLevel::None);
        assert_eq!(f.access.effective_level(&caller, a), PermissionLevel::View);
        let (t, x) = (w.objects[5], w.objects[6]);
        let f = w
            .store
            .read_facts(Reader::User(w.users[0].id), x, x)
            .unwrap();
        assert_eq!(
            f.access.effective_level(&caller, x),
            PermissionLevel::View,
            "inherited from A through T"
        );
        assert_eq!(f.access.effective_level(&caller, t), PermissionLevel::View);
        let f = w.store.read_facts(Reader::Anonymous, a, i).unwrap();
        assert!(!f.member);
        assert!(
            f.object
                .is_some_and(|o| o.lifecycle() != medialib_domain::Lifecycle::Live)
        );
    }

    crate::backend_tests!(
        on [sqlite, postgres] with crate::testing::with_database_url:
        same_facts_as_the_fine_grained_reads,
        bearer_reads_the_token_and_its_user,
        reached_object_facts
    );
}
