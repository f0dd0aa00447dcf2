//! Provider usage limits (specs/supervisor.md *Running the agent*): the coder's dirty worktree
//! saved as a WIP commit, the task kept claimed, no run of any kind until the announced
//! reset (30 minutes when none is given) plus jitter — heartbeats say until when — an
//! alarm, and no `failed_by` entry (it is the provider's limit, not the agent's failure).
//! A supervisor with fallbacks (specs/ledger.md *Fallbacks*) does not wait as a whole: the
//! limit, recorded in the shared quota, holds that backend only, and the next look runs
//! the first backend free of one.

use std::time::Duration;

use super::{Action, Memory, View};
use crate::backend::signals::{self, UsageLimit};
use crate::blackboard::{Role, TaskId, Timestamp};
use crate::ops::alarms::Level;
use crate::supervisor::clock::Now;

/// The actions of a usage limit reported by the run that ended at `ended_at`.
pub fn hit(
    view: &View,
    memory: &mut Memory,
    task: Option<&TaskId>,
    limit: &UsageLimit,
    ended_at: Timestamp,
    seed: u64,
    now: Now,
) -> Vec<Action> {
    let mut actions = Vec::new();
    if let Some(task) = task
        && view.role() == Role::Coder
    {
        actions.push(Action::SaveWip {
            task: task.clone(),
            why: "a provider usage limit".into(),
        });
    }
    let base = limit.wait(now.utc(), Duration::ZERO);
    let wait = base + signals::jitter(base, seed);
    let until = now.at + wait;
    let wall_until = now.wall.plus_seconds(wait.as_secs() as i64);
    if view.backend.fallbacks {
        actions.push(Action::Say(format!(
            "{}: {} is limited until {} ({}); the next run goes to a fallback backend",
            view.agent,
            view.backend.name,
            now.clock_text(wall_until),
            limit.line
        )));
        actions.push(alarm(view, limit, ended_at, &now.clock_text(wall_until)));
        return actions;
    }
    memory.usage_limit_until = Some(until);
    actions.push(Action::UsageLimit {
        until: Some((until, wall_until)),
    });
    let when = now.clock_text(wall_until);
    let source = if limit.resets_at.is_some() {
        "the announced reset"
    } else {
        "30 minutes: no reset time was given"
    };
    actions.push(Action::Say(format!(
        "{} waiting for usage limit until {when} ({source}): {}",
        view.agent, limit.line
    )));
    actions.push(alarm(view, limit, ended_at, &when));
    actions
}

fn alarm(view: &View, limit: &UsageLimit, ended_at: Timestamp, when: &str) -> Action {
    Action::Alarm {
        level: Level::Error,
        category: "PROVIDER_QUOTA_EXHAUSTED".into(),
        message: format!(
            "{}: the provider of {} reports a usage limit ({}); no runs on it until {when}",
            view.agent, view.backend.name, limit.line
        ),
        key: crate::ops::alarms::quota_key(view.agent.as_str(), ended_at),
    }
}
