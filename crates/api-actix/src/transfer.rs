//! Moving media bytes between a connection and the blocking media use cases without holding
//! them whole: a request body becomes a [`std::io::Read`] on a transfer thread, and a
//! stored file's reader becomes a response stream. Each transfer runs on a thread of the
//! transfer pool (kept between transfers), not on the blocking pool the database calls use
//! (which is sized for the database pool): a slow upload must not hold a thread the next
//! describe needs. At most [`Transfers`]' slots run at once; more get a 503.

use std::io::{self, Read};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_web::web::Bytes;
use futures_core::Stream;
use medialib_ports::Services;
use tokio::sync::{mpsc, oneshot};

use crate::error::ApiError;
use crate::metrics::{Direction, Metrics, TransferGauge};
use crate::state::AppState;

/// Chunks in flight between a connection and its transfer thread (each at most what one
/// read returns: 64 KiB for request bodies, [`CHUNK`] for files).
const QUEUE: usize = 8;
/// Bytes read from storage per chunk of a response.
const CHUNK: usize = 256 * 1024;

/// The request body as a reader, fed chunk by chunk by the connection.
struct BodyReader {
    chunks: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        let _ = self.current.split_to(n);
        Ok(n)
    }
}

/// Runs `work` on a transfer thread, in the current tracing span; its result arrives on the
/// receiver (dropped unsent if `work` panics).
///
/// The threads are a pool's, kept between transfers (idle ones end after
/// [`THREAD_KEEP_ALIVE`]): starting and ending a thread for each delivery (a stack mapped,
/// zeroed, unmapped with a TLB shootdown on every CPU, the address space's lock taken for
/// each) cost a 1 KiB range 175 µs of server CPU, about ten describes. The pool is the
/// blocking pool of a runtime of its own, not the one the async workers share with the
/// database's blocking calls, so a slow transfer never holds a thread a describe needs. The
/// transfer slots, not the pool, bound how many run at once.
fn spawn<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<oneshot::Receiver<T>, ApiError> {
    let (done, result) = oneshot::channel();
    let span = tracing::Span::current();
    let pool = pool().map_err(|e| {
        tracing::error!(error = %e, transfer = name, "cannot start the transfer threads");
        ApiError::Overloaded
    })?;
    let job = move || {
        let _ = done.send(span.in_scope(work));
    };
    // tokio panics when it must start a thread for the job, the OS refuses, and no thread of
    // the pool is left to take it: that is a 503, as a refused thread was before the pool.
    let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(pool.spawn_blocking(job));
    }));
    if started.is_err() {
        tracing::error!(transfer = name, "cannot start a transfer thread");
        return Err(ApiError::Overloaded);
    }
    Ok(result)
}

/// How long an idle transfer thread waits for the next transfer before it ends.
const THREAD_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(10);

/// The transfer threads' runtime, started with the first transfer (and again with the next
/// if it could not start). Its one async worker idles: only its blocking pool is used, which
/// grows to as many threads as transfers run at once.
fn pool() -> Result<&'static tokio::runtime::Handle, String> {
    static POOL: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(runtime) = POOL.get() {
        return Ok(runtime.handle());
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(4096)
        .thread_keep_alive(THREAD_KEEP_ALIVE)
        .thread_name("medialib-transfer")
        .build()
        .map_err(|e| e.to_string())?;
    if let Err(lost) = POOL.set(built) {
        // Another request started it first; this one is called from async code, where a
        // runtime may only be let go of in the background.
        lost.shutdown_background();
    }
    POOL.get()
        .map(tokio::runtime::Runtime::handle)
        .ok_or_else(|| "the transfer runtime vanished".to_owned())
}

/// Runs `work` with the request body as a reader, on a transfer thread, while this task
/// feeds it the body. Returns as soon as `work` does, even if the client is still sending
/// (the rest of the body is then not read).
pub async fn with_body<T, F, S, E>(state: &AppState, mut payload: S, work: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Services, &mut dyn Read) -> T + Send + 'static,
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let _slot = state.transfers().try_enter().ok_or(ApiError::Overloaded)?;
    let services = state.services().clone();
    let _counted = state.metrics.transfer(Direction::In);
    let (feed, chunks) = mpsc::channel(QUEUE);
    let mut result = spawn("medialib-upload", move || {
        let mut reader = BodyReader {
            chunks,
            current: Bytes::new(),
        };
        work(&services, &mut reader)
    })?;
    let mut feed = Some(feed);
    loop {
        let next = async {
            match feed.as_ref() {
                Some(_) => std::future::poll_fn(|cx| Pin::new(&mut payload).poll_next(cx)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            done = &mut result => {
                return done.map_err(|_| ApiError::Internal);
            }
            chunk = next => {
                let Some(sender) = feed.as_ref() else { continue };
                let item = match chunk {
                    Some(Ok(bytes)) => {
                        state.metrics.media_bytes(Direction::In, bytes.len() as u64);
                        Ok(bytes)
                    }
                    Some(Err(e)) => Err(io::Error::new(io::ErrorKind::ConnectionAborted, e.to_string())),
                    None => {
                        // The end of the body: the reader sees it when the sender is gone.
                        feed = None;
                        continue;
                    }
                };
                let failed = item.is_err();
                if sender.send(item).await.is_err() || failed {
                    feed = None;
                }
            }
        }
    }
}

/// A slot of [`Transfers`](crate::admission::Transfers), held for as long as its transfer
/// runs or its bytes wait in memory for the client.
pub type Slot = tokio::sync::OwnedSemaphorePermit;

/// Runs `work` on a transfer thread (it opens a stored file); returns its answer and the
/// slot it ran under, for the answer's body to hold until it has been sent.
pub async fn on_thread<T, F>(state: &AppState, work: F) -> Result<(T, Slot), ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Services) -> T + Send + 'static,
{
    let slot = state.transfers().try_enter().ok_or(ApiError::Overloaded)?;
    let services = state.services().clone();
    let answer = spawn("medialib-media", move || work(&services))?
        .await
        .map_err(|_| ApiError::Internal)?;
    Ok((answer, slot))
}

/// A response body that reads `reader` on a transfer thread, [`CHUNK`] bytes at a time, as
/// fast as the client takes them, holding `slot` until it ends. A read error ends the stream
/// early (the client sees a short body, which it can tell from `Content-Length`).
pub fn stream(
    state: &AppState,
    slot: Slot,
    mut reader: Box<dyn Read + Send>,
) -> Result<ReadStream, ApiError> {
    let (feed, chunks) = mpsc::channel::<io::Result<Bytes>>(2);
    let metrics = Arc::clone(&state.metrics);
    let counted = metrics.transfer(Direction::Out);
    drop(spawn("medialib-delivery", move || {
        let _slot = slot;
        loop {
            // `read_to_end` fills without zeroing the buffer first.
            let mut buf = Vec::with_capacity(CHUNK);
            match (&mut reader).take(CHUNK as u64).read_to_end(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "reading a delivered file failed");
                    let _ = feed.blocking_send(Err(e));
                    return;
                }
            }
            if feed.blocking_send(Ok(Bytes::from(buf))).is_err() {
                // The client went away.
                return;
            }
        }
    })?);
    Ok(ReadStream {
        chunks,
        current: Bytes::new(),
        metrics,
        _counted: counted,
    })
}

/// The stream [`stream`] returns; counts the bytes it hands to the connection.
///
/// It hands each chunk read on to the connection in slices of
/// [`answers::CHUNK`](crate::answers::CHUNK) (no copy), as a body read whole is
/// ([`Chunked`](crate::answers::Chunked)): actix-http copies what a body yields into the
/// connection's write buffer, and a 16 KiB copy into a buffer that stays small stays in the
/// CPU's cache where a 256 KiB one does not (a 720p HLS segment of 1.26 MiB, streamed:
/// 1,147–1,196 µs of server CPU in whole chunks, 772–841 in slices; docs/performance.md).
#[derive(Debug)]
pub struct ReadStream {
    chunks: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
    metrics: Arc<Metrics>,
    _counted: TransferGauge,
}

impl Stream for ReadStream {
    type Item = io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.current.is_empty() {
            match self.chunks.poll_recv(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    self.metrics.media_bytes(Direction::Out, bytes.len() as u64);
                    self.current = bytes;
                }
                other => return other,
            }
        }
        let n = self.current.len().min(crate::answers::CHUNK);
        Poll::Ready(Some(Ok(self.current.split_to(n))))
    }
}
