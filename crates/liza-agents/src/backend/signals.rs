//! Provider usage limits in an agent CLI's output (specs/supervisor.md *Running the agent*):
//! whether the tail of a run's output — whatever its exit status: aider exits 0 after its
//! retries — reports a quota or rate limit, and when it resets, in the forms the CLIs
//! print. Pure functions of the text and the time, so every real message is a fixture.

use std::sync::OnceLock;
use std::time::Duration;

use chrono::{DateTime, Datelike, FixedOffset, NaiveTime, TimeZone, Utc};
use regex::Regex;

use super::catalog::CliSpec;
use super::zone::{self, ZoneDirs};

/// The wait when the message announces no reset.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30 * 60);
/// The shortest wait, so an already-past or imminent reset does not start a storm.
const SHORTEST_WAIT: Duration = Duration::from_secs(60);
/// Announced resets further away than this are not believed (weekly limits are).
const LONGEST_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);
/// How much of the output's end is read: a limit is what ended the run.
const TAIL_BYTES: usize = 4096;
const TAIL_LINES: usize = 40;
/// Lines after the matching one searched for the reset time (CLIs wrap long messages).
const RESET_LINES: usize = 6;

/// A usage limit reported by an agent run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageLimit {
    /// The line that reports it (trimmed, at most 300 characters).
    pub line: String,
    /// When the provider says it resets, if it says so.
    pub resets_at: Option<DateTime<Utc>>,
}

impl UsageLimit {
    /// How long to wait from `now`: until the reset (plus `jitter`), else
    /// [`DEFAULT_WAIT`]; never less than a minute nor more than a week.
    pub fn wait(&self, now: DateTime<Utc>, jitter: Duration) -> Duration {
        let until = match self.resets_at {
            Some(at) => (at - now).to_std().unwrap_or_default(),
            None => return DEFAULT_WAIT + jitter,
        };
        until.clamp(SHORTEST_WAIT, LONGEST_WAIT) + jitter
    }
}

/// A jitter of up to a tenth of `wait` (at most a minute) from `seed`, so supervisors
/// stopped by the same limit do not all start again in the same second.
pub fn jitter(wait: Duration, seed: u64) -> Duration {
    let span = (wait / 10).min(Duration::from_secs(60)).as_millis() as u64;
    Duration::from_millis(if span == 0 {
        0
    } else {
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) % span
    })
}

/// A phrase of a quota or rate-limit message, on a line that also says it is an error
/// (so an agent that writes a rate limiter and says so is not stopped).
fn marker() -> &'static Regex {
    static MARKER: OnceLock<Regex> = OnceLock::new();
    MARKER.get_or_init(|| {
        Regex::new(
            r"(?i)\b(usage limit|rate[ _-]?limit(?:ed you|_error|_exceeded|error)?|quota exceeded|exceeded your (?:current )?quota|insufficient_quota|resource_exhausted|exhausted your (?:\w+ )?quota|limit reached|too many requests|session limit|weekly limit|out of (?:usage )?credits|request rejected \(429\)|status:? 429|code\W{0,3}429)\b",
        )
        .expect("the usage-limit pattern compiles")
    })
}

fn error_context() -> &'static Regex {
    static CONTEXT: OnceLock<Regex> = OnceLock::new();
    CONTEXT.get_or_init(|| {
        Regex::new(
            r"(?i)error|exceed|reached|hit your|try again|retry|exhausted|out of|resets?\b|429|limited you|wait",
        )
        .expect("the error-context pattern compiles")
    })
}

/// The usage limit the end of `output` reports, if any. `cli` adds the phrases of that
/// CLI's own messages; `now` — in the machine's zone as the supervisor's clock read it —
/// anchors clock times such as "resets 3pm".
pub fn usage_limit(
    cli: Option<&CliSpec>,
    output: &str,
    now: DateTime<FixedOffset>,
) -> Option<UsageLimit> {
    let tail = tail(output);
    let lines: Vec<&str> = tail.lines().collect();
    let own = cli.map_or(&[][..], |c| c.limit_messages);
    let at = lines.iter().rposition(|line| {
        let lower = line.to_ascii_lowercase();
        (marker().is_match(line) && error_context().is_match(line))
            || own.iter().any(|m| lower.contains(m))
    })?;
    // The reset may come on the lines around the match (a wrapped message, a retry note
    // printed before the final error).
    // The message and what follows it first, then what came before.
    let from = at.saturating_sub(RESET_LINES);
    let to = (at + RESET_LINES + 1).min(lines.len());
    let after = lines[at..to].join("\n");
    let around = lines[from..to].join("\n");
    Some(UsageLimit {
        line: lines[at].trim().chars().take(300).collect(),
        resets_at: reset_time(&after, now).or_else(|| reset_time(&around, now)),
    })
}

/// The last [`TAIL_LINES`] lines within the last [`TAIL_BYTES`] bytes of `output`.
fn tail(output: &str) -> &str {
    let mut start = output.len().saturating_sub(TAIL_BYTES);
    while !output.is_char_boundary(start) {
        start += 1;
    }
    let text = &output[start..];
    let cut = text
        .rmatch_indices('\n')
        .nth(TAIL_LINES)
        .map_or(0, |(i, _)| i + 1);
    &text[cut..]
}

/// When `text` says the limit resets, in any of the forms the CLIs print; the earliest
/// form found in this order wins: a Unix time after `|`, an RFC 3339 time, an HTTP
/// `Retry-After`, a clock time ("resets 3pm (Europe/Paris)"), a delay ("try again in
/// 2h 13m", "retry in 36.2s").
pub fn reset_time(text: &str, now: DateTime<FixedOffset>) -> Option<DateTime<Utc>> {
    reset_time_in(text, now, &ZoneDirs::system())
}

/// [`reset_time`], with named zones read from `zones`.
fn reset_time_in(
    text: &str,
    now: DateTime<FixedOffset>,
    zones: &ZoneDirs,
) -> Option<DateTime<Utc>> {
    let utc = now.with_timezone(&Utc);
    unix_after_bar(text)
        .or_else(|| rfc3339(text))
        .or_else(|| retry_after(text, utc))
        .or_else(|| clock_time(text, now, zones))
        .or_else(|| delay(text).map(|d| utc + d))
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("reset-time patterns compile"))
}

/// `Claude AI usage limit reached|1718236800`.
fn unix_after_bar(text: &str) -> Option<DateTime<Utc>> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let caps = regex(&RE, r"\|\s*(\d{10})\b").captures(text)?;
    Utc.timestamp_opt(caps[1].parse().ok()?, 0).single()
}

/// `resets at 2026-11-26T15:00:00Z`.
fn rfc3339(text: &str) -> Option<DateTime<Utc>> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let found = regex(
        &RE,
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})",
    )
    .find(text)?;
    DateTime::parse_from_rfc3339(&found.as_str().replacen(' ', "T", 1))
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `Retry-After: 120` or `Retry-After: Wed, 26 Nov 2026 15:00:00 GMT`.
fn retry_after(text: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let caps = regex(
        &RE,
        r#"(?i)retry[-_]after["']?\s*[:=]\s*["']?([A-Za-z]{3}, \d{1,2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT|\d+(?:\.\d+)?)"#,
    )
    .captures(text)?;
    let value = &caps[1];
    match value.parse::<f64>() {
        Ok(seconds) => Some(now + Duration::from_secs_f64(seconds.max(0.0))),
        Err(_) => DateTime::parse_from_rfc2822(value)
            .ok()
            .map(|t| t.with_timezone(&Utc)),
    }
}

/// `resets 3pm (Europe/Paris)`, `resets at 3:30 PM (America/New_York)`, `resets 15:00`:
/// the next such time after `now` in the named zone (the machine's own without one, or
/// when the machine's tz database does not have it: the CLI named the zone it runs in).
/// A clock time; one without a zone is in the machine's, as `now` carries it.
fn clock_time(text: &str, local: DateTime<FixedOffset>, zones: &ZoneDirs) -> Option<DateTime<Utc>> {
    let now = local.with_timezone(&Utc);
    static RE: OnceLock<Regex> = OnceLock::new();
    let caps = regex(
        &RE,
        r"(?i)\bresets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+-]+)*)\))?",
    )
    .captures(text)?;
    let mut hour: u32 = caps[1].parse().ok()?;
    let minute: u32 = caps.get(2).map_or(Some(0), |m| m.as_str().parse().ok())?;
    match caps
        .get(3)
        .map(|m| m.as_str().to_ascii_lowercase())
        .as_deref()
    {
        Some("pm") if hour < 12 => hour += 12,
        Some("am") if hour == 12 => hour = 0,
        None if caps.get(2).is_none() => return None,
        _ => {}
    }
    let time = NaiveTime::from_hms_opt(hour, minute, 0)?;
    match caps.get(4).map(|m| m.as_str()) {
        Some("UTC") => next_at(&Utc, time, now),
        Some(name) => match zones.load(name) {
            Some(zone) => zone::next_clock_time(&zone, time, now),
            None => {
                tracing::debug!(
                    zone = name,
                    "zone not in the tz database; using the local zone"
                );
                next_at(local.offset(), time, now)
            }
        },
        None => next_at(local.offset(), time, now),
    }
}

/// The first instant after `now` whose clock in `zone` shows `time`.
fn next_at<Z: TimeZone>(zone: &Z, time: NaiveTime, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let local = now.with_timezone(zone);
    (0..=1).find_map(|days| {
        let date = local.date_naive() + chrono::Days::new(days);
        let candidate = zone
            .from_local_datetime(&date.and_time(time))
            .earliest()?
            .with_timezone(&Utc);
        (candidate > now && date.year() > 0).then_some(candidate)
    })
}

/// `try again in 2h 13m`, `retry in 36.2s`, `resets in 2 hours 5 minutes`, `retry after
/// 120 seconds`: the provider's delay — not a client's own backoff ("Retrying in 4.0
/// seconds...").
fn delay(text: &str) -> Option<Duration> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(
        &RE,
        r"(?i)\b(?:again|resets?|retry|available|wait)\s+(?:in|after|for)\s+((?:\d+(?:\.\d+)?\s*(?:hours?|hrs?|minutes?|mins?|seconds?|secs?|ms|h|m|s)[\s,]*(?:and\s+)?)+)(?:[^A-Za-z]|$)",
    );
    static PART: OnceLock<Regex> = OnceLock::new();
    let part = regex(
        &PART,
        r"(?i)(\d+(?:\.\d+)?)\s*(hours?|hrs?|minutes?|mins?|seconds?|secs?|ms|h|m|s)",
    );
    re.captures_iter(text).find_map(|caps| {
        let total: f64 = part
            .captures_iter(&caps[1])
            .map(|p| {
                let amount: f64 = p[1].parse().unwrap_or(0.0);
                amount
                    * match p[2].to_ascii_lowercase().as_str() {
                        "ms" => 0.001,
                        u if u.starts_with('h') => 3600.0,
                        u if u.starts_with('m') => 60.0,
                        _ => 1.0,
                    }
            })
            .sum();
        (total > 0.0).then(|| Duration::from_secs_f64(total))
    })
}

#[cfg(test)]
mod tests {
    use super::super::catalog;
    use super::*;

    /// 2027-01-15 10:00:00 UTC, a Friday (11:00 in Paris).
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2027, 1, 15, 10, 0, 0).unwrap()
    }

    /// [`now`] as the supervisor's clock hands it: in the machine's zone, here UTC.
    fn here() -> DateTime<FixedOffset> {
        now().fixed_offset()
    }

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/clis")
            .join(name);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .filter(|l| !l.starts_with("# "))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_real_clis_limit_messages_are_recognised() {
        for (cli, file) in [
            ("claude", "claude-2.1.197-rate-limit.txt"),
            ("mistral", "vibe-3.0.2-rate-limit.txt"),
            ("aider", "aider-0.86.2-rate-limit.txt"),
            ("gemini", "gemini-0.61.0-quota.txt"),
        ] {
            let text = fixture(file);
            let limit = usage_limit(catalog::find(cli), &text, here());
            assert!(limit.is_some(), "{file}:\n{text}");
        }
        // aider wraps the message; the delay is on the next line.
        let aider = usage_limit(
            catalog::find("aider"),
            &fixture("aider-0.86.2-rate-limit.txt"),
            here(),
        )
        .unwrap();
        assert_eq!(
            aider.resets_at,
            Some(now() + Duration::from_secs(2 * 3600 + 13 * 60))
        );
    }

    #[test]
    fn todays_messages_are_recognised() {
        for message in [
            "You've hit your session limit · resets 3pm (Europe/Paris)",
            "You're out of usage credits. Add more at console.anthropic.com",
            "Error: You have exhausted your daily quota on this model.",
            "Claude AI usage limit reached|1800003600",
            r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
            r#"{"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}"#,
            "Error: You exceeded your current quota, please check your plan and billing details. (insufficient_quota)",
            "Rate limit reached for gpt-5 in organization org-x on tokens. Please try again in 20s.",
            "stream error: 429 Too Many Requests",
        ] {
            assert!(usage_limit(None, message, here()).is_some(), "{message}");
        }
    }

    #[test]
    fn an_agent_talking_about_rate_limits_is_not_stopped() {
        for text in [
            "Implemented the rate limiter in src/limit.rs; tests pass.\nSubmitted t-1.",
            "The rate limit is now configurable (default 10 req/s).",
            "Added a usage limit section to the README.",
            "All 42 tests passed.\n",
        ] {
            assert_eq!(usage_limit(None, text, here()), None, "{text}");
        }
        // Only the end of the output counts.
        let old = format!(
            "Error: rate limit reached, retrying\n{}done\n",
            "x\n".repeat(TAIL_LINES + 5)
        );
        assert_eq!(usage_limit(None, &old, here()), None);
    }

    #[test]
    fn every_reset_form_gives_its_time() {
        let cases: &[(&str, DateTime<Utc>)] = &[
            (
                "usage limit reached|1800003600",
                Utc.timestamp_opt(1_800_003_600, 0).unwrap(),
            ),
            // 3pm in Paris in January is 14:00 UTC.
            (
                "You've hit your session limit · resets 3pm (Europe/Paris)",
                Utc.with_ymd_and_hms(2027, 1, 15, 14, 0, 0).unwrap(),
            ),
            // 9:30am New York (UTC-5) is 14:30 UTC, still today.
            (
                "limit reached, resets at 9:30am (America/New_York)",
                Utc.with_ymd_and_hms(2027, 1, 15, 14, 30, 0).unwrap(),
            ),
            // 8am Paris already passed today: tomorrow's.
            (
                "weekly limit reached · resets 8am (Europe/Paris)",
                Utc.with_ymd_and_hms(2027, 1, 16, 7, 0, 0).unwrap(),
            ),
            (
                "Rate limit reached. Please try again in 2h 13m.",
                now() + Duration::from_secs(2 * 3600 + 13 * 60),
            ),
            (
                "429 Too Many Requests: retry in 36.2s",
                now() + Duration::from_millis(36_200),
            ),
            (
                "rate limit: retry after 120 seconds",
                now() + Duration::from_secs(120),
            ),
            (
                "HTTP 429 Too Many Requests\nRetry-After: Fri, 15 Jan 2027 12:00:00 GMT",
                Utc.with_ymd_and_hms(2027, 1, 15, 12, 0, 0).unwrap(),
            ),
            (
                "status 429, retry-after: 90",
                now() + Duration::from_secs(90),
            ),
            (
                "quota exceeded; resets at 2027-01-15T18:00:00Z",
                Utc.with_ymd_and_hms(2027, 1, 15, 18, 0, 0).unwrap(),
            ),
        ];
        let zones = ZoneDirs::only(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zoneinfo"),
        );
        for (text, expected) in cases {
            assert!(usage_limit(None, text, here()).is_some(), "{text}");
            assert_eq!(
                reset_time_in(text, here(), &zones),
                Some(*expected),
                "{text}"
            );
        }
    }

    #[test]
    fn a_zone_the_machine_does_not_have_is_read_as_the_local_one() {
        // The local zone is the one the supervisor's clock read (here UTC+3: now is 13:00
        // there), never the zone of the machine running the test.
        let nowhere = ZoneDirs::only(std::path::Path::new("/nonexistent"));
        let plus_three = FixedOffset::east_opt(3 * 3600).unwrap();
        let local_now = now().with_timezone(&plus_three);
        for text in [
            "You've hit your session limit · resets 3pm (Europe/Paris)",
            "You've hit your session limit · resets 3pm",
        ] {
            assert_eq!(
                reset_time_in(text, local_now, &nowhere),
                Some(Utc.with_ymd_and_hms(2027, 1, 15, 12, 0, 0).unwrap()),
                "{text}"
            );
        }
    }

    #[test]
    fn the_wait_runs_to_the_reset_within_bounds_and_30_minutes_without_one() {
        let limit = |resets_at| UsageLimit {
            line: String::new(),
            resets_at,
        };
        let none = Duration::ZERO;
        assert_eq!(limit(None).wait(now(), none), DEFAULT_WAIT);
        assert_eq!(
            limit(Some(now() + Duration::from_secs(3600))).wait(now(), none),
            Duration::from_secs(3600)
        );
        assert_eq!(
            limit(Some(now() - Duration::from_secs(3600))).wait(now(), none),
            SHORTEST_WAIT
        );
        assert_eq!(
            limit(Some(now() + Duration::from_secs(30 * 24 * 3600))).wait(now(), none),
            LONGEST_WAIT
        );
        let j = jitter(Duration::from_secs(3600), 12345);
        assert!(j <= Duration::from_secs(60), "{j:?}");
        assert_ne!(j, jitter(Duration::from_secs(3600), 54321));
        assert_eq!(jitter(Duration::ZERO, 7), Duration::ZERO);
    }
}
