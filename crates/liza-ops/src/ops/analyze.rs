//! `liza analyze` (specs/operations.md *Sprints, checkpoints, circuit breaker*): the circuit
//! breaker's patterns over the current sprint, written to
//! `.liza/circuit_breaker_report.md` and to the state's `circuit_breaker`; a match whose
//! severity is in `config.circuit_breaker.checkpoint_at` checkpoints the sprint.

use crate::blackboard::EventKind;
use std::path::PathBuf;

use super::{OpsError, Project};
use crate::blackboard::event::RunEnded;
use crate::blackboard::log_tally::ActivityReader;
use crate::blackboard::model::{CircuitBreaker, CircuitBreakerStatus, SprintStatus};
use crate::blackboard::node::{Entry, Node, Pos, Value};
use crate::blackboard::{Actor, State, Timestamp};
use crate::lifecycle::RuleId;
use crate::lifecycle::circuit_breaker::{self, PatternMatch};

/// Severities that checkpoint the sprint when the config names none.
pub const DEFAULT_CHECKPOINT_AT: &[&str] =
    &["ARCHITECTURE_FLAW", "SPEC_FLAW", "EXTERNAL_DEPENDENCY"];

/// What an analysis found, and where its report is.
pub struct Analysis {
    /// Every pattern that matches, the anomaly patterns' and the runtime ones'.
    pub matches: Vec<PatternMatch>,
    /// The report written: `.liza/circuit_breaker_report.md`.
    pub report: PathBuf,
    /// The match that checkpointed the sprint, if one did.
    pub checkpointed_by: Option<String>,
}

/// Analyses the sprint, records the result, and checkpoints when a match calls for it.
pub fn analyze(project: &Project, actor: &Actor) -> Result<Analysis, OpsError> {
    let activity = ActivityReader::read_all(&project.store);
    analyze_with(project, actor, &activity.run_ends)
}

/// Every match: the anomaly patterns and the runtime ones (`run_ends` from log.yaml).
pub fn all_matches(state: &State, run_ends: &[RunEnded]) -> Vec<PatternMatch> {
    let mut matches = circuit_breaker::analyze(state);
    matches.extend(circuit_breaker::analyze_runtime(state, run_ends));
    matches
}

/// Whether the state already records exactly this analysis (the watcher then has
/// nothing to write).
pub fn analysis_recorded(state: &State, matches: &[PatternMatch]) -> bool {
    let Some(cb) = &state.circuit_breaker else {
        return matches.is_empty();
    };
    let status = if matches.is_empty() {
        CircuitBreakerStatus::Ok
    } else {
        CircuitBreakerStatus::Triggered
    };
    cb.status == Some(status) && cb.current_trigger == trigger_node(matches)
}

/// [`analyze`] with the run ends already read.
pub fn analyze_with(
    project: &Project,
    actor: &Actor,
    run_ends: &[RunEnded],
) -> Result<Analysis, OpsError> {
    let state = project.store.snapshot()?.state;
    let matches = all_matches(&state, run_ends);
    let report = project.store.paths().dir.join("circuit_breaker_report.md");
    let trigger = trigger_node(&matches);
    project
        .store
        .transact(actor, |tx| {
            let cb = tx
                .state
                .circuit_breaker
                .get_or_insert_with(|| CircuitBreaker {
                    last_check: None,
                    status: None,
                    current_trigger: None,
                    history: None,
                    extra: Default::default(),
                });
            let changed = cb.current_trigger.as_ref() != trigger.as_ref();
            cb.last_check = Some(tx.now);
            cb.status = Some(if matches.is_empty() {
                CircuitBreakerStatus::Ok
            } else {
                CircuitBreakerStatus::Triggered
            });
            if changed && let Some(t) = &trigger {
                cb.history.get_or_insert_with(Vec::new).push(t.clone());
            }
            cb.current_trigger = trigger.clone();
            let entry = tx.log(EventKind::CircuitBreakerCheck);
            entry.detail = Some(if matches.is_empty() {
                "OK: no pattern matches".into()
            } else {
                format!("TRIGGERED: {}", summary(&matches))
            });
            Ok::<_, OpsError>(())
        })
        .map_err(OpsError::from)?;
    // After the transaction: a refused one leaves every file as it was.
    write_report(&report, &state.sprint.id, &matches)?;
    let stop_at: Vec<String> = state
        .config
        .circuit_breaker
        .as_ref()
        .and_then(|c| c.checkpoint_at.clone())
        .unwrap_or_else(|| {
            DEFAULT_CHECKPOINT_AT
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        });
    let serious = matches
        .iter()
        .find(|m| stop_at.iter().any(|s| s == m.severity.as_str()));
    let mut checkpointed_by = None;
    if let Some(m) = serious
        && state.sprint.status == SprintStatus::InProgress
    {
        let message = format!(
            "circuit breaker: {} ({}) — see .liza/circuit_breaker_report.md",
            m.pattern,
            m.severity.as_str()
        );
        super::sprint::auto_checkpoint(project, &message)?;
        checkpointed_by = Some(m.pattern.to_owned());
    }
    Ok(Analysis {
        matches,
        report,
        checkpointed_by,
    })
}

fn summary(matches: &[PatternMatch]) -> String {
    matches
        .iter()
        .map(|m| match &m.group {
            Some(g) => format!(
                "{} [{}] ×{} ({})",
                m.pattern,
                g,
                m.count,
                m.severity.as_str()
            ),
            None => format!("{} ×{} ({})", m.pattern, m.count, m.severity.as_str()),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The matches as the state's `current_trigger` (`None` when nothing matches).
fn trigger_node(matches: &[PatternMatch]) -> Option<Node> {
    if matches.is_empty() {
        return None;
    }
    let entry = |key: &str, value: Value| Entry {
        key: key.into(),
        key_pos: Pos::UNKNOWN,
        value: Node::new(value),
    };
    let texts = |items: &[String]| Value::Seq(items.iter().map(|s| Node::str(s.clone())).collect());
    Some(Node::new(Value::Seq(
        matches
            .iter()
            .map(|m| {
                let mut fields = vec![
                    entry("pattern", Value::Str(m.pattern.into())),
                    entry("severity", Value::Str(m.severity.as_str().into())),
                    entry("count", Value::Int(m.count as i64)),
                ];
                if let Some(g) = &m.group {
                    fields.push(entry("group", Value::Str(g.clone())));
                }
                fields.push(entry("tasks", texts(&m.tasks)));
                fields.push(entry("evidence", texts(&m.evidence)));
                Node::new(Value::Map(fields))
            })
            .collect(),
    )))
}

fn write_report(
    path: &std::path::Path,
    sprint: &str,
    matches: &[PatternMatch],
) -> Result<(), OpsError> {
    let mut text = format!(
        "# Circuit breaker — sprint {sprint}\n\nChecked {}.\n\n",
        Timestamp::now()
    );
    if matches.is_empty() {
        text.push_str("No pattern matches: status OK.\n");
    }
    for m in matches {
        text.push_str(&format!("## {} — {}\n\n", m.pattern, m.severity.as_str()));
        if let Some(g) = &m.group {
            text.push_str(&format!("Shared by {} anomalies: `{g}`\n\n", m.count));
        } else {
            text.push_str(&format!("{} anomalies\n\n", m.count));
        }
        text.push_str(&format!("Tasks: {}\n\nEvidence:\n", m.tasks.join(", ")));
        for e in &m.evidence {
            text.push_str(&format!("- {e}\n"));
        }
        text.push('\n');
    }
    let dir = path.parent().unwrap_or(path);
    let write = || -> std::io::Result<()> {
        let mut temp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut temp, text.as_bytes())?;
        temp.persist(path).map_err(|e| e.error)?;
        Ok(())
    };
    write().map_err(|e| {
        OpsError::refused(
            RuleId::FileWrite,
            format!("could not write {}: {e}", path.display()),
            "check that .liza/ is writable",
        )
    })
}
