//! `GET /metrics`: the service's counters in the Prometheus text exposition format
//! (version 0.0.4), and the middleware that counts requests.
//!
//! The series (see `docs/metrics.md`):
//!
//! - `medialib_http_requests_total{route,method,status}` and
//!   `medialib_http_request_duration_seconds{route,method}` (a histogram of the time to the
//!   response head). `route` is the matched route pattern (`/api/describe/c/{c}/o/{o}`),
//!   `other` when no route matched, so a scanner cannot blow up the number of series;
//!   `method` is one of the standard methods or `other`. `/metrics` counts itself.
//! - `medialib_db_pool_connections{state="idle|in_use"}` and
//!   `medialib_db_pool_max_connections`, read from the [`PoolMetrics`] the composition
//!   root supplies (this crate never sees the storage adapter).
//! - `medialib_oauth_token_requests_total{grant_type,outcome}`: every POST to the token
//!   endpoint; `outcome` is `issued` or the RFC 6749 error code, or `rate_limited`.
//! - `medialib_sign_ins_total{outcome}`: sign-in attempts that reached the SSO provider.
//! - `medialib_media_bytes_total{direction="in|out"}` and
//!   `medialib_media_transfers_in_progress{direction}`: media bytes received from uploads and
//!   sent by delivery, and the transfers moving them now.
//!
//! The registry and its text encoding are prometheus-client's (its Prometheus 0.0.4 encoder);
//! the gauges read at scrape time (pool, load shedding) are a [`Collector`] of ours.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, header};
use actix_web::middleware::Next;
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, web};
use medialib_ports::services::SignInError;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::admission::Admission;
use crate::error::ApiError;
use crate::routing::RoutePattern;

/// The path of the exposition.
pub const METRICS_PATH: &str = "/metrics";

/// The `Content-Type` of the Prometheus text format.
const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The token endpoint's route pattern (its requests also feed the token counter).
const TOKEN_ROUTE: &str = "/api/oauth/access_token";

/// Upper bounds of the latency histogram's buckets, in seconds (Prometheus' defaults:
/// from 5 ms, where a cached answer lands, to 10 s, beyond any sane request).
const BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The database pool as `/metrics` reports it; implemented by the composition root.
///
/// Called on every scrape from an async handler: it must answer from memory, without I/O.
pub trait PoolMetrics: Send + Sync + 'static {
    /// The pool's connections right now.
    fn usage(&self) -> PoolUsage;
}

/// A snapshot of the database pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolUsage {
    /// Open connections waiting in the pool.
    pub idle: u32,
    /// Connections checked out by a request or a background task.
    pub in_use: u32,
    /// The most connections the pool opens.
    pub max: u32,
}

/// A route label: a pattern known at compile time, or one looked up in the routing table.
type Route = Cow<'static, str>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Route,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: Route,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    grant_type: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LaunchLabels {
    version: &'static str,
    outcome: &'static str,
}

type HistogramFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The counters of one application (shared by all its workers), and the gauges of its
/// database pool and load shedding.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: HistogramFamily,
    tokens: Family<TokenLabels, Counter>,
    sign_ins: Family<OutcomeLabel, Counter>,
    lti_launches: Family<LaunchLabels, Counter>,
    media_bytes: Family<DirectionLabel, Counter>,
    transfers: Family<DirectionLabel, Gauge>,
    out_of_space: Counter,
    /// Reads that may run on the async worker (`blocking::run_read`), by where they ran.
    reads_on_worker: Counter,
    reads_on_pool: Counter,
    /// When the last 507 was answered, in seconds since the Unix epoch (0: never).
    out_of_space_at: std::sync::atomic::AtomicU64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlaceLabel {
    place: &'static str,
}

/// Where a read ran (`blocking::run_read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadPlace {
    /// On the async worker: the store answered without waiting.
    Worker,
    /// On the blocking pool: the store would have waited, or reads never run on the worker.
    Pool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabel {
    direction: &'static str,
}

/// Which way media bytes move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// From clients (uploads).
    In,
    /// To clients (delivery).
    Out,
}

impl Direction {
    fn label(self) -> DirectionLabel {
        DirectionLabel {
            direction: match self {
                Self::In => "in",
                Self::Out => "out",
            },
        }
    }
}

/// Counts one transfer in progress while it lives.
#[derive(Debug)]
pub(crate) struct TransferGauge {
    gauge: Gauge,
}

impl Drop for TransferGauge {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(Arc::default(), None)
    }
}

impl Metrics {
    /// Counters that report `admission` and, when there is one, the database `pool`.
    pub(crate) fn new(admission: Arc<Admission>, pool: Option<Arc<dyn PoolMetrics>>) -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let durations = HistogramFamily::new_with_constructor(latency_histogram);
        let tokens = Family::<TokenLabels, Counter>::default();
        let sign_in_outcomes = Family::<OutcomeLabel, Counter>::default();
        let lti_launches = Family::<LaunchLabels, Counter>::default();
        let media_bytes = Family::<DirectionLabel, Counter>::default();
        let transfers = Family::<DirectionLabel, Gauge>::default();
        let out_of_space = Counter::default();
        let reads = Family::<PlaceLabel, Counter>::default();
        let mut registry = Registry::default();
        declare(
            &mut registry,
            "medialib_db_reads",
            "Reads that may run on the async worker (describe, bearer checks, introspection, info, \
             embed, video, user and permission GET), by where they ran: worker (the store answered without \
             waiting) or pool (the blocking pool).",
            &reads,
        );
        declare(
            &mut registry,
            "medialib_out_of_space",
            "Requests refused with 507 because the database or the media storage was out of space.",
            &out_of_space,
        );
        declare(
            &mut registry,
            "medialib_media_bytes",
            "Media bytes received from clients (in: uploads) and sent to them (out: delivery).",
            &media_bytes,
        );
        declare(
            &mut registry,
            "medialib_media_transfers_in_progress",
            "Uploads (in) and deliveries (out) moving bytes right now.",
            &transfers,
        );
        declare(
            &mut registry,
            "medialib_http_requests",
            "HTTP requests answered, by route pattern, method and status.",
            &requests,
        );
        declare(
            &mut registry,
            "medialib_http_request_duration_seconds",
            "Time from receiving a request to its response head, by route pattern and method.",
            &durations,
        );
        registry.register_collector(Box::new(PoolCollector(pool)));
        declare(
            &mut registry,
            "medialib_oauth_token_requests",
            "Token endpoint requests, by grant type and outcome (issued, or the RFC 6749 error code).",
            &tokens,
        );
        declare(
            &mut registry,
            "medialib_sign_ins",
            "Browser sign-in attempts that reached the sign-in provider, by outcome.",
            &sign_in_outcomes,
        );
        declare(
            &mut registry,
            "medialib_lti_launches",
            "LTI launches, by LTI version and outcome (a page, or why it was refused).",
            &lti_launches,
        );
        registry.register_collector(Box::new(AdmissionCollector(admission)));
        // Both series exist from the start; a clone shares its count with the family's. One
        // statement each: the guard `get_or_create` returns holds the family's lock until
        // the statement ends, and the next one, creating a series, needs it exclusively.
        let reads_on_worker = reads.get_or_create(&PlaceLabel { place: "worker" }).clone();
        let reads_on_pool = reads.get_or_create(&PlaceLabel { place: "pool" }).clone();
        Self {
            registry,
            requests,
            durations,
            tokens,
            sign_ins: sign_in_outcomes,
            lti_launches,
            media_bytes,
            transfers,
            out_of_space,
            reads_on_worker,
            reads_on_pool,
            out_of_space_at: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Counts a read that may run on the async worker, by where it ran.
    pub(crate) fn count_read(&self, place: ReadPlace) {
        match place {
            ReadPlace::Worker => self.reads_on_worker.inc(),
            ReadPlace::Pool => self.reads_on_pool.inc(),
        };
    }

    /// How long ago a request was last refused for want of space, if one was.
    pub(crate) fn out_of_space_seen(&self) -> Option<Duration> {
        let at = self
            .out_of_space_at
            .load(std::sync::atomic::Ordering::Relaxed);
        (at > 0).then(|| Duration::from_secs(unix_seconds().saturating_sub(at)))
    }

    /// Counts media bytes moved.
    pub(crate) fn media_bytes(&self, direction: Direction, n: u64) {
        self.media_bytes.get_or_create(&direction.label()).inc_by(n);
    }

    /// Counts a transfer in progress until the guard is dropped.
    pub(crate) fn transfer(&self, direction: Direction) -> TransferGauge {
        let gauge = self.transfers.get_or_create(&direction.label()).clone();
        gauge.inc();
        TransferGauge { gauge }
    }

    fn observe_request(&self, route: Route, method: &'static str, status: u16, took: Duration) {
        if status == 507 {
            self.out_of_space.inc();
            self.out_of_space_at
                .store(unix_seconds().max(1), std::sync::atomic::Ordering::Relaxed);
        }
        let labels = RouteLabels { route, method };
        self.durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        let RouteLabels { route, method } = labels;
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .inc();
    }

    fn count_token_request(&self, grant_type: &'static str, outcome: &'static str) {
        self.tokens
            .get_or_create(&TokenLabels {
                grant_type,
                outcome,
            })
            .inc();
    }

    /// Counts an LTI launch of `version` (`1.1`, `1.3`) by `outcome`.
    pub(crate) fn count_lti_launch(&self, version: &'static str, outcome: &'static str) {
        self.lti_launches
            .get_or_create(&LaunchLabels { version, outcome })
            .inc();
    }

    fn count_sign_in(&self, outcome: &'static str) {
        self.sign_ins.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    /// The exposition text.
    fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

/// Now, in seconds since the Unix epoch.
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A family that is declared (`# HELP`, `# TYPE`) from the first scrape on, before its first
/// series, as `Registry::register` does not: a fresh process shows every family it exposes.
#[derive(Debug)]
struct Declared<M> {
    name: &'static str,
    help: &'static str,
    metric: M,
}

impl<M: EncodeMetric + fmt::Debug + Send + Sync + 'static> Collector for Declared<M> {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let family =
            encoder.encode_descriptor(self.name, self.help, None, self.metric.metric_type())?;
        self.metric.encode(family)
    }
}

/// Registers `metric` as the family `name`, declared from the first scrape on.
fn declare<M>(registry: &mut Registry, name: &'static str, help: &'static str, metric: &M)
where
    M: EncodeMetric + Clone + fmt::Debug + Send + Sync + 'static,
{
    let metric = metric.clone();
    registry.register_collector(Box::new(Declared { name, help, metric }));
}

/// The database pool's gauges, read on each scrape.
struct PoolCollector(Option<Arc<dyn PoolMetrics>>);

impl fmt::Debug for PoolCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PoolCollector")
            .field(&self.0.is_some())
            .finish()
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

impl Collector for PoolCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let Some(pool) = &self.0 else {
            return Ok(());
        };
        let usage = pool.usage();
        let mut connections = encoder.encode_descriptor(
            "medialib_db_pool_connections",
            "Database connections in the pool, by state.",
            None,
            MetricType::Gauge,
        )?;
        for (state, value) in [("idle", usage.idle), ("in_use", usage.in_use)] {
            ConstGauge::new(i64::from(value))
                .encode(connections.encode_family(&StateLabel { state })?)?;
        }
        gauge(
            &mut encoder,
            "medialib_db_pool_max_connections",
            "The most connections the database pool opens.",
            i64::from(usage.max),
        )
    }
}

/// The load-shedding series (see `admission.rs`), read on each scrape.
#[derive(Debug)]
struct AdmissionCollector(Arc<Admission>);

impl Collector for AdmissionCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let admission = &self.0;
        gauge(
            &mut encoder,
            "medialib_requests_in_flight",
            "Requests doing database or password work now, queued ones included.",
            i64::try_from(admission.in_flight()).unwrap_or(i64::MAX),
        )?;
        if admission.limit() != usize::MAX {
            gauge(
                &mut encoder,
                "medialib_requests_in_flight_max",
                "The most requests admitted to database or password work at once (max_in_flight).",
                i64::try_from(admission.limit()).unwrap_or(i64::MAX),
            )?;
            gauge(
                &mut encoder,
                "medialib_requests_in_flight_cap",
                "The cap a standing queue set on requests in flight (max_in_flight when none is in force).",
                i64::try_from(admission.cap()).unwrap_or(i64::MAX),
            )?;
        }
        gauge(
            &mut encoder,
            "medialib_requests_shedding",
            "1 while a cap on requests in flight is in force because waits for database work stood above shed_queue_delay.",
            i64::from(admission.shedding()),
        )?;

        let shed = prometheus_client::metrics::counter::ConstCounter::new(admission.shed());
        shed.encode(encoder.encode_descriptor(
            "medialib_requests_shed",
            "Requests answered 503 by load shedding: at once (max_in_flight, or a standing queue), or when their work would start after waiting past shed_queue_delay behind a standing queue of more than 16.",
            None,
            MetricType::Counter,
        )?)
    }
}

fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: i64) -> fmt::Result {
    ConstGauge::new(value).encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Registers `GET /metrics`.
///
/// The middleware and the exposition find the counters as app data of their own, so that
/// they need nothing else of the application's state.
pub(crate) fn configure(cfg: &mut web::ServiceConfig, metrics: Arc<Metrics>) {
    cfg.app_data(web::Data::from(metrics))
        .service(crate::routing::read_only(METRICS_PATH, exposition));
}

/// `GET /metrics`.
async fn exposition(metrics: web::Data<Metrics>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(CONTENT_TYPE)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(metrics.render())
}

/// The route label of an answered request: its resource's pattern, else the pattern the
/// routing table matches, else `other`.
fn route_label(req: &HttpRequest) -> Route {
    match req.app_data::<RoutePattern>() {
        Some(RoutePattern(pattern)) => Cow::Borrowed(pattern),
        None => req
            .match_pattern()
            .map_or(Cow::Borrowed("other"), Cow::Owned),
    }
}

/// Middleware (for `middleware::from_fn`), inside path normalisation so that the route
/// pattern is found for `/path/` too: counts and times every request.
pub async fn track(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let metrics = req
        .app_data::<web::Data<Metrics>>()
        .map(|metrics| metrics.clone().into_inner());
    let method = method_label(req.method());
    let started = Instant::now();
    let result = next.call(req).await;
    let Some(metrics) = metrics else {
        return result;
    };
    let route = match &result {
        Ok(res) => route_label(res.request()),
        // An error out of the inner middleware leaves no request to name the route by.
        Err(_) => Cow::Borrowed("other"),
    };
    let took = started.elapsed();
    let (status, error) = match &result {
        Ok(res) => (res.status(), res.response().error()),
        Err(error) => (error.as_response_error().status_code(), Some(error)),
    };
    if route == TOKEN_ROUTE && method == "POST" {
        let grant_type = result.as_ref().ok().map_or(NO_GRANT_TYPE, |res| {
            res.request()
                .extensions()
                .get::<GrantType>()
                .map_or(NO_GRANT_TYPE, |g| g.0)
        });
        metrics.count_token_request(grant_type, token_outcome(status.is_success(), error));
    }
    metrics.observe_request(route, method, status.as_u16(), took);
    result
}

/// A bounded method label.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// The `grant_type` label when the request was refused before its grant type was read.
const NO_GRANT_TYPE: &str = "none";

/// The token request's grant type, as a bounded label (request extension).
#[derive(Debug, Clone, Copy)]
struct GrantType(&'static str);

/// Notes the token request's `grant_type` for the token counter (called by the token
/// endpoint once it has read the parameter).
pub(crate) fn note_grant_type(req: &HttpRequest, grant_type: &str) {
    let label = match grant_type {
        "authorization_code" => "authorization_code",
        "refresh_token" => "refresh_token",
        _ => "unsupported",
    };
    req.extensions_mut().insert(GrantType(label));
}

/// `issued`, or why the token endpoint refused.
fn token_outcome(success: bool, error: Option<&actix_web::Error>) -> &'static str {
    if success {
        return "issued";
    }
    match error.and_then(|e| e.as_error::<ApiError>()) {
        Some(ApiError::OAuth { code, .. }) => code.as_str(),
        Some(ApiError::TooManyRequests { .. }) => "rate_limited",
        Some(ApiError::DatabaseUnavailable) => "temporarily_unavailable",
        Some(ApiError::Internal) | None => "server_error",
        Some(_) => "invalid_request",
    }
}

/// Counts a sign-in attempt's outcome (called by the sign-in handlers).
pub(crate) fn count_sign_in<T>(metrics: &Metrics, outcome: &Result<T, SignInError>) {
    let label = match outcome {
        Ok(_) => "success",
        Err(SignInError::InvalidCredentials) => "invalid_credentials",
        Err(SignInError::SlowDown(_)) => "slowed_down",
        Err(SignInError::Unsupported) => "unsupported",
        Err(SignInError::Unavailable(_)) => "unavailable",
        Err(SignInError::Store(_)) => "error",
    };
    metrics.count_sign_in(label);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_is_cumulative_and_ends_in_inf() {
        let metrics = Metrics::default();
        for ms in [1, 7, 7, 300, 20_000] {
            metrics.observe_request("/x".into(), "GET", 200, Duration::from_millis(ms));
        }
        let text = metrics.render();
        let bucket = |le: &str| {
            let prefix = format!(
                "medialib_http_request_duration_seconds_bucket{{route=\"/x\",method=\"GET\",le=\"{le}\"}} "
            );
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .unwrap_or_else(|| panic!("no bucket {le} in\n{text}"))
                .to_owned()
        };
        assert_eq!(bucket("0.005"), "1");
        assert_eq!(bucket("0.01"), "3");
        assert_eq!(bucket("0.25"), "3");
        assert_eq!(bucket("0.5"), "4");
        assert_eq!(bucket("10"), "4");
        assert_eq!(bucket("+Inf"), "5");
        assert!(text.contains(
            "medialib_http_request_duration_seconds_count{route=\"/x\",method=\"GET\"} 5\n"
        ));
        assert!(text.contains(
            "medialib_http_requests_total{route=\"/x\",method=\"GET\",status=\"200\"} 5\n"
        ));
    }

    #[test]
    fn label_values_are_escaped() {
        let metrics = Metrics::default();
        metrics.observe_request("a\"b\\c\nd".into(), "GET", 200, Duration::ZERO);
        assert!(metrics.render().contains(r#"route="a\"b\\c\nd""#));
    }

    #[test]
    fn pool_gauges_appear_only_with_a_pool() {
        struct Fixed;
        impl PoolMetrics for Fixed {
            fn usage(&self) -> PoolUsage {
                PoolUsage {
                    idle: 2,
                    in_use: 1,
                    max: 8,
                }
            }
        }
        assert!(!Metrics::default().render().contains("medialib_db_pool"));
        let metrics = Metrics::new(Arc::default(), Some(Arc::new(Fixed)));
        let text = metrics.render();
        assert!(text.contains("medialib_db_pool_connections{state=\"idle\"} 2\n"));
        assert!(text.contains("medialib_db_pool_connections{state=\"in_use\"} 1\n"));
        assert!(text.contains("medialib_db_pool_max_connections 8\n"));
    }

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
    }
}
