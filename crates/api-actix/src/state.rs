//! What the handlers share: trait objects and services supplied by the composition root.

use std::fmt;
use std::sync::Arc;

use actix_web::HttpRequest;
use medialib_ports::Services;

use crate::admission::{Admission, SignIns};
use crate::answers::AnswerBudget;
use crate::metrics::{Metrics, PoolMetrics};
use crate::proxy::{ClientInfo, TrustedProxies};
use crate::ratelimit::{RateLimitConfig, RateLimits};

/// Tells whether the service can do useful work (for `GET /readyz`).
///
/// Implementations may block (a database round trip); handlers call them
/// through `web::block`.
pub trait Readiness: Send + Sync + 'static {
    /// `Ok` when ready; otherwise a reason for the log (never shown to clients).
    fn ready(&self) -> Result<(), String>;
}

/// HTTP-level settings.
#[derive(Debug, Clone, Default)]
pub struct HttpConfig {
    /// Public base URL, no trailing slash (permLinks, embeds, issuer).
    pub base_url: String,
    /// Origins allowed to call the API from a browser.
    pub cors_origins: Vec<String>,
    /// Origins whose pages may frame the landing page a permLink leads to (`embed_origins`;
    /// empty: any).
    pub embed_origins: Vec<String>,
    /// The longest a request's database work may take, pool wait included, before it is
    /// answered 503 + `Retry-After` (twice `db_timeout`): a database that stops answering
    /// without closing its connections (a half-open partition) must not hold requests for as
    /// long as the partition lasts. `None`: no limit.
    pub db_deadline: Option<std::time::Duration>,
    /// The OAuth client the API reference page (`/api/docs`) signs in with
    /// (`docs_client_id`: a public client whose redirect URI is
    /// `{base_url}/api/docs/oauth2-redirect.html`); `None`: the reader types one.
    pub docs_client_id: Option<String>,
    /// Rate limits of the token endpoint and the sign-in form.
    pub rate_limits: RateLimitConfig,
    /// The reverse proxies whose `Forwarded` / `X-Forwarded-*` headers are believed, and
    /// from which the SSO header is accepted (`trusted_proxies`; none by default).
    pub trusted_proxies: TrustedProxies,
    /// In the `header` sign-in mode, the request header in which a trusted proxy names the
    /// signed-in user (`sso_header`, e.g. `Remote-User`); `None` in the other modes.
    pub sso_header: Option<String>,
    /// Requests doing blocking work (database, password hashing) at once, queued ones
    /// included; past it new ones get a 503 at once (`max_in_flight`; `None`: no limit).
    pub max_in_flight: Option<usize>,
    /// The queueing delay past which requests are shed once it persists (`shed_queue_delay`;
    /// `None`: off, only `max_in_flight` sheds). See `admission.rs`.
    pub shed_queue_delay: Option<std::time::Duration>,
    /// Bytes that large answers (catalog listings) may hold at once, from when one starts being
    /// built until its last byte is handed to the socket (`answer_budget`; `None`:
    /// [`DEFAULT_ANSWER_BUDGET`](crate::DEFAULT_ANSWER_BUDGET)). See `answers.rs`.
    pub answer_budget: Option<usize>,
    /// Whether clients reach the service only over HTTPS (native TLS, or an `https://`
    /// base URL behind a TLS proxy): every response then carries `Strict-Transport-Security`.
    pub https_only: bool,
    /// With S3 media storage, answer delivery URLs with a 302 to a presigned URL of the
    /// object store instead of streaming through (`storage_redirect`).
    pub storage_redirect: bool,
    /// Whether reads first run on the async worker, where the store answers without waiting
    /// (`crate::blocking::run_read`): on for an embedded database (SQLite), off for one across
    /// the network, whose every statement is a round trip.
    pub inline_reads: bool,
}

/// The application state every handler can reach: always the whole service (there is no
/// state without the use cases, so no handler has to ask whether they are there).
#[derive(Clone)]
pub struct AppState {
    readiness: Arc<dyn Readiness>,
    api: Arc<Api>,
    /// The `/metrics` counters, shared by every worker (see `metrics.rs`).
    pub(crate) metrics: Arc<Metrics>,
    /// The load-shedding bound, shared by every worker (see `admission.rs`).
    pub(crate) admission: Arc<Admission>,
    /// Password sign-ins that may be on a blocking thread at once, two per CPU (one hashing
    /// while the other reads or writes the database; the hashes themselves are bounded to one
    /// per CPU by the local directory): the others wait here, not on a blocking thread, in a
    /// queue of its own (at most sixteen per slot: `admission.rs`).
    pub(crate) sign_ins: Arc<SignIns>,
    /// Media transfers (uploads, deliveries) that may run at once, each on its own thread.
    transfers: crate::admission::Transfers,
    /// The bytes large answers may hold at once, shared by every worker (see `answers.rs`).
    pub(crate) answers: Arc<AnswerBudget>,
}

struct Api {
    services: Services,
    config: HttpConfig,
    limits: RateLimits,
}

impl AppState {
    /// The state of the service: the readiness probe, the use cases and the HTTP settings.
    pub fn new(readiness: Arc<dyn Readiness>, services: Services, mut config: HttpConfig) -> Self {
        config.base_url = config.base_url.trim_end_matches('/').to_owned();
        let limits = RateLimits::new(config.rate_limits);
        let admission = Arc::new(Admission::new(
            config.max_in_flight,
            config.shed_queue_delay,
        ));
        let sign_ins = Arc::new(SignIns::new(hashing_slots(), &admission));
        let answers = Arc::new(AnswerBudget::new(
            config.answer_budget.unwrap_or(crate::DEFAULT_ANSWER_BUDGET),
            config.db_deadline,
        ));
        Self {
            readiness,
            api: Arc::new(Api {
                services,
                config,
                limits,
            }),
            metrics: Arc::new(Metrics::new(Arc::clone(&admission), None)),
            admission,
            sign_ins,
            transfers: crate::admission::Transfers::default(),
            answers,
        }
    }

    /// The media transfer slots.
    pub(crate) fn transfers(&self) -> &crate::admission::Transfers {
        &self.transfers
    }

    /// Reports the database pool's usage on `/metrics`.
    pub fn with_pool_metrics(mut self, pool: Arc<dyn PoolMetrics>) -> Self {
        self.metrics = Arc::new(Metrics::new(Arc::clone(&self.admission), Some(pool)));
        self
    }

    /// The blocking threads one worker needs: one per pooled database connection, plus one
    /// per sign-in slot (sign-ins wait for a slot before they take a thread). More threads would only wait for a connection, each with its stack and
    /// malloc state resident (docs/performance.md).
    pub fn blocking_threads_per_worker(db_pool_size: usize) -> usize {
        db_pool_size.saturating_add(hashing_slots()).max(2)
    }

    /// The readiness probe.
    pub(crate) fn readiness(&self) -> Arc<dyn Readiness> {
        Arc::clone(&self.readiness)
    }

    /// The use cases.
    pub(crate) fn services(&self) -> &Services {
        &self.api.services
    }

    /// HTTP settings.
    pub(crate) fn config(&self) -> &HttpConfig {
        &self.api.config
    }

    /// The rate limiters.
    pub(crate) fn limits(&self) -> &RateLimits {
        &self.api.limits
    }

    /// The trusted reverse proxies.
    pub(crate) fn trusted_proxies(&self) -> &TrustedProxies {
        &self.config().trusted_proxies
    }

    /// The client of `req`, believing forwarded headers only from the trusted proxies.
    pub(crate) fn client(&self, req: &HttpRequest) -> ClientInfo {
        ClientInfo::of(req, self.trusted_proxies())
    }

    /// The remote address a rate limit is keyed by: the client's (the TCP peer, or the
    /// address a trusted proxy forwarded).
    pub(crate) fn remote_addr(&self, req: &HttpRequest) -> String {
        self.client(req).ip.to_string()
    }

    /// The header that names the user in the `header` sign-in mode; `None` in other modes.
    pub(crate) fn sso_header(&self) -> Option<&str> {
        self.config().sso_header.as_deref()
    }

    /// Whether every response carries `Strict-Transport-Security` (DECISIONS.md §4): under
    /// native TLS, or when the public base URL is `https`.
    pub(crate) fn hsts(&self) -> bool {
        self.is_https() || self.config().https_only
    }

    /// Whether the public base URL is `https` (cookies get `Secure`).
    pub(crate) fn is_https(&self) -> bool {
        self.base_url().starts_with("https://")
    }

    /// The public base URL, no trailing slash.
    pub(crate) fn base_url(&self) -> &str {
        &self.config().base_url
    }

    /// CSP `frame-ancestors` of the pages an LMS frames (the player's landing page, the LTI
    /// pages): `embed_origins`, or any site when it is empty.
    pub(crate) fn frame_ancestors(&self) -> String {
        let origins = &self.config().embed_origins;
        if origins.is_empty() {
            "*".to_owned()
        } else {
            origins.join(" ")
        }
    }
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

/// Password sign-ins that may be on blocking threads at once: two per CPU, so that the
/// local directory's hashing buffers (one per CPU, `adapters-sso`) stay busy while a sign-in
/// reads the stored hash or writes its session (measured: one per CPU lowered the sign-in rate
/// on PostgreSQL by about 10 %).
fn hashing_slots() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .saturating_mul(2)
}
