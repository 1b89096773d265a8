//! Load shedding by what hurts: the time admitted requests wait before their work starts.
//!
//! A request that does blocking work (database, password hashing) takes a slot here first.
//! Two rules refuse one with a 503 and `Retry-After` at once:
//!
//! - **Queueing delay** (CoDel's measure driving an adaptive concurrency limit): each request
//!   reports how long it waited between admission and the start of its work. When even the
//!   shortest wait seen over an [`INTERVAL`] exceeds the target (`shed_queue_delay`), the queue
//!   is standing, not a burst draining, and a cap on requests in flight is set to half of those
//!   in flight (never under a floor); each interval that still stands halves it again. Each
//!   interval whose shortest wait is under the target while at least half of the cap is in use
//!   doubles it. The cap is lifted only once nobody has been refused for [`LIFT_AFTER`], longer
//!   than the `Retry-After` of a refusal, with fewer than half of it in use: clients that wait
//!   their `Retry-After` leave the server idle between their waves, and a cap lifted in that
//!   lull would admit the whole next wave at once. A load the machine can serve keeps the
//!   shortest wait near zero and is served entirely, however many connections carry it; a load
//!   it cannot serve is held near the concurrency at which waits meet the target, so that
//!   admitted requests wait behind few, and the cap comes back by doublings, not all at once.
//!   While a cap is in force, a request that has already waited longer than the target when
//!   its work would start is refused then, before any work ([`Slot::overdue`]): CoDel's drop
//!   at the head of the queue, for the requests admitted before the cap was set. Not while
//!   the floor or fewer are in flight: the cap admits that many anyway, so refusing one of
//!   them cannot bring the queue under it, and a long wait with so few in flight is mostly
//!   the machine's (a lone request on a CPU busy with other work), which no refusal shortens.
//!   CoDel likewise drops nothing while no more than a packet is queued.
//! - **A hard bound** (`max_in_flight`, queued requests included), which keeps memory and
//!   threads bounded whatever the delays say.
//!
//! Password sign-ins queue for their own slots (two per CPU, `AppState`), at most sixteen per
//! slot ([`SignIns`]): their work is all alike, a hash whose cost argon2id's parameters fix, so
//! a count of them is a delay (sixteen hashes' time), known before any wait is seen. A flood
//! of sign-ins is refused past it at once, however sudden, and never sheds reads.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a queueing delay must persist before the cap moves: CoDel's interval.
/// Bursts shorter than this (a page of 50 thumbnails) never shed.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);
/// Requests in flight that the cap always admits: enough to keep every database connection
/// and blocking thread of a small deployment busy while the queue drains.
pub(crate) const FLOOR: usize = 16;
/// How long nobody must have been refused before a cap is lifted: twice the `Retry-After: 1`
/// of a refusal, so that every client refused in a wave has come back (and been admitted) in
/// between.
pub(crate) const LIFT_AFTER: Duration = Duration::from_secs(2);
/// Sign-ins in flight (queued for a hash, or hashing) per sign-in slot: the sign-in queue's
/// bound.
const SIGN_INS_PER_SLOT: usize = 16;

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
    /// The most requests admitted at once for now: the admission's `limit` when no queue
    /// has stood lately.
    cap: AtomicUsize,
    /// Requests this queue refused, by its cap or its limit.
    refused: AtomicU64,
    window: Mutex<Window>,
}

/// The interval being observed: when it began and the shortest wait seen in it; and since
/// when nobody has been refused, as seen at the ends of intervals.
#[derive(Debug, Default)]
struct Window {
    began: Option<Instant>,
    least: Option<Duration>,
    /// [`QueueDelay::refused`] at the end of the last interval.
    refused: u64,
    /// The end of the last interval in which a request was refused.
    last_refusal: Option<Instant>,
}

/// A place among the admitted requests; given back when dropped (it may move to the thread
/// doing the request's work, and outlive the request).
#[derive(Debug)]
pub(crate) struct Slot {
    admission: Arc<Admission>,
    admitted: Instant,
    /// The time the request's work has run so far (not waiting), for a request that waits
    /// again after its work ([`Slot::end_waits`]).
    worked: Duration,
}

impl Admission {
    /// At most `limit` admitted at once (`None`: no limit); when `target` is set, fewer once
    /// waits persistently exceed it, never fewer than `floor`.
    fn with(
        limit: Option<usize>,
        target: Option<Duration>,
        floor: usize,
        shed: Arc<AtomicU64>,
    ) -> Self {
        let limit = limit.unwrap_or(usize::MAX).max(1);
        Self {
            limit,
            in_flight: AtomicUsize::new(0),
            shed,
            delay: target.map(|target| QueueDelay {
                target,
                floor: floor.max(1),
                cap: AtomicUsize::new(limit),
                refused: AtomicU64::new(0),
                window: Mutex::new(Window::default()),
            }),
        }
    }

    /// The bound of the requests doing database work: `max_in_flight`, and the queueing
    /// delay `target` (`None`: off).
    pub(crate) fn new(limit: Option<usize>, target: Option<Duration>) -> Self {
        Self::with(limit, target, FLOOR, Arc::default())
    }

    /// A slot, or `None` (counted as shed) when `limit` requests already hold one, or the
    /// cap a standing queue set.
    pub(crate) fn try_enter(self: &Arc<Self>) -> Option<Slot> {
        let cap = self
            .delay
            .as_ref()
            .map_or(self.limit, |d| d.cap.load(Ordering::Acquire));
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
                worked: Duration::ZERO,
            })
        } else {
            self.count_refusal();
            None
        }
    }

    /// Counts a request refused by shedding: in the shed total, and in the refusals the
    /// queueing-delay rule lifts its cap by.
    fn count_refusal(&self) {
        self.shed.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = &self.delay {
            d.refused.fetch_add(1, Ordering::Relaxed);
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

    /// Whether a cap under `limit` is in force: a queue stood lately.
    pub(crate) fn shedding(&self) -> bool {
        self.cap() < self.limit
    }

    /// The most requests admitted at once for now.
    pub(crate) fn cap(&self) -> usize {
        self.delay
            .as_ref()
            .map_or(self.limit, |d| d.cap.load(Ordering::Acquire))
    }

    /// Notes that a request's work started after waiting `waited`, at `now`; at the end of an
    /// interval, moves the cap.
    fn observe(&self, waited: Duration, now: Instant) {
        self.note(Some(waited), now);
    }

    /// Notes that a request was served at `now` without queueing for the blocking pool (a read
    /// on the async worker): no wait for the rule to weigh, but the end of an interval, so that
    /// a cap set while the pool's queue stood is lifted once the load is gone even when every
    /// request left is such a read. Only while a cap is in force: the window's lock stays off
    /// the hot path of a server that is not shedding.
    fn tick(&self, now: Instant) {
        if self.shedding() {
            self.note(None, now);
        }
    }

    /// [`Admission::observe`], or with no wait ([`Admission::tick`]): an interval in which no
    /// request's work started has seen no queue.
    fn note(&self, waited: Option<Duration>, now: Instant) {
        let Some(d) = &self.delay else { return };
        let mut window = d.window.lock().unwrap_or_else(PoisonError::into_inner);
        let began = *window.began.get_or_insert(now);
        let least = match (window.least, waited) {
            (Some(l), Some(w)) => Some(l.min(w)),
            (l, w) => l.or(w),
        };
        if now.saturating_duration_since(began) < INTERVAL {
            window.least = least;
            return;
        }
        window.began = Some(now);
        window.least = None;
        let least = least.unwrap_or(Duration::ZERO);
        let refused = d.refused.load(Ordering::Relaxed);
        if refused != window.refused {
            window.refused = refused;
            window.last_refusal = Some(now);
        }
        let quiet = window
            .last_refusal
            .is_none_or(|at| now.saturating_duration_since(at) >= LIFT_AFTER);
        let (cap, in_flight) = (d.cap.load(Ordering::Acquire), self.in_flight());
        let next = if least > d.target {
            (cap.min(in_flight) / 2).max(d.floor).min(self.limit)
        } else if in_flight >= cap / 2 {
            cap.saturating_mul(2).min(self.limit)
        } else if quiet {
            self.limit
        } else {
            cap
        };
        d.cap.store(next, Ordering::Release);
        if (next < self.limit) != (cap < self.limit) {
            tracing::warn!(
                shortest_wait_ms = least.as_millis(),
                target_ms = d.target.as_millis(),
                cap = next,
                "{}",
                if next < self.limit {
                    "requests queue longer than shed_queue_delay: capping those in flight"
                } else {
                    "the queue drained: the cap is lifted"
                }
            );
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
    /// Marks the start of the request's work at `now`: its wait since admission is what the
    /// queueing-delay rule watches.
    pub(crate) fn begin(&self, now: Instant) {
        self.admission
            .observe(now.saturating_duration_since(self.admitted), now);
    }

    /// Whether the request, about to start its work at `now`, is refused instead (a 503 with
    /// `Retry-After`, counted as shed): a cap is in force, so a queue has stood, and it has
    /// already waited longer than the target. CoDel's drop at the head of the queue. The cap
    /// only refuses requests yet to come; those admitted before it was set (a wave of 512
    /// catalog listings arriving at once, all admitted within the first interval) would
    /// otherwise each be served after waiting for all those ahead of them, seconds on a slow
    /// machine, while every newcomer is refused. Refused before its work, it has changed
    /// nothing, and the client tries again after the `Retry-After` like any refused one.
    /// Never while no more than the floor are in flight (this request included): the cap
    /// admits that many whatever the waits, so refusing one of them cannot bring the queue
    /// under it.
    pub(crate) fn overdue(&self, now: Instant) -> bool {
        let a = &self.admission;
        let Some(d) = &a.delay else { return false };
        let overdue = a.shedding() && a.in_flight() > d.floor && self.waited(now) > d.target;
        if overdue {
            a.count_refusal();
        }
        overdue
    }

    /// Notes that the request's work ran for `took`: time that [`Slot::end_waits`] does not
    /// count as waiting.
    pub(crate) fn worked(&mut self, took: Duration) {
        self.worked = self.worked.saturating_add(took);
    }

    /// Marks the start of a request's work that took no turn on the blocking pool (a read on
    /// the async worker): [`Admission::tick`].
    pub(crate) fn begin_inline(&self) {
        self.admission.tick(Instant::now());
    }

    /// Marks the end of the waits of a request that waits again after its work (a catalog
    /// listing, for the rest of its share of the answer budget once its size is known): what
    /// the queueing-delay rule watches is then all its time since admission but its work.
    pub(crate) fn end_waits(&self) {
        let now = Instant::now();
        self.admission.observe(self.waited(now), now);
    }

    /// The time since admission, up to `now`, spent other than working.
    fn waited(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.admitted)
            .saturating_sub(self.worked)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.admission.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Password sign-ins: slots for hashing (two per CPU), and the queue before them, bounded to
/// sixteen per slot (refusals counted in the database queue's counter).
#[derive(Debug)]
pub(crate) struct SignIns {
    pub(crate) queue: Arc<Admission>,
    pub(crate) slots: tokio::sync::Semaphore,
}

impl SignIns {
    /// `slots` sign-ins at once, sixteen per slot in flight; refusals count in `database`'s
    /// counter.
    pub(crate) fn new(slots: usize, database: &Admission) -> Self {
        let slots = slots.max(1);
        Self {
            queue: Arc::new(Admission::with(
                Some(slots.saturating_mul(SIGN_INS_PER_SLOT)),
                None,
                1,
                Arc::clone(&database.shed),
            )),
            slots: tokio::sync::Semaphore::new(slots),
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

    /// An interval whose every wait exceeds the target caps those in flight at half; each
    /// interval that still stands halves the cap, down to the floor; intervals with a short
    /// wait double it while it is used, and lift it once it is not half used and nobody has
    /// been refused for [`LIFT_AFTER`].
    #[test]
    fn a_standing_queue_halves_the_cap_to_the_floor_and_a_drained_one_lifts_it() {
        let a = Arc::new(Admission::new(Some(4096), Some(TARGET)));
        let mut slots: Vec<_> = (0..100).filter_map(|_| a.try_enter()).collect();
        assert_eq!(slots.len(), 100, "nothing is shed before any wait is seen");
        let t0 = Instant::now();
        a.observe(ms(300), t0);
        a.observe(ms(250), t0 + ms(50));
        assert!(
            !a.shedding(),
            "less than an interval of long waits is a burst"
        );
        a.observe(ms(400), t0 + INTERVAL);
        assert_eq!(
            a.cap(),
            50,
            "a whole interval over the target: half of those in flight"
        );
        assert!(a.shedding());
        assert!(a.try_enter().is_none(), "100 in flight is past the cap");
        assert_eq!(a.shed(), 1);
        let mut t = t0 + INTERVAL;
        for expected in [25, FLOOR, FLOOR] {
            t += INTERVAL;
            a.observe(ms(900), t);
            assert_eq!(
                a.cap(),
                expected,
                "each standing interval halves it, to the floor"
            );
        }
        slots.truncate(FLOOR - 1);
        slots.push(a.try_enter().expect("under the floor, still admitted"));
        assert!(a.try_enter().is_none(), "at the floor, refused");
        a.observe(ms(10), t + ms(50));
        a.observe(ms(900), t + INTERVAL);
        assert_eq!(
            a.cap(),
            2 * FLOOR,
            "one short wait in the interval: doubled"
        );
        let more: Vec<_> = (0..FLOOR).filter_map(|_| a.try_enter()).collect();
        assert_eq!(more.len(), FLOOR);
        a.observe(ms(1), t + INTERVAL * 2);
        assert_eq!(a.cap(), 4 * FLOOR, "in use: doubled again, not lifted");
        drop((slots, more));
        a.observe(ms(1), t + INTERVAL * 3);
        assert_eq!(
            a.cap(),
            4 * FLOOR,
            "not used, but a request was refused {:?} ago: kept",
            INTERVAL * 2
        );
        a.observe(ms(1), t + INTERVAL + LIFT_AFTER);
        assert!(
            !a.shedding(),
            "not half used, nobody refused lately: lifted"
        );
        assert_eq!(a.cap(), 4096);
    }

    /// Clients that wait the `Retry-After` of a refusal come back in waves, and between the
    /// waves the queue looks idle: the cap holds through the lulls, and is lifted only once a
    /// whole [`LIFT_AFTER`] has gone by without a refusal.
    #[test]
    fn a_cap_holds_through_the_lulls_between_waves_of_patient_clients() {
        let a = Arc::new(Admission::new(Some(4096), Some(TARGET)));
        let t0 = Instant::now();
        let mut t = t0;
        let first: Vec<_> = (0..100).filter_map(|_| a.try_enter()).collect();
        a.observe(ms(300), t);
        t += INTERVAL;
        a.observe(ms(300), t);
        assert_eq!(a.cap(), 50);
        drop(first);
        let mut refusal_seen = t;
        for wave in 0..4 {
            // A wave: the cap's worth admitted, the rest refused; the admitted are served.
            let admitted: Vec<_> = (0..500).filter_map(|_| a.try_enter()).collect();
            assert_eq!(admitted.len(), 50, "wave {wave}: the cap, and no more");
            drop(admitted);
            // The lull: the refused wait their second, the few others wait no time.
            refusal_seen = t + INTERVAL;
            for _ in 0..10 {
                t += INTERVAL;
                let one = a.try_enter();
                a.observe(ms(1), t);
                drop(one);
                assert_eq!(
                    a.cap(),
                    50,
                    "wave {wave}: a lull is not the end of the load"
                );
            }
        }
        // The last wave's refusals were seen at the end of the interval they fell in.
        t = refusal_seen + LIFT_AFTER - INTERVAL;
        a.observe(ms(1), t);
        assert_eq!(a.cap(), 50, "refused less than {LIFT_AFTER:?} ago");
        t += INTERVAL;
        a.observe(ms(1), t);
        assert!(!a.shedding(), "{LIFT_AFTER:?} with nobody refused: lifted");
    }

    /// Reads answered on the async worker wait for no pool: they end intervals without a wait
    /// of their own, so a cap is lifted when they are all the load left, and a queue that
    /// stands on the pool meanwhile still halves it.
    #[test]
    fn reads_on_the_worker_end_intervals_but_never_hide_a_standing_queue() {
        let a = Arc::new(Admission::new(Some(4096), Some(TARGET)));
        let t0 = Instant::now();
        a.tick(t0);
        a.tick(t0 + INTERVAL);
        assert!(!a.shedding(), "no cap, nothing to do");
        let held: Vec<_> = (0..100).filter_map(|_| a.try_enter()).collect();
        a.observe(ms(300), t0);
        a.observe(ms(300), t0 + INTERVAL);
        assert_eq!(a.cap(), 50);
        // A queue still standing on the pool, with reads on the worker all along.
        let mut t = t0 + INTERVAL;
        for _ in 0..3 {
            a.tick(t + ms(10));
            a.observe(ms(300), t + ms(20));
            t += INTERVAL;
            a.tick(t);
        }
        assert_eq!(a.cap(), FLOOR, "the reads' absence of waits hid nothing");
        assert!(a.try_enter().is_none(), "refused at the cap");
        drop(held);
        // Then only reads on the worker: the intervals they end lift the cap once nobody has
        // been refused for LIFT_AFTER.
        let refused_at = t + INTERVAL;
        while t < refused_at + LIFT_AFTER + INTERVAL {
            t += INTERVAL;
            a.tick(t);
        }
        assert!(!a.shedding(), "lifted by the reads' intervals alone");
    }

    /// Behind a standing queue (a cap in force), a request that has already waited longer than
    /// the target is refused at the start of its work, and counted as shed. The controls: the
    /// same wait with no cap in force (a burst draining) is served, and so is a request under
    /// the cap that waited no longer than the target, and the late one itself once the floor
    /// or fewer are in flight.
    #[test]
    fn behind_a_standing_queue_a_request_that_waited_past_the_target_is_refused() {
        let a = Arc::new(Admission::new(Some(4096), Some(TARGET)));
        let late = a.try_enter().unwrap();
        let past = late.admitted + TARGET + ms(1);
        assert!(!late.overdue(past), "no cap: served");
        assert_eq!(a.shed(), 0);
        let crowd: Vec<_> = (0..99).filter_map(|_| a.try_enter()).collect();
        let t0 = Instant::now();
        a.observe(ms(300), t0);
        a.observe(ms(300), t0 + INTERVAL);
        assert_eq!(a.cap(), 50);
        assert!(
            late.overdue(past),
            "waited past the target behind a standing queue"
        );
        assert_eq!(a.shed(), 1, "counted as shed");
        drop(crowd);
        let fresh = a.try_enter().expect("under the cap");
        assert!(
            !fresh.overdue(fresh.admitted + TARGET),
            "waited the target, no more"
        );
        assert_eq!(a.shed(), 1);
        assert!(a.shedding(), "the cap is still in force");
        assert!(
            !late.overdue(past),
            "two in flight, under the floor: no queue to shorten, served"
        );
        assert_eq!(a.shed(), 1);
    }

    /// A machine busy with other work makes a lone request's waits long with no queue at all:
    /// a cap may be set (at the floor, which the lone request is far under), but the request
    /// is served, not refused as overdue, and so it is with the floor's worth in flight. The
    /// control: the same waits with more than the floor in flight refuse the late one.
    #[test]
    fn a_lone_request_that_waited_long_on_a_busy_machine_is_served() {
        let a = Arc::new(Admission::new(Some(4096), Some(TARGET)));
        let t0 = Instant::now();
        let first = a.try_enter().unwrap();
        a.observe(ms(300), t0);
        drop(first);
        let lone = a.try_enter().unwrap();
        a.observe(ms(300), t0 + INTERVAL);
        assert_eq!(
            a.cap(),
            FLOOR,
            "an interval of long waits: capped, at the floor"
        );
        assert!(a.shedding());
        let late = lone.admitted + TARGET + ms(1);
        assert!(!lone.overdue(late), "alone: served");
        let crowd: Vec<_> = (0..FLOOR).filter_map(|_| a.try_enter()).collect();
        assert_eq!(crowd.len(), FLOOR - 1, "the cap admits up to the floor");
        assert!(
            !lone.overdue(late),
            "the floor in flight: still no queue past it"
        );
        assert_eq!(a.shed(), 1, "the one refused at the cap above");
        let b = Arc::new(Admission::new(Some(4096), Some(TARGET)));
        let many: Vec<_> = (0..=FLOOR).filter_map(|_| b.try_enter()).collect();
        b.observe(ms(300), t0);
        b.observe(ms(300), t0 + INTERVAL);
        assert!(b.shedding());
        assert!(
            many[0].overdue(many[0].admitted + TARGET + ms(1)),
            "more than the floor in flight: refused"
        );
    }

    /// A slot's waits are its time since admission less the time its work ran.
    #[test]
    fn a_slot_waits_all_but_its_work() {
        let a = Arc::new(Admission::new(None, Some(TARGET)));
        let mut slot = a.try_enter().unwrap();
        let admitted = slot.admitted;
        assert_eq!(slot.waited(admitted + ms(250)), ms(250));
        slot.worked(ms(100));
        slot.worked(ms(30));
        assert_eq!(slot.waited(admitted + ms(250)), ms(120));
        assert_eq!(
            slot.waited(admitted + ms(50)),
            Duration::ZERO,
            "never negative"
        );
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

    /// The sign-in queue is bounded to sixteen per slot, with no regard to waits, and counts
    /// its refusals with the database queue's.
    #[test]
    fn sign_ins_are_bounded_per_slot_and_share_the_count() {
        let database = Arc::new(Admission::new(Some(1), Some(TARGET)));
        let sign_ins = SignIns::new(2, &database);
        let queued: Vec<_> = (0..40).filter_map(|_| sign_ins.queue.try_enter()).collect();
        assert_eq!(queued.len(), 32, "2 slots × 16");
        assert!(!sign_ins.queue.shedding());
        let _db = database.try_enter();
        assert!(
            database.try_enter().is_none(),
            "the database queue's own limit"
        );
        assert_eq!(
            database.shed(),
            9,
            "8 sign-ins and 1 read, counted together"
        );
    }
}

/// Media transfers (uploads, deliveries) that may run at once, each on a transfer thread
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
    /// Slots free right now.
    #[cfg(test)]
    pub(crate) fn available(&self) -> usize {
        self.0.available_permits()
    }

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
