//! What to derive from a source (DECISIONS §7), decided from what the probe found.
//!
//! video: H.264/AAC MP4 renditions (720p when the source reaches that size, and 360p; never
//! larger than the source, even sides, aspect kept), HLS variants packaged from the same MP4s, a
//! SMIL listing them, three stills and a WebVTT thumbnail track over sprite sheets. audio: an
//! AAC `.m4a`, a waveform and its picture in the three still sizes. image: the three sizes.
//! file: nothing (the source is served as uploaded). A source that is not what its type says is
//! a [`Refusal`] whose text a person can act on.
//!
//! The names in the plan are paths relative to the object's directory of derived files; the
//! processing adapter writes them under its work directory, the job copies them to storage.

use std::fmt;

use super::probe::{AudioStream, Dimensions, FrameRate, MediaDuration, MediaProbe, VideoStream};
use crate::object::ObjectType;

/// Seconds between forced keyframes: segments and renditions switch on the same frames.
pub const KEYFRAME_SECS: u32 = 2;
/// Target length of an HLS segment, in seconds (a multiple of [`KEYFRAME_SECS`]).
pub const HLS_SEGMENT_SECS: u32 = 4;
/// Seconds of video each thumbnail of the sprite sheets stands for.
pub const SPRITE_INTERVAL_SECS: u64 = 5;
/// Thumbnails per sprite sheet row and column (a sheet holds their square).
pub const SPRITE_GRID: u32 = 10;
/// The largest side of a video that is processed.
pub const MAX_VIDEO_SIDE: u32 = 8192;
/// The most pixels an image may have to be processed (a decompression bomb is refused before
/// any decoder allocates its frame).
pub const MAX_IMAGE_PIXELS: u64 = 50_000_000;
/// Samples a second of the audio a waveform is computed from.
pub const WAVEFORM_SAMPLE_RATE: u32 = 8000;
/// The most points a waveform has (its JSON stays under some 100 KB).
pub const WAVEFORM_MAX_POINTS: u64 = 8000;
/// The fewest samples a waveform point stands for (100 points a second at 8 kHz).
pub const WAVEFORM_MIN_SAMPLES_PER_POINT: u32 = 80;

/// The three still sizes of the spec's `images`, smallest first.
pub const STILL_SIZES: [Dimensions; 3] = [
    Dimensions::fixed(128, 128),
    Dimensions::fixed(512, 512),
    Dimensions::fixed(1280, 760),
];

/// The object types whose media is processed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaKind {
    /// Renditions, HLS, SMIL, stills, thumbnails.
    Video,
    /// An `.m4a`, a waveform and its picture.
    Audio,
    /// Three sizes.
    Image,
}

impl MediaKind {
    /// The processing an object of `object_type` gets; `None` for a file (served as uploaded)
    /// and a catalog (holds no media).
    pub fn of(object_type: ObjectType) -> Option<Self> {
        match object_type {
            ObjectType::Video => Some(Self::Video),
            ObjectType::Audio => Some(Self::Audio),
            ObjectType::Image => Some(Self::Image),
            ObjectType::File | ObjectType::Catalog => None,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Self::Video => "video",
            Self::Audio => "audio recording",
            Self::Image => "image",
        }
    }

    fn with_article(self) -> &'static str {
        match self {
            Self::Video => "a video",
            Self::Audio => "an audio recording",
            Self::Image => "an image",
        }
    }
}

/// Why a source is not processed: it is not what its object's type says. Permanent (another
/// attempt finds the same); the text is for the person who uploaded it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No media tool could read the file at all.
    #[error(
        "This file is not {} medialib can read: it is in no known audio, video or image format ({detail}).",
        kind.with_article()
    )]
    Unreadable {
        /// What the object's type promised.
        kind: MediaKind,
        /// What the tool said, without the file's path.
        detail: String,
    },
    /// The file is text that a tool could display as a picture, not media.
    #[error("This file is text, not {}.", kind.with_article())]
    Text {
        /// What the object's type promised.
        kind: MediaKind,
    },
    /// A playlist or manifest that names other files (HLS, DASH, concat): never read further,
    /// so an upload cannot make the tools read another object's media.
    #[error("This file is a playlist that points to other files; upload the media itself.")]
    Playlist,
    /// A video without moving pictures that has sound.
    #[error("This file has sound but no pictures: upload it as audio, not as a video.")]
    VideoWithoutPictures,
    /// A video with neither pictures nor sound.
    #[error("This file holds no video.")]
    NoVideo,
    /// A video that is one still picture.
    #[error("This file is a still picture, not a video: upload it as an image.")]
    StillAsVideo,
    /// A video or audio file whose length is zero or unknown.
    #[error("This {} has no length: it holds nothing that can be played.", kind.noun())]
    NoLength {
        /// Video or audio.
        kind: MediaKind,
    },
    /// An audio file without sound.
    #[error("This file holds no sound, so it cannot be an audio recording.")]
    NoSound,
    /// An image file without a picture.
    #[error("This file holds no picture, so it cannot be an image.")]
    NoPicture,
    /// A picture too large to process.
    #[error(
        "This {} is {} × {} pixels, more than medialib processes ({limit}).",
        kind.noun(), size.width(), size.height()
    )]
    TooLarge {
        /// Video or image.
        kind: MediaKind,
        /// The picture's size.
        size: Dimensions,
        /// The limit, in words.
        limit: &'static str,
    },
}

impl Refusal {
    /// The refusal of a file no tool could read; `detail` is what the tool said.
    pub fn unreadable(kind: MediaKind, detail: &str) -> Self {
        Self::Unreadable {
            kind,
            detail: detail.trim().trim_end_matches('.').to_owned(),
        }
    }
}

/// A step of the rendition ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rung {
    /// Fits 1280x720 (720x1280 upright).
    P720,
    /// Fits 640x360 (360x640 upright); always made.
    P360,
}

impl Rung {
    /// Highest first.
    pub const ALL: [Rung; 2] = [Rung::P720, Rung::P360];

    /// Its name in file names and HLS variant names.
    pub fn name(self) -> &'static str {
        match self {
            Self::P720 => "720p",
            Self::P360 => "360p",
        }
    }

    /// The landscape box a rendition fits in (long side, short side).
    fn bounds(self) -> (u32, u32) {
        match self {
            Self::P720 => (1280, 720),
            Self::P360 => (640, 360),
        }
    }

    /// Video kilobits a second for a picture that fills the box.
    fn video_kbps(self) -> u32 {
        match self {
            Self::P720 => 2500,
            Self::P360 => 800,
        }
    }

    /// Audio kilobits a second.
    fn audio_kbps(self) -> u32 {
        match self {
            Self::P720 => 128,
            Self::P360 => 96,
        }
    }

    /// The box, turned like `source`.
    fn box_for(self, source: Dimensions) -> (u32, u32) {
        let (long, short) = self.bounds();
        if source.is_portrait() {
            (short, long)
        } else {
            (long, short)
        }
    }
}

/// How sound is encoded: AAC at a bitrate, channels and sample rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioEncoding {
    channels: u16,
    sample_rate: u32,
    kbps: u32,
}

impl AudioEncoding {
    fn for_source(source: &AudioStream, kbps: u32) -> Self {
        Self {
            channels: source.channels().min(2),
            sample_rate: if source.sample_rate() == 44_100 {
                44_100
            } else {
                48_000
            },
            kbps,
        }
    }

    /// 1 or 2.
    pub fn channels(self) -> u16 {
        self.channels
    }

    /// 44 100 or 48 000.
    pub fn sample_rate(self) -> u32 {
        self.sample_rate
    }

    /// Kilobits a second.
    pub fn kbps(self) -> u32 {
        self.kbps
    }
}

/// One H.264/AAC MP4 rendition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendition {
    rung: Rung,
    size: Dimensions,
    video_kbps: u32,
    frame_rate: Option<FrameRate>,
    change_rate: bool,
    audio: Option<AudioEncoding>,
}

impl Rendition {
    /// Its step of the ladder.
    pub fn rung(&self) -> Rung {
        self.rung
    }

    /// Its name (`720p`).
    pub fn name(&self) -> &'static str {
        self.rung.name()
    }

    /// Its picture size: both sides even, no larger than the source.
    pub fn size(&self) -> Dimensions {
        self.size
    }

    /// Target video kilobits a second.
    pub fn video_kbps(&self) -> u32 {
        self.video_kbps
    }

    /// The encoder's ceiling on the video bitrate (`-maxrate`).
    pub fn max_kbps(&self) -> u32 {
        self.video_kbps * 107 / 100
    }

    /// The rate-control buffer (`-bufsize`), kilobits.
    pub fn buffer_kbits(&self) -> u32 {
        self.video_kbps * 2
    }

    /// The output frame rate when known.
    pub fn frame_rate(&self) -> Option<FrameRate> {
        self.frame_rate
    }

    /// Whether the output frame rate differs from the source's (then it must be set).
    pub fn changes_frame_rate(&self) -> bool {
        self.change_rate
    }

    /// Frames between keyframes, when the frame rate is known ([`KEYFRAME_SECS`] of them).
    pub fn keyframe_interval(&self) -> Option<u32> {
        self.frame_rate.map(|r| {
            let frames = (r.per_second() * f64::from(KEYFRAME_SECS)).round();
            if frames >= 1.0 { frames as u32 } else { 1 }
        })
    }

    /// Its sound, when the source has any.
    pub fn audio(&self) -> Option<AudioEncoding> {
        self.audio
    }

    /// Video and audio bits a second together (SMIL `system-bitrate`, the `media` call).
    pub fn bitrate(&self) -> u32 {
        (self.video_kbps + self.audio.map_or(0, AudioEncoding::kbps)) * 1000
    }

    /// Where the MP4 goes (`mp4/720p.mp4`).
    pub fn mp4_path(&self) -> String {
        format!("mp4/{}.mp4", self.name())
    }

    /// Its HLS media playlist (`hls/720p.m3u8`).
    pub fn hls_playlist_path(&self) -> String {
        format!("hls/{}.m3u8", self.name())
    }

    /// Its HLS media file: the fMP4 init section and every segment in one file, addressed by
    /// byte ranges (`hls/720p.m4s`).
    pub fn hls_media_path(&self) -> String {
        format!("hls/{}.m4s", self.name())
    }
}

/// The sprite sheets of the thumbnail track: one thumbnail every [`SPRITE_INTERVAL_SECS`],
/// [`SPRITE_GRID`] × [`SPRITE_GRID`] to a sheet, row by row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpritePlan {
    frames: u32,
    tile: Dimensions,
    duration: MediaDuration,
}

/// One cue of the thumbnail track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpriteCue {
    /// Where the cue starts.
    pub start: MediaDuration,
    /// Where it ends.
    pub end: MediaDuration,
    /// The sheet, from 1.
    pub sheet: u32,
    /// The thumbnail's left edge in the sheet.
    pub x: u32,
    /// Its top edge.
    pub y: u32,
}

impl SpritePlan {
    /// The sprites of a video of `duration` whose picture is `source`.
    pub fn new(duration: MediaDuration, source: Dimensions) -> Self {
        let interval = SPRITE_INTERVAL_SECS * 1_000_000;
        let frames = duration.as_micros().div_ceil(interval).max(1);
        let (w, h) = if source.is_portrait() {
            (90, 160)
        } else {
            (160, 90)
        };
        Self {
            frames: u32::try_from(frames).unwrap_or(u32::MAX),
            tile: fit(source, (w, h)),
            duration,
        }
    }

    /// How many thumbnails there are.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// One thumbnail's size.
    pub fn tile(&self) -> Dimensions {
        self.tile
    }

    /// How many sheets hold them.
    pub fn sheets(&self) -> u32 {
        self.frames.div_ceil(SPRITE_GRID * SPRITE_GRID)
    }

    /// A whole sheet's size.
    pub fn sheet_size(&self) -> Dimensions {
        Dimensions::fixed(
            self.tile.width() * SPRITE_GRID,
            self.tile.height() * SPRITE_GRID,
        )
    }

    /// Where sheet `n` (from 1) goes (`thumbs/sprite_1.jpg`).
    pub fn sheet_path(n: u32) -> String {
        format!("thumbs/sprite_{n}.jpg")
    }

    /// The thumbnail track's path.
    pub const VTT_PATH: &'static str = "thumbs/thumbnails.vtt";

    /// The cue of thumbnail `k` (from 0): `[5k, 5k+5)`, the last one cut at the video's end,
    /// on sheet `k / 100 + 1` at column `k % 10`, row `(k / 10) % 10`.
    pub fn cue(&self, k: u32) -> SpriteCue {
        let interval = SPRITE_INTERVAL_SECS * 1_000_000;
        let start = u64::from(k) * interval;
        let end = (start + interval).min(self.duration.as_micros().max(start + 1));
        let on_sheet = k % (SPRITE_GRID * SPRITE_GRID);
        SpriteCue {
            start: MediaDuration::from_micros(start),
            end: MediaDuration::from_micros(end),
            sheet: k / (SPRITE_GRID * SPRITE_GRID) + 1,
            x: self.tile.width() * (on_sheet % SPRITE_GRID),
            y: self.tile.height() * (on_sheet / SPRITE_GRID),
        }
    }
}

/// What a video gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoPlan {
    duration: MediaDuration,
    renditions: Vec<Rendition>,
    lowest: Rendition,
    still_at: MediaDuration,
    sprites: SpritePlan,
}

impl VideoPlan {
    /// The source's length.
    pub fn duration(&self) -> MediaDuration {
        self.duration
    }

    /// The renditions, highest bitrate first; never empty.
    pub fn renditions(&self) -> &[Rendition] {
        &self.renditions
    }

    /// Where in the source the stills are looked for.
    pub fn still_at(&self) -> MediaDuration {
        self.still_at
    }

    /// The thumbnail track's sprites.
    pub fn sprites(&self) -> &SpritePlan {
        &self.sprites
    }

    /// The rendition the sprites are drawn from: the smallest (cheap to decode, keyframes
    /// every [`KEYFRAME_SECS`]).
    pub fn sprite_source(&self) -> &Rendition {
        &self.lowest
    }

    /// The HLS master playlist.
    pub const HLS_MASTER_PATH: &'static str = "hls/master.m3u8";
    /// The SMIL document.
    pub const SMIL_PATH: &'static str = "video.smil";
}

/// What an audio recording gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioPlan {
    duration: MediaDuration,
    encoding: AudioEncoding,
    samples_per_point: u32,
}

impl AudioPlan {
    /// The source's length.
    pub fn duration(&self) -> MediaDuration {
        self.duration
    }

    /// The `.m4a`'s encoding.
    pub fn encoding(&self) -> AudioEncoding {
        self.encoding
    }

    /// Samples (at [`WAVEFORM_SAMPLE_RATE`], mono) each waveform point stands for.
    pub fn samples_per_point(&self) -> u32 {
        self.samples_per_point
    }

    /// The AAC file.
    pub const M4A_PATH: &'static str = "audio.m4a";
    /// The waveform peaks (BBC audiowaveform JSON, version 2).
    pub const WAVEFORM_PATH: &'static str = "waveform.json";
}

/// What an image gets: the three sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImagePlan {
    source: Dimensions,
}

impl ImagePlan {
    /// The source's size.
    pub fn source(&self) -> Dimensions {
        self.source
    }
}

/// The file format of stills: JPEG for pictures of video and images, PNG for waveforms (which
/// keep their transparent background).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StillFormat {
    /// `.jpg`.
    Jpeg,
    /// `.png`.
    Png,
}

/// Where the still of `size` goes (`stills/128x128.jpg`).
pub fn still_path(size: Dimensions, format: StillFormat) -> String {
    let ext = match format {
        StillFormat::Jpeg => "jpg",
        StillFormat::Png => "png",
    };
    format!("stills/{size}.{ext}")
}

/// What to derive from a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DerivePlan {
    /// A video's.
    Video(VideoPlan),
    /// An audio recording's.
    Audio(AudioPlan),
    /// An image's.
    Image(ImagePlan),
}

/// Decides what to derive from a source of `kind` in which the probe found `probe`.
pub fn plan(kind: MediaKind, probe: &MediaProbe) -> Result<DerivePlan, Refusal> {
    if is_text(probe) {
        return Err(Refusal::Text { kind });
    }
    if names_other_files(probe) {
        return Err(Refusal::Playlist);
    }
    match kind {
        MediaKind::Video => plan_video(probe).map(DerivePlan::Video),
        MediaKind::Audio => plan_audio(probe).map(DerivePlan::Audio),
        MediaKind::Image => plan_image(probe).map(DerivePlan::Image),
    }
}

/// ffmpeg shows text files named `.txt`, `.ans` … as "video" (its `tty` demuxer and text-art
/// decoders); they are never media.
fn is_text(probe: &MediaProbe) -> bool {
    probe.format().as_str() == "tty"
        || probe
            .video()
            .is_some_and(|v| matches!(v.codec().as_str(), "ansi" | "bintext" | "xbin" | "idf"))
}

/// Containers that are lists of other files (ffprobe's format names, possibly comma-joined).
fn names_other_files(probe: &MediaProbe) -> bool {
    probe.format().as_str().split(',').any(|f| {
        matches!(
            f,
            "hls" | "applehttp" | "dash" | "concat" | "ffconcat" | "webm_dash_manifest"
        )
    })
}

fn moving_pictures(probe: &MediaProbe) -> Option<&VideoStream> {
    probe.video().filter(|v| !v.is_attached_picture())
}

fn plan_video(probe: &MediaProbe) -> Result<VideoPlan, Refusal> {
    let Some(video) = moving_pictures(probe) else {
        return Err(if probe.audio().is_some() {
            Refusal::VideoWithoutPictures
        } else {
            Refusal::NoVideo
        });
    };
    let source = video.display();
    let duration = match probe.duration() {
        None => return Err(Refusal::StillAsVideo),
        Some(d) if d.is_zero() => {
            return Err(Refusal::NoLength {
                kind: MediaKind::Video,
            });
        }
        Some(d) => d,
    };
    if source.width() > MAX_VIDEO_SIDE || source.height() > MAX_VIDEO_SIDE {
        return Err(Refusal::TooLarge {
            kind: MediaKind::Video,
            size: source,
            limit: "at most 8192 pixels a side",
        });
    }
    let (frame_rate, change_rate) = match video.frame_rate() {
        Some(rate) if rate.per_second() <= 60.0 => (Some(rate), false),
        Some(_) => (FrameRate::new(30, 1), true),
        None => (None, false),
    };
    let rendition = |rung: Rung| {
        let size = fit(source, rung.box_for(source));
        let (w, h) = rung.box_for(source);
        let full = rung.video_kbps();
        let scaled = u64::from(full) * size.pixels() / (u64::from(w) * u64::from(h));
        Rendition {
            rung,
            size,
            video_kbps: u32::try_from(scaled).unwrap_or(full).clamp(full / 4, full),
            frame_rate,
            change_rate,
            audio: probe
                .audio()
                .map(|a| AudioEncoding::for_source(a, rung.audio_kbps())),
        }
    };
    let lowest = rendition(Rung::P360);
    let (w, h) = Rung::P720.box_for(source);
    let mut renditions = Vec::with_capacity(2);
    if source.width() >= w || source.height() >= h {
        renditions.push(rendition(Rung::P720));
    }
    renditions.push(lowest.clone());
    let still_at = if duration < MediaDuration::from_secs(2) {
        MediaDuration::ZERO
    } else {
        MediaDuration::from_micros(duration.as_micros() / 10)
    };
    Ok(VideoPlan {
        duration,
        renditions,
        lowest,
        still_at,
        sprites: SpritePlan::new(duration, source),
    })
}

fn plan_audio(probe: &MediaProbe) -> Result<AudioPlan, Refusal> {
    let audio = probe.audio().ok_or(Refusal::NoSound)?;
    let duration = probe
        .duration()
        .filter(|d| !d.is_zero())
        .ok_or(Refusal::NoLength {
            kind: MediaKind::Audio,
        })?;
    let samples = duration.as_micros() * u64::from(WAVEFORM_SAMPLE_RATE) / 1_000_000;
    let per_point = samples
        .div_ceil(WAVEFORM_MAX_POINTS)
        .max(u64::from(WAVEFORM_MIN_SAMPLES_PER_POINT));
    Ok(AudioPlan {
        duration,
        encoding: AudioEncoding::for_source(audio, 128),
        samples_per_point: u32::try_from(per_point).unwrap_or(u32::MAX),
    })
}

fn plan_image(probe: &MediaProbe) -> Result<ImagePlan, Refusal> {
    let picture = probe.video().ok_or(Refusal::NoPicture)?;
    let source = picture.display();
    if source.pixels() > MAX_IMAGE_PIXELS {
        return Err(Refusal::TooLarge {
            kind: MediaKind::Image,
            size: source,
            limit: "at most 50 megapixels",
        });
    }
    Ok(ImagePlan { source })
}

/// `source` scaled down (never up) to fit `(width, height)`, aspect kept, both sides even and
/// at least 2.
fn fit(source: Dimensions, (box_w, box_h): (u32, u32)) -> Dimensions {
    let (w, h) = (u64::from(source.width()), u64::from(source.height()));
    let (box_w, box_h) = (u64::from(box_w), u64::from(box_h));
    let (out_w, out_h) = if box_w * h <= box_h * w {
        // Width is the tighter bound.
        let out_w = w.min(box_w);
        (out_w, (h * out_w * 2 + w) / (2 * w))
    } else {
        let out_h = h.min(box_h);
        ((w * out_h * 2 + h) / (2 * h), out_h)
    };
    let even = |x: u64| u32::try_from(x & !1).unwrap_or(u32::MAX).max(2);
    Dimensions::fixed(even(out_w), even(out_h))
}

impl fmt::Display for Rung {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests;
