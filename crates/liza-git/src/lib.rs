//! The one git wrapper. Nothing else in liza touches git: repository discovery (from any
//! subdirectory or worktree to the main checkout), refs and branches through `git2`, task
//! worktrees, merges into the integration branch and the integration worktree, a
//! sandboxed coder's private store, the shared remote, and the repository's exclude file
//! — and [`cli`], the few commands run through the `git` binary.

#![warn(missing_docs)]

pub mod checkouts;
pub mod cli;
mod discover;
mod integration_worktree;
mod inventory;
pub mod locks;
mod merge;
mod preserved;
mod private_store;
mod remote;
mod repo;
mod sandbox_config;
mod worktree;

pub use discover::find_project_root;
pub use integration_worktree::{integration_slot_dir, integration_worktree_dir};
pub use merge::{Candidate, Published, WorktreeMerge};
pub use preserved::Presence;
pub use private_store::{BranchSync, Imported};
pub use remote::{Lease, Pushed, Remote};
pub use repo::Repo;
pub use worktree::{
    SavedWork, blob_id, dirty_files, head_of, own_git_dir, task_branch, worktree_dir,
};

use std::path::PathBuf;

use liza_base::error::{Diagnostic, ErrorClass};
use liza_model::model::CommitId;

/// A git object id as liza's commit id type (the boundary: git2 ids never leave this
/// module as strings).
fn commit_id(oid: git2::Oid) -> CommitId {
    CommitId::of_object(oid.to_string())
}

/// What went wrong in git, with what a person can do about it ([`Diagnostic::hints`]).
#[expect(missing_docs, reason = "each variant's message is its documentation")]
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{path} is not inside a git repository")]
    NotARepository { path: PathBuf },
    #[error("the repository at {path} is bare; liza needs a checkout to work in")]
    Bare { path: PathBuf },
    #[error("the repository has no commits yet (HEAD is unborn)")]
    UnbornHead,
    #[error("{spec:?} does not name a commit")]
    UnknownRevision {
        spec: String,
        #[source]
        source: git2::Error,
    },
    #[error("{spec} is in the repository but cannot be read: {source}")]
    DamagedObject {
        spec: String,
        #[source]
        source: git2::Error,
    },
    #[error("{spec} is in the repository but cannot be read: {detail}")]
    Unreadable { spec: String, detail: String },
    #[error("{name:?} is not a valid branch name")]
    InvalidBranchName { name: String },
    #[error("git: cannot {action}")]
    Git2 {
        action: String,
        #[source]
        source: git2::Error,
    },
    #[error("the shared remote {url}: git {action} failed: {detail}")]
    Remote {
        url: String,
        action: String,
        detail: String,
    },
    #[error("git: cannot {action}: git's lock {} is in the way", lock.describe())]
    Locked {
        action: String,
        lock: locks::LockFile,
    },
    #[error("could not run git {command}: {source}")]
    NotRun {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("git {command}: {said}")]
    Refused { command: String, said: String },
    #[error("{path} is still there after its removal")]
    RemovalNotVerified { path: PathBuf },
    #[error("cannot {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Diagnostic for GitError {
    fn class(&self) -> ErrorClass {
        match self {
            GitError::InvalidBranchName { .. } => ErrorClass::Refused,
            _ => ErrorClass::Git,
        }
    }

    fn hints(&self) -> Vec<String> {
        match self {
            GitError::NotARepository { .. } => {
                vec!["run liza inside the project's git repository (git init creates one)".into()]
            }
            GitError::UnbornHead => vec![
                "make a first commit, e.g. git commit --allow-empty -m \"start\", or pass --base <ref>".into(),
            ],
            GitError::UnknownRevision { .. } => vec!["check the name with git rev-parse --verify <ref>".into()],
            GitError::InvalidBranchName { .. } => {
                vec!["use letters, digits, '-', '_' and '/' (see git check-ref-format)".into()]
            }
            GitError::Locked { lock, .. } => vec![lock.fix()],
            GitError::DamagedObject { .. } | GitError::Unreadable { .. } => vec![
                "`git fsck` lists what is damaged; fetch the object again from a clone or remote that has it (git fetch), or restore .git/objects from a backup".into(),
            ],
            GitError::Remote { url, .. } => vec![format!(
                "check that this host reaches {url} (`git ls-remote {url}`); `liza doctor` checks it too"
            )],
            _ => Vec::new(),
        }
    }
}

#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;
