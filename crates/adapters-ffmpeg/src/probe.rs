//! ffprobe's JSON (`-print_format json -show_format -show_streams`) read into the domain's
//! [`MediaProbe`]: only the numbers, through the domain's constructors. A stream whose numbers
//! do not make a value (a picture of zero pixels, audio without channels) is left out, as if
//! it were not there; the domain's plan then says what is missing.

use medialib_domain::media::probe::{
    AudioStream, CodecName, ContainerFormat, Dimensions, FrameRate, MediaDuration, MediaProbe,
    VideoStream,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Output {
    format: Option<Format>,
    #[serde(default)]
    streams: Vec<Stream>,
}

#[derive(Debug, Deserialize)]
struct Format {
    format_name: Option<String>,
    duration: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Stream {
    codec_type: Option<String>,
    codec_name: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
    avg_frame_rate: Option<String>,
    r_frame_rate: Option<String>,
    channels: Option<u16>,
    sample_rate: Option<String>,
    duration: Option<String>,
    #[serde(default)]
    disposition: Disposition,
    #[serde(default)]
    side_data_list: Vec<SideData>,
    #[serde(default)]
    tags: Tags,
}

#[derive(Debug, Default, Deserialize)]
struct Disposition {
    #[serde(default)]
    attached_pic: u8,
}

#[derive(Debug, Deserialize)]
struct SideData {
    rotation: Option<i32>,
}

#[derive(Debug, Default, Deserialize)]
struct Tags {
    rotate: Option<String>,
}

/// Why ffprobe's output makes no probe.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// It is not the JSON ffprobe writes (a tool problem).
    NotJson(String),
    /// It names no container: the file is not media.
    NoFormat,
}

/// The stream's codec; `unknown` when ffprobe names none.
fn codec(stream: &Stream) -> Option<CodecName> {
    stream
        .codec_name
        .as_deref()
        .and_then(CodecName::parse)
        .or_else(|| CodecName::parse("unknown"))
}

fn video(stream: &Stream, refused: Option<Dimensions>) -> Option<VideoStream> {
    let coded =
        Dimensions::new(stream.width.unwrap_or(0), stream.height.unwrap_or(0)).or(refused)?;
    let rotation = stream
        .side_data_list
        .iter()
        .find_map(|s| s.rotation)
        .or_else(|| stream.tags.rotate.as_deref().and_then(|r| r.parse().ok()))
        .unwrap_or(0);
    let rate = [&stream.avg_frame_rate, &stream.r_frame_rate]
        .into_iter()
        .find_map(|r| r.as_deref().and_then(FrameRate::parse));
    Some(VideoStream::new(
        coded,
        rotation,
        rate,
        codec(stream)?,
        stream.disposition.attached_pic != 0,
    ))
}

fn audio(stream: &Stream) -> Option<AudioStream> {
    AudioStream::new(
        stream.channels?,
        stream.sample_rate.as_deref()?.parse().ok()?,
        codec(stream)?,
    )
}

/// The picture size ffmpeg refused to allocate (`Picture size 20000x20000 is invalid` on
/// standard error, when the stream then reads as 0 × 0): a decompression bomb's header, which
/// the domain's size rule refuses in words.
pub(crate) fn refused_size(stderr: &str) -> Option<Dimensions> {
    let rest = stderr.split("Picture size ").nth(1)?;
    let size = rest.split_whitespace().next()?;
    rest[size.len()..]
        .trim_start()
        .starts_with("is invalid")
        .then(|| Dimensions::parse(size))?
}

/// Reads ffprobe's JSON; a video stream without a size gets `refused` (see [`refused_size`]).
pub(crate) fn parse(json: &[u8], refused: Option<Dimensions>) -> Result<MediaProbe, Unusable> {
    let output: Output =
        serde_json::from_slice(json).map_err(|e| Unusable::NotJson(e.to_string()))?;
    let format = output.format.as_ref().ok_or(Unusable::NoFormat)?;
    let name = format
        .format_name
        .as_deref()
        .and_then(ContainerFormat::parse)
        .ok_or(Unusable::NoFormat)?;
    let streams = &output.streams;
    let of_type = |t: &'static str| {
        streams
            .iter()
            .filter(move |s| s.codec_type.as_deref() == Some(t))
    };
    // The container's duration; a container that states none (some WebM, raw streams) has
    // its streams' longest.
    let duration = format
        .duration
        .as_deref()
        .and_then(|d| MediaDuration::parse_seconds(d).ok())
        .or_else(|| {
            output
                .streams
                .iter()
                .filter_map(|s| s.duration.as_deref())
                .filter_map(|d| MediaDuration::parse_seconds(d).ok())
                .max()
        });
    Ok(MediaProbe::new(
        name,
        duration,
        of_type("video").filter_map(|s| video(s, refused)).collect(),
        of_type("audio").find_map(audio),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phone_video_is_read_upright_with_its_sound() {
        let json = br#"{"streams":[
            {"codec_type":"video","codec_name":"h264","width":1920,"height":1080,
             "avg_frame_rate":"30000/1001","r_frame_rate":"30/1",
             "side_data_list":[{"side_data_type":"Display Matrix","rotation":-90}],
             "disposition":{"attached_pic":0}},
            {"codec_type":"audio","codec_name":"aac","channels":2,"sample_rate":"48000"},
            {"codec_type":"data","codec_name":"bin_data"}],
          "format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","duration":"12.345678"}}"#;
        let probe = parse(json, None).unwrap();
        let video = probe.video().unwrap();
        assert_eq!(video.display().to_string(), "1080x1920");
        assert_eq!(video.frame_rate().unwrap().to_string(), "30000/1001");
        assert_eq!(probe.audio().unwrap().sample_rate(), 48_000);
        assert_eq!(
            probe.duration(),
            Some(MediaDuration::from_micros(12_345_678))
        );
    }

    #[test]
    fn an_image_has_no_duration_or_rate() {
        let json =
            br#"{"streams":[{"codec_type":"video","codec_name":"png","width":800,"height":600,
            "avg_frame_rate":"0/0","r_frame_rate":"25/1"}],"format":{"format_name":"png_pipe"}}"#;
        let probe = parse(json, None).unwrap();
        assert_eq!(probe.duration(), None);
        assert_eq!(
            probe.video().unwrap().frame_rate().map(|r| r.to_string()),
            Some("25/1".into())
        );
    }

    #[test]
    fn a_size_ffmpeg_refused_to_allocate_is_the_streams_size() {
        let stderr = "[png @ 0x1] [IMGUTILS @ 0x2] Picture size 20000x20000 is invalid\n";
        let size = refused_size(stderr);
        assert_eq!(size, Dimensions::new(20_000, 20_000));
        assert_eq!(refused_size("Picture size 20000x20000 is fine"), None);
        assert_eq!(refused_size(""), None);
        let json = br#"{"streams":[{"codec_type":"video","codec_name":"png","width":0,"height":0}],
            "format":{"format_name":"png_pipe"}}"#;
        let probe = parse(json, size).unwrap();
        assert_eq!(probe.video().map(|v| v.display()), size);
        assert!(parse(json, None).unwrap().video().is_none());
    }

    #[test]
    fn broken_streams_are_left_out_and_nothing_is_no_format() {
        let json = br#"{"streams":[{"codec_type":"video","width":0,"height":600},
            {"codec_type":"audio","channels":0,"sample_rate":"44100"}],
            "format":{"format_name":"matroska,webm","duration":"N/A"}}"#;
        let probe = parse(json, None).unwrap();
        assert!(probe.video().is_none() && probe.audio().is_none() && probe.duration().is_none());
        assert_eq!(parse(b"{\n\n}", None).unwrap_err(), Unusable::NoFormat);
        assert!(matches!(
            parse(b"not json", None),
            Err(Unusable::NotJson(_))
        ));
    }
}
