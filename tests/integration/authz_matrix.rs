//! The authorization matrix (issue 8): every endpoint and method against every caller
//! relation, on SQLite and PostgreSQL.
//!
//! [`SECTIONS`] is the one table of expectations, taken from DECISIONS.md §3–§5 and
//! docs/decisions.md (never from what the server happens to answer). The test sends every
//! cell to the real app, lists every cell that answers otherwise, and renders the same table
//! into `docs/authorization-matrix.md`: with `MEDIALIB_BLESS=1` it rewrites the file,
//! otherwise it fails when the file differs, so the document cannot drift from what is tested.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use medialib::world::{OsRandom, SystemClock};
use medialib_domain::User;
use medialib_domain::oauth::AccessTokenInvalid;
use medialib_ports::services::{BearerError, ClientCredentials};
use medialib_ports::{Clock, ManualClock, Services};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::api::{ApiApp, Backend, register_client};

// ---------------------------------------------------------------- the table

/// How a caller relates to library `{L}`; the columns of the matrix, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    Anonymous,
    NoAccess,
    View,
    Admin,
    OrgAdmin,
    ReadOnly,
    Expired,
    Revoked,
}

impl Relation {
    const ALL: [Self; 8] = [
        Self::Anonymous,
        Self::NoAccess,
        Self::View,
        Self::Admin,
        Self::OrgAdmin,
        Self::ReadOnly,
        Self::Expired,
        Self::Revoked,
    ];

    /// The column heading.
    fn column(self) -> &'static str {
        match self {
            Self::Anonymous => "anonymous",
            Self::NoAccess => "no access",
            Self::View => "view",
            Self::Admin => "admin",
            Self::OrgAdmin => "org admin",
            Self::ReadOnly => "read-only",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
        }
    }

    /// Who the caller is and how the test makes it (for the legend).
    fn legend(self) -> &'static str {
        match self {
            Self::Anonymous => "No `Authorization` header.",
            Self::NoAccess => "A user with no permission entry anywhere; a `read write` token.",
            Self::View => {
                "A user that `{L}`'s owner granted `view` on `{L}`; a `read write` token."
            }
            Self::Admin => {
                "A user that `{L}`'s owner granted `admin` on `{L}`; a `read write` token."
            }
            Self::OrgAdmin => {
                "A user made with `org_admin` (as `medialib user add --org-admin`), no entry on \
                 `{L}`; a `read write` token."
            }
            Self::ReadOnly => "The admin's token with scope `read` only.",
            Self::Expired => {
                "A `read write` token of the admin, issued by the real code exchange through \
                 services whose clock runs an access-token lifetime plus a minute behind, so \
                 it expired a minute ago."
            }
            Self::Revoked => {
                "A `read write` token of the admin, revoked by its client at \
                 `POST /api/oauth/revoke` (answered 200) before the cells run."
            }
        }
    }
}

/// One row: a request, and what each caller relation gets (in [`Relation::ALL`] order).
#[derive(Debug)]
struct Row {
    method: &'static str,
    /// The path, with placeholders (see [`PLACEHOLDERS`]).
    path: &'static str,
    /// A form body (`application/x-www-form-urlencoded`), with placeholders; `""` for none.
    body: &'static str,
    /// The expected answers, one per relation in [`Relation::ALL`] order, separated by `|`,
    /// each a status and maybe a word (see [`shape_of`]).
    cells: &'static str,
    /// Why, in a few words.
    rule: &'static str,
    /// Each cell gets a caller made for it alone (the call changes the caller's own state).
    fresh_callers: bool,
}

/// A row whose cells share the fixture's callers.
const fn row(
    method: &'static str,
    path: &'static str,
    body: &'static str,
    cells: &'static str,
    rule: &'static str,
) -> Row {
    Row {
        method,
        path,
        body,
        cells,
        rule,
        fresh_callers: false,
    }
}

impl Row {
    /// The expected answers, one per relation; panics unless there are exactly eight.
    fn cells(&self) -> Vec<&'static str> {
        let cells: Vec<&'static str> = self.cells.split('|').map(str::trim).collect();
        assert_eq!(
            cells.len(),
            Relation::ALL.len(),
            "{} {}",
            self.method,
            self.path
        );
        cells
    }
}

/// A row whose every cell runs with a caller made for that cell alone.
const fn row_fresh_callers(
    method: &'static str,
    path: &'static str,
    body: &'static str,
    cells: &'static str,
    rule: &'static str,
) -> Row {
    Row {
        method,
        path,
        body,
        cells,
        rule,
        fresh_callers: true,
    }
}

/// A group of rows with its heading.
#[derive(Debug)]
struct Section {
    title: &'static str,
    rows: &'static [Row],
}

/// The placeholders of paths and bodies, and what the test puts there.
const PLACEHOLDERS: &[(&str, &str)] = &[
    (
        "{L}",
        "Library L, created (`PUT /api/describe/c/0/o/0`) by its owner, a user outside the \
         columns.",
    ),
    ("{S}", "A library inside L."),
    ("{P}", "A public video in L."),
    ("{Q}", "A private video in L."),
    (
        "{P.code}, {Q.code}, {P.link}, {Q.link}",
        "The shortcode and permLink of P and Q.",
    ),
    (
        "{V2}",
        "The user id of a second user with `view` on L (the target of calls about another user).",
    ),
    (
        "{me}",
        "The caller's own user id (for anonymous, the admin's).",
    ),
    ("{fresh}", "A uniqueId no user has, new for each cell."),
    (
        "{member}",
        "A user given `view` on L by its owner, new for each cell.",
    ),
    (
        "{object}",
        "A video created in L by its owner, new for each cell.",
    ),
    (
        "{foreign}",
        "A video in another user's library, which no column can see except the org admin; new \
         for each cell.",
    ),
];

/// Everything the test checks: DECISIONS.md §3 (levels), §4 (401s, 501s, OPTIONS), §5 (scopes,
/// token endpoints) and docs/decisions.md (logout, embed, oEmbed, player pages).
const SECTIONS: &[Section] = &[
    Section {
        title: "authenticate",
        rows: &[
            row(
                "GET",
                "/api/authenticate",
                "",
                "200 false | 200 true | 200 true | 200 true | 200 true | 200 true | 200 false | 200 false",
                "never fails on a bad token: it reads as not authenticated (§4)",
            ),
            row(
                "HEAD",
                "/api/authenticate",
                "",
                "200 | 200 | 200 | 200 | 200 | 200 | 200 | 200",
                "GET without a body",
            ),
            row(
                "OPTIONS",
                "/api/authenticate",
                "",
                "200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no",
                "no write methods to proceed with",
            ),
        ],
    },
    Section {
        title: "describe",
        rows: &[
            row(
                "GET",
                "/api/describe/c/{L}/o/{P}",
                "",
                "200 limited | 200 limited | 200 full | 200 full | 200 full | 200 full | 401 | 401",
                "public: the limited record without `view` on L (§3); a bad token is a 401 (§4)",
            ),
            row(
                "HEAD",
                "/api/describe/c/{L}/o/{P}",
                "",
                "200 | 200 | 200 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "GET",
                "/api/describe/c/{L}/o/{Q}",
                "",
                "401 | 403 | 200 full | 200 full | 200 full | 200 full | 401 | 401",
                "private object: `view` on L (§3)",
            ),
            row(
                "HEAD",
                "/api/describe/c/{L}/o/{Q}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "PUT",
                "/api/describe/c/{L}/o/0",
                "type=video&title=New",
                "401 | 403 | 403 | 201 | 201 | 403 | 401 | 401",
                "create in L: `admin` on L (§3) and scope `write` (§5)",
            ),
            row(
                "PUT",
                "/api/describe/c/0/o/0",
                "type=catalog&title=New",
                "401 | 201 | 201 | 201 | 201 | 403 | 401 | 401",
                "new top-level library: any authenticated caller with scope `write` (§3)",
            ),
            row(
                "POST",
                "/api/describe/c/{L}/o/{Q}",
                "type=video&title=Private",
                "401 | 403 | 403 | 202 | 202 | 403 | 401 | 401",
                "update: `admin` on L (§3) and scope `write` (§5)",
            ),
            row(
                "DELETE",
                "/api/describe/c/{L}/o/{Q}",
                "",
                "501 | 501 | 501 | 501 | 501 | 501 | 501 | 501",
                "not implemented: 501 with `Allow`, whoever asks (§4)",
            ),
            row(
                "OPTIONS",
                "/api/describe/c/{L}/o/0",
                "",
                "200 no | 200 no | 200 no | 200 yes | 200 yes | 200 no | 200 no | 200 no",
                "`proceed`: may write in L (§4)",
            ),
            row(
                "OPTIONS",
                "/api/describe/c/0/o/0",
                "",
                "200 no | 200 yes | 200 yes | 200 yes | 200 yes | 200 no | 200 no | 200 no",
                "`proceed`: may create a library (§4)",
            ),
        ],
    },
    Section {
        title: "user",
        rows: &[
            row(
                "GET",
                "/api/user/c/{L}/o/0",
                "",
                "401 | 404 | 200 ids | 200 ids | 200 ids | 200 ids | 401 | 401",
                "the caller through L: `view` on L, else 404 (§3)",
            ),
            row(
                "GET",
                "/api/user/c/{L}/o/{V2}",
                "",
                "401 | 404 | 200 names | 200 ids | 200 ids | 200 ids | 401 | 401",
                "another member: names to viewers, ids to admins of L (§3)",
            ),
            row(
                "HEAD",
                "/api/user/c/{L}/o/{V2}",
                "",
                "401 | 404 | 200 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "POST",
                "/api/user/c/{L}/o/{me}",
                "firstName=Ada",
                "401 | 403 | 202 | 202 | 202 | 403 | 401 | 401",
                "rename oneself: `view` on L (docs/api.md) and scope `write`",
            ),
            row(
                "POST",
                "/api/user/c/{L}/o/{V2}",
                "firstName=Eve",
                "401 | 403 | 403 | 403 | 202 | 403 | 401 | 401",
                "rename another member: names are organization-wide, so only an organization admin (§3)",
            ),
            row(
                "POST",
                "/api/user/c/{L}/o/0",
                "uniqueId={fresh}",
                "401 | 403 | 403 | 201 | 201 | 403 | 401 | 401",
                "add a user with `view`: `admin` on L (§3)",
            ),
            row(
                "OPTIONS",
                "/api/user/c/{L}/o/{V2}",
                "",
                "200 no | 200 no | 200 no | 200 no | 200 yes | 200 no | 200 no | 200 no",
                "`proceed`: may rename V2, so only an organization admin (§3, §4)",
            ),
        ],
    },
    Section {
        title: "permission",
        rows: &[
            row(
                "GET",
                "/api/permission/c/{L}/o/0",
                "",
                "401 | 403 | 403 | 200 | 200 | 200 | 401 | 401",
                "`admin` on L (§3)",
            ),
            row(
                "HEAD",
                "/api/permission/c/{L}/o/0",
                "",
                "401 | 403 | 403 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "GET",
                "/api/permission/c/{L}/o/{V2}",
                "",
                "401 | 403 | 403 | 200 | 200 | 200 | 401 | 401",
                "`admin` on L (§3)",
            ),
            row(
                "PUT",
                "/api/permission/c/{L}/o/0",
                "uniqueId={fresh}&level=view",
                "401 | 403 | 403 | 201 | 201 | 403 | 401 | 401",
                "grant (provisioning the user): `admin` on L (§3)",
            ),
            row(
                "POST",
                "/api/permission/c/{L}/o/{V2}",
                "level=view",
                "401 | 403 | 403 | 201 | 201 | 403 | 401 | 401",
                "as PUT",
            ),
            row(
                "DELETE",
                "/api/permission/c/{L}/o/{member}",
                "",
                "401 | 403 | 403 | 200 | 200 | 403 | 401 | 401",
                "remove an entry: `admin` on L (§3)",
            ),
            row(
                "OPTIONS",
                "/api/permission/c/{L}/o/0",
                "",
                "200 no | 200 no | 200 no | 200 yes | 200 yes | 200 no | 200 no | 200 no",
                "`proceed`: `admin` on L (§4)",
            ),
        ],
    },
    Section {
        title: "info",
        rows: &[
            row(
                "GET",
                "/api/info/c/{L}/o/{Q}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "`view` on L (§3)",
            ),
            row(
                "GET",
                "/api/info/c/{L}/o/{P}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "public is describe's business: still `view` on L",
            ),
            row(
                "HEAD",
                "/api/info/c/{L}/o/{Q}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "POST",
                "/api/info/c/{L}/o/{Q}",
                "title=Private",
                "401 | 403 | 403 | 202 | 202 | 403 | 401 | 401",
                "`admin` on L (§3) and scope `write` (§5)",
            ),
            row(
                "OPTIONS",
                "/api/info/c/{L}/o/{Q}",
                "",
                "200 no | 200 no | 200 no | 200 yes | 200 yes | 200 no | 200 no | 200 no",
                "`proceed`: `admin` on L (§4)",
            ),
        ],
    },
    Section {
        title: "embed and video",
        rows: &[
            row(
                "GET",
                "/api/embed/c/{L}/o/{P}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "`view` on L, public or not (docs/decisions.md)",
            ),
            row(
                "GET",
                "/api/embed/c/{L}/o/{Q}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "`view` on L",
            ),
            row(
                "HEAD",
                "/api/embed/c/{L}/o/{Q}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "OPTIONS",
                "/api/embed/c/{L}/o/{Q}",
                "",
                "200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no",
                "no write methods",
            ),
            row(
                "GET",
                "/api/video/c/{L}/o/{P}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "`view` on L, public or not (docs/decisions.md)",
            ),
            row(
                "GET",
                "/api/video/c/{L}/o/{Q}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "`view` on L",
            ),
            row(
                "HEAD",
                "/api/video/c/{L}/o/{Q}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "OPTIONS",
                "/api/video/c/{L}/o/{Q}",
                "",
                "200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no",
                "no write methods",
            ),
        ],
    },
    Section {
        title: "catalog",
        rows: &[
            row(
                "GET",
                "/api/catalog/c/{L}/o/0",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "list L: `view` on L (§3)",
            ),
            row(
                "HEAD",
                "/api/catalog/c/{L}/o/0",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "GET",
                "/api/catalog/o/{L}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "the short form of `c/{L}/o/0`",
            ),
            row(
                "GET",
                "/api/catalog/c/{L}/o/{S}",
                "",
                "401 | 403 | 200 | 200 | 200 | 200 | 401 | 401",
                "list S: `view` flows down from L (§3)",
            ),
            row(
                "PUT",
                "/api/catalog/c/{L}/o/{P}",
                "",
                "401 | 403 | 403 | 201 | 201 | 403 | 401 | 401",
                "add (again: idempotent): `admin` on L and `admin` on the object (§3)",
            ),
            row(
                "POST",
                "/api/catalog/c/{L}/o/{P}",
                "",
                "401 | 403 | 403 | 201 | 201 | 403 | 401 | 401",
                "as PUT",
            ),
            row(
                "PUT",
                "/api/catalog/c/{L}/o/{foreign}",
                "",
                "401 | 403 | 403 | 404 | 201 | 403 | 401 | 401",
                "an object the caller cannot view: to L's admin, 404 as an unknown uuid (§3)",
            ),
            row(
                "DELETE",
                "/api/catalog/c/{L}/o/{object}",
                "",
                "401 | 403 | 403 | 200 | 200 | 403 | 401 | 401",
                "remove a member: `admin` on L (§3)",
            ),
            row(
                "OPTIONS",
                "/api/catalog/c/{L}/o/0",
                "",
                "200 no | 200 no | 200 no | 200 yes | 200 yes | 200 no | 200 no | 200 no",
                "`proceed`: `admin` on L (§4)",
            ),
            row(
                "OPTIONS",
                "/api/catalog/o/{L}",
                "",
                "200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no",
                "the short form only lists",
            ),
        ],
    },
    Section {
        title: "contribute",
        rows: &[
            row(
                "GET",
                "/api/contribute/o/{P}",
                "",
                "401 | 200 | 200 | 200 | 200 | 200 | 401 | 401",
                "any authenticated caller: the libraries it administers (§3)",
            ),
            row(
                "HEAD",
                "/api/contribute/o/{P}",
                "",
                "401 | 200 | 200 | 200 | 200 | 200 | 401 | 401",
                "as GET",
            ),
            row(
                "OPTIONS",
                "/api/contribute/o/{P}",
                "",
                "200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no | 200 no",
                "no write methods",
            ),
        ],
    },
    Section {
        title: "OAuth and sign-out",
        rows: &[
            row(
                "GET",
                "/api/oauth/authorize",
                "",
                "400 | 200 | 200 | 200 | 200 | 200 | 401 | 401",
                "token info (§5); without a token the browser endpoint: no client, error page (§5)",
            ),
            row_fresh_callers(
                "POST",
                "/api/logout",
                "",
                "401 | 200 | 200 | 200 | 200 | 200 | 401 | 401",
                "any scope: signing out writes no media (docs/decisions.md)",
            ),
            row(
                "OPTIONS",
                "/api/logout",
                "",
                "200 no | 200 yes | 200 yes | 200 yes | 200 yes | 200 no | 200 no | 200 no",
                "`proceed` follows the bearer-token rule (docs/decisions.md)",
            ),
            row(
                "POST",
                "/api/oauth/access_token",
                "grant_type=refresh_token&refresh_token=mlr_unknown",
                "401 | 401 | 401 | 401 | 401 | 401 | 401 | 401",
                "client authentication only: a bearer token is `invalid_client` (docs/api.md)",
            ),
            row(
                "POST",
                "/api/oauth/revoke",
                "token=mla_unknown",
                "401 | 401 | 401 | 401 | 401 | 401 | 401 | 401",
                "client authentication only",
            ),
            row(
                "POST",
                "/api/oauth/introspect",
                "token=mla_unknown",
                "401 | 401 | 401 | 401 | 401 | 401 | 401 | 401",
                "client authentication only",
            ),
            row(
                "OPTIONS",
                "/api/oauth/access_token",
                "",
                "200 no | 200 yes | 200 yes | 200 yes | 200 yes | 200 no | 200 no | 200 no",
                "`proceed` follows the bearer-token rule (docs/decisions.md)",
            ),
        ],
    },
    Section {
        title: "public documents, oEmbed and player pages",
        rows: &[
            row(
                "GET",
                "/api/openapi.json",
                "",
                "200 | 200 | 200 | 200 | 200 | 200 | 200 | 200",
                "public",
            ),
            row(
                "GET",
                "/.well-known/oauth-authorization-server",
                "",
                "200 | 200 | 200 | 200 | 200 | 200 | 200 | 200",
                "public (RFC 8414)",
            ),
            row(
                "GET",
                "/api/oembed?url={P.link}",
                "",
                "200 | 200 | 200 | 200 | 200 | 200 | 200 | 200",
                "public object, no token needed (docs/api.md)",
            ),
            row(
                "GET",
                "/api/oembed?url={Q.link}",
                "",
                "401 | 401 | 401 | 401 | 401 | 401 | 401 | 401",
                "private object: 401 (oEmbed 1.0 §2.3.4); tokens play no part",
            ),
            row(
                "GET",
                "/w/{Q.code}",
                "",
                "302 | 302 | 302 | 302 | 302 | 302 | 302 | 302",
                "permLink of any live object (docs/decisions.md)",
            ),
            row(
                "GET",
                "/m/{P.code}",
                "",
                "200 | 200 | 200 | 200 | 200 | 200 | 200 | 200",
                "landing page of a public object",
            ),
            row(
                "GET",
                "/m/{Q.code}",
                "",
                "401 | 401 | 401 | 401 | 401 | 401 | 401 | 401",
                "private: 401 page; pages take no bearer token (docs/decisions.md)",
            ),
            row(
                "GET",
                "/embed/{P.code}",
                "",
                "200 | 200 | 200 | 200 | 200 | 200 | 200 | 200",
                "iframe player of a public object",
            ),
            row(
                "GET",
                "/embed/{Q.code}",
                "",
                "401 | 401 | 401 | 401 | 401 | 401 | 401 | 401",
                "private: 401 page (docs/decisions.md)",
            ),
            row(
                "GET",
                "/embed/{Q.code}.js",
                "",
                "401 | 401 | 401 | 401 | 401 | 401 | 401 | 401",
                "private: no embed script",
            ),
        ],
    },
];

// ---------------------------------------------------------------- cells

/// The part of the body a cell checks beside the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The status only.
    Status,
    /// The describe record: `limited` (no `userId`) or `full`.
    Describe,
    /// The user record: `names` (no `userId`) or `ids` (`userId` and `uniqueId`).
    User,
    /// OPTIONS: `proceed` is `yes` ("true") or `no` ("false").
    Proceed,
    /// authenticate: `authenticated` is `true` or `false`.
    Authenticated,
}

/// Which shape a cell's word names; panics on a typo in the table.
fn shape_of(cell: &str) -> Shape {
    let word = cell.split_once(' ').map_or("", |(_, w)| w);
    match word {
        "" => Shape::Status,
        "limited" | "full" => Shape::Describe,
        "names" | "ids" => Shape::User,
        "yes" | "no" => Shape::Proceed,
        "true" | "false" => Shape::Authenticated,
        other => panic!("unknown word {other:?} in cell {cell:?}"),
    }
}

/// The answer in the notation of a cell: the status, and the word of `shape` when the
/// status is a success.
fn observed(shape: Shape, status: StatusCode, body: &Value) -> String {
    let has = |k: &str| body.get(k).is_some();
    let flag = |k: &str, yes: &'static str, no: &'static str| match body[k].as_str() {
        Some("true") => yes,
        Some("false") => no,
        _ => "?",
    };
    let word = match shape {
        _ if !status.is_success() => "",
        Shape::Status => "",
        Shape::Describe if has("userId") => "full",
        Shape::Describe if has("uuid") => "limited",
        Shape::User if has("userId") && has("uniqueId") => "ids",
        Shape::User if has("firstName") && !has("userId") && !has("uniqueId") => "names",
        Shape::Describe | Shape::User => "?",
        Shape::Proceed => flag("proceed", "yes", "no"),
        Shape::Authenticated => flag("authenticated", "true", "false"),
    };
    if word.is_empty() {
        status.as_u16().to_string()
    } else {
        format!("{} {word}", status.as_u16())
    }
}

// ---------------------------------------------------------------- the fixture

/// One caller: its token (none for anonymous) and the user id `{me}` stands for.
#[derive(Debug, Clone)]
struct Caller {
    token: Option<String>,
    me: String,
}

/// The running app, the objects and users of the matrix, and a caller per relation.
struct Fixture {
    api: ApiApp,
    /// A confidential client of the app (every token is this client's).
    client: ClientCredentials,
    /// Services on the same database whose clock stands behind the real one by more than an
    /// access token lives: their tokens are expired.
    past: Services,
    owner: String,
    outsider: String,
    library: String,
    sub: String,
    public: String,
    private: String,
    public_code: String,
    private_code: String,
    foreign_library: String,
    second_viewer: String,
    admin: User,
    callers: Vec<Caller>,
    /// Numbers the users and uniqueIds the test makes.
    serial: usize,
}

impl Fixture {
    async fn start(b: Backend) -> Self {
        let api = ApiApp::start(b).await;
        let client = register_client(&api.services);
        let settings = api.services.settings().clone();
        let behind = settings.lifetimes.access.seconds() + 60;
        let past = Services::new(
            api.services.store().clone(),
            Arc::new(ManualClock::at(SystemClock.now().epoch_seconds() - behind)),
            Arc::new(OsRandom),
            settings,
        );
        let owner_user = api.user("owner", false);
        let outsider_user = api.user("outsider", false);
        let admin = api.user("admin", false);
        let mut fx = Self {
            client,
            past,
            owner: String::new(),
            outsider: String::new(),
            library: String::new(),
            sub: String::new(),
            public: String::new(),
            private: String::new(),
            public_code: String::new(),
            private_code: String::new(),
            foreign_library: String::new(),
            second_viewer: String::new(),
            admin,
            callers: Vec::new(),
            serial: 0,
            api,
        };
        fx.owner = fx.mint(&owner_user, "read write", false);
        fx.outsider = fx.mint(&outsider_user, "read write", false);
        fx.library = fx.api.library(&fx.owner, "L").await;
        fx.sub = fx.api.object(&fx.owner, &fx.library, "catalog", "S").await;
        fx.public = fx.create(&fx.owner, &fx.library, "P", true).await;
        fx.private = fx.create(&fx.owner, &fx.library, "Q", false).await;
        fx.public_code = fx.shortcode(&fx.public).await;
        fx.private_code = fx.shortcode(&fx.private).await;
        fx.foreign_library = fx.api.library(&fx.outsider, "M").await;
        fx.grant(&fx.admin.id.to_string(), "admin").await;
        let second = fx.api.user("viewer2", false);
        fx.grant(&second.id.to_string(), "view").await;
        fx.second_viewer = second.id.to_string();
        let admin = fx.admin.clone();
        for relation in Relation::ALL {
            let caller = fx.caller(relation, &admin).await;
            fx.callers.push(caller);
        }
        fx
    }

    /// An access token for `user` with `scope` from the real authorization-code exchange;
    /// `expired` issues it through [`Fixture::past`].
    fn mint(&self, user: &User, scope: &str, expired: bool) -> String {
        let services = if expired {
            &self.past
        } else {
            &self.api.services
        };
        crate::api::mint_token(services, &self.client, user, scope)
    }

    /// A new user named after the running serial number.
    fn new_user(&mut self, kind: &str, org_admin: bool) -> User {
        self.serial += 1;
        self.api.user(&format!("{kind}-{}", self.serial), org_admin)
    }

    /// The owner of L gives `user_id` `level` on L.
    async fn grant(&self, user_id: &str, level: &str) {
        let a = self
            .api
            .call(
                Method::PUT,
                &format!("/api/permission/c/{}/o/{user_id}", self.library),
                Some(&self.owner),
                &[("level", level)],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "grant: {a:?}");
    }

    /// Creates a video titled `title` in `collection`; returns its uuid.
    async fn create(&self, token: &str, collection: &str, title: &str, public: bool) -> String {
        let public = if public { "true" } else { "false" };
        let a = self
            .api
            .call(
                Method::PUT,
                &format!("/api/describe/c/{collection}/o/0"),
                Some(token),
                &[("type", "video"), ("title", title), ("public", public)],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "create: {a:?}");
        a.json["uuid"].as_str().unwrap().to_owned()
    }

    /// The shortcode of an object of L, from its permLink.
    async fn shortcode(&self, object: &str) -> String {
        let path = format!("/api/describe/c/{}/o/{object}", self.library);
        let a = self.api.get(&path, Some(&self.owner)).await;
        let link = a.json["permLink"].as_str().unwrap();
        let code = link.trim_end_matches('/').rsplit('/').next().unwrap();
        code.to_owned()
    }

    /// Makes a caller of `relation`; the read-only, expired and revoked tokens are `admin`'s.
    async fn caller(&mut self, relation: Relation, admin: &User) -> Caller {
        let admin_id = admin.id.to_string();
        let (user, token) = match relation {
            Relation::Anonymous => {
                return Caller {
                    token: None,
                    me: admin_id,
                };
            }
            Relation::NoAccess => {
                let u = self.new_user("nobody", false);
                let t = self.mint(&u, "read write", false);
                (u, t)
            }
            Relation::View => {
                let u = self.new_user("viewer", false);
                self.grant(&u.id.to_string(), "view").await;
                let t = self.mint(&u, "read write", false);
                (u, t)
            }
            Relation::OrgAdmin => {
                let u = self.new_user("org-admin", true);
                let t = self.mint(&u, "read write", false);
                (u, t)
            }
            Relation::Admin => (admin.clone(), self.mint(admin, "read write", false)),
            Relation::ReadOnly => (admin.clone(), self.mint(admin, "read", false)),
            Relation::Expired => {
                let t = self.mint(admin, "read write", true);
                self.assert_dead(&t, AccessTokenInvalid::Expired);
                (admin.clone(), t)
            }
            Relation::Revoked => {
                let t = self.mint(admin, "read write", false);
                self.revoke(&t).await;
                self.assert_dead(&t, AccessTokenInvalid::Revoked);
                (admin.clone(), t)
            }
        };
        Caller {
            token: Some(token),
            me: user.id.to_string(),
        }
    }

    /// The token store knows `token` and says it is dead for `why` (not merely unknown).
    fn assert_dead(&self, token: &str, why: AccessTokenInvalid) {
        match self.api.services.oauth().authenticate_bearer(token) {
            Err(BearerError::Invalid(e)) if e == why => {}
            other => panic!("the {why:?} token is not just that: {other:?}"),
        }
    }

    /// A caller of `relation` made for one cell (with its own admin where it needs one).
    async fn fresh_caller(&mut self, relation: Relation) -> Caller {
        let admin = self.new_user("admin", false);
        self.grant(&admin.id.to_string(), "admin").await;
        self.caller(relation, &admin).await
    }

    /// Revokes `token` at the revocation endpoint, as its client.
    async fn revoke(&self, token: &str) {
        let req = self
            .api
            .app
            .client
            .post(self.api.app.url("/api/oauth/revoke"))
            .basic_auth(
                &self.client.client_id,
                self.client.client_secret.as_ref().map(|s| s.expose()),
            )
            .form(&[("token", token)]);
        let a = self.api.send(req).await;
        assert_eq!(a.status, StatusCode::OK, "revoke: {a:?}");
    }

    /// The path and body of `row` for `caller`, placeholders filled in; the per-cell
    /// placeholders get a new user, uniqueId or object each time.
    async fn expand(&mut self, row: &Row, caller: &Caller) -> (String, String) {
        let base = self.api.app.address.clone();
        let mut values: HashMap<&str, String> = HashMap::from([
            ("{L}", self.library.clone()),
            ("{S}", self.sub.clone()),
            ("{P}", self.public.clone()),
            ("{Q}", self.private.clone()),
            ("{P.code}", self.public_code.clone()),
            ("{Q.code}", self.private_code.clone()),
            ("{P.link}", format!("{base}/w/{}/", self.public_code)),
            ("{Q.link}", format!("{base}/w/{}/", self.private_code)),
            ("{V2}", self.second_viewer.clone()),
            ("{me}", caller.me.clone()),
        ]);
        let uses = |p: &str| row.path.contains(p) || row.body.contains(p);
        if uses("{fresh}") {
            self.serial += 1;
            values.insert("{fresh}", format!("fresh-{}", self.serial));
        }
        if uses("{member}") {
            let u = self.new_user("member", false);
            self.grant(&u.id.to_string(), "view").await;
            values.insert("{member}", u.id.to_string());
        }
        if uses("{object}") {
            let o = self.create(&self.owner, &self.library, "O", false).await;
            values.insert("{object}", o);
        }
        if uses("{foreign}") {
            let o = self
                .create(&self.outsider, &self.foreign_library, "F", false)
                .await;
            values.insert("{foreign}", o);
        }
        let fill = |template: &str| {
            let mut out = template.to_owned();
            for (k, v) in &values {
                out = out.replace(k, v);
            }
            assert!(!out.contains('{'), "unknown placeholder in {template:?}");
            out
        };
        (fill(row.path), fill(row.body))
    }

    /// Sends one cell's request.
    async fn send(&self, method: Method, path: &str, body: &str, token: Option<&str>) -> Reply {
        let mut req = self.api.app.client.request(method, self.api.app.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if !body.is_empty() {
            req = req
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body.to_owned());
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        let challenge = res
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = res.bytes().await.unwrap();
        Reply {
            status,
            challenge,
            json: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }
}

/// One cell's answer.
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    /// `WWW-Authenticate`.
    challenge: Option<String>,
    /// The JSON body; `Null` when there is none or it is not JSON (a page).
    json: Value,
}

/// What DECISIONS.md §4 asks of every error answer of the API, beside its status: a JSON
/// `message`, and on a 401 a `WWW-Authenticate` challenge, `Bearer error="invalid_token"`
/// for a token that is no longer good (on rows where the caller matters). Pages (outside
/// `/api/`, and the authorization endpoint without a token, which is the browser's) answer
/// HTML and are not held to it.
fn error_problem(row: &Row, relation: Relation, reply: &Reply) -> Option<String> {
    let page = !row.path.starts_with("/api/")
        || (row.path.starts_with("/api/oauth/authorize") && relation == Relation::Anonymous);
    if page || !(reply.status.is_client_error() || reply.status.is_server_error()) {
        return None;
    }
    if row.method != "HEAD" && !reply.json["message"].is_string() {
        return Some("an error without a JSON message".to_owned());
    }
    if reply.status != StatusCode::UNAUTHORIZED {
        return None;
    }
    let Some(challenge) = &reply.challenge else {
        return Some("a 401 without WWW-Authenticate".to_owned());
    };
    // Where every caller gets the same answer the token plays no part (public documents, the
    // private oEmbed's 401 of oEmbed 1.0 §2.3.4, client-authenticated endpoints).
    let cells = row.cells();
    let blind = cells.iter().all(|c| *c == cells[0]);
    let stale = !blind && matches!(relation, Relation::Expired | Relation::Revoked);
    if stale && challenge.starts_with("Bearer") && !challenge.contains("error=\"invalid_token\"") {
        return Some(format!("a dead token's 401 challenges with {challenge:?}"));
    }
    None
}

// ---------------------------------------------------------------- the document

/// The document, relative to the workspace root.
const DOC: &str = "docs/authorization-matrix.md";

fn doc_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .join(DOC)
}

/// The page's opening, up to the callers' table.
const INTRO: &str = r#"# Authorization matrix

<!-- Generated by tests/integration/authz_matrix.rs from its table of expectations: do not
     edit here. Change the table, then run
     MEDIALIB_BLESS=1 cargo nextest run -p medialib-tests -E 'test(/authz_matrix/)' -->

Who may call what: every endpoint and method of the API against every relation a caller can
have to a library, and the status medialib answers. This page is rendered from the table of
expectations in `tests/integration/authz_matrix.rs`. That test sends every cell to the real
server, on SQLite and on PostgreSQL, and fails listing every cell that answers otherwise; it
also fails when this page differs from its rendering of the table, so what is written here is
what is tested. The expectations come from DECISIONS.md §3–§5 (the § numbers below) and
[decisions.md](decisions.md), not from what the server happened to answer.

## The callers

| column | who, and how the test makes it |
|---|---|
"#;

/// Between the callers' table and the fixture's.
const CALLERS_NOTE: &str = r#"
The read-only, expired and revoked columns are the admin's tokens, so a refusal there is the
token's doing, not the user's level. Every token comes from the real authorization-code
exchange of a registered client, and every request carries `Authorization: Bearer TOKEN`.

## The fixture

| placeholder | what the test puts there |
|---|---|
"#;

/// After the fixture's table, before the matrix.
const READING: &str = r#"
Writes are made so that no cell changes what a later cell sees: they set values the objects
already have, add an existing member again (idempotent), create new objects or users, or act
on a `{fresh}`, `{member}`, `{object}` or `{foreign}` made for the cell. The sign-out row,
which ends all the caller's access tokens, runs every cell with a caller made for that cell
(a new user of the same relation; for the admin-token columns, a new user granted `admin` on
L).

## Reading a cell

- The number is the HTTP status. Beside it, every error answer of the API is checked for a
  JSON `message`, and every 401 for a `WWW-Authenticate` challenge, with
  `error="invalid_token"` for the expired and revoked tokens on rows where the caller matters
  (DECISIONS.md §4). Pages (outside `/api/`, and the authorization endpoint without a token)
  answer HTML.
- `limited` / `full`: which describe record a 200 is (the limited one has no `userId`).
- `names` / `ids`: which user record a 200 is (`firstName` and `lastName` only, or also
  `userId` and `uniqueId`).
- `yes` / `no` (OPTIONS): the `proceed` flag, whether the caller may perform the path's
  write methods.
- `true` / `false` (authenticate): the `authenticated` flag.

Not in the matrix: the browser sign-in endpoints (`/api/oauth/authorize` with a query,
`/api/oauth/login`, `/api/sso/oidc/callback`), which take a session cookie and a CSRF token
rather than a bearer token (tested in `tests/integration/oauth/pages.rs`).
"#;

/// `docs/authorization-matrix.md`, rendered from [`SECTIONS`].
fn render() -> String {
    let mut out = INTRO.to_owned();
    for r in Relation::ALL {
        let _ = writeln!(out, "| {} | {} |", r.column(), r.legend());
    }
    out.push_str(CALLERS_NOTE);
    for (k, v) in PLACEHOLDERS {
        let _ = writeln!(out, "| `{k}` | {v} |");
    }
    out.push_str(READING);
    for section in SECTIONS {
        let _ = write!(out, "\n## {}\n\n| method | path | body |", section.title);
        for r in Relation::ALL {
            let _ = write!(out, " {} |", r.column());
        }
        out.push_str(" rule |\n|---|---|---|");
        out.push_str(&"---|".repeat(Relation::ALL.len()));
        out.push_str("---|\n");
        for row in section.rows {
            let body = if row.body.is_empty() {
                String::new()
            } else {
                format!("`{}`", row.body)
            };
            let _ = write!(out, "| {} | `{}` | {body} |", row.method, row.path);
            for cell in row.cells() {
                let _ = write!(out, " {cell} |");
            }
            let fresh = if row.fresh_callers {
                " (a caller made for each cell)"
            } else {
                ""
            };
            let _ = writeln!(out, " {}{fresh} |", row.rule);
        }
    }
    out
}

/// With `MEDIALIB_BLESS=1`, writes the document (atomically: both backends may bless at
/// once); otherwise a complaint when the file differs from `rendered`.
fn sync_document(rendered: &str, b: Backend) -> Option<String> {
    let path = doc_path();
    if std::env::var("MEDIALIB_BLESS").is_ok_and(|v| v == "1") {
        let tmp = path.with_extension(format!("md.{b:?}.tmp"));
        std::fs::write(&tmp, rendered).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        return None;
    }
    match std::fs::read_to_string(&path) {
        Ok(current) if current == rendered => None,
        Ok(_) => Some(format!(
            "{DOC} differs from the table; run with MEDIALIB_BLESS=1 to rewrite it"
        )),
        Err(e) => Some(format!(
            "cannot read {DOC} ({e}); run with MEDIALIB_BLESS=1 to write it"
        )),
    }
}

// ---------------------------------------------------------------- the test

async fn authorization_matrix(b: Backend) {
    let started = Instant::now();
    let mut fx = Fixture::start(b).await;
    let setup = started.elapsed();
    let mut mismatches = Vec::new();
    let mut cells = 0;
    for section in SECTIONS {
        for row in section.rows {
            let method = Method::from_bytes(row.method.as_bytes()).unwrap();
            for (i, relation) in Relation::ALL.into_iter().enumerate() {
                let expected = row.cells()[i];
                let shape = shape_of(expected);
                let caller = if row.fresh_callers {
                    fx.fresh_caller(relation).await
                } else {
                    fx.callers[i].clone()
                };
                let (path, body) = fx.expand(row, &caller).await;
                let reply = fx
                    .send(method.clone(), &path, &body, caller.token.as_deref())
                    .await;
                let got = observed(shape, reply.status, &reply.json);
                cells += 1;
                let problem = if got == expected {
                    error_problem(row, relation, &reply)
                } else {
                    Some(format!("expected {expected}, got {got}"))
                };
                if let Some(problem) = problem {
                    let mut answer = reply.json.to_string();
                    answer.truncate(200);
                    mismatches.push(format!(
                        "{} {} [{}]: {problem}; {answer}",
                        row.method,
                        row.path,
                        relation.column()
                    ));
                }
            }
        }
    }
    eprintln!(
        "authorization matrix on {b:?}: {cells} cells in {:.1?} (setup {setup:.1?})",
        started.elapsed()
    );
    let document = sync_document(&render(), b);
    assert!(
        mismatches.is_empty() && document.is_none(),
        "{} of {cells} cells differ on {b:?}:\n{}\n{}",
        mismatches.len(),
        mismatches.join("\n"),
        document.unwrap_or_default()
    );
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    authorization_matrix,
);
