//! Grants queued on the write gate (`WriteGate::queue`): run by the thread that holds the gate,
//! in its batch, and answered only once that batch committed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use diesel::prelude::*;

use super::super::tests::{sqlite_file, touched};
use super::tests::{LONG, add, grouped, held, until_queued};
use super::*;
use crate::db::{Database, Pools};
use crate::schema::organization;

/// A queued grant's work, in a test.
type Work = Box<dyn FnOnce(&mut SqliteConnection) -> Result<usize, DbError> + Send>;

/// `work` queued on the gate, as the code and refresh grants run.
fn queued<T: Send + 'static>(
    db: &Database,
    work: impl FnOnce(&mut SqliteConnection) -> Result<T, DbError> + Send + 'static,
) -> Result<T, DbError> {
    let Pools::Sqlite(pool) = db.pools() else {
        unreachable!("a SQLite database")
    };
    db.write_gate().queue(pool, work)
}

/// Work that tells `ran` which thread ran it, then adds `n`.
fn adds_on(
    ran: Sender<ThreadId>,
    n: i64,
) -> impl FnOnce(&mut SqliteConnection) -> Result<usize, DbError> + Send + 'static {
    move |conn| {
        ran.send(std::thread::current().id()).unwrap();
        add(conn, n)
    }
}

/// Waits until `n` jobs are queued on the gate.
fn until_jobs(db: &Database, n: usize) {
    let start = Instant::now();
    while db.write_gate().jobs() != n {
        assert!(start.elapsed() < LONG, "never {n} jobs queued");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs grant `a` (adds 1, on its own thread, through `grouped`), holding the gate until
/// `jobs` (each added to the queue in order, from a thread of its own, once the one before is
/// queued) are all queued; then lets `a` finish. Returns `a`'s thread, whether `a` answered
/// success, and each job's answer in order.
fn jobs_behind_a(db: &Database, jobs: Vec<Work>) -> (ThreadId, bool, Vec<Result<usize, DbError>>) {
    let (a_running_tx, a_running) = channel();
    let (a_go_tx, a_go) = channel();
    std::thread::scope(|s| {
        let a = s.spawn(move || {
            let ok = grouped(db, held(a_running_tx, a_go, 1)).is_ok();
            (std::thread::current().id(), ok)
        });
        a_running.recv_timeout(LONG).unwrap();
        let mut answers = Vec::new();
        for (i, job) in jobs.into_iter().enumerate() {
            let job_db = db.clone();
            answers.push(s.spawn(move || {
                // As a request's handler queues its grant, in the request's span.
                let _request = tracing::info_span!("request", job = i).entered();
                queued(&job_db, job)
            }));
            until_jobs(db, i + 1);
        }
        a_go_tx.send(()).unwrap();
        let (a_thread, a_ok) = a.join().unwrap();
        let answers = answers.into_iter().map(|j| j.join().unwrap()).collect();
        (a_thread, a_ok, answers)
    })
}

#[test]
fn grants_queued_behind_a_writer_run_on_its_thread_and_share_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let commits = db.write_gate().commits();
    let (ran_tx, ran) = channel();
    let jobs = (0..5)
        .map(|_| Box::new(adds_on(ran_tx.clone(), 10)) as Box<_>)
        .collect();
    let (a_thread, a_ok, answers) = jobs_behind_a(&db, jobs);
    assert!(a_ok);
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    let threads: Vec<ThreadId> = ran.try_iter().collect();
    assert_eq!(threads, [a_thread; 5], "run by the writer holding the gate");
    assert_eq!(touched(&db), start + 51);
    assert_eq!(db.write_gate().commits() - commits, 1, "one commit for all");
    assert_eq!(db.write_gate().jobs(), 0);

    // Positive control: a grant that finds the gate free runs its work on its own thread.
    let (ran_tx, ran) = channel();
    let own = std::thread::spawn({
        let db = db.clone();
        move || {
            (
                queued(&db, adds_on(ran_tx, 1)).is_ok(),
                std::thread::current().id(),
            )
        }
    })
    .join()
    .unwrap();
    assert_eq!((true, own.1), (own.0, ran.recv().unwrap()));
}

#[test]
fn queued_work_logs_under_the_span_of_the_request_that_queued_it() {
    // Spans have ids only under a subscriber; a registry with no layers records nothing else.
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let (seen_tx, seen) = channel();
    let jobs = (0..3)
        .map(|_| {
            let seen_tx = seen_tx.clone();
            Box::new(move |conn: &mut SqliteConnection| {
                let span = tracing::Span::current();
                seen_tx
                    .send((std::thread::current().id(), span.id()))
                    .unwrap();
                add(conn, 1)
            }) as Work
        })
        .collect();
    let (a_thread, a_ok, answers) = jobs_behind_a(&db, jobs);
    assert!(a_ok && answers.iter().all(Result::is_ok), "{answers:?}");
    let seen: Vec<_> = seen.try_iter().collect();
    assert_eq!(seen.len(), 3);
    for (thread, span) in &seen {
        // Run by the holder, whose own span (none here) is not theirs.
        assert_eq!(*thread, a_thread);
        assert!(span.is_some(), "queued work ran outside its request's span");
    }
    // Each job ran in its own request's span, the one `jobs_behind_a` queued it in.
    let spans: std::collections::HashSet<_> = seen.iter().map(|(_, s)| s.clone()).collect();
    assert_eq!(spans.len(), 3);
}

#[test]
fn a_queued_grant_is_not_answered_before_the_commit_that_holds_its_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    // `a` runs a queued job into its batch, then leaves the batch open for grant `b`,
    // queued for the gate on its own thread, whose work waits: the job's writes are not
    // committed yet, and it must not answer.
    let (a_running_tx, a_running) = channel();
    let (a_go_tx, a_go) = channel();
    let (b_running_tx, b_running) = channel();
    let (b_go_tx, b_go) = channel();
    let (ended_tx, ended) = channel();
    std::thread::scope(|s| {
        s.spawn(|| grouped(&db, held(a_running_tx, a_go, 1)).unwrap());
        a_running.recv_timeout(LONG).unwrap();
        let e = ended_tx.clone();
        let job_db = db.clone();
        s.spawn(move || e.send(("job", queued(&job_db, |conn| add(conn, 10)).is_ok())));
        until_jobs(&db, 1);
        s.spawn(|| {
            let ok = grouped(&db, held(b_running_tx, b_go, 100)).is_ok();
            ended_tx.send(("b", ok)).unwrap();
        });
        until_queued(&db, 1);
        a_go_tx.send(()).unwrap();
        b_running.recv_timeout(LONG).unwrap();
        assert!(
            ended.recv_timeout(Duration::from_millis(300)).is_err(),
            "the queued grant answered before its batch committed"
        );
        assert_eq!(
            touched(&db),
            start,
            "another connection saw uncommitted writes"
        );
        b_go_tx.send(()).unwrap();
    });
    let mut all: Vec<_> = ended.try_iter().collect();
    all.sort();
    assert_eq!(all, [("b", true), ("job", true)]);
    assert_eq!(touched(&db), start + 111);
}

#[test]
fn a_queued_grant_that_fails_is_rolled_back_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let commits = db.write_gate().commits();
    let failing = |conn: &mut SqliteConnection| {
        add(conn, 100)?;
        Err::<usize, _>(DbError::Store(StoreError::Corrupt(
            "a test's failure".into(),
        )))
    };
    let jobs: Vec<Work> = vec![
        Box::new(|conn| add(conn, 10)),
        Box::new(failing),
        Box::new(|conn| add(conn, 1000)),
    ];
    let (_, a_ok, answers) = jobs_behind_a(&db, jobs);
    assert!(a_ok);
    assert!(answers[0].is_ok() && answers[2].is_ok(), "{answers:?}");
    assert!(
        matches!(answers[1], Err(DbError::Store(StoreError::Corrupt(_)))),
        "the failing grant hears its own error: {:?}",
        answers[1]
    );
    assert_eq!(
        touched(&db),
        start + 1011,
        "all but the failed grant stored"
    );
    // The failure ended the batch: the grant after it went into the next.
    assert_eq!(db.write_gate().commits() - commits, 2);
}

#[test]
fn a_queued_grant_that_panics_takes_its_batch_and_the_writer_running_it_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let panicking = |conn: &mut SqliteConnection| -> Result<usize, DbError> {
        add(conn, 100)?;
        panic!("a test's panic in a queued grant");
    };
    let jobs: Vec<Work> = vec![
        Box::new(|conn| add(conn, 10)),
        Box::new(panicking),
        Box::new(|conn| add(conn, 1000)),
    ];
    // `a` ran the panicking work: it answers (an error), its thread does not unwind.
    let (_, a_ok, answers) = jobs_behind_a(&db, jobs);
    assert!(!a_ok, "a's writes went with the batch");
    assert!(answers[0].is_err() && answers[1].is_err(), "{answers:?}");
    assert!(
        answers[2].is_ok(),
        "the grant after it, in a new batch: {answers:?}"
    );
    assert_eq!(touched(&db), start + 1000);
}

#[test]
fn a_grant_still_queued_past_the_timeout_is_withdrawn_unrun() {
    let dir = tempfile::tempdir().unwrap();
    let wait = Duration::from_millis(300);
    let db = sqlite_file(dir.path(), wait);
    let start = touched(&db);
    let ran = Arc::new(AtomicBool::new(false));
    let (running_tx, running) = channel();
    let (go_tx, go) = channel::<()>();
    std::thread::scope(|s| {
        // A plain transaction holds the gate well past the timeout.
        let db = &db;
        s.spawn(move || {
            let r: Result<usize, DbError> = crate::macros::with_tx!(db, conn => {
                running_tx.send(()).unwrap();
                go.recv_timeout(LONG).unwrap();
                Ok(diesel::update(organization::table)
                    .set(organization::created_at.eq(organization::created_at + 1))
                    .execute(conn)?)
            });
            r.unwrap();
        });
        running.recv_timeout(LONG).unwrap();
        let started = Instant::now();
        let flag = Arc::clone(&ran);
        let r = queued(db, move |conn| {
            flag.store(true, Ordering::SeqCst);
            add(conn, 10)
        });
        let waited = started.elapsed();
        assert!(matches!(r, Err(DbError::Pool(_))), "{r:?}");
        assert!(waited >= wait, "gave up after {waited:?}");
        assert_eq!(db.write_gate().jobs(), 0, "taken off the queue");
        go_tx.send(()).unwrap();
    });
    assert!(!ran.load(Ordering::SeqCst), "the withdrawn grant ran");
    assert_eq!(touched(&db), start + 1);
}

#[test]
fn past_a_full_batch_the_gate_goes_to_the_next_queued_grant() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let commits = db.write_gate().commits();
    let (ran_tx, ran) = channel();
    let n = BATCH_LIMIT + 8;
    let jobs = (0..n)
        .map(|_| Box::new(adds_on(ran_tx.clone(), 1)) as Box<_>)
        .collect();
    let (a_thread, a_ok, answers) = jobs_behind_a(&db, jobs);
    assert!(a_ok && answers.iter().all(Result::is_ok), "{answers:?}");
    let threads: Vec<ThreadId> = ran.try_iter().collect();
    // `a` and the first BATCH_LIMIT - 1 jobs fill a batch; the job after them gets the gate
    // and runs itself and the rest.
    let (first, rest) = threads.split_at(BATCH_LIMIT - 1);
    assert!(first.iter().all(|t| *t == a_thread), "{threads:?}");
    assert!(
        rest.iter().all(|t| *t == rest[0] && *t != a_thread),
        "{threads:?}"
    );
    assert_eq!(touched(&db), start + 1 + n as i64);
    assert_eq!(db.write_gate().commits() - commits, 2);
}
