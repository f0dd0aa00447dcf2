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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status")]
pub enum MergeResult {
    #[serde(rename = "MERGED")]
    Merged {
        merge_commit: String,
        merge_type: String,
        drift_commits: u64,
        retries: u32,
    },
    /// Merging would change no file of integration: BLOCKED for the planner.
    #[serde(rename = "BLOCKED")]
    NothingToMerge,
    #[serde(rename = "INTEGRATION_FAILED")]
    IntegrationFailed {
        kind: String,
        paths: Vec<String>,
        log: Option<String>,
        reason: String,
    },
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
