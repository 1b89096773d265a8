//! Uploads over real HTTP against the real app (DECISIONS §7): tus 1.0 and the one-shot
//! PUT, the media call and signed delivery, on SQLite and PostgreSQL, with the media on the
//! file system (and, where a test says so, on a real Garage).

mod flow;

use reqwest::{Method, StatusCode};
use sha2::{Digest, Sha256};

use crate::api::{ApiApp, Backend};

/// An app with alice signed in (a `read write` token) and her library.
pub struct UploadApp {
    pub api: ApiApp,
    pub token: String,
    pub lib: String,
}

impl UploadApp {
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, |l| l).await
    }

    pub async fn start_with(
        backend: Backend,
        configure: impl FnOnce(
            medialib::configuration::SettingsLoader,
        ) -> medialib::configuration::SettingsLoader,
    ) -> Self {
        let api = ApiApp::start_with(backend, configure).await;
        let (_, token) = api.signed_in("alice");
        let lib = api.library(&token, "Lectures").await;
        Self { api, token, lib }
    }

    /// `/api/upload/c/{lib}/o/{object}/`.
    pub fn upload_path(&self, object: &str) -> String {
        format!("/api/upload/c/{}/o/{object}/", self.lib)
    }

    /// A tus request with the token and `Tus-Resumable`.
    pub fn tus(&self, method: Method, url: &str) -> reqwest::RequestBuilder {
        let url = if url.starts_with("http") {
            url.to_owned()
        } else {
            self.api.app.url(url)
        };
        self.api
            .app
            .client
            .request(method, url)
            .bearer_auth(&self.token)
            .header("Tus-Resumable", "1.0.0")
    }

    /// Creates an upload of `length` bytes named `filename`; returns its Location.
    pub async fn create(&self, length: usize, filename: &str) -> String {
        use base64::Engine as _;
        let name = base64::engine::general_purpose::STANDARD.encode(filename);
        let res = self
            .tus(Method::POST, &self.upload_path("0"))
            .header("Upload-Length", length.to_string())
            .header("Upload-Metadata", format!("filename {name}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        res.headers()["location"].to_str().unwrap().to_owned()
    }

    /// PATCHes `bytes` at `offset`; returns the answer.
    pub async fn patch(&self, location: &str, offset: usize, bytes: &[u8]) -> reqwest::Response {
        self.tus(Method::PATCH, location)
            .header("Content-Type", "application/offset+octet-stream")
            .header("Upload-Offset", offset.to_string())
            .body(bytes.to_vec())
            .send()
            .await
            .unwrap()
    }

    /// The media record of `object`.
    pub async fn media(&self, object: &str) -> serde_json::Value {
        let answer = self
            .api
            .get(
                &format!("/api/media/c/{}/o/{object}/", self.lib),
                Some(&self.token),
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.json);
        answer.json
    }
}

/// Deterministic test bytes.
pub fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
