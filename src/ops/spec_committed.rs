//! Whether a spec file is on the integration branch: every task's worktree starts from its
//! tip, so a spec that is only in the main checkout is a file agents are pointed at and
//! cannot open (specs/lifecycle.md *Plan approval and spec currency*).

use std::path::Path;

use super::OpsError;
use crate::blackboard::model::CommitId;
use crate::git::Repo;
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
    let file = spec_file(spec_ref);
    match repo.file_at(commit, file) {
        Ok(Some(committed)) => {
            let checkout = crate::confine::inside(root, file)
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

/// The refusal for a spec file `branch` does not hold at `tip`; `new_branch` when `init`
/// is about to create the branch there (committing is then all it takes).
pub fn not_committed(spec_ref: &str, branch: &str, tip: &CommitId, new_branch: bool) -> OpsError {
    let file = spec_file(spec_ref);
    let short = &tip[..tip.len().min(8)];
    if new_branch {
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
            "commit it (git add {file} && git commit -m \"the goal's spec\"), then bring it to \
             {branch}: git fetch . HEAD:{branch} (a fast-forward), or merge it there"
        ),
    )
}
