//! Uploads over real HTTP against the real app (DECISIONS §7): tus 1.0 and the one-shot
//! PUT, the media call and signed delivery, on SQLite and PostgreSQL, with the media on the
//! file system (and, where a test says so, on a real Garage).
//!
//! - `flow`: the whole way through with reqwest and curl;
//! - `clients`: real tus clients (tus-js-client under Node, Python's tuspy) uploading whole
//!   and resuming from a new process, and Chromium reading a range of a delivered file;
//! - `faults`: `kill -9` of the server mid-PATCH, two PATCHes at once, Garage stopped
//!   mid-upload, delivery from Garage (streamed and redirected);
//! - `hostile`: malformed, oversized and unauthorized requests, each a clear 4xx that writes
//!   nothing outside the upload's own storage key; metrics and readiness.

pub(crate) mod clients;
pub(crate) mod faults;
mod flow;
mod hostile;

use reqwest::{Method, StatusCode};
use sha2::{Digest, Sha256};

use crate::api::{ApiApp, Backend};

/// An app with alice signed in (a `read write` token) and her library.
pub struct UploadApp {
    pub api: ApiApp,
    pub token: String,
    pub lib: String,
    /// alice.
    pub user: medialib_domain::User,
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
        let (user, token) = api.signed_in("alice");
        let lib = api.library(&token, "Lectures").await;
        Self {
            api,
            token,
            lib,
            user,
        }
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
        self.create_at(&self.api.app.address, length, filename)
            .await
    }

    /// Creates an upload on the medialib at `base` (`http://HOST:PORT`, on the same
    /// database); returns its Location.
    pub async fn create_at(&self, base: &str, length: usize, filename: &str) -> String {
        use base64::Engine as _;
        let name = base64::engine::general_purpose::STANDARD.encode(filename);
        let res = self
            .tus(Method::POST, &format!("{base}{}", self.upload_path("0")))
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
        self.media_at(&self.api.app.address, object).await
    }

    /// The media record of `object` from the medialib at `base` (`http://HOST:PORT`).
    pub async fn media_at(&self, base: &str, object: &str) -> serde_json::Value {
        let res = self
            .api
            .app
            .client
            .get(format!("{base}/api/media/c/{}/o/{object}/", self.lib))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body = res.text().await.unwrap();
        assert_eq!(status, StatusCode::OK, "{base}: {body}");
        serde_json::from_str(&body).unwrap()
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

/// The object id at the end of an upload's Location.
pub fn object_of(location: &str) -> String {
    location
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned()
}

impl UploadApp {
    /// Asserts that `object`'s media source is `bytes` (size and SHA-256 in the media call)
    /// and that its delivery URL serves exactly `bytes`.
    pub async fn assert_stored(&self, object: &str, bytes: &[u8]) {
        let media = self.media(object).await;
        assert_eq!(media["source"]["sha256"], sha256_hex(bytes), "{media}");
        assert_eq!(media["source"]["size"], bytes.len(), "{media}");
        let url = media["files"][0]["url"].as_str().unwrap();
        let got = self.api.app.client.get(url).send().await.unwrap();
        assert_eq!(got.status(), StatusCode::OK);
        let got = got.bytes().await.unwrap();
        assert!(
            got.as_ref() == bytes,
            "the delivered bytes differ from the source ({} bytes delivered, {} sent)",
            got.len(),
            bytes.len()
        );
    }

    /// The delivery URL of `object`'s source.
    pub async fn source_url(&self, object: &str) -> String {
        self.media(object).await["files"][0]["url"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// Every file under `dir`, as paths relative to it, sorted.
pub fn files_under(dir: &std::path::Path) -> Vec<String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// An HTTP/1.1 answer read off a raw connection.
#[derive(Debug)]
pub struct RawAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawAnswer {
    /// The first header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when empty or not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// A PATCH request head for `path` at `offset` with a body of `len` bytes.
pub fn patch_head(host: &str, path: &str, token: &str, offset: usize, len: usize) -> String {
    format!(
        "PATCH {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
         Tus-Resumable: 1.0.0\r\nContent-Type: application/offset+octet-stream\r\n\
         Upload-Offset: {offset}\r\nContent-Length: {len}\r\n\r\n"
    )
}

/// Reads one answer (headers, then a `Content-Length` body) from `reader`.
pub async fn read_answer<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<RawAnswer> {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line: {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).await?;
    Ok(RawAnswer {
        status,
        headers,
        body,
    })
}

/// One request on a fresh connection to `address` (`http://HOST:PORT`): `head`, then `body`
/// written `piece` bytes at a time with `pause` between pieces, while the answer is awaited;
/// the answer may come before the whole body is sent (the writing then stops). `written`
/// counts the body bytes handed to the connection. An error when the connection dies first.
pub async fn paced_request(
    address: String,
    head: String,
    body: Vec<u8>,
    piece: usize,
    pause: std::time::Duration,
    written: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> std::io::Result<RawAnswer> {
    use tokio::io::AsyncWriteExt as _;
    let host = address.trim_start_matches("http://").to_owned();
    let stream = tokio::net::TcpStream::connect(&host).await?;
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        write.write_all(head.as_bytes()).await?;
        for chunk in body.chunks(piece) {
            write.write_all(chunk).await?;
            write.flush().await?;
            written.fetch_add(chunk.len(), std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(pause).await;
        }
        Ok::<_, std::io::Error>(write)
    });
    let mut reader = tokio::io::BufReader::new(read);
    let answer = read_answer(&mut reader).await;
    writer.abort();
    answer
}
