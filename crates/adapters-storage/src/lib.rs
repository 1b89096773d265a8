//! medialib's media stores, behind the `MediaStorage` port: a directory of the file system
//! ([`FileStorage`]) or an S3 bucket ([`S3Storage`], through `object_store`), and [`open`],
//! which builds one from the configured storage URL.
//!
//! Both are blocking, like the port: the file store uses `std::fs`, the S3 store runs
//! object_store's futures on a small runtime of its own and waits for them on the calling
//! thread. Neither holds a whole object in memory: the file store copies through a 1 MiB
//! buffer, the S3 store holds at most one multipart part per append.

mod direct;
mod fs;
mod open;
mod s3;

#[cfg(feature = "testing")]
pub mod testing;

pub use fs::FileStorage;
pub use open::{InvalidStorageUrl, S3Settings, open};
pub use s3::{S3Config, S3Storage};

/// The buffer bodies are copied through.
const COPY_BUFFER: usize = 1024 * 1024;

/// The directory (file system) or prefix (S3) under the store's root where staged uploads
/// live. `~` is no character of a `StorageKey`, so no object can ever be stored there, and
/// `list` never meets a staged upload.
const STAGING: &str = "staging~";

/// Reads into `buf` until it is full or `body` ends; the number of bytes read, or the error
/// that stopped reading together with the bytes read before it.
fn read_full(body: &mut dyn std::io::Read, buf: &mut [u8]) -> (usize, Option<std::io::Error>) {
    let mut filled = 0;
    while filled < buf.len() {
        match body.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (filled, Some(e)),
        }
    }
    (filled, None)
}

/// Whether a body that supplied every byte of an upload still has more: reads one byte
/// (it is not stored).
fn sends_more(body: &mut dyn std::io::Read) -> Option<std::io::Error> {
    let mut one = [0u8; 1];
    match read_full(body, &mut one) {
        (0, None) => None,
        (_, Some(e)) => Some(e),
        (_, None) => Some(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the body is longer than the upload's length",
        )),
    }
}

/// A random name for a staged upload or a temporary file: 128 bits in hex.
fn random_name() -> String {
    format!("{:032x}", rand::random::<u128>())
}
