//! The typed values of the settings and their validators: each parser takes the trimmed text
//! of one key and returns the value or a message that names the bad text (never a secret).

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use crate::secret::{Secret, redact_url};

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
pub struct BaseUrl(pub(super) String);

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

impl LogFormat {
    /// Parses `auto`, `json` or `text`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "auto" => Ok(Self::Auto),
            "json" => Ok(Self::Json),
            "text" => Ok(Self::Text),
            _ => Err(format!("`{text}` is not one of auto, json, text")),
        }
    }
}

/// The sign-in mode named by `sso`, before its parameters are gathered into [`Sso`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SsoMode {
    Local,
    Oidc,
    Header,
}

impl SsoMode {
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        match text {
            "local" => Ok(Self::Local),
            "oidc" => Ok(Self::Oidc),
            "header" => Ok(Self::Header),
            _ => Err(format!("`{text}` is not one of local, oidc, header")),
        }
    }
}

/// A listen address: an IP address with a port.
pub(super) fn socket_addr(text: &str) -> Result<SocketAddr, String> {
    text.parse::<SocketAddr>().map_err(|_| {
        format!("`{text}` is not an IP address with a port, such as 127.0.0.1:8080 or [::]:8080")
    })
}

/// Any text, as given (trimmed).
pub(super) fn text(text: &str) -> Result<String, String> {
    Ok(text.to_owned())
}

/// A secret, as given; never shown.
pub(super) fn secret(text: &str) -> Result<Secret, String> {
    Ok(Secret::new(text))
}

/// A tracing filter such as `info,medialib=debug`.
pub(super) fn log_filter(text: &str) -> Result<String, String> {
    tracing_subscriber::EnvFilter::try_new(text)
        .map(|_| text.to_owned())
        .map_err(|error| format!("`{text}` is not a tracing filter: {error}"))
}

/// An absolute http(s) URL kept verbatim (an OIDC issuer is compared letter for letter).
pub(super) fn url(text: &str) -> Result<String, String> {
    BaseUrl::parse(text).map(|_| text.to_owned())
}

/// A JWT claim name.
pub(super) fn claim(text: &str) -> Result<String, String> {
    if text.contains(char::is_whitespace) {
        Err(format!("`{text}` is not a claim name"))
    } else {
        Ok(text.to_owned())
    }
}

/// Whole seconds from 0 to `max`.
pub(super) fn seconds_up_to(text: &str, max: u32) -> Result<u32, String> {
    units_up_to(text, max, "seconds")
}

/// A number of milliseconds from 0 to `max`.
pub(super) fn millis_up_to(text: &str, max: u32) -> Result<u32, String> {
    units_up_to(text, max, "milliseconds")
}

fn units_up_to(text: &str, max: u32, unit: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!(
            "`{text}` is not a number of {unit} from 0 to {max}"
        )),
    }
}

/// An integer from 0 to `max`.
pub(super) fn count_up_to(text: &str, max: u32) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("`{text}` is not an integer from 0 to {max}")),
    }
}

/// `processing_priority`: `idle` (true: the `SCHED_IDLE` class) or `low` (false).
pub(super) fn processing_priority(text: &str) -> Result<bool, String> {
    match text.trim() {
        "idle" => Ok(true),
        "low" => Ok(false),
        _ => Err(format!("`{text}` is not one of idle, low")),
    }
}

/// A directory path (created when it is used; not checked here).
pub(super) fn directory(text: &str) -> Result<PathBuf, String> {
    if text.trim().is_empty() {
        return Err("the directory is empty".to_owned());
    }
    Ok(PathBuf::from(text))
}

/// An HTTP header name (RFC 9110 token).
pub(super) fn header_name(text: &str) -> Result<String, String> {
    let is_token = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if is_token {
        Ok(text.to_owned())
    } else {
        Err(format!("`{text}` is not an HTTP header name"))
    }
}

/// A file that exists and can be opened now.
pub(super) fn readable_file(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    match std::fs::File::open(&path) {
        Ok(_) if path.is_file() => Ok(path),
        Ok(_) => Err(format!("{text} is not a file")),
        Err(error) => Err(format!("cannot read {text}: {error}")),
    }
}

/// A web origin: `http(s)://HOST[:PORT]`, a trailing `/` dropped.
pub(super) fn origin(text: &str) -> Result<String, String> {
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

/// `true` or `false`.
pub(super) fn boolean(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(format!("`{text}` is not true or false")),
    }
}

/// A size in bytes: an integer with an optional binary suffix (`KiB`, `MiB`, `GiB`, `TiB`;
/// `K`, `M`, `G`, `T` mean the same).
pub(super) fn byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, suffix) = t.split_at(digits);
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => {
            return Err(format!(
                "`{text}` is not a size such as 1048576, 500MiB or 20GiB"
            ));
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .filter(|n| *n > 0 && i64::try_from(*n).is_ok())
        .ok_or_else(|| format!("`{text}` is not a positive size such as 1048576, 500MiB or 20GiB"))
}

/// A signing key of at least 32 characters.
pub(super) fn signing_key(text: &str) -> Result<Secret, String> {
    if text.len() >= 32 {
        Ok(Secret::new(text))
    } else {
        Err("the media signing key must hold at least 32 characters (`openssl rand -hex 32` makes one)".to_owned())
    }
}

/// Where media is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageUrl {
    /// A directory (`file://PATH`; relative to the working directory unless absolute).
    File(PathBuf),
    /// An S3 bucket and key prefix (`s3://BUCKET/PREFIX`).
    S3 {
        /// The bucket.
        bucket: String,
        /// The prefix inside it (no leading or trailing `/`; may be empty).
        prefix: String,
    },
}

impl StorageUrl {
    /// Parses `file://PATH` or `s3://BUCKET[/PREFIX]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("file://") {
            if path.is_empty() {
                return Err(format!("`{text}` names no directory: file://PATH"));
            }
            return Ok(Self::File(PathBuf::from(path)));
        }
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let valid_bucket = (3..=63).contains(&bucket.len())
                && bucket.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                });
            if !valid_bucket {
                return Err(format!(
                    "`{text}` does not name an S3 bucket (3 to 63 lower-case letters, digits, `-` or `.`)"
                ));
            }
            let prefix = prefix.trim_matches('/');
            if prefix.split('/').any(|s| s == ".." || s == ".") {
                return Err(format!("`{text}` has a `.` or `..` in its prefix"));
            }
            return Ok(Self::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
            });
        }
        Err(format!("`{text}` is not file://PATH or s3://BUCKET/PREFIX"))
    }
}

/// The media storage settings.
#[derive(Debug, Clone)]
pub struct StorageSettings {
    /// `storage_url`.
    pub url: StorageUrl,
    /// `storage_s3_endpoint`.
    pub s3_endpoint: Option<String>,
    /// `storage_s3_region`.
    pub s3_region: Option<String>,
    /// `storage_s3_access_key_id`.
    pub s3_access_key_id: Option<String>,
    /// `storage_s3_secret_access_key`.
    pub s3_secret_access_key: Option<Secret>,
}
