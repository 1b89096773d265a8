//! Crash (issue 8): `kill -9` of `medialib serve` while [`WRITERS`] clients write at once
//! (creates, updates, membership adds and removals, deletions by removing the last membership,
//! permission grants), then a restart on the same database, [`CYCLES`] × `soak_scale()` times,
//! on SQLite and on PostgreSQL.
//!
//! Each writer owns a library and a sub-library and writes one request at a time, so its model
//! of what the database must hold is exact: every acknowledged write (201/202/200, answer read
//! in full) is in it. The one request a writer had in flight at the kill may or may not have
//! happened, but whole. After each restart the test reads every writer's library, sub-library
//! and permission list through the API and requires them to equal the model, or the model with
//! the in-flight write applied; then it asks the database directly that nothing half-written is
//! there (an object without its membership or properties, a membership of a missing or deleted
//! object, a deletion without its origin).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::soak_scale;
use crate::api::{ApiApp, Backend};
use crate::helpers::ServeProcess;

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    acknowledged_writes_survive_kill_9_and_nothing_is_half_written,
);

/// Concurrent writers.
const WRITERS: usize = 4;
/// Kill/restart cycles in the CI form (times `soak_scale()`).
const CYCLES: usize = 2;
/// The kill comes once the writers have this many writes acknowledged in the cycle...
const MIN_ACKED: usize = 20;
/// ...and then after a random delay in this range.
const KILL_DELAY_MS: std::ops::Range<u64> = 0..1000;

/// An object as the API shows it (and as the model expects it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Obj {
    title: String,
    description: String,
    public: bool,
    duration: Option<u64>,
    properties: BTreeMap<String, String>,
    in_sub: bool,
}

/// What a writer's library holds: its objects by uuid and its permission entries by uniqueId
/// (the writer's own admin entry left out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct State {
    objects: BTreeMap<String, Obj>,
    levels: BTreeMap<String, String>,
}

/// One write.
#[derive(Debug, Clone)]
enum Op {
    /// describe PUT `c/LIB/o/0`.
    Create(Obj),
    /// describe POST `c/LIB/o/UUID` (title, description, public, `properties[rev]`).
    Update { uuid: String, new: Obj },
    /// catalog PUT `c/SUB/o/UUID`.
    AddToSub(String),
    /// catalog DELETE `c/SUB/o/UUID`.
    RemoveFromSub(String),
    /// catalog DELETE `c/LIB/o/UUID` of an object in no other collection: a soft deletion.
    Delete(String),
    /// permission PUT `c/LIB/o/0` with `uniqueId` and `level`.
    Grant { unique_id: String, level: String },
}

impl Op {
    fn kind(&self) -> usize {
        match self {
            Op::Create(_) => 0,
            Op::Update { .. } => 1,
            Op::AddToSub(_) => 2,
            Op::RemoveFromSub(_) => 3,
            Op::Delete(_) => 4,
            Op::Grant { .. } => 5,
        }
    }
}

const KINDS: [&str; 6] = ["creates", "updates", "adds", "removes", "deletes", "grants"];

/// A writer: its library, token and the state the database must show.
#[derive(Debug, Clone)]
struct Writer {
    id: usize,
    unique_id: String,
    token: String,
    lib: String,
    sub: String,
    state: State,
    deleted: BTreeSet<String>,
    seq: u64,
}

/// How a writer's load ended.
#[derive(Debug, Default)]
struct Outcome {
    acked: [usize; 6],
    /// The write without an answer when the server died (None: the writer was between writes).
    in_flight: Option<Op>,
    /// Whether that write reached the server (false: the connection was refused, the server
    /// was already dead).
    reached: bool,
}

impl Writer {
    /// The next write, chosen at random among those the state allows.
    fn next_op(&mut self, rng: &mut StdRng) -> Op {
        self.seq += 1;
        let n = self.seq;
        let uuids: Vec<&String> = self.state.objects.keys().collect();
        let pick =
            |rng: &mut StdRng, from: &[&String]| from[rng.random_range(0..from.len())].clone();
        let roll = rng.random_range(0..100);
        if uuids.is_empty() || roll < 30 {
            let mut properties = BTreeMap::new();
            properties.insert("writer".to_owned(), self.id.to_string());
            properties.insert("seq".to_owned(), n.to_string());
            properties.insert("check".to_owned(), format!("{:016x}", rng.random::<u64>()));
            return Op::Create(Obj {
                // Multi-byte UTF-8 and SQL metacharacters: stored and returned verbatim.
                title: format!("crash w{} #{n} «Überprüfung» ✓ O'Brien; --", self.id),
                description: format!("créé par w{} — {}", self.id, rng.random::<u32>()),
                public: rng.random_bool(0.5),
                duration: Some(rng.random_range(1..10_000)),
                properties,
                in_sub: false,
            });
        }
        if roll < 55 {
            let uuid = pick(rng, &uuids);
            let mut new = self.state.objects[&uuid].clone();
            new.title = format!("crash w{} #{n} updated ✎ \"quoted\"", self.id);
            new.description = format!("mis à jour {}", rng.random::<u32>());
            new.public = !new.public;
            new.properties.insert("rev".to_owned(), n.to_string());
            return Op::Update { uuid, new };
        }
        if roll < 85 {
            let (inside, outside): (Vec<&String>, Vec<&String>) =
                uuids.iter().partition(|u| self.state.objects[**u].in_sub);
            if roll < 70 && !outside.is_empty() {
                return Op::AddToSub(pick(rng, &outside));
            }
            if (70..80).contains(&roll) && !inside.is_empty() {
                return Op::RemoveFromSub(pick(rng, &inside));
            }
            if roll >= 80 && !outside.is_empty() {
                return Op::Delete(pick(rng, &outside));
            }
        }
        let existing: Vec<&String> = self.state.levels.keys().collect();
        let unique_id = if existing.is_empty() || rng.random_bool(0.5) {
            format!("crash-grantee-{}-{n}", self.id)
        } else {
            pick(rng, &existing)
        };
        let level = ["none", "view", "admin"][rng.random_range(0..3)].to_owned();
        Op::Grant { unique_id, level }
    }

    /// The request for `op`, and the status that acknowledges it.
    fn request(
        &self,
        http: &reqwest::Client,
        base: &str,
        op: &Op,
    ) -> (reqwest::RequestBuilder, u16) {
        let (lib, sub) = (&self.lib, &self.sub);
        let call = |method: Method, path: String| {
            http.request(method, format!("{base}{path}"))
                .bearer_auth(&self.token)
        };
        match op {
            Op::Create(o) => {
                let mut form = vec![
                    ("type".to_owned(), "video".to_owned()),
                    ("title".to_owned(), o.title.clone()),
                    ("description".to_owned(), o.description.clone()),
                    ("public".to_owned(), o.public.to_string()),
                    ("duration".to_owned(), o.duration.unwrap().to_string()),
                ];
                for (k, v) in &o.properties {
                    form.push((format!("properties[{k}]"), v.clone()));
                }
                let req = call(Method::PUT, format!("/api/describe/c/{lib}/o/0")).form(&form);
                (req, 201)
            }
            Op::Update { uuid, new } => {
                let form = [
                    ("type", "video".to_owned()),
                    ("title", new.title.clone()),
                    ("description", new.description.clone()),
                    ("public", new.public.to_string()),
                    ("properties[rev]", new.properties["rev"].clone()),
                ];
                let req = call(Method::POST, format!("/api/describe/c/{lib}/o/{uuid}")).form(&form);
                (req, 202)
            }
            Op::AddToSub(uuid) => (
                call(Method::PUT, format!("/api/catalog/c/{sub}/o/{uuid}")),
                201,
            ),
            Op::RemoveFromSub(uuid) => (
                call(Method::DELETE, format!("/api/catalog/c/{sub}/o/{uuid}")),
                200,
            ),
            Op::Delete(uuid) => (
                call(Method::DELETE, format!("/api/catalog/c/{lib}/o/{uuid}")),
                200,
            ),
            Op::Grant { unique_id, level } => {
                let form = [("uniqueId", unique_id.as_str()), ("level", level.as_str())];
                let req = call(Method::PUT, format!("/api/permission/c/{lib}/o/0")).form(&form);
                (req, 201)
            }
        }
    }

    /// The state after `op`; `created` is the uuid a create got.
    fn apply(&self, op: &Op, created: Option<&str>) -> (State, BTreeSet<String>) {
        let (mut s, mut deleted) = (self.state.clone(), self.deleted.clone());
        match op {
            Op::Create(o) => {
                s.objects.insert(created.unwrap().to_owned(), o.clone());
            }
            Op::Update { uuid, new } => {
                s.objects.insert(uuid.clone(), new.clone());
            }
            Op::AddToSub(u) => s.objects.get_mut(u).unwrap().in_sub = true,
            Op::RemoveFromSub(u) => s.objects.get_mut(u).unwrap().in_sub = false,
            Op::Delete(u) => {
                s.objects.remove(u);
                deleted.insert(u.clone());
            }
            Op::Grant { unique_id, level } => {
                s.levels.insert(unique_id.clone(), level.clone());
            }
        }
        (s, deleted)
    }

    /// Writes until the server dies or `stop` is set.
    async fn run(
        mut self,
        base: String,
        stop: Arc<AtomicBool>,
        acked_so_far: Arc<AtomicUsize>,
        seed: u64,
    ) -> (Self, Outcome) {
        let mut rng = StdRng::seed_from_u64(seed);
        let http = crate::helpers::http_client()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let mut outcome = Outcome::default();
        while !stop.load(Ordering::SeqCst) {
            let op = self.next_op(&mut rng);
            let (req, acked) = self.request(&http, &base, &op);
            let answer = match req.send().await {
                Ok(res) => {
                    let status = res.status();
                    res.bytes().await.map(|body| (status, body))
                }
                Err(e) => Err(e),
            };
            let (status, body) = match answer {
                Ok(a) => a,
                Err(e) => {
                    // No (whole) answer: the server is gone.
                    outcome.reached = !e.is_connect();
                    outcome.in_flight = Some(op);
                    break;
                }
            };
            assert_eq!(
                status.as_u16(),
                acked,
                "writer {}: {op:?} answered {}",
                self.id,
                String::from_utf8_lossy(&body)
            );
            let created = if let Op::Create(_) = op {
                let v: Value = serde_json::from_slice(&body).unwrap();
                Some(v["uuid"].as_str().unwrap().to_owned())
            } else {
                None
            };
            (self.state, self.deleted) = self.apply(&op, created.as_deref());
            outcome.acked[op.kind()] += 1;
            acked_so_far.fetch_add(1, Ordering::SeqCst);
        }
        (self, outcome)
    }
}

/// A writer's library as the API shows it now.
async fn read_state(api: &ApiApp, base: &str, w: &Writer) -> State {
    let get = |path: String| {
        let req = api
            .app
            .client
            .get(format!("{base}{path}"))
            .bearer_auth(&w.token);
        async move {
            let a = api.send(req).await;
            assert_eq!(a.status, StatusCode::OK, "{path}: {a:?}");
            a.json
        }
    };
    let sub_list = get(format!("/api/catalog/c/{}/o/0", w.sub)).await;
    let in_sub: BTreeSet<String> = sub_list["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uuid"].as_str().unwrap().to_owned())
        .collect();
    let lib_list = get(format!("/api/catalog/c/{}/o/0", w.lib)).await;
    let mut objects = BTreeMap::new();
    for r in lib_list["list"].as_array().unwrap() {
        let uuid = r["uuid"].as_str().unwrap().to_owned();
        if uuid == w.sub {
            continue;
        }
        assert_eq!(r["type"], "video", "{r}");
        let properties = r["properties"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        let obj = Obj {
            title: r["title"].as_str().unwrap().to_owned(),
            description: r["description"].as_str().unwrap().to_owned(),
            public: r["public"] == "true",
            duration: r["metadata"]["duration"].as_u64(),
            properties,
            in_sub: in_sub.contains(&uuid),
        };
        objects.insert(uuid, obj);
    }
    for u in &in_sub {
        assert!(
            objects.contains_key(u),
            "writer {}: {u} is in the sub-library but not in the library",
            w.id
        );
    }
    let entries = get(format!("/api/permission/c/{}/o/0", w.lib)).await;
    let mut levels = BTreeMap::new();
    for e in entries.as_array().unwrap() {
        let unique_id = e["uniqueId"].as_str().unwrap().to_owned();
        let level = e["level"].as_str().unwrap().to_owned();
        if unique_id == w.unique_id {
            assert_eq!(level, "admin", "writer {}'s own entry", w.id);
        } else {
            levels.insert(unique_id, level);
        }
    }
    State { objects, levels }
}

/// Checks `w`'s library after the restart against its model; adopts the in-flight write when
/// it happened. Returns whether it did.
async fn verify(api: &ApiApp, base: &str, w: &mut Writer, in_flight: Option<&Op>) -> bool {
    let actual = read_state(api, base, w).await;
    let applied = if actual == w.state {
        false
    } else {
        let op = in_flight.unwrap_or_else(|| {
            panic!(
                "writer {}: acknowledged writes are not what the API shows\n{}",
                w.id,
                diff(&w.state, &actual)
            )
        });
        // A create that happened has the one uuid the model does not know.
        let extra: Vec<&String> = actual
            .objects
            .keys()
            .filter(|u| !w.state.objects.contains_key(*u))
            .collect();
        let created = match (op, extra.as_slice()) {
            (Op::Create(_), [u]) => Some(u.as_str()),
            _ => None,
        };
        let with_op = match (op, created) {
            (Op::Create(_), None) => None,
            _ => Some(w.apply(op, created)),
        };
        let Some((with_op, deleted)) = with_op.filter(|(s, _)| *s == actual) else {
            panic!(
                "writer {}: the API shows neither the acknowledged state nor that state plus \
                 the write in flight ({op:?})\n{}",
                w.id,
                diff(&w.state, &actual)
            );
        };
        w.state = with_op;
        w.deleted = deleted;
        true
    };
    // Deleted objects stay invisible.
    for u in &w.deleted {
        let req = api
            .app
            .client
            .get(format!("{base}/api/describe/c/{}/o/{u}", w.lib))
            .bearer_auth(&w.token);
        let a = api.send(req).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "deleted {u}: {a:?}");
    }
    applied
}

/// What differs between the model and the API, object by object.
fn diff(expected: &State, actual: &State) -> String {
    let mut out = String::new();
    let keys: BTreeSet<&String> = expected
        .objects
        .keys()
        .chain(actual.objects.keys())
        .collect();
    for k in keys {
        let (e, a) = (expected.objects.get(k), actual.objects.get(k));
        if e != a {
            out.push_str(&format!(
                "object {k}:\n  expected {e:?}\n  actual   {a:?}\n"
            ));
        }
    }
    if expected.levels != actual.levels {
        out.push_str(&format!(
            "levels:\n  expected {:?}\n  actual   {:?}\n",
            expected.levels, actual.levels
        ));
    }
    out
}

/// Runs `sql` (one row of numbers) on the database with its command-line client.
fn query(db_url: &str, sql: &str) -> Vec<i64> {
    let out = if let Some(path) = db_url.strip_prefix("sqlite://") {
        Command::new("sqlite3")
            .args(["-batch", "-noheader", "-separator", "|", path, sql])
            .output()
            .expect("sqlite3 (the SQLite shell) is needed")
    } else {
        Command::new("psql")
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-F",
                "|",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                db_url,
                "-c",
                sql,
            ])
            .output()
            .expect("psql (the PostgreSQL client) is needed")
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{sql}: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.trim()
        .split('|')
        .map(|n| {
            n.parse()
                .unwrap_or_else(|_| panic!("{sql}: not a number: {text}"))
        })
        .collect()
}

/// Half-written states, each a count that must be zero.
const HALF_WRITTEN: [(&str, &str); 8] = [
    (
        "live object in no collection that is not a library with an admin",
        "SELECT count(*) FROM objects o WHERE o.deleted_at IS NULL \
         AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.member_id = o.id) \
         AND NOT EXISTS (SELECT 1 FROM permissions p WHERE p.collection_id = o.id AND p.level = 'admin')",
    ),
    (
        "membership of a missing member",
        "SELECT count(*) FROM memberships m WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = m.member_id)",
    ),
    (
        "membership in a missing collection",
        "SELECT count(*) FROM memberships m WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = m.collection_id)",
    ),
    (
        "membership of a deleted member",
        "SELECT count(*) FROM memberships m JOIN objects o ON o.id = m.member_id WHERE o.deleted_at IS NOT NULL",
    ),
    (
        "deleted object without the collection it was deleted from",
        "SELECT count(*) FROM objects WHERE deleted_at IS NOT NULL AND deleted_from IS NULL",
    ),
    (
        "created object without all its create-time properties",
        "SELECT count(*) FROM objects o WHERE o.object_type = 'video' AND (SELECT count(*) FROM \
         object_properties p WHERE p.object_id = o.id AND p.key IN ('writer', 'seq', 'check')) <> 3",
    ),
    (
        "property of a missing object",
        "SELECT count(*) FROM object_properties p WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = p.object_id)",
    ),
    (
        "permission of a missing user or collection",
        "SELECT count(*) FROM permissions p WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = p.user_id) \
         OR NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = p.collection_id)",
    ),
];

/// Asserts that nothing half-written is in the database; returns (live objects, soft-deleted
/// objects, memberships, permission entries, users provisioned by a grant without an entry).
fn assert_whole(db_url: &str, cycle: usize) -> [i64; 5] {
    for (what, sql) in HALF_WRITTEN {
        assert_eq!(query(db_url, sql), [0], "cycle {cycle}: {what}");
    }
    let counts = query(
        db_url,
        "SELECT (SELECT count(*) FROM objects WHERE deleted_at IS NULL), \
         (SELECT count(*) FROM objects WHERE deleted_at IS NOT NULL), \
         (SELECT count(*) FROM memberships), (SELECT count(*) FROM permissions), \
         (SELECT count(*) FROM users u WHERE u.unique_id LIKE 'crash-grantee-%' \
          AND NOT EXISTS (SELECT 1 FROM permissions p WHERE p.user_id = u.id))",
    );
    counts.try_into().unwrap()
}

/// `kill -9` during a concurrent write load, restart on the same database: every acknowledged
/// write is there, intact; a write in flight is there whole or not at all; nothing is half-written.
async fn acknowledged_writes_survive_kill_9_and_nothing_is_half_written(b: Backend) {
    let api = ApiApp::start(b).await;
    let db_url = api.app.db_url.clone();
    let mut writers = Vec::new();
    for id in 0..WRITERS {
        let unique_id = format!("crash-writer-{id}");
        let (_, token) = api.signed_in(&unique_id);
        let lib = api.library(&token, &format!("crash library {id}")).await;
        let sub = api
            .object(&token, &lib, "catalog", &format!("crash sub-library {id}"))
            .await;
        writers.push(Writer {
            id,
            unique_id,
            token,
            lib,
            sub,
            state: State::default(),
            deleted: BTreeSet::new(),
            seq: 0,
        });
    }
    let mut server = ServeProcess::start(&db_url);
    let started = Instant::now();
    let cycles = CYCLES * soak_scale();
    let (mut total_acked, mut total_in_flight, mut total_applied) = (0, 0, 0);
    for cycle in 1..=cycles {
        let stop = Arc::new(AtomicBool::new(false));
        let acked_so_far = Arc::new(AtomicUsize::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        let load = Instant::now();
        for w in writers.drain(..) {
            let (stop, acked) = (Arc::clone(&stop), Arc::clone(&acked_so_far));
            tasks.spawn(w.run(server.address.clone(), stop, acked, rand::random()));
        }
        while acked_so_far.load(Ordering::SeqCst) < MIN_ACKED {
            assert!(
                load.elapsed() < Duration::from_secs(60),
                "cycle {cycle}: {} writes acknowledged in 60 s",
                acked_so_far.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(rand::random_range(KILL_DELAY_MS))).await;
        let kill_after = load.elapsed();
        server.kill_hard();
        stop.store(true, Ordering::SeqCst);
        let mut results = tasks.join_all().await;
        results.sort_by_key(|(w, _)| w.id);

        let restart = Instant::now();
        server = ServeProcess::start(&db_url);
        let restart = restart.elapsed();
        let verifying = Instant::now();
        let [live, deleted, memberships, permissions, bare] = assert_whole(&db_url, cycle);
        let mut acked = [0usize; 6];
        let (mut in_flight, mut refused, mut applied) = (0, 0, 0);
        for (mut w, outcome) in results {
            for (sum, n) in acked.iter_mut().zip(outcome.acked) {
                *sum += n;
            }
            match (&outcome.in_flight, outcome.reached) {
                (Some(_), true) => in_flight += 1,
                (Some(_), false) => refused += 1,
                (None, _) => {}
            }
            if verify(&api, &server.address, &mut w, outcome.in_flight.as_ref()).await {
                assert!(outcome.reached, "writer {}: a refused write happened", w.id);
                applied += 1;
            }
            writers.push(w);
        }
        let verifying = verifying.elapsed();
        let acked_total: usize = acked.iter().sum();
        assert!(acked_total >= MIN_ACKED, "cycle {cycle}: {acked:?}");
        total_acked += acked_total;
        total_in_flight += in_flight;
        total_applied += applied;
        let by_kind: Vec<String> = KINDS
            .iter()
            .zip(acked)
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        println!(
            "crash [{b:?}] cycle {cycle}/{cycles}: {WRITERS} writers, kill -9 after {kill_after:.1?}; \
             {acked_total} writes acknowledged ({}), {in_flight} in flight at the kill \
             ({applied} of them applied, whole), {refused} refused after it; restart \
             {restart:.1?}; all acknowledged so far ({}) verified through the API in \
             {verifying:.1?}; database: {live} live objects, {deleted} deleted, {memberships} \
             memberships, {permissions} permission entries, nothing half-written ({bare} users \
             provisioned by an unfinished grant)",
            by_kind.join(", "),
            total_acked,
        );
    }
    // The load must really have been cut mid-write somewhere.
    assert!(total_in_flight >= 1, "no write was in flight at any kill");
    println!(
        "crash [{b:?}] total: {cycles} kill -9 cycles in {:.1?}, {total_acked} writes \
         acknowledged, all present and intact after restart; {total_in_flight} in flight at a \
         kill, {total_applied} of them applied whole, the rest absent; nothing half-written",
        started.elapsed()
    );
}
