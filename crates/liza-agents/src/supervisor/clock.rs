//! Time as the supervisor's decisions see it, passed in rather than read: the system clock
//! in production, a manual clock in tests — so backoffs, crash loops, usage-limit waits and
//! lease takeovers are tested by moving the clock, never by sleeping.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::blackboard::Timestamp;

/// A point on the supervisor's monotonic time line: the time since its clock started.
/// Backoffs and waits are measured on it (a wall-clock jump moves none of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Moment(Duration);

impl Moment {
    /// The clock's start.
    pub const ZERO: Moment = Moment(Duration::ZERO);

    /// How long after the clock's start it is.
    pub fn since_start(self) -> Duration {
        self.0
    }

    /// How long from `earlier` to this moment (zero if `earlier` is later).
    pub fn since(self, earlier: Moment) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// The moment `d` before this one (the clock's start at the earliest).
    pub fn before(self, d: Duration) -> Moment {
        Moment(self.0.saturating_sub(d))
    }

    /// How long from this moment until `later` (zero if it has passed).
    pub fn until(self, later: Moment) -> Duration {
        later.0.saturating_sub(self.0)
    }
}

impl std::ops::Add<Duration> for Moment {
    type Output = Moment;
    fn add(self, d: Duration) -> Moment {
        Moment(self.0.saturating_add(d))
    }
}

/// Now, on both time lines: monotonic for waits, the wall clock for leases (which the
/// blackboard records as timestamps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// On the monotonic time line.
    pub at: Moment,
    /// On the wall clock, to the second.
    pub wall: Timestamp,
    /// The machine's offset from UTC at `wall`, in seconds — the one place its time zone is
    /// read (a manual clock sets it), for the clock times providers announce without a
    /// zone and the times shown to a person.
    pub utc_offset_s: i32,
}

impl Now {
    /// The wall time, for the reset times providers announce.
    pub fn utc(self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(self.wall.unix(), 0).unwrap_or_default()
    }

    /// The wall time in the machine's zone as the clock read it.
    pub fn local(self) -> chrono::DateTime<chrono::FixedOffset> {
        self.utc().with_timezone(&self.offset())
    }

    fn offset(self) -> chrono::FixedOffset {
        chrono::FixedOffset::east_opt(self.utc_offset_s)
            .unwrap_or_else(|| chrono::FixedOffset::east_opt(0).expect("UTC is an offset"))
    }

    /// `at` as a person here reads it: `15:00` today, `Nov 26 15:00` another day.
    pub fn clock_text(self, at: Timestamp) -> String {
        let Some(at_utc) = chrono::DateTime::from_timestamp(at.unix(), 0) else {
            return at.to_string();
        };
        let at_local = at_utc.with_timezone(&self.offset());
        if at_local.date_naive() == self.local().date_naive() {
            at_local.format("%H:%M").to_string()
        } else {
            at_local.format("%b %d %H:%M").to_string()
        }
    }
}

/// Where the supervisor reads the time.
pub trait Clock: Send + Sync {
    /// The time now.
    fn now(&self) -> Now;
}

/// The machine's clocks.
pub struct SystemClock {
    start: Instant,
    /// The machine's UTC offset and when it was read: read again after a minute (a zone
    /// change, daylight saving), not on every `now`.
    offset: Mutex<Option<(Instant, i32)>>,
}

impl SystemClock {
    /// The machine's clocks, the monotonic one starting now.
    pub fn new() -> SystemClock {
        SystemClock {
            start: Instant::now(),
            offset: Mutex::new(None),
        }
    }

    fn utc_offset_s(&self, wall: Timestamp) -> i32 {
        use chrono::{Offset, TimeZone};
        let mut cached = self.offset.lock().unwrap_or_else(|p| p.into_inner());
        match *cached {
            Some((read, offset)) if read.elapsed() < Duration::from_secs(60) => offset,
            _ => {
                let utc = chrono::DateTime::from_timestamp(wall.unix(), 0).unwrap_or_default();
                let offset = chrono::Local
                    .offset_from_utc_datetime(&utc.naive_utc())
                    .fix()
                    .local_minus_utc();
                *cached = Some((Instant::now(), offset));
                offset
            }
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Now {
        let wall = Timestamp::now();
        Now {
            at: Moment(self.start.elapsed()),
            wall,
            utc_offset_s: self.utc_offset_s(wall),
        }
    }
}

/// A clock that moves only when told to (tests).
pub struct ManualClock {
    start: Timestamp,
    at: Mutex<Moment>,
    utc_offset_s: i32,
}

impl ManualClock {
    /// Starts at moment zero and wall time `start`, in UTC.
    pub fn starting_at(start: Timestamp) -> ManualClock {
        ManualClock {
            start,
            at: Mutex::new(Moment::ZERO),
            utc_offset_s: 0,
        }
    }

    /// The same clock in a zone `seconds` east of UTC.
    pub fn in_zone(mut self, seconds: i32) -> ManualClock {
        self.utc_offset_s = seconds;
        self
    }

    /// Moves both time lines forward by `d` (the wall clock in whole seconds).
    pub fn advance(&self, d: Duration) {
        let mut at = self.at.lock().expect("clock lock");
        *at = *at + d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Now {
        let at = *self.at.lock().expect("clock lock");
        Now {
            at,
            wall: self.start.plus_seconds(at.since_start().as_secs() as i64),
            utc_offset_s: self.utc_offset_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_in_the_zone_the_clock_read() {
        let noon = Timestamp::parse("2027-01-15T12:00:00Z").unwrap();
        let clock = ManualClock::starting_at(noon).in_zone(3600);
        let now = clock.now();
        assert_eq!(now.clock_text(noon.plus_seconds(1800)), "13:30");
        assert_eq!(now.clock_text(noon.plus_seconds(12 * 3600)), "Jan 16 01:00");
        assert_eq!(now.local().to_rfc3339(), "2027-01-15T13:00:00+01:00");
    }

    #[test]
    fn the_manual_clock_moves_both_time_lines_only_when_advanced() {
        let start = Timestamp::from_unix(1_700_000_000);
        let clock = ManualClock::starting_at(start);
        assert_eq!(clock.now().at, Moment::ZERO);
        assert_eq!(clock.now().wall, start);
        clock.advance(Duration::from_millis(1500));
        clock.advance(Duration::from_millis(600));
        let now = clock.now();
        assert_eq!(now.at.since_start(), Duration::from_millis(2100));
        assert_eq!(now.wall, start.plus_seconds(2));
        assert_eq!(Moment::ZERO.until(now.at), Duration::from_millis(2100));
        assert_eq!(now.at.until(Moment::ZERO), Duration::ZERO);
    }
}
