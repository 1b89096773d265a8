//! Building and running the HTTP server from [`Settings`] (zero2prod's `startup.rs`).

use std::fmt;
use std::net::TcpListener;
use std::sync::Arc;

use actix_web::HttpServer;
use actix_web::dev::Server;
use medialib_adapters_diesel::DieselStore;
use medialib_api_actix::{AppState, HttpConfig};
use medialib_domain::Lifetime;
use medialib_domain::oauth::{Issuer, TokenLifetimes};
use medialib_ports::{ServiceSettings, Services};

use crate::configuration::{BaseUrl, Settings};
use crate::database::{self, DatabaseError, DatabaseReadiness};
use crate::world::{OsRandom, SystemClock};

/// Seconds that in-flight requests get to finish after Ctrl-C or SIGTERM.
pub const SHUTDOWN_TIMEOUT_SECONDS: u64 = 30;

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
    /// HTTPS was asked for but this build does not serve it yet.
    #[error(
        "tls_cert/tls_key are set, but this version of medialib cannot serve HTTPS yet; unset them and terminate TLS in a reverse proxy"
    )]
    TlsUnsupported,
    /// The blocking database setup task did not finish.
    #[error("the database setup task failed: {0}")]
    Task(String),
}

impl StartupError {
    /// True when the operator's configuration is at fault (exit code 2).
    pub fn is_configuration_error(&self) -> bool {
        matches!(self, Self::TlsUnsupported)
    }
}

/// A bound, ready-to-run HTTP server.
pub struct Application {
    port: u16,
    base_url: BaseUrl,
    server: Server,
}

impl Application {
    /// Opens and migrates the database, ensures the organization's namespace,
    /// binds `settings.bind` (port 0 picks a free port) and builds the server.
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        if settings.tls.is_some() {
            return Err(StartupError::TlsUnsupported);
        }
        let url = settings.database_url.clone();
        let database = actix_web::rt::task::spawn_blocking(move || database::prepare(&url))
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
        let services = services(&settings, &base_url, database.clone());
        let http = HttpConfig {
            base_url: base_url.as_str().to_owned(),
            cors_origins: settings.cors_origins.clone(),
            rate_limits: medialib_api_actix::RateLimitConfig::default(),
        };
        let state =
            AppState::new(Arc::new(DatabaseReadiness::new(database))).with_api(services, http);
        let server = HttpServer::new(move || medialib_api_actix::app(state.clone()))
            .shutdown_timeout(SHUTDOWN_TIMEOUT_SECONDS)
            .shutdown_signal(shutdown_signal())
            .listen(listener)
            .map_err(|source| StartupError::Bind {
                addr: local,
                source,
            })?
            .run();
        tracing::info!(address = %local, base_url = %base_url, "listening");
        Ok(Self {
            port: local.port(),
            base_url,
            server,
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
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
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

/// Wires the use cases to the database, the system clock and the OS random source.
pub fn services(
    settings: &Settings,
    base_url: &BaseUrl,
    database: medialib_adapters_diesel::Database,
) -> Services {
    // Ttl values are validated positive at load time; 0 cannot reach here.
    let lifetime = |secs: u32| {
        Lifetime::from_nonzero(std::num::NonZeroU32::new(secs).unwrap_or(std::num::NonZeroU32::MIN))
    };
    Services::new(
        Arc::new(DieselStore::new(database)),
        Arc::new(SystemClock),
        Arc::new(OsRandom),
        ServiceSettings {
            lifetimes: TokenLifetimes {
                access: lifetime(settings.access_token_ttl.seconds()),
                refresh: lifetime(settings.refresh_token_ttl.seconds()),
            },
            code_ttl: lifetime(settings.code_ttl.seconds()),
            issuer: Issuer::new(base_url.as_str()),
            session_ttl: lifetime(settings.session_ttl.seconds()),
        },
    )
}

/// Resolves on the first Ctrl-C (SIGINT) or SIGTERM. actix treats SIGINT as a
/// forced stop; medialib drains on both (DECISIONS.md §1). A signal that cannot
/// be watched is logged and never fires.
async fn shutdown_signal() {
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
