//! The checkpoint thread of a SQLite file database: it copies the WAL into the database file
//! after this process's writes and after another process's, and starts the WAL over under a
//! steady stream of writes. A checkpoint is the only thing that writes the database file in WAL
//! mode, so the file's size shows when one ran.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;

use super::super::tests::sqlite_file;
use crate::db::{Database, Pools};
use crate::error::DbError;
use crate::macros::with_write;

/// Far longer than a checkpoint takes ([`GATHER`](super::GATHER), then a few ms), so that a
/// slow machine does not fail the tests; they return as soon as the checkpoint is seen.
const LONG: Duration = Duration::from_secs(20);

fn main_file(dir: &Path) -> PathBuf {
    dir.join("gate.db")
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Waits until the database file holds at least `bytes`, that is until a checkpoint copied them.
fn until_checkpointed(file: &Path, bytes: u64, what: &str) {
    let start = Instant::now();
    while size(file) < bytes {
        assert!(
            start.elapsed() < LONG,
            "{what}: no checkpoint copied them into the database file in {LONG:?} ({} bytes)",
            size(file)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `sql` through the write gate, as the repositories' writes do.
fn write(db: &Database, sql: &str) {
    let run = || -> Result<(), DbError> {
        with_write!(db, conn => {
            conn.batch_execute(sql)?;
            Ok(())
        })
    };
    run().unwrap();
}

/// `rows` rows of 4 KiB each in one statement: about as many pages of the WAL.
fn blobs(rows: u32) -> String {
    format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows}) \
         INSERT INTO blobs (b) SELECT randomblob(4096) FROM n;"
    )
}

/// A file database with a `blobs` table, its WAL already checkpointed once.
fn database(dir: &Path) -> (Database, u64) {
    let db = sqlite_file(dir, LONG);
    write(
        &db,
        "CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB NOT NULL);",
    );
    let file = main_file(dir);
    // The migrations' and the table's pages reach the file once the thread has run.
    write(&db, &blobs(8));
    until_checkpointed(&file, 8 * 4096, "the first writes");
    let settled = size(&file);
    (db, settled)
}

/// 100 pages: a tenth of SQLite's own checkpoint threshold, which the request connections do
/// not use anyway (`wal_autocheckpoint = 0`); only the thread copies them.
#[test]
fn the_thread_checkpoints_this_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (db, settled) = database(dir.path());
    write(&db, &blobs(100));
    until_checkpointed(
        &main_file(dir.path()),
        settled + 100 * 4096,
        "100 pages written here",
    );
}

/// Another process (here another connection, which does not pass this process's gate) commits
/// without waking the thread; the thread notices through `PRAGMA data_version` within a second.
#[test]
fn the_thread_checkpoints_another_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, settled) = database(dir.path());
    let file = main_file(dir.path());
    let mut other = SqliteConnection::establish(&file.to_string_lossy()).unwrap();
    other
        .batch_execute(&format!("PRAGMA busy_timeout = 20000; {}", blobs(100)))
        .unwrap();
    until_checkpointed(&file, settled + 100 * 4096, "100 pages written elsewhere");
    // Open until now: closing the last other connection would checkpoint by itself.
    drop(other);
}

/// The WAL header's first salt (bytes 16..20), which the writer that starts the WAL over sets
/// to one more than it was (`walRestartHdr` in SQLite's wal.c): it counts the restarts of the
/// file, whichever connection made them. (The checkpoint sequence number beside it, bytes
/// 12..16, does not: each connection writes its own count of the restarts it made, so with a
/// pool of connections it goes back and forth; read as a count, it once said "started over 0
/// times" after several restarts, and these tests failed now and then for it.)
fn restarts(dir: &Path) -> u32 {
    let mut salt = [0; 4];
    let read = std::fs::File::open(dir.join("gate.db-wal"))
        .and_then(|wal| std::os::unix::fs::FileExt::read_exact_at(&wal, &mut salt, 16));
    read.map_or(0, |()| u32::from_be_bytes(salt))
}

/// How many times the WAL must start over under a stream of writes.
const RESTARTS: u32 = 2;

/// Runs `writers` threads that call `write` back to back until the WAL has started over
/// [`RESTARTS`] times, or for [`LONG`]; what happened, to assert with [`started_over`]. A checkpoint beside a stream of
/// writes is always behind by the frames written meanwhile, so without the pass under the gate
/// the WAL never starts over (it grew to 660 MB in a peer benchmark's 10 s). How long the WAL
/// grows first depends on how fast the machine writes and copies, so that is measured
/// (docs/storage.md), not asserted: a loaded machine once let it reach 15 000 frames.
fn until_started_over(dir: &Path, writers: usize, write: impl Fn(u64) + Sync) -> Stream {
    let before = restarts(dir);
    let stop = AtomicBool::new(false);
    let writes = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..writers {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    write(writes.fetch_add(1, Ordering::Relaxed));
                }
            });
        }
        while restarts(dir).wrapping_sub(before) < RESTARTS && start.elapsed() < LONG {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
    });
    Stream {
        // Read again with the writers stopped: not a header read in the middle of a write.
        started_over: restarts(dir).wrapping_sub(before),
        writes: writes.into_inner(),
        took: start.elapsed(),
    }
}

/// What [`until_started_over`] saw.
struct Stream {
    started_over: u32,
    writes: u64,
    took: Duration,
}

/// Asserted after every thread of the test has stopped (a reader left running would keep a
/// failing test from ever ending).
fn started_over(stream: &Stream) {
    let Stream {
        started_over,
        writes,
        took,
    } = stream;
    assert!(
        *started_over >= RESTARTS,
        "the WAL started over {started_over} times in {took:?} of writes back to back \
         ({writes} writes)"
    );
}

/// One writer that never pauses, each write a page or two of the WAL.
#[test]
fn a_steady_stream_of_writes_still_starts_the_wal_over() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = database(dir.path());
    let stream = until_started_over(dir.path(), 1, |i| {
        write(
            &db,
            &format!("INSERT INTO blobs (b) VALUES (zeroblob({}));", 64 + i % 64),
        );
    });
    started_over(&stream);
}

/// As under the peer benchmark's grants: writers on several threads at once, so that their
/// writes share batches (whose transaction stays open from member to member). With no reader in
/// the way every pass beside them copies all the frames there were when it began, and yet the
/// WAL never starts over by itself: a writer that begins finds the frames appended meanwhile.
#[test]
fn contested_grouped_writes_still_start_the_wal_over() {
    contested_writes(0);
}

/// The same beside readers, each reading a row every millisecond as requests do: the pass
/// under the gate waits for the read transactions still on the WAL (at most 50 ms). Readers
/// that read back to back on a loaded machine can hold the WAL for longer than that, a thread
/// descheduled inside its read (seen in CI), so these pause as requests do.
#[test]
fn contested_grouped_writes_beside_readers_still_start_the_wal_over() {
    contested_writes(2);
}

/// 4 threads writing through the group commit, a page of its own each time (a 4 000-byte
/// blob), beside `readers` threads reading one row each time.
fn contested_writes(readers: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = database(dir.path());
    let Pools::Sqlite(pool) = db.pools() else {
        unreachable!("a SQLite database")
    };
    let reading = AtomicBool::new(true);
    let stream = std::thread::scope(|s| {
        for _ in 0..readers {
            s.spawn(|| {
                while reading.load(Ordering::Relaxed) {
                    let read = || -> Result<i64, DbError> {
                        crate::macros::with_conn!(db, conn => {
                            Ok(diesel::sql_query("SELECT count(*) AS n FROM blobs WHERE id = 1 + abs(random()) % 1000")
                                .get_result::<Count>(conn)?
                                .n)
                        })
                    };
                    read().unwrap();
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        }
        let stream = until_started_over(dir.path(), 4, |_| {
            db.write_gate()
                .grouped(pool, |conn| {
                    conn.batch_execute("INSERT INTO blobs (b) VALUES (randomblob(4000));")?;
                    Ok(())
                })
                .unwrap();
        });
        reading.store(false, Ordering::Relaxed);
        stream
    });
    started_over(&stream);
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// The thread shows under the name docs/operations.md gives (`ps -L`, `top -H`), whole: Linux
/// keeps at most 15 bytes of a thread's name.
#[test]
fn the_thread_shows_under_its_documented_name() {
    let dir = tempfile::tempdir().unwrap();
    let _db = sqlite_file(dir.path(), LONG);
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect();
    assert!(
        names.iter().any(|name| name == "wal-checkpoint"),
        "no thread named wal-checkpoint among {names:?}"
    );
}
