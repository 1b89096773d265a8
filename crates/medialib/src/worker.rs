//! Media processing workers: threads that take jobs from the database and run them
//! ([`ProcessingServices::work_once`]), in `medialib serve` (`workers`) and in
//! `medialib worker`.
//!
//! Each worker is one OS thread (processing is blocking: ffmpeg children, storage reads and
//! writes), named `{instance}:{boot}:{n}` as the holder of the jobs it takes. With nothing to
//! do it asks again after [`IDLE_WAIT`] (plus a little jitter, so that workers started together
//! do not ask together). Stopping sets a flag that the running job sees at its next progress
//! report: the job is released (queued again, the try not counted) and the thread ends.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use medialib_adapters_ffmpeg::{FfmpegProcessor, FfmpegSettings};
use medialib_domain::media::derived::RetryPolicy;
use medialib_ports::RandomExt as _;
use medialib_ports::Services;
use medialib_ports::services::processing::{Outcome, ProcessingServices, ProcessingSettings};

use crate::configuration::Settings;
use crate::world::OsRandom;

/// How long an idle worker waits before it asks for a job again.
pub const IDLE_WAIT: Duration = Duration::from_secs(1);

/// How long a worker waits after the database failed before it asks again.
const ERROR_WAIT: Duration = Duration::from_secs(5);

/// The processing settings of `settings`.
pub fn processing_settings(settings: &Settings) -> ProcessingSettings {
    ProcessingSettings {
        lease: Duration::from_secs(u64::from(settings.job_lease.seconds())),
        retry: RetryPolicy::new(
            settings.job_attempts.get(),
            Duration::from_secs(u64::from(settings.job_retry_delay.seconds())),
        ),
        work_root: absolute(&settings.work_dir),
    }
}

/// The ffmpeg processor of `settings` (Debian's tools from `PATH`, at `processing_priority`).
pub fn processor(settings: &Settings) -> Arc<FfmpegProcessor> {
    Arc::new(FfmpegProcessor::new(FfmpegSettings {
        stall_timeout: Duration::from_secs(u64::from(settings.job_stall_timeout.seconds())),
        idle_class: settings.processing_priority,
        ..FfmpegSettings::default()
    }))
}

fn absolute(path: &std::path::Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Running workers.
#[derive(Debug)]
pub struct Workers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `count` workers on `services` with the processing of `settings`.
    pub fn start(services: &Services, settings: &Settings, count: u32) -> std::io::Result<Self> {
        let processing = services.processing(processor(settings), processing_settings(settings));
        Self::start_with(processing, count)
    }

    /// Starts `count` workers running `processing`.
    pub fn start_with(processing: ProcessingServices, count: u32) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let boot = OsRandom.hex(4);
        let instance = crate::media::instance();
        let mut threads = Vec::new();
        if count > 0 {
            let work = &processing.settings().work_root;
            std::fs::create_dir_all(work).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot create the work_dir {}: {e}", work.display()),
                )
            })?;
        }
        for n in 0..count {
            let holder = format!("{instance}:{boot}:{n}");
            let processing = processing.clone();
            let stop = stop.clone();
            let thread = std::thread::Builder::new()
                .name(format!("worker-{n}"))
                .spawn(move || work(&processing, &holder, &stop))?;
            threads.push(thread);
        }
        if count > 0 {
            tracing::info!(workers = count, "processing workers started");
        }
        Ok(Self { stop, threads })
    }

    /// How many workers run.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// Whether none runs.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// A handle that asks the workers to stop (from a signal handler, say).
    pub fn stopper(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Asks every worker to stop and waits until they have: a running job is released
    /// (queued again) within a progress report's time.
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads {
            if thread.join().is_err() {
                tracing::error!("a processing worker panicked");
            }
        }
    }
}

/// One worker's loop.
fn work(processing: &ProcessingServices, holder: &str, stop: &AtomicBool) {
    let stopping = || stop.load(Ordering::SeqCst);
    let mut jitter = 0u64;
    while !stopping() {
        match processing.work_once(holder, &stopping) {
            Ok(Some(report)) => {
                if report.outcome == Outcome::Released {
                    break;
                }
            }
            Ok(None) => {
                jitter = (jitter + 137) % 400;
                pause(IDLE_WAIT + Duration::from_millis(jitter), stop);
            }
            Err(error) => {
                tracing::warn!(%error, "a processing worker cannot reach the database; waiting");
                pause(ERROR_WAIT, stop);
            }
        }
    }
}

/// Sleeps `wait`, waking early when asked to stop.
fn pause(wait: Duration, stop: &AtomicBool) {
    let step = Duration::from_millis(100);
    let mut slept = Duration::ZERO;
    while slept < wait && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(step);
        slept += step;
    }
}
