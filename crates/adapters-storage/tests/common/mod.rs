//! What the storage tests share: the stores under test, bodies that count or fail, digests.

#![allow(dead_code, reason = "each test binary uses part of it")]

use std::io::{self, Read};

use medialib_adapters_storage::testing::Garage;
use medialib_adapters_storage::{FileStorage, S3Storage};
use medialib_domain::media::StorageKey;
use medialib_ports::{Append, Appended, MediaStorage, Staging};
use sha2::{Digest as _, Sha256};

pub const MIB: usize = 1024 * 1024;

/// A store under test, with what it needs to live and a count of what its staging area holds.
pub struct Fixture {
    pub store: Box<dyn MediaStorage>,
    pub staged: Box<dyn Fn() -> usize>,
    _dir: Option<tempfile::TempDir>,
    pub garage: Option<Garage>,
}

pub fn file() -> Fixture {
    file_store(|s| s)
}

/// The file store writing every byte through the page cache.
pub fn file_buffered() -> Fixture {
    file_store(FileStorage::buffered)
}

fn file_store(mode: fn(FileStorage) -> FileStorage) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = mode(FileStorage::open(dir.path().join("media")).unwrap());
    let counter = store.clone();
    Fixture {
        store: Box::new(store),
        staged: Box::new(move || counter.staged_objects().unwrap()),
        _dir: Some(dir),
        garage: None,
    }
}

pub fn s3() -> Fixture {
    let garage = Garage::start().unwrap_or_else(|e| panic!("{e}"));
    let store = garage.storage("contract/prefix").unwrap();
    let counter = garage.storage("contract/prefix").unwrap();
    Fixture {
        store: Box::new(store),
        staged: Box::new(move || counter.staged_objects().unwrap()),
        _dir: None,
        garage: Some(garage),
    }
}

pub fn s3_storage(garage: &Garage) -> S3Storage {
    garage.storage("s3only").unwrap()
}

pub fn key(s: &str) -> StorageKey {
    StorageKey::parse(s).unwrap()
}

/// `len` bytes that differ from one `seed` to the next and are not periodic in a part.
pub fn bytes(len: usize, seed: u8) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9 ^ u32::from(seed);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

pub fn read_all(store: &dyn MediaStorage, key: &StorageKey) -> Vec<u8> {
    let mut reading = store.read(key, None).unwrap();
    let mut out = Vec::new();
    reading.body.read_to_end(&mut out).unwrap();
    assert_eq!(out.len() as u64, reading.info.size);
    out
}

/// A body that hands out `data`, counting what was read, and fails after `fail_after` bytes
/// (when set); `at` runs once when that many bytes have been read.
pub struct Body<'a> {
    data: &'a [u8],
    pub read: usize,
    fail_after: Option<usize>,
    chunk: usize,
    at: Option<(usize, Box<dyn FnMut() + 'a>)>,
}

impl<'a> Body<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self {
            data,
            read: 0,
            fail_after: None,
            chunk: 64 * 1024,
            at: None,
        }
    }

    pub fn failing_after(mut self, n: usize) -> Self {
        self.fail_after = Some(n);
        self
    }

    pub fn at(mut self, n: usize, f: impl FnMut() + 'a) -> Self {
        self.at = Some((n, Box::new(f)));
        self
    }
}

impl Read for Body<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some((n, f)) = &mut self.at
            && self.read >= *n
        {
            f();
            self.at = None;
        }
        let mut limit = self.data.len();
        if let Some(fail) = self.fail_after {
            if self.read >= fail {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "client went away",
                ));
            }
            limit = limit.min(fail);
        }
        if let Some((n, _)) = &self.at {
            limit = limit.min((*n).max(self.read + 1));
        }
        let n = buf
            .len()
            .min(self.chunk)
            .min(limit.saturating_sub(self.read));
        buf[..n].copy_from_slice(&self.data[self.read..self.read + n]);
        self.read += n;
        Ok(n)
    }
}

/// Appends `data` from `offset`, recording every checkpoint; checks they only grow and that
/// the last one is the returned offset.
pub fn append(
    store: &dyn MediaStorage,
    staging: &Staging,
    offset: u64,
    body: &mut dyn Read,
) -> (Appended, Vec<u64>) {
    let mut seen = Vec::new();
    let appended = store.append(Append {
        staging,
        offset,
        body,
        checkpoint: &mut |_, at| {
            seen.push(at);
            true
        },
    });
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    (appended, seen)
}
