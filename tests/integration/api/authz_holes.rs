//! The holes of the outside security review (DECISIONS.md §3 and §4 as revised on
//! 2026-11-24), each proved over HTTP: the refused request answers what the rules say,
//! and a read-back through the API (as the owner, the victim or an org admin) shows that
//! nothing changed. Each hole has positive controls next to it, so that a fix cannot pass
//! by refusing everything.
//!
//! 1. A viewer becomes admin by linking (catalog PUT needs `admin` on what is added).
//! 2. Anyone renames anyone (user POST changes names only for the user itself or an org admin).
//! 3. Contribute is an existence oracle (an object one cannot view is a 404 like an unknown one).
//! 4. `X-Content-Type-Options: nosniff` and, with an https base URL, HSTS on every response.
//! 5. Authentication is judged before the path and the body.
//! 6. Unknown input fields are a 400 naming them.

use medialib_domain::User;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::permission::grant;
use super::{Answer, ApiApp, Backend, LIMITED_RECORD, assert_error, keys};

/// A well-formed uuid that names nothing.
const GHOST: &str = "0123456789abcdef0123456789abcdef";

/// The uuids listed by a catalog answer (asserting that it is a 200).
fn listed(a: &Answer) -> Vec<String> {
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uuid"].as_str().unwrap().to_owned())
        .collect()
}

async fn catalog(api: &ApiApp, token: Option<&str>, lib: &str) -> Answer {
    api.get(&format!("/api/catalog/c/{lib}/o/0"), token).await
}

async fn link(api: &ApiApp, token: &str, into: &str, item: &str) -> Answer {
    api.call(
        Method::PUT,
        &format!("/api/catalog/c/{into}/o/{item}"),
        Some(token),
        &[],
    )
    .await
}

/// Creates an object of `kind` in `lib` with `public`; returns its uuid.
async fn create(
    api: &ApiApp,
    token: &str,
    lib: &str,
    kind: &str,
    title: &str,
    public: bool,
) -> String {
    let a = api
        .call(
            Method::PUT,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(token),
            &[
                ("type", kind),
                ("title", title),
                ("public", if public { "true" } else { "false" }),
            ],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    a.json["uuid"].as_str().unwrap().to_owned()
}

// ------------------------------------------------------------ hole 1: linking

/// `owner` with library A, sub-library S in A, a private video V in A; `viewer` with `view`
/// on A (granted through the API) and a library VB of its own.
struct Linking {
    api: ApiApp,
    owner: String,
    viewer_user: User,
    viewer: String,
    a: String,
    s: String,
    v: String,
    vb: String,
}

impl std::fmt::Debug for Linking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Linking")
            .field("a", &self.a)
            .field("s", &self.s)
            .field("v", &self.v)
            .field("vb", &self.vb)
            .finish_non_exhaustive()
    }
}

async fn linking(b: Backend) -> Linking {
    let api = ApiApp::start(b).await;
    let (_, owner) = api.signed_in("owner");
    let (viewer_user, viewer) = api.signed_in("viewer");
    let a = api.library(&owner, "A").await;
    let s = api.object(&owner, &a, "catalog", "S").await;
    let v = create(&api, &owner, &a, "video", "Lecture", false).await;
    let granted = api
        .call(
            Method::PUT,
            &format!("/api/permission/c/{a}/o/0"),
            Some(&owner),
            &[("uniqueId", "viewer"), ("level", "view")],
        )
        .await;
    assert_eq!(granted.status, StatusCode::CREATED, "{granted:?}");
    let vb = api.library(&viewer, "VB").await;
    // The starting point: the viewer sees A, S and V, administers VB, and nothing more.
    assert_eq!(
        catalog(&api, Some(&viewer), &a).await.status,
        StatusCode::OK
    );
    assert_eq!(
        catalog(&api, Some(&viewer), &s).await.status,
        StatusCode::OK
    );
    assert_error(
        &api.get(&format!("/api/permission/c/{s}/o/0"), Some(&viewer))
            .await,
        403,
    );
    assert_eq!(
        listed(&catalog(&api, Some(&viewer), &vb).await),
        Vec::<String>::new()
    );
    Linking {
        api,
        owner,
        viewer_user,
        viewer,
        a,
        s,
        v,
        vb,
    }
}

impl Linking {
    /// V as its owner reads it through A: (title, public).
    async fn v_as_owner(&self) -> (String, String) {
        let a = self
            .api
            .get(
                &format!("/api/describe/c/{}/o/{}", self.a, self.v),
                Some(&self.owner),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        (
            a.json["title"].as_str().unwrap().to_owned(),
            a.json["public"].as_str().unwrap().to_owned(),
        )
    }
}

async fn a_viewer_cannot_link_a_sub_library_into_a_library_of_their_own(b: Backend) {
    let w = linking(b).await;
    let api = &w.api;
    let a = link(api, &w.viewer, &w.vb, &w.s).await;
    assert_error(&a, 403);
    // Nothing changed: no admin on S, no creating in S, S is not in VB.
    assert_error(
        &api.get(&format!("/api/permission/c/{}/o/0", w.s), Some(&w.viewer))
            .await,
        403,
    );
    let smuggled = api
        .call(
            Method::PUT,
            &format!("/api/describe/c/{}/o/0", w.s),
            Some(&w.viewer),
            &[("type", "video"), ("title", "Smuggled")],
        )
        .await;
    assert_error(&smuggled, 403);
    assert_eq!(
        listed(&catalog(api, Some(&w.viewer), &w.vb).await),
        Vec::<String>::new()
    );
    assert_eq!(
        listed(&catalog(api, Some(&w.owner), &w.s).await),
        Vec::<String>::new()
    );
    // The owner's view of S's entries: only its own admin entry, no viewer there.
    let entries = api
        .get(&format!("/api/permission/c/{}/o/0", w.s), Some(&w.owner))
        .await;
    assert_eq!(entries.status, StatusCode::OK, "{entries:?}");
    assert!(
        entries
            .json
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["uniqueId"] != "viewer"),
        "{entries:?}"
    );
}

async fn a_viewer_cannot_reshare_media_into_a_library_of_their_own_nor_edit_it_there(b: Backend) {
    let w = linking(b).await;
    let api = &w.api;
    let a = link(api, &w.viewer, &w.vb, &w.v).await;
    assert_error(&a, 403);
    assert_eq!(
        listed(&catalog(api, Some(&w.viewer), &w.vb).await),
        Vec::<String>::new()
    );
    // V is not in VB, so editing it through VB finds nothing.
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{}/o/{}", w.vb, w.v),
            Some(&w.viewer),
            &[("type", "video"), ("public", "true"), ("title", "Pwned")],
        )
        .await;
    assert_ne!(a.status, StatusCode::ACCEPTED, "{a:?}");
    assert_error(&a, 404);
    // V is still private and titled as before.
    assert_eq!(
        w.v_as_owner().await,
        ("Lecture".to_owned(), "false".to_owned())
    );
    assert_error(
        &api.get(&format!("/api/describe/c/{}/o/{}", w.a, w.v), None)
            .await,
        401,
    );
}

async fn a_viewer_cannot_place_the_library_under_one_they_administer(b: Backend) {
    let w = linking(b).await;
    let api = &w.api;
    let a = link(api, &w.viewer, &w.vb, &w.a).await;
    assert_error(&a, 403);
    assert_eq!(
        listed(&catalog(api, Some(&w.viewer), &w.vb).await),
        Vec::<String>::new()
    );
    assert_error(
        &api.get(&format!("/api/permission/c/{}/o/0", w.a), Some(&w.viewer))
            .await,
        403,
    );
    // A second admin of VB gets nothing on A.
    let (friend, tf) = api.signed_in("friend");
    grant(api, &w.viewer, &w.vb, &friend, "admin").await;
    assert_eq!(catalog(api, Some(&tf), &w.vb).await.status, StatusCode::OK);
    assert_error(&catalog(api, Some(&tf), &w.a).await, 403);
    assert_error(
        &api.get(&format!("/api/permission/c/{}/o/0", w.a), Some(&tf))
            .await,
        403,
    );
    assert_error(
        &api.get(&format!("/api/describe/c/{}/o/{}", w.a, w.v), Some(&tf))
            .await,
        403,
    );
}

async fn removing_a_viewer_removes_every_path_they_had(b: Backend) {
    let w = linking(b).await;
    let api = &w.api;
    // Whatever the hole moves answer, once the owner removes the viewer from A, the viewer
    // reaches neither A, nor S, nor V.
    let mut attempts = Vec::new();
    for item in [&w.s, &w.v, &w.a] {
        attempts.push(link(api, &w.viewer, &w.vb, item).await.status);
    }
    let a = api
        .call(
            Method::DELETE,
            &format!("/api/permission/c/{}/o/{}", w.a, w.viewer_user.id),
            Some(&w.owner),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let why = format!("after the link attempts answered {attempts:?}");
    let a = catalog(api, Some(&w.viewer), &w.a).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN, "catalog A {why}: {a:?}");
    let a = catalog(api, Some(&w.viewer), &w.s).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN, "catalog S {why}: {a:?}");
    let a = api
        .get(
            &format!("/api/describe/c/{}/o/{}", w.a, w.v),
            Some(&w.viewer),
        )
        .await;
    assert_eq!(
        a.status,
        StatusCode::FORBIDDEN,
        "describe V in A {why}: {a:?}"
    );
    for item in [&w.v, &w.s, &w.a] {
        let a = api
            .get(
                &format!("/api/describe/c/{}/o/{item}", w.vb),
                Some(&w.viewer),
            )
            .await;
        assert_eq!(
            a.status,
            StatusCode::NOT_FOUND,
            "describe {item} in VB {why}: {a:?}"
        );
    }
    assert_eq!(
        listed(&catalog(api, Some(&w.viewer), &w.vb).await),
        Vec::<String>::new()
    );
}

async fn admins_of_both_sides_and_org_admins_can_link(b: Backend) {
    let w = linking(b).await;
    let api = &w.api;
    // An admin of A who also administers a library of their own links S and V into it.
    let (alice, ta) = api.signed_in("alice");
    grant(api, &w.owner, &w.a, &alice, "admin").await;
    let al = api.library(&ta, "AL").await;
    assert_eq!(link(api, &ta, &al, &w.s).await.status, StatusCode::CREATED);
    assert_eq!(link(api, &ta, &al, &w.v).await.status, StatusCode::CREATED);
    let mut got = listed(&catalog(api, Some(&ta), &al).await);
    got.sort();
    let mut want = vec![w.s.clone(), w.v.clone()];
    want.sort();
    assert_eq!(got, want);
    // An org admin links anything anywhere, even with no entry on either side.
    let root = api.user("root", true);
    let tr = api.token(&root, "read write");
    for item in [&w.a, &w.s, &w.v] {
        let a = link(api, &tr, &w.vb, item).await;
        assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    }
    let mut got = listed(&catalog(api, Some(&tr), &w.vb).await);
    got.sort();
    let mut want = vec![w.a.clone(), w.s.clone(), w.v.clone()];
    want.sort();
    assert_eq!(got, want);
}

async fn linking_an_object_one_cannot_see_is_a_404_like_an_unknown_uuid(b: Backend) {
    let w = linking(b).await;
    let api = &w.api;
    let (_, ts) = api.signed_in("stranger");
    let x = api.library(&ts, "X").await;
    let o = create(api, &ts, &x, "video", "Private", false).await;
    let unknown = link(api, &w.viewer, &w.vb, GHOST).await;
    assert_error(&unknown, 404);
    for hidden in [&o, &x] {
        let a = link(api, &w.viewer, &w.vb, hidden).await;
        assert_eq!(
            (a.status, &a.json),
            (unknown.status, &unknown.json),
            "an object the caller cannot view answers like an unknown uuid"
        );
    }
    assert_eq!(
        listed(&catalog(api, Some(&w.viewer), &w.vb).await),
        Vec::<String>::new()
    );
}

// ------------------------------------------------------------ hole 2: names

/// The caller's own (firstName, lastName), read through `lib`.
async fn own_names(api: &ApiApp, token: &str, lib: &str) -> (String, String) {
    let a = api
        .get(&format!("/api/user/c/{lib}/o/0"), Some(token))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    (
        a.json["firstName"].as_str().unwrap().to_owned(),
        a.json["lastName"].as_str().unwrap().to_owned(),
    )
}

fn unchanged(u: &User) -> (String, String) {
    ("Ada".to_owned(), u.unique_id.as_str().to_owned())
}

async fn entries_of(api: &ApiApp, token: &str, lib: &str, user: &str) -> Value {
    let a = api
        .get(&format!("/api/permission/c/{lib}/o/{user}"), Some(token))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json
}

async fn an_admin_cannot_rename_an_existing_user_by_adding_them_by_unique_id(b: Backend) {
    let api = ApiApp::start(b).await;
    let (victim, tv) = api.signed_in("victim");
    let (_, ta) = api.signed_in("attacker");
    let home = api.library(&tv, "Victim's").await;
    let lib = api.library(&ta, "B").await;
    let a = api
        .call(
            Method::POST,
            &format!("/api/user/c/{lib}/o/0"),
            Some(&ta),
            &[
                ("uniqueId", "victim"),
                ("firstName", "Evil"),
                ("lastName", "Name"),
            ],
        )
        .await;
    assert_error(&a, 403);
    assert_eq!(own_names(&api, &tv, &home).await, unchanged(&victim));
    assert_eq!(
        entries_of(&api, &ta, &lib, &victim.id.to_string()).await,
        json!([]),
        "the refused call gave the victim no entry on B"
    );
}

async fn an_admin_cannot_rename_a_user_listed_on_their_library(b: Backend) {
    let api = ApiApp::start(b).await;
    let (victim, tv) = api.signed_in("victim");
    let (_, ta) = api.signed_in("attacker");
    let home = api.library(&tv, "Victim's").await;
    let lib = api.library(&ta, "B").await;
    for level in ["none", "view"] {
        let a = api
            .call(
                Method::PUT,
                &format!("/api/permission/c/{lib}/o/0"),
                Some(&ta),
                &[("uniqueId", "victim"), ("level", level)],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
        let a = api
            .call(
                Method::POST,
                &format!("/api/user/c/{lib}/o/{}", victim.id),
                Some(&ta),
                &[("firstName", "Evil")],
            )
            .await;
        assert_error(&a, 403);
        assert_eq!(
            own_names(&api, &tv, &home).await,
            unchanged(&victim),
            "listed with {level}"
        );
    }
}

async fn users_rename_themselves_and_org_admins_rename_anyone(b: Backend) {
    let api = ApiApp::start(b).await;
    let (victim, tv) = api.signed_in("victim");
    let home = api.library(&tv, "Victim's").await;
    let me = format!("/api/user/c/{home}/o/{}", victim.id);
    let a = api
        .call(Method::POST, &me, Some(&tv), &[("firstName", "New")])
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    assert_eq!(a.json, json!({"userId": victim.id.to_string()}));
    assert_eq!(
        own_names(&api, &tv, &home).await,
        ("New".to_owned(), "victim".to_owned())
    );
    let root = api.user("root", true);
    let tr = api.token(&root, "read write");
    let a = api
        .call(
            Method::POST,
            &me,
            Some(&tr),
            &[("firstName", "Given"), ("lastName", "ByRoot")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    assert_eq!(
        own_names(&api, &tv, &home).await,
        ("Given".to_owned(), "ByRoot".to_owned())
    );
}

async fn adding_by_unique_id_provisions_with_names_or_grants_view(b: Backend) {
    let api = ApiApp::start(b).await;
    let (victim, tv) = api.signed_in("victim");
    let (_, ta) = api.signed_in("attacker");
    let home = api.library(&tv, "Victim's").await;
    let lib = api.library(&ta, "B").await;
    let zero = format!("/api/user/c/{lib}/o/0");
    // A brand-new uniqueId is provisioned with the names given.
    let a = api
        .call(
            Method::POST,
            &zero,
            Some(&ta),
            &[
                ("uniqueId", "newcomer"),
                ("firstName", "X"),
                ("lastName", "Y"),
            ],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let id = a.json["userId"].as_str().unwrap().to_owned();
    assert_eq!(
        entries_of(&api, &ta, &lib, &id).await,
        json!([{"firstName": "X", "lastName": "Y", "userId": id, "uniqueId": "newcomer", "level": "view"}])
    );
    // An existing user without names: added with view, names untouched.
    let a = api
        .call(Method::POST, &zero, Some(&ta), &[("uniqueId", "victim")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_eq!(a.json, json!({"userId": victim.id.to_string()}));
    let e = entries_of(&api, &ta, &lib, &victim.id.to_string()).await;
    assert_eq!(e[0]["level"], "view", "{e}");
    assert_eq!(own_names(&api, &tv, &home).await, unchanged(&victim));
    assert_eq!(catalog(&api, Some(&tv), &lib).await.status, StatusCode::OK);
}

// ------------------------------------------------------------ hole 3: contribute

async fn contribute_answers_an_object_one_cannot_view_like_an_unknown_uuid(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let (_, tb) = api.signed_in("bob");
    let lib = api.library(&t, "L").await;
    let hidden = create(&api, &t, &lib, "video", "Private", false).await;
    // bob administers a library, so a leaking answer would not even be empty.
    api.library(&tb, "Bob's").await;
    let unknown = api
        .get(&format!("/api/contribute/o/{GHOST}"), Some(&tb))
        .await;
    assert_error(&unknown, 404);
    for o in [&hidden, &lib] {
        let a = api.get(&format!("/api/contribute/o/{o}"), Some(&tb)).await;
        assert_eq!(
            (a.status, &a.json),
            (unknown.status, &unknown.json),
            "{o}: no existence oracle"
        );
    }
}

async fn contribute_answers_200_for_an_object_the_caller_can_view(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let (bob, tb) = api.signed_in("bob");
    let lib = api.library(&t, "L").await;
    let o = create(&api, &t, &lib, "video", "Private", false).await;
    grant(&api, &t, &lib, &bob, "view").await;
    let bobs = api.library(&tb, "Bob's").await;
    let a = api.get(&format!("/api/contribute/o/{o}"), Some(&tb)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(
        a.json,
        json!([{"uuid": bobs, "title": "Bob's", "member": "false"}])
    );
}

// ------------------------------------------------------------ hole 4: headers

/// (what, status, headers) of a JSON 200, a JSON 404 under `/api/`, a 401, `/healthz` and a
/// permLink (`/w/{code}/`), on `api` whose base URL is `base`.
async fn sample_responses(api: &ApiApp, base: &str) -> Vec<(String, StatusCode, HeaderMap)> {
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let v = create(api, &t, &lib, "video", "V", true).await;
    let d = api
        .get(&format!("/api/describe/c/{lib}/o/{v}"), Some(&t))
        .await;
    let perm = d.json["permLink"].as_str().unwrap();
    let code_path = perm.strip_prefix(base).unwrap_or_else(|| panic!("{perm}"));
    let mut out = Vec::new();
    for (what, path, token) in [
        ("JSON 200", format!("/api/catalog/c/{lib}/o/0"), Some(&t)),
        ("JSON 404", "/api/nope".to_owned(), None),
        ("401", format!("/api/catalog/c/{lib}/o/0"), None),
        ("healthz", "/healthz".to_owned(), None),
        ("permLink", code_path.to_owned(), None),
    ] {
        let mut req = api.app.client.get(api.app.url(&path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.unwrap();
        out.push((
            format!("{what} {path}"),
            res.status(),
            res.headers().clone(),
        ));
    }
    let statuses: Vec<u16> = out.iter().map(|(_, s, _)| s.as_u16()).collect();
    assert_eq!(statuses, [200, 404, 401, 200, 302], "{out:?}");
    out
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).map(|v| v.to_str().unwrap())
}

async fn every_response_says_nosniff(b: Backend) {
    let api = ApiApp::start(b).await;
    let base = api.app.address.clone();
    let missing: Vec<String> = sample_responses(&api, &base)
        .await
        .into_iter()
        .filter(|(_, _, h)| header(h, "x-content-type-options") != Some("nosniff"))
        .map(|(what, _, _)| what)
        .collect();
    assert!(missing.is_empty(), "no `nosniff` on: {missing:?}");
}

async fn an_https_base_url_puts_hsts_on_every_response(b: Backend) {
    let base = "https://media.example.edu";
    let api = ApiApp::start_with(b, |l| l.set("base_url", base)).await;
    let missing: Vec<String> = sample_responses(&api, base)
        .await
        .into_iter()
        .filter(|(_, _, h)| header(h, "strict-transport-security") != Some("max-age=31536000"))
        .map(|(what, _, h)| format!("{what}: {:?}", header(&h, "strict-transport-security")))
        .collect();
    assert!(missing.is_empty(), "no HSTS on: {missing:?}");
}

async fn an_http_base_url_sends_no_hsts(b: Backend) {
    let api = ApiApp::start(b).await;
    let base = api.app.address.clone();
    let with: Vec<String> = sample_responses(&api, &base)
        .await
        .into_iter()
        .filter(|(_, _, h)| h.contains_key("strict-transport-security"))
        .map(|(what, _, _)| what)
        .collect();
    assert!(with.is_empty(), "HSTS over plain http on: {with:?}");
}

// ------------------------------------------------------------ hole 5: authentication first

/// Form fields of a request.
type Form = Vec<(&'static str, &'static str)>;

/// Calls whose path or body is wrong in some way; without valid credentials each is a 401.
fn judged_after_authentication(lib: &str, v: &str) -> Vec<(Method, String, Form)> {
    vec![
        (Method::GET, "/api/catalog/c/0/o/0/".into(), vec![]),
        (Method::GET, "/api/user/c/not-a-uuid/o/0".into(), vec![]),
        (Method::GET, "/api/permission/c/xyz/o/0".into(), vec![]),
        (Method::GET, "/api/info/c/xyz/o/xyz".into(), vec![]),
        (Method::GET, "/api/contribute/o/xyz".into(), vec![]),
        (
            Method::PUT,
            "/api/describe/c/xyz/o/0".into(),
            vec![("type", "video")],
        ),
        (
            Method::POST,
            format!("/api/describe/c/{lib}/o/{v}"),
            vec![("type", "video"), ("titel", "Typo")],
        ),
        (Method::PUT, "/api/catalog/c/xyz/o/xyz".into(), vec![]),
        (Method::GET, "/api/embed/c/xyz/o/xyz".into(), vec![]),
        (Method::GET, "/api/video/c/xyz/o/xyz".into(), vec![]),
    ]
}

/// Sends each call of [`judged_after_authentication`] with `token`; lists those whose answer
/// is not a 401 with `message` and `WWW-Authenticate` as given.
async fn not_401(api: &ApiApp, token: Option<&str>, message: &str, challenge: &str) -> Vec<String> {
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let v = api.object(&t, &lib, "video", "V").await;
    let mut wrong = Vec::new();
    for (method, path, form) in judged_after_authentication(&lib, &v) {
        let a = api.call(method.clone(), &path, token, &form).await;
        let ok = a.status == StatusCode::UNAUTHORIZED
            && a.json == json!({"message": message})
            && header(&a.headers, "www-authenticate") == Some(challenge);
        if !ok {
            wrong.push(format!(
                "{method} {path} {form:?} -> {} {} www-authenticate={:?}",
                a.status,
                a.json,
                header(&a.headers, "www-authenticate")
            ));
        }
    }
    // Nothing was created or changed by the calls above.
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{v}"), Some(&t))
        .await;
    assert_eq!(a.json["title"], "V", "{a:?}");
    assert_eq!(listed(&catalog(api, Some(&t), &lib).await), vec![v]);
    wrong
}

async fn without_a_token_every_private_call_is_401_whatever_its_input(b: Backend) {
    let api = ApiApp::start(b).await;
    let wrong = not_401(&api, None, "authentication required", "Bearer").await;
    assert!(wrong.is_empty(), "not a plain 401:\n{}", wrong.join("\n"));
}

async fn with_an_invalid_token_every_private_call_is_401_whatever_its_input(b: Backend) {
    let api = ApiApp::start(b).await;
    let wrong = not_401(
        &api,
        Some("mla_bogus"),
        "invalid or expired credentials",
        r#"Bearer error="invalid_token""#,
    )
    .await;
    assert!(
        wrong.is_empty(),
        "not a 401 invalid_token:\n{}",
        wrong.join("\n")
    );
}

async fn public_reads_authenticate_and_options_stay_open_without_a_token(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let v = create(&api, &t, &lib, "video", "Open", true).await;
    let a = api.get(&format!("/api/describe/c/{lib}/o/{v}"), None).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(keys(&a.json), LIMITED_RECORD);
    assert_eq!(a.json["authenticated"], "false");
    assert_eq!(a.json["title"], "Open");
    for token in [None, Some("mla_bogus")] {
        let a = api.get("/api/authenticate", token).await;
        assert_eq!(a.status, StatusCode::OK, "{token:?}: {a:?}");
        assert_eq!(a.json["authenticated"], "false", "{a:?}");
    }
    for path in [
        format!("/api/catalog/c/{lib}/o/0"),
        format!("/api/describe/c/{lib}/o/{v}"),
        format!("/api/permission/c/{lib}/o/0"),
    ] {
        let a = api.call(Method::OPTIONS, &path, None, &[]).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {a:?}");
        assert_eq!(a.json["authenticated"], "false");
    }
}

// ------------------------------------------------------------ hole 6: unknown fields

fn assert_unknown_field(a: &Answer, field: &str) {
    assert_error(a, 400);
    assert_eq!(
        a.json["message"],
        format!("unknown field: {field}"),
        "{a:?}"
    );
}

async fn a_describe_put_with_a_misspelt_field_is_400_and_creates_nothing(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let a = api
        .call(
            Method::PUT,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(&t),
            &[("type", "video"), ("titel", "Intro")],
        )
        .await;
    assert_unknown_field(&a, "titel");
    assert_eq!(
        listed(&catalog(&api, Some(&t), &lib).await),
        Vec::<String>::new()
    );
}

async fn misspelt_fields_on_describe_post_permission_and_user_are_400(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let bob = api.user("bob", false);
    let lib = api.library(&t, "L").await;
    let v = api.object(&t, &lib, "video", "V").await;

    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{v}"),
            Some(&t),
            &[
                ("type", "video"),
                ("title", "Changed"),
                ("descripton", "Typo"),
            ],
        )
        .await;
    assert_unknown_field(&a, "descripton");
    let d = api
        .get(&format!("/api/describe/c/{lib}/o/{v}"), Some(&t))
        .await;
    assert_eq!(
        (d.json["title"].as_str(), d.json["description"].as_str()),
        (Some("V"), Some(""))
    );

    let a = api
        .call(
            Method::PUT,
            &format!("/api/permission/c/{lib}/o/{}", bob.id),
            Some(&t),
            &[("levl", "view")],
        )
        .await;
    assert_unknown_field(&a, "levl");
    assert_eq!(
        entries_of(&api, &t, &lib, &bob.id.to_string()).await,
        json!([])
    );

    let a = api
        .call(
            Method::POST,
            &format!("/api/user/c/{lib}/o/{}", alice.id),
            Some(&t),
            &[("firstname", "Alicia")],
        )
        .await;
    assert_unknown_field(&a, "firstname");
    assert_eq!(own_names(&api, &t, &lib).await, unchanged(&alice));
}

async fn method_overrides_and_properties_are_known_fields(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let bob = api.user("bob", false);
    let lib = api.library(&t, "L").await;
    let zero = format!("/api/describe/c/{lib}/o/0");
    let a = api
        .call(
            Method::PUT,
            &zero,
            Some(&t),
            &[
                ("type", "video"),
                ("title", "Red"),
                ("properties[color]", "red"),
            ],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let red = a.json["uuid"].as_str().unwrap().to_owned();
    let a = api
        .call(
            Method::POST,
            &zero,
            Some(&t),
            &[
                ("_METHOD", "PUT"),
                ("type", "video"),
                ("title", "Via override"),
                ("properties[color]", "red"),
            ],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{red}"),
            Some(&t),
            &[("type", "video"), ("properties[color]", "blue")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    let d = api
        .get(&format!("/api/describe/c/{lib}/o/{red}"), Some(&t))
        .await;
    assert_eq!(d.json["properties"], json!({"color": "blue"}));
    assert_eq!(listed(&catalog(&api, Some(&t), &lib).await).len(), 2);
    let a = api
        .call(
            Method::POST,
            &format!("/api/permission/c/{lib}/o/{}", bob.id),
            Some(&t),
            &[("_METHOD", "PUT"), ("level", "view")],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_eq!(
        entries_of(&api, &t, &lib, &bob.id.to_string()).await[0]["level"],
        "view"
    );
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    a_viewer_cannot_link_a_sub_library_into_a_library_of_their_own,
    a_viewer_cannot_reshare_media_into_a_library_of_their_own_nor_edit_it_there,
    a_viewer_cannot_place_the_library_under_one_they_administer,
    removing_a_viewer_removes_every_path_they_had,
    admins_of_both_sides_and_org_admins_can_link,
    linking_an_object_one_cannot_see_is_a_404_like_an_unknown_uuid,
    an_admin_cannot_rename_an_existing_user_by_adding_them_by_unique_id,
    an_admin_cannot_rename_a_user_listed_on_their_library,
    users_rename_themselves_and_org_admins_rename_anyone,
    adding_by_unique_id_provisions_with_names_or_grants_view,
    contribute_answers_an_object_one_cannot_view_like_an_unknown_uuid,
    contribute_answers_200_for_an_object_the_caller_can_view,
    every_response_says_nosniff,
    an_https_base_url_puts_hsts_on_every_response,
    an_http_base_url_sends_no_hsts,
    without_a_token_every_private_call_is_401_whatever_its_input,
    with_an_invalid_token_every_private_call_is_401_whatever_its_input,
    public_reads_authenticate_and_options_stay_open_without_a_token,
    a_describe_put_with_a_misspelt_field_is_400_and_creates_nothing,
    misspelt_fields_on_describe_post_permission_and_user_are_400,
    method_overrides_and_properties_are_known_fields,
);
