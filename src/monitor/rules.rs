//! The alarm rules of specs/operations.md *Watch and alarms*, as a pure function of the state,
//! the tally of log.yaml and a few facts from `.liza/` (the PAUSE file's age, hand edits
//! set aside). Each alarm carries its occurrence key: the rule, the task or agent, and
//! what identifies this occurrence — the time the task entered its status, the lease's
//! expiry, the count reached, the run that completed a crash loop. An unchanged condition
//! therefore yields the same key at every evaluation, in every process; a new occurrence
//! or an escalation (a higher tier) yields a new one.

use crate::blackboard::EventKind;
use std::collections::{BTreeMap, BTreeSet};

use crate::blackboard::event::RunEnded;
use crate::blackboard::log_tally::{Activity, ClockSkew};
use crate::blackboard::model::{SprintStatus, Task, TaskStatus, Urgency};
use crate::blackboard::{State, Timestamp};
use crate::lifecycle::iteration_limit;
use crate::ops::alarms::{Alarm, Level, crash_loop_key, quota_key};

/// Leases are reported this long after they expire (a heartbeat may be on its way).
pub const LEASE_GRACE_S: i64 = 60;
/// No task changed status for this long while work is in progress.
pub const STALLED_S: i64 = 30 * 60;
/// A DRAFT task waits for finalization at most this long.
pub const STALE_DRAFT_S: i64 = 30 * 60;
/// A checkpoint or pause waiting for a person: the tiers it escalates through.
pub const WAITING_TIERS: &[(i64, &str, Level)] = &[
    (30 * 60, "30m", Level::Warn),
    (2 * 3600, "2h", Level::Warn),
    (8 * 3600, "8h", Level::Error),
];
/// Review cycles in a row that make a review loop.
pub const REVIEW_LOOP_AT: i64 = 3;
/// Per cent of the iteration limit that counts as near it.
pub const ITERATIONS_NEAR_PERCENT: i64 = 80;
/// Crashes of one agent on one task within [`CRASH_WINDOW_S`] that make a crash loop.
pub const CRASH_LOOP: usize = 3;
pub const CRASH_WINDOW_S: i64 = 5 * 60;
/// Runtime events (crashes, usage limits) older than this are history, not alarms.
pub const RUNTIME_LOOKBACK_S: i64 = 3600;

/// What the rules see besides the state and the log.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// When `.liza/PAUSE` was created, if it exists.
    pub paused_since: Option<Timestamp>,
    /// When `.liza/CHECKPOINT` was created, if it exists.
    pub checkpoint_file_since: Option<Timestamp>,
    /// Hand edits set aside under `.liza/rejected/`, as `.liza/rejected/<name>`.
    pub rejected_edits: Vec<String>,
}

/// Every alarm whose condition holds at `now`.
pub fn evaluate(state: &State, activity: &Activity, facts: &Facts, now: Timestamp) -> Vec<Alarm> {
    let mut out = Alarms {
        list: Vec::new(),
        revision: state.revision(),
    };
    leases(state, now, &mut out);
    for task in state.tasks.iter() {
        task_rules(state, task, now, &mut out);
    }
    stalled(state, now, &mut out);
    discoveries(state, &mut out);
    waiting(state, facts, now, &mut out);
    for path in &facts.rejected_edits {
        out.push(
            Level::Error,
            "HAND_EDIT_REJECTED",
            format!("a hand edit of state.yaml was set aside as {path}; see its .note.txt"),
            None,
            None,
            format!("hand-edit-rejected:{path}"),
        );
    }
    runtime(&activity.run_ends, now, &mut out);
    clock_skews(&activity.clock_skews, now, &mut out);
    out.list
}

/// A writer whose clock ran behind the log's (specs/blackboard.md *Timestamps*): once per
/// writer and size of the skew (in minutes), while it is recent.
fn clock_skews(skews: &[ClockSkew], now: Timestamp, out: &mut Alarms) {
    for skew in skews
        .iter()
        .filter(|s| now.seconds_since(s.ts) <= RUNTIME_LOOKBACK_S)
    {
        out.push(
            Level::Warn,
            "CLOCK_SKEW",
            format!(
                "{} wrote {} stamped {} s before the log's last entry: its clock is behind, or the last entry's writer's was ahead (the entry was stamped at the last entry's time); check the machines' time (timedatectl, NTP): leases are watched, not compared, but people read these times",
                skew.agent, skew.action, skew.behind_s
            ),
            None,
            Some(&skew.agent),
            format!("clock-skew:{}:{}m", skew.agent, skew.behind_s / 60),
        );
    }
}

struct Alarms {
    list: Vec<Alarm>,
    revision: u64,
}

impl Alarms {
    fn push(
        &mut self,
        level: Level,
        category: &str,
        message: String,
        task: Option<&str>,
        agent: Option<&str>,
        key: String,
    ) {
        self.list.push(Alarm {
            level,
            category: category.to_owned(),
            message,
            task: task.map(str::to_owned),
            agent: agent.map(str::to_owned),
            revision: Some(self.revision),
            key,
        });
    }
}

fn expired(lease: Option<Timestamp>, now: Timestamp) -> Option<Timestamp> {
    lease.filter(|l| now.seconds_since(*l) > LEASE_GRACE_S)
}

fn leases(state: &State, now: Timestamp, out: &mut Alarms) {
    for (id, agent) in state.agents.iter() {
        if let Some(lease) = expired(agent.lease_expires, now) {
            out.push(
                Level::Warn,
                "LEASE_EXPIRED",
                format!(
                    "agent {id}'s lease expired at {lease} (no heartbeat since {}); `liza clear-stale` removes it",
                    agent.heartbeat.map_or("never".to_owned(), |h| h.to_string())
                ),
                agent.current_task.as_ref().map(|t| t.as_str()),
                Some(id.as_str()),
                format!("agent-lease:{id}:{lease}"),
            );
        }
    }
    for task in state.tasks.iter() {
        let id = task.id.as_str();
        if task.status == TaskStatus::Claimed
            && let Some(lease) = expired(task.lease_expires, now)
        {
            out.push(
                Level::Warn,
                "LEASE_EXPIRED",
                format!(
                    "task {id}'s lease ({}) expired at {lease}; another coder may take it over",
                    task.assigned_to.as_ref().map_or("nobody", |a| a.as_str())
                ),
                Some(id),
                task.assigned_to.as_ref().map(|a| a.as_str()),
                format!("task-lease:{id}:{lease}"),
            );
        }
        if let Some(reviewer) = &task.reviewing_by
            && let Some(lease) = expired(task.review_lease_expires, now)
        {
            out.push(
                Level::Warn,
                "LEASE_EXPIRED",
                format!("the review of {id} by {reviewer} lost its lease at {lease}"),
                Some(id),
                Some(reviewer.as_str()),
                format!("review-lease:{id}:{lease}"),
            );
        }
    }
}

/// When the task entered its current status (its creation when never changed).
fn since(task: &Task) -> Timestamp {
    task.status_changed_at
        .or(task.created)
        .unwrap_or(Timestamp::from_unix(0))
}

fn task_rules(state: &State, task: &Task, now: Timestamp, out: &mut Alarms) {
    let id = task.id.as_str();
    let at = since(task);
    let assignee = task.assigned_to.as_ref().map(|a| a.as_str());
    match task.status {
        TaskStatus::Blocked => out.push(
            Level::Warn,
            "TASK_BLOCKED",
            format!(
                "{id} is BLOCKED: {}{}",
                task.blocked_reason.as_deref().unwrap_or("(no reason given)"),
                task.blocked_questions
                    .as_deref()
                    .filter(|q| !q.is_empty())
                    .map_or(String::new(), |q| format!(" — questions: {}", q.join(" | ")))
            ),
            Some(id),
            assignee,
            format!("blocked:{id}:{at}"),
        ),
        TaskStatus::IntegrationFailed => out.push(
            Level::Error,
            "INTEGRATION_FAILED",
            format!(
                "{id} could not be merged into integration{}",
                task.integration_failure
                    .as_ref()
                    .map_or(String::new(), |f| format!(" ({})", f.kind.as_str()))
            ),
            Some(id),
            assignee,
            format!("integration-failed:{id}:{at}"),
        ),
        TaskStatus::Rejected
            if assignee.is_none_or(|a| !state.agents.iter().any(|(id, _)| id.as_str() == a)) =>
        {
            out.push(
                Level::Warn,
                "ORPHANED_REJECTED",
                format!(
                    "{id} was rejected but its coder {} is gone; `liza reassign {id} --reason …` frees it",
                    assignee.unwrap_or("(none)")
                ),
                Some(id),
                assignee,
                format!("orphaned-rejected:{id}:{at}"),
            )
        }
        TaskStatus::Draft if now.seconds_since(at) > STALE_DRAFT_S => out.push(
            Level::Warn,
            "STALE_DRAFT",
            format!(
                "{id} has been a DRAFT since {at}; `liza finalize-task {id}` makes it claimable"
            ),
            Some(id),
            None,
            format!("stale-draft:{id}:{at}"),
        ),
        _ => {}
    }
    if task.status.is_terminal() {
        return;
    }
    review_loop(state, task, out);
    let failed: BTreeSet<&str> = task
        .failed_by
        .iter()
        .flatten()
        .map(|a| a.as_str())
        .collect();
    if failed.len() >= 2 {
        let n = failed.len();
        out.push(
            Level::Warn,
            "HYPOTHESIS_EXHAUSTED",
            format!(
                "{id} failed with {n} coders ({}): rescope it with the root cause",
                failed.iter().copied().collect::<Vec<_>>().join(", ")
            ),
            Some(id),
            None,
            format!("hypothesis:{id}:{n}"),
        );
    }
    iterations(state, task, out);
    repeated_rejection(task, out);
}

fn review_loop(state: &State, task: &Task, out: &mut Alarms) {
    let id = task.id.as_str();
    let current = task.review_cycles_current.unwrap_or(0);
    let total = task.review_cycles_total.unwrap_or(current).max(current);
    let max = state.config.max_review_cycles();
    // The total at which this run of cycles reached a tier identifies the occurrence: it
    // stays put while the loop goes on and moves after `unblock --reset-review-cycles`.
    if current >= max {
        out.push(
            Level::Error,
            "REVIEW_DEADLOCK",
            format!(
                "{id} was rejected {current} times in a row (the limit is {max}): review deadlock"
            ),
            Some(id),
            task.assigned_to.as_ref().map(|a| a.as_str()),
            format!("review-loop:{id}:{}:deadlock", total - current + max),
        );
    } else if current >= REVIEW_LOOP_AT {
        out.push(
            Level::Warn,
            "REVIEW_LOOP",
            format!("{id} was rejected {current} times in a row (deadlock at {max})"),
            Some(id),
            task.assigned_to.as_ref().map(|a| a.as_str()),
            format!("review-loop:{id}:{}:warn", total - current + REVIEW_LOOP_AT),
        );
    }
}

fn iterations(state: &State, task: &Task, out: &mut Alarms) {
    let (Some(done), Some(coder)) = (task.iteration, &task.assigned_to) else {
        return;
    };
    let id = task.id.as_str();
    let limit = iteration_limit(state, &task.id);
    let (tier, level) = if done >= limit {
        ("last", Level::Error)
    } else if done * 100 >= limit * ITERATIONS_NEAR_PERCENT {
        ("near", Level::Warn)
    } else {
        return;
    };
    out.push(
        level,
        "ITERATIONS_NEAR_LIMIT",
        format!("{id}: {coder} has used {done} of {limit} iterations"),
        Some(id),
        Some(coder.as_str()),
        format!("iterations:{id}:{coder}:{tier}"),
    );
}

fn repeated_rejection(task: &Task, out: &mut Alarms) {
    let reasons: Vec<(Timestamp, String)> = task
        .history()
        .iter()
        .filter(|e| e.kind() == Some(EventKind::Rejected))
        .map(|e| {
            let reason = e.extra.get("reason").and_then(|r| r.as_str()).unwrap_or("");
            (e.time, normalise(reason))
        })
        .collect();
    let Some((_, last)) = reasons.last() else {
        return;
    };
    let run: Vec<&(Timestamp, String)> = reasons
        .iter()
        .rev()
        .take_while(|(_, r)| r == last && !r.is_empty())
        .collect();
    if run.len() < 2 {
        return;
    }
    let id = task.id.as_str();
    let first = run.last().map_or(Timestamp::from_unix(0), |(t, _)| *t);
    out.push(
        Level::Warn,
        "REPEATED_REJECTION",
        format!(
            "{id} was rejected {} times in a row for the same reason: {}",
            run.len(),
            shorten(last, 160)
        ),
        Some(id),
        task.assigned_to.as_ref().map(|a| a.as_str()),
        format!("repeated-rejection:{id}:{first}:{}", run.len()),
    );
}

fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

fn stalled(state: &State, now: Timestamp, out: &mut Alarms) {
    let working = state.tasks.iter().any(|t| {
        matches!(
            t.status,
            TaskStatus::Claimed
                | TaskStatus::ReadyForReview
                | TaskStatus::Approved
                | TaskStatus::Rejected
        )
    });
    if !working || state.sprint.status != SprintStatus::InProgress {
        return;
    }
    let Some(last) = state.tasks.iter().map(|t| since(t)).max() else {
        return;
    };
    if now.seconds_since(last) > STALLED_S {
        out.push(
            Level::Warn,
            "STALLED",
            format!(
                "no task has changed status since {last} while work is in progress; are the agents running? (`liza status`)"
            ),
            None,
            None,
            format!("stalled:{last}"),
        );
    }
}

fn discoveries(state: &State, out: &mut Alarms) {
    for d in state.discovered() {
        if d.urgency == Some(Urgency::Immediate) && d.converted_to_task.is_none() {
            out.push(
                Level::Warn,
                "IMMEDIATE_DISCOVERY",
                format!(
                    "discovery {} ({}) is urgent and not converted to a task: {}",
                    d.id,
                    d.by.as_deref().unwrap_or("unknown"),
                    shorten(d.description.as_deref().unwrap_or(""), 160)
                ),
                d.during.as_deref(),
                d.by.as_deref(),
                format!("immediate-discovery:{}", d.id),
            );
        }
    }
}

fn waiting(state: &State, facts: &Facts, now: Timestamp, out: &mut Alarms) {
    let checkpoint = if state.sprint.status == SprintStatus::Checkpoint {
        state
            .sprint
            .timeline
            .as_ref()
            .and_then(|t| t.checkpoint_at)
            .or(facts.checkpoint_file_since)
    } else {
        facts.checkpoint_file_since
    };
    for (what, since, hint) in [
        (
            "checkpoint",
            checkpoint,
            "read .liza/sprint_summary.md, then `liza resume --decision …`",
        ),
        ("pause", facts.paused_since, "`liza resume` continues"),
    ] {
        let Some(since) = since else { continue };
        let waited = now.seconds_since(since);
        let Some((_, tier, level)) = WAITING_TIERS.iter().rev().find(|(s, _, _)| waited > *s)
        else {
            continue;
        };
        out.push(
            *level,
            if what == "checkpoint" {
                "CHECKPOINT_WAITING"
            } else {
                "PAUSE_WAITING"
            },
            format!("the sprint has been at {what} since {since} (over {tier}); {hint}"),
            None,
            None,
            format!("{what}-waiting:{since}:{tier}"),
        );
    }
}

/// Crash loops and provider usage limits, from the agents' run ends in log.yaml.
fn runtime(run_ends: &[RunEnded], now: Timestamp, out: &mut Alarms) {
    let recent = run_ends
        .iter()
        .filter(|r| now.seconds_since(r.ts) <= RUNTIME_LOOKBACK_S);
    let mut crashes: BTreeMap<(&str, Option<&str>), Vec<Timestamp>> = BTreeMap::new();
    for end in recent {
        if end.exit_class == "usage_limit" {
            out.push(
                Level::Error,
                "PROVIDER_QUOTA_EXHAUSTED",
                format!(
                    "{}: the provider reports a usage limit; its supervisor waits for the reset",
                    end.agent
                ),
                end.task.as_deref(),
                Some(&end.agent),
                quota_key(&end.agent, end.ts),
            );
        }
        if !end.is_crash() {
            continue;
        }
        let times = crashes
            .entry((end.agent.as_str(), end.task.as_deref()))
            .or_default();
        times.retain(|t| end.ts.seconds_since(*t) < CRASH_WINDOW_S);
        times.push(end.ts);
        if times.len() == CRASH_LOOP {
            out.push(
                Level::Error,
                "CRASH_LOOP",
                format!(
                    "{}: the agent crashed {CRASH_LOOP} times in 5 minutes{}",
                    end.agent,
                    end.task
                        .as_deref()
                        .map_or(String::new(), |t| format!(" on {t}"))
                ),
                end.task.as_deref(),
                Some(&end.agent),
                crash_loop_key(&end.agent, end.task.as_deref(), end.ts),
            );
        }
    }
}
