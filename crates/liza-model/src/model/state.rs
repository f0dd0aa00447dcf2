//! The whole blackboard: the top level of state.yaml.

use serde::{Deserialize, Serialize};

use crate::codec::{IdMap, record};
use crate::ids::{AgentId, TaskId};
use crate::node::Extra;
use crate::timestamp::Timestamp;

use super::{
    Agent, Anomaly, ArchivedTask, CircuitBreaker, Config, Discovery, Goal, Handoffs, HumanNote,
    SpecChange, Sprint, Task, TaskList, TaskStatus,
};

/// state.yaml, typed. Unknown top-level keys are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The schema version, `1`.
    pub version: i64,
    /// Absent in files written by the original tooling (read as 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// What the team works towards.
    pub goal: Goal,
    /// The live tasks, in creation order.
    pub tasks: TaskList,
    /// The registered agents, by id.
    pub agents: IdMap<AgentId, Agent>,
    /// Things found while working that may become tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered: Option<Vec<Discovery>>,
    /// Notes for the next run after a coder's context ran out, by task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoffs>,
    /// Notes from people to the agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_notes: Option<Vec<HumanNote>>,
    /// Anomalies reported by agents or by liza.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anomalies: Option<Vec<Anomaly>>,
    /// A record of spec changes, for people and other tools; liza adds nothing to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_changes: Option<Vec<SpecChange>>,
    /// The current sprint.
    pub sprint: Sprint,
    /// The circuit breaker's last analysis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreaker>,
    /// liza's index of the tasks moved to `archive/`: `{status, sprint}` by task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<IdMap<TaskId, ArchivedTask>>,
    /// The merge queue's order: task ids (specs/git.md *The queue*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_queue: Option<Vec<TaskId>>,
    /// The settings; missing keys take defaults.
    pub config: Config,
    /// Every other top-level key, kept as written: liza's `past_sprints` and `past_goals`,
    /// v0.1's `checkpoint`, another tool's.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(State missing = (Some(1), "top-level-key") {
    req version: "version",
    opt revision: "revision",
    req goal: "goal",
    req tasks: "tasks",
    req agents: "agents",
    opt discovered: "discovered",
    opt handoff: "handoff",
    opt human_notes: "human_notes",
    opt anomalies: "anomalies",
    opt spec_changes: "spec_changes",
    req sprint: "sprint",
    opt circuit_breaker: "circuit_breaker",
    opt archived: "archived",
    opt merge_queue: "merge_queue",
    req config: "config",
});

impl State {
    /// The state `liza init` writes: the goal, an empty first sprint, the integration branch.
    pub fn initial(goal: &str, spec_ref: &str, branch: &str, now: Timestamp) -> State {
        State {
            version: 1,
            revision: None,
            goal: Goal::start(
                "goal-1".into(),
                goal,
                spec_ref,
                "Initial goal. No tasks defined yet.".into(),
                now,
            ),
            tasks: Default::default(),
            agents: IdMap::default(),
            discovered: Some(Vec::new()),
            handoff: Some(Default::default()),
            human_notes: Some(Vec::new()),
            anomalies: Some(Vec::new()),
            spec_changes: Some(Vec::new()),
            sprint: Sprint::start("sprint-1".into(), "goal-1", now),
            circuit_breaker: None,
            archived: None,
            merge_queue: None,
            config: Config {
                integration_branch: Some(branch.to_owned()),
                ..Default::default()
            },
            extra: Default::default(),
        }
    }

    /// The revision, 0 for a file written without one.
    pub fn revision(&self) -> u64 {
        self.revision.filter(|r| *r >= 0).unwrap_or(0) as u64
    }

    /// The live task `id`.
    pub fn task(&self, id: &TaskId) -> Option<&Task> {
        self.tasks.iter().find(|t| &t.id == id).map(|t| &**t)
    }

    /// Mutable access to a task (cloned first if shared, see [`TaskList`]).
    pub fn task_mut(&mut self, id: &TaskId) -> Option<&mut Task> {
        let index = self.tasks.iter().position(|t| &t.id == id)?;
        self.tasks.get_mut(index)
    }

    /// Whether `id` names a live or an archived task.
    pub fn task_exists(&self, id: &TaskId) -> bool {
        self.task(id).is_some() || self.archived.as_ref().is_some_and(|a| a.contains_key(id))
    }

    /// `human_notes`, or none.
    pub fn human_notes(&self) -> &[HumanNote] {
        self.human_notes.as_deref().unwrap_or(&[])
    }

    /// The id the next note gets: `note-N` after the highest N in use.
    pub fn next_note_id(&self) -> String {
        let numbers = || {
            self.human_notes()
                .iter()
                .filter_map(|n| n.id.as_deref()?.strip_prefix("note-")?.parse::<u64>().ok())
        };
        let next = numbers()
            .max()
            .unwrap_or(0)
            .checked_add(1)
            .unwrap_or_else(|| {
                // A hand-written `note-18446744073709551615` leaves no number above it: the
                // lowest one free is taken (one of the first len + 1 is).
                let used: std::collections::HashSet<u64> = numbers().collect();
                (1..).find(|n| !used.contains(n)).unwrap_or(1)
            });
        format!("note-{next}")
    }

    /// Gives Liza v0.1 notes (written without ids) their `note-N`, in list order, after
    /// the ids in use; nothing else about them changes. Returns whether any was given.
    pub fn assign_note_ids(&mut self) -> bool {
        if self.human_notes().iter().all(|n| n.id.is_some()) {
            return false;
        }
        for i in 0..self.human_notes().len() {
            if self.human_notes()[i].id.is_none() {
                let id = self.next_note_id();
                if let Some(notes) = self.human_notes.as_mut() {
                    notes[i].id = Some(id);
                }
            }
        }
        true
    }

    /// `anomalies`, or none.
    pub fn anomalies(&self) -> &[Anomaly] {
        self.anomalies.as_deref().unwrap_or(&[])
    }

    /// `discovered`, or none.
    pub fn discovered(&self) -> &[Discovery] {
        self.discovered.as_deref().unwrap_or(&[])
    }

    /// Whether a dependency on `id` is satisfied (specs/lifecycle.md): the task is MERGED, or
    /// SUPERSEDED and every task in its `superseded_by` is satisfied. An archived task
    /// counts with its archived status; an archived SUPERSEDED task is satisfied by its
    /// live replacements (tasks whose `supersedes` names it), if any remain.
    pub fn dependency_satisfied(&self, id: &TaskId) -> bool {
        self.satisfied_within(id, 0)
    }

    fn satisfied_within(&self, id: &TaskId, depth: usize) -> bool {
        // Replacement chains are short; a cycle of replacements is never satisfied.
        if depth > 64 {
            return false;
        }
        if let Some(task) = self.task(id) {
            return match task.status {
                TaskStatus::Merged => true,
                TaskStatus::Superseded => task.superseded_by.as_deref().is_some_and(|by| {
                    !by.is_empty() && by.iter().all(|r| self.satisfied_within(r, depth + 1))
                }),
                _ => false,
            };
        }
        match self
            .archived
            .as_ref()
            .and_then(|a| a.get(id))
            .map(|a| a.status)
        {
            Some(TaskStatus::Merged) => true,
            Some(TaskStatus::Superseded) => self
                .tasks
                .iter()
                .filter(|t| {
                    t.supersedes
                        .as_ref()
                        .is_some_and(|s| s.as_slice().contains(id))
                })
                .all(|t| self.satisfied_within(&t.id, depth + 1)),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_notes(ids: &[Option<&str>]) -> State {
        let mut state = State::initial("g", "specs/vision.md", "integration", Timestamp::now());
        state.human_notes = Some(
            ids.iter()
                .map(|id| HumanNote {
                    id: id.map(str::to_owned),
                    timestamp: None,
                    message: "m".into(),
                    target: Some("all".into()),
                    seen_by: None,
                    extra: Default::default(),
                })
                .collect(),
        );
        state
    }

    #[test]
    fn the_next_note_id_follows_the_highest_and_never_repeats_one_in_use() {
        assert_eq!(with_notes(&[]).next_note_id(), "note-1");
        let usual = with_notes(&[Some("note-3"), Some("note-7"), Some("mine"), None]);
        assert_eq!(usual.next_note_id(), "note-8");
        // Nothing above u64::MAX: the lowest number free, not a wrap to a used one.
        let top = format!("note-{}", u64::MAX);
        let full = with_notes(&[Some("note-1"), Some(&top), Some("note-2")]);
        assert_eq!(full.next_note_id(), "note-3");
        let mut unnumbered = with_notes(&[Some(&top), None, None]);
        assert!(unnumbered.assign_note_ids());
        let ids: Vec<_> = unnumbered
            .human_notes()
            .iter()
            .map(|n| n.id.clone().unwrap())
            .collect();
        assert_eq!(ids, [top.as_str(), "note-1", "note-2"]);
    }
}
