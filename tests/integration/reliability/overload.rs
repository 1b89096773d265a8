//! Overload: more concurrent work than `max_in_flight` gets a quick 503 with `Retry-After`
//! instead of a queue whose latency and memory grow with the load; the server's memory is
//! measured before, during and after, and it serves normally once the load is gone.

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
);

/// Requests admitted to database work at once in this test.
const MAX_IN_FLIGHT: usize = 8;
/// Concurrent clients, each with its own connection: far above `MAX_IN_FLIGHT`.
const CLIENTS: usize = 128;

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
            ("MEDIALIB_DB_POOL_SIZE", "4"),
        ],
    );
    let pid = server.child.id();
    let base = server.address.clone();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .unwrap();
    // Warm up: every connection opened once, then the quiet resident set.
    let url = format!("{base}/api/describe/c/{library}/o/0");
    for _ in 0..3 {
        let r = http
            .request(Method::PUT, &url)
            .bearer_auth(&token)
            .form(&[("type", "file"), ("title", "warm")])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
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
    let t0 = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (http, url, token) = (http.clone(), url.clone(), token.clone());
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
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    let rss_during = peak.load(Ordering::Relaxed);

    let mut created = Vec::new();
    let mut shed = Vec::new();
    for (status, took, retry_after, body) in &seen {
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
    assert!(
        !shed.is_empty(),
        "{CLIENTS} clients never exceeded max_in_flight = {MAX_IN_FLIGHT}"
    );
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!("medialib_requests_shed_total {}\n", shed.len())),
        "every 503 was counted as shed, and nothing else: {} 503s\n{metrics}",
        shed.len()
    );
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
    let r = http
        .request(Method::PUT, &url)
        .bearer_auth(&token)
        .form(&[("type", "file"), ("title", "after")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
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
