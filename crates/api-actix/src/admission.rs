//! Load shedding: a bound on the requests doing blocking work (database, password hashing)
//! at once, queued ones included. Past it a request gets a 503 with `Retry-After` at once,
//! instead of joining a queue whose wait, threads and memory would grow without limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The in-flight counter of one application (shared by all its workers).
#[derive(Debug)]
pub(crate) struct Admission {
    limit: usize,
    in_flight: AtomicUsize,
    shed: AtomicU64,
}

/// A place among the admitted requests; given back when dropped (it may move to the thread
/// doing the request's work, and outlive the request).
#[derive(Debug)]
pub(crate) struct Slot(Arc<Admission>);

impl Admission {
    /// At most `limit` admitted at once (`None`: no limit).
    pub(crate) fn new(limit: Option<usize>) -> Self {
        Self {
            limit: limit.unwrap_or(usize::MAX).max(1),
            in_flight: AtomicUsize::new(0),
            shed: AtomicU64::new(0),
        }
    }

    /// A slot, or `None` when `limit` requests already hold one (counted as shed).
    pub(crate) fn try_enter(self: &Arc<Self>) -> Option<Slot> {
        let admitted = self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok();
        if admitted {
            Some(Slot(Arc::clone(self)))
        } else {
            self.shed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }

    /// Requests holding a slot right now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Requests refused since start.
    pub(crate) fn shed(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    /// The limit (`usize::MAX` when unbounded).
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

impl Default for Admission {
    /// No limit.
    fn default() -> Self {
        Self::new(None)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_and_frees_slots_on_drop() {
        let a = Arc::new(Admission::new(Some(2)));
        let first = a.try_enter();
        let second = a.try_enter();
        assert!(first.is_some() && second.is_some());
        assert!(a.try_enter().is_none(), "a third request is shed");
        assert_eq!((a.in_flight(), a.shed()), (2, 1));
        drop(first);
        assert!(a.try_enter().is_some(), "a freed slot is reused");
        assert_eq!(a.in_flight(), 1, "the temporary slot was given back");
    }

    #[test]
    fn no_limit_admits_everything() {
        let a = Arc::new(Admission::new(None));
        let slots: Vec<_> = (0..1000).filter_map(|_| a.try_enter()).collect();
        assert_eq!(slots.len(), 1000);
        assert_eq!(a.shed(), 0);
    }
}

/// Media transfers (uploads, deliveries) that may run at once, each on a thread of its own
/// (`transfer.rs`); past the limit, a 503 at once.
#[derive(Debug, Clone)]
pub struct Transfers(Arc<tokio::sync::Semaphore>);

impl Transfers {
    /// `n` transfers at once.
    pub fn new(n: usize) -> Self {
        Self(Arc::new(tokio::sync::Semaphore::new(n.max(1))))
    }
}

impl Transfers {
    /// A slot, held until dropped; `None` when every slot is taken.
    pub(crate) fn try_enter(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        Arc::clone(&self.0).try_acquire_owned().ok()
    }
}

impl Default for Transfers {
    /// 64 at once: far more uploads than a 2-core server writes at full speed.
    fn default() -> Self {
        Self::new(64)
    }
}
