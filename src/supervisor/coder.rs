//! The coder supervisor's pass (lifecycle.md *Claimability and ordering*, *Limits and
//! counters*; supervisor.md *Exit codes*): find work in the six classes, claim it (the
//! worktree, and for an integration fix the tip merged in, come with the claim), count the
//! run, prompt, run, and reconcile — no-progress runs, exit-42 restarts, crash loops,
//! watchdogs — blocking the task when a limit is reached.

use std::time::{Duration, Instant};

use super::SupervisorError;
use super::prompt;
use super::run::{Boundaries, RunEnd, worktree_state};
use super::session::{Session, Step};
use crate::blackboard::model::TaskStatus;
use crate::blackboard::{Actor, State, TaskId, Timestamp};
use crate::error::{Diagnostic, ErrorClass};
use crate::git::{Repo, worktree_dir};
use crate::lifecycle::{self, BlockCause, RunStart};
use crate::ops::{self, OpsError, alarms::Level};

/// Three crashes within this window on one task block it.
const CRASH_WINDOW: Duration = Duration::from_secs(300);

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
        for task in candidates {
            if let Some(at) = self.memory(&task).resume_at
                && at > Instant::now()
            {
                self.sleep(at - Instant::now()).await;
                return Ok(Step::Worked);
            }
            let (agent, id) = (self.agent.clone(), task.clone());
            let claimed = self
                .blocking(move |project| ops::claim_for(project, &Actor::Human, &id, &agent))
                .await;
            match claimed {
                Ok(_) => {
                    self.claim_failures = 0;
                    return self.work_on(&task).await;
                }
                Err(e) if e.class() == ErrorClass::Refused => continue,
                Err(e) => return self.claim_failed(&task, e).await,
            }
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
            .blocking(move |project| {
                ops::log_add(project, &Actor::Human, "claim_failed", &detail, Some(&id))
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
            .blocking(move |project| ops::start_run(project, &id, &agent))
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
        let situation = situation(&state, &t);
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
        let still_mine = after_state.task(task).is_some_and(|t| {
            t.status == TaskStatus::Claimed && t.assigned_to.as_ref() == Some(&self.agent)
        });
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
        match end {
            RunEnd::Exited(Some(0)) => {
                let m = self.memory(task);
                m.exit42 = 0;
                m.backoff = None;
                if progressed {
                    m.no_progress = 0;
                } else if still_mine {
                    m.no_progress += 1;
                    if m.no_progress >= 3 {
                        blocked = Some((
                            block("no progress in 3 runs".into()),
                            BlockCause::CoderFailure,
                        ));
                    }
                }
            }
            RunEnd::Exited(Some(42)) => {
                let m = self.memory(task);
                if progressed {
                    m.exit42 = 0;
                    m.backoff = None;
                } else {
                    m.exit42 += 1;
                }
                let delay = m.backoff.map_or(Duration::from_secs(2), |d| {
                    (d * 2).min(Duration::from_secs(60))
                });
                m.backoff = Some(delay);
                m.resume_at = Some(Instant::now() + delay);
                if m.exit42 >= threshold && still_mine {
                    blocked = Some((
                        block(format!("{threshold} exit-42 restarts without progress")),
                        BlockCause::CoderFailure,
                    ));
                }
            }
            RunEnd::Exited(code) => {
                if self.usage_limited() {
                    return self.usage_limit(task).await;
                }
                let m = self.memory(task);
                let now = Instant::now();
                m.crashes.retain(|t| now.duration_since(*t) < CRASH_WINDOW);
                m.crashes.push(now);
                let delay = m.backoff.map_or(Duration::from_secs(5), |d| {
                    (d * 2).min(Duration::from_secs(300))
                });
                m.backoff = Some(delay);
                m.resume_at = Some(now + delay);
                let crashes = m.crashes.len();
                if crashes >= 3 && still_mine {
                    let code = code.map_or("a signal".into(), |c| format!("exit {c}"));
                    blocked = Some((
                        block(format!("crash loop: 3 crashes in 5 minutes (last: {code})")),
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
            RunEnd::NotStarted(why) => {
                self.alarm(
                    Level::Error,
                    "AGENT_NOT_STARTED",
                    &format!("{}: the agent could not start: {why}", self.agent),
                    &format!("not-started:{}:{task}", self.agent),
                );
                self.memory(task).resume_at = Some(Instant::now() + Duration::from_secs(30));
            }
            RunEnd::Signalled | RunEnd::Stalled(_) | RunEnd::TimedOut(_) => {}
        }
        if let Some(((reason, questions), cause)) = blocked {
            self.console.info(&format!("{task}: BLOCKED ({reason})"));
            let id = task.clone();
            let result = self
                .blocking(move |project| {
                    ops::supervisor_block(project, &id, &reason, &questions, cause)
                })
                .await;
            if let Err(e) = result {
                tracing::warn!(task = %task, error = %e, "could not block the task");
            }
            self.memory.remove(task);
        }
        Ok(Step::Worked)
    }

    /// Whether the last run's output announced a provider usage or rate limit.
    fn usage_limited(&self) -> bool {
        let tail = self.last_output.to_ascii_lowercase();
        [
            "usage limit",
            "rate limit",
            "quota exceeded",
            "insufficient_quota",
            "resource_exhausted",
            "limit reached",
        ]
        .iter()
        .any(|m| tail.contains(m))
    }

    /// Provider quota: WIP commit, alarm, sleep until the reset (30 min), no failed_by.
    async fn usage_limit(&mut self, task: &TaskId) -> Result<Step, SupervisorError> {
        let dir = worktree_dir(&self.project.root, task);
        if let Ok(repo) = Repo::open(&self.project.root) {
            let _ = repo.commit_wip(&dir, "a provider usage limit");
        }
        let revision = self.snapshot().ok().and_then(|s| s.revision).unwrap_or(0);
        self.alarm(
            Level::Error,
            "PROVIDER_QUOTA_EXHAUSTED",
            &format!(
                "{}: the provider reports a usage limit; sleeping 30 min",
                self.agent
            ),
            &format!("quota:{}:{revision}", self.agent),
        );
        self.memory(task).resume_at = Some(Instant::now() + Duration::from_secs(1800));
        Ok(Step::Worked)
    }

    /// Compares the role boundaries before and after a run; a violation is logged and
    /// raises an alarm.
    pub(super) fn check_boundaries(
        &self,
        before: &Boundaries,
        state: &State,
        task: Option<&TaskId>,
    ) {
        let after = Boundaries::read(&self.project.root, state);
        let changes = before.changes(&after);
        if changes.is_empty() {
            return;
        }
        let message = format!(
            "{} broke a role boundary: {}",
            self.agent,
            changes.join("; ")
        );
        let key = format!("boundary:{}:{}", self.agent, state.revision.unwrap_or(0));
        self.alarm(Level::Error, "ROLE_BOUNDARY", &message, &key);
        let project = self.project.clone();
        let task = task.cloned();
        let _ = ops::log_add(
            &project,
            &Actor::Human,
            "role_boundary_violation",
            &message,
            task.as_ref(),
        );
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
