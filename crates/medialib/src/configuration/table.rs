//! The configuration table: one entry per key, from which come the key list, the environment
//! variables, the typed `Settings` fields, the parsing and validation of each value, README.md's
//! configuration table and the help of the flags. Adding a key is adding an entry here (and,
//! for a new kind of value, its parser in `values.rs`). The entry syntax is described on the
//! `settings!` macro in `declare.rs`.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::declare::settings;
use super::load::Check;
use super::values::{self, SsoMode};
use super::{
    BaseUrl, Count, DatabaseUrl, LogFormat, OidcSettings, PerMinute, Secret, Sso, StorageSettings,
    StorageUrl, TlsFiles, TrustedProxy, Ttl,
};

/// The largest `oidc_clock_skew` accepted: more would make expired ID tokens useful for long.
const MAX_OIDC_CLOCK_SKEW_SECONDS: u32 = 600;
/// The largest `refresh_token_retry_grace` accepted: a longer one would leave a replayed
/// refresh token unnoticed for long.
const MAX_REFRESH_RETRY_GRACE_SECONDS: u32 = 300;
/// The largest `db_pool_size` accepted.
const MAX_DB_POOL_SIZE: u32 = 1_000;
/// The largest `db_timeout` accepted, in seconds.
const MAX_DB_TIMEOUT_SECONDS: u32 = 300;
/// The largest `max_in_flight` accepted.
const MAX_IN_FLIGHT: u32 = 100_000;
/// The largest `shed_queue_delay` accepted, in milliseconds: a longer wait is no shedding.
const MAX_SHED_QUEUE_DELAY_MS: u32 = 60_000;
/// The largest `workers` accepted.
const MAX_WORKERS: u32 = 64;
/// The largest `job_attempts` accepted.
const MAX_JOB_ATTEMPTS: u32 = 20;

settings! {
    keys {
        /// database to use: `sqlite://PATH`, `sqlite::memory:` or
        /// `postgres://USER:PASSWORD@HOST/DB`
        field database_url: DatabaseUrl =
            default "sqlite://./medialib-data/medialib.db", DatabaseUrl::parse;
        /// listen address (IP and port), e.g. `127.0.0.1:8080` or `[::]:8080`
        field bind: SocketAddr = default "127.0.0.1:8080", values::socket_addr;
        /// public base URL used in permLinks, embeds and as OAuth issuer
        field base_url: Option<BaseUrl> = unset "`http://<bind>`", BaseUrl::parse;
        /// access token lifetime, seconds
        field access_token_ttl: Ttl = default "3600", Ttl::parse;
        /// refresh token idle lifetime, seconds
        field refresh_token_ttl: Ttl = default "2592000" "(30 days)", Ttl::parse;
        /// seconds after a refresh during which the client may retry it with the same refresh
        /// token (its answer lost to a crash or a cut connection) and get a new pair in place of
        /// the unused one, instead of revoking the grant as a reuse (0 to 300; `0` = off; see
        /// [docs/security.md](docs/security.md#refresh-retries))
        field refresh_token_retry_grace: u32 = default "30",
            |text| values::seconds_up_to(text, MAX_REFRESH_RETRY_GRACE_SECONDS);
        /// authorization code lifetime, seconds
        field code_ttl: Ttl = default "60", Ttl::parse;
        /// browser session lifetime after sign-in, seconds
        field session_ttl: Ttl = default "28800" "(8 hours)", Ttl::parse;
        /// seconds between housekeeping passes that delete expired codes, tokens and sessions
        field purge_interval: Ttl = default "300", Ttl::parse;
        /// token, revoke and introspect requests per minute, per client and per remote address
        /// (`0` = off)
        field rate_limit_token: PerMinute = default "300", PerMinute::parse;
        /// sign-in form submissions per minute per remote address (`0` = off)
        field rate_limit_login: PerMinute = default "30", PerMinute::parse;
        /// `local`, `oidc` or `header`
        part sso: SsoMode = default "local", SsoMode::parse;
        /// PEM file with the certificate chain for HTTPS; set with `tls_key` (both or neither).
        /// A `bind` other machines can reach needs these or an `https://` `base_url` (see
        /// [docs/operations.md](docs/operations.md))
        part tls_cert: Option<PathBuf> = unset "unset", values::readable_file;
        /// PEM file with the certificate's private key (unencrypted PKCS#8, RSA or EC); set with
        /// `tls_cert`
        part tls_key: Option<PathBuf> = unset "unset", values::readable_file;
        /// comma-separated allowed origins (`https://lms.example.edu`)
        field cors_origins: Vec<String> = list "empty", values::origin;
        /// comma-separated origins whose pages may frame the player a permLink leads to
        /// (`https://lms.example.edu`; empty: any site, as LMS plugins frame the permLink)
        field embed_origins: Vec<String> = list "any", values::origin;
        /// the OAuth client id the API reference page (`/api/docs`) signs in with: a public
        /// client whose redirect URI is `BASE_URL/api/docs/oauth2-redirect.html` (`medialib
        /// client add --public`); unset, the reader types one
        field docs_client_id: Option<String> = unset "unset", values::text;
        /// tracing filter, e.g. `info,medialib=debug`
        field log: Option<String> =
            unset "`info` (`warn` for one-shot commands)", values::log_filter;
        /// `auto` (JSON unless the output is a terminal), `json` or `text`
        field log_format: LogFormat = default "auto", LogFormat::parse;
        /// the identity provider's issuer URL (required when `sso = oidc`)
        part oidc_issuer: Option<String> = unset "unset", values::url;
        /// medialib's client id at the provider (required when `sso = oidc`)
        part oidc_client_id: Option<String> = unset "unset", values::text;
        /// medialib's client secret at the provider
        part oidc_client_secret: Option<Secret> = secret "unset", values::secret;
        /// claim that becomes the user's uniqueId
        part oidc_unique_id_claim: String = default "sub", values::claim;
        /// seconds the identity provider's clock may be off when ID tokens are checked (0 to 600)
        part oidc_clock_skew: u32 = default "60",
            |text| values::seconds_up_to(text, MAX_OIDC_CLOCK_SKEW_SECONDS);
        /// header carrying the uniqueId when `sso = header`
        part sso_header: String = default "Remote-User", values::header_name;
        /// comma-separated proxy addresses or CIDR networks trusted for `X-Forwarded-*` and the
        /// SSO header (required when `sso = header`)
        field trusted_proxies: Vec<TrustedProxy> = list "empty", TrustedProxy::parse;
        /// database connections per process (1 to 1000)
        field db_pool_size: Count = default "8", |text| Count::parse(text, MAX_DB_POOL_SIZE);
        /// seconds a request waits for a database connection (or, on SQLite, the write lock)
        /// before it gets a 503 with `Retry-After` (1 to 300)
        field db_timeout: Ttl = default "5", db_timeout;
        /// requests doing database or password work at once, queued ones included; more get a
        /// 503 with `Retry-After: 1` at once: a bound on memory and threads, far above what
        /// queueing-delay shedding lets in (1 to 100000; see
        /// [docs/reliability.md](docs/reliability.md#load-shedding))
        field max_in_flight: Count = default "4096", |text| Count::parse(text, MAX_IN_FLIGHT);
        /// milliseconds requests may wait for their database or sign-in work to start: when
        /// every wait over 100 ms exceeds it, requests past a small floor get a 503 with
        /// `Retry-After: 1` until the queue drains, and, while more than that floor are in
        /// flight, a queued request that has already waited longer is refused the same way
        /// when its turn comes (0 to 60000; `0` = off; see
        /// [docs/reliability.md](docs/reliability.md#load-shedding))
        field shed_queue_delay: u32 = default "200",
            |text| values::millis_up_to(text, MAX_SHED_QUEUE_DELAY_MS);
        /// bytes that large answers (catalog listings) may hold at once, from when one starts
        /// being built until it is sent (suffixes `KiB`, `MiB`, `GiB`); a listing that cannot
        /// get its share within twice `db_timeout` gets a 503 with `Retry-After: 1` (see
        /// [docs/reliability.md](docs/reliability.md))
        field answer_budget: u64 = default "32MiB", values::byte_size;
        /// where media is kept: `file://PATH` (a directory) or `s3://BUCKET/PREFIX` (see
        /// [docs/operations.md](docs/operations.md))
        part storage_url: StorageUrl = default "file://./medialib-data/media", StorageUrl::parse;
        /// with `s3://`: the endpoint of an S3-compatible store (Garage, MinIO, Ceph);
        /// `AWS_ENDPOINT_URL` when unset, else AWS
        part storage_s3_endpoint: Option<String> = unset "unset", values::url;
        /// with `s3://`: the region (`AWS_REGION` when unset; Garage's is `garage`)
        part storage_s3_region: Option<String> = unset "unset", values::text;
        /// with `s3://`: the access key id (`AWS_ACCESS_KEY_ID` when unset)
        part storage_s3_access_key_id: Option<String> = unset "unset", values::text;
        /// with `s3://`: the secret access key (`AWS_SECRET_ACCESS_KEY` when unset)
        part storage_s3_secret_access_key: Option<Secret> = secret "unset", values::secret;
        /// with `s3://`: answer media URLs with a 302 to a presigned URL of the store instead
        /// of streaming the bytes through medialib (`true` or `false`)
        field storage_redirect: bool = default "false", values::boolean;
        /// the largest upload, in bytes (suffixes `KiB`, `MiB`, `GiB`, `TiB`); larger is a 413
        /// before any byte is stored
        field upload_max_size: u64 = default "20GiB", values::byte_size;
        /// bytes the organization may keep, sources and unfinished uploads counted (suffixes as
        /// `upload_max_size`); an upload that would pass it is a 409
        field storage_quota: Option<u64> = unset "unlimited", values::byte_size;
        /// seconds an unfinished upload is kept; housekeeping then deletes its bytes
        field upload_expiry: Ttl = default "86400" "(24 hours)", Ttl::parse;
        /// seconds a media URL stays valid (each record read mints fresh ones)
        field media_url_ttl: Ttl = default "21600" "(6 hours)", Ttl::parse;
        /// the key media URLs are signed with, at least 32 characters; every process serving
        /// the same media must share it
        field media_signing_key: Option<Secret> =
            secret "one generated at first start and kept in the database", values::signing_key;
        /// media processing jobs `medialib serve` runs at once (0 to 64; `0` leaves processing
        /// to `medialib worker` processes)
        field workers: u32 = default "1", |text| values::count_up_to(text, MAX_WORKERS);
        /// seconds a processing job stays with a worker that stopped reporting before another
        /// worker takes it (a running worker renews it every third of this)
        field job_lease: Ttl = default "60", Ttl::parse;
        /// tries of a processing job before its media is `failed` (1 to 20)
        field job_attempts: Count = default "3", |text| Count::parse(text, MAX_JOB_ATTEMPTS);
        /// seconds before a failed processing job is tried again, doubled for each further try
        /// (at most an hour)
        field job_retry_delay: Ttl = default "30", Ttl::parse;
        /// seconds ffmpeg may go without progress before it is stopped and the try fails
        field job_stall_timeout: Ttl = default "120", Ttl::parse;
        /// `idle`: ffmpeg gets only CPU time serving does not want (the `SCHED_IDLE` class, and
        /// `nice` 15); `low`: `nice` 15 alone, so processing also progresses on a machine that
        /// serves at full load, at some cost to serving (see
        /// [docs/operations.md](docs/operations.md))
        field processing_priority: bool = default "idle", values::processing_priority;
        /// directory for processing's working files: a copy of the source and the files made
        /// from it, deleted when a try ends (needs room for a few times the largest source)
        field work_dir: PathBuf = default "./medialib-data/work", values::directory;
    }
    derived {
        /// Where media is kept (`storage_url`, `storage_s3_*`).
        storage: StorageSettings = storage_settings;
        /// HTTPS certificate and key (`tls_cert`, `tls_key`).
        tls: Option<TlsFiles> = tls_files;
        /// The sign-in mode and its parameters (`sso`, `oidc_*`, `sso_header`).
        sso: Sso = sign_in;
    }
    checks {
        refuse_plain_http_off_loopback,
    }
}

impl Settings {
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

fn db_timeout(text: &str) -> Result<Ttl, String> {
    let ttl = Ttl::parse(text)?;
    if ttl.seconds() <= MAX_DB_TIMEOUT_SECONDS {
        Ok(ttl)
    } else {
        Err(format!(
            "`{text}` seconds is more than {MAX_DB_TIMEOUT_SECONDS}: clients would wait that long for a 503"
        ))
    }
}

/// `tls`: both files or neither.
fn tls_files(values: &Values, check: &mut Check) -> Option<TlsFiles> {
    let (cert_set, key_set) = (check.is_set(&key::tls_cert), check.is_set(&key::tls_key));
    match (&values.tls_cert, &values.tls_key) {
        (Some(cert), Some(key)) => {
            return Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            });
        }
        _ if cert_set && !key_set => check.complain(
            &key::tls_cert,
            "tls_cert is set but tls_key is not: HTTPS needs both",
        ),
        _ if key_set && !cert_set => check.complain(
            &key::tls_key,
            "tls_key is set but tls_cert is not: HTTPS needs both",
        ),
        _ => {}
    }
    None
}

/// `storage_url` with the S3 settings it needs.
fn storage_settings(values: &Values, check: &mut Check) -> StorageSettings {
    let s3_keys = [
        &key::storage_s3_endpoint,
        &key::storage_s3_region,
        &key::storage_s3_access_key_id,
        &key::storage_s3_secret_access_key,
    ];
    if matches!(values.storage_url, StorageUrl::File(_)) {
        for k in s3_keys {
            if check.is_set(k) {
                let message = format!("{} applies only to an s3:// storage_url", k.name());
                check.complain(k, &message);
            }
        }
        if check.is_set(&key::storage_redirect) && values.storage_redirect {
            check.complain(
                &key::storage_redirect,
                "storage_redirect = true needs an s3:// storage_url (a directory cannot presign)",
            );
        }
    }
    StorageSettings {
        url: values.storage_url.clone(),
        s3_endpoint: values.storage_s3_endpoint.clone(),
        s3_region: values.storage_s3_region.clone(),
        s3_access_key_id: values.storage_s3_access_key_id.clone(),
        s3_secret_access_key: values.storage_s3_secret_access_key.clone(),
    }
}

/// `sso` with the parameters its mode needs.
fn sign_in(values: &Values, check: &mut Check) -> Sso {
    match values.sso {
        SsoMode::Local => Sso::Local,
        SsoMode::Oidc => {
            for needed in [&key::oidc_issuer, &key::oidc_client_id] {
                if !check.is_set(needed) {
                    let message =
                        format!("sso = oidc needs {} ({})", needed.name(), needed.env_var());
                    check.complain(&key::sso, &message);
                }
            }
            match (&values.oidc_issuer, &values.oidc_client_id) {
                (Some(issuer), Some(client_id)) => Sso::Oidc(OidcSettings {
                    issuer: issuer.clone(),
                    client_id: client_id.clone(),
                    client_secret: values.oidc_client_secret.clone(),
                    unique_id_claim: values.oidc_unique_id_claim.clone(),
                    clock_skew_seconds: values.oidc_clock_skew,
                }),
                // Reported above or as an invalid issuer: these settings are never used.
                _ => Sso::Local,
            }
        }
        SsoMode::Header => {
            if values.trusted_proxies.is_empty() && !check.is_set(&key::trusted_proxies) {
                check.complain(
                    &key::sso,
                    "sso = header needs trusted_proxies (MEDIALIB_TRUSTED_PROXIES): without it any client could send the header",
                );
            }
            Sso::Header {
                header: values.sso_header.clone(),
            }
        }
    }
}

/// The start-up safety check: plain HTTP only on loopback. A `bind` that other machines
/// can reach needs HTTPS here (`tls_cert` + `tls_key`) or a declared TLS-terminating
/// proxy in front (`base_url` starting with `https://`). Says nothing while a TLS or
/// base_url value is itself invalid (that problem is reported on its own).
fn refuse_plain_http_off_loopback(values: &Values, check: &mut Check) {
    let bind = values.bind;
    let tls_configured = check.is_set(&key::tls_cert) || check.is_set(&key::tls_key);
    let base_url_invalid = values.base_url.is_none() && check.is_set(&key::base_url);
    let behind_https_proxy = values
        .base_url
        .as_ref()
        .is_some_and(|url| url.as_str().starts_with("https://"));
    if bind.ip().to_canonical().is_loopback()
        || tls_configured
        || base_url_invalid
        || behind_https_proxy
    {
        return;
    }
    check.complain(
        &key::bind,
        &format!(
            "{bind} is reachable from other machines, and medialib would answer it in plain HTTP: set tls_cert and tls_key to serve HTTPS, or set base_url to the https:// URL of the TLS-terminating reverse proxy in front (a loopback bind such as 127.0.0.1:8080 needs neither)"
        ),
    );
}
