//! `catalog` over HTTP: listing (order, `ts` sync, `completeRecords`, sub-catalogs),
//! adding and removing memberships, and who may do what.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use medialib_domain::{ObjectId, PermissionLevel, User};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{
    Answer, ApiApp, Backend, COMPLETE_RECORD as COMPLETE, LIMITED_RECORD as LIMITED, assert_error,
    keys,
};

const GHOST: &str = "0123456789abcdef0123456789abcdef";

fn list(a: &Answer) -> &Vec<Value> {
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json["list"].as_array().unwrap()
}

fn uuids(a: &Answer) -> Vec<String> {
    list(a)
        .iter()
        .map(|r| r["uuid"].as_str().unwrap().to_owned())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn id(uuid: &str) -> ObjectId {
    ObjectId::parse(uuid).unwrap()
}

fn grant(api: &ApiApp, admin: &User, collection: &str, user: &User, level: PermissionLevel) {
    api.services
        .people()
        .grant_permission(
            &admin.as_caller(),
            id(collection),
            medialib_ports::services::people::Grantee::Id(user.id),
            level,
        )
        .unwrap();
}

/// Sleeps until just after the wall clock (the server's clock too) starts a new second.
async fn start_of_a_second() {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let into = now.subsec_millis();
    tokio::time::sleep(Duration::from_millis(u64::from(1010 - into))).await;
}

async fn put(api: &ApiApp, token: &str, path: &str) -> Answer {
    api.call(Method::PUT, path, Some(token), &[]).await
}

async fn listing_is_most_recently_modified_first_ties_by_uuid(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let empty = api
        .get(&format!("/api/catalog/c/{lib}/o/0"), Some(&t))
        .await;
    assert_eq!(
        empty.json,
        serde_json::json!({"ts": empty.json["ts"], "list": []})
    );
    assert!(empty.json["ts"].is_i64());

    let mut made = Vec::new();
    for kind in ["video", "audio", "file", "image"] {
        made.push(api.object(&t, &lib, kind, kind).await);
    }
    start_of_a_second().await;
    let touched = made[2].clone();
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{touched}"),
            Some(&t),
            &[("type", "file"), ("title", "changed")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");

    let a = api
        .get(&format!("/api/catalog/c/{lib}/o/0/"), Some(&t))
        .await;
    let records = list(&a);
    assert_eq!(records.len(), 4);
    assert_eq!(
        records[0]["uuid"],
        touched.as_str(),
        "the latest change comes first"
    );
    for r in records {
        assert_eq!(
            keys(r),
            COMPLETE,
            "without completeRecords all are complete"
        );
        assert_eq!(r["authenticated"], "true");
    }
    // The order is (modified descending, uuid ascending); the untouched three were
    // created within a second or two, so they tie on `modified` and go by uuid.
    let order: Vec<(i64, String)> = records
        .iter()
        .map(|r| {
            (
                -r["modified"].as_i64().unwrap(),
                r["uuid"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut expected = order.clone();
    expected.sort();
    assert_eq!(order, expected);
    let rest: Vec<String> = order[1..].iter().map(|(_, u)| u.clone()).collect();
    if order[1..].iter().all(|(m, _)| *m == order[1].0) {
        assert_eq!(rest, sorted(rest.clone()), "ties are broken by uuid");
    }

    // The short form and c/{C}/o/{C} list the same.
    let all = uuids(&a);
    for path in [
        format!("/api/catalog/o/{lib}"),
        format!("/api/catalog/c/{lib}/o/{lib}"),
    ] {
        assert_eq!(uuids(&api.get(&path, Some(&t)).await), all, "{path}");
    }
    // HEAD is GET without a body.
    let head = api
        .call(
            Method::HEAD,
            &format!("/api/catalog/o/{lib}"),
            Some(&t),
            &[],
        )
        .await;
    assert_eq!((head.status, head.json), (StatusCode::OK, Value::Null));
}

async fn ts_lets_a_client_sync_without_missing_a_change(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let other = api.library(&t, "M").await;
    let untouched = api.object(&t, &lib, "video", "old").await;
    let updated = api.object(&t, &lib, "video", "to update").await;
    let moved_in = api.object(&t, &other, "audio", "from M").await;
    let path = format!("/api/catalog/c/{lib}/o/0");

    // Everything above is at least a second older than the first listing, which
    // happens at the very start of a second so that the changes below fall into
    // that same second.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    start_of_a_second().await;
    let first = api.get(&path, Some(&t)).await;
    let ts = first.json["ts"].as_i64().unwrap();
    assert_eq!(list(&first).len(), 2);
    for r in list(&first) {
        assert!(r["modified"].as_i64().unwrap() < ts, "{r}");
    }

    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{updated}"),
            Some(&t),
            &[("type", "video"), ("title", "updated")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let created = api.object(&t, &lib, "file", "new").await;
    assert_eq!(
        put(&api, &t, &format!("/api/catalog/c/{lib}/o/{moved_in}"))
            .await
            .status,
        StatusCode::CREATED
    );

    let second = api.get(&format!("{path}?ts={ts}"), Some(&t)).await;
    assert_eq!(
        sorted(uuids(&second)),
        sorted(vec![updated.clone(), created.clone(), moved_in.clone()]),
        "the update, the creation and the membership addition; not {untouched}"
    );
    let new_one = list(&second)
        .iter()
        .find(|r| r["uuid"] == created.as_str())
        .unwrap();
    let same_second = new_one["created"].as_i64() == Some(ts);
    eprintln!("changes fell into the same second as the previous ts: {same_second}");
    assert!(second.json["ts"].as_i64().unwrap() >= ts);
    // The older member joined M before `ts`, but its membership in L is new: it is
    // listed by L's sync, and not by M's.
    let m = api
        .get(&format!("/api/catalog/c/{other}/o/0?ts={ts}"), Some(&t))
        .await;
    assert_eq!(uuids(&m), Vec::<String>::new());

    for bad in ["0", "-1", "abc", "1.5", "", "+5"] {
        let a = api.get(&format!("{path}?ts={bad}"), Some(&t)).await;
        assert_error(&a, 400);
        assert!(a.json["message"].as_str().unwrap().contains("ts"), "{a:?}");
    }
}

async fn complete_records_makes_the_first_n_complete(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    for kind in ["video", "audio", "catalog"] {
        api.object(&t, &lib, kind, kind).await;
    }
    let path = format!("/api/catalog/c/{lib}/o/0");
    let a = api
        .get(&format!("{path}?completeRecords=1"), Some(&t))
        .await;
    let records = list(&a);
    assert_eq!(records.len(), 3);
    assert_eq!(keys(&records[0]), COMPLETE);
    assert_eq!(keys(&records[1]), LIMITED);
    assert_eq!(keys(&records[2]), LIMITED);
    assert!(records.iter().all(|r| r["authenticated"] == "true"));
    // Same order whatever the field sets.
    let all = uuids(&api.get(&path, Some(&t)).await);
    assert_eq!(uuids(&a), all);

    for (n, complete) in [("0", 0), ("2", 2), ("3", 3), ("500", 3)] {
        let a = api
            .get(&format!("{path}?completeRecords={n}"), Some(&t))
            .await;
        let full = list(&a).iter().filter(|r| keys(r) == COMPLETE).count();
        assert_eq!(full, complete, "completeRecords={n}");
    }
    for bad in ["-1", "abc", "1.5", ""] {
        assert_error(
            &api.get(&format!("{path}?completeRecords={bad}"), Some(&t))
                .await,
            400,
        );
    }
}

async fn sub_catalogs_are_listed_through_their_parent(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let sub = api.object(&t, &lib, "catalog", "S").await;
    let inner = api.object(&t, &sub, "video", "in S").await;
    let video = api.object(&t, &lib, "video", "in L").await;

    let a = api
        .get(&format!("/api/catalog/c/{lib}/o/{sub}"), Some(&t))
        .await;
    assert_eq!(uuids(&a), vec![inner.clone()]);
    assert_eq!(keys(&list(&a)[0]), COMPLETE);
    let a = api
        .get(&format!("/api/catalog/c/{lib}/o/0"), Some(&t))
        .await;
    assert_eq!(sorted(uuids(&a)), sorted(vec![sub.clone(), video.clone()]));

    // A viewer of L lists S through L, with their level on S (inherited: view).
    let (bob, tb) = api.signed_in("bob");
    grant(&api, &alice, &lib, &bob, PermissionLevel::View);
    let a = api
        .get(&format!("/api/catalog/c/{lib}/o/{sub}"), Some(&tb))
        .await;
    assert_eq!(uuids(&a), vec![inner.clone()]);
    // An explicit `none` on S overrides what L gives: S is not listed, L still is.
    grant(&api, &alice, &sub, &bob, PermissionLevel::None);
    assert_error(
        &api.get(&format!("/api/catalog/c/{lib}/o/{sub}"), Some(&tb))
            .await,
        403,
    );
    assert_eq!(
        api.get(&format!("/api/catalog/o/{lib}"), Some(&tb))
            .await
            .status,
        StatusCode::OK
    );
    // Access to S alone does not open the path through L (view on C is needed),
    // but S lists directly.
    let (carol, tc) = api.signed_in("carol");
    grant(&api, &alice, &sub, &carol, PermissionLevel::View);
    assert_error(
        &api.get(&format!("/api/catalog/c/{lib}/o/{sub}"), Some(&tc))
            .await,
        403,
    );
    assert_eq!(
        uuids(&api.get(&format!("/api/catalog/o/{sub}"), Some(&tc)).await),
        vec![inner.clone()]
    );

    // A non-catalog member is a 400; a catalog that is not a member, or nothing, a 404.
    let a = api
        .get(&format!("/api/catalog/c/{lib}/o/{video}"), Some(&t))
        .await;
    assert_error(&a, 400);
    assert!(
        a.json["message"]
            .as_str()
            .unwrap()
            .contains("not a collection")
    );
    let other = api.library(&t, "M").await;
    assert_error(
        &api.get(&format!("/api/catalog/c/{other}/o/{sub}"), Some(&t))
            .await,
        404,
    );
    assert_error(
        &api.get(&format!("/api/catalog/c/{lib}/o/{GHOST}"), Some(&t))
            .await,
        404,
    );
    assert_error(
        &api.get(&format!("/api/catalog/c/{lib}/o/{inner}"), Some(&t))
            .await,
        404,
    );
    // Listing a non-catalog directly is a 400 too.
    assert_error(
        &api.get(&format!("/api/catalog/o/{video}"), Some(&t)).await,
        400,
    );
}

/// Walks a listing page by page (`limit`, then `after` = each `next`); the pages in order.
async fn walk(api: &ApiApp, token: &str, path: &str, limit: usize) -> Vec<Answer> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut pages: Vec<Answer> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let url = match &after {
            None => format!("{path}{sep}limit={limit}"),
            Some(c) => format!("{path}{sep}limit={limit}&after={c}"),
        };
        let a = api.get(&url, Some(token)).await;
        assert!(list(&a).len() <= limit, "{url}: {a:?}");
        after = a.json.get("next").map(|n| n.as_str().unwrap().to_owned());
        pages.push(a);
        assert!(pages.len() <= 100, "the walk does not end");
        if after.is_none() {
            return pages;
        }
    }
}

/// Every uuid of a walk, in order.
fn walked(pages: &[Answer]) -> Vec<String> {
    pages.iter().flat_map(uuids).collect()
}

async fn pages_walk_exactly_the_unpaged_listing(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let sub = api.object(&t, &lib, "catalog", "S").await;
    // Members in at least two different seconds, several of them tying on `modified`
    // (the cursor's uuid then decides where the next page starts).
    for n in 0..3 {
        api.object(&t, &lib, "video", &format!("early {n}")).await;
        api.object(&t, &sub, "audio", &format!("in S {n}")).await;
    }
    start_of_a_second().await;
    for n in 0..3 {
        api.object(&t, &lib, "file", &format!("late {n}")).await;
    }
    let path = format!("/api/catalog/c/{lib}/o/0");
    let all = uuids(&api.get(&path, Some(&t)).await);
    assert_eq!(all.len(), 7);

    for limit in [1, 2, 3, 6, 7, 8, 1000] {
        let pages = walk(&api, &t, &path, limit).await;
        assert_eq!(walked(&pages), all, "limit={limit}");
        assert_eq!(
            pages.len(),
            all.len().div_ceil(limit).max(1),
            "limit={limit}"
        );
        for (i, p) in pages.iter().enumerate() {
            let last = i + 1 == pages.len();
            assert_eq!(
                p.json.get("next").is_some(),
                !last,
                "limit={limit} page {i}"
            );
            if !last {
                assert_eq!(list(p).len(), limit, "only the last page is short");
                // The cursor needs no escaping in a query string.
                let next = p.json["next"].as_str().unwrap();
                assert!(
                    next.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-'),
                    "{next}"
                );
            }
            assert!(p.json["ts"].is_i64(), "every page has its ts");
        }
    }
    // Both paths and the sub-catalog page the same way.
    assert_eq!(
        walked(&walk(&api, &t, &format!("/api/catalog/o/{lib}"), 2).await),
        all
    );
    let sub_path = format!("/api/catalog/c/{lib}/o/{sub}");
    let in_sub = uuids(&api.get(&sub_path, Some(&t)).await);
    assert_eq!(in_sub.len(), 3);
    let pages = walk(&api, &t, &sub_path, 2).await;
    assert_eq!(pages.len(), 2);
    assert_eq!(walked(&pages), in_sub);
    // An empty collection is one page without `next`.
    let empty = api.library(&t, "E").await;
    let pages = walk(&api, &t, &format!("/api/catalog/o/{empty}"), 5).await;
    assert_eq!(pages.len(), 1);
    assert!(list(&pages[0]).is_empty());
    // Without `limit` the answer has no `next`, however many members.
    assert!(api.get(&path, Some(&t)).await.json.get("next").is_none());
}

async fn page_parameters_are_checked(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let first = api.object(&t, &lib, "video", "v").await;
    let path = format!("/api/catalog/c/{lib}/o/0");
    for bad in [
        "0",
        "1001",
        "-1",
        "+1",
        "1.5",
        "abc",
        "",
        "99999999999999999999",
        "1e2",
    ] {
        let a = api.get(&format!("{path}?limit={bad}"), Some(&t)).await;
        assert_error(&a, 400);
        assert!(
            a.json["message"].as_str().unwrap().contains("limit"),
            "limit={bad}: {a:?}"
        );
    }
    for good in ["1", "1000", "0001"] {
        let a = api.get(&format!("{path}?limit={good}"), Some(&t)).await;
        assert_eq!(uuids(&a), vec![first.clone()], "limit={good}");
    }
    let uuid_only = first.replace('-', "");
    for bad in [
        "x",
        "",
        "1.",
        ".",
        "-1.0123456789abcdef0123456789abcdef",
        "1.0123456789abcdef",
        "1.zz23456789abcdef0123456789abcdef",
        "1.2.0123456789abcdef0123456789abcdef",
        "99999999999999999999.0123456789abcdef0123456789abcdef",
        &uuid_only,
    ] {
        let a = api
            .get(&format!("{path}?limit=5&after={bad}"), Some(&t))
            .await;
        assert_error(&a, 400);
        assert!(
            a.json["message"].as_str().unwrap().contains("after"),
            "after={bad}: {a:?}"
        );
    }
    // A well-formed cursor is accepted whether or not it names a member: it is a position.
    let a = api
        .get(
            &format!("{path}?limit=5&after=1.0123456789abcdef0123456789abcdef"),
            Some(&t),
        )
        .await;
    assert_eq!(
        uuids(&a),
        Vec::<String>::new(),
        "everything is newer than 1970"
    );
    let a = api
        .get(
            &format!("{path}?limit=5&after=9999999999.{GHOST}"),
            Some(&t),
        )
        .await;
    assert_eq!(uuids(&a), vec![first.clone()]);
    // `after` alone is refused: a cursor does not say how many to list.
    let a = api
        .get(&format!("{path}?after=9999999999.{GHOST}"), Some(&t))
        .await;
    assert_error(&a, 400);
    assert_eq!(
        a.json["message"].as_str().unwrap(),
        "after needs limit: pass the same limit with the cursor",
        "{a:?}"
    );
}

async fn paging_combines_with_ts_and_complete_records(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    for n in 0..3 {
        api.object(&t, &lib, "video", &format!("old {n}")).await;
    }
    let path = format!("/api/catalog/c/{lib}/o/0");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    start_of_a_second().await;
    // An incremental walk: keep the first page's `ts` for the next sync.
    let first_walk = walk(&api, &t, &path, 2).await;
    assert_eq!(walked(&first_walk).len(), 3);
    let ts = first_walk[0].json["ts"].as_i64().unwrap();
    let mut changed = Vec::new();
    for n in 0..4 {
        changed.push(api.object(&t, &lib, "audio", &format!("new {n}")).await);
    }
    let since = format!("{path}?ts={ts}");
    let unpaged = uuids(&api.get(&since, Some(&t)).await);
    assert_eq!(sorted(unpaged.clone()), sorted(changed.clone()));
    for limit in [1, 3, 4] {
        assert_eq!(
            walked(&walk(&api, &t, &since, limit).await),
            unpaged,
            "limit={limit}"
        );
    }

    // completeRecords counts from the start of each page.
    let pages = walk(&api, &t, &format!("{path}?completeRecords=1"), 3).await;
    assert_eq!(pages.len(), 3);
    for p in &pages {
        let records = list(p);
        assert_eq!(keys(&records[0]), COMPLETE);
        for r in &records[1..] {
            assert_eq!(keys(r), LIMITED);
        }
    }
    let pages = walk(&api, &t, &format!("{path}?completeRecords=0"), 3).await;
    assert!(pages.iter().flat_map(list).all(|r| keys(r) == LIMITED));
}

async fn a_member_changed_during_a_walk_is_listed_once(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    for n in 0..5 {
        api.object(&t, &lib, "video", &format!("v{n}")).await;
    }
    let path = format!("/api/catalog/c/{lib}/o/0");
    let before = uuids(&api.get(&path, Some(&t)).await);
    // Changes after this are at least a second newer than every member.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    start_of_a_second().await;

    let first = api.get(&format!("{path}?limit=2"), Some(&t)).await;
    let ts = first.json["ts"].as_i64().unwrap();
    let mut seen = uuids(&first);
    assert_eq!(seen, before[..2]);
    // The last member (not listed yet) changes and becomes the first of the order: an
    // offset-based page 2 would list a member of page 1 again.
    let moved = before[4].clone();
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{moved}"),
            Some(&t),
            &[("type", "video"), ("title", "changed during the walk")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    // And a listed one changes too: it is not listed again in this walk.
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{}", before[0]),
            Some(&t),
            &[("type", "video"), ("title", "changed after page 1")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    let mut next = first.json["next"].as_str().unwrap().to_owned();
    loop {
        let a = api
            .get(&format!("{path}?limit=2&after={next}"), Some(&t))
            .await;
        seen.extend(uuids(&a));
        match a.json.get("next") {
            Some(n) => next = n.as_str().unwrap().to_owned(),
            None => break,
        }
    }
    assert_eq!(
        seen.len(),
        sorted(seen.clone())
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        "no member twice: {seen:?}"
    );
    assert_eq!(
        seen,
        [&before[..4]].concat(),
        "the moved member went ahead of the cursor"
    );
    // The next incremental listing, from the first page's ts, catches both changes.
    let sync = api.get(&format!("{path}?ts={ts}"), Some(&t)).await;
    assert_eq!(sorted(uuids(&sync)), sorted(vec![moved, before[0].clone()]));
}

async fn adding_is_idempotent_and_cycles_conflict(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let other = api.library(&t, "M").await;
    let video = api.object(&t, &lib, "video", "V").await;
    let path = format!("/api/catalog/c/{other}/o/{video}");

    for method in [Method::PUT, Method::PUT, Method::POST] {
        let a = api.call(method.clone(), &path, Some(&t), &[]).await;
        assert_eq!(a.status, StatusCode::CREATED, "{method}: {a:?}");
        assert_eq!(a.json, Value::Null, "no body");
    }
    // A POST with `_METHOD=PUT` is a PUT.
    let a = api
        .call(Method::POST, &path, Some(&t), &[("_METHOD", "PUT")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let a = api.get(&format!("/api/catalog/o/{other}"), Some(&t)).await;
    assert_eq!(uuids(&a), vec![video.clone()], "listed once");
    assert_eq!(
        api.get(&format!("/api/describe/c/{other}/o/{video}"), Some(&t))
            .await
            .status,
        StatusCode::OK
    );

    // Cycles: a collection into itself or into its descendant.
    let sub = api.object(&t, &lib, "catalog", "S").await;
    for (c, o) in [(&sub, &lib), (&lib, &lib), (&sub, &sub)] {
        let a = put(&api, &t, &format!("/api/catalog/c/{c}/o/{o}")).await;
        assert_error(&a, 409);
    }
    // A sub-catalog may sit in a second library.
    assert_eq!(
        put(&api, &t, &format!("/api/catalog/c/{other}/o/{sub}"))
            .await
            .status,
        StatusCode::CREATED
    );
    // Unknown ids, and o/0.
    assert_error(
        &put(&api, &t, &format!("/api/catalog/c/{other}/o/{GHOST}")).await,
        404,
    );
    assert_error(
        &put(&api, &t, &format!("/api/catalog/c/{GHOST}/o/{video}")).await,
        404,
    );
    assert_error(
        &put(&api, &t, &format!("/api/catalog/c/{other}/o/0")).await,
        400,
    );
    // The short form only lists.
    let a = put(&api, &t, &format!("/api/catalog/o/{other}")).await;
    assert_error(&a, 501);
    assert_eq!(a.headers["allow"], "GET, HEAD, OPTIONS");
}

async fn removing_the_last_membership_deletes_the_object(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let other = api.library(&t, "M").await;
    let video = api.object(&t, &lib, "video", "V").await;
    put(&api, &t, &format!("/api/catalog/c/{other}/o/{video}")).await;

    let from_other = format!("/api/catalog/c/{other}/o/{video}");
    let a = api.call(Method::DELETE, &from_other, Some(&t), &[]).await;
    assert_eq!((a.status, a.json), (StatusCode::OK, Value::Null));
    assert_error(
        &api.call(Method::DELETE, &from_other, Some(&t), &[]).await,
        404,
    );
    assert!(uuids(&api.get(&format!("/api/catalog/o/{other}"), Some(&t)).await).is_empty());
    let describe = format!("/api/describe/c/{lib}/o/{video}");
    assert_eq!(api.get(&describe, Some(&t)).await.status, StatusCode::OK);

    // The last membership, removed through the method-override header.
    let req = api
        .app
        .client
        .post(api.app.url(&format!("/api/catalog/c/{lib}/o/{video}")))
        .bearer_auth(&t)
        .header("X-HTTP-Method-Override", "DELETE");
    assert_eq!(api.send(req).await.status, StatusCode::OK);
    assert_error(&api.get(&describe, Some(&t)).await, 404);
    assert!(uuids(&api.get(&format!("/api/catalog/o/{lib}"), Some(&t)).await).is_empty());
    // It cannot be added back by uuid while it is deleted.
    assert_error(&put(&api, &t, &from_other).await, 404);
}

async fn who_may_list_add_and_remove(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let other = api.library(&t, "M").await;
    let video = api.object(&t, &lib, "video", "V").await;
    let elsewhere = api.object(&t, &other, "video", "W").await;
    let list_path = format!("/api/catalog/c/{lib}/o/0");
    let member = format!("/api/catalog/c/{lib}/o/{video}");

    // No token.
    let a = api.get(&list_path, None).await;
    assert_error(&a, 401);
    assert_eq!(a.headers["www-authenticate"], "Bearer");
    assert_error(&api.call(Method::PUT, &member, None, &[]).await, 401);
    assert_error(&api.call(Method::DELETE, &member, None, &[]).await, 401);

    // A viewer lists but does not write.
    let (bob, tb) = api.signed_in("bob");
    grant(&api, &alice, &lib, &bob, PermissionLevel::View);
    assert_eq!(api.get(&list_path, Some(&tb)).await.status, StatusCode::OK);
    assert_error(
        &api.call(
            Method::PUT,
            &format!("/api/catalog/c/{lib}/o/{elsewhere}"),
            Some(&tb),
            &[],
        )
        .await,
        403,
    );
    assert_error(
        &api.call(Method::DELETE, &member, Some(&tb), &[]).await,
        403,
    );

    // A read-only token does not write, even for an admin.
    let read_only = api.token(&alice, "read");
    assert_error(
        &api.call(Method::DELETE, &member, Some(&read_only), &[])
            .await,
        403,
    );
    assert_eq!(
        api.get(&list_path, Some(&read_only)).await.status,
        StatusCode::OK
    );

    // Someone without access.
    let (_, tm) = api.signed_in("mallory");
    assert_error(&api.get(&list_path, Some(&tm)).await, 403);
    assert_error(
        &api.call(Method::DELETE, &member, Some(&tm), &[]).await,
        403,
    );
    // ... cannot add an object they cannot see into a library of their own: it is refused
    // exactly as an unknown uuid (DECISIONS.md §3, no existence oracle).
    let own = api.library(&tm, "Mine").await;
    let hidden = put(&api, &tm, &format!("/api/catalog/c/{own}/o/{video}")).await;
    let unknown = put(&api, &tm, &format!("/api/catalog/c/{own}/o/{GHOST}")).await;
    assert_error(&hidden, 404);
    assert_eq!(
        (hidden.status, &hidden.json),
        (unknown.status, &unknown.json)
    );

    // An object that is not in that collection.
    assert_error(
        &api.call(
            Method::DELETE,
            &format!("/api/catalog/c/{lib}/o/{elsewhere}"),
            Some(&t),
            &[],
        )
        .await,
        404,
    );
    assert_error(
        &api.get(&format!("/api/catalog/c/{lib}/o/{elsewhere}"), Some(&t))
            .await,
        404,
    );
    assert_error(
        &api.get(&format!("/api/catalog/o/{GHOST}"), Some(&t)).await,
        404,
    );
    assert_error(&api.get("/api/catalog/o/0", Some(&t)).await, 400);
    assert_error(&api.get("/api/catalog/c/nope/o/0", Some(&t)).await, 400);

    // OPTIONS tells who may proceed with the writes.
    let a = api.call(Method::OPTIONS, &member, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.headers["allow"], "GET, HEAD, PUT, POST, DELETE, OPTIONS");
    assert_eq!(a.json["proceed"], "true");
    let a = api.call(Method::OPTIONS, &member, Some(&tb), &[]).await;
    assert_eq!(
        (a.json["authenticated"].as_str(), a.json["proceed"].as_str()),
        (Some("true"), Some("false"))
    );
    let a = api.call(Method::PATCH, &member, Some(&t), &[]).await;
    assert_error(&a, 501);
    assert_eq!(a.headers["allow"], "GET, HEAD, PUT, POST, DELETE, OPTIONS");
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    listing_is_most_recently_modified_first_ties_by_uuid,
    ts_lets_a_client_sync_without_missing_a_change,
    complete_records_makes_the_first_n_complete,
    sub_catalogs_are_listed_through_their_parent,
    adding_is_idempotent_and_cycles_conflict,
    removing_the_last_membership_deletes_the_object,
    who_may_list_add_and_remove,
    pages_walk_exactly_the_unpaged_listing,
    page_parameters_are_checked,
    paging_combines_with_ts_and_complete_records,
    a_member_changed_during_a_walk_is_listed_once,
);
