//! What one merge records and reports, shared by the merge itself ([`super::merge`]) and
//! the recovery of an interrupted one ([`super::merge_recovery`]): the result, the
//! transactions' outcomes, MERGED recorded with the worktree retired, the drift.

use crate::blackboard::EventKind;
use serde::Serialize;

use super::claim::describe;
use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::model::CommitId;
use crate::blackboard::{Actor, State, TaskId, Timestamp};
use crate::git::{Repo, SavedWork};
use crate::lifecycle::{self, MergeRecord, Outcome, Refusal};

/// How a merge ended: the task's new status and what goes with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status")]
pub enum MergeResult {
    /// Published on integration: MERGED.
    #[serde(rename = "MERGED")]
    Merged {
        /// The commit on integration after the merge.
        merge_commit: String,
        /// `fast-forward`, `merge-commit` or `already-merged`.
        merge_type: String,
        /// Integration commits since the task's base commit.
        drift_commits: u64,
        /// How many times integration moved under the merge before it was published.
        retries: u32,
    },
    /// The task branch moved after the approval: back to review, not merged.
    #[serde(rename = "READY_FOR_REVIEW")]
    Withdrawn {
        /// Which commit was approved, and where the branch is now.
        reason: String,
    },
    /// Still in the queue: another merger works on it.
    #[serde(rename = "APPROVED")]
    Queued,
    /// Merging would change no file of integration: BLOCKED for the planner.
    #[serde(rename = "BLOCKED")]
    NothingToMerge,
    /// Not published: INTEGRATION_FAILED, the worktree kept for a fix.
    #[serde(rename = "INTEGRATION_FAILED")]
    IntegrationFailed {
        /// `conflict` or `tests`.
        kind: String,
        /// The conflicting paths (a conflict).
        paths: Vec<String>,
        /// The check log, relative to the project root (failing checks).
        log: Option<String>,
        /// One line a person reads first: which check failed, or why publishing gave up.
        reason: String,
    },
}

impl MergeResult {
    /// One line for a person: the task's new status and why.
    pub fn describe(&self) -> String {
        match self {
            MergeResult::Merged {
                merge_type,
                merge_commit,
                ..
            } => format!("MERGED ({merge_type} {merge_commit})"),
            MergeResult::IntegrationFailed { kind, reason, .. } => {
                format!("INTEGRATION_FAILED ({kind}): {reason}")
            }
            MergeResult::NothingToMerge => {
                "BLOCKED: nothing of it reaches integration; the planner decides".into()
            }
            MergeResult::Withdrawn { reason } => format!("READY_FOR_REVIEW: {reason}"),
            MergeResult::Queued => "APPROVED: in the merge queue; another merge is running".into(),
        }
    }
}

/// The outcomes and last revision of the several transactions of one merge.
#[derive(Default)]
pub(super) struct Committed {
    pub(super) outcome: Outcome,
    pub(super) revision: u64,
}

impl Committed {
    pub(super) fn add<R>(&mut self, done: Transition<R>) -> R {
        self.outcome.merge(done.outcome);
        self.revision = done.revision;
        done.value
    }

    /// Commits one supervisor transaction of the merge and keeps its outcome.
    pub(super) fn run(
        &mut self,
        project: &Project,
        actor: &Actor,
        mut change: impl FnMut(&mut State, Timestamp) -> Result<Outcome, Refusal>,
    ) -> Result<(), OpsError> {
        let done = transition(
            &project.store,
            actor,
            Authority::Supervisor,
            |state, _who, now| Ok((change(state, now)?, ())),
        )?;
        self.add(done);
        Ok(())
    }
}

/// Saves and removes the merged task's worktree and branch (a failure to remove is a
/// warning: the merge is published, and `liza gc` removes leftovers), then records MERGED.
pub(super) fn finish_merged(
    project: &Project,
    actor: &Actor,
    repo: &Repo,
    integration: &str,
    id: &TaskId,
    merge: &MergeRecord,
    committed: &mut Committed,
) -> Result<Option<SavedWork>, OpsError> {
    let saved = match repo.retire_worktree(
        &project.root,
        id,
        "its removal after the merge",
        integration,
    ) {
        Ok(saved) => Some(saved).filter(|s| *s != SavedWork::default()),
        Err(e) => {
            committed.outcome.warnings.push(format!(
                "the merged task's worktree was not removed ({e}); `liza gc --apply` removes it"
            ));
            None
        }
    };
    committed.run(project, actor, |state, now| {
        let mut outcome = lifecycle::merged(state, id, merge, now)?;
        if let Some(saved) = &saved {
            outcome.event(
                EventKind::WorktreeArchived,
                "liza",
                Some(id),
                Some(describe(saved)),
            );
        }
        Ok(outcome)
    })?;
    Ok(saved)
}

/// Integration commits since the task's base commit.
pub(super) fn drift(repo: &Repo, base: Option<&CommitId>, tip: &str) -> u64 {
    base.and_then(|b| repo.resolve_commit(b.as_str()).ok())
        .and_then(|b| repo.count_commits(&b, tip).ok())
        .unwrap_or(0)
}

pub(super) fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}
