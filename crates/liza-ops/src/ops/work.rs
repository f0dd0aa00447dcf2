//! The coder's and reviewer's reports: `submit-for-review` (with git's submit-time facts
//! gathered outside the lock), `submit-verdict`, `block`, `handoff`.

use super::authority::authorize_on;
use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::model::CommitId;
use crate::blackboard::{Actor, TaskId, Timestamp};
use crate::git::{Repo, dirty_files, head_of, worktree_dir};
use crate::lifecycle::{self, BlockCause, RuleId, SubmitFacts, Verdict};

/// `submit-for-review <task> [SHA]`.
pub fn submit_for_review(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    sha: Option<&str>,
) -> Result<Transition<CommitId>, OpsError> {
    if let Some(sha) = sha
        && CommitId::parse(sha).is_none()
    {
        return Err(OpsError::refused(
            RuleId::SubmitHead,
            format!("{sha:?} is not a commit SHA"),
            "give the full SHA of the worktree's HEAD, or omit it",
        ));
    }
    let snapshot = project.store.snapshot()?;
    let task = snapshot.state.task(id).ok_or_else(|| {
        OpsError::refused(
            RuleId::TaskExists,
            format!("there is no task {id}"),
            "list the tasks with `liza status`",
        )
    })?;
    // Permission and status first: a caller who may not submit learns that, not git facts.
    let who = authorize_on(
        &project.store,
        &snapshot.state,
        actor,
        Authority::Caller,
        Timestamp::now(),
    )?;
    lifecycle::table::row(
        lifecycle::Command::SubmitForReview,
        Some(task.status),
        who.kind(),
    )?;
    let dir = worktree_dir(&project.root, id);
    if !dir.join(".git").exists() {
        return Err(OpsError::refused(
            RuleId::Worktree,
            format!("task {id} has no worktree at .worktrees/{id}"),
            "the supervisor recreates it when the task is claimed again",
        ));
    }
    let repo = Repo::open(&project.root)?;
    let head = head_of(&dir)?;
    // The reviewer may be on another host: the submitted commit goes to the shared
    // remote before the submission is recorded.
    if dirty_files(&dir)?.is_empty() {
        super::shared_git::push_task(project, &repo, &snapshot.state, id)?;
    }
    let base = match &task.base_commit {
        Some(b) => b.clone(),
        None => repo
            .branch_tip(snapshot.state.config.integration_branch())?
            .unwrap_or_else(|| head.clone()),
    };
    let facts = SubmitFacts {
        head: head.clone(),
        dirty: dirty_files(&dir)?,
        changed: repo.changed_files(&base, &head)?,
        descends_from_base: repo.is_ancestor(&base, &head)?,
    };
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            Ok((
                lifecycle::submit(state, who, id, sha, &facts, now)?,
                head.clone(),
            ))
        },
    )
}

/// `submit-verdict <task> approve|reject --commit SHA [--reason R]`.
pub fn submit_verdict(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    verdict: &Verdict,
    commit: &str,
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            Ok((
                lifecycle::verdict(state, who, id, verdict, commit, now)?,
                (),
            ))
        },
    )
}

/// `block <task> --reason R --question Q… [--attempted A…]` by the coder.
pub fn block(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    reason: &str,
    questions: &[String],
    attempted: &[String],
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            Ok((
                lifecycle::block(
                    state,
                    who,
                    id,
                    reason,
                    questions,
                    attempted,
                    BlockCause::Agent,
                    now,
                )?,
                (),
            ))
        },
    )
}

/// `handoff <task> --summary S --next-action N`.
pub fn handoff(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    summary: &str,
    next_action: &str,
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            Ok((
                lifecycle::handoff(state, who, id, summary, next_action, now)?,
                (),
            ))
        },
    )
}

/// A built-in agent's run result with its token usage, recorded by the agent itself
/// (its identity and generation are checked like any report's).
pub fn record_builtin_result(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    run: lifecycle::RunResult,
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            let lifecycle::Who::Agent(agent) = who else {
                return Err(lifecycle::Refusal::new(
                    RuleId::Caller,
                    "only an agent records a run result",
                    "run it as the built-in agent (LIZA_AGENT_ID set)",
                ));
            };
            Ok((
                lifecycle::record_builtin_result(state, id, agent, run.clone(), now)?,
                (),
            ))
        },
    )
}
