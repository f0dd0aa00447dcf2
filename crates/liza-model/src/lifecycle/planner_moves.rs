//! The planner's (and people's) moves on a task: reassign, unblock, rescope, abandon, and a
//! person's release of a coder's claim. Each that takes a worktree away expects the caller
//! to have saved and archived it first (specs/git.md: nothing in a worktree is ever deleted).

use crate::EventKind;
use crate::model::{AlignmentEvent, AnomalyType, State, Task, TaskStatus};
use crate::node::Value;
use crate::{AgentId, TaskId, Timestamp};

use super::RuleId;
use super::claims::{assignee_lease, assignee_lease_lapsed, live_lease};
use super::context::{
    Outcome, Who, history, release_agent, required_text, set_status, task, task_mut, text,
    text_list,
};
use super::leases::Leases;
use super::refusal::Refusal;
use super::table::{Command, row};
use super::work_done::push_anomaly;

/// Clears the assignee, leases, review claim and worktree (as reassign does); `failed_by`
/// and `review_cycles_total` are kept. Returns the agents to release.
fn unassign(t: &mut Task, reset_review_cycles: bool) -> Vec<AgentId> {
    let released: Vec<AgentId> = [
        t.assigned_to.take(),
        t.reviewing_by.take(),
        t.approved_by.take(),
    ]
    .into_iter()
    .flatten()
    .collect();
    t.lease_expires = None;
    t.review_lease_expires = None;
    t.worktree = None;
    t.base_commit = None;
    t.review_commit = None;
    t.iteration = Some(0);
    t.integration_fix = None;
    t.handoff_pending = None;
    t.blocked_reason = None;
    t.blocked_questions = None;
    t.rejection_reason = None;
    t.merge_intent = None;
    if reset_review_cycles {
        t.review_cycles_current = Some(0);
    }
    released
}

fn release_all(state: &mut State, agents: &[AgentId], id: &TaskId) {
    for agent in agents {
        release_agent(state, Some(agent), id);
    }
}

/// Where a move that takes the task out of its assignee's hands leads.
struct Move<'a> {
    to: TaskStatus,
    event: EventKind,
    reason: String,
    reset_review_cycles: bool,
    extra: Vec<(&'a str, Value)>,
}

impl<'a> Move<'a> {
    /// A move that resets the review cycles and records no extra fields.
    fn back(to: TaskStatus, event: EventKind, reason: String) -> Move<'a> {
        Move {
            to,
            event,
            reason,
            reset_review_cycles: true,
            extra: Vec::new(),
        }
    }
}

/// The common end of such a move: unassign, new status, history event (reason, previous
/// assignee, extra fields), agents released, log entry.
fn take_back(state: &mut State, who: &Who, id: &TaskId, m: Move<'_>, now: Timestamp) -> Outcome {
    let t = task_mut(state, id);
    let previous = t.assigned_to.clone();
    let released = unassign(t, m.reset_review_cycles);
    set_status(t, m.to, now);
    let mut fields = vec![("reason", text(m.reason.clone()))];
    if let Some(p) = &previous {
        fields.push(("previous_assignee", text(p.to_string())));
    }
    fields.extend(m.extra);
    history(t, now, m.event, &who.name(), &fields);
    release_all(state, &released, id);
    let mut outcome = Outcome::default();
    outcome.event(m.event, &who.name(), Some(id), Some(m.reason));
    outcome
}

/// `reassign`: back to UNCLAIMED for another coder (CLAIMED only when its lease expired, or
/// by a person with `force`).
pub fn reassign(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    reason: &str,
    force: bool,
    leases: &Leases,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::Reassign, Some(t.status), who.kind())?;
    let reason = required_text(
        reason,
        "the reason",
        "say why the task goes to another coder",
    )?;
    if t.status == TaskStatus::Claimed
        && !assignee_lease_lapsed(state, t, leases)
        && !(force && *who == Who::Human)
    {
        return Err(Refusal::new(
            RuleId::ReassignLiveLease,
            format!(
                "task {id} is CLAIMED by {} with a live lease",
                t.assigned_to.as_ref().map_or("nobody", AgentId::as_str)
            ),
            "wait for the lease to expire; a person may pass --force",
        ));
    }
    Ok(take_back(
        state,
        who,
        id,
        Move::back(TaskStatus::Unclaimed, row.event, reason),
        now,
    ))
}

/// `unblock`: BLOCKED → UNCLAIMED, optionally resetting the review cycles.
pub fn unblock(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    reason: &str,
    reset_review_cycles: bool,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::Unblock, Some(t.status), who.kind())?;
    let reason = required_text(reason, "the reason", "say what was clarified")?;
    let extra = vec![("reset_review_cycles", Value::Bool(reset_review_cycles))];
    let m = Move {
        to: TaskStatus::Unclaimed,
        event: row.event,
        reason,
        reset_review_cycles,
        extra,
    };
    Ok(take_back(state, who, id, m, now))
}

/// `release-claim --role coder`: a person takes an expired (or, with `force`, any) claim
/// away from a coder.
pub fn release_coder(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    reason: &str,
    force: bool,
    leases: &Leases,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::ReleaseCoder, Some(t.status), who.kind())?;
    let reason = required_text(reason, "the reason", "say why the claim is released")?;
    if !assignee_lease_lapsed(state, t, leases) && !force {
        return Err(Refusal::new(
            RuleId::CoderLeaseExpired,
            format!(
                "{}'s lease on {id} is live ({})",
                t.assigned_to.as_ref().map_or("nobody", AgentId::as_str),
                assignee_lease(t)
                    .map(|key| live_lease(leases, state, &key))
                    .unwrap_or_default()
            ),
            "wait for it to expire, or pass --force",
        ));
    }
    Ok(take_back(
        state,
        who,
        id,
        Move::back(TaskStatus::Unclaimed, row.event, reason),
        now,
    ))
}

/// `rescope`: the task is replaced by new DRAFT/UNCLAIMED tasks that name it in
/// `supersedes`; a `hypothesis_exhaustion` anomaly comes first when two coders failed it.
pub fn rescope(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    into: &[TaskId],
    reason: &str,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::Rescope, Some(t.status), who.kind())?;
    let reason = required_text(
        reason,
        "the rescope reason",
        "state the root cause of the rescope",
    )?;
    if reason.split_whitespace().count() < 3 {
        return Err(Refusal::new(
            RuleId::RescopeReason,
            format!("the reason {reason:?} does not state a root cause"),
            "say why the task as framed could not be done, in a sentence",
        ));
    }
    if into.is_empty() {
        return Err(Refusal::new(
            RuleId::RescopeInto,
            "a rescope names its replacement tasks",
            "add them first (`liza add-task --supersedes <task>`), then --into <ids>",
        ));
    }
    for r in into {
        let Some(replacement) = state.task(r) else {
            return Err(Refusal::new(
                RuleId::RescopeInto,
                format!("replacement task {r} does not exist"),
                "add it first with `liza add-task --supersedes <task>`",
            ));
        };
        if !matches!(
            replacement.status,
            TaskStatus::Draft | TaskStatus::Unclaimed
        ) {
            return Err(Refusal::new(
                RuleId::RescopeInto,
                format!(
                    "replacement {r} is {}, not DRAFT or UNCLAIMED",
                    replacement.status.as_str()
                ),
                "replace with new tasks",
            ));
        }
        if !replacement
            .supersedes
            .as_ref()
            .is_some_and(|s| s.as_slice().contains(id))
        {
            return Err(Refusal::new(
                RuleId::RescopeSupersedes,
                format!("replacement {r} does not name {id} in supersedes"),
                format!("add it with --supersedes {id}"),
            ));
        }
    }
    let failed: Vec<AgentId> = t.failed_by.clone().unwrap_or_default();
    let mut outcome = Outcome::default();
    if failed.len() >= 2 {
        push_anomaly(
            state,
            id,
            &who.name(),
            AnomalyType::HypothesisExhaustion,
            &[
                ("failed_by", text_list(&failed)),
                ("reason", text(reason.clone())),
            ],
            now,
        );
        outcome.event(
            EventKind::HypothesisExhaustion,
            &who.name(),
            Some(id),
            Some(format!("failed by {}", failed.len())),
        );
    }
    state
        .goal
        .alignment_history
        .get_or_insert_with(Vec::new)
        .push(AlignmentEvent {
            timestamp: now,
            event: format!("rescope_{id}"),
            summary: Some(reason.clone()),
            extra: Default::default(),
        });
    let t = task_mut(state, id);
    let released = unassign(t, true);
    t.superseded_by = Some(into.to_vec());
    t.rescope_reason = Some(reason.clone());
    set_status(t, TaskStatus::Superseded, now);
    history(
        t,
        now,
        row.event,
        &who.name(),
        &[("into", text_list(into)), ("reason", text(reason.clone()))],
    );
    release_all(state, &released, id);
    let names: Vec<&str> = into.iter().map(TaskId::as_str).collect();
    outcome.event(
        row.event,
        &who.name(),
        Some(id),
        Some(format!("into {}: {reason}", names.join(", "))),
    );
    Ok(outcome)
}

/// `abandon`: any non-terminal task → ABANDONED. Tasks that depend on it are named in a
/// warning: a dependency on an abandoned task is never satisfied.
pub fn abandon(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    reason: &str,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::Abandon, Some(t.status), who.kind())?;
    let reason = required_text(reason, "the reason", "say why the task is abandoned")?;
    let mut outcome = take_back(
        state,
        who,
        id,
        Move::back(TaskStatus::Abandoned, row.event, reason),
        now,
    );
    let dependents: Vec<String> = state
        .tasks
        .iter()
        .filter(|d| !d.status.is_terminal() && d.depends_on().contains(id))
        .map(|d| d.id.to_string())
        .collect();
    if !dependents.is_empty() {
        outcome.warnings.push(format!(
            "{} depend on {id}, which is now abandoned: amend their --depends (`liza amend-task <task> --depends ...`)",
            dependents.join(", ")
        ));
    }
    Ok(outcome)
}
