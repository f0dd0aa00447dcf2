//! The planner supervisor's pass (supervisor.md *Planner wake triggers*): run the planner
//! only when a trigger holds; re-check just before launch; after the turn acknowledge what
//! it was shown, and when a condition it cannot acknowledge (no tasks, a completed sprint)
//! still holds, alarm and back off exponentially instead of re-spawning at once.

use std::time::{Duration, Instant};

use super::SupervisorError;
use super::prompt;
use super::session::{Session, Step};
use crate::blackboard::State;
use crate::lifecycle::{self, TriggerKind};
use crate::ops::{self, alarms::Level};

/// The first backoff after an unhandled turn, doubled up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(600);

impl Session {
    pub(super) async fn planner_step(&mut self, state: &State) -> Result<Step, SupervisorError> {
        if let Some((until, _)) = self.planner_backoff
            && until > Instant::now()
        {
            return Ok(Step::Idle);
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
        self.run_turn(None, &root, &text, first.kind.name(), &state)
            .await?;
        let (agent, shown) = (self.agent.clone(), triggers.clone());
        let acknowledged = self
            .blocking(move |project| ops::acknowledge_triggers(project, &agent, &shown))
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
}
