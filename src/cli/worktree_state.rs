//! `liza worktree-state <dir>` (hidden): one of liza's worktrees as its supervisor watches
//! it during a run — its HEAD and its changed files, as JSON. Read in a process of its
//! own, one the supervisor can stop: the live run may put a FIFO where git reads, and git
//! would wait on it for ever (specs/sandbox.md *Reading what a run wrote*).

use std::path::PathBuf;

use super::output::Output;
use super::{CliError, EXIT_OK};

#[derive(clap::Args)]
pub(super) struct WorktreeStateArgs {
    /// The worktree (`.worktrees/<task>`).
    dir: PathBuf,
}

pub(super) fn cmd_worktree_state(args: WorktreeStateArgs, _out: &Output) -> Result<i32, CliError> {
    let head = crate::git::head_of(&args.dir).ok();
    let dirty = crate::git::dirty_files(&args.dir).unwrap_or_default();
    println!(
        "{}",
        serde_json::json!({"head": head.as_ref().map(|c| c.as_str()), "dirty": dirty})
    );
    Ok(EXIT_OK)
}
