//! Media processing: probing a source and deriving files from it (renditions, HLS, stills,
//! sprite sheets, waveform), as the domain's plan (`medialib_domain::media::derive`) says.
//!
//! The port is blocking, like the media store: a job runs it on a thread of its own. It works on
//! local paths: the job copies the source into a work directory, the processor writes every
//! derived file under that directory at the plan's relative path (`mp4/720p.mp4`), and the job
//! stores them. The source's copy should carry no file extension, so that its format is found by
//! its content (ffmpeg otherwise reads a `.txt` as text-art video).
//!
//! A long step reports progress through a [`ProgressSink`], which may also ask it to stop.
//! Errors separate what another attempt cannot fix (the source is not valid media: a message for
//! the person who uploaded it) from what it may (the tool failed, stalled or was stopped).

use std::fmt;
use std::path::Path;
use std::time::Duration;

use medialib_domain::media::derive::{AudioPlan, ImagePlan, VideoPlan};
use medialib_domain::media::documents::Waveform;
use medialib_domain::media::probe::MediaProbe;
use medialib_domain::media::progress::Percent;

/// Told a running step's progress; returning `false` asks the step to stop
/// ([`ProcessError::Stopped`]), for a job that lost its lease or a worker shutting down.
pub type ProgressSink<'a> = dyn FnMut(Percent) -> bool + 'a;

/// Why a probe failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The file is not media the tool can read (permanent); the text is the tool's reason,
    /// without the file's path, for the domain's `Refusal::unreadable`.
    #[error("not readable media: {0}")]
    NotMedia(String),
    /// The tool could not run, crashed, timed out, or said something unexpected (another
    /// attempt may succeed).
    #[error(transparent)]
    Tool(#[from] ToolFailure),
}

/// Why a processing step failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    /// The source turned out not to be valid media while it was decoded (a truncated or
    /// corrupt file): permanent; the text is for a person.
    #[error("the source cannot be decoded: {0}")]
    NotMedia(String),
    /// The tool failed (another attempt may succeed).
    #[error(transparent)]
    Tool(#[from] ToolFailure),
    /// The tool made no progress for this long and was ended by the watchdog.
    #[error("processing made no progress for {} s and was stopped", .0.as_secs())]
    Stalled(Duration),
    /// The progress sink asked to stop.
    #[error("processing was stopped")]
    Stopped,
}

impl ProcessError {
    /// Whether another attempt may succeed (everything but a source that is not media).
    pub fn is_retryable(&self) -> bool {
        !matches!(self, Self::NotMedia(_))
    }
}

impl ProbeError {
    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, Self::NotMedia(_))
    }
}

/// A tool that did not do its job, for operators (logged, and shown as the job's last error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{tool} failed: {reason}")]
pub struct ToolFailure {
    /// Which tool (`ffmpeg`, `ffprobe`).
    pub tool: &'static str,
    /// What happened: the exit status and the tool's last words, or the I/O error.
    pub reason: String,
}

/// Probing and deriving. Every method is blocking and may take minutes; `work` is a
/// directory the caller owns, under which outputs are written at the plan's relative paths
/// (subdirectories are created as needed; files already there are replaced).
pub trait MediaProcessor: Send + Sync + fmt::Debug {
    /// What is in `source`: container, duration, first video and audio streams.
    fn probe(&self, source: &Path) -> Result<MediaProbe, ProbeError>;

    /// Encodes every rendition of `plan` from `source` in one pass (each rendition's
    /// `Rendition::mp4_path`).
    fn transcode(
        &self,
        source: &Path,
        plan: &VideoPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError>;

    /// Packages the renditions already under `work` as HLS without re-encoding: the master
    /// playlist ([`VideoPlan::HLS_MASTER_PATH`]) and, per rendition, its media playlist and
    /// single fMP4 file.
    fn package_hls(&self, plan: &VideoPlan, work: &Path) -> Result<(), ProcessError>;

    /// The three stills of a video (from `source` near [`VideoPlan::still_at`]), JPEG.
    fn video_stills(
        &self,
        source: &Path,
        plan: &VideoPlan,
        work: &Path,
    ) -> Result<(), ProcessError>;

    /// The sprite sheets of the thumbnail track, drawn from the smallest rendition under
    /// `work` ([`VideoPlan::sprite_source`]); exactly the plan's sheets. The track itself is
    /// the domain's `thumbnails_vtt`.
    fn sprites(
        &self,
        plan: &VideoPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError>;

    /// The three sizes of an image, JPEG.
    fn image_stills(
        &self,
        source: &Path,
        plan: &ImagePlan,
        work: &Path,
    ) -> Result<(), ProcessError>;

    /// The AAC `.m4a` of an audio recording ([`AudioPlan::M4A_PATH`]).
    fn encode_audio(
        &self,
        source: &Path,
        plan: &AudioPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError>;

    /// The waveform peaks of an audio recording, and its picture in the three still sizes
    /// (PNG). The caller writes the peaks' JSON where it wants.
    fn waveform(
        &self,
        source: &Path,
        plan: &AudioPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<Waveform, ProcessError>;
}
