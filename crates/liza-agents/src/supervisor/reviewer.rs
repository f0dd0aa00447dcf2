//! Executing the reviewer's work (the policy chose it: `policy::reviewer`): merge an
//! approved task (the merge pipeline), or claim a review, run the project's `on_review`
//! checks on the review commit, prompt, run the reviewer, and report what the run did —
//! the verdict, whether it changed the worktree — for the policy to reconcile.

use std::path::Path;

use super::SupervisorError;
use super::policy::on_behalf;
use super::policy::{ClaimResult, Observation, OnBehalf, ReviewRun};
use super::prompt::{self, ReviewFacts};
use super::session::Session;
use crate::blackboard::TaskId;
use crate::blackboard::model::{State, Task, TaskStatus};
use crate::error::{Diagnostic, ErrorClass};
use crate::git::{Repo, worktree_dir};
use crate::lifecycle::Verdict;
use crate::lifecycle::text_rules::any_match;
use crate::ops;

impl Session {
    /// `Action::Review`: claims the review of `task` and runs the reviewer once.
    pub(super) async fn claim_and_review(
        &mut self,
        task: TaskId,
    ) -> Result<Observation, SupervisorError> {
        let (agent, id, leases) = (self.agent.clone(), task.clone(), self.leases());
        let claimed = self
            .write(move |project, actor| {
                ops::claim_review(
                    project,
                    actor,
                    &id,
                    &agent,
                    ops::LeaseCheck::Observed(&leases),
                )
            })
            .await;
        match claimed {
            Ok(done) => self.review(task, done.value.spec_changed).await,
            Err(e) if e.superseded() => Ok(Observation::Superseded(e.to_string())),
            Err(e) if e.class() == ErrorClass::Refused => Ok(Observation::ReviewClaimEnded {
                task,
                claim: ClaimResult::Refused,
            }),
            Err(e) => Ok(Observation::ReviewClaimEnded {
                task,
                claim: ClaimResult::Failed {
                    why: e.to_string(),
                    seed: self.seed(),
                },
            }),
        }
    }

    /// `Action::Merge`: merges the queue up to an approved task, on a thread of its own
    /// (the reviewer goes on reviewing while the checks run). A merge this supervisor has
    /// at work already takes the task; another merger's too (it drains the queue). The
    /// thread wakes the loop when it ends, so an approval that came meanwhile is merged.
    pub(super) async fn merge(&mut self, task: TaskId) -> Observation {
        if self
            .background_merge
            .as_ref()
            .is_some_and(|m| !m.is_finished())
        {
            return Observation::MergeEnded { task, ran: false };
        }
        if let Some(done) = self.background_merge.take() {
            let _ = done.join();
        }
        // Another merger at work drains the queue, this task with it, and looks at the
        // queue again once it lets the lock go: nothing to start here.
        let project = self.project.clone();
        if crate::off_runtime::off_runtime(move || ops::merge_running(&project.store)).await {
            return Observation::MergeEnded { task, ran: false };
        }
        let (project, actor, console) = (self.project.clone(), self.actor(), self.console.clone());
        let (stop, wake, id) = (self.stop.clone(), self.wake.notifier(), task.clone());
        let started = std::thread::Builder::new()
            .name("liza-merge".into())
            .spawn(move || {
                let merged =
                    ops::merge(&project, &actor, None, ops::MergeWait::Leave, &mut |line| {
                        console.info(&format!("merge {id}: {line}"))
                    });
                match merged {
                    Ok(done) => {
                        for t in &done.value.tasks {
                            console.info(&format!("{}: {}", t.task, t.result.describe()));
                        }
                    }
                    Err(e) if e.superseded() => stop.supersede(e.to_string()),
                    Err(e) => console.info(&format!("merge of {id} not done: {e}")),
                }
                wake.notify_one();
            });
        match started {
            Ok(handle) => self.background_merge = Some(handle),
            Err(e) => self
                .console
                .info(&format!("merge of {task} not started: no thread ({e})")),
        }
        Observation::MergeEnded { task, ran: false }
    }

    /// Whether `task` left review for a coder's rework since `reviewed` was read (a fresh
    /// snapshot: the coder claims before it touches the worktree).
    async fn worktree_back_with_coder(&self, task: &TaskId, reviewed: &Task) -> bool {
        self.snapshot().await.ok().is_some_and(|s| {
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
        task: TaskId,
        spec_changed: Option<(String, String)>,
    ) -> Result<Observation, SupervisorError> {
        let state = self.snapshot().await?;
        let Some(t) = state.task(&task).cloned() else {
            return Ok(Observation::Look);
        };
        // Work done on another host is fetched from the shared remote.
        let (id, fetch_state) = (task.clone(), state.clone());
        if let Err(e) = self
            .blocking(move |project| ops::fetch_task_worktree(project, &fetch_state, &id))
            .await
        {
            self.console
                .info(&format!("{task}: could not fetch its branch: {e}"));
        }
        let workdir = worktree_dir(&self.project.root, &task);
        let there = workdir.clone();
        if !crate::off_runtime::off_runtime(move || there.exists()).await {
            return Ok(Observation::WorktreeMissing {
                task,
                revision: state.revision.unwrap_or(0),
            });
        }
        let mut facts = self.review_facts(&state, &t, &workdir).await;
        if !self.backend.runs_commands {
            facts.situation.push_str("\n\n");
            facts.situation.push_str(&on_behalf::no_commands_note(true));
        }
        if let Some((then, now)) = spec_changed {
            let t2 = t.clone();
            facts.spec_changed = self
                .blocking(move |project| ops::spec_change_text(project, &t2, &then, &now))
                .await;
        }
        let (root, agent, t2, dir, prompt_state) = (
            self.project.root.clone(),
            self.agent.clone(),
            t.clone(),
            workdir.clone(),
            state.clone(),
        );
        let text = self
            .blocking(move |_| prompt::reviewer(&prompt_state, &root, &agent, &t2, &dir, &facts))
            .await;
        self.console
            .info(&format!("{}: reviewing {task}", self.agent));
        let before = self.worktree_state(&workdir).await;
        let (end, after_state) = self
            .run_turn(Some(&task), &workdir, &text, task.as_str(), &state)
            .await?;
        let mut changed = self.worktree_state(&workdir).await != before;
        if changed && self.worktree_back_with_coder(&task, &t).await {
            // After a rejection the coder may claim the rework and commit before this run
            // is reaped: the worktree is theirs again, and their work no violation.
            changed = false;
        }
        let mut run = ReviewRun {
            task,
            end,
            still_reviewing: false,
            verdict_given: false,
            changed_worktree: changed,
            review_commit: t.review_commit.as_ref().map(ToString::to_string),
            output_tail: self.last_output.clone(),
            on_behalf: None,
            revision: 0,
            ended_at: self.last_run_end.unwrap_or_else(|| self.clock.now().wall),
            seed: self.seed(),
        };
        self.review_outcome(&mut run, &after_state);
        Ok(Observation::ReviewRunEnded(run))
    }

    /// Where the review stands on the blackboard after the run: the verdict given, the
    /// claim still held.
    fn review_outcome(&self, run: &mut ReviewRun, state: &State) {
        let task = state.task(&run.task);
        run.verdict_given = task.is_some_and(|t| {
            matches!(t.status, TaskStatus::Approved | TaskStatus::Rejected)
                && t.approved_by.as_ref() == Some(&self.agent)
        });
        run.still_reviewing = task.is_some_and(|t| {
            t.status == TaskStatus::ReadyForReview && t.reviewing_by.as_ref() == Some(&self.agent)
        });
        run.revision = state.revision.unwrap_or(0);
    }

    /// `Action::VerdictForAgent`: records the verdict line of the reviewer's answer as the
    /// reviewer; reports the run again with what came of it.
    pub(super) async fn verdict_for_agent(
        &mut self,
        mut run: ReviewRun,
        verdict: Verdict,
        commit: String,
    ) -> Observation {
        let word = match verdict {
            Verdict::Approve => "approved",
            Verdict::Reject { .. } => "rejected",
        };
        let (actor, id) = (self.as_agent(), run.task.clone());
        let recorded = self
            .blocking(move |project| ops::submit_verdict(project, &actor, &id, &verdict, &commit))
            .await;
        run.on_behalf = Some(match recorded {
            Ok(_) => {
                self.console.info(&format!(
                    "{}: {} {word} (the verdict line of the agent's answer)",
                    self.agent, run.task
                ));
                OnBehalf::Done
            }
            Err(e) => OnBehalf::Refused(e.to_string()),
        });
        match self.snapshot().await {
            Ok(after) => self.review_outcome(&mut run, &after),
            Err(e) => {
                // What was recorded is known without reading it back.
                tracing::warn!(error = %e, "cannot read the state after the verdict");
                if run.on_behalf == Some(OnBehalf::Done) {
                    run.verdict_given = true;
                    run.still_reviewing = false;
                }
            }
        }
        Observation::ReviewRunEnded(run)
    }

    /// Releases this reviewer's claim on `task`.
    pub(super) async fn release_review(&self, task: &TaskId) {
        let (id, agent) = (task.clone(), self.agent.clone());
        let released = self
            .write(move |project, actor| ops::release_review_claim(project, actor, &id, &agent))
            .await;
        if let Err(e) = released {
            tracing::warn!(task = %task, error = %e, "could not release the review claim");
        }
    }

    /// The diff stat, tests, path warnings and on_review checks for the review prompt.
    async fn review_facts(&self, state: &State, t: &Task, workdir: &Path) -> ReviewFacts {
        let (base, head) = (
            t.base_commit.as_ref().map(|c| c.to_string()),
            t.review_commit.as_ref().map(|c| c.to_string()),
        );
        // git on the blocking pool, never on the runtime.
        let (b, h) = (base.clone(), head.clone());
        let changed = self
            .blocking(move |project| match (Repo::open(&project.root), &b, &h) {
                (Ok(repo), Some(b), Some(h)) => repo.changed_files(b, h).unwrap_or_default(),
                _ => Vec::new(),
            })
            .await;
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
        let sandbox = state.config.sandbox();
        self.blocking(move |project| {
            let jail = crate::sandbox::Jail::for_checks(&project.root, &dir, &sandbox);
            ops::run_review_checks(&checks, &dir, &jail)
        })
        .await
    }
}
