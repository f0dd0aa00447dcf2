//! What task worktrees and branches exist, by name, for `liza gc`: directories under
//! `.worktrees/`, git's worktree entries, and `task/*` branches — each may exist without
//! the others after a crash or a hand deletion.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::GitError;
use super::integration_worktree::is_integration_name;
use super::repo::{Repo, git2_err};

/// Names found under `.worktrees/` and `task/*`, liza's own `_integration` and `_attic`
/// excluded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub dirs: BTreeSet<String>,
    pub entries: BTreeSet<String>,
    pub branches: BTreeSet<String>,
}

impl Inventory {
    /// Every name in any of the three lists.
    pub fn names(&self) -> BTreeSet<String> {
        let mut all = self.dirs.clone();
        all.extend(self.entries.iter().cloned());
        all.extend(self.branches.iter().cloned());
        all
    }
}

fn ours(name: &str) -> bool {
    is_integration_name(name) || name == "_attic"
}

impl Repo {
    /// The directories under `.worktrees/`, git's worktree entries and the `task/*`
    /// branches, by name (`liza gc`).
    pub fn task_inventory(&self, root: &Path) -> Result<Inventory, GitError> {
        let mut inventory = Inventory::default();
        let dir = root.join(".worktrees");
        if let Ok(read) = fs::read_dir(&dir) {
            for entry in read.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir())
                    && let Some(name) = entry.file_name().to_str()
                    && !ours(name)
                {
                    inventory.dirs.insert(name.to_owned());
                }
            }
        }
        let names = self
            .inner
            .worktrees()
            .map_err(git2_err("list the worktrees"))?;
        for name in names.iter().flatten() {
            if !ours(name) {
                inventory.entries.insert(name.to_owned());
            }
        }
        let branches = self
            .inner
            .branches(Some(git2::BranchType::Local))
            .map_err(git2_err("list the branches"))?;
        for branch in branches.flatten() {
            if let Ok(Some(name)) = branch.0.name()
                && let Some(task) = name.strip_prefix("task/")
            {
                inventory.branches.insert(task.to_owned());
            }
        }
        Ok(inventory)
    }
}
