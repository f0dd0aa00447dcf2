//! Claims: a coder's claim on a task (first claim, re-claim after rejection, resume,
//! takeover, integration fix) and a reviewer's claim on a submitted task, with their
//! release. A claim is planned from a snapshot (so the caller can prepare the worktree
//! outside the lock) and applied under the lock, where it is planned again: if the plan
//! changed meanwhile, the claim is refused and the caller undoes its preparation.

use crate::EventKind;
use crate::model::{AgentStatus, CommitId, State, Task, TaskStatus};
use crate::{AgentId, Role, TaskId, Timestamp};

use super::RuleId;
use super::context::{
    Outcome, Who, history, release_agent, set_agent, set_status, task, task_mut, text,
};
use super::leases::{LeaseKey, Leases};
use super::refusal::Refusal;
use super::table::{Command, row};

/// Which claim row applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimKind {
    /// UNCLAIMED → CLAIMED.
    Fresh,
    /// REJECTED → CLAIMED by the same coder.
    Reclaim,
    /// The coder's own CLAIMED task after a restart: the lease is renewed.
    Resume,
    /// REJECTED → CLAIMED by another coder (the assignee is gone).
    TakeOverRejected {
        /// The assignee it takes the task from.
        previous: Option<AgentId>,
    },
    /// CLAIMED → CLAIMED by another coder (the lease expired).
    TakeOverExpired {
        /// The coder whose lease ran out.
        previous: Option<AgentId>,
    },
    /// INTEGRATION_FAILED → CLAIMED.
    IntegrationFix,
}

/// What the worktree needs before the claim is committed (specs/git.md, *Claim-time worktree
/// handling*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorktreePlan {
    /// Create fresh from the integration tip (archiving any leftover branch first).
    Fresh,
    /// Keep it; recreate it from the task branch if it is missing.
    Keep,
    /// Archive the previous coder's branch if it has unmerged commits, then create fresh.
    ArchiveThenFresh,
}

impl ClaimKind {
    fn command(&self) -> Command {
        match self {
            ClaimKind::Fresh => Command::ClaimTask,
            ClaimKind::Reclaim => Command::ReclaimSameCoder,
            ClaimKind::Resume => Command::ResumeSameCoder,
            ClaimKind::TakeOverRejected { .. } => Command::TakeOverRejected,
            ClaimKind::TakeOverExpired { .. } => Command::TakeOverExpired,
            ClaimKind::IntegrationFix => Command::ClaimIntegrationFix,
        }
    }

    /// What the worktree needs before this claim is committed.
    pub fn worktree(&self) -> WorktreePlan {
        match self {
            ClaimKind::Fresh => WorktreePlan::Fresh,
            ClaimKind::Reclaim | ClaimKind::Resume | ClaimKind::IntegrationFix => {
                WorktreePlan::Keep
            }
            ClaimKind::TakeOverRejected { .. } | ClaimKind::TakeOverExpired { .. } => {
                WorktreePlan::ArchiveThenFresh
            }
        }
    }
}

/// `.worktrees/<id>`, relative to the project root.
pub fn worktree_path(id: &TaskId) -> String {
    format!(".worktrees/{id}")
}

/// Statuses in which a task counts as the assignee's active task (validation rule 5).
pub fn is_active(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Claimed | TaskStatus::ReadyForReview | TaskStatus::Rejected
    )
}

/// The tasks coder `agent` holds as its active ones (one, in a valid state).
pub fn active_tasks<'s>(state: &'s State, agent: &'s AgentId) -> impl Iterator<Item = &'s Task> {
    state
        .tasks
        .iter()
        .map(|t| &**t)
        .filter(move |t| t.assigned_to.as_ref() == Some(agent) && is_active(t.status))
}

/// The task another of `agent`'s claims is on, if any.
pub fn other_active_task<'s>(
    state: &'s State,
    agent: &'s AgentId,
    except: &TaskId,
) -> Option<&'s Task> {
    active_tasks(state, agent).find(|t| &t.id != except)
}

/// The lease that keeps `task` its assignee's: the task lease while CLAIMED, the agent's
/// registration while the task waits on it (REJECTED).
pub fn assignee_lease(task: &Task) -> Option<LeaseKey> {
    match task.status {
        TaskStatus::Claimed => Some(LeaseKey::Task(task.id.clone())),
        _ => task.assigned_to.clone().map(LeaseKey::Agent),
    }
}

/// Whether the assignee's lease on `task` has lapsed, as the claimant observed it.
pub fn assignee_lease_lapsed(state: &State, task: &Task, leases: &Leases) -> bool {
    assignee_lease(task).is_none_or(|key| leases.lapsed(state, &key))
}

/// How a live lease is described in a refusal: what the claimant saw, and the lease's
/// timestamp as its holder's clock wrote it.
pub fn live_lease(leases: &Leases, state: &State, key: &LeaseKey) -> String {
    let period = leases.period().as_secs();
    let seen = match leases.left(state, key) {
        Some(_) if leases.renewed(key) => "renewed while watched".to_owned(),
        Some(left) => format!(
            "seen silent {} s of the {period} s lease period",
            period.saturating_sub(left.as_secs())
        ),
        None => "renewed while watched".to_owned(),
    };
    let until = match key {
        LeaseKey::Agent(id) => state.agents.get(id).and_then(|a| a.lease_expires),
        LeaseKey::Task(id) => state.task(id).and_then(|t| t.lease_expires),
        LeaseKey::Review(id) => state.task(id).and_then(|t| t.review_lease_expires),
    };
    match until {
        Some(until) => format!("{seen}; lease until {until}"),
        None => seen,
    }
}

fn registered(state: &State, agent: &AgentId, role: Role) -> Result<(), Refusal> {
    match state.agents.get(agent) {
        Some(a) if a.role == role => Ok(()),
        Some(a) => Err(Refusal::new(
            RuleId::RegisteredRole,
            format!("{agent} is registered as {}, not {}", a.role, role),
            "agent ids encode their role: coder-N, code-reviewer-N, planner-N",
        )),
        None => Err(Refusal::new(
            RuleId::Registered,
            format!("{agent} is not registered"),
            format!(
                "register it first: `liza register {agent}` (its supervisor does this at start)"
            ),
        )),
    }
}

/// Which claim `agent` would make on `id`, with every guard of its row checked.
pub fn plan_claim(
    state: &State,
    id: &TaskId,
    agent: &AgentId,
    leases: &Leases,
) -> Result<ClaimKind, Refusal> {
    let t = task(state, id)?;
    if agent.role() != Role::Coder {
        return Err(Refusal::new(
            RuleId::ClaimCoder,
            format!("{agent} is not a coder; only coders claim tasks"),
            "reviewers use claim-review",
        ));
    }
    registered(state, agent, Role::Coder)?;
    let same = t.assigned_to.as_ref() == Some(agent);
    let kind = match t.status {
        TaskStatus::Unclaimed => ClaimKind::Fresh,
        TaskStatus::Rejected if same => ClaimKind::Reclaim,
        TaskStatus::Claimed if same => ClaimKind::Resume,
        TaskStatus::Rejected | TaskStatus::Claimed => {
            let previous = t.assigned_to.clone();
            if !assignee_lease_lapsed(state, t, leases) {
                let seen = assignee_lease(t)
                    .map(|key| live_lease(leases, state, &key))
                    .unwrap_or_default();
                return Err(Refusal::new(
                    RuleId::ClaimedByOther,
                    format!(
                        "task {id} is {} by {} whose lease is live ({seen})",
                        t.status.as_str(),
                        previous.as_ref().map_or("nobody", AgentId::as_str),
                    ),
                    "take another task; it becomes available when its holder is seen silent for the lease period",
                ));
            }
            if t.status == TaskStatus::Rejected {
                ClaimKind::TakeOverRejected { previous }
            } else {
                ClaimKind::TakeOverExpired { previous }
            }
        }
        TaskStatus::IntegrationFailed => ClaimKind::IntegrationFix,
        other => {
            return Err(
                match row(
                    Command::ClaimTask,
                    Some(other),
                    super::table::Kind::Supervisor,
                ) {
                    Err(refusal) => refusal,
                    Ok(_) => Refusal::new(
                        RuleId::NoSuchTransition,
                        format!("task {id} is {}", other.as_str()),
                        "check it with `liza show`",
                    ),
                },
            );
        }
    };
    row(
        kind.command(),
        Some(t.status),
        super::table::Kind::Supervisor,
    )?;
    if kind == ClaimKind::Fresh
        && let Some(dep) = t
            .depends_on()
            .iter()
            .find(|d| !state.dependency_satisfied(d))
    {
        return Err(Refusal::new(
            RuleId::DependenciesSatisfied,
            format!("task {id} waits on {dep}, which is not merged (or superseded by merged work)"),
            "claim it once its dependencies are merged",
        ));
    }
    if let Some(other) = other_active_task(state, agent, id) {
        return Err(Refusal::new(
            RuleId::OneTaskPerCoder,
            format!(
                "{agent} already holds task {} ({})",
                other.id,
                other.status.as_str()
            ),
            "a coder works on one task at a time",
        ));
    }
    if !matches!(kind, ClaimKind::Resume | ClaimKind::Reclaim) {
        let failed = t.failed_by.as_deref().unwrap_or(&[]);
        if failed.contains(agent) {
            return Err(Refusal::new(
                RuleId::FailedBy,
                format!("{agent} already failed task {id}"),
                "another coder must take it, or the planner rescopes it",
            ));
        }
        if failed.len() >= 2 {
            return Err(Refusal::new(
                RuleId::HypothesisExhaustion,
                format!(
                    "task {id} was failed by {} coders; its framing is presumed wrong",
                    failed.len()
                ),
                "the planner must rescope, split or abandon it",
            ));
        }
    }
    Ok(kind)
}

/// Applies a claim planned earlier. `base` is the integration tip the fresh worktree was
/// created from (required for a fresh worktree).
pub fn claim(
    state: &mut State,
    id: &TaskId,
    agent: &AgentId,
    planned: &ClaimKind,
    base: Option<&CommitId>,
    leases: &Leases,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let kind = plan_claim(state, id, agent, leases)?;
    if &kind != planned {
        return Err(Refusal::new(
            RuleId::ClaimChanged,
            format!("task {id} changed while its worktree was prepared"),
            "try the next task",
        ));
    }
    let fresh = kind.worktree() != WorktreePlan::Keep;
    if fresh && base.is_none() {
        return Err(Refusal::new(
            RuleId::ClaimBase,
            format!("a fresh claim of {id} needs the integration tip it starts from"),
            "this is a bug in the caller",
        ));
    }
    let lease = now.plus_seconds(state.config.lease_duration());
    let row = row(
        kind.command(),
        Some(task(state, id)?.status),
        super::table::Kind::Supervisor,
    )?;
    let t = task_mut(state, id);
    t.lease_expires = Some(lease);
    let mut fields = Vec::new();
    match &kind {
        ClaimKind::TakeOverRejected {
            previous: Some(previous),
        }
        | ClaimKind::TakeOverExpired {
            previous: Some(previous),
        } => {
            fields.push(("previous_assignee", text(previous.to_string())));
        }
        _ => {}
    }
    if kind == ClaimKind::IntegrationFix && t.assigned_to.as_ref() != Some(agent) {
        t.iteration = Some(0);
        if let Some(previous) = &t.assigned_to {
            fields.push(("previous_assignee", text(previous.to_string())));
        }
    }
    let previous = t.assigned_to.replace(agent.clone());
    t.worktree = Some(worktree_path(id));
    if fresh {
        t.base_commit = base.cloned();
        t.iteration = Some(0);
        t.review_cycles_current = Some(0);
        t.review_commit = None;
        t.handoff_pending = None;
    }
    if kind == ClaimKind::IntegrationFix {
        t.integration_fix = Some(true);
        // The supervisor merged this integration tip into the task branch: the task's
        // own changes are measured from it from now on.
        if let Some(base) = base {
            t.base_commit = Some(base.clone());
        }
    }
    if let Some(to) = row.to {
        set_status(t, to, now);
    }
    history(t, now, row.event, agent.as_str(), &fields);
    if previous.as_ref() != Some(agent) {
        release_agent(state, previous.as_ref(), id);
    }
    set_agent(state, agent, AgentStatus::Working, Some(id));
    let mut outcome = Outcome::default();
    let detail = match &kind {
        ClaimKind::TakeOverRejected {
            previous: Some(previous),
        }
        | ClaimKind::TakeOverExpired {
            previous: Some(previous),
        } => Some(format!("from {previous}")),
        _ => base.map(|b| format!("base {b}")),
    };
    outcome.event(row.event, agent.as_str(), Some(id), detail);
    Ok(outcome)
}

/// `claim-review`: a registered reviewer, not the author, claims a submitted task with
/// no live review lease.
pub fn claim_review(
    state: &mut State,
    id: &TaskId,
    reviewer: &AgentId,
    leases: &Leases,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(
        Command::ClaimReview,
        Some(t.status),
        super::table::Kind::Supervisor,
    )?;
    if reviewer.role() != Role::CodeReviewer {
        return Err(Refusal::new(
            RuleId::ClaimReviewer,
            format!("{reviewer} is not a code reviewer"),
            "only code-reviewer-N agents review",
        ));
    }
    registered(state, reviewer, Role::CodeReviewer)?;
    if t.assigned_to.as_ref() == Some(reviewer) {
        return Err(Refusal::new(
            RuleId::NotAuthor,
            format!("{reviewer} wrote task {id} and may not review it"),
            "another reviewer takes it",
        ));
    }
    let review = LeaseKey::Review(id.clone());
    if let Some(holder) = &t.reviewing_by
        && !leases.lapsed(state, &review)
    {
        return Err(Refusal::new(
            RuleId::ReviewLeaseLive,
            format!(
                "task {id} is being reviewed by {holder} (its lease {})",
                live_lease(leases, state, &review)
            ),
            "review another task",
        ));
    }
    if let Some(other) = state.tasks.iter().find(|o| {
        &o.id != id
            && o.reviewing_by.as_ref() == Some(reviewer)
            && o.status == TaskStatus::ReadyForReview
            && !leases.lapsed(state, &LeaseKey::Review(o.id.clone()))
    }) {
        return Err(Refusal::new(
            RuleId::OneReviewPerReviewer,
            format!("{reviewer} is already reviewing task {}", other.id),
            "finish that review first",
        ));
    }
    let lease = now.plus_seconds(state.config.lease_duration());
    let mut outcome = Outcome::default();
    let t = task_mut(state, id);
    let stale = t.reviewing_by.take();
    if let Some(stale) = &stale {
        history(t, now, EventKind::ReviewLeaseExpired, stale.as_str(), &[]);
        outcome.event(
            EventKind::ReviewLeaseExpired,
            stale.as_str(),
            Some(id),
            None,
        );
    }
    t.reviewing_by = Some(reviewer.clone());
    t.review_lease_expires = Some(lease);
    history(t, now, row.event, reviewer.as_str(), &[]);
    release_agent(state, stale.as_ref(), id);
    set_agent(state, reviewer, AgentStatus::Reviewing, Some(id));
    outcome.event(row.event, reviewer.as_str(), Some(id), None);
    Ok(outcome)
}

/// Releases a review claim: `release-claim --role reviewer` (expired lease, or `force`
/// by a person) and `clear-stale` (expired leases only).
pub fn release_review(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    force: bool,
    leases: &Leases,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::ReleaseReview, Some(t.status), who.kind())?;
    let Some(holder) = t.reviewing_by.clone() else {
        return Err(Refusal::new(
            RuleId::ReviewClaimed,
            format!("task {id} has no review claim to release"),
            "nothing to do",
        ));
    };
    // `force`: a person taking the claim away, or the reviewer's own supervisor releasing
    // it after a run that ended without a verdict (specs/supervisor.md *Exit codes*).
    let review = LeaseKey::Review(id.clone());
    if !(leases.lapsed(state, &review) || (force && matches!(who, Who::Human | Who::Supervisor))) {
        return Err(Refusal::new(
            RuleId::ReviewLeaseExpired,
            format!(
                "{holder}'s review lease on {id} is live ({})",
                live_lease(leases, state, &review)
            ),
            "wait for it to expire, or pass --force to take the claim away",
        ));
    }
    let t = task_mut(state, id);
    t.reviewing_by = None;
    t.review_lease_expires = None;
    history(
        t,
        now,
        row.event,
        &who.name(),
        &[("reviewer", text(holder.to_string()))],
    );
    release_agent(state, Some(&holder), id);
    let mut outcome = Outcome::default();
    outcome.event(
        row.event,
        &who.name(),
        Some(id),
        Some(format!("from {holder}")),
    );
    Ok(outcome)
}

/// `clear-stale`: releases every review claim whose lease expired.
pub fn clear_stale(
    state: &mut State,
    who: &Who,
    leases: &Leases,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let stale: Vec<TaskId> = state
        .tasks
        .iter()
        .filter(|t| {
            t.status == TaskStatus::ReadyForReview
                && t.reviewing_by.is_some()
                && leases.lapsed(state, &LeaseKey::Review(t.id.clone()))
        })
        .map(|t| t.id.clone())
        .collect();
    let mut outcome = Outcome::default();
    for id in stale {
        outcome.merge(release_review(state, who, &id, false, leases, now)?);
    }
    Ok(outcome)
}
