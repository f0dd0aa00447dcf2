//! Grounded quotes (specs/builtin-agent.md *Grounded quotes*):
//! every quote a model gives is checked against the source text — verbatim at its
//! code-point offsets; else repaired by locating the text (the occurrence nearest the
//! offset it gave); else dropped with a warning. Offsets are relative to the whole source.
//! Quote ids are `<source>[:msg_<n>]:<chunk_index>:<start>-<end>`.

use serde::{Deserialize, Serialize};

use super::chunk::Chunk;
use super::text::CharIndex;

/// A passage a model cites as it says it appears in the source: its text and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quote {
    /// The quoted text.
    pub text: String,
    /// Where it starts, in code points into the source.
    pub start_pos: usize,
    /// Where it ends, exclusive, in code points into the source.
    pub end_pos: usize,
}

/// What checking a quote did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The text is in the source at the offsets given.
    Verified(Quote),
    /// The text was found elsewhere; the offsets were corrected.
    Repaired(Quote),
    /// The text is not in the source, or empty: why.
    Dropped(&'static str),
}

/// A source to ground quotes in: its text, once indexed.
pub struct Source<'t> {
    text: &'t str,
    index: CharIndex,
}

impl<'t> Source<'t> {
    /// `text`, indexed by code point.
    pub fn new(text: &'t str) -> Source<'t> {
        Source {
            text,
            index: CharIndex::new(text),
        }
    }

    /// Its text.
    pub fn text(&self) -> &'t str {
        self.text
    }

    /// Verifies or repairs `quote`, or says why it is dropped.
    pub fn check(&self, quote: &Quote) -> Checked {
        if quote.text.trim().is_empty() {
            return Checked::Dropped("empty quote");
        }
        if self.index.slice(self.text, quote.start_pos, quote.end_pos) == Some(quote.text.as_str())
        {
            return Checked::Verified(quote.clone());
        }
        let len = quote.text.chars().count();
        let nearest = self
            .text
            .match_indices(quote.text.as_str())
            .filter_map(|(b, _)| self.index.char_at_byte(b))
            .min_by_key(|&start| start.abs_diff(quote.start_pos));
        match nearest {
            Some(start) => Checked::Repaired(Quote {
                text: quote.text.clone(),
                start_pos: start,
                end_pos: start + len,
            }),
            None => Checked::Dropped("the text is not in the source verbatim"),
        }
    }

    /// The quotes that hold, at most `max`; drops are logged at WARNING (without the
    /// text: it came from the model).
    pub fn ground(&self, quotes: &[Quote], max: usize, what: &str) -> Vec<Quote> {
        self.ground_tallied(quotes, max, what).0
    }

    /// [`Source::ground`], saying how many quotes were repaired and dropped.
    pub fn ground_tallied(
        &self,
        quotes: &[Quote],
        max: usize,
        what: &str,
    ) -> (Vec<Quote>, QuoteTally) {
        let mut kept = Vec::new();
        let mut tally = QuoteTally::default();
        for q in quotes {
            match self.check(q) {
                Checked::Verified(q) => {
                    tally.verified += 1;
                    kept.push(q);
                }
                Checked::Repaired(fixed) => {
                    tracing::debug!(
                        what,
                        from = q.start_pos,
                        to = fixed.start_pos,
                        "quote offsets repaired"
                    );
                    tally.repaired += 1;
                    kept.push(fixed);
                }
                Checked::Dropped(why) => {
                    tally.dropped += 1;
                    tracing::warn!(what, why, "quote dropped");
                }
            }
        }
        kept.truncate(max);
        (kept, tally)
    }
}

/// What grounding did to a set of quotes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QuoteTally {
    /// Quotes found at the offsets given.
    pub verified: usize,
    /// Quotes found elsewhere, their offsets corrected.
    pub repaired: usize,
    /// Quotes not in the source, or empty.
    pub dropped: usize,
}

impl QuoteTally {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: QuoteTally) {
        self.verified += other.verified;
        self.repaired += other.repaired;
        self.dropped += other.dropped;
    }
}

/// The quote id (specs/builtin-agent.md *Grounded quotes*):
/// `<source>[:msg_<n>]:<chunk_index>:<start>-<end>`.
pub fn quote_id(source: &str, message: Option<usize>, chunk_index: usize, quote: &Quote) -> String {
    let msg = message.map(|n| format!(":msg_{n}")).unwrap_or_default();
    format!(
        "{source}{msg}:{chunk_index}:{}-{}",
        quote.start_pos, quote.end_pos
    )
}

/// The index of the chunk a quote starts in (0 when the source was not chunked).
pub fn chunk_of(chunks: &[Chunk], quote: &Quote) -> usize {
    chunks
        .iter()
        .find(|c| c.contains(quote.start_pos))
        .map_or(0, |c| c.chunk_index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str, start: usize, end: usize) -> Quote {
        Quote {
            text: text.into(),
            start_pos: start,
            end_pos: end,
        }
    }

    const SRC: &str = "fn main() {\n    let naïve = 1; // naïve\n    let x = naïve;\n}\n";

    #[test]
    fn verbatim_quotes_at_code_point_offsets_verify() {
        let s = Source::new(SRC);
        // "naïve" first occurs at code point 20 (bytes differ: ï is two bytes).
        assert_eq!(
            s.check(&q("naïve", 20, 25)),
            Checked::Verified(q("naïve", 20, 25))
        );
    }

    #[test]
    fn wrong_offsets_are_repaired_to_the_nearest_occurrence() {
        let s = Source::new(SRC);
        // Three occurrences at 20, 34 and 52; the model said 50.
        assert_eq!(
            s.check(&q("naïve", 50, 55)),
            Checked::Repaired(q("naïve", 52, 57))
        );
        assert_eq!(
            s.check(&q("naïve", 0, 3)),
            Checked::Repaired(q("naïve", 20, 25))
        );
    }

    #[test]
    fn text_not_in_the_source_or_empty_is_dropped() {
        let s = Source::new(SRC);
        assert!(matches!(s.check(&q("naive", 20, 25)), Checked::Dropped(_)));
        assert!(matches!(s.check(&q("  ", 0, 2)), Checked::Dropped(_)));
        let kept = s.ground(
            &[
                q("naive", 0, 5),
                q("let x", 0, 5),
                q("fn", 0, 2),
                q("main", 3, 7),
                q("}", 62, 63),
            ],
            3,
            "test",
        );
        assert_eq!(kept, [q("let x", 44, 49), q("fn", 0, 2), q("main", 3, 7)]);
    }

    #[test]
    fn quote_ids_name_source_message_and_chunk() {
        let quote = q("x", 10, 11);
        assert_eq!(
            quote_id("t-1:src/main.rs", None, 2, &quote),
            "t-1:src/main.rs:2:10-11"
        );
        assert_eq!(quote_id("t-1", Some(3), 0, &quote), "t-1:msg_3:0:10-11");
        let chunks = super::super::chunk::chunk(SRC, 4);
        let c = chunk_of(&chunks, &q("x", 50, 51));
        assert!(chunks[c].contains(50));
    }
}
