//! Integration keeps what was merged (specs/git.md *Integration keeps what was merged*):
//! each MERGED task's merge commit is on the integration branch. A branch moved back by
//! hand (`git update-ref`, a force push, a reset) takes merged work away without a word;
//! every merger, `liza validate` and `liza doctor` look, `INTEGRATION_REWOUND` names the
//! tasks whose work left, and nothing is published on top until a person restores the
//! branch or accepts the rewind (`liza integration accept-rewind`, which keeps each
//! commit that left under `liza/attic/`).

use serde::Serialize;

use super::alarms::{self, Level};
use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::model::{CommitId, State, TaskStatus};
use crate::blackboard::{Actor, EventKind, TaskId};
use crate::git::Repo;
use crate::lifecycle::context::{history, task_mut, text};
use crate::lifecycle::{Outcome, Refusal, RuleId};

/// A MERGED task whose merge commit is no longer on integration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftIntegration {
    /// The task.
    pub task: TaskId,
    /// Its merge commit, as the task records it.
    pub merge_commit: CommitId,
}

/// Whether `state`'s task records that its leaving integration was accepted.
fn rewind_accepted(task: &crate::blackboard::model::Task) -> bool {
    task.history()
        .iter()
        .any(|h| h.event == EventKind::IntegrationRewindAccepted.as_str())
}

/// The MERGED tasks of `state` whose work is no longer on the integration branch (none
/// when the branch does not exist: that is said elsewhere).
pub fn work_that_left(repo: &Repo, state: &State) -> Result<Vec<LeftIntegration>, OpsError> {
    let integration = state.config.integration_branch();
    let Some(tip) = repo.branch_tip(integration)? else {
        return Ok(Vec::new());
    };
    let merged: Vec<(TaskId, CommitId, CommitId)> = state
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Merged && !rewind_accepted(t))
        .filter_map(|t| {
            let commit = t.merge_commit.clone()?;
            // An abbreviation (v0.1, a hand-written state) is expanded. A commit this
            // repository does not have is not judged: the blackboard may come from
            // another clone, or name a commit of its own making (v0.1's examples);
            // what is judged is work the repository holds and integration does not.
            let full = repo.resolve_commit(commit.as_str()).ok()?;
            Some((t.id.clone(), commit, full))
        })
        .collect();
    let full: Vec<CommitId> = merged.iter().map(|(_, _, f)| f.clone()).collect();
    let on_integration = repo.reachable_among(tip.as_str(), &full)?;
    Ok(merged
        .into_iter()
        .filter(|(_, _, f)| !on_integration.contains(f))
        .map(|(task, merge_commit, _)| LeftIntegration { task, merge_commit })
        .collect())
}

/// What a person reads about work that left integration.
pub fn describe(left: &[LeftIntegration], integration: &str) -> String {
    let listed: Vec<String> = left
        .iter()
        .map(|l| format!("{} ({})", l.task, short(&l.merge_commit)))
        .collect();
    format!(
        "{integration} was rewound: the merged work of {} is no longer on it",
        listed.join(", ")
    )
}

fn short(commit: &CommitId) -> &str {
    &commit.as_str()[..commit.as_str().len().min(10)]
}

/// The fix, for a person.
pub fn fix(left: &[LeftIntegration], integration: &str) -> String {
    let restore = left
        .last()
        .map(|l| format!("git update-ref refs/heads/{integration} {}", l.merge_commit))
        .unwrap_or_default();
    format!(
        "restore it ({restore} — or to a commit holding all of them), or accept the rewind with `liza integration accept-rewind` (each commit that left is kept under liza/attic/); nothing is published on top until then"
    )
}

/// Refuses to publish on a rewound integration branch, raising `INTEGRATION_REWOUND` once
/// per tip (every merger calls it before it records anything).
pub fn refuse_if_rewound(project: &Project, repo: &Repo, state: &State) -> Result<(), OpsError> {
    let left = work_that_left(repo, state)?;
    if left.is_empty() {
        return Ok(());
    }
    let integration = state.config.integration_branch();
    let message = describe(&left, integration);
    let tip = repo
        .branch_tip(integration)?
        .map(|t| t.to_string())
        .unwrap_or_default();
    if let Err(e) = alarms::raise(
        project,
        Level::Error,
        "INTEGRATION_REWOUND",
        &message,
        &format!("integration-rewound:{tip}"),
    ) {
        tracing::warn!(error = %e, "could not raise INTEGRATION_REWOUND");
    }
    Err(OpsError::refused(
        RuleId::IntegrationRewound,
        message,
        fix(&left, integration),
    ))
}

/// `liza integration accept-rewind` (people only): each MERGED task whose work left
/// integration gets its merge commit kept as `liza/attic/<task>-<n>` and a history event
/// `integration_rewind_accepted`; merges go on from the branch as it is.
pub fn accept_rewind(
    project: &Project,
    actor: &Actor,
) -> Result<Transition<Vec<LeftIntegration>>, OpsError> {
    super::people_only(project, actor, "integration accept-rewind")?;
    let repo = Repo::open(&project.root)?;
    let state = project.store.snapshot()?.state;
    let left = work_that_left(&repo, &state)?;
    if left.is_empty() {
        return Err(OpsError::refused(
            RuleId::IntegrationRewound,
            format!(
                "every MERGED task's work is on {}: there is no rewind to accept",
                state.config.integration_branch()
            ),
            "nothing to do",
        ));
    }
    let mut kept = std::collections::HashMap::new();
    for l in &left {
        if repo.has_commit(l.merge_commit.as_str()) {
            kept.insert(
                l.task.clone(),
                repo.keep_in_attic(&l.task, &l.merge_commit)?,
            );
        }
    }
    let done = transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            let mut outcome = Outcome::default();
            for l in &left {
                if state
                    .task(&l.task)
                    .is_none_or(|t| t.status != TaskStatus::Merged)
                {
                    return Err(Refusal::new(
                        RuleId::IntegrationRewound,
                        format!("task {} changed meanwhile", l.task),
                        "run `liza integration accept-rewind` again",
                    ));
                }
                let t = task_mut(state, &l.task);
                history(
                    t,
                    now,
                    EventKind::IntegrationRewindAccepted,
                    &who.name(),
                    &[("merge_commit", text(l.merge_commit.to_string()))],
                );
                outcome.event(
                    EventKind::IntegrationRewindAccepted,
                    &who.name(),
                    Some(&l.task),
                    Some(format!(
                        "its merge commit {} left {}; kept as {}",
                        l.merge_commit,
                        state.config.integration_branch(),
                        kept.get(&l.task)
                            .map_or("nothing (the commit is gone)", String::as_str)
                    )),
                );
            }
            Ok((outcome, left.clone()))
        },
    );
    // A refused acceptance leaves the refs as they were: the attic branches go again.
    if done.is_err() {
        for branch in kept.values() {
            let _ = repo.delete_branch(branch);
        }
    }
    done
}
