//! What a finished processing job leaves: the derived files of one source, where they are, and
//! what each is (DECISIONS §7); and the rules of the job itself: how its steps add up to one
//! percentage and when a failed attempt is tried again.
//!
//! A job writes its files under a directory of its own (`media/{object}/{dir}/…`, `dir` fresh
//! for every attempt), and the set names that directory: an attempt that died, or whose result
//! was superseded, leaves files that no record points to, so they are never served and can be
//! deleted by whoever finds them.

use std::fmt;
use std::time::Duration;

use super::derive::{AudioPlan, StillFormat, VideoPlan, still_path};
use super::probe::{Dimensions, MediaDuration};
use super::progress::Percent;

/// What a derived file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileRole {
    /// An MP4 rendition of a video, or the `.m4a` of an audio recording.
    Rendition,
    /// The HLS master playlist.
    Hls,
    /// An HLS media playlist of one rendition.
    HlsPlaylist,
    /// The fMP4 file an HLS media playlist addresses by byte ranges.
    HlsMedia,
    /// The SMIL document listing the MP4s.
    Smil,
    /// The WebVTT thumbnail track.
    Thumbnails,
    /// A sprite sheet of the thumbnail track.
    Sprite,
    /// One of the three stills (`images`).
    Still,
    /// The waveform peaks (JSON).
    Waveform,
}

impl FileRole {
    /// Every role, in the order the `media` call lists them.
    pub const ALL: [Self; 9] = [
        Self::Rendition,
        Self::Hls,
        Self::HlsPlaylist,
        Self::HlsMedia,
        Self::Smil,
        Self::Thumbnails,
        Self::Sprite,
        Self::Still,
        Self::Waveform,
    ];

    /// The role's name in the `media` call and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rendition => "rendition",
            Self::Hls => "hls",
            Self::HlsPlaylist => "hls-playlist",
            Self::HlsMedia => "hls-media",
            Self::Smil => "smil",
            Self::Thumbnails => "thumbnails",
            Self::Sprite => "sprite",
            Self::Still => "still",
            Self::Waveform => "waveform",
        }
    }

    /// Parses a name written by [`FileRole::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

impl fmt::Display for FileRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A path inside a set's directory (`hls/720p.m3u8`): one or more `/`-separated segments of
/// ASCII letters, digits, `-`, `_` and `.`, none empty, `.` or `..`, at most 128 bytes, and not
/// `source` or `source.*` (the source's name in delivery URLs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DerivedPath(String);

/// Why text is not a [`DerivedPath`] or a [`DerivedSet`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a derived file record: {0}")]
pub struct InvalidDerived(String);

fn invalid(what: impl Into<String>) -> InvalidDerived {
    InvalidDerived(what.into())
}

/// The bytes a path segment may hold (ASCII letters, digits, `-`, `_`, `.`), as a table: one
/// load a byte where the class test was several comparisons.
const PATH_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.';
        b += 1;
    }
    table
};

impl DerivedPath {
    /// Checks a path.
    pub fn parse(text: &str) -> Result<Self, InvalidDerived> {
        // One pass over the bytes (every describe of processed media parses a dozen).
        let segment_ok = |s: &[u8]| !s.is_empty() && s != b"." && s != b"..";
        let bytes = text.as_bytes();
        let mut start = 0;
        let mut ok = !bytes.is_empty() && bytes.len() <= 128;
        for (i, &b) in bytes.iter().enumerate() {
            if !ok {
                break;
            }
            if b == b'/' {
                ok = segment_ok(&bytes[start..i]);
                start = i + 1;
            } else {
                ok = PATH_BYTE[usize::from(b)];
            }
        }
        if !ok || !segment_ok(&bytes[start..]) {
            return Err(invalid(format!("bad path {text:?}")));
        }
        if text == "source" || text.starts_with("source.") {
            return Err(invalid("a derived file cannot be named like the source"));
        }
        Ok(Self(text.to_owned()))
    }

    /// The path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The format: the last segment's extension (`m3u8`), or `bin` without one.
    pub fn format(&self) -> &str {
        let name = self.0.rsplit('/').next().unwrap_or(&self.0);
        name.rsplit_once('.').map_or("bin", |(_, e)| e)
    }
}

impl fmt::Display for DerivedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One derived file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedFile {
    /// What it is.
    pub role: FileRole,
    /// Where it is inside the set's directory.
    pub path: DerivedPath,
    /// Its size in bytes.
    pub size: u64,
    /// The picture's size (renditions, stills, sprite sheets).
    pub dimensions: Option<Dimensions>,
    /// Bits a second (renditions).
    pub bitrate: Option<u32>,
}

/// The name of a set's directory: 1 to 32 lowercase hex digits, fresh for every attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DerivedDir(String);

impl DerivedDir {
    /// Checks a directory name.
    pub fn parse(text: &str) -> Result<Self, InvalidDerived> {
        if (1..=32).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Self(text.to_owned()))
        } else {
            Err(invalid(format!("bad directory {text:?}")))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DerivedDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The derived files of one source, as one finished job recorded them: never empty for a
/// video, audio or image, and no path twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedSet {
    dir: DerivedDir,
    files: Vec<DerivedFile>,
    duration: Option<MediaDuration>,
}

impl DerivedSet {
    /// A set in `dir`; refuses an empty list and a path named twice.
    pub fn new(
        dir: DerivedDir,
        files: Vec<DerivedFile>,
        duration: Option<MediaDuration>,
    ) -> Result<Self, InvalidDerived> {
        if files.is_empty() {
            return Err(invalid("no files"));
        }
        let mut paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        paths.sort_unstable();
        if paths.windows(2).any(|w| w[0] == w[1]) {
            return Err(invalid("a path named twice"));
        }
        Ok(Self {
            dir,
            files,
            duration,
        })
    }

    /// The directory the files are in.
    pub fn dir(&self) -> &DerivedDir {
        &self.dir
    }

    /// The files, in the order the job recorded them.
    pub fn files(&self) -> &[DerivedFile] {
        &self.files
    }

    /// The source's length, for video and audio.
    pub fn duration(&self) -> Option<MediaDuration> {
        self.duration
    }

    /// The length in whole seconds, rounded to the nearest (`metadata.duration`).
    pub fn duration_secs(&self) -> Option<crate::time::DurationSecs> {
        let micros = self.duration?.as_micros();
        let secs = micros.saturating_add(500_000) / 1_000_000;
        crate::time::DurationSecs::from_seconds(i64::try_from(secs).ok()?).ok()
    }

    /// The file at `path`, when the set has one.
    pub fn file(&self, path: &str) -> Option<&DerivedFile> {
        self.files.iter().find(|f| f.path.as_str() == path)
    }

    /// The files of `role`.
    pub fn of_role(&self, role: FileRole) -> impl Iterator<Item = &DerivedFile> {
        self.files.iter().filter(move |f| f.role == role)
    }

    /// The still of `size` (`images`), when there is one.
    pub fn still(&self, size: Dimensions) -> Option<&DerivedFile> {
        self.of_role(FileRole::Still)
            .find(|f| f.dimensions == Some(size))
    }

    /// The set as text for the database: a first line `v1 DIR DURATION` (microseconds, or
    /// `-`), then one line per file, tab-separated: role, path, size, `WxH` or `-`, bitrate or
    /// `-`.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "v1 {} {}",
            self.dir,
            self.duration
                .map_or_else(|| "-".to_owned(), |d| d.as_micros().to_string())
        );
        for f in &self.files {
            out.push('\n');
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}",
                f.role,
                f.path,
                f.size,
                f.dimensions
                    .map_or_else(|| "-".to_owned(), |d| d.to_string()),
                f.bitrate.map_or_else(|| "-".to_owned(), |b| b.to_string()),
            ));
        }
        out
    }

    /// Parses text written by [`DerivedSet::to_text`].
    pub fn from_text(text: &str) -> Result<Self, InvalidDerived> {
        let mut lines = text.split('\n');
        let head = lines.next().unwrap_or_default();
        let mut words = head.split(' ');
        if words.next() != Some("v1") {
            return Err(invalid("unknown version"));
        }
        let dir = DerivedDir::parse(words.next().unwrap_or_default())?;
        let duration = match words.next() {
            Some("-") => None,
            Some(n) => Some(MediaDuration::from_micros(
                n.parse().map_err(|_| invalid("bad duration"))?,
            )),
            None => return Err(invalid("no duration")),
        };
        if words.next().is_some() {
            return Err(invalid("trailing words in the first line"));
        }
        // One file a line, and a line is some 40 bytes: sized from the text's length (counting
        // the lines would cost a pass of its own), not grown as the lines come.
        let mut files = Vec::with_capacity(text.len() / 32);
        for line in lines {
            files.push(parse_file(line)?);
        }
        Self::new(dir, files, duration)
    }
}

/// The `N` tab-separated fields of `line`; `None` when it has another number of them.
fn tab_fields<const N: usize>(line: &str) -> Option<[&str; N]> {
    let mut fields = [""; N];
    let mut rest = line;
    for (i, field) in fields.iter_mut().enumerate() {
        match rest.bytes().position(|b| b == b'\t') {
            Some(at) if i + 1 < N => {
                *field = &rest[..at];
                rest = &rest[at + 1..];
            }
            None if i + 1 == N => *field = rest,
            _ => return None,
        }
    }
    Some(fields)
}

fn parse_file(line: &str) -> Result<DerivedFile, InvalidDerived> {
    let Some([role, path, size, dimensions, bitrate]) = tab_fields(line) else {
        return Err(invalid("a file line needs five fields"));
    };
    fn optional(s: &str) -> Option<&str> {
        (s != "-").then_some(s)
    }
    Ok(DerivedFile {
        role: FileRole::parse(role).ok_or_else(|| invalid(format!("unknown role {role:?}")))?,
        path: DerivedPath::parse(path)?,
        size: size.parse().map_err(|_| invalid("bad size"))?,
        dimensions: optional(dimensions)
            .map(|d| Dimensions::parse(d).ok_or_else(|| invalid("bad dimensions")))
            .transpose()?,
        bitrate: optional(bitrate)
            .map(|b| b.parse().map_err(|_| invalid("bad bitrate")))
            .transpose()?,
    })
}

/// A step of a processing job, with its share of the job's percentage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Copying the source from storage and probing it.
    Fetch,
    /// Encoding the renditions (video) or the `.m4a` (audio).
    Encode,
    /// HLS packaging, stills, documents.
    Package,
    /// The thumbnail sprites (video) or the waveform (audio).
    Pictures,
    /// Writing the files to storage.
    Store,
}

impl Step {
    /// Where the step starts and how much of the whole it is, in percent: encoding dominates a
    /// video's time (measured: some 80 % of the wall time of a 1080p clip), pictures follow.
    fn span(self) -> (u8, u8) {
        match self {
            Self::Fetch => (0, 5),
            Self::Encode => (5, 75),
            Self::Package => (80, 5),
            Self::Pictures => (85, 10),
            Self::Store => (95, 5),
        }
    }

    /// The job's percentage when this step is `within` done; 100 only when the job is.
    pub fn overall(self, within: Percent) -> Percent {
        let (start, share) = self.span();
        let part = u16::from(share) * u16::from(within.value()) / 100;
        Percent::new(u8::try_from(u16::from(start) + part).unwrap_or(99).min(99))
    }
}

/// How often a job is tried and how long it waits between tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    attempts: u32,
    base: Duration,
}

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Try again after this delay.
    RetryIn(Duration),
    /// Give up: the media is `failed`.
    GiveUp,
}

impl RetryPolicy {
    /// The longest wait between two attempts.
    pub const MAX_DELAY: Duration = Duration::from_secs(3600);

    /// At most `attempts` tries (at least 1), the second `base` after the first failed, each
    /// further wait twice the one before, capped at [`RetryPolicy::MAX_DELAY`].
    pub fn new(attempts: u32, base: Duration) -> Self {
        Self {
            attempts: attempts.max(1),
            base,
        }
    }

    /// The most tries.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// What follows when attempt `attempt` (from 1) failed; `retryable` says whether another
    /// attempt could succeed (a source that is not media fails the same way every time).
    pub fn after_failure(&self, attempt: u32, retryable: bool) -> AfterFailure {
        if !retryable || attempt >= self.attempts {
            return AfterFailure::GiveUp;
        }
        let doublings = attempt.saturating_sub(1).min(16);
        let delay = self
            .base
            .saturating_mul(1 << doublings)
            .min(Self::MAX_DELAY);
        AfterFailure::RetryIn(delay)
    }

    /// Whether a job claimed for its `attempt`-th try has used up its tries already: its
    /// earlier attempts ended without an outcome (the worker died each time).
    pub fn exhausted(&self, attempt: u32) -> bool {
        attempt > self.attempts
    }
}

/// The message a job gets when its tries are used up and the last one ended without an
/// outcome (its worker stopped while working on it).
pub fn abandoned_message(attempts: u32) -> String {
    format!(
        "Processing did not finish in {attempts} tries: the last one stopped without a result \
         (the worker processing it ended). It is not tried again; ask for reprocessing once the \
         cause is fixed."
    )
}

/// The paths of the derived files of a video plan: every rendition's MP4, HLS playlist and
/// media, the master, the SMIL, the thumbnail track and its sheets, the three stills.
pub fn video_paths(plan: &VideoPlan) -> Vec<(FileRole, String)> {
    let mut paths = Vec::new();
    for r in plan.renditions() {
        paths.push((FileRole::Rendition, r.mp4_path()));
    }
    paths.push((FileRole::Hls, VideoPlan::HLS_MASTER_PATH.to_owned()));
    for r in plan.renditions() {
        paths.push((FileRole::HlsPlaylist, r.hls_playlist_path()));
        paths.push((FileRole::HlsMedia, r.hls_media_path()));
    }
    paths.push((FileRole::Smil, VideoPlan::SMIL_PATH.to_owned()));
    paths.push((
        FileRole::Thumbnails,
        super::derive::SpritePlan::VTT_PATH.to_owned(),
    ));
    for n in 1..=plan.sprites().sheets() {
        paths.push((FileRole::Sprite, super::derive::SpritePlan::sheet_path(n)));
    }
    for size in super::derive::STILL_SIZES {
        paths.push((FileRole::Still, still_path(size, StillFormat::Jpeg)));
    }
    paths
}

/// The paths of an audio plan's files: the `.m4a`, the waveform and its three pictures.
pub fn audio_paths() -> Vec<(FileRole, String)> {
    let mut paths = vec![
        (FileRole::Rendition, AudioPlan::M4A_PATH.to_owned()),
        (FileRole::Waveform, AudioPlan::WAVEFORM_PATH.to_owned()),
    ];
    for size in super::derive::STILL_SIZES {
        paths.push((FileRole::Still, still_path(size, StillFormat::Png)));
    }
    paths
}

/// The paths of an image's files: its three sizes.
pub fn image_paths() -> Vec<(FileRole, String)> {
    super::derive::STILL_SIZES
        .into_iter()
        .map(|size| (FileRole::Still, still_path(size, StillFormat::Jpeg)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(role: FileRole, path: &str) -> DerivedFile {
        DerivedFile {
            role,
            path: DerivedPath::parse(path).unwrap(),
            size: 10,
            dimensions: None,
            bitrate: None,
        }
    }

    fn dir() -> DerivedDir {
        DerivedDir::parse("0a1b").unwrap()
    }

    #[test]
    fn a_set_round_trips_through_its_text() {
        let mut mp4 = file(FileRole::Rendition, "mp4/720p.mp4");
        mp4.dimensions = Dimensions::new(1280, 720);
        mp4.bitrate = Some(2_928_000);
        let set = DerivedSet::new(
            dir(),
            vec![mp4, file(FileRole::Hls, "hls/master.m3u8")],
            Some(MediaDuration::from_millis(61_500)),
        )
        .unwrap();
        let text = set.to_text();
        assert_eq!(
            text,
            "v1 0a1b 61500000\nrendition\tmp4/720p.mp4\t10\t1280x720\t2928000\nhls\thls/master.m3u8\t10\t-\t-"
        );
        assert_eq!(DerivedSet::from_text(&text).unwrap(), set);
        assert_eq!(
            set.duration_secs().map(|d| d.seconds()),
            Some(62),
            "61.5 s rounds up"
        );
        let no_length =
            DerivedSet::new(dir(), vec![file(FileRole::Still, "stills/a.jpg")], None).unwrap();
        assert_eq!(
            DerivedSet::from_text(&no_length.to_text()).unwrap(),
            no_length
        );
    }

    #[test]
    fn text_that_is_no_set_is_refused() {
        for bad in [
            "",
            "v2 0a 1\nstill\ta.jpg\t1\t-\t-",
            "v1 XY 1\nstill\ta.jpg\t1\t-\t-",
            "v1 0a\nstill\ta.jpg\t1\t-\t-",
            "v1 0a 1",
            "v1 0a 1\nposter\ta.jpg\t1\t-\t-",
            "v1 0a 1\nstill\t../a.jpg\t1\t-\t-",
            "v1 0a 1\nstill\ta.jpg\t-1\t-\t-",
            "v1 0a 1\nstill\ta.jpg\t1\t0x5\t-",
            "v1 0a 1\nstill\ta.jpg\t1\t-",
            "v1 0a 1\nstill\ta.jpg\t1\t-\t-\t-",
            "v1 0a 1\nstill\ta.jpg\t1\t-\t-\t",
            "v1 0a 1\nstill",
            "v1 0a 1\nstill\ta.jpg\t1\t-\t-\nstill\ta.jpg\t1\t-\t-",
            "v1 0a 1 x\nstill\ta.jpg\t1\t-\t-",
        ] {
            assert!(DerivedSet::from_text(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn derived_paths_stay_inside_their_directory_and_never_shadow_the_source() {
        assert!(DerivedPath::parse(&"a".repeat(129)).is_err());
        assert!(DerivedPath::parse(&"a".repeat(128)).is_ok());
        for good in [
            "a.jpg",
            "hls/720p.m3u8",
            "thumbs/sprite_1.jpg",
            "..a",
            "a/.b",
        ] {
            assert_eq!(DerivedPath::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "/a",
            "a/",
            "a//b",
            "../a",
            "a/./b",
            "a b",
            "a/..",
            ".",
            "a/b/",
            "é.jpg",
            "source",
            "source.mp4",
        ] {
            assert!(DerivedPath::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            DerivedPath::parse("hls/master.m3u8").unwrap().format(),
            "m3u8"
        );
        assert_eq!(DerivedPath::parse("v.d/noext").unwrap().format(), "bin");
    }

    #[test]
    fn a_set_finds_its_files_and_stills() {
        let mut still = file(FileRole::Still, "stills/128x128.jpg");
        still.dimensions = Dimensions::new(128, 128);
        let set = DerivedSet::new(
            dir(),
            vec![still.clone(), file(FileRole::Smil, "video.smil")],
            None,
        )
        .unwrap();
        assert_eq!(set.still(Dimensions::fixed(128, 128)), Some(&still));
        assert_eq!(set.still(Dimensions::fixed(512, 512)), None);
        assert_eq!(set.file("video.smil").map(|f| f.role), Some(FileRole::Smil));
        assert_eq!(set.file("video.smi"), None);
        assert!(DerivedSet::new(dir(), vec![], None).is_err());
    }

    #[test]
    fn steps_add_up_to_a_percentage_that_only_the_end_makes_whole() {
        assert_eq!(Step::Fetch.overall(Percent::ZERO), Percent::ZERO);
        assert_eq!(Step::Encode.overall(Percent::new(50)), Percent::new(42));
        assert_eq!(Step::Encode.overall(Percent::DONE), Percent::new(80));
        assert_eq!(Step::Store.overall(Percent::DONE), Percent::new(99));
        let mut last = Percent::ZERO;
        for step in [
            Step::Fetch,
            Step::Encode,
            Step::Package,
            Step::Pictures,
            Step::Store,
        ] {
            for p in [0, 30, 100] {
                let now = step.overall(Percent::new(p));
                assert!(now >= last, "{step:?} {p}");
                last = now;
            }
        }
    }

    #[test]
    fn retries_back_off_and_end() {
        let policy = RetryPolicy::new(3, Duration::from_secs(30));
        assert_eq!(
            policy.after_failure(1, true),
            AfterFailure::RetryIn(Duration::from_secs(30))
        );
        assert_eq!(
            policy.after_failure(2, true),
            AfterFailure::RetryIn(Duration::from_secs(60))
        );
        assert_eq!(policy.after_failure(3, true), AfterFailure::GiveUp);
        assert_eq!(policy.after_failure(1, false), AfterFailure::GiveUp);
        assert!(!policy.exhausted(3));
        assert!(policy.exhausted(4));
        let long = RetryPolicy::new(40, Duration::from_secs(600));
        assert_eq!(
            long.after_failure(30, true),
            AfterFailure::RetryIn(RetryPolicy::MAX_DELAY)
        );
        assert_eq!(RetryPolicy::new(0, Duration::ZERO).attempts(), 1);
    }
}
