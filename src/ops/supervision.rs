//! Transitions a supervisor performs for its agent around a run (supervisor.md): count a
//! run (or block at the iteration limit), block a task for the coder's failure or the
//! environment, void a verdict whose run changed the worktree, release a review claim
//! after a failed review run, record a run report. Each is one transaction with the
//! supervisor's authority.

use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::{Actor, AgentId, TaskId};
use crate::lifecycle::{self, BlockCause, RunStart, Trigger, Who};

/// Counts the agent run about to start on `task`: `Launch` or `LimitReached` (BLOCKED).
pub fn start_run(
    project: &Project,
    task: &TaskId,
    agent: &AgentId,
) -> Result<Transition<RunStart>, OpsError> {
    transition(
        &project.store,
        &Actor::Human,
        Authority::Supervisor,
        |state, _who, now| lifecycle::start_run(state, task, agent, now),
    )
}

/// CLAIMED → BLOCKED by the supervisor (watchdog, no progress, crash loop, usage limit).
pub fn supervisor_block(
    project: &Project,
    task: &TaskId,
    reason: &str,
    questions: &[String],
    cause: BlockCause,
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        &Actor::Human,
        Authority::Supervisor,
        |state, _who, now| {
            let outcome = lifecycle::block(
                state,
                &Who::Supervisor,
                task,
                reason,
                questions,
                &[],
                cause,
                now,
            )?;
            Ok((outcome, ()))
        },
    )
}

/// APPROVED/REJECTED → READY_FOR_REVIEW: the reviewer's run broke a role boundary.
pub fn void_verdict(
    project: &Project,
    task: &TaskId,
    why: &str,
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        &Actor::Human,
        Authority::Supervisor,
        |state, _who, now| Ok((lifecycle::void_verdict(state, task, why, now)?, ())),
    )
}

/// Releases `reviewer`'s review claim on `task` after its run ended without a verdict
/// (only its own: another reviewer's claim is refused).
pub fn release_review_claim(
    project: &Project,
    task: &TaskId,
    reviewer: &AgentId,
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        &Actor::Human,
        Authority::Supervisor,
        |state, _who, now| {
            let holder = state.task(task).and_then(|t| t.reviewing_by.as_ref());
            if holder != Some(reviewer) {
                return Err(lifecycle::Refusal::new(
                    "review-claimed",
                    format!("{reviewer} holds no review claim on {task}"),
                    "nothing to release",
                ));
            }
            Ok((
                lifecycle::release_review(state, &Who::Supervisor, task, true, now)?,
                (),
            ))
        },
    )
}

/// Records that the planner was shown `triggers` (planner_seen events, seen_by lists).
pub fn acknowledge_triggers(
    project: &Project,
    planner: &AgentId,
    triggers: &[Trigger],
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        &Actor::Human,
        Authority::Supervisor,
        |state, _who, now| Ok((lifecycle::acknowledge(state, planner, triggers, now), ())),
    )
}

/// Records an agent's structured run report in `task`'s history (the codex backend).
pub fn record_run_report(
    project: &Project,
    task: &TaskId,
    agent: &AgentId,
    report: crate::blackboard::node::Node,
    validation_errors: &[String],
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        &Actor::Human,
        Authority::Supervisor,
        |state, _who, now| {
            let outcome = lifecycle::record_run_report(
                state,
                task,
                agent,
                report.clone(),
                validation_errors,
                now,
            )?;
            Ok((outcome, ()))
        },
    )
}
