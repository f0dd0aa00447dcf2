//! What holds new runs back for money or quota (specs/ledger.md *Budgets*, *Quota*): the
//! sprint's or the agent's day's budget reached, or every backend the supervisor may run
//! limited by its provider (a limit any supervisor recorded, on any host). The runner
//! works out both from the ledger and the store's quota before each look; here they turn
//! into a wait — woken by any state change, so a raised budget is seen at once — said
//! and alarmed once.

use super::{Action, Memory, View, Waiting};
use crate::blackboard::Timestamp;
use crate::ops::alarms::Level;
use crate::supervisor::clock::Now;
use std::time::Duration;

/// What holds new runs back, as the runner found it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spending {
    /// A budget reached.
    pub over_budget: Option<BudgetStop>,
    /// Every backend it may run is limited.
    pub quota: Option<QuotaHold>,
}

/// A sprint's or an agent's day's budget reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetStop {
    /// What was used of what: `sprint sprint-2 used 20.31 USD of its 20 USD budget`.
    pub why: String,
    /// The alarm's key: once per sprint, or per agent and day.
    pub key: String,
    /// When it lifts by itself (a day's budget, at the day's end); `None`: when raised.
    pub until: Option<Timestamp>,
}

/// The usage limit that holds the last backend free of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaHold {
    /// When the first of them resets.
    pub until: Timestamp,
    /// The backends, as `claude (until 15:00, seen by coder-2)`.
    pub what: String,
}

/// How long a budget wait lasts before the supervisor looks again on its own (a state
/// change, a raised budget among them, wakes it before).
const BUDGET_LOOK: Duration = Duration::from_secs(15 * 60);

/// The wait for what holds runs back, if anything does.
pub fn hold(view: &View, memory: &mut Memory, now: Now) -> Option<Vec<Action>> {
    let mut actions = Vec::new();
    let (until, why, said) = if let Some(stop) = &view.spending.over_budget {
        let wait = stop.until.map_or(BUDGET_LOOK, |at| {
            Duration::from_secs(at.seconds_since(now.wall).max(1) as u64).min(BUDGET_LOOK)
        });
        if memory.spending_said.as_deref() != Some(stop.key.as_str()) {
            actions.push(Action::Say(format!(
                "{}: {}; no new run until the budget is raised (config.budget){}",
                view.agent,
                stop.why,
                stop.until
                    .map(|at| format!(" or {} passes", now.clock_text(at)))
                    .unwrap_or_default()
            )));
            actions.push(Action::Alarm {
                level: Level::Warn,
                category: "BUDGET_EXCEEDED".into(),
                message: format!("{}: {}; new runs wait", view.agent, stop.why),
                key: stop.key.clone(),
            });
        }
        (now.at + wait, Waiting::Budget, stop.key.clone())
    } else if let Some(hold) = &view.spending.quota {
        let wait = Duration::from_secs(hold.until.seconds_since(now.wall).max(1) as u64);
        let said = format!("quota:{}", hold.until.unix());
        if memory.spending_said.as_deref() != Some(said.as_str()) {
            actions.push(Action::Say(format!(
                "{}: every backend it may run is limited: {}; waiting",
                view.agent, hold.what
            )));
        }
        (now.at + wait, Waiting::UsageLimit, said)
    } else {
        memory.spending_said = None;
        return None;
    };
    memory.spending_said = Some(said);
    actions.push(Action::Wait {
        until,
        on_change: true,
        why,
    });
    Some(actions)
}
