//! The coder's policies (specs/lifecycle.md *Claimability and ordering*, *Limits and counters*;
//! specs/supervisor.md *Exit codes*): which task to claim or how long to wait, the contention
//! rule, and what each way a run ends means — restart with backoff, or block the task at
//! the no-progress, exit-42, crash-loop and watchdog limits.

use std::time::Duration;

use super::task_memory::CRASH_LOOP;
use super::{
    Action, BUSY_RETRY, ClaimResult, CoderRun, Exit, Memory, RunEnd, View, Waiting, idle,
    wait_for_lease,
};
use crate::blackboard::TaskId;
use crate::lifecycle;
use crate::supervisor::clock::Now;

/// Claims in a row that may fail before the supervisor gives up (exit 6).
pub const CLAIM_ATTEMPTS: u32 = 3;
/// No-progress runs in a row that block the task.
pub const NO_PROGRESS_LIMIT: u32 = 3;
/// How long an agent that could not start is left alone.
pub const NOT_STARTED_PAUSE: Duration = Duration::from_secs(30);

/// The next candidate of this pass: claim it, wait out its backoff, or — none left — wait
/// for a busy task, a lease to run out, or a wake-up.
pub fn next(view: &View, memory: &mut Memory, now: Now) -> Vec<Action> {
    let mut candidates: Vec<TaskId> = lifecycle::coder_work(view.state, view.agent, view.leases)
        .into_iter()
        .map(|c| c.task)
        .collect();
    if let Some(first) = memory.first_task.take() {
        candidates.retain(|t| *t != first);
        candidates.insert(0, first);
    }
    for task in candidates {
        if memory.pass.tried.contains(&task) {
            continue;
        }
        if let Some(at) = memory.task(&task).resume_at
            && at > now.at
        {
            // Its restart backoff: nothing else is taken meanwhile (the task is this
            // coder's), and state changes do not cut it short.
            return vec![Action::Wait {
                until: at,
                on_change: false,
                why: Waiting::Backoff,
            }];
        }
        memory.pass.tried.insert(task.clone());
        return vec![Action::Work(task)];
    }
    if memory.pass.busy {
        // Another process is claiming it and may yet fail (a person's `liza claim-task`
        // for a coder that holds a task, say, or a worktree that cannot be made) without
        // changing the state: no file event would come, so look
        // again shortly instead of sleeping a whole poll interval.
        return vec![Action::Wait {
            until: now.at + BUSY_RETRY,
            on_change: true,
            why: Waiting::Busy,
        }];
    }
    if let Some(left) = lifecycle::coder_work_frees_in(view.state, view.agent, view.leases) {
        // Another coder's task becomes takeable when its lease lapses.
        return vec![wait_for_lease(view, left, now)];
    }
    idle(view, memory, now)
}

/// A claim that did not lead to a run: busy or refused moves on to the next candidate; a
/// failure follows the contention rule (specs/lifecycle.md *Claimability and ordering*) —
/// log, wait 1–5 s, retry; the third failure in a row ends the supervisor (exit 6).
pub fn claim_ended(
    view: &View,
    memory: &mut Memory,
    task: TaskId,
    claim: ClaimResult,
    now: Now,
) -> Vec<Action> {
    match claim {
        ClaimResult::Busy => {
            memory.pass.busy = true;
            next(view, memory, now)
        }
        ClaimResult::Refused => next(view, memory, now),
        ClaimResult::Failed { why, seed } => {
            memory.claim_failures += 1;
            let mut actions = vec![Action::LogClaimFailed {
                task,
                detail: format!("{}: {why}", view.agent),
            }];
            if memory.claim_failures >= CLAIM_ATTEMPTS {
                actions.push(Action::Exit(Exit::ClaimsFailing {
                    count: memory.claim_failures,
                    last: why,
                }));
                return actions;
            }
            let spread = Duration::from_millis(1000 + seed % 4000);
            actions.push(Action::Wait {
                until: now.at + spread,
                on_change: false,
                why: Waiting::ClaimRetry,
            });
            actions
        }
    }
}

/// Reconciles a coder run: counts it toward the task's limits and blocks the task when
/// one is reached.
pub fn run_ended(view: &View, memory: &mut Memory, run: CoderRun, now: Now) -> Vec<Action> {
    let CoderRun {
        task,
        end,
        progressed,
        still_mine,
        output_tail,
        ended_at,
        seed,
        ..
    } = run;
    let threshold = view
        .state
        .config
        .exit42_restart_threshold
        .filter(|t| *t > 0)
        .unwrap_or(5) as u32;
    let soft_and_hard = view.backend.soft_and_hard;
    let mut actions = Vec::new();
    let memory_of = memory.task(&task);
    let blocked: Option<String> = match &end {
        RunEnd::Exited(Some(0)) => {
            let no_progress = memory_of.finished(progressed || !still_mine);
            (no_progress >= NO_PROGRESS_LIMIT)
                .then(|| format!("no progress in {NO_PROGRESS_LIMIT} runs"))
        }
        // The built-in agent's protocol (specs/builtin-agent.md): 3 is SOFT_FAIL, a run with no
        // result that counts toward the limits; 4 is HARD_FAIL, blocked at once with the
        // run's notes (the coder goes into failed_by).
        RunEnd::Exited(Some(crate::builtin::EXIT_SOFT_FAIL)) if soft_and_hard => {
            // No result is no progress, whatever the worktree shows.
            (memory_of.finished(false) >= NO_PROGRESS_LIMIT)
                .then(|| format!("no result in {NO_PROGRESS_LIMIT} runs of the built-in coder"))
        }
        RunEnd::Exited(Some(crate::builtin::EXIT_HARD_FAIL)) if soft_and_hard && still_mine => {
            let notes: Vec<&str> = output_tail
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("liza builtin coder:"))
                .collect();
            let notes = notes[notes.len().saturating_sub(3)..].join("; ");
            Some(format!("the built-in coder failed hard: {notes}"))
        }
        RunEnd::Exited(Some(42)) => {
            let in_a_row = memory_of.graceful_exit(progressed, now.at);
            (in_a_row >= threshold && still_mine)
                .then(|| format!("{threshold} exit-42 restarts without progress"))
        }
        RunEnd::Exited(_) | RunEnd::Failed(_) => {
            let crashes = memory_of.crashed(now.at);
            (crashes >= CRASH_LOOP && still_mine).then(|| {
                let last = match &end {
                    RunEnd::Exited(Some(c)) => format!("exit {c}"),
                    RunEnd::Failed(why) => why.clone(),
                    _ => "a signal".into(),
                };
                format!("crash loop: {CRASH_LOOP} crashes in 5 minutes (last: {last})")
            })
        }
        RunEnd::Stalled(after) if still_mine => {
            Some(format!("watchdog: no progress for {} s", after.as_secs()))
        }
        RunEnd::TimedOut(after) if still_mine => Some(format!(
            "execution timeout: the run took longer than {} s",
            after.as_secs()
        )),
        RunEnd::Aborted => {
            actions.push(Action::SaveWip {
                task: task.clone(),
                why: "the sprint was aborted".into(),
            });
            None
        }
        RunEnd::NotStarted(why) => {
            memory_of.resume_at = Some(now.at + NOT_STARTED_PAUSE);
            actions.push(not_started_alarm(view, &task, why));
            None
        }
        RunEnd::AuthRequired(line) => {
            return super::cannot_log_in(view, Some(&task), still_mine, line);
        }
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
            None
        }
        RunEnd::Signalled | RunEnd::Stalled(_) | RunEnd::TimedOut(_) => None,
    };
    if let Some(reason) = blocked {
        let question = format!("{reason}: should the task be split, clarified or reassigned?");
        actions.push(Action::Say(format!("{task}: BLOCKED ({reason})")));
        actions.push(Action::Block {
            task: task.clone(),
            reason,
            questions: vec![question],
        });
        memory.tasks.remove(&task);
    }
    actions
}

/// The agent program could not be started: an alarm (its run is tried again later).
pub fn not_started_alarm(view: &View, task: &TaskId, why: &str) -> Action {
    Action::Alarm {
        level: crate::ops::alarms::Level::Error,
        category: "AGENT_NOT_STARTED".into(),
        message: format!("{}: the agent could not start: {why}", view.agent),
        key: format!("not-started:{}:{task}", view.agent),
    }
}
