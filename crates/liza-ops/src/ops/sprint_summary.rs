//! `.liza/sprint_summary.md`, written at every checkpoint (specs/operations.md *Sprints,
//! checkpoints, circuit breaker*): what a person needs to decide how to go on — counts,
//! each task's durations from its history, the anomalies, the blocked tasks with their
//! questions, the sprint metrics, a review checklist and how to resume.

use crate::blackboard::EventKind;
use std::collections::BTreeMap;
use std::fmt::Write;

use crate::blackboard::model::{Task, TaskStatus};
use crate::blackboard::timestamp::human_duration;
use crate::blackboard::{State, Timestamp};
use crate::lifecycle::DECISIONS;

/// The summary of `state`'s sprint at `now`, `reason` being why it stopped.
pub(super) fn render(state: &State, reason: Option<&str>, now: Timestamp) -> String {
    let sprint = &state.sprint;
    let mut out = String::new();
    let _ = writeln!(out, "# Sprint {} — checkpoint\n", sprint.id);
    let _ = writeln!(out, "Goal: {}\n", state.goal.description.trim());
    let _ = writeln!(
        out,
        "Checkpoint at {now}{}.",
        match reason {
            Some(r) if !r.trim().is_empty() => format!(": {}", r.trim()),
            _ => String::new(),
        }
    );
    if let Some(t) = &sprint.timeline {
        if let Some(started) = t.started {
            let _ = write!(
                out,
                " Started {started} ({} ago).",
                human_duration(started.age_at(now))
            );
        }
        if let Some(deadline) = t.deadline {
            let _ = write!(out, " Deadline {deadline}.");
        }
    }
    out.push_str("\n\n");
    counts(state, &mut out);
    durations(state, now, &mut out);
    blocked(state, &mut out);
    anomalies(state, &mut out);
    metrics(state, &mut out);
    checklist(state, &mut out);
    out
}

fn sprint_tasks(state: &State) -> Vec<&Task> {
    let scope: Vec<_> = state
        .sprint
        .planned()
        .iter()
        .chain(state.sprint.stretch())
        .collect();
    let mut tasks: Vec<&Task> = state
        .tasks
        .iter()
        .map(|t| &**t)
        .filter(|t| scope.is_empty() || scope.contains(&&t.id))
        .collect();
    tasks.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    tasks
}

fn counts(state: &State, out: &mut String) {
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for t in sprint_tasks(state) {
        *by_status.entry(t.status.as_str()).or_insert(0) += 1;
    }
    let archived = state
        .archived
        .iter()
        .flat_map(|a| a.iter())
        .filter(|(_, a)| a.sprint.as_deref() == Some(state.sprint.id.as_str()))
        .count();
    out.push_str("## Counts\n\n");
    if by_status.is_empty() && archived == 0 {
        out.push_str("No tasks in this sprint.\n\n");
        return;
    }
    for (status, n) in by_status {
        let _ = writeln!(out, "- {status}: {n}");
    }
    if archived > 0 {
        let _ = writeln!(out, "- archived (terminal): {archived}");
    }
    out.push('\n');
}

/// First time the task's history shows one of `events`.
fn first(task: &Task, events: &[EventKind]) -> Option<Timestamp> {
    task.history()
        .iter()
        .find(|e| e.kind().is_some_and(|k| events.contains(&k)))
        .map(|e| e.time)
}

fn durations(state: &State, now: Timestamp, out: &mut String) {
    let tasks = sprint_tasks(state);
    if tasks.is_empty() {
        return;
    }
    out.push_str("## Tasks\n\n");
    out.push_str("| task | status | waited for a coder | in work | in review | total | runs | review cycles |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for t in tasks {
        let start = t
            .created
            .or_else(|| t.history().first().map(|e| e.time))
            .unwrap_or(now);
        let end = if t.status.is_terminal() {
            t.status_changed_at.unwrap_or(now)
        } else {
            now
        };
        let claimed = first(
            t,
            &[EventKind::Claimed, EventKind::ClaimedForIntegrationFix],
        );
        let (work, review) = time_in_states(t, end);
        let span = |from: Option<Timestamp>, to: Timestamp| {
            from.map_or("—".to_owned(), |f| {
                human_duration(to.seconds_since(f).max(0))
            })
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            t.id,
            t.status.as_str(),
            span(Some(start), claimed.unwrap_or(end)),
            human_duration(work),
            human_duration(review),
            span(Some(start), end),
            t.usage.as_ref().and_then(|u| u.agent_runs).unwrap_or(0),
            t.review_cycles_total.unwrap_or(0)
        );
    }
    out.push('\n');
}

/// Seconds spent with a coder (CLAIMED or REJECTED) and in review (READY_FOR_REVIEW,
/// APPROVED), from the history's status-changing events.
fn time_in_states(task: &Task, end: Timestamp) -> (i64, i64) {
    #[derive(Clone, Copy, PartialEq)]
    enum Phase {
        Waiting,
        Work,
        Review,
    }
    use EventKind as E;
    let phase_of = |event: Option<EventKind>| match event? {
        E::Claimed
        | E::ClaimedForIntegrationFix
        | E::Rejected
        | E::ReclaimedAfterRejection
        | E::Unblocked => Some(Phase::Work),
        E::ReadyForReview | E::ReviewClaimed | E::Approved => Some(Phase::Review),
        E::Merged
        | E::Blocked
        | E::Abandoned
        | E::Superseded
        | E::IntegrationFailed
        | E::Reassigned
        | E::LeaseExpiredReassigned
        | E::CoderClaimReleased => Some(Phase::Waiting),
        _ => None,
    };
    let (mut work, mut review) = (0, 0);
    let mut current = (Phase::Waiting, end);
    let mut close = |phase: Phase, from: Timestamp, to: Timestamp| {
        let secs = to.seconds_since(from).max(0);
        match phase {
            Phase::Work => work += secs,
            Phase::Review => review += secs,
            Phase::Waiting => {}
        }
    };
    for e in task.history() {
        if let Some(next) = phase_of(e.kind()) {
            close(current.0, current.1, e.time);
            current = (next, e.time);
        }
    }
    close(current.0, current.1, end);
    (work, review)
}

fn blocked(state: &State, out: &mut String) {
    let blocked: Vec<&Task> = state
        .tasks
        .iter()
        .map(|t| &**t)
        .filter(|t| {
            matches!(
                t.status,
                TaskStatus::Blocked | TaskStatus::IntegrationFailed
            )
        })
        .collect();
    out.push_str("## Blocked tasks\n\n");
    if blocked.is_empty() {
        out.push_str("None.\n\n");
        return;
    }
    for t in blocked {
        let _ = writeln!(
            out,
            "### {} ({})\n\n{}\n",
            t.id,
            t.status.as_str(),
            t.blocked_reason
                .as_deref()
                .or(t.integration_failure.as_ref().map(|f| f.kind.as_str()))
                .unwrap_or("(no reason recorded)")
        );
        for q in t.blocked_questions.iter().flatten() {
            let _ = writeln!(out, "- Q: {q}");
        }
        for a in t.attempted.iter().flatten() {
            let _ = writeln!(out, "- tried: {a}");
        }
        out.push('\n');
    }
}

fn anomalies(state: &State, out: &mut String) {
    let since = state.sprint.timeline.as_ref().and_then(|t| t.started);
    let list: Vec<_> = state
        .anomalies()
        .iter()
        .filter(|a| since.is_none_or(|s| a.timestamp.is_none_or(|t| t >= s)))
        .collect();
    out.push_str("## Anomalies\n\n");
    if list.is_empty() {
        out.push_str("None reported this sprint.\n\n");
        return;
    }
    for a in list {
        let details = a
            .details
            .as_ref()
            .and_then(|d| serde_json::to_string(d).ok())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "- {} on {} by {}: {details}",
            a.kind.as_str(),
            a.task.as_deref().unwrap_or("?"),
            a.reporter.as_deref().unwrap_or("?")
        );
    }
    if let Some(cb) = &state.circuit_breaker
        && let Some(trigger) = &cb.current_trigger
    {
        let _ = writeln!(
            out,
            "\nCircuit breaker: {} (see .liza/circuit_breaker_report.md)",
            serde_json::to_string(trigger).unwrap_or_default()
        );
    }
    out.push('\n');
}

fn metrics(state: &State, out: &mut String) {
    out.push_str("## Metrics\n\n");
    let Some(m) = &state.sprint.metrics else {
        out.push_str("None recorded.\n\n");
        return;
    };
    let rows = [
        ("tasks done", m.tasks_done),
        ("tasks in progress", m.tasks_in_progress),
        ("tasks blocked", m.tasks_blocked),
        ("iterations", m.iterations_total),
        ("review cycles", m.review_cycles_total),
        ("approvals", m.review_verdict_approvals),
        ("rejections", m.review_verdict_rejections),
        ("submissions for review", m.task_submitted_for_review_count),
    ];
    for (name, value) in rows {
        let _ = writeln!(out, "- {name}: {}", value.unwrap_or(0));
    }
    if let Some(rate) = m.review_verdict_approval_rate_percent {
        let _ = writeln!(out, "- approval rate: {}%", rate.as_f64());
    }
    out.push('\n');
}

fn checklist(state: &State, out: &mut String) {
    let blocked = state
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Blocked)
        .count();
    out.push_str("## Review checklist\n\n");
    let _ = writeln!(
        out,
        "- [ ] Answer the questions of the {blocked} blocked task(s) (`liza unblock`, `rescope`, `abandon`)"
    );
    out.push_str("- [ ] Read the anomalies and `.liza/circuit_breaker_report.md`: is the spec or the architecture at fault?\n");
    let _ = writeln!(
        out,
        "- [ ] Look at what was merged: `git log {}`",
        state.config.integration_branch()
    );
    out.push_str(
        "- [ ] Check the remaining scope still serves the goal (amend or rescope tasks)\n",
    );
    out.push_str("- [ ] Leave notes for the agents where they need them (`liza note`)\n\n");
    out.push_str("## How to resume\n\n");
    let _ = writeln!(
        out,
        "`liza resume --decision D`, D one of {}; the decision is recorded in `sprint.retrospective`.",
        DECISIONS.join(", ")
    );
}
