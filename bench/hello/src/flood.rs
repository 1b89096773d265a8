//! `flood SECONDS CONNECTIONS URL [BODY_FILE COOKIE_FILE]`: a load that keeps CONNECTIONS
//! requests outstanding for SECONDS (after one second of warm-up that is not counted), each
//! connection sending its next request as soon as its last one is answered, and times every
//! request. With BODY_FILE and COOKIE_FILE it POSTs that form (a sign-in) with that cookie,
//! else it GETs URL, with `Authorization: Bearer $BENCH_BEARER` when that is set.
//!
//! With `BENCH_HONOUR_RETRY_AFTER=1` a connection refused with a 503 waits the seconds its
//! `Retry-After` says before its next request, as a well-behaved client does; without it, it
//! sends the next at once, as wrk and an attacker do.
//!
//! wrk's latency figures mix every answer; shedding's promise is about the admitted ones, so
//! this client keeps the latencies of admitted answers (2xx and 3xx) apart from the refused
//! (503). It prints one JSON object; another status counts as `other`.

use std::time::{Duration, Instant};

use crate::Result;

/// Requests that started before this are not counted: the server is still filling up.
const WARM_UP: Duration = Duration::from_secs(1);

/// What one connection saw: (admitted latencies, refused latencies, other answers, a sample).
type Seen = (Vec<Duration>, Vec<Duration>, u64, Option<String>);

pub(crate) fn flood(
    seconds: f64,
    connections: usize,
    url: &str,
    form: Option<(&str, &str)>,
) -> Result<()> {
    let (body, cookie) = match form {
        Some((body, cookie)) => (
            Some(std::fs::read_to_string(body)?),
            Some(std::fs::read_to_string(cookie)?.trim().to_owned()),
        ),
        None => (None, None),
    };
    let bearer = std::env::var("BENCH_BEARER").ok().filter(|b| !b.is_empty());
    let honour_retry_after = std::env::var("BENCH_HONOUR_RETRY_AFTER").is_ok_and(|v| v == "1");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(connections)
        .timeout(Duration::from_secs(30))
        .build()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let counted_for = Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let seen: Vec<Seen> = runtime.block_on(async {
        let tasks: Vec<_> = (0..connections)
            .map(|_| {
                let request = match &body {
                    Some(body) => client
                        .post(url)
                        .header("content-type", "application/x-www-form-urlencoded")
                        .header("cookie", cookie.clone().unwrap_or_default())
                        .body(body.clone()),
                    None => {
                        let get = client.get(url);
                        match &bearer {
                            Some(token) => get.bearer_auth(token),
                            None => get,
                        }
                    }
                };
                tokio::spawn(async move {
                    let mut seen: Seen = (Vec::new(), Vec::new(), 0, None);
                    while started.elapsed() < WARM_UP + counted_for {
                        let Some(attempt) = request.try_clone() else {
                            break;
                        };
                        let sent = Instant::now();
                        let answer = attempt.send().await;
                        let (status, retry_after) = match answer {
                            Ok(r) => {
                                let status = r.status().as_u16();
                                let retry_after = r
                                    .headers()
                                    .get("retry-after")
                                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
                                // The body is read, as a client would, before the next request.
                                let _ = r.bytes().await;
                                (Some(status), retry_after)
                            }
                            Err(_) => (None, None),
                        };
                        let took = sent.elapsed();
                        if honour_retry_after && status == Some(503) {
                            let wait = Duration::from_secs(retry_after.unwrap_or(1));
                            tokio::time::sleep(wait).await;
                        }
                        if sent.duration_since(started) < WARM_UP {
                            continue;
                        }
                        match status {
                            Some(200..=399) => seen.0.push(took),
                            Some(503) => seen.1.push(took),
                            other => {
                                seen.2 += 1;
                                seen.3.get_or_insert_with(|| format!("{other:?}"));
                            }
                        }
                    }
                    seen
                })
            })
            .collect();
        let mut all = Vec::new();
        for task in tasks {
            if let Ok(seen) = task.await {
                all.push(seen);
            }
        }
        all
    });
    let mut admitted: Vec<Duration> = seen.iter().flat_map(|s| s.0.iter().copied()).collect();
    let mut refused: Vec<Duration> = seen.iter().flat_map(|s| s.1.iter().copied()).collect();
    let other: u64 = seen.iter().map(|s| s.2).sum();
    let sample = seen.iter().find_map(|s| s.3.clone()).unwrap_or_default();
    admitted.sort();
    refused.sort();
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let at = |v: &[Duration], p: f64| {
        // Nearest rank: the smallest value with at least p of the values at or below it.
        let rank = ((v.len() as f64) * p).ceil() as usize;
        v.get(rank.saturating_sub(1)).copied().map_or(0, micros)
    };
    println!(
        "{}",
        serde_json::json!({
            "connections": connections,
            "seconds": seconds,
            "admitted": admitted.len(),
            "refused": refused.len(),
            "other": other,
            "other_sample": sample,
            "admitted_rps": admitted.len() as f64 / seconds,
            "refused_rps": refused.len() as f64 / seconds,
            "admitted_p50_us": at(&admitted, 0.5),
            "admitted_p99_us": at(&admitted, 0.99),
            "admitted_max_us": admitted.last().copied().map_or(0, micros),
            "refused_p99_us": at(&refused, 0.99),
        })
    );
    Ok(())
}
