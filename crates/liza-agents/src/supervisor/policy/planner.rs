//! The planner's wake-ups (specs/supervisor.md *Planner wake triggers*): a turn only when a
//! trigger holds (the lifecycle computes them; a trigger acknowledged once does not wake
//! the planner again — edge-triggered, deduplicated), acknowledged only after a turn that
//! exited 0. A condition it cannot acknowledge (no tasks, a completed sprint) that still
//! holds after the turn alarms and backs off exponentially; a crash or exit 42 backs off
//! (a crash loop alarms).

use std::time::Duration;

use super::task_memory::CRASH_LOOP;
use super::{Action, Memory, PlannerTurn, RunEnd, View, Waiting, idle};
use crate::lifecycle::{self, Trigger, TriggerKind};
use crate::ops::alarms::Level;
use crate::supervisor::clock::Now;

/// The first backoff after an unhandled turn, doubled up to `MAX_BACKOFF`.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(30);
/// The longest backoff after an unhandled turn.
pub const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// A turn when a trigger holds and no backoff runs; else a wake-up.
pub fn next(view: &View, memory: &mut Memory, now: Now) -> Vec<Action> {
    let until = [
        memory.planner_backoff.map(|(until, _)| until),
        memory.planner.resume_at,
    ]
    .into_iter()
    .flatten()
    .max();
    if let Some(until) = until
        && until > now.at
    {
        // A state change ends the wait early, so ABORT and the goal's end are seen.
        return vec![Action::Wait {
            until,
            on_change: true,
            why: Waiting::PlannerBackoff,
        }];
    }
    if lifecycle::planner_triggers(view.state, view.agent).is_empty() {
        return idle(view, memory, now);
    }
    vec![Action::PlannerTurn]
}

/// After a turn: the exit-code protocol; a turn that exited 0 has what it was shown
/// acknowledged (the second value says so: the turn's work is counted then).
pub fn turn_ended(
    view: &View,
    memory: &mut Memory,
    turn: PlannerTurn,
    now: Now,
) -> (Vec<Action>, bool) {
    let PlannerTurn {
        end,
        shown,
        ended_at,
        seed,
    } = turn;
    let mut actions = Vec::new();
    match &end {
        RunEnd::Exited(Some(0)) => {
            memory.planner.finished(true);
            actions.push(Action::Acknowledge(shown));
            return (actions, true);
        }
        RunEnd::Exited(Some(42)) => {
            memory.planner.graceful_exit(false, now.at);
        }
        RunEnd::AuthRequired(line) => {
            return (super::cannot_log_in(view, None, false, line), false);
        }
        RunEnd::UsageLimited(limit) => {
            actions.extend(super::usage::hit(
                view, memory, None, limit, ended_at, seed, now,
            ));
        }
        RunEnd::Exited(_) | RunEnd::Failed(_) | RunEnd::NotStarted(_) => {
            let crashes = memory.planner.crashed(now.at);
            let wait = memory.planner.backoff.unwrap_or_default().as_secs();
            actions.push(Action::Say(format!(
                "{}: the planner's turn failed ({end:?}); next turn in {wait} s",
                view.agent
            )));
            if crashes == CRASH_LOOP {
                actions.push(Action::Alarm {
                    level: Level::Error,
                    category: "CRASH_LOOP".into(),
                    message: format!(
                        "{}: the planner crashed {CRASH_LOOP} times in 5 minutes; backing off",
                        view.agent
                    ),
                    key: crate::ops::alarms::crash_loop_key(view.agent.as_str(), None, ended_at),
                });
            }
        }
        RunEnd::Stalled(_) | RunEnd::TimedOut(_) => {
            memory.planner.crashed(now.at);
        }
        RunEnd::Aborted | RunEnd::Signalled => {}
    }
    // Not handled: the triggers stay unacknowledged, so the next turn (after the
    // backoff) is shown them again.
    (actions, false)
}

/// After the acknowledgement: a condition the planner cannot acknowledge that it was
/// shown and that still holds backs the next turn off (30 s doubling to 10 min) with an
/// alarm; otherwise the backoff ends.
pub fn acknowledged(
    view: &View,
    memory: &mut Memory,
    shown: &[Trigger],
    remaining: &[Trigger],
    revision: i64,
    now: Now,
) -> Vec<Action> {
    let unhandled: Vec<&Trigger> = remaining
        .iter()
        .filter(|r| {
            matches!(
                r.kind,
                TriggerKind::InitialPlanning | TriggerKind::SprintComplete
            ) && shown.iter().any(|t| t.kind == r.kind)
        })
        .collect();
    if unhandled.is_empty() {
        memory.planner_backoff = None;
        return Vec::new();
    }
    let next = memory
        .planner_backoff
        .map_or(FIRST_BACKOFF, |(_, d)| (d * 2).min(MAX_BACKOFF));
    memory.planner_backoff = Some((now.at + next, next));
    let what: Vec<String> = unhandled.iter().map(|t| t.describe()).collect();
    vec![Action::Alarm {
        level: Level::Warn,
        category: "PLANNER_UNHANDLED".into(),
        message: format!(
            "{} left {} unhandled; next turn in {} s",
            view.agent,
            what.join(", "),
            next.as_secs()
        ),
        key: format!("planner-unhandled:{}:{revision}", view.agent),
    }]
}
