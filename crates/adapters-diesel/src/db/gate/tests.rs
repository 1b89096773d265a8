//! The group commit of the write gate, on a SQLite file database: what a batch commits, when
//! its members answer, and what they hear when one of them fails.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use diesel::prelude::*;

use super::super::tests::{sqlite_file, touch, touched};
use super::*;
use crate::db::{Database, Pools};
use crate::schema::organization;

pub(super) const LONG: Duration = Duration::from_secs(20);

/// Adds `n` to the organization row's `created_at` (which `touched` reads).
pub(super) fn add(conn: &mut SqliteConnection, n: i64) -> Result<usize, DbError> {
    Ok(diesel::update(organization::table)
        .set(organization::created_at.eq(organization::created_at + n))
        .execute(conn)?)
}

/// `work` as one member of a batch, as a contested grant runs.
pub(super) fn grouped<T>(
    db: &Database,
    work: impl FnOnce(&mut SqliteConnection) -> Result<T, DbError>,
) -> Result<T, DbError> {
    let Pools::Sqlite(pool) = db.pools() else {
        unreachable!("a SQLite database")
    };
    db.write_gate().grouped(pool, work)
}

/// Waits until `n` writers wait for the gate.
pub(super) fn until_queued(db: &Database, n: usize) {
    let start = Instant::now();
    while db.write_gate().queued() != n {
        assert!(start.elapsed() < LONG, "never {n} writers queued");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A member's work that says it runs, waits for `go`, then adds `n`.
pub(super) fn held(
    running: Sender<()>,
    go: Receiver<()>,
    n: i64,
) -> impl FnOnce(&mut SqliteConnection) -> Result<usize, DbError> {
    move |conn| {
        running.send(()).unwrap();
        // Bounded, so that a test that fails while this work waits ends instead of hanging.
        go.recv_timeout(LONG).unwrap();
        add(conn, n)
    }
}

/// How each writer of a test ended: its name, and whether it answered success.
type Ended = (&'static str, bool);

/// Runs grant `a` (adds 1) so that writer `b` runs next with `a`'s batch open: `a` runs and
/// waits, `b` queues behind it, `a` finishes and leaves its batch open, and `b` (a grant, or a
/// plain write) runs; `inside` is called while `b`'s work waits (for `b_go`) and returns the
/// endings it received. Returns how both ended.
fn a_then_b(
    db: &Database,
    b: impl FnOnce() -> Result<usize, DbError> + Send,
    b_running: &Receiver<()>,
    b_go: Sender<()>,
    inside: impl FnOnce(&Receiver<Ended>) -> Vec<Ended>,
) -> Vec<Ended> {
    let (a_running_tx, a_running) = channel();
    let (a_go_tx, a_go) = channel();
    let (ended_tx, ended) = channel();
    std::thread::scope(|s| {
        let e = ended_tx.clone();
        s.spawn(move || {
            let r = grouped(db, held(a_running_tx, a_go, 1));
            e.send(("a", r.is_ok())).unwrap();
        });
        a_running.recv_timeout(LONG).unwrap();
        s.spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(b));
            ended_tx.send(("b", matches!(r, Ok(Ok(_))))).unwrap();
        });
        until_queued(db, 1);
        a_go_tx.send(()).unwrap();
        b_running.recv_timeout(LONG).unwrap();
        let mut all = inside(&ended);
        b_go.send(()).unwrap();
        while all.len() < 2 {
            all.push(ended.recv_timeout(LONG).unwrap());
        }
        all.sort();
        all
    })
}

#[test]
fn a_grant_queued_behind_another_shares_its_commit_and_neither_answers_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let commits = db.write_gate().commits();
    let (b_running_tx, b_running) = channel();
    let (b_go_tx, b_go) = channel();
    let b = || grouped(&db, held(b_running_tx, b_go, 10));
    let ended = a_then_b(&db, b, &b_running, b_go_tx, |ended| {
        // `a`'s work is done; its writes wait for `b`'s, in the same transaction.
        assert!(
            ended.recv_timeout(Duration::from_millis(300)).is_err(),
            "a grant answered before the commit that holds its writes"
        );
        assert_eq!(
            touched(&db),
            start,
            "another connection saw uncommitted writes"
        );
        vec![]
    });
    assert_eq!(ended, [("a", true), ("b", true)]);
    assert_eq!(touched(&db), start + 11);
    assert_eq!(
        db.write_gate().commits() - commits,
        1,
        "one commit for both"
    );
}

#[test]
fn a_grant_that_fails_is_rolled_back_alone_and_the_one_before_it_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let (b_running_tx, b_running) = channel();
    let (b_go_tx, b_go) = channel();
    let failing = move |conn: &mut SqliteConnection| {
        held(b_running_tx, b_go, 10)(conn)?;
        Err::<usize, _>(DbError::Store(StoreError::Corrupt(
            "a test's failure".into(),
        )))
    };
    let ended = a_then_b(
        &db,
        || grouped(&db, failing),
        &b_running,
        b_go_tx,
        |_| vec![],
    );
    assert_eq!(ended, [("a", true), ("b", false)]);
    assert_eq!(
        touched(&db),
        start + 1,
        "only the grant that succeeded is stored"
    );
    // The gate serves the next grant.
    grouped(&db, |conn| add(conn, 100)).unwrap();
    assert_eq!(touched(&db), start + 101);
}

#[test]
fn a_grant_that_panics_takes_its_batch_with_it_and_the_others_hear_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let (b_running_tx, b_running) = channel();
    let (b_go_tx, b_go) = channel();
    let panicking = move |conn: &mut SqliteConnection| -> Result<usize, DbError> {
        held(b_running_tx, b_go, 10)(conn)?;
        panic!("a test's panic in a grant");
    };
    let b = || grouped(&db, panicking);
    let ended = a_then_b(&db, b, &b_running, b_go_tx, |_| vec![]);
    // `a` was not answered as stored: its writes went with the batch.
    assert_eq!(ended, [("a", false), ("b", false)]);
    assert_eq!(touched(&db), start);
    grouped(&db, |conn| add(conn, 100)).unwrap();
    assert_eq!(touched(&db), start + 100);
}

#[test]
fn a_batch_left_open_with_nobody_coming_is_committed_by_its_member() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let commits = db.write_gate().commits();
    // A writer counted as queued that never takes the gate (which `acquire` rules out: this
    // is the net under it): the member leaves its batch open.
    db.write_gate().pretend_queued(true);
    let (done_tx, done) = channel();
    let member = db.clone();
    std::thread::spawn(move || {
        let started = Instant::now();
        let r = grouped(&member, |conn| add(conn, 1));
        done_tx.send((r.is_ok(), started.elapsed())).unwrap();
    });
    let (ok, waited) = done
        .recv_timeout(LONG)
        .expect("the member waits forever for a commit nobody makes");
    db.write_gate().pretend_queued(false);
    assert!(ok);
    assert!(
        waited >= ORPHAN_CHECK,
        "the member committed at once ({waited:?}): the batch was never left open"
    );
    assert_eq!(touched(&db), start + 1);
    assert_eq!(db.write_gate().commits() - commits, 1);
}

#[test]
fn a_plain_write_commits_the_open_batch_before_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let start = touched(&db);
    let (b_running_tx, b_running) = channel();
    let (b_go_tx, b_go) = channel::<()>();
    // A plain transaction queued behind grant `a`: it takes the gate, commits `a`'s batch, then
    // writes on a connection of its own (had the batch stayed open, its `BEGIN IMMEDIATE` would
    // wait on SQLite's lock, held by the batch, and never get to run).
    let plain = &db;
    let b = move || -> Result<usize, DbError> {
        crate::macros::with_tx!(plain, conn => {
            b_running_tx.send(()).unwrap();
            b_go.recv_timeout(LONG).unwrap();
            Ok(diesel::update(organization::table)
                .set(organization::created_at.eq(organization::created_at + 1000))
                .execute(conn)?)
        })
    };
    let ended = a_then_b(&db, b, &b_running, b_go_tx, |ended| {
        let a = ended.recv_timeout(LONG).unwrap();
        assert_eq!(
            a,
            ("a", true),
            "the grant answered once its batch committed"
        );
        assert_eq!(touched(&db), start + 1);
        vec![a]
    });
    assert_eq!(ended, [("a", true), ("b", true)]);
    assert_eq!(touched(&db), start + 1001);
}

#[test]
fn grants_and_plain_writes_racing_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    touch(&db, 0).unwrap();
    let commits = db.write_gate().commits();
    const EACH: i64 = 150;
    std::thread::scope(|s| {
        // Grants running their work on their own threads, and grants queueing it for the
        // gate's holder (`queue`), in the same batches.
        for i in 0..6 {
            let db = &db;
            s.spawn(move || {
                let Pools::Sqlite(pool) = db.pools() else {
                    unreachable!("a SQLite database")
                };
                for _ in 0..EACH {
                    if i % 2 == 0 {
                        grouped(db, |conn| add(conn, 1)).unwrap();
                    } else {
                        db.write_gate().queue(pool, |conn| add(conn, 1)).unwrap();
                    }
                }
            });
        }
        // Plain transactions between them, each committing any batch it finds open.
        s.spawn(|| {
            for _ in 0..EACH {
                let r: Result<usize, DbError> = crate::macros::with_tx!(db, conn => {
                    Ok(diesel::update(organization::table)
                        .set(organization::created_at.eq(organization::created_at + 1000))
                        .execute(conn)?)
                });
                r.unwrap();
            }
        });
    });
    assert_eq!(touched(&db), 6 * EACH + 1000 * EACH);
    let batches = db.write_gate().commits() - commits;
    eprintln!("{} grants in {batches} batches", 6 * EACH);
}

#[test]
fn on_a_memory_database_every_grant_commits_alone() {
    let db = Database::connect("sqlite::memory:", &crate::db::PoolOptions::default()).unwrap();
    db.migrate(&mut |_| {}).unwrap();
    db.ensure_namespace([7; 16]).unwrap();
    let start = touched(&db);
    // Even with a writer queued, the one connection is not kept in an open batch. (The
    // pretended writer never takes the gate handed to it; taking it out of line lets it go.)
    let Pools::Sqlite(pool) = db.pools() else {
        unreachable!("a SQLite database")
    };
    let gate = db.write_gate();
    gate.pretend_queued(true);
    let started = Instant::now();
    grouped(&db, |conn| add(conn, 1)).unwrap();
    let grouped_waited = started.elapsed();
    gate.pretend_queued(false);
    gate.pretend_queued(true);
    let started = Instant::now();
    gate.queue(pool, |conn| add(conn, 10)).unwrap();
    let queued_waited = started.elapsed();
    gate.pretend_queued(false);
    for waited in [grouped_waited, queued_waited] {
        assert!(waited < ORPHAN_CHECK, "waited {waited:?} for a batch");
    }
    assert_eq!(touched(&db), start + 11);
}

/// A writer that lets the gate go and comes straight back, over and over (as a stream of
/// writes back to back does), queues behind the writer waiting instead of taking the gate
/// again before that one has woken: otherwise a quiet machine, where coming back takes a
/// microsecond and waking a few tens, kept a waiter out for as long as the stream lasted (the
/// checkpoint thread, whose WAL then never started over). Only a writer that took the gate
/// just before the other lined up can find it waiting as its turn begins: at most once a try.
#[test]
fn a_writer_coming_straight_back_queues_behind_the_one_waiting() {
    const TRIES: u64 = 50;
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), LONG);
    let gate = db.write_gate();
    let turns = AtomicU64::new(0);
    let cut_in = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let mut longest = Duration::ZERO;
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _turn = gate.enter().unwrap();
                if gate.queued() > 0 {
                    cut_in.fetch_add(1, Ordering::Relaxed);
                }
                turns.fetch_add(1, Ordering::Relaxed);
                let began = Instant::now();
                while began.elapsed() < Duration::from_micros(20) {
                    std::hint::spin_loop();
                }
            }
        });
        let start = Instant::now();
        while turns.load(Ordering::Relaxed) < 10 {
            assert!(start.elapsed() < LONG, "the looping writer never ran");
            std::thread::sleep(Duration::from_millis(1));
        }
        for _ in 0..TRIES {
            let asked = Instant::now();
            let turn = gate.enter().unwrap();
            longest = longest.max(asked.elapsed());
            drop(turn);
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let cut_in = cut_in.into_inner();
    assert!(
        cut_in <= TRIES,
        "the looping writer began {cut_in} turns while the other waited \
         ({TRIES} tries, the longest waited {longest:?})"
    );
}
