//! The `MediaStorage` contract, run on both stores: the file system (in a temporary
//! directory) and S3 (a real Garage, started per test; see `testing`).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

mod common;

use std::io::Read as _;

use common::{Body, Fixture, MIB, append, bytes, key, read_all, sha256};
use medialib_domain::media::ByteSpan;
use medialib_ports::{Append, AppendStop, StorageError};

fn span(start: u64, len: u64) -> Option<ByteSpan> {
    Some(ByteSpan::new(start, len).unwrap())
}

fn put_head_and_read_whole_or_a_span(f: &Fixture) {
    let s = &*f.store;
    let k = key("media/1/source");
    assert_eq!(s.head(&k), Err(StorageError::NotFound));
    assert!(matches!(s.read(&k, None), Err(StorageError::NotFound)));
    let info = s.put(&k, &mut &b"hello world"[..]).unwrap();
    assert_eq!((info.key.clone(), info.size), (k.clone(), 11));
    assert!(!info.etag.is_empty() && !info.etag.contains('"'));
    assert_eq!(s.head(&k).unwrap(), info);
    assert_eq!(read_all(s, &k), b"hello world");

    let mut part = s.read(&k, span(6, 3)).unwrap();
    assert_eq!(part.span, span(6, 3));
    let mut got = String::new();
    part.body.read_to_string(&mut got).unwrap();
    assert_eq!(got, "wor");

    let mut cut = s.read(&k, span(6, 100)).unwrap();
    assert_eq!(cut.span, span(6, 5));
    got.clear();
    cut.body.read_to_string(&mut got).unwrap();
    assert_eq!(got, "world");

    assert!(matches!(
        s.read(&k, span(11, 1)),
        Err(StorageError::OutOfRange)
    ));
    assert!(matches!(
        s.read(&k, span(500, 1)),
        Err(StorageError::OutOfRange)
    ));
}

fn the_etag_changes_when_the_bytes_do(f: &Fixture) {
    let s = &*f.store;
    let k = key("etag/x");
    let first = s.put(&k, &mut &b"aaaa"[..]).unwrap();
    let second = s.put(&k, &mut &b"bbbb"[..]).unwrap();
    assert_ne!(first.etag, second.etag);
    assert_eq!(read_all(s, &k), b"bbbb");
}

fn delete_is_idempotent(f: &Fixture) {
    let s = &*f.store;
    let k = key("gone/x");
    s.put(&k, &mut &b"x"[..]).unwrap();
    s.delete(&k).unwrap();
    assert_eq!(s.head(&k), Err(StorageError::NotFound));
    s.delete(&k).unwrap();
    s.delete(&key("never/was")).unwrap();
}

fn list_respects_segment_boundaries(f: &Fixture) {
    let s = &*f.store;
    for k in ["a/1/x", "a/1/y/z", "a/10/x", "b/1/x"] {
        s.put(&key(k), &mut &b"12"[..]).unwrap();
    }
    let names = |prefix: &str| {
        let mut v: Vec<String> = s
            .list(&key(prefix))
            .unwrap()
            .into_iter()
            .map(|i| {
                assert_eq!(i.size, 2);
                i.key.to_string()
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(names("a/1"), ["a/1/x", "a/1/y/z"]);
    assert_eq!(names("a"), ["a/1/x", "a/1/y/z", "a/10/x"]);
    assert!(names("c").is_empty());
    assert!(names("a/1/x").is_empty(), "an object is not under itself");
}

fn one_append_of_everything_then_finish(f: &Fixture) {
    let s = &*f.store;
    let k = key("up/one/source");
    let data = bytes(13 * MIB + 17, 1);
    let staging = s.stage(&k, data.len() as u64).unwrap();
    let (done, seen) = append(s, &staging, 0, &mut Body::new(&data));
    assert!(done.stopped.is_none(), "{:?}", done.stopped);
    assert_eq!(done.offset, data.len() as u64);
    assert_eq!(seen.last(), Some(&done.offset));
    assert!(seen.len() >= 2, "checkpoints along the way: {seen:?}");
    assert_eq!(
        s.head(&k),
        Err(StorageError::NotFound),
        "not visible before finish"
    );
    let info = s.finish(&done.staging).unwrap();
    assert_eq!(info.size, data.len() as u64);
    assert_eq!(sha256(&read_all(s, &k)), sha256(&data));
    assert_eq!((f.staged)(), 0, "finish leaves nothing staged");
    // A retried finish finds the object in place.
    assert_eq!(s.finish(&done.staging).unwrap().size, data.len() as u64);
}

fn many_small_appends_then_a_few_large_ones(f: &Fixture) {
    let s = &*f.store;
    let k = key("up/many/source");
    let data = bytes(300 * 1024 + 3 * 6 * MIB, 2);
    let mut staging = s.stage(&k, data.len() as u64).unwrap();
    let mut offset = 0u64;
    let mut largest_state = 0;
    let mut sizes = vec![1024; 300];
    sizes.extend([6 * MIB; 3]);
    for size in sizes {
        let at = offset as usize;
        let (done, seen) = append(s, &staging, offset, &mut Body::new(&data[at..at + size]));
        assert!(done.stopped.is_none(), "{:?}", done.stopped);
        assert_eq!(done.offset, offset + size as u64);
        assert_eq!(seen.last(), Some(&done.offset));
        staging = done.staging;
        offset = done.offset;
        largest_state = largest_state.max(staging.state.len());
    }
    // Tails merge like a binary counter: the state never lists 300 of them.
    assert!(
        largest_state < 2048,
        "the state grew to {largest_state} bytes"
    );
    s.finish(&staging).unwrap();
    assert_eq!(sha256(&read_all(s, &k)), sha256(&data));
    assert_eq!((f.staged)(), 0);
}

fn a_body_failing_midway_keeps_what_is_durable_and_resumes(f: &Fixture) {
    let s = &*f.store;
    let k = key("up/fail/source");
    let data = bytes(12 * MIB + 5, 3);
    let staging = s.stage(&k, data.len() as u64).unwrap();
    let fail_at = 7 * MIB + 123;
    let mut body = Body::new(&data).failing_after(fail_at);
    let (done, seen) = append(s, &staging, 0, &mut body);
    assert!(
        matches!(done.stopped, Some(AppendStop::Body(_))),
        "{:?}",
        done.stopped
    );
    assert!(done.offset <= body.read as u64);
    assert_eq!(seen.last(), Some(&done.offset));
    let at = done.offset as usize;
    let (rest, _) = append(s, &done.staging, done.offset, &mut Body::new(&data[at..]));
    assert!(rest.stopped.is_none(), "{:?}", rest.stopped);
    assert_eq!(rest.offset, data.len() as u64);
    s.finish(&rest.staging).unwrap();
    assert_eq!(sha256(&read_all(s, &k)), sha256(&data));
}

fn an_append_re_run_from_an_older_offset_overwrites(f: &Fixture) {
    let s = &*f.store;
    let k = key("up/rerun/source");
    let data = bytes(11 * MIB, 4);
    let staging = s.stage(&k, data.len() as u64).unwrap();
    let (first, _) = append(s, &staging, 0, &mut Body::new(&data[..1000]));
    assert_eq!(first.offset, 1000);
    // A failed append of other bytes (a whole part's worth, then a tail) whose checkpoints
    // the caller refused: the store holds bytes past 1000 that nobody recorded.
    let garbage = bytes(7 * MIB, 99);
    let lost = s.append(Append {
        staging: &first.staging,
        offset: 1000,
        body: &mut Body::new(&garbage),
        checkpoint: &mut |_, _| false,
    });
    assert!(
        matches!(lost.stopped, Some(AppendStop::Checkpoint)),
        "{:?}",
        lost.stopped
    );
    // And one cut by the client.
    let cut = s.append(Append {
        staging: &first.staging,
        offset: 1000,
        body: &mut Body::new(&garbage).failing_after(3 * MIB),
        checkpoint: &mut |_, _| true,
    });
    assert!(matches!(cut.stopped, Some(AppendStop::Body(_))));
    // Re-run from the recorded offset with the right bytes.
    let (rest, _) = append(s, &first.staging, 1000, &mut Body::new(&data[1000..]));
    assert!(rest.stopped.is_none(), "{:?}", rest.stopped);
    s.finish(&rest.staging).unwrap();
    assert_eq!(sha256(&read_all(s, &k)), sha256(&data));
}

fn a_refused_checkpoint_stops_the_append(f: &Fixture) {
    let s = &*f.store;
    let k = key("up/stop/source");
    let data = bytes(30 * MIB, 5);
    let staging = s.stage(&k, data.len() as u64).unwrap();
    let mut body = Body::new(&data);
    let mut calls = 0;
    let done = s.append(Append {
        staging: &staging,
        offset: 0,
        body: &mut body,
        checkpoint: &mut |_, _| {
            calls += 1;
            false
        },
    });
    assert!(
        matches!(done.stopped, Some(AppendStop::Checkpoint)),
        "{:?}",
        done.stopped
    );
    assert_eq!(calls, 1);
    assert!(body.read < data.len(), "stopped reading at the refusal");
    s.discard(&staging).unwrap();
}

fn discard_removes_everything(f: &Fixture) {
    let s = &*f.store;
    let k = key("up/discard/source");
    let data = bytes(11 * MIB + 10, 6); // on S3: a part of the most an append puts, and a tail
    let staging = s.stage(&k, data.len() as u64 + 1000).unwrap();
    let (done, _) = append(s, &staging, 0, &mut Body::new(&data));
    assert!(done.stopped.is_none());
    assert!((f.staged)() > 0);
    s.discard(&done.staging).unwrap();
    assert_eq!((f.staged)(), 0);
    assert_eq!(s.head(&k), Err(StorageError::NotFound));
    assert!(s.list(&key("up")).unwrap().is_empty());
    s.discard(&done.staging).unwrap();
}

fn a_body_longer_than_the_upload_is_refused_past_its_length(f: &Fixture) {
    let s = &*f.store;
    let k = key("up/long/source");
    let staging = s.stage(&k, 10).unwrap();
    let (done, seen) = append(s, &staging, 0, &mut Body::new(b"0123456789abc"));
    assert!(
        matches!(done.stopped, Some(AppendStop::Body(_))),
        "{:?}",
        done.stopped
    );
    assert_eq!((done.offset, seen.last()), (10, Some(&10)));
    s.finish(&done.staging).unwrap();
    assert_eq!(read_all(s, &k), b"0123456789");
}

fn an_empty_upload_finishes_empty(f: &Fixture) {
    let s = &*f.store;
    let k = key("up/empty/source");
    let staging = s.stage(&k, 0).unwrap();
    let (done, seen) = append(s, &staging, 0, &mut Body::new(b""));
    assert!(done.stopped.is_none());
    assert_eq!(seen, [0]);
    assert_eq!(s.finish(&done.staging).unwrap().size, 0);
    assert!(read_all(s, &k).is_empty());
}

fn a_large_put_streams(f: &Fixture) {
    let s = &*f.store;
    let k = key("big/put");
    let data = bytes(20 * MIB + 3, 7);
    let mut body = Body::new(&data);
    let info = s.put(&k, &mut body).unwrap();
    assert_eq!((info.size, body.read), (data.len() as u64, data.len()));
    assert_eq!(sha256(&read_all(s, &k)), sha256(&data));
    let tail = s.read(&k, span(20 * MIB as u64, 100)).unwrap();
    assert_eq!(tail.span, span(20 * MIB as u64, 3));
}

macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        mod file {
            $( #[test] fn $case() { super::$case(&super::common::file()) } )*
        }
        mod file_buffered {
            $( #[test] fn $case() { super::$case(&super::common::file_buffered()) } )*
        }
        mod s3 {
            $( #[test] fn $case() { super::$case(&super::common::s3()) } )*
        }
    };
}

contract!(
    put_head_and_read_whole_or_a_span,
    the_etag_changes_when_the_bytes_do,
    delete_is_idempotent,
    list_respects_segment_boundaries,
    one_append_of_everything_then_finish,
    many_small_appends_then_a_few_large_ones,
    a_body_failing_midway_keeps_what_is_durable_and_resumes,
    an_append_re_run_from_an_older_offset_overwrites,
    a_refused_checkpoint_stops_the_append,
    discard_removes_everything,
    a_body_longer_than_the_upload_is_refused_past_its_length,
    an_empty_upload_finishes_empty,
    a_large_put_streams,
);
