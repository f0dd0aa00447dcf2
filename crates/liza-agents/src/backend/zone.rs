//! Named time zones ("Europe/Paris" in "resets 3pm (Europe/Paris)") read from the
//! machine's tz database, as libc does: `$TZDIR`, else the usual system directories.
//!
//! The database is not bundled into the binary: a bundled one (chrono-tz) put 35,000
//! relocations into every `liza` process and cost 0.4 ms of each command's start-up
//! (specs/quality.md P1), for a message a few runs a day print. Without tzdata a named
//! zone is not found and the caller falls back to the machine's own zone.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Days, NaiveTime, Utc};

/// Where zone files are looked up, in order.
#[derive(Debug, Clone)]
pub struct ZoneDirs(Vec<PathBuf>);

impl ZoneDirs {
    /// `$TZDIR` when set, then the directories distributions install tzdata in.
    pub fn system() -> ZoneDirs {
        let mut dirs: Vec<PathBuf> = std::env::var_os("TZDIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .into_iter()
            .collect();
        dirs.extend(
            ["/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/etc/zoneinfo"]
                .iter()
                .map(PathBuf::from),
        );
        ZoneDirs(dirs)
    }

    /// Exactly these directories (tests use a fixture copy of the database).
    pub fn only(dir: &Path) -> ZoneDirs {
        ZoneDirs(vec![dir.to_path_buf()])
    }

    /// The zone called `name` (an IANA name: letters, `_`, `+`, `-` in `/`-separated
    /// parts, never `.`), if a directory has a valid zone file for it.
    pub fn load(&self, name: &str) -> Option<tz::TimeZone> {
        let well_formed = !name.is_empty()
            && name.split('/').all(|part| {
                !part.is_empty()
                    && !part.starts_with('-')
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_+-".contains(&b))
            });
        if !well_formed {
            return None;
        }
        self.0.iter().find_map(|dir| {
            let bytes = std::fs::read(dir.join(name)).ok()?;
            tz::TimeZone::from_tz_data(&bytes).ok()
        })
    }
}

/// The first instant after `now` whose clock in `zone` shows `time`, today or tomorrow
/// in that zone; of two such instants (a clock set back) the earlier, none in a gap (a
/// clock set forward) — like chrono's `earliest()`.
pub fn next_clock_time(
    zone: &tz::TimeZone,
    time: NaiveTime,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let offset_at = |unix: i64| -> Option<i64> {
        zone.find_local_time_type(unix)
            .ok()
            .map(|t| i64::from(t.ut_offset()))
    };
    let today = DateTime::<Utc>::from_timestamp(now.timestamp() + offset_at(now.timestamp())?, 0)?
        .date_naive();
    (0..=1).find_map(|days| {
        let date = today.checked_add_days(Days::new(days))?;
        // The wall-clock time read as if it were UTC; the instant is that minus the
        // offset in force then. Offsets change at most once a day near any instant, so
        // the offsets a day before and after are the only candidates.
        let wall = date.and_time(time).and_utc().timestamp();
        let mut candidates: Vec<i64> = [wall - 86_400, wall, wall + 86_400]
            .into_iter()
            .filter_map(offset_at)
            .map(|offset| wall - offset)
            .filter(|&instant| offset_at(instant).is_some_and(|o| wall - o == instant))
            .collect();
        candidates.sort_unstable();
        let instant = DateTime::<Utc>::from_timestamp(*candidates.first()?, 0)?;
        (instant > now).then_some(instant)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn fixture_dirs() -> ZoneDirs {
        ZoneDirs::only(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zoneinfo"))
    }

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    fn hm(h: u32, m: u32) -> NaiveTime {
        NaiveTime::from_hms_opt(h, m, 0).unwrap()
    }

    #[test]
    fn a_clock_time_in_a_named_zone_is_the_next_such_instant() {
        let paris = fixture_dirs().load("Europe/Paris").unwrap();
        let new_york = fixture_dirs().load("America/New_York").unwrap();
        // Winter: Paris is UTC+1, New York UTC-5.
        let now = at(2027, 1, 15, 10, 0);
        assert_eq!(
            next_clock_time(&paris, hm(15, 0), now),
            Some(at(2027, 1, 15, 14, 0))
        );
        assert_eq!(
            next_clock_time(&paris, hm(8, 0), now),
            Some(at(2027, 1, 16, 7, 0))
        );
        assert_eq!(
            next_clock_time(&new_york, hm(9, 30), now),
            Some(at(2027, 1, 15, 14, 30))
        );
        // Summer (from the zone's rule beyond its listed transitions): Paris is UTC+2.
        let summer = at(2040, 7, 1, 10, 0);
        assert_eq!(
            next_clock_time(&paris, hm(15, 0), summer),
            Some(at(2040, 7, 1, 13, 0))
        );
        // Late evening in New York is already tomorrow in UTC.
        let evening = at(2027, 1, 16, 2, 0); // 21:00 on the 15th in New York
        assert_eq!(
            next_clock_time(&new_york, hm(22, 0), evening),
            Some(at(2027, 1, 16, 3, 0))
        );
    }

    #[test]
    fn clock_changes_give_the_earlier_instant_and_none_in_the_gap() {
        let paris = fixture_dirs().load("Europe/Paris").unwrap();
        // 2027-10-31: 02:30 happens twice in Paris (UTC+2, then UTC+1).
        let before = at(2027, 10, 30, 22, 0);
        assert_eq!(
            next_clock_time(&paris, hm(2, 30), before),
            Some(at(2027, 10, 31, 0, 30))
        );
        // 2027-03-28: 02:30 does not exist in Paris, and today's has passed.
        let spring = at(2027, 3, 27, 22, 0); // 23:00 on the 27th in Paris
        assert_eq!(next_clock_time(&paris, hm(2, 30), spring), None);
        assert_eq!(
            next_clock_time(&paris, hm(3, 30), spring),
            Some(at(2027, 3, 28, 1, 30))
        );
    }

    #[test]
    fn names_that_are_not_zones_are_refused_before_any_file_is_read() {
        let dirs = fixture_dirs();
        for name in [
            "",
            "../zoneinfo/Europe/Paris",
            "Europe/../Europe/Paris",
            "/etc/passwd",
            "Europe//Paris",
            "-x",
            "Europe/Nowhere",
        ] {
            assert!(dirs.load(name).is_none(), "{name}");
        }
        assert!(dirs.load("Europe/Paris").is_some());
    }
}
