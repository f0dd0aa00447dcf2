//! The goal and the current sprint.

use serde::{Deserialize, Serialize};

use crate::codec::{Number, record, yaml_enum};
use crate::ids::TaskId;
use crate::node::{Extra, Node};
use crate::timestamp::Timestamp;

yaml_enum! {
    /// `goal.status`.
    pub enum GoalStatus (Some(11), "goal-status", "goal status") {
        /// Being worked on.
        InProgress = "IN_PROGRESS",
        /// Declared met (`liza goal complete`).
        Completed = "COMPLETED",
        /// Aborted by a person (`liza abort --goal`).
        Aborted = "ABORTED",
    }
}

yaml_enum! {
    /// `sprint.status` (specs/lifecycle.md *Sprint and goal*).
    pub enum SprintStatus (Some(11), "sprint-status", "sprint status") {
        /// Running.
        InProgress = "IN_PROGRESS",
        /// Stopped at a checkpoint until a person resumes it; running agents finish their
        /// step.
        Checkpoint = "CHECKPOINT",
        /// Every planned task is MERGED, SUPERSEDED or ABANDONED.
        Completed = "COMPLETED",
        /// Aborted by a person (`liza abort`).
        Aborted = "ABORTED",
    }
}

/// One entry of `goal.alignment_history`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlignmentEvent {
    /// When it happened.
    pub timestamp: Timestamp,
    /// What happened: `initialization`, `planning` or `rescope_<task>`.
    pub event: String,
    /// What it changed, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(AlignmentEvent {
    req timestamp: "timestamp",
    req event: "event",
    opt summary: "summary",
});

/// `goal`: what the team works towards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    /// Its id, `goal-<n>`.
    pub id: String,
    /// The goal in one sentence.
    pub description: String,
    /// The goal's spec file, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_ref: Option<String>,
    /// When the goal was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    /// Where the goal stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GoalStatus>,
    /// How the plan followed the goal: append-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment_history: Option<Vec<AlignmentEvent>>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Goal {
    req id: "id",
    req description: "description",
    opt spec_ref: "spec_ref",
    opt created: "created",
    opt status: "status",
    opt alignment_history: "alignment_history",
});

/// `sprint.scope`: the tasks of the sprint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scope {
    /// The tasks of this sprint; every added task is appended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<Vec<TaskId>>,
    /// Optional extras, not counted for completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stretch: Option<Vec<TaskId>>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Scope {
    opt planned: "planned",
    opt stretch: "stretch",
});

/// `sprint.timeline`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// When the sprint started; required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Timestamp>,
    /// Reaching it checkpoints the sprint, once per deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Timestamp>,
    /// When the current checkpoint was taken; cleared by `liza resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_at: Option<Timestamp>,
    /// When the sprint ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Timestamp>,
    /// Keys liza does not know, kept as written (`deadline_reached` among them).
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Timeline {
    opt started: "started",
    opt deadline: "deadline",
    opt checkpoint_at: "checkpoint_at",
    opt ended: "ended",
});

/// `sprint.metrics`, recomputed by every transaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Terminal tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_done: Option<i64>,
    /// Tasks CLAIMED, READY_FOR_REVIEW, REJECTED or APPROVED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_in_progress: Option<i64>,
    /// Tasks BLOCKED or INTEGRATION_FAILED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_blocked: Option<i64>,
    /// The sum of the tasks' `iteration` counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_total: Option<i64>,
    /// The sum of the tasks' `review_cycles_total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_cycles_total: Option<i64>,
    /// Approvals in the tasks' histories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_verdict_approvals: Option<i64>,
    /// Rejections in the tasks' histories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_verdict_rejections: Option<i64>,
    /// Approvals and rejections together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_verdict_count: Option<i64>,
    /// Approvals as a percentage of verdicts, to one decimal (0 before any verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_verdict_approval_rate_percent: Option<Number>,
    /// Submissions for review in the tasks' histories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_submitted_for_review_count: Option<i64>,
    /// Keys liza does not know, kept as written (`archived`, the running totals of archived
    /// tasks, among them).
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Metrics {
    opt tasks_done: "tasks_done",
    opt tasks_in_progress: "tasks_in_progress",
    opt tasks_blocked: "tasks_blocked",
    opt iterations_total: "iterations_total",
    opt review_cycles_total: "review_cycles_total",
    opt review_verdict_approvals: "review_verdict_approvals",
    opt review_verdict_rejections: "review_verdict_rejections",
    opt review_verdict_count: "review_verdict_count",
    opt review_verdict_approval_rate_percent: "review_verdict_approval_rate_percent",
    opt task_submitted_for_review_count: "task_submitted_for_review_count",
});

/// `sprint`: the current sprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sprint {
    /// Its id: `sprint-1`, `sprint-2`, … as liza names them.
    pub id: String,
    /// `goal.id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_ref: Option<String>,
    /// The sprint's tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// When it started, stopped and ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// Where the sprint stands.
    pub status: SprintStatus,
    /// Recomputed by every transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// Free-form; `liza resume --decision D` appends `{timestamp, decision, by}` under
    /// `decisions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrospective: Option<Node>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Sprint {
    req id: "id",
    opt goal_ref: "goal_ref",
    opt scope: "scope",
    opt timeline: "timeline",
    req status: "status",
    opt metrics: "metrics",
    opt retrospective: "retrospective",
});

impl Goal {
    /// A goal IN_PROGRESS from `now`, its alignment history opened with `summary`.
    pub fn start(
        id: String,
        description: &str,
        spec_ref: &str,
        summary: String,
        now: Timestamp,
    ) -> Goal {
        Goal {
            id,
            description: description.to_owned(),
            spec_ref: Some(spec_ref.to_owned()),
            created: Some(now),
            status: Some(GoalStatus::InProgress),
            alignment_history: Some(vec![AlignmentEvent {
                timestamp: now,
                event: "initialization".into(),
                summary: Some(summary),
                extra: Extra::default(),
            }]),
            extra: Extra::default(),
        }
    }
}

impl Sprint {
    /// A sprint starting `now` for goal `goal_ref`, with an empty scope.
    pub fn start(id: String, goal_ref: &str, now: Timestamp) -> Sprint {
        Sprint {
            id,
            goal_ref: Some(goal_ref.to_owned()),
            scope: Some(Scope {
                planned: Some(Vec::new()),
                stretch: Some(Vec::new()),
                extra: Extra::default(),
            }),
            timeline: Some(Timeline {
                started: Some(now),
                ..Timeline::default()
            }),
            status: SprintStatus::InProgress,
            metrics: None,
            retrospective: None,
            extra: Extra::default(),
        }
    }

    /// `scope.planned`, or none.
    pub fn planned(&self) -> &[TaskId] {
        self.scope
            .as_ref()
            .and_then(|s| s.planned.as_deref())
            .unwrap_or(&[])
    }

    /// `scope.stretch`, or none.
    pub fn stretch(&self) -> &[TaskId] {
        self.scope
            .as_ref()
            .and_then(|s| s.stretch.as_deref())
            .unwrap_or(&[])
    }
}
