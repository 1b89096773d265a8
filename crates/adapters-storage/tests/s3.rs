//! What only the S3 store does, against a real Garage: outages, runtimes, presigned URLs,
//! multipart puts.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

mod common;

use std::cell::RefCell;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use common::{Body, MIB, append, bytes, key, read_all, s3_storage, sha256};
use medialib_adapters_storage::testing::Garage;
use medialib_domain::Timestamp;
use medialib_ports::{AppendStop, MediaStorage, StorageError};

fn garage() -> Garage {
    Garage::start().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn garage_stopped_mid_append_is_unavailable_and_the_append_resumes_after_a_restart() {
    let garage = RefCell::new(garage());
    let store = s3_storage(&garage.borrow());
    let k = key("outage/source");
    let data = bytes(16 * MIB, 1);
    let staging = store.stage(&k, data.len() as u64).unwrap();
    // The server dies after the first part is stored: 10 MiB, the most an append holds
    // before it puts a part (twice the 5 MiB smallest).
    let mut body = Body::new(&data).at(11 * MIB, || garage.borrow_mut().stop());
    let (done, _) = append(&store, &staging, 0, &mut body);
    match &done.stopped {
        Some(AppendStop::Storage(StorageError::Unavailable(_))) => {}
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert_eq!(done.offset, 10 * MIB as u64, "the first part is durable");
    garage.borrow_mut().restart().unwrap();
    let at = done.offset as usize;
    let (rest, _) = append(
        &store,
        &done.staging,
        done.offset,
        &mut Body::new(&data[at..]),
    );
    assert!(rest.stopped.is_none(), "{:?}", rest.stopped);
    store.finish(&rest.staging).unwrap();
    assert_eq!(sha256(&read_all(&store, &k)), sha256(&data));
}

#[test]
fn an_unreachable_store_is_unavailable() {
    let mut garage = garage();
    let store = s3_storage(&garage);
    garage.stop();
    match store.head(&key("x")) {
        Err(StorageError::Unavailable(_)) => {}
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[test]
fn the_store_works_from_another_runtime_s_blocking_threads_and_drops_on_async_ones() {
    let garage = garage();
    let store = std::sync::Arc::new(s3_storage(&garage));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let data = bytes(3 * MIB, 2);
    let copy = data.clone();
    let on_blocking = std::sync::Arc::clone(&store);
    let read = runtime
        .block_on(runtime.spawn_blocking(move || {
            let k = key("runtime/x");
            on_blocking.put(&k, &mut &copy[..]).unwrap();
            read_all(&*on_blocking, &k)
        }))
        .unwrap();
    assert_eq!(read, data);
    // Dropped on an async worker thread: the store's runtime shuts down without blocking.
    runtime.block_on(async move { drop(store) });
}

#[test]
fn a_large_put_is_a_multipart_upload() {
    let garage = garage();
    let store = s3_storage(&garage);
    let k = key("big/put");
    let data = bytes(20 * MIB, 3);
    let info = store.put(&k, &mut Body::new(&data)).unwrap();
    // A multipart object's ETag is `md5-N` (N parts of 8 MiB).
    assert!(info.etag.ends_with("-3"), "{}", info.etag);
    assert_eq!(sha256(&read_all(&store, &k)), sha256(&data));
}

/// `GET` of a URL on the Garage, by hand: (status, body).
fn get(url: &str) -> (u16, Vec<u8>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = response[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line = data.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..line]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[line + 2..line + 2 + size]);
        data = &data[line + 2 + size + 2..];
    }
}

#[test]
fn a_presigned_url_serves_the_object_until_it_expires() {
    let garage = garage();
    let store = s3_storage(&garage);
    let k = key("signed/x.mp4");
    store.put(&k, &mut &b"signed bytes"[..]).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let url = store
        .presign(&k, Timestamp::from_epoch_seconds(now + 600))
        .unwrap();
    assert!(!url.contains(garage.secret_access_key()));
    assert_eq!(get(&url), (200, b"signed bytes".to_vec()));
    let tampered = url.replace("x.mp4", "y.mp4");
    assert_eq!(get(&tampered).0, 403);
}
