//! The SQLite write gate, and the group commit of contested grants behind it.
//!
//! SQLite lets one connection write at a time. A connection that finds the lock taken calls its
//! busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25 … ms between attempts: under contention
//! the lock is free most of that time (a token grant holds it for about 0.1 ms) while the
//! waiters sleep, so writes queue far longer than they need to. Every write of this process
//! (`with_tx!`, `with_write!`, `with_grouped_tx!`) first takes this gate, a queue whose next
//! waiter is woken as soon as the gate is let go, so the connections of one process never meet
//! on SQLite's lock. The gate is handed to the first waiter in order of arrival: a writer that
//! lets it go and comes straight back queues behind the others rather than taking it again
//! before the one woken has run, so a steady stream of writes cannot keep a waiter out (the
//! checkpoint thread's pass that starts the WAL over, say, which such a stream otherwise kept
//! out for seconds on a quiet machine); other processes on the same file (the CLI, a second server) still meet it and
//! wait on `busy_timeout` as before. The wait is bounded by the same `connection_timeout`, after
//! which the write fails as unavailable (503), as a write that waited out `busy_timeout` does.
//! PostgreSQL writes do not use it.
//!
//! **Group commit.** A contested grant (`with_grouped_tx!`) that finds other writers queued
//! behind it does not commit: it leaves its transaction open on the gate and waits. The next
//! grant runs in the same transaction, in its own savepoint, and so on, until one finds nobody
//! queued (or the batch full) and commits them all at once; then every member answers. The pages
//! the grants of a batch share (the tables' last leaves, the expiry indexes, the interior pages)
//! go to the WAL once per batch instead of once per grant, and the lock, the WAL index and the
//! pooled connection change hands once per batch (docs/performance.md).
//!
//! **Who runs a member's work.** A grant whose work is owned (`'static`, [`WriteGate::queue`]:
//! the code and refresh grants) does not wait for the gate: it queues its work on the gate, and
//! whoever holds the gate runs the queued work in its own thread, one member after another in
//! the open batch, then commits. The grant's own thread sleeps until that commit and is woken
//! once, for its answer; only when it finds the gate free does it take the gate and run the
//! queue itself, and after a commit the gate goes to the thread of the next queued grant (one
//! wake a batch instead of one a member). A grant whose work borrows from its request
//! ([`WriteGate::grouped`]: a revocation) runs on its own thread, taking the gate in turn: the
//! open transaction moves between threads, not the work. No member answers
//! before the commit that holds its writes: a failed commit, a member's error that ends the
//! batch, or a member's panic reaches every member of the batch as an error, so nothing is
//! answered that is not stored. Reads on other connections see the whole batch or none of it.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use diesel::SqliteConnection;
use diesel::connection::{AnsiTransactionManager, Connection, TransactionManager};
use diesel::r2d2::{ConnectionManager, PooledConnection};
use medialib_ports::{StoreError, no_wait};

use super::checkpoint::Writes;
use super::{SqlitePool, checkout_sqlite, would_wait};
use crate::error::{DbError, PoolError};

mod queue;
use queue::{Job, Stage, Ticket};

/// The most grants one transaction holds. Each member waits for the batch's commit, so this
/// bounds how long the first member's answer waits behind later ones (a grant runs in about
/// 0.1 ms); the pages saved per grant barely change beyond it (`bench/wal_frames.py`: 10.7 WAL
/// frames a grant at 8 a batch, 9.3 at 32).
const BATCH_LIMIT: usize = 32;

/// How often a member waiting for its batch's commit checks that the batch has not been left
/// open with nobody coming. It cannot happen by design (a batch left open is handed with the
/// gate to a waiting writer, which takes it even when it is about to give up waiting:
/// [`WriteGate::acquire`]); the check is the net under that reasoning, since a member left
/// waiting would hold its request forever. Normally the commit comes first and wakes the member.
/// A member that finds the gate still handed, with its batch on it, to a writer that has not
/// taken it, takes the gate in that writer's stead, commits the batch, and hands the gate back
/// to it: that writer has not run for the whole check, which a busy machine does (seen once in
/// a full `bench/run.sh`). A batch on a free gate with nobody waiting is orphaned, and a warning
/// says so.
const ORPHAN_CHECK: Duration = Duration::from_millis(20);

type SqlitePooled = PooledConnection<ConnectionManager<SqliteConnection>>;

/// One SQLite writer at a time in this process, waiting in a queue rather than on SQLite's lock,
/// with the contested grants of a queue committed together (module docs).
#[derive(Clone)]
pub(crate) struct WriteGate {
    inner: Arc<Inner>,
    wait: Duration,
}

struct Inner {
    state: Mutex<State>,
    /// At most this many grants a transaction (1: every grant commits alone).
    limit: usize,
    /// Batches committed (or tried), for the tests.
    commits: AtomicU64,
    /// Write turns ended, for the checkpoint thread.
    writes: Writes,
}

/// The gate's state, changed only under its (briefly held) mutex.
///
/// The gate is a flag and a line of waiters, each sleeping on a condition variable of its own,
/// rather than a mutex held while writing: a waiter then sleeps at once, where `parking_lot`'s
/// mutex first spins through `sched_yield` (about 1.5 calls a grant under the peer benchmark's
/// load, and a context switch each on a busy machine: docs/performance.md), and the gate goes
/// to the first in line, never to a writer that comes back first (module docs).
#[derive(Default)]
struct State {
    /// A writer holds the gate (a [`Turn`] is alive), or it was handed to one (`handed`).
    busy: bool,
    /// Writers waiting for the gate, in order of arrival.
    waiters: VecDeque<Arc<Waiter>>,
    /// The writer the gate was handed to, which has not taken it yet: no [`Turn`] is alive, and
    /// `busy` stays set, so that nobody else takes it meanwhile.
    handed: Option<Arc<Waiter>>,
    /// The batch a grant left open for the next one, if any.
    open: Option<Batch>,
    /// Grants whose work waits to be run by the gate's holder, in order of arrival. Not empty
    /// only while the gate is held, or a writer queued for it will take it (and, letting it go,
    /// hands it to the first of them: [`Inner::let_go`]).
    jobs: VecDeque<Job>,
}

impl State {
    /// Writers waiting for the gate, the one it was handed to included.
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.waiters.len() + usize::from(self.handed.is_some())
    }

    /// Hands the gate (`busy` stays set) to the first writer waiting, and wakes it; `false`:
    /// nobody waits.
    fn hand(&mut self) -> bool {
        let Some(next) = self.waiters.pop_front() else {
            return false;
        };
        debug_assert!(self.busy && self.handed.is_none());
        next.granted.store(true, Ordering::Relaxed);
        next.wake.notify_one();
        self.handed = Some(next);
        true
    }
}

/// A writer waiting for the gate ([`WriteGate::acquire`]). Both fields change only under the
/// gate's lock, with which `wake` is used.
#[derive(Default)]
struct Waiter {
    /// The gate was handed to it.
    granted: AtomicBool,
    wake: Condvar,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding it (no user code runs under it); a poisoned lock's state
        // is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The holder lets the gate go (under its lock, with no batch open): to the thread of the
    /// first queued job, which then runs the queue ([`WriteGate::lead`]), or to the writers
    /// waiting for it. `led`: the holder ran queued jobs; the writers waiting then go first,
    /// and otherwise the jobs, so that neither waits out the other.
    fn let_go(&self, state: &mut State, led: bool) {
        if let Some(first) = state.jobs.front()
            && (!led || state.waiters.is_empty())
        {
            // The gate stays held: it passes to that thread.
            first.ticket.lead();
            return;
        }
        if !state.hand() {
            state.busy = false;
        }
    }
}

impl fmt::Debug for WriteGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteGate")
            .field("wait", &self.wait)
            .field("limit", &self.inner.limit)
            .finish_non_exhaustive()
    }
}

/// This process's turn to write, held until dropped: no batch is open while it is held.
pub(crate) struct Turn<'g> {
    inner: &'g Inner,
    /// Already let go, by [`Turn::hand_over`].
    released: bool,
    /// Ran queued jobs ([`Inner::let_go`]).
    led: bool,
}

impl Turn<'_> {
    /// Hands the gate, under its lock (`state`), to the next writer, with `batch` left open on
    /// it for the next grant. The caller saw writers waiting under the same lock.
    fn hand_over(mut self, state: &mut State, batch: Batch) {
        self.released = true;
        state.open = Some(batch);
        let handed = state.hand();
        debug_assert!(handed, "a batch handed over with nobody waiting");
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if !self.released {
            self.inner.let_go(&mut self.inner.state(), self.led);
            // A turn let go may have committed; one handed over (above) has not, and the
            // turn that later commits its batch wakes the checkpoint thread instead.
            self.inner.writes.wrote();
        }
    }
}

impl WriteGate {
    /// A gate whose writers wait at most `wait`; `grouped`: contested grants may share a
    /// transaction (a file database; `sqlite::memory:` has one connection, which a batch left
    /// open would keep from the readers).
    pub(super) fn new(wait: Duration, grouped: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                limit: if grouped { BATCH_LIMIT } else { 1 },
                commits: AtomicU64::new(0),
                writes: Writes::default(),
            }),
            wait,
        }
    }

    /// Waits (at most `connection_timeout`) until no other write of this process runs, and
    /// commits the batch a grant left open, if any; inside
    /// [`without_waiting`](no_wait::without_waiting) it refuses at once: no write runs there.
    pub(crate) fn enter(&self) -> Result<Turn<'_>, PoolError> {
        let (turn, open) = self.acquire()?;
        if let Some(batch) = open {
            // Its members learn the outcome; this writer's own work is not part of it.
            let _ = self.commit(batch);
        }
        Ok(turn)
    }

    /// Runs `work` as one member of a batch (module docs) on this thread: in a savepoint of the
    /// open batch's transaction, or of a new one (`BEGIN IMMEDIATE` on a connection of `pool`).
    /// Returns only once the transaction that holds the member's writes has committed; a member
    /// whose work fails is rolled back to its savepoint and ends the batch. For work that
    /// borrows from its caller; owned work goes through [`queue`](Self::queue).
    pub(crate) fn grouped<T>(
        &self,
        pool: &SqlitePool,
        work: impl FnOnce(&mut SqliteConnection) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let (turn, open) = self.acquire()?;
        let mut batch = match open {
            Some(batch) => batch,
            None => Batch::begin(checkout_sqlite(pool)?)?,
        };
        // Nested in the batch's transaction, diesel runs `work` in a savepoint.
        let conn: &mut SqliteConnection = &mut batch.conn;
        let started = Instant::now();
        let done = conn.transaction(work);
        batch.working += started.elapsed();
        let value = match done {
            Ok(value) => value,
            Err(e) => {
                // The earlier members' writes are intact (a statement that failed undid only
                // itself, the savepoint the rest); committing them now, before anything else
                // runs on this connection, also makes sure a transaction SQLite itself rolled
                // back (it does on some I/O errors) reaches them as a failed commit.
                let _ = self.commit(batch);
                return Err(e);
            }
        };
        batch.members += 1;
        let outcome = Arc::clone(&batch.outcome);
        self.lead(pool, turn, Some(batch));
        self.await_commit(&outcome).map_err(DbError::Store)?;
        Ok(value)
    }

    /// Runs `work` as one member of a batch (module docs) on the thread that holds the gate:
    /// queued on the gate, it is run by the holder after its own work, or by this thread if it
    /// finds the gate free or is handed it. Returns as [`grouped`](Self::grouped) does; work
    /// still queued after `connection_timeout` is taken off the queue unrun, and fails as a
    /// write that waited too long for the gate does.
    pub(crate) fn queue<T: Send + 'static>(
        &self,
        pool: &SqlitePool,
        work: impl FnOnce(&mut SqliteConnection) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        if !no_wait::may_wait() {
            return Err(would_wait("a write").into());
        }
        let deadline = Instant::now() + self.wait;
        let (job, value) = Job::new(work);
        let ticket = Arc::clone(&job.ticket);
        let mut state = self.inner.state();
        state.jobs.push_back(job);
        if state.busy {
            drop(state);
        } else {
            state.busy = true;
            let open = state.open.take();
            drop(state);
            self.lead(pool, self.turn(), open);
        }
        let settled = self.await_job(pool, &ticket, deadline)?;
        let value = value.lock().unwrap_or_else(PoisonError::into_inner).take();
        match value {
            // Its own failure, whatever became of the batch.
            Some(Err(e)) => Err(e),
            Some(Ok(value)) => settled.map(|()| value).map_err(DbError::Store),
            // Never run: no connection for a batch, or its batch gone with a panic.
            None => Err(DbError::Store(settled.err().unwrap_or_else(|| {
                StoreError::Unexpected("a queued write was settled without running".to_owned())
            }))),
        }
    }

    /// Holding the gate (`turn`), with `batch` open or none, runs the queued jobs in this
    /// thread, into the batch (or new ones), at most `limit` members a batch; then leaves the
    /// batch open for a writer queued for the gate if it has room, or commits it and lets the
    /// gate go (to the next queued job's thread, if any: [`Inner::let_go`]).
    fn lead(&self, pool: &SqlitePool, mut turn: Turn<'_>, mut batch: Option<Batch>) {
        loop {
            let mut state = self.inner.state();
            let room = batch.as_ref().is_none_or(|b| b.members < self.inner.limit);
            let next = if room { state.jobs.pop_front() } else { None };
            let Some(job) = next else {
                match batch {
                    Some(b) if b.members < self.inner.limit && !state.waiters.is_empty() => {
                        turn.hand_over(&mut state, b);
                    }
                    Some(b) => {
                        drop(state);
                        let _ = self.commit(b);
                    }
                    None => {}
                }
                return;
            };
            job.ticket.take();
            drop(state);
            turn.led = true;
            let mut b = match batch.take() {
                Some(b) => b,
                None => match checkout_sqlite(pool)
                    .map_err(DbError::from)
                    .and_then(Batch::begin)
                {
                    Ok(b) => b,
                    Err(e) => {
                        job.ticket.settle(Err(StoreError::from(e)));
                        continue;
                    }
                },
            };
            let started = Instant::now();
            let ran = catch_unwind(AssertUnwindSafe(|| (job.run)(&mut b.conn)));
            b.working += started.elapsed();
            b.tickets.push(job.ticket);
            match ran {
                Ok(true) => {
                    b.members += 1;
                    batch = Some(b);
                }
                // Rolled back to its savepoint; it ends the batch, as in `grouped`.
                Ok(false) => {
                    let _ = self.commit(b);
                }
                Err(_) => {
                    tracing::error!(
                        "a grant's work panicked in the write gate; its batch is rolled back"
                    );
                    // Dropped uncommitted: every member hears that nothing was stored.
                    drop(b);
                }
            }
        }
    }

    /// Takes the gate (and the batch left open on it), waiting at most `connection_timeout` in
    /// line behind the writers that came first. A waiter gives up only while the gate is not
    /// handed to it (it checks that first), so a gate, and a batch, handed to a waiter are
    /// always taken.
    fn acquire(&self) -> Result<(Turn<'_>, Option<Batch>), PoolError> {
        if !no_wait::may_wait() {
            return Err(would_wait("a write"));
        }
        let deadline = Instant::now() + self.wait;
        let mut state = self.inner.state();
        if state.busy {
            let me = Arc::new(Waiter::default());
            state.waiters.push_back(Arc::clone(&me));
            while !me.granted.load(Ordering::Relaxed) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    state.waiters.retain(|w| !Arc::ptr_eq(w, &me));
                    return Err(PoolError::new(format!(
                        "another write held the SQLite write lock for over {} ms",
                        self.wait.as_millis()
                    )));
                }
                state = me
                    .wake
                    .wait_timeout(state, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            debug_assert!(state.handed.as_ref().is_some_and(|h| Arc::ptr_eq(h, &me)));
            state.handed = None;
        }
        state.busy = true;
        let open = state.open.take();
        Ok((self.turn(), open))
    }

    /// The gate, just taken (or handed) by the caller.
    fn turn(&self) -> Turn<'_> {
        Turn {
            inner: &self.inner,
            released: false,
            led: false,
        }
    }

    /// Commits `batch` (the caller holds the gate) and tells its members.
    fn commit(&self, mut batch: Batch) -> Result<(), StoreError> {
        self.inner.commits.fetch_add(1, Ordering::Relaxed);
        let committing = Instant::now();
        let result = AnsiTransactionManager::commit_transaction(&mut *batch.conn)
            .map_err(|e| StoreError::from(DbError::Query(e)));
        if batch.members > 1 {
            // From `BEGIN` to the commit, how much of it the members' work took, and the commit:
            // the rest of the span is the gate changing hands between the members' threads (for
            // queued work, run on one thread, only the holder's own bookkeeping).
            tracing::trace!(
                members = batch.members,
                ok = result.is_ok(),
                span_us = committing.duration_since(batch.began).as_micros() as u64,
                work_us = batch.working.as_micros() as u64,
                commit_us = committing.elapsed().as_micros() as u64,
                "group commit"
            );
        }
        batch.settle(result.clone());
        result
    }

    /// Waits for the commit of the batch whose outcome is `outcome`, which the next writer
    /// makes (or joins, and a later one makes). Every `ORPHAN_CHECK` without it, the member
    /// commits the batch itself if the gate is free and the batch still open on it.
    fn await_commit(&self, outcome: &Arc<Outcome>) -> Result<(), StoreError> {
        loop {
            if let Some(result) = outcome.wait_for(ORPHAN_CHECK) {
                return result;
            }
            self.commit_if_left(|b| Arc::ptr_eq(&b.outcome, outcome));
        }
    }

    /// Waits until the job of `ticket` is done (how its batch ended), running the queue when
    /// the gate is handed to this thread or found free with the job still queued (the net
    /// under [`Inner::let_go`], as `ORPHAN_CHECK` is under a batch left open). A job still
    /// queued at `deadline` is taken off the queue: the write fails as waiting too long.
    fn await_job(
        &self,
        pool: &SqlitePool,
        ticket: &Arc<Ticket>,
        deadline: Instant,
    ) -> Result<Result<(), StoreError>, PoolError> {
        loop {
            match ticket.wait(ORPHAN_CHECK) {
                Stage::Done(result) => return Ok(result),
                Stage::Taken => {
                    self.commit_if_left(|b| b.tickets.iter().any(|t| Arc::ptr_eq(t, ticket)));
                }
                Stage::Queued | Stage::Lead => {
                    let mut state = self.inner.state();
                    // Read again under the gate's lock, which `Queued` and `Lead` change under.
                    match ticket.stage() {
                        Stage::Lead => {}
                        Stage::Queued if !state.busy => state.busy = true,
                        Stage::Queued if Instant::now() >= deadline => {
                            state.jobs.retain(|job| !Arc::ptr_eq(&job.ticket, ticket));
                            return Err(PoolError::new(format!(
                                "other writes held the SQLite write lock for over {} ms",
                                self.wait.as_millis()
                            )));
                        }
                        _ => continue,
                    }
                    let open = state.open.take();
                    drop(state);
                    self.lead(pool, self.turn(), open);
                }
            }
        }
    }

    /// The net under a batch left open (`ORPHAN_CHECK`): if the batch open on the gate is
    /// `ours`, and the gate is free or handed to a writer that has not taken it, commits the
    /// batch (and lets the gate go, to that writer first).
    fn commit_if_left(&self, ours: impl Fn(&Batch) -> bool) {
        let mut state = self.inner.state();
        if !state.open.as_ref().is_some_and(ours) {
            return;
        }
        // Handed to a writer that has not run for the whole check (a busy machine): the member
        // commits without it, and the writer, first in line again, takes the gate after.
        if let Some(writer) = state.handed.take() {
            writer.granted.store(false, Ordering::Relaxed);
            state.waiters.push_front(writer);
        } else if state.busy {
            return;
        }
        state.busy = true;
        let batch = state.open.take();
        // Nobody waiting: the batch was left for nobody.
        let orphaned = state.waiters.is_empty();
        drop(state);
        let turn = self.turn();
        if let Some(batch) = batch {
            if orphaned {
                tracing::warn!("a write batch was left open with nobody to commit it");
            } else {
                tracing::debug!(
                    "the writer woken for a write batch did not run within {} ms; \
                     its member committed it",
                    ORPHAN_CHECK.as_millis()
                );
            }
            let _ = self.commit(batch);
        }
        drop(turn);
    }

    /// The write turns of this gate, for the checkpoint thread.
    pub(super) fn writes(&self) -> &Writes {
        &self.inner.writes
    }

    /// How many batches were committed (or tried).
    #[cfg(test)]
    pub(super) fn commits(&self) -> u64 {
        self.inner.commits.load(Ordering::Relaxed)
    }

    /// How many jobs are queued on the gate now.
    #[cfg(test)]
    pub(super) fn jobs(&self) -> usize {
        self.inner.state().jobs.len()
    }

    /// How many writers wait for the gate now.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.inner.state().queued()
    }

    /// Puts a writer in line that never takes the gate (or, `false`, takes it out of line
    /// again, letting the gate go if it was handed to it), for the tests of the net under a
    /// batch left open with nobody coming. The tests that use it have no other writer waiting.
    #[cfg(test)]
    pub(super) fn pretend_queued(&self, queued: bool) {
        let mut state = self.inner.state();
        if queued {
            state.waiters.push_back(Arc::default());
        } else if state.handed.take().is_some() {
            self.inner.let_go(&mut state, false);
        } else {
            state.waiters.pop_back();
        }
    }
}

/// A transaction open on the gate, holding the writes of `members` grants not yet answered.
struct Batch {
    conn: SqlitePooled,
    members: usize,
    /// Where the members that run on their own threads ([`WriteGate::grouped`]) hear how it
    /// ended.
    outcome: Arc<Outcome>,
    /// The queued jobs run into it (each counted in `members` once it succeeded).
    tickets: Vec<Arc<Ticket>>,
    /// When its transaction began (for the trace of its commit).
    began: Instant,
    /// The time its members' work took, together.
    working: Duration,
}

impl Batch {
    /// Tells every member how the batch ended (the first outcome told stands).
    fn settle(&self, result: Result<(), StoreError>) {
        for ticket in &self.tickets {
            ticket.settle(result.clone());
        }
        self.outcome.settle(result);
    }

    /// `BEGIN IMMEDIATE` on `conn`.
    fn begin(mut conn: SqlitePooled) -> Result<Self, DbError> {
        let began = Instant::now();
        AnsiTransactionManager::begin_transaction_sql(&mut *conn, "BEGIN IMMEDIATE")?;
        Ok(Self {
            conn,
            members: 0,
            outcome: Arc::default(),
            tickets: Vec::new(),
            began,
            working: Duration::ZERO,
        })
    }
}

impl Drop for Batch {
    /// A batch dropped without its commit (a member panicked while running its work): the
    /// connection, still in its transaction, is discarded by the pool (which rolls it back), and
    /// the members waiting learn that their writes are gone.
    fn drop(&mut self) {
        self.settle(Err(StoreError::Unexpected(
            "a grant of the same write batch failed; nothing of the batch was stored".to_owned(),
        )));
    }
}

/// How a batch ended, for its waiting members.
#[derive(Default)]
struct Outcome {
    result: Mutex<Option<Result<(), StoreError>>>,
    ready: Condvar,
}

impl Outcome {
    /// The slot; nothing panics while holding it, so a poisoned lock's value still holds.
    fn slot(&self) -> MutexGuard<'_, Option<Result<(), StoreError>>> {
        self.result.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records how the batch ended, once; wakes the members.
    fn settle(&self, result: Result<(), StoreError>) {
        let mut slot = self.slot();
        if slot.is_none() {
            *slot = Some(result);
            self.ready.notify_all();
        }
    }

    /// The outcome, waiting for it at most `wait`.
    fn wait_for(&self, wait: Duration) -> Option<Result<(), StoreError>> {
        let mut slot = self.slot();
        if slot.is_none() {
            slot = self
                .ready
                .wait_timeout(slot, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        slot.clone()
    }
}

#[cfg(test)]
mod queued_tests;
#[cfg(test)]
mod tests;
