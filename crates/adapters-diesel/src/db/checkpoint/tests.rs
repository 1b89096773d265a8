//! The checkpoint thread of a SQLite file database: it copies the WAL into the database file
//! after this process's writes and after another process's, and starts the WAL over under a
//! steady stream of writes. A checkpoint is the only thing that writes the database file in WAL
//! mode, so the file's size shows when one ran.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The WAL's checkpoint sequence number (bytes 12..16 of its header), which SQLite increments
/// each time it writes the WAL from its start again.
fn restarts(dir: &Path) -> u32 {
    let wal = std::fs::read(dir.join("gate.db-wal")).unwrap_or_default();
    wal.get(12..16)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// A writer that never pauses: a checkpoint running beside it is always behind by the frames
/// written meanwhile, so only the pass under the gate lets the WAL start over. 20 000 writes
/// of a page or more are at least 20 000 frames, five times [`RESTART_FRAMES`](super::RESTART_FRAMES).
#[test]
fn a_steady_stream_of_writes_still_starts_the_wal_over() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = database(dir.path());
    let before = restarts(dir.path());
    for i in 0..20_000 {
        write(
            &db,
            &format!("INSERT INTO blobs (b) VALUES (zeroblob({}));", 64 + i % 64),
        );
    }
    started_over(dir.path(), before);
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

/// 4 threads writing 5 000 times each, through the group commit, a page of its own each time
/// (a 4 000-byte blob), beside `readers` threads reading one row each time.
fn contested_writes(readers: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = database(dir.path());
    let before = restarts(dir.path());
    let reading = AtomicBool::new(true);
    std::thread::scope(|s| {
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
        let writers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let Pools::Sqlite(pool) = db.pools() else {
                        unreachable!("a SQLite database")
                    };
                    for _ in 0..5_000 {
                        db.write_gate()
                            .grouped(pool, |conn| {
                                conn.batch_execute(
                                    "INSERT INTO blobs (b) VALUES (randomblob(4000));",
                                )?;
                                Ok(())
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        reading.store(false, Ordering::Relaxed);
    });
    started_over(dir.path(), before);
}

/// The WAL started over at least twice since its sequence number was `before`, and its file
/// stayed under 64 MiB (`journal_size_limit`, to which a WAL that grew past it is cut back).
fn started_over(dir: &Path, before: u32) {
    let after = restarts(dir);
    assert!(
        after >= before + 2,
        "the WAL started over {} times during 20 000 writes",
        after - before
    );
    let wal = size(&dir.join("gate.db-wal"));
    assert!(wal < 64 << 20, "the WAL file grew to {wal} bytes");
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
