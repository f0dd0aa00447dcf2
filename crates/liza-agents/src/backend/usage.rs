//! What an agent CLI reports of the tokens and dollars a run used (specs/ledger.md *What each
//! CLI reports*), read from its own output: its machine-readable events where it has them
//! (`claude --output-format stream-json`, `codex exec --json`, `gemini --output-format
//! stream-json`, `opencode run --format json`), vibe's `export.json`, aider's printed
//! summary. A CLI put in a JSON mode is read back to the text a person reads (the console,
//! the saved log, and the output's end the supervisor judges logins and usage limits by),
//! so its events never reach a person raw. Each reader was written against the real
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

/// What a person reads of one event.
#[derive(Debug)]
pub(crate) struct Out {
    text: String,
    /// A piece of a line streamed in parts (gemini's deltas), not a line of its own.
    inline: bool,
}

impl Out {
    pub(crate) fn block(text: String) -> Out {
        Out {
            text,
            inline: false,
        }
    }

    pub(crate) fn inline(text: String) -> Out {
        Out { text, inline: true }
    }
}

/// A run's output as it is read: each line of stdout goes through [`Transcript::line`],
/// which says what a person sees of it and keeps what it reports of usage.
#[derive(Debug)]
pub struct Transcript {
    format: UsageFormat,
    /// The model the run was started with, for a CLI whose report does not name it.
    model_hint: Option<String>,
    tally: Tally,
    /// Whether the text given out last left a line open (a streamed piece).
    open_line: bool,
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
            open_line: false,
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

    /// One complete line of a JSON CLI's stdout (without its newline): the text a person
    /// reads of it (`None`: nothing). A line that is not one of the CLI's events — a
    /// warning, a crash's trace — is shown as it is.
    pub fn line(&mut self, line: &str) -> Option<String> {
        let out = match serde_json::from_str::<Value>(line.trim()) {
            Ok(event @ Value::Object(_)) => self.event(&event)?,
            _ => Out::block(line.to_owned()),
        };
        if out.text.is_empty() || !out.inline && out.text.trim().is_empty() {
            return None;
        }
        let mut text = String::new();
        if self.open_line && !out.inline {
            text.push('\n');
        }
        text.push_str(&out.text);
        if !out.inline && !text.ends_with('\n') {
            text.push('\n');
        }
        self.open_line = !text.ends_with('\n');
        Some(text)
    }

    /// What ends the text when the output ends: the newline a streamed piece left open.
    pub fn end(&mut self) -> Option<String> {
        std::mem::take(&mut self.open_line).then(|| "\n".to_owned())
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
