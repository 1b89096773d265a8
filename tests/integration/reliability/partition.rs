//! A half-open network partition to PostgreSQL (issue 24): a TCP proxy between medialib and
//! its database that stops forwarding but closes nothing, as a dead switch or a failed-over
//! cloud database does. Before, every request waited as long as the partition lasted and
//! `/readyz` did not notice. Now a request's database work has a deadline (twice
//! `db_timeout`): requests and `/readyz` answer 503 + `Retry-After` within it, and once the
//! proxy forwards again requests succeed with the same process.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use medialib_adapters_diesel::Backend;
use medialib_adapters_diesel::testing::{TestDb, skipping_pg};
use reqwest::StatusCode;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::api::ApiApp;

/// `db_timeout` of the app under test, in seconds: its deadline is twice that.
const DB_TIMEOUT: u64 = 1;
/// How late past the deadline an answer may come (a loaded CI machine).
const SLACK: Duration = Duration::from_secs(3);

/// A TCP proxy that forwards both ways until frozen; frozen, it keeps every connection open
/// and accepts new ones, but holds what it reads until it is thawed.
struct FreezingProxy {
    address: String,
    frozen: Arc<AtomicBool>,
}

impl FreezingProxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let frozen = Arc::new(AtomicBool::new(false));
        let flag = frozen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, flag.clone()));
                tokio::spawn(pump(server_read, client_write, flag.clone()));
            }
        });
        Self { address, frozen }
    }

    fn freeze(&self, on: bool) {
        self.frozen.store(on, Ordering::SeqCst);
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        while frozen.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The `host:port` of a `postgres://` URL.
fn authority(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split(['/', '?']).next().unwrap();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5432")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_open_partition_to_postgresql_answers_503_within_the_deadline_and_recovers() {
    if skipping_pg() {
        return;
    }
    let db = TestDb::create(Backend::Postgres);
    let upstream = authority(&db.url);
    let proxy = FreezingProxy::start(upstream.clone()).await;
    let url = db.url.replacen(&upstream, &proxy.address, 1);
    let app = ApiApp::start_on(url, Box::new(db), |l| {
        l.set("db_timeout", DB_TIMEOUT.to_string())
    })
    .await;
    let (_, token) = app.signed_in("partitioned");
    let library = app.library(&token, "Partitioned").await;
    let read = format!("/api/describe/c/{library}/o/{library}");
    // The positive control: through the proxy, reads work.
    assert_eq!(app.get(&read, Some(&token)).await.status, StatusCode::OK);
    let deadline = Duration::from_secs(2 * DB_TIMEOUT);

    proxy.freeze(true);
    // Requests at once (more than one pooled connection gets stuck), then the probe.
    let started = Instant::now();
    let all = async {
        tokio::join!(
            app.get(&read, Some(&token)),
            app.get(&read, Some(&token)),
            app.get(&read, Some(&token)),
            app.get(&read, Some(&token)),
        )
    };
    // Without a deadline they would wait as long as the partition lasts: fail instead.
    let (a, b, c, d) = tokio::time::timeout(deadline + 2 * SLACK, all)
        .await
        .expect("requests still waiting on the partitioned database");
    let answers = [a, b, c, d];
    let took = started.elapsed();
    for a in &answers {
        assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{a:?}");
        assert!(a.headers.contains_key("retry-after"), "{a:?}");
    }
    assert!(
        took < deadline + SLACK,
        "answered after {took:?}, the deadline being {deadline:?}"
    );
    let started = Instant::now();
    let ready = tokio::time::timeout(deadline + 2 * SLACK, app.get("/readyz", None))
        .await
        .expect("/readyz still waiting on the partitioned database");
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE, "{ready:?}");
    assert!(
        started.elapsed() < deadline + SLACK,
        "{:?}",
        started.elapsed()
    );

    // The partition heals: the same process answers again, without a restart.
    proxy.freeze(false);
    let healed = Instant::now();
    loop {
        let a = app.get(&read, Some(&token)).await;
        if a.status == StatusCode::OK {
            break;
        }
        assert!(
            healed.elapsed() < Duration::from_secs(20),
            "still {a:?} 20 s after the partition healed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(app.get("/readyz", None).await.status, StatusCode::OK);
    println!(
        "4 requests answered 503 in {took:?} (deadline {deadline:?}); recovered {:?} after \
         the partition healed",
        healed.elapsed()
    );
}
