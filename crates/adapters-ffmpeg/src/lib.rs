//! medialib's media processing on Debian's `ffmpeg` and `ffprobe` (5.1), run as child
//! processes: the [`MediaProcessor`] port.
//!
//! Each step is one tool run in the caller's work directory: ffprobe for the probe; one ffmpeg
//! for both renditions (a `split` filter, keyframes forced every 2 s so renditions and HLS
//! segments switch on the same frames); one for HLS packaging by stream copy; one for the
//! stills; one for the sprite sheets; one for the `.m4a`; one for the waveform's samples and
//! picture. The tools run under `nice`, read only local files (`-protocol_whitelist file`), and
//! report `-progress` on their standard output, which a watchdog follows (see `run.rs`).
//! What to make (sizes, bitrates, names) is the domain's plan; this crate only spells it in
//! ffmpeg's words.

mod probe;
mod run;

use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use medialib_domain::media::derive::{
    AudioEncoding, AudioPlan, ImagePlan, KEYFRAME_SECS, SPRITE_GRID, SPRITE_INTERVAL_SECS,
    STILL_SIZES, SpritePlan, StillFormat, VideoPlan, WAVEFORM_SAMPLE_RATE, still_path,
};
use medialib_domain::media::documents::{Waveform, WaveformBuilder};
use medialib_domain::media::probe::{MediaDuration, MediaProbe};
use medialib_ports::processing::{
    MediaProcessor, ProbeError, ProcessError, ProgressSink, ToolFailure,
};

use crate::run::{Launcher, RunFailure, file_url, last_line};

/// How the tools are found and run.
#[derive(Debug, Clone)]
pub struct FfmpegSettings {
    /// The `ffmpeg` program (a path, or a name looked up in `PATH`).
    pub ffmpeg: PathBuf,
    /// The `ffprobe` program.
    pub ffprobe: PathBuf,
    /// The niceness the tools run at (`nice -n`), so that serving keeps the CPU; 0 runs them at
    /// the caller's priority.
    pub niceness: u8,
    /// Whether the tools also run in the `SCHED_IDLE` class (`chrt --idle 0`), getting only
    /// CPU time nothing else wants (`processing_priority = idle`); with a niceness of 0 they
    /// run at the caller's priority whatever this says.
    pub idle_class: bool,
    /// How long a tool may go without progress before it is ended (`job_stall_timeout`).
    pub stall_timeout: Duration,
}

impl Default for FfmpegSettings {
    /// Debian's tools from `PATH`, niceness 15 (as PeerTube) in the `SCHED_IDLE` class, a
    /// 120 s stall timeout.
    fn default() -> Self {
        Self {
            ffmpeg: PathBuf::from("ffmpeg"),
            ffprobe: PathBuf::from("ffprobe"),
            niceness: 15,
            idle_class: true,
            stall_timeout: Duration::from_secs(120),
        }
    }
}

/// The [`MediaProcessor`] on ffmpeg.
#[derive(Debug, Clone)]
pub struct FfmpegProcessor {
    settings: FfmpegSettings,
    launcher: Launcher,
}

/// Pieces of an ffmpeg message that say the input itself is broken, not the tool.
const BROKEN_INPUT: [&str; 6] = [
    "Invalid data found when processing input",
    "moov atom not found",
    "Error while decoding",
    "corrupt",
    "Invalid NAL",
    "does not contain any stream",
];

/// The colour of waveform pictures.
const WAVEFORM_COLOUR: &str = "0x2f6fd6";

impl FfmpegProcessor {
    /// A processor with these settings.
    pub fn new(settings: FfmpegSettings) -> Self {
        let launcher = Launcher {
            niceness: settings.niceness,
            idle_class: settings.idle_class,
            stall_timeout: settings.stall_timeout,
        };
        Self { settings, launcher }
    }

    /// Runs ffmpeg in `work` and makes its failure the port's.
    fn ffmpeg(
        &self,
        work: &Path,
        source: Option<&Path>,
        args: Vec<OsString>,
        total: Option<MediaDuration>,
        sink: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError> {
        self.launcher
            .ffmpeg(&self.settings.ffmpeg, work, &args, total, sink)
            .map_err(|failure| match failure {
                RunFailure::Stalled => ProcessError::Stalled(self.settings.stall_timeout),
                RunFailure::Stopped => ProcessError::Stopped,
                RunFailure::Exit { ref stderr, .. }
                    if BROKEN_INPUT.iter().any(|m| stderr.contains(m)) =>
                {
                    ProcessError::NotMedia(without_path(last_line(stderr), source))
                }
                other => ProcessError::Tool(other.into_tool_failure("ffmpeg")),
            })
    }
}

/// A tool's message without the path it names (ffmpeg writes `PATH: reason`).
fn without_path(message: &str, path: Option<&Path>) -> String {
    let mut message = message.to_owned();
    if let Some(path) = path {
        for form in [
            fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()),
            path.to_owned(),
        ] {
            let text = form.to_string_lossy();
            for prefix in [format!("file:{text}: "), format!("{text}: ")] {
                message = message.replace(&prefix, "");
            }
        }
    }
    message
}

fn os(items: &[&str]) -> Vec<OsString> {
    items.iter().map(OsString::from).collect()
}

/// The first audio stream as AAC at the plan's bitrate, channels and rate.
fn aac(a: &AudioEncoding) -> Vec<OsString> {
    os(&[
        "-map",
        "0:a:0",
        "-c:a",
        "aac",
        "-b:a",
        &format!("{}k", a.kbps()),
        "-ac",
        &a.channels().to_string(),
        "-ar",
        &a.sample_rate().to_string(),
    ])
}

fn io_failure(tool: &'static str, what: &str, e: &std::io::Error) -> ProcessError {
    ProcessError::Tool(ToolFailure {
        tool,
        reason: format!("{what}: {e}"),
    })
}

/// The input options every run uses: local files only.
fn input(source: &Path) -> Result<Vec<OsString>, ProcessError> {
    let url = file_url(source).map_err(|e| io_failure("ffmpeg", "cannot open the source", &e))?;
    Ok(vec![
        "-protocol_whitelist".into(),
        "file".into(),
        "-i".into(),
        url,
    ])
}

/// Creates the directories of `paths` under `work`.
fn make_dirs(work: &Path, paths: &[String]) -> Result<(), ProcessError> {
    for path in paths {
        if let Some(dir) = Path::new(path).parent() {
            fs::create_dir_all(work.join(dir))
                .map_err(|e| io_failure("ffmpeg", "cannot create an output directory", &e))?;
        }
    }
    Ok(())
}

/// Checks that ffmpeg wrote each of `paths` (it may exit 0 having encoded nothing).
fn check_written(work: &Path, paths: &[String]) -> Result<(), ProcessError> {
    for path in paths {
        let written = fs::metadata(work.join(path)).is_ok_and(|m| m.len() > 0);
        if !written {
            return Err(ProcessError::Tool(ToolFailure {
                tool: "ffmpeg",
                reason: format!("it wrote no {path}"),
            }));
        }
    }
    Ok(())
}

/// The filter graph and outputs of the three stills from the first video stream: scaled to
/// cover 1280x760 first (a large source is not kept whole), the most representative of a few
/// frames (`thumbnail`), then each size scaled to cover and cropped in the middle.
fn stills_args(format: StillFormat) -> (Vec<OsString>, Vec<String>) {
    let largest = STILL_SIZES[STILL_SIZES.len() - 1];
    let labels: Vec<String> = (0..STILL_SIZES.len()).map(|i| format!("s{i}")).collect();
    let mut graph = format!(
        "[0:v:0]scale={w}:{h}:force_original_aspect_ratio=increase,thumbnail=30,split={n}{outs}",
        w = largest.width(),
        h = largest.height(),
        n = STILL_SIZES.len(),
        outs = labels.iter().map(|l| format!("[{l}]")).collect::<String>()
    );
    let mut args = Vec::new();
    let mut paths = Vec::new();
    for (i, size) in STILL_SIZES.iter().enumerate() {
        let (w, h) = (size.width(), size.height());
        graph.push_str(&format!(
            ";[s{i}]scale={w}:{h}:force_original_aspect_ratio=increase,crop={w}:{h},setsar=1[o{i}]"
        ));
        let path = still_path(*size, format);
        args.extend(os(&["-map", &format!("[o{i}]"), "-frames:v", "1"]));
        if format == StillFormat::Jpeg {
            args.extend(os(&["-q:v", "3"]));
        }
        args.push(path.clone().into());
        paths.push(path);
    }
    let mut all = os(&["-filter_complex", &graph]);
    all.extend(args);
    (all, paths)
}

fn no_progress() -> impl FnMut(medialib_domain::media::progress::Percent) -> bool {
    |_| true
}

impl MediaProcessor for FfmpegProcessor {
    fn probe(&self, source: &Path) -> Result<MediaProbe, ProbeError> {
        let url = file_url(source).map_err(|e| ToolFailure {
            tool: "ffprobe",
            reason: format!("cannot open the source: {e}"),
        })?;
        let mut args = os(&[
            "-v",
            "error",
            "-protocol_whitelist",
            "file",
            "-print_format",
            "json",
            "-show_format",
            "-show_streams",
        ]);
        args.push(url);
        match self.launcher.capture(&self.settings.ffprobe, &args) {
            Ok((json, stderr)) => {
                probe::parse(&json, probe::refused_size(&stderr)).map_err(|unusable| match unusable
                {
                    probe::Unusable::NoFormat => {
                        ProbeError::NotMedia("no audio, video or picture found".to_owned())
                    }
                    probe::Unusable::NotJson(e) => ProbeError::Tool(ToolFailure {
                        tool: "ffprobe",
                        reason: format!("its output is not JSON: {e}"),
                    }),
                })
            }
            // An existing file that ffprobe reads and refuses is not media; a signal (a crash,
            // the watchdog) is the tool's failure.
            Err(RunFailure::Exit { status, stderr }) if status.code().is_some() => {
                let said = without_path(last_line(&stderr), Some(source));
                Err(ProbeError::NotMedia(if said.is_empty() {
                    format!("ffprobe refused it ({status})")
                } else {
                    said
                }))
            }
            Err(other) => Err(ProbeError::Tool(other.into_tool_failure("ffprobe"))),
        }
    }

    fn transcode(
        &self,
        source: &Path,
        plan: &VideoPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError> {
        let renditions = plan.renditions();
        let paths: Vec<String> = renditions.iter().map(|r| r.mp4_path()).collect();
        make_dirs(work, &paths)?;
        let mut args = input(source)?;
        let mut graph = format!("[0:v:0]split={}", renditions.len());
        for i in 0..renditions.len() {
            graph.push_str(&format!("[v{i}]"));
        }
        for (i, r) in renditions.iter().enumerate() {
            let (w, h) = (r.size().width(), r.size().height());
            graph.push_str(&format!(
                ";[v{i}]scale={w}:{h},setsar=1,format=yuv420p[o{i}]"
            ));
        }
        args.extend(os(&["-filter_complex", &graph]));
        for (i, (r, path)) in renditions.iter().zip(&paths).enumerate() {
            args.extend(os(&[
                "-map",
                &format!("[o{i}]"),
                "-c:v",
                "libx264",
                "-preset",
                "veryfast",
                "-profile:v",
                "high",
                "-b:v",
                &format!("{}k", r.video_kbps()),
                "-maxrate",
                &format!("{}k", r.max_kbps()),
                "-bufsize",
                &format!("{}k", r.buffer_kbits()),
                "-force_key_frames",
                &format!("expr:gte(t,n_forced*{KEYFRAME_SECS})"),
                "-sc_threshold",
                "0",
            ]));
            if let Some(gop) = r.keyframe_interval() {
                args.extend(os(&[
                    "-g",
                    &gop.to_string(),
                    "-keyint_min",
                    &gop.to_string(),
                ]));
            }
            if let (true, Some(rate)) = (r.changes_frame_rate(), r.frame_rate()) {
                args.extend(os(&["-r", &rate.to_string()]));
            }
            match r.audio() {
                Some(a) => args.extend(aac(&a)),
                None => args.push("-an".into()),
            }
            args.extend(os(&["-sn", "-dn", "-movflags", "+faststart", path]));
        }
        self.ffmpeg(work, Some(source), args, Some(plan.duration()), progress)?;
        check_written(work, &paths)
    }

    fn package_hls(&self, plan: &VideoPlan, work: &Path) -> Result<(), ProcessError> {
        let renditions = plan.renditions();
        let mut outputs = vec![VideoPlan::HLS_MASTER_PATH.to_owned()];
        let mut args = Vec::new();
        let mut maps = Vec::new();
        let mut var_streams = Vec::new();
        let mut audio_index = 0;
        for (i, r) in renditions.iter().enumerate() {
            args.extend(input(&work.join(r.mp4_path()))?);
            maps.extend(os(&["-map", &format!("{i}:v:0")]));
            let mut var = format!("v:{i}");
            if r.audio().is_some() {
                maps.extend(os(&["-map", &format!("{i}:a:0")]));
                var.push_str(&format!(",a:{audio_index}"));
                audio_index += 1;
            }
            var.push_str(&format!(",name:{}", r.name()));
            var_streams.push(var);
            outputs.push(r.hls_playlist_path());
            outputs.push(r.hls_media_path());
        }
        make_dirs(work, &outputs)?;
        let master_name = Path::new(VideoPlan::HLS_MASTER_PATH)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = Path::new(VideoPlan::HLS_MASTER_PATH)
            .parent()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        args.extend(maps);
        args.extend(os(&[
            "-c",
            "copy",
            "-f",
            "hls",
            "-hls_time",
            &medialib_domain::media::derive::HLS_SEGMENT_SECS.to_string(),
            "-hls_playlist_type",
            "vod",
            "-hls_segment_type",
            "fmp4",
            "-hls_flags",
            "single_file",
            "-master_pl_name",
            &master_name,
            "-var_stream_map",
            &var_streams.join(" "),
            &format!("{dir}/%v.m3u8"),
        ]));
        self.ffmpeg(work, None, args, Some(plan.duration()), &mut no_progress())?;
        check_written(work, &outputs)
    }

    fn video_stills(
        &self,
        source: &Path,
        plan: &VideoPlan,
        work: &Path,
    ) -> Result<(), ProcessError> {
        let (graph, paths) = stills_args(StillFormat::Jpeg);
        make_dirs(work, &paths)?;
        let mut args = os(&["-ss", &plan.still_at().to_string()]);
        args.extend(input(source)?);
        args.extend(graph);
        self.ffmpeg(work, Some(source), args, None, &mut no_progress())?;
        check_written(work, &paths)
    }

    fn sprites(
        &self,
        plan: &VideoPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError> {
        let sprites = plan.sprites();
        let paths: Vec<String> = (1..=sprites.sheets()).map(SpritePlan::sheet_path).collect();
        make_dirs(work, &paths)?;
        let pattern = SpritePlan::sheet_path(1).replace("_1.", "_%d.");
        let tile = sprites.tile();
        // The last frame is repeated for one interval past the end, so `fps` always has the
        // plan's count of thumbnails to give; `trim` keeps exactly that many.
        let filter = format!(
            "tpad=stop_mode=clone:stop_duration={i},fps=1/{i},trim=end_frame={n},scale={w}:{h},setsar=1,tile={g}x{g}",
            i = SPRITE_INTERVAL_SECS,
            n = sprites.frames(),
            w = tile.width(),
            h = tile.height(),
            g = SPRITE_GRID,
        );
        let mut args = input(&work.join(plan.sprite_source().mp4_path()))?;
        args.extend(os(&["-an", "-vf", &filter, "-q:v", "4", &pattern]));
        self.ffmpeg(work, None, args, Some(plan.duration()), progress)?;
        check_written(work, &paths)?;
        // One sheet more than planned would be one the track never names: a plan mismatch.
        let extra = SpritePlan::sheet_path(sprites.sheets() + 1);
        if work.join(&extra).exists() {
            return Err(ProcessError::Tool(ToolFailure {
                tool: "ffmpeg",
                reason: format!("it wrote {extra}, more sprite sheets than planned"),
            }));
        }
        Ok(())
    }

    fn image_stills(
        &self,
        source: &Path,
        _plan: &ImagePlan,
        work: &Path,
    ) -> Result<(), ProcessError> {
        let (graph, paths) = stills_args(StillFormat::Jpeg);
        make_dirs(work, &paths)?;
        let mut args = input(source)?;
        args.extend(graph);
        self.ffmpeg(work, Some(source), args, None, &mut no_progress())?;
        check_written(work, &paths)
    }

    fn encode_audio(
        &self,
        source: &Path,
        plan: &AudioPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError> {
        let path = AudioPlan::M4A_PATH.to_owned();
        make_dirs(work, std::slice::from_ref(&path))?;
        let a = plan.encoding();
        let mut args = input(source)?;
        args.extend(os(&["-vn", "-sn", "-dn"]));
        args.extend(aac(&a));
        args.extend(os(&["-movflags", "+faststart", &path]));
        self.ffmpeg(work, Some(source), args, Some(plan.duration()), progress)?;
        check_written(work, &[path])
    }

    fn waveform(
        &self,
        source: &Path,
        plan: &AudioPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<Waveform, ProcessError> {
        // One decode: mono samples at 8 kHz into a scratch file for the peaks, and the same
        // samples drawn as the three pictures.
        let samples_path = "waveform.s16".to_owned();
        let pictures: Vec<String> = STILL_SIZES
            .iter()
            .map(|s| still_path(*s, StillFormat::Png))
            .collect();
        make_dirs(work, &pictures)?;
        let n = STILL_SIZES.len();
        let mut graph = format!(
            "[0:a:0]aresample={WAVEFORM_SAMPLE_RATE},aformat=channel_layouts=mono,asplit={}[pcm]",
            n + 1
        );
        for i in 0..n {
            graph.push_str(&format!("[a{i}]"));
        }
        for (i, size) in STILL_SIZES.iter().enumerate() {
            graph.push_str(&format!(
                ";[a{i}]showwavespic=s={size}:colors={WAVEFORM_COLOUR}[o{i}]"
            ));
        }
        let mut args = input(source)?;
        args.extend(os(&["-filter_complex", &graph]));
        args.extend(os(&[
            "-map",
            "[pcm]",
            "-f",
            "s16le",
            "-c:a",
            "pcm_s16le",
            &samples_path,
        ]));
        for (i, path) in pictures.iter().enumerate() {
            args.extend(os(&["-map", &format!("[o{i}]"), "-frames:v", "1", path]));
        }
        self.ffmpeg(work, Some(source), args, Some(plan.duration()), progress)?;
        check_written(work, &pictures)?;
        let scratch = work.join(&samples_path);
        let mut builder = WaveformBuilder::new(WAVEFORM_SAMPLE_RATE, plan.samples_per_point());
        let mut file = fs::File::open(&scratch)
            .map_err(|e| io_failure("ffmpeg", "cannot read the waveform's samples", &e))?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| io_failure("ffmpeg", "cannot read the waveform's samples", &e))?;
            if n == 0 {
                break;
            }
            builder.push_le_bytes(buf.get(..n).unwrap_or_default());
        }
        drop(file);
        let _ = fs::remove_file(&scratch);
        Ok(builder.finish())
    }
}
