//! The `JobRepository` contract (crates/ports/src/jobs.rs): every case runs, unchanged, against
//! SQLite, PostgreSQL (a throwaway database per test on 127.0.0.1:5432) and the in-memory store
//! (`jobs_contract::{sqlite,postgres,memory}::*`), straight on the port, on the bench of the
//! uploads contract (`uploads_contract::Bench`): jobs are queued by finished uploads, so the two
//! ports are one contract.
//!
//! Where a case asserts that a write changes nothing (a stale ticket, a superseded attempt), the
//! same case also shows the same write changing something with a ticket that is good, so that
//! "nothing changed" cannot pass because the write never worked at all.

use std::sync::Barrier;

use medialib_domain::media::MediaState;
use medialib_domain::media::StorageKey;
use medialib_domain::media::derived::{DerivedDir, DerivedFile, DerivedPath, DerivedSet, FileRole};
use medialib_domain::media::probe::{Dimensions, MediaDuration};
use medialib_domain::{ObjectId, ObjectType, Since};
use medialib_ports::{
    ClaimRequest, ClaimedJob, Finish, JobCounts, JobEnd, JobEnded, JobTicket, MediaRecord, Members,
    NewMedia,
};

use crate::uploads_contract::{Bench, T0, at, locked, ready};

/// How long the claims of these cases hold a job.
const LEASE: i64 = 60;

/// The media record of a finished upload of a video at `modified`: waiting for processing.
fn queued(object: ObjectId, modified: i64) -> MediaRecord {
    MediaRecord {
        state: MediaState::Queued,
        progress: 0,
        error: None,
        attempts: 0,
        ..ready(object, 1000, modified)
    }
}

/// A video in the library whose upload finished at `when`: its media is queued, and so is its
/// job, due then.
fn uploaded(b: &Bench, when: i64) -> ObjectId {
    let id = b.started(1000, when + 3600).object;
    finish_again(b, id, &queued(id, when));
    id
}

/// Finishes a (new) upload of `id` with `media`.
fn finish_again(b: &Bench, id: ObjectId, media: &MediaRecord) {
    if b.store.upload(id).unwrap().is_none() {
        b.store
            .replace_upload(&b.record(id, 1000, media.modified.epoch_seconds() + 3600))
            .unwrap();
    }
    let now = media.modified.epoch_seconds();
    assert!(locked(&b.lock(id, "uploader", now + 60, now)));
    let finished = b.store.finish_upload(id, "uploader", media).unwrap();
    assert!(matches!(finished, Finish::Finished(_)), "{finished:?}");
}

/// Attempt directory number `n`.
fn dir(n: u32) -> DerivedDir {
    DerivedDir::parse(&format!("{n:08x}")).unwrap()
}

/// `holder` asks for a job at `now`, for a lease of [`LEASE`] seconds, writing to `dir`.
fn claim(b: &Bench, holder: &str, now: i64, dir: &DerivedDir) -> Option<ClaimedJob> {
    b.store
        .claim_job(ClaimRequest {
            holder,
            now: at(now),
            until: at(now + LEASE),
            dir,
        })
        .unwrap()
}

fn end(b: &Bench, ticket: &JobTicket, how: JobEnd<'_>, now: i64) -> JobEnded {
    b.store.end_job(ticket.clone(), how, at(now)).unwrap()
}

/// Extends `ticket`'s lease to `until`, asked at T0 (before any lease of these cases ends).
fn extend(b: &Bench, ticket: &JobTicket, until: i64, progress: u8) -> bool {
    extend_at(b, ticket, T0, until, progress)
}

fn extend_at(b: &Bench, ticket: &JobTicket, now: i64, until: i64, progress: u8) -> bool {
    b.store
        .extend_job(ticket.clone(), at(now), at(until), progress)
        .unwrap()
}

fn counts(b: &Bench, now: i64) -> JobCounts {
    b.store.job_counts(at(now)).unwrap()
}

fn media(b: &Bench, id: ObjectId) -> MediaRecord {
    b.store.media(id).unwrap().unwrap()
}

/// Two derived files in `dir`, of a source `millis` long.
fn set_in(dir: &DerivedDir, millis: u64) -> DerivedSet {
    DerivedSet::new(
        dir.clone(),
        vec![
            DerivedFile {
                role: FileRole::Rendition,
                path: DerivedPath::parse("mp4/360p.mp4").unwrap(),
                size: 1234,
                dimensions: Dimensions::new(640, 360),
                bitrate: Some(928_000),
            },
            DerivedFile {
                role: FileRole::Still,
                path: DerivedPath::parse("stills/128x128.jpg").unwrap(),
                size: 99,
                dimensions: Dimensions::new(128, 128),
                bitrate: None,
            },
        ],
        Some(MediaDuration::from_millis(millis)),
    )
    .unwrap()
}

/// Every way to end an attempt: what a ticket that is no longer the job's must not do.
fn every_end(set: &DerivedSet) -> [JobEnd<'_>; 4] {
    [
        JobEnd::Ready(set),
        JobEnd::Retry {
            error: "late retry",
            at: at(T0),
        },
        JobEnd::Released,
        JobEnd::Failed {
            error: "late failure",
        },
    ]
}

/// The members of the library changed at or after `secs` (what a catalog synchronised by time
/// asks for).
fn changed_since(b: &Bench, secs: i64) -> Vec<ObjectId> {
    b.store
        .list_members(Members {
            collection: b.library,
            since: Some(Since::parse(&secs.to_string()).unwrap()),
            page: None,
        })
        .unwrap()
        .into_iter()
        .map(|item| item.object.id())
        .collect()
}

mod cases {
    use super::*;

    pub fn a_finished_upload_queues_a_job_only_when_its_media_waits_for_processing(b: &Bench) {
        // Media that needs no processing (a file's) is ready when its upload finishes: no job,
        // whether the upload was resumable or one-shot.
        let file = b.started(1000, T0 + 3600).object;
        finish_again(b, file, &ready(file, 1000, T0));
        let one_shot = b.object(ObjectType::File);
        b.store
            .create_with_media(
                &one_shot,
                b.library,
                NewMedia::Stored(&ready(one_shot.id(), 10, T0)),
            )
            .unwrap();
        assert_eq!(counts(b, T0), JobCounts::default());
        assert!(claim(b, "w1", T0 + 10, &dir(1)).is_none());

        // Queued media: a job each, due when the media was stored.
        let video = uploaded(b, T0 + 1);
        let one_shot = b.object(ObjectType::Video);
        b.store
            .create_with_media(
                &one_shot,
                b.library,
                NewMedia::Stored(&queued(one_shot.id(), T0 + 2)),
            )
            .unwrap();
        assert_eq!(
            counts(b, T0 + 2),
            JobCounts {
                waiting: 2,
                running: 0
            }
        );
        let first = claim(b, "w1", T0 + 10, &dir(2)).unwrap();
        let second = claim(b, "w1", T0 + 10, &dir(3)).unwrap();
        assert_eq!(
            [first.ticket.object, second.ticket.object],
            [video, one_shot.id()]
        );
        assert!(claim(b, "w1", T0 + 10, &dir(4)).is_none());
    }

    pub fn a_claim_takes_the_due_job_queued_longest_and_marks_its_media_processing(b: &Bench) {
        let later = uploaded(b, T0 + 10);
        let earliest = uploaded(b, T0 + 5);
        let future = uploaded(b, T0 + 20);
        assert!(claim(b, "w1", T0 + 4, &dir(1)).is_none(), "nothing is due");

        let job = claim(b, "w1", T0 + 15, &dir(1)).unwrap();
        assert_eq!(job.ticket.object, earliest);
        assert_eq!(job.attempt, 1);
        assert_eq!(job.object_type, ObjectType::Video);
        assert_eq!(job.stale_dir, None);
        let processing = MediaRecord {
            state: MediaState::Processing,
            attempts: 1,
            modified: at(T0 + 15),
            ..queued(earliest, T0 + 5)
        };
        assert_eq!(job.media, processing);
        assert_eq!(media(b, earliest), processing);
        assert_eq!(media(b, later).state, MediaState::Queued);

        assert_eq!(
            claim(b, "w2", T0 + 15, &dir(2)).unwrap().ticket.object,
            later
        );
        assert!(
            claim(b, "w3", T0 + 15, &dir(3)).is_none(),
            "two are held, the third is not due"
        );
        assert_eq!(
            claim(b, "w3", T0 + 20, &dir(3)).unwrap().ticket.object,
            future
        );

        // Due at the same time: by object id.
        let mut same = [uploaded(b, T0 + 30), uploaded(b, T0 + 30)];
        same.sort_by_key(ObjectId::to_string);
        let taken = [
            claim(b, "w1", T0 + 30, &dir(4)).unwrap().ticket.object,
            claim(b, "w1", T0 + 30, &dir(5)).unwrap().ticket.object,
        ];
        assert_eq!(taken, same);
    }

    pub fn a_held_job_is_taken_again_only_once_its_lease_ended(b: &Bench) {
        let id = uploaded(b, T0);
        let first = claim(b, "w1", T0, &dir(1)).unwrap();
        assert!(claim(b, "w2", T0 + 30, &dir(2)).is_none());
        assert!(
            claim(b, "w2", T0 + LEASE, &dir(2)).is_none(),
            "the lease lasts through its last second"
        );

        // w1 died: w2 takes the job, with one attempt more, a new generation, and w1's
        // directory to clean.
        let second = claim(b, "w2", T0 + LEASE + 1, &dir(2)).unwrap();
        assert_eq!(second.ticket.object, id);
        assert_eq!(second.ticket.generation, first.ticket.generation + 1);
        assert_eq!(second.attempt, 2);
        assert_eq!(second.stale_dir, Some(dir(1)));
        assert_eq!(second.media.attempts, 2);
        assert_eq!(media(b, id), second.media);

        // w1's ticket is spent: it neither extends nor ends anything.
        assert!(!extend(b, &first.ticket, T0 + 500, 50));
        let set = set_in(&dir(1), 1000);
        for how in every_end(&set) {
            assert_eq!(
                end(b, &first.ticket, how, T0 + 62),
                JobEnded::Superseded,
                "{how:?}"
            );
        }
        assert_eq!(media(b, id), second.media);
        // w2's does (the positive control).
        assert!(extend(b, &second.ticket, T0 + 500, 50));
        assert_eq!(media(b, id).progress, 50);

        // A claimer that writes where the dead attempt wrote has nothing to clean.
        let third = claim(b, "w3", T0 + 501, &dir(2)).unwrap();
        assert_eq!((third.attempt, third.stale_dir), (3, None));
    }

    pub fn of_racing_claimers_each_job_goes_to_exactly_one(b: &Bench) {
        const RACERS: u32 = 4;
        for round in 0..5 {
            // Two jobs per round; those of earlier rounds are held (leases until T0 + 61).
            let mut queued = vec![uploaded(b, T0), uploaded(b, T0)];
            let barrier = Barrier::new(RACERS as usize);
            let mut won: Vec<ObjectId> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..RACERS)
                    .map(|i| {
                        let barrier = &barrier;
                        s.spawn(move || {
                            let holder = format!("racer-{round}-{i}");
                            let dir = dir(round * RACERS + i + 1);
                            barrier.wait();
                            claim(b, &holder, T0 + 1, &dir)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .filter_map(|h| h.join().unwrap())
                    .map(|job| job.ticket.object)
                    .collect()
            });
            won.sort_by_key(ObjectId::to_string);
            queued.sort_by_key(ObjectId::to_string);
            assert_eq!(won, queued, "round {round}");
        }
    }

    pub fn a_lease_that_ended_is_not_extended(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        // Positive control: asked while the lease runs (at its last second), it is extended.
        assert!(extend_at(b, &job.ticket, T0 + LEASE, T0 + LEASE + 30, 20));
        assert_eq!(media(b, id).progress, 20);
        // Asked after that lease ended, even with nobody else holding the job: refused, and
        // nothing written.
        assert!(!extend_at(b, &job.ticket, T0 + LEASE + 31, T0 + 500, 50));
        assert_eq!(media(b, id).progress, 20);
        let next = claim(b, "w2", T0 + LEASE + 31, &dir(2)).expect("the job is free");
        assert_eq!(next.attempt, 2);
    }

    pub fn only_the_claimed_ticket_extends_the_lease_and_records_progress(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        let t = job.ticket;
        // The ticket's own extension holds the job past the first lease.
        assert!(extend(b, &t, T0 + 120, 40));
        assert_eq!(media(b, id).progress, 40);
        assert!(claim(b, "w2", T0 + 100, &dir(2)).is_none());

        // Tickets of other generations, directories or objects write nothing: no progress, no
        // lease.
        let stale = [
            JobTicket {
                generation: t.generation.wrapping_sub(1),
                ..t.clone()
            },
            JobTicket {
                generation: t.generation + 1,
                ..t.clone()
            },
            JobTicket {
                dir: dir(99),
                ..t.clone()
            },
            JobTicket {
                object: b.object(ObjectType::Video).id(),
                ..t.clone()
            },
        ];
        for ticket in stale {
            assert!(!extend(b, &ticket, T0 + 1000, 70), "{ticket:?}");
        }
        let before = media(b, id);
        assert_eq!(
            (before.progress, before.state),
            (40, MediaState::Processing)
        );
        let next = claim(b, "w2", T0 + 121, &dir(2)).unwrap();
        assert_eq!(next.attempt, 2, "the lease ended at T0 + 120");

        // Progress stays below 100 until the job is done.
        assert!(extend(b, &next.ticket, T0 + 200, 150));
        assert_eq!(media(b, id).progress, 99);
        assert_eq!(
            end(
                b,
                &next.ticket,
                JobEnd::Ready(&set_in(&dir(2), 1000)),
                T0 + 130
            ),
            JobEnded::Ended(None)
        );
        assert!(!extend(b, &next.ticket, T0 + 300, 10), "the job is done");
        assert_eq!(media(b, id).progress, 100);
    }

    pub fn ending_ready_records_the_files_the_duration_and_the_change(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0 + 100, &dir(1)).unwrap();
        assert!(extend(b, &job.ticket, T0 + 160, 55));
        assert!(
            !changed_since(b, T0 + 150).contains(&id),
            "claims and progress are no change a catalog lists"
        );

        let set = set_in(&dir(1), 61_500);
        assert_eq!(
            end(b, &job.ticket, JobEnd::Ready(&set), T0 + 200),
            JobEnded::Ended(None)
        );
        assert_eq!(
            media(b, id),
            MediaRecord {
                state: MediaState::Ready,
                progress: 100,
                error: None,
                attempts: 1,
                derived: Some(set.clone()),
                modified: at(T0 + 200),
                ..queued(id, T0)
            }
        );
        let object = b.store.object(id).unwrap().unwrap();
        assert_eq!(
            object.fields().duration.map(|d| d.seconds()),
            Some(62),
            "61.5 s"
        );
        assert_eq!(object.modified(), at(T0 + 200));
        assert!(changed_since(b, T0 + 200).contains(&id));
        assert!(!changed_since(b, T0 + 201).contains(&id));

        // The job is done: out of the queue, its ticket spent.
        assert_eq!(counts(b, T0 + 200), JobCounts::default());
        assert!(claim(b, "w2", T0 + 1000, &dir(2)).is_none());
        assert_eq!(
            end(b, &job.ticket, JobEnd::Ready(&set), T0 + 201),
            JobEnded::Superseded
        );

        // Processed again, the new files replace the old ones, which are handed back.
        assert!(b.store.requeue(id, at(T0 + 300)).unwrap().is_some());
        let again = claim(b, "w2", T0 + 300, &dir(2)).unwrap();
        let newer = set_in(&dir(2), 30_000);
        assert_eq!(
            end(b, &again.ticket, JobEnd::Ready(&newer), T0 + 400),
            JobEnded::Ended(Some(set))
        );
        assert_eq!(media(b, id).derived, Some(newer));
        let object = b.store.object(id).unwrap().unwrap();
        assert_eq!(object.fields().duration.map(|d| d.seconds()), Some(30));
        assert_eq!(object.modified(), at(T0 + 400));
    }

    pub fn a_retry_queues_the_media_with_its_error_until_the_job_is_due_again(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        assert!(extend(b, &job.ticket, T0 + LEASE, 30));
        let error = "ffmpeg failed: exit status 1";
        assert_eq!(
            end(
                b,
                &job.ticket,
                JobEnd::Retry {
                    error,
                    at: at(T0 + 90)
                },
                T0 + 30
            ),
            JobEnded::Ended(None)
        );
        assert_eq!(
            media(b, id),
            MediaRecord {
                error: Some(error.into()),
                attempts: 1,
                modified: at(T0 + 30),
                ..queued(id, T0)
            }
        );
        assert_eq!(
            counts(b, T0 + 30),
            JobCounts {
                waiting: 1,
                running: 0
            }
        );
        assert!(
            claim(b, "w2", T0 + 89, &dir(2)).is_none(),
            "not before `at`"
        );
        let again = claim(b, "w2", T0 + 90, &dir(2)).unwrap();
        assert_eq!((again.attempt, again.media.attempts), (2, 2));
        assert_eq!(again.stale_dir, Some(dir(1)));
        assert!(
            !extend(b, &job.ticket, T0 + 200, 1),
            "the retried ticket is spent"
        );
    }

    pub fn a_released_job_is_due_at_once_and_its_attempt_is_not_counted(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        assert!(extend(b, &job.ticket, T0 + LEASE, 42));
        assert_eq!(
            end(b, &job.ticket, JobEnd::Released, T0 + 10),
            JobEnded::Ended(None)
        );
        assert_eq!(
            media(b, id),
            MediaRecord {
                modified: at(T0 + 10),
                ..queued(id, T0)
            }
        );
        assert_eq!(
            counts(b, T0 + 10),
            JobCounts {
                waiting: 1,
                running: 0
            }
        );
        let again = claim(b, "w2", T0 + 10, &dir(2)).unwrap();
        assert_eq!(
            (again.attempt, again.media.attempts),
            (1, 1),
            "the released attempt does not count"
        );
        // The positive control: an attempt whose worker died does.
        let third = claim(b, "w3", T0 + 10 + LEASE + 1, &dir(3)).unwrap();
        assert_eq!((third.attempt, third.media.attempts), (2, 2));
    }

    pub fn a_failed_job_clears_the_derived_files_and_hands_them_back(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        let refused = "This file is text, not a video.";
        assert_eq!(
            end(b, &job.ticket, JobEnd::Failed { error: refused }, T0 + 5),
            JobEnded::Ended(None)
        );
        assert_eq!(
            media(b, id),
            MediaRecord {
                state: MediaState::Failed,
                error: Some(refused.into()),
                attempts: 1,
                modified: at(T0 + 5),
                ..queued(id, T0)
            }
        );
        assert_eq!(counts(b, T0 + 5), JobCounts::default());
        assert!(claim(b, "w1", T0 + 5, &dir(2)).is_none());

        // Processed, then failing when processed again: the files go, handed back.
        b.store.requeue(id, at(T0 + 10)).unwrap().unwrap();
        let job = claim(b, "w1", T0 + 10, &dir(2)).unwrap();
        let set = set_in(&dir(2), 1000);
        end(b, &job.ticket, JobEnd::Ready(&set), T0 + 11);
        b.store.requeue(id, at(T0 + 20)).unwrap().unwrap();
        assert_eq!(media(b, id).derived, Some(set.clone()), "kept while queued");
        let job = claim(b, "w1", T0 + 20, &dir(3)).unwrap();
        let gave_up = "Processing failed 3 times; the last error: ffmpeg failed";
        assert_eq!(
            end(b, &job.ticket, JobEnd::Failed { error: gave_up }, T0 + 30),
            JobEnded::Ended(Some(set))
        );
        let failed = media(b, id);
        assert_eq!(
            (failed.state, failed.error.as_deref(), failed.derived),
            (MediaState::Failed, Some(gave_up), None)
        );
    }

    pub fn a_requeue_supersedes_the_running_attempt(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        assert!(
            extend(b, &job.ticket, T0 + LEASE, 20),
            "good until the requeue"
        );
        let requeued = b.store.requeue(id, at(T0 + 5)).unwrap().unwrap();

        assert!(!extend(b, &job.ticket, T0 + LEASE, 50));
        let set = set_in(&dir(1), 1000);
        for how in every_end(&set) {
            assert_eq!(
                end(b, &job.ticket, how, T0 + 6),
                JobEnded::Superseded,
                "{how:?}"
            );
        }
        assert_eq!(media(b, id), requeued);
        assert_eq!(
            counts(b, T0 + 6),
            JobCounts {
                waiting: 1,
                running: 0
            }
        );

        // The new attempt, due at once, is the job's.
        let next = claim(b, "w2", T0 + 6, &dir(2)).unwrap();
        assert_eq!(next.attempt, 1);
        assert_eq!(
            end(
                b,
                &next.ticket,
                JobEnd::Ready(&set_in(&dir(2), 1000)),
                T0 + 7
            ),
            JobEnded::Ended(None)
        );
        assert_eq!(media(b, id).state, MediaState::Ready);
    }

    pub fn a_new_upload_of_the_object_supersedes_the_running_attempt(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        let mut second = queued(id, T0 + 2);
        if let Some(source) = second.source.as_mut() {
            source.key = StorageKey::parse(&format!("objects/{id}/source-2")).unwrap();
            source.sha256 = [0x02; 32];
        }
        finish_again(b, id, &second);

        assert!(!extend(b, &job.ticket, T0 + LEASE, 50));
        let set = set_in(&dir(1), 1000);
        for how in every_end(&set) {
            assert_eq!(
                end(b, &job.ticket, how, T0 + 3),
                JobEnded::Superseded,
                "{how:?}"
            );
        }
        assert_eq!(media(b, id), second);

        // The new source's job is due at once, and its ticket is the job's.
        let next = claim(b, "w2", T0 + 3, &dir(2)).unwrap();
        assert_eq!((next.attempt, &next.media.source), (1, &second.source));
        assert_eq!(
            end(
                b,
                &next.ticket,
                JobEnd::Ready(&set_in(&dir(2), 1000)),
                T0 + 4
            ),
            JobEnded::Ended(None)
        );
    }

    pub fn removing_the_media_supersedes_the_running_attempt(b: &Bench) {
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        assert!(b.store.remove_media(id).unwrap().0.is_some());
        assert!(!extend(b, &job.ticket, T0 + LEASE, 50));
        let set = set_in(&dir(1), 1000);
        for how in every_end(&set) {
            assert_eq!(
                end(b, &job.ticket, how, T0 + 1),
                JobEnded::Superseded,
                "{how:?}"
            );
        }
        assert_eq!(b.store.media(id).unwrap(), None);
        assert_eq!(counts(b, T0 + 1), JobCounts::default());
        assert!(claim(b, "w2", T0 + 1, &dir(2)).is_none());
    }

    pub fn a_spent_ticket_stays_spent_when_its_object_is_queued_again(b: &Bench) {
        // w1 takes the job and stalls past its lease; w2 takes it over and finishes it.
        let id = uploaded(b, T0);
        let slow = claim(b, "w1", T0, &dir(1)).unwrap();
        let fast = claim(b, "w2", T0 + LEASE + 1, &dir(2)).unwrap();
        assert_eq!(
            end(
                b,
                &fast.ticket,
                JobEnd::Ready(&set_in(&dir(2), 1000)),
                T0 + 70
            ),
            JobEnded::Ended(None)
        );
        // Queued again and taken by w3: w1, waking up, must not pass for w3.
        b.store.requeue(id, at(T0 + 80)).unwrap().unwrap();
        let third = claim(b, "w3", T0 + 80, &dir(3)).unwrap();
        assert_ne!(third.ticket, slow.ticket);
        assert!(!extend(b, &slow.ticket, T0 + 500, 10));
        let stale = set_in(&dir(1), 1000);
        for how in every_end(&stale) {
            assert_eq!(
                end(b, &slow.ticket, how, T0 + 90),
                JobEnded::Superseded,
                "{how:?}"
            );
        }
        assert_eq!(media(b, id), third.media);

        // Its media removed and uploaded anew, then taken by w4: w3 must not pass for w4.
        b.store.remove_media(id).unwrap();
        finish_again(b, id, &queued(id, T0 + 100));
        let fourth = claim(b, "w4", T0 + 100, &dir(4)).unwrap();
        assert_ne!(fourth.ticket, third.ticket);
        assert!(!extend(b, &third.ticket, T0 + 500, 10));
        for how in every_end(&stale) {
            assert_eq!(
                end(b, &third.ticket, how, T0 + 110),
                JobEnded::Superseded,
                "{how:?}"
            );
        }
        assert_eq!(media(b, id), fourth.media);
        // The positive control: the ticket of the attempt that holds the job ends it.
        assert_eq!(
            end(
                b,
                &fourth.ticket,
                JobEnd::Ready(&set_in(&dir(4), 1000)),
                T0 + 120
            ),
            JobEnded::Ended(None)
        );
        assert_eq!(media(b, id).derived, Some(set_in(&dir(4), 1000)));
    }

    pub fn requeue_resets_the_attempts_and_needs_a_stored_source(b: &Bench) {
        // No stored source: an upload still under way, an object without media, no object.
        let pending = b.started(1000, T0 + 3600).object;
        let bare = b.object(ObjectType::Video);
        b.store.create_in_collection(&bare, b.library).unwrap();
        let nothing = b.object(ObjectType::Video).id();
        for id in [pending, bare.id(), nothing] {
            assert_eq!(b.store.requeue(id, at(T0)).unwrap(), None, "{id}");
        }
        assert_eq!(media(b, pending).state, MediaState::Uploading);
        assert_eq!(b.store.media(bare.id()).unwrap(), None);
        assert_eq!(counts(b, T0), JobCounts::default());
        assert!(claim(b, "w1", T0, &dir(1)).is_none());

        // A job that was tried twice and failed starts over: attempts, error, progress.
        let id = uploaded(b, T0);
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        let retry = JobEnd::Retry {
            error: "first",
            at: at(T0 + 30),
        };
        end(b, &job.ticket, retry, T0 + 1);
        let job = claim(b, "w1", T0 + 30, &dir(2)).unwrap();
        assert_eq!(job.attempt, 2);
        end(b, &job.ticket, JobEnd::Failed { error: "second" }, T0 + 31);
        let record = b.store.requeue(id, at(T0 + 40)).unwrap().unwrap();
        assert_eq!(
            record,
            MediaRecord {
                modified: at(T0 + 40),
                ..queued(id, T0)
            }
        );
        assert_eq!(media(b, id), record);
        assert_eq!(
            counts(b, T0 + 40),
            JobCounts {
                waiting: 1,
                running: 0
            }
        );
        let job = claim(b, "w1", T0 + 40, &dir(3)).unwrap();
        assert_eq!((job.attempt, job.media.attempts), (1, 1));

        // A job backing off is due at once when queued again.
        let later = JobEnd::Retry {
            error: "third",
            at: at(T0 + 1000),
        };
        end(b, &job.ticket, later, T0 + 41);
        assert!(claim(b, "w1", T0 + 42, &dir(4)).is_none());
        b.store.requeue(id, at(T0 + 42)).unwrap().unwrap();
        let job = claim(b, "w1", T0 + 42, &dir(4)).unwrap();
        assert_eq!(job.attempt, 1);
    }

    pub fn job_counts_tell_waiting_from_running(b: &Bench) {
        assert_eq!(counts(b, T0), JobCounts::default());
        uploaded(b, T0);
        uploaded(b, T0);
        uploaded(b, T0 + 100);
        assert_eq!(
            counts(b, T0),
            JobCounts {
                waiting: 3,
                running: 0
            },
            "a job not due yet waits too"
        );
        let job = claim(b, "w1", T0, &dir(1)).unwrap();
        assert_eq!(
            counts(b, T0 + LEASE),
            JobCounts {
                waiting: 2,
                running: 1
            }
        );
        assert_eq!(
            counts(b, T0 + LEASE + 1),
            JobCounts {
                waiting: 3,
                running: 0
            },
            "a job whose lease ended waits for a worker"
        );
        // Nobody took it over: its worker may still end it.
        assert_eq!(
            end(
                b,
                &job.ticket,
                JobEnd::Ready(&set_in(&dir(1), 1000)),
                T0 + LEASE + 1
            ),
            JobEnded::Ended(None)
        );
        assert_eq!(
            counts(b, T0 + LEASE + 1),
            JobCounts {
                waiting: 2,
                running: 0
            }
        );
    }
}

use cases::*;

medialib_adapters_diesel::backend_tests!(
    on [sqlite, memory, postgres] with Bench::run:
    a_finished_upload_queues_a_job_only_when_its_media_waits_for_processing,
    a_claim_takes_the_due_job_queued_longest_and_marks_its_media_processing,
    a_held_job_is_taken_again_only_once_its_lease_ended,
    of_racing_claimers_each_job_goes_to_exactly_one,
    a_lease_that_ended_is_not_extended,
    only_the_claimed_ticket_extends_the_lease_and_records_progress,
    ending_ready_records_the_files_the_duration_and_the_change,
    a_retry_queues_the_media_with_its_error_until_the_job_is_due_again,
    a_released_job_is_due_at_once_and_its_attempt_is_not_counted,
    a_failed_job_clears_the_derived_files_and_hands_them_back,
    a_requeue_supersedes_the_running_attempt,
    a_new_upload_of_the_object_supersedes_the_running_attempt,
    removing_the_media_supersedes_the_running_attempt,
    a_spent_ticket_stays_spent_when_its_object_is_queued_again,
    requeue_resets_the_attempts_and_needs_a_stored_source,
    job_counts_tell_waiting_from_running,
);
