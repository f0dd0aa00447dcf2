//! Whether a task's approved change is present at a commit (specs/git.md *A batch*, step 7,
//! "Nothing lost"): the 3-way merge of the approved commit into that commit, over their
//! merge base with the integration tip the task's batch started from, must change
//! nothing. A merge commit names the approved commit as a parent whatever its tree holds,
//! so reachability proves nothing; the tree must hold the change.

use super::GitError;
use super::repo::{Repo, git2_err, oid};

/// What [`Repo::change_present`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence {
    /// Merging the approved commit again would change nothing.
    Present,
    /// These files would change (or conflict): the change is not there.
    Missing {
        /// The paths.
        paths: Vec<String>,
    },
}

impl Repo {
    /// Whether `at` holds the change `approved` brings onto `base` (the integration tip its
    /// merge started from).
    pub fn change_present(
        &self,
        base: &str,
        approved: &str,
        at: &str,
    ) -> Result<Presence, GitError> {
        let approved_oid = oid(approved)?;
        let ancestor = match self.inner.merge_base(oid(base)?, approved_oid) {
            Ok(mb) => Some(
                self.commit(&mb.to_string())?
                    .tree()
                    .map_err(git2_err("read a tree"))?,
            ),
            Err(e) if e.code() == git2::ErrorCode::NotFound => None,
            Err(e) => {
                return Err(git2_err(format!(
                    "find the merge base of {base} and {approved}"
                ))(e));
            }
        };
        let ours = self.commit(at)?.tree().map_err(git2_err("read a tree"))?;
        let theirs = self
            .commit(approved)?
            .tree()
            .map_err(git2_err("read a tree"))?;
        let empty;
        let ancestor = match ancestor {
            Some(t) => t,
            None => {
                let id = self
                    .inner
                    .treebuilder(None)
                    .and_then(|b| b.write())
                    .map_err(git2_err("write the empty tree"))?;
                empty = self.inner.find_tree(id).map_err(git2_err("read a tree"))?;
                empty
            }
        };
        let mut index = self
            .inner
            .merge_trees(&ancestor, &ours, &theirs, None)
            .map_err(git2_err(format!("merge {approved} into {at} again")))?;
        if index.has_conflicts() {
            return Ok(Presence::Missing {
                paths: super::merge::conflict_paths(&index)?,
            });
        }
        let merged = index
            .write_tree_to(&self.inner)
            .map_err(git2_err("write the merged tree"))?;
        if merged == ours.id() {
            return Ok(Presence::Present);
        }
        let merged = self
            .inner
            .find_tree(merged)
            .map_err(git2_err("read a tree"))?;
        let diff = self
            .inner
            .diff_tree_to_tree(Some(&ours), Some(&merged), None)
            .map_err(git2_err("compare the trees"))?;
        let paths = diff
            .deltas()
            .filter_map(|d| d.new_file().path().or(d.old_file().path()))
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        Ok(Presence::Missing { paths })
    }
}
