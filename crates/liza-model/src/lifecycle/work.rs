//! Claimability and ordering (specs/lifecycle.md): which task a coder or a reviewer should take
//! next. Pure: the supervisor asks on a snapshot and re-checks under the lock by claiming.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::model::{State, Task, TaskStatus};
use crate::{AgentId, TaskId, Timestamp};

use super::claims::{active_tasks, assignee_lease, assignee_lease_lapsed};
use super::leases::{LeaseKey, Leases};

/// The six classes of coder work, in the order they are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkClass {
    /// Its own task with `handoff_pending`.
    Handoff = 1,
    /// Its own CLAIMED task (restart after exit 42 or a crash: resume).
    OwnClaimed = 2,
    /// Its own REJECTED task.
    OwnRejected = 3,
    /// An INTEGRATION_FAILED task.
    IntegrationFix = 4,
    /// Another coder's CLAIMED or REJECTED task whose lease expired.
    Expired = 5,
    /// An UNCLAIMED task whose dependencies are satisfied.
    Unclaimed = 6,
}

/// A task a coder may take, with its class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Which class of work it is.
    pub class: WorkClass,
    /// The task.
    pub task: TaskId,
}

/// For each task, how many tasks wait on it, directly or transitively.
pub fn waiting_counts(state: &State) -> HashMap<TaskId, usize> {
    let mut dependents: HashMap<&TaskId, Vec<&TaskId>> = HashMap::new();
    for t in &state.tasks {
        for d in t.depends_on() {
            dependents.entry(d).or_default().push(&t.id);
        }
    }
    let mut counts = HashMap::new();
    for t in &state.tasks {
        let mut seen: HashSet<&TaskId> = HashSet::new();
        let mut stack = vec![&t.id];
        while let Some(n) = stack.pop() {
            for d in dependents.get(n).map(Vec::as_slice).unwrap_or(&[]) {
                if seen.insert(d) {
                    stack.push(d);
                }
            }
        }
        counts.insert(t.id.clone(), seen.len());
    }
    counts
}

fn class_of(state: &State, t: &Task, agent: &AgentId, leases: &Leases) -> Option<WorkClass> {
    let own = t.assigned_to.as_ref() == Some(agent);
    let class = match t.status {
        TaskStatus::Claimed if own && t.handoff_pending == Some(true) => WorkClass::Handoff,
        TaskStatus::Claimed if own => WorkClass::OwnClaimed,
        TaskStatus::Rejected if own => WorkClass::OwnRejected,
        TaskStatus::IntegrationFailed => WorkClass::IntegrationFix,
        TaskStatus::Claimed | TaskStatus::Rejected if assignee_lease_lapsed(state, t, leases) => {
            WorkClass::Expired
        }
        TaskStatus::Unclaimed if t.depends_on().iter().all(|d| state.dependency_satisfied(d)) => {
            WorkClass::Unclaimed
        }
        _ => return None,
    };
    if class >= WorkClass::IntegrationFix {
        let failed = t.failed_by.as_deref().unwrap_or(&[]);
        if failed.len() >= 2 || failed.contains(agent) {
            return None;
        }
    }
    Some(class)
}

/// When coder `agent` may find work by time alone: the soonest another coder's CLAIMED or
/// REJECTED task it could then take over lapses, if its holder stays silent. A lease runs
/// out without any change to state.yaml, so no file event announces it. Never while it
/// holds an active task of its own: it takes no other (see [`coder_work`]).
pub fn coder_work_frees_in(state: &State, agent: &AgentId, leases: &Leases) -> Option<Duration> {
    if active_tasks(state, agent).next().is_some() {
        return None;
    }
    state
        .tasks
        .iter()
        .filter(|t| t.assigned_to.is_some() && t.assigned_to.as_ref() != Some(agent))
        .filter(|t| matches!(t.status, TaskStatus::Claimed | TaskStatus::Rejected))
        .filter(|t| {
            let failed = t.failed_by.as_deref().unwrap_or(&[]);
            failed.len() < 2 && !failed.contains(agent)
        })
        .filter_map(|t| leases.left(state, &assignee_lease(t)?))
        .filter(|left| !left.is_zero())
        .min()
}

/// When reviewer `reviewer` may find work by time alone: the soonest a review claim on a
/// task it could review lapses, or the registration of an approver whose approval it could
/// then merge.
pub fn reviewer_work_frees_in(
    state: &State,
    reviewer: &AgentId,
    leases: &Leases,
) -> Option<Duration> {
    state
        .tasks
        .iter()
        .filter_map(|t| match t.status {
            TaskStatus::ReadyForReview
                if t.assigned_to.as_ref() != Some(reviewer)
                    && t.reviewing_by.as_ref().is_some_and(|r| r != reviewer) =>
            {
                Some(LeaseKey::Review(t.id.clone()))
            }
            TaskStatus::Approved if t.approved_by.as_ref().is_some_and(|a| a != reviewer) => {
                t.approved_by.clone().map(LeaseKey::Agent)
            }
            _ => None,
        })
        .filter_map(|key| leases.left(state, &key))
        .filter(|left| !left.is_zero())
        .min()
}

/// A candidate with its sort keys: class, priority, tasks waiting on it (more first),
/// creation time, id.
type Ranked<'a> = (
    WorkClass,
    i64,
    std::cmp::Reverse<usize>,
    Option<Timestamp>,
    &'a TaskId,
);

/// The tasks coder `agent` may take, best first: by class, then priority (1 first), then
/// the number of tasks waiting on it (more first), then creation time. A coder works on
/// one task at a time (the claim's own rule, `plan_claim`): while it holds an active task
/// — CLAIMED, READY_FOR_REVIEW or REJECTED — only that task is work for it, and while
/// that task is in review, nothing is.
pub fn coder_work(state: &State, agent: &AgentId, leases: &Leases) -> Vec<Candidate> {
    let holds: Vec<&TaskId> = active_tasks(state, agent).map(|t| &t.id).collect();
    let waiting = waiting_counts(state);
    let mut found: Vec<Ranked<'_>> = state
        .tasks
        .iter()
        .filter(|t| holds.iter().all(|held| **held == t.id))
        .filter_map(|t| {
            let class = class_of(state, t, agent, leases)?;
            Some((
                class,
                t.priority(),
                std::cmp::Reverse(waiting.get(&t.id).copied().unwrap_or(0)),
                t.created,
                &t.id,
            ))
        })
        .collect();
    found.sort_by(|a, b| {
        (a.0, a.1, a.2)
            .cmp(&(b.0, b.1, b.2))
            .then_with(|| match (a.3, b.3) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            })
            .then_with(|| a.4.cmp(b.4))
    });
    found
        .into_iter()
        .map(|(class, _, _, _, id)| Candidate {
            class,
            task: id.clone(),
        })
        .collect()
}

/// What a reviewer should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewWork {
    /// Merge an approved task (its own approvals first; anyone's when the approver is gone).
    Merge(TaskId),
    /// Review a submitted task.
    Review(TaskId),
}

/// The reviewer's work, in order: approved tasks to merge, then submitted tasks with no
/// live review lease and not authored by it, oldest submission first.
pub fn reviewer_work(state: &State, reviewer: &AgentId, leases: &Leases) -> Vec<ReviewWork> {
    let approver_gone = |t: &Task| {
        t.approved_by
            .as_ref()
            .is_none_or(|a| leases.lapsed(state, &LeaseKey::Agent(a.clone())))
    };
    let mut merges: Vec<&Task> = state
        .tasks
        .iter()
        .map(|t| &**t)
        .filter(|t| {
            t.status == TaskStatus::Approved
                && (t.approved_by.as_ref() == Some(reviewer) || approver_gone(t))
        })
        .collect();
    merges.sort_by_key(|t| {
        (
            t.approved_by.as_ref() != Some(reviewer),
            t.status_changed_at,
        )
    });
    let mut reviews: Vec<&Task> = state
        .tasks
        .iter()
        .map(|t| &**t)
        .filter(|t| {
            t.status == TaskStatus::ReadyForReview
                && t.assigned_to.as_ref() != Some(reviewer)
                && (t.reviewing_by.is_none()
                    || leases.lapsed(state, &LeaseKey::Review(t.id.clone()))
                    || t.reviewing_by.as_ref() == Some(reviewer))
        })
        .collect();
    reviews.sort_by_key(|t| (t.status_changed_at, t.id.clone()));
    merges
        .into_iter()
        .map(|t| ReviewWork::Merge(t.id.clone()))
        .chain(
            reviews
                .into_iter()
                .map(|t| ReviewWork::Review(t.id.clone())),
        )
        .collect()
}
