//! What an agent CLI's output says about the run beyond its exit status: a provider usage
//! or rate limit (and when it resets), or a login the CLI is waiting for. Pure functions
//! of the output text, so every message is a test fixture.

use std::time::Duration;

/// The sleep when the message announces no reset.
pub const DEFAULT_SLEEP: Duration = Duration::from_secs(30 * 60);
/// Announced resets further away than this are not believed.
const LONGEST_SLEEP: Duration = Duration::from_secs(24 * 3600);

/// Phrases of the known providers' quota and rate-limit messages (lower case).
const MARKERS: &[&str] = &[
    "usage limit",
    "rate limit",
    "quota exceeded",
    "exceeded your current quota",
    "insufficient_quota",
    "resource_exhausted",
    "limit reached",
    "too many requests",
];

/// Whether `output` (an agent run's output tail) announces a usage or rate limit.
pub fn is_usage_limit(output: &str) -> bool {
    let lower = output.to_ascii_lowercase();
    MARKERS.iter().any(|m| lower.contains(m))
}

/// How long to sleep after a usage-limit message, `now_epoch` being the current Unix time:
/// the announced reset — `…|<unix time>` (Claude Code), `in 2 hours 5 minutes`, `in 45s`,
/// `after 120 seconds` — else [`DEFAULT_SLEEP`]. At least a minute, at most a day.
pub fn sleep_for(output: &str, now_epoch: u64) -> Duration {
    let lower = output.to_ascii_lowercase();
    let Some(at) = MARKERS.iter().filter_map(|m| lower.find(m)).min() else {
        return DEFAULT_SLEEP;
    };
    let message = &lower[at..];
    let line_end = message.find('\n').unwrap_or(message.len());
    let announced = reset_epoch(&message[..line_end])
        .map(|epoch| Duration::from_secs(epoch.saturating_sub(now_epoch)))
        .or_else(|| relative_reset(message));
    announced.map_or(DEFAULT_SLEEP, |d| {
        d.clamp(Duration::from_secs(60), LONGEST_SLEEP)
    })
}

/// `limit reached|1718236800`: a Unix time after a `|`.
fn reset_epoch(line: &str) -> Option<u64> {
    let (_, after) = line.split_once('|')?;
    let digits: String = after
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (digits.len() == 10).then(|| digits.parse().ok()).flatten()
}

/// `in 2 hours 5 minutes`, `in 45s`, `after 120 seconds`, `in 1h30m`: the first `in` or
/// `after` followed by amounts with units (`in organization …` is skipped).
fn relative_reset(message: &str) -> Option<Duration> {
    let words: Vec<&str> = message
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
        .filter(|w| !w.is_empty())
        .collect();
    words
        .iter()
        .enumerate()
        .filter(|(_, w)| **w == "in" || **w == "after")
        .find_map(|(i, _)| amounts(&words[i + 1..]))
}

/// The duration spelled by the leading words: `2 hours 5 minutes`, `45s`, `1h30m`.
fn amounts(words: &[&str]) -> Option<Duration> {
    let mut total = 0u64;
    let mut pending: Option<u64> = None;
    for word in words {
        if let Some(amount) = pending.take() {
            match unit_seconds(word) {
                Some(unit) => {
                    total += amount * unit;
                    continue;
                }
                None => break,
            }
        }
        let mut text = *word;
        let mut parsed_any = false;
        while let Some(digits_end) = text
            .find(|c: char| !c.is_ascii_digit())
            .or(Some(text.len()))
            && digits_end > 0
        {
            let amount: u64 = text[..digits_end].parse().ok()?;
            let unit_text = &text[digits_end..];
            if unit_text.is_empty() {
                pending = Some(amount);
                break;
            }
            let unit_end = unit_text
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(unit_text.len());
            total += amount * unit_seconds(&unit_text[..unit_end])?;
            parsed_any = true;
            text = &unit_text[unit_end..];
        }
        if !parsed_any && pending.is_none() {
            break;
        }
    }
    (total > 0).then(|| Duration::from_secs(total))
}

fn unit_seconds(unit: &str) -> Option<u64> {
    match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => Some(1),
        "m" | "min" | "mins" | "minute" | "minutes" => Some(60),
        "h" | "hr" | "hrs" | "hour" | "hours" => Some(3600),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    #[test]
    fn known_provider_messages_are_recognised() {
        for message in [
            "Claude AI usage limit reached|1800003600",
            "Error: 429 Too Many Requests",
            "You exceeded your current quota, please check your plan",
            "status: RESOURCE_EXHAUSTED",
            "Rate limit reached for gpt-5 in organization org-x",
        ] {
            assert!(is_usage_limit(message), "{message}");
        }
        assert!(!is_usage_limit("error: tests failed\nlimit of 3 files"));
    }

    #[test]
    fn an_announced_reset_sets_the_sleep() {
        assert_eq!(
            sleep_for("Claude AI usage limit reached|1800003600", NOW),
            Duration::from_secs(3600)
        );
        assert_eq!(
            sleep_for(
                "Rate limit reached. Please try again in 2 hours 5 minutes.",
                NOW
            ),
            Duration::from_secs(2 * 3600 + 5 * 60)
        );
        assert_eq!(
            sleep_for("rate limit: retry after 120 seconds", NOW),
            Duration::from_secs(120)
        );
        assert_eq!(
            sleep_for("usage limit reached, resets in 1h30m", NOW),
            Duration::from_secs(5400)
        );
        assert_eq!(
            sleep_for(
                "Rate limit reached for gpt-5 in organization org-x on tokens. Please try again in 20m.",
                NOW
            ),
            Duration::from_secs(1200)
        );
    }

    #[test]
    fn without_an_announced_reset_the_sleep_is_30_minutes_within_bounds() {
        assert_eq!(sleep_for("usage limit reached", NOW), DEFAULT_SLEEP);
        assert_eq!(
            sleep_for("quota exceeded in organization org-1", NOW),
            DEFAULT_SLEEP
        );
        assert_eq!(
            sleep_for("rate limit, try again in 5s", NOW),
            Duration::from_secs(60)
        );
        assert_eq!(
            sleep_for("usage limit reached|1900000000", NOW),
            LONGEST_SLEEP
        );
        // A reset already past: the shortest sleep, never zero.
        assert_eq!(
            sleep_for("usage limit reached|1700000000", NOW),
            Duration::from_secs(60)
        );
    }
}
