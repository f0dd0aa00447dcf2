//! The reviewer's policies: merge what it approved first (and anyone's approval whose
//! approver is gone), then review with a backoff per task; a run without a verdict
//! releases the claim (an alarm after two), a run that changed the worktree voids its
//! verdict, a crash loop alarms.

use std::time::Duration;

use super::coder::not_started_alarm;
use super::task_memory::CRASH_LOOP;
use super::{Action, ClaimResult, Memory, ReviewRun, RunEnd, View, Waiting, idle, wait_for_lease};
use crate::blackboard::TaskId;
use crate::lifecycle::{self, ReviewWork};
use crate::ops::alarms::Level;
use crate::supervisor::clock::{Moment, Now};

/// The least time before a reviewer tries again a review that ended without a verdict.
pub const FAILED_REVIEW_PAUSE: Duration = Duration::from_secs(5);
/// Failed review runs of one task that raise an alarm.
pub const FAILED_REVIEW_ALARM: u32 = 2;
/// How long a task whose worktree is missing is left alone.
pub const MISSING_WORKTREE_PAUSE: Duration = Duration::from_secs(60);

/// The next merge or review of this pass, a backoff to wait out, a lease to wait for, or
/// a wake-up.
pub fn next(view: &View, memory: &mut Memory, now: Now) -> Vec<Action> {
    // The soonest a review skipped for its backoff may run.
    let mut soonest: Option<Moment> = None;
    for work in lifecycle::reviewer_work(view.state, view.agent, view.leases) {
        match work {
            ReviewWork::Merge(task) => {
                if memory.pass.tried.insert(task.clone()) {
                    return vec![Action::Merge(task)];
                }
            }
            ReviewWork::Review(task) => {
                if memory.pass.tried.contains(&task) {
                    continue;
                }
                let task_memory = memory.task(&task);
                if !task_memory.may_run(now.at) {
                    soonest = soonest.min(task_memory.resume_at).or(task_memory.resume_at);
                    continue;
                }
                memory.pass.tried.insert(task.clone());
                return vec![Action::Review(task)];
            }
        }
    }
    if let Some(until) = soonest {
        // A state change ends the wait early; otherwise look again when it may run.
        return vec![Action::Wait {
            until,
            on_change: true,
            why: Waiting::Backoff,
        }];
    }
    if let Some(left) = lifecycle::reviewer_work_frees_in(view.state, view.agent, view.leases) {
        // Another reviewer's claim, or an approver's registration, runs out then.
        return vec![wait_for_lease(view, left, now)];
    }
    idle(view, memory, now)
}

/// A review claim that did not lead to a run: the next item of the pass.
pub fn claim_ended(
    view: &View,
    memory: &mut Memory,
    task: TaskId,
    claim: ClaimResult,
    now: Now,
) -> Vec<Action> {
    let mut actions = Vec::new();
    if let ClaimResult::Failed { why, .. } = claim {
        actions.push(Action::Say(format!(
            "{task}: the review claim failed: {why}"
        )));
    }
    actions.extend(next(view, memory, now));
    actions
}

/// The task's worktree is missing: its review claim is released, an alarm says so, and
/// the task is left alone for a minute.
pub fn worktree_missing(memory: &mut Memory, task: TaskId, revision: i64, now: Now) -> Vec<Action> {
    memory.task(&task).resume_at = Some(now.at + MISSING_WORKTREE_PAUSE);
    // The claim first, then the alarm that says it was released.
    vec![
        Action::ReleaseReview(task.clone()),
        Action::Alarm {
            level: Level::Error,
            category: "WORKTREE_MISSING".into(),
            message: format!("{task}: its worktree is missing; the review claim was released"),
            key: format!("worktree-missing:{task}:{revision}"),
        },
    ]
}

/// The approvals this reviewer gave, to merge before `--once` exits.
pub fn own_approvals(view: &View) -> Vec<TaskId> {
    lifecycle::reviewer_work(view.state, view.agent, view.leases)
        .into_iter()
        .filter_map(|w| match w {
            ReviewWork::Merge(task) => Some(task),
            ReviewWork::Review(_) => None,
        })
        .collect()
}

/// Reconciles a review run. What the blackboard must say comes first (the claim
/// released, a verdict voided); the alarms about it after, so whoever sees an alarm sees
/// the state it describes.
pub fn run_ended(view: &View, memory: &mut Memory, run: ReviewRun, now: Now) -> Vec<Action> {
    let ReviewRun {
        task,
        end,
        still_reviewing,
        verdict_given,
        changed_worktree,
        revision,
        ended_at,
        seed,
        ..
    } = run;
    if let RunEnd::AuthRequired(line) = &end {
        return super::cannot_log_in(view, Some(&task), still_reviewing, line);
    }
    let mut actions = Vec::new();
    let failed_review =
        still_reviewing && end != RunEnd::Signalled && !matches!(end, RunEnd::UsageLimited(_));
    if failed_review {
        actions.push(Action::ReleaseReview(task.clone()));
    }
    match &end {
        RunEnd::Exited(Some(0)) => {
            memory.task(&task).finished(true);
        }
        RunEnd::Exited(Some(42)) => {
            memory.task(&task).graceful_exit(false, now.at);
        }
        RunEnd::Exited(_) | RunEnd::Failed(_) => {
            if memory.task(&task).crashed(now.at) == CRASH_LOOP {
                actions.push(Action::Alarm {
                    level: Level::Error,
                    category: "CRASH_LOOP".into(),
                    message: format!(
                        "{}: the reviewer crashed {CRASH_LOOP} times in 5 minutes on {task}; its review claim is released",
                        view.agent
                    ),
                    key: crate::ops::alarms::crash_loop_key(
                        view.agent.as_str(),
                        Some(task.as_str()),
                        ended_at,
                    ),
                });
            }
        }
        RunEnd::NotStarted(why) => {
            memory.task(&task).resume_at = Some(now.at + super::coder::NOT_STARTED_PAUSE);
            actions.push(not_started_alarm(view, &task, why));
        }
        // Decided above: the supervisor keeps the work and stops.
        RunEnd::AuthRequired(_) => {}
        RunEnd::UsageLimited(limit) => {
            actions.extend(super::usage::hit(
                view,
                memory,
                Some(&task),
                limit,
                ended_at,
                seed,
                now,
            ));
        }
        RunEnd::Stalled(_) | RunEnd::TimedOut(_) | RunEnd::Aborted | RunEnd::Signalled => {}
    }
    if changed_worktree {
        let message = format!(
            "{} changed the worktree of {task} while reviewing it",
            view.agent
        );
        if verdict_given {
            actions.push(Action::VoidVerdict {
                task: task.clone(),
                why: message.clone(),
            });
        }
        actions.push(Action::BoundaryViolation {
            task: Some(task.clone()),
            message,
            key: format!("review-modified:{task}:{revision}"),
        });
    }
    if failed_review {
        let m = memory.task(&task);
        m.failed_reviews += 1;
        // At least a few seconds before this reviewer tries the task again; a crash
        // backoff may ask for longer.
        let soonest = now.at + FAILED_REVIEW_PAUSE;
        m.resume_at = Some(m.resume_at.map_or(soonest, |at| at.max(soonest)));
        let failed = m.failed_reviews;
        if failed >= FAILED_REVIEW_ALARM {
            actions.push(Action::Alarm {
                level: Level::Warn,
                category: "REVIEW_FAILED".into(),
                message: format!(
                    "{}: {failed} review runs of {task} ended without a verdict",
                    view.agent
                ),
                key: format!("review-failed:{}:{task}:{failed}", view.agent),
            });
        }
    }
    actions
}
