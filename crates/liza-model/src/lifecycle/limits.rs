//! Limits and counters (specs/lifecycle.md *Limits and counters*): `iteration` counts the agent
//! runs on a task by its current coder; reaching the limit without approval blocks the
//! task instead of launching another run.

use crate::EventKind;
use crate::model::{State, TaskStatus, Usage};
use crate::{AgentId, TaskId, Timestamp};

use super::RuleId;
use super::context::{Outcome, Who, task, task_mut};
use super::refusal::Refusal;
use super::work_done::{BlockCause, block};

/// The iteration limit of a task: its own `max_iterations`, else `max_coder_iterations`.
pub fn iteration_limit(state: &State, id: &TaskId) -> i64 {
    state
        .task(id)
        .and_then(|t| t.max_iterations)
        .filter(|m| *m > 0)
        .unwrap_or_else(|| state.config.max_coder_iterations())
}

/// What the supervisor may do before launching its agent on a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStart {
    /// Launch run number `iteration`.
    Launch {
        /// The run number, counting this one.
        iteration: i64,
    },
    /// The limit was reached: the task is now BLOCKED (the coder joins `failed_by`).
    LimitReached {
        /// The iteration limit that was reached.
        limit: i64,
    },
    /// The task's runs reached `config.budget.task`: the task is now BLOCKED (nobody is
    /// blamed) — specs/ledger.md *Budgets*.
    OverBudget {
        /// The blocked reason, with the figures.
        reason: String,
    },
}

/// Counts an agent run about to start: `iteration` +1 (and the task's and agent's run
/// totals), or — when `iteration` already reached the limit — CLAIMED → BLOCKED with
/// `Max iterations (N) reached without approval`, or — when `used`, what the task's runs
/// used by the ledger, reached `config.budget.task` — CLAIMED → BLOCKED with
/// `Budget exceeded: …` and the figures.
pub fn start_run(
    state: &mut State,
    id: &TaskId,
    agent: &AgentId,
    used: Option<&crate::ledger::Totals>,
    now: Timestamp,
) -> Result<(Outcome, RunStart), Refusal> {
    let t = task(state, id)?;
    if t.status != TaskStatus::Claimed || t.assigned_to.as_ref() != Some(agent) {
        return Err(Refusal::new(
            RuleId::RunClaimed,
            format!("task {id} is not CLAIMED by {agent}"),
            "claim it before running the agent on it",
        ));
    }
    let over = state
        .config
        .budget
        .as_ref()
        .and_then(|b| b.task.as_ref())
        .zip(used)
        .and_then(|(limit, used)| crate::ledger::over_budget(limit, used));
    if let Some(over) = over {
        let reason = format!("Budget exceeded: {id} used {over}");
        let question = format!(
            "{id} reached its budget (config.budget.task): raise it with `liza edit` and unblock the task, or split or drop the work?"
        );
        let outcome = blocked(state, id, &reason, question, BlockCause::Environment, now)?;
        return Ok((outcome, RunStart::OverBudget { reason }));
    }
    let limit = iteration_limit(state, id);
    let done = t.iteration.unwrap_or(0);
    if done >= limit {
        let reason = format!("Max iterations ({limit}) reached without approval");
        let question = format!(
            "{agent} ran {done} times without an approval: should the task be split or clarified?"
        );
        let outcome = blocked(state, id, &reason, question, BlockCause::CoderFailure, now)?;
        return Ok((outcome, RunStart::LimitReached { limit }));
    }
    let t = task_mut(state, id);
    t.iteration = Some(done + 1);
    let usage = t.usage.get_or_insert_with(Usage::default);
    usage.agent_runs = Some(usage.agent_runs.unwrap_or(0) + 1);
    if let Some(a) = state.agents.get_mut(agent) {
        a.iterations_total = Some(a.iterations_total.unwrap_or(0) + 1);
    }
    let mut outcome = Outcome::default();
    outcome.event(
        EventKind::AgentRun,
        agent.as_str(),
        Some(id),
        Some(format!("iteration {} of {limit}", done + 1)),
    );
    Ok((
        outcome,
        RunStart::Launch {
            iteration: done + 1,
        },
    ))
}

/// CLAIMED → BLOCKED by the supervisor instead of a run, with one question for the
/// planner.
fn blocked(
    state: &mut State,
    id: &TaskId,
    reason: &str,
    question: String,
    cause: BlockCause,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    block(
        state,
        &Who::Supervisor,
        id,
        reason,
        &[question],
        &[],
        cause,
        now,
    )
}
