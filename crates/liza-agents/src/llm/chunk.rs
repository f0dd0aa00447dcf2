//! Chunking long inputs with exact offsets (specs/builtin-agent.md *Chunking*):
//! by paragraphs (blank lines), then by sentences or lines, then — for a single line longer
//! than the budget — at a code-point boundary. Chunks are slices of the original text
//! (never re-joined), contiguous and covering it, so `start_pos..end_pos` (code points)
//! always addresses the source itself.

use super::text::{CharIndex, estimate_tokens};

/// One slice of a source text, addressed by code-point offsets into the whole of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Its place among the text's chunks, from 0.
    pub chunk_index: usize,
    /// Code-point offsets into the whole text.
    pub start_pos: usize,
    /// Where it ends, exclusive, in code points.
    pub end_pos: usize,
    /// Its size in estimated tokens.
    pub token_count: usize,
}

impl Chunk {
    /// Its text in `source`, the text it was cut from (`index` is that text's); empty when
    /// the offsets do not fit it.
    pub fn text<'t>(&self, source: &'t str, index: &CharIndex) -> &'t str {
        index
            .slice(source, self.start_pos, self.end_pos)
            .unwrap_or("")
    }

    /// Whether code point `pos` lies in it.
    pub fn contains(&self, pos: usize) -> bool {
        (self.start_pos..self.end_pos).contains(&pos)
    }
}

/// Splits `text` into chunks of at most `max_tokens` (estimated) each.
pub fn chunk(text: &str, max_tokens: usize) -> Vec<Chunk> {
    let max_chars = max_tokens.max(1) * 4;
    let index = CharIndex::new(text);
    // Pieces: paragraph-sized spans (in code points), split further when too long.
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    for (s, e) in spans(text, &index, paragraph_ends) {
        if e - s <= max_chars {
            pieces.push((s, e));
            continue;
        }
        let para = index.slice(text, s, e).unwrap_or("");
        let para_index = CharIndex::new(para);
        for (ss, se) in spans(para, &para_index, sentence_ends) {
            let (ss, se) = (s + ss, s + se);
            let mut at = ss;
            while se - at > max_chars {
                pieces.push((at, at + max_chars));
                at += max_chars;
            }
            pieces.push((at, se));
        }
    }
    // Greedy packing of consecutive pieces.
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    for (s, e) in pieces {
        current = match current {
            Some((cs, ce)) if e - cs <= max_chars => Some((cs, e.max(ce))),
            Some(done) => {
                push(&mut chunks, text, &index, done);
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some(done) = current {
        push(&mut chunks, text, &index, done);
    }
    chunks
}

fn push(chunks: &mut Vec<Chunk>, text: &str, index: &CharIndex, (start, end): (usize, usize)) {
    let token_count = estimate_tokens(index.slice(text, start, end).unwrap_or(""));
    chunks.push(Chunk {
        chunk_index: chunks.len(),
        start_pos: start,
        end_pos: end,
        token_count,
    });
}

/// Contiguous spans of `text` (code points) ending where `ends` says a unit ends.
fn spans(text: &str, index: &CharIndex, ends: fn(&str) -> Vec<usize>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for byte_end in ends(text) {
        let end = index.char_at_byte(byte_end).unwrap_or(index.len());
        if end > start {
            out.push((start, end));
            start = end;
        }
    }
    if start < index.len() {
        out.push((start, index.len()));
    }
    out
}

/// Byte offsets just after each run of blank lines.
fn paragraph_ends(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut ends = Vec::new();
    let mut i = 0;
    while let Some(off) = text[i..].find("\n\n") {
        let mut j = i + off + 2;
        while j < bytes.len() && bytes[j] == b'\n' {
            j += 1;
        }
        ends.push(j);
        i = j;
        if i >= bytes.len() {
            break;
        }
    }
    ends
}

/// Byte offsets just after each line break and each sentence end (`.`, `!`, `?` followed
/// by a space).
fn sentence_ends(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut ends = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        let end = match b {
            b'\n' => Some(i + 1),
            b'.' | b'!' | b'?' if bytes.get(i + 1) == Some(&b' ') => Some(i + 2),
            _ => None,
        };
        if let Some(e) = end {
            ends.push(e);
        }
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts<'t>(text: &'t str, chunks: &[Chunk]) -> Vec<&'t str> {
        let index = CharIndex::new(text);
        chunks.iter().map(|c| c.text(text, &index)).collect()
    }

    fn assert_exact_cover(text: &str, chunks: &[Chunk]) {
        assert_eq!(texts(text, chunks).concat(), text);
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(c.chunk_index, i);
            if i > 0 {
                assert_eq!(c.start_pos, chunks[i - 1].end_pos);
            }
        }
    }

    #[test]
    fn short_text_is_one_chunk() {
        let text = "One paragraph.\n\nAnother.";
        let chunks = chunk(text, 1000);
        assert_eq!(chunks.len(), 1);
        assert_eq!(
            (chunks[0].start_pos, chunks[0].end_pos),
            (0, text.chars().count())
        );
    }

    #[test]
    fn paragraphs_then_sentences_then_hard_cuts_with_exact_offsets_on_multibyte_text() {
        let text = "Première idée — très longue. Deuxième phrase ici ! Troisième?\n\nÜber kurz.\n\n\n日本語のテキストはとても長いです日本語のテキストはとても長いです";
        let chunks = chunk(text, 4); // 16 code points at most
        assert_exact_cover(text, &chunks);
        let index = CharIndex::new(text);
        for c in &chunks {
            assert!(c.end_pos - c.start_pos <= 16, "{c:?}");
            assert_eq!(c.token_count, estimate_tokens(c.text(text, &index)));
        }
        // Offsets are code points into the whole text: slicing by them gives the chunk.
        let para2 = text.find("Über").unwrap();
        let start = text[..para2].chars().count();
        assert!(chunks.iter().any(|c| c.start_pos == start), "{chunks:?}");
    }

    #[test]
    fn packing_keeps_neighbouring_paragraphs_together() {
        let text = "a.\n\nb.\n\nc.\n\nd.";
        let chunks = chunk(text, 2); // 8 code points
        assert_exact_cover(text, &chunks);
        assert_eq!(texts(text, &chunks), ["a.\n\nb.\n\n", "c.\n\nd."]);
    }

    #[test]
    fn empty_text_has_no_chunks() {
        assert!(chunk("", 10).is_empty());
    }
}
