//! Building and running the HTTP server from [`Settings`] (zero2prod's `startup.rs`).

use std::fmt;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpServer;
use actix_web::dev::Server;
use medialib_adapters_diesel::DieselStore;
use medialib_adapters_sso::{HeaderSso, LocalDirectory, OidcConfig, OidcProvider};
use medialib_api_actix::{
    AppState, HttpConfig, PoolMetrics, PoolUsage, RateLimitConfig, TrustedProxies,
};
use medialib_domain::Lifetime;
use medialib_domain::oauth::{Issuer, TokenLifetimes};
use medialib_ports::{PurgeReport, ServiceSettings, Services, SsoProvider};
use tracing::Instrument as _;

use crate::configuration::{BaseUrl, OidcSettings, Settings, Sso, TrustedProxy};
use crate::database::{self, DatabaseError, DatabaseReadiness};
use crate::tls::{self, TlsError};
use crate::worker::Workers;
use crate::world::{OsRandom, SystemClock};

/// Seconds that in-flight requests get to finish after Ctrl-C or SIGTERM.
pub const SHUTDOWN_TIMEOUT_SECONDS: u64 = 30;

/// How long a client may take to send a request head (then 408 and the connection closes);
/// the API gives a body 30 s more (`BODY_TIMEOUT` in api-actix).
const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Turns Nagle's algorithm off on an accepted connection (`TCP_NODELAY`), plain or TLS.
///
/// actix-web leaves it on, and it holds back a write smaller than a segment while an earlier
/// one is unacknowledged. An answer written in one piece never meets it, but a large one is
/// handed to the socket in pieces of about 32 KiB (`answers::Chunked` in api-actix: catalog
/// listings, media ranges), smaller than a loopback segment (64 KiB), and each piece after
/// the first waited for the reader's delayed acknowledgement: 40 ms at the end of a 1 MiB
/// range (docs/performance.md).
fn send_without_delay(conn: &dyn std::any::Any, _: &mut actix_web::dev::Extensions) {
    use actix_tls::accept::rustls_0_23::TlsStream;
    use actix_web::rt::net::TcpStream;
    let tcp = conn.downcast_ref::<TcpStream>().or_else(|| {
        conn.downcast_ref::<TlsStream<TcpStream>>()
            .map(|tls| tls.get_ref().0)
    });
    match tcp.map(|tcp| tcp.set_nodelay(true)) {
        Some(Ok(())) => {}
        Some(Err(e)) => tracing::debug!(error = %e, "cannot set TCP_NODELAY"),
        None => tracing::debug!("a connection of an unknown type: TCP_NODELAY not set"),
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The database could not be opened, migrated or initialised.
    #[error(transparent)]
    Database(#[from] DatabaseError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address from `bind`.
        addr: std::net::SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The certificate or key of `tls_cert`/`tls_key` cannot serve HTTPS.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The blocking database setup task did not finish.
    #[error("the database setup task failed: {0}")]
    Task(String),
    /// The media storage cannot be opened.
    #[error("{0}")]
    Storage(String),
    /// The processing workers cannot start (their `work_dir` cannot be created).
    #[error("{0}")]
    Workers(String),
}

impl StartupError {
    /// True when the operator's configuration is at fault (exit code 2).
    pub fn is_configuration_error(&self) -> bool {
        matches!(self, Self::Tls(_) | Self::Storage(_) | Self::Workers(_))
    }
}

/// A bound, ready-to-run HTTP server, with its housekeeping.
pub struct Application {
    port: u16,
    base_url: BaseUrl,
    server: Server,
    housekeeping: Housekeeping,
    workers: Workers,
}

impl Application {
    /// Opens and migrates the database, ensures the organization's namespace,
    /// binds `settings.bind` (port 0 picks a free port) and builds the server.
    ///
    /// With `tls_cert` and `tls_key` it serves HTTPS (HTTP/1.1 and HTTP/2 by ALPN); the
    /// files are read before the database is touched, so a bad pair fails fast.
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        let tls = settings.tls.as_ref().map(tls::server_config).transpose()?;
        let url = settings.database_url.clone();
        let pool = database::pool_options(&settings);
        let database = actix_web::rt::task::spawn_blocking(move || database::prepare(&url, &pool))
            .await
            .map_err(|error| StartupError::Task(error.to_string()))??;
        let listener = TcpListener::bind(settings.bind).map_err(|source| StartupError::Bind {
            addr: settings.bind,
            source,
        })?;
        let local = listener.local_addr().map_err(|source| StartupError::Bind {
            addr: settings.bind,
            source,
        })?;
        let base_url = settings.base_url_for(local);
        let services = services(&settings, &base_url, database.clone())?;
        match services.uploads().release_stale_locks() {
            Ok(0) => {}
            Ok(n) => tracing::info!(locks = n, "freed upload locks held before a restart"),
            Err(error) => tracing::warn!(%error, "cannot free upload locks held before a restart"),
        }
        let workers = Workers::start(&services, &settings, settings.workers)
            .map_err(|e| StartupError::Workers(e.to_string()))?;
        let housekeeping = Housekeeping {
            services: services.clone(),
            every: Duration::from_secs(u64::from(settings.purge_interval.seconds())),
        };
        let http = HttpConfig {
            base_url: base_url.as_str().to_owned(),
            cors_origins: settings.cors_origins.clone(),
            embed_origins: settings.embed_origins.clone(),
            docs_client_id: settings.docs_client_id.clone(),
            db_deadline: Some(std::time::Duration::from_secs(
                2 * u64::from(settings.db_timeout.seconds()),
            )),
            rate_limits: RateLimitConfig {
                token_per_minute: settings.rate_limit_token.get(),
                login_per_minute: settings.rate_limit_login.get(),
            },
            trusted_proxies: trusted_proxies(&settings.trusted_proxies),
            sso_header: match &settings.sso {
                Sso::Header { header } => Some(header.clone()),
                Sso::Local | Sso::Oidc(_) => None,
            },
            max_in_flight: usize::try_from(settings.max_in_flight.get()).ok(),
            shed_queue_delay: (settings.shed_queue_delay > 0)
                .then(|| Duration::from_millis(u64::from(settings.shed_queue_delay))),
            answer_budget: usize::try_from(settings.answer_budget).ok(),
            https_only: tls.is_some(),
            storage_redirect: settings.storage_redirect,
            inline_reads: database.backend() == medialib_adapters_diesel::Backend::Sqlite,
        };
        let pool = Arc::new(DatabasePool(database.clone()));
        let readiness = crate::media::Ready {
            database: DatabaseReadiness::new(database),
            storage: services.uploads().storage().clone(),
        };
        let state = AppState::new(Arc::new(readiness), services, http).with_pool_metrics(pool);
        let blocking_threads = AppState::blocking_threads_per_worker(
            usize::try_from(settings.db_pool_size.get()).unwrap_or(usize::MAX),
        );
        let server = HttpServer::new(move || medialib_api_actix::app(state.clone()))
            .on_connect(send_without_delay)
            .worker_max_blocking_threads(blocking_threads)
            .shutdown_timeout(SHUTDOWN_TIMEOUT_SECONDS)
            .client_request_timeout(CLIENT_REQUEST_TIMEOUT)
            .shutdown_signal(shutdown_signal());
        let https = tls.is_some();
        let server = match tls {
            Some(config) => server.listen_rustls_0_23(listener, config),
            None => server.listen(listener),
        }
        .map_err(|source| StartupError::Bind {
            addr: local,
            source,
        })?
        .run();
        tracing::info!(
            address = %local,
            base_url = %base_url,
            https,
            malloc_arena_max = std::env::var(crate::malloc::ARENA_MAX_VAR).ok().as_deref(),
            malloc_mmap_threshold = std::env::var(crate::malloc::MMAP_THRESHOLD_VAR)
                .ok()
                .as_deref(),
            malloc_trim_threshold = std::env::var(crate::malloc::TRIM_THRESHOLD_VAR)
                .ok()
                .as_deref(),
            "listening"
        );
        Ok(Self {
            port: local.port(),
            base_url,
            server,
            housekeeping,
            workers,
        })
    }

    /// The port actually bound.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The public base URL (configured, or derived from the bound address).
    pub fn base_url(&self) -> &BaseUrl {
        &self.base_url
    }

    /// Serves until Ctrl-C or SIGTERM, then drains in-flight requests for up
    /// to [`SHUTDOWN_TIMEOUT_SECONDS`].
    ///
    /// Housekeeping runs alongside (each pass on the blocking pool, so it never holds up a
    /// request) and stops with the server: a pass still waiting for a blocking thread is
    /// dropped, so it cannot keep the process alive.
    ///
    /// The processing workers (`workers`) stop with it: a job in progress is released, to be
    /// taken again by the next worker.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let housekeeping = self.housekeeping.run();
        let result = tokio::select! {
            result = self.server => result,
            never = housekeeping => match never {},
        };
        let workers = self.workers;
        if !workers.is_empty() {
            let stopped = actix_web::rt::task::spawn_blocking(move || workers.stop()).await;
            if let Err(error) = stopped {
                tracing::warn!(%error, "the processing workers did not stop cleanly");
            }
        }
        result
    }
}

impl fmt::Debug for Application {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Application")
            .field("port", &self.port)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// The database pool's usage for `GET /metrics`.
struct DatabasePool(medialib_adapters_diesel::Database);

impl PoolMetrics for DatabasePool {
    fn usage(&self) -> PoolUsage {
        let (connections, idle) = self.0.pool_state();
        PoolUsage {
            idle,
            in_use: connections.saturating_sub(idle),
            max: self.0.pool_max_size(),
        }
    }
}

/// Deletes expired codes, tokens and sessions every `every`.
struct Housekeeping {
    services: Services,
    every: Duration,
}

impl Housekeeping {
    /// Runs a pass every `self.every`, the first one interval after start. Never returns.
    async fn run(self) -> std::convert::Infallible {
        let start = tokio::time::Instant::now() + self.every;
        let mut ticks = tokio::time::interval_at(start, self.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let services = self.services.clone();
            let span = tracing::info_span!("housekeeping");
            let pass = actix_web::rt::task::spawn_blocking(move || {
                let report = services.purge_expired();
                match services.uploads().purge_expired_uploads() {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(uploads = n, "housekeeping deleted expired uploads"),
                    Err(error) => tracing::warn!(%error, "deleting expired uploads failed"),
                }
                match services.uploads().purge_deleted_objects() {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(
                        objects = n,
                        "housekeeping purged objects deleted more than 30 days ago"
                    ),
                    Err(error) => tracing::warn!(%error, "purging deleted objects failed"),
                }
                report
            });
            match pass.instrument(span.clone()).await {
                Ok(Ok(report)) => span.in_scope(|| log_purge(&report)),
                Ok(Err(error)) => span.in_scope(|| {
                    tracing::warn!(%error, "housekeeping failed; trying again at the next interval");
                }),
                Err(error) => span.in_scope(|| {
                    tracing::warn!(%error, "the housekeeping task did not finish");
                }),
            }
        }
    }
}

/// Logs what a housekeeping pass deleted: at info when it deleted anything, else at debug.
fn log_purge(report: &PurgeReport) {
    // Each count is a field of the event, named as in the report: the list is written once.
    macro_rules! info_counts {
        ($($count:ident),+) => {{
            let PurgeReport { $($count),+ } = *report;
            tracing::info!($($count,)+ "housekeeping deleted expired records");
        }};
    }
    if *report == PurgeReport::default() {
        tracing::debug!("housekeeping: nothing expired");
    } else {
        info_counts! { codes, access_tokens, refresh_tokens, grants, sessions, pending_sign_ins }
    }
}

/// The `oidc` provider for `settings`, redirecting back to `base_url`. It contacts the
/// identity provider only at the first sign-in, so a provider that is down does not stop
/// medialib from starting. `None` (every sign-in refused, logged) if the settings cannot work.
fn oidc_provider(settings: &OidcSettings, base_url: &BaseUrl) -> Option<Arc<dyn SsoProvider>> {
    let config = OidcConfig {
        issuer: settings.issuer.clone(),
        client_id: settings.client_id.clone(),
        client_secret: settings
            .client_secret
            .as_ref()
            .map(|s| medialib_domain::Secret::new(s.expose())),
        unique_id_claim: settings.unique_id_claim.clone(),
        base_url: base_url.as_str().to_owned(),
        clock_skew_seconds: settings.clock_skew_seconds,
    };
    match OidcProvider::new(config) {
        Ok(provider) => {
            tracing::info!(
                issuer = %settings.issuer,
                redirect_uri = provider.redirect_uri(),
                "signing in through OpenID Connect"
            );
            if !settings.issuer.starts_with("https://") {
                tracing::warn!(
                    issuer = %settings.issuer,
                    "the OpenID Connect issuer is not https: use plain http only for a provider on this host"
                );
            }
            Some(Arc::new(provider))
        }
        Err(error) => {
            tracing::error!(%error, "sso = oidc cannot work: every browser sign-in is refused");
            None
        }
    }
}

/// Wires the use cases to the database, the system clock, the OS random source and the
/// configured sign-in mode (`local`: the password directory in the same database; `header`:
/// the uniqueId a trusted proxy names, see [`HeaderSso`]; `oidc`: the organization's
/// OpenID Connect provider, see [`OidcProvider`]).
pub fn services(
    settings: &Settings,
    base_url: &BaseUrl,
    database: medialib_adapters_diesel::Database,
) -> Result<Services, StartupError> {
    // Ttl values are validated positive at load time; 0 cannot reach here.
    let lifetime = |secs: u32| {
        Lifetime::from_nonzero(std::num::NonZeroU32::new(secs).unwrap_or(std::num::NonZeroU32::MIN))
    };
    let store = Arc::new(DieselStore::new(database));
    let sso: Option<Arc<dyn SsoProvider>> = match settings.sso {
        Sso::Local => Some(Arc::new(LocalDirectory::new(store.clone()))),
        Sso::Oidc(ref oidc) => oidc_provider(oidc, base_url),
        Sso::Header { .. } => Some(Arc::new(HeaderSso::new())),
    };
    let services = Services::new(
        store,
        Arc::new(SystemClock),
        Arc::new(OsRandom),
        ServiceSettings {
            lifetimes: TokenLifetimes {
                access: lifetime(settings.access_token_ttl.seconds()),
                refresh: lifetime(settings.refresh_token_ttl.seconds()),
                retry_grace: std::num::NonZeroU32::new(settings.refresh_token_retry_grace)
                    .map(Lifetime::from_nonzero),
            },
            code_ttl: lifetime(settings.code_ttl.seconds()),
            issuer: Issuer::new(base_url.as_str()),
            session_ttl: lifetime(settings.session_ttl.seconds()),
        },
    );
    let services = match sso {
        Some(sso) => services.with_sso(sso),
        None => services,
    };
    let storage = crate::media::open_storage(&settings.storage)
        .map_err(|e| StartupError::Storage(e.to_string()))?;
    Ok(services
        .with_storage(storage, crate::media::upload_settings(settings))
        .with_lti_tokens(Arc::new(medialib_adapters_sso::LtiCrypto::new())))
}

/// The configured `trusted_proxies` as the web layer asks about them (nobody when empty).
fn trusted_proxies(networks: &[TrustedProxy]) -> TrustedProxies {
    if networks.is_empty() {
        return TrustedProxies::none();
    }
    let networks = networks.to_vec();
    TrustedProxies::matching(move |ip| networks.iter().any(|n| n.contains(ip)))
}

/// Resolves on the first Ctrl-C (SIGINT) or SIGTERM. actix treats SIGINT as a
/// forced stop; medialib drains on both (DECISIONS.md §1). A signal that cannot
/// be watched is logged and never fires.
pub(crate) async fn shutdown_signal() {
    async fn ctrl_c() {
        match tokio::signal::ctrl_c().await {
            Ok(()) => tracing::info!("Ctrl-C received; draining in-flight requests"),
            Err(error) => {
                tracing::warn!(%error, "cannot watch Ctrl-C");
                std::future::pending::<()>().await;
            }
        }
    }

    #[cfg(unix)]
    async fn terminate() {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
                tracing::info!("SIGTERM received; draining in-flight requests");
            }
            Err(error) => {
                tracing::warn!(%error, "cannot watch SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    }

    #[cfg(not(unix))]
    async fn terminate() {
        std::future::pending::<()>().await;
    }

    tokio::select! {
        () = ctrl_c() => {}
        () = terminate() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain connection gets `TCP_NODELAY` (off before: the positive control); a connection
    /// of a type it does not know is left as it is, without a panic.
    #[actix_web::test]
    async fn accepted_connections_send_without_delay() {
        let listener = actix_web::rt::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let client = actix_web::rt::net::TcpStream::connect(addr).await.unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        assert!(!accepted.nodelay().unwrap(), "Nagle is on by default");
        send_without_delay(&accepted, &mut actix_web::dev::Extensions::new());
        assert!(accepted.nodelay().unwrap());
        send_without_delay(&"not a stream", &mut actix_web::dev::Extensions::new());
        drop(client);
    }
}
