//! The retrospective's two files: `.liza/retro/<sprint>.yaml` for tools (everything,
//! including each interaction's messages, so any quote can be checked against the text it
//! names) and `.liza/retro/<sprint>.md` for people (codes by frequency, agreement across
//! identities, quotes with their task and message).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::coding::{Code, CoderResult, Tally};
use super::interactions::Interaction;
use super::merge::MergedCode;
use crate::blackboard::Timestamp;
use crate::blackboard::store::atomic;
use crate::llm::client::Usage;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Report {
    pub sprint: String,
    pub generated_at: String,
    pub model: String,
    pub dry_run: bool,
    pub identities: Vec<IdentityRun>,
    pub totals: Totals,
    pub codes: Vec<MergedCode>,
    pub interactions: Vec<InteractionText>,
    /// What the sprint's agent runs used, from the ledger (specs/ledger.md).
    pub runs_usage: SprintCost,
}

/// What the sprint's agent runs used, by task and by agent.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct SprintCost {
    pub by_task: std::collections::BTreeMap<String, crate::blackboard::ledger::Totals>,
    pub by_agent: std::collections::BTreeMap<String, crate::blackboard::ledger::Totals>,
    pub total: crate::blackboard::ledger::Totals,
}

impl SprintCost {
    /// The runs of `sprint` in `entries`.
    pub(crate) fn of(
        sprint: &str,
        entries: &[crate::blackboard::ledger::LedgerEntry],
    ) -> SprintCost {
        use crate::blackboard::ledger::{self, GroupBy};
        let runs: Vec<_> = entries
            .iter()
            .filter(|e| e.sprint.as_deref() == Some(sprint))
            .collect();
        SprintCost {
            by_task: ledger::group(runs.iter().copied(), GroupBy::Task),
            by_agent: ledger::group(runs.iter().copied(), GroupBy::Agent),
            total: ledger::total(runs.iter().copied()),
        }
    }
}

/// One identity's CoderResult: its codes as it gave them (chunk by chunk, before merging)
/// and the tokens they took.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct IdentityRun {
    pub id: String,
    pub name: String,
    pub token_usage: Usage,
    pub tally: Tally,
    pub codes: Vec<Code>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Totals {
    pub interactions: usize,
    pub messages: usize,
    pub chunks: usize,
    pub calls: usize,
    pub token_usage: Usage,
    pub tally: Tally,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct InteractionText {
    pub id: String,
    pub task: Option<String>,
    pub messages: Vec<MessageText>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct MessageText {
    pub msg: String,
    pub time: Option<String>,
    pub author: String,
    pub kind: String,
    pub text: String,
}

impl Report {
    pub(crate) fn new(
        sprint: &str,
        model: &str,
        dry_run: bool,
        interactions: &[Interaction],
        chunks: usize,
        runs: Vec<(String, CoderResult)>,
        codes: Vec<MergedCode>,
    ) -> Report {
        let mut totals = Totals {
            interactions: interactions.len(),
            messages: interactions.iter().map(|i| i.messages.len()).sum(),
            ..Totals::default()
        };
        let identities = runs
            .into_iter()
            .map(|(name, r)| {
                totals.token_usage.add(r.token_usage);
                totals.tally.add(&r.tally);
                IdentityRun {
                    id: r.identity,
                    name,
                    codes: r.codes,
                    token_usage: r.token_usage,
                    tally: r.tally,
                }
            })
            .collect::<Vec<_>>();
        totals.calls = totals.tally.chunks;
        totals.chunks = chunks;
        Report {
            sprint: sprint.to_owned(),
            generated_at: Timestamp::now().to_string(),
            model: model.to_owned(),
            dry_run,
            identities,
            totals,
            codes,
            runs_usage: SprintCost::default(),
            interactions: interactions
                .iter()
                .map(|i| InteractionText {
                    id: i.id.clone(),
                    task: i.task.as_ref().map(ToString::to_string),
                    messages: i
                        .messages
                        .iter()
                        .enumerate()
                        .map(|(n, m)| MessageText {
                            msg: format!("msg_{n}"),
                            time: m.time.map(|t| t.to_string()),
                            author: m.author.clone(),
                            kind: m.kind.clone(),
                            text: m.text.clone(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// The YAML file: the report's fields in order, written as liza writes its YAML.
    pub(crate) fn to_yaml(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_else(|_| "{}".into());
        // Parsed from text so the fields keep their order.
        let node: crate::blackboard::node::Node =
            serde_json::from_str(&json).unwrap_or_else(|_| crate::blackboard::node::Node::str(""));
        let mut e = crate::blackboard::yaml::Emitter::with_capacity(json.len() * 2);
        e.node(&node);
        e.finish()
    }

    pub(crate) fn to_markdown(&self) -> String {
        let mut md = String::new();
        let t = &self.totals;
        let _ = writeln!(md, "# Retrospective of sprint {}\n", self.sprint);
        let _ = writeln!(
            md,
            "Generated {} with `{}`{} · {} interactions, {} messages, {} chunks · {} identities: {}\n",
            self.generated_at,
            self.model,
            if self.dry_run {
                " (DRY_RUN: mock answers)"
            } else {
                ""
            },
            t.interactions,
            t.messages,
            t.chunks,
            self.identities.len(),
            self.identities
                .iter()
                .map(|i| format!("{} ({})", i.name, i.id))
                .collect::<Vec<_>>()
                .join(", "),
        );
        let _ = writeln!(
            md,
            "Quotes: {} verified, {} repaired, {} dropped · codes dropped for want of a valid quote: {} · calls without an answer: {} · tokens: {} prompt, {} completion\n",
            t.tally.quotes.verified,
            t.tally.quotes.repaired,
            t.tally.quotes.dropped,
            t.tally.codes_dropped,
            t.tally.calls_failed + t.tally.answers_unreadable,
            t.token_usage.prompt_tokens,
            t.token_usage.completion_tokens,
        );
        let _ = writeln!(md, "## Codes by frequency\n");
        if self.codes.is_empty() {
            let _ = writeln!(md, "No code was grounded in a verbatim quote.\n");
        }
        for (n, code) in self.codes.iter().enumerate() {
            let agreement = if code.agreement {
                format!("found by {} identities", code.identities.len())
            } else {
                "found by one identity".to_owned()
            };
            let _ = writeln!(
                md,
                "### {}. {} — {}× · {agreement}: {}\n",
                n + 1,
                code.code,
                code.frequency,
                code.identities.join(", ")
            );
            if !code.tasks.is_empty() {
                let _ = writeln!(md, "Tasks: {}\n", code.tasks.join(", "));
            }
            for d in &code.descriptions {
                let _ = writeln!(md, "- *{}*: {}", d.identity, one_line(&d.text));
            }
            if !code.descriptions.is_empty() {
                md.push('\n');
            }
            for c in &code.quotes {
                let q = &c.quote;
                let message = self.message(&q.interaction, q.message);
                let by = message.map_or(String::new(), |m| format!(", {} by {}", m.kind, m.author));
                let _ = writeln!(
                    md,
                    "> {}\n\n— {} msg_{}{by} · `{}`\n",
                    one_line(&q.text),
                    q.task.as_deref().unwrap_or(&q.interaction),
                    q.message,
                    q.id
                );
            }
        }
        let _ = writeln!(md, "## What the sprint's runs used\n");
        for (by, groups) in [
            (
                crate::blackboard::ledger::GroupBy::Task,
                &self.runs_usage.by_task,
            ),
            (
                crate::blackboard::ledger::GroupBy::Agent,
                &self.runs_usage.by_agent,
            ),
        ] {
            let table = crate::blackboard::ledger::table(
                by,
                groups,
                &self.runs_usage.total,
                Some(&self.sprint),
            );
            let _ = writeln!(md, "```\n{}```\n", table);
        }
        let _ = writeln!(md, "## Identities\n");
        let _ = writeln!(
            md,
            "| identity | codes | chunks | quotes verified / repaired / dropped | codes dropped | prompt tokens | completion tokens |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for i in &self.identities {
            let q = i.tally.quotes;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} / {} / {} | {} | {} | {} |",
                i.id,
                i.codes.len(),
                i.tally.chunks,
                q.verified,
                q.repaired,
                q.dropped,
                i.tally.codes_dropped,
                i.token_usage.prompt_tokens,
                i.token_usage.completion_tokens
            );
        }
        md
    }

    fn message(&self, interaction: &str, n: usize) -> Option<&MessageText> {
        self.interactions
            .iter()
            .find(|i| i.id == interaction)?
            .messages
            .get(n)
    }

    /// Writes both files atomically; returns their paths (YAML, Markdown).
    pub(crate) fn write(&self, dir: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
        std::fs::create_dir_all(dir)?;
        let yaml = dir.join(format!("{}.yaml", self.sprint));
        let md = dir.join(format!("{}.md", self.sprint));
        for (path, text) in [(&yaml, self.to_yaml()), (&md, self.to_markdown())] {
            let temp = atomic::write_temp_synced(dir, ".retro.", text.as_bytes())?;
            std::fs::rename(&temp, path)?;
        }
        atomic::fsync_dir(dir)?;
        Ok((yaml, md))
    }
}

/// Quotes and descriptions on one line of Markdown.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
