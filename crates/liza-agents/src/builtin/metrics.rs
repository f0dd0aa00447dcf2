//! The built-in agent's metrics (specs/builtin-agent.md *Metrics*), per agent and
//! in total, from the run results recorded in the tasks' history (`commit_result`,
//! `review_result`): runs, run latency, retries by reason, tokens, patch size and outcome
//! counts. `liza status --json` carries them under `builtin`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::blackboard::State;

/// The metrics of one agent's built-in runs, or of all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AgentMetrics {
    /// Runs recorded.
    pub runs: u64,
    /// Their durations added up, in milliseconds.
    pub latency_ms_total: u64,
    /// The longest run, in milliseconds.
    pub latency_ms_max: u64,
    /// `transport`, `parse`, `schema`, `checks`.
    pub retries: BTreeMap<String, u64>,
    /// Prompt tokens of every call.
    pub prompt_tokens: u64,
    /// Completion tokens of every call.
    pub completion_tokens: u64,
    /// Lines added and removed by the coders' commits.
    pub patch_lines: u64,
    /// `SUCCESS`, `SOFT_FAIL`, `HARD_FAIL` for coders; `approve`, `reject`, `no verdict`
    /// for reviewers.
    pub outcomes: BTreeMap<String, u64>,
}

impl AgentMetrics {
    fn add(&mut self, result: &Value, usage: (u64, u64)) {
        let n = |key: &str| result.get(key).and_then(Value::as_u64).unwrap_or(0);
        self.runs += 1;
        let latency = n("duration_ms");
        self.latency_ms_total += latency;
        self.latency_ms_max = self.latency_ms_max.max(latency);
        if let Some(Value::Object(reasons)) = result.get("retry_reasons") {
            for (reason, count) in reasons {
                *self.retries.entry(reason.clone()).or_default() += count.as_u64().unwrap_or(0);
            }
        }
        self.prompt_tokens += usage.0;
        self.completion_tokens += usage.1;
        self.patch_lines += n("patch_lines");
        let outcome = result
            .get("verdict")
            .or_else(|| result.get("status"))
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        *self.outcomes.entry(outcome.to_owned()).or_default() += 1;
    }

    fn merge(&mut self, other: &AgentMetrics) {
        self.runs += other.runs;
        self.latency_ms_total += other.latency_ms_total;
        self.latency_ms_max = self.latency_ms_max.max(other.latency_ms_max);
        for (k, v) in &other.retries {
            *self.retries.entry(k.clone()).or_default() += v;
        }
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.patch_lines += other.patch_lines;
        for (k, v) in &other.outcomes {
            *self.outcomes.entry(k.clone()).or_default() += v;
        }
    }
}

/// The built-in runs' metrics, in total and per agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// Every agent's together.
    pub total: AgentMetrics,
    /// Each agent's, by agent id.
    pub agents: BTreeMap<String, AgentMetrics>,
}

/// The metrics of every built-in run recorded on the blackboard.
pub fn collect(state: &State) -> Metrics {
    let mut metrics = Metrics::default();
    for task in &state.tasks {
        for event in task.history() {
            if event.event != "commit_result" && event.event != "review_result" {
                continue;
            }
            let Some(result) = event.extra.get("result").map(|n| n.to_json()) else {
                continue;
            };
            let n = |key: &str| result.get(key).and_then(Value::as_u64).unwrap_or(0);
            let usage = (n("prompt_tokens"), n("completion_tokens"));
            let agent = event.agent.clone().unwrap_or_else(|| "unknown".into());
            metrics.agents.entry(agent).or_default().add(&result, usage);
        }
    }
    let mut total = AgentMetrics::default();
    for m in metrics.agents.values() {
        total.merge(m);
    }
    metrics.total = total;
    metrics
}
