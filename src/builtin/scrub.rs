//! Secret scrubbing (builtin-agent.md *Calling the model*): API keys, tokens, private keys
//! and `.env`-style assignments are replaced by `[REDACTED]` in everything sent to the
//! model and in every artifact written. The configured API key is scrubbed literally too,
//! whatever its shape.

use std::sync::OnceLock;

use regex::Regex;

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
                    format!("{}{REDACTED}", &c[1])
                })
                .into_owned();
        }
        out
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
    fn ordinary_text_is_untouched() {
        let s = Scrubber::default();
        let text =
            "fn token_count(s: &str) -> usize { s.len() / 4 }\nThe secret of good code is tests.\n";
        assert_eq!(s.scrub(text), text);
    }
}
