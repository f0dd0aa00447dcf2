//! Git's own lock files (`<ref>.lock`, `index.lock`): git creates one with `O_EXCL`, writes
//! the new content into it and renames it over the file; a git process that dies between
//! the two leaves it behind, and every later writer fails. liza names such a lock — its
//! file, its age, the processes that hold it open — instead of taking the failure for a
//! moved branch or a conflict (specs/git.md *Git's locks*).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A lock file of git's that is in the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockFile {
    /// Where it is.
    pub path: PathBuf,
    /// How long it has been there (by its modification time), if it still is.
    pub age: Option<Duration>,
    /// The processes that hold it open now (`pid name`): a live git at work.
    pub holders: Vec<String>,
    /// The shared remote it is on, when a push there met it.
    pub remote: Option<String>,
    /// Whether this host can see the file (a lock on another host's remote cannot be:
    /// its age and holders are unknown here).
    pub seen_here: bool,
}

impl LockFile {
    /// The lock at `path` as it is now.
    pub fn inspect(path: &Path) -> LockFile {
        let age = std::fs::symlink_metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .map(|at| SystemTime::now().duration_since(at).unwrap_or_default());
        // A process's open file shows as its real path: compare with that.
        let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        LockFile {
            path: path.to_path_buf(),
            holders: if age.is_some() {
                holders(&real)
            } else {
                Vec::new()
            },
            age,
            remote: None,
            seen_here: true,
        }
    }

    /// The lock at `path` that git on the shared remote `url` reported: seen like a
    /// local one when the remote is a directory of this host (`local`), else as git named
    /// it (a file at that path here would be another file).
    pub fn on_remote(path: &Path, url: &str, local: bool) -> LockFile {
        let mut lock = if local {
            LockFile::inspect(path)
        } else {
            LockFile {
                path: path.to_path_buf(),
                age: None,
                holders: Vec::new(),
                remote: None,
                seen_here: false,
            }
        };
        lock.remote = Some(url.to_owned());
        lock
    }

    /// Whether it is still there (one on a remote host is taken to be, until a retry
    /// gets through).
    pub fn present(&self) -> bool {
        self.age.is_some() || !self.seen_here
    }

    /// What it is, for a person: `… (3 min old, no process holds it)`.
    pub fn describe(&self) -> String {
        let place = match &self.remote {
            Some(url) => format!(" on the shared remote {url}"),
            None => String::new(),
        };
        if !self.seen_here {
            return format!(
                "{}{place} (on its host: its age and holders cannot be seen from here)",
                self.path.display()
            );
        }
        let age = match self.age {
            Some(age) => format!("{} s old", age.as_secs()),
            None => "gone now".to_owned(),
        };
        let held = if self.holders.is_empty() {
            "no process holds it open".to_owned()
        } else {
            format!("held open by {}", self.holders.join(", "))
        };
        format!("{}{place} ({age}, {held})", self.path.display())
    }

    /// What to do about it.
    pub fn fix(&self) -> String {
        if !self.seen_here {
            return format!(
                "a git push to that remote that died left it: on the remote's host, remove it (rm '{}') once no push or fetch runs there",
                self.path.display()
            );
        }
        if self.holders.is_empty() {
            format!(
                "a git process that died left it: remove it (rm '{}') once you are sure no git command runs in this repository",
                self.path.display()
            )
        } else {
            "a git command is at work: let it finish (or stop it), and liza goes on".to_owned()
        }
    }
}

/// The lock file a libgit2 error names (`failed to lock file '…/x.lock' for writing`), or
/// the index lock of the repository at `git_dir` when the error is the index's.
pub fn named_by(error: &git2::Error, git_dir: Option<&Path>) -> Option<PathBuf> {
    if error.code() != git2::ErrorCode::Locked {
        return None;
    }
    let message = error.message();
    let quoted = message
        .split('\'')
        .skip(1)
        .step_by(2)
        .find(|part| part.ends_with(".lock"));
    match (quoted, git_dir) {
        (Some(path), _) => Some(PathBuf::from(path)),
        (None, Some(dir)) if error.class() == git2::ErrorClass::Index => {
            Some(dir.join("index.lock"))
        }
        _ => None,
    }
}

/// The lock file git's own message names (`Unable to create '…/x.lock': File exists.`),
/// from a push's or fetch's stderr.
pub fn named_in_message(message: &str) -> Option<PathBuf> {
    let (_, after) = message.split_once("Unable to create '")?;
    let (path, rest) = after.split_once('\'')?;
    (path.ends_with(".lock") && rest.starts_with(": File exists")).then(|| PathBuf::from(path))
}

/// The processes of this host that hold `path` open (from `/proc/<pid>/fd`; those of
/// other users cannot be seen and are not listed).
fn holders(path: &Path) -> Vec<String> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in procs.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        if fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
        {
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            found.push(format!("{pid} {}", comm.trim()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_named_with_its_age_and_the_processes_holding_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.lock");
        assert!(!LockFile::inspect(&path).present());
        std::fs::write(&path, "").unwrap();
        let stale = LockFile::inspect(&path);
        assert!(stale.present());
        assert!(stale.holders.is_empty());
        assert!(
            stale.describe().contains("no process holds it open"),
            "{}",
            stale.describe()
        );
        assert!(stale.fix().contains("rm '"), "{}", stale.fix());
        let open = std::fs::File::open(&path).unwrap();
        let held = LockFile::inspect(&path);
        assert_eq!(held.holders.len(), 1, "{:?}", held.holders);
        assert!(held.holders[0].starts_with(&std::process::id().to_string()));
        drop(open);
    }

    #[test]
    fn the_lock_a_libgit2_error_names_is_found() {
        let e = git2::Error::new(
            git2::ErrorCode::Locked,
            git2::ErrorClass::Os,
            "failed to lock file '/r/.git/refs/heads/integration.lock' for writing: ",
        );
        assert_eq!(
            named_by(&e, None),
            Some(PathBuf::from("/r/.git/refs/heads/integration.lock"))
        );
        let e = git2::Error::new(
            git2::ErrorCode::Locked,
            git2::ErrorClass::Index,
            "the index is locked; this might be due to a concurrent or crashed process",
        );
        assert_eq!(
            named_by(&e, Some(Path::new("/r/.git"))),
            Some(PathBuf::from("/r/.git/index.lock"))
        );
        let other = git2::Error::from_str("not a lock");
        assert_eq!(named_by(&other, Some(Path::new("/r/.git"))), None);
    }
}
