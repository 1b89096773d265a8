//! The demo's media: a short clip, a tone, a picture and a text file, made by Debian's
//! `ffmpeg` when a demo object has no media yet (no media files live in the repository), then
//! uploaded through the real upload use cases (tus creation and one PATCH), so that the
//! in-process worker processes them like any upload. [`wait_until_processed`] follows them
//! until they are ready, so that the demo's pages play when its instructions are printed.
//!
//! Without ffmpeg the demo still runs: its objects then have no media, and it says so.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use medialib_domain::media::{FileName, MediaState, UploadDescription};
use medialib_domain::{IdOrZero, ObjectId, ObjectType, User};
use medialib_ports::Services;
use medialib_ports::services::UploadTarget;

/// How long the demo waits for its media to be processed before it serves anyway.
pub const PROCESSING_WAIT: Duration = Duration::from_secs(300);

/// The file uploaded for a demo object of `object_type`, and the ffmpeg arguments that make it
/// (`None`: written directly).
fn source_of(object_type: ObjectType) -> Option<(&'static str, Option<Vec<&'static str>>)> {
    Some(match object_type {
        // 12 s of 720p with a tone: two renditions, three sprite thumbnails.
        ObjectType::Video => (
            "welcome.mp4",
            Some(vec![
                "-f",
                "lavfi",
                "-i",
                "testsrc2=size=1280x720:rate=30:duration=12",
                "-f",
                "lavfi",
                "-i",
                "sine=frequency=440:beep_factor=4:duration=12",
                "-c:v",
                "libx264",
                "-preset",
                "veryfast",
                "-pix_fmt",
                "yuv420p",
                "-c:a",
                "aac",
                "-shortest",
            ]),
        ),
        ObjectType::Audio => (
            "lecture-week-1.m4a",
            Some(vec![
                "-f",
                "lavfi",
                "-i",
                "sine=frequency=220:duration=10,volume=enable='between(t,3,6)':volume=0.3",
                "-c:a",
                "aac",
            ]),
        ),
        ObjectType::Image => (
            "campus-map.png",
            Some(vec![
                "-f",
                "lavfi",
                "-i",
                "testsrc2=size=1600x900",
                "-frames:v",
                "1",
            ]),
        ),
        ObjectType::File => ("syllabus.txt", None),
        ObjectType::Catalog => return None,
    })
}

const SYLLABUS: &str = "Demo course syllabus\n\nWeek 1: Welcome to medialib\nWeek 2: \
     Uploading and sharing media\nWeek 3: Apps that act for you (OAuth 2.0)\n";

/// Makes the source of `object_type` in `dir`.
fn make(dir: &Path, object_type: ObjectType) -> Result<(PathBuf, &'static str), String> {
    let Some((name, args)) = source_of(object_type) else {
        return Err("a catalog has no media".to_owned());
    };
    let path = dir.join(name);
    match args {
        None => std::fs::write(&path, SYLLABUS).map_err(|e| e.to_string())?,
        Some(args) => {
            let status = Command::new("ffmpeg")
                .args(["-hide_banner", "-loglevel", "error", "-y"])
                .args(args)
                .arg(&path)
                .status()
                .map_err(|e| format!("cannot run ffmpeg ({e}); install Debian's ffmpeg package"))?;
            if !status.success() {
                return Err(format!("ffmpeg could not make {name} ({status})"));
            }
        }
    }
    Ok((path, name))
}

/// Uploads media for each of `members` that has none yet; returns those that have media now.
/// A failure is reported through `progress` and leaves that object without media.
pub fn attach(
    services: &Services,
    user: &User,
    library: ObjectId,
    members: &[(ObjectId, ObjectType)],
    progress: &mut dyn FnMut(&str),
) -> Vec<ObjectId> {
    let caller = user.as_caller();
    let dir = std::env::temp_dir().join(format!("medialib-demo-{}", std::process::id()));
    let mut with_media = Vec::new();
    for &(object, object_type) in members {
        let has_media = services
            .uploads()
            .media(Some(&caller), library, object)
            .is_ok_and(|m| m.record.source.is_some());
        if has_media {
            with_media.push(object);
            continue;
        }
        let uploaded = std::fs::create_dir_all(&dir)
            .map_err(|e| e.to_string())
            .and_then(|()| make(&dir, object_type))
            .and_then(|(path, name)| upload(services, user, library, object, &path, name));
        match uploaded {
            Ok(size) => {
                progress(&format!(
                    "{} {object}: media made and uploaded ({size} bytes)",
                    object_type.as_str()
                ));
                with_media.push(object);
            }
            Err(e) => progress(&format!(
                "{} {object}: no media ({e})",
                object_type.as_str()
            )),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    with_media
}

/// tus creation on the object and one PATCH with the whole file.
fn upload(
    services: &Services,
    user: &User,
    library: ObjectId,
    object: ObjectId,
    path: &Path,
    name: &str,
) -> Result<u64, String> {
    let caller = user.as_caller();
    let length = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    let description = UploadDescription {
        filename: Some(FileName::parse(name).map_err(|e| e.to_string())?),
        content_type: None,
        fields: Default::default(),
    };
    let target = UploadTarget {
        collection: library,
        object: IdOrZero::Id(object),
    };
    let uploads = services.uploads();
    uploads
        .begin(&caller, target, length, description)
        .map_err(|e| e.to_string())?;
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let done = uploads
        .append(&caller, library, object, 0, None, &mut file)
        .map_err(|e| e.to_string())?;
    if done.offset == length {
        Ok(length)
    } else {
        Err(format!(
            "only {} of {length} bytes were stored",
            done.offset
        ))
    }
}

/// Waits until every one of `objects` is processed (ready or failed) or `timeout` passed,
/// reporting progress through `progress` every few seconds; returns whether all are ready.
pub fn wait_until_processed(
    services: &Services,
    user: &User,
    library: ObjectId,
    objects: &[ObjectId],
    timeout: Duration,
    progress: &mut dyn FnMut(&str),
) -> bool {
    let caller = user.as_caller();
    let start = Instant::now();
    let mut last_report = Instant::now() - Duration::from_secs(10);
    loop {
        let mut pending = Vec::new();
        let mut all_ready = true;
        for &object in objects {
            match services.uploads().media(Some(&caller), library, object) {
                Ok(view) => match view.record.state {
                    MediaState::Ready => {}
                    MediaState::Failed => {
                        all_ready = false;
                        progress(&format!(
                            "{object}: processing failed: {}",
                            view.record.error.unwrap_or_default()
                        ));
                    }
                    state => pending.push(format!(
                        "{object} {} {}%",
                        state.as_str(),
                        view.record.progress
                    )),
                },
                Err(e) => {
                    progress(&format!("{object}: {e}"));
                    all_ready = false;
                }
            }
        }
        if pending.is_empty() {
            return all_ready;
        }
        if start.elapsed() > timeout {
            progress(&format!(
                "still processing after {} s ({}); serving anyway",
                timeout.as_secs(),
                pending.join(", ")
            ));
            return false;
        }
        if last_report.elapsed() >= Duration::from_secs(3) {
            progress(&format!(
                "processing the demo media: {}",
                pending.join(", ")
            ));
            last_report = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}
