//! The grants queued on the write gate for its holder to run (`WriteGate::queue`): each one's
//! work, and the ticket its own thread sleeps on until the commit that holds its writes.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use diesel::{Connection, SqliteConnection};
use medialib_ports::StoreError;

use crate::error::DbError;

/// Where a job's own thread finds what its work returned.
pub(super) type Value<T> = Arc<Mutex<Option<Result<T, DbError>>>>;

/// A grant's work, queued on the gate.
pub(super) struct Job {
    /// Runs the work in a savepoint of the batch's transaction and keeps what it returned for
    /// the job's thread; `false`: the work failed (and was rolled back to its savepoint).
    pub(super) run: Box<dyn FnOnce(&mut SqliteConnection) -> bool + Send>,
    /// Shared with the job's thread.
    pub(super) ticket: Arc<Ticket>,
}

impl Job {
    /// The job of `work`, and where its thread will find what `work` returned.
    pub(super) fn new<T: Send + 'static>(
        work: impl FnOnce(&mut SqliteConnection) -> Result<T, DbError> + Send + 'static,
    ) -> (Self, Value<T>) {
        let value: Value<T> = Arc::default();
        let slot = Arc::clone(&value);
        // The work runs on whichever thread holds the gate, but what it logs belongs to the
        // request that queued it: its span (request id, route) goes with it.
        let span = tracing::Span::current();
        let run = Box::new(move |conn: &mut SqliteConnection| {
            let _request = span.enter();
            // Nested in the batch's transaction, diesel runs `work` in a savepoint.
            let done = conn.transaction(work);
            let ok = done.is_ok();
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(done);
            ok
        });
        let job = Self {
            run,
            ticket: Arc::default(),
        };
        (job, value)
    }
}

/// What became of a job so far.
#[derive(Debug, Clone, Default)]
pub(super) enum Stage {
    /// On the gate's queue.
    #[default]
    Queued,
    /// Still on the queue, and the gate was handed to its thread, which now runs the queue.
    Lead,
    /// Taken off the queue by the gate's holder: running, or run into a batch not yet
    /// committed.
    Taken,
    /// Its batch committed (`Ok`), or it is known that its writes are not stored (`Err`).
    Done(Result<(), StoreError>),
}

/// A job's stage, and the condition its thread sleeps on. `Queued` and `Lead` change only under
/// the gate's lock (taken before this one).
#[derive(Default)]
pub(super) struct Ticket {
    stage: Mutex<Stage>,
    changed: Condvar,
}

impl Ticket {
    /// Nothing panics while holding it; a poisoned lock's stage still holds.
    fn lock(&self) -> MutexGuard<'_, Stage> {
        self.stage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The stage now.
    pub(super) fn stage(&self) -> Stage {
        self.lock().clone()
    }

    /// Hands the gate to the job's thread.
    pub(super) fn lead(&self) {
        let mut stage = self.lock();
        if matches!(*stage, Stage::Queued) {
            *stage = Stage::Lead;
            self.changed.notify_all();
        }
    }

    /// Taken off the queue to run.
    pub(super) fn take(&self) {
        let mut stage = self.lock();
        if !matches!(*stage, Stage::Done(_)) {
            *stage = Stage::Taken;
        }
    }

    /// Its batch ended so (the first outcome stands); wakes its thread.
    pub(super) fn settle(&self, result: Result<(), StoreError>) {
        let mut stage = self.lock();
        if !matches!(*stage, Stage::Done(_)) {
            *stage = Stage::Done(result);
            self.changed.notify_all();
        }
    }

    /// The stage once its thread has something to do (it leads, or the job is done), or after
    /// `wait`.
    pub(super) fn wait(&self, wait: Duration) -> Stage {
        let stage = self.lock();
        let (stage, _) = self
            .changed
            .wait_timeout_while(stage, wait, |s| matches!(s, Stage::Queued | Stage::Taken))
            .unwrap_or_else(PoisonError::into_inner);
        stage.clone()
    }
}
