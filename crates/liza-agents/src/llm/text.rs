//! Text measures shared by the built-in agent: Unicode code-point offsets (the unit of
//! every offset it exchanges with a model), token estimates, and the bounds on text it
//! writes or sends.

/// Byte offsets of each code point of a text, plus its length at the end, so code-point
/// offsets map to byte offsets (and back) in O(1) / O(log n).
pub struct CharIndex {
    starts: Vec<usize>,
}

impl CharIndex {
    /// The index of `text`.
    pub fn new(text: &str) -> CharIndex {
        let mut starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        starts.push(text.len());
        CharIndex { starts }
    }

    /// Number of code points.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The byte offset of code point `i` (`None` past the end).
    pub fn byte(&self, i: usize) -> Option<usize> {
        self.starts.get(i).copied()
    }

    /// The code-point offset of byte `b` (which must be a char boundary).
    pub fn char_at_byte(&self, b: usize) -> Option<usize> {
        self.starts.binary_search(&b).ok()
    }

    /// `text[start..end]` in code points, when both are in range and ordered.
    pub fn slice<'t>(&self, text: &'t str, start: usize, end: usize) -> Option<&'t str> {
        if start > end {
            return None;
        }
        Some(&text[self.byte(start)?..self.byte(end)?])
    }
}

/// A token estimate good enough for budgets: one token per four code points, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The truncation rule (specs/builtin-agent.md *Coder*): output over 4000 characters
/// becomes its first 2500, `"\n...\n"`, and its last 1000.
pub fn truncate_output(text: &str) -> String {
    const LIMIT: usize = 4000;
    let count = text.chars().count();
    if count <= LIMIT {
        return text.to_owned();
    }
    let head: String = text.chars().take(2500).collect();
    let tail: String = text.chars().skip(count - 1000).collect();
    format!("{head}\n...\n{tail}")
}

/// `text` cut to at most `max` bytes on a char boundary, with a marker saying how much
/// was left out (for artifacts and log fields).
pub fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[… {} more bytes not kept]",
        &text[..cut],
        text.len() - cut
    )
}

/// The 1-based line of code point `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.chars().take(offset).filter(|&c| c == '\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_points_not_bytes() {
        let text = "héllo → wörld";
        let idx = CharIndex::new(text);
        assert_eq!(idx.len(), 13);
        assert_eq!(idx.slice(text, 6, 7), Some("→"));
        assert_eq!(idx.slice(text, 8, 13), Some("wörld"));
        assert_eq!(idx.slice(text, 8, 14), None);
        assert_eq!(idx.char_at_byte(text.find('w').unwrap()), Some(8));
    }

    #[test]
    fn the_truncation_rule_is_exactly_2500_marker_1000() {
        let short = "x".repeat(4000);
        assert_eq!(truncate_output(&short), short);
        let long: String = (0..5000)
            .map(|i| {
                if i < 2500 {
                    'a'
                } else if i < 4000 {
                    'b'
                } else {
                    'é'
                }
            })
            .collect();
        let out = truncate_output(&long);
        assert_eq!(
            out,
            format!("{}\n...\n{}", "a".repeat(2500), "é".repeat(1000))
        );
        assert_eq!(out.chars().count(), 2500 + 5 + 1000);
    }

    #[test]
    fn bounds_and_lines() {
        assert_eq!(bounded("abc", 10), "abc");
        let b = bounded("ééé", 3);
        assert!(b.starts_with("é\n[… 4 more bytes"), "{b}");
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 4), 3);
        assert_eq!(estimate_tokens("abcde"), 2);
    }
}
