//! What a player page is asked to do by its query (issue 21): the parameters Warpwire's
//! player takes and LMS plugins put on the permLink they frame
//! (`?share=false&title=false&autoplay=true&cc_load_policy=1`), kept when the permLink
//! redirects to the player.
//!
//! Reading is lenient on purpose: a player embedded in a course page must play whatever a
//! plugin or a person typed, so an unknown parameter is ignored and a value that does not
//! parse keeps the default, never an error page inside someone else's page.

/// Largest `width` or `height` taken (an 8K screen's width).
pub const MAX_SIDE: u32 = 7680;

/// How a player page shows and plays its media.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayerOptions {
    /// Second to start at (`start`).
    pub start: Option<u32>,
    /// Second to stop at (`end`), after `start`.
    pub end: Option<u32>,
    /// Start playing at once (`autoplay`); muted, since browsers refuse sound without a gesture.
    pub autoplay: bool,
    /// Show the title (`title`, default true).
    pub title: bool,
    /// Show the links and embed codes to share it (`share`, default true).
    pub share: bool,
    /// Show the player's controls (`controls`, default true).
    pub controls: bool,
    /// Show captions from the start (`cc_load_policy=1`), once there are any.
    pub captions: bool,
    /// Play the sound only (`audio_only`).
    pub audio_only: bool,
    /// The player's width in CSS pixels (`width`, 1 to [`MAX_SIDE`]).
    pub width: Option<u32>,
    /// The player's height in CSS pixels (`height`, 1 to [`MAX_SIDE`]).
    pub height: Option<u32>,
}

impl Default for PlayerOptions {
    fn default() -> Self {
        Self {
            start: None,
            end: None,
            autoplay: false,
            title: true,
            share: true,
            controls: true,
            captions: false,
            audio_only: false,
            width: None,
            height: None,
        }
    }
}

/// `true`/`1` or `false`/`0` (any case); anything else is no answer.
fn flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// Whole seconds; `90`, `90.5` (rounded down) or `1m30s`/`1h2m3s` as YouTube links write them.
fn seconds(value: &str) -> Option<u32> {
    let value = value.trim();
    if let Ok(n) = value.parse::<f64>() {
        return (n.is_finite() && n >= 0.0 && n <= f64::from(u32::MAX)).then_some(n as u32);
    }
    let mut total: u32 = 0;
    let mut number = String::new();
    for c in value.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return None,
        };
        let n: u32 = number.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
        number.clear();
    }
    number
        .is_empty()
        .then_some(total)
        .filter(|_| !value.is_empty())
}

/// A side in CSS pixels: a whole number from 1 to [`MAX_SIDE`] (`640` or `640px`).
fn side(value: &str) -> Option<u32> {
    let value = value.trim();
    let digits = value.strip_suffix("px").unwrap_or(value);
    digits
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_SIDE).contains(n))
}

impl PlayerOptions {
    /// The options a query asks for (its pairs, decoded; a repeated name counts as its last
    /// value).
    pub fn from_query(pairs: &[(String, String)]) -> Self {
        let mut o = Self::default();
        for (name, value) in pairs {
            let value = value.as_str();
            match name.as_str() {
                "start" | "t" => o.start = seconds(value).or(o.start),
                "end" => o.end = seconds(value).or(o.end),
                "autoplay" => o.autoplay = flag(value).unwrap_or(o.autoplay),
                "title" => o.title = flag(value).unwrap_or(o.title),
                "share" => o.share = flag(value).unwrap_or(o.share),
                "controls" => o.controls = flag(value).unwrap_or(o.controls),
                "cc_load_policy" => o.captions = flag(value).unwrap_or(o.captions),
                "audio_only" => o.audio_only = flag(value).unwrap_or(o.audio_only),
                "width" => o.width = side(value).or(o.width),
                "height" => o.height = side(value).or(o.height),
                _ => {}
            }
        }
        // An end at or before the start plays nothing: it is dropped.
        if let (Some(end), start) = (o.end, o.start.unwrap_or(0)) {
            if end <= start {
                o.end = None;
            }
        }
        // Without controls a person could not start it: it starts by itself.
        if !o.controls {
            o.autoplay = true;
        }
        o
    }

    /// The media fragment (`#t=start,end`) that makes the browser play only that part; none
    /// for the whole.
    pub fn fragment(&self) -> String {
        match (self.start, self.end) {
            (None, None) => String::new(),
            (start, None) => format!("#t={}", start.unwrap_or(0)),
            (start, Some(end)) => format!("#t={},{end}", start.unwrap_or(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(query: &[(&str, &str)]) -> PlayerOptions {
        let pairs: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        PlayerOptions::from_query(&pairs)
    }

    #[test]
    fn no_query_is_the_whole_media_with_title_share_and_controls() {
        let o = q(&[]);
        assert_eq!(o, PlayerOptions::default());
        assert!(o.title && o.share && o.controls && !o.autoplay && !o.audio_only);
        assert_eq!(o.fragment(), "");
    }

    #[test]
    fn the_lms_plugins_query_is_understood() {
        let o = q(&[
            ("share", "false"),
            ("title", "false"),
            ("autoplay", "true"),
            ("cc_load_policy", "1"),
        ]);
        assert!(!o.share && !o.title && o.autoplay && o.captions && o.controls);
    }

    #[test]
    fn start_and_end_become_a_media_fragment() {
        assert_eq!(q(&[("start", "90")]).fragment(), "#t=90");
        assert_eq!(
            q(&[("start", "1m30s"), ("end", "120")]).fragment(),
            "#t=90,120"
        );
        assert_eq!(q(&[("end", "30")]).fragment(), "#t=0,30");
        assert_eq!(q(&[("t", "1h2m3s")]).start, Some(3723));
        assert_eq!(q(&[("start", "12.9")]).start, Some(12));
        // An end not after the start is dropped; nonsense keeps the default.
        assert_eq!(q(&[("start", "60"), ("end", "60")]).fragment(), "#t=60");
        for bad in ["-5", "x", "", "1x", "m", "99999999999", "NaN", "inf"] {
            assert_eq!(q(&[("start", bad)]).start, None, "{bad:?}");
        }
    }

    #[test]
    fn flags_and_sides_are_read_leniently_and_the_last_value_counts() {
        assert!(q(&[("autoplay", "TRUE")]).autoplay);
        assert!(!q(&[("title", "0")]).title);
        assert!(q(&[("title", "maybe")]).title, "unreadable: the default");
        assert!(q(&[("share", "false"), ("share", "true")]).share);
        assert_eq!(q(&[("width", "320px"), ("height", "180")]).width, Some(320));
        assert_eq!(q(&[("height", "180")]).height, Some(180));
        for bad in ["0", "-1", "7681", "wide", "1.5"] {
            assert_eq!(q(&[("width", bad)]).width, None, "{bad:?}");
        }
        assert!(q(&[("audio_only", "true")]).audio_only);
        assert_eq!(
            q(&[("unknown", "1"), ("<script>", "x")]),
            PlayerOptions::default()
        );
    }

    #[test]
    fn a_player_without_controls_starts_by_itself() {
        let o = q(&[("controls", "false")]);
        assert!(!o.controls && o.autoplay);
    }
}
