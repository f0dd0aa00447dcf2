//! The goal and the current sprint.

use serde::{Deserialize, Serialize};

use crate::codec::{Number, record, yaml_enum};
use crate::ids::TaskId;
use crate::node::{Extra, Node};
use crate::timestamp::Timestamp;

yaml_enum! {
    pub enum GoalStatus (Some(11), "goal-status", "goal status") {
        InProgress = "IN_PROGRESS",
        Completed = "COMPLETED",
        Aborted = "ABORTED",
    }
}

yaml_enum! {
    pub enum SprintStatus (Some(11), "sprint-status", "sprint status") {
        InProgress = "IN_PROGRESS",
        Checkpoint = "CHECKPOINT",
        Completed = "COMPLETED",
        Aborted = "ABORTED",
    }
}

/// One entry of `goal.alignment_history`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlignmentEvent {
    pub timestamp: Timestamp,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(AlignmentEvent {
    req timestamp: "timestamp",
    req event: "event",
    opt summary: "summary",
});

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    pub id: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GoalStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment_history: Option<Vec<AlignmentEvent>>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scope {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<Vec<TaskId>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stretch: Option<Vec<TaskId>>,
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Scope {
    opt planned: "planned",
    opt stretch: "stretch",
});

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Timestamp>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_done: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_in_progress: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_blocked: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_total: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_cycles_total: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_verdict_approvals: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_verdict_rejections: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_verdict_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_verdict_approval_rate_percent: Option<Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_submitted_for_review_count: Option<i64>,
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sprint {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    pub status: SprintStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrospective: Option<Node>,
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

    pub fn planned(&self) -> &[TaskId] {
        self.scope
            .as_ref()
            .and_then(|s| s.planned.as_deref())
            .unwrap_or(&[])
    }

    pub fn stretch(&self) -> &[TaskId] {
        self.scope
            .as_ref()
            .and_then(|s| s.stretch.as_deref())
            .unwrap_or(&[])
    }
}
