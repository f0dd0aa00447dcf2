//! Merging (specs/git.md *Merge*): the candidate built in memory from the integration tip and
//! the approved commit, the compare-and-swap that publishes it, and — for an integration
//! fix — the merge of the integration tip into a task worktree, conflicts left as markers.

use std::path::{Path, PathBuf};

use super::repo::{Repo, git2_err, git2_err_in, oid, signature};
use super::{GitError, commit_id};
use liza_model::model::CommitId;

/// What merging an approved commit onto the integration tip gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    /// The tip is an ancestor of the approved commit: integration moves to it.
    FastForward {
        /// The approved commit.
        commit: CommitId,
    },
    /// Both moved on: a merge commit with the tip and the approved commit as parents.
    MergeCommit {
        /// The merge commit written.
        commit: CommitId,
    },
    /// The approved commit is already on integration (someone merged it by hand).
    AlreadyMerged {
        /// The integration tip, unchanged.
        commit: CommitId,
    },
    /// The merge does not apply cleanly; nothing was written but unreferenced objects.
    Conflict {
        /// The conflicting paths.
        paths: Vec<String>,
    },
}

impl Candidate {
    /// The commit integration would point at, unless the merge conflicts.
    pub fn commit(&self) -> Option<&CommitId> {
        match self {
            Candidate::FastForward { commit }
            | Candidate::MergeCommit { commit }
            | Candidate::AlreadyMerged { commit } => Some(commit),
            Candidate::Conflict { .. } => None,
        }
    }

    /// The merge type as log.yaml records it.
    pub fn merge_type(&self) -> &'static str {
        match self {
            Candidate::FastForward { .. } => "fast-forward",
            Candidate::MergeCommit { .. } => "merge-commit",
            Candidate::AlreadyMerged { .. } => "already-merged",
            Candidate::Conflict { .. } => "conflict",
        }
    }
}

/// The result of a compare-and-swap of a branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    /// The branch moved as asked.
    Done,
    /// The branch no longer pointed at the expected commit; it points at `tip` now.
    Moved {
        /// Where it points now (`None`: the branch is gone).
        tip: Option<CommitId>,
    },
}

/// What merging the integration tip into a task worktree did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeMerge {
    /// The task branch already contains the tip.
    UpToDate,
    /// Merged cleanly and committed on the task branch.
    Committed {
        /// The merge commit.
        commit: CommitId,
    },
    /// Conflicts left as markers in the files (a merge in progress for the coder to
    /// finish with `git commit`).
    Conflicts {
        /// The conflicting paths.
        paths: Vec<String>,
    },
}

impl Repo {
    /// Builds the merge of `approved` onto `tip` in memory. A merge commit is written to
    /// the object database but no ref points at it until [`Repo::publish`].
    pub fn merge_candidate(
        &self,
        tip: &str,
        approved: &str,
        message: &str,
    ) -> Result<Candidate, GitError> {
        if self.is_ancestor(approved, tip)? {
            return Ok(Candidate::AlreadyMerged {
                commit: self.resolve_commit(tip)?,
            });
        }
        if self.is_ancestor(tip, approved)? {
            return Ok(Candidate::FastForward {
                commit: self.resolve_commit(approved)?,
            });
        }
        let ours = self.commit(tip)?;
        let theirs = self.commit(approved)?;
        let mut index = self
            .inner
            .merge_commits(&ours, &theirs, None)
            .map_err(git2_err(format!("merge {approved} onto {tip}")))?;
        if index.has_conflicts() {
            return Ok(Candidate::Conflict {
                paths: conflict_paths(&index)?,
            });
        }
        let tree_id = index
            .write_tree_to(&self.inner)
            .map_err(git2_err("write the merged tree"))?;
        let tree = self
            .inner
            .find_tree(tree_id)
            .map_err(git2_err("read the merged tree"))?;
        let sig = signature()?;
        let commit = self
            .inner
            .commit(None, &sig, &sig, message, &tree, &[&ours, &theirs])
            .map_err(git2_err("write the merge commit"))?;
        Ok(Candidate::MergeCommit {
            commit: commit_id(commit),
        })
    }

    /// Moves local branch `branch` from `expected` to `new` only if it still points at
    /// `expected` (compare-and-swap under git's own ref lock, so it is safe against git
    /// commands run by people at the same time).
    pub fn publish(
        &self,
        branch: &str,
        expected: &str,
        new: &str,
        reason: &str,
    ) -> Result<Published, GitError> {
        if expected == new {
            return Ok(Published::Done);
        }
        let name = format!("refs/heads/{branch}");
        match self
            .inner
            .reference_matching(&name, oid(new)?, true, oid(expected)?, reason)
        {
            Ok(_) => Ok(Published::Done),
            Err(e) if e.code() == git2::ErrorCode::Modified => Ok(Published::Moved {
                tip: self.branch_tip(branch)?,
            }),
            // Another writer's lock (a live git, or one that died and left it) is not a
            // moved branch: it is named, and waited for by the caller.
            Err(e) => Err(git2_err(format!("move {branch} to {new}"))(e)),
        }
    }

    /// Whether commits `a` and `b` hold the same tree: merging one onto the other would
    /// change no file.
    pub fn same_tree(&self, a: &str, b: &str) -> Result<bool, GitError> {
        let tree = |sha: &str| -> Result<git2::Oid, GitError> { Ok(self.commit(sha)?.tree_id()) };
        Ok(tree(a)? == tree(b)?)
    }

    /// The contents of `path` in `commit`, if it holds a file there.
    pub fn file_at(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let tree = self
            .commit(commit)?
            .tree()
            .map_err(git2_err(format!("read the tree of {commit}")))?;
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        match entry.to_object(&self.inner).map(|o| o.into_blob()) {
            Ok(Ok(blob)) => Ok(Some(blob.content().to_vec())),
            _ => Ok(None),
        }
    }

    /// How many commits `until` has that `since` does not (`git rev-list --count
    /// since..until`).
    pub fn count_commits(&self, since: &str, until: &str) -> Result<u64, GitError> {
        let mut walk = self.inner.revwalk().map_err(git2_err("walk commits"))?;
        walk.push(oid(until)?).map_err(git2_err("walk commits"))?;
        walk.hide(oid(since)?).map_err(git2_err("walk commits"))?;
        Ok(walk.count() as u64)
    }

    /// The checkouts (the main one and any worktree) whose HEAD is on `branch`: moving the
    /// branch under them would change a person's checkout.
    pub fn checkouts_on_branch(&self, branch: &str) -> Vec<PathBuf> {
        let full = format!("refs/heads/{branch}");
        let mut found = Vec::new();
        if let Some(dir) = self.inner.workdir()
            && self
                .inner
                .find_reference("HEAD")
                .ok()
                .and_then(|h| h.symbolic_target().map(|t| t == full))
                .unwrap_or(false)
        {
            found.push(dir.to_path_buf());
        }
        for linked in super::checkouts::on_branch(self.inner.commondir(), None, branch) {
            if !found.iter().any(|f| same_dir(f, &linked)) {
                found.push(linked);
            }
        }
        found
    }

    /// Merges commit `tip` into the branch checked out at `worktree`. A clean merge is
    /// committed (`message`); conflicts are left in the files and the index as `git
    /// merge` leaves them, for the coder to resolve and commit.
    pub fn merge_into_worktree(
        &self,
        worktree: &Path,
        tip: &str,
        tip_label: &str,
        message: &str,
    ) -> Result<WorktreeMerge, GitError> {
        let repo = super::worktree::open_checkout(worktree)
            .map_err(git2_err(format!("open worktree {}", worktree.display())))?;
        let head = repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map_err(git2_err("read the worktree's HEAD"))?;
        let head_id = head.id().to_string();
        if self.is_ancestor(tip, &head_id)? {
            return Ok(WorktreeMerge::UpToDate);
        }
        let theirs_tree = repo
            .find_commit(oid(tip)?)
            .and_then(|c| c.tree())
            .map_err(git2_err(format!("read the tree of {tip}")))?;
        let ours_tree = head.tree().map_err(git2_err("read the worktree's tree"))?;
        super::worktree::clear_the_way(&repo, worktree, &[&ours_tree, &theirs_tree]);
        let theirs = repo
            .find_annotated_commit(oid(tip)?)
            .map_err(git2_err(format!("find commit {tip}")))?;
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout
            .allow_conflicts(true)
            .conflict_style_merge(true)
            .our_label("HEAD")
            .their_label(tip_label);
        repo.merge(&[&theirs], None, Some(&mut checkout))
            .map_err(git2_err(format!("merge {tip} into {}", worktree.display())))?;
        let mut index = repo
            .index()
            .map_err(git2_err_in(Some(repo.path()), "read the worktree index"))?;
        if index.has_conflicts() {
            return Ok(WorktreeMerge::Conflicts {
                paths: conflict_paths(&index)?,
            });
        }
        let tree_id = index
            .write_tree()
            .map_err(git2_err_in(Some(repo.path()), "write the merged tree"))?;
        let tree = repo
            .find_tree(tree_id)
            .map_err(git2_err_in(Some(repo.path()), "read the merged tree"))?;
        let tip_commit = repo
            .find_commit(oid(tip)?)
            .map_err(git2_err_in(Some(repo.path()), format!("find commit {tip}")))?;
        let sig = signature()?;
        let commit = repo
            .commit(
                Some("HEAD"),
                &sig,
                &sig,
                message,
                &tree,
                &[&head, &tip_commit],
            )
            .map_err(git2_err_in(Some(repo.path()), "commit the merge"))?;
        repo.cleanup_state()
            .map_err(git2_err_in(Some(repo.path()), "finish the merge state"))?;
        Ok(WorktreeMerge::Committed {
            commit: commit_id(commit),
        })
    }

    /// Puts the checkout at `worktree` back to commit `head` with no merge in progress
    /// (undoes [`Repo::merge_into_worktree`]; the caller saved any files before).
    pub fn reset_worktree(&self, worktree: &Path, head: &str) -> Result<(), GitError> {
        let repo = super::worktree::open_checkout(worktree)
            .map_err(git2_err(format!("open worktree {}", worktree.display())))?;
        let commit = repo
            .find_commit(oid(head)?)
            .map_err(git2_err(format!("find commit {head}")))?;
        let target_tree = commit
            .tree()
            .map_err(git2_err("read the tree to reset to"))?;
        let current = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
        let mut trees = vec![&target_tree];
        trees.extend(current.as_ref());
        super::worktree::clear_the_way(&repo, worktree, &trees);
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout.force();
        repo.reset(
            commit.as_object(),
            git2::ResetType::Hard,
            Some(&mut checkout),
        )
        .map_err(git2_err(format!("reset {} to {head}", worktree.display())))?;
        repo.cleanup_state()
            .map_err(git2_err("clear the merge state"))
    }
}

/// The paths with conflicts in a merged index, each once.
pub(super) fn conflict_paths(index: &git2::Index) -> Result<Vec<String>, GitError> {
    let mut paths: Vec<String> = Vec::new();
    let conflicts = index
        .conflicts()
        .map_err(git2_err("read the merge conflicts"))?;
    for conflict in conflicts {
        let conflict = conflict.map_err(git2_err("read a merge conflict"))?;
        for entry in [conflict.our, conflict.their, conflict.ancestor]
            .into_iter()
            .flatten()
        {
            let path = String::from_utf8_lossy(&entry.path).into_owned();
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths.sort();
    Ok(paths)
}

/// Whether two paths name one directory (libgit2's workdir ends with `/`).
fn same_dir(a: &Path, b: &Path) -> bool {
    a.components().eq(b.components())
}
