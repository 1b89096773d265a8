//! What the records show of an object's derived files (spec §2.2, §2.7, §2.9; DECISIONS §7
//! "Records"): the three stills of `images`, and the playable files of the video record.
//!
//! The choice is made here, once, from a [`DerivedSet`]; the use cases add signed URLs and
//! the HTTP layer writes JSON.

use super::derive::STILL_SIZES;
use super::derived::{DerivedFile, DerivedSet, FileRole};
use super::probe::Dimensions;
use crate::object::ObjectType;

/// A key of a record's `images`: one of the three stills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ImageSize {
    /// 128x128.
    Thumbnail,
    /// 512x512.
    Square,
    /// 1280x760.
    Large,
}

impl ImageSize {
    /// Every size, smallest first.
    pub const ALL: [Self; 3] = [Self::Thumbnail, Self::Square, Self::Large];

    /// The key in `images`.
    pub fn key(self) -> &'static str {
        match self {
            Self::Thumbnail => "thumbnail",
            Self::Square => "square",
            Self::Large => "large",
        }
    }

    /// The still's size in pixels.
    pub fn dimensions(self) -> Dimensions {
        let [thumbnail, square, large] = STILL_SIZES;
        match self {
            Self::Thumbnail => thumbnail,
            Self::Square => square,
            Self::Large => large,
        }
    }
}

/// The `format` of a file of the video record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlayFormat {
    /// An MP4 rendition, or an audio recording's `.m4a`.
    Mp4,
    /// The HLS master playlist.
    Hls,
    /// The SMIL document listing the MP4s.
    Smil,
}

impl PlayFormat {
    /// The name in the video record.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mp4 => "mp4",
            Self::Hls => "hls",
            Self::Smil => "smil",
        }
    }
}

/// One file of the video record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Playable<'a> {
    /// `mp4`, `hls` or `smil`.
    pub format: PlayFormat,
    /// The file itself.
    pub file: &'a DerivedFile,
    /// The WebVTT thumbnail track that goes with it (a video's; an audio recording has none).
    pub thumbnails: Option<&'a DerivedFile>,
}

/// Whether an object of `object_type` answers the video record: a video, and an audio
/// recording with its `.m4a` (DECISIONS §7). Any other type is refused by the call.
pub fn has_video_record(object_type: ObjectType) -> bool {
    matches!(object_type, ObjectType::Video | ObjectType::Audio)
}

impl DerivedSet {
    /// The stills of `images`: each of the three sizes the set has, smallest first.
    pub fn images(&self) -> impl Iterator<Item = (ImageSize, &DerivedFile)> {
        ImageSize::ALL
            .into_iter()
            .filter_map(|size| self.still(size.dimensions()).map(|f| (size, f)))
    }

    /// The waveform peaks of an audio recording (its player draws them).
    pub fn waveform(&self) -> Option<&DerivedFile> {
        self.of_role(FileRole::Waveform).next()
    }

    /// The files of the video record, in its order: each MP4 rendition (or the `.m4a`) as
    /// the job recorded them, then the HLS master, then the SMIL. Every one names the
    /// thumbnail track when the set has one. HLS media playlists and their media, sprite
    /// sheets, stills and the waveform are not listed: a player reaches them through the
    /// master playlist and the track, or a record's `images`.
    pub fn playable(&self) -> Vec<Playable<'_>> {
        let thumbnails = self.of_role(FileRole::Thumbnails).next();
        let of = |role, format| {
            self.of_role(role).map(move |file| Playable {
                format,
                file,
                thumbnails,
            })
        };
        of(FileRole::Rendition, PlayFormat::Mp4)
            .chain(of(FileRole::Hls, PlayFormat::Hls))
            .chain(of(FileRole::Smil, PlayFormat::Smil))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::derived::{DerivedDir, DerivedPath};

    fn file(role: FileRole, path: &str, size: Option<(u32, u32)>) -> DerivedFile {
        DerivedFile {
            role,
            path: DerivedPath::parse(path).unwrap(),
            size: 1,
            dimensions: size.and_then(|(w, h)| Dimensions::new(w, h)),
            bitrate: None,
        }
    }

    fn set(files: Vec<DerivedFile>) -> DerivedSet {
        DerivedSet::new(DerivedDir::parse("ab").unwrap(), files, None).unwrap()
    }

    fn paths<'a>(files: impl IntoIterator<Item = &'a DerivedFile>) -> Vec<&'a str> {
        files.into_iter().map(|f| f.path.as_str()).collect()
    }

    #[test]
    fn the_image_sizes_are_the_spec_s() {
        let got: Vec<(&str, String)> = ImageSize::ALL
            .iter()
            .map(|s| (s.key(), s.dimensions().to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("thumbnail", "128x128".to_owned()),
                ("square", "512x512".to_owned()),
                ("large", "1280x760".to_owned())
            ]
        );
    }

    #[test]
    fn images_are_the_stills_by_size_whatever_their_names() {
        let stills = set(vec![
            file(FileRole::Still, "stills/1280x760.jpg", Some((1280, 760))),
            file(FileRole::Sprite, "thumbs/sprite_1.jpg", Some((128, 128))),
            file(FileRole::Still, "stills/a.png", Some((128, 128))),
            file(FileRole::Still, "stills/odd.jpg", Some((640, 360))),
        ]);
        let images: Vec<(ImageSize, &str)> = stills
            .images()
            .map(|(size, f)| (size, f.path.as_str()))
            .collect();
        assert_eq!(
            images,
            [
                (ImageSize::Thumbnail, "stills/a.png"),
                (ImageSize::Large, "stills/1280x760.jpg")
            ],
            "a sprite sheet of the right size is no still; a size the spec has not is left out"
        );
        let none = set(vec![file(FileRole::Smil, "video.smil", None)]);
        assert_eq!(none.images().count(), 0);
    }

    #[test]
    fn a_video_plays_its_mp4s_then_hls_then_smil_each_with_the_thumbnail_track() {
        let set = set(vec![
            file(FileRole::Rendition, "mp4/720p.mp4", Some((1280, 720))),
            file(FileRole::Rendition, "mp4/360p.mp4", Some((640, 360))),
            file(FileRole::Hls, "hls/master.m3u8", None),
            file(FileRole::HlsPlaylist, "hls/720p.m3u8", None),
            file(FileRole::HlsMedia, "hls/720p.m4s", None),
            file(FileRole::Smil, "video.smil", None),
            file(FileRole::Thumbnails, "thumbs/thumbnails.vtt", None),
            file(FileRole::Sprite, "thumbs/sprite_1.jpg", Some((1280, 720))),
            file(FileRole::Still, "stills/128x128.jpg", Some((128, 128))),
        ]);
        let played = set.playable();
        let got: Vec<(&str, &str, Option<&str>)> = played
            .iter()
            .map(|p| {
                (
                    p.format.as_str(),
                    p.file.path.as_str(),
                    p.thumbnails.map(|t| t.path.as_str()),
                )
            })
            .collect();
        let vtt = Some("thumbs/thumbnails.vtt");
        assert_eq!(
            got,
            [
                ("mp4", "mp4/720p.mp4", vtt),
                ("mp4", "mp4/360p.mp4", vtt),
                ("hls", "hls/master.m3u8", vtt),
                ("smil", "video.smil", vtt),
            ]
        );
    }

    #[test]
    fn an_audio_recording_plays_its_m4a_without_a_track() {
        let set = set(vec![
            file(FileRole::Rendition, "audio.m4a", None),
            file(FileRole::Waveform, "waveform.json", None),
            file(FileRole::Still, "stills/512x512.png", Some((512, 512))),
        ]);
        let played = set.playable();
        assert_eq!(paths(played.iter().map(|p| p.file)), ["audio.m4a"]);
        assert_eq!(played[0].format, PlayFormat::Mp4);
        assert_eq!(played[0].thumbnails, None);
        assert_eq!(paths(set.images().map(|(_, f)| f)), ["stills/512x512.png"]);
    }

    #[test]
    fn video_and_audio_answer_the_video_record() {
        for t in [
            ObjectType::Video,
            ObjectType::Audio,
            ObjectType::Image,
            ObjectType::File,
            ObjectType::Catalog,
        ] {
            assert_eq!(
                has_video_record(t),
                matches!(t, ObjectType::Video | ObjectType::Audio),
                "{t:?}"
            );
        }
    }
}
