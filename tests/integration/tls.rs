//! HTTPS: `medialib serve` with `tls_cert`/`tls_key` speaks TLS (rustls) with HTTP/2 and
//! HTTP/1.1 chosen by ALPN; bad files stop it at start with a message naming the file; and
//! the start-up safety check refuses plain HTTP on a non-loopback address.
//!
//! The certificates are made by the test with rcgen; the client (reqwest with rustls)
//! trusts only the test's certificate.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use medialib::configuration::{SettingsLoader, TlsFiles};
use medialib::startup::{Application, StartupError};
use medialib::tls::TlsError;
use reqwest::{StatusCode, Version};

use crate::cli::medialib_bin;
use crate::helpers::spawn_app_with;

/// A self-signed certificate for `localhost` and 127.0.0.1, written as PEM files.
struct Pem {
    dir: tempfile::TempDir,
    cert_pem: String,
}

impl Pem {
    fn new() -> Self {
        Self::with_key(rcgen::KeyPair::generate().unwrap())
    }

    fn with_key(key: rcgen::KeyPair) -> Self {
        let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        let cert = rcgen::CertificateParams::new(names)
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        Self {
            dir,
            cert_pem: cert.pem(),
        }
    }

    fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("key.pem")
    }

    /// A file next to the others.
    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// A client that trusts this certificate and nothing else.
    fn client(&self, port: u16, http1_only: bool) -> reqwest::Client {
        let mut builder = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(self.cert_pem.as_bytes()).unwrap())
            .resolve("localhost", SocketAddr::from(([127, 0, 0, 1], port)));
        if http1_only {
            builder = builder.http1_only();
        }
        builder.build().unwrap()
    }
}

fn path_str(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// Starts the app over HTTPS with `pem`'s files; returns its port.
async fn spawn_https(pem: &Pem) -> crate::helpers::TestApp {
    let (cert, key) = (path_str(&pem.cert()), path_str(&pem.key()));
    spawn_app_with(|l| l.set("tls_cert", cert).set("tls_key", key)).await
}

#[tokio::test]
async fn healthz_over_https_negotiates_http2() {
    let pem = Pem::new();
    let app = spawn_https(&pem).await;
    let url = format!("https://localhost:{}/healthz", app.port);

    let res = pem.client(app.port, false).get(&url).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.version(), Version::HTTP_2, "ALPN chose h2");
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"status": "ok"}));

    let res = pem.client(app.port, true).get(&url).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.version(), Version::HTTP_11, "ALPN chose http/1.1");

    // By IP address too (the certificate names 127.0.0.1).
    let res = pem
        .client(app.port, false)
        .get(format!("https://127.0.0.1:{}/readyz", app.port))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_tls_port_does_not_speak_plain_http_and_other_certificates_are_not_trusted() {
    let pem = Pem::new();
    let app = spawn_https(&pem).await;
    let plain = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{}/healthz", app.port))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP answered: {plain:?}");
    // A client that trusts a different certificate refuses the server's.
    let stranger = Pem::new();
    let res = stranger
        .client(app.port, false)
        .get(format!("https://localhost:{}/healthz", app.port))
        .send()
        .await;
    assert!(
        res.is_err(),
        "an untrusted certificate was accepted: {res:?}"
    );
}

#[tokio::test]
async fn the_base_url_defaults_to_https() {
    let pem = Pem::new();
    let (cert, key) = (path_str(&pem.cert()), path_str(&pem.key()));
    let settings = SettingsLoader::new()
        .set("database_url", "sqlite::memory:")
        .set("bind", "127.0.0.1:0")
        .set("tls_cert", cert)
        .set("tls_key", key)
        .load()
        .unwrap();
    let app = Application::build(settings).await.unwrap();
    assert_eq!(
        app.base_url().as_str(),
        format!("https://127.0.0.1:{}", app.port())
    );
}

/// Under native TLS every response carries HSTS (DECISIONS.md §4), errors included.
#[tokio::test]
async fn native_tls_puts_hsts_on_every_response() {
    let pem = Pem::new();
    let app = spawn_https(&pem).await;
    let client = pem.client(app.port, false);
    let mut missing = Vec::new();
    for path in [
        "/healthz",
        "/api/nope",
        "/api/catalog/c/0/o/0",
        "/api/authenticate",
    ] {
        let res = client
            .get(format!("https://localhost:{}{path}", app.port))
            .send()
            .await
            .unwrap();
        let hsts = res.headers().get("strict-transport-security");
        if hsts.and_then(|v| v.to_str().ok()) != Some("max-age=31536000") {
            missing.push(format!("{path} ({}): {hsts:?}", res.status()));
        }
    }
    assert!(missing.is_empty(), "no HSTS on: {missing:?}");
}

/// The start-up error for `cert` and `key` (set directly: loading the configuration
/// already refuses files that cannot be read).
async fn startup_error(cert: &Path, key: &Path) -> StartupError {
    let mut settings = SettingsLoader::new()
        .set("database_url", "sqlite::memory:")
        .set("bind", "127.0.0.1:0")
        .load()
        .unwrap();
    settings.tls = Some(TlsFiles {
        cert: cert.to_owned(),
        key: key.to_owned(),
    });
    let error = Application::build(settings).await.unwrap_err();
    assert!(error.is_configuration_error(), "{error:?}");
    error
}

#[tokio::test]
async fn bad_files_stop_the_start_with_a_message_naming_the_file() {
    let pem = Pem::new();
    let other = Pem::new();

    // A key that belongs to another certificate.
    let error = startup_error(&pem.cert(), &other.key()).await;
    assert!(
        matches!(error, StartupError::Tls(TlsError::KeyMismatch { .. })),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "the private key in {} does not match the certificate in {}",
            other.key().display(),
            pem.cert().display()
        )
    );

    // Cert and key swapped: no certificate in the key file, no key in the certificate file.
    let message = startup_error(&pem.key(), &pem.key()).await.to_string();
    assert!(
        message.starts_with(&format!("no certificate in {}", pem.key().display())),
        "{message}"
    );
    let message = startup_error(&pem.cert(), &pem.cert()).await.to_string();
    assert!(
        message.starts_with(&format!("no private key in {}", pem.cert().display())),
        "{message}"
    );

    // A file that became unreadable after the configuration was loaded.
    let gone = pem.write("gone.pem", "");
    std::fs::remove_file(&gone).unwrap();
    let message = startup_error(&pem.cert(), &gone).await.to_string();
    assert!(
        message.starts_with(&format!("cannot read {}", gone.display())),
        "{message}"
    );
}

#[tokio::test]
async fn other_key_formats_serve_too() {
    // Ed25519 in PKCS#8, and P-256 as a SEC1 `EC PRIVATE KEY`.
    let ed = Pem::with_key(rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap());
    let app = spawn_https(&ed).await;
    let res = ed
        .client(app.port, false)
        .get(format!("https://localhost:{}/healthz", app.port))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let sec1 = sec1_from_pkcs8(&key.serialize_der());
    let ec = Pem::with_key(key);
    let sec1_pem = format!(
        "-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(sec1)
    );
    ec.write("key.pem", &sec1_pem);
    let app = spawn_https(&ec).await;
    let res = ec
        .client(app.port, false)
        .get(format!("https://localhost:{}/healthz", app.port))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

/// The SEC1 `ECPrivateKey` inside a PKCS#8 `PrivateKeyInfo`: SEQUENCE { INTEGER version,
/// SEQUENCE algorithm, OCTET STRING privateKey }.
fn sec1_from_pkcs8(der: &[u8]) -> Vec<u8> {
    /// (tag, content, rest) of the DER element at the start of `input`.
    fn element(input: &[u8]) -> (u8, &[u8], &[u8]) {
        let tag = input[0];
        let (len, header) = match input[1] {
            n if n < 0x80 => (usize::from(n), 2),
            0x81 => (usize::from(input[2]), 3),
            0x82 => ((usize::from(input[2]) << 8) | usize::from(input[3]), 4),
            other => panic!("unexpected DER length byte {other:#x}"),
        };
        (tag, &input[header..header + len], &input[header + len..])
    }
    let (tag, info, _) = element(der);
    assert_eq!(tag, 0x30, "PrivateKeyInfo is a SEQUENCE");
    let (tag, _, rest) = element(info);
    assert_eq!(tag, 0x02, "version");
    let (tag, _, rest) = element(rest);
    assert_eq!(tag, 0x30, "algorithm");
    let (tag, key, _) = element(rest);
    assert_eq!(tag, 0x04, "privateKey OCTET STRING");
    key.to_vec()
}

/// The real binary: a bad pair is a configuration error (exit 2) naming the file, and a
/// non-loopback bind without TLS or an https base URL refuses to start.
#[test]
fn the_binary_refuses_bad_tls_files_and_plain_http_off_loopback() {
    let pem = Pem::new();
    let other = Pem::new();
    let db = format!("sqlite://{}", pem.dir.path().join("db.sqlite").display());
    let run = |env: &[(&str, String)]| {
        let mut cmd = std::process::Command::new(medialib_bin());
        cmd.arg("serve").current_dir(pem.dir.path());
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("MEDIALIB_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("MEDIALIB_DATABASE_URL", &db);
        for (name, value) in env {
            cmd.env(name, value);
        }
        cmd.output().unwrap()
    };

    let out = run(&[
        ("MEDIALIB_BIND", "127.0.0.1:0".into()),
        ("MEDIALIB_TLS_CERT", path_str(&pem.cert())),
        ("MEDIALIB_TLS_KEY", path_str(&other.key())),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the private key in {} does not match the certificate in {}",
            other.key().display(),
            pem.cert().display()
        )),
        "{stderr}"
    );
    assert!(
        !pem.dir.path().join("db.sqlite").exists(),
        "the files are checked before the database is touched"
    );

    let out = run(&[("MEDIALIB_BIND", "0.0.0.0:0".into())]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bind (from MEDIALIB_BIND): 0.0.0.0:0 is reachable from other machines"),
        "{stderr}"
    );
}
