//! The memory an S3 store may hold in bytes read from clients and not yet stored.
//!
//! An S3 part must be whole in memory before it is sent (object_store signs and sends a
//! `PutPayload`), so each upload that is appending holds up to a part (at least 5 MiB). Left
//! alone, memory would grow with the number of uploads at once: 64 transfers could hold
//! 320 MiB or more. Appends take a share of one budget for the whole store before they read,
//! and wait (a bounded time) for one when it is spent; a client that waits is slowed, not
//! refused, and after the wait gets 503 with `Retry-After`, which tus clients retry.

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use bytes::Bytes;
use std::time::{Duration, Instant};

use medialib_ports::StorageError;

/// The budget of buffered bytes of one store.
#[derive(Debug)]
pub(super) struct Budget {
    limit: u64,
    wait: Duration,
    used: Mutex<u64>,
    freed: Condvar,
}

/// A share of the budget, given back when dropped.
#[derive(Debug)]
pub(super) struct Share<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Budget {
    /// A budget of `limit` bytes; a caller waits up to `wait` for its share.
    pub(super) fn new(limit: u64, wait: Duration) -> Self {
        Self {
            limit,
            wait,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Takes `bytes` of the budget, waiting while others hold too much of it. A share larger
    /// than the whole budget is given when nobody else holds any, so it cannot wait forever.
    pub(super) fn take(&self, bytes: u64) -> Result<Share<'_>, StorageError> {
        let deadline = Instant::now() + self.wait;
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        while *used > 0 && *used + bytes > self.limit {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(StorageError::Unavailable(
                    "the S3 store's upload buffers are all in use; try again shortly".into(),
                ));
            }
            used = self
                .freed
                .wait_timeout(used, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *used += bytes;
        Ok(Share {
            budget: self,
            bytes,
        })
    }

    /// The bytes held now.
    #[cfg(test)]
    fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        let mut used = self
            .budget
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *used -= self.bytes;
        drop(used);
        self.budget.freed.notify_all();
    }
}

/// Chunk buffers kept for reuse, at most `keep` of them: the bytes of parts come and go
/// hundreds of times a second, and freed to the allocator they stayed in the arenas of the
/// threads that freed them (the RSS of 8 uploads at once stood 80 MiB above the budget).
#[derive(Debug)]
pub(super) struct Chunks {
    size: usize,
    keep: usize,
    free: Mutex<Vec<Vec<u8>>>,
}

/// A filled chunk that goes back to its pool when the last `Bytes` of it is dropped.
struct Pooled {
    buf: Vec<u8>,
    len: usize,
    pool: Arc<Chunks>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let mut free = self
            .pool
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if free.len() < self.pool.keep {
            free.push(std::mem::take(&mut self.buf));
        }
    }
}

impl Chunks {
    /// A pool of chunks of `size` bytes, keeping up to `keep` free ones.
    pub(super) fn new(size: usize, keep: usize) -> Arc<Self> {
        Arc::new(Self {
            size,
            keep,
            free: Mutex::new(Vec::new()),
        })
    }

    /// Fills a chunk (at most `want` bytes, at most the chunk size) with `fill`, which returns
    /// how many bytes it wrote; the filled part as `Bytes`, and what `fill` returned beside.
    pub(super) fn fill<T>(
        self: &Arc<Self>,
        want: usize,
        fill: impl FnOnce(&mut [u8]) -> (usize, T),
    ) -> (Bytes, T) {
        let reused = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut buf = reused.unwrap_or_else(|| vec![0u8; self.size]);
        let want = want.min(self.size);
        let (len, other) = fill(&mut buf[..want]);
        let len = len.min(want);
        let bytes = Bytes::from_owner(Pooled {
            buf,
            len,
            pool: Arc::clone(self),
        });
        (bytes, other)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn chunks_come_back_to_the_pool_up_to_its_size() {
        let pool = Chunks::new(8, 1);
        let (a, ()) = pool.fill(5, |b| {
            b.copy_from_slice(b"hello");
            (5, ())
        });
        let (b, ()) = pool.fill(100, |b| {
            assert_eq!(b.len(), 8, "at most a chunk");
            b[..3].copy_from_slice(b"abc");
            (3, ())
        });
        assert_eq!(&a[..], b"hello");
        assert_eq!(&b[..], b"abc");
        let a2 = a.clone();
        drop(a);
        assert_eq!(pool.free.lock().unwrap().len(), 0, "a clone still holds it");
        drop(a2);
        drop(b);
        assert_eq!(pool.free.lock().unwrap().len(), 1, "one kept, one freed");
    }

    #[test]
    fn shares_wait_for_room_and_give_it_back() {
        let budget = Arc::new(Budget::new(10, Duration::from_secs(5)));
        let a = budget.take(6).unwrap();
        let b = budget.take(4).unwrap();
        assert_eq!(budget.used(), 10);
        let waiter = {
            let budget = Arc::clone(&budget);
            std::thread::spawn(move || {
                let started = Instant::now();
                let share = budget.take(5).map(|_| ());
                (share, started.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        drop(a);
        let (share, waited) = waiter.join().unwrap();
        share.unwrap();
        assert!(waited >= Duration::from_millis(90), "it waited: {waited:?}");
        drop(b);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_share_larger_than_the_budget_waits_for_an_empty_one_and_then_goes() {
        let budget = Budget::new(10, Duration::from_millis(50));
        let whole = budget.take(25).unwrap();
        assert!(matches!(budget.take(1), Err(StorageError::Unavailable(_))));
        drop(whole);
        let small = budget.take(1).unwrap();
        assert!(matches!(budget.take(25), Err(StorageError::Unavailable(_))));
        drop(small);
    }
}
