//! Media wiring: the store `storage_url` names, the upload settings, readiness that includes
//! the store, and `medialib storage check`.

use std::fmt;
use std::io::Read;
use std::sync::Arc;

use medialib_adapters_storage::{InvalidStorageUrl, S3Settings};
use medialib_api_actix::Readiness;
use medialib_domain::Lifetime;
use medialib_domain::media::{ByteSpan, MediaSigningKey, StorageKey, UploadLimits};
use medialib_ports::services::UploadSettings;
use medialib_ports::{MediaStorage, StorageError};

use crate::configuration::{Settings, StorageSettings, StorageUrl};
use crate::database::DatabaseReadiness;

impl fmt::Display for StorageUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "file://{}", path.display()),
            Self::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Self::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// Opens the media store of `settings`.
pub fn open_storage(
    settings: &StorageSettings,
) -> Result<Arc<dyn MediaStorage>, InvalidStorageUrl> {
    let s3 = S3Settings {
        endpoint: settings.s3_endpoint.clone(),
        region: settings.s3_region.clone(),
        access_key_id: settings.s3_access_key_id.clone(),
        secret_access_key: settings
            .s3_secret_access_key
            .as_ref()
            .map(|s| medialib_domain::Secret::new(s.expose())),
    };
    medialib_adapters_storage::open(&settings.url.to_string(), &s3)
}

/// This host's name, which names the upload locks this process takes (a restarted process
/// frees those of its earlier life).
pub fn instance() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty() && !h.contains(':'))
        .unwrap_or_else(|| "medialib".to_owned())
}

/// The upload use cases' settings.
pub fn upload_settings(settings: &Settings) -> UploadSettings {
    let lifetime = |secs: u32| {
        Lifetime::from_nonzero(std::num::NonZeroU32::new(secs).unwrap_or(std::num::NonZeroU32::MIN))
    };
    UploadSettings {
        limits: UploadLimits {
            max_size: settings.upload_max_size,
            quota: settings.storage_quota,
        },
        expiry: lifetime(settings.upload_expiry.seconds()),
        url_ttl: lifetime(settings.media_url_ttl.seconds()),
        // Checked at load time: at least 32 bytes.
        signing_key: settings
            .media_signing_key
            .as_ref()
            .and_then(|k| MediaSigningKey::new(k.expose().as_bytes().to_vec()).ok()),
        instance: instance(),
    }
}

/// Ready when the database answers and the media store can be reached.
#[derive(Debug)]
pub struct Ready {
    /// The database probe.
    pub database: DatabaseReadiness,
    /// The media store.
    pub storage: Arc<dyn MediaStorage>,
}

impl Readiness for Ready {
    fn ready(&self) -> Result<(), String> {
        self.database.ready()?;
        let probe = StorageKey::parse("readyz").map_err(|e| e.to_string())?;
        match self.storage.head(&probe) {
            Ok(_) | Err(StorageError::NotFound) => Ok(()),
            Err(e) => Err(format!("media storage: {e}")),
        }
    }
}

/// One step of `medialib storage check` and how it went.
#[derive(Debug)]
pub struct CheckStep {
    /// What was tried.
    pub step: &'static str,
    /// `Ok` or why it failed.
    pub outcome: Result<(), String>,
}

/// Writes, reads, range-reads, lists and deletes a test object in `storage`, as an
/// operator's check that the configured store works end to end.
pub fn check_storage(storage: &dyn MediaStorage) -> Vec<CheckStep> {
    let mut steps = Vec::new();
    let Ok(key) = StorageKey::parse(".medialib-check/probe.bin") else {
        return steps;
    };
    let Ok(prefix) = StorageKey::parse(".medialib-check") else {
        return steps;
    };
    let bytes: Vec<u8> = (0..=255u8).cycle().take(256 * 1024).collect();
    let mut step = |name: &'static str, outcome: Result<(), String>| {
        let ok = outcome.is_ok();
        steps.push(CheckStep {
            step: name,
            outcome,
        });
        ok
    };
    let read_all = |r: Result<medialib_ports::Reading, StorageError>| -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        r.map_err(|e| e.to_string())?
            .body
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        Ok(out)
    };
    if !step(
        "write a 256 KiB object",
        storage
            .put(&key, &mut &bytes[..])
            .map(drop)
            .map_err(|e| e.to_string()),
    ) {
        return steps;
    }
    step(
        "read it back whole",
        read_all(storage.read(&key, None)).and_then(|got| {
            (got == bytes)
                .then_some(())
                .ok_or_else(|| "the bytes differ".to_owned())
        }),
    );
    step(
        "read a range of it",
        read_all(storage.read(&key, ByteSpan::new(1000, 5000))).and_then(|got| {
            (got == bytes[1000..6000])
                .then_some(())
                .ok_or_else(|| "the range differs".to_owned())
        }),
    );
    step(
        "list it",
        storage
            .list(&prefix)
            .map_err(|e| e.to_string())
            .and_then(|found| {
                found
                    .iter()
                    .any(|o| o.key == key)
                    .then_some(())
                    .ok_or_else(|| "not listed".to_owned())
            }),
    );
    step("delete it", storage.delete(&key).map_err(|e| e.to_string()));
    step(
        "see it gone",
        match storage.head(&key) {
            Err(StorageError::NotFound) => Ok(()),
            Ok(_) => Err("still there".to_owned()),
            Err(e) => Err(e.to_string()),
        },
    );
    steps
}
