//! The planner's wake triggers (specs/supervisor.md *Planner wake triggers*): what there is for
//! the planner to decide, in priority order, and their acknowledgement. Triggers are
//! edge-triggered: a BLOCKED or INTEGRATION_FAILED task counts until a `planner_seen`
//! event follows the event that raised it; a note or anomaly until its `seen_by` names
//! the planner; so an unchanged condition never re-spawns the planner.

use crate::EventKind;
use crate::model::{AnomalyType, GoalStatus, SprintStatus, State, Task, TaskStatus};
use crate::node::{Node, Value};
use crate::{AgentId, TaskId, Timestamp};

use super::context::{Outcome, history, text};

/// The eight triggers, in priority order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TriggerKind {
    /// No live task and none planned: a new blackboard, or a sprint just opened.
    InitialPlanning,
    /// A task was BLOCKED after the planner last looked at it.
    BlockedTasks,
    /// A task failed to integrate after the planner last looked at it.
    IntegrationFailed,
    /// A live task has two or more coders in `failed_by`.
    HypothesisExhausted,
    /// An `immediate` discovery is not yet converted to a task.
    ImmediateDiscovery,
    /// A `system_ambiguity` anomaly lacks the planner in its `seen_by`.
    SystemAmbiguity,
    /// A human note lacks the planner in its `seen_by`.
    HumanNote,
    /// The sprint is COMPLETED: open the next one or declare the goal met.
    SprintComplete,
}

impl TriggerKind {
    /// The name prompts and log entries use, e.g. `BLOCKED_TASKS`.
    pub fn name(self) -> &'static str {
        match self {
            TriggerKind::InitialPlanning => "INITIAL_PLANNING",
            TriggerKind::BlockedTasks => "BLOCKED_TASKS",
            TriggerKind::IntegrationFailed => "INTEGRATION_FAILED",
            TriggerKind::HypothesisExhausted => "HYPOTHESIS_EXHAUSTED",
            TriggerKind::ImmediateDiscovery => "IMMEDIATE_DISCOVERY",
            TriggerKind::SystemAmbiguity => "SYSTEM_AMBIGUITY",
            TriggerKind::HumanNote => "HUMAN_NOTE",
            TriggerKind::SprintComplete => "SPRINT_COMPLETE",
        }
    }
}

/// One condition for the planner, with what it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// Which trigger it is.
    pub kind: TriggerKind,
    /// The task it concerns, if any.
    pub task: Option<TaskId>,
    /// The note, discovery id, or anomaly index it concerns.
    pub item: Option<String>,
}

impl Trigger {
    fn of(kind: TriggerKind) -> Trigger {
        Trigger {
            kind,
            task: None,
            item: None,
        }
    }

    fn task(kind: TriggerKind, task: &Task) -> Trigger {
        Trigger {
            kind,
            task: Some(task.id.clone()),
            item: None,
        }
    }

    /// A one-line description for prompts and logs.
    pub fn describe(&self) -> String {
        let mut text = self.kind.name().to_owned();
        if let Some(task) = &self.task {
            text.push_str(&format!(" {task}"));
        }
        if let Some(item) = &self.item {
            text.push_str(&format!(" {item}"));
        }
        text
    }
}

/// Whether the planner saw `task` after its last `event` (e.g. `blocked`).
fn seen_since(task: &Task, event: EventKind, trigger: TriggerKind) -> bool {
    let history = task.history();
    let Some(raised) = history.iter().rposition(|h| h.kind() == Some(event)) else {
        return false;
    };
    history[raised..].iter().any(|h| {
        h.kind() == Some(EventKind::PlannerSeen)
            && h.extra
                .get("trigger")
                .and_then(|n| n.as_str())
                .is_some_and(|t| t == trigger.name())
    })
}

fn seen_by(list: Option<&Vec<String>>, planner: &AgentId) -> bool {
    list.is_some_and(|l| l.iter().any(|s| s == planner.as_str()))
}

/// Every trigger that holds now, in priority order (BLOCKED tasks by priority, then
/// oldest first).
pub fn planner_triggers(state: &State, planner: &AgentId) -> Vec<Trigger> {
    let mut found = Vec::new();
    if state
        .goal
        .status
        .is_some_and(|g| g != GoalStatus::InProgress)
        || state.sprint.status == SprintStatus::Aborted
    {
        return found;
    }
    // Nothing to work on and nothing planned for this sprint: a new blackboard, or the
    // sprint `sprint next` or `goal next` opened (the last one's tasks archived). A sprint
    // whose planned tasks were archived while it ran is not planned anew.
    let no_tasks = state.tasks.is_empty() && state.sprint.planned().is_empty();
    if no_tasks {
        found.push(Trigger::of(TriggerKind::InitialPlanning));
    }
    let mut blocked: Vec<&Task> = state
        .tasks
        .iter()
        .map(|t| t.as_ref())
        .filter(|t| t.status == TaskStatus::Blocked)
        .filter(|t| !seen_since(t, EventKind::Blocked, TriggerKind::BlockedTasks))
        .collect();
    blocked.sort_by_key(|t| (t.priority.unwrap_or(3), t.status_changed_at));
    found.extend(
        blocked
            .into_iter()
            .map(|t| Trigger::task(TriggerKind::BlockedTasks, t)),
    );
    for t in &state.tasks {
        if t.status == TaskStatus::IntegrationFailed
            && !seen_since(
                t,
                EventKind::IntegrationFailed,
                TriggerKind::IntegrationFailed,
            )
        {
            found.push(Trigger::task(TriggerKind::IntegrationFailed, t));
        }
    }
    for t in &state.tasks {
        let mut coders: Vec<&AgentId> = t.failed_by.iter().flatten().collect();
        coders.sort();
        coders.dedup();
        if !t.status.is_terminal()
            && coders.len() >= 2
            && !seen_since(t, EventKind::Created, TriggerKind::HypothesisExhausted)
        {
            found.push(Trigger::task(TriggerKind::HypothesisExhausted, t));
        }
    }
    for d in state.discovered.iter().flatten() {
        let immediate = d.urgency.is_some_and(|u| u.as_str() == "immediate");
        let seen = d
            .extra
            .get("seen_by")
            .is_some_and(|n| node_lists(n, planner.as_str()));
        if immediate && d.converted_to_task.is_none() && !seen {
            found.push(Trigger {
                kind: TriggerKind::ImmediateDiscovery,
                task: None,
                item: Some(d.id.clone()),
            });
        }
    }
    for (i, a) in state.anomalies.iter().flatten().enumerate() {
        if a.kind == AnomalyType::SystemAmbiguity && !seen_by(a.seen_by.as_ref(), planner) {
            found.push(Trigger {
                kind: TriggerKind::SystemAmbiguity,
                task: a.task.as_deref().and_then(|t| TaskId::parse(t).ok()),
                item: Some(format!("anomaly #{}", i + 1)),
            });
        }
    }
    for n in state.human_notes.iter().flatten() {
        if !seen_by(n.seen_by.as_ref(), planner) {
            found.push(Trigger {
                kind: TriggerKind::HumanNote,
                task: None,
                item: n.id.clone(),
            });
        }
    }
    if state.sprint.status == SprintStatus::Completed {
        found.push(Trigger::of(TriggerKind::SprintComplete));
    }
    found
}

fn node_lists(node: &Node, name: &str) -> bool {
    matches!(&node.value, Value::Seq(items) if items.iter().any(|i| i.as_str() == Some(name)))
}

/// Records that the planner was shown `triggers`: `planner_seen` history events, the
/// planner in notes' and anomalies' `seen_by`. Conditions that are not acknowledgeable
/// (no tasks, a completed sprint) are resolved only by the planner's own commands.
pub fn acknowledge(
    state: &mut State,
    planner: &AgentId,
    triggers: &[Trigger],
    now: Timestamp,
) -> Outcome {
    let mut outcome = Outcome::default();
    for trigger in triggers {
        match trigger.kind {
            TriggerKind::BlockedTasks
            | TriggerKind::IntegrationFailed
            | TriggerKind::HypothesisExhausted => {
                if let Some(t) = trigger.task.as_ref().and_then(|id| state.task_mut(id)) {
                    history(
                        t,
                        now,
                        EventKind::PlannerSeen,
                        planner.as_str(),
                        &[("trigger", text(trigger.kind.name()))],
                    );
                    outcome.event(
                        EventKind::PlannerSeen,
                        planner.as_str(),
                        trigger.task.as_ref(),
                        Some(trigger.kind.name().to_owned()),
                    );
                }
            }
            TriggerKind::HumanNote => {
                for n in state.human_notes.iter_mut().flatten() {
                    // A v0.1 note without an id yet is acknowledged with the others shown.
                    if n.id == trigger.item {
                        n.seen_by
                            .get_or_insert_with(Vec::new)
                            .push(planner.to_string());
                    }
                }
            }
            TriggerKind::SystemAmbiguity => {
                let index = trigger
                    .item
                    .as_deref()
                    .and_then(|i| i.strip_prefix("anomaly #"))
                    .and_then(|n| n.parse::<usize>().ok());
                if let Some(a) = index
                    .and_then(|i| i.checked_sub(1))
                    .and_then(|i| state.anomalies.as_mut()?.get_mut(i))
                {
                    a.seen_by
                        .get_or_insert_with(Vec::new)
                        .push(planner.to_string());
                }
            }
            TriggerKind::ImmediateDiscovery => {
                for d in state.discovered.iter_mut().flatten() {
                    if Some(&d.id) == trigger.item.as_ref() {
                        d.extra.insert(
                            "seen_by",
                            Node::new(Value::Seq(vec![Node::str(planner.to_string())])),
                        );
                    }
                }
            }
            TriggerKind::InitialPlanning | TriggerKind::SprintComplete => {}
        }
    }
    if outcome.events.is_empty() && !triggers.is_empty() {
        let names: Vec<String> = triggers.iter().map(Trigger::describe).collect();
        outcome.event(
            EventKind::PlannerSeen,
            planner.as_str(),
            None,
            Some(names.join(", ")),
        );
    }
    outcome
}
