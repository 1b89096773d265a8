//! Progress of a processing step: ffmpeg's `-progress` output read line by line, turned into
//! the percentage the `media` call shows.
//!
//! ffmpeg writes blocks of `key=value` lines, each block ending with `progress=continue`, the
//! last with `progress=end`. The position is `out_time_us` (microseconds of output written);
//! `out_time_ms` is microseconds too (an old ffmpeg misnomer) and `out_time` is `HH:MM:SS.micro`.
//! Before the first frame the position may be `N/A` or negative.

use super::probe::MediaDuration;

/// A whole percentage, 0 to 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Percent(u8);

impl Percent {
    /// Nothing done.
    pub const ZERO: Self = Self(0);
    /// All done.
    pub const DONE: Self = Self(100);

    /// `value` capped at 100.
    pub fn new(value: u8) -> Self {
        Self(value.min(100))
    }

    /// The share `done / total`, rounded down, capped at 99: only the tool's own end says 100,
    /// so a step that reached its last frame but has not finished writing does not read as done.
    /// `None` total (unknown length): 0.
    pub fn of(done: MediaDuration, total: Option<MediaDuration>) -> Self {
        match total {
            Some(total) if !total.is_zero() => {
                let share = u128::from(done.as_micros()) * 100 / u128::from(total.as_micros());
                Self(u8::try_from(share.min(99)).unwrap_or(99))
            }
            _ => Self::ZERO,
        }
    }

    /// The value.
    pub fn value(self) -> u8 {
        self.0
    }
}

/// One line of ffmpeg's `-progress` output that says something about progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressLine {
    /// The output has reached this position.
    Position(MediaDuration),
    /// A block ended; more will follow.
    Continue,
    /// ffmpeg finished writing.
    End,
}

impl ProgressLine {
    /// Reads one line; `None` for the keys that do not move progress (`frame`, `fps`,
    /// `bitrate` …), a position that is `N/A` or negative, and anything that is not `key=value`.
    pub fn parse(line: &str) -> Option<Self> {
        let (key, value) = line.trim().split_once('=')?;
        match key {
            "out_time_us" | "out_time_ms" => {
                { value.parse::<u64>().ok().map(MediaDuration::from_micros) }.map(Self::Position)
            }
            "progress" => match value {
                "continue" => Some(Self::Continue),
                "end" => Some(Self::End),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Follows a running step's `-progress` lines: the furthest position seen and the percentage
/// of `total` it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressMeter {
    total: Option<MediaDuration>,
    position: MediaDuration,
    ended: bool,
}

impl ProgressMeter {
    /// A meter for a step that writes `total` of media time (`None`: unknown).
    pub fn new(total: Option<MediaDuration>) -> Self {
        Self {
            total,
            position: MediaDuration::ZERO,
            ended: false,
        }
    }

    /// Takes one output line; `true` when the position moved forward (what a watchdog waits
    /// for) or the tool said it ended.
    pub fn observe(&mut self, line: &str) -> bool {
        match ProgressLine::parse(line) {
            Some(ProgressLine::Position(at)) if at > self.position => {
                self.position = at;
                true
            }
            Some(ProgressLine::End) if !self.ended => {
                self.ended = true;
                true
            }
            _ => false,
        }
    }

    /// The furthest position seen.
    pub fn position(&self) -> MediaDuration {
        self.position
    }

    /// Whether the tool said `progress=end`.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The percentage done (100 only after `progress=end`).
    pub fn percent(&self) -> Percent {
        if self.ended {
            Percent::DONE
        } else {
            Percent::of(self.position, self.total)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lines_are_read_by_key() {
        let at = |us| Some(ProgressLine::Position(MediaDuration::from_micros(us)));
        for (line, expected) in [
            ("out_time_us=3018594", at(3_018_594)),
            ("out_time_ms=3018594", at(3_018_594)),
            ("out_time_us=N/A", None),
            ("out_time_us=-23219", None),
            ("out_time=00:00:03.018594", None),
            ("progress=continue", Some(ProgressLine::Continue)),
            ("progress=end\n", Some(ProgressLine::End)),
            ("progress=maybe", None),
            ("frame=75", None),
            ("speed=3.19x", None),
            ("garbage", None),
            ("", None),
        ] {
            assert_eq!(ProgressLine::parse(line), expected, "{line:?}");
        }
    }

    #[test]
    fn a_meter_counts_forward_moves_and_says_100_only_at_the_end() {
        let mut meter = ProgressMeter::new(Some(MediaDuration::from_secs(4)));
        assert_eq!(meter.percent(), Percent::ZERO);
        assert!(meter.observe("out_time_us=1000000"));
        assert_eq!(meter.percent().value(), 25);
        assert!(!meter.observe("out_time_us=1000000"), "no forward move");
        assert!(
            !meter.observe("out_time_us=500000"),
            "backwards is not progress"
        );
        assert!(meter.observe("out_time_us=4000000"));
        assert_eq!(meter.percent().value(), 99, "the last frame is not the end");
        assert!(!meter.observe("frame=100"));
        assert!(meter.observe("progress=end"));
        assert!(!meter.observe("progress=end"));
        assert_eq!(meter.percent(), Percent::DONE);
    }

    #[test]
    fn an_unknown_length_reads_zero_until_the_end() {
        let mut meter = ProgressMeter::new(None);
        meter.observe("out_time_us=9000000");
        assert_eq!(meter.percent(), Percent::ZERO);
        meter.observe("progress=end");
        assert_eq!(meter.percent(), Percent::DONE);
    }

    proptest! {
        #[test]
        fn percent_never_passes_99_before_the_end(done in any::<u64>(), total in 1u64..) {
            let p = Percent::of(MediaDuration::from_micros(done), Some(MediaDuration::from_micros(total)));
            prop_assert!(p.value() <= 99);
            if done >= total { prop_assert_eq!(p.value(), 99); }
        }

        #[test]
        fn the_meter_never_goes_backwards(positions in proptest::collection::vec(0u64..10_000_000, 0..50)) {
            let mut meter = ProgressMeter::new(Some(MediaDuration::from_secs(10)));
            let mut last = Percent::ZERO;
            for us in positions {
                meter.observe(&format!("out_time_us={us}"));
                prop_assert!(meter.percent() >= last);
                last = meter.percent();
            }
        }
    }
}
