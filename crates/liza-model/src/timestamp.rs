//! Second-precision UTC timestamps, written as RFC 3339 with `Z`.
//!
//! Timestamps are parsed properly everywhere and never compared as strings; an
//! unparseable one is a validation error with its location, never "expired".

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A UTC instant with second precision (seconds since the Unix epoch).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

/// A timestamp that is not RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an RFC 3339 timestamp (e.g. 2026-03-01T09:00:00Z)")]
pub struct TimestampError {
    /// The text that did not parse.
    pub text: String,
}

impl Timestamp {
    /// The instant `seconds` after the Unix epoch.
    pub const fn from_unix(seconds: i64) -> Timestamp {
        Timestamp(seconds)
    }

    /// This host's clock, now.
    pub fn now() -> Timestamp {
        Timestamp(Utc::now().timestamp())
    }

    /// Seconds since the Unix epoch.
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

    /// `seconds` later (earlier when negative), saturating.
    pub fn plus_seconds(self, seconds: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(seconds))
    }

    /// Seconds from `earlier` to `self` (negative when `earlier` is later).
    pub fn seconds_since(self, earlier: Timestamp) -> i64 {
        self.0.saturating_sub(earlier.0)
    }

    /// How long ago `self` was at `now`, never negative: a time stamped by a clock ahead
    /// of this one is taken as now (specs/blackboard.md *Timestamps*).
    pub fn age_at(self, now: Timestamp) -> i64 {
        now.seconds_since(self).max(0)
    }

    /// Appends the canonical form (`2026-03-01T09:00:00Z`) to `out`.
    pub fn write_to(self, out: &mut String) {
        match self.canonical() {
            Some(buf) => {
                out.push_str(std::str::from_utf8(&buf).expect("timestamp digits are ASCII"))
            }
            None => match DateTime::<Utc>::from_timestamp(self.0, 0) {
                Some(dt) => out.push_str(&dt.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
                // Out of chrono's range: cannot come from parsing, only from arithmetic.
                None => out.push_str("1970-01-01T00:00:00Z"),
            },
        }
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` for years 0–9999, computed without allocation (the
    /// writer formats tens of thousands of timestamps per transaction on big boards).
    pub fn canonical(self) -> Option<[u8; 20]> {
        let days = self.0.div_euclid(86_400);
        let secs = self.0.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        if !(0..=9999).contains(&year) {
            return None;
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
        put(&mut buf, 5, month, 2);
        put(&mut buf, 8, day, 2);
        put(&mut buf, 11, secs / 3600, 2);
        put(&mut buf, 14, secs / 60 % 60, 2);
        put(&mut buf, 17, secs % 60, 2);
        Some(buf)
    }
}

/// Year, month, day of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
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

/// Serde helpers for output meant for people and scripts (`--json`): RFC 3339 text.
/// (The model's own serde form, used by the parse cache, is the integer.)
pub mod rfc3339 {
    use super::Timestamp;

    /// Writes `ts` as RFC 3339 text (`#[serde(serialize_with = "rfc3339::serialize")]`).
    pub fn serialize<S: serde::Serializer>(ts: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(ts)
    }

    /// Writes `ts` as RFC 3339 text, or none (`#[serde(serialize_with =
    /// "rfc3339::option")]`).
    pub fn option<S: serde::Serializer>(ts: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match ts {
            Some(ts) => s.collect_str(ts),
            None => s.serialize_none(),
        }
    }

    /// Reads RFC 3339 text (`#[serde(deserialize_with = "rfc3339::deserialize")]`).
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
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
    fn fast_formatting_agrees_with_chrono() {
        for secs in [
            0i64,
            -1,
            951_782_400,
            1_772_355_599,
            4_102_444_800,
            253_402_300_799,
            -62_135_596_800,
        ] {
            let ts = Timestamp::from_unix(secs);
            let chrono = DateTime::<Utc>::from_timestamp(secs, 0)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            assert_eq!(ts.to_string(), chrono, "{secs}");
        }
        let mut day = -800_000i64;
        while day < 3_000_000 {
            let ts = Timestamp::from_unix(day * 86_400 + 3_723);
            let chrono = DateTime::<Utc>::from_timestamp(ts.unix(), 0)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            assert_eq!(ts.to_string(), chrono);
            day += 997;
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
