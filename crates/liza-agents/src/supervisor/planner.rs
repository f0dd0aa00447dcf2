//! Executing the planner's turns (the policy decides when: `policy::planner`): the
//! triggers re-checked on a fresh snapshot just before launch, the prompt naming them, the
//! run; and the acknowledgement of what it was shown, read back for the policy.

use super::SupervisorError;
use super::policy::{Observation, PlannerTurn};
use super::prompt;
use super::session::Session;
use crate::lifecycle::{self, Trigger};
use crate::ops;

impl Session {
    /// `Action::PlannerTurn`: one turn for the triggers that hold now.
    pub(super) async fn planner_turn(&mut self) -> Result<Observation, SupervisorError> {
        // Re-checked on a fresh snapshot just before launch: it may be resolved already.
        let state = self.snapshot().await?;
        let triggers = lifecycle::planner_triggers(&state, &self.agent);
        let Some(first) = triggers.first() else {
            return Ok(Observation::PlannerTurnEnded(None));
        };
        let (root, agent, shown, prompt_state) = (
            self.project.root.clone(),
            self.agent.clone(),
            triggers.clone(),
            state.clone(),
        );
        let text = self
            .blocking(move |_| prompt::planner(&prompt_state, &root, &agent, &shown))
            .await;
        let names: Vec<String> = triggers.iter().map(|t| t.describe()).collect();
        self.console
            .info(&format!("{}: woken for {}", self.agent, names.join(", ")));
        let root = self.project.root.clone();
        let (end, _) = self
            .run_turn(None, &root, &text, first.kind.name(), &state)
            .await?;
        Ok(Observation::PlannerTurnEnded(Some(PlannerTurn {
            end,
            shown: triggers,
            ended_at: self.last_run_end.unwrap_or_else(|| self.clock.now().wall),
            seed: self.seed(),
        })))
    }

    /// `Action::Acknowledge`: records that the planner was shown `shown`, then reads what
    /// still holds.
    pub(super) async fn acknowledge(
        &mut self,
        shown: Vec<Trigger>,
    ) -> Result<Observation, SupervisorError> {
        let (agent, triggers) = (self.agent.clone(), shown.clone());
        let acknowledged = self
            .write(move |project, actor| {
                ops::acknowledge_triggers(project, actor, &agent, &triggers)
            })
            .await;
        match acknowledged {
            Err(e) if e.superseded() => return Ok(Observation::Superseded(e.to_string())),
            Err(e) => {
                tracing::warn!(error = %e, "could not record the planner's acknowledgement")
            }
            Ok(_) => {}
        }
        let after = self.snapshot().await?;
        Ok(Observation::Acknowledged {
            remaining: lifecycle::planner_triggers(&after, &self.agent),
            shown,
            revision: after.revision.unwrap_or(0),
        })
    }
}
