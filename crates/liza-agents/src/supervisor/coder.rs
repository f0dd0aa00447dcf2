//! Executing the coder's work (the policy chose the task: `policy::coder`): claim it (the
//! worktree, and for an integration fix the tip merged in, come with the claim), count the
//! run, prompt, run the agent, and report what the run did — progress, whether the task is
//! still the agent's — for the policy to reconcile.

use super::SupervisorError;
use super::policy::on_behalf;
use super::policy::{ClaimResult, CoderRun, Observation, OnBehalf};
use super::prompt;
use super::run::worktree_state;
use super::session::Session;
use crate::blackboard::model::TaskStatus;
use crate::blackboard::{State, TaskId};
use crate::error::{Diagnostic, ErrorClass};
use crate::git::worktree_dir;
use crate::lifecycle::RunStart;
use crate::ops::{self, OpsError};

impl Session {
    /// `Action::Work`: claims `task` for the agent and runs it once.
    pub(super) async fn work(&mut self, task: TaskId) -> Result<Observation, SupervisorError> {
        let (agent, id, leases) = (self.agent.clone(), task.clone(), self.leases());
        let claimed = self
            .write(move |project, actor| {
                ops::claim_for(
                    project,
                    actor,
                    &id,
                    &agent,
                    ops::LeaseCheck::Observed(&leases),
                )
            })
            .await;
        let claim = match claimed {
            Ok(_) => return self.run_claimed(task).await,
            Err(e) if e.superseded() => return Ok(Observation::Superseded(e.to_string())),
            Err(OpsError::TaskBusy { .. }) => ClaimResult::Busy,
            Err(e) if e.class() == ErrorClass::Refused => ClaimResult::Refused,
            Err(e) => ClaimResult::Failed {
                why: e.to_string(),
                seed: self.seed(),
            },
        };
        Ok(Observation::ClaimEnded { task, claim })
    }

    /// One run of the coder agent on its claimed task.
    async fn run_claimed(&mut self, task: TaskId) -> Result<Observation, SupervisorError> {
        let used = self.task_spending(&task).await;
        let (agent, id) = (self.agent.clone(), task.clone());
        let started = self
            .write(move |project, actor| ops::start_run(project, actor, &id, &agent, used.as_ref()))
            .await?;
        match started.value {
            RunStart::LimitReached { limit } => {
                return Ok(Observation::IterationLimit { task, limit });
            }
            RunStart::OverBudget { reason } => {
                return Ok(Observation::OverBudget { task, reason });
            }
            RunStart::Launch { .. } => {}
        }
        let state = self.snapshot().await?;
        let Some(t) = state.task(&task).cloned() else {
            return Ok(Observation::Look);
        };
        // A git the last run's end killed mid-commit left its locks: every commit of this
        // run would fail on them (specs/git.md *Git's locks*).
        let (id, quiet_for) = (task.clone(), self.clock.now().at.since(self.quiet_since));
        let cleared = self
            .blocking(move |project| {
                Ok::<_, OpsError>(
                    crate::git::Repo::open(&project.root)
                        .map(|repo| repo.clear_stale_commit_locks(&id, quiet_for))
                        .unwrap_or_default(),
                )
            })
            .await?;
        for lock in cleared {
            self.console.info(&format!(
                "{}: removed git's stale lock {} before the run",
                self.agent,
                lock.describe()
            ));
        }
        let workdir = worktree_dir(&self.project.root, &task);
        let mut situation = situation(&state, &t);
        if let Some(undone) = self.memory.task(&task).left_undone.take() {
            situation.push_str("\n\n");
            situation.push_str(&undone);
        }
        if !self.backend.runs_commands {
            situation.push_str("\n\n");
            situation.push_str(&on_behalf::no_commands_note(false));
        }
        let (root, agent_id, t2, dir) = (
            self.project.root.clone(),
            self.agent.clone(),
            t.clone(),
            workdir.clone(),
        );
        let prompt_state = state.clone();
        let text = self
            .blocking(move |_| {
                prompt::coder(&prompt_state, &root, &agent_id, &t2, &dir, &situation)
            })
            .await;
        let what = format!("{task}-{}", t.iteration.unwrap_or(0));
        self.console.info(&format!(
            "{}: running the agent on {task} (run {})",
            self.agent,
            t.iteration.unwrap_or(0)
        ));
        let before = self.worktree_state(&workdir).await;
        let (end, after_state) = self
            .run_turn(Some(&task), &workdir, &text, &what, &state)
            .await?;
        let after = self.worktree_state(&workdir).await;
        if after.0 != before.0 {
            // Commits of this run reach the shared remote: if this host dies, the task's
            // next owner finds them there.
            let id = task.clone();
            self.blocking(move |project| ops::push_task_after_run(project, &id))
                .await;
        }
        let still_mine = after_state.task(&task).is_some_and(|t| {
            t.status == TaskStatus::Claimed && t.assigned_to.as_ref() == Some(&self.agent)
        });
        let committed = after.0.is_some() && after.0 != before.0;
        let progressed = before != after || !still_mine;
        Ok(Observation::CoderRunEnded(CoderRun {
            task,
            end,
            progressed,
            still_mine,
            committed,
            dirty: after.1,
            on_behalf: None,
            output_tail: self.last_output.clone(),
            ended_at: self.last_run_end.unwrap_or_else(|| self.clock.now().wall),
            seed: self.seed(),
        }))
    }

    /// `Action::SubmitForAgent`: runs the `on_review` checks in the worktree, then submits
    /// as the agent; reports the run again with what came of it.
    pub(super) async fn submit_for_agent(&mut self, mut run: CoderRun) -> Observation {
        run.on_behalf = Some(match self.checked_submission(&run.task).await {
            Ok(()) => {
                run.still_mine = false;
                run.progressed = true;
                OnBehalf::Done
            }
            Err(why) => OnBehalf::Refused(why.to_string()),
        });
        Observation::CoderRunEnded(run)
    }

    async fn checked_submission(&mut self, task: &TaskId) -> Result<(), NotSubmitted> {
        let state = self.snapshot().await.map_err(NotSubmitted::Unread)?;
        let checks: Vec<_> = state.config.review_checks().cloned().collect();
        let dir = worktree_dir(&self.project.root, task);
        let sandbox = state.config.sandbox();
        let failed = self
            .blocking(move |project| {
                let jail = crate::sandbox::Jail::for_checks(&project.root, &dir, &sandbox);
                checks
                    .iter()
                    .filter_map(|c| ops::run_check(c, &dir, &jail))
                    .filter(|run| !run.passed)
                    .map(|run| {
                        let tail: Vec<&str> = run.output.lines().rev().take(20).collect();
                        let tail: Vec<&str> = tail.into_iter().rev().collect();
                        format!("the check {} {}:\n{}", run.name, run.exit, tail.join("\n"))
                    })
                    .collect::<Vec<_>>()
            })
            .await;
        if !failed.is_empty() {
            return Err(NotSubmitted::ChecksFailed(failed.join("\n")));
        }
        let actor = self.as_agent();
        let id = task.clone();
        let submitted = self
            .blocking(move |project| ops::submit_for_review(project, &actor, &id, None))
            .await
            .map_err(NotSubmitted::Refused)?;
        self.console.info(&format!(
            "{}: submitted {task} for review on the agent's behalf ({})",
            self.agent, submitted.value
        ));
        Ok(())
    }

    /// A worktree's HEAD and uncommitted files, read off the runtime's thread.
    pub(super) async fn worktree_state(
        &self,
        dir: &std::path::Path,
    ) -> (Option<crate::blackboard::model::CommitId>, Vec<String>) {
        let dir = dir.to_path_buf();
        self.blocking(move |_| worktree_state(&dir)).await
    }
}

/// Why liza did not submit for an agent that cannot run commands.
#[derive(Debug, thiserror::Error)]
enum NotSubmitted {
    /// The blackboard could not be read.
    #[error("{0}")]
    Unread(SupervisorError),
    /// A review check failed: each one's name, exit and last lines.
    #[error("{0}")]
    ChecksFailed(String),
    /// The submission was refused.
    #[error("{0}")]
    Refused(OpsError),
}

/// Why this run happens, for the prompt.
fn situation(state: &State, t: &crate::blackboard::model::Task) -> String {
    let mut parts = Vec::new();
    if let Some(reason) = &t.rejection_reason {
        parts.push(format!(
            "## The reviewer rejected the last submission\n{reason}\nAddress every blocker."
        ));
    }
    if t.integration_fix == Some(true) {
        let failure = t.integration_failure.as_ref();
        let kind = failure.map_or("unknown", |f| f.kind.as_str());
        let paths = failure
            .and_then(|f| f.paths.clone())
            .unwrap_or_default()
            .join(", ");
        parts.push(format!(
            "## Integration fix\nThe last merge failed ({kind}{}). liza merged the current integration branch into your task branch; resolve any conflict markers, make the checks pass, commit, and submit again.{}",
            if paths.is_empty() { String::new() } else { format!(" in {paths}") },
            failure.and_then(|f| f.log.clone()).map(|l| format!(" The check log is {l}.")).unwrap_or_default()
        ));
    }
    if t.handoff_pending == Some(true)
        && let Some(h) = state.handoff.as_ref().and_then(|h| h.get(&t.id))
    {
        parts.push(format!(
            "## Resume from the handoff\n{}\nNext: {}",
            h.summary.clone().unwrap_or_default(),
            h.next_action.clone().unwrap_or_default()
        ));
    }
    if parts.is_empty() {
        "## First run on this task".into()
    } else {
        parts.join("\n\n")
    }
}
