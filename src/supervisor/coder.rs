//! The coder supervisor's pass (lifecycle.md *Claimability and ordering*, *Limits and
//! counters*; supervisor.md *Exit codes*): find work in the six classes, claim it (the
//! worktree, and for an integration fix the tip merged in, come with the claim), count the
//! run, prompt, run, and reconcile — no-progress runs, exit-42 restarts, crash loops,
//! watchdogs — blocking the task when a limit is reached.

use std::time::{Duration, Instant};

use super::SupervisorError;
use super::memory::CRASH_LOOP;
use super::on_behalf;
use super::prompt;
use super::run::{RunEnd, worktree_state};
use super::session::{Session, Step};
use crate::blackboard::model::TaskStatus;
use crate::blackboard::{State, TaskId, Timestamp};
use crate::error::{Diagnostic, ErrorClass};
use crate::git::{Repo, worktree_dir};
use crate::lifecycle::{self, BlockCause, RunStart};
use crate::ops::{self, OpsError};

/// How soon a coder looks again when a task it wanted was locked by another claim.
const BUSY_RETRY: Duration = Duration::from_millis(250);

impl Session {
    pub(super) async fn coder_step(&mut self, state: &State) -> Result<Step, SupervisorError> {
        let now = Timestamp::now();
        let mut candidates: Vec<TaskId> = lifecycle::coder_work(state, &self.agent, now)
            .into_iter()
            .map(|c| c.task)
            .collect();
        if let Some(first) = self.first_task.take() {
            candidates.retain(|t| *t != first);
            candidates.insert(0, first);
        }
        let mut busy = false;
        for task in candidates {
            if let Some(at) = self.memory(&task).resume_at
                && at > Instant::now()
            {
                self.sleep(at - Instant::now()).await;
                return Ok(Step::Waited);
            }
            let (agent, id) = (self.agent.clone(), task.clone());
            let claimed = self
                .write(move |project, actor| ops::claim_for(project, actor, &id, &agent))
                .await;
            match claimed {
                Ok(_) => {
                    self.claim_failures = 0;
                    return self.work_on(&task).await;
                }
                Err(e) if e.superseded() => return Err(e.into()),
                Err(OpsError::TaskBusy { .. }) => busy = true,
                Err(e) if e.class() == ErrorClass::Refused => continue,
                Err(e) => return self.claim_failed(&task, e).await,
            }
        }
        if busy {
            // Another process is claiming it and may yet fail (a coder still waiting on
            // its review, say) without changing the state: no file event would come, so
            // look again shortly instead of sleeping a whole poll interval.
            self.wait(BUSY_RETRY).await;
            return Ok(Step::Waited);
        }
        if let Some(at) = lifecycle::coder_work_frees_at(state, &self.agent, now) {
            // Another coder's task becomes takeable when its lease runs out.
            self.wait_for_lease(state, at).await;
            return Ok(Step::Waited);
        }
        Ok(Step::Idle)
    }

    /// The seed's contention rule: log, wait 1–5 s, retry; the third failure in a row ends
    /// the supervisor (exit 6).
    async fn claim_failed(&mut self, task: &TaskId, e: OpsError) -> Result<Step, SupervisorError> {
        self.claim_failures += 1;
        let detail = format!("{}: {e}", self.agent);
        let id = task.clone();
        let _ = self
            .write(move |project, actor| {
                ops::log_add(project, actor, "claim_failed", &detail, Some(&id))
            })
            .await;
        if self.claim_failures >= 3 {
            return Err(SupervisorError::ClaimsFailing {
                count: self.claim_failures,
                last: e.to_string(),
            });
        }
        let jitter = 1000 + u64::from(std::process::id() % 4000);
        self.sleep(Duration::from_millis(jitter)).await;
        Ok(Step::Worked)
    }

    /// One run of the coder agent on its claimed task.
    async fn work_on(&mut self, task: &TaskId) -> Result<Step, SupervisorError> {
        let (agent, id) = (self.agent.clone(), task.clone());
        let started = self
            .write(move |project, actor| ops::start_run(project, actor, &id, &agent))
            .await?;
        if let RunStart::LimitReached { limit } = started.value {
            self.console
                .info(&format!("{task}: BLOCKED, {limit} runs without approval"));
            return Ok(Step::Worked);
        }
        let state = self.snapshot()?;
        let Some(t) = state.task(task).cloned() else {
            return Ok(Step::Worked);
        };
        let workdir = worktree_dir(&self.project.root, task);
        let mut situation = situation(&state, &t);
        if let Some(undone) = self.memory(task).left_undone.take() {
            situation.push_str("\n\n");
            situation.push_str(&undone);
        }
        if !self.backend.runs_commands {
            situation.push_str("\n\n");
            situation.push_str(&on_behalf::no_commands_note(false));
        }
        let text = prompt::coder(
            &state,
            &self.project.root,
            &self.agent,
            &t,
            &workdir,
            &situation,
        );
        let what = format!("{task}-{}", t.iteration.unwrap_or(0));
        self.console.info(&format!(
            "{}: running the agent on {task} (run {})",
            self.agent,
            t.iteration.unwrap_or(0)
        ));
        let before = worktree_state(&workdir);
        let (end, after_state) = self
            .run_turn(Some(task), &workdir, &text, &what, &state)
            .await?;
        let after = worktree_state(&workdir);
        let mut still_mine = after_state.task(task).is_some_and(|t| {
            t.status == TaskStatus::Claimed && t.assigned_to.as_ref() == Some(&self.agent)
        });
        if still_mine && end == RunEnd::Exited(Some(0)) {
            let committed = after.0.is_some() && after.0 != before.0;
            if self.finish_for_agent(task, &workdir, committed).await {
                still_mine = false;
            }
        }
        let progressed = before != after || !still_mine;
        self.reconcile_coder(task, end, progressed, still_mine, &after_state)
            .await
    }

    async fn reconcile_coder(
        &mut self,
        task: &TaskId,
        end: RunEnd,
        progressed: bool,
        still_mine: bool,
        state: &State,
    ) -> Result<Step, SupervisorError> {
        let threshold = state
            .config
            .exit42_restart_threshold
            .filter(|t| *t > 0)
            .unwrap_or(5) as u32;
        let block = |reason: String| -> (String, Vec<String>) {
            let question = format!("{reason}: should the task be split, clarified or reassigned?");
            (reason, vec![question])
        };
        let mut blocked = None;
        let now = Instant::now();
        match end {
            RunEnd::Exited(Some(0)) => {
                let no_progress = if progressed || !still_mine {
                    self.memory(task).finished(true)
                } else {
                    self.memory(task).finished(false)
                };
                if no_progress >= 3 {
                    blocked = Some((
                        block("no progress in 3 runs".into()),
                        BlockCause::CoderFailure,
                    ));
                }
            }
            // The built-in agent's protocol (builtin-agent.md): 3 is SOFT_FAIL, a run with
            // no result that counts toward the limits; 4 is HARD_FAIL, blocked at once with
            // the run's notes (the coder goes into failed_by).
            RunEnd::Exited(Some(crate::builtin::EXIT_SOFT_FAIL))
                if self.backend.reports_soft_and_hard_failures() =>
            {
                // No result is no progress, whatever the worktree shows.
                if self.memory(task).finished(false) >= 3 {
                    blocked = Some((
                        block("no result in 3 runs of the built-in coder".into()),
                        BlockCause::CoderFailure,
                    ));
                }
            }
            RunEnd::Exited(Some(crate::builtin::EXIT_HARD_FAIL))
                if self.backend.reports_soft_and_hard_failures() && still_mine =>
            {
                let notes: Vec<&str> = self
                    .last_output
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with("liza builtin coder:"))
                    .collect();
                let notes = notes[notes.len().saturating_sub(3)..].join("; ");
                blocked = Some((
                    block(format!("the built-in coder failed hard: {notes}")),
                    BlockCause::CoderFailure,
                ));
            }
            RunEnd::Exited(Some(42)) => {
                let in_a_row = self.memory(task).graceful_exit(progressed, now);
                if in_a_row >= threshold && still_mine {
                    blocked = Some((
                        block(format!("{threshold} exit-42 restarts without progress")),
                        BlockCause::CoderFailure,
                    ));
                }
            }
            RunEnd::Exited(_) | RunEnd::Failed(_) => {
                let crashes = self.memory(task).crashed(now);
                if crashes >= CRASH_LOOP && still_mine {
                    let last = match &end {
                        RunEnd::Exited(Some(c)) => format!("exit {c}"),
                        RunEnd::Failed(why) => why.clone(),
                        _ => "a signal".into(),
                    };
                    blocked = Some((
                        block(format!(
                            "crash loop: {CRASH_LOOP} crashes in 5 minutes (last: {last})"
                        )),
                        BlockCause::CoderFailure,
                    ));
                }
            }
            RunEnd::Stalled(after) if still_mine => {
                blocked = Some((
                    block(format!("watchdog: no progress for {} s", after.as_secs())),
                    BlockCause::CoderFailure,
                ));
            }
            RunEnd::TimedOut(after) if still_mine => {
                blocked = Some((
                    block(format!(
                        "execution timeout: the run took longer than {} s",
                        after.as_secs()
                    )),
                    BlockCause::CoderFailure,
                ));
            }
            RunEnd::Aborted => {
                let dir = worktree_dir(&self.project.root, task);
                if let Ok(repo) = Repo::open(&self.project.root) {
                    let _ = repo.commit_wip(&dir, "the sprint was aborted");
                }
            }
            RunEnd::NotStarted(why) => self.agent_not_started(task, &why),
            // Handled where the run ended (`run_turn`): the supervisor stops.
            RunEnd::AuthRequired(_) => {}
            RunEnd::UsageLimited(limit) => self.hit_usage_limit(Some(task), &limit).await,
            RunEnd::Signalled | RunEnd::Stalled(_) | RunEnd::TimedOut(_) => {}
        }
        if let Some(((reason, questions), cause)) = blocked {
            self.console.info(&format!("{task}: BLOCKED ({reason})"));
            let id = task.clone();
            let result = self
                .write(move |project, actor| {
                    ops::supervisor_block(project, actor, &id, &reason, &questions, cause)
                })
                .await;
            if let Err(e) = result {
                tracing::warn!(task = %task, error = %e, "could not block the task");
            }
            self.memory.remove(task);
        }
        Ok(Step::Worked)
    }
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
