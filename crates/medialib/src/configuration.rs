//! Settings: an optional TOML file, overridden by `MEDIALIB_*` environment
//! variables, overridden by command-line flags (DECISIONS.md §1).
//!
//! Every value is parsed into a typed field when the settings are loaded, and
//! every problem is reported at once, one line each, naming where the bad
//! value came from. A [`Settings`] value is therefore always usable.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use crate::secret::{Secret, redact_url};

/// One configuration key; the environment variable is `MEDIALIB_` + the name in upper case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Setting {
    DatabaseUrl,
    Bind,
    BaseUrl,
    AccessTokenTtl,
    RefreshTokenTtl,
    CodeTtl,
    SessionTtl,
    PurgeInterval,
    RateLimitToken,
    RateLimitLogin,
    Sso,
    TlsCert,
    TlsKey,
    CorsOrigins,
    Log,
    LogFormat,
    OidcIssuer,
    OidcClientId,
    OidcClientSecret,
    OidcUniqueIdClaim,
    OidcClockSkew,
    SsoHeader,
    TrustedProxies,
    DbPoolSize,
    DbTimeout,
    MaxInFlight,
}

impl Setting {
    const ALL: [Setting; 26] = [
        Setting::DatabaseUrl,
        Setting::Bind,
        Setting::BaseUrl,
        Setting::AccessTokenTtl,
        Setting::RefreshTokenTtl,
        Setting::CodeTtl,
        Setting::SessionTtl,
        Setting::PurgeInterval,
        Setting::RateLimitToken,
        Setting::RateLimitLogin,
        Setting::Sso,
        Setting::TlsCert,
        Setting::TlsKey,
        Setting::CorsOrigins,
        Setting::Log,
        Setting::LogFormat,
        Setting::OidcIssuer,
        Setting::OidcClientId,
        Setting::OidcClientSecret,
        Setting::OidcUniqueIdClaim,
        Setting::OidcClockSkew,
        Setting::SsoHeader,
        Setting::TrustedProxies,
        Setting::DbPoolSize,
        Setting::DbTimeout,
        Setting::MaxInFlight,
    ];

    fn name(self) -> &'static str {
        match self {
            Setting::DatabaseUrl => "database_url",
            Setting::Bind => "bind",
            Setting::BaseUrl => "base_url",
            Setting::AccessTokenTtl => "access_token_ttl",
            Setting::RefreshTokenTtl => "refresh_token_ttl",
            Setting::CodeTtl => "code_ttl",
            Setting::SessionTtl => "session_ttl",
            Setting::PurgeInterval => "purge_interval",
            Setting::RateLimitToken => "rate_limit_token",
            Setting::RateLimitLogin => "rate_limit_login",
            Setting::Sso => "sso",
            Setting::TlsCert => "tls_cert",
            Setting::TlsKey => "tls_key",
            Setting::CorsOrigins => "cors_origins",
            Setting::Log => "log",
            Setting::LogFormat => "log_format",
            Setting::OidcIssuer => "oidc_issuer",
            Setting::OidcClientId => "oidc_client_id",
            Setting::OidcClientSecret => "oidc_client_secret",
            Setting::OidcUniqueIdClaim => "oidc_unique_id_claim",
            Setting::OidcClockSkew => "oidc_clock_skew",
            Setting::SsoHeader => "sso_header",
            Setting::TrustedProxies => "trusted_proxies",
            Setting::DbPoolSize => "db_pool_size",
            Setting::DbTimeout => "db_timeout",
            Setting::MaxInFlight => "max_in_flight",
        }
    }

    fn from_name(name: &str) -> Option<Setting> {
        Setting::ALL.into_iter().find(|k| k.name() == name)
    }

    fn env_var(self) -> String {
        format!("{ENV_PREFIX}{}", self.name().to_ascii_uppercase())
    }

    /// Values never echoed in messages.
    fn is_secret(self) -> bool {
        matches!(self, Setting::OidcClientSecret)
    }
}

/// The default `oidc_clock_skew`, in seconds.
pub const DEFAULT_OIDC_CLOCK_SKEW_SECONDS: u32 = 60;
/// The largest `oidc_clock_skew` accepted: more would make expired ID tokens useful for long.
const MAX_OIDC_CLOCK_SKEW_SECONDS: u32 = 600;

/// The largest `db_pool_size` accepted.
const MAX_DB_POOL_SIZE: u32 = 1_000;
/// The largest `db_timeout` accepted, in seconds.
const MAX_DB_TIMEOUT_SECONDS: u32 = 300;
/// The largest `max_in_flight` accepted.
const MAX_IN_FLIGHT: u32 = 100_000;

/// The prefix of every environment variable the settings read.
pub const ENV_PREFIX: &str = "MEDIALIB_";

/// Where a raw value came from, for error messages.
#[derive(Debug, Clone)]
enum Origin {
    File(PathBuf),
    Env(String),
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Env(var) => f.write_str(var),
            Origin::Flag(flag) => f.write_str(flag),
        }
    }
}

#[derive(Debug, Clone)]
struct Raw {
    value: String,
    origin: Origin,
}

/// Every problem found while loading the settings, one line each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    problems: Vec<String>,
}

impl ConfigError {
    /// The problems, each a complete sentence-like line.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("\n"))
    }
}

impl std::error::Error for ConfigError {}

/// Collects the layers (file, environment, flags) and turns them into [`Settings`].
#[derive(Debug, Default)]
pub struct SettingsLoader {
    file: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    flags: Vec<(String, String)>,
}

impl SettingsLoader {
    /// An empty loader: without layers it yields the defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads this TOML file first (keys as in the table of DECISIONS.md §1, flat, lower case).
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Takes environment variables (only `MEDIALIB_*` names that are keys are read;
    /// others are ignored). Pass `std::env::vars_os()` for the process environment.
    pub fn env_vars<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Sets a key at the highest layer (a command-line flag), e.g. `set("bind", "127.0.0.1:0")`.
    pub fn set(mut self, key: &str, value: impl Into<String>) -> Self {
        self.flags.push((key.to_owned(), value.into()));
        self
    }

    /// Merges the layers and parses every key, reporting all problems together.
    pub fn load(&self) -> Result<Settings, ConfigError> {
        let mut problems = Vec::new();
        let mut values: BTreeMap<Setting, Raw> = BTreeMap::new();
        if let Some(path) = &self.file {
            read_file(path, &mut values, &mut problems);
        }
        for (name, value) in &self.env {
            let Some(name) = name.to_str() else { continue };
            let Some(key) = name
                .strip_prefix(ENV_PREFIX)
                .and_then(|rest| Setting::from_name(&rest.to_ascii_lowercase()))
                .filter(|key| key.env_var() == name)
            else {
                continue;
            };
            match value.to_str() {
                Some(value) => {
                    values.insert(
                        key,
                        Raw {
                            value: value.to_owned(),
                            origin: Origin::Env(name.to_owned()),
                        },
                    );
                }
                None => problems.push(format!("{name}: the value is not valid UTF-8")),
            }
        }
        for (name, value) in &self.flags {
            match Setting::from_name(name) {
                Some(key) => {
                    values.insert(
                        key,
                        Raw {
                            value: value.clone(),
                            origin: Origin::Flag(format!("--{}", name.replace('_', "-"))),
                        },
                    );
                }
                None => problems.push(format!("unknown setting `{name}`")),
            }
        }
        let settings = Parser {
            values,
            problems: &mut problems,
        }
        .settings();
        match settings {
            Some(settings) if problems.is_empty() => Ok(settings),
            _ => Err(ConfigError { problems }),
        }
    }
}

fn read_file(path: &Path, values: &mut BTreeMap<Setting, Raw>, problems: &mut Vec<String>) {
    let shown = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            problems.push(format!(
                "cannot read the configuration file {shown}: {error}"
            ));
            return;
        }
    };
    let table: toml::Table = match text.parse() {
        Ok(table) => table,
        Err(error) => {
            let line = error
                .span()
                .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
            let at = line.map(|l| format!(", line {l}")).unwrap_or_default();
            problems.push(format!(
                "{shown}{at}: not valid TOML: {}",
                error.message().trim()
            ));
            return;
        }
    };
    for (name, value) in table {
        let Some(key) = Setting::from_name(&name) else {
            problems.push(format!("{shown}: unknown key `{name}`"));
            continue;
        };
        let text = match value {
            toml::Value::String(s) => Some(s),
            toml::Value::Integer(i) => Some(i.to_string()),
            toml::Value::Boolean(b) => Some(b.to_string()),
            toml::Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    toml::Value::String(s) => Some(s),
                    _ => None,
                })
                .collect::<Option<Vec<String>>>()
                .map(|items| items.join(",")),
            _ => None,
        };
        match text {
            Some(value) => {
                values.insert(
                    key,
                    Raw {
                        value,
                        origin: Origin::File(path.to_owned()),
                    },
                );
            }
            None => problems.push(format!(
                "{shown}: `{name}` must be a string, an integer or a list of strings"
            )),
        }
    }
}

/// The database to use, as given; `Debug` and `Display` hide any password.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

/// Which kind of database a [`DatabaseUrl`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseKind {
    /// A SQLite file at this path.
    SqliteFile(PathBuf),
    /// A SQLite database that lives only as long as the process.
    SqliteMemory,
    /// A PostgreSQL server.
    Postgres,
}

impl DatabaseUrl {
    /// Accepts `sqlite://PATH` (also `sqlite:PATH`), `sqlite::memory:`,
    /// `postgres://...` or `postgresql://...`.
    pub fn parse(url: &str) -> Result<Self, String> {
        let url = url.trim();
        let sqlite_path = url
            .strip_prefix("sqlite:")
            .map(|rest| rest.strip_prefix("//").unwrap_or(rest));
        let ok = sqlite_path.is_some_and(|path| !path.is_empty())
            || url.starts_with("postgres://")
            || url.starts_with("postgresql://");
        if ok {
            Ok(Self(url.to_owned()))
        } else {
            Err(format!(
                "`{}` is not a supported database URL (expected sqlite://PATH, sqlite::memory: or postgres://...)",
                redact_url(url)
            ))
        }
    }

    /// The kind of database.
    pub fn kind(&self) -> DatabaseKind {
        match self.0.strip_prefix("sqlite:") {
            Some(rest) => match rest.strip_prefix("//").unwrap_or(rest) {
                ":memory:" => DatabaseKind::SqliteMemory,
                path => DatabaseKind::SqliteFile(PathBuf::from(path)),
            },
            None => DatabaseKind::Postgres,
        }
    }

    /// The URL with its password, for the one call that connects.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({:?})", redact_url(&self.0))
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

/// A lifetime in whole seconds, at least 1 and at most ten years.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ttl(u32);

impl Ttl {
    const MAX_SECONDS: u32 = 10 * 365 * 24 * 3600;

    /// Parses a positive integer number of seconds.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().parse::<u64>() {
            Ok(0) | Err(_) => Err(format!(
                "`{text}` is not a positive integer number of seconds"
            )),
            Ok(n) if n > u64::from(Self::MAX_SECONDS) => Err(format!(
                "`{text}` seconds is more than ten years ({} seconds)",
                Self::MAX_SECONDS
            )),
            Ok(n) => Ok(Self(u32::try_from(n).unwrap_or(Self::MAX_SECONDS))),
        }
    }

    /// The lifetime in seconds.
    pub fn seconds(self) -> u32 {
        self.0
    }
}

/// A positive count with an upper bound (pool sizes, concurrency limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(u32);

impl Count {
    /// Parses an integer in `1..=max`.
    pub fn parse(text: &str, max: u32) -> Result<Self, String> {
        match text.trim().parse::<u32>() {
            Ok(n) if (1..=max).contains(&n) => Ok(Self(n)),
            _ => Err(format!("`{text}` is not an integer from 1 to {max}")),
        }
    }

    /// The count.
    pub fn get(self) -> u32 {
        self.0
    }
}

/// A rate limit: requests per minute per key; 0 turns the limit off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerMinute(u32);

impl PerMinute {
    /// The highest limit accepted (far above any sensible one; larger values are typos).
    const MAX: u32 = 1_000_000;

    /// Parses a non-negative integer number of requests per minute (0 = off).
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().parse::<u32>() {
            Ok(n) if n <= Self::MAX => Ok(Self(n)),
            Ok(_) => Err(format!(
                "`{text}` is more than {} requests per minute (0 turns the limit off)",
                Self::MAX
            )),
            Err(_) => Err(format!(
                "`{text}` is not a number of requests per minute (a non-negative integer; 0 turns the limit off)"
            )),
        }
    }

    /// Requests allowed per minute; 0 when the limit is off.
    pub fn get(self) -> u32 {
        self.0
    }
}

/// The public base URL (`http://` or `https://`, no trailing slash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl(String);

impl BaseUrl {
    /// Parses an absolute http(s) URL without query or fragment; a trailing `/` is dropped.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let rest = text
            .strip_prefix("https://")
            .or_else(|| text.strip_prefix("http://"));
        match rest {
            Some(rest)
                if !rest.is_empty()
                    && !rest.starts_with('/')
                    && !rest.contains(['?', '#', ' ']) =>
            {
                Ok(Self(text.trim_end_matches('/').to_owned()))
            }
            _ => Err(format!(
                "`{text}` is not an absolute http:// or https:// URL without query or fragment"
            )),
        }
    }

    /// The default: `http://` + the listen address.
    pub fn for_addr(addr: SocketAddr) -> Self {
        Self(format!("http://{addr}"))
    }

    /// The URL text, without trailing slash.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A proxy address or network trusted to set `X-Forwarded-*` and the SSO header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustedProxy {
    addr: IpAddr,
    prefix: u8,
}

impl TrustedProxy {
    /// Parses `ADDRESS` or `ADDRESS/PREFIX` (IPv4 or IPv6).
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = || format!("`{text}` is not an IP address or CIDR network");
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
        };
        Ok(Self { addr, prefix })
    }

    /// Whether `ip` lies in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl fmt::Display for TrustedProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The PEM files for HTTPS; present only as a pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain.
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

/// How users sign in (`sso`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sso {
    /// medialib's own user directory with passwords.
    Local,
    /// An OpenID Connect identity provider.
    Oidc(OidcSettings),
    /// A trusted reverse proxy names the user in a header.
    Header {
        /// The header that carries the uniqueId (`sso_header`).
        header: String,
    },
}

/// medialib's registration at the OpenID Connect provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcSettings {
    /// The issuer URL, compared verbatim with the `iss` claim.
    pub issuer: String,
    /// medialib's client id at the provider.
    pub client_id: String,
    /// medialib's client secret; `None` for a public client.
    pub client_secret: Option<Secret>,
    /// The claim that becomes the user's uniqueId.
    pub unique_id_claim: String,
    /// How far the provider's clock may be off when ID tokens are checked, in seconds
    /// (`oidc_clock_skew`, default 60; 0 allows none).
    pub clock_skew_seconds: u32,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// JSON when standard output is not a terminal, readable text otherwise.
    Auto,
    /// One JSON object per line.
    Json,
    /// Human-readable lines.
    Text,
}

/// The validated settings of one medialib process.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The database (`database_url`).
    pub database_url: DatabaseUrl,
    /// The listen address (`bind`).
    pub bind: SocketAddr,
    /// The public base URL if configured (`base_url`); see [`Settings::base_url_for`].
    pub base_url: Option<BaseUrl>,
    /// Access token lifetime (`access_token_ttl`).
    pub access_token_ttl: Ttl,
    /// Refresh token idle lifetime (`refresh_token_ttl`).
    pub refresh_token_ttl: Ttl,
    /// Authorization code lifetime (`code_ttl`).
    pub code_ttl: Ttl,
    /// Browser session lifetime after sign-in (`session_ttl`).
    pub session_ttl: Ttl,
    /// Seconds between housekeeping passes that delete expired codes, tokens and
    /// sessions (`purge_interval`).
    pub purge_interval: Ttl,
    /// Token-endpoint requests per minute, per client and per remote address
    /// (`rate_limit_token`; 0 = off).
    pub rate_limit_token: PerMinute,
    /// Sign-in form submissions per minute per remote address (`rate_limit_login`; 0 = off).
    pub rate_limit_login: PerMinute,
    /// The sign-in mode and its parameters (`sso`, `oidc_*`, `sso_header`).
    pub sso: Sso,
    /// HTTPS certificate and key (`tls_cert`, `tls_key`).
    pub tls: Option<TlsFiles>,
    /// Origins allowed by CORS (`cors_origins`).
    pub cors_origins: Vec<String>,
    /// The tracing filter if configured (`log`); commands pick their own default.
    pub log: Option<String>,
    /// The log line format (`log_format`: `auto`, `json` or `text`).
    pub log_format: LogFormat,
    /// Proxies trusted for `X-Forwarded-*` and header SSO (`trusted_proxies`).
    pub trusted_proxies: Vec<TrustedProxy>,
    /// Database connections per process (`db_pool_size`).
    pub db_pool_size: Count,
    /// Seconds a request waits for a database connection before it gets a 503 (`db_timeout`).
    pub db_timeout: Ttl,
    /// Requests doing database or password work at once, queued ones included, beyond which
    /// new ones get a 503 at once (`max_in_flight`).
    pub max_in_flight: Count,
}

impl Settings {
    /// The defaults of DECISIONS.md §1, as if nothing were configured.
    pub fn defaults() -> Self {
        let bind = SocketAddr::from(([127, 0, 0, 1], 8080));
        Self {
            database_url: DatabaseUrl(DEFAULT_DATABASE_URL.to_owned()),
            bind,
            base_url: None,
            access_token_ttl: Ttl(3600),
            refresh_token_ttl: Ttl(2_592_000),
            code_ttl: Ttl(60),
            session_ttl: Ttl(28_800),
            purge_interval: Ttl(300),
            rate_limit_token: PerMinute(300),
            rate_limit_login: PerMinute(30),
            sso: Sso::Local,
            tls: None,
            cors_origins: Vec::new(),
            log: None,
            log_format: LogFormat::Auto,
            trusted_proxies: Vec::new(),
            db_pool_size: Count(8),
            db_timeout: Ttl(5),
            max_in_flight: Count(256),
        }
    }

    /// The public base URL: the configured one, else `http://` (`https://` when
    /// `tls_cert`/`tls_key` are set) + the address actually bound (which differs from
    /// `bind` when it asks for port 0).
    pub fn base_url_for(&self, bound: SocketAddr) -> BaseUrl {
        self.base_url.clone().unwrap_or_else(|| match self.tls {
            Some(_) => BaseUrl(format!("https://{bound}")),
            None => BaseUrl::for_addr(bound),
        })
    }
}

/// The default `database_url`.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://./medialib-data/medialib.db";

/// Turns raw layered values into typed settings, collecting problems.
struct Parser<'a> {
    values: BTreeMap<Setting, Raw>,
    problems: &'a mut Vec<String>,
}

impl Parser<'_> {
    /// The raw value of `key`; an empty value counts as unset.
    fn raw(&self, key: Setting) -> Option<&Raw> {
        self.values
            .get(&key)
            .filter(|raw| !raw.value.trim().is_empty())
    }

    fn text(&self, key: Setting) -> Option<String> {
        self.raw(key).map(|raw| raw.value.trim().to_owned())
    }

    fn complain(&mut self, key: Setting, message: &str) {
        let line = match self.values.get(&key) {
            Some(raw) => format!("{} (from {}): {message}", key.name(), raw.origin),
            None => format!("{}: {message}", key.name()),
        };
        self.problems.push(line);
    }

    /// Parses `key` with `parse`, or returns `default` when unset.
    fn parsed<T>(
        &mut self,
        key: Setting,
        default: T,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> T
    where
        T: Clone,
    {
        self.optional(key, parse).unwrap_or(default)
    }

    fn optional<T>(
        &mut self,
        key: Setting,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<T> {
        let raw = self.raw(key)?;
        let value = raw.value.trim().to_owned();
        match parse(&value) {
            Ok(parsed) => Some(parsed),
            Err(message) => {
                let message = if key.is_secret() {
                    "invalid value".to_owned()
                } else {
                    message
                };
                self.complain(key, &message);
                None
            }
        }
    }

    fn list<T>(&mut self, key: Setting, parse: impl Fn(&str) -> Result<T, String>) -> Vec<T> {
        let Some(text) = self.text(key) else {
            return Vec::new();
        };
        let mut items = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match parse(item) {
                Ok(parsed) => items.push(parsed),
                Err(message) => self.complain(key, &message),
            }
        }
        items
    }

    fn settings(mut self) -> Option<Settings> {
        let defaults = Settings::defaults();
        let database_url = self.parsed(
            Setting::DatabaseUrl,
            defaults.database_url,
            DatabaseUrl::parse,
        );
        let bind = self.parsed(Setting::Bind, defaults.bind, |text| {
            text.parse::<SocketAddr>().map_err(|_| {
                format!(
                    "`{text}` is not an IP address with a port, such as 127.0.0.1:8080 or [::]:8080"
                )
            })
        });
        let base_url = self.optional(Setting::BaseUrl, BaseUrl::parse);
        let access_token_ttl = self.parsed(
            Setting::AccessTokenTtl,
            defaults.access_token_ttl,
            Ttl::parse,
        );
        let refresh_token_ttl = self.parsed(
            Setting::RefreshTokenTtl,
            defaults.refresh_token_ttl,
            Ttl::parse,
        );
        let code_ttl = self.parsed(Setting::CodeTtl, defaults.code_ttl, Ttl::parse);
        let session_ttl = self.parsed(Setting::SessionTtl, defaults.session_ttl, Ttl::parse);
        let purge_interval =
            self.parsed(Setting::PurgeInterval, defaults.purge_interval, Ttl::parse);
        let rate_limit_token = self.parsed(
            Setting::RateLimitToken,
            defaults.rate_limit_token,
            PerMinute::parse,
        );
        let rate_limit_login = self.parsed(
            Setting::RateLimitLogin,
            defaults.rate_limit_login,
            PerMinute::parse,
        );
        let tls_cert = self.optional(Setting::TlsCert, readable_file);
        let tls_key = self.optional(Setting::TlsKey, readable_file);
        let tls = match (
            tls_cert,
            tls_key,
            self.raw(Setting::TlsCert).is_some(),
            self.raw(Setting::TlsKey).is_some(),
        ) {
            (Some(cert), Some(key), _, _) => Some(TlsFiles { cert, key }),
            (_, _, true, false) => {
                self.complain(
                    Setting::TlsCert,
                    "tls_cert is set but tls_key is not: HTTPS needs both",
                );
                None
            }
            (_, _, false, true) => {
                self.complain(
                    Setting::TlsKey,
                    "tls_key is set but tls_cert is not: HTTPS needs both",
                );
                None
            }
            _ => None,
        };
        self.refuse_plain_http_off_loopback(bind, base_url.as_ref());
        let cors_origins = self.list(Setting::CorsOrigins, parse_origin);
        let log = self.optional(Setting::Log, |text| {
            tracing_subscriber::EnvFilter::try_new(text)
                .map(|_| text.to_owned())
                .map_err(|error| format!("`{text}` is not a tracing filter: {error}"))
        });
        let log_format = self.parsed(Setting::LogFormat, LogFormat::Auto, |text| match text {
            "auto" => Ok(LogFormat::Auto),
            "json" => Ok(LogFormat::Json),
            "text" => Ok(LogFormat::Text),
            _ => Err(format!("`{text}` is not one of auto, json, text")),
        });
        let trusted_proxies = self.list(Setting::TrustedProxies, TrustedProxy::parse);
        let db_pool_size = self.parsed(Setting::DbPoolSize, defaults.db_pool_size, |text| {
            Count::parse(text, MAX_DB_POOL_SIZE)
        });
        let db_timeout = self.parsed(Setting::DbTimeout, defaults.db_timeout, |text| {
            Ttl::parse(text).and_then(|t| {
                if t.seconds() <= MAX_DB_TIMEOUT_SECONDS {
                    Ok(t)
                } else {
                    Err(format!(
                        "`{text}` seconds is more than {MAX_DB_TIMEOUT_SECONDS}: clients would wait that long for a 503"
                    ))
                }
            })
        });
        let max_in_flight = self.parsed(Setting::MaxInFlight, defaults.max_in_flight, |text| {
            Count::parse(text, MAX_IN_FLIGHT)
        });
        let sso = self.sso(&trusted_proxies);
        Some(Settings {
            database_url,
            bind,
            base_url,
            access_token_ttl,
            refresh_token_ttl,
            code_ttl,
            session_ttl,
            purge_interval,
            rate_limit_token,
            rate_limit_login,
            sso: sso?,
            tls,
            cors_origins,
            log,
            log_format,
            trusted_proxies,
            db_pool_size,
            db_timeout,
            max_in_flight,
        })
    }

    /// The start-up safety check: plain HTTP only on loopback. A `bind` that other machines
    /// can reach needs HTTPS here (`tls_cert` + `tls_key`) or a declared TLS-terminating
    /// proxy in front (`base_url` starting with `https://`). Says nothing while a TLS or
    /// base_url value is itself invalid (that problem is reported on its own).
    fn refuse_plain_http_off_loopback(&mut self, bind: SocketAddr, base_url: Option<&BaseUrl>) {
        let tls_configured =
            self.raw(Setting::TlsCert).is_some() || self.raw(Setting::TlsKey).is_some();
        let base_url_invalid = base_url.is_none() && self.raw(Setting::BaseUrl).is_some();
        let behind_https_proxy = base_url.is_some_and(|url| url.as_str().starts_with("https://"));
        if bind.ip().to_canonical().is_loopback()
            || tls_configured
            || base_url_invalid
            || behind_https_proxy
        {
            return;
        }
        self.complain(
            Setting::Bind,
            &format!(
                "{bind} is reachable from other machines, and medialib would answer it in plain HTTP: set tls_cert and tls_key to serve HTTPS, or set base_url to the https:// URL of the TLS-terminating reverse proxy in front (a loopback bind such as 127.0.0.1:8080 needs neither)"
            ),
        );
    }

    fn sso(&mut self, trusted_proxies: &[TrustedProxy]) -> Option<Sso> {
        #[derive(Clone, Copy)]
        enum Mode {
            Local,
            Oidc,
            Header,
        }
        let mode = self.optional(Setting::Sso, |text| match text {
            "local" => Ok(Mode::Local),
            "oidc" => Ok(Mode::Oidc),
            "header" => Ok(Mode::Header),
            _ => Err(format!("`{text}` is not one of local, oidc, header")),
        });
        let mode = match mode {
            Some(mode) => mode,
            None if self.raw(Setting::Sso).is_some() => return None,
            None => Mode::Local,
        };
        let issuer = self.optional(Setting::OidcIssuer, |text| {
            BaseUrl::parse(text).map(|_| text.to_owned())
        });
        let client_id = self.text(Setting::OidcClientId);
        let client_secret = self.text(Setting::OidcClientSecret).map(Secret::new);
        let unique_id_claim = self.parsed(Setting::OidcUniqueIdClaim, "sub".to_owned(), |text| {
            if text.contains(char::is_whitespace) {
                Err(format!("`{text}` is not a claim name"))
            } else {
                Ok(text.to_owned())
            }
        });
        let clock_skew_seconds = self.parsed(
            Setting::OidcClockSkew,
            DEFAULT_OIDC_CLOCK_SKEW_SECONDS,
            |text| match text.trim().parse::<u32>() {
                Ok(n) if n <= MAX_OIDC_CLOCK_SKEW_SECONDS => Ok(n),
                _ => Err(format!(
                    "`{text}` is not a number of seconds from 0 to {MAX_OIDC_CLOCK_SKEW_SECONDS}"
                )),
            },
        );
        let header = self.parsed(Setting::SsoHeader, "Remote-User".to_owned(), |text| {
            if is_header_name(text) {
                Ok(text.to_owned())
            } else {
                Err(format!("`{text}` is not an HTTP header name"))
            }
        });
        match mode {
            Mode::Local => Some(Sso::Local),
            Mode::Oidc => {
                if self.raw(Setting::OidcIssuer).is_none() {
                    self.complain(
                        Setting::Sso,
                        "sso = oidc needs oidc_issuer (MEDIALIB_OIDC_ISSUER)",
                    );
                }
                if client_id.is_none() {
                    self.complain(
                        Setting::Sso,
                        "sso = oidc needs oidc_client_id (MEDIALIB_OIDC_CLIENT_ID)",
                    );
                }
                Some(Sso::Oidc(OidcSettings {
                    issuer: issuer?,
                    client_id: client_id?,
                    client_secret,
                    unique_id_claim,
                    clock_skew_seconds,
                }))
            }
            Mode::Header => {
                if trusted_proxies.is_empty() && self.raw(Setting::TrustedProxies).is_none() {
                    self.complain(
                        Setting::Sso,
                        "sso = header needs trusted_proxies (MEDIALIB_TRUSTED_PROXIES): without it any client could send the header",
                    );
                }
                Some(Sso::Header { header })
            }
        }
    }
}

fn readable_file(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    match std::fs::File::open(&path) {
        Ok(_) if path.is_file() => Ok(path),
        Ok(_) => Err(format!("{text} is not a file")),
        Err(error) => Err(format!("cannot read {text}: {error}")),
    }
}

fn parse_origin(text: &str) -> Result<String, String> {
    let bad = || format!("`{text}` is not an origin such as https://lms.example.edu");
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or_else(bad)?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() || rest.contains(['/', '?', '#', ' ', '@']) {
        return Err(bad());
    }
    Ok(text.trim_end_matches('/').to_owned())
}

fn is_header_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn toml_file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    #[test]
    fn defaults_match_the_operator_contract() {
        let s = SettingsLoader::new().load().unwrap();
        assert_eq!(
            s.database_url.expose(),
            "sqlite://./medialib-data/medialib.db"
        );
        assert_eq!(s.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(s.base_url_for(s.bind).as_str(), "http://127.0.0.1:8080");
        assert_eq!(s.access_token_ttl.seconds(), 3600);
        assert_eq!(s.refresh_token_ttl.seconds(), 2_592_000);
        assert_eq!(s.code_ttl.seconds(), 60);
        assert_eq!(s.session_ttl.seconds(), 28_800);
        assert_eq!(s.purge_interval.seconds(), 300);
        assert_eq!(s.rate_limit_token.get(), 300);
        assert_eq!(s.rate_limit_login.get(), 30);
        assert_eq!(s.sso, Sso::Local);
        assert_eq!(s.tls, None);
        assert!(s.cors_origins.is_empty() && s.trusted_proxies.is_empty());
        assert_eq!(s.log, None);
        assert_eq!(
            s.database_url.kind(),
            DatabaseKind::SqliteFile(PathBuf::from("./medialib-data/medialib.db"))
        );
    }

    #[test]
    fn file_is_overridden_by_env_which_is_overridden_by_flags() {
        let file = toml_file(
            "bind = \"127.0.0.1:1000\"\ncode_ttl = 30\naccess_token_ttl = 100\nrefresh_token_ttl = 200\ncors_origins = [\"https://a.example\", \"https://b.example\"]\n",
        );
        let s = SettingsLoader::new()
            .file(file.path())
            .env_vars(env(&[
                ("MEDIALIB_BIND", "127.0.0.1:2000"),
                ("MEDIALIB_ACCESS_TOKEN_TTL", "101"),
                ("OTHER_BIND", "127.0.0.1:9"),
                ("MEDIALIB_UNRELATED", "x"),
            ]))
            .set("bind", "127.0.0.1:3000")
            .load()
            .unwrap();
        assert_eq!(s.bind.port(), 3000, "flag wins over env and file");
        assert_eq!(s.access_token_ttl.seconds(), 101, "env wins over file");
        assert_eq!(s.code_ttl.seconds(), 30, "file wins over default");
        assert_eq!(s.refresh_token_ttl.seconds(), 200);
        assert_eq!(
            s.cors_origins,
            vec!["https://a.example", "https://b.example"]
        );
        assert_eq!(s.base_url_for(s.bind).as_str(), "http://127.0.0.1:3000");
    }

    #[test]
    fn env_names_must_match_exactly() {
        let s = SettingsLoader::new()
            .env_vars(env(&[("MEDIALIB_bind", "127.0.0.1:1")]))
            .load()
            .unwrap();
        assert_eq!(s.bind.port(), 8080);
    }

    #[test]
    fn an_empty_value_falls_back_to_the_default() {
        let s = SettingsLoader::new()
            .env_vars(env(&[("MEDIALIB_CODE_TTL", ""), ("MEDIALIB_LOG", " ")]))
            .load()
            .unwrap();
        assert_eq!(s.code_ttl.seconds(), 60);
        assert_eq!(s.log, None);
    }

    #[test]
    fn every_problem_is_reported_on_its_own_line() {
        let err = SettingsLoader::new()
            .env_vars(env(&[
                ("MEDIALIB_ACCESS_TOKEN_TTL", "abc"),
                ("MEDIALIB_REFRESH_TOKEN_TTL", "0"),
                ("MEDIALIB_CODE_TTL", "-5"),
                ("MEDIALIB_BIND", "localhost"),
                ("MEDIALIB_TLS_CERT", "/nonexistent/cert.pem"),
                ("MEDIALIB_SSO", "oidc"),
                ("MEDIALIB_DATABASE_URL", "mysql://u:secretpw@h/db"),
                ("MEDIALIB_CORS_ORIGINS", "https://ok.example,ftp://bad"),
                ("MEDIALIB_TRUSTED_PROXIES", "10.0.0.0/33"),
                ("MEDIALIB_LOG_FORMAT", "xml"),
            ]))
            .load()
            .unwrap_err();
        let text = err.to_string();
        let lines: Vec<&str> = text.lines().collect();
        for needle in [
            "access_token_ttl (from MEDIALIB_ACCESS_TOKEN_TTL): `abc` is not a positive integer",
            "refresh_token_ttl (from MEDIALIB_REFRESH_TOKEN_TTL): `0` is not a positive integer",
            "code_ttl (from MEDIALIB_CODE_TTL): `-5` is not a positive integer",
            "bind (from MEDIALIB_BIND): `localhost` is not an IP address with a port",
            "tls_cert (from MEDIALIB_TLS_CERT): cannot read /nonexistent/cert.pem",
            "sso = oidc needs oidc_issuer",
            "sso = oidc needs oidc_client_id",
            "database_url (from MEDIALIB_DATABASE_URL): `mysql://u:***@h/db` is not a supported database URL",
            "cors_origins (from MEDIALIB_CORS_ORIGINS): `ftp://bad` is not an origin",
            "trusted_proxies (from MEDIALIB_TRUSTED_PROXIES): `10.0.0.0/33` is not an IP address",
            "log_format (from MEDIALIB_LOG_FORMAT): `xml` is not one of",
        ] {
            assert_eq!(
                lines.iter().filter(|l| l.contains(needle)).count(),
                1,
                "want one line with {needle:?} in:\n{text}"
            );
        }
        assert_eq!(lines.len(), err.problems().len());
        assert!(!text.contains("secretpw"), "passwords never appear: {text}");
    }

    #[test]
    fn housekeeping_and_rate_limits_are_configurable() {
        let file = toml_file("purge_interval = 60\nrate_limit_token = 10\n");
        let s = SettingsLoader::new()
            .file(file.path())
            .env_vars(env(&[
                ("MEDIALIB_RATE_LIMIT_LOGIN", "0"),
                ("MEDIALIB_SESSION_TTL", "900"),
            ]))
            .load()
            .unwrap();
        assert_eq!(s.purge_interval.seconds(), 60);
        assert_eq!(s.rate_limit_token.get(), 10);
        assert_eq!(s.rate_limit_login.get(), 0, "0 turns the limit off");
        assert_eq!(s.session_ttl.seconds(), 900);

        let err = SettingsLoader::new()
            .env_vars(env(&[
                ("MEDIALIB_PURGE_INTERVAL", "0"),
                ("MEDIALIB_RATE_LIMIT_TOKEN", "-1"),
                ("MEDIALIB_RATE_LIMIT_LOGIN", "2000000"),
                ("MEDIALIB_SESSION_TTL", "forever"),
            ]))
            .load()
            .unwrap_err();
        assert_eq!(
            err.problems(),
            [
                "session_ttl (from MEDIALIB_SESSION_TTL): `forever` is not a positive integer number of seconds",
                "purge_interval (from MEDIALIB_PURGE_INTERVAL): `0` is not a positive integer number of seconds",
                "rate_limit_token (from MEDIALIB_RATE_LIMIT_TOKEN): `-1` is not a number of requests per minute (a non-negative integer; 0 turns the limit off)",
                "rate_limit_login (from MEDIALIB_RATE_LIMIT_LOGIN): `2000000` is more than 1000000 requests per minute (0 turns the limit off)",
            ]
        );
    }

    #[test]
    fn database_waits_and_load_shedding_are_configurable() {
        let d = Settings::defaults();
        assert_eq!(
            (
                d.db_pool_size.get(),
                d.db_timeout.seconds(),
                d.max_in_flight.get()
            ),
            (8, 5, 256)
        );
        let s = SettingsLoader::new()
            .file(toml_file("db_pool_size = 16\n").path())
            .env_vars(env(&[
                ("MEDIALIB_DB_TIMEOUT", "2"),
                ("MEDIALIB_MAX_IN_FLIGHT", "64"),
            ]))
            .load()
            .unwrap();
        assert_eq!(
            (
                s.db_pool_size.get(),
                s.db_timeout.seconds(),
                s.max_in_flight.get()
            ),
            (16, 2, 64)
        );
        let err = SettingsLoader::new()
            .env_vars(env(&[
                ("MEDIALIB_DB_POOL_SIZE", "0"),
                ("MEDIALIB_DB_TIMEOUT", "301"),
                ("MEDIALIB_MAX_IN_FLIGHT", "lots"),
            ]))
            .load()
            .unwrap_err();
        assert_eq!(
            err.problems(),
            [
                "db_pool_size (from MEDIALIB_DB_POOL_SIZE): `0` is not an integer from 1 to 1000",
                "db_timeout (from MEDIALIB_DB_TIMEOUT): `301` seconds is more than 300: clients would wait that long for a 503",
                "max_in_flight (from MEDIALIB_MAX_IN_FLIGHT): `lots` is not an integer from 1 to 100000",
            ]
        );
    }

    #[test]
    fn tls_needs_both_files() {
        let cert = toml_file("cert");
        let cert_path = cert.path().to_str().unwrap();
        let err = SettingsLoader::new()
            .set("tls_cert", cert_path)
            .load()
            .unwrap_err();
        assert_eq!(
            err.problems(),
            ["tls_cert (from --tls-cert): tls_cert is set but tls_key is not: HTTPS needs both"]
        );
        let key = toml_file("key");
        let s = SettingsLoader::new()
            .set("tls_cert", cert_path)
            .set("tls_key", key.path().to_str().unwrap())
            .load()
            .unwrap();
        assert_eq!(s.tls.unwrap().key, key.path());
    }

    #[test]
    fn the_base_url_defaults_to_https_under_tls() {
        let (cert, key) = (toml_file("cert"), toml_file("key"));
        let s = SettingsLoader::new()
            .set("tls_cert", cert.path().to_str().unwrap())
            .set("tls_key", key.path().to_str().unwrap())
            .set("bind", "127.0.0.1:8443")
            .load()
            .unwrap();
        assert_eq!(s.base_url_for(s.bind).as_str(), "https://127.0.0.1:8443");
        let bound = "127.0.0.1:40000".parse().unwrap();
        assert_eq!(s.base_url_for(bound).as_str(), "https://127.0.0.1:40000");
    }

    #[test]
    fn loopback_binds_may_serve_plain_http() {
        for bind in [
            "127.0.0.1:8080",
            "127.8.9.10:1",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:80",
        ] {
            let s = SettingsLoader::new().set("bind", bind).load();
            assert!(s.is_ok(), "{bind}: {:?}", s.err());
        }
    }

    #[test]
    fn a_non_loopback_bind_without_tls_refuses_to_start() {
        for bind in [
            "0.0.0.0:8080",
            "[::]:8080",
            "192.0.2.10:80",
            "[2001:db8::1]:443",
        ] {
            let err = SettingsLoader::new()
                .env_vars(env(&[("MEDIALIB_BIND", bind)]))
                .load()
                .unwrap_err();
            assert_eq!(err.problems().len(), 1, "one clear message: {err}");
            let problem = &err.problems()[0];
            assert!(
                problem.starts_with(&format!(
                    "bind (from MEDIALIB_BIND): {} is reachable from other machines, and medialib would answer it in plain HTTP: set tls_cert and tls_key",
                    bind.parse::<SocketAddr>().unwrap()
                )),
                "{problem}"
            );
            assert!(
                problem.contains("or set base_url to the https:// URL"),
                "{problem}"
            );
        }
        // An http:// base URL declares no TLS anywhere: still refused.
        let err = SettingsLoader::new()
            .set("bind", "0.0.0.0:8080")
            .set("base_url", "http://media.example.edu")
            .load()
            .unwrap_err();
        assert!(err.problems()[0].starts_with("bind (from --bind)"), "{err}");
    }

    #[test]
    fn a_non_loopback_bind_is_allowed_with_tls_or_behind_an_https_proxy() {
        let (cert, key) = (toml_file("cert"), toml_file("key"));
        let s = SettingsLoader::new()
            .set("bind", "0.0.0.0:8443")
            .set("tls_cert", cert.path().to_str().unwrap())
            .set("tls_key", key.path().to_str().unwrap())
            .load()
            .unwrap();
        assert!(s.tls.is_some());
        let file = toml_file("bind = \"0.0.0.0:8080\"\nbase_url = \"https://media.example.edu\"\n");
        let s = SettingsLoader::new().file(file.path()).load().unwrap();
        assert_eq!(s.bind.to_string(), "0.0.0.0:8080");
        assert_eq!(s.base_url_for(s.bind).as_str(), "https://media.example.edu");
    }

    #[test]
    fn the_bind_check_stays_quiet_while_tls_or_base_url_is_itself_wrong() {
        // Only the real problem is reported, not a second, derived one about the bind.
        let cert = toml_file("cert");
        let err = SettingsLoader::new()
            .set("bind", "0.0.0.0:8443")
            .set("tls_cert", cert.path().to_str().unwrap())
            .load()
            .unwrap_err();
        assert_eq!(err.problems().len(), 1, "{err}");
        assert!(err.problems()[0].starts_with("tls_cert"), "{err}");
        let err = SettingsLoader::new()
            .set("bind", "0.0.0.0:8080")
            .set("base_url", "media.example.edu")
            .load()
            .unwrap_err();
        assert_eq!(err.problems().len(), 1, "{err}");
        assert!(err.problems()[0].starts_with("base_url"), "{err}");
    }

    #[test]
    fn sso_modes() {
        let s = SettingsLoader::new()
            .env_vars(env(&[
                ("MEDIALIB_SSO", "oidc"),
                ("MEDIALIB_OIDC_ISSUER", "https://idp.example/realms/uni"),
                ("MEDIALIB_OIDC_CLIENT_ID", "medialib"),
                ("MEDIALIB_OIDC_CLIENT_SECRET", "s3cr3t-value"),
                ("MEDIALIB_OIDC_UNIQUE_ID_CLAIM", "eppn"),
            ]))
            .load()
            .unwrap();
        let Sso::Oidc(oidc) = &s.sso else {
            panic!("oidc expected")
        };
        assert_eq!(oidc.issuer, "https://idp.example/realms/uni");
        assert_eq!(oidc.unique_id_claim, "eppn");
        assert_eq!(oidc.clock_skew_seconds, 60, "the default skew");
        assert_eq!(
            oidc.client_secret.as_ref().unwrap().expose(),
            "s3cr3t-value"
        );
        let debug = format!("{s:?}");
        assert!(
            !debug.contains("s3cr3t-value"),
            "secret leaked into Debug: {debug}"
        );

        let err = SettingsLoader::new()
            .set("sso", "header")
            .load()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("sso = header needs trusted_proxies"),
            "{err}"
        );
        let s = SettingsLoader::new()
            .set("sso", "header")
            .set("trusted_proxies", "127.0.0.1, 10.0.0.0/8, ::1")
            .set("sso_header", "X-Remote-User")
            .load()
            .unwrap();
        assert_eq!(
            s.sso,
            Sso::Header {
                header: "X-Remote-User".to_owned()
            }
        );
        assert_eq!(s.trusted_proxies.len(), 3);

        let oidc = |skew: &str| {
            SettingsLoader::new()
                .set("sso", "oidc")
                .set("oidc_issuer", "https://idp.example/realms/uni")
                .set("oidc_client_id", "medialib")
                .env_vars(env(&[("MEDIALIB_OIDC_CLOCK_SKEW", skew)]))
                .load()
        };
        let Sso::Oidc(o) = oidc("0").unwrap().sso else {
            panic!("oidc expected")
        };
        assert_eq!(o.clock_skew_seconds, 0);
        assert_eq!(o.client_secret, None, "a public client");
        for bad in ["-1", "601", "1m"] {
            let err = oidc(bad).unwrap_err();
            assert_eq!(
                err.problems(),
                [format!(
                    "oidc_clock_skew (from MEDIALIB_OIDC_CLOCK_SKEW): `{bad}` is not a number of seconds from 0 to 600"
                )]
            );
        }

        let err = SettingsLoader::new().set("sso", "saml").load().unwrap_err();
        assert_eq!(
            err.problems(),
            ["sso (from --sso): `saml` is not one of local, oidc, header"]
        );
    }

    #[test]
    fn database_passwords_never_reach_debug_output() {
        let s = SettingsLoader::new()
            .set(
                "database_url",
                "postgres://medialib:pa55word@db.example/medialib",
            )
            .load()
            .unwrap();
        assert_eq!(s.database_url.kind(), DatabaseKind::Postgres);
        let debug = format!("{s:?}");
        assert!(!debug.contains("pa55word"), "{debug}");
        assert!(
            debug.contains("postgres://medialib:***@db.example/medialib"),
            "{debug}"
        );
        assert_eq!(
            s.database_url.to_string(),
            "postgres://medialib:***@db.example/medialib"
        );
    }

    #[test]
    fn file_problems_are_reported() {
        let file = toml_file("bind = \"127.0.0.1:1\"\nbogus = 1\ncode_ttl = { a = 1 }\n");
        let err = SettingsLoader::new().file(file.path()).load().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("unknown key `bogus`"), "{text}");
        assert!(text.contains("`code_ttl` must be a string"), "{text}");

        let file = toml_file("bind = \n");
        let err = SettingsLoader::new().file(file.path()).load().unwrap_err();
        assert!(err.to_string().contains("line 1: not valid TOML"), "{err}");

        let err = SettingsLoader::new()
            .file("/nonexistent/medialib.toml")
            .load()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot read the configuration file /nonexistent/medialib.toml"),
            "{err}"
        );
    }

    #[test]
    fn secret_values_are_not_echoed_and_base_url_is_normalised() {
        let s = SettingsLoader::new()
            .set("base_url", "https://media.example.edu/")
            .load()
            .unwrap();
        assert_eq!(s.base_url.unwrap().as_str(), "https://media.example.edu");
        let err = SettingsLoader::new()
            .set("base_url", "media.example.edu")
            .load()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("not an absolute http:// or https:// URL")
        );
        let err = SettingsLoader::new()
            .set("log", "info,[[")
            .load()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("log (from --log): `info,[[` is not a tracing filter"),
            "{err}"
        );
    }

    #[test]
    fn trusted_proxies_match_networks() {
        let net = TrustedProxy::parse("10.1.0.0/16").unwrap();
        assert!(net.contains("10.1.2.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        let any = TrustedProxy::parse("0.0.0.0/0").unwrap();
        assert!(any.contains("192.0.2.1".parse().unwrap()));
        let v6 = TrustedProxy::parse("fd00::/8").unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert!(!v6.contains("10.1.2.3".parse().unwrap()));
    }
}
