//! aider 0.86.2 has no machine-readable output; after each message it prints
//! `Tokens: <sent> sent[, <w> cache write][, <h> cache hit], <r> received.` and, for a
//! model it knows the price of, ` Cost: $<m> message, $<s> session.` (on the next line
//! when both cache counts are shown). `<sent>` is the whole prompt; counts from 1000 up
//! are rounded (`1.2k`, `12k`): each is read as the smallest count that prints so, and
//! the run marked approximate. Its banner names the model (`Main model: …`). Run with
//! `--no-stream`: streaming, it prints a local estimate instead of the provider's count.

use std::sync::OnceLock;

use liza_model::ledger::ModelUsage;
use regex::Regex;

use super::Tally;

fn tokens_line() -> &'static Regex {
    static LINE: OnceLock<Regex> = OnceLock::new();
    LINE.get_or_init(|| {
        Regex::new(
            r"^Tokens: ([0-9.]+k?) sent(?:, ([0-9.]+k?) cache write)?(?:, ([0-9.]+k?) cache hit)?, ([0-9.]+k?) received\.",
        )
        .expect("the tokens pattern compiles")
    })
}

fn cost_line() -> &'static Regex {
    static LINE: OnceLock<Regex> = OnceLock::new();
    LINE.get_or_init(|| {
        Regex::new(r"Cost: \$([0-9.]+) message, \$([0-9.]+) session\.")
            .expect("the cost pattern compiles")
    })
}

pub(super) fn take(line: &str, tally: &mut Tally) {
    let line = line.trim();
    let after_tokens = std::mem::take(&mut tally.after_tokens);
    if let Some(model) = line.strip_prefix("Main model: ") {
        tally.model = model.split_whitespace().next().map(str::to_owned);
        return;
    }
    let tokens = tokens_line().captures(line);
    if let Some(c) = &tokens {
        let mut rounded = false;
        let mut read = |i: usize| {
            c.get(i).and_then(|m| {
                let (n, r) = smallest(m.as_str())?;
                rounded |= r;
                Some(n)
            })
        };
        let (sent, written, hit, received) = (read(1), read(2), read(3), read(4));
        tally.approximate |= rounded;
        tally.add(ModelUsage {
            input_tokens: super::less(sent, &[written, hit]),
            output_tokens: received,
            cache_read_tokens: hit,
            cache_write_tokens: written,
            ..ModelUsage::default()
        });
        tally.after_tokens = true;
    }
    // The session's cost so far: the run's, at its last message — on the `Tokens:` line
    // or the one after it only (any other line saying so is an answer's text).
    let cost_here = tokens.is_some() || after_tokens && line.starts_with("Cost: ");
    if cost_here
        && let Some(c) = cost_line().captures(line)
        && let Some(session) = c.get(2).and_then(|m| m.as_str().parse::<f64>().ok())
        && let Some(usage) = tally.models.first_mut()
    {
        usage.cost_usd = Some(session);
    }
}

/// The smallest count aider prints as `text`, and whether it was rounded: exact below
/// 1000, `1.2k` (one decimal) below 10 000, `12k` above.
fn smallest(text: &str) -> Option<(u64, bool)> {
    let Some(thousands) = text.strip_suffix('k') else {
        return text.parse().ok().map(|n| (n, false));
    };
    let value: f64 = thousands.parse().ok()?;
    let half_step = if thousands.contains('.') { 0.05 } else { 0.5 };
    let low = ((value - half_step) * 1000.0).ceil().max(0.0);
    Some((low as u64, true))
}

#[cfg(test)]
mod tests {
    use super::smallest;

    #[test]
    fn rounded_counts_read_as_the_smallest_count_that_prints_so() {
        assert_eq!(smallest("776"), Some((776, false)));
        assert_eq!(smallest("1.2k"), Some((1150, true)));
        assert_eq!(smallest("12k"), Some((11500, true)));
        assert_eq!(smallest("x"), None);
    }
}
