//! The operational metrics of specs/operations.md *Metrics*, computed from the blackboard, the
//! tally of log.yaml and alerts.log: tasks by status (archived ones included), transitions
//! by kind, lock wait and hold histograms, wake latency, agent runs by role and exit
//! class, the built-in agent's tokens, retries and outcomes, merges, integration failures
//! and alarms by category. One collection feeds both `/metrics` (Prometheus text) and
//! `liza status --json` (`ops_metrics`), so the two always agree.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::blackboard::State;
use crate::blackboard::log_tally::{Activity, Histogram};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HistogramNumbers {
    pub count: u64,
    pub sum: f64,
    /// `(upper bound in ms, cumulative count)`; the last bound is `+Inf` (as null).
    pub buckets: Vec<(Option<f64>, u64)>,
}

impl From<&Histogram> for HistogramNumbers {
    fn from(h: &Histogram) -> Self {
        HistogramNumbers {
            count: h.count,
            sum: (h.sum * 1000.0).round() / 1000.0,
            buckets: h
                .cumulative()
                .into_iter()
                .map(|(le, n)| (le.is_finite().then_some(le), n))
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunCount {
    pub role: String,
    pub exit_class: String,
    pub count: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BuiltinNumbers {
    pub runs: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub retries: BTreeMap<String, u64>,
    pub outcomes: BTreeMap<String, u64>,
}

/// Every number `/metrics` serves.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Numbers {
    pub revision: u64,
    pub tasks_by_status: BTreeMap<String, u64>,
    pub transitions: BTreeMap<String, u64>,
    pub lock_wait_ms: HistogramNumbers,
    pub lock_hold_ms: HistogramNumbers,
    pub wake_latency_ms: HistogramNumbers,
    pub agent_runs: Vec<RunCount>,
    pub builtin: BuiltinNumbers,
    pub merges: u64,
    pub integration_failures: u64,
    pub alarms: BTreeMap<String, u64>,
    /// The ledger's tokens and dollars by agent, backend and model (specs/ledger.md).
    pub usage: Vec<UsageCount>,
}

/// What the runs of one agent on one backend and model used, all told.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageCount {
    pub agent: String,
    pub backend: String,
    /// `-` when the CLI did not name it.
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// `None`: no run's cost is known.
    pub cost_usd: Option<f64>,
}

/// The ledger's usage by agent, backend and model.
pub fn usage(entries: &[crate::blackboard::ledger::LedgerEntry]) -> Vec<UsageCount> {
    let mut counts: BTreeMap<(String, String, String), UsageCount> = BTreeMap::new();
    for entry in entries {
        for m in &entry.models {
            let model = m.model.clone().unwrap_or_else(|| "-".to_owned());
            let c = counts
                .entry((entry.agent.clone(), entry.backend.clone(), model.clone()))
                .or_insert_with(|| UsageCount {
                    agent: entry.agent.clone(),
                    backend: entry.backend.clone(),
                    model,
                    ..UsageCount::default()
                });
            c.input_tokens += m.input_tokens.unwrap_or(0);
            c.output_tokens += m.output_tokens.unwrap_or(0);
            c.cache_read_tokens += m.cache_read_tokens.unwrap_or(0);
            c.cache_write_tokens += m.cache_write_tokens.unwrap_or(0);
            if let Some(cost) = m.cost_usd {
                *c.cost_usd.get_or_insert(0.0) += cost;
            }
        }
    }
    counts.into_values().collect()
}

/// Collects the numbers; `alarms` are alerts.log's counts by category.
pub fn collect(state: &State, activity: &Activity, alarms: BTreeMap<String, u64>) -> Numbers {
    let mut tasks_by_status = BTreeMap::new();
    for t in state.tasks.iter() {
        *tasks_by_status
            .entry(t.status.as_str().to_owned())
            .or_insert(0) += 1;
    }
    for (_, a) in state.archived.iter().flat_map(|a| a.iter()) {
        *tasks_by_status
            .entry(a.status.as_str().to_owned())
            .or_insert(0) += 1;
    }
    let builtin = crate::builtin::metrics::collect(state).total;
    Numbers {
        revision: state.revision(),
        tasks_by_status,
        transitions: activity.transitions.clone(),
        lock_wait_ms: (&activity.lock_wait).into(),
        lock_hold_ms: (&activity.lock_hold).into(),
        wake_latency_ms: (&activity.wake_latency).into(),
        agent_runs: activity
            .runs
            .iter()
            .map(|((role, exit_class), count)| RunCount {
                role: role.clone(),
                exit_class: exit_class.clone(),
                count: *count,
            })
            .collect(),
        builtin: BuiltinNumbers {
            runs: builtin.runs,
            prompt_tokens: builtin.prompt_tokens,
            completion_tokens: builtin.completion_tokens,
            retries: builtin.retries,
            outcomes: builtin.outcomes,
        },
        merges: activity.merges,
        integration_failures: activity.integration_failures,
        alarms,
        usage: Vec::new(),
    }
}

/// The numbers in the Prometheus text exposition format (version 0.0.4).
pub fn prometheus(n: &Numbers) -> String {
    let mut out = String::with_capacity(4096);
    family(
        &mut out,
        "liza_blackboard_revision",
        "gauge",
        "The blackboard's revision.",
    );
    sample(&mut out, "liza_blackboard_revision", &[], n.revision as f64);
    family(
        &mut out,
        "liza_tasks",
        "gauge",
        "Tasks by status, archived ones included.",
    );
    for (status, count) in &n.tasks_by_status {
        sample(&mut out, "liza_tasks", &[("status", status)], *count as f64);
    }
    family(
        &mut out,
        "liza_transitions_total",
        "counter",
        "Committed transactions by log action.",
    );
    for (kind, count) in &n.transitions {
        sample(
            &mut out,
            "liza_transitions_total",
            &[("kind", kind)],
            *count as f64,
        );
    }
    histogram(
        &mut out,
        "liza_lock_wait_milliseconds",
        "Time transactions waited for the state lock.",
        &n.lock_wait_ms,
    );
    histogram(
        &mut out,
        "liza_lock_hold_milliseconds",
        "Time transactions held the state lock.",
        &n.lock_hold_ms,
    );
    histogram(
        &mut out,
        "liza_wake_latency_milliseconds",
        "From a state change to the supervisor acting on it.",
        &n.wake_latency_ms,
    );
    family(
        &mut out,
        "liza_agent_runs_total",
        "counter",
        "Agent runs by role and how they ended.",
    );
    for r in &n.agent_runs {
        sample(
            &mut out,
            "liza_agent_runs_total",
            &[("role", &r.role), ("exit_class", &r.exit_class)],
            r.count as f64,
        );
    }
    family(
        &mut out,
        "liza_builtin_runs_total",
        "counter",
        "Built-in agent runs.",
    );
    sample(
        &mut out,
        "liza_builtin_runs_total",
        &[],
        n.builtin.runs as f64,
    );
    family(
        &mut out,
        "liza_builtin_tokens_total",
        "counter",
        "Tokens used by the built-in agent.",
    );
    sample(
        &mut out,
        "liza_builtin_tokens_total",
        &[("kind", "prompt")],
        n.builtin.prompt_tokens as f64,
    );
    sample(
        &mut out,
        "liza_builtin_tokens_total",
        &[("kind", "completion")],
        n.builtin.completion_tokens as f64,
    );
    family(
        &mut out,
        "liza_builtin_retries_total",
        "counter",
        "Built-in agent retries by reason.",
    );
    for (reason, count) in &n.builtin.retries {
        sample(
            &mut out,
            "liza_builtin_retries_total",
            &[("reason", reason)],
            *count as f64,
        );
    }
    family(
        &mut out,
        "liza_builtin_outcomes_total",
        "counter",
        "Built-in agent runs by outcome.",
    );
    for (outcome, count) in &n.builtin.outcomes {
        sample(
            &mut out,
            "liza_builtin_outcomes_total",
            &[("outcome", outcome)],
            *count as f64,
        );
    }
    family(
        &mut out,
        "liza_tokens_total",
        "counter",
        "Tokens the agents' runs used, as their CLIs reported them, by agent, backend, model and kind (input: uncached).",
    );
    for u in &n.usage {
        for (kind, count) in [
            ("input", u.input_tokens),
            ("output", u.output_tokens),
            ("cache_read", u.cache_read_tokens),
            ("cache_write", u.cache_write_tokens),
        ] {
            sample(
                &mut out,
                "liza_tokens_total",
                &[
                    ("agent", &u.agent),
                    ("backend", &u.backend),
                    ("model", &u.model),
                    ("kind", kind),
                ],
                count as f64,
            );
        }
    }
    family(
        &mut out,
        "liza_cost_usd_total",
        "counter",
        "US dollars the agents' runs cost, where known, by agent, backend and model.",
    );
    for u in &n.usage {
        if let Some(cost) = u.cost_usd {
            sample(
                &mut out,
                "liza_cost_usd_total",
                &[
                    ("agent", &u.agent),
                    ("backend", &u.backend),
                    ("model", &u.model),
                ],
                cost,
            );
        }
    }
    family(
        &mut out,
        "liza_merges_total",
        "counter",
        "Merges into the integration branch.",
    );
    sample(&mut out, "liza_merges_total", &[], n.merges as f64);
    family(
        &mut out,
        "liza_integration_failures_total",
        "counter",
        "Merges that failed (conflict or checks).",
    );
    sample(
        &mut out,
        "liza_integration_failures_total",
        &[],
        n.integration_failures as f64,
    );
    family(
        &mut out,
        "liza_alarms_total",
        "counter",
        "Alarms raised, by category.",
    );
    for (category, count) in &n.alarms {
        sample(
            &mut out,
            "liza_alarms_total",
            &[("category", category)],
            *count as f64,
        );
    }
    out
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: f64) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", escape(v));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", number(value));
}

fn histogram(out: &mut String, name: &str, help: &str, h: &HistogramNumbers) {
    family(out, name, "histogram", help);
    let bucket = format!("{name}_bucket");
    for (le, count) in &h.buckets {
        let le = le.map_or("+Inf".to_owned(), number);
        sample(out, &bucket, &[("le", &le)], *count as f64);
    }
    sample(out, &format!("{name}_sum"), &[], h.sum);
    sample(out, &format!("{name}_count"), &[], h.count as f64);
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Label values escape `\`, `"` and newlines.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_end_in_inf() {
        let mut h = Histogram::default();
        for ms in [0.2, 0.7, 3.0, 9999.0] {
            h.observe(ms);
        }
        let n = Numbers {
            lock_wait_ms: (&h).into(),
            ..Numbers::default()
        };
        let text = prometheus(&n);
        assert!(text.contains("liza_lock_wait_milliseconds_bucket{le=\"0.5\"} 1\n"));
        assert!(text.contains("liza_lock_wait_milliseconds_bucket{le=\"1\"} 2\n"));
        assert!(text.contains("liza_lock_wait_milliseconds_bucket{le=\"5\"} 3\n"));
        assert!(text.contains("liza_lock_wait_milliseconds_bucket{le=\"+Inf\"} 4\n"));
        assert!(text.contains("liza_lock_wait_milliseconds_count 4\n"));
        assert!(text.contains("# TYPE liza_lock_wait_milliseconds histogram\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        let mut n = Numbers::default();
        n.alarms.insert("A\"B\\C\nD".into(), 2);
        assert!(prometheus(&n).contains("liza_alarms_total{category=\"A\\\"B\\\\C\\nD\"} 2\n"));
    }

    /// specs/ledger.md: the ledger's runs added up by agent, backend and model, a model
    /// the CLI did not name as `-`; a cost nobody reported is no sample at all.
    #[test]
    fn tokens_and_dollars_are_counted_by_agent_backend_and_model() {
        use crate::blackboard::ledger::{LedgerEntry, ModelUsage};
        let entry =
            |agent: &str, backend: &str, model: Option<&str>, cost: Option<f64>| LedgerEntry {
                run: format!("{agent}-{backend}"),
                agent: agent.into(),
                role: "coder".into(),
                task: None,
                sprint: None,
                backend: backend.into(),
                started: "2026-11-29T10:00:00Z".into(),
                ended: "2026-11-29T10:00:01Z".into(),
                wall_ms: 1000,
                exit_class: "ok".into(),
                models: vec![ModelUsage {
                    model: model.map(str::to_owned),
                    input_tokens: Some(10),
                    output_tokens: Some(2),
                    cost_usd: cost,
                    ..ModelUsage::default()
                }],
                approximate: false,
            };
        let n = Numbers {
            usage: usage(&[
                entry("coder-1", "claude", Some("opus"), Some(0.5)),
                entry("coder-1", "claude", Some("opus"), Some(0.25)),
                entry("coder-2", "codex", None, None),
            ]),
            ..Numbers::default()
        };
        let text = prometheus(&n);
        assert!(text.contains(
            "liza_tokens_total{agent=\"coder-1\",backend=\"claude\",model=\"opus\",kind=\"input\"} 20\n"
        ), "{text}");
        assert!(text.contains(
            "liza_tokens_total{agent=\"coder-2\",backend=\"codex\",model=\"-\",kind=\"output\"} 2\n"
        ), "{text}");
        assert!(
            text.contains(
                "liza_cost_usd_total{agent=\"coder-1\",backend=\"claude\",model=\"opus\"} 0.75\n"
            ),
            "{text}"
        );
        assert!(
            !text.contains("liza_cost_usd_total{agent=\"coder-2\""),
            "{text}"
        );
    }
}
