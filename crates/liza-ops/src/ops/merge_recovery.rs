//! Recovery of interrupted merges (specs/git.md *Merge* step 1): a `merge_intent` left by a
//! process that died mid-merge is finished as MERGED when integration already holds its
//! candidate, and dropped otherwise (the task stays APPROVED and is merged again). Run by
//! every merge under the integration lock before its own work, and by supervisors when
//! they start — never by read-only commands.

use serde::Serialize;

use super::integration_lock::IntegrationLock;
use super::merge_outcome::{Committed, MergeResult, drift, finish_merged, short};
use super::task_lock::TaskLock;
use super::{OpsError, Project, supervisor_only};
use crate::blackboard::model::TaskStatus;
use crate::blackboard::node::Value;
use crate::blackboard::{Actor, TaskId};
use crate::git::{Repo, integration_worktree_dir};
use crate::lifecycle::{self, MergeRecord};

/// An interrupted merge found by the next merge (or a supervisor starting).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// The task whose merge was interrupted.
    pub task: TaskId,
    /// What became of it.
    pub action: RecoveryAction,
    /// The merge candidate its `merge_intent` recorded.
    pub candidate: String,
}

/// What became of an interrupted merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryAction {
    /// Integration already held the candidate: now MERGED.
    Finished,
    /// Nothing was published: the task stays APPROVED and is merged again.
    Dropped,
}

impl std::fmt::Display for RecoveryAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecoveryAction::Finished => "finished",
            RecoveryAction::Dropped => "dropped",
        })
    }
}

/// Recovers every interrupted merge (a `merge_intent` left by a process that died): the
/// candidate is on integration → finish as MERGED; otherwise drop the intent. Takes the
/// integration lock without waiting: if a merge is running, it recovers them itself.
/// Run by supervisors when they start.
pub fn recover_merges(project: &Project, actor: &Actor) -> Result<Vec<Recovery>, OpsError> {
    supervisor_only(actor, "merge recovery")?;
    let snapshot = project.store.snapshot()?;
    if !snapshot
        .state
        .tasks
        .iter()
        .any(|t| t.merge_intent.is_some())
    {
        return Ok(Vec::new());
    }
    let integration = snapshot.state.config.integration_branch().to_owned();
    let repo = Repo::open(&project.root)?;
    let placeholder = TaskId::parse("recovery").expect("a valid id");
    let Some(_lock) = IntegrationLock::try_acquire(
        &project.store,
        &placeholder,
        &integration_worktree_dir(&project.root),
    )?
    else {
        return Ok(Vec::new());
    };
    let mut committed = Committed::default();
    recover_locked(project, actor, &repo, &integration, None, &mut committed)
}

/// Recovery under the integration lock the caller holds; `held` is the task whose task
/// lock the caller holds already.
pub(super) fn recover_locked(
    project: &Project,
    actor: &Actor,
    repo: &Repo,
    integration: &str,
    held: Option<&TaskId>,
    committed: &mut Committed,
) -> Result<Vec<Recovery>, OpsError> {
    let snapshot = project.store.snapshot()?;
    let mut recovered = Vec::new();
    let interrupted: Vec<_> = snapshot
        .state
        .tasks
        .iter()
        .filter_map(|t| Some((t.clone(), t.merge_intent.clone()?)))
        .collect();
    let me = super::merger::this_merger(project);
    let now = crate::blackboard::Timestamp::now();
    for (task, intent) in interrupted {
        // Another host's merger at work keeps its intents (specs/git.md *A batch*).
        if me.other_at_work(&intent, now, super::merger::pid_alive) {
            continue;
        }
        let _task_lock = if held == Some(&task.id) {
            None
        } else {
            match TaskLock::try_acquire(&project.store, &task.id) {
                Ok(lock) => Some(lock),
                Err(_) => continue,
            }
        };
        let candidate = intent.candidate.to_string();
        let published = task.status == TaskStatus::Approved
            && match repo.branch_tip(integration)? {
                Some(tip) => repo.has_commit(&candidate) && repo.is_ancestor(&candidate, &tip)?,
                None => false,
            };
        if published {
            let merge_type = if Some(&intent.candidate) == task.review_commit.as_ref() {
                "fast-forward"
            } else {
                "merge-commit"
            };
            let merge = MergeRecord {
                commit: intent.candidate.clone(),
                merge_type: merge_type.to_owned(),
                drift_commits: drift(
                    repo,
                    task.base_commit.as_ref(),
                    intent.integration_tip.as_str(),
                ),
                retries: 0,
                batch: 1,
            };
            finish_merged(
                project,
                actor,
                repo,
                integration,
                &task.id,
                &merge,
                committed,
            )?;
            recovered.push(Recovery {
                task: task.id.clone(),
                action: RecoveryAction::Finished,
                candidate,
            });
        } else {
            let reason = format!(
                "interrupted merge: {integration} does not hold candidate {}; the merge starts over",
                short(&candidate)
            );
            committed.run(project, actor, |state, now| {
                lifecycle::drop_merge_intent(state, &task.id, &reason, now)
            })?;
            recovered.push(Recovery {
                task: task.id.clone(),
                action: RecoveryAction::Dropped,
                candidate,
            });
        }
    }
    Ok(recovered)
}

/// The result of a merge that recovery finished.
pub(super) fn merged_result(
    project: &Project,
    id: &TaskId,
    candidate: &str,
) -> Result<MergeResult, OpsError> {
    let snapshot = project.store.snapshot()?;
    let history = snapshot
        .state
        .task(id)
        .and_then(|t| t.history().last().cloned());
    let text = |key: &str| {
        history
            .as_ref()
            .and_then(|h| h.extra.get(key))
            .and_then(|n| n.as_str().map(str::to_owned))
    };
    Ok(MergeResult::Merged {
        merge_commit: candidate.to_owned(),
        merge_type: text("merge_type").unwrap_or_default(),
        drift_commits: history
            .as_ref()
            .and_then(|h| h.extra.get("drift_commits"))
            .and_then(|n| match n.value {
                Value::Int(n) => u64::try_from(n).ok(),
                _ => None,
            })
            .unwrap_or(0),
        retries: 0,
    })
}
