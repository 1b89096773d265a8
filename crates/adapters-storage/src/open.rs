//! The store a storage URL names: `file://PATH` or `s3://BUCKET/PREFIX`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use medialib_domain::Secret;
use medialib_ports::{MediaStorage, StorageError};

use crate::{FileStorage, S3Config, S3Storage};

/// The S3 settings beside an `s3://` URL; each one left out is read from the usual AWS
/// variable (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct S3Settings {
    /// The endpoint (`http://127.0.0.1:3900`); none: Amazon S3.
    pub endpoint: Option<String>,
    /// The region; none, and no `AWS_REGION`: `us-east-1`.
    pub region: Option<String>,
    /// The access key id.
    pub access_key_id: Option<String>,
    /// The secret access key.
    pub secret_access_key: Option<Secret>,
}

impl fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .finish()
    }
}

/// Why no store could be opened from a storage URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidStorageUrl {
    /// Neither `file://` nor `s3://`.
    #[error("storage_url {0:?} is neither file://PATH nor s3://BUCKET/PREFIX")]
    Scheme(String),
    /// `file://` with no path.
    #[error(
        "storage_url {0:?} names no directory (file://PATH, e.g. file://./medialib-data/media)"
    )]
    NoPath(String),
    /// `s3://` with no bucket.
    #[error("storage_url {0:?} names no bucket (s3://BUCKET/PREFIX)")]
    NoBucket(String),
    /// An S3 setting that is neither configured nor in the environment.
    #[error("storage_url is s3:// but {0} is not set (nor {1})")]
    Missing(&'static str, &'static str),
    /// The store could not be opened.
    #[error("the media storage at {0} cannot be opened: {1}")]
    Open(String, StorageError),
}

/// Opens the store `url` names, with `s3` (then the environment) for an `s3://` URL.
pub fn open(url: &str, s3: &S3Settings) -> Result<Arc<dyn MediaStorage>, InvalidStorageUrl> {
    open_with(url, s3, &|name| {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    })
}

/// [`open`] with the environment given.
fn open_with(
    url: &str,
    s3: &S3Settings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn MediaStorage>, InvalidStorageUrl> {
    if let Some(path) = url.strip_prefix("file://") {
        if path.is_empty() {
            return Err(InvalidStorageUrl::NoPath(url.to_owned()));
        }
        let store = FileStorage::open(PathBuf::from(path))
            .map_err(|e| InvalidStorageUrl::Open(url.to_owned(), e))?;
        return Ok(Arc::new(store));
    }
    let config = s3_config(url, s3, env)?;
    let store = S3Storage::open(config).map_err(|e| InvalidStorageUrl::Open(url.to_owned(), e))?;
    Ok(Arc::new(store))
}

fn s3_config(
    url: &str,
    s3: &S3Settings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<S3Config, InvalidStorageUrl> {
    let Some(rest) = url.strip_prefix("s3://") else {
        return Err(InvalidStorageUrl::Scheme(url.to_owned()));
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(InvalidStorageUrl::NoBucket(url.to_owned()));
    }
    let endpoint = s3
        .endpoint
        .clone()
        .or_else(|| env("AWS_ENDPOINT_URL_S3"))
        .or_else(|| env("AWS_ENDPOINT_URL"));
    let region = s3
        .region
        .clone()
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".to_owned());
    let access_key_id = s3
        .access_key_id
        .clone()
        .or_else(|| env("AWS_ACCESS_KEY_ID"))
        .ok_or(InvalidStorageUrl::Missing(
            "storage_s3_access_key_id",
            "AWS_ACCESS_KEY_ID",
        ))?;
    let secret_access_key = s3
        .secret_access_key
        .clone()
        .or_else(|| env("AWS_SECRET_ACCESS_KEY").map(Secret::new))
        .ok_or(InvalidStorageUrl::Missing(
            "storage_s3_secret_access_key",
            "AWS_SECRET_ACCESS_KEY",
        ))?;
    Ok(S3Config {
        bucket: bucket.to_owned(),
        prefix: prefix.trim_matches('/').to_owned(),
        allow_http: endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://")),
        endpoint,
        region,
        access_key_id,
        secret_access_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn s3_urls_take_settings_then_the_environment() {
        let env = |name: &str| match name {
            "AWS_ACCESS_KEY_ID" => Some("GKenv".to_owned()),
            "AWS_SECRET_ACCESS_KEY" => Some("envsecret".to_owned()),
            "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:3900".to_owned()),
            _ => None,
        };
        let settings = S3Settings {
            region: Some("garage".into()),
            ..S3Settings::default()
        };
        let config = s3_config("s3://media/org/a/", &settings, &env).unwrap();
        assert_eq!(config.bucket, "media");
        assert_eq!(config.prefix, "org/a");
        assert_eq!(config.region, "garage");
        assert_eq!(config.access_key_id, "GKenv");
        assert_eq!(config.secret_access_key.expose(), "envsecret");
        assert!(config.allow_http);
        assert!(!format!("{config:?}").contains("envsecret"));

        let config = s3_config(
            "s3://media",
            &S3Settings {
                endpoint: Some("https://s3.example".into()),
                access_key_id: Some("a".into()),
                secret_access_key: Some(Secret::new("s")),
                ..S3Settings::default()
            },
            &no_env,
        )
        .unwrap();
        assert_eq!(
            (config.prefix.as_str(), config.region.as_str()),
            ("", "us-east-1")
        );
        assert!(!config.allow_http);
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let none = S3Settings::default();
        for (url, wrong) in [
            ("http://x", InvalidStorageUrl::Scheme("http://x".into())),
            ("/srv/media", InvalidStorageUrl::Scheme("/srv/media".into())),
            ("file://", InvalidStorageUrl::NoPath("file://".into())),
            (
                "s3:///prefix",
                InvalidStorageUrl::NoBucket("s3:///prefix".into()),
            ),
            (
                "s3://bucket",
                InvalidStorageUrl::Missing("storage_s3_access_key_id", "AWS_ACCESS_KEY_ID"),
            ),
        ] {
            assert_eq!(open_with(url, &none, &no_env).err(), Some(wrong), "{url}");
        }
    }

    #[test]
    fn file_urls_may_be_relative() {
        let dir = tempfile_dir();
        let url = format!("file://{}/media", dir.display());
        let store = open_with(&url, &S3Settings::default(), &no_env).unwrap();
        assert!(store.location().starts_with("file:///"));
        assert!(dir.join("media").is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("medialib-open-{}", crate::random_name()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
