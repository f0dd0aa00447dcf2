//! Building a batch (specs/git.md *A batch*, steps 3 and 7): its tasks merged in memory one
//! after another onto the batch's base, each with its own merge commit, and each merge
//! verified to keep every change of the batch and of the batches under it ("nothing
//! lost"). A task that conflicts, that would bring nothing, or whose merge would lose a
//! change is left out, and the chain goes on without it.

use crate::blackboard::TaskId;
use crate::blackboard::model::CommitId;
use crate::failpoint;
use crate::git::{Candidate, GitError, Presence, Repo};

/// A task going into a batch: what was approved, on what its batch started.
#[derive(Debug, Clone)]
pub(super) struct Member {
    pub task: TaskId,
    /// The approved commit, full SHA.
    pub approved: CommitId,
    /// The merge commit's message.
    pub message: String,
}

/// A task merged into the chain.
#[derive(Debug, Clone)]
pub(super) struct Merged {
    pub task: TaskId,
    pub approved: CommitId,
    /// Its own merge commit (or the approved commit, fast-forwarded; or the chain as it
    /// was, already merged).
    pub commit: CommitId,
    /// `fast-forward`, `merge-commit` or `already-merged`.
    pub merge_type: &'static str,
    /// The integration tip its batch was built on, for the verification.
    pub base: CommitId,
    /// The chain's commit it was merged onto (integration as it was for this task).
    pub onto: CommitId,
}

/// A task left out of the batch, and why.
#[derive(Debug, Clone)]
pub(super) enum LeftOut {
    /// Its merge conflicts with the chain.
    Conflict { task: TaskId, paths: Vec<String> },
    /// Merging it would change no file.
    NothingReaches { task: TaskId },
    /// Its merge would lose a change: its own, or that of `lost` (a task merged before
    /// it) in `paths`.
    Loses {
        task: TaskId,
        lost: TaskId,
        paths: Vec<String>,
    },
}

/// Merges `members` one after another onto `base`. `below` are the tasks already in the
/// chain under it (batches it is stacked on), verified again at each step.
pub(super) fn build(
    repo: &Repo,
    base: &CommitId,
    members: &[Member],
    below: &[Merged],
) -> Result<(Vec<Merged>, Vec<LeftOut>), GitError> {
    let mut tip = base.clone();
    let mut merged: Vec<Merged> = Vec::new();
    let mut left = Vec::new();
    for m in members {
        let candidate = repo.merge_candidate(tip.as_str(), m.approved.as_str(), &m.message)?;
        let commit = match &candidate {
            Candidate::Conflict { paths } => {
                left.push(LeftOut::Conflict {
                    task: m.task.clone(),
                    paths: paths.clone(),
                });
                continue;
            }
            Candidate::FastForward { commit } | Candidate::MergeCommit { commit }
                if repo.same_tree(commit.as_str(), tip.as_str())? =>
            {
                left.push(LeftOut::NothingReaches {
                    task: m.task.clone(),
                });
                continue;
            }
            Candidate::FastForward { commit }
            | Candidate::MergeCommit { commit }
            | Candidate::AlreadyMerged { commit } => commit.clone(),
        };
        let this = Merged {
            task: m.task.clone(),
            approved: m.approved.clone(),
            commit: commit.clone(),
            merge_type: candidate.merge_type(),
            base: base.clone(),
            onto: tip.clone(),
        };
        let chain = below
            .iter()
            .chain(merged.iter())
            .chain(std::iter::once(&this));
        if let Some((lost, paths)) = first_lost(repo, chain, &commit)? {
            left.push(LeftOut::Loses {
                task: m.task.clone(),
                lost,
                paths,
            });
            continue;
        }
        tip = commit;
        merged.push(this);
    }
    Ok((merged, left))
}

/// The first task of `chain` whose change `at` does not hold, with the files concerned.
pub(super) fn first_lost<'a>(
    repo: &Repo,
    chain: impl Iterator<Item = &'a Merged>,
    at: &CommitId,
) -> Result<Option<(TaskId, Vec<String>)>, GitError> {
    // The mutation test's switch (a build with failpoints only): without the check, a
    // merge that drops a change would be published and recorded as MERGED.
    if failpoint::is_armed("merge-skip-preservation-check") {
        return Ok(None);
    }
    for m in chain {
        if let Presence::Missing { paths } =
            repo.change_present(m.base.as_str(), m.approved.as_str(), at.as_str())?
        {
            return Ok(Some((m.task.clone(), paths)));
        }
    }
    Ok(None)
}
