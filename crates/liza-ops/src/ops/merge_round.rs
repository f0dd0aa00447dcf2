//! One batch's checks on a thread of its own (specs/git.md *A batch*, steps 4–5), in an
//! integration worktree of its own, so batches in flight are checked side by side. The
//! merger stops a batch whose base failed: its stop flag ends it before its next check,
//! and its running check's process group is killed.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::OpsError;
use super::integration_lock::IntegrationLock;
use super::merge_checks::{MergeChecks, Verdict};
use crate::blackboard::TaskId;
use crate::blackboard::model::{Check, CommitId, SandboxConfig};
use crate::git::Repo;

/// A batch to check.
pub(super) struct Checked {
    /// Its integration worktree.
    pub slot: usize,
    pub tasks: Vec<TaskId>,
    /// The integration tip (or the commit of the batch under it) it was built on.
    pub base: CommitId,
    /// Its last merge commit.
    pub candidate: CommitId,
    /// Each task's `allow_protected`.
    pub allow_protected: Vec<Vec<String>>,
}

/// How the merger stops a batch's checks from another thread.
#[derive(Clone, Default)]
pub(super) struct Stopper {
    stop: Arc<AtomicBool>,
    group: Arc<Mutex<Option<i32>>>,
}

impl Stopper {
    /// Ends the checks: none starts any more, the running one is killed.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(pgid) = *self.group.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// Runs `job`'s checks (on the calling thread): the verdict and the log's path.
pub(super) fn check(
    root: &Path,
    job: &Checked,
    checks: &[Check],
    sandbox: &SandboxConfig,
    stopper: &Stopper,
    lock: &Mutex<&mut IntegrationLock>,
    say: &(dyn Fn(&str) + Sync),
) -> Result<(Verdict, Option<String>), OpsError> {
    let record = |pgid: Option<i32>| {
        *stopper.group.lock().unwrap_or_else(|e| e.into_inner()) = pgid;
        // Stopped between the flag's last look and the spawn: killed now.
        if let Some(pgid) = pgid
            && stopper.stop.load(Ordering::SeqCst)
        {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        lock.lock()
            .unwrap_or_else(|e| e.into_inner())
            .record_check(job.slot, pgid);
    };
    let repo = Repo::open(root)?;
    let allowed: Vec<&[String]> = job.allow_protected.iter().map(Vec::as_slice).collect();
    let mut run = MergeChecks::new(root, &job.tasks, &allowed, checks, sandbox, job.slot);
    let verdict = run.run(
        &repo,
        job.base.as_str(),
        job.candidate.as_str(),
        &record,
        &stopper.stop,
        say,
    )?;
    Ok((verdict, run.log_path().map(str::to_owned)))
}
