//! Every supervisor policy, as one pure function: [`decide`] takes what the supervisor sees
//! (the blackboard and the control files: [`View`]), what it remembers ([`Memory`]), what
//! just happened ([`Observation`]) and the time ([`Now`]), and returns what to do
//! ([`Action`]s). No I/O, no clock, no randomness (jitter comes in through the
//! observation): the async runner (`session.rs` and the role modules) observes file events,
//! timers and child exits, calls `decide`, and executes its actions.
//!
//! Where each policy lives:
//! - finishing (ABORT, the sprint or goal over), PAUSE / CHECKPOINT, usage-limit waits,
//!   `--once`, `idle_exit_after`, signals and a superseded registration: this file;
//! - the coder's choice of work (claim or wait, lease takeovers, the busy retry), the
//!   contention rule (exit 6), restarts with backoff, the no-progress, exit-42 and
//!   crash-loop limits, watchdog blocks: [`coder`];
//! - the reviewer's merges first, reviews with their backoff, releasing a review that
//!   ended without a verdict, voiding a verdict whose run changed the worktree: [`reviewer`];
//! - planner wake-ups (only when a trigger holds, acknowledged after a turn that exited 0,
//!   backoff when a trigger stays unhandled, crash loops): [`planner`];
//! - the backoff and limit arithmetic per task: [`task_memory`];
//! - what a usage limit does (wait until the reset with jitter, the alarm): [`usage`].

pub mod coder;
pub mod on_behalf;
pub mod planner;
pub mod reviewer;
pub mod run_report;
pub mod spending;
pub mod task_memory;
pub mod usage;
pub mod watchdog;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::clock::{Moment, Now};
use crate::backend::signals::UsageLimit;
use crate::blackboard::model::{GoalStatus, SprintStatus};
use crate::blackboard::{AgentId, Role, State, TaskId, Timestamp};
use crate::lifecycle::{Leases, Trigger, Verdict};
use crate::ops::alarms::Level;
pub use on_behalf::OnBehalf;
pub use task_memory::TaskMemory;

/// What the supervisor sees when it decides.
pub struct View<'a> {
    /// The blackboard, as last read.
    pub state: &'a State,
    /// The agent it supervises.
    pub agent: &'a AgentId,
    /// The control files present in `.liza/`.
    pub controls: Controls,
    /// The other agents' leases, as this supervisor has watched them.
    pub leases: &'a Leases,
    /// This supervisor's registration (its fencing token).
    pub generation: &'a str,
    /// `--once`: one run, then exit.
    pub once: bool,
    /// The agent CLI it runs.
    pub backend: BackendView<'a>,
    /// What holds new runs back: a budget reached, every backend limited.
    pub spending: spending::Spending,
}

/// What the policies know of the agent CLI a supervisor runs.
#[derive(Debug, Clone, Copy)]
pub struct BackendView<'a> {
    /// Its name (`claude`, `builtin`, …).
    pub name: &'a str,
    /// It reports the built-in agent's soft and hard failures (exit 3 / 4).
    pub soft_and_hard: bool,
    /// What a person sets when it cannot log in.
    pub auth_hint: &'a str,
    /// It can run `liza` and the project's commands; one that cannot (aider) has liza
    /// submit and give verdicts for it ([`on_behalf`]).
    pub runs_commands: bool,
    /// Other backends may run while this one is limited (specs/ledger.md *Fallbacks*):
    /// a limit its run hits is waited for through the shared quota, not by the
    /// supervisor as a whole.
    pub fallbacks: bool,
}

impl View<'_> {
    /// The agent's role, from its id.
    pub fn role(&self) -> Role {
        self.agent.role()
    }

    /// The role's poll interval: the fallback when no file event comes.
    /// 30 s for a coder and a reviewer, 60 s for the planner, unless configured
    /// (specs/blackboard.md *config*).
    pub fn poll_interval(&self) -> Duration {
        let config = &self.state.config;
        let (configured, default) = match self.role() {
            Role::Coder => (config.coder_poll_interval, 30),
            Role::CodeReviewer => (config.reviewer_poll_interval, 30),
            Role::Planner => (config.planner_poll_interval, 60),
        };
        Duration::from_secs(
            configured
                .filter(|s| *s > 0)
                .unwrap_or(default)
                .unsigned_abs(),
        )
    }
}

/// The control files of `.liza/` (specs/operations.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Controls {
    /// `ABORT`: stop the agent, unregister, exit.
    pub abort: bool,
    /// `PAUSE`: no new run until it is removed.
    pub pause: bool,
    /// `CHECKPOINT`: no new run until a person resumes.
    pub checkpoint: bool,
}

/// What a supervisor remembers between decisions (in memory only: a restarted
/// supervisor starts afresh, which is what a restart is for).
#[derive(Debug, Default)]
pub struct Memory {
    /// What it remembers of each task it worked on: backoffs, crashes, counters.
    pub tasks: HashMap<TaskId, TaskMemory>,
    /// The planner's turns (it has no task to remember them by).
    pub planner: TaskMemory,
    /// The planner's backoff after a turn that left its trigger unhandled.
    pub planner_backoff: Option<(Moment, Duration)>,
    /// Claims that failed in a row (the contention rule).
    pub claim_failures: u32,
    /// The budget or quota wait last said (and alarmed), so a wait woken again is not
    /// said again.
    pub spending_said: Option<String>,
    /// `TASK_ID` of the command line: the first candidate, once.
    pub first_task: Option<TaskId>,
    /// A provider usage limit: no run before then, whatever the role.
    pub usage_limit_until: Option<Moment>,
    /// Since when the supervisor has found nothing to do.
    pub idle_since: Moment,
    /// Runs that did work.
    pub runs: u32,
    /// The work already tried in this pass over the candidates.
    pass: Pass,
}

impl Memory {
    /// A fresh memory at startup: `first_task` is `TASK_ID`, and the idle time counts
    /// from `now`.
    pub fn new(first_task: Option<TaskId>, now: Now) -> Memory {
        Memory {
            first_task,
            idle_since: now.at,
            ..Memory::default()
        }
    }

    /// What it remembers of `task`, made empty the first time.
    pub fn task(&mut self, task: &TaskId) -> &mut TaskMemory {
        self.tasks.entry(task.clone()).or_default()
    }
}

/// One pass over the candidates: a refused claim moves on to the next one.
#[derive(Debug, Default)]
struct Pass {
    tried: HashSet<TaskId>,
    /// A claim found a task locked by another process.
    busy: bool,
}

/// What just happened.
#[derive(Debug, Clone)]
pub enum Observation {
    /// Look for work: at start, after a wake-up, a wait or finished work.
    Look,
    /// A coder's claim did not lead to a run.
    ClaimEnded {
        /// The task it tried to claim.
        task: TaskId,
        /// How the claim ended.
        claim: ClaimResult,
    },
    /// The run counter refused another run (the task is BLOCKED at its iteration limit).
    IterationLimit {
        /// The task claimed.
        task: TaskId,
        /// The runs allowed without approval.
        limit: i64,
    },
    /// The run counter refused another run: the task's runs reached `config.budget.task`
    /// (the task is BLOCKED with the figures).
    OverBudget {
        /// The task claimed.
        task: TaskId,
        /// Its blocked reason.
        reason: String,
    },
    /// A coder run on a claimed task ended.
    CoderRunEnded(CoderRun),
    /// A review claim did not lead to a run.
    ReviewClaimEnded {
        /// The task whose review it tried to claim.
        task: TaskId,
        /// How the claim ended.
        claim: ClaimResult,
    },
    /// The worktree of a claimed review is missing (the claim still held).
    WorktreeMissing {
        /// The task under review.
        task: TaskId,
        /// The blackboard's revision when it was found missing (the alarm's key names it).
        revision: i64,
    },
    /// A review run ended.
    ReviewRunEnded(ReviewRun),
    /// A merge ended: `ran` when it merged or failed integration (not refused).
    MergeEnded {
        /// The approved task.
        task: TaskId,
        /// It merged, or failed integration; not refused.
        ran: bool,
    },
    /// The planner's turn ended; `None` when no trigger held any more at launch.
    PlannerTurnEnded(Option<PlannerTurn>),
    /// What the planner was shown was acknowledged; these triggers still hold after.
    Acknowledged {
        /// The triggers the planner was shown.
        shown: Vec<Trigger>,
        /// The triggers that hold after the acknowledgement.
        remaining: Vec<Trigger>,
        /// The blackboard's revision after it (the alarm's key names it).
        revision: i64,
    },
    /// A signal arrived (2, 15, 1).
    Signalled(i32),
    /// This supervisor's registration was replaced: a write or heartbeat was refused.
    Superseded(String),
}

/// How a claim ended when it did not lead to a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimResult {
    /// Another process holds the task's lock right now.
    Busy,
    /// A rule refused it (another supervisor won the race, the task moved on).
    Refused,
    /// It failed (git, the store, …): counts toward the contention rule. `seed` spreads
    /// the retry.
    Failed {
        /// What failed.
        why: String,
        /// Spreads the retry.
        seed: u64,
    },
}

/// How an agent run ended, as the policies need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// Exit code (a signal death counts as a crash: `None`).
    Exited(Option<i32>),
    /// No progress for this long (the watchdog stopped it).
    Stalled(Duration),
    /// Longer than the role's execution timeout.
    TimedOut(Duration),
    /// ABORT stopped it.
    Aborted,
    /// The supervisor was signalled (or superseded) and stopped it.
    Signalled,
    /// The agent could not be started.
    NotStarted(String),
    /// The agent could not log in (the line that says so): the supervisor keeps the work
    /// and stops ([`cannot_log_in`]).
    AuthRequired(String),
    /// The provider reported a usage limit.
    UsageLimited(UsageLimit),
    /// It exited 0 but left something unusable (a strict run report): a crash.
    Failed(String),
}

impl RunEnd {
    /// The exit class of specs/operations.md *Metrics* (`liza_agent_runs_total`).
    pub fn exit_class(&self, soft_and_hard: bool) -> &'static str {
        match self {
            RunEnd::UsageLimited(_) => "usage_limit",
            RunEnd::Exited(Some(0)) => "ok",
            RunEnd::Exited(Some(42)) => "graceful_abort",
            RunEnd::Exited(Some(crate::builtin::EXIT_SOFT_FAIL)) if soft_and_hard => "soft_fail",
            RunEnd::Exited(Some(crate::builtin::EXIT_HARD_FAIL)) if soft_and_hard => "hard_fail",
            RunEnd::Exited(_) | RunEnd::Failed(_) => "crash",
            RunEnd::Stalled(_) => "stalled",
            RunEnd::TimedOut(_) => "timed_out",
            RunEnd::Aborted => "aborted",
            RunEnd::Signalled => "signalled",
            RunEnd::NotStarted(_) => "not_started",
            RunEnd::AuthRequired(_) => "auth_required",
        }
    }
}

/// A coder run on `task`, reconciled.
#[derive(Debug, Clone, PartialEq)]
pub struct CoderRun {
    /// The task the run was on.
    pub task: TaskId,
    /// How the run ended.
    pub end: RunEnd,
    /// The worktree changed, or the task left the agent (submitted, blocked).
    pub progressed: bool,
    /// The task is still CLAIMED by this agent.
    pub still_mine: bool,
    /// The run moved the task branch's HEAD.
    pub committed: bool,
    /// What the run left uncommitted in the worktree.
    pub dirty: Vec<String>,
    /// What liza did for an agent that cannot run commands (`None`: nothing yet).
    pub on_behalf: Option<OnBehalf>,
    /// The last lines of the run's output (a hard failure's notes).
    pub output_tail: String,
    /// When the run ended, as logged (alarm keys name it).
    pub ended_at: Timestamp,
    /// Spreads usage-limit waits.
    pub seed: u64,
}

/// A review run on `task`, reconciled.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewRun {
    /// The task under review.
    pub task: TaskId,
    /// How the run ended.
    pub end: RunEnd,
    /// The task is still READY_FOR_REVIEW under this reviewer's claim.
    pub still_reviewing: bool,
    /// This reviewer's verdict is on the task.
    pub verdict_given: bool,
    /// The run changed the task's worktree (while the worktree was the reviewer's).
    pub changed_worktree: bool,
    /// The commit under review, as the claim recorded it.
    pub review_commit: Option<String>,
    /// The last lines of the run's output (where a verdict line is).
    pub output_tail: String,
    /// What liza did for an agent that cannot run commands (`None`: nothing yet).
    pub on_behalf: Option<OnBehalf>,
    /// The blackboard's revision after the run (alarm keys name it).
    pub revision: i64,
    /// When the run ended, as logged (alarm keys name it).
    pub ended_at: Timestamp,
    /// Spreads usage-limit waits.
    pub seed: u64,
}

/// A planner turn.
#[derive(Debug, Clone)]
pub struct PlannerTurn {
    /// How the run ended.
    pub end: RunEnd,
    /// The triggers it was shown.
    pub shown: Vec<Trigger>,
    /// When the run ended, as logged (alarm keys name it).
    pub ended_at: Timestamp,
    /// Spreads usage-limit waits.
    pub seed: u64,
}

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Claim `task` for the coder and, claimed, run the agent on it (→ `ClaimEnded`,
    /// `IterationLimit` or `CoderRunEnded`).
    Work(TaskId),
    /// Claim the review of `task` and run the reviewer (→ `ReviewClaimEnded`,
    /// `WorktreeMissing` or `ReviewRunEnded`).
    Review(TaskId),
    /// Merge the approved `task` (→ `MergeEnded`).
    Merge(TaskId),
    /// Run the planner for the triggers that hold (→ `PlannerTurnEnded`).
    PlannerTurn,
    /// Record that the planner was shown `triggers` (→ `Acknowledged`).
    Acknowledge(Vec<Trigger>),
    /// CLAIMED → BLOCKED by the supervisor.
    Block {
        /// The task.
        task: TaskId,
        /// Why it is blocked.
        reason: String,
        /// The questions for the planner.
        questions: Vec<String>,
    },
    /// Run the `on_review` checks and submit the run's commits as the agent, which cannot
    /// run commands (→ `CoderRunEnded` again, with what came of it).
    SubmitForAgent(Box<CoderRun>),
    /// Record `verdict` on `commit` as the reviewer, which cannot run commands (→
    /// `ReviewRunEnded` again, with what came of it).
    VerdictForAgent {
        /// The review run whose answer gave the verdict.
        run: Box<ReviewRun>,
        /// The verdict of the answer's last `LIZA-VERDICT:` line.
        verdict: Verdict,
        /// The commit under review.
        commit: String,
    },
    /// Release this reviewer's claim on `task`.
    ReleaseReview(TaskId),
    /// APPROVED/REJECTED → READY_FOR_REVIEW: the review run changed the worktree.
    VoidVerdict {
        /// The task.
        task: TaskId,
        /// What the run changed.
        why: String,
    },
    /// Log a role-boundary violation (then alarm).
    BoundaryViolation {
        /// The task it concerns, if any.
        task: Option<TaskId>,
        /// What was violated, for a person.
        message: String,
        /// The alarm's key: one alarm per occurrence.
        key: String,
    },
    /// Commit the task worktree's uncommitted work as a WIP commit.
    SaveWip {
        /// The task whose worktree it is.
        task: TaskId,
        /// Why, in the commit's message (`WIP: saved by liza before <why>`).
        why: String,
    },
    /// Log a failed claim (`claim_failed`).
    LogClaimFailed {
        /// The task it tried to claim.
        task: TaskId,
        /// What failed.
        detail: String,
    },
    /// Raise an alarm once per key.
    Alarm {
        /// How grave it is.
        level: Level,
        /// Its kind, in capitals (`CRASH_LOOP`, `AGENT_AUTH`, …).
        category: String,
        /// What happened, for a person.
        message: String,
        /// The occurrence key: an alarm fires once per key.
        key: String,
    },
    /// No run before `until` (a usage limit; `None` clears it); heartbeats say until when.
    UsageLimit {
        /// The end of the wait, on the monotonic and the wall time lines.
        until: Option<(Moment, Timestamp)>,
    },
    /// A line for the supervisor's console.
    Say(String),
    /// Wait until `until`: also woken by a state change when `on_change` (a backoff
    /// ignores state changes; a signal ends any wait). Heartbeats say `why`.
    Wait {
        /// When the wait ends at the latest.
        until: Moment,
        /// A state change ends it too.
        on_change: bool,
        /// What it waits for.
        why: Waiting,
    },
    /// Stop the supervisor.
    Exit(Exit),
}

impl Action {
    /// Whether the action only carries out an effect (a write, an alarm, a line) and
    /// observes nothing: what a stopping supervisor may still do.
    pub fn is_effect(&self) -> bool {
        matches!(
            self,
            Action::Block { .. }
                | Action::ReleaseReview(_)
                | Action::VoidVerdict { .. }
                | Action::BoundaryViolation { .. }
                | Action::SaveWip { .. }
                | Action::LogClaimFailed { .. }
                | Action::Alarm { .. }
                | Action::UsageLimit { .. }
                | Action::Say(_)
        )
    }
}

impl Action {
    /// Whether it is done for an agent that cannot run commands: it observes (the run is
    /// reported again) but starts no run, so a stopping supervisor still does it.
    pub fn acts_for_agent(&self) -> bool {
        matches!(
            self,
            Action::SubmitForAgent(_) | Action::VerdictForAgent { .. }
        )
    }
}

/// What a supervisor that runs nothing waits for (`waiting` in its heartbeats and in
/// `liza status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// PAUSE.
    Paused,
    /// CHECKPOINT, or the sprint at its checkpoint.
    Checkpoint,
    /// A provider usage limit to reset.
    UsageLimit,
    /// A budget to be raised (specs/ledger.md *Budgets*).
    Budget,
    /// A restart backoff (exit 42, a crash, an agent that could not start, a review
    /// without a verdict).
    Backoff,
    /// A task locked by another process's claim.
    Busy,
    /// Another agent's lease to run out.
    Lease,
    /// The retry after a failed claim.
    ClaimRetry,
    /// The planner's backoff after an unhandled trigger.
    PlannerBackoff,
    /// Nothing to do: a state change or the poll interval.
    Work,
}

impl Waiting {
    /// What it means, for the supervisor's console.
    pub fn sentence(self) -> &'static str {
        match self {
            Waiting::Paused => "paused (.liza/PAUSE): no new run until `liza resume`",
            Waiting::Checkpoint => {
                "the sprint is at a checkpoint: waiting for a person (`liza resume`)"
            }
            Waiting::UsageLimit => "waiting for the provider's usage limit to reset",
            Waiting::Budget => "a budget is reached: waiting for it to be raised",
            Waiting::Backoff => "backing off before the next run",
            Waiting::Busy => "the task is locked by another process's claim right now",
            Waiting::Lease => "waiting to see another agent's lease run out",
            Waiting::ClaimRetry => "retrying a claim that failed",
            Waiting::PlannerBackoff => "backing off after a trigger the planner did not handle",
            Waiting::Work => "nothing to do",
        }
    }

    /// Its name in the heartbeats (`waiting`) and in `liza status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Waiting::Paused => "paused",
            Waiting::Checkpoint => "checkpoint",
            Waiting::UsageLimit => "usage_limit",
            Waiting::Budget => "budget",
            Waiting::Backoff => "backoff",
            Waiting::Busy => "busy",
            Waiting::Lease => "lease",
            Waiting::ClaimRetry => "claim_retry",
            Waiting::PlannerBackoff => "planner_backoff",
            Waiting::Work => "work",
        }
    }
}

/// Why the supervisor stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// Its work is over (ABORT, the sprint or goal ended, idle, `--once`): exit 0.
    Done,
    /// A signal: 128 + the signal.
    Signal(i32),
    /// The registration was replaced (exit 1).
    Superseded(String),
    /// Claims kept failing (exit 6).
    ClaimsFailing {
        /// Claims that failed in a row.
        count: u32,
        /// Why the last one failed.
        last: String,
    },
    /// The agent could not log in: every further run would fail the same way.
    AuthRequired {
        /// The backend's name.
        backend: String,
        /// The line of its output that says so.
        line: String,
        /// What a person sets so it can log in.
        hint: String,
    },
}

/// How soon a coder looks again when a task it wanted was locked by another claim.
pub const BUSY_RETRY: Duration = Duration::from_millis(250);
/// Past a lease's expiry, how long to wait for it to be surely over.
const LEASE_MARGIN: Duration = Duration::from_millis(50);

/// The agent could not log in (`line` says so) on `task`, which this supervisor still
/// `holds`: its work is kept — a coder's worktree as a WIP commit, the task still claimed;
/// a reviewer's claim released —, an alarm says what to set, and the supervisor stops,
/// since every further run would fail the same way.
pub fn cannot_log_in(view: &View, task: Option<&TaskId>, holds: bool, line: &str) -> Vec<Action> {
    let mut actions = Vec::new();
    match (view.role(), task) {
        (Role::Coder, Some(task)) => actions.push(Action::SaveWip {
            task: task.clone(),
            why: "the agent could not log in".into(),
        }),
        (Role::CodeReviewer, Some(task)) if holds => {
            actions.push(Action::ReleaseReview(task.clone()));
        }
        _ => {}
    }
    let backend = view.backend;
    actions.push(Action::Alarm {
        level: Level::Error,
        category: "AGENT_AUTH".into(),
        message: format!(
            "{}: the {} agent could not log in ({line}); {}",
            view.agent, backend.name, backend.auth_hint
        ),
        key: format!("agent-auth:{}:{}", view.agent, view.generation),
    });
    actions.push(Action::Exit(Exit::AuthRequired {
        backend: backend.name.to_owned(),
        line: line.to_owned(),
        hint: backend.auth_hint.to_owned(),
    }));
    actions
}

/// The supervisor's decision. Nothing follows an exit.
pub fn decide(view: &View, memory: &mut Memory, observation: Observation, now: Now) -> Vec<Action> {
    let mut actions = decide_all(view, memory, observation, now);
    if let Some(exit) = actions.iter().position(|a| matches!(a, Action::Exit(_))) {
        actions.truncate(exit + 1);
    }
    actions
}

fn decide_all(view: &View, memory: &mut Memory, observation: Observation, now: Now) -> Vec<Action> {
    match observation {
        Observation::Signalled(signal) => vec![Action::Exit(Exit::Signal(signal))],
        Observation::Superseded(why) => vec![Action::Exit(Exit::Superseded(why))],
        Observation::Look => look(view, memory, now),
        Observation::ClaimEnded { task, claim } => {
            coder::claim_ended(view, memory, task, claim, now)
        }
        Observation::IterationLimit { task, limit } => {
            // The claim succeeded: the contention count starts over.
            memory.claim_failures = 0;
            let mut actions = vec![Action::Say(format!(
                "{task}: BLOCKED, {limit} runs without approval"
            ))];
            actions.extend(worked(view, memory, now));
            actions
        }
        Observation::OverBudget { task, reason } => {
            memory.claim_failures = 0;
            let mut actions = vec![Action::Say(format!("{task}: BLOCKED, {reason}"))];
            actions.extend(worked(view, memory, now));
            actions
        }
        Observation::CoderRunEnded(run) => {
            if let Some(submit) = on_behalf::submission(view, &run) {
                return vec![submit];
            }
            memory.claim_failures = 0;
            let mut actions = on_behalf::coder_left(view, memory, &run);
            actions.extend(coder::run_ended(view, memory, run, now));
            actions.extend(worked(view, memory, now));
            actions
        }
        Observation::ReviewClaimEnded { task, claim } => {
            reviewer::claim_ended(view, memory, task, claim, now)
        }
        Observation::WorktreeMissing { task, revision } => {
            let mut actions = reviewer::worktree_missing(memory, task, revision, now);
            actions.extend(worked(view, memory, now));
            actions
        }
        Observation::ReviewRunEnded(run) => {
            if let Some(give) = on_behalf::verdict(view, &run) {
                return vec![give];
            }
            let mut actions = on_behalf::reviewer_left(view, &run);
            actions.extend(reviewer::run_ended(view, memory, run, now));
            actions.extend(worked(view, memory, now));
            actions
        }
        Observation::MergeEnded { task, ran } => {
            if ran {
                worked(view, memory, now)
            } else {
                memory.pass.tried.insert(task);
                reviewer::next(view, memory, now)
            }
        }
        Observation::PlannerTurnEnded(None) => idle(view, memory, now),
        Observation::PlannerTurnEnded(Some(turn)) => {
            let (mut actions, acknowledge) = planner::turn_ended(view, memory, turn, now);
            if !acknowledge {
                actions.extend(worked(view, memory, now));
            }
            actions
        }
        Observation::Acknowledged {
            shown,
            remaining,
            revision,
        } => {
            let mut actions =
                planner::acknowledged(view, memory, &shown, &remaining, revision, now);
            actions.extend(worked(view, memory, now));
            actions
        }
    }
}

/// The top of the loop: is the work over, paused, waiting out a usage limit? Otherwise
/// the role looks for work.
fn look(view: &View, memory: &mut Memory, now: Now) -> Vec<Action> {
    memory.pass = Pass::default();
    if finished(view) {
        return vec![
            Action::Say(format!("{}: the sprint is over; exiting", view.agent)),
            Action::Exit(Exit::Done),
        ];
    }
    if paused(view) {
        // Heartbeats go on; a state change (or the control file's removal) wakes it.
        let why = if view.controls.pause {
            Waiting::Paused
        } else {
            Waiting::Checkpoint
        };
        return vec![wait_on_change(view, now, why)];
    }
    let mut actions = Vec::new();
    if let Some(until) = memory.usage_limit_until {
        if until > now.at {
            // State changes still wake it, so ABORT and the sprint's end are seen.
            return vec![Action::Wait {
                until,
                on_change: true,
                why: Waiting::UsageLimit,
            }];
        }
        memory.usage_limit_until = None;
        actions.push(Action::UsageLimit { until: None });
    }
    if let Some(held) = spending::hold(view, memory, now) {
        actions.extend(held);
        return actions;
    }
    actions.extend(match view.role() {
        Role::Coder => coder::next(view, memory, now),
        Role::CodeReviewer => reviewer::next(view, memory, now),
        Role::Planner => planner::next(view, memory, now),
    });
    actions
}

/// Whether this supervisor's work is over: ABORT, or the sprint / goal ended (the
/// planner stays for the next sprint until the goal ends).
fn finished(view: &View) -> bool {
    let state = view.state;
    if view.controls.abort || state.sprint.status == SprintStatus::Aborted {
        return true;
    }
    let goal_over = state
        .goal
        .status
        .is_some_and(|g| g != GoalStatus::InProgress);
    match view.role() {
        Role::Planner => goal_over,
        _ => goal_over || state.sprint.status == SprintStatus::Completed,
    }
}

fn paused(view: &View) -> bool {
    view.controls.pause
        || view.controls.checkpoint
        || view.state.sprint.status == SprintStatus::Checkpoint
}

/// After work was done: `--once` ends here (a reviewer merges its approvals first);
/// otherwise look for work again at once.
fn worked(view: &View, memory: &mut Memory, now: Now) -> Vec<Action> {
    memory.idle_since = now.at;
    memory.runs += 1;
    if !view.once {
        return Vec::new();
    }
    let mut actions: Vec<Action> = Vec::new();
    if view.role() == Role::CodeReviewer {
        actions.extend(reviewer::own_approvals(view).into_iter().map(Action::Merge));
    }
    actions.push(Action::Exit(Exit::Done));
    actions
}

/// Nothing to do: exit after `idle_exit_after` with no non-terminal task, else wait for
/// a wake-up (at most the poll interval).
fn idle(view: &View, memory: &mut Memory, now: Now) -> Vec<Action> {
    let state = view.state;
    if let Some(after) = state.config.idle_exit_after
        && after > 0
        && now.at.since(memory.idle_since) >= Duration::from_secs(after.unsigned_abs())
        && state.tasks.iter().all(|t| t.status.is_terminal())
    {
        return vec![
            Action::Say(format!("{}: idle for {after} s; exiting", view.agent)),
            Action::Exit(Exit::Done),
        ];
    }
    vec![wait_on_change(view, now, Waiting::Work)]
}

/// Waits for a state change, at most the poll interval.
fn wait_on_change(view: &View, now: Now, why: Waiting) -> Action {
    Action::Wait {
        until: now.at + view.poll_interval(),
        on_change: true,
        why,
    }
}

/// Waits until just after a lease the supervisor watches would lapse, `left` from now —
/// which no file event announces — or a state change; at most the poll interval.
fn wait_for_lease(view: &View, left: Duration, now: Now) -> Action {
    Action::Wait {
        until: now.at + (left + LEASE_MARGIN).min(view.poll_interval()),
        on_change: true,
        why: Waiting::Lease,
    }
}
