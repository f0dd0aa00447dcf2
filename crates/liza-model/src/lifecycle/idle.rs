//! Why an agent has nothing to do, for its supervisor to say (specs/supervisor.md *Main
//! loop*): which tasks exist and what holds each — a dependency not merged yet, a plan
//! waiting for approval, another agent's claim, a block. Pure: the state in, a sentence
//! out.

use crate::model::{State, Task, TaskStatus};
use crate::{AgentId, Role};

/// How many tasks a sentence names before it counts the rest.
const NAMED: usize = 4;

/// Why `agent` finds no work in `state`.
pub fn explain(state: &State, agent: &AgentId) -> String {
    match agent.role() {
        Role::Coder => coder(state, agent),
        Role::CodeReviewer => reviewer(state),
        Role::Planner => "no trigger for the planner: it runs when the plan is empty, a task is blocked or failed to integrate, discoveries wait, or the sprint completes".into(),
    }
}

fn coder(state: &State, agent: &AgentId) -> String {
    // A coder works on one task at a time: while it holds one, that is the reason.
    if let Some(own) = crate::lifecycle::claims::active_tasks(state, agent).next() {
        let stands = match own.status {
            TaskStatus::ReadyForReview => "is in review".to_owned(),
            other => format!("is {}", other.as_str()),
        };
        return format!(
            "no task to work on: its task {} {stands} (a coder works on one task at a time)",
            own.id
        );
    }
    let open: Vec<&Task> = state
        .tasks
        .iter()
        .map(AsRef::as_ref)
        .filter(|t: &&Task| !t.status.is_terminal())
        .collect();
    if open.is_empty() {
        return "no task to work on: none is open (the planner adds them, or `liza add-task`)"
            .into();
    }
    let held: Vec<String> = open.iter().map(|t| what_holds(state, t)).collect();
    format!("no task to work on: {}", named(&held))
}

fn reviewer(state: &State) -> String {
    let in_review: Vec<String> = state
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::ReadyForReview)
        .map(|t| match &t.reviewing_by {
            Some(by) => format!("{} is being reviewed by {by}", t.id),
            None => format!("{} waits to be claimed", t.id),
        })
        .collect();
    if in_review.is_empty() {
        return "nothing to review: no task is READY_FOR_REVIEW".into();
    }
    format!("nothing to review: {}", named(&in_review))
}

/// What keeps `task` from a coder now.
fn what_holds(state: &State, task: &Task) -> String {
    let id = &task.id;
    match task.status {
        TaskStatus::Draft => format!("{id} is DRAFT (approve the plan: `liza finalize-task {id}`)"),
        TaskStatus::Unclaimed => {
            // The claim rule's own test of a dependency (a superseded one counts by its
            // replacements; an archived or unknown one never merges).
            let waiting: Vec<String> = task
                .depends_on()
                .iter()
                .filter(|dep| !state.dependency_satisfied(dep))
                .map(|dep| match state.task(dep) {
                    Some(d) => format!("{dep} ({})", d.status.as_str()),
                    None => format!(
                        "{dep} (not a live task: fix depends_on with `liza amend-task {id}`)"
                    ),
                })
                .collect();
            if waiting.is_empty() {
                format!("{id} is UNCLAIMED (claimable at the next look)")
            } else {
                format!("{id} waits for {} to be merged", waiting.join(", "))
            }
        }
        TaskStatus::Claimed => format!(
            "{id} is {}'s",
            task.assigned_to
                .as_ref()
                .map_or("another coder".into(), ToString::to_string)
        ),
        TaskStatus::ReadyForReview => format!("{id} is in review"),
        TaskStatus::Approved => format!("{id} is approved and waits to be merged"),
        TaskStatus::Blocked => {
            format!("{id} is BLOCKED (the planner or a person answers: `liza unblock {id}`)")
        }
        TaskStatus::Rejected => format!(
            "{id} is REJECTED and stays {}'s",
            task.assigned_to
                .as_ref()
                .map_or("its coder".into(), ToString::to_string)
        ),
        TaskStatus::IntegrationFailed => {
            format!("{id} failed to integrate (any coder may claim it for the fix)")
        }
        other => format!("{id} is {}", other.as_str()),
    }
}

/// The first [`NAMED`] of `items`, and how many more.
fn named(items: &[String]) -> String {
    let mut text = items
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if items.len() > NAMED {
        text.push_str(&format!(
            "; and {} more (`liza status`)",
            items.len() - NAMED
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Task;
    use crate::{AgentId, TaskId, Timestamp};

    fn task(id: &str, status: TaskStatus, assignee: Option<&str>, deps: &[&str]) -> Task {
        let mut t = Task::new(TaskId::parse(id).unwrap(), status);
        t.assigned_to = assignee.map(|a| AgentId::parse(a).unwrap());
        t.depends_on = Some(deps.iter().map(|d| TaskId::parse(d).unwrap()).collect());
        t
    }

    #[test]
    fn each_open_task_says_what_holds_it_and_the_rest_are_counted() {
        let mut s = crate::State::initial(
            "goal",
            "specs/vision.md",
            "integration",
            Timestamp::from_unix(0),
        );
        let (coder, reviewer) = (
            AgentId::parse("coder-1").unwrap(),
            AgentId::parse("code-reviewer-1").unwrap(),
        );
        assert!(explain(&s, &coder).contains("none is open"));
        assert!(explain(&s, &reviewer).contains("no task is READY_FOR_REVIEW"));
        for t in [
            task("t-1", TaskStatus::Claimed, Some("coder-3"), &[]),
            task("t-2", TaskStatus::Unclaimed, None, &["t-1"]),
            task("t-3", TaskStatus::Blocked, Some("coder-2"), &[]),
            task("t-4", TaskStatus::ReadyForReview, Some("coder-2"), &[]),
            task("t-5", TaskStatus::Merged, Some("coder-2"), &[]),
            task("t-6", TaskStatus::Approved, Some("coder-2"), &[]),
        ] {
            s.tasks.push(t.into());
        }
        assert_eq!(
            explain(&s, &coder),
            "no task to work on: t-1 is coder-3's; t-2 waits for t-1 (CLAIMED) to be merged; \
             t-3 is BLOCKED (the planner or a person answers: `liza unblock t-3`); \
             t-4 is in review; and 1 more (`liza status`)"
        );
        assert_eq!(
            explain(&s, &reviewer),
            "nothing to review: t-4 waits to be claimed"
        );
        // The coder whose task is in review is told that, not that others may be claimed.
        assert_eq!(
            explain(&s, &AgentId::parse("coder-2").unwrap()),
            "no task to work on: its task t-4 is in review (a coder works on one task at a time)"
        );
        assert_eq!(
            explain(&s, &AgentId::parse("coder-3").unwrap()),
            "no task to work on: its task t-1 is CLAIMED (a coder works on one task at a time)"
        );
    }
}
