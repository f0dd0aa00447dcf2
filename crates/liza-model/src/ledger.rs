//! The token ledger (specs/ledger.md): one entry per agent run — who ran, on what, for how
//! long, and the tokens and dollars the provider served it, as the agent CLI (or the
//! model API, for the built-in agent) reported them. Entries are kept outside state.yaml
//! and appended once, keyed by the run; everything a person reads of usage — a task's,
//! a sprint's, an agent's, `liza cost` — is added up from them here. Pure: no store.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The tokens and cost of one model within a run. A count the CLI did not report is
/// `None` — absent in JSON, never 0 — so a total never claims what nobody measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// The model as the CLI named it (`None`: it did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Input tokens neither read from nor written to the provider's cache: the full
    /// prompt is this plus the two cache counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// What it cost, in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Where the cost comes from: `cli` (the CLI reported it) or `prices`
    /// (`config.prices`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_from: Option<String>,
}

impl ModelUsage {
    /// Whether it holds any figure at all.
    pub fn is_empty(&self) -> bool {
        self.input_tokens.is_none()
            && self.output_tokens.is_none()
            && self.cache_read_tokens.is_none()
            && self.cache_write_tokens.is_none()
            && self.cost_usd.is_none()
    }

    /// Every token it counts (a count not reported adds nothing).
    pub fn tokens(&self) -> u64 {
        [
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
        ]
        .into_iter()
        .flatten()
        .sum()
    }

    /// Adds `other`'s figures to these: a figure reported by either is reported.
    pub fn add(&mut self, other: &ModelUsage) {
        add_opt(&mut self.input_tokens, other.input_tokens);
        add_opt(&mut self.output_tokens, other.output_tokens);
        add_opt(&mut self.cache_read_tokens, other.cache_read_tokens);
        add_opt(&mut self.cache_write_tokens, other.cache_write_tokens);
        match (&mut self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => *a += b,
            (a @ None, Some(b)) => *a = Some(b),
            _ => {}
        }
        if self.cost_from.is_none() {
            self.cost_from.clone_from(&other.cost_from);
        }
    }

    /// Prices it from `prices` when the CLI reported no cost and the model has a price
    /// (every counted token priced, a cache count without its own price at the input's).
    pub fn price(&mut self, prices: &BTreeMap<String, Price>) {
        if self.cost_usd.is_some() || self.input_tokens.is_none() && self.output_tokens.is_none() {
            return;
        }
        let Some(price) = self.model.as_deref().and_then(|m| price_of(prices, m)) else {
            return;
        };
        let per = |count: Option<u64>, rate: f64| count.unwrap_or(0) as f64 * rate / 1e6;
        let cost = per(self.input_tokens, price.input)
            + per(self.output_tokens, price.output)
            + per(
                self.cache_read_tokens,
                price.cache_read.unwrap_or(price.input),
            )
            + per(
                self.cache_write_tokens,
                price.cache_write.unwrap_or(price.input),
            );
        self.cost_usd = Some(cost);
        self.cost_from = Some("prices".to_owned());
    }
}

fn add_opt(total: &mut Option<u64>, more: Option<u64>) {
    if let Some(more) = more {
        *total = Some(total.unwrap_or(0).saturating_add(more));
    }
}

/// A model's price in US dollars per million tokens (`config.prices.<model>`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Per million uncached input tokens.
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
    /// Per million cache-read tokens (`None`: the input's price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Per million cache-write tokens (`None`: the input's price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// The model prices of `config.prices` as the ledger reads them (a price without its input
/// or output is left out; the validator reports it).
pub fn prices(config: &crate::model::Config) -> BTreeMap<String, Price> {
    config
        .prices
        .iter()
        .flat_map(|p| p.0.iter())
        .filter_map(|(model, p)| {
            Some((
                model.clone(),
                Price {
                    input: p.input?.as_f64(),
                    output: p.output?.as_f64(),
                    cache_read: p.cache_read.map(crate::codec::Number::as_f64),
                    cache_write: p.cache_write.map(crate::codec::Number::as_f64),
                },
            ))
        })
        .collect()
}

/// The price of `model`: by its exact name, else by the name without a provider prefix
/// (`openai/gpt-4.1`) or a context suffix (`claude-opus-4-8[1m]`).
fn price_of<'a>(prices: &'a BTreeMap<String, Price>, model: &str) -> Option<&'a Price> {
    let bare = model.rsplit('/').next().unwrap_or(model);
    let bare = bare.split('[').next().unwrap_or(bare);
    prices.get(model).or_else(|| prices.get(bare))
}

/// What one agent run used, as its CLI reported it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunUsage {
    /// One per model the run used (one without a name when the CLI did not say).
    pub models: Vec<ModelUsage>,
    /// The CLI printed its counts rounded (aider's `1.2k`): each is the smallest value
    /// that prints so, so the ledger never counts more than was served.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
}

impl RunUsage {
    /// The run's figures, models added up.
    pub fn total(&self) -> ModelUsage {
        let mut total = ModelUsage::default();
        for m in &self.models {
            total.add(m);
        }
        total.model = None;
        total
    }
}

/// One agent run in the ledger (`.liza/ledger.jsonl`, one JSON line each; in etcd
/// `ledger/<run>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The run's id: `<agent>-<started, compact>-<nonce>`; the entry's key.
    pub run: String,
    /// The agent that ran.
    pub agent: String,
    /// Its role (`planner`, `coder`, `code-reviewer`).
    pub role: String,
    /// The task it ran for (`None`: a planner's turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The sprint it ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sprint: Option<String>,
    /// The backend (`claude`, `codex`, …, `builtin`, or a user's).
    pub backend: String,
    /// When it started and ended (RFC 3339, UTC).
    pub started: String,
    /// When it ended.
    pub ended: String,
    /// Its wall time in milliseconds.
    pub wall_ms: u64,
    /// How it ended (the exit class of `agent_run_ended`).
    pub exit_class: String,
    /// What it used; empty when the backend reports nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelUsage>,
    /// Counts printed rounded (see [`RunUsage::approximate`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
}

/// Why an entry cannot be appended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a ledger run id must be 1-200 characters of A-Z a-z 0-9 . _ -, not {0:?}")]
pub struct BadRunId(pub String);

impl LedgerEntry {
    /// Checks the run id before it names a key.
    pub fn check(&self) -> Result<(), BadRunId> {
        let ok = !self.run.is_empty()
            && self.run.len() <= 200
            && !self.run.starts_with('.')
            && self
                .run
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(())
        } else {
            Err(BadRunId(self.run.clone()))
        }
    }

    /// The entry as one JSON line (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// An entry read from one line; `None` for a line that is not one (a torn last line).
    pub fn from_line(line: &str) -> Option<LedgerEntry> {
        serde_json::from_str(line).ok()
    }

    /// The run's figures, models added up.
    pub fn total(&self) -> ModelUsage {
        RunUsage {
            models: self.models.clone(),
            approximate: self.approximate,
        }
        .total()
    }

    /// The day (UTC, `YYYY-MM-DD`) the run ended.
    pub fn day(&self) -> &str {
        self.ended.get(..10).unwrap_or(&self.ended)
    }
}

/// What a set of runs used: the sums of what was reported, and how many runs reported
/// nothing (their tokens are not in the sums).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Uncached input tokens (absent: no run reported any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Cache-read tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Cache-write tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// US dollars (absent: no run's cost is known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Runs counted.
    pub runs: u64,
    /// Runs whose backend reported no usage at all.
    #[serde(skip_serializing_if = "is_zero")]
    pub runs_unreported: u64,
    /// Runs whose counts were printed rounded (see [`RunUsage::approximate`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub runs_approximate: u64,
    /// Runs that reported usage but no cost, on a model `config.prices` did not price:
    /// their dollars are not in `cost_usd`.
    #[serde(skip_serializing_if = "is_zero")]
    pub runs_unpriced: u64,
    /// Wall time of the runs, in milliseconds.
    pub wall_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Totals {
    /// Counts one run (or, with `models`, the share of it those models used).
    fn count(&mut self, entry: &LedgerEntry, models: &[&ModelUsage]) {
        self.runs += 1;
        self.wall_ms += entry.wall_ms;
        if entry.approximate {
            self.runs_approximate += 1;
        }
        let mut sum = ModelUsage::default();
        for m in models {
            sum.add(m);
        }
        if sum.is_empty() {
            self.runs_unreported += 1;
            return;
        }
        add_opt(&mut self.input_tokens, sum.input_tokens);
        add_opt(&mut self.output_tokens, sum.output_tokens);
        add_opt(&mut self.cache_read_tokens, sum.cache_read_tokens);
        add_opt(&mut self.cache_write_tokens, sum.cache_write_tokens);
        match sum.cost_usd {
            Some(cost) => *self.cost_usd.get_or_insert(0.0) += cost,
            None => self.runs_unpriced += 1,
        }
    }

    /// Adds one run.
    pub fn add(&mut self, entry: &LedgerEntry) {
        let models: Vec<&ModelUsage> = entry.models.iter().collect();
        self.count(entry, &models);
    }

    /// Every token counted.
    pub fn tokens(&self) -> u64 {
        self.usage().tokens()
    }

    /// The figures as one model's usage (for [`phrase`]).
    pub fn usage(&self) -> ModelUsage {
        ModelUsage {
            model: None,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            cost_usd: self.cost_usd,
            cost_from: None,
        }
    }
}

/// What entries are grouped by (`liza cost --by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// The task (`-` for planner turns).
    Task,
    /// The agent.
    Agent,
    /// The backend.
    Backend,
    /// The model: a run that used two models counts in both, each with its share.
    Model,
    /// The sprint.
    Sprint,
    /// The role.
    Role,
}

impl GroupBy {
    /// Its name in `--by`.
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Task => "task",
            GroupBy::Agent => "agent",
            GroupBy::Backend => "backend",
            GroupBy::Model => "model",
            GroupBy::Sprint => "sprint",
            GroupBy::Role => "role",
        }
    }

    /// The one `name` names.
    pub fn parse(name: &str) -> Option<GroupBy> {
        [
            GroupBy::Task,
            GroupBy::Agent,
            GroupBy::Backend,
            GroupBy::Model,
            GroupBy::Sprint,
            GroupBy::Role,
        ]
        .into_iter()
        .find(|g| g.name() == name)
    }
}

/// The label of a group without a value (a planner's turn has no task).
pub const NONE_LABEL: &str = "-";

/// The totals of `entries` grouped by `by`, by label.
pub fn group<'a>(
    entries: impl IntoIterator<Item = &'a LedgerEntry>,
    by: GroupBy,
) -> BTreeMap<String, Totals> {
    let mut groups: BTreeMap<String, Totals> = BTreeMap::new();
    for entry in entries {
        let label = |value: Option<&str>| value.unwrap_or(NONE_LABEL).to_owned();
        match by {
            GroupBy::Model if !entry.models.is_empty() => {
                let mut by_model: BTreeMap<String, Vec<&ModelUsage>> = BTreeMap::new();
                for m in &entry.models {
                    by_model
                        .entry(label(m.model.as_deref()))
                        .or_default()
                        .push(m);
                }
                for (model, models) in by_model {
                    groups.entry(model).or_default().count(entry, &models);
                }
                continue;
            }
            _ => {}
        }
        let key = match by {
            GroupBy::Task => label(entry.task.as_deref()),
            GroupBy::Agent => entry.agent.clone(),
            GroupBy::Backend => entry.backend.clone(),
            GroupBy::Model => NONE_LABEL.to_owned(),
            GroupBy::Sprint => label(entry.sprint.as_deref()),
            GroupBy::Role => entry.role.clone(),
        };
        groups.entry(key).or_default().add(entry);
    }
    groups
}

/// The totals of `entries`.
pub fn total<'a>(entries: impl IntoIterator<Item = &'a LedgerEntry>) -> Totals {
    let mut totals = Totals::default();
    for entry in entries {
        totals.add(entry);
    }
    totals
}

/// Reads the entries of a ledger's JSONL text, oldest first; a line that does not read
/// (torn by a crash) is skipped, and a run appended twice counts once.
pub fn parse_jsonl(text: &str) -> Vec<LedgerEntry> {
    let mut seen = std::collections::HashSet::new();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(LedgerEntry::from_line)
        .filter(|e| seen.insert(e.run.clone()))
        .collect()
}

/// How `used` stands against `limit`: `None` under it; at or over it, what was used of
/// what (`5.12 USD of its 5 USD budget`, `2,000,134 tokens of its 2,000,000 token
/// budget`), dollars first.
pub fn over_budget(limit: &crate::model::BudgetLimit, used: &Totals) -> Option<String> {
    if let Some(usd) = limit.usd.map(crate::codec::Number::as_f64)
        && let Some(spent) = used.cost_usd
        && usd > 0.0
        && spent >= usd
    {
        return Some(format!("{spent:.2} USD of its {usd} USD budget"));
    }
    if let Some(tokens) = limit.tokens.filter(|t| *t > 0)
        && used.tokens() >= tokens as u64
    {
        return Some(format!(
            "{} tokens of its {} token budget",
            thousands(used.tokens()),
            thousands(tokens as u64)
        ));
    }
    None
}

/// The groups as a table, the total last, and what the figures leave out.
pub fn table(
    by: GroupBy,
    groups: &BTreeMap<String, Totals>,
    total: &Totals,
    sprint: Option<&str>,
) -> String {
    if total.runs == 0 {
        return match sprint {
            Some(s) => format!("no agent run recorded in sprint {s}\n"),
            None => "no agent run recorded yet (.liza/ledger.jsonl)\n".to_owned(),
        };
    }
    let header = [
        by.name(),
        "runs",
        "input",
        "output",
        "cache read",
        "cache write",
        "cost",
    ];
    let row = |label: &str, t: &Totals| -> Vec<String> {
        let count = |n: Option<u64>| n.map_or_else(|| "-".to_owned(), thousands);
        vec![
            label.to_owned(),
            t.runs.to_string(),
            count(t.input_tokens),
            count(t.output_tokens),
            count(t.cache_read_tokens),
            count(t.cache_write_tokens),
            t.cost_usd.map_or_else(|| "-".to_owned(), dollars),
        ]
    };
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    rows.extend(groups.iter().map(|(label, t)| row(label, t)));
    rows.push(row("total", total));
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for (n, r) in rows.iter().enumerate() {
        if n == rows.len() - 1 {
            text.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            text.push('\n');
        }
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                if i == 0 {
                    format!("{cell:<w$}", w = widths[i])
                } else {
                    format!("{cell:>w$}", w = widths[i])
                }
            })
            .collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    if total.runs_unreported > 0 {
        text.push_str(&format!(
            "{} run(s) of a backend that reports no usage are counted as runs only\n",
            total.runs_unreported
        ));
    }
    if total.runs_unpriced > 0 {
        text.push_str(&format!(
            "{} run(s) reported tokens but no cost, on a model config.prices does not price: their dollars are not counted\n",
            total.runs_unpriced
        ));
    }
    if total.runs_approximate > 0 {
        text.push_str(&format!(
            "{} run(s) reported rounded counts (aider): their tokens are lower bounds\n",
            total.runs_approximate
        ));
    }
    text.push_str("- : not reported by any run counted\n");
    text
}

/// What is known of `u` in a few words: `1,234 in · 56 out · 789 cache read · 12 cache
/// write · $0.0161`.
pub fn phrase(u: &ModelUsage) -> String {
    let mut parts = Vec::new();
    for (count, what) in [
        (u.input_tokens, "in"),
        (u.output_tokens, "out"),
        (u.cache_read_tokens, "cache read"),
        (u.cache_write_tokens, "cache write"),
    ] {
        if let Some(n) = count {
            parts.push(format!("{} {what}", thousands(n)));
        }
    }
    if let Some(cost) = u.cost_usd {
        parts.push(dollars(cost));
    }
    if parts.is_empty() {
        "nothing reported".to_owned()
    } else {
        parts.join(" · ")
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars as people read them: `$12.35`, `$0.0161` below a dollar.
pub fn dollars(usd: f64) -> String {
    if usd >= 1.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(run: &str, task: Option<&str>, models: Vec<ModelUsage>) -> LedgerEntry {
        LedgerEntry {
            run: run.to_owned(),
            agent: "coder-1".to_owned(),
            role: "coder".to_owned(),
            task: task.map(str::to_owned),
            sprint: Some("sprint-1".to_owned()),
            backend: "claude".to_owned(),
            started: "2026-11-29T10:00:00Z".to_owned(),
            ended: "2026-11-29T10:01:00Z".to_owned(),
            wall_ms: 60_000,
            exit_class: "success".to_owned(),
            models,
            approximate: false,
        }
    }

    fn usage(model: &str, input: u64, output: u64) -> ModelUsage {
        ModelUsage {
            model: Some(model.to_owned()),
            input_tokens: Some(input),
            output_tokens: Some(output),
            ..ModelUsage::default()
        }
    }

    #[test]
    fn a_count_nobody_reported_stays_absent_in_the_totals() {
        let entries = [
            entry("r1", Some("t-1"), vec![usage("m", 10, 2)]),
            entry("r2", Some("t-1"), vec![]),
        ];
        let t = total(&entries);
        assert_eq!((t.input_tokens, t.output_tokens), (Some(10), Some(2)));
        assert_eq!(t.cache_read_tokens, None);
        assert_eq!(t.cost_usd, None);
        assert_eq!((t.runs, t.runs_unreported), (2, 1));
        let json = serde_json::to_value(&t).unwrap();
        assert!(json.get("cache_read_tokens").is_none(), "{json}");
        assert!(json.get("cost_usd").is_none(), "{json}");
    }

    #[test]
    fn a_run_of_two_models_counts_once_per_model_and_once_in_the_total() {
        let entries = [entry(
            "r1",
            Some("t-1"),
            vec![usage("big", 100, 10), usage("small", 5, 1)],
        )];
        let by_model = group(&entries, GroupBy::Model);
        assert_eq!(by_model["big"].input_tokens, Some(100));
        assert_eq!(by_model["small"].input_tokens, Some(5));
        let by_task = group(&entries, GroupBy::Task);
        assert_eq!(by_task["t-1"].input_tokens, Some(105));
        assert_eq!(by_task["t-1"].runs, 1);
    }

    #[test]
    fn prices_apply_to_a_known_model_without_a_reported_cost() {
        let prices = BTreeMap::from([(
            "gpt-4.1".to_owned(),
            Price {
                input: 2.0,
                output: 8.0,
                cache_read: Some(0.5),
                cache_write: None,
            },
        )]);
        let mut m = ModelUsage {
            model: Some("openai/gpt-4.1".to_owned()),
            input_tokens: Some(445),
            output_tokens: Some(56),
            cache_read_tokens: Some(789),
            ..ModelUsage::default()
        };
        m.price(&prices);
        let cost = m.cost_usd.unwrap();
        assert!((cost - 0.0017325).abs() < 1e-12, "{cost}");
        assert_eq!(m.cost_from.as_deref(), Some("prices"));
        // A cost the CLI reported is kept.
        let mut reported = ModelUsage {
            cost_usd: Some(1.0),
            cost_from: Some("cli".into()),
            ..m.clone()
        };
        reported.price(&prices);
        assert_eq!(reported.cost_usd, Some(1.0));
        // An unknown model stays unpriced.
        let mut unknown = ModelUsage {
            model: Some("other".into()),
            cost_usd: None,
            cost_from: None,
            ..m
        };
        unknown.price(&prices);
        assert_eq!(unknown.cost_usd, None);
    }

    #[test]
    fn a_torn_line_is_skipped_and_a_run_appended_twice_counts_once() {
        let e = entry("r1", None, vec![usage("m", 1, 1)]);
        let text = format!("{}\n{}\n{{\"run\":\"r2\",\"ag", e.to_line(), e.to_line());
        let entries = parse_jsonl(&text);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0], e);
    }

    #[test]
    fn a_budget_is_reached_at_its_figure_in_tokens_or_dollars() {
        use crate::codec::Number;
        use crate::model::BudgetLimit;
        let used = total(&[entry(
            "r1",
            Some("t-1"),
            vec![ModelUsage {
                cost_usd: Some(5.0),
                ..usage("m", 900, 100)
            }],
        )]);
        let tokens = |t| BudgetLimit {
            tokens: Some(t),
            ..BudgetLimit::default()
        };
        assert_eq!(over_budget(&tokens(1001), &used), None);
        assert_eq!(
            over_budget(&tokens(1000), &used).as_deref(),
            Some("1,000 tokens of its 1,000 token budget")
        );
        let usd = |u| BudgetLimit {
            usd: Some(Number::Float(u)),
            ..BudgetLimit::default()
        };
        assert_eq!(over_budget(&usd(5.5), &used), None);
        assert_eq!(
            over_budget(&usd(4.5), &used).as_deref(),
            Some("5.00 USD of its 4.5 USD budget")
        );
        // A run that reported no cost never reaches a dollar budget.
        let unpriced = total(&[entry("r2", None, vec![usage("m", 900, 100)])]);
        assert_eq!(over_budget(&usd(0.01), &unpriced), None);
    }

    #[test]
    fn figures_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(dollars(12.345), "$12.35");
        assert_eq!(dollars(0.016079), "$0.0161");
        let u = ModelUsage {
            input_tokens: Some(2468),
            output_tokens: Some(112),
            cost_usd: Some(0.016079),
            ..ModelUsage::default()
        };
        assert_eq!(phrase(&u), "2,468 in · 112 out · $0.0161");
        assert_eq!(phrase(&ModelUsage::default()), "nothing reported");
    }

    #[test]
    fn run_ids_that_could_leave_a_key_are_refused() {
        for bad in ["", "../x", "a/b", ".hidden", "a b", "é"] {
            assert!(entry(bad, None, vec![]).check().is_err(), "{bad:?}");
        }
        assert!(
            entry("coder-1-20261129T100000Z-3f2a", None, vec![])
                .check()
                .is_ok()
        );
    }
}
