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
    pub const ZERO: Moment = Moment(Duration::ZERO);

    pub fn since_start(self) -> Duration {
        self.0
    }

    /// How long from `earlier` to this moment (zero if `earlier` is later).
    pub fn since(self, earlier: Moment) -> Duration {
        self.0.saturating_sub(earlier.0)
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
    pub at: Moment,
    pub wall: Timestamp,
}

impl Now {
    /// The wall time, for the reset times providers announce.
    pub fn utc(self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(self.wall.unix(), 0).unwrap_or_default()
    }
}

/// Where the supervisor reads the time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Now;
}

/// The machine's clocks.
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    pub fn new() -> SystemClock {
        SystemClock {
            start: Instant::now(),
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
        Now {
            at: Moment(self.start.elapsed()),
            wall: Timestamp::now(),
        }
    }
}

/// A clock that moves only when told to (tests).
pub struct ManualClock {
    start: Timestamp,
    at: Mutex<Moment>,
}

impl ManualClock {
    /// Starts at moment zero and wall time `start`.
    pub fn starting_at(start: Timestamp) -> ManualClock {
        ManualClock {
            start,
            at: Mutex::new(Moment::ZERO),
        }
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
