//! Secret scrubbing (specs/builtin-agent.md *Calling the model*): API keys, tokens, private keys
//! and `.env`-style assignments are replaced by `[REDACTED]` in everything sent to the
//! model and in every artifact written. The configured API key is scrubbed literally too,
//! whatever its shape.

use std::sync::OnceLock;

use regex::Regex;

/// What a secret is replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// The patterns of well-known secrets. Each match is replaced whole, except for the
/// assignment pattern, whose name is kept so the text still reads.
fn patterns() -> &'static [Regex] {
    static PATTERNS: OnceLock<Vec<Regex>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            // PEM private keys, whole block.
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
            // OpenAI / Anthropic style keys.
            r"\bsk-[A-Za-z0-9_\-]{16,}",
            // GitHub tokens.
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            // AWS access key ids.
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            // Slack tokens.
            r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
            // Google API keys.
            r"\bAIza[0-9A-Za-z_\-]{30,}",
            // Bearer tokens in headers or logs.
            r"(?i)\bbearer\s+[A-Za-z0-9_\-\.=]{16,}",
        ]
        .iter()
        .map(|p| Regex::new(p).expect("secret patterns compile"))
        .collect()
    })
}

/// `NAME=value` / `name: value` lines whose name says it holds a secret (`.env` files,
/// config snippets): the value goes, the name stays.
fn assignment() -> &'static Regex {
    static ASSIGNMENT: OnceLock<Regex> = OnceLock::new();
    ASSIGNMENT.get_or_init(|| {
        Regex::new(
            r#"(?im)^(\s*(?:export\s+)?[A-Za-z0-9_\.\-]*(?:api[_\-]?key|secret|token|password|passwd|private[_\-]?key|access[_\-]?key)[A-Za-z0-9_\.\-]*\s*[:=]\s*)("[^"\n]*"|'[^'\n]*'|[^\s#]+)"#,
        )
        .expect("assignment pattern compiles")
    })
}

/// How the key shapes of [`patterns`] begin: an open line ending in one (or in a prefix
/// of one) may be a secret's first half.
const KEY_STARTS: &[&str] = &[
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "AKIA",
    "ASIA",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "AIza",
];

/// A bearer token (or the word) at the end of an open line.
fn open_bearer() -> &'static Regex {
    static OPEN: OnceLock<Regex> = OnceLock::new();
    OPEN.get_or_init(|| {
        Regex::new(r"(?i)\b(?:bearer\s+[A-Za-z0-9_\-\.=]*|b(?:e(?:a(?:r(?:e(?:r)?)?)?)?)?)$")
            .expect("open bearer pattern compiles")
    })
}

/// A secret-named assignment whose value is still being written at the end of an open
/// line.
fn open_assignment() -> &'static Regex {
    static OPEN: OnceLock<Regex> = OnceLock::new();
    OPEN.get_or_init(|| {
        Regex::new(
            r#"(?i)^(\s*(?:export\s+)?[A-Za-z0-9_\.\-]*(?:api[_\-]?key|secret|token|password|passwd|private[_\-]?key|access[_\-]?key)[A-Za-z0-9_\.\-]*\s*[:=]\s*)("[^"\n]*|'[^'\n]*|[^\s#]*)$"#,
        )
        .expect("open assignment pattern compiles")
    })
}

/// A scrubber with the literal secrets of this run (the API key) on top of the patterns.
#[derive(Clone, Default)]
pub struct Scrubber {
    literals: Vec<String>,
}

impl Scrubber {
    /// `literals` shorter than 8 characters are ignored: scrubbing them would garble text
    /// without protecting anything real.
    pub fn new(literals: impl IntoIterator<Item = String>) -> Scrubber {
        Scrubber {
            literals: literals.into_iter().filter(|s| s.len() >= 8).collect(),
        }
    }

    /// Where in `open_line` (a line without its end yet) a secret this scrubber knows may
    /// be starting: the beginning of a configured literal, of a known key shape (`sk-`,
    /// `ghp_`, `AKIA`, … or a prefix of one), of a bearer token, or the value of a
    /// secret-named assignment.
    pub fn secret_may_start(&self, open_line: &str) -> Option<usize> {
        let mut earliest: Option<usize> = None;
        let mut at = |i: usize| earliest = Some(earliest.map_or(i, |e| e.min(i)));
        for literal in &self.literals {
            for k in (1..literal.len()).rev() {
                if literal.is_char_boundary(k) && open_line.ends_with(&literal[..k]) {
                    at(open_line.len() - k);
                    break;
                }
            }
        }
        // The trailing run of characters a key is made of, and each place in it a key's
        // shape could begin.
        let word = open_line
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '='))
            .last()
            .map_or(open_line.len(), |(i, _)| i);
        for (i, _) in open_line[word..].char_indices() {
            let start = word + i;
            let before = open_line[..start].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &open_line[start..];
            if KEY_STARTS
                .iter()
                .any(|p| rest.starts_with(p) || (!rest.is_empty() && p.starts_with(rest)))
            {
                at(start);
                break;
            }
        }
        if let Some(m) = open_bearer().find(open_line) {
            at(m.start());
        }
        // The name goes with the value (the assignment is matched whole), also before
        // the value began (`DB_PASSWORD: `, a pause, `hunter2…`): an unattended agent
        // has nobody to answer a password prompt, so holding one loses nothing.
        if open_assignment().is_match(open_line) {
            at(0);
        }
        earliest
    }

    /// `text` with every secret it knows replaced by [`REDACTED`]: the literals, the key
    /// shapes, and the values of secret-named assignments (a number is kept: a count is
    /// no secret).
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for literal in &self.literals {
            if out.contains(literal.as_str()) {
                out = out.replace(literal.as_str(), REDACTED);
            }
        }
        for pattern in patterns() {
            if pattern.is_match(&out) {
                out = pattern.replace_all(&out, REDACTED).into_owned();
            }
        }
        if assignment().is_match(&out) {
            out = assignment()
                .replace_all(&out, |c: &regex::Captures<'_>| {
                    // A count is not a secret ("Tokens: 100 sent", "max_tokens: 4096").
                    if c[2]
                        .chars()
                        .all(|ch| ch.is_ascii_digit() || ch == '.' || ch == ',')
                    {
                        c[0].to_owned()
                    } else {
                        format!("{}{REDACTED}", &c[1])
                    }
                })
                .into_owned();
        }
        out
    }
}

/// Scrubs a stream of output chunks (an agent's stdout or stderr): a secret split across
/// two chunks, or a character split across two reads, comes out whole. Complete lines
/// (ended by `\n` or `\r`) are released at once, since no secret spans a line break; a
/// line longer than [`Stream::WINDOW`] is released but for its last `WINDOW` bytes, which
/// may be the start of a secret; a private-key block is held until its end line (or
/// [`Stream::PEM_LIMIT`], then redacted as far as it went).
pub struct Stream {
    scrubber: Scrubber,
    /// Bytes of a character not yet complete.
    partial: Vec<u8>,
    /// Text not yet released.
    pending: String,
}

impl Stream {
    /// The longest secret a single line may hide at its end.
    pub const WINDOW: usize = 512;
    /// How much of an unterminated private-key block is held back.
    pub const PEM_LIMIT: usize = 64 * 1024;

    /// A stream with nothing held back yet, scrubbed by `scrubber`.
    pub fn new(scrubber: Scrubber) -> Stream {
        Stream {
            scrubber,
            partial: Vec::new(),
            pending: String::new(),
        }
    }

    /// Takes a chunk; returns the scrubbed text that can be released now.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        self.partial.extend_from_slice(chunk);
        let valid = match std::str::from_utf8(&self.partial) {
            Ok(_) => self.partial.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            // Invalid bytes (not a split character): decoded lossily, as before.
            Err(_) => self.partial.len(),
        };
        let rest = self.partial.split_off(valid);
        let text = String::from_utf8_lossy(&self.partial).into_owned();
        self.partial = rest;
        self.pending.push_str(&text);
        let cut = self.release_point();
        let released: String = self.pending.drain(..cut).collect();
        self.scrubber.scrub(&released)
    }

    /// What is held back, when the stream has been quiet for a while (a prompt without a
    /// line end must reach the terminal); an open private-key block, a split character,
    /// and the end of the open line where a secret could be starting (`sk-h11can`, the
    /// first half of the configured key, `TOKEN=ab`) still wait, however long the pause:
    /// released scrubbed, the rest would no longer match.
    pub fn flush(&mut self) -> String {
        let line = self.pending.rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let held = self.scrubber.secret_may_start(&self.pending[line..]);
        let cut = match (open_pem(&self.pending), held) {
            (Some(pem), _) => pem,
            (None, Some(start)) if self.pending.len() - (line + start) <= Self::WINDOW => {
                line + start
            }
            _ => self.pending.len(),
        };
        let released: String = self.pending.drain(..cut).collect();
        self.scrubber.scrub(&released)
    }

    /// Everything left, at the end of the stream.
    pub fn finish(&mut self) -> String {
        let mut text = std::mem::take(&mut self.pending);
        text.push_str(&String::from_utf8_lossy(&std::mem::take(&mut self.partial)));
        let scrubbed = self.scrubber.scrub(&text);
        redact_open_pem(&scrubbed)
    }

    /// How much of `pending` can be scrubbed and released.
    fn release_point(&mut self) -> usize {
        let pending = &self.pending;
        if let Some(begin) = open_pem(pending) {
            if pending.len() - begin < Self::PEM_LIMIT {
                return begin;
            }
            // Too long to hold: what came of the block is redacted, the rest waits.
            let mut text = pending[..begin].to_owned();
            text.push_str(REDACTED);
            self.pending = text;
            return self.pending.len();
        }
        let line_end = pending.rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let mut cut = line_end.max(pending.len().saturating_sub(Self::WINDOW));
        while !pending.is_char_boundary(cut) {
            cut -= 1;
        }
        cut
    }
}

/// Where a private-key block without its end line starts.
fn open_pem(text: &str) -> Option<usize> {
    let begin = text.rfind("-----BEGIN ")?;
    let rest = &text[begin..];
    (rest.contains("PRIVATE KEY") && !rest.contains("-----END ")).then_some(begin)
}

fn redact_open_pem(text: &str) -> String {
    match open_pem(text) {
        Some(begin) => format!("{}{REDACTED}", &text[..begin]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_secret_shapes_are_redacted() {
        let s = Scrubber::default();
        for secret in [
            "sk-proj-abcdefghijklmnopqrstuv",
            "ghp_abcdefghijklmnopqrstuvwxyz0123",
            "AKIAABCDEFGHIJKLMNOP",
            "xoxb-1234567890-abcdef",
            "AIzaSyA1234567890abcdefghijklmnopqrstu",
        ] {
            let out = s.scrub(&format!("the key is {secret} ok"));
            assert_eq!(out, format!("the key is {REDACTED} ok"), "{secret}");
        }
        let pem = "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\ny";
        assert_eq!(s.scrub(pem), format!("x\n{REDACTED}\ny"));
        assert_eq!(
            s.scrub("Authorization: Bearer abcdefghijklmnop1234"),
            format!("Authorization: {REDACTED}")
        );
    }

    #[test]
    fn env_assignments_keep_their_names() {
        let s = Scrubber::default();
        let env = "DATABASE_PASSWORD=hunter2hunter2\nexport STRIPE_API_KEY='abc def'\nPORT=8080\napi_token: xyz123 # note\n";
        assert_eq!(
            s.scrub(env),
            format!(
                "DATABASE_PASSWORD={REDACTED}\nexport STRIPE_API_KEY={REDACTED}\nPORT=8080\napi_token: {REDACTED} # note\n"
            )
        );
    }

    #[test]
    fn the_configured_key_goes_whatever_its_shape_and_short_literals_are_ignored() {
        let s = Scrubber::new(["canary-7f3a9c1e".to_owned(), "abc".to_owned()]);
        assert_eq!(
            s.scrub("x canary-7f3a9c1e y abc"),
            format!("x {REDACTED} y abc")
        );
    }

    #[test]
    fn counts_named_like_secrets_are_kept() {
        let s = Scrubber::default();
        assert_eq!(
            s.scrub("Tokens: 100 sent, 15 received."),
            "Tokens: 100 sent, 15 received."
        );
        assert_eq!(s.scrub("max_tokens: 4096"), "max_tokens: 4096");
        assert_eq!(s.scrub("API_TOKEN=abc123"), format!("API_TOKEN={REDACTED}"));
    }

    /// A secret split by a pause longer than the quiet flush (`sk-h11can` … `ary-6212…`)
    /// comes out redacted: the open line's possible start of a secret is held however
    /// long the pause, the rest of the line (a prompt) is released.
    #[test]
    fn a_secret_split_by_a_pause_is_held_and_redacted_whole() {
        let key = "canary-7f3a9c1e-long".to_owned();
        for (first, second) in [
            ("export OPENAI_KEY=sk-h11can", "ary-6212abcdefghijkl ok\n"),
            ("the key is ", "sk-h11canary-6212abcdefghijkl ok\n"),
            ("using s", "k-h11canary-6212abcdefghijkl ok\n"),
            ("configured canary-7f", "3a9c1e-long ok\n"),
            ("Authorization: Bear", "er abcdefghijklmnop1234 ok\n"),
            ("API_TOKEN=abc", "123def456 ok\n"),
        ] {
            let mut stream = Stream::new(Scrubber::new([key.clone()]));
            let mut out = stream.push(first.as_bytes());
            out.push_str(&stream.flush());
            out.push_str(&stream.flush());
            out.push_str(&stream.push(second.as_bytes()));
            out.push_str(&stream.finish());
            assert!(out.contains(REDACTED), "{first:?}+{second:?}: {out:?}");
            for leaked in ["h11can", "6212ab", "7f3a9c", "abcdefghij", "abc123"] {
                assert!(!out.contains(leaked), "{first:?}+{second:?}: {out:?}");
            }
            assert!(out.ends_with(" ok\n"), "{out:?}");
        }
        // A prompt is released at the quiet flush: nothing in it may start a secret.
        let mut stream = Stream::new(Scrubber::new([key]));
        assert_eq!(stream.push(b"Continue? [y/N] "), "");
        assert_eq!(stream.flush(), "Continue? [y/N] ");
        // A secret-named assignment waits for its value, however long the pause.
        assert_eq!(stream.push(b"DB_PASSWORD: "), "");
        assert_eq!(stream.flush(), "");
        let out = stream.push(b"hunter2hunter2\n");
        assert_eq!(out, format!("DB_PASSWORD: {REDACTED}\n"));
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let s = Scrubber::default();
        let text =
            "fn token_count(s: &str) -> usize { s.len() / 4 }\nThe secret of good code is tests.\n";
        assert_eq!(s.scrub(text), text);
    }

    fn streamed(scrubber: &Scrubber, chunks: &[&[u8]]) -> String {
        let mut stream = Stream::new(scrubber.clone());
        let mut out = String::new();
        for chunk in chunks {
            out.push_str(&stream.push(chunk));
        }
        out.push_str(&stream.finish());
        out
    }

    #[test]
    fn a_secret_split_across_chunks_is_scrubbed_at_every_split() {
        let key = "canary-key-7f3a9c1e55";
        let s = Scrubber::new([key.to_owned()]);
        let text = format!(
            "starting\nusing {key} now\nAuthorization: Bearer abcdefghijklmnop1234\nsk-proj-abcdefghijklmnopqrstuv done\n"
        );
        let bytes = text.as_bytes();
        for split in 0..bytes.len() {
            let out = streamed(&s, &[&bytes[..split], &bytes[split..]]);
            assert!(!out.contains(key), "split at {split}: {out}");
            assert!(
                !out.contains("abcdefghijklmnop1234"),
                "split at {split}: {out}"
            );
            assert!(
                !out.contains("sk-proj-abcdefghijklmnop"),
                "split at {split}: {out}"
            );
            assert!(out.starts_with("starting\nusing [REDACTED] now\n"), "{out}");
        }
        // Byte by byte as well.
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(streamed(&s, &singles), s.scrub(&text));
    }

    #[test]
    fn a_character_split_across_reads_stays_whole() {
        let text = "naïve café — 日本語 ✓\n";
        let bytes = text.as_bytes();
        for split in 0..bytes.len() {
            let out = streamed(&Scrubber::default(), &[&bytes[..split], &bytes[split..]]);
            assert_eq!(out, text, "split at {split}");
        }
    }

    #[test]
    fn complete_lines_are_released_at_once_and_a_long_line_is_not_held_whole() {
        let mut stream = Stream::new(Scrubber::default());
        assert_eq!(stream.push(b"line one\nline t"), "line one\n");
        assert_eq!(stream.push(b"wo\r"), "line two\r");
        let long = "x".repeat(3 * Stream::WINDOW);
        let out = stream.push(long.as_bytes());
        assert_eq!(out.len(), 2 * Stream::WINDOW);
        assert_eq!(
            stream.push(b"Continue? [y/n] ").len(),
            "Continue? [y/n] ".len()
        );
        let held = stream.flush();
        assert_eq!(held.len(), Stream::WINDOW);
        assert!(held.ends_with("Continue? [y/n] "), "{held}");
        assert_eq!(stream.finish(), "");
    }

    #[test]
    fn a_private_key_block_is_held_until_its_end_or_redacted() {
        let s = Scrubber::default();
        let pem =
            "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb\n";
        let bytes = pem.as_bytes();
        let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
        assert_eq!(streamed(&s, &lines), format!("a\n{REDACTED}\nb\n"));
        let open = "a\n-----BEGIN PRIVATE KEY-----\nMIIE\n";
        assert_eq!(streamed(&s, &[open.as_bytes()]), format!("a\n{REDACTED}"));
    }
}
