//! HTTPS: the rustls server configuration built from the PEM files of `tls_cert` and
//! `tls_key`.
//!
//! One crypto provider is compiled in, *ring* (the same one the OpenID Connect client's
//! rustls uses), and it is named explicitly here rather than picked from a process-wide
//! default. actix-web adds the ALPN protocols `h2` and `http/1.1`, so clients that can
//! speak HTTP/2 get it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::{self, PemObject as _};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::configuration::TlsFiles;

/// Why the certificate and key cannot serve HTTPS. Every message names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not valid PEM.
    #[error("{} is not a valid PEM file: {reason}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What the PEM parser said.
        reason: String,
    },
    /// The certificate file holds no `CERTIFICATE` section.
    #[error("no certificate in {} (expected PEM `BEGIN CERTIFICATE` sections, the server's certificate first)", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file holds no private key that can be read.
    #[error(
        "no private key in {} (expected an unencrypted PEM `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` or `EC PRIVATE KEY` section)",
        path.display()
    )]
    NoPrivateKey {
        /// The file.
        path: PathBuf,
    },
    /// The private key is not the one the certificate was issued for.
    #[error("the private key in {} does not match the certificate in {}", key.display(), cert.display())]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the pair for another reason (an unsupported key type, a malformed
    /// certificate).
    #[error("cannot use the certificate in {} with the private key in {}: {reason}", cert.display(), key.display())]
    Rejected {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said.
        reason: String,
    },
}

/// Reads the certificate chain and private key and builds the server configuration
/// (TLS 1.2 and 1.3 with rustls' safe defaults, no client certificates).
pub fn server_config(files: &TlsFiles) -> Result<ServerConfig, TlsError> {
    let chain = certificates(&files.cert)?;
    let key = private_key(&files.key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let rejected = |error: rustls::Error| match error {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
            TlsError::KeyMismatch {
                cert: files.cert.clone(),
                key: files.key.clone(),
            }
        }
        other => TlsError::Rejected {
            cert: files.cert.clone(),
            key: files.key.clone(),
            reason: other.to_string(),
        },
    };
    ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(rejected)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(rejected)
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

fn bad_pem(path: &Path, error: &pem::Error) -> TlsError {
    TlsError::Pem {
        path: path.to_owned(),
        reason: error.to_string(),
    }
}

/// Every `CERTIFICATE` section of the file, in order (the server's own certificate first).
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let chain = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| bad_pem(path, &error))?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(chain)
}

/// The first private key of the file: PKCS#8, PKCS#1 (RSA) or SEC1 (EC).
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|error| match error {
        pem::Error::NoItemsFound => TlsError::NoPrivateKey {
            path: path.to_owned(),
        },
        other => bad_pem(path, &other),
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn files(cert: &tempfile::NamedTempFile, key: &tempfile::NamedTempFile) -> TlsFiles {
        TlsFiles {
            cert: cert.path().to_owned(),
            key: key.path().to_owned(),
        }
    }

    #[test]
    fn a_missing_file_is_named() {
        let key = file("");
        let tls = TlsFiles {
            cert: PathBuf::from("/nonexistent/cert.pem"),
            key: key.path().to_owned(),
        };
        let message = server_config(&tls).unwrap_err().to_string();
        assert!(
            message.starts_with("cannot read /nonexistent/cert.pem:"),
            "{message}"
        );
    }

    #[test]
    fn a_file_without_certificates_is_named() {
        let cert = file("just some text\n");
        let key = file("");
        let message = server_config(&files(&cert, &key)).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("no certificate in {}", cert.path().display())),
            "{message}"
        );
    }

    #[test]
    fn broken_pem_is_named() {
        let cert = file("-----BEGIN CERTIFICATE-----\nnot base64 at all!\n");
        let key = file("");
        let message = server_config(&files(&cert, &key)).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!(
                "{} is not a valid PEM file",
                cert.path().display()
            )),
            "{message}"
        );
    }

    #[test]
    fn a_key_file_without_a_key_is_named() {
        // A syntactically valid certificate section (the content is checked later, by rustls).
        let cert = file("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
        let key = file("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
        let message = server_config(&files(&cert, &key)).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("no private key in {}", key.path().display())),
            "{message}"
        );
    }

    #[test]
    fn a_key_that_is_not_a_key_is_rejected_naming_both_files() {
        let cert = file("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
        let key = file("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
        let error = server_config(&files(&cert, &key)).unwrap_err();
        assert!(matches!(error, TlsError::Rejected { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.contains(&cert.path().display().to_string()),
            "{message}"
        );
        assert!(
            message.contains(&key.path().display().to_string()),
            "{message}"
        );
    }
}
