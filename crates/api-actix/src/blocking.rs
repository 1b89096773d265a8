//! Running the synchronous use cases off the async workers, inside the request's span.

use std::time::Instant;

use actix_web::web;
use medialib_ports::Services;
use medialib_ports::no_wait::{Inline, without_waiting};

use crate::admission::Slot;
use crate::error::ApiError;
use crate::metrics::ReadPlace;
use crate::state::AppState;

/// What a use case spends on the blocking pool, which decides the slots it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Storage reads and writes: a slot of `max_in_flight` (see `admission.rs`), or a 503 at
    /// once.
    Store,
    /// A password sign-in: once admitted, it also waits (on the async worker, holding no
    /// thread) for one of the sign-in slots (two per CPU, `AppState::sign_ins`), so that a
    /// burst of sign-ins never fills the blocking pool, which is sized for the database pool.
    PasswordHash,
}

/// Runs `f` with the services on the blocking thread pool and maps its error; a 503
/// ([`ApiError::Overloaded`]) at once when the admission refuses it (`max_in_flight` requests
/// are already at it, or a standing queue is being shed: `admission.rs`), and a
/// 503 ([`ApiError::DatabaseUnavailable`]) when it takes longer than `db_deadline` (the work
/// goes on on its thread, holding its admission slot, until the database answers or its
/// connection fails).
pub async fn run<T, E, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    run_as(state, Work::Store, f).await
}

/// [`run`] for a read (no effects: it may run twice) whose only I/O is the repositories:
/// the media storage and the sign-in providers do not know [`without_waiting`] and would
/// block the worker. Where the store is embedded
/// ([`HttpConfig::inline_reads`](crate::HttpConfig::inline_reads)), it first runs here, on
/// the async worker, with the stores told not to wait
/// ([`without_waiting`](medialib_ports::no_wait::without_waiting)): a point read from SQLite's
/// page cache takes a few µs, less than the two thread hand-offs of the blocking pool. When a
/// store would have waited (no idle connection), what it returned is dropped and the read runs
/// on the blocking pool as [`run`] does, in the same admission slot. A read done here holds
/// its slot while it runs but is not observed by the queueing-delay rule: it never queued.
pub async fn run_read<T, E, F>(state: &AppState, read: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Clone + Send + 'static,
{
    let slot = admit(state)?;
    if state.config().inline_reads {
        let here = read.clone();
        let services = state.services();
        // A panic is answered 500 here as the blocking pool answers it, instead of unwinding
        // through the worker and dropping its other connections.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            without_waiting(|| here(services))
        }));
        match ran {
            Ok(Inline::Done(outcome)) => {
                slot.begin_inline();
                state.metrics.count_read(ReadPlace::Worker);
                return outcome.map_err(Into::into);
            }
            Ok(Inline::WouldWait) => {}
            Err(_) => {
                tracing::error!("a read panicked on the async worker");
                return Err(ApiError::Internal);
            }
        }
    }
    state.metrics.count_read(ReadPlace::Pool);
    run_admitted(state, slot, read).await
}

/// [`run`] for `work` that may wait for slots of its own ([`Work::PasswordHash`]).
pub async fn run_as<T, E, F>(state: &AppState, work: Work, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    // A sign-in first queues for a sign-in slot, holding nothing else; the queue is bounded
    // by count (16 per slot: `admission.rs`), not by its waits.
    let _sign_in = match work {
        Work::PasswordHash => {
            let queued = state
                .sign_ins
                .queue
                .try_enter()
                .ok_or(ApiError::Overloaded)?;
            // The semaphore is never closed; were it, the work would run ungated.
            let permit = state.sign_ins.slots.acquire().await.ok();
            Some((queued, permit))
        }
        Work::Store => None,
    };
    run_admitted(state, admit(state)?, f).await
}

/// A place among the requests admitted to database work (`admission.rs`), or a 503
/// ([`ApiError::Overloaded`]) at once. Taken before any other wait of the request (for an
/// answer's share of the budget, say), so that the queueing-delay rule sees that wait too.
pub(crate) fn admit(state: &AppState) -> Result<Slot, ApiError> {
    state.admission.try_enter().ok_or(ApiError::Overloaded)
}

/// [`run`] with the `slot` already taken by [`admit`].
pub(crate) async fn run_admitted<T, E, F>(state: &AppState, slot: Slot, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    let (t, _slot) = run_in_slot(state, slot, Waits::EndAtStart, f).await?;
    Ok(t)
}

/// [`run_admitted`] for a request that waits again after its work (a catalog listing, for
/// the rest of its share of the answer budget): the start of the work does not end its waits,
/// and the slot comes back with the work's time noted, for the request to call
/// [`Slot::end_waits`] once it waits no more and drop the slot.
pub(crate) async fn run_then_wait<T, E, F>(
    state: &AppState,
    slot: Slot,
    f: F,
) -> Result<(T, Slot), ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    run_in_slot(state, slot, Waits::GoOnAfter, f).await
}

/// When a request's waits end, for the queueing-delay rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waits {
    /// When its work starts.
    EndAtStart,
    /// Later, at [`Slot::end_waits`]: the work's time is noted.
    GoOnAfter,
}

async fn run_in_slot<T, E, F>(
    state: &AppState,
    mut slot: Slot,
    waits: Waits,
    f: F,
) -> Result<(T, Slot), ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    let services = state.services().clone();
    let span = tracing::Span::current();
    // The slot moves with the work and comes back with its result, so it is held until the
    // work is done: queued and running requests both count, and so does work still stuck on
    // a database after its request was answered 503 (its result, slot and all, is dropped
    // when it ends).
    let work = web::block(move || {
        let started = Instant::now();
        if waits == Waits::EndAtStart {
            slot.begin(started);
        }
        // Waited too long behind a standing queue: refused before the work, not served late.
        if slot.overdue(started) {
            return (None, slot);
        }
        let result = span.in_scope(|| f(&services));
        slot.worked(started.elapsed());
        (Some(result), slot)
    });
    let done = within_deadline(state, work).await?;
    match done {
        Ok((None, _slot)) => Err(ApiError::Overloaded),
        Ok((Some(result), slot)) => result.map(|t| (t, slot)).map_err(Into::into),
        Err(e) => {
            tracing::error!(error = %e, "blocking task failed");
            Err(ApiError::Internal)
        }
    }
}

/// Awaits `work` (database work on the blocking pool) for at most the `db_deadline`; past it,
/// [`ApiError::DatabaseUnavailable`] (503 + `Retry-After`) while the work goes on by itself.
pub async fn within_deadline<T>(
    state: &AppState,
    work: impl std::future::Future<Output = T>,
) -> Result<T, ApiError> {
    let Some(deadline) = state.config().db_deadline else {
        return Ok(work.await);
    };
    tokio::time::timeout(deadline, work).await.map_err(|_| {
        tracing::warn!(
            deadline_ms = deadline.as_millis(),
            "the database did not answer in time; answering 503"
        );
        ApiError::DatabaseUnavailable
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use medialib_adapters_memory::testing::Harness;
    use medialib_ports::no_wait::{may_wait, refuse};

    use super::*;
    use crate::admission::FLOOR;

    #[derive(Debug)]
    struct Up;

    impl crate::Readiness for Up {
        fn ready(&self) -> Result<(), String> {
            Ok(())
        }
    }

    fn state(inline_reads: bool) -> AppState {
        state_with(crate::HttpConfig {
            inline_reads,
            ..crate::HttpConfig::default()
        })
    }

    fn state_with(config: crate::HttpConfig) -> AppState {
        AppState::new(Arc::new(Up), Harness::new().services.clone(), config)
    }

    /// A wait after the work (a listing's, for the rest of its share of the answer budget)
    /// is queueing, and the work's own time is not: three requests that each wait 150 ms after
    /// their work set a cap (target 50 ms); the control, the same 150 ms spent in the work,
    /// sets none.
    #[actix_web::test]
    async fn a_wait_after_the_work_is_queueing_and_the_work_is_not() {
        let pause = std::time::Duration::from_millis(150);
        for wait_after in [false, true] {
            let state = state_with(crate::HttpConfig {
                shed_queue_delay: Some(std::time::Duration::from_millis(50)),
                ..crate::HttpConfig::default()
            });
            for _ in 0..3 {
                let slot = admit(&state).unwrap();
                let work = move |_: &Services| -> Result<(), ApiError> {
                    if !wait_after {
                        std::thread::sleep(pause);
                    }
                    Ok(())
                };
                let ((), slot) = run_then_wait(&state, slot, work).await.unwrap();
                if wait_after {
                    tokio::time::sleep(pause).await;
                }
                slot.end_waits();
            }
            assert_eq!(
                state.admission.shedding(),
                wait_after,
                "waiting after the work: {wait_after}"
            );
        }
    }

    /// Behind a standing queue, a request that waited longer than the target is answered 503
    /// at the start of its work, which never runs, when more than the floor are in flight. The
    /// controls: a request admitted afterwards runs, and so does a request that waited as long
    /// alone (no queue behind it: a machine busy with other work, which no refusal helps).
    #[actix_web::test]
    async fn behind_a_standing_queue_a_request_that_waited_too_long_is_refused_unworked() {
        let target = std::time::Duration::from_millis(50);
        for crowded in [true, false] {
            let state = state_with(crate::HttpConfig {
                shed_queue_delay: Some(target),
                ..crate::HttpConfig::default()
            });
            // Admitted before any queue stood: `late` and, when crowded, the floor's worth more.
            let late = admit(&state).unwrap();
            let crowd: Vec<_> = (0..if crowded { FLOOR } else { 0 })
                .map(|_| admit(&state).unwrap())
                .collect();
            // Two waits past the target, an interval apart: a queue stood (a third request
            // would find the crowd at the cap it sets).
            for _ in 0..2 {
                let slot = admit(&state).unwrap();
                let work = |_: &Services| -> Result<(), ApiError> { Ok(()) };
                let ((), slot) = run_then_wait(&state, slot, work).await.unwrap();
                tokio::time::sleep(3 * target).await;
                slot.end_waits();
            }
            assert!(state.admission.shedding(), "a queue stood");
            let ran = Arc::new(AtomicUsize::new(0));
            let work = |ran: &Arc<AtomicUsize>| {
                let counted = Arc::clone(ran);
                move |_: &Services| -> Result<(), ApiError> {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }
            };
            let answer = run_admitted(&state, late, work(&ran)).await;
            assert_eq!(
                matches!(answer, Err(ApiError::Overloaded)),
                crowded,
                "crowded {crowded}: {answer:?}"
            );
            assert_eq!(ran.load(Ordering::SeqCst), usize::from(!crowded));
            drop(crowd);
            let fresh = admit(&state).unwrap();
            let answer = run_admitted(&state, fresh, work(&ran)).await;
            assert!(answer.is_ok(), "admitted under the cap: {answer:?}");
            assert_eq!(ran.load(Ordering::SeqCst), 1 + usize::from(!crowded));
            assert_eq!(state.admission.shed(), u64::from(crowded));
            assert_eq!(state.admission.in_flight(), 0, "every slot given back");
        }
    }

    /// Once the load is gone, reads answered on the worker lift a cap by themselves (they
    /// are all the requests a quiet SQLite server may get); the control, the same time with no
    /// request, keeps it.
    #[actix_web::test]
    async fn reads_on_the_worker_lift_a_cap_once_the_load_is_gone() {
        let pause = std::time::Duration::from_millis(150);
        for reads in [false, true] {
            let state = state_with(crate::HttpConfig {
                shed_queue_delay: Some(std::time::Duration::from_millis(50)),
                inline_reads: true,
                ..crate::HttpConfig::default()
            });
            for _ in 0..3 {
                let slot = admit(&state).unwrap();
                let work = |_: &Services| -> Result<(), ApiError> { Ok(()) };
                let ((), slot) = run_then_wait(&state, slot, work).await.unwrap();
                tokio::time::sleep(pause).await;
                slot.end_waits();
            }
            assert!(state.admission.shedding(), "the cap the waits set");
            for _ in 0..10 {
                tokio::time::sleep(crate::admission::INTERVAL / 4).await;
                if reads {
                    assert!(
                        run_read(&state, read_where()).await.unwrap(),
                        "on the worker"
                    );
                }
            }
            assert_eq!(
                state.admission.shedding(),
                !reads,
                "reads on the worker since: {reads}"
            );
        }
    }

    /// Where the read ran: `true` on the worker (waiting not allowed there).
    fn read_where() -> impl FnOnce(&Services) -> Result<bool, ApiError> + Clone + Send + 'static {
        |_| Ok(!may_wait())
    }

    #[actix_web::test]
    async fn a_read_runs_on_the_worker_only_where_reads_may() {
        assert!(run_read(&state(true), read_where()).await.unwrap());
        // The control: without `inline_reads` it runs on the blocking pool, where it may wait.
        assert!(!run_read(&state(false), read_where()).await.unwrap());
    }

    #[actix_web::test]
    async fn a_refused_read_runs_again_on_the_pool_and_only_that_answer_counts() {
        let attempts = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&attempts);
        let read = move |_: &Services| -> Result<&'static str, ApiError> {
            counted.fetch_add(1, Ordering::SeqCst);
            if may_wait() {
                Ok("from the pool")
            } else {
                refuse();
                Err(ApiError::DatabaseUnavailable)
            }
        };
        assert_eq!(run_read(&state(true), read).await.unwrap(), "from the pool");
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
    }

    #[actix_web::test]
    async fn a_read_that_panics_on_the_worker_is_a_500() {
        let panics = |_: &Services| -> Result<(), ApiError> { panic!("a bug in a read") };
        let answer = run_read(&state(true), panics).await;
        assert!(matches!(answer, Err(ApiError::Internal)), "{answer:?}");
        // The same on the blocking pool (the behaviour it keeps).
        let answer = run_read(&state(false), panics).await;
        assert!(matches!(answer, Err(ApiError::Internal)), "{answer:?}");
    }
}
