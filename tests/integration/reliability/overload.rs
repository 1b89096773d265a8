//! Overload: more concurrent work than `max_in_flight` gets a quick 503 with `Retry-After`
//! instead of a queue whose latency and memory grow with the load; the server's memory is
//! measured before, during and after, and it serves normally once the load is gone. A queue
//! that stands longer than `shed_queue_delay` is shed the same way, with no count set.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};

use super::soak_scale;
use crate::api::{ApiApp, Backend};
use crate::helpers::ServeProcess;

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    load_above_capacity_is_shed_quickly_with_bounded_memory,
    a_standing_queue_is_shed_by_its_delay_and_only_then,
);

/// Requests admitted to database work at once in this test.
const MAX_IN_FLIGHT: usize = 8;
/// Concurrent clients, each with its own connection: far above `MAX_IN_FLIGHT`.
const CLIENTS: usize = 128;
/// How long a queue's waits must stay over (or under) the target before shedding starts (or
/// stops): `admission.rs`'s interval.
const SHED_INTERVAL: Duration = Duration::from_millis(100);
/// How long nobody must be refused before the cap is lifted: `admission.rs`'s `LIFT_AFTER`.
const SHED_LIFT_AFTER: Duration = Duration::from_secs(2);

/// The resident set of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The `p`-th percentile of `values` (sorted in place).
fn percentile(values: &mut [Duration], p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort();
    let i = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[i]
}

async fn load_above_capacity_is_shed_quickly_with_bounded_memory(b: Backend) {
    let setup = ApiApp::start(b).await;
    let (_, token) = setup.signed_in("crowd");
    let library = setup.library(&token, "Crowded").await;
    let server = ServeProcess::start_with_env(
        &setup.app.db_url,
        &[
            ("MEDIALIB_MAX_IN_FLIGHT", &MAX_IN_FLIGHT.to_string()),
            // This test is of the hard bound alone.
            ("MEDIALIB_SHED_QUEUE_DELAY", "0"),
            ("MEDIALIB_DB_POOL_SIZE", "4"),
        ],
    );
    let pid = server.child.id();
    let base = server.address.clone();
    let http = crowd_client();
    // Warm up: every connection opened once, then the quiet resident set.
    let url = format!("{base}/api/describe/c/{library}/o/0");
    for _ in 0..3 {
        assert_eq!(
            create(&http, &url, &token, "warm").await,
            StatusCode::CREATED
        );
    }
    let rss_before = rss_kib(pid);

    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(rss_before));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let load_for = Duration::from_secs(3 * soak_scale() as u64);
    let seen = create_as_fast_as_possible(&http, &url, &token, load_for).await;
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    let rss_during = peak.load(Ordering::Relaxed);

    let (mut created, mut shed) = created_and_shed(&seen);
    assert!(
        !shed.is_empty(),
        "{CLIENTS} clients never exceeded max_in_flight = {MAX_IN_FLIGHT}"
    );
    let metrics = shed_exactly(&http, &base, shed.len()).await;
    assert!(metrics.contains(&format!(
        "medialib_requests_in_flight_max {MAX_IN_FLIGHT}\n"
    )));

    let (shed_p50, shed_p99) = (percentile(&mut shed, 0.5), percentile(&mut shed, 0.99));
    let (ok_p50, ok_p99) = (
        percentile(&mut created, 0.5),
        percentile(&mut created, 0.99),
    );
    // The clients share 2 cores with the server, so absolute times are mostly the clients'
    // own scheduling: the bounds are loose, the figures are printed for the docs.
    assert!(
        shed_p50 <= ok_p50 && shed_p99 < Duration::from_secs(1),
        "a shed request is answered at once, sooner than admitted work: \
         503 p50 {shed_p50:?} p99 {shed_p99:?}, 201 p50 {ok_p50:?}"
    );
    assert!(
        ok_p99 < Duration::from_secs(3),
        "admitted requests wait at most behind {MAX_IN_FLIGHT} others: p99 {ok_p99:?}"
    );

    // Afterwards: normal service, and the memory taken under load is bounded.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        create(&http, &url, &token, "after").await,
        StatusCode::CREATED
    );
    let rss_after = rss_kib(pid);
    assert!(
        rss_during - rss_before < 64 * 1024,
        "resident memory grew by {} KiB under overload",
        rss_during - rss_before
    );
    println!(
        "overload ({b:?}): {CLIENTS} clients for {load_for:?}, max_in_flight {MAX_IN_FLIGHT}: \
         {} created (p50 {ok_p50:?}, p99 {ok_p99:?}), {} shed with 503 (p50 {shed_p50:?}, \
         p99 {shed_p99:?}); RSS before {} KiB, peak during {} KiB, after {} KiB",
        created.len(),
        shed.len(),
        rss_before,
        rss_during,
        rss_after
    );
}

/// A client with a connection for each of the crowd's [`CLIENTS`].
fn crowd_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .unwrap()
}

/// Creates one object titled `title` at `url`: the answer's status.
async fn create(http: &reqwest::Client, url: &str, token: &str, title: &str) -> StatusCode {
    http.request(Method::PUT, url)
        .bearer_auth(token)
        .form(&[("type", "file"), ("title", title)])
        .send()
        .await
        .unwrap()
        .status()
}

/// What one request of the crowd saw: status, time taken, `Retry-After`, body.
type Seen = (u16, Duration, Option<String>, serde_json::Value);

/// [`CLIENTS`] clients, each on its own connection, create objects at `url` one after the
/// other for `load_for`.
async fn create_as_fast_as_possible(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    load_for: Duration,
) -> Vec<Seen> {
    let t0 = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (http, url, token) = (http.clone(), url.to_owned(), token.to_owned());
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut n = 0;
                while t0.elapsed() < load_for {
                    n += 1;
                    let started = Instant::now();
                    let r = http
                        .request(Method::PUT, &url)
                        .bearer_auth(&token)
                        .form(&[("type", "file"), ("title", &format!("c{i}-{n}"))])
                        .send()
                        .await
                        .unwrap();
                    let status = r.status().as_u16();
                    let retry_after = r
                        .headers()
                        .get("retry-after")
                        .map(|v| v.to_str().unwrap().to_owned());
                    let body: serde_json::Value = r.json().await.unwrap();
                    seen.push((status, started.elapsed(), retry_after, body));
                }
                seen
            })
        })
        .collect();
    let mut seen = Vec::new();
    for c in clients {
        seen.extend(c.await.unwrap());
    }
    seen
}

/// The times of the created (201) and of the shed (503, with `Retry-After: 1` and a message)
/// answers; any other answer fails the test.
fn created_and_shed(seen: &[Seen]) -> (Vec<Duration>, Vec<Duration>) {
    let mut created = Vec::new();
    let mut shed = Vec::new();
    for (status, took, retry_after, body) in seen {
        match status {
            201 => created.push(*took),
            503 => {
                assert_eq!(retry_after.as_deref(), Some("1"), "{body}");
                assert!(body["message"].is_string(), "{body}");
                shed.push(*took);
            }
            _ => panic!("an answer other than 201 or 503 under overload: {status} {body}"),
        }
    }
    (created, shed)
}

/// `/metrics`, after checking that it counts exactly `n` requests as shed.
async fn shed_exactly(http: &reqwest::Client, base: &str, n: usize) -> String {
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!("medialib_requests_shed_total {n}\n")),
        "every 503 was counted as shed, and nothing else: {n} 503s\n{metrics}"
    );
    metrics
}

/// Another writer on an SQLite database, holding its write lock 10 ms out of every 20 (a
/// backup, a batch job, a slow disk): the server's writes then take longer than the crowd's
/// pace, so a queue stands. Without it a fast machine's SQLite writes outpace a client crowd
/// that shares its two cores, the queue never stands, and there is nothing to shed (PostgreSQL's
/// writes are slow enough by themselves). Stops when dropped.
struct SlowDatabase {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SlowDatabase {
    fn start(db_url: &str) -> Self {
        use diesel::{Connection as _, RunQueryDsl as _, SqliteConnection};
        let stop = Arc::new(AtomicBool::new(false));
        let thread = db_url.strip_prefix("sqlite://").map(|path| {
            let mut conn = SqliteConnection::establish(path).unwrap();
            // It waits its turn for the lock, as the server's writers do.
            diesel::sql_query("PRAGMA busy_timeout = 10000")
                .execute(&mut conn)
                .unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    diesel::sql_query("BEGIN IMMEDIATE")
                        .execute(&mut conn)
                        .unwrap();
                    std::thread::sleep(Duration::from_millis(10));
                    diesel::sql_query("COMMIT").execute(&mut conn).unwrap();
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        });
        Self { stop, thread }
    }
}

impl Drop for SlowDatabase {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// With no count set (`max_in_flight` far above the crowd), the same crowd of writers is shed
/// only by its queueing delay: with a 20 ms `shed_queue_delay` some are refused, each counted,
/// and once the crowd is gone the queue is no longer shed; with the rule off (the positive
/// control), the same crowd gets no 503 at all, so the refusals came from the delay.
async fn a_standing_queue_is_shed_by_its_delay_and_only_then(b: Backend) {
    let setup = ApiApp::start(b).await;
    let (_, token) = setup.signed_in("queue");
    let library = setup.library(&token, "Queued").await;
    let load_for = Duration::from_secs(2 * soak_scale() as u64);
    let mut figures = Vec::new();
    for delay_ms in ["20", "0"] {
        let server = ServeProcess::start_with_env(
            &setup.app.db_url,
            &[
                ("MEDIALIB_MAX_IN_FLIGHT", "100000"),
                ("MEDIALIB_SHED_QUEUE_DELAY", delay_ms),
                ("MEDIALIB_DB_POOL_SIZE", "4"),
            ],
        );
        let base = server.address.clone();
        let http = crowd_client();
        let url = format!("{base}/api/describe/c/{library}/o/0");
        let slow = SlowDatabase::start(&setup.app.db_url);
        let seen = create_as_fast_as_possible(&http, &url, &token, load_for).await;
        drop(slow);
        let (mut created, shed) = created_and_shed(&seen);
        let metrics = shed_exactly(&http, &base, shed.len()).await;
        if delay_ms == "0" {
            assert!(
                shed.is_empty(),
                "with queue-delay shedding off and no count reached, nothing is shed"
            );
            assert!(
                metrics.contains("medialib_requests_shedding 0\n"),
                "{metrics}"
            );
        } else {
            assert!(
                !shed.is_empty(),
                "{CLIENTS} writers on 4 connections queue longer than {delay_ms} ms: \
                 {} created, none shed",
                created.len()
            );
            // The crowd is gone: requests that wait no time, one at a time, are all admitted,
            // and once nobody has been refused for SHED_LIFT_AFTER the cap is lifted.
            tokio::time::sleep(2 * SHED_INTERVAL).await;
            let mut still_shedding = 0;
            let after = Instant::now();
            while after.elapsed() < SHED_LIFT_AFTER + 3 * SHED_INTERVAL {
                assert_eq!(
                    create(&http, &url, &token, "after").await,
                    StatusCode::CREATED
                );
                if after.elapsed() < SHED_LIFT_AFTER / 2
                    && shed_exactly(&http, &base, shed.len())
                        .await
                        .contains("medialib_requests_shedding 1\n")
                {
                    still_shedding += 1;
                }
                tokio::time::sleep(SHED_INTERVAL).await;
            }
            assert!(
                still_shedding > 0,
                "the cap is not lifted in the lull right after the crowd"
            );
            let metrics = shed_exactly(&http, &base, shed.len()).await;
            assert!(
                metrics.contains("medialib_requests_shedding 0\n"),
                "{metrics}"
            );
        }
        let n = created.len();
        figures.push(format!(
            "shed_queue_delay {delay_ms} ms: {n} created (p50 {:?}, p99 {:?}), {} shed",
            percentile(&mut created, 0.5),
            percentile(&mut created, 0.99),
            shed.len()
        ));
    }
    println!(
        "standing queue ({b:?}): {CLIENTS} writers for {load_for:?}, 4 connections: {}",
        figures.join("; ")
    );
}
