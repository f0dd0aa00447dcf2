//! Task worktrees (specs/git.md *Layout*, *Nothing in a worktree is ever deleted*, *Claim-time
//! worktree handling*, *Submit-time checks*): `.worktrees/<task>` on branch `task/<task>`;
//! WIP commits and `liza/attic/<task>-<n>` archives before any removal; verified removal;
//! the facts submit-time checks need.

use std::fs;
use std::path::{Path, PathBuf};

use super::repo::{Repo, git2_err, git2_err_in, oid, signature};
use super::{GitError, commit_id};
use liza_model::ids::TaskId;
use liza_model::model::CommitId;

/// What saving a worktree before its removal kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SavedWork {
    /// The WIP commit made of uncommitted files, if there were any.
    pub wip_commit: Option<CommitId>,
    /// The attic branch the task branch was archived to, if it held unmerged commits.
    pub attic: Option<String>,
    /// A leftover directory that was not a git worktree, moved aside.
    pub moved_dir: Option<String>,
}

/// `task/<id>`: a task's branch.
pub fn task_branch(id: &TaskId) -> String {
    format!("task/{id}")
}

/// `.worktrees/<id>`: a task's worktree.
pub fn worktree_dir(root: &Path, id: &TaskId) -> PathBuf {
    root.join(".worktrees").join(id.as_str())
}

/// A linked worktree's own git directory (`gitdir:` in its `.git` file), where a commit
/// in it writes its index and HEAD; `None` for a main checkout.
pub fn own_git_dir(worktree: &Path) -> Option<PathBuf> {
    // An agent's worktree: its `.git` is read as a file, never through a link or a FIFO.
    let bytes = liza_base::untrusted::read_regular(&worktree.join(".git"), 64 * 1024)?;
    let text = String::from_utf8(bytes).ok()?;
    let dir = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    let dir = if dir.is_absolute() {
        dir
    } else {
        worktree.join(dir)
    };
    // libgit2 writes it with a trailing slash; a CLI comparing paths wants none.
    Some(dir.components().collect())
}

/// Whether `dir` is one of liza's worktrees (`.worktrees/<id>`, `.worktrees/_integration`):
/// a checkout agents and checks write, not a person's.
fn is_liza_worktree(dir: &Path) -> bool {
    dir.parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == ".worktrees")
}

/// Removes from liza's worktree `dir` and its own git metadata what liza's git must never
/// meet there (specs/sandbox.md *Reading what a run wrote*): FIFOs, sockets, devices, and
/// links git would follow — see [`liza_base::untrusted::defuse`]; in the git metadata, which
/// git never fills with links, every link. The paths removed.
pub(crate) fn defuse_worktree(dir: &Path) -> Vec<PathBuf> {
    let mut removed = liza_base::untrusted::defuse(dir);
    if let Some(own) = own_git_dir(dir) {
        removed.extend(
            liza_base::untrusted::remove_specials(&own, 4)
                .into_iter()
                .map(PathBuf::from),
        );
    }
    if !removed.is_empty() {
        tracing::warn!(
            worktree = %dir.display(),
            removed = ?removed,
            "removed FIFOs, sockets, devices or links git would follow from a worktree"
        );
    }
    removed
}

/// Opens the checkout at `dir` for liza's git: one of liza's worktrees defused first
/// ([`defuse_worktree`]; git would wait for ever on a FIFO there, or read through a link),
/// a person's checkout as it is.
pub(crate) fn open_checkout(dir: &Path) -> Result<git2::Repository, git2::Error> {
    if is_liza_worktree(dir) {
        defuse_worktree(dir);
    }
    git2::Repository::open(dir)
}

/// Removes from liza's worktree `dir` the links a checkout of `trees` (what is checked out
/// now and what will be) would write through: a link where a tree has a directory, or
/// where it has a file or a link to elsewhere. libgit2 writes a checked-out file through
/// a link in its way (observed with libgit2 1.9: a candidate's file written into the
/// repository's `.git/hooks` through a link a check left in `.worktrees/_integration`),
/// where git's own checkout replaces it. Defused first. The links removed.
pub(crate) fn clear_the_way(
    repo: &git2::Repository,
    dir: &Path,
    trees: &[&git2::Tree<'_>],
) -> Vec<PathBuf> {
    let mut removed = defuse_worktree(dir);
    for tree in trees {
        let _ = tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
            let Some(name) = entry.name() else {
                return git2::TreeWalkResult::Skip;
            };
            let path = dir.join(root).join(name);
            let Ok(meta) = fs::symlink_metadata(&path) else {
                // Nothing there, nor below.
                return git2::TreeWalkResult::Skip;
            };
            if !meta.file_type().is_symlink() {
                return git2::TreeWalkResult::Ok;
            }
            let same_link = entry.filemode() == 0o120000
                && repo.find_blob(entry.id()).is_ok_and(|blob| {
                    fs::read_link(&path).is_ok_and(|to| {
                        std::os::unix::ffi::OsStrExt::as_bytes(to.as_os_str()) == blob.content()
                    })
                });
            if !same_link && fs::remove_file(&path).is_ok() {
                removed.push(path);
            }
            // What the link led to is not the worktree's: nothing below to look at.
            git2::TreeWalkResult::Skip
        });
    }
    removed
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> GitError {
    let path = path.to_path_buf();
    move |source| GitError::Io {
        action,
        path,
        source,
    }
}

impl Repo {
    /// Whether `.worktrees/<id>` exists as a registered git worktree.
    pub fn worktree_present(&self, root: &Path, id: &TaskId) -> bool {
        worktree_dir(root, id).join(".git").exists()
            && self
                .inner
                .find_worktree(id.as_str())
                .is_ok_and(|w| w.validate().is_ok())
    }

    /// Creates `.worktrees/<id>` on a new branch `task/<id>` at `base`. A leftover
    /// branch or directory is archived or moved aside first, never deleted.
    pub fn create_task_worktree(
        &self,
        root: &Path,
        id: &TaskId,
        base: &str,
        integration: &str,
        reason: &str,
    ) -> Result<SavedWork, GitError> {
        let saved = self.retire_worktree(root, id, reason, integration)?;
        let commit = self.commit(base)?;
        let branch = self
            .inner
            .branch(&task_branch(id), &commit, false)
            .map_err(git2_err(format!("create branch {}", task_branch(id))))?;
        self.add_worktree(root, id, branch.get())?;
        Ok(saved)
    }

    /// Recreates a missing worktree from its task branch (the commits are on the branch).
    pub fn recreate_task_worktree(&self, root: &Path, id: &TaskId) -> Result<(), GitError> {
        if self.worktree_present(root, id) {
            return Ok(());
        }
        self.move_leftover_dir(root, id)?;
        self.prune_stale_entry(id)?;
        let branch = self
            .inner
            .find_branch(&task_branch(id), git2::BranchType::Local)
            .map_err(git2_err(format!(
                "find branch {} to recreate the worktree",
                task_branch(id)
            )))?;
        self.add_worktree(root, id, branch.get())
    }

    fn add_worktree(
        &self,
        root: &Path,
        id: &TaskId,
        reference: &git2::Reference<'_>,
    ) -> Result<(), GitError> {
        let parent = root.join(".worktrees");
        fs::create_dir_all(&parent).map_err(io("create", &parent))?;
        self.prune_stale_entry(id)?;
        let mut options = git2::WorktreeAddOptions::new();
        options.reference(Some(reference));
        self.inner
            .worktree(id.as_str(), &worktree_dir(root, id), Some(&options))
            .map_err(git2_err(format!("create worktree .worktrees/{id}")))?;
        Ok(())
    }

    /// Drops git's record of a worktree whose directory is gone.
    fn prune_stale_entry(&self, id: &TaskId) -> Result<(), GitError> {
        if let Ok(wt) = self.inner.find_worktree(id.as_str())
            && wt.validate().is_err()
        {
            wt.prune(Some(
                git2::WorktreePruneOptions::new().valid(true).locked(true),
            ))
            .map_err(git2_err(format!("prune the stale worktree entry {id}")))?;
        }
        Ok(())
    }

    /// A directory at `.worktrees/<id>` that is not a working git worktree is moved to
    /// `.worktrees/_attic/<id>-<n>` (it may hold someone's files).
    fn move_leftover_dir(&self, root: &Path, id: &TaskId) -> Result<Option<String>, GitError> {
        let dir = worktree_dir(root, id);
        if !dir.exists() || self.worktree_present(root, id) {
            return Ok(None);
        }
        let attic = root.join(".worktrees").join("_attic");
        fs::create_dir_all(&attic).map_err(io("create", &attic))?;
        let target = (1..)
            .map(|n| attic.join(format!("{id}-{n}")))
            .find(|p| !p.exists())
            .expect("an unused name exists");
        fs::rename(&dir, &target).map_err(io("move aside", &dir))?;
        Ok(Some(
            target
                .strip_prefix(root)
                .unwrap_or(&target)
                .display()
                .to_string(),
        ))
    }

    /// Saves everything in the task's worktree and removes it: WIP commit of uncommitted
    /// files, archive of the branch if it has commits not on `integration`, removal
    /// verified, task branch deleted (its commits are on integration or in the attic).
    pub fn retire_worktree(
        &self,
        root: &Path,
        id: &TaskId,
        reason: &str,
        integration: &str,
    ) -> Result<SavedWork, GitError> {
        let mut saved = SavedWork {
            moved_dir: self.move_leftover_dir(root, id)?,
            ..SavedWork::default()
        };
        let present = self.worktree_present(root, id);
        if present {
            saved.wip_commit = self.commit_wip(&worktree_dir(root, id), reason)?;
        }
        saved.attic = self.archive_all(root, id, present, integration)?;
        self.remove_worktree(root, id)?;
        if self.branch_tip(&task_branch(id))?.is_some() {
            self.delete_branch(&task_branch(id))?;
        }
        Ok(saved)
    }

    /// Commits modified, staged and untracked non-ignored files of `worktree` as
    /// `WIP: saved by liza before <reason>`; `None` when it was clean.
    pub fn commit_wip(&self, worktree: &Path, reason: &str) -> Result<Option<CommitId>, GitError> {
        self.commit_all(worktree, &format!("WIP: saved by liza before {reason}"))
    }

    /// Commits every modified, staged, deleted and untracked non-ignored file of
    /// `worktree` with `message`; `None` when it was clean.
    pub fn commit_all(&self, worktree: &Path, message: &str) -> Result<Option<CommitId>, GitError> {
        if dirty_files(worktree)?.is_empty() {
            return Ok(None);
        }
        let repo = open_checkout(worktree)
            .map_err(git2_err(format!("open worktree {}", worktree.display())))?;
        let mut index = repo
            .index()
            .map_err(git2_err_in(Some(repo.path()), "read the worktree index"))?;
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .map_err(git2_err_in(Some(repo.path()), "stage the worktree's files"))?;
        index
            .update_all(["*"], None)
            .map_err(git2_err_in(Some(repo.path()), "stage deleted files"))?;
        index
            .write()
            .map_err(git2_err_in(Some(repo.path()), "write the worktree index"))?;
        let tree_id = index.write_tree().map_err(git2_err("write the WIP tree"))?;
        let tree = repo
            .find_tree(tree_id)
            .map_err(git2_err("read the WIP tree"))?;
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let sig = signature()?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let oid = repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .map_err(git2_err("commit the worktree's files"))?;
        Ok(Some(commit_id(oid)))
    }

    /// Archives everything the task's worktree ever held that is not on `integration`
    /// as `liza/attic/<id>-<n>`: the task branch, the worktree's HEAD (a detached HEAD
    /// and its WIP commit included) and every commit in the HEAD and branch reflogs (work
    /// an agent reset or rebased away). One tip is archived as it is; several get a keep
    /// commit whose parents they are, so one ref holds them all.
    fn archive_all(
        &self,
        root: &Path,
        id: &TaskId,
        present: bool,
        integration: &str,
    ) -> Result<Option<String>, GitError> {
        let mut candidates: Vec<git2::Oid> = Vec::new();
        let mut head = None;
        if present {
            let worktree = open_checkout(&worktree_dir(root, id))
                .map_err(git2_err(format!("open worktree .worktrees/{id}")))?;
            head = worktree.head().ok().and_then(|h| h.target());
            candidates.extend(head);
            candidates.extend(reflog_commits(&worktree, "HEAD"));
        }
        if let Some(tip) = self.branch_tip(&task_branch(id))? {
            candidates.push(oid(&tip)?);
        }
        candidates.extend(reflog_commits(
            &self.inner,
            &format!("refs/heads/{}", task_branch(id)),
        ));
        let integration_tip = self.branch_tip(integration)?.map(|t| oid(&t)).transpose()?;
        let mut unique: Vec<git2::Oid> = Vec::new();
        for c in candidates {
            let on_integration = integration_tip
                .is_some_and(|t| t == c || self.inner.graph_descendant_of(t, c).unwrap_or(false));
            if !unique.contains(&c) && !on_integration && self.inner.find_commit(c).is_ok() {
                unique.push(c);
            }
        }
        // Only the tips: a commit another candidate descends from is reachable through it.
        // Newest first, each compared with the few tips kept so far.
        let time = |c: &git2::Oid| self.inner.find_commit(*c).map_or(0, |c| c.time().seconds());
        unique.sort_by_key(|c| std::cmp::Reverse(time(c)));
        let descends =
            |d: git2::Oid, c: git2::Oid| self.inner.graph_descendant_of(d, c).unwrap_or(false);
        let mut tips: Vec<git2::Oid> = Vec::new();
        for c in unique {
            if !tips.iter().any(|&t| descends(t, c)) {
                tips.retain(|&t| !descends(c, t));
                tips.push(c);
            }
        }
        // The worktree's HEAD first: the keep commit takes its files.
        if let Some(head) = head
            && let Some(at) = tips.iter().position(|&t| t == head)
        {
            tips.swap(0, at);
        }
        let keep = match tips.as_slice() {
            [] => return Ok(None),
            [one] => *one,
            [first, ..] => {
                let parents: Vec<git2::Commit<'_>> = tips
                    .iter()
                    .map(|t| self.inner.find_commit(*t))
                    .collect::<Result<_, _>>()
                    .map_err(git2_err("read the commits to archive"))?;
                let tree = self
                    .inner
                    .find_commit(*first)
                    .and_then(|c| c.tree())
                    .map_err(git2_err("read the tree to archive"))?;
                let sig = signature()?;
                let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
                let message = format!(
                    "liza: everything .worktrees/{id} held\n\n\
                     The parents are the {} commits not on {integration} that no other one \
                     contains: the worktree's HEAD (its files are this commit's), the task \
                     branch and commits from their reflogs.\n",
                    tips.len()
                );
                self.inner
                    .commit(None, &sig, &sig, &message, &tree, &refs)
                    .map_err(git2_err("write the archive commit"))?
            }
        };
        Ok(Some(self.keep_in_attic(id, &commit_id(keep))?))
    }

    /// Removes the locks a commit in task `id`'s worktree takes — its `index.lock`,
    /// `HEAD.lock` and `AUTO_MERGE.lock`, and the task branch's
    /// `refs/heads/task/<id>.lock` — that no process holds open and that are at least
    /// `quiet_for` old: a git killed mid-commit (the end of the previous run kills its whole
    /// group) left them, and every later commit in the worktree would fail on them. git
    /// closes a lock's file long before it renames it (a hook or an editor runs between),
    /// so a lock no process holds may still be a live git's: one younger than `quiet_for`
    /// (the time since the caller last knew no git of its own ran there) is kept.
    /// Returns what it removed.
    pub fn clear_stale_commit_locks(
        &self,
        id: &TaskId,
        quiet_for: std::time::Duration,
    ) -> Vec<super::locks::LockFile> {
        let common = self.common_dir();
        let admin = common.join("worktrees").join(id.as_str());
        let branch_lock = common.join(format!("refs/heads/{}.lock", task_branch(id)));
        [
            admin.join("index.lock"),
            admin.join("HEAD.lock"),
            admin.join("AUTO_MERGE.lock"),
            branch_lock,
        ]
        .into_iter()
        .map(|path| super::locks::LockFile::inspect(&path))
        .filter(|lock| lock.present() && lock.holders.is_empty())
        .filter(|lock| lock.age.is_some_and(|age| age >= quiet_for))
        .filter(|lock| std::fs::remove_file(&lock.path).is_ok())
        .collect()
    }

    /// Keeps `commit` as the next free `liza/attic/<id>-<n>`; returns the branch's name.
    pub fn keep_in_attic(&self, id: &TaskId, commit: &CommitId) -> Result<String, GitError> {
        let name = (1..)
            .map(|n| format!("liza/attic/{id}-{n}"))
            .find(|n| self.branch_tip(n).ok().flatten().is_none())
            .expect("an unused attic name exists");
        self.create_branch(&name, commit.as_str())?;
        Ok(name)
    }

    /// The attic branches of task `id` (`liza/attic/<id>-<n>`) with their commits, in
    /// the order they were made.
    pub fn attic_refs(&self, id: &TaskId) -> Vec<(String, CommitId)> {
        let mut found: Vec<(u32, String, CommitId)> = (1..)
            .map_while(|n| {
                let name = format!("liza/attic/{id}-{n}");
                let tip = self.branch_tip(&name).ok().flatten()?;
                Some((n, name, tip))
            })
            .collect();
        found.sort();
        found
            .into_iter()
            .map(|(_, name, tip)| (name, tip))
            .collect()
    }

    /// Removes `.worktrees/<id>` and git's record of it, and verifies both are gone.
    pub fn remove_worktree(&self, root: &Path, id: &TaskId) -> Result<(), GitError> {
        let dir = worktree_dir(root, id);
        if let Ok(wt) = self.inner.find_worktree(id.as_str()) {
            wt.prune(Some(
                git2::WorktreePruneOptions::new()
                    .valid(true)
                    .locked(true)
                    .working_tree(true),
            ))
            .map_err(git2_err(format!("remove worktree .worktrees/{id}")))?;
        }
        if dir.exists() {
            // Only a registered worktree (whose files were just committed) reaches here.
            fs::remove_dir_all(&dir).map_err(io("remove", &dir))?;
        }
        if dir.exists() || self.inner.find_worktree(id.as_str()).is_ok() {
            return Err(GitError::RemovalNotVerified { path: dir });
        }
        Ok(())
    }

    /// Whether `ancestor` is `descendant` or one of its ancestors.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, GitError> {
        let a = oid(ancestor)?;
        let d = oid(descendant)?;
        if a == d {
            return Ok(true);
        }
        self.inner
            .graph_descendant_of(d, a)
            .map_err(git2_err("compare commits"))
    }

    /// Which of `commits` are `tip` or its ancestors: one walk back from `tip` that stops
    /// once every one was met. A commit the repository cannot find is not among them.
    pub fn reachable_among(
        &self,
        tip: &str,
        commits: &[CommitId],
    ) -> Result<std::collections::HashSet<CommitId>, GitError> {
        let mut wanted: std::collections::HashMap<git2::Oid, CommitId> = commits
            .iter()
            .filter_map(|c| Some((git2::Oid::from_str(c.as_str()).ok()?, c.clone())))
            .collect();
        let mut found = std::collections::HashSet::new();
        if wanted.is_empty() {
            return Ok(found);
        }
        let mut walk = self.inner.revwalk().map_err(git2_err("walk integration"))?;
        walk.push(oid(tip)?).map_err(git2_err("walk integration"))?;
        for id in walk {
            let id = id.map_err(git2_err("walk integration"))?;
            if let Some(commit) = wanted.remove(&id) {
                found.insert(commit);
                if wanted.is_empty() {
                    break;
                }
            }
        }
        Ok(found)
    }

    /// Files changed between two commits (both sides of renames).
    pub fn changed_files(&self, base: &str, head: &str) -> Result<Vec<String>, GitError> {
        let tree = |spec: &str| -> Result<git2::Tree<'_>, GitError> {
            self.commit(spec)?
                .tree()
                .map_err(git2_err(format!("read the tree of {spec}")))
        };
        let diff = self
            .inner
            .diff_tree_to_tree(Some(&tree(base)?), Some(&tree(head)?), None)
            .map_err(git2_err("diff the task's commits"))?;
        let mut files: Vec<String> = Vec::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(p) = file.path().and_then(Path::to_str)
                    && !files.iter().any(|f| f == p)
                {
                    files.push(p.to_owned());
                }
            }
        }
        Ok(files)
    }
}

/// The commits a reflog names (newest first), at most the last 500 entries.
fn reflog_commits(repo: &git2::Repository, name: &str) -> Vec<git2::Oid> {
    let Ok(log) = repo.reflog(name) else {
        return Vec::new();
    };
    log.iter()
        .take(500)
        .flat_map(|e| [e.id_new(), e.id_old()])
        .filter(|id| !id.is_zero())
        .collect()
}

/// The HEAD commit of the checkout at `worktree`.
pub fn head_of(worktree: &Path) -> Result<CommitId, GitError> {
    let repo = open_checkout(worktree).map_err(|_| GitError::NotARepository {
        path: worktree.to_path_buf(),
    })?;
    let head = repo.head().map_err(|_| GitError::UnbornHead)?;
    head.peel_to_commit()
        .map(|c| commit_id(c.id()))
        .map_err(git2_err("read HEAD"))
}

/// Staged, unstaged and untracked non-ignored files of the checkout at `worktree`.
pub fn dirty_files(worktree: &Path) -> Result<Vec<String>, GitError> {
    // `git status` of a large worktree can take seconds: the tests make it that slow here.
    liza_base::failpoint::hit("git-status");
    let repo = open_checkout(worktree).map_err(|_| GitError::NotARepository {
        path: worktree.to_path_buf(),
    })?;
    let mut options = git2::StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(git2_err("read the worktree status"))?;
    Ok(statuses
        .iter()
        .filter(|s| !s.status().is_empty() && !s.status().contains(git2::Status::IGNORED))
        .filter_map(|s| s.path().map(str::to_owned))
        .collect())
}

/// The git blob id of a file's contents (`git hash-object`).
pub fn blob_id(path: &Path) -> Result<String, GitError> {
    git2::Oid::hash_file(git2::ObjectType::Blob, path)
        .map(|o| o.to_string())
        .map_err(git2_err(format!("hash {}", path.display())))
}
