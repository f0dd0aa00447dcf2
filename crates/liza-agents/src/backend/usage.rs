//! What an agent CLI reports of the tokens and dollars a run used (specs/ledger.md *What each
//! CLI reports*), read from its own output: its machine-readable events where it has them
//! (`claude --output-format stream-json`, `codex exec --json`, `gemini --output-format
//! stream-json`, `opencode run --format json`), vibe's `export.json`, aider's printed
//! summary. A CLI put in a JSON mode is read back to text: what a person reads (the console,
//! the saved log), and — apart — what its text mode printed, the output's end the
//! supervisor judges logins and usage limits by, so that rendering more for a person
//! (the tool calls, the steps) never makes a run look limited that text mode would not. Each reader was written against the real
//! CLI's output (tests/fixtures/clis/usage/, the version in each name). Pure: lines in,
//! text and figures out.

mod aider;
mod claude;
mod codex;
mod gemini;
mod opencode;
mod vibe;

use liza_model::ledger::{ModelUsage, RunUsage};
use serde_json::Value;

/// How a backend reports usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageFormat {
    /// Claude Code's `stream-json` events: the final `result` holds every call's usage.
    ClaudeStreamJson,
    /// `codex exec --json`: `turn.completed` events.
    CodexJson,
    /// Gemini CLI's `stream-json` events: the final `result` holds the run's stats.
    GeminiStreamJson,
    /// `opencode run --format json`: one `step_finish` per model step.
    OpencodeJson,
    /// Vibe's `--output-dir` `export.json`, read after the run; its output is text.
    VibeExport,
    /// aider's `Tokens: … sent, … received. Cost: …` lines in its text output.
    AiderText,
    /// liza's built-in agent: `usage.json` in the run's directory, what the model API
    /// reported of every call.
    LizaUsageFile,
}

impl UsageFormat {
    /// The file in the run's directory that holds the usage, read after the run.
    pub fn report_file(self) -> Option<&'static str> {
        match self {
            UsageFormat::VibeExport => Some("export.json"),
            UsageFormat::LizaUsageFile => Some("usage.json"),
            _ => None,
        }
    }

    /// Whether its stdout is JSON lines, rendered back to text before anyone reads it.
    pub fn is_json(self) -> bool {
        matches!(
            self,
            UsageFormat::ClaudeStreamJson
                | UsageFormat::CodexJson
                | UsageFormat::GeminiStreamJson
                | UsageFormat::OpencodeJson
        )
    }
}

/// What is read of one event.
#[derive(Debug)]
pub(crate) struct Out {
    text: String,
    /// A piece of a line streamed in parts (gemini's deltas), not a line of its own.
    inline: bool,
    /// A person reads it (the console, the saved log).
    shown: bool,
    /// Text mode printed it: the output's end judged for logins and limits holds it.
    judged: bool,
}

impl Out {
    /// Shown, and printed by text mode too.
    pub(crate) fn block(text: String) -> Out {
        Out {
            text,
            inline: false,
            shown: true,
            judged: true,
        }
    }

    /// A streamed piece, shown and printed by text mode.
    pub(crate) fn inline(text: String) -> Out {
        Out {
            text,
            inline: true,
            shown: true,
            judged: true,
        }
    }

    /// Shown to a person only: text mode did not print it (claude's steps, gemini's tool
    /// calls), so it is not judged.
    pub(crate) fn shown_only(text: String) -> Out {
        Out {
            shown: true,
            judged: false,
            ..Out::block(text)
        }
    }

    /// Judged only: what text mode printed that a person has already read (claude's
    /// final answer, shown as its last step).
    pub(crate) fn judged_only(text: String) -> Out {
        Out {
            shown: false,
            judged: true,
            ..Out::block(text)
        }
    }
}

/// What one line of a JSON CLI's stdout gives: the text a person reads, and the text
/// judged for logins and limits (each empty when there is none).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    /// For the console and the saved log.
    pub shown: String,
    /// For the output's end the supervisor judges.
    pub judged: String,
}

/// A run's output as it is read: each line of stdout goes through [`Transcript::line`],
/// which says what a person sees of it and keeps what it reports of usage.
#[derive(Debug)]
pub struct Transcript {
    format: UsageFormat,
    /// The model the run was started with, for a CLI whose report does not name it.
    model_hint: Option<String>,
    tally: Tally,
    /// Whether the shown and the judged text given out last left a line open (a
    /// streamed piece).
    open_line: (bool, bool),
}

/// What the lines read so far reported.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Usage by model, in the order first seen; replaced whole by a CLI whose last event
    /// carries the run's totals (claude, gemini).
    pub models: Vec<ModelUsage>,
    /// Whether any line reported usage (a run that reported nothing has none, not zero).
    pub reported: bool,
    /// Counts printed rounded.
    pub approximate: bool,
    /// The model a text banner named (aider's `Main model:`).
    pub model: Option<String>,
    /// The text of the last step read (claude's), so the final answer that repeats it is
    /// not shown twice.
    pub last_text: Option<String>,
    /// The line before was a `Tokens:` line (aider prints its cost on it or the next).
    pub after_tokens: bool,
}

impl Tally {
    /// Adds `usage` to its model's figures.
    pub(crate) fn add(&mut self, usage: ModelUsage) {
        self.reported = true;
        match self.models.iter_mut().find(|m| m.model == usage.model) {
            Some(kept) => kept.add(&usage),
            None => self.models.push(usage),
        }
    }
}

impl Transcript {
    /// A transcript of a run of a backend reporting in `format`, started with
    /// `model_hint` (`--model`) when liza chose one.
    pub fn new(format: UsageFormat, model_hint: Option<String>) -> Transcript {
        Transcript {
            format,
            model_hint,
            tally: Tally::default(),
            open_line: (false, false),
        }
    }

    /// What it has read so far, taken (the transcript goes on empty): read while an
    /// output reader may still hold it.
    pub fn take(&mut self) -> Transcript {
        Transcript {
            format: self.format,
            model_hint: self.model_hint.clone(),
            tally: std::mem::take(&mut self.tally),
            open_line: (false, false),
        }
    }

    /// Whether stdout is JSON lines to render.
    pub fn is_json(&self) -> bool {
        self.format.is_json()
    }

    /// Reads one line of a text CLI's output, as it was shown (its usage lines).
    pub fn text_line(&mut self, line: &str) {
        if self.format == UsageFormat::AiderText {
            aider::take(line, &mut self.tally);
        }
    }

    /// One complete line of a JSON CLI's stdout (without its newline): what a person
    /// reads of it and what is judged of it. A line that is not one of the CLI's events
    /// — a warning, a crash's trace — is both, as it is.
    pub fn line(&mut self, line: &str) -> Rendered {
        let out = match serde_json::from_str::<Value>(line.trim()) {
            Ok(event @ Value::Object(_)) => match self.event(&event) {
                Some(out) => out,
                None => return Rendered::default(),
            },
            _ => Out::block(line.to_owned()),
        };
        if out.text.is_empty() || !out.inline && out.text.trim().is_empty() {
            return Rendered::default();
        }
        let mut rendered = Rendered::default();
        if out.shown {
            rendered.shown = lines(&out, &mut self.open_line.0);
        }
        if out.judged {
            rendered.judged = lines(&out, &mut self.open_line.1);
        }
        rendered
    }

    /// What ends the text when the output ends: the newline a streamed piece left open.
    pub fn end(&mut self) -> Rendered {
        let close = |open: &mut bool| {
            if std::mem::take(open) {
                "\n".to_owned()
            } else {
                String::new()
            }
        };
        Rendered {
            shown: close(&mut self.open_line.0),
            judged: close(&mut self.open_line.1),
        }
    }

    fn event(&mut self, event: &Value) -> Option<Out> {
        match self.format {
            UsageFormat::ClaudeStreamJson => claude::read(event, &mut self.tally),
            UsageFormat::CodexJson => codex::read(event, &mut self.tally),
            UsageFormat::GeminiStreamJson => gemini::read(event, &mut self.tally),
            UsageFormat::OpencodeJson => opencode::read(event, &mut self.tally),
            UsageFormat::VibeExport | UsageFormat::AiderText | UsageFormat::LizaUsageFile => None,
        }
    }

    /// What the run reported, once it has ended (`export`: vibe's `export.json`, read
    /// by the caller from the run's output directory). `None`: it reported nothing.
    pub fn usage(mut self, export: Option<&[u8]>) -> Option<RunUsage> {
        match (self.format, export) {
            (UsageFormat::VibeExport, Some(bytes)) => vibe::read_export(bytes, &mut self.tally),
            (UsageFormat::LizaUsageFile, Some(bytes)) => {
                if let Ok(usage) = serde_json::from_slice::<RunUsage>(bytes) {
                    usage.models.into_iter().for_each(|m| self.tally.add(m));
                }
            }
            _ => {}
        }
        if !self.tally.reported {
            return None;
        }
        let named = self.tally.model.clone().or(self.model_hint);
        let mut models = self.tally.models;
        for m in &mut models {
            if m.model.is_none() {
                m.model.clone_from(&named);
            }
            if m.cost_usd.is_some() && m.cost_from.is_none() {
                m.cost_from = Some("cli".to_owned());
            }
        }
        Some(RunUsage {
            models,
            approximate: self.tally.approximate,
        })
    }
}

/// `out` as text that follows what was given before (`open`: it left a line open).
fn lines(out: &Out, open: &mut bool) -> String {
    let mut text = String::new();
    if *open && !out.inline {
        text.push('\n');
    }
    text.push_str(&out.text);
    if !out.inline && !text.ends_with('\n') {
        text.push('\n');
    }
    *open = !text.ends_with('\n');
    text
}

/// A count in a JSON event: a non-negative integer (a float or a negative is no count).
pub(crate) fn count(value: &Value) -> Option<u64> {
    value.as_u64()
}

/// A dollar amount in a JSON event: finite and not negative.
pub(crate) fn dollars(value: &Value) -> Option<f64> {
    value.as_f64().filter(|d| d.is_finite() && *d >= 0.0)
}

/// `a - b - c` for counts that include others (OpenAI's input includes the cached
/// tokens), never below zero.
pub(crate) fn less(total: Option<u64>, parts: &[Option<u64>]) -> Option<u64> {
    total.map(|t| {
        parts
            .iter()
            .flatten()
            .fold(t, |left, part| left.saturating_sub(*part))
    })
}

#[cfg(test)]
mod tests;
