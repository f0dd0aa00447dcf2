//! A round's checks (specs/git.md *A batch*, steps 4–5): each batch's checks in an
//! integration worktree of its own, side by side on threads. When a batch fails, the
//! batches built on it are stopped at once — their checks killed — since their results
//! would mean nothing.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::OpsError;
use super::integration_lock::IntegrationLock;
use super::merge_checks::{MergeChecks, Verdict};
use super::merge_plan::UnitVerdict;
use crate::blackboard::TaskId;
use crate::blackboard::model::{Check, CommitId, SandboxConfig};
use crate::git::Repo;

/// A batch to check.
pub(super) struct Checked {
    /// Its integration worktree.
    pub slot: usize,
    pub tasks: Vec<TaskId>,
    /// Built on the batch before it in the round.
    pub stacked: bool,
    /// The integration tip (or the commit of the batch under it) it was built on.
    pub base: CommitId,
    /// Its last merge commit.
    pub candidate: CommitId,
    /// Each task's `allow_protected`.
    pub allow_protected: Vec<Vec<String>>,
}

/// How a batch's checks ended.
pub(super) struct RoundResult {
    pub verdict: UnitVerdict,
    /// The check log, relative to the project root.
    pub log: Option<String>,
    /// The check that failed, and how.
    pub reason: Option<String>,
}

enum Message {
    Progress(String),
    Done(usize, Result<(Verdict, Option<String>), OpsError>),
}

/// Runs the checks of `jobs` side by side; a failing batch stops those stacked on it.
pub(super) fn check_round(
    root: &Path,
    jobs: &[Checked],
    checks: &[Check],
    sandbox: &SandboxConfig,
    lock: &mut IntegrationLock,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<RoundResult>, OpsError> {
    let stops: Vec<AtomicBool> = jobs.iter().map(|_| AtomicBool::new(false)).collect();
    let groups: Vec<Mutex<Option<i32>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let lock = Mutex::new(lock);
    let mut results: Vec<Option<RoundResult>> = jobs.iter().map(|_| None).collect();
    let mut failure: Option<OpsError> = None;
    std::thread::scope(|scope| {
        let (send, receive) = mpsc::channel::<Message>();
        for (i, job) in jobs.iter().enumerate() {
            let send = send.clone();
            let (stop, group, lock) = (&stops[i], &groups[i], &lock);
            scope.spawn(move || {
                let say = |line: &str| {
                    let _ = send.send(Message::Progress(line.to_owned()));
                };
                let record = |pgid: Option<i32>| {
                    *group.lock().unwrap_or_else(|e| e.into_inner()) = pgid;
                    lock.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .record_check(job.slot, pgid);
                };
                let outcome = Repo::open(root).map_err(OpsError::from).and_then(|repo| {
                    let allowed: Vec<&[String]> =
                        job.allow_protected.iter().map(Vec::as_slice).collect();
                    let mut run =
                        MergeChecks::new(root, &job.tasks, &allowed, checks, sandbox, job.slot);
                    let verdict = run.run(
                        &repo,
                        job.base.as_str(),
                        job.candidate.as_str(),
                        &record,
                        stop,
                        &say,
                    )?;
                    Ok((verdict, run.log_path().map(str::to_owned)))
                });
                let _ = send.send(Message::Done(i, outcome));
            });
        }
        drop(send);
        for message in receive {
            match message {
                Message::Progress(line) => progress(&line),
                Message::Done(i, outcome) => {
                    let (verdict, log, reason) = match outcome {
                        Ok((Verdict::Passed, log)) => (UnitVerdict::Passed, log, None),
                        Ok((Verdict::Stopped, log)) => (UnitVerdict::Stopped, log, None),
                        Ok((Verdict::Failed { reason }, log)) => {
                            (UnitVerdict::Failed, log, Some(reason))
                        }
                        Err(e) => {
                            failure.get_or_insert(e);
                            (UnitVerdict::Stopped, None, None)
                        }
                    };
                    if verdict != UnitVerdict::Passed {
                        // What was built on it means nothing now.
                        for j in stacked_on(jobs, i) {
                            stops[j].store(true, Ordering::SeqCst);
                            if let Some(pgid) = *groups[j].lock().unwrap_or_else(|e| e.into_inner())
                            {
                                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                            }
                        }
                    }
                    results[i] = Some(RoundResult {
                        verdict,
                        log,
                        reason,
                    });
                }
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(results
        .into_iter()
        .map(|r| {
            r.unwrap_or(RoundResult {
                verdict: UnitVerdict::Stopped,
                log: None,
                reason: None,
            })
        })
        .collect())
}

/// The jobs built on job `i`, directly or through others.
fn stacked_on(jobs: &[Checked], i: usize) -> impl Iterator<Item = usize> + '_ {
    (i + 1..jobs.len()).take_while(move |j| jobs[*j].stacked)
}
