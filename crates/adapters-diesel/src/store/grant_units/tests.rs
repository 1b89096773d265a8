//! The grants' conditional writes on SQLite: what they change, and that each is prepared once
//! a connection (diesel never caches its own `UPDATE`s: `statements.rs`).

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

use super::{GrantReads, GrantWrites, TokenRows};
use crate::db::tests::{PreparedStatement, prepared_statements};
use crate::schema::oauth_codes as codes;

const SETUP: &str = "\
    INSERT INTO users (id, unique_id, first_name, last_name, created_at, modified_at) \
        VALUES ('u', 'u@example.org', 'U', 'Ser', 0, 0); \
    INSERT INTO oauth_clients (id, name, created_at) VALUES ('cl', 'app', 0); \
    INSERT INTO oauth_codes (digest, client_id, user_id, redirect_uri, scope, offline, \
        created_at, expires_at) VALUES \
        ('c1', 'cl', 'u', 'https://app.example/cb', 'read', TRUE, 0, 100), \
        ('c2', 'cl', 'u', 'https://app.example/cb', 'read', TRUE, 0, 100), \
        ('c3', 'cl', 'u', 'https://app.example/cb', 'read', TRUE, 0, 100);";

/// The rows of grant `g` (access token `a`, refresh token `r`) written at 10.
fn rows(g: &str, a: &str, r: &str) -> TokenRows {
    TokenRows {
        grant: g.to_owned(),
        user: "u".to_owned(),
        client: "cl".to_owned(),
        scope: "read".to_owned(),
        access: (a.to_owned(), 100),
        refresh: Some((r.to_owned(), 200)),
        now: 10,
    }
}

/// The statements prepared on `conn` now, with how often each ran.
fn prepared(conn: &mut SqliteConnection) -> Vec<PreparedStatement> {
    prepared_statements(conn, "%")
}

/// How often the one prepared statement whose text starts with `head` ran.
fn runs(stmts: &[PreparedStatement], head: &str) -> i64 {
    let found: Vec<_> = stmts.iter().filter(|s| s.sql.starts_with(head)).collect();
    assert_eq!(found.len(), 1, "one prepared statement {head}…: {stmts:#?}");
    found[0].run
}

#[derive(QueryableByName, Debug, PartialEq)]
struct Spent {
    #[diesel(sql_type = Nullable<BigInt>)]
    used_at: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    successor_digest: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    successor_access_digest: Option<String>,
}

fn spent(conn: &mut SqliteConnection, digest: &str) -> Spent {
    diesel::sql_query(format!(
        "SELECT used_at, successor_digest, successor_access_digest \
         FROM oauth_refresh_tokens WHERE digest = '{digest}'"
    ))
    .get_result(conn)
    .unwrap()
}

#[test]
fn the_grants_writes_change_what_they_claim_and_are_prepared_once_a_connection() {
    let conn = &mut *crate::db::tests::migrated_memory_connection();
    conn.batch_execute(SETUP).unwrap();

    // A code is claimed once; the grant it gave is linked to it.
    assert!(
        conn.claim_code("c1", true, &rows("g1", "a1", "r1"))
            .unwrap()
    );
    assert!(
        !conn
            .claim_code("c1", true, &rows("gx", "ax", "rx"))
            .unwrap()
    );
    assert!(
        conn.claim_code("c2", true, &rows("g2", "a2", "r2"))
            .unwrap()
    );
    let links: Vec<(String, Option<String>, Option<i64>)> = codes::table
        .select((codes::digest, codes::grant_id, codes::redeemed_at))
        .order(codes::digest)
        .load(conn)
        .unwrap();
    assert_eq!(
        links,
        [
            ("c1".into(), Some("g1".into()), Some(10)),
            ("c2".into(), Some("g2".into()), Some(10)),
            ("c3".into(), None, None),
        ]
    );
    // Burning a code stamps it once.
    assert!(conn.redeem_code("c3", 11).unwrap());
    assert!(!conn.redeem_code("c3", 12).unwrap());

    // A refresh token is spent once, recording the pair its rotation gave.
    assert!(conn.spend_refresh("r1", &rows("g1", "a3", "r3")).unwrap());
    assert!(!conn.spend_refresh("r1", &rows("g1", "ay", "ry")).unwrap());
    assert!(conn.spend_refresh("r2", &rows("g2", "a4", "r4")).unwrap());
    assert_eq!(
        spent(conn, "r1"),
        Spent {
            used_at: Some(10),
            successor_digest: Some("r3".into()),
            successor_access_digest: Some("a3".into()),
        }
    );
    assert_eq!(spent(conn, "r3").used_at, None);

    // Each write is one statement prepared once and run again on this connection.
    let stmts = prepared(conn);
    assert_eq!(runs(&stmts, "UPDATE oauth_codes SET redeemed_at"), 5);
    assert_eq!(runs(&stmts, "UPDATE oauth_codes SET grant_id"), 2);
    assert_eq!(runs(&stmts, "UPDATE oauth_refresh_tokens SET used_at"), 3);
    // The control: diesel's own cached inserts are listed the same way, and a
    // `diesel::update` is not cached at all (prepared, run once and finalized per call),
    // which is why the writes above are fixed-text statements.
    assert_eq!(runs(&stmts, "INSERT INTO `oauth_access_tokens`"), 4);
    for _ in 0..2 {
        diesel::update(codes::table.find("c3"))
            .set(codes::scope.eq("read"))
            .execute(conn)
            .unwrap();
    }
    let again = prepared(conn);
    assert!(
        again
            .iter()
            .all(|s| !s.sql.starts_with("UPDATE `oauth_codes`")),
        "diesel caches UPDATEs now: {again:#?}"
    );
}
