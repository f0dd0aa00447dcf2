//! Second-precision UTC timestamps, written as RFC 3339 with `Z`.
//!
//! Timestamps are parsed properly everywhere and never compared as strings; an
//! unparseable one is a validation error with its location, never "expired".

use std::fmt;

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::{Deserialize, Serialize};

/// A UTC instant with second precision (seconds since the Unix epoch).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

/// A timestamp that is not RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an RFC 3339 timestamp (e.g. 2026-03-01T09:00:00Z)")]
pub struct TimestampError {
    pub text: String,
}

impl Timestamp {
    pub const fn from_unix(seconds: i64) -> Timestamp {
        Timestamp(seconds)
    }

    pub fn now() -> Timestamp {
        Timestamp(Utc::now().timestamp())
    }

    pub const fn unix(self) -> i64 {
        self.0
    }

    /// Parses RFC 3339 (any offset, optional fraction); the instant is kept in UTC,
    /// truncated to the second.
    pub fn parse(text: &str) -> Result<Timestamp, TimestampError> {
        // Fast path for the exact form liza writes: YYYY-MM-DDTHH:MM:SSZ.
        if let Some(ts) = parse_canonical(text.as_bytes()) {
            return Ok(ts);
        }
        DateTime::parse_from_rfc3339(text)
            .map(|dt| Timestamp(dt.timestamp()))
            .map_err(|_| TimestampError {
                text: text.to_owned(),
            })
    }

    pub fn plus_seconds(self, seconds: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(seconds))
    }

    /// Seconds from `earlier` to `self` (negative when `earlier` is later).
    pub fn seconds_since(self, earlier: Timestamp) -> i64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Appends the canonical form (`2026-03-01T09:00:00Z`) to `out`.
    pub fn write_to(self, out: &mut String) {
        let Some(dt) = DateTime::<Utc>::from_timestamp(self.0, 0) else {
            // Out of chrono's range: cannot come from parsing, only from arithmetic.
            out.push_str("1970-01-01T00:00:00Z");
            return;
        };
        let year = dt.year();
        if !(0..=9999).contains(&year) {
            out.push_str(&dt.format("%Y-%m-%dT%H:%M:%SZ").to_string());
            return;
        }
        let mut buf = *b"0000-00-00T00:00:00Z";
        let put = |buf: &mut [u8; 20], at: usize, value: u32, width: usize| {
            let mut v = value;
            for i in (0..width).rev() {
                buf[at + i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(&mut buf, 0, year as u32, 4);
        put(&mut buf, 5, dt.month(), 2);
        put(&mut buf, 8, dt.day(), 2);
        put(&mut buf, 11, dt.hour(), 2);
        put(&mut buf, 14, dt.minute(), 2);
        put(&mut buf, 17, dt.second(), 2);
        out.push_str(std::str::from_utf8(&buf).expect("timestamp digits are ASCII"));
    }
}

/// Parses exactly `YYYY-MM-DDTHH:MM:SSZ` without chrono's general parser.
fn parse_canonical(b: &[u8]) -> Option<Timestamp> {
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |acc, &d| {
            d.is_ascii_digit().then(|| acc * 10 + u32::from(d - b'0'))
        })
    };
    let date = chrono::NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)?;
    let time = chrono::NaiveTime::from_hms_opt(num(11..13)?, num(14..16)?, num(17..19)?)?;
    Some(Timestamp(date.and_time(time).and_utc().timestamp()))
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(20);
        self.write_to(&mut s);
        f.write_str(&s)
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Renders a duration in seconds the way people read ages: `45s`, `3m`, `2h05m`, `3d4h`.
pub fn human_duration(seconds: i64) -> String {
    let sign = if seconds < 0 { "-" } else { "" };
    let s = seconds.unsigned_abs();
    match s {
        0..60 => format!("{sign}{s}s"),
        60..3600 => format!("{sign}{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{sign}{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{sign}{}d{}h", s / 86400, (s % 86400) / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_round_trips() {
        let ts = Timestamp::parse("2026-03-01T09:00:00Z").unwrap();
        assert_eq!(ts.to_string(), "2026-03-01T09:00:00Z");
        assert_eq!(ts.unix(), 1_772_355_600);
    }

    #[test]
    fn offsets_and_fractions_are_normalised_to_utc_seconds() {
        let ts = Timestamp::parse("2026-03-01T10:30:00.75+01:30").unwrap();
        assert_eq!(ts.to_string(), "2026-03-01T09:00:00Z");
    }

    #[test]
    fn malformed_timestamps_are_errors() {
        for bad in [
            "2026-03-01",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "yesterday",
            "2026-03-01 09:00:00",
            "",
            "2026-03-01T25:00:00Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fast_path_agrees_with_chrono() {
        for text in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2099-12-31T00:00:01Z",
        ] {
            let fast = parse_canonical(text.as_bytes()).unwrap();
            let slow = DateTime::parse_from_rfc3339(text).unwrap().timestamp();
            assert_eq!(fast.unix(), slow, "{text}");
            assert_eq!(fast.to_string(), text);
        }
    }

    #[test]
    fn ages_read_naturally() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(125), "2m05s");
        assert_eq!(human_duration(7500), "2h05m");
        assert_eq!(human_duration(-90), "-1m30s");
        assert_eq!(human_duration(90_000), "1d1h");
    }
}
