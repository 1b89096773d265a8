use super::*;
use crate::media::probe::{AudioStream, CodecName, ContainerFormat};
use proptest::prelude::*;

fn codec(name: &str) -> CodecName {
    CodecName::parse(name).unwrap()
}

fn video(width: u32, height: u32, fps: Option<(u32, u32)>) -> VideoStream {
    VideoStream::new(
        Dimensions::new(width, height).unwrap(),
        0,
        fps.and_then(|(n, d)| FrameRate::new(n, d)),
        codec("h264"),
        false,
    )
}

fn stereo() -> AudioStream {
    AudioStream::new(2, 48_000, codec("aac")).unwrap()
}

fn probe(
    duration_ms: Option<u64>,
    video: Option<VideoStream>,
    audio: Option<AudioStream>,
) -> MediaProbe {
    MediaProbe::new(
        ContainerFormat::parse("mov,mp4,m4a,3gp,3g2,mj2").unwrap(),
        duration_ms.map(MediaDuration::from_millis),
        video.into_iter().collect(),
        audio,
    )
}

fn video_plan(p: &MediaProbe) -> VideoPlan {
    match plan(MediaKind::Video, p) {
        Ok(DerivePlan::Video(v)) => v,
        other => panic!("{other:?}"),
    }
}

/// A rendition as the table states it: name, width, height, video kbps.
type Expected = (&'static str, u32, u32, u32);

#[test]
fn renditions_follow_the_source_size() {
    // (source, [(name, width, height, video kbps)])
    let cases: [((u32, u32), &[Expected]); 10] = [
        (
            (1920, 1080),
            &[("720p", 1280, 720, 2500), ("360p", 640, 360, 800)],
        ),
        (
            (1280, 720),
            &[("720p", 1280, 720, 2500), ("360p", 640, 360, 800)],
        ),
        // 480p: no 720p rendition.
        ((854, 480), &[("360p", 640, 360, 800)]),
        // Smaller than 360p: kept, never scaled up; the bitrate follows the pixels.
        ((320, 240), &[("360p", 320, 240, 266)]),
        // Portrait: the boxes turn with it.
        (
            (1080, 1920),
            &[("720p", 720, 1280, 2500), ("360p", 360, 640, 800)],
        ),
        // Cinemascope: as wide as 720p, so it gets the 720p step.
        (
            (1920, 800),
            &[("720p", 1280, 532, 1847), ("360p", 640, 266, 591)],
        ),
        (
            (1280, 540),
            &[("720p", 1280, 540, 1875), ("360p", 640, 270, 600)],
        ),
        // Odd sides become even, a tiny source becomes 2 pixels at least.
        ((321, 241), &[("360p", 320, 240, 266)]),
        ((1, 1), &[("360p", 2, 2, 200)]),
        // 4:3 HD.
        (
            (1440, 1080),
            &[("720p", 960, 720, 1875), ("360p", 480, 360, 600)],
        ),
    ];
    for ((w, h), expected) in cases {
        let plan = video_plan(&probe(
            Some(10_000),
            Some(video(w, h, Some((25, 1)))),
            Some(stereo()),
        ));
        let got: Vec<(&str, u32, u32, u32)> = plan
            .renditions()
            .iter()
            .map(|r| {
                (
                    r.name(),
                    r.size().width(),
                    r.size().height(),
                    r.video_kbps(),
                )
            })
            .collect();
        assert_eq!(got, expected, "{w}x{h}");
    }
}

#[test]
fn a_rotated_phone_video_is_planned_upright() {
    let rotated = VideoStream::new(
        Dimensions::new(1920, 1080).unwrap(),
        -90,
        FrameRate::new(30, 1),
        codec("h264"),
        false,
    );
    let plan = video_plan(&probe(Some(5_000), Some(rotated), None));
    assert_eq!(
        plan.renditions()[0].size(),
        Dimensions::new(720, 1280).unwrap()
    );
    assert_eq!(plan.sprites().tile(), Dimensions::new(90, 160).unwrap());
}

#[test]
fn keyframes_every_two_seconds_and_high_rates_are_halved() {
    for (fps, interval, changes) in [
        (Some((25, 1)), Some(50), false),
        (Some((30000, 1001)), Some(60), false),
        (Some((60, 1)), Some(120), false),
        (Some((120, 1)), Some(60), true),
        (None, None, false),
    ] {
        let plan = video_plan(&probe(Some(3_000), Some(video(640, 360, fps)), None));
        let r = &plan.renditions()[0];
        assert_eq!(
            (r.keyframe_interval(), r.changes_frame_rate()),
            (interval, changes),
            "{fps:?}"
        );
    }
    assert_eq!(HLS_SEGMENT_SECS % KEYFRAME_SECS, 0);
}

#[test]
fn sound_follows_the_source() {
    let mono_44k = AudioStream::new(1, 44_100, codec("mp3")).unwrap();
    let surround = AudioStream::new(6, 96_000, codec("ac3")).unwrap();
    for (audio, expected) in [
        (Some(mono_44k), Some((1, 44_100, 128))),
        (Some(surround), Some((2, 48_000, 128))),
        (None, None),
    ] {
        let plan = video_plan(&probe(
            Some(3_000),
            Some(video(1280, 720, Some((25, 1)))),
            audio,
        ));
        let r = &plan.renditions()[0];
        assert_eq!(
            r.audio().map(|a| (a.channels(), a.sample_rate(), a.kbps())),
            expected
        );
        assert_eq!(r.bitrate(), 2_500_000 + expected.map_or(0, |e| e.2 * 1000));
    }
}

#[test]
fn files_live_where_the_players_look() {
    let plan = video_plan(&probe(
        Some(12_000),
        Some(video(1920, 1080, Some((25, 1)))),
        Some(stereo()),
    ));
    let r = &plan.renditions()[0];
    assert_eq!(
        (r.mp4_path(), r.hls_playlist_path(), r.hls_media_path()),
        (
            "mp4/720p.mp4".into(),
            "hls/720p.m3u8".into(),
            "hls/720p.m4s".into()
        )
    );
    assert_eq!(plan.sprite_source().name(), "360p");
    assert_eq!(
        STILL_SIZES.map(|s| still_path(s, StillFormat::Jpeg)),
        [
            "stills/128x128.jpg",
            "stills/512x512.jpg",
            "stills/1280x760.jpg"
        ]
    );
    assert_eq!(
        still_path(STILL_SIZES[0], StillFormat::Png),
        "stills/128x128.png"
    );
    assert_eq!((plan.sprites().frames(), plan.sprites().sheets()), (3, 1));
    assert_eq!(SpritePlan::sheet_path(2), "thumbs/sprite_2.jpg");
    assert_eq!(plan.still_at(), MediaDuration::from_millis(1_200));
    let short = video_plan(&probe(Some(40), Some(video(320, 240, Some((25, 1)))), None));
    assert_eq!(
        (short.still_at(), short.sprites().frames()),
        (MediaDuration::ZERO, 1)
    );
}

#[test]
fn audio_gets_an_m4a_and_a_bounded_waveform() {
    for (ms, per_point) in [(3_000, 80), (60_000, 80), (3_600_000, 3600), (1, 80)] {
        let Ok(DerivePlan::Audio(a)) =
            plan(MediaKind::Audio, &probe(Some(ms), None, Some(stereo())))
        else {
            panic!("{ms}")
        };
        assert_eq!(a.samples_per_point(), per_point, "{ms}");
        assert_eq!((a.encoding().channels(), a.encoding().kbps()), (2, 128));
    }
    // A video uploaded as audio: its sound is used.
    let p = probe(
        Some(3_000),
        Some(video(640, 360, Some((25, 1)))),
        Some(stereo()),
    );
    assert!(matches!(
        plan(MediaKind::Audio, &p),
        Ok(DerivePlan::Audio(_))
    ));
}

#[test]
fn images_up_to_the_pixel_limit() {
    let p = |w, h| probe(None, Some(video(w, h, None)), None);
    assert_eq!(
        plan(MediaKind::Image, &p(4000, 3000)),
        Ok(DerivePlan::Image(ImagePlan {
            source: Dimensions::new(4000, 3000).unwrap()
        }))
    );
    let bomb = plan(MediaKind::Image, &p(20_000, 20_000)).unwrap_err();
    assert_eq!(
        bomb.to_string(),
        "This image is 20000 × 20000 pixels, more than medialib processes (at most 50 megapixels)."
    );
}

#[test]
fn a_source_that_is_not_what_its_type_says_is_refused_in_words() {
    let tty = MediaProbe::new(
        ContainerFormat::parse("tty").unwrap(),
        Some(MediaDuration::from_millis(1)),
        vec![VideoStream::new(
            Dimensions::new(640, 400).unwrap(),
            0,
            None,
            codec("ansi"),
            false,
        )],
        None,
    );
    let cover = VideoStream::new(
        Dimensions::new(500, 500).unwrap(),
        0,
        None,
        codec("mjpeg"),
        true,
    );
    let cases: [(MediaKind, MediaProbe, &str); 10] = [
        (
            MediaKind::Video,
            tty.clone(),
            "This file is text, not a video.",
        ),
        (
            MediaKind::Audio,
            tty,
            "This file is text, not an audio recording.",
        ),
        (
            MediaKind::Video,
            probe(Some(3_000), None, Some(stereo())),
            "This file has sound but no pictures: upload it as audio, not as a video.",
        ),
        (
            MediaKind::Video,
            probe(Some(3_000), Some(cover), Some(stereo())),
            "This file has sound but no pictures: upload it as audio, not as a video.",
        ),
        (
            MediaKind::Video,
            probe(Some(3_000), None, None),
            "This file holds no video.",
        ),
        (
            MediaKind::Video,
            probe(None, Some(video(800, 600, None)), None),
            "This file is a still picture, not a video: upload it as an image.",
        ),
        (
            MediaKind::Video,
            probe(Some(0), Some(video(800, 600, Some((25, 1)))), None),
            "This video has no length: it holds nothing that can be played.",
        ),
        (
            MediaKind::Video,
            probe(Some(1_000), Some(video(9000, 600, Some((25, 1)))), None),
            "This video is 9000 × 600 pixels, more than medialib processes (at most 8192 pixels a side).",
        ),
        (
            MediaKind::Audio,
            probe(Some(3_000), Some(video(640, 360, None)), None),
            "This file holds no sound, so it cannot be an audio recording.",
        ),
        (
            MediaKind::Image,
            probe(Some(3_000), None, Some(stereo())),
            "This file holds no picture, so it cannot be an image.",
        ),
    ];
    for (kind, p, message) in cases {
        assert_eq!(
            plan(kind, &p).map(|_| ()).unwrap_err().to_string(),
            message,
            "{p:?}"
        );
    }
    let playlist = MediaProbe::new(
        ContainerFormat::parse("applehttp,hls").unwrap(),
        Some(MediaDuration::from_secs(3)),
        vec![video(640, 360, Some((25, 1)))],
        Some(stereo()),
    );
    assert_eq!(
        plan(MediaKind::Video, &playlist)
            .map(|_| ())
            .unwrap_err()
            .to_string(),
        "This file is a playlist that points to other files; upload the media itself."
    );
    assert_eq!(
        Refusal::unreadable(
            MediaKind::Video,
            "Invalid data found when processing input\n"
        )
        .to_string(),
        "This file is not a video medialib can read: it is in no known audio, video or image format (Invalid data found when processing input)."
    );
}

#[test]
fn only_media_types_are_processed() {
    assert_eq!(MediaKind::of(ObjectType::Video), Some(MediaKind::Video));
    assert_eq!(MediaKind::of(ObjectType::Audio), Some(MediaKind::Audio));
    assert_eq!(MediaKind::of(ObjectType::Image), Some(MediaKind::Image));
    assert_eq!(MediaKind::of(ObjectType::File), None);
    assert_eq!(MediaKind::of(ObjectType::Catalog), None);
}

proptest! {
    #[test]
    fn renditions_are_even_no_larger_than_the_source_and_keep_its_aspect(
        w in 1u32..=8192, h in 1u32..=8192, secs in 1u64..100_000,
    ) {
        let plan = video_plan(&probe(Some(secs), Some(video(w, h, Some((30, 1)))), Some(stereo())));
        let rs = plan.renditions();
        prop_assert!(!rs.is_empty() && rs.len() <= 2);
        prop_assert_eq!(rs.last().map(Rendition::rung), Some(Rung::P360));
        for pair in rs.windows(2) {
            prop_assert!(pair[0].bitrate() > pair[1].bitrate(), "highest bitrate first");
        }
        for r in rs {
            let s = r.size();
            prop_assert!(s.width() % 2 == 0 && s.height() % 2 == 0);
            prop_assert!(s.width() <= w.max(2) && s.height() <= h.max(2));
            let (bw, bh) = r.rung().box_for(Dimensions::new(w, h).unwrap());
            prop_assert!(s.width() <= bw && s.height() <= bh);
            // Aspect kept within the rounding to even sides (2 pixels each way, plus half a
            // pixel of rounding).
            let lhs = f64::from(s.width()) * f64::from(h);
            let rhs = f64::from(s.height()) * f64::from(w);
            let slack = 2.5 * f64::from(w.max(h));
            prop_assert!(s.width() == 2 || s.height() == 2 || (lhs - rhs).abs() <= slack, "{}x{} from {w}x{h}", s.width(), s.height());
        }
    }
}
