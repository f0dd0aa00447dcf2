//! `liza gc [--apply]` (specs/git.md *Removing worktrees*): task worktrees, worktree entries and
//! `task/*` branches that no live task owns — left by a crash, a failed removal after a
//! merge, or a hand edit. A dry run by default. Applying saves first, as every removal
//! does: uncommitted files in a WIP commit, commits not on integration archived as
//! `liza/attic/<task>-<n>`; so what is removed is on integration or archived, and the
//! removal is verified.

use crate::lifecycle::RuleId;
use serde::Serialize;

use super::task_lock::TaskLock;
use super::{OpsError, Project};
use crate::blackboard::model::TaskStatus;
use crate::blackboard::{State, TaskId};
use crate::git::{Repo, SavedWork, dirty_files, task_branch, worktree_dir};

/// One orphan and what gc does (or did) with it.
#[derive(Debug, Clone, Serialize)]
pub struct Orphan {
    /// The task id its worktree or branch is named after.
    pub name: String,
    /// `.worktrees/<name>`, when the directory or git's entry for it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// `task/<name>`, when the branch exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Why no task owns it.
    pub why: String,
    /// Uncommitted files to save in a WIP commit.
    pub uncommitted: usize,
    /// Commits on the branch that are not on integration (archived before removal).
    pub unmerged_commits: u64,
    /// What was done when applied: `removed`, or why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// `--apply` could not save or remove it (the outcome says why).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// What its removal saved, when it saved something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved: Option<SavedWork>,
}

/// What `liza gc` found, and did when applied.
#[derive(Debug, Clone, Serialize)]
pub struct GcReport {
    /// Whether the orphans were removed (`--apply`), or only listed.
    pub applied: bool,
    /// The worktrees and branches no live task owns.
    pub orphans: Vec<Orphan>,
    /// Names under `.worktrees/` or `task/*` that are not task ids: never touched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_alone: Vec<String>,
}

/// Statuses in which a task's worktree and branch are in use or kept for later
/// (BLOCKED keeps its worktree until it is unblocked, reassigned or rescoped).
fn owns_worktree(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Claimed
            | TaskStatus::ReadyForReview
            | TaskStatus::Rejected
            | TaskStatus::Approved
            | TaskStatus::IntegrationFailed
            | TaskStatus::Blocked
    )
}

/// Why the task named `id` does not own a worktree, or `None` when it does.
fn orphaned(state: &State, id: &TaskId) -> Option<String> {
    match state.task(id) {
        Some(t) if owns_worktree(t.status) => None,
        Some(t) => Some(format!("task {id} is {}", t.status.as_str())),
        None if state.archived.as_ref().is_some_and(|a| a.contains_key(id)) => {
            Some(format!("task {id} is archived"))
        }
        None => Some(format!("there is no task {id} on the blackboard")),
    }
}

/// `liza gc [--apply]`: lists the task worktrees and branches that no live task owns;
/// with `apply`, saves and removes each under its task lock.
pub fn gc(project: &Project, apply: bool) -> Result<GcReport, OpsError> {
    let repo = Repo::open(&project.root)?;
    let snapshot = project.store.snapshot()?;
    let integration = snapshot.state.config.integration_branch().to_owned();
    let Some(integration_tip) = repo.branch_tip(&integration)? else {
        return Err(OpsError::refused(
            RuleId::IntegrationBranch,
            format!(
                "the integration branch {integration} does not exist, so gc cannot tell what is merged"
            ),
            format!(
                "recreate it where it was (git reflog show {integration}), or set config.integration_branch"
            ),
        ));
    };
    let inventory = repo.task_inventory(&project.root)?;
    let mut report = GcReport {
        applied: apply,
        orphans: Vec::new(),
        left_alone: Vec::new(),
    };
    for name in inventory.names() {
        let Ok(id) = TaskId::parse(&name) else {
            report.left_alone.push(name);
            continue;
        };
        let Some(why) = orphaned(&snapshot.state, &id) else {
            continue;
        };
        let has_worktree = inventory.dirs.contains(&name) || inventory.entries.contains(&name);
        let branch_tip = repo.branch_tip(&task_branch(&id))?;
        let dir = worktree_dir(&project.root, &id);
        let mut orphan = Orphan {
            worktree: has_worktree.then(|| format!(".worktrees/{id}")),
            branch: branch_tip.as_ref().map(|_| task_branch(&id)),
            why,
            uncommitted: if repo.worktree_present(&project.root, &id) {
                dirty_files(&dir)?.len()
            } else {
                0
            },
            unmerged_commits: match &branch_tip {
                Some(branch) => repo.count_commits(&integration_tip, branch)?,
                None => 0,
            },
            name,
            outcome: None,
            failed: false,
            saved: None,
        };
        if apply {
            apply_one(project, &repo, &integration, &id, &mut orphan)?;
        }
        report.orphans.push(orphan);
    }
    Ok(report)
}

/// Saves and removes one orphan under its task lock, after checking again that no task
/// took it meanwhile (a claim holds the task lock while it prepares a worktree).
fn apply_one(
    project: &Project,
    repo: &Repo,
    integration: &str,
    id: &TaskId,
    orphan: &mut Orphan,
) -> Result<(), OpsError> {
    let Ok(_lock) = TaskLock::try_acquire(&project.store, id) else {
        orphan.outcome = Some("skipped: another liza process is working on the task".into());
        return Ok(());
    };
    if orphaned(&project.store.snapshot()?.state, id).is_none() {
        orphan.outcome = Some("skipped: the task was claimed meanwhile".into());
        return Ok(());
    }
    match repo.retire_worktree(&project.root, id, "liza gc", integration) {
        Ok(saved) => {
            orphan.outcome = Some("removed".into());
            orphan.saved = Some(saved).filter(|s| *s != SavedWork::default());
        }
        Err(e) => {
            orphan.outcome = Some(format!("not removed: {e}"));
            orphan.failed = true;
        }
    }
    Ok(())
}
