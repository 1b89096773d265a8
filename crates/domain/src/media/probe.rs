//! What a probe found in a media file: the container's duration and its first video and audio
//! streams. The processing adapter reads a tool's output (ffprobe's JSON) and hands the numbers
//! over through these constructors; a value that exists is consistent (no zero-sized picture, no
//! `0/0` frame rate, no audio without channels), so the rules of [`super::derive`] never meet one.

use std::fmt;

/// A length of media time, in microseconds (ffmpeg's `out_time_us` unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MediaDuration(u64);

/// Text that is not a non-negative decimal number of seconds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a duration in seconds: {0:?}")]
pub struct InvalidMediaDuration(pub String);

impl MediaDuration {
    /// No time at all.
    pub const ZERO: Self = Self(0);

    /// A duration of `micros` microseconds.
    pub const fn from_micros(micros: u64) -> Self {
        Self(micros)
    }

    /// A duration of whole `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis.saturating_mul(1000))
    }

    /// A duration of whole `secs` seconds.
    pub const fn from_secs(secs: u64) -> Self {
        Self(secs.saturating_mul(1_000_000))
    }

    /// Parses decimal seconds as ffprobe writes them (`"2.000000"`, `"0.04"`, `"61"`); digits
    /// past the sixth decimal are dropped. No sign, no exponent, at most 12 integer digits.
    pub fn parse_seconds(text: &str) -> Result<Self, InvalidMediaDuration> {
        let bad = || InvalidMediaDuration(text.to_owned());
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || whole.len() > 12 || !digits(whole) || !digits(fraction) {
            return Err(bad());
        }
        let secs: u64 = whole.parse().map_err(|_| bad())?;
        let micros = fraction
            .bytes()
            .chain(std::iter::repeat(b'0'))
            .take(6)
            .fold(0u64, |acc, b| acc * 10 + u64::from(b - b'0'));
        Ok(Self(secs * 1_000_000 + micros))
    }

    /// Microseconds.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Whole milliseconds (rounded down).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1000
    }

    /// Seconds, for numbers people read and for tool arguments.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Whether it is no time at all.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for MediaDuration {
    /// Seconds with millisecond precision (`2.000`), as ffmpeg's `-ss` accepts them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1_000_000, (self.0 / 1000) % 1000)
    }
}

/// Frames per second as a ratio (`30000/1001`), both terms positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameRate {
    numerator: u32,
    denominator: u32,
}

impl FrameRate {
    /// A rate of `numerator / denominator` frames a second; `None` when either is zero (ffprobe
    /// writes `0/0` for "unknown").
    pub fn new(numerator: u32, denominator: u32) -> Option<Self> {
        (numerator > 0 && denominator > 0).then_some(Self {
            numerator,
            denominator,
        })
    }

    /// Parses `N/D` or `N`; `None` for anything else, including `0/0`.
    pub fn parse(text: &str) -> Option<Self> {
        let (n, d) = text.split_once('/').unwrap_or((text, "1"));
        Self::new(n.trim().parse().ok()?, d.trim().parse().ok()?)
    }

    /// The numerator.
    pub const fn numerator(self) -> u32 {
        self.numerator
    }

    /// The denominator.
    pub const fn denominator(self) -> u32 {
        self.denominator
    }

    /// Frames per second.
    pub fn per_second(self) -> f64 {
        f64::from(self.numerator) / f64::from(self.denominator)
    }
}

impl fmt::Display for FrameRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

/// A picture's size in pixels, both sides at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dimensions {
    width: u32,
    height: u32,
}

impl Dimensions {
    /// `width` × `height`; `None` when either is zero.
    pub const fn new(width: u32, height: u32) -> Option<Self> {
        if width == 0 || height == 0 {
            None
        } else {
            Some(Self { width, height })
        }
    }

    /// `width` × `height` for sizes the code states; both must be positive.
    pub(super) const fn fixed(width: u32, height: u32) -> Self {
        Self { width, height }
    }

    /// Parses `WxH` as [`fmt::Display`] writes it; `None` when it is not a size.
    pub fn parse(text: &str) -> Option<Self> {
        // By hand, in one pass (every still of every processed member of a catalog answer
        // comes through here): the digits before the first `x`, then those after it.
        let bytes = text.as_bytes();
        let x = bytes.iter().position(|&b| b == b'x')?;
        let (w, h) = (&bytes[..x], &bytes[x + 1..]);
        Self::new(side(w)?, side(h)?)
    }

    /// Width in pixels.
    pub const fn width(self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub const fn height(self) -> u32 {
        self.height
    }

    /// The pixel count.
    pub const fn pixels(self) -> u64 {
        self.width as u64 * self.height as u64
    }

    /// Whether it is taller than wide.
    pub const fn is_portrait(self) -> bool {
        self.height > self.width
    }

    /// The same picture turned a quarter.
    pub const fn transposed(self) -> Self {
        Self {
            width: self.height,
            height: self.width,
        }
    }
}

/// One side of a [`Dimensions`]: one to six ASCII digits.
fn side(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 6 {
        return None;
    }
    digits.iter().try_fold(0u32, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
    })
}

impl fmt::Display for Dimensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// A codec's short name as ffprobe writes it (`h264`, `aac`, `png`): 1 to 32 ASCII letters,
/// digits, `_` or `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CodecName(String);

impl CodecName {
    /// Checks a codec name; `None` when it is not one.
    pub fn parse(text: &str) -> Option<Self> {
        ((1..=32).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
        .then(|| Self(text.to_ascii_lowercase()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A video stream: its picture as displayed (a rotation of a quarter turn already applied), its
/// frame rate when known, and its codec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoStream {
    display: Dimensions,
    frame_rate: Option<FrameRate>,
    codec: CodecName,
    attached_picture: bool,
}

impl VideoStream {
    /// A stream of `coded` pixels shown turned by `rotation` degrees (a multiple of 90 in
    /// either direction turns width into height; anything else is ignored), at `frame_rate`.
    /// `attached_picture`: the stream is a cover image inside an audio file, not moving
    /// pictures (ffprobe's `disposition.attached_pic`).
    pub fn new(
        coded: Dimensions,
        rotation_degrees: i32,
        frame_rate: Option<FrameRate>,
        codec: CodecName,
        attached_picture: bool,
    ) -> Self {
        let quarter_turn = rotation_degrees.rem_euclid(180) == 90;
        Self {
            display: if quarter_turn {
                coded.transposed()
            } else {
                coded
            },
            frame_rate,
            codec,
            attached_picture,
        }
    }

    /// The picture as a player shows it.
    pub fn display(&self) -> Dimensions {
        self.display
    }

    /// Frames per second, when the container says.
    pub fn frame_rate(&self) -> Option<FrameRate> {
        self.frame_rate
    }

    /// The codec.
    pub fn codec(&self) -> &CodecName {
        &self.codec
    }

    /// Whether it is an audio file's cover picture rather than moving pictures.
    pub fn is_attached_picture(&self) -> bool {
        self.attached_picture
    }
}

/// An audio stream: channels, samples per second and codec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioStream {
    channels: u16,
    sample_rate: u32,
    codec: CodecName,
}

impl AudioStream {
    /// A stream of `channels` channels at `sample_rate` Hz; `None` when either is zero.
    pub fn new(channels: u16, sample_rate: u32, codec: CodecName) -> Option<Self> {
        (channels > 0 && sample_rate > 0).then_some(Self {
            channels,
            sample_rate,
            codec,
        })
    }

    /// The number of channels.
    pub fn channels(&self) -> u16 {
        self.channels
    }

    /// Samples per second.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// The codec.
    pub fn codec(&self) -> &CodecName {
        &self.codec
    }
}

/// Short name of a container format as ffprobe writes it (`mov,mp4,m4a,3gp,3g2,mj2`,
/// `png_pipe`); kept for messages and for the rules that refuse text-art "video".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerFormat(String);

impl ContainerFormat {
    /// Any non-empty printable name of at most 128 bytes; `None` otherwise.
    pub fn parse(text: &str) -> Option<Self> {
        ((1..=128).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_graphic()))
            .then(|| Self(text.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a probe found: the container, its duration when it has one, and its first video stream
/// that is moving pictures (else its first picture) and its first audio stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaProbe {
    format: ContainerFormat,
    duration: Option<MediaDuration>,
    video: Option<VideoStream>,
    audio: Option<AudioStream>,
}

impl MediaProbe {
    /// A probe's findings. `video` is every video stream in file order: the first that is not
    /// an attached picture is kept, else the first one.
    pub fn new(
        format: ContainerFormat,
        duration: Option<MediaDuration>,
        video: Vec<VideoStream>,
        audio: Option<AudioStream>,
    ) -> Self {
        let moving = video.iter().position(|v| !v.attached_picture).unwrap_or(0);
        Self {
            format,
            duration,
            video: video.into_iter().nth(moving),
            audio,
        }
    }

    /// The container format.
    pub fn format(&self) -> &ContainerFormat {
        &self.format
    }

    /// The container's duration, when it has one (a still image has none).
    pub fn duration(&self) -> Option<MediaDuration> {
        self.duration
    }

    /// The video stream kept.
    pub fn video(&self) -> Option<&VideoStream> {
        self.video.as_ref()
    }

    /// The audio stream kept.
    pub fn audio(&self) -> Option<&AudioStream> {
        self.audio.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The rules of [`Dimensions::parse`] written the plain way: the oracle of its one-pass form.
    fn dimensions_reference(text: &str) -> Option<Dimensions> {
        let (w, h) = text.split_once('x')?;
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 6 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(w) || !digits(h) {
            return None;
        }
        Dimensions::new(w.parse().ok()?, h.parse().ok()?)
    }

    #[test]
    fn dimensions_parse_as_display_writes_them() {
        let d = Dimensions::new(1280, 720).unwrap();
        assert_eq!(Dimensions::parse(&d.to_string()), Some(d));
        assert_eq!(Dimensions::parse("999999x1"), Dimensions::new(999_999, 1));
        for bad in [
            "",
            "x",
            "1x",
            "x1",
            "0x5",
            "5x0",
            "1280X720",
            "1280x720x1",
            "1234567x1",
            "+1x1",
            "1 x1",
            "１x1",
            "-1x1",
        ] {
            assert_eq!(Dimensions::parse(bad), None, "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn dimensions_parse_agrees_with_the_plain_rules(text in "[0-9x+ -]{0,16}") {
            prop_assert_eq!(Dimensions::parse(&text), dimensions_reference(&text));
        }
    }

    #[test]
    fn seconds_parse_as_ffprobe_writes_them() {
        for (text, micros) in [
            ("2.000000", Some(2_000_000)),
            ("0.04", Some(40_000)),
            ("61", Some(61_000_000)),
            ("1.2345678", Some(1_234_567)),
            ("0.", Some(0)),
            ("", None),
            (".5", None),
            ("-1.0", None),
            ("1e3", None),
            ("N/A", None),
            ("1.2.3", None),
            ("9999999999999", None),
        ] {
            assert_eq!(
                MediaDuration::parse_seconds(text)
                    .ok()
                    .map(MediaDuration::as_micros),
                micros,
                "{text:?}"
            );
        }
    }

    #[test]
    fn durations_display_as_seconds_with_milliseconds() {
        assert_eq!(MediaDuration::from_micros(2_345_678).to_string(), "2.345");
        assert_eq!(MediaDuration::ZERO.to_string(), "0.000");
    }

    #[test]
    fn frame_rates_refuse_zero_terms() {
        assert_eq!(
            FrameRate::parse("30000/1001").map(|r| r.to_string()),
            Some("30000/1001".into())
        );
        assert_eq!(FrameRate::parse("25").map(|r| r.per_second()), Some(25.0));
        for bad in ["0/0", "25/0", "0/1", "x/1", "", "-25/1"] {
            assert_eq!(FrameRate::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_quarter_turn_swaps_the_displayed_sides() {
        let coded = Dimensions::new(1920, 1080).unwrap();
        let codec = CodecName::parse("h264").unwrap();
        for (rotation, portrait) in [
            (0, false),
            (90, true),
            (-90, true),
            (180, false),
            (270, true),
            (45, false),
        ] {
            let v = VideoStream::new(coded, rotation, None, codec.clone(), false);
            assert_eq!(v.display().is_portrait(), portrait, "{rotation}");
        }
    }

    #[test]
    fn a_cover_picture_gives_way_to_moving_pictures() {
        let codec = |c| CodecName::parse(c).unwrap();
        let cover = VideoStream::new(
            Dimensions::new(600, 600).unwrap(),
            0,
            None,
            codec("mjpeg"),
            true,
        );
        let film = VideoStream::new(
            Dimensions::new(640, 360).unwrap(),
            0,
            None,
            codec("h264"),
            false,
        );
        let format = ContainerFormat::parse("mov").unwrap();
        let probe = MediaProbe::new(
            format.clone(),
            None,
            vec![cover.clone(), film.clone()],
            None,
        );
        assert_eq!(probe.video(), Some(&film));
        let probe = MediaProbe::new(format, None, vec![cover.clone()], None);
        assert_eq!(probe.video(), Some(&cover));
    }

    #[test]
    fn empty_or_zero_values_are_not_constructible() {
        assert!(Dimensions::new(0, 10).is_none() && Dimensions::new(10, 0).is_none());
        assert!(AudioStream::new(0, 48_000, CodecName::parse("aac").unwrap()).is_none());
        assert!(AudioStream::new(2, 0, CodecName::parse("aac").unwrap()).is_none());
        assert!(CodecName::parse("").is_none() && CodecName::parse("h 264").is_none());
        assert!(ContainerFormat::parse("").is_none());
    }

    proptest! {
        #[test]
        fn seconds_round_trip_through_micros(secs in 0u64..1_000_000, micros in 0u64..1_000_000) {
            let text = format!("{secs}.{micros:06}");
            let parsed = MediaDuration::parse_seconds(&text).unwrap();
            prop_assert_eq!(parsed.as_micros(), secs * 1_000_000 + micros);
        }
    }
}
