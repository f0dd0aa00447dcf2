//! Whether a spec file is on the integration branch: every task's worktree starts from its
//! tip, so a spec that is only in the main checkout is a file agents are pointed at and
//! cannot open (specs/lifecycle.md *Plan approval and spec currency*).

use std::path::Path;

use super::OpsError;
use crate::blackboard::model::CommitId;
use crate::blackboard::model::Config;
use crate::git::{Remote, Repo};
use crate::lifecycle::{RuleId, spec_file};

/// A spec file at a commit, against the main checkout's copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecAt {
    /// The commit holds the file as the checkout has it.
    Same,
    /// The commit holds the file, but the checkout's copy differs (agents read the
    /// committed one).
    Differs,
    /// The commit does not hold the file.
    Absent,
}

/// Where `spec_ref`'s file stands in `commit` (a `#section` suffix is ignored).
pub fn spec_at(repo: &Repo, root: &Path, commit: &str, spec_ref: &str) -> SpecAt {
    // The path as git names it (`./specs/a.md`, `specs//a.md` are `specs/a.md`).
    let Ok(file) = crate::confine::relative(spec_file(spec_ref)) else {
        return SpecAt::Absent;
    };
    let file = file.to_string_lossy();
    match repo.file_at(commit, &file) {
        Ok(Some(committed)) => {
            let checkout = crate::confine::inside(root, &file)
                .ok()
                .and_then(|path| std::fs::read(path).ok());
            if checkout.as_deref() == Some(committed.as_slice()) {
                SpecAt::Same
            } else {
                SpecAt::Differs
            }
        }
        _ => SpecAt::Absent,
    }
}

/// Where every task's worktree starts: the shared remote's integration tip when there is
/// one (this repository's branch may lag or lead it; the supervisors sync to the
/// remote's), else this repository's branch.
pub fn start_tip(root: &Path, config: &Config) -> Result<Option<CommitId>, OpsError> {
    let branch = config.integration_branch();
    match &config.git_remote {
        Some(url) => Ok(Remote::new(root, url).fetch(branch)?),
        None => Ok(Repo::open(root)?.branch_tip(branch)?),
    }
}

/// Where the integration branch a spec must be on is.
#[derive(Debug, Clone, Copy)]
pub enum Start<'a> {
    /// Neither here nor on the shared remote yet: `init` is about to create it at the
    /// commit it starts from (the `tip` the refusal names).
    NewBranch,
    /// This repository's branch.
    Local,
    /// The shared remote's branch, at this URL.
    Remote(&'a str),
}

/// The way to bring a commit to the integration branch `start` names.
pub fn bring_it(branch: &str, start: Start<'_>) -> String {
    match start {
        Start::Remote(url) => {
            format!("push it to the shared {branch}: git push {url} HEAD:{branch} (a fast-forward)")
        }
        _ => format!(
            "bring it to {branch}: git fetch . HEAD:{branch} (a fast-forward), or merge it there"
        ),
    }
}

/// The refusal for a spec file `branch` does not hold at `tip`.
pub fn not_committed(spec_ref: &str, branch: &str, tip: &CommitId, start: Start<'_>) -> OpsError {
    let file = spec_file(spec_ref);
    let short = &tip[..tip.len().min(8)];
    if let Start::NewBranch = start {
        return OpsError::refused(
            RuleId::SpecCommitted,
            format!(
                "spec file {file} is not committed (commit {short}, where {branch} would start, \
                 does not have it): every task's worktree starts there, so agents would be \
                 pointed at a file they do not have"
            ),
            format!(
                "commit it (git add {file} && git commit -m \"the goal's spec\"), then run `liza init` again"
            ),
        );
    }
    OpsError::refused(
        RuleId::SpecCommitted,
        format!(
            "spec file {file} is not committed on {branch} (at {short}): every task's worktree \
             starts there, so agents would be pointed at a file they do not have"
        ),
        format!(
            "commit it (git add {file} && git commit -m \"the goal's spec\"), then {}",
            bring_it(branch, start)
        ),
    )
}
