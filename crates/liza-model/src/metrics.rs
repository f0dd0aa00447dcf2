//! `sprint.metrics`, recomputed by every transaction so it is never stale. Tasks moved to
//! the archive keep counting through running totals (`sprint.metrics.archived`), added
//! once when they are archived, so a transaction never re-reads the archives
//! (specs/blackboard.md *Growth*).

use super::codec::Number;
use super::model::{Metrics, State, Task, TaskStatus};
use super::node::{Entry, Node, Pos, Value};

/// What one task adds to the sprint's metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// 1 for a terminal task.
    pub done: i64,
    /// 1 for a task CLAIMED, READY_FOR_REVIEW, REJECTED or APPROVED.
    pub in_progress: i64,
    /// 1 for a task BLOCKED or INTEGRATION_FAILED.
    pub blocked: i64,
    /// Its `iteration`.
    pub iterations: i64,
    /// Its `review_cycles_total`.
    pub review_cycles: i64,
    /// Approvals in its history.
    pub approvals: i64,
    /// Rejections in its history.
    pub rejections: i64,
    /// Submissions for review in its history.
    pub submissions: i64,
}

/// The running-total keys under `sprint.metrics.archived`.
const TOTAL_KEYS: [&str; 6] = [
    "tasks",
    "iterations",
    "review_cycles",
    "approvals",
    "rejections",
    "submissions",
];

impl Counts {
    /// What `task` adds, its history's counts taken from the parse cache when it has them.
    pub fn of(task: &Task) -> Counts {
        let mut c = Counts::default();
        match task.status {
            s if s.is_terminal() => c.done = 1,
            TaskStatus::Claimed
            | TaskStatus::ReadyForReview
            | TaskStatus::Rejected
            | TaskStatus::Approved => c.in_progress = 1,
            TaskStatus::Blocked | TaskStatus::IntegrationFailed => c.blocked = 1,
            _ => {}
        }
        c.iterations = task.iteration.unwrap_or(0).max(0);
        c.review_cycles = task.review_cycles_total.unwrap_or(0).max(0);
        // From counts the parse cache kept: a commit decodes no history it left alone.
        let reviews = task.review_counts();
        c.approvals = reviews.approvals;
        c.rejections = reviews.rejections;
        c.submissions = reviews.submissions;
        c
    }

    fn add(&mut self, other: Counts) {
        self.done += other.done;
        self.in_progress += other.in_progress;
        self.blocked += other.blocked;
        self.iterations += other.iterations;
        self.review_cycles += other.review_cycles;
        self.approvals += other.approvals;
        self.rejections += other.rejections;
        self.submissions += other.submissions;
    }

    fn totals(self) -> [i64; 6] {
        [
            self.done,
            self.iterations,
            self.review_cycles,
            self.approvals,
            self.rejections,
            self.submissions,
        ]
    }

    fn from_totals(t: [i64; 6]) -> Counts {
        Counts {
            done: t[0],
            iterations: t[1],
            review_cycles: t[2],
            approvals: t[3],
            rejections: t[4],
            submissions: t[5],
            ..Counts::default()
        }
    }
}

/// The running totals of the current sprint's archived tasks.
pub fn archived_totals(state: &State) -> Counts {
    let Some(node) = state
        .sprint
        .metrics
        .as_ref()
        .and_then(|m| m.extra.get("archived"))
    else {
        return Counts::default();
    };
    let mut t = [0i64; 6];
    for (slot, key) in t.iter_mut().zip(TOTAL_KEYS) {
        if let Some(Value::Int(n)) = node.get(key).map(|n| &n.value) {
            *slot = *n;
        }
    }
    Counts::from_totals(t)
}

/// Adds `task` (being archived from the current sprint) to the running totals.
pub fn add_to_archived_totals(state: &mut State, task: &Task) {
    let mut totals = archived_totals(state);
    totals.add(Counts::of(task));
    let entries = TOTAL_KEYS
        .iter()
        .zip(totals.totals())
        .map(|(key, value)| Entry {
            key: (*key).to_owned(),
            key_pos: Pos::UNKNOWN,
            value: Node::new(Value::Int(value)),
        })
        .collect();
    state
        .sprint
        .metrics
        .get_or_insert_with(Metrics::default)
        .extra
        .insert("archived", Node::new(Value::Map(entries)));
}

/// Recomputes the sprint metrics from the live tasks and the archived running totals,
/// keeping any metric keys liza does not know.
pub fn recompute(state: &mut State) {
    let mut c = archived_totals(state);
    for task in &state.tasks {
        c.add(Counts::of(task));
    }
    let verdicts = c.approvals + c.rejections;
    let rate = if verdicts == 0 {
        Number::Int(0)
    } else {
        Number::Float((c.approvals as f64 * 1000.0 / verdicts as f64).round() / 10.0)
    };
    let metrics = state.sprint.metrics.get_or_insert_with(Metrics::default);
    metrics.tasks_done = Some(c.done);
    metrics.tasks_in_progress = Some(c.in_progress);
    metrics.tasks_blocked = Some(c.blocked);
    metrics.iterations_total = Some(c.iterations);
    metrics.review_cycles_total = Some(c.review_cycles);
    metrics.review_verdict_approvals = Some(c.approvals);
    metrics.review_verdict_rejections = Some(c.rejections);
    metrics.review_verdict_count = Some(verdicts);
    metrics.review_verdict_approval_rate_percent = Some(rate);
    metrics.task_submitted_for_review_count = Some(c.submissions);
}
