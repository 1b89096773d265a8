//! `src/schema.rs` must match what the migrations create, on both backends: same tables, columns,
//! types, nullability and primary keys (and the planned indexes exist).

#![cfg(test)]

mod common;

use common::{DbColumn, Fixture, Raw};

medialib_adapters_diesel::backend_tests!(
    on [sqlite, postgres] with common::run:
    schema_matches_migrations,
    constraints_behave_alike,
);

/// The hand-written schema, parsed from its `table!` blocks.
const SCHEMA_RS: &str = include_str!("../src/schema.rs");

/// Indexes the migrations create (not visible in schema.rs).
const INDEXES: [&str; 23] = [
    "idx_browser_sessions_expires_at",
    "idx_browser_sessions_user_id",
    "idx_jobs_run_at",
    "idx_lti_courses_library_id",
    "idx_lti_logins_expires_at",
    "idx_lti_nonces_consumer_key_kept_until",
    "idx_memberships_collection_id_added_at",
    "idx_memberships_collection_id_member_modified_at",
    "idx_memberships_member_id",
    "idx_oauth_access_tokens_expires_at",
    "idx_oauth_access_tokens_grant_id",
    "idx_oauth_access_tokens_user_id",
    "idx_oauth_codes_expires_at",
    "idx_oauth_codes_grant_id",
    "idx_oauth_grants_client_id",
    "idx_oauth_grants_user_id",
    "idx_oauth_refresh_tokens_expires_at",
    "idx_oauth_refresh_tokens_grant_id",
    "idx_objects_deleted_at",
    "idx_objects_modified_at",
    "idx_pending_sign_ins_expires_at",
    "idx_permissions_user_id",
    "idx_uploads_expires_at",
];

/// The columns declared in schema.rs, in the shape the database reports them.
fn declared_columns() -> Vec<DbColumn> {
    let mut out = Vec::new();
    let mut table: Option<(String, Vec<String>)> = None;
    for line in SCHEMA_RS.lines().map(str::trim) {
        if line.starts_with("//") || line.is_empty() {
            continue;
        }
        if let Some((name, pk)) = table.as_ref() {
            if line == "}" {
                table = None;
            } else if let Some((column, ty)) = line.trim_end_matches(',').split_once(" -> ") {
                let (nullable, inner) = match ty.strip_prefix("Nullable<") {
                    Some(rest) => (true, rest.strip_suffix('>').unwrap()),
                    None => (false, ty),
                };
                let sql_type = match inner {
                    "Text" => "TEXT",
                    "BigInt" => "BIGINT",
                    "Bool" => "BOOLEAN",
                    "Integer" => "INTEGER",
                    other => panic!("schema.rs: unexpected type {other} for {name}.{column}"),
                };
                let pk_pos = pk.iter().position(|p| p == column).map_or(0, |i| i + 1);
                out.push(DbColumn {
                    table: name.clone(),
                    column: column.to_owned(),
                    sql_type: sql_type.to_owned(),
                    not_null: i64::from(!nullable),
                    pk: pk_pos as i64,
                });
            } else {
                panic!("schema.rs: cannot parse `{line}` in table {name}");
            }
        } else if let Some(header) = line.strip_suffix('{') {
            // `name (pk, ...) {` opens a table; `diesel::table! {` does not.
            if let Some((name, pk)) = header.trim().split_once(" (") {
                let pk = pk.trim().trim_end_matches(')');
                let pk = pk.split(',').map(|p| p.trim().to_owned()).collect();
                table = Some((name.to_owned(), pk));
            }
        }
    }
    out.sort_by(|a, b| (&a.table, &a.column).cmp(&(&b.table, &b.column)));
    out
}

#[test]
fn the_parser_sees_every_table() {
    let columns = declared_columns();
    let mut tables: Vec<_> = columns.iter().map(|c| c.table.as_str()).collect();
    tables.dedup();
    assert_eq!(tables.len(), 25, "{tables:?}");
    assert_eq!(columns.len(), 150);
    assert!(columns.contains(&DbColumn {
        table: "object_properties".into(),
        column: "key".into(),
        sql_type: "TEXT".into(),
        not_null: 1,
        pk: 2,
    }));
}

fn schema_matches_migrations(f: &Fixture) {
    f.db.migrate(&mut |_| {}).unwrap();
    let mut raw = Raw::open(f);
    let actual = raw.columns();
    let declared = declared_columns();
    let missing: Vec<_> = declared.iter().filter(|c| !actual.contains(c)).collect();
    let extra: Vec<_> = actual.iter().filter(|c| !declared.contains(c)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "schema.rs and the {} migrations disagree.\nin schema.rs only: {missing:#?}\nin the database only: {extra:#?}",
        f.db.backend()
    );
    assert_eq!(raw.indexes(), INDEXES);
}

/// The same statements must be accepted or rejected alike on both backends.
fn constraints_behave_alike(f: &Fixture) {
    f.db.migrate(&mut |_| {}).unwrap();
    let mut raw = Raw::open(f);
    let ok = |r: Result<usize, diesel::result::Error>, sql: &str| {
        assert!(r.is_ok(), "{sql}: {r:?}");
    };
    for sql in [
        "INSERT INTO organization (id, namespace, created_at) VALUES (1, 'ns', 0)",
        "INSERT INTO users (id, unique_id, first_name, last_name, created_at, modified_at) \
         VALUES ('u1', 'alice', 'A', 'L', 0, 0)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('c1', 'catalog', 't', '', TRUE, 'u1', 'sc1', 0, 0)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('v1', 'video', 't', '', FALSE, 'u1', 'sc2', 0, 0)",
        "INSERT INTO memberships (collection_id, member_id, added_at, member_modified_at) \
         VALUES ('c1', 'v1', 0, 0)",
        "INSERT INTO object_properties (object_id, key, value) VALUES ('v1', 'k', 'v')",
        "INSERT INTO permissions (collection_id, user_id, level, granted_at) VALUES ('c1', 'u1', 'view', 0)",
        "INSERT INTO oauth_clients (id, name, created_at) VALUES ('cl', 'app', 0)",
        "INSERT INTO oauth_client_redirect_uris (client_id, uri, position) VALUES ('cl', 'https://x/cb', 0)",
        "INSERT INTO oauth_grants (id, client_id, user_id, scope, offline, created_at) \
         VALUES ('g1', 'cl', 'u1', 's', TRUE, 0)",
        "INSERT INTO oauth_codes (digest, client_id, user_id, redirect_uri, scope, offline, \
         created_at, expires_at, grant_id) VALUES ('d1', 'cl', 'u1', 'https://x/cb', 's', TRUE, 0, 60, 'g1')",
        "INSERT INTO oauth_access_tokens (digest, grant_id, user_id, client_id, scope, created_at, \
         expires_at) VALUES ('a1', 'g1', 'u1', 'cl', 's', 0, 60)",
        "INSERT INTO oauth_refresh_tokens (digest, grant_id, created_at, expires_at) VALUES ('r1', 'g1', 0, 60)",
        "INSERT INTO users (id, unique_id, first_name, last_name, created_at, modified_at) \
         VALUES ('u9', 'nine', 'N', 'L', 0, 0)",
        "INSERT INTO browser_sessions (digest, user_id, created_at, expires_at) VALUES ('s1', 'u9', 0, 60)",
        "INSERT INTO local_credentials (user_id, password_hash, updated_at) VALUES ('u9', 'h', 0)",
        "INSERT INTO uploads (object_id, owner_id, length, offset_bytes, storage_key, staging_state, \
         sha256_state, created_at, expires_at) VALUES ('v1', 'u1', 10, 10, 'k', '', 'h', 0, 60)",
        "INSERT INTO media (object_id, state, modified_at) VALUES ('v1', 'uploading', 0)",
    ] {
        ok(raw.exec(sql), sql);
    }
    for bad in [
        "INSERT INTO organization (id, namespace, created_at) VALUES (2, 'ns', 0)",
        "INSERT INTO users (id, unique_id, first_name, last_name, created_at, modified_at) \
         VALUES ('u2', 'alice', 'A', 'L', 0, 0)",
        "INSERT INTO users (id, unique_id, first_name, last_name, created_at, modified_at) \
         VALUES (NULL, 'bob', 'B', 'L', 0, 0)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('x1', 'podcast', 't', '', TRUE, 'u1', 'sc3', 0, 0)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('x2', 'video', 't', '', TRUE, 'nobody', 'sc4', 0, 0)",
        "INSERT INTO objects (id, object_type, title, description, public, owner_id, shortcode, \
         created_at, modified_at) VALUES ('x3', 'video', 't', '', TRUE, 'u1', 'sc1', 0, 0)",
        "INSERT INTO permissions (collection_id, user_id, level, granted_at) VALUES ('v1', 'u1', 'owner', 0)",
        // No default: a membership written without its member's modification time is refused.
        "INSERT INTO memberships (collection_id, member_id, added_at) VALUES ('v1', 'c1', 0)",
        "DELETE FROM users WHERE id = 'u1'",
        "INSERT INTO browser_sessions (digest, user_id, created_at, expires_at) VALUES ('s2', 'nobody', 0, 60)",
        "INSERT INTO browser_sessions (digest, user_id, created_at, expires_at) VALUES ('s1', 'u9', 0, 60)",
        "INSERT INTO local_credentials (user_id, password_hash, updated_at) VALUES ('nobody', 'h', 0)",
        "INSERT INTO local_credentials (user_id, password_hash, updated_at) VALUES ('u9', 'h2', 0)",
        "INSERT INTO local_credentials (user_id, password_hash, updated_at) VALUES ('u1', NULL, 0)",
        // An offset past the length, an upload of nothing, an unknown state, progress over 100.
        "INSERT INTO uploads (object_id, owner_id, length, offset_bytes, storage_key, staging_state, \
         sha256_state, created_at, expires_at) VALUES ('c1', 'u1', 10, 11, 'k', '', 'h', 0, 60)",
        "INSERT INTO uploads (object_id, owner_id, length, offset_bytes, storage_key, staging_state, \
         sha256_state, created_at, expires_at) VALUES ('nothing', 'u1', 10, 0, 'k', '', 'h', 0, 60)",
        "INSERT INTO media (object_id, state, modified_at) VALUES ('c1', 'done', 0)",
        "INSERT INTO media (object_id, state, progress, modified_at) VALUES ('c1', 'ready', 101, 0)",
    ] {
        assert!(
            raw.exec(bad).is_err(),
            "accepted on {}: {bad}",
            f.db.backend()
        );
    }
    // Deleting a grant cascades to its tokens and nulls the code's grant_id.
    ok(
        raw.exec("DELETE FROM oauth_grants WHERE id = 'g1'"),
        "delete grant",
    );
    assert_eq!(
        raw.count("SELECT count(*) AS n FROM oauth_access_tokens"),
        0
    );
    assert_eq!(
        raw.count("SELECT count(*) AS n FROM oauth_refresh_tokens"),
        0
    );
    assert_eq!(
        raw.count("SELECT count(*) AS n FROM oauth_codes WHERE grant_id IS NULL"),
        1
    );
    // Deleting (purging) an object cascades to its properties, memberships, upload and media.
    ok(
        raw.exec("DELETE FROM objects WHERE id = 'v1'"),
        "delete object",
    );
    assert_eq!(raw.count("SELECT count(*) AS n FROM memberships"), 0);
    assert_eq!(raw.count("SELECT count(*) AS n FROM object_properties"), 0);
    assert_eq!(raw.count("SELECT count(*) AS n FROM uploads"), 0);
    assert_eq!(raw.count("SELECT count(*) AS n FROM media"), 0);
    // Deleting the client cascades to codes and redirect URIs.
    ok(
        raw.exec("DELETE FROM oauth_clients WHERE id = 'cl'"),
        "delete client",
    );
    assert_eq!(raw.count("SELECT count(*) AS n FROM oauth_codes"), 0);
    assert_eq!(
        raw.count("SELECT count(*) AS n FROM oauth_client_redirect_uris"),
        0
    );
    // Deleting a user cascades to their sessions and password.
    ok(raw.exec("DELETE FROM users WHERE id = 'u9'"), "delete user");
    assert_eq!(raw.count("SELECT count(*) AS n FROM browser_sessions"), 0);
    assert_eq!(raw.count("SELECT count(*) AS n FROM local_credentials"), 0);
}
