//! Reads run where a wait would cost more than the read: on the calling thread, provided the
//! store can answer without waiting.
//!
//! The HTTP adapter runs its use cases on a blocking thread pool, because a store may wait:
//! for a connection from its pool, for a lock, for a database across the network. For a read
//! that an embedded database answers from its page cache in a few µs, the two thread hand-offs
//! of that hop cost more than the read (docs/performance.md). [`without_waiting`] runs a
//! read on the calling thread and tells the stores it calls not to wait: a store that would
//! wait (no idle connection, a network database, any write) calls [`refuse`] and returns an
//! error instead, and [`without_waiting`] answers [`Inline::WouldWait`], after which the caller
//! runs the read again where waiting is allowed. What the refused attempt returned is dropped
//! unseen, so its error never reaches a client; a read has no effects, so running it twice is
//! safe. Only reads may run this way: a store refuses every write while no waiting is allowed.

use std::cell::Cell;

/// How a read run by [`without_waiting`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Inline<T> {
    /// It ran without waiting; its outcome.
    Done(T),
    /// A store it called would have waited and refused: run it again where waiting is allowed.
    WouldWait,
}

thread_local! {
    /// `None` outside [`without_waiting`]; inside, whether a store has refused to wait.
    static SCOPE: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Restores the scope that was current before, also when the read panics.
struct Restore(Option<bool>);

impl Drop for Restore {
    fn drop(&mut self) {
        SCOPE.with(|s| s.set(self.0));
    }
}

/// Runs `read` on this thread, with every store it calls told not to wait.
pub fn without_waiting<T>(read: impl FnOnce() -> T) -> Inline<T> {
    let _restore = Restore(SCOPE.with(|s| s.replace(Some(false))));
    let outcome = read();
    if SCOPE.with(Cell::get) == Some(true) {
        Inline::WouldWait
    } else {
        Inline::Done(outcome)
    }
}

/// Whether a store may wait here (for a connection, a lock, the network): `false` inside
/// [`without_waiting`].
pub fn may_wait() -> bool {
    SCOPE.with(Cell::get).is_none()
}

/// Whether a store has refused to wait in the current [`without_waiting`] scope: what the read
/// does from here on will be dropped unseen, so an error it meets is no one's to report
/// (`false` outside the scope).
pub fn refused() -> bool {
    SCOPE.with(Cell::get) == Some(true)
}

/// Called by a store that would have to wait where [`may_wait`] is `false`, before it returns
/// an error instead; outside [`without_waiting`] it does nothing.
pub fn refuse() {
    SCOPE.with(|s| {
        if s.get().is_some() {
            s.set(Some(true));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_no_store_refused_is_done() {
        assert!(may_wait());
        assert_eq!(without_waiting(may_wait), Inline::Done(false));
        assert!(may_wait(), "the scope ends with the read");
    }

    #[test]
    fn a_refusal_turns_the_outcome_into_would_wait() {
        let ran = without_waiting(|| {
            assert!(!refused());
            refuse();
            assert!(refused());
            "an error the client must not see"
        });
        assert_eq!(ran, Inline::WouldWait);
        assert!(!refused(), "the scope ends with the read");
        // The next read starts afresh.
        assert_eq!(without_waiting(|| 1), Inline::Done(1));
    }

    #[test]
    fn a_refusal_outside_the_scope_changes_nothing() {
        refuse();
        assert!(may_wait());
        assert_eq!(without_waiting(|| 2), Inline::Done(2));
    }

    #[test]
    fn nested_scopes_restore_the_outer_one() {
        let outer = without_waiting(|| {
            assert_eq!(without_waiting(|| 3), Inline::Done(3));
            assert!(!may_wait(), "still inside the outer read");
            refuse();
        });
        assert_eq!(outer, Inline::WouldWait);
        assert!(may_wait());
    }

    #[test]
    fn a_panicking_read_leaves_waiting_allowed() {
        let caught = std::panic::catch_unwind(|| without_waiting(|| panic!("in the read")));
        assert!(caught.is_err());
        assert!(may_wait());
    }
}
