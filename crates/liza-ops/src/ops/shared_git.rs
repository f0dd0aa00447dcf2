//! Git across hosts (specs/shared-store.md *Git across hosts*): when `config.git_remote`
//! names a shared bare repository, this host's branches follow it. The integration branch
//! moves only there, by a lease push (git's compare-and-swap); task branches are pushed
//! there by the host working on them and fetched by the hosts that review, merge or take
//! them over. Without a remote every function here does nothing: one host, one repository.
//!
//! None of it runs under the state lock: git waits on the network.

use super::{OpsError, Project};
use crate::blackboard::model::CommitId;
use crate::blackboard::{State, TaskId};
use crate::git::{Lease, Published, Pushed, Remote, Repo, task_branch, worktree_dir};

/// The shared remote, when the blackboard names one. A URL validation refuses (one
/// git would read as an option) is refused here too, whatever wrote it into the
/// blackboard: nothing falls back to this host's branches alone.
pub(super) fn remote(project: &Project, state: &State) -> Result<Option<Remote>, OpsError> {
    let Some(url) = state.config.git_remote.as_deref() else {
        return Ok(None);
    };
    if let Some(problem) = crate::blackboard::validate::git_remote_problem(url) {
        return Err(OpsError::refused(
            crate::lifecycle::RuleId::IntegrationBranch,
            format!("config.git_remote {url:?} {problem}"),
            "set config.git_remote to the URL or path of the shared bare repository (`liza edit`)",
        ));
    }
    Ok(Some(Remote::new(&project.root, url)))
}

/// The integration tip on the shared remote (`None` without one), where the branch
/// moves. This host's branch follows it, unless a person has it checked out: liza never
/// moves a branch under someone's checkout.
pub(super) fn sync_integration(
    project: &Project,
    repo: &Repo,
    state: &State,
) -> Result<Option<CommitId>, OpsError> {
    let Some(remote) = remote(project, state)? else {
        return Ok(None);
    };
    let branch = state.config.integration_branch();
    let tip = remote.fetch(branch)?;
    if let Some(tip) = &tip
        && repo.branch_tip(branch)?.as_ref() != Some(tip)
        && repo.checkouts_on_branch(branch).is_empty()
    {
        repo.set_branch(
            branch,
            tip.as_str(),
            "liza: the shared remote's integration",
        )?;
    }
    Ok(tip)
}

/// Brings task `id`'s branch from the remote when this host has none, or one the
/// remote's descends from. A branch checked out in this host's worktree of the task is
/// that worktree's: it is moved only with the worktree, when the worktree is clean.
pub(super) fn sync_task(
    project: &Project,
    repo: &Repo,
    state: &State,
    id: &TaskId,
) -> Result<Option<CommitId>, OpsError> {
    let Some(remote) = remote(project, state)? else {
        return Ok(None);
    };
    let branch = task_branch(id);
    let Some(tip) = remote.fetch(&branch)? else {
        return Ok(None);
    };
    let local = repo.branch_tip(&branch)?;
    let behind = match &local {
        None => true,
        Some(local) => local != &tip && repo.is_ancestor(local.as_str(), tip.as_str())?,
    };
    if !behind {
        return Ok(Some(tip));
    }
    if repo.worktree_present(&project.root, id) {
        let dir = worktree_dir(&project.root, id);
        if !crate::git::dirty_files(&dir)?.is_empty() {
            return Ok(Some(tip));
        }
        repo.set_branch(
            &branch,
            tip.as_str(),
            "liza: the shared remote's task branch",
        )?;
        repo.reset_worktree(&dir, tip.as_str())?;
    } else {
        repo.set_branch(
            &branch,
            tip.as_str(),
            "liza: the shared remote's task branch",
        )?;
    }
    Ok(Some(tip))
}

/// Gives this host a worktree of task `id` at the shared remote's branch, for a review
/// of work done on another host; nothing without a remote.
pub fn fetch_task_worktree(project: &Project, state: &State, id: &TaskId) -> Result<(), OpsError> {
    if remote(project, state)?.is_none() {
        return Ok(());
    }
    let repo = Repo::open(&project.root)?;
    if sync_task(project, &repo, state, id)?.is_some()
        || repo.branch_tip(&task_branch(id))?.is_some()
    {
        repo.recreate_task_worktree(&project.root, id)?;
    }
    Ok(())
}

/// Pushes the branch of task `id` after a run of its coder on this host (best effort: the
/// submission pushes again, and refuses if it cannot).
pub fn push_task_after_run(project: &Project, id: &TaskId) {
    let pushed = project
        .store
        .snapshot()
        .map_err(OpsError::from)
        .and_then(|snapshot| {
            let repo = Repo::open(&project.root)?;
            push_task(project, &repo, &snapshot.state, id)
        });
    if let Err(err) = pushed {
        tracing::warn!(task = %id, %err, "could not push the task branch to the shared remote");
    }
}

/// Pushes task `id`'s branch to the remote. Commits there that the branch does not have
/// (a previous owner's, after a takeover) are first kept on the remote as
/// `liza/attic/<id>-r<revision>` — `revision` is the blackboard's, so no two hosts pick
/// the same name —, then the branch is replaced under a lease on what was kept.
pub(super) fn push_task(
    project: &Project,
    repo: &Repo,
    state: &State,
    id: &TaskId,
) -> Result<(), OpsError> {
    let Some(remote) = remote(project, state)? else {
        return Ok(());
    };
    let branch = task_branch(id);
    let Some(head) = repo.branch_tip(&branch)? else {
        return Ok(());
    };
    if remote.push(head.as_str(), &branch, &Lease::FastForward)? == Pushed::Done {
        return Ok(());
    }
    let Some(theirs) = remote.fetch(&branch)? else {
        // Deleted meanwhile: push as new.
        return push_new(&remote, &head, &branch);
    };
    if repo.is_ancestor(head.as_str(), theirs.as_str())? {
        return Ok(()); // the remote already has it all
    }
    let attic = format!("liza/attic/{id}-r{}", state.revision());
    if let Pushed::Rejected { reason } = remote.push(theirs.as_str(), &attic, &Lease::Absent)? {
        // Kept there already by an earlier try of this push.
        tracing::debug!(%attic, %reason, "attic branch exists");
    }
    match remote.push(head.as_str(), &branch, &Lease::At(theirs))? {
        Pushed::Done => Ok(()),
        Pushed::Rejected { reason } => Err(pushed_meanwhile(&remote, &branch, &reason)),
    }
}

fn push_new(remote: &Remote, head: &CommitId, branch: &str) -> Result<(), OpsError> {
    match remote.push(head.as_str(), branch, &Lease::Absent)? {
        Pushed::Done => Ok(()),
        Pushed::Rejected { reason } => Err(pushed_meanwhile(remote, branch, &reason)),
    }
}

fn pushed_meanwhile(remote: &Remote, branch: &str, reason: &str) -> OpsError {
    OpsError::refused(
        crate::lifecycle::RuleId::BranchMoved,
        format!(
            "{branch} moved on the shared remote {} while this host pushed it ({reason})",
            remote.url()
        ),
        "another host works on the task: `liza status` names its owner",
    )
}

/// Moves the integration branch from `expected` to `new`: on the remote under a lease
/// (of two hosts publishing at once, one wins), then here. `Moved` carries the remote's
/// tip when the lease failed.
pub(super) fn publish(
    project: &Project,
    repo: &Repo,
    state: &State,
    expected: &str,
    new: &str,
    reason: &str,
) -> Result<Published, OpsError> {
    let branch = state.config.integration_branch();
    let Some(remote) = remote(project, state)? else {
        return Ok(repo.publish(branch, expected, new, reason)?);
    };
    if expected != new {
        let expected_id = CommitId::parse(expected).ok_or_else(|| {
            OpsError::refused(
                crate::lifecycle::RuleId::IntegrationBranch,
                format!("{expected:?} is not a commit id"),
                "run the merge again",
            )
        })?;
        if let Pushed::Rejected { .. } = remote.push(new, branch, &Lease::At(expected_id))? {
            let tip = remote.fetch(branch)?;
            if let Some(tip) = &tip {
                repo.set_branch(
                    branch,
                    tip.as_str(),
                    "liza: the shared remote's integration",
                )?;
            }
            return Ok(Published::Moved { tip });
        }
    }
    repo.set_branch(branch, new, reason)?;
    Ok(Published::Done)
}
