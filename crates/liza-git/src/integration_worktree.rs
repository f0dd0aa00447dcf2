//! The integration worktree `.worktrees/_integration` (specs/git.md *Layout*): owned by liza,
//! detached at the merge candidate under test, never on a branch, so no checkout of the
//! human's is ever switched to build or test a candidate.

use std::fs;
use std::path::{Path, PathBuf};

use super::GitError;
use super::repo::{Repo, git2_err, git2_err_in, oid};

/// The worktree's name in git and its directory under `.worktrees/` (task ids cannot
/// start with `_`, so it never collides with a task).
pub(crate) const INTEGRATION_WORKTREE: &str = "_integration";

/// `.worktrees/_integration`: where a merge's candidate is checked out for its checks.
pub fn integration_worktree_dir(root: &Path) -> PathBuf {
    root.join(".worktrees").join(INTEGRATION_WORKTREE)
}

/// The name of integration worktree `slot`: `_integration` for the first batch in flight,
/// `_integration-<n>` (n ≥ 2) for the others (specs/git.md *A batch*).
pub(crate) fn slot_name(slot: usize) -> String {
    if slot == 0 {
        INTEGRATION_WORKTREE.to_owned()
    } else {
        format!("{INTEGRATION_WORKTREE}-{}", slot + 1)
    }
}

/// Whether `name` (under `.worktrees/`) is one of the integration worktrees.
pub(crate) fn is_integration_name(name: &str) -> bool {
    name == INTEGRATION_WORKTREE
        || name
            .strip_prefix(INTEGRATION_WORKTREE)
            .and_then(|n| n.strip_prefix('-'))
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| n >= 2 && slot_name(n - 1) == name)
}

/// The directory of integration worktree `slot` (0: `.worktrees/_integration`).
pub fn integration_slot_dir(root: &Path, slot: usize) -> PathBuf {
    root.join(".worktrees").join(slot_name(slot))
}

impl Repo {
    /// Checks out `commit` (detached) in the integration worktree, creating it if needed.
    /// Files from an earlier candidate that are not ignored are removed; ignored build
    /// output stays so incremental builds stay fast.
    pub fn checkout_integration(&self, root: &Path, commit: &str) -> Result<PathBuf, GitError> {
        self.checkout_integration_slot(root, 0, commit)
    }

    /// [`Repo::checkout_integration`] in integration worktree `slot`, for a batch checked
    /// beside another.
    pub fn checkout_integration_slot(
        &self,
        root: &Path,
        slot: usize,
        commit: &str,
    ) -> Result<PathBuf, GitError> {
        let name = slot_name(slot);
        let dir = root.join(".worktrees").join(&name);
        let valid = dir.join(".git").exists()
            && self
                .inner
                .find_worktree(&name)
                .is_ok_and(|w| w.validate().is_ok());
        if !valid {
            self.create_integration_worktree(&name, &dir, commit)?;
        }
        let repo = super::worktree::open_checkout(&dir).map_err(git2_err(format!(
            "open the integration worktree {}",
            dir.display()
        )))?;
        let target = repo
            .find_commit(oid(commit)?)
            .map_err(git2_err(format!("find commit {commit}")))?;
        // The last candidate's checks wrote here: nothing they left may lead the checkout
        // out of the worktree.
        let target_tree = target
            .tree()
            .map_err(git2_err("read the candidate's tree"))?;
        let current = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
        let mut trees = vec![&target_tree];
        trees.extend(current.as_ref());
        super::worktree::clear_the_way(&repo, &dir, &trees);
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout.force().remove_untracked(true);
        repo.checkout_tree(target.as_object(), Some(&mut checkout))
            .map_err(git2_err_in(
                Some(repo.path()),
                format!("check out {commit} for the integration checks"),
            ))?;
        repo.set_head_detached(target.id())
            .map_err(git2_err("detach the integration worktree's HEAD"))?;
        Ok(dir)
    }

    /// libgit2 adds worktrees on a branch only: add it on a short-lived branch, detach it,
    /// delete the branch. A leftover directory is liza's own scratch space and is removed.
    fn create_integration_worktree(
        &self,
        name: &str,
        dir: &Path,
        commit: &str,
    ) -> Result<(), GitError> {
        if let Ok(wt) = self.inner.find_worktree(name) {
            wt.prune(Some(
                git2::WorktreePruneOptions::new()
                    .valid(true)
                    .locked(true)
                    .working_tree(true),
            ))
            .map_err(git2_err("prune the old integration worktree"))?;
        }
        let io = |action: &'static str| {
            let path = dir.to_path_buf();
            move |source| GitError::Io {
                action,
                path,
                source,
            }
        };
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(io("remove"))?;
        }
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(io("create"))?;
        }
        let target = oid(commit)?;
        let temporary = format!(
            "liza/integration-worktree{}",
            &name[INTEGRATION_WORKTREE.len()..]
        );
        let temporary = temporary.as_str();
        if self.branch_tip(temporary)?.is_some() {
            self.delete_branch(temporary)?;
        }
        self.create_branch(temporary, commit)?;
        let branch = self
            .inner
            .find_branch(temporary, git2::BranchType::Local)
            .map_err(git2_err(format!("find branch {temporary}")))?;
        let mut options = git2::WorktreeAddOptions::new();
        options.reference(Some(branch.get()));
        let added = self
            .inner
            .worktree(name, dir, Some(&options))
            .map_err(git2_err("create the integration worktree"))
            .and_then(|_| {
                git2::Repository::open(dir)
                    .and_then(|repo| repo.set_head_detached(target))
                    .map_err(git2_err("detach the integration worktree's HEAD"))
            });
        drop(branch);
        let deleted = self.delete_branch(temporary);
        added.and(deleted)
    }
}
