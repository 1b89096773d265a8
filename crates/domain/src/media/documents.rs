//! The small derived documents medialib writes itself rather than asking a tool: the SMIL that
//! lists a video's MP4 renditions, the WebVTT thumbnail track over its sprite sheets, and the
//! waveform of an audio recording (peaks reduced from decoded samples).

use std::fmt::Write as _;

use super::derive::{Rendition, SpritePlan, VideoPlan};
use super::probe::MediaDuration;

/// The SMIL document (Wowza-style adaptive MP4) of a video: one `<video>` per rendition,
/// highest bitrate first, `src` relative to the SMIL's own place ([`VideoPlan::SMIL_PATH`]).
pub fn smil(plan: &VideoPlan) -> String {
    let mut renditions: Vec<&Rendition> = plan.renditions().iter().collect();
    renditions.sort_by_key(|r| std::cmp::Reverse(r.bitrate()));
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<smil>\n  <head/>\n  <body>\n    <switch>\n",
    );
    for r in renditions {
        // Paths are ours (`mp4/720p.mp4`): nothing to escape, but an attribute stays one.
        let src = r.mp4_path().replace('&', "&amp;").replace('"', "&quot;");
        let _ = writeln!(
            out,
            "      <video src=\"{src}\" system-bitrate=\"{}\" width=\"{}\" height=\"{}\"/>",
            r.bitrate(),
            r.size().width(),
            r.size().height()
        );
    }
    out.push_str("    </switch>\n  </body>\n</smil>\n");
    out
}

/// A WebVTT timestamp, `HH:MM:SS.mmm`.
fn vtt_time(at: MediaDuration) -> String {
    let ms = at.as_millis();
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        (ms / 60_000) % 60,
        (ms / 1000) % 60,
        ms % 1000
    )
}

/// The WebVTT thumbnail track: for thumbnail `k`, a cue `[5k, 5k+5)` (the last cut at the
/// end) whose text is `sprite_{k/100+1}.jpg#xywh=x,y,w,h`, relative to the track's own place
/// beside the sheets ([`SpritePlan::VTT_PATH`]).
pub fn thumbnails_vtt(sprites: &SpritePlan) -> String {
    let mut out = String::from("WEBVTT\n");
    let tile = sprites.tile();
    for k in 0..sprites.frames() {
        let cue = sprites.cue(k);
        let _ = write!(
            out,
            "\n{} --> {}\nsprite_{}.jpg#xywh={},{},{},{}\n",
            vtt_time(cue.start),
            vtt_time(cue.end),
            cue.sheet,
            cue.x,
            cue.y,
            tile.width(),
            tile.height()
        );
    }
    out
}

/// Reduces 16-bit mono samples to a waveform: for every `samples_per_point` samples, their
/// minimum and maximum. Fed as bytes arrive (signed 16-bit little-endian, split anywhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaveformBuilder {
    sample_rate: u32,
    samples_per_point: u32,
    points: Vec<(i16, i16)>,
    current: Option<(i16, i16)>,
    in_current: u32,
    odd_byte: Option<u8>,
}

impl WaveformBuilder {
    /// A builder for samples at `sample_rate` Hz, `samples_per_point` (at least 1) a point.
    pub fn new(sample_rate: u32, samples_per_point: u32) -> Self {
        Self {
            sample_rate,
            samples_per_point: samples_per_point.max(1),
            points: Vec::new(),
            current: None,
            in_current: 0,
            odd_byte: None,
        }
    }

    /// Takes samples.
    pub fn push_samples(&mut self, samples: &[i16]) {
        for &s in samples {
            let (lo, hi) = self.current.unwrap_or((s, s));
            self.current = Some((lo.min(s), hi.max(s)));
            self.in_current += 1;
            if self.in_current == self.samples_per_point {
                self.close_point();
            }
        }
    }

    /// Takes raw signed 16-bit little-endian bytes; a sample split across calls is joined.
    pub fn push_le_bytes(&mut self, mut bytes: &[u8]) {
        if let (Some(low), Some((&high, rest))) = (self.odd_byte, bytes.split_first()) {
            self.push_samples(&[i16::from_le_bytes([low, high])]);
            self.odd_byte = None;
            bytes = rest;
        }
        let mut pairs = bytes.chunks_exact(2);
        let samples: Vec<i16> = pairs
            .by_ref()
            .map(|p| i16::from_le_bytes([p[0], p[1]]))
            .collect();
        self.push_samples(&samples);
        if let [last] = pairs.remainder() {
            self.odd_byte = Some(*last);
        }
    }

    fn close_point(&mut self) {
        if let Some(point) = self.current.take() {
            self.points.push(point);
        }
        self.in_current = 0;
    }

    /// The waveform (a last, partial point included; a dangling odd byte dropped).
    pub fn finish(mut self) -> Waveform {
        self.close_point();
        Waveform {
            sample_rate: self.sample_rate,
            samples_per_point: self.samples_per_point,
            points: self.points,
        }
    }
}

/// An audio recording's peaks: a (minimum, maximum) pair per point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waveform {
    sample_rate: u32,
    samples_per_point: u32,
    points: Vec<(i16, i16)>,
}

impl Waveform {
    /// The points.
    pub fn points(&self) -> &[(i16, i16)] {
        &self.points
    }

    /// BBC audiowaveform's JSON format, version 2, one channel, 16 bits:
    /// `{"version":2,"channels":1,"sample_rate":…,"samples_per_pixel":…,"bits":16,"length":N,
    /// "data":[min,max,…]}` (read by peaks.js and wavesurfer.js).
    pub fn to_json(&self) -> String {
        let mut out = format!(
            "{{\"version\":2,\"channels\":1,\"sample_rate\":{},\"samples_per_pixel\":{},\"bits\":16,\"length\":{},\"data\":[",
            self.sample_rate,
            self.samples_per_point,
            self.points.len()
        );
        for (i, (lo, hi)) in self.points.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{lo},{hi}");
        }
        out.push_str("]}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::derive::{DerivePlan, MediaKind, plan};
    use crate::media::probe::{
        AudioStream, CodecName, ContainerFormat, Dimensions, FrameRate, MediaProbe, VideoStream,
    };
    use proptest::prelude::*;

    fn video_plan(width: u32, height: u32, secs: u64) -> VideoPlan {
        let video = VideoStream::new(
            Dimensions::new(width, height).unwrap(),
            0,
            FrameRate::new(25, 1),
            CodecName::parse("h264").unwrap(),
            false,
        );
        let audio = AudioStream::new(2, 48_000, CodecName::parse("aac").unwrap());
        let probe = MediaProbe::new(
            ContainerFormat::parse("mov,mp4,m4a,3gp,3g2,mj2").unwrap(),
            Some(MediaDuration::from_secs(secs)),
            vec![video],
            audio,
        );
        match plan(MediaKind::Video, &probe).unwrap() {
            DerivePlan::Video(p) => p,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn smil_lists_the_mp4s_highest_bitrate_first() {
        let text = smil(&video_plan(1920, 1080, 10));
        assert_eq!(
            text,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<smil>\n  <head/>\n  <body>\n    <switch>\n\
             \x20     <video src=\"mp4/720p.mp4\" system-bitrate=\"2628000\" width=\"1280\" height=\"720\"/>\n\
             \x20     <video src=\"mp4/360p.mp4\" system-bitrate=\"896000\" width=\"640\" height=\"360\"/>\n\
             \x20   </switch>\n  </body>\n</smil>\n"
        );
    }

    #[test]
    fn the_thumbnail_track_walks_the_sheets_row_by_row() {
        // 1003 s: 201 thumbnails, 3 sheets; the last cue ends at the video's end.
        let plan = video_plan(1280, 720, 1003);
        let vtt = thumbnails_vtt(plan.sprites());
        assert!(vtt.starts_with(
            "WEBVTT\n\n00:00:00.000 --> 00:00:05.000\nsprite_1.jpg#xywh=0,0,160,90\n"
        ));
        assert!(
            vtt.contains("\n00:00:55.000 --> 00:01:00.000\nsprite_1.jpg#xywh=160,90,160,90\n"),
            "k = 11"
        );
        assert!(
            vtt.contains("\n00:08:15.000 --> 00:08:20.000\nsprite_1.jpg#xywh=1440,810,160,90\n"),
            "k = 99"
        );
        assert!(
            vtt.contains("\n00:08:20.000 --> 00:08:25.000\nsprite_2.jpg#xywh=0,0,160,90\n"),
            "k = 100"
        );
        assert!(
            vtt.ends_with("\n00:16:40.000 --> 00:16:43.000\nsprite_3.jpg#xywh=0,0,160,90\n"),
            "k = 200"
        );
        assert_eq!(vtt.matches(" --> ").count(), 201);
    }

    #[test]
    fn vtt_times_carry_hours() {
        assert_eq!(
            vtt_time(MediaDuration::from_millis(3_723_004)),
            "01:02:03.004"
        );
    }

    #[test]
    fn peaks_are_min_and_max_per_bucket() {
        let mut b = WaveformBuilder::new(8000, 3);
        b.push_samples(&[1, -5, 3, 7, 7, 7, -2]);
        let w = b.finish();
        assert_eq!(w.points(), &[(-5, 3), (7, 7), (-2, -2)]);
        assert_eq!(
            w.to_json(),
            "{\"version\":2,\"channels\":1,\"sample_rate\":8000,\"samples_per_pixel\":3,\"bits\":16,\"length\":3,\"data\":[-5,3,7,7,-2,-2]}"
        );
        assert_eq!(
            WaveformBuilder::new(8000, 80)
                .finish()
                .to_json()
                .matches("\"length\":0")
                .count(),
            1
        );
    }

    proptest! {
        #[test]
        fn bytes_split_anywhere_give_the_same_peaks(
            samples in proptest::collection::vec(any::<i16>(), 0..400),
            per in 1u32..50,
            cut in any::<prop::sample::Index>(),
        ) {
            let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
            let at = cut.index(bytes.len() + 1);
            let mut split = WaveformBuilder::new(8000, per);
            split.push_le_bytes(&bytes[..at]);
            split.push_le_bytes(&bytes[at..]);
            let mut whole = WaveformBuilder::new(8000, per);
            whole.push_samples(&samples);
            let (split, whole) = (split.finish(), whole.finish());
            prop_assert_eq!(&split, &whole);
            prop_assert_eq!(whole.points().len(), samples.len().div_ceil(per as usize));
            for (i, (lo, hi)) in whole.points().iter().enumerate() {
                let bucket = &samples[i * per as usize..((i + 1) * per as usize).min(samples.len())];
                prop_assert_eq!(*lo, *bucket.iter().min().unwrap());
                prop_assert_eq!(*hi, *bucket.iter().max().unwrap());
            }
        }

        #[test]
        fn every_cue_lies_inside_its_sheet(secs in 1u64..20_000, w in 2u32..4000, h in 2u32..4000) {
            let plan = video_plan(w, h, secs);
            let sprites = plan.sprites();
            let sheet = sprites.sheet_size();
            let mut last_end = MediaDuration::ZERO;
            for k in 0..sprites.frames() {
                let cue = sprites.cue(k);
                prop_assert!(cue.sheet >= 1 && cue.sheet <= sprites.sheets());
                prop_assert!(cue.x + sprites.tile().width() <= sheet.width());
                prop_assert!(cue.y + sprites.tile().height() <= sheet.height());
                prop_assert_eq!(cue.start, last_end);
                prop_assert!(cue.end > cue.start);
                last_end = cue.end;
            }
            prop_assert_eq!(last_end, plan.duration());
        }
    }
}
