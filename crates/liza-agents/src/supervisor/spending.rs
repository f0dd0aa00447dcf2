//! Money and quota before each look (specs/ledger.md *Budgets*, *Quota*, *Fallbacks*):
//! the usage limits recorded in the store — by any supervisor, on any host — pick the
//! backend to run (the first of the chain none holds) or make the supervisor wait for the
//! first reset; the ledger against `config.budget` says whether the sprint or this agent's
//! day has spent its budget. And a limit a run hit is recorded for everyone.

use liza_model::ledger::{self, Totals};
use liza_model::quota::{self, QuotaHit};

use super::policy::spending::{BudgetStop, QuotaHold, Spending};
use super::session::Session;
use crate::backend::signals::UsageLimit;
use crate::blackboard::{State, TaskId, Timestamp};
use std::time::Duration;

impl Session {
    /// What holds new runs back now, the backend to run switched to the first free one.
    pub(super) async fn spending(&mut self, state: &State) -> Spending {
        let now = self.clock.now().wall;
        self.task_budget = state
            .config
            .budget
            .as_ref()
            .is_some_and(|b| b.task.is_some());
        Spending {
            quota: self.choose_backend(now).await,
            over_budget: self.budget_stop(state, now).await,
        }
    }

    /// Runs the first backend of the chain no usage limit holds; `None` when one is free,
    /// else the hold of the first reset.
    async fn choose_backend(&mut self, now: Timestamp) -> Option<QuotaHold> {
        let stored = self.blocking(|project| project.store.quotas()).await;
        let mut hits = match stored {
            Ok(hits) => hits,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the shared usage limits");
                Vec::new()
            }
        };
        hits.extend(self.local_quota.iter().cloned());
        let held: Vec<Option<&QuotaHit>> = self
            .backends
            .iter()
            .zip(&self.accounts)
            .map(|(b, account)| quota::holding(&hits, &b.name, account, now))
            .collect();
        let Some(free) = held.iter().position(Option::is_none) else {
            let first = held.iter().flatten().min_by_key(|h| h.resets_at)?;
            let what = held
                .iter()
                .flatten()
                .map(|h| {
                    format!(
                        "{} (until {}, seen by {})",
                        h.backend,
                        self.clock.now().clock_text(h.resets_at),
                        h.seen_by
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            return Some(QuotaHold {
                until: first.resets_at,
                what,
            });
        };
        if free != self.in_use {
            let why = match held.get(self.in_use).copied().flatten() {
                Some(hit) => format!(
                    "{} is limited until {} (seen by {})",
                    hit.backend,
                    self.clock.now().clock_text(hit.resets_at),
                    hit.seen_by
                ),
                None => format!("{}'s limit has reset", self.backends[free].name),
            };
            self.console.info(&format!(
                "{}: {why}; running {} now",
                self.agent, self.backends[free].name
            ));
            self.in_use = free;
            self.backend = self.backends[free].clone();
            self.pulse.set_cli(&self.backend.name);
        }
        None
    }

    /// The sprint's or this agent's day's budget, when reached.
    async fn budget_stop(&self, state: &State, now: Timestamp) -> Option<BudgetStop> {
        let budget = state.config.budget.clone()?;
        if budget.sprint.is_none() && budget.agent_per_day.is_none() {
            return None;
        }
        let entries = match self.blocking(|project| project.store.ledger()).await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the ledger for the budgets");
                return None;
            }
        };
        let sprint = state.sprint.id.clone();
        if let Some(limit) = &budget.sprint {
            let used = ledger::total(
                entries
                    .iter()
                    .filter(|e| e.sprint.as_ref() == Some(&sprint)),
            );
            if let Some(over) = ledger::over_budget(limit, &used) {
                return Some(BudgetStop {
                    why: format!("sprint {sprint} used {over}"),
                    key: format!("budget:sprint:{sprint}"),
                    until: None,
                });
            }
        }
        if let Some(limit) = &budget.agent_per_day {
            let day = day_of(now);
            let agent = self.agent.as_str();
            let used = ledger::total(
                entries
                    .iter()
                    .filter(|e| e.agent == agent && e.day() == day),
            );
            if let Some(over) = ledger::over_budget(limit, &used) {
                return Some(BudgetStop {
                    why: format!("{agent} used {over} today ({day}, UTC)"),
                    key: format!("budget:{agent}:{day}"),
                    until: Some(Timestamp::from_unix((now.unix() / 86_400 + 1) * 86_400)),
                });
            }
        }
        None
    }

    /// What the task's runs used, when a task budget is set (read before the run
    /// counter's transaction, which holds the task to it).
    pub(super) async fn task_spending(&self, task: &TaskId) -> Option<Totals> {
        if !self.task_budget {
            return None;
        }
        let id = task.to_string();
        self.blocking(move |project| {
            let state = project.store.snapshot().ok()?.state;
            state.config.budget.as_ref()?.task.as_ref()?;
            let entries = project.store.ledger().ok()?;
            Some(ledger::total(
                entries
                    .iter()
                    .filter(|e| e.task.as_deref() == Some(id.as_str())),
            ))
        })
        .await
    }

    /// Records the usage limit the run on the backend in use hit, for every supervisor of
    /// that backend and account.
    pub(super) async fn record_quota_hit(&mut self, limit: &UsageLimit) {
        let clock = self.clock.now();
        let now = clock.wall;
        // Within the bounds of a supervisor's own wait (a minute to a week, 30 minutes
        // when none is announced): a reset an output claims for the year 2099, or for
        // the next second, holds every supervisor of the backend no more, no less.
        let resets_at = now.plus_seconds(limit.wait(clock.utc(), Duration::ZERO).as_secs() as i64);
        let hit = QuotaHit {
            backend: self.backend.name.clone(),
            account: self.accounts[self.in_use].clone(),
            resets_at,
            seen_at: now,
            seen_by: self.agent.to_string(),
            line: limit.line.chars().take(300).collect(),
        };
        self.local_quota
            .retain(|h| h.holds_at(now) && h.key() != hit.key());
        let kept = hit.clone();
        let recorded = self
            .blocking(move |project| project.store.record_quota(&kept))
            .await;
        if let Err(e) = recorded {
            // Held here at least: this supervisor does not run into it again.
            tracing::warn!(error = %e, "could not record the usage limit for the other supervisors");
            self.console.info(&format!(
                "{}: the usage limit could not be recorded for the other supervisors ({e}); this one waits for it",
                self.agent
            ));
            self.local_quota.push(hit);
        }
    }
}

/// `YYYY-MM-DD` of `at`, UTC.
fn day_of(at: Timestamp) -> String {
    at.to_string().get(..10).unwrap_or_default().to_owned()
}
