//! One coder agent of `liza retro` (specs/builtin-agent.md *Retrospective coding*): an
//! identity reading every chunk of every message of the sprint's interactions and assigning
//! 1–3 descriptive codes to each, every code backed by 1–3 verbatim quotes. The model
//! quotes the chunk it was shown; each quote is verified, repaired or dropped against that
//! chunk (specs/builtin-agent.md *Chunking and grounded quotes*) and kept with offsets into
//! the whole message, so its id `<interaction>:msg_<n>:<chunk_index>:<start>-<end>`
//! addresses the message itself.

use serde::Serialize;
use serde_json::Value;

use super::interactions::Interaction;
use crate::builtin::artifacts::Artifacts;
use crate::builtin::identities::Identity;
use crate::llm::chunk::{self, Chunk};
use crate::llm::client::{Call, ChatClient, Usage};
use crate::llm::grounding::{Quote, QuoteTally, Source, quote_id};
use crate::llm::response::{self, Expect};
use crate::llm::text::CharIndex;

/// Codes asked for (and kept) per chunk.
pub(crate) const MAX_CODES: usize = 3;
/// Quotes asked for (and kept) per code.
pub(crate) const MAX_QUOTES: usize = 3;

/// What one model call reads: a chunk of one message of an interaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    /// Index into the interactions.
    pub interaction: usize,
    /// Index into that interaction's messages (`msg_<n>`).
    pub message: usize,
    pub chunk: Chunk,
}

/// Every message of every interaction, chunked by paragraphs then sentences to at most
/// `max_tokens` each; blank messages have no chunk.
pub(crate) fn units(interactions: &[Interaction], max_tokens: usize) -> Vec<Unit> {
    let mut out = Vec::new();
    for (i, interaction) in interactions.iter().enumerate() {
        for (m, message) in interaction.messages.iter().enumerate() {
            for c in chunk::chunk(&message.text, max_tokens) {
                out.push(Unit {
                    interaction: i,
                    message: m,
                    chunk: c,
                });
            }
        }
    }
    out
}

/// A quote that holds: `text` is exactly the code points `start_pos..end_pos` of message
/// `msg_<message>` of `interaction`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct GroundedQuote {
    pub id: String,
    pub interaction: String,
    pub task: Option<String>,
    pub message: usize,
    pub chunk_index: usize,
    pub start_pos: usize,
    pub end_pos: usize,
    pub text: String,
}

/// A code one identity assigned to one chunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Code {
    pub code: String,
    pub description: String,
    pub quotes: Vec<GroundedQuote>,
}

/// What an identity's run did, beyond its codes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Tally {
    pub chunks: usize,
    /// Calls that gave no answer after the client's retries (WARNING, no codes).
    pub calls_failed: usize,
    /// Answers in which no list of codes could be found (WARNING, no codes).
    pub answers_unreadable: usize,
    /// Answers without token usage (WARNING, counted as none).
    pub usage_missing: usize,
    pub codes_kept: usize,
    /// Codes none of whose quotes held.
    pub codes_dropped: usize,
    /// Items that are not a code object, and codes beyond the per-chunk limit.
    pub codes_ignored: usize,
    pub quotes: QuoteTally,
}

impl Tally {
    pub(crate) fn add(&mut self, other: &Tally) {
        self.chunks += other.chunks;
        self.calls_failed += other.calls_failed;
        self.answers_unreadable += other.answers_unreadable;
        self.usage_missing += other.usage_missing;
        self.codes_kept += other.codes_kept;
        self.codes_dropped += other.codes_dropped;
        self.codes_ignored += other.codes_ignored;
        self.quotes.add(other.quotes);
    }
}

/// The CoderResult of specs/builtin-agent.md *Retrospective coding*: one identity's codes
/// and the tokens they took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct CoderResult {
    pub identity: String,
    pub codes: Vec<Code>,
    pub token_usage: Usage,
    pub tally: Tally,
}

impl CoderResult {
    pub(crate) fn new(identity: &str) -> CoderResult {
        CoderResult {
            identity: identity.to_owned(),
            codes: Vec::new(),
            token_usage: Usage::default(),
            tally: Tally::default(),
        }
    }

    /// Adds one chunk's outcome (chunks are added in reading order).
    pub(crate) fn add(&mut self, chunk: ChunkCoded) {
        self.codes.extend(chunk.codes);
        self.token_usage.add(chunk.usage);
        self.tally.add(&chunk.tally);
    }
}

/// What coding one chunk gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ChunkCoded {
    pub codes: Vec<Code>,
    pub usage: Usage,
    pub tally: Tally,
}

const RULES: &str = "You are a coder in qualitative research. You read one excerpt of an \
interaction between the AI agents (planner, coders, code reviewers) and the people of a \
software sprint, and assign descriptive codes: short names for what happens in the excerpt \
(a problem, a pattern, a cause of friction or of success), each grounded in the excerpt's \
own words.";

/// The system message: the identity's perspective first, then the coding rules.
pub(crate) fn system_message(identity: &Identity) -> String {
    format!("{}\n\n{RULES}", identity.prompt_prefix.trim_end())
}

/// The user message: the instructions, then the chunk between markers.
pub(crate) fn user_message(chunk_text: &str) -> String {
    format!(
        "Assign 1 to {MAX_CODES} codes to the excerpt below.\n\
         Answer with a JSON array only — no prose, no Markdown — of objects:\n\
         [{{\"code\": \"short-name\", \"description\": \"what it means here\", \
         \"quotes\": [{{\"text\": \"...\", \"start_pos\": 0, \"end_pos\": 0}}]}}]\n\
         Each code has 1 to {MAX_QUOTES} quotes. Each quote has `text`, `start_pos` and \
         `end_pos`: `text` is copied verbatim from the excerpt (same characters, same \
         spacing), and `start_pos`/`end_pos` are its Unicode code-point offsets in the \
         excerpt (0-based, end exclusive).\n\n\
         EXCERPT:\n<<<\n{chunk_text}\n>>>\n"
    )
}

/// The answer a dry run gives for a chunk: one code quoting its first words verbatim, so
/// parsing, grounding and quote-id encoding run as they do on a real answer.
pub(crate) fn dry_run_answer(chunk_text: &str) -> String {
    let start = chunk_text.len() - chunk_text.trim_start().len();
    let words: String = chunk_text[start..].chars().take(40).collect();
    let words = words.trim_end();
    let start_pos = chunk_text[..start].chars().count();
    let end_pos = start_pos + words.chars().count();
    serde_json::json!([{
        "code": "dry-run",
        "description": "DRY_RUN=1: a mock code, no model was called",
        "quotes": [{"text": words, "start_pos": start_pos, "end_pos": end_pos}],
    }])
    .to_string()
}

/// A code as the model gave it, before grounding.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RawCode {
    pub code: String,
    pub description: String,
    pub quotes: Vec<Quote>,
}

/// Reads the parsed answer as a list of code objects (specs/builtin-agent.md *Retrospective
/// coding*). Items that are not code objects are ignored with a WARNING and counted; a
/// quote without offsets keeps 0..0 so grounding locates its text; a quote without text is
/// dropped there.
pub(crate) fn read_codes(value: &Value) -> (Vec<RawCode>, usize) {
    let Some(items) = value.as_array() else {
        tracing::warn!("the answer is not a list of codes; no codes for this chunk");
        return (Vec::new(), 1);
    };
    let mut codes = Vec::new();
    let mut ignored = 0;
    for (i, item) in items.iter().enumerate() {
        let name = item
            .get("code")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let quotes = item.get("quotes").and_then(Value::as_array);
        let (Some(name), Some(quotes)) = (name, quotes) else {
            tracing::warn!(
                item = i,
                "an item of the answer is not a code object with `code` and `quotes`; ignored"
            );
            ignored += 1;
            continue;
        };
        let offset =
            |q: &Value, key: &str| q.get(key).and_then(Value::as_u64).map_or(0, |n| n as usize);
        codes.push(RawCode {
            code: name.to_owned(),
            description: item
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_owned(),
            quotes: quotes
                .iter()
                .map(|q| Quote {
                    text: q
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    start_pos: offset(q, "start_pos"),
                    end_pos: offset(q, "end_pos"),
                })
                .collect(),
        });
    }
    (codes, ignored)
}

/// The interaction text a unit reads, and where it is.
pub(crate) struct Reading<'a> {
    pub interaction: &'a Interaction,
    pub unit: &'a Unit,
}

impl Reading<'_> {
    fn message_text(&self) -> &str {
        &self.interaction.messages[self.unit.message].text
    }

    /// The chunk's own text: a slice of the message.
    pub(crate) fn chunk_text(&self) -> &str {
        let text = self.message_text();
        self.unit.chunk.text(text, &CharIndex::new(text))
    }

    /// Grounds `raw` in the chunk: each code keeps its quotes that hold (at most
    /// [`MAX_QUOTES`]), with offsets into the message; a code left with none is dropped
    /// (WARNING); codes beyond [`MAX_CODES`] are ignored.
    pub(crate) fn ground(&self, raw: Vec<RawCode>) -> (Vec<Code>, Tally) {
        let chunk_text = self.chunk_text();
        let source = Source::new(chunk_text);
        let mut tally = Tally::default();
        let mut codes = Vec::new();
        let where_ = format!(
            "{}:msg_{}:{}",
            self.interaction.id, self.unit.message, self.unit.chunk.chunk_index
        );
        for raw in raw {
            let (kept, quotes) = source.ground_tallied(&raw.quotes, MAX_QUOTES, "retro code");
            tally.quotes.add(quotes);
            if kept.is_empty() {
                tracing::warn!(chunk = %where_, "a code with no quote that holds was dropped");
                tally.codes_dropped += 1;
                continue;
            }
            if codes.len() == MAX_CODES {
                tally.codes_ignored += 1;
                continue;
            }
            let quotes = kept.iter().map(|q| self.in_message(q)).collect();
            codes.push(Code {
                code: raw.code,
                description: raw.description,
                quotes,
            });
        }
        if tally.codes_ignored > 0 {
            tracing::warn!(chunk = %where_, ignored = tally.codes_ignored, "codes beyond {MAX_CODES} per chunk were ignored");
        }
        tally.codes_kept = codes.len();
        (codes, tally)
    }

    /// A quote of the chunk, placed in the whole message.
    fn in_message(&self, q: &Quote) -> GroundedQuote {
        let start = self.unit.chunk.start_pos;
        let placed = Quote {
            text: q.text.clone(),
            start_pos: start + q.start_pos,
            end_pos: start + q.end_pos,
        };
        GroundedQuote {
            id: quote_id(
                &self.interaction.id,
                Some(self.unit.message),
                self.unit.chunk.chunk_index,
                &placed,
            ),
            interaction: self.interaction.id.clone(),
            task: self.interaction.task.as_ref().map(ToString::to_string),
            message: self.unit.message,
            chunk_index: self.unit.chunk.chunk_index,
            start_pos: placed.start_pos,
            end_pos: placed.end_pos,
            text: placed.text,
        }
    }
}

/// One model call for one chunk: asked, read, grounded. A failed call or an unreadable
/// answer gives no codes (WARNING); the raw answer goes to the debug artifacts only.
pub(crate) async fn code_chunk(
    client: &ChatClient,
    identity: &Identity,
    reading: &Reading<'_>,
    artifacts: &Artifacts,
) -> ChunkCoded {
    let chunk_text = reading.chunk_text();
    let system = system_message(identity);
    let user = user_message(chunk_text);
    let dry = dry_run_answer(chunk_text);
    let label = format!(
        "{}-msg_{}-chunk_{}",
        reading.interaction.id, reading.unit.message, reading.unit.chunk.chunk_index
    );
    let mut coded = ChunkCoded {
        tally: Tally {
            chunks: 1,
            ..Tally::default()
        },
        ..ChunkCoded::default()
    };
    let outcome = client
        .complete(&Call {
            system: &system,
            user: &user,
            dry_run_answer: &dry,
        })
        .await;
    let answer = match outcome.result {
        Ok(answer) => answer,
        Err(failure) => {
            artifacts.write(&format!("{label}-failure.txt"), &failure.to_string());
            coded.tally.calls_failed = 1;
            return coded;
        }
    };
    match answer.usage {
        Some(usage) => coded.usage = usage,
        None => coded.tally.usage_missing = 1,
    }
    artifacts.write(&format!("{label}-response.txt"), &answer.content);
    let value = match response::parse(&answer.content, Expect::List(&["codes"])) {
        Ok(parsed) => parsed.value,
        Err(why) => {
            tracing::warn!(chunk = %label, %why, "no codes for this chunk");
            coded.tally.answers_unreadable = 1;
            return coded;
        }
    };
    let (raw, ignored) = read_codes(&value);
    let (codes, mut tally) = reading.ground(raw);
    tally.codes_ignored += ignored;
    tally.chunks = 1;
    tally.usage_missing = coded.tally.usage_missing;
    coded.codes = codes;
    coded.tally = tally;
    coded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackboard::TaskId;
    use crate::llm::response::ParseFailure;
    use crate::retro::interactions::Message;

    const REASON: &str = "reason: Le test « naïve » échoue 🙂 — the totals key is missing.";

    fn interaction(texts: &[&str]) -> Interaction {
        Interaction {
            id: "t-1".into(),
            task: Some(TaskId::parse("t-1").unwrap()),
            messages: texts
                .iter()
                .map(|t| Message {
                    time: None,
                    author: "code-reviewer-1".into(),
                    kind: "rejected".into(),
                    text: (*t).to_owned(),
                })
                .collect(),
        }
    }

    fn q(text: &str, start: usize, end: usize) -> Quote {
        Quote {
            text: text.into(),
            start_pos: start,
            end_pos: end,
        }
    }

    fn raw(code: &str, quotes: Vec<Quote>) -> RawCode {
        RawCode {
            code: code.into(),
            description: String::new(),
            quotes,
        }
    }

    /// The code points `start..end` of `text`.
    fn at(text: &str, start: usize, end: usize) -> String {
        text.chars().skip(start).take(end - start).collect()
    }

    fn pos(text: &str, needle: &str) -> usize {
        text[..text.find(needle).unwrap()].chars().count()
    }

    #[test]
    fn quotes_are_verified_repaired_or_dropped_and_codes_without_one_dropped() {
        let i = interaction(&["first message", REASON]);
        let units = units(std::slice::from_ref(&i), 600);
        let unit = units.iter().find(|u| u.message == 1).unwrap();
        let reading = Reading {
            interaction: &i,
            unit,
        };
        let naive = pos(REASON, "« naïve »");
        let totals = pos(REASON, "the totals key");
        let smile_bytes = REASON.find('🙂').unwrap();
        let (codes, tally) = reading.ground(vec![
            raw(
                "missing totals",
                vec![
                    // Verbatim at code-point offsets.
                    q("the totals key is missing", totals, totals + 25),
                    // Offsets given in bytes (past the multi-byte characters): repaired.
                    q("🙂", smile_bytes, smile_bytes + 4),
                    // Not in the text: dropped.
                    q("the total key is missing", totals, totals + 24),
                ],
            ),
            raw("invented", vec![q("nowhere in the text", 0, 19)]),
            raw("no quotes", vec![]),
            raw("naive test", vec![q("« naïve »", 0, 9)]),
        ]);
        assert_eq!(
            tally.quotes,
            QuoteTally {
                verified: 1,
                repaired: 2,
                dropped: 2
            }
        );
        assert_eq!((tally.codes_kept, tally.codes_dropped), (2, 2));
        assert_eq!(codes[0].code, "missing totals");
        assert_eq!(codes[0].quotes.len(), 2);
        assert_eq!(codes[1].quotes[0].start_pos, naive);
        for c in &codes {
            for quote in &c.quotes {
                assert_eq!(at(REASON, quote.start_pos, quote.end_pos), quote.text);
                assert_eq!(
                    quote.id,
                    format!("t-1:msg_1:0:{}-{}", quote.start_pos, quote.end_pos)
                );
                assert_eq!(quote.task.as_deref(), Some("t-1"));
            }
        }
    }

    #[test]
    fn at_most_three_quotes_per_code_and_three_codes_per_chunk() {
        let i = interaction(&["a b c d e f g"]);
        let units = units(std::slice::from_ref(&i), 600);
        let reading = Reading {
            interaction: &i,
            unit: &units[0],
        };
        let four = vec![q("a", 0, 1), q("b", 2, 3), q("c", 4, 5), q("d", 6, 7)];
        let (codes, tally) = reading.ground(vec![
            raw("one", four.clone()),
            raw("two", four.clone()),
            raw("three", four.clone()),
            raw("four", four),
        ]);
        assert_eq!(codes.len(), MAX_CODES);
        assert!(codes.iter().all(|c| c.quotes.len() == MAX_QUOTES));
        assert_eq!(tally.codes_ignored, 1);
    }

    #[test]
    fn quotes_of_a_later_chunk_carry_its_index_and_offsets_into_the_whole_message() {
        let long = format!(
            "Première partie: le planificateur a découpé la tâche. {}\n\n\
             Deuxième partie: « le relecteur a rejeté » deux fois 🙂.\n\n\
             Troisième partie: fusionné.",
            "x".repeat(40)
        );
        let i = interaction(&["short", &long]);
        let all = units(std::slice::from_ref(&i), 20);
        let of_long: Vec<&Unit> = all.iter().filter(|u| u.message == 1).collect();
        assert!(of_long.len() >= 2, "{of_long:?}");
        // The chunks are slices of the message that cover it exactly.
        let index = CharIndex::new(&long);
        let joined: String = of_long
            .iter()
            .map(|u| u.chunk.text(&long, &index))
            .collect();
        assert_eq!(joined, long);
        let target = "« le relecteur a rejeté »";
        let start = pos(&long, target);
        let unit = of_long
            .iter()
            .find(|u| u.chunk.contains(start))
            .copied()
            .unwrap();
        assert!(unit.chunk.chunk_index > 0);
        let reading = Reading {
            interaction: &i,
            unit,
        };
        let in_chunk = start - unit.chunk.start_pos;
        let (codes, _) = reading.ground(vec![raw(
            "rejections",
            vec![q(target, in_chunk, in_chunk + target.chars().count())],
        )]);
        let quote = &codes[0].quotes[0];
        assert_eq!(quote.start_pos, start);
        assert_eq!(at(&long, quote.start_pos, quote.end_pos), target);
        assert_eq!(
            quote.id,
            format!(
                "t-1:msg_1:{}:{}-{}",
                unit.chunk.chunk_index, quote.start_pos, quote.end_pos
            )
        );
        // The message part is there because the source is a message; a file has none.
        assert_eq!(
            quote_id("t-1:src/lib.rs", None, 2, &q("x", 3, 4)),
            "t-1:src/lib.rs:2:3-4"
        );
    }

    #[test]
    fn every_parsing_strategy_yields_the_list_of_code_objects() {
        let list = r#"[{"code": "c", "description": "d", "quotes": [{"text": "a", "start_pos": 0, "end_pos": 1}]}]"#;
        let answers = [
            list.to_owned(),
            format!("Here you go:\n```json\n{list}\n```"),
            format!("```\n{list}\n```"),
            format!("The codes are {list} as asked."),
            format!(r#"{{"codes": {list}}}"#),
        ];
        for answer in &answers {
            let value = response::parse(answer, Expect::List(&["codes"]))
                .unwrap_or_else(|e| panic!("{answer}: {e}"))
                .value;
            let (codes, ignored) = read_codes(&value);
            assert_eq!(ignored, 0, "{answer}");
            assert_eq!(
                codes,
                [raw("c", vec![q("a", 0, 1)])].map(|mut c| {
                    c.description = "d".into();
                    c
                })
            );
        }
        assert!(matches!(
            response::parse("no JSON at all", Expect::List(&["codes"])),
            Err(ParseFailure::NoJson)
        ));
        // Items that are not code objects are ignored; a quote without offsets is kept
        // for grounding to locate.
        let value: Value = serde_json::from_str(
            r#"[42, {"code": ""}, {"quotes": []}, {"code": "k", "quotes": [{"text": "a"}]}]"#,
        )
        .unwrap();
        let (codes, ignored) = read_codes(&value);
        assert_eq!(ignored, 3);
        assert_eq!(codes, [raw("k", vec![q("a", 0, 0)])]);
    }

    #[test]
    fn the_dry_run_answer_is_grounded_verbatim() {
        let text = "  « naïve » 🙂 and then some more words to go past forty characters";
        let i = interaction(&[text]);
        let units = units(std::slice::from_ref(&i), 600);
        let reading = Reading {
            interaction: &i,
            unit: &units[0],
        };
        let value = response::parse(&dry_run_answer(text), Expect::List(&["codes"]))
            .unwrap()
            .value;
        let (raw, _) = read_codes(&value);
        let (codes, tally) = reading.ground(raw);
        assert_eq!(tally.quotes.verified, 1);
        let quote = &codes[0].quotes[0];
        assert!(quote.text.starts_with("« naïve »"));
        assert_eq!(at(text, quote.start_pos, quote.end_pos), quote.text);
    }

    #[test]
    fn the_messages_carry_the_identity_and_the_instructions() {
        let identity = Identity {
            id: "security".into(),
            name: "Security".into(),
            prompt_prefix: "You look at everything as a security auditor.".into(),
            description: None,
        };
        let system = system_message(&identity);
        assert!(system.starts_with("You look at everything as a security auditor."));
        let user = user_message("the chunk « text »");
        assert!(user.contains("the chunk « text »"));
        for needle in [
            "JSON array only",
            "1 to 3 codes",
            "1 to 3 quotes",
            "`text`, `start_pos` and `end_pos`",
            "verbatim",
            "code-point offsets",
        ] {
            assert!(user.contains(needle), "{needle}: {user}");
        }
    }
}
