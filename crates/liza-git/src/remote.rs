//! The bare repository hosts share (specs/shared-store.md *Git across hosts*), through the
//! `git` binary with argv only: libgit2 has no lease push, and git's
//! `--force-with-lease=<ref>:<expected>` is the compare-and-swap the integration branch
//! moves by. What git prints was observed on git 2.47: `push --porcelain` reports each
//! ref as `<flag>\t<from>:<to>\t<summary>` with `!` for a refusal — `[rejected] (stale
//! info)` when the lease failed, `[rejected] (non-fast-forward)` — and exits 1; a fetch of
//! a ref the remote lacks exits 128 with "couldn't find remote ref". A ref the remote
//! cannot lock is `[remote rejected] (failed to update ref)`, with git's `Unable to create
//! '<path>.lock': File exists.` on stderr; the same line after `cannot lock ref '<ref>': is
//! at <x> but expected <y>` is a lease lost to a concurrent push.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{GitError, commit_id};
use liza_model::model::CommitId;

/// Where fetched tips are kept: liza's own namespace, never a branch someone checked out.
const FETCHED: &str = "refs/liza/remote";

/// The shared remote, seen from the checkout at `root`.
pub struct Remote {
    root: PathBuf,
    url: String,
}

/// What a push must find on the remote to go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lease {
    /// An ancestor of the pushed commit, or nothing (a plain push).
    FastForward,
    /// Exactly this commit (the integration branch's compare-and-swap).
    At(CommitId),
    /// No such branch yet.
    Absent,
}

/// How a push ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// The remote's branch is where it was pushed.
    Done,
    /// The remote's branch was not what the lease expected.
    Rejected {
        /// git's words.
        reason: String,
    },
}

impl Remote {
    /// The shared remote at `url`, reached from the repository at `root`.
    pub fn new(root: &Path, url: &str) -> Remote {
        Remote {
            root: root.to_path_buf(),
            url: url.to_owned(),
        }
    }

    /// Its address.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn run(&self, args: &[&str]) -> Result<std::process::Output, GitError> {
        Command::new("git")
            .args(args)
            .current_dir(&self.root)
            .env("GIT_TERMINAL_PROMPT", "0")
            // What git prints is read (a lock's `Unable to create …`): untranslated.
            .env("LC_ALL", "C")
            .output()
            .map_err(|e| self.failed(args, &format!("could not run git: {e}")))
    }

    /// The error for a git run that failed: git's lock named when one was in the way —
    /// on the remote for a push, in this checkout for a fetch (specs/git.md *Git's locks*).
    fn failed_on(&self, args: &[&str], stderr: &[u8], on_remote: bool) -> GitError {
        let err = String::from_utf8_lossy(stderr);
        match super::locks::named_in_message(&err) {
            Some(path) => GitError::Locked {
                action: format!("{} {}", args.first().copied().unwrap_or("git"), self.url),
                lock: if on_remote {
                    // Looked at here only when the remote is a directory of this host.
                    let local = std::path::Path::new(&self.url).is_dir();
                    super::locks::LockFile::on_remote(&path, &self.url, local)
                } else {
                    super::locks::LockFile::inspect(&path)
                },
            },
            None => self.failed(args, &err),
        }
    }

    fn failed(&self, args: &[&str], detail: &str) -> GitError {
        GitError::Remote {
            url: self.url.clone(),
            action: args.first().copied().unwrap_or("git").to_owned(),
            detail: detail.trim().to_owned(),
        }
    }

    /// Fetches `branch` into liza's namespace; its tip, or `None` when the remote has no
    /// such branch.
    pub fn fetch(&self, branch: &str) -> Result<Option<CommitId>, GitError> {
        let refspec = format!("+refs/heads/{branch}:{FETCHED}/{branch}");
        let args = ["fetch", "--quiet", "--no-tags", "--", &self.url, &refspec];
        let out = self.run(&args)?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("couldn't find remote ref") {
                return Ok(None);
            }
            return Err(self.failed_on(&args, &out.stderr, false));
        }
        let fetched = format!("{FETCHED}/{branch}");
        let repo =
            git2::Repository::open(&self.root).map_err(|e| self.failed(&args, e.message()))?;
        let oid = repo
            .refname_to_id(&fetched)
            .map_err(|e| self.failed(&args, e.message()))?;
        Ok(Some(commit_id(oid)))
    }

    /// Pushes `commit` to `branch` on the remote if `lease` holds.
    pub fn push(&self, commit: &str, branch: &str, lease: &Lease) -> Result<Pushed, GitError> {
        let target = format!("refs/heads/{branch}");
        let refspec = format!("{commit}:{target}");
        let lease_arg = match lease {
            Lease::FastForward => None,
            Lease::At(expected) => Some(format!("--force-with-lease={target}:{expected}")),
            Lease::Absent => Some(format!("--force-with-lease={target}:")),
        };
        let mut args = vec!["push", "--porcelain", "--quiet"];
        if let Some(lease) = &lease_arg {
            args.push(lease);
        }
        // `--`: whatever the URL says, git reads it as the repository, never an option.
        args.extend(["--", self.url.as_str(), refspec.as_str()]);
        let out = self.run(&args)?;
        let report = String::from_utf8_lossy(&out.stdout);
        if let Some(line) = report
            .lines()
            .find(|l| l.starts_with('!') && l.contains(&target))
        {
            // `[remote rejected] (failed to update ref)` with git's `Unable to create
            // '….lock': File exists`: a lock of git's there, not a lease that failed. (The
            // same line with `cannot lock ref …: is at X but expected Y` is a lease lost
            // to a push that landed meanwhile: a rejection like any other.)
            if line.contains("[remote rejected]")
                && super::locks::named_in_message(&String::from_utf8_lossy(&out.stderr)).is_some()
            {
                return Err(self.failed_on(&args, &out.stderr, true));
            }
            let reason = line.rsplit('\t').next().unwrap_or(line).to_owned();
            return Ok(Pushed::Rejected { reason });
        }
        if !out.status.success() {
            return Err(self.failed_on(&args, &out.stderr, true));
        }
        Ok(Pushed::Done)
    }

    /// Checks that the remote answers (`liza init --git-remote`, `liza doctor`).
    pub fn reachable(&self) -> Result<(), GitError> {
        let args = ["ls-remote", "--quiet", "--heads", "--", &self.url];
        let out = self.run(&args)?;
        if !out.status.success() {
            return Err(self.failed(&args, &String::from_utf8_lossy(&out.stderr)));
        }
        Ok(())
    }
}
