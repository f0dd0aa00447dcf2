//! The planner's and people's moves: `unblock`, `reassign`, `rescope`, `abandon`,
//! `release-claim`, `clear-stale`. Those that take a worktree away save it first (WIP
//! commit, attic branch) and only then commit the state: a refused move touches no file
//! because it is dry-run on a snapshot before any git work.

use super::claim::describe;
use super::leases::LeaseCheck;
use super::task_lock::TaskLock;
use super::{Authority, OpsError, Project, Transition, dry_run, transition};
use crate::blackboard::EventKind;
use crate::blackboard::{Actor, State, TaskId, Timestamp};
use crate::git::{Repo, SavedWork, task_branch, worktree_dir};
use crate::lifecycle::{self, LeaseKey, Leases, Outcome, Refusal, Who};

/// Runs a move that removes the task's worktree: dry run, save and remove the worktree,
/// then the transaction.
fn with_worktree_retired(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    reason: &str,
    change: impl Fn(&mut State, &Who, Timestamp) -> Result<Outcome, Refusal>,
) -> Result<Transition<SavedWork>, OpsError> {
    let _task_lock = TaskLock::try_acquire(&project.store, id)?;
    let probe = dry_run(&project.store, actor, Authority::Caller, &change)?;
    let repo = Repo::open(&project.root)?;
    let integration = probe.config.integration_branch().to_owned();
    let saved = if worktree_dir(&project.root, id).exists()
        || repo.branch_tip(&task_branch(id))?.is_some()
    {
        repo.retire_worktree(&project.root, id, reason, &integration)?
    } else {
        SavedWork::default()
    };
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            let mut outcome = change(state, who, now)?;
            if saved != SavedWork::default() {
                outcome.event(
                    EventKind::WorktreeArchived,
                    &who.name(),
                    Some(id),
                    Some(describe(&saved)),
                );
            }
            Ok((outcome, saved.clone()))
        },
    )
}

/// `unblock <task> --reason R [--reset-review-cycles]`: BLOCKED → UNCLAIMED, its
/// worktree saved and removed first.
pub fn unblock(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    reason: &str,
    reset_review_cycles: bool,
) -> Result<Transition<SavedWork>, OpsError> {
    with_worktree_retired(project, actor, id, "unblock", |s, w, n| {
        lifecycle::unblock(s, w, id, reason, reset_review_cycles, n)
    })
}

/// `reassign <task> --reason R [--force]`: back to UNCLAIMED for another coder, its
/// worktree saved and removed first. A CLAIMED task goes only when its coder's lease
/// lapsed (watched for up to the lease period, `say` told), or by a person with `force`.
pub fn reassign(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    reason: &str,
    force: bool,
    say: &dyn Fn(&str),
) -> Result<Transition<SavedWork>, OpsError> {
    let leases = coder_leases(project, id, force, say)?;
    with_worktree_retired(project, actor, id, "reassignment", |s, w, n| {
        lifecycle::reassign(s, w, id, reason, force, &leases, n)
    })
}

/// `rescope <task> --into <ids> --reason R`: the task is replaced by the tasks `into`
/// (DRAFT or UNCLAIMED, each naming it in `supersedes`), its worktree saved and removed
/// first.
pub fn rescope(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    into: &[TaskId],
    reason: &str,
) -> Result<Transition<SavedWork>, OpsError> {
    with_worktree_retired(project, actor, id, "rescope", |s, w, n| {
        lifecycle::rescope(s, w, id, into, reason, n)
    })
}

/// `abandon <task> --reason R`: any task not yet terminal → ABANDONED, its worktree
/// saved and removed first.
pub fn abandon(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    reason: &str,
) -> Result<Transition<SavedWork>, OpsError> {
    with_worktree_retired(project, actor, id, "abandon", |s, w, n| {
        lifecycle::abandon(s, w, id, reason, n)
    })
}

/// Which claim `release-claim` releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseRole {
    /// The coder's claim.
    Coder,
    /// The reviewer's claim.
    Reviewer,
    /// The coder's when the task is CLAIMED, the reviewer's otherwise.
    Both,
}

/// `release-claim <task> --role coder|reviewer|both --reason R [--force]` (people only).
pub fn release_claim(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    role: ReleaseRole,
    reason: &str,
    force: bool,
    say: &dyn Fn(&str),
) -> Result<Transition<SavedWork>, OpsError> {
    super::authority::no_agent_identity(actor, "release-claim")?;
    let snapshot = project.store.snapshot()?;
    let status = snapshot.state.task(id).map(|t| t.status);
    let coder = match role {
        ReleaseRole::Coder => true,
        ReleaseRole::Reviewer => false,
        ReleaseRole::Both => status == Some(crate::blackboard::model::TaskStatus::Claimed),
    };
    if coder {
        let leases = coder_leases(project, id, force, say)?;
        with_worktree_retired(project, actor, id, "release of the claim", |s, w, n| {
            lifecycle::release_coder(s, w, id, reason, force, &leases, n)
        })
    } else {
        let keys = if force {
            Vec::new()
        } else {
            vec![LeaseKey::Review(id.clone())]
        };
        let leases = LeaseCheck::WatchNow(say).leases(project, &keys)?;
        transition(
            &project.store,
            actor,
            Authority::Caller,
            |state, who, now| {
                let mut outcome = lifecycle::release_review(state, who, id, force, &leases, now)?;
                if let Some(e) = outcome.events.last_mut() {
                    e.detail = Some(format!(
                        "{}: {reason}",
                        e.detail.clone().unwrap_or_default()
                    ));
                }
                Ok((outcome, SavedWork::default()))
            },
        )
    }
}

/// `clear-stale`: releases every expired review claim; returns how many.
pub fn clear_stale(
    project: &Project,
    actor: &Actor,
    say: &dyn Fn(&str),
) -> Result<usize, OpsError> {
    let keys: Vec<LeaseKey> = project
        .store
        .snapshot()?
        .state
        .tasks
        .iter()
        .filter(|t| t.reviewing_by.is_some())
        .map(|t| LeaseKey::Review(t.id.clone()))
        .collect();
    let leases = LeaseCheck::WatchNow(say).leases(project, &keys)?;
    match transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            let outcome = lifecycle::clear_stale(state, who, &leases, now)?;
            let count = outcome.events.len();
            Ok((outcome, count))
        },
    ) {
        Ok(done) => Ok(done.value),
        Err(OpsError::Nothing) => Ok(0),
        Err(e) => Err(e),
    }
}

/// What a one-shot command concludes about the coder's lease on `id` (nothing to watch
/// when a person forces it).
fn coder_leases(
    project: &Project,
    id: &TaskId,
    force: bool,
    say: &dyn Fn(&str),
) -> Result<Leases, OpsError> {
    let keys: Vec<LeaseKey> = if force {
        Vec::new()
    } else {
        project
            .store
            .snapshot()?
            .state
            .task(id)
            .and_then(lifecycle::claims::assignee_lease)
            .into_iter()
            .collect()
    };
    LeaseCheck::WatchNow(say).leases(project, &keys)
}
