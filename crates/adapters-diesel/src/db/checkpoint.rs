//! Checkpoints of a SQLite file database, on a thread of their own.
//!
//! In WAL mode a commit appends its pages to the `-wal` file and a checkpoint copies them back
//! into the database file; with `synchronous = NORMAL` the checkpoint's two `fsync`s (the WAL,
//! then the database) are the only ones. SQLite's default runs a checkpoint in the connection
//! whose commit took the WAL past 1 000 pages, before that commit returns; in this process that
//! connection still holds the [write gate](super::WriteGate), so every writer queued behind it
//! waited for both `fsync`s. The pooled connections therefore run with
//! `wal_autocheckpoint = 0`, and this thread checkpoints instead:
//!
//! - **When.** A write turn that ends wakes it ([`Writes::wrote`]); it lets the writes of the
//!   next [`GATHER`] accumulate, then runs `PRAGMA wal_checkpoint(PASSIVE)` on a connection of
//!   its own. A passive checkpoint takes no lock a reader or a writer waits for: writers go on
//!   appending while it copies. With no write of this process for [`IDLE_POLL`], it checks
//!   `PRAGMA data_version`, which moves when another process (the CLI, a second server)
//!   committed, and checkpoints those writes too.
//! - **Starting the WAL over.** SQLite writes the WAL from its start again only when a writer
//!   begins while every frame is already in the database and no reader still reads the WAL. A
//!   checkpoint running beside the writers copies the frames there were when it began, never
//!   those appended meanwhile, and under a steady stream of writes the WAL would grow for as
//!   long as the load lasts (a peer benchmark's 10 s took it to 660 MB). So once the WAL holds
//!   [`RESTART_FRAMES`] frames, the thread runs passes beside the writers while each leaves
//!   more than [`SHORT_TAIL`] frames behind (each is shorter than the one before, at most
//!   [`CATCH_UP_PASSES`]), then takes the write gate like any writer and runs
//!   `PRAGMA wal_checkpoint(RESTART)`: it copies the few frames left and waits, at most
//!   [`READER_WAIT`], for the readers still in the WAL, so that the next writer starts it over.
//!   That pass is the only checkpoint that holds the gate, once per `RESTART_FRAMES` frames
//!   instead of once per 1 000.
//!
//! A failing checkpoint (a full disk, say) is logged and tried again at the next write; nothing
//! is lost, since the frames stay in the WAL, which every reader reads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use diesel::connection::{Connection, SimpleConnection};
use diesel::r2d2::CustomizeConnection;
use diesel::sql_types::{BigInt, Integer};
use diesel::{QueryResult, QueryableByName, RunQueryDsl, SqliteConnection};

use super::{SqlitePragmas, WriteGate};

/// How long the thread lets writes accumulate after the first one before it checkpoints: the
/// pages a burst of writes rewrites again and again are copied once.
pub(super) const GATHER: Duration = Duration::from_millis(100);

/// How often, with no write of this process, the thread checks for another process's commits.
const IDLE_POLL: Duration = Duration::from_secs(1);

/// From this many frames in the WAL (16 MiB of 4 KiB pages), it is checkpointed to its end
/// under the write gate, so that it starts over.
pub(super) const RESTART_FRAMES: i32 = 4096;

/// Passes beside the writers, at most, before the one under the gate.
const CATCH_UP_PASSES: usize = 3;

/// Frames appended during a pass below which the next pass is the one under the gate: a few
/// milliseconds of copying, most of the gate's hold being the two `fsync`s.
const SHORT_TAIL: i32 = 256;

/// The longest the pass under the gate waits for a reader of the WAL to finish: readers take
/// microseconds; a listing streamed to a slow client can read for much longer, and the writers
/// queued on the gate must not wait for it. The WAL then starts over at a later round.
const READER_WAIT: Duration = Duration::from_millis(50);

/// The write turns of a process, as a wake-up for its checkpoint thread, and the thread's stop.
#[derive(Default)]
pub(crate) struct Writes {
    /// A write turn ended since the thread last took this flag.
    pending: AtomicBool,
    /// The thread is to stop (its [`Checkpointer`] was dropped).
    stopped: Mutex<bool>,
    /// Signalled on the first write after the flag was taken, and on stop.
    wake: Condvar,
}

/// Why [`Writes::wait`] returned.
#[derive(Debug, PartialEq, Eq)]
enum Wake {
    /// A write turn ended.
    Wrote,
    /// Nothing happened for the whole wait.
    Idle,
    /// The thread is to stop.
    Stop,
}

impl Writes {
    fn stopped(&self) -> MutexGuard<'_, bool> {
        // Nothing panics while holding it; a poisoned flag still holds its value.
        self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Called as each write turn ends: one atomic swap, and a wake-up only for the first write
    /// after a checkpoint.
    pub(super) fn wrote(&self) {
        if !self.pending.swap(true, Ordering::AcqRel) {
            let _stopped = self.stopped();
            self.wake.notify_one();
        }
    }

    /// Takes the pending flag: the writes before this are the next checkpoint's.
    fn take(&self) -> bool {
        self.pending.swap(false, Ordering::AcqRel)
    }

    fn stop(&self) {
        *self.stopped() = true;
        self.wake.notify_all();
    }

    /// Waits at most `wait` for a write (`until_stop`: only for the stop).
    fn wait(&self, wait: Duration, until_stop: bool) -> Wake {
        let deadline = Instant::now() + wait;
        let mut stopped = self.stopped();
        loop {
            if *stopped {
                return Wake::Stop;
            }
            if !until_stop && self.pending.load(Ordering::Acquire) {
                return Wake::Wrote;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Wake::Idle;
            }
            stopped = self
                .wake
                .wait_timeout(stopped, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// The checkpoint thread of one [`Database`](super::Database) (shared by its clones); dropping
/// the last clone stops it.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    gate: WriteGate,
}

impl Checkpointer {
    /// Starts the thread for the database file at `path`, opening its connections with
    /// `pragmas`.
    pub(super) fn spawn(
        path: String,
        pragmas: SqlitePragmas,
        gate: WriteGate,
    ) -> std::io::Result<Self> {
        let thread_gate = gate.clone();
        // Linux shows at most 15 bytes of a thread's name (`ps -L`, `top -H`).
        std::thread::Builder::new()
            .name("wal-checkpoint".to_owned())
            .spawn(move || run(&path, pragmas, &thread_gate))?;
        Ok(Self { gate })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.gate.writes().stop();
    }
}

/// The thread's loop (module docs).
fn run(path: &str, pragmas: SqlitePragmas, gate: &WriteGate) {
    let writes = gate.writes();
    let mut conn: Option<SqliteConnection> = None;
    let mut version: Option<i64> = None;
    let mut failing = false;
    loop {
        match writes.wait(IDLE_POLL, false) {
            Wake::Stop => return,
            Wake::Wrote => {
                if writes.wait(GATHER, true) == Wake::Stop {
                    return;
                }
            }
            Wake::Idle => {}
        }
        let wrote = writes.take();
        if conn.is_none() {
            match open(path, pragmas) {
                Ok(opened) => conn = Some(opened),
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "cannot open a connection to checkpoint the SQLite WAL");
                    }
                    failing = true;
                    continue;
                }
            }
        }
        let Some(conn) = conn.as_mut() else { continue };
        if !wrote {
            // Nothing written here: checkpoint only when another process committed.
            let now = data_version(conn).ok();
            if now.is_some() && now == version {
                continue;
            }
        }
        match checkpoint(conn, gate) {
            Ok(()) => failing = false,
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %e, "SQLite WAL checkpoint failed; the WAL keeps the pages");
                }
                failing = true;
            }
        }
        version = data_version(conn).ok();
    }
}

/// A connection of the checkpoint thread's own, with the pool's settings but a busy timeout of
/// [`READER_WAIT`].
fn open(path: &str, pragmas: SqlitePragmas) -> Result<SqliteConnection, String> {
    let mut conn = SqliteConnection::establish(path).map_err(|e| e.to_string())?;
    pragmas.on_acquire(&mut conn).map_err(|e| e.to_string())?;
    conn.batch_execute(&format!(
        "PRAGMA busy_timeout = {};",
        READER_WAIT.as_millis()
    ))
    .map_err(|e| e.to_string())?;
    Ok(conn)
}

/// The result row of `PRAGMA wal_checkpoint`.
#[derive(QueryableByName, Debug, Clone, Copy, PartialEq, Eq)]
struct Progress {
    /// 1 when another connection's checkpoint (or a writer, for the blocking modes) was in the
    /// way.
    #[diesel(sql_type = Integer)]
    busy: i32,
    /// Frames in the WAL.
    #[diesel(sql_type = Integer)]
    log: i32,
    /// Frames of them already in the database file.
    #[diesel(sql_type = Integer)]
    checkpointed: i32,
}

/// `PRAGMA wal_checkpoint(PASSIVE)`: copies what it can without waiting for anyone.
fn passive(conn: &mut SqliteConnection) -> QueryResult<Progress> {
    diesel::sql_query("PRAGMA wal_checkpoint(PASSIVE)").get_result(conn)
}

/// `PRAGMA wal_checkpoint(RESTART)`: copies everything, then waits (on the connection's busy
/// timeout) until no reader still reads the WAL, so that the next writer starts it over.
fn restart(conn: &mut SqliteConnection) -> QueryResult<Progress> {
    diesel::sql_query("PRAGMA wal_checkpoint(RESTART)").get_result(conn)
}

/// One checkpoint beside the writers; when the WAL has grown long, passes beside them while
/// each still leaves many frames behind, then the rest under the write gate (module docs).
fn checkpoint(conn: &mut SqliteConnection, gate: &WriteGate) -> QueryResult<()> {
    let mut pass = passive(conn)?;
    tracing::trace!(frames = pass.log, "WAL checkpointed beside the writers");
    if pass.log < RESTART_FRAMES {
        return Ok(());
    }
    // A pass copies the frames there were when it began (`log`); the writers append more
    // meanwhile, fewer the shorter the pass. Each pass is shorter than the one before, and the
    // one under the gate copies only what the last one left.
    for _ in 0..CATCH_UP_PASSES {
        let next = passive(conn)?;
        tracing::trace!(frames = next.log, "WAL checkpointed beside the writers");
        let appended = next.log - pass.log;
        pass = next;
        if appended <= SHORT_TAIL {
            break;
        }
    }
    if pass.log < RESTART_FRAMES {
        // A writer started the WAL over meanwhile (or the pass could not run, `log` -1: another
        // connection's checkpoint was in the way; the next round tries again).
        return Ok(());
    }
    // A gate busy for the whole connection timeout: the next round tries again.
    let asked = Instant::now();
    let Ok(turn) = gate.enter() else {
        return Ok(());
    };
    let taken = Instant::now();
    let last = restart(conn);
    drop(turn);
    let last = last?;
    tracing::debug!(
        frames = last.log,
        behind = pass.log - pass.checkpointed,
        readers_in_the_way = last.busy,
        waited_us = taken.duration_since(asked).as_micros(),
        held_us = taken.elapsed().as_micros(),
        "WAL checkpointed under the write gate so that it starts over"
    );
    Ok(())
}

#[derive(QueryableByName)]
struct DataVersion {
    #[diesel(sql_type = BigInt)]
    data_version: i64,
}

/// `PRAGMA data_version`: changes when a connection other than `conn` commits.
fn data_version(conn: &mut SqliteConnection) -> QueryResult<i64> {
    diesel::sql_query("PRAGMA data_version")
        .get_result::<DataVersion>(conn)
        .map(|v| v.data_version)
}

#[cfg(test)]
mod tests;
