//! Repository operations through libgit2.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::{GitError, commit_id};
use liza_model::model::CommitId;

/// A repository, opened once: the main checkout's, found from any directory in it or in
/// one of its worktrees.
pub struct Repo {
    pub(super) inner: git2::Repository,
}

pub(super) fn git2_err(action: impl Into<String>) -> impl FnOnce(git2::Error) -> GitError {
    git2_err_in(None, action)
}

/// [`git2_err`] for an operation on the repository whose git directory is `git_dir`:
/// a failure on its index lock names that lock.
pub(super) fn git2_err_in(
    git_dir: Option<&Path>,
    action: impl Into<String>,
) -> impl FnOnce(git2::Error) -> GitError {
    let action = action.into();
    let git_dir = git_dir.map(Path::to_path_buf);
    move |source| match super::locks::named_by(&source, git_dir.as_deref()) {
        Some(path) => GitError::Locked {
            action,
            lock: super::locks::LockFile::inspect(&path),
        },
        None => GitError::Git2 { action, source },
    }
}

/// A full or abbreviated-to-full SHA as an object id.
pub(super) fn oid(sha: &str) -> Result<git2::Oid, GitError> {
    git2::Oid::from_str(sha).map_err(git2_err(format!("read commit {sha}")))
}

/// The signature of commits liza makes itself (WIP saves, merge commits).
pub(super) fn signature() -> Result<git2::Signature<'static>, GitError> {
    git2::Signature::now("liza", "liza@localhost").map_err(git2_err("make the liza signature"))
}

impl Repo {
    /// The commit `sha` names.
    pub(super) fn commit(&self, sha: &str) -> Result<git2::Commit<'_>, GitError> {
        self.inner
            .find_commit(oid(sha)?)
            .map_err(git2_err(format!("find commit {sha}")))
    }

    /// Whether the object database holds commit `sha` (it may have been pruned).
    pub fn has_commit(&self, sha: &str) -> bool {
        self.commit(sha).is_ok()
    }

    /// Opens the repository whose main checkout is `root`.
    pub fn open(root: &Path) -> Result<Repo, GitError> {
        let inner = git2::Repository::open(root).map_err(|_| GitError::NotARepository {
            path: root.to_path_buf(),
        })?;
        if inner.is_bare() {
            return Err(GitError::Bare {
                path: root.to_path_buf(),
            });
        }
        Ok(Repo { inner })
    }

    /// The full SHA of the commit `spec` names (`HEAD`, a branch, a tag, a SHA).
    pub fn resolve_commit(&self, spec: &str) -> Result<CommitId, GitError> {
        if spec == "HEAD" && self.inner.head().is_err() {
            return Err(GitError::UnbornHead);
        }
        let unreadable = |source: git2::Error| {
            // Missing is one thing; there but unreadable (a truncated or corrupt object)
            // is another, and says so.
            if matches!(
                source.code(),
                git2::ErrorCode::NotFound
                    | git2::ErrorCode::Ambiguous
                    | git2::ErrorCode::InvalidSpec
            ) {
                GitError::UnknownRevision {
                    spec: spec.to_owned(),
                    source,
                }
            } else {
                GitError::DamagedObject {
                    spec: spec.to_owned(),
                    source,
                }
            }
        };
        let object = self.inner.revparse_single(spec).map_err(unreadable)?;
        let commit = object.peel_to_commit().map_err(unreadable)?;
        Ok(commit_id(commit.id()))
    }

    /// The repository's common git directory (`.git` of the main checkout).
    pub fn common_dir(&self) -> std::path::PathBuf {
        self.inner.commondir().to_path_buf()
    }

    /// Whether git accepts `name` as a branch name.
    pub fn is_valid_branch_name(name: &str) -> bool {
        git2::Branch::name_is_valid(name).unwrap_or(false)
    }

    /// The tip of local branch `name`, if it exists.
    pub fn branch_tip(&self, name: &str) -> Result<Option<CommitId>, GitError> {
        match self.inner.find_branch(name, git2::BranchType::Local) {
            Ok(branch) => Ok(branch.get().target().map(commit_id)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(git2_err(format!("read branch {name}"))(e)),
        }
    }

    /// Creates local branch `name` at `commit` (refusing to move an existing one).
    pub fn create_branch(&self, name: &str, commit: &str) -> Result<(), GitError> {
        if !Self::is_valid_branch_name(name) {
            return Err(GitError::InvalidBranchName {
                name: name.to_owned(),
            });
        }
        let commit = self.commit(commit)?;
        self.inner
            .branch(name, &commit, false)
            .map_err(git2_err(format!("create branch {name}")))?;
        Ok(())
    }

    /// Points local branch `name` at `commit`, created or moved (a mirror of the shared
    /// remote's branch; the caller knows nobody's checkout has it).
    pub fn set_branch(&self, name: &str, commit: &str, reason: &str) -> Result<(), GitError> {
        if !Self::is_valid_branch_name(name) {
            return Err(GitError::InvalidBranchName {
                name: name.to_owned(),
            });
        }
        let commit = self.commit(commit)?;
        self.inner
            .reference(&format!("refs/heads/{name}"), commit.id(), true, reason)
            .map_err(git2_err(format!("move branch {name}")))?;
        Ok(())
    }

    /// Deletes the local branch `name`.
    pub fn delete_branch(&self, name: &str) -> Result<(), GitError> {
        let mut branch = self
            .inner
            .find_branch(name, git2::BranchType::Local)
            .map_err(git2_err(format!("find branch {name}")))?;
        branch
            .delete()
            .map_err(git2_err(format!("delete branch {name}")))
    }

    /// Adds `patterns` to the repository's `info/exclude` (shared by all worktrees) under
    /// a `# liza: <why>` line, skipping those already there; returns the ones added.
    pub fn add_excludes(&self, patterns: &[&str], why: &str) -> Result<Vec<String>, GitError> {
        let info = self.inner.commondir().join("info");
        let path = info.join("exclude");
        let io = |action: &'static str, p: &Path| {
            let p = p.to_path_buf();
            move |source| GitError::Io {
                action,
                path: p,
                source,
            }
        };
        fs::create_dir_all(&info).map_err(io("create", &info))?;
        let existing = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io("read", &path)(e)),
        };
        let missing: Vec<String> = patterns
            .iter()
            .filter(|p| !existing.lines().any(|l| l.trim() == **p))
            .map(|p| (*p).to_owned())
            .collect();
        if missing.is_empty() {
            return Ok(missing);
        }
        let mut text = String::new();
        if !existing.is_empty() && !existing.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("# liza: {why}\n"));
        for p in &missing {
            text.push_str(p);
            text.push('\n');
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io("open", &path))?;
        file.write_all(text.as_bytes())
            .map_err(io("write", &path))?;
        Ok(missing)
    }
}
