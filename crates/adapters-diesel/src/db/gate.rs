//! The write gate: one SQLite writer at a time in this process, on a connection of its own.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, PooledConnection, R2D2Connection};
use medialib_ports::no_wait;

use super::{SqlitePool, SqlitePragmas, checkout_sqlite, would_wait};
use crate::error::PoolError;

/// One SQLite writer at a time in this process, waiting in a queue rather than on SQLite's lock,
/// and (for a database file) writing through one connection of its own.
///
/// SQLite lets one connection write at a time. A connection that finds the lock taken calls its
/// busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25 … ms between attempts: under contention
/// the lock is free most of that time (a token grant holds it for about 0.1 ms) while the
/// waiters sleep, so writes queue far longer than they need to. Every write of this process
/// (`with_tx!`, `with_write!`) first takes this gate, a mutex whose next waiter is woken as soon
/// as it is released, so the connections of one process never meet on SQLite's lock; other
/// processes on the same file (the CLI, a second server) still meet it and wait on
/// `busy_timeout` as before. The wait is bounded by the same `connection_timeout`, after which
/// the write fails as unavailable (503), as a write that waited out `busy_timeout` does.
/// PostgreSQL writes do not use it.
///
/// The writes of a database file run on the gate's own connection, not a pooled one. In WAL
/// mode a connection drops its whole page cache when another connection has written since its
/// last transaction; writes rotating through the pool therefore nearly always started cold and
/// read their pages again (16 % of a code grant's CPU, docs/performance.md), while the one
/// writer connection is the only one that writes, so its cache stays warm. It is opened on the
/// first write and opened again when a write left it broken (a transaction neither committed
/// nor rolled back, after a panic): the test r2d2 applies to a pooled connection.
/// `sqlite::memory:` writes on its single pooled connection, the only one that sees its data.
#[derive(Clone)]
pub(crate) struct WriteGate {
    lock: Arc<parking_lot::Mutex<Option<SqliteConnection>>>,
    /// Where the writer connection comes from; `None`: writes use the pool.
    own: Option<Arc<WriterSource>>,
    wait: Duration,
}

impl fmt::Debug for WriteGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteGate")
            .field("own_connection", &self.own.is_some())
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

/// How the write gate opens its connection: the pooled connections' path and pragmas.
#[derive(Debug)]
pub(super) struct WriterSource {
    pub(super) path: String,
    pub(super) pragmas: SqlitePragmas,
}

/// A write's turn: the gate held until dropped, with the connection the write runs on.
pub(crate) struct WriteTurn<'a> {
    slot: parking_lot::MutexGuard<'a, Option<SqliteConnection>>,
    own: Option<&'a WriterSource>,
}

/// The connection of a [`WriteTurn`]: the gate's own, or a pooled one (`sqlite::memory:`).
pub(crate) enum Writer<'t> {
    /// The gate's connection (a database file).
    Own(&'t mut SqliteConnection),
    /// A pooled connection (`sqlite::memory:`).
    Pooled(PooledConnection<ConnectionManager<SqliteConnection>>),
}

impl Deref for Writer<'_> {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        match self {
            Writer::Own(conn) => conn,
            Writer::Pooled(conn) => conn,
        }
    }
}

impl DerefMut for Writer<'_> {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        match self {
            Writer::Own(conn) => conn,
            Writer::Pooled(conn) => conn,
        }
    }
}

impl WriteTurn<'_> {
    /// The connection this write runs on: the gate's own (opened now if it is not open or was
    /// left broken), or one from `pool` when the gate has none.
    pub(crate) fn connection(&mut self, pool: &SqlitePool) -> Result<Writer<'_>, PoolError> {
        let Some(source) = self.own else {
            return Ok(Writer::Pooled(checkout_sqlite(pool)?));
        };
        if self.slot.as_mut().is_some_and(|conn| conn.is_broken()) {
            tracing::warn!("the SQLite writer connection was left broken; opening another");
            *self.slot = None;
        }
        let conn = match &mut *self.slot {
            Some(conn) => conn,
            empty => empty.insert(source.open()?),
        };
        Ok(Writer::Own(conn))
    }
}

impl WriterSource {
    fn open(&self) -> Result<SqliteConnection, PoolError> {
        let mut conn = SqliteConnection::establish(&self.path).map_err(|e| {
            PoolError::new(format!("cannot open the SQLite writer connection: {e}"))
        })?;
        self.pragmas.on_acquire(&mut conn).map_err(|e| {
            PoolError::new(format!(
                "cannot configure the SQLite writer connection: {e}"
            ))
        })?;
        Ok(conn)
    }
}

impl WriteGate {
    pub(super) fn new(wait: Duration, own: Option<WriterSource>) -> Self {
        Self {
            lock: Arc::new(parking_lot::Mutex::new(None)),
            own: own.map(Arc::new),
            wait,
        }
    }

    /// Waits (at most `connection_timeout`) until no other write of this process runs; inside
    /// [`without_waiting`](no_wait::without_waiting) it refuses at once: no write runs there.
    pub(crate) fn enter(&self) -> Result<WriteTurn<'_>, PoolError> {
        if !no_wait::may_wait() {
            return Err(would_wait("a write"));
        }
        let slot = self.lock.try_lock_for(self.wait).ok_or_else(|| {
            PoolError::new(format!(
                "another write held the SQLite write lock for over {} ms",
                self.wait.as_millis()
            ))
        })?;
        Ok(WriteTurn {
            slot,
            own: self.own.as_deref(),
        })
    }
}
