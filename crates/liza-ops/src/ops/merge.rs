//! `liza merge <task>` (specs/git.md *Merge*): run by the reviewer's supervisor after approval,
//! by people on the CLI. Under the integration lock for its whole length (merges run one
//! after the other); the state lock only for the short transactions: record
//! `merge_intent`, record the candidate, and MERGED or INTEGRATION_FAILED. The git work
//! and the checks run outside it. Interrupted merges are recovered first.

use crate::blackboard::State;
use serde::Serialize;

use super::integration_lock::IntegrationLock;
use super::merge_checks::{MergeChecks, Verdict};
use super::merge_outcome::{Committed, drift, finish_merged, short};
use super::merge_recovery::{Recovery, RecoveryAction, merged_result, recover_locked};
use super::task_lock::TaskLock;
use super::{
    Authority, OpsError, Project, Transition, dry_run, still_current, supervisor_only, transition,
};
use crate::blackboard::model::{CommitId, FailureKind};
use crate::blackboard::{Actor, TaskId};
use crate::failpoint;
use std::time::Duration;

use crate::git::{
    Candidate, GitError, Published, Repo, SavedWork, integration_worktree_dir, task_branch,
};
use crate::lifecycle::{self, MergeFailure, MergeRecord, MergeStart, Refusal, RuleId};

pub use super::merge_outcome::MergeResult;

/// How many times a merge goes back to build a new candidate when integration moved
/// under it before it gives up.
pub const PUBLISH_RETRIES: u32 = 3;

/// What `liza merge` did.
#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    /// The task merged, or not.
    pub task: TaskId,
    /// How it ended.
    #[serde(flatten)]
    pub result: MergeResult,
    /// Interrupted merges finished or dropped before this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recovered: Vec<Recovery>,
    /// Files the task's worktree still held, saved before its removal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved: Option<SavedWork>,
}

/// `merge <task>`: people and scripts on the CLI (agents refused), or the supervisor.
pub fn merge(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    progress: &mut dyn FnMut(&str),
) -> Result<Transition<MergeReport>, OpsError> {
    supervisor_only(actor, "merge")?;
    let placeholder = CommitId::parse(&"0".repeat(40)).expect("40 zeros are a commit id");
    let probe = dry_run(&project.store, actor, Authority::Supervisor, |s, _, now| {
        let approved = s.task(id).and_then(|t| t.review_commit.clone());
        let approved = approved.unwrap_or_else(|| placeholder.clone());
        lifecycle::begin_merge(s, id, &approved, &placeholder, now).map(|(o, _)| o)
    })?;
    let integration = probe.config.integration_branch().to_owned();
    let repo = Repo::open(&project.root)?;
    refuse_checked_out(&repo, &integration)?;
    let _task_lock = TaskLock::try_acquire(&project.store, id)?;
    let mut lock = IntegrationLock::acquire(
        &project.store,
        id,
        &integration_worktree_dir(&project.root),
        progress,
    )?;
    let mut committed = Committed::default();
    let recovered = recover_locked(
        project,
        actor,
        &repo,
        &integration,
        Some(id),
        &mut committed,
    )?;
    if let Some(done) = recovered
        .iter()
        .find(|r| &r.task == id && r.action == RecoveryAction::Finished)
    {
        let report = MergeReport {
            task: id.clone(),
            result: merged_result(project, id, &done.candidate)?,
            recovered,
            saved: None,
        };
        return Ok(finish(committed, report));
    }
    // Step 2's branch check comes before the intent is recorded, so that a refusal
    // leaves the blackboard untouched; it merges the approved commit, not the branch.
    let snapshot = project.store.snapshot()?;
    // Checks run sandboxed (specs/sandbox.md *Checks*): where `required` cannot be met,
    // the merge is refused before it records anything.
    crate::sandbox::Confinement::for_process(&snapshot.state.config.sandbox())
        .map_err(|e| OpsError::refused(RuleId::SandboxRequired, e.to_string(), e.fix.clone()))?;
    // The approved commit may have been made on another host; integration may have
    // moved there.
    super::shared_git::sync_task(project, &repo, &snapshot.state, id)?;
    super::shared_git::sync_integration(project, &repo, &snapshot.state)?;
    // Nothing is published on a branch that lost merged work (specs/git.md *Integration
    // keeps what was merged*).
    super::integration_check::refuse_if_rewound(project, &repo, &snapshot.state)?;
    let review_commit = snapshot
        .state
        .task(id)
        .and_then(|t| t.review_commit.clone());
    let tip = integration_tip(&repo, &integration)?;
    let approved = match &review_commit {
        Some(review) => approved_commit(&repo, id, review.as_str(), &tip, &mut committed)?,
        // begin_merge refuses a task without a review commit.
        None => placeholder.clone(),
    };
    let start = committed.add(transition(
        &project.store,
        actor,
        Authority::Supervisor,
        |state, _who, now| {
            let (outcome, start) = lifecycle::begin_merge(state, id, &approved, &tip, now)?;
            if Some(&start.review_commit) != review_commit.as_ref() {
                return Err(Refusal::new(
                    RuleId::ReviewCommit,
                    format!("the review_commit of task {id} changed while the merge started"),
                    "run `liza merge` again",
                ));
            }
            Ok((outcome, start))
        },
    )?);
    let config = snapshot.state.config.clone();
    let checks = config.checks.clone().unwrap_or_default();
    let sandbox = config.sandbox();
    let mut run = MergeRun {
        project,
        actor,
        repo: &repo,
        state: &snapshot.state,
        id,
        integration: &integration,
        start: &start,
        approved,
        checks: MergeChecks::new(&project.root, id, &start.allow_protected, &checks, &sandbox),
        committed: &mut committed,
    };
    let ending = match run.attempt(tip, &mut lock, progress) {
        Ok(ending) => ending,
        Err(e) => {
            let reason = format!("merge stopped: {e}");
            let dropped = committed.run(project, actor, |state, now| {
                lifecycle::drop_merge_intent(state, id, &reason, now)
            });
            if let Err(not_dropped) = dropped {
                tracing::warn!(task = %id, error = %not_dropped, "could not drop the merge intent; the next merge recovers it");
            }
            return Err(e);
        }
    };
    let (result, saved) = run.record(ending)?;
    drop(lock);
    let report = MergeReport {
        task: id.clone(),
        result,
        recovered,
        saved,
    };
    Ok(finish(committed, report))
}

fn finish(committed: Committed, report: MergeReport) -> Transition<MergeReport> {
    Transition {
        value: report,
        outcome: committed.outcome,
        revision: committed.revision,
    }
}

/// How the git side of a merge ended.
enum Ending {
    Published {
        candidate: Candidate,
        tip: CommitId,
        retries: u32,
    },
    Failed(MergeFailure),
    /// Merging would change no file of integration: not a merge.
    NothingReaches,
}

struct MergeRun<'a> {
    project: &'a Project,
    actor: &'a Actor,
    repo: &'a Repo,
    /// The state the merge started from (its config: the branch, the shared remote).
    state: &'a State,
    id: &'a TaskId,
    integration: &'a str,
    start: &'a MergeStart,
    /// The approved commit, full SHA.
    approved: CommitId,
    checks: MergeChecks<'a>,
    committed: &'a mut Committed,
}

impl MergeRun<'_> {
    /// Steps 2–4: build the candidate, check it, publish it; back to building against
    /// the new tip when integration moved meanwhile.
    fn attempt(
        &mut self,
        mut tip: CommitId,
        lock: &mut IntegrationLock,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Ending, OpsError> {
        let approved = self.approved.clone();
        let message = format!(
            "Merge {}: {}",
            task_branch(self.id),
            self.start.description.lines().next().unwrap_or("").trim()
        );
        let mut intent = (approved.clone(), tip.clone());
        let mut retries = 0;
        loop {
            progress(&format!(
                "merging {} onto {} ({})",
                task_branch(self.id),
                self.integration,
                short(&tip)
            ));
            let candidate = self.repo.merge_candidate(&tip, &approved, &message)?;
            let commit = match &candidate {
                Candidate::Conflict { paths } => {
                    return Ok(Ending::Failed(MergeFailure {
                        kind: FailureKind::Conflict,
                        paths: paths.clone(),
                        log: None,
                        reason: format!(
                            "conflicts with {} in {}",
                            self.integration,
                            paths.join(", ")
                        ),
                    }));
                }
                Candidate::FastForward { commit } | Candidate::MergeCommit { commit }
                    if self.repo.same_tree(commit, &tip)? =>
                {
                    // The task's commits change nothing integration does not hold: a
                    // merge would record work that is not there (specs/git.md *Merge*).
                    return Ok(Ending::NothingReaches);
                }
                Candidate::FastForward { commit }
                | Candidate::MergeCommit { commit }
                | Candidate::AlreadyMerged { commit } => commit.clone(),
            };
            if intent != (commit.clone(), tip.clone()) {
                let id = self.id;
                self.committed.run(self.project, self.actor, |state, now| {
                    lifecycle::set_merge_candidate(state, id, &commit, &tip, now)
                })?;
                intent = (commit.clone(), tip.clone());
            }
            if !matches!(candidate, Candidate::AlreadyMerged { .. })
                && let Verdict::Failed { reason } =
                    self.checks.run(self.repo, &tip, &commit, lock, progress)?
            {
                return Ok(Ending::Failed(MergeFailure {
                    kind: FailureKind::Tests,
                    paths: Vec::new(),
                    log: self.checks.log_path().map(str::to_owned),
                    reason,
                }));
            }
            failpoint::hit("merge-before-publish");
            still_current(&self.project.store, self.actor)?;
            let reason = format!("liza: merge {}", task_branch(self.id));
            let published = waiting_for_git_locks(self.state, progress, || {
                super::shared_git::publish(
                    self.project,
                    self.repo,
                    self.state,
                    &tip,
                    &commit,
                    &reason,
                )
            })?;
            match published {
                Published::Done => {
                    failpoint::hit("merge-after-publish");
                    return Ok(Ending::Published {
                        candidate,
                        tip,
                        retries,
                    });
                }
                Published::Moved { tip: moved } => {
                    retries += 1;
                    let Some(moved) = moved else {
                        return Err(no_integration(self.integration));
                    };
                    if retries > PUBLISH_RETRIES {
                        return Ok(Ending::Failed(MergeFailure {
                            kind: FailureKind::Conflict,
                            paths: Vec::new(),
                            log: self.checks.log_path().map(str::to_owned),
                            reason: format!(
                                "{} moved {retries} times while the merge was checked; nothing was published",
                                self.integration
                            ),
                        }));
                    }
                    progress(&format!(
                        "{} moved to {} during the merge; merging again",
                        self.integration,
                        short(&moved)
                    ));
                    tip = moved;
                }
            }
        }
    }

    /// Step 5: the worktree saved and removed, then MERGED — or INTEGRATION_FAILED with
    /// the worktree kept.
    fn record(&mut self, ending: Ending) -> Result<(MergeResult, Option<SavedWork>), OpsError> {
        match ending {
            Ending::NothingReaches => {
                let (id, integration) = (self.id, self.integration);
                self.committed.run(self.project, self.actor, |state, now| {
                    lifecycle::nothing_to_merge(state, id, integration, now)
                })?;
                Ok((MergeResult::NothingToMerge, None))
            }
            Ending::Failed(failure) => {
                let id = self.id;
                self.committed.run(self.project, self.actor, |state, now| {
                    lifecycle::integration_failed(state, id, &failure, now)
                })?;
                Ok((
                    MergeResult::IntegrationFailed {
                        kind: failure.kind.as_str().to_owned(),
                        paths: failure.paths,
                        log: failure.log,
                        reason: failure.reason,
                    },
                    None,
                ))
            }
            Ending::Published {
                candidate,
                tip,
                retries,
            } => {
                let merge = MergeRecord {
                    commit: candidate.commit().unwrap_or(&tip).clone(),
                    merge_type: candidate.merge_type().to_owned(),
                    drift_commits: drift(self.repo, self.start.base_commit.as_ref(), &tip),
                    retries,
                };
                let saved = finish_merged(
                    self.project,
                    self.actor,
                    self.repo,
                    self.integration,
                    self.id,
                    &merge,
                    self.committed,
                )?;
                Ok((
                    MergeResult::Merged {
                        merge_commit: merge.commit.to_string(),
                        merge_type: merge.merge_type,
                        drift_commits: merge.drift_commits,
                        retries,
                    },
                    saved,
                ))
            }
        }
    }
}

/// The approved commit, after checking the task branch still points at it. A branch
/// deleted by hand is recreated at the approved commit (nothing was lost).
fn approved_commit(
    repo: &Repo,
    id: &TaskId,
    review: &str,
    integration_tip: &str,
    committed: &mut Committed,
) -> Result<CommitId, OpsError> {
    let branch = task_branch(id);
    // What the task brings is read by git first: a damaged object fails there with a
    // message, where libgit2 would loop for ever (git::cli::unreadable_object). A commit
    // that is not there at all is said below.
    if let Some(why) =
        crate::git::cli::unreadable_object(&repo.common_dir(), review, Some(integration_tip))
        && !why.contains("bad object")
        && !why.contains("unknown revision")
    {
        return Err(OpsError::Git(GitError::Unreadable {
            spec: review.to_owned(),
            detail: why,
        }));
    }
    let approved = repo.resolve_commit(review).map_err(|e| {
        if let GitError::DamagedObject { .. } = e {
            return OpsError::Git(e);
        }
        OpsError::refused(
            RuleId::ReviewCommit,
            format!(
                "the approved commit {review} of task {} is not in the repository",
                id
            ),
            format!(
                "look for the work in {branch} or liza/attic/{}-*; reassign the task to redo it",
                id
            ),
        )
    })?;
    match repo.branch_tip(&branch)? {
        Some(head) if head == approved => Ok(approved),
        Some(head) => Err(OpsError::refused(
            RuleId::BranchMoved,
            format!(
                "{branch} is at {} but the reviewer approved {}: commits made after the approval were not reviewed",
                short(&head),
                short(&approved)
            ),
            format!(
                "to merge what was reviewed, keep the later commits on a branch (git branch <name> {head}), then git -C .worktrees/{} reset --keep {approved}",
                id
            ),
        )),
        None => {
            repo.create_branch(&branch, &approved)?;
            committed.outcome.warnings.push(format!(
                "{branch} was missing; recreated it at the approved commit {}",
                short(&approved)
            ));
            Ok(approved)
        }
    }
}

fn integration_tip(repo: &Repo, integration: &str) -> Result<CommitId, OpsError> {
    repo.branch_tip(integration)?
        .ok_or_else(|| no_integration(integration))
}

fn no_integration(integration: &str) -> OpsError {
    OpsError::refused(
        RuleId::IntegrationBranch,
        format!("the integration branch {integration} does not exist"),
        format!(
            "recreate it where it was (git reflog show {integration}), or set config.integration_branch"
        ),
    )
}

/// Moving the integration branch under a checkout that has it checked out would change
/// that checkout's files and index — a person's, since liza's own are detached.
fn refuse_checked_out(repo: &Repo, integration: &str) -> Result<(), OpsError> {
    if let Some(path) = repo.checkouts_on_branch(integration).first() {
        return Err(OpsError::refused(
            RuleId::IntegrationCheckedOut,
            format!(
                "{integration} is checked out in {}; liza never moves a branch under someone's checkout",
                path.display()
            ),
            format!(
                "switch that checkout to another branch (git -C {} switch main), then merge again",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Runs `step` again while a lock file of git's is in the way, for up to the lock timeout
/// (specs/git.md *Git's locks*): a live git finishes and takes its lock away; one that
/// died left it, and the error names it with its age and the fix. Never a conflict.
pub(super) fn waiting_for_git_locks<T>(
    state: &State,
    progress: &mut dyn FnMut(&str),
    mut step: impl FnMut() -> Result<T, OpsError>,
) -> Result<T, OpsError> {
    let limit = Duration::from_secs(state.config.lock_timeout().unsigned_abs());
    let started = std::time::Instant::now();
    let mut told = false;
    loop {
        match step() {
            // A lock gone by the time it was looked at (a busy writer) is tried again
            // too, but never past twice the timeout.
            Err(OpsError::Git(GitError::Locked { lock, .. }))
                if started.elapsed() < limit
                    || (!lock.present() && started.elapsed() < limit * 2) =>
            {
                if !told && lock.present() {
                    told = true;
                    progress(&format!(
                        "git's lock {} is in the way; waiting up to {} s",
                        lock.describe(),
                        limit.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            done => return done,
        }
    }
}
