//! The reviewer supervisor's pass: merge what it approved first (the merge pipeline), then
//! claim a review, run the project's `on_review` checks on the review commit, prompt, run
//! the reviewer, and reconcile: a run that changed the worktree voids its verdict; a run
//! without a verdict releases the claim (an alarm after two).

use std::path::Path;
use std::time::{Duration, Instant};

use super::SupervisorError;
use super::memory::CRASH_LOOP;
use super::on_behalf;
use super::prompt::{self, ReviewFacts};
use super::run::{RunEnd, worktree_state};
use super::session::{Session, Step};
use crate::blackboard::model::{State, Task, TaskStatus};
use crate::blackboard::{TaskId, Timestamp};
use crate::error::{Diagnostic, ErrorClass};
use crate::git::{Repo, worktree_dir};
use crate::lifecycle::text_rules::any_match;
use crate::lifecycle::{self, ReviewWork};
use crate::ops::{self, MergeResult, alarms::Level};

impl Session {
    pub(super) async fn reviewer_step(&mut self, state: &State) -> Result<Step, SupervisorError> {
        let now = Timestamp::now();
        // The soonest a review skipped for its backoff may run.
        let mut soonest: Option<Instant> = None;
        for work in lifecycle::reviewer_work(state, &self.agent, now) {
            match work {
                ReviewWork::Merge(task) => {
                    if self.merge(&task).await {
                        return Ok(Step::Worked);
                    }
                }
                ReviewWork::Review(task) => {
                    let memory = self.memory(&task);
                    if !memory.may_run(Instant::now()) {
                        soonest = soonest.min(memory.resume_at).or(memory.resume_at);
                        continue;
                    }
                    let (agent, id) = (self.agent.clone(), task.clone());
                    let claimed = self
                        .write(move |project, actor| ops::claim_review(project, actor, &id, &agent))
                        .await;
                    match claimed {
                        Ok(done) => return self.review(&task, done.value.spec_changed).await,
                        Err(e) if e.superseded() => return Err(e.into()),
                        Err(e) if e.class() == ErrorClass::Refused => continue,
                        Err(e) => {
                            tracing::warn!(task = %task, error = %e, "review claim failed");
                            continue;
                        }
                    }
                }
            }
        }
        if let Some(at) = soonest {
            // A state change ends the wait early; otherwise look again when it may run.
            self.wait(at.saturating_duration_since(Instant::now()))
                .await;
            return Ok(Step::Waited);
        }
        if let Some(at) = lifecycle::reviewer_work_frees_at(state, &self.agent, now) {
            // Another reviewer's claim, or an approver's registration, runs out then.
            self.wait_for_lease(state, at).await;
            return Ok(Step::Waited);
        }
        Ok(Step::Idle)
    }

    /// `--once`: the approvals this supervisor's reviews gave are merged before it exits,
    /// as its next step would have done (an approval left unmerged waits for a restart).
    pub(super) async fn merge_approved(&mut self) {
        let Ok(state) = self.snapshot() else {
            return;
        };
        for work in lifecycle::reviewer_work(&state, &self.agent, Timestamp::now()) {
            if let ReviewWork::Merge(task) = work {
                self.merge(&task).await;
            }
        }
    }

    /// Merges an approved task; `true` when the merge ran (MERGED or INTEGRATION_FAILED).
    async fn merge(&mut self, task: &TaskId) -> bool {
        let console = self.console.clone();
        let id = task.clone();
        let merged = self
            .write(move |project, actor| {
                ops::merge(project, actor, &id, &mut |line| {
                    console.info(&format!("merge {id}: {line}"))
                })
            })
            .await;
        match merged {
            Ok(done) => {
                match &done.value.result {
                    MergeResult::Merged {
                        merge_commit,
                        merge_type,
                        ..
                    } => self
                        .console
                        .info(&format!("{task}: MERGED ({merge_type} {merge_commit})")),
                    MergeResult::IntegrationFailed { kind, reason, .. } => {
                        self.console
                            .info(&format!("{task}: INTEGRATION_FAILED ({kind}): {reason}"));
                    }
                }
                true
            }
            Err(e) => {
                self.console.info(&format!("merge of {task} not done: {e}"));
                false
            }
        }
    }

    /// Whether `task` left review for a coder's rework since `reviewed` was read (a fresh
    /// snapshot: the coder claims before it touches the worktree).
    fn worktree_back_with_coder(&self, task: &TaskId, reviewed: &Task) -> bool {
        self.snapshot().ok().is_some_and(|s| {
            s.task(task).is_some_and(|now| {
                now.iteration > reviewed.iteration
                    || !matches!(
                        now.status,
                        TaskStatus::ReadyForReview | TaskStatus::Approved | TaskStatus::Rejected
                    )
            })
        })
    }

    async fn review(
        &mut self,
        task: &TaskId,
        spec_changed: Option<(String, String)>,
    ) -> Result<Step, SupervisorError> {
        let state = self.snapshot()?;
        let Some(t) = state.task(task).cloned() else {
            return Ok(Step::Worked);
        };
        let workdir = worktree_dir(&self.project.root, task);
        if !workdir.exists() {
            self.release_review(task).await;
            self.alarm(
                Level::Error,
                "WORKTREE_MISSING",
                &format!("{task}: its worktree is missing; the review claim was released"),
                &format!("worktree-missing:{task}:{}", state.revision.unwrap_or(0)),
            );
            self.memory(task).resume_at = Some(Instant::now() + Duration::from_secs(60));
            return Ok(Step::Worked);
        }
        let mut facts = self.review_facts(&state, &t, &workdir).await;
        if !self.backend.runs_commands {
            facts.situation.push_str("\n\n");
            facts.situation.push_str(&on_behalf::no_commands_note(true));
        }
        if let Some((then, now)) = spec_changed {
            facts.spec_changed = ops::spec_change_text(&self.project.root, &t, &then, &now);
        }
        let text = prompt::reviewer(
            &state,
            &self.project.root,
            &self.agent,
            &t,
            &workdir,
            &facts,
        );
        self.console
            .info(&format!("{}: reviewing {task}", self.agent));
        let before = worktree_state(&workdir);
        let (end, mut after_state) = self
            .run_turn(Some(task), &workdir, &text, task.as_str(), &state)
            .await?;
        let mut changed = worktree_state(&workdir) != before;
        if changed && self.worktree_back_with_coder(task, &t) {
            // After a rejection the coder may claim the rework and commit before this run
            // is reaped: the worktree is theirs again, and their work no violation.
            changed = false;
        }
        let review_commit = t.review_commit.as_ref().map(ToString::to_string);
        if !self.backend.runs_commands
            && !changed
            && end == RunEnd::Exited(Some(0))
            && let Some(commit) = review_commit
            && after_state.task(task).is_some_and(|t| {
                t.status == TaskStatus::ReadyForReview
                    && t.reviewing_by.as_ref() == Some(&self.agent)
            })
            && self.verdict_for_agent(task, &commit).await
        {
            after_state = self.snapshot()?;
        }
        let now_task = after_state.task(task);
        let verdict_given = now_task.is_some_and(|t| {
            matches!(t.status, TaskStatus::Approved | TaskStatus::Rejected)
                && t.approved_by.as_ref() == Some(&self.agent)
        });
        // What the blackboard must say comes first (the claim released, a verdict voided);
        // the alarms about it after, so whoever sees an alarm sees the state it describes.
        let still_reviewing = after_state.task(task).is_some_and(|t| {
            t.status == TaskStatus::ReadyForReview && t.reviewing_by.as_ref() == Some(&self.agent)
        });
        let failed_review =
            still_reviewing && end != RunEnd::Signalled && !matches!(end, RunEnd::UsageLimited(_));
        if failed_review {
            self.release_review(task).await;
        }
        self.reconcile_review_exit(task, &end).await;
        if changed {
            let message = format!(
                "{} changed the worktree of {task} while reviewing it",
                self.agent
            );
            if verdict_given {
                let (id, why) = (task.clone(), message.clone());
                let voided = self
                    .write(move |project, actor| ops::void_verdict(project, actor, &id, &why))
                    .await;
                if let Err(e) = voided {
                    tracing::warn!(task = %task, error = %e, "could not void the verdict");
                }
            }
            let key = format!(
                "review-modified:{task}:{}",
                after_state.revision.unwrap_or(0)
            );
            self.role_boundary_violation(&message, Some(task), &key)
                .await;
        }
        if failed_review {
            let m = self.memory(task);
            m.failed_reviews += 1;
            // At least 5 s before this reviewer tries the task again; a crash backoff
            // may ask for longer.
            let soonest = Instant::now() + Duration::from_secs(5);
            m.resume_at = Some(m.resume_at.map_or(soonest, |at| at.max(soonest)));
            let failed = m.failed_reviews;
            if failed >= 2 {
                self.alarm(
                    Level::Warn,
                    "REVIEW_FAILED",
                    &format!(
                        "{}: {failed} review runs of {task} ended without a verdict",
                        self.agent
                    ),
                    &format!("review-failed:{}:{task}:{failed}", self.agent),
                );
            }
        }
        Ok(Step::Worked)
    }

    /// Releases this reviewer's claim on `task`.
    async fn release_review(&self, task: &TaskId) {
        let (id, agent) = (task.clone(), self.agent.clone());
        let released = self
            .write(move |project, actor| ops::release_review_claim(project, actor, &id, &agent))
            .await;
        if let Err(e) = released {
            tracing::warn!(task = %task, error = %e, "could not release the review claim");
        }
    }

    /// The exit-code protocol for a review run: backoffs, a usage limit, and an alarm when
    /// the reviewer crashes 3 times in 5 minutes on the task (its claim is released with
    /// every run that ends without a verdict).
    async fn reconcile_review_exit(&mut self, task: &TaskId, end: &RunEnd) {
        let now = Instant::now();
        match end {
            RunEnd::Exited(Some(0)) => {
                self.memory(task).finished(true);
            }
            RunEnd::Exited(Some(42)) => {
                self.memory(task).graceful_exit(false, now);
            }
            RunEnd::Exited(_) | RunEnd::Failed(_) => {
                if self.memory(task).crashed(now) == CRASH_LOOP {
                    self.alarm(
                        Level::Error,
                        "CRASH_LOOP",
                        &format!(
                            "{}: the reviewer crashed {CRASH_LOOP} times in 5 minutes on {task}; its review claim is released",
                            self.agent
                        ),
                        &crate::monitor::rules::crash_loop_key(
                            self.agent.as_str(),
                            Some(task.as_str()),
                            self.last_run_end.unwrap_or_else(crate::blackboard::Timestamp::now),
                        ),
                    );
                }
            }
            RunEnd::NotStarted(why) => self.agent_not_started(task, why),
            // Handled where the run ended (`run_turn`): the supervisor stops.
            RunEnd::AuthRequired(_) => {}
            RunEnd::UsageLimited(limit) => self.hit_usage_limit(Some(task), limit).await,
            RunEnd::Stalled(_) | RunEnd::TimedOut(_) | RunEnd::Aborted | RunEnd::Signalled => {}
        }
    }

    /// The diff stat, tests, path warnings and on_review checks for the review prompt.
    async fn review_facts(&self, state: &State, t: &Task, workdir: &Path) -> ReviewFacts {
        let (base, head) = (
            t.base_commit.as_ref().map(|c| c.to_string()),
            t.review_commit.as_ref().map(|c| c.to_string()),
        );
        let changed = match (Repo::open(&self.project.root), &base, &head) {
            (Ok(repo), Some(b), Some(h)) => repo.changed_files(b, h).unwrap_or_default(),
            _ => Vec::new(),
        };
        let tests: Vec<&String> = changed
            .iter()
            .filter(|f| any_match(&state.config.test_paths(), f))
            .collect();
        let mut warnings = Vec::new();
        let scope = crate::lifecycle::task_scope::TaskScope::of(t, &state.config);
        for f in changed.iter().filter(|f| !scope.admits(f)) {
            warnings.push(format!("outside what the task may change: {f}"));
        }
        for f in changed
            .iter()
            .filter(|f| any_match(&state.config.protected_paths(), f))
        {
            warnings.push(format!("protected path (allowed by allow_protected): {f}"));
        }
        let checks = self.review_checks(state, workdir).await;
        ReviewFacts {
            diff_stat: if changed.is_empty() {
                "(no files changed)".into()
            } else {
                changed.iter().map(|f| format!("- {f}")).collect::<Vec<_>>().join("\n")
            },
            tests_changed: if tests.is_empty() {
                "NONE".into()
            } else {
                tests.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            },
            path_warnings: warnings.join("\n"),
            checks,
            spec_changed: String::new(),
            situation: t
                .rejection_reason
                .as_ref()
                .map(|r| format!("## Your previous rejection\n{r}\nSay for each earlier blocker whether it is fixed."))
                .unwrap_or_default(),
        }
    }

    /// Runs the `on_review` checks in the worktree (its HEAD is the review commit).
    async fn review_checks(&self, state: &State, workdir: &Path) -> String {
        let checks: Vec<_> = state.config.review_checks().cloned().collect();
        if checks.is_empty() {
            return "(no checks configured with on_review: true)".into();
        }
        if self.backend.runs_review_checks() {
            // The built-in reviewer runs them itself, in process, and reads their output.
            return "(run by the built-in reviewer)".into();
        }
        let dir = workdir.to_path_buf();
        self.blocking(move |_| ops::run_review_checks(&checks, &dir))
            .await
    }
}
