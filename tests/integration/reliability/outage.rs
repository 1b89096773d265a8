//! Database outage under load: requests get a 503 with `Retry-After` within the configured
//! wait (`db_timeout`), never a 500 or a hang; the process stays up and recovers by itself
//! when the database comes back.
//!
//! - PostgreSQL: a private cluster (Debian's `pg_createcluster`, on a free port) that the test
//!   really stops (`pg_ctlcluster stop -m fast`) and starts again, while clients read and write.
//! - SQLite has no server to stop: its outage is another process holding the write lock, so
//!   writes wait `busy_timeout` and get a 503 while reads go on.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use tokio::sync::Mutex;

use super::soak_scale;
use crate::api::ApiApp;

/// One answer the load got: when it started and ended (since the test's start), its status,
/// whether it carried `Retry-After` and a JSON `message`.
#[derive(Debug, Clone)]
struct Seen {
    write: bool,
    started: Duration,
    ended: Duration,
    status: u16,
    retry_after: bool,
    message: bool,
}

/// Clients that read (authenticated describe GET) and write (describe PUT of a new object)
/// in a loop until stopped, recording every answer.
struct Load {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    t0: Instant,
}

impl Load {
    fn start(app: &ApiApp, token: &str, library: &str, object: &str, clients: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let http = crate::helpers::http_client()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let tasks = (0..clients)
            .map(|i| {
                let (stop, seen, http) = (stop.clone(), seen.clone(), http.clone());
                let write = i % 2 == 1;
                let (method, url) = if write {
                    (
                        Method::PUT,
                        app.app.url(&format!("/api/describe/c/{library}/o/0")),
                    )
                } else {
                    (
                        Method::GET,
                        app.app
                            .url(&format!("/api/describe/c/{library}/o/{object}")),
                    )
                };
                let token = token.to_owned();
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let mut req = http.request(method.clone(), &url).bearer_auth(&token);
                        if write {
                            req = req.form(&[("type", "video"), ("title", &format!("w{i}-{n}"))]);
                        }
                        let started = t0.elapsed();
                        let answer = req.send().await;
                        let ended = t0.elapsed();
                        let seen_one = match answer {
                            Ok(r) => {
                                let status = r.status().as_u16();
                                let retry_after = r.headers().contains_key("retry-after");
                                let body: serde_json::Value = r.json().await.unwrap_or_default();
                                Seen {
                                    write,
                                    started,
                                    ended,
                                    status,
                                    retry_after,
                                    message: body["message"].is_string() || status < 400,
                                }
                            }
                            // A hang past the client timeout or a dropped connection.
                            Err(_) => Seen {
                                write,
                                started,
                                ended,
                                status: 0,
                                retry_after: false,
                                message: false,
                            },
                        };
                        let failed = seen_one.status >= 500 || seen_one.status == 0;
                        seen.lock().await.push(seen_one);
                        if failed {
                            // A failing client backs off a little, as a real one would.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                })
            })
            .collect();
        Self {
            stop,
            seen,
            tasks,
            t0,
        }
    }

    fn now(&self) -> Duration {
        self.t0.elapsed()
    }

    async fn finish(self) -> Vec<Seen> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        Arc::try_unwrap(self.seen).unwrap().into_inner()
    }
}

/// Statuses counted by value, for messages.
fn tally<'a>(seen: impl Iterator<Item = &'a Seen>) -> std::collections::BTreeMap<u16, usize> {
    let mut t = std::collections::BTreeMap::new();
    for s in seen {
        *t.entry(s.status).or_default() += 1;
    }
    t
}

/// Every answer in `window` is a success or a 503 with `Retry-After` and a message, answered
/// within `limit`; returns how many 503s there were.
fn assert_only_503s(seen: &[&Seen], limit: Duration, what: &str) -> usize {
    for s in seen {
        let took = s.ended - s.started;
        assert!(
            (200..300).contains(&s.status) || (s.status == 503 && s.retry_after && s.message),
            "{what}: an answer other than 2xx or 503 + Retry-After + message: {s:?}"
        );
        assert!(
            took <= limit,
            "{what}: a request took {took:?} (> {limit:?}): {s:?}"
        );
    }
    seen.iter().filter(|s| s.status == 503).count()
}

/// A PostgreSQL cluster of its own, on a free port; dropped (stopped and deleted) at the end.
pub(super) struct PrivateCluster {
    version: String,
    name: String,
    port: u16,
}

impl PrivateCluster {
    const PREFIX: &'static str = "mloutage";

    fn create() -> Self {
        Self::create_with(&[])
    }

    /// A cluster made with these extra `pg_createcluster` options before its `--` (e.g. `-d
    /// DATADIR`) and `initdb` options after it (e.g. `--waldir=DIR`).
    pub(super) fn create_with(options: &[(&str, &str)]) -> Self {
        let version = String::from_utf8(
            Command::new("sh")
                .args(["-c", "ls /usr/lib/postgresql | sort -V | tail -n 1"])
                .output()
                .expect("cannot list /usr/lib/postgresql")
                .stdout,
        )
        .unwrap()
        .trim()
        .to_owned();
        assert!(
            !version.is_empty(),
            "the outage test needs a PostgreSQL server installation (pg_createcluster)"
        );
        Self::drop_stale(&version);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let name = format!("{}{}", Self::PREFIX, std::process::id());
        let mut cluster = Command::new("pg_createcluster");
        cluster.args([&version, &name, "-p", &port.to_string(), "--start"]);
        for (option, value) in options.iter().filter(|(o, _)| !o.starts_with("--")) {
            cluster.args([option, value]);
        }
        cluster.args(["--", "--auth-host=trust", "--auth-local=trust"]);
        for (option, value) in options.iter().filter(|(o, _)| o.starts_with("--")) {
            cluster.arg(format!("{option}={value}"));
        }
        let out = cluster
            .output()
            .expect("cannot run pg_createcluster (Debian's postgresql-common)");
        assert!(
            out.status.success(),
            "pg_createcluster failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self {
            version,
            name,
            port,
        }
    }

    /// Clusters left by an earlier run that was killed (its process is gone).
    fn drop_stale(version: &str) {
        let Ok(out) = Command::new("pg_lsclusters").arg("-h").output() else {
            return;
        };
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let Some(pid) = cols.get(1).and_then(|n| n.strip_prefix(Self::PREFIX)) else {
                continue;
            };
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = Command::new("pg_dropcluster")
                    .args(["--stop", version, cols[1]])
                    .status();
            }
        }
    }

    pub(super) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn ctl(&self, action: &str) {
        let mut cmd = Command::new("pg_ctlcluster");
        cmd.args([&self.version, &self.name, action]);
        if action == "stop" {
            cmd.args(["-m", "fast"]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "pg_ctlcluster {action} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = Command::new("pg_dropcluster")
            .args(["--stop", &self.version, &self.name])
            .status();
    }
}

/// The configured wait for a database connection, in seconds (`db_timeout`).
const DB_TIMEOUT: u64 = 1;

#[tokio::test]
async fn postgres_stopped_under_load_answers_503_then_recovers_without_restart() {
    if medialib_adapters_diesel::testing::skipping_pg() {
        return;
    }
    let cluster = Arc::new(PrivateCluster::create());
    let app = ApiApp::start_on(cluster.url(), Box::new(()), |l| {
        l.set("db_timeout", DB_TIMEOUT.to_string())
    })
    .await;
    let (_, token) = app.signed_in("outage");
    let library = app.library(&token, "Outage").await;
    let object = app.object(&token, &library, "video", "read me").await;
    let rounds = soak_scale();
    let load = Load::start(&app, &token, &library, &object, 8);
    let mut windows = Vec::new();
    for _ in 0..rounds {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let stopping = load.now();
        let c = cluster.clone();
        tokio::task::spawn_blocking(move || c.ctl("stop"))
            .await
            .unwrap();
        let stopped = load.now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let health = app.get("/healthz", None).await;
        assert_eq!(
            health.status,
            StatusCode::OK,
            "the process stays alive: {health:?}"
        );
        let ready = app.get("/readyz", None).await;
        assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE, "{ready:?}");
        let starting = load.now();
        let c = cluster.clone();
        tokio::task::spawn_blocking(move || c.ctl("start"))
            .await
            .unwrap();
        // Recovered: a read and a write succeed again, with no restart of medialib.
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let read = app
                .get(
                    &format!("/api/describe/c/{library}/o/{object}"),
                    Some(&token),
                )
                .await;
            let write = app
                .call(
                    Method::PUT,
                    &format!("/api/describe/c/{library}/o/0"),
                    Some(&token),
                    &[("type", "audio"), ("title", "after")],
                )
                .await;
            if read.status == StatusCode::OK && write.status == StatusCode::CREATED {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "not recovered 15 s after PostgreSQL started: {read:?} {write:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let recovered = load.now();
        windows.push((stopping, stopped, starting, recovered));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let seen = load.finish().await;

    let limit = Duration::from_secs(DB_TIMEOUT) + Duration::from_secs(2);
    let mut refused = 0;
    for (round, &(stopping, stopped, starting, recovered)) in windows.iter().enumerate() {
        let before: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.ended < stopping && (round == 0 || s.started > windows[round - 1].3))
            .collect();
        assert!(!before.is_empty());
        assert!(
            before.iter().all(|s| (200..300).contains(&s.status)),
            "round {round}, before the stop: {:?}",
            tally(before.iter().copied())
        );
        let down: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.started >= stopped && s.ended <= starting)
            .collect();
        let n503 = assert_only_503s(&down, limit, "while PostgreSQL was down");
        assert_eq!(
            n503,
            down.len(),
            "round {round}: while PostgreSQL was down every request is a 503: {:?}",
            tally(down.iter().copied())
        );
        assert!(n503 > 0, "round {round}: no request was tried while down");
        // From the stop until the recovery, transitions included: only 2xx and 503s.
        let around: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.ended >= stopping && s.started <= recovered)
            .collect();
        refused += assert_only_503s(&around, limit, "around the outage");
    }
    let after: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.started > windows.last().unwrap().3 + Duration::from_millis(500))
        .collect();
    assert!(!after.is_empty());
    assert!(
        after.iter().all(|s| (200..300).contains(&s.status)),
        "after recovery: {:?}",
        tally(after.iter().copied())
    );
    let slowest = seen.iter().map(|s| s.ended - s.started).max().unwrap();
    println!(
        "outage (PostgreSQL): {} rounds, {} requests ({} writes), {refused} refused with 503 \
         during the outages, slowest answer {slowest:?}, answers {:?}, recovered {:?} after start",
        rounds,
        seen.len(),
        seen.iter().filter(|s| s.write).count(),
        tally(seen.iter()),
        windows.iter().map(|w| w.3 - w.2).collect::<Vec<_>>(),
    );
}

#[tokio::test]
async fn sqlite_write_lock_held_elsewhere_answers_503_to_writes_while_reads_go_on() {
    use diesel::connection::SimpleConnection as _;
    use diesel::{Connection as _, SqliteConnection};

    let app = ApiApp::start_with(crate::api::Backend::Sqlite, |l| {
        l.set("db_timeout", DB_TIMEOUT.to_string())
    })
    .await;
    let (_, token) = app.signed_in("locked");
    let library = app.library(&token, "Locked").await;
    let object = app.object(&token, &library, "video", "read me").await;
    let path = app.app.db_url.trim_start_matches("sqlite://").to_owned();
    let load = Load::start(&app, &token, &library, &object, 6);
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // Another process's writer holds the write lock for 4 s, four times `busy_timeout` (which
    // follows `db_timeout`).
    let locking = load.now();
    let (locked_tx, locked_rx) = tokio::sync::oneshot::channel();
    let holder = tokio::task::spawn_blocking(move || {
        let mut conn = SqliteConnection::establish(&path).unwrap();
        // The load's own writers hold the lock now and then: wait for it like they do.
        conn.batch_execute(
            "PRAGMA busy_timeout = 10000; BEGIN IMMEDIATE; UPDATE objects SET title = title WHERE 0;",
        )
            .unwrap();
        locked_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_secs(4 * DB_TIMEOUT));
        conn.batch_execute("ROLLBACK;").unwrap();
    });
    locked_rx.await.unwrap();
    let locked = load.now();
    holder.await.unwrap();
    let released = load.now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let seen = load.finish().await;

    let limit = Duration::from_secs(DB_TIMEOUT) + Duration::from_secs(2);
    let during: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.started >= locked && s.ended <= released)
        .collect();
    assert_only_503s(&during, limit, "while the lock was held");
    let writes: Vec<&Seen> = during.iter().copied().filter(|s| s.write).collect();
    assert!(
        writes.len() >= 3 && writes.iter().all(|s| s.status == 503),
        "writes started while locked are 503s: {:?}",
        tally(writes.iter().copied())
    );
    let reads: Vec<&Seen> = during.iter().copied().filter(|s| !s.write).collect();
    assert!(
        !reads.is_empty() && reads.iter().all(|s| s.status == 200),
        "reads go on (WAL): {:?}",
        tally(reads.iter().copied())
    );
    let before_or_after: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.ended < locking || s.started > released + Duration::from_millis(200))
        .collect();
    assert!(
        before_or_after
            .iter()
            .all(|s| (200..300).contains(&s.status)),
        "{:?}",
        tally(before_or_after.iter().copied())
    );
    println!(
        "outage (SQLite write lock): {} requests, {} writes refused with 503 in {:?} of lock",
        seen.len(),
        writes.len(),
        released - locked
    );
}
