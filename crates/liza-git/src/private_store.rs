//! A sandboxed coder's private git store (specs/sandbox.md *Git in the sandbox*): the
//! objects its commits wrote outside the repository's object store are copied in, each
//! read back and hashed again (a forged object under a real one's name is refused), and
//! its task branch's ref and reflog, kept privately during the run, are replayed onto
//! the real branch by compare-and-swap; a worktree HEAD pointed at another branch is put
//! back on the task branch.

use std::path::Path;

use super::repo::{Repo, git2_err, oid};
use super::worktree::task_branch;
use super::{GitError, commit_id};
use liza_model::ids::TaskId;
use liza_model::model::CommitId;

/// What copying a private store's objects did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    /// Objects copied into the repository.
    pub copied: usize,
    /// Objects whose content does not hash to their name: refused.
    pub forged: Vec<String>,
}

/// What replaying the private task branch did.
#[derive(Debug, PartialEq, Eq)]
pub enum BranchSync {
    /// Nothing changed in private.
    Unchanged,
    /// The real branch now points where the private one does.
    Moved {
        /// The new tip.
        to: CommitId,
        /// How many commits it moved by.
        steps: usize,
    },
    /// The real branch moved meanwhile: the private tip was kept under an attic name.
    Diverged {
        /// The attic branch that keeps it.
        kept_as: String,
        /// The private tip kept.
        tip: CommitId,
    },
    /// The private ref names no commit the repository has: left alone.
    Unusable {
        /// What is wrong with it.
        why: String,
    },
}

impl Repo {
    /// Copies every object of the loose-and-packed object directory `dir` that the
    /// repository lacks, each read and written again so its name is its hash.
    pub fn import_objects(&self, dir: &Path) -> Result<Imported, GitError> {
        let mut imported = Imported::default();
        if !dir.is_dir() {
            return Ok(imported);
        }
        let private = git2::Odb::new().map_err(git2_err("open a private object store"))?;
        private
            .add_disk_alternate(&dir.display().to_string())
            .map_err(git2_err(format!("read the objects in {}", dir.display())))?;
        let mut ids = Vec::new();
        private
            .foreach(|id| {
                ids.push(*id);
                true
            })
            .map_err(git2_err(format!("list the objects in {}", dir.display())))?;
        let shared = self
            .inner
            .odb()
            .map_err(git2_err("open the object store"))?;
        for id in ids {
            if shared.exists(id) {
                continue;
            }
            let Ok(object) = private.read(id) else {
                imported.forged.push(id.to_string());
                continue;
            };
            let written = shared
                .write(object.kind(), object.data())
                .map_err(git2_err(format!("copy object {id}")))?;
            if written == id {
                imported.copied += 1;
            } else {
                imported.forged.push(id.to_string());
            }
        }
        Ok(imported)
    }

    /// The task branch's tip and its reflog text, to start a private copy from.
    pub fn task_ref_and_log(&self, id: &TaskId) -> (Option<CommitId>, String) {
        let tip = self.branch_tip(&task_branch(id)).ok().flatten();
        let log = std::fs::read_to_string(
            self.inner
                .commondir()
                .join("logs/refs/heads")
                .join(task_branch(id)),
        )
        .unwrap_or_default();
        (tip, log)
    }

    /// Moves the task branch from `expected` through every commit the private reflog
    /// lines after `known_lines` name, ending at `private_tip`, each step a
    /// compare-and-swap with its own reflog entry. When the branch is no longer at
    /// `expected`, the private tip is kept as `liza/attic/<id>-<n>` instead.
    pub fn replay_task_branch(
        &self,
        id: &TaskId,
        expected: Option<&str>,
        private_tip: &str,
        private_log: &str,
        known_lines: usize,
        who: &str,
    ) -> Result<BranchSync, GitError> {
        let tip = match oid(private_tip) {
            Ok(tip) if self.inner.find_commit(tip).is_ok() => tip,
            _ => {
                return Ok(BranchSync::Unusable {
                    why: format!("{private_tip:?} names no commit of the repository"),
                });
            }
        };
        if expected == Some(private_tip) {
            return Ok(BranchSync::Unchanged);
        }
        let name = format!("refs/heads/{}", task_branch(id));
        let real = self.branch_tip(&task_branch(id))?;
        if real.as_ref().map(|c| c.as_str()) != expected {
            let kept_as = self.keep_in_attic(id, &commit_id(tip))?;
            return Ok(BranchSync::Diverged {
                kept_as,
                tip: commit_id(tip),
            });
        }
        // Each commit the private reflog moved the branch to, in order, then the tip.
        let mut steps: Vec<(git2::Oid, String)> = private_log
            .lines()
            .skip(known_lines)
            .filter_map(|line| {
                let (head, message) = line.split_once('\t').unwrap_or((line, ""));
                let new = head.split_whitespace().nth(1)?;
                let new = git2::Oid::from_str(new).ok()?;
                self.inner.find_commit(new).ok()?;
                Some((new, message.to_owned()))
            })
            .collect();
        if steps.last().map(|(o, _)| *o) != Some(tip) {
            steps.push((tip, "commit".into()));
        }
        let mut at = expected.map(oid).transpose()?;
        let mut moved = 0;
        for (new, message) in steps {
            if Some(new) == at {
                continue;
            }
            let message = format!("{who} (sandboxed): {message}");
            let result = match at {
                Some(old) => self
                    .inner
                    .reference_matching(&name, new, true, old, &message)
                    .map(drop),
                None => self.inner.reference(&name, new, false, &message).map(drop),
            };
            result.map_err(git2_err(format!("move {name} to {new}")))?;
            at = Some(new);
            moved += 1;
        }
        Ok(BranchSync::Moved {
            to: commit_id(tip),
            steps: moved,
        })
    }

    /// Puts the worktree `dir`'s HEAD back on the task branch when it names another
    /// branch (liza's own commits in the worktree would move that branch) or is not a
    /// readable file; a detached HEAD stays. Returns what it named. Read and written as a
    /// plain file — never through a link, never waiting on a FIFO: the run may still be
    /// writing its git metadata.
    pub fn keep_head_on_task_branch(
        &self,
        dir: &Path,
        id: &TaskId,
    ) -> Result<Option<String>, GitError> {
        let Some(git_dir) = super::worktree::own_git_dir(dir) else {
            return Ok(None);
        };
        let file = git_dir.join("HEAD");
        let own = format!("refs/heads/{}", task_branch(id));
        let was = liza_base::untrusted::read_regular(&file, 4096)
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .unwrap_or_default();
        let named = match was.strip_prefix("ref:") {
            Some(named) => named.trim(),
            None if !was.is_empty() => return Ok(None),
            None => "",
        };
        if named == own {
            return Ok(None);
        }
        liza_base::untrusted::write_new(&file, format!("ref: {own}\n").as_bytes()).map_err(
            |source| GitError::Io {
                action: "put the worktree's HEAD back on its task branch",
                path: file.clone(),
                source,
            },
        )?;
        Ok(Some(if named.is_empty() {
            "no readable HEAD".to_owned()
        } else {
            named.to_owned()
        }))
    }
}
