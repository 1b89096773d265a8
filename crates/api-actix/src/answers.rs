//! Large answers (catalog listings, media ranges read whole): a budget of bytes for the bodies
//! being built or sent, and a body that hands its bytes to the connection in small chunks.
//!
//! Two things made memory grow with answer size × connections (issue 24, item 4: 512
//! connections reading a 1 000-member library, 505 KiB answers, took the server to 416 MiB):
//!
//! - actix-http copies each chunk a body yields into the connection's write buffer, and that
//!   buffer keeps its capacity for as long as the connection lives. A listing answered as one
//!   `Bytes` left every keep-alive connection with a buffer the size of its largest answer.
//!   [`Chunked`] yields [`CHUNK`] bytes at a time (slices of the one body, no copy), and
//!   actix-http asks for the next only when its buffer holds less than 32 KiB, so a
//!   connection's buffer stays under 48 KiB whatever it answers.
//! - A body costs its bytes from when it starts being built until its last byte is handed
//!   to the socket, which a slow reader can make long. [`AnswerBudget`] counts those bytes
//!   (in KiB) across the process: a listing reserves [`ESTIMATE`] before it is built (waiting,
//!   on the async worker and holding no thread, while the budget is spent), settles on its
//!   real size once built, and gives it back when its body is dropped (sent, or the
//!   connection closed). A request that cannot get its share within the wait gets the
//!   admission layer's 503 with `Retry-After`.
//!
//! Waiting cannot deadlock: a reservation is taken in one piece, and one that needs more
//! once built first takes what is free at once, else gives back what it holds and waits for
//! its whole size (capped at the budget), so no waiter holds part of the budget while it
//! waits for more; what is held belongs to bodies that are sent without waiting for anything
//! but their reader. The semaphore is fair, so a large answer that waits is not overtaken
//! for ever by small ones, and new listings queue behind it instead of starting to build.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::{BodySize, MessageBody};
use actix_web::web::Bytes;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// The bytes a large body yields at a time.
pub(crate) const CHUNK: usize = 16 * 1024;

/// What a listing reserves before it is built: the answer of a library of about a hundred
/// members. Its real size is settled once it is built.
pub(crate) const ESTIMATE: usize = 64 * 1024;

/// The default budget: bodies of 32 MiB at once (64 answers of 505 KiB).
pub const DEFAULT_ANSWER_BUDGET: usize = 32 * 1024 * 1024;

/// How long a request waits for its share of the budget when no deadline is configured.
const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// The bytes (counted in KiB) that large answers may hold at once, shared by every worker.
#[derive(Debug)]
pub(crate) struct AnswerBudget {
    kib: Arc<Semaphore>,
    total_kib: usize,
    wait: Duration,
}

/// A share of the budget, given back when dropped.
#[derive(Debug)]
pub(crate) struct Share(Option<OwnedSemaphorePermit>);

impl AnswerBudget {
    /// A budget of `bytes` (at least 1 KiB) whose waiters give up after `wait` (`None`: 10 s).
    pub(crate) fn new(bytes: usize, wait: Option<Duration>) -> Self {
        let total_kib = bytes.div_ceil(1024).clamp(1, Semaphore::MAX_PERMITS);
        Self {
            kib: Arc::new(Semaphore::new(total_kib)),
            total_kib,
            wait: wait.unwrap_or(DEFAULT_WAIT),
        }
    }

    /// KiB free right now.
    #[cfg(test)]
    pub(crate) fn available_kib(&self) -> usize {
        self.kib.available_permits()
    }

    /// The KiB of `bytes`, at most the whole budget (an answer larger than the budget takes all
    /// of it, and is then alone).
    fn kib_of(&self, bytes: usize) -> usize {
        bytes.div_ceil(1024).clamp(1, self.total_kib)
    }

    /// A share of `bytes`, waiting for it at most the budget's wait; past it a 503
    /// ([`ApiError::Overloaded`], `Retry-After: 1`).
    pub(crate) async fn reserve(&self, bytes: usize) -> Result<Share, ApiError> {
        let kib = u32::try_from(self.kib_of(bytes)).unwrap_or(u32::MAX);
        let wanted = Arc::clone(&self.kib).acquire_many_owned(kib);
        match tokio::time::timeout(self.wait, wanted).await {
            Ok(Ok(permit)) => Ok(Share(Some(permit))),
            // The semaphore is never closed; were it, the answer would go unbudgeted.
            Ok(Err(_)) => Ok(Share(None)),
            Err(_) => {
                tracing::warn!(
                    bytes,
                    wait_ms = self.wait.as_millis(),
                    "large answers hold the whole budget; answering 503"
                );
                Err(ApiError::Overloaded)
            }
        }
    }

    /// `share` made the size of a body of `bytes`: what it holds beyond is given back; what it
    /// lacks is taken if free, else the share is given back and the whole size waited for.
    pub(crate) async fn settle(&self, mut share: Share, bytes: usize) -> Result<Share, ApiError> {
        let Some(permit) = share.0.as_mut() else {
            return Ok(share);
        };
        let needed = self.kib_of(bytes);
        let held = permit.num_permits();
        if needed <= held {
            drop(permit.split(held - needed));
            return Ok(share);
        }
        let more = u32::try_from(needed - held).unwrap_or(u32::MAX);
        if let Ok(extra) = Arc::clone(&self.kib).try_acquire_many_owned(more) {
            permit.merge(extra);
            return Ok(share);
        }
        drop(share);
        self.reserve(bytes).await
    }
}

/// A body of known size yielded [`CHUNK`] bytes at a time, holding what bounds its memory
/// until it is dropped (sent, or the connection closed).
#[derive(Debug)]
pub(crate) struct Chunked {
    rest: Bytes,
    _held: Held,
}

/// What a [`Chunked`] body holds while it lives (for its `Drop` alone: nothing reads it).
#[derive(Debug)]
#[expect(dead_code, reason = "held to be given back when the body is dropped")]
enum Held {
    /// Its share of the [`AnswerBudget`] (a listing).
    Share(Share),
    /// Its transfer slot (a media file's range, read whole): [`crate::admission::Transfers`]
    /// bounds how many such bodies exist at once, so a crowd of clients that ask for ranges
    /// and do not read them gets 503s, not a server that holds a MiB for each of them.
    Slot(crate::transfer::Slot),
}

impl Chunked {
    /// `body`, accounted for by `share`.
    pub(crate) fn new(body: impl Into<Bytes>, share: Share) -> Self {
        Self {
            rest: body.into(),
            _held: Held::Share(share),
        }
    }

    /// `body`, a media file's range read whole, holding the transfer `slot` it was read under;
    /// yielded in chunks all the same so that the connection's write buffer does not keep
    /// its size.
    pub(crate) fn holding(body: impl Into<Bytes>, slot: crate::transfer::Slot) -> Self {
        Self {
            rest: body.into(),
            _held: Held::Slot(slot),
        }
    }
}

impl MessageBody for Chunked {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Sized(self.rest.len() as u64)
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.rest.len().min(CHUNK);
        Poll::Ready(Some(Ok(self.rest.split_to(n))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;

    #[tokio::test]
    async fn a_body_yields_small_chunks_of_the_whole_and_says_its_size() {
        let budget = AnswerBudget::new(MIB, None);
        let bytes: Vec<u8> = (0..(3 * CHUNK + 5)).map(|i| (i % 251) as u8).collect();
        let share = budget.reserve(bytes.len()).await.unwrap();
        let mut body = Chunked::new(bytes.clone(), share);
        assert_eq!(body.size(), BodySize::Sized(bytes.len() as u64));
        let mut chunks = Vec::new();
        while let Some(chunk) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_next(cx)).await {
            chunks.push(chunk.unwrap());
        }
        assert_eq!(
            chunks.iter().map(Bytes::len).collect::<Vec<_>>(),
            [CHUNK, CHUNK, CHUNK, 5]
        );
        assert_eq!(chunks.concat(), bytes);
        assert_eq!(
            budget.available_kib(),
            1024 - 49,
            "held until the body is dropped"
        );
        drop(body);
        assert_eq!(budget.available_kib(), 1024);
    }

    /// The bound itself: with a budget of two 505 KiB answers, a third waits until one of the
    /// bodies is dropped (sent), and gets a 503 if none is within the wait.
    #[tokio::test]
    async fn the_budget_bounds_the_large_bodies_held_at_once() {
        let answer = 505 * 1024;
        let budget = AnswerBudget::new(2 * answer, Some(Duration::from_millis(200)));
        let mut bodies = Vec::new();
        for _ in 0..2 {
            let share = budget.reserve(ESTIMATE).await.unwrap();
            let share = budget.settle(share, answer).await.unwrap();
            bodies.push(Chunked::new(vec![0; answer], share));
        }
        assert_eq!(budget.available_kib(), 0);
        let refused = budget.reserve(ESTIMATE).await;
        assert!(matches!(refused, Err(ApiError::Overloaded)), "{refused:?}");

        let waiting = budget.reserve(ESTIMATE);
        // Polled after the waiter has queued (`join!` polls in order): no timing involved.
        let send_one = async {
            drop(bodies.pop());
        };
        let (share, ()) = tokio::join!(waiting, send_one);
        let share = share.unwrap();
        assert_eq!(budget.available_kib(), 505 - 64);
        let share = budget.settle(share, answer).await.unwrap();
        assert_eq!(budget.available_kib(), 0);
        drop(share);
        drop(bodies);
        assert_eq!(budget.available_kib(), 2 * 505);
    }

    #[tokio::test]
    async fn settling_gives_back_the_excess_and_waits_without_holding_a_part() {
        let budget = AnswerBudget::new(MIB, Some(Duration::from_millis(200)));
        let small = budget.reserve(ESTIMATE).await.unwrap();
        let small = budget.settle(small, 3 * 1024).await.unwrap();
        assert_eq!(
            budget.available_kib(),
            1021,
            "the estimate's excess is given back"
        );

        // A body larger than what is free: its share is given back while it waits, and it
        // gets the whole size once the small body is sent.
        let big = budget.reserve(ESTIMATE).await.unwrap();
        let settling = budget.settle(big, 1022 * 1024);
        let send_small = async {
            drop(small);
        };
        let (big, ()) = tokio::join!(settling, send_small);
        let big = big.unwrap();
        assert_eq!(budget.available_kib(), 2);
        drop(big);

        // Larger than the whole budget: all of it, then alone.
        let huge = budget.reserve(ESTIMATE).await.unwrap();
        let huge = budget.settle(huge, 5 * MIB).await.unwrap();
        assert_eq!(budget.available_kib(), 0);
        drop(huge);
        assert_eq!(budget.available_kib(), 1024);
    }

    #[derive(Debug)]
    struct Up;

    impl crate::Readiness for Up {
        fn ready(&self) -> Result<(), String> {
            Ok(())
        }
    }

    /// The catalog answer is budgeted: while the budget is spent it waits and then gets a 503
    /// with `Retry-After`; once it is free the listing is answered, in chunks, and its body
    /// holds its share until it has been read.
    #[actix_web::test]
    async fn a_listing_waits_for_its_share_and_holds_it_until_sent() {
        use actix_web::http::{StatusCode, header};
        use actix_web::test;
        use medialib_adapters_memory::testing::Harness;
        use medialib_domain::ObjectType;

        let h = Harness::new();
        let alice = h.user("alice", false);
        let lib = h.library(&alice, "Lectures");
        for n in 0..200 {
            h.object_in(&alice, lib, ObjectType::Video, &format!("Lecture {n}"));
        }
        let token = h.tokens(&h.client(), &alice, false).access_token;
        let budget_kib = 256;
        let config = crate::HttpConfig {
            base_url: "https://media.example.edu".into(),
            answer_budget: Some(budget_kib * 1024),
            db_deadline: Some(Duration::from_millis(300)),
            ..crate::HttpConfig::default()
        };
        let state = crate::AppState::new(Arc::new(Up), h.services.clone(), config);
        let answers = Arc::clone(&state.answers);
        let app = test::init_service(crate::app(state)).await;
        let list = || {
            test::TestRequest::get()
                .uri(&format!("/api/catalog/c/{lib}/o/0"))
                .insert_header((header::AUTHORIZATION, format!("Bearer {}", token.expose())))
                .to_request()
        };

        let spent = answers.reserve(budget_kib * 1024).await.unwrap();
        let refused = test::call_service(&app, list()).await;
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers().get(header::RETRY_AFTER).unwrap(), "1");
        drop(spent);

        let res = test::call_service(&app, list()).await;
        assert_eq!(res.status(), StatusCode::OK);
        // The body says its size (the connection writes it as `Content-Length`).
        let BodySize::Sized(length) = res.response().body().size() else {
            panic!("a body of known size");
        };
        let length = usize::try_from(length).unwrap();
        assert!(length > 64 * 1024, "a large answer ({length} bytes)");
        assert_eq!(
            answers.available_kib(),
            budget_kib - length.div_ceil(1024),
            "the unsent body holds its real size"
        );
        let body = test::read_body(res).await;
        assert_eq!(body.len(), length);
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["list"].as_array().unwrap().len(), 200);
        assert_eq!(answers.available_kib(), budget_kib, "given back once sent");
    }
}
