//! Load shedding by what hurts: the time admitted requests wait before their work starts.
//!
//! A request that does blocking work (database, password hashing) takes a slot here first.
//! Two rules refuse one with a 503 and `Retry-After` at once:
//!
//! - **Queueing delay** (in the manner of CoDel): each request reports how long it waited
//!   between admission and the start of its work. When even the shortest wait seen over a
//!   [`INTERVAL`] exceeds the target (`shed_queue_delay`), the queue is standing, not a burst
//!   draining: new requests are refused while more than a floor of them are in flight, until
//!   an interval's shortest wait is back under the target. A load the machine can serve keeps
//!   the shortest wait near zero and is served entirely, however many connections carry it;
//!   a load it cannot serve is cut to the floor, so that admitted requests wait behind few.
//! - **A hard bound** (`max_in_flight`, queued requests included), which keeps memory and
//!   threads bounded whatever the delays say.
//!
//! Password sign-ins queue for their own slots (two per CPU, `AppState`) and are measured
//! by a second [`Admission`] of their own ([`SignIns`]): a sign-in waits for a hash far
//! longer than a read waits for a thread, and neither should shed the other.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a queueing delay must persist before shedding starts or stops: CoDel's interval.
/// Bursts shorter than this (a page of 50 thumbnails) never shed.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);
/// Requests in flight that shedding always admits: enough to keep every database connection
/// and blocking thread of a small deployment busy while the queue drains.
pub(crate) const FLOOR: usize = 16;
/// Sign-ins in flight (queued for a hash, or hashing) per sign-in slot that shedding always
/// admits.
const SIGN_IN_FLOOR_PER_SLOT: usize = 16;

/// The in-flight counter of one application (shared by all its workers).
#[derive(Debug)]
pub(crate) struct Admission {
    limit: usize,
    in_flight: AtomicUsize,
    /// Requests refused; shared with the sign-in queue so that `/metrics` counts both.
    shed: Arc<AtomicU64>,
    /// Shedding by queueing delay; `None`: off (only `limit` sheds).
    delay: Option<QueueDelay>,
}

/// The queueing-delay rule of one queue.
#[derive(Debug)]
struct QueueDelay {
    target: Duration,
    floor: usize,
    /// Whether the last full interval's shortest wait exceeded `target`.
    shedding: AtomicBool,
    window: Mutex<Window>,
}

/// The interval being observed: when it began and the shortest wait seen in it.
#[derive(Debug, Default)]
struct Window {
    began: Option<Instant>,
    least: Option<Duration>,
}

/// A place among the admitted requests; given back when dropped (it may move to the thread
/// doing the request's work, and outlive the request).
#[derive(Debug)]
pub(crate) struct Slot {
    admission: Arc<Admission>,
    admitted: Instant,
}

impl Admission {
    /// At most `limit` admitted at once (`None`: no limit); when `target` is set, shedding
    /// also once waits persistently exceed it, down to `floor` in flight.
    fn with(
        limit: Option<usize>,
        target: Option<Duration>,
        floor: usize,
        shed: Arc<AtomicU64>,
    ) -> Self {
        Self {
            limit: limit.unwrap_or(usize::MAX).max(1),
            in_flight: AtomicUsize::new(0),
            shed,
            delay: target.map(|target| QueueDelay {
                target,
                floor: floor.max(1),
                shedding: AtomicBool::new(false),
                window: Mutex::new(Window::default()),
            }),
        }
    }

    /// The bound of the requests doing database work: `max_in_flight`, and the queueing
    /// delay `target` (`None`: off).
    pub(crate) fn new(limit: Option<usize>, target: Option<Duration>) -> Self {
        Self::with(limit, target, FLOOR, Arc::default())
    }

    /// A slot, or `None` (counted as shed) when `limit` requests already hold one, or when
    /// the queue is standing and more than the floor are in flight.
    pub(crate) fn try_enter(self: &Arc<Self>) -> Option<Slot> {
        let cap = match &self.delay {
            Some(d) if d.shedding.load(Ordering::Acquire) => d.floor.min(self.limit),
            _ => self.limit,
        };
        let admitted = self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < cap).then_some(n + 1)
            })
            .is_ok();
        if admitted {
            Some(Slot {
                admission: Arc::clone(self),
                admitted: Instant::now(),
            })
        } else {
            self.shed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }

    /// Requests holding a slot right now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Requests refused since start (by this queue and any sharing its counter).
    pub(crate) fn shed(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    /// The limit (`usize::MAX` when unbounded).
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Whether the queue is standing, so that requests past the floor are refused.
    pub(crate) fn shedding(&self) -> bool {
        self.delay
            .as_ref()
            .is_some_and(|d| d.shedding.load(Ordering::Acquire))
    }

    /// Notes that a request's work started after waiting `waited`, at `now`.
    fn observe(&self, waited: Duration, now: Instant) {
        let Some(d) = &self.delay else { return };
        let mut window = d.window.lock().unwrap_or_else(PoisonError::into_inner);
        let began = *window.began.get_or_insert(now);
        let least = window.least.map_or(waited, |l| l.min(waited));
        if now.saturating_duration_since(began) >= INTERVAL {
            let standing = least > d.target;
            if standing != d.shedding.swap(standing, Ordering::AcqRel) {
                tracing::warn!(
                    shortest_wait_ms = least.as_millis(),
                    target_ms = d.target.as_millis(),
                    "{}",
                    if standing {
                        "requests queue longer than shed_queue_delay: shedding past the floor"
                    } else {
                        "the queue drained: shedding stopped"
                    }
                );
            }
            *window = Window {
                began: Some(now),
                least: None,
            };
        } else {
            window.least = Some(least);
        }
    }
}

impl Default for Admission {
    /// No limit, no shedding.
    fn default() -> Self {
        Self::new(None, None)
    }
}

impl Slot {
    /// Marks the start of the request's work: its wait since admission is what the
    /// queueing-delay rule watches.
    pub(crate) fn begin(&self) {
        self.admission
            .observe(self.admitted.elapsed(), Instant::now());
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.admission.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Password sign-ins: slots for hashing (two per CPU), and the queue before them, shed by
/// its own delay (counted in `shed`, shared with the database queue).
#[derive(Debug)]
pub(crate) struct SignIns {
    pub(crate) queue: Arc<Admission>,
    pub(crate) slots: tokio::sync::Semaphore,
}

impl SignIns {
    /// `slots` sign-ins at once; the queue before them sheds by `target` (`None`: off) down
    /// to sixteen waiting per slot, and refusals count in `database`'s counter.
    pub(crate) fn new(slots: usize, target: Option<Duration>, database: &Admission) -> Self {
        Self {
            queue: Arc::new(Admission::with(
                None,
                target,
                slots.saturating_mul(SIGN_IN_FLOOR_PER_SLOT),
                Arc::clone(&database.shed),
            )),
            slots: tokio::sync::Semaphore::new(slots.max(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Duration = Duration::from_millis(200);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn admits_up_to_the_limit_and_frees_slots_on_drop() {
        let a = Arc::new(Admission::new(Some(2), None));
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
        let a = Arc::new(Admission::new(None, None));
        let slots: Vec<_> = (0..1000).filter_map(|_| a.try_enter()).collect();
        assert_eq!(slots.len(), 1000);
        assert_eq!(a.shed(), 0);
    }

    /// An interval whose every wait exceeds the target turns shedding on; requests past the
    /// floor are then refused, those under it still admitted; an interval with one short
    /// wait turns it off again.
    #[test]
    fn a_standing_queue_sheds_down_to_the_floor_and_a_drained_one_stops() {
        let a = Arc::new(Admission::new(None, Some(TARGET)));
        let slots: Vec<_> = (0..100).filter_map(|_| a.try_enter()).collect();
        assert_eq!(slots.len(), 100, "nothing is shed before any wait is seen");
        let t0 = Instant::now();
        a.observe(ms(300), t0);
        a.observe(ms(250), t0 + ms(50));
        assert!(
            !a.shedding(),
            "less than an interval of long waits is a burst"
        );
        a.observe(ms(400), t0 + INTERVAL);
        assert!(
            a.shedding(),
            "a whole interval over the target is a standing queue"
        );
        assert!(a.try_enter().is_none(), "100 in flight is past the floor");
        assert_eq!(a.shed(), 1);
        drop(slots);
        let floor: Vec<_> = (0..FLOOR + 5).filter_map(|_| a.try_enter()).collect();
        assert_eq!(
            floor.len(),
            FLOOR,
            "the floor is still admitted while shedding"
        );
        let t1 = t0 + INTERVAL * 2;
        a.observe(ms(900), t1);
        a.observe(ms(10), t1 + ms(60));
        assert!(a.shedding(), "the interval is not over yet");
        a.observe(ms(900), t1 + INTERVAL);
        assert!(
            !a.shedding(),
            "one short wait in the interval: the queue drains"
        );
        assert!(a.try_enter().is_some());
    }

    /// Waits at or under the target never shed, whatever their number: a load the machine
    /// can serve is served.
    #[test]
    fn waits_under_the_target_never_shed() {
        let a = Arc::new(Admission::new(None, Some(TARGET)));
        let slots: Vec<_> = (0..1000).filter_map(|_| a.try_enter()).collect();
        let t0 = Instant::now();
        for i in 0..100 {
            a.observe(TARGET, t0 + ms(i * 10));
        }
        assert!(!a.shedding());
        assert_eq!((slots.len(), a.shed()), (1000, 0));
    }

    /// With the rule off (`shed_queue_delay = 0`), only the hard bound sheds.
    #[test]
    fn off_means_only_the_limit_sheds() {
        let a = Arc::new(Admission::new(Some(64), None));
        let slots: Vec<_> = (0..64).filter_map(|_| a.try_enter()).collect();
        let t0 = Instant::now();
        a.observe(Duration::from_secs(10), t0);
        a.observe(Duration::from_secs(10), t0 + INTERVAL * 3);
        assert!(!a.shedding());
        assert_eq!(slots.len(), 64);
        assert!(a.try_enter().is_none(), "the 65th is past max_in_flight");
    }

    /// The sign-in queue sheds by its own waits, down to its own floor, and counts its
    /// refusals with the database queue's.
    #[test]
    fn sign_ins_shed_by_their_own_queue_and_share_the_count() {
        let database = Arc::new(Admission::new(Some(1), Some(TARGET)));
        let sign_ins = SignIns::new(2, Some(TARGET), &database);
        let queued: Vec<_> = (0..40).filter_map(|_| sign_ins.queue.try_enter()).collect();
        assert_eq!(
            queued.len(),
            40,
            "no hard bound on the sign-in queue itself"
        );
        let t0 = Instant::now();
        sign_ins.queue.observe(ms(500), t0);
        sign_ins.queue.observe(ms(500), t0 + INTERVAL);
        assert!(sign_ins.queue.shedding() && !database.shedding());
        assert!(
            sign_ins.queue.try_enter().is_none(),
            "40 waiting is past 2 × 16"
        );
        let _db = database.try_enter();
        assert!(
            database.try_enter().is_none(),
            "the database queue's own limit"
        );
        assert_eq!(
            database.shed(),
            2,
            "both refusals are counted once, together"
        );
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
