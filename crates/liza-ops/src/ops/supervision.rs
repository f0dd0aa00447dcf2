//! Transitions a supervisor performs for its agent around a run (specs/supervisor.md): count a
//! run (or block at the iteration limit), block a task for the coder's failure or the
//! environment, void a verdict whose run changed the worktree, release a review claim
//! after a failed review run, record a run report. Each is one transaction with the
//! supervisor's authority.

use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::node::Node;
use crate::blackboard::{Actor, AgentId, State, TaskId, Timestamp};
use crate::lifecycle::{self, BlockCause, Outcome, Refusal, RuleId, RunStart, Trigger, Who};

/// One transaction with the supervisor's authority (a supervisor acts as itself, not with
/// its agent's identity). `actor` is [`Actor::Supervisor`] for `liza-agent` (fenced by its
/// generation), or a person running the step by hand.
fn as_supervisor<R>(
    project: &Project,
    actor: &Actor,
    mut change: impl FnMut(&mut State, Timestamp) -> Result<(Outcome, R), Refusal>,
) -> Result<Transition<R>, OpsError> {
    transition(
        &project.store,
        actor,
        Authority::Supervisor,
        |state, _who, now| change(state, now),
    )
}

/// Counts the agent run about to start on `task`: `Launch`, or `LimitReached` or
/// `OverBudget` (BLOCKED). `used`: what the task's runs used by the ledger, read before
/// the transaction (`None`: no task budget to hold it to).
pub fn start_run(
    project: &Project,
    actor: &Actor,
    task: &TaskId,
    agent: &AgentId,
    used: Option<&liza_model::ledger::Totals>,
) -> Result<Transition<RunStart>, OpsError> {
    as_supervisor(project, actor, |state, now| {
        lifecycle::start_run(state, task, agent, used, now)
    })
}

/// CLAIMED → BLOCKED by the supervisor (watchdog, no progress, crash loop, usage limit).
pub fn supervisor_block(
    project: &Project,
    actor: &Actor,
    task: &TaskId,
    reason: &str,
    questions: &[String],
    cause: BlockCause,
) -> Result<Transition<()>, OpsError> {
    as_supervisor(project, actor, |state, now| {
        let who = Who::Supervisor;
        let outcome = lifecycle::block(
            state,
            &who,
            task,
            reason,
            questions,
            &[],
            cause.clone(),
            now,
        )?;
        Ok((outcome, ()))
    })
}

/// APPROVED/REJECTED → READY_FOR_REVIEW: the reviewer's run broke a role boundary.
pub fn void_verdict(
    project: &Project,
    actor: &Actor,
    task: &TaskId,
    why: &str,
) -> Result<Transition<()>, OpsError> {
    as_supervisor(project, actor, |state, now| {
        Ok((lifecycle::void_verdict(state, task, why, now)?, ()))
    })
}

/// Releases `reviewer`'s review claim on `task` after its run ended without a verdict
/// (only its own: another reviewer's claim is refused).
pub fn release_review_claim(
    project: &Project,
    actor: &Actor,
    task: &TaskId,
    reviewer: &AgentId,
) -> Result<Transition<()>, OpsError> {
    as_supervisor(project, actor, |state, now| {
        let holder = state.task(task).and_then(|t| t.reviewing_by.as_ref());
        if holder != Some(reviewer) {
            return Err(Refusal::new(
                RuleId::ReviewClaimed,
                format!("{reviewer} holds no review claim on {task}"),
                "nothing to release",
            ));
        }
        let outcome = lifecycle::release_review(
            state,
            &Who::Supervisor,
            task,
            true,
            &lifecycle::Leases::default(),
            now,
        )?;
        Ok((outcome, ()))
    })
}

/// Records that the planner was shown `triggers` (planner_seen events, seen_by lists).
pub fn acknowledge_triggers(
    project: &Project,
    actor: &Actor,
    planner: &AgentId,
    triggers: &[Trigger],
) -> Result<Transition<()>, OpsError> {
    as_supervisor(project, actor, |state, now| {
        Ok((lifecycle::acknowledge(state, planner, triggers, now), ()))
    })
}

/// Records an agent's structured run report in `task`'s history (the codex backend).
pub fn record_run_report(
    project: &Project,
    actor: &Actor,
    task: &TaskId,
    agent: &AgentId,
    report: Node,
    validation_errors: &[String],
) -> Result<Transition<()>, OpsError> {
    as_supervisor(project, actor, |state, now| {
        let outcome = lifecycle::record_run_report(
            state,
            task,
            agent,
            report.clone(),
            validation_errors,
            now,
        )?;
        Ok((outcome, ()))
    })
}
