//! The planner supervisor's pass (supervisor.md *Planner wake triggers*): run the planner
//! only when a trigger holds; re-check just before launch; after a turn that exited 0
//! acknowledge what it was shown, and when a condition it cannot acknowledge (no tasks, a
//! completed sprint) still holds, alarm and back off exponentially instead of re-spawning
//! at once. A turn that crashed or gave up acknowledges nothing and backs off.

use std::time::{Duration, Instant};

use super::SupervisorError;
use super::memory::CRASH_LOOP;
use super::prompt;
use super::run::RunEnd;
use super::session::{Session, Step};
use crate::blackboard::State;
use crate::lifecycle::{self, TriggerKind};
use crate::ops::{self, alarms::Level};

/// The first backoff after an unhandled turn, doubled up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(600);

impl Session {
    pub(super) async fn planner_step(&mut self, state: &State) -> Result<Step, SupervisorError> {
        let now = Instant::now();
        let until = [
            self.planner_backoff.map(|(until, _)| until),
            self.planner_runs.resume_at,
        ]
        .into_iter()
        .flatten()
        .max();
        if let Some(until) = until
            && until > now
        {
            // A state change ends the wait early, so ABORT and the goal's end are seen.
            self.wait(until - now).await;
            return Ok(Step::Waited);
        }
        let triggers = lifecycle::planner_triggers(state, &self.agent);
        if triggers.is_empty() {
            return Ok(Step::Idle);
        }
        // Re-checked on a fresh snapshot just before launch: it may be resolved already.
        let state = self.snapshot()?;
        let triggers = lifecycle::planner_triggers(&state, &self.agent);
        let Some(first) = triggers.first() else {
            return Ok(Step::Idle);
        };
        let root = self.project.root.clone();
        let text = prompt::planner(&state, &root, &self.agent, &triggers);
        let names: Vec<String> = triggers.iter().map(|t| t.describe()).collect();
        self.console
            .info(&format!("{}: woken for {}", self.agent, names.join(", ")));
        let (end, _) = self
            .run_turn(None, &root, &text, first.kind.name(), &state)
            .await?;
        self.reconcile_planner_exit(&end).await;
        if end != RunEnd::Exited(Some(0)) {
            // Not handled: the triggers stay unacknowledged, so the next turn (after the
            // backoff) is shown them again.
            return Ok(Step::Worked);
        }
        let (agent, shown) = (self.agent.clone(), triggers.clone());
        let acknowledged = self
            .write(move |project, actor| ops::acknowledge_triggers(project, actor, &agent, &shown))
            .await;
        if let Err(e) = acknowledged {
            tracing::warn!(error = %e, "could not record the planner's acknowledgement");
        }
        let after = self.snapshot()?;
        let remaining = lifecycle::planner_triggers(&after, &self.agent);
        let unhandled: Vec<&lifecycle::Trigger> = remaining
            .iter()
            .filter(|r| {
                matches!(
                    r.kind,
                    TriggerKind::InitialPlanning | TriggerKind::SprintComplete
                ) && triggers.iter().any(|t| t.kind == r.kind)
            })
            .collect();
        if unhandled.is_empty() {
            self.planner_backoff = None;
        } else {
            let next = self
                .planner_backoff
                .map_or(FIRST_BACKOFF, |(_, d)| (d * 2).min(MAX_BACKOFF));
            self.planner_backoff = Some((Instant::now() + next, next));
            let what: Vec<String> = unhandled.iter().map(|t| t.describe()).collect();
            self.alarm(
                Level::Warn,
                "PLANNER_UNHANDLED",
                &format!(
                    "{} left {} unhandled; next turn in {} s",
                    self.agent,
                    what.join(", "),
                    next.as_secs()
                ),
                &format!(
                    "planner-unhandled:{}:{}",
                    self.agent,
                    after.revision.unwrap_or(0)
                ),
            );
        }
        Ok(Step::Worked)
    }

    /// The exit-code protocol for a planner turn: exit 42 and crashes back off (a crash
    /// loop alarms); a usage limit stops all turns until the reset.
    async fn reconcile_planner_exit(&mut self, end: &RunEnd) {
        let now = Instant::now();
        match end {
            RunEnd::Exited(Some(0)) => {
                self.planner_runs.finished(true);
            }
            RunEnd::Exited(Some(42)) => {
                self.planner_runs.graceful_exit(false, now);
            }
            // Handled where the run ended (`run_turn`): the supervisor stops.
            RunEnd::AuthRequired(_) => {}
            RunEnd::UsageLimited(limit) => self.hit_usage_limit(None, limit).await,
            RunEnd::Exited(_) | RunEnd::Failed(_) | RunEnd::NotStarted(_) => {
                let crashes = self.planner_runs.crashed(now);
                let wait = self.planner_runs.backoff.unwrap_or_default().as_secs();
                self.console.info(&format!(
                    "{}: the planner's turn failed ({end:?}); next turn in {wait} s",
                    self.agent
                ));
                if crashes == CRASH_LOOP {
                    self.alarm(
                        Level::Error,
                        "CRASH_LOOP",
                        &format!(
                            "{}: the planner crashed {CRASH_LOOP} times in 5 minutes; backing off",
                            self.agent
                        ),
                        &crate::monitor::rules::crash_loop_key(
                            self.agent.as_str(),
                            None,
                            self.last_run_end
                                .unwrap_or_else(crate::blackboard::Timestamp::now),
                        ),
                    );
                }
            }
            RunEnd::Stalled(_) | RunEnd::TimedOut(_) => {
                self.planner_runs.crashed(now);
            }
            RunEnd::Aborted | RunEnd::Signalled => {}
        }
    }
}
