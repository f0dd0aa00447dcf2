//! Recording an agent's structured run report (specs/supervisor.md *Backends*, the codex
//! backend): a `run_report` event in the task's history with the report's fields, and a
//! log entry carrying its summary. No status changes.

use super::context::{Outcome, history, task, task_mut, text_list};
use super::refusal::Refusal;
use crate::EventKind;
use crate::node::Node;
use crate::{AgentId, State, TaskId, Timestamp};

/// The longest summary in the log entry.
const SUMMARY_CHARS: usize = 200;

/// Appends `{event: run_report, agent, report, validation_errors?}` to `id`'s history.
pub fn record_run_report(
    state: &mut State,
    id: &TaskId,
    agent: &AgentId,
    report: Node,
    validation_errors: &[String],
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    task(state, id)?;
    let summary = summary(&report);
    let mut fields = vec![("report", report.value)];
    if !validation_errors.is_empty() {
        fields.push(("validation_errors", text_list(validation_errors)));
    }
    let t = task_mut(state, id);
    history(t, now, EventKind::RunReport, agent.as_str(), &fields);
    let mut outcome = Outcome::default();
    outcome.event(
        EventKind::RunReport,
        agent.as_str(),
        Some(id),
        Some(summary),
    );
    Ok(outcome)
}

/// The report's `implementation_summary` on one line, at most 200 characters.
pub fn summary(report: &Node) -> String {
    report
        .get("implementation_summary")
        .and_then(Node::as_str)
        .unwrap_or("(no summary)")
        .chars()
        .take(SUMMARY_CHARS)
        .collect::<String>()
        .replace('\n', " ")
}

/// A built-in agent's run result: the history event (`commit_result` for the coder,
/// `review_result` for the reviewer), its fields, the run's token usage (prompt,
/// completion) and a one-line summary for the log.
#[derive(Clone)]
pub struct RunResult {
    /// `commit_result` or `review_result`.
    pub event: EventKind,
    /// The result's fields, as the history event's `result`.
    pub result: Node,
    /// Tokens used: (prompt, completion).
    pub usage: (u64, u64),
    /// One line for the log.
    pub summary: String,
}

/// Appends `run` to `id`'s history and adds its tokens to `tasks[].usage`. No status
/// changes. The run itself was counted as it started (`start_run`), not again here.
pub fn record_builtin_result(
    state: &mut State,
    id: &TaskId,
    agent: &AgentId,
    run: RunResult,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    task(state, id)?;
    let t = task_mut(state, id);
    history(
        t,
        now,
        run.event,
        agent.as_str(),
        &[("result", run.result.value)],
    );
    let u = t.usage.get_or_insert_with(Default::default);
    u.prompt_tokens = Some(u.prompt_tokens.unwrap_or(0) + run.usage.0 as i64);
    u.completion_tokens = Some(u.completion_tokens.unwrap_or(0) + run.usage.1 as i64);
    let mut outcome = Outcome::default();
    let summary: String = run.summary.chars().take(SUMMARY_CHARS).collect();
    outcome.event(
        run.event,
        agent.as_str(),
        Some(id),
        Some(summary.replace('\n', " ")),
    );
    Ok(outcome)
}
