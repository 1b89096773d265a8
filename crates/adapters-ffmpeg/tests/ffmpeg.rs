//! The ffmpeg adapter against Debian's real ffmpeg: media generated here with lavfi (a few
//! seconds, small pictures; nothing committed), each output checked by probing it back.
//!
//! Without ffmpeg these tests fail, saying so; `MEDIALIB_TEST_SKIP_FFMPEG=1` skips them.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use medialib_adapters_ffmpeg::{FfmpegProcessor, FfmpegSettings};
use medialib_domain::media::derive::{
    AudioPlan, DerivePlan, MediaKind, Refusal, STILL_SIZES, SpritePlan, StillFormat, VideoPlan,
    plan, still_path,
};
use medialib_domain::media::documents::thumbnails_vtt;
use medialib_ports::processing::{MediaProcessor, ProbeError, ProcessError};

/// Whether to run: `false` (skip) only when `MEDIALIB_TEST_SKIP_FFMPEG=1`; panics when ffmpeg
/// is missing otherwise.
fn ffmpeg_present() -> bool {
    if std::env::var("MEDIALIB_TEST_SKIP_FFMPEG").as_deref() == Ok("1") {
        eprintln!("MEDIALIB_TEST_SKIP_FFMPEG=1: skipping a test that needs ffmpeg");
        return false;
    }
    for tool in ["ffmpeg", "ffprobe"] {
        let ok = Command::new(tool)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "{tool} is missing: install Debian's `ffmpeg` package (apt-get install ffmpeg), \
             or set MEDIALIB_TEST_SKIP_FFMPEG=1 to skip the media processing tests"
        );
    }
    true
}

fn processor(stall: Duration) -> FfmpegProcessor {
    FfmpegProcessor::new(FfmpegSettings {
        stall_timeout: stall,
        // Not SCHED_IDLE: other tests running at once would starve these (the class itself is
        // tested in run.rs).
        idle_class: false,
        ..FfmpegSettings::default()
    })
}

/// Makes `name` in `dir` with ffmpeg from lavfi inputs; returns its path.
fn generate(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let status = Command::new("ffmpeg")
        .args(["-v", "error", "-y"])
        .args(args)
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success(), "generating {name}");
    path
}

/// A clip of `size` lasting `secs`, with a tone unless `silent`.
fn clip(dir: &Path, name: &str, size: &str, secs: u32, silent: bool) -> PathBuf {
    let video = format!("testsrc2=s={size}:r=25:d={secs}");
    let audio = format!("sine=f=440:sample_rate=48000:d={secs}");
    let mut args = vec!["-f", "lavfi", "-i", &video];
    if !silent {
        args.extend(["-f", "lavfi", "-i", &audio, "-c:a", "aac"]);
    }
    args.extend([
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
        "-f",
        "mp4",
    ]);
    generate(dir, name, &args)
}

/// `(width, height)` of the first video stream, `duration` in seconds, codec names: by ffprobe.
fn facts(path: &Path) -> (u32, u32, f64, String) {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name,width,height:format=duration",
            "-of",
            "json",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "ffprobe {}", path.display());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let streams = v["streams"].as_array().unwrap();
    let picture = streams.iter().find(|s| s["width"].is_number());
    let codecs: Vec<&str> = streams
        .iter()
        .map(|s| s["codec_name"].as_str().unwrap())
        .collect();
    (
        picture.map_or(0, |s| s["width"].as_u64().unwrap() as u32),
        picture.map_or(0, |s| s["height"].as_u64().unwrap() as u32),
        v["format"]["duration"]
            .as_str()
            .map_or(0.0, |d| d.parse().unwrap()),
        codecs.join(","),
    )
}

fn video_plan(processor: &FfmpegProcessor, source: &Path) -> VideoPlan {
    let probe = processor.probe(source).unwrap();
    match plan(MediaKind::Video, &probe).unwrap() {
        DerivePlan::Video(p) => p,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_probe_reads_what_lavfi_made() {
    if !ffmpeg_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "source", "320x240", 2, false);
    let probe = processor(Duration::from_secs(30)).probe(&source).unwrap();
    let video = probe.video().unwrap();
    assert_eq!(video.display().to_string(), "320x240");
    assert_eq!(video.frame_rate().unwrap().to_string(), "25/1");
    assert_eq!(video.codec().as_str(), "h264");
    let audio = probe.audio().unwrap();
    assert_eq!(
        (
            audio.channels(),
            audio.sample_rate(),
            audio.codec().as_str()
        ),
        (1, 48_000, "aac")
    );
    let secs = probe.duration().unwrap().as_secs_f64();
    assert!((secs - 2.0).abs() < 0.1, "{secs}");
}

#[test]
fn a_720p_clip_becomes_two_renditions_hls_stills_and_a_thumbnail_track() {
    if !ffmpeg_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "source", "1280x720", 3, false);
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let ffmpeg = processor(Duration::from_secs(60));
    let plan = video_plan(&ffmpeg, &source);

    let mut seen = Vec::new();
    ffmpeg
        .transcode(&source, &plan, &work, &mut |p| {
            seen.push(p.value());
            true
        })
        .unwrap();
    assert_eq!(seen.last(), Some(&100), "progress ends at 100: {seen:?}");
    let made: Vec<(String, u32, u32, String)> = plan
        .renditions()
        .iter()
        .map(|r| {
            let (w, h, secs, codecs) = facts(&work.join(r.mp4_path()));
            assert!((secs - 3.0).abs() < 0.1, "{} lasts {secs}", r.name());
            (r.name().to_owned(), w, h, codecs)
        })
        .collect();
    assert_eq!(
        made,
        [
            ("720p".to_owned(), 1280, 720, "h264,aac".to_owned()),
            ("360p".to_owned(), 640, 360, "h264,aac".to_owned())
        ]
    );

    ffmpeg.package_hls(&plan, &work).unwrap();
    let master = std::fs::read_to_string(work.join(VideoPlan::HLS_MASTER_PATH)).unwrap();
    let variants: Vec<&str> = master.lines().filter(|l| l.ends_with(".m3u8")).collect();
    assert_eq!(variants, ["720p.m3u8", "360p.m3u8"], "{master}");
    assert!(master.contains("RESOLUTION=1280x720") && master.contains("RESOLUTION=640x360"));
    for r in plan.renditions() {
        let playlist = std::fs::read_to_string(work.join(r.hls_playlist_path())).unwrap();
        let media = format!("{}.m4s", r.name());
        assert!(
            playlist.contains(&format!("#EXT-X-MAP:URI=\"{media}\",BYTERANGE=")),
            "{playlist}"
        );
        assert!(playlist.contains("#EXT-X-ENDLIST"));
        let size = std::fs::metadata(work.join(r.hls_media_path()))
            .unwrap()
            .len();
        // Every byte range lies inside the single media file.
        for range in playlist
            .lines()
            .filter_map(|l| l.strip_prefix("#EXT-X-BYTERANGE:"))
        {
            let (len, at) = range.split_once('@').unwrap();
            assert!(
                len.parse::<u64>().unwrap() + at.parse::<u64>().unwrap() <= size,
                "{range}"
            );
        }
    }

    ffmpeg.video_stills(&source, &plan, &work).unwrap();
    for size in STILL_SIZES {
        let (w, h, _, codec) = facts(&work.join(still_path(size, StillFormat::Jpeg)));
        assert_eq!(
            (w, h, codec.as_str()),
            (size.width(), size.height(), "mjpeg")
        );
    }

    ffmpeg.sprites(&plan, &work, &mut |_| true).unwrap();
    let sprites = plan.sprites();
    assert_eq!((sprites.frames(), sprites.sheets()), (1, 1));
    let sheet = facts(&work.join(SpritePlan::sheet_path(1)));
    assert_eq!((sheet.0, sheet.1), (1600, 900));
    let vtt = thumbnails_vtt(sprites);
    assert_eq!(
        vtt,
        "WEBVTT\n\n00:00:00.000 --> 00:00:03.000\nsprite_1.jpg#xywh=0,0,160,90\n"
    );
}

#[test]
fn sprite_cues_match_the_sheets_of_a_longer_clip() {
    if !ffmpeg_present() {
        return;
    }
    // 12 s: thumbnails at 0, 5 and 10 s on one sheet; the frame count is exactly the plan's.
    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "source", "320x240", 12, true);
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let ffmpeg = processor(Duration::from_secs(60));
    let plan = video_plan(&ffmpeg, &source);
    assert_eq!(plan.renditions().len(), 1, "no 720p from 240 lines");
    ffmpeg
        .transcode(&source, &plan, &work, &mut |_| true)
        .unwrap();
    ffmpeg.sprites(&plan, &work, &mut |_| true).unwrap();
    let tile = plan.sprites().tile();
    assert_eq!(tile.to_string(), "120x90", "aspect 4:3 kept");
    let vtt = thumbnails_vtt(plan.sprites());
    let cues: Vec<&str> = vtt.lines().filter(|l| l.contains("#xywh=")).collect();
    assert_eq!(
        cues,
        [
            "sprite_1.jpg#xywh=0,0,120,90",
            "sprite_1.jpg#xywh=120,0,120,90",
            "sprite_1.jpg#xywh=240,0,120,90"
        ]
    );
    assert_eq!(facts(&work.join(SpritePlan::sheet_path(1))).0, 1200);
    assert!(!work.join(SpritePlan::sheet_path(2)).exists());
}

#[test]
fn a_silent_small_clip_gets_one_rendition_and_a_one_variant_master() {
    if !ffmpeg_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "source", "320x240", 2, true);
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let ffmpeg = processor(Duration::from_secs(60));
    let plan = video_plan(&ffmpeg, &source);
    ffmpeg
        .transcode(&source, &plan, &work, &mut |_| true)
        .unwrap();
    let (w, h, _, codecs) = facts(&work.join("mp4/360p.mp4"));
    assert_eq!((w, h, codecs.as_str()), (320, 240, "h264"));
    ffmpeg.package_hls(&plan, &work).unwrap();
    let master = std::fs::read_to_string(work.join(VideoPlan::HLS_MASTER_PATH)).unwrap();
    assert_eq!(master.matches("#EXT-X-STREAM-INF").count(), 1, "{master}");
}

#[test]
fn audio_becomes_an_m4a_a_waveform_and_its_pictures() {
    if !ffmpeg_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = generate(
        dir.path(),
        "source",
        &[
            "-f",
            "lavfi",
            "-i",
            "sine=f=220:sample_rate=44100:d=3",
            "-c:a",
            "libmp3lame",
            "-f",
            "mp3",
        ],
    );
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let ffmpeg = processor(Duration::from_secs(60));
    let probe = ffmpeg.probe(&source).unwrap();
    let Ok(DerivePlan::Audio(plan)) = plan(MediaKind::Audio, &probe) else {
        panic!("{probe:?}")
    };
    ffmpeg
        .encode_audio(&source, &plan, &work, &mut |_| true)
        .unwrap();
    let (_, _, secs, codecs) = facts(&work.join(AudioPlan::M4A_PATH));
    assert_eq!(codecs, "aac");
    assert!((secs - 3.0).abs() < 0.15, "{secs}");

    let waveform = ffmpeg
        .waveform(&source, &plan, &work, &mut |_| true)
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&waveform.to_json()).unwrap();
    assert_eq!(
        (
            json["version"].as_u64(),
            json["channels"].as_u64(),
            json["bits"].as_u64()
        ),
        (Some(2), Some(1), Some(16))
    );
    assert_eq!(json["samples_per_pixel"].as_u64(), Some(80));
    let length = json["length"].as_u64().unwrap();
    // 3 s at 8 kHz, 80 samples a point: about 300 points (the decoder may pad a frame).
    assert!((295..=310).contains(&length), "{length}");
    let data = json["data"].as_array().unwrap();
    assert_eq!(data.len() as u64, 2 * length);
    // A sine at full scale of ffmpeg's `sine` (1/8): peaks near ±4096.
    let max = data.iter().map(|v| v.as_i64().unwrap()).max().unwrap();
    assert!((3000..=5000).contains(&max), "{max}");
    for size in STILL_SIZES {
        let (w, h, _, codec) = facts(&work.join(still_path(size, StillFormat::Png)));
        assert_eq!((w, h, codec.as_str()), (size.width(), size.height(), "png"));
    }
    assert!(
        !work.join("waveform.s16").exists(),
        "the scratch samples are removed"
    );
}

#[test]
fn an_image_gets_its_three_sizes() {
    if !ffmpeg_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = generate(
        dir.path(),
        "source",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=800x600",
            "-frames:v",
            "1",
            "-f",
            "image2",
            "-c:v",
            "png",
        ],
    );
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let ffmpeg = processor(Duration::from_secs(60));
    let probe = ffmpeg.probe(&source).unwrap();
    let Ok(DerivePlan::Image(plan)) = plan(MediaKind::Image, &probe) else {
        panic!("{probe:?}")
    };
    assert_eq!(plan.source().to_string(), "800x600");
    ffmpeg.image_stills(&source, &plan, &work).unwrap();
    for size in STILL_SIZES {
        let (w, h, _, _) = facts(&work.join(still_path(size, StillFormat::Jpeg)));
        assert_eq!((w, h), (size.width(), size.height()));
    }
    // The same picture uploaded as a video is refused in words.
    assert_eq!(
        super_plan_error(MediaKind::Video, &ffmpeg, &source),
        "This file is a still picture, not a video: upload it as an image."
    );
}

/// The refusal a person reads for `source` uploaded as `kind`.
fn super_plan_error(kind: MediaKind, ffmpeg: &FfmpegProcessor, source: &Path) -> String {
    match ffmpeg.probe(source) {
        Ok(probe) => plan(kind, &probe).map(|_| ()).unwrap_err().to_string(),
        Err(ProbeError::NotMedia(detail)) => Refusal::unreadable(kind, &detail).to_string(),
        Err(e) => panic!("a tool failure, not a refusal: {e}"),
    }
}

#[test]
fn text_uploaded_as_video_is_refused_in_words() {
    if !ffmpeg_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ffmpeg = processor(Duration::from_secs(30));
    for name in ["source", "notes.txt"] {
        let path = dir.path().join(name);
        std::fs::write(&path, "Meeting notes\nnot a video at all\n").unwrap();
        let message = super_plan_error(MediaKind::Video, &ffmpeg, &path);
        assert!(message.starts_with("This file is "), "{name}: {message}");
        assert!(message.contains("video"), "{name}: {message}");
        assert!(
            !message.contains(&*dir.path().to_string_lossy()),
            "no path in {message}"
        );
    }
    // Positive control: a real clip is not refused.
    let source = clip(dir.path(), "clip", "320x240", 1, true);
    assert!(
        ffmpeg
            .probe(&source)
            .is_ok_and(|p| plan(MediaKind::Video, &p).is_ok())
    );
}

#[test]
fn a_truncated_clip_is_not_media_and_not_retried() {
    if !ffmpeg_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let full = clip(dir.path(), "full", "320x240", 2, false);
    let bytes = std::fs::read(&full).unwrap();
    let cut = dir.path().join("source");
    // Without faststart the index is at the end: half the file has no `moov`.
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    match processor(Duration::from_secs(30)).probe(&cut) {
        Err(e @ ProbeError::NotMedia(_)) => {
            assert!(!e.is_retryable());
            let ProbeError::NotMedia(detail) = e else {
                unreachable!()
            };
            let message = Refusal::unreadable(MediaKind::Video, &detail).to_string();
            assert_eq!(
                message,
                "This file is not a video medialib can read: it is in no known audio, video or \
                 image format (Invalid data found when processing input)."
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_watchdog_ends_a_stalled_ffmpeg() {
    if !ffmpeg_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A plan from a real tone, applied to a FIFO that a writer holds open and never feeds:
    // ffmpeg waits for input forever and makes no progress.
    let tone = generate(
        dir.path(),
        "tone",
        &["-f", "lavfi", "-i", "sine=d=2", "-c:a", "aac", "-f", "mp4"],
    );
    let ffmpeg = processor(Duration::from_secs(1));
    // The plan's probe is not under test: a patient watchdog, so that a loaded machine does
    // not end it (CI once saw ffprobe of the tone silent for a second).
    let probe = processor(Duration::from_secs(30)).probe(&tone).unwrap();
    let Ok(DerivePlan::Audio(plan)) = plan(MediaKind::Audio, &probe) else {
        panic!("a plan")
    };
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // Read and write: opening does not wait for a reader, and the FIFO never sees its end.
    let _held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let started = Instant::now();
    let result = ffmpeg.encode_audio(&fifo, &plan, &work, &mut |_| true);
    let took = started.elapsed();
    assert!(
        matches!(result, Err(ProcessError::Stalled(d)) if d == Duration::from_secs(1)),
        "{result:?}"
    );
    assert!(result.as_ref().is_err_and(ProcessError::is_retryable));
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // ffprobe on it is ended too, as a tool failure (retryable).
    let probe = ffmpeg.probe(&fifo);
    assert!(matches!(probe, Err(ProbeError::Tool(_))), "{probe:?}");
    // Positive control: the same plan on the real file finishes (under a patient watchdog:
    // CI once saw this encode, on a machine running three builds, silent for a second).
    processor(Duration::from_secs(30))
        .encode_audio(&tone, &plan, &work, &mut |_| true)
        .unwrap();
}
