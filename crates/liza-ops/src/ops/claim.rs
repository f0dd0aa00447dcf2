//! `claim-task` and `claim-review`. A task claim is multi-phase (specs/style.md): plan it on a
//! snapshot, prepare the worktree outside the state lock (under the task lock), then
//! re-check and commit under the state lock — and undo the worktree if that fails.

use crate::blackboard::EventKind;
use std::path::Path;
use std::time::Duration;

use super::authority::authorize_on;
use super::command::{self, Bounded};
use super::leases::LeaseCheck;
use super::task_lock::TaskLock;
use super::{Authority, OpsError, Project, Transition, still_current, supervisor_only, transition};
use crate::blackboard::model::AnomalyType;
use crate::blackboard::model::{CommandSpec, CommitId};
use crate::blackboard::{Actor, AgentId, State, TaskId, Timestamp};
use crate::git::{Repo, SavedWork, WorktreeMerge, worktree_dir};
use crate::lifecycle::context::text;
use crate::lifecycle::work_done::push_anomaly;
use crate::lifecycle::{self, ClaimKind, LeaseKey, RuleId, WorktreePlan};

/// A committed task claim.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Claimed {
    /// The task claimed.
    pub task: TaskId,
    /// The agent it is claimed for.
    pub agent: AgentId,
    /// The log event the claim recorded (its row of the transition table).
    pub event: String,
    /// The task's worktree, relative to the project: `.worktrees/<id>`.
    pub worktree: String,
    /// The integration tip the worktree now starts from: set for a fresh worktree and
    /// for an integration fix, `None` when the worktree was kept.
    pub base_commit: Option<String>,
    /// What was saved of the work found in the way: a previous worktree, or the
    /// uncommitted files of an integration fix.
    pub saved: SavedWork,
    /// For an integration fix: files left with conflict markers by the merge of the
    /// integration tip into the task branch, for the coder to resolve and commit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
}

/// The worktree of an integration fix, brought up to the integration tip.
struct IntegrationFix {
    /// The integration tip merged in (the task's new base_commit).
    tip: CommitId,
    /// The task branch's head before the merge, to undo it if the claim fails.
    head: CommitId,
    wip_commit: Option<CommitId>,
    conflicts: Vec<String>,
}

/// INTEGRATION_FAILED → CLAIMED (specs/lifecycle.md): before the coder runs, the current
/// integration tip is merged into the task branch — committed when clean, conflicts left
/// as markers for the coder. Uncommitted files are saved in a WIP commit first.
fn prepare_integration_fix(
    repo: &Repo,
    project: &Project,
    id: &TaskId,
    integration: &str,
    tip: CommitId,
) -> Result<IntegrationFix, OpsError> {
    let dir = worktree_dir(&project.root, id);
    let wip_commit = repo.commit_wip(&dir, "an integration fix")?;
    let head = crate::git::head_of(&dir)?;
    let message = format!("Merge {integration} into {}", crate::git::task_branch(id));
    let conflicts = match repo.merge_into_worktree(&dir, &tip, integration, &message)? {
        WorktreeMerge::Conflicts { paths } => paths,
        WorktreeMerge::UpToDate | WorktreeMerge::Committed { .. } => Vec::new(),
    };
    Ok(IntegrationFix {
        tip,
        head,
        wip_commit,
        conflicts,
    })
}

/// `claim-task <task> <agent>` on the CLI: people and scripts only.
pub fn claim_task(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    agent: &AgentId,
    say: &dyn Fn(&str),
) -> Result<Transition<Claimed>, OpsError> {
    supervisor_only(actor, "claim-task")?;
    claim_for(project, actor, id, agent, LeaseCheck::WatchNow(say))
}

/// The claim itself, as the supervisor performs it for `agent`.
pub fn claim_for(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    agent: &AgentId,
    check: LeaseCheck<'_>,
) -> Result<Transition<Claimed>, OpsError> {
    let keys: Vec<LeaseKey> = project
        .store
        .snapshot()?
        .state
        .task(id)
        .filter(|t| t.assigned_to.as_ref() != Some(agent))
        .and_then(lifecycle::claims::assignee_lease)
        .into_iter()
        .collect();
    let leases = check.leases(project, &keys)?;
    let _task_lock = TaskLock::try_acquire(&project.store, id)?;
    still_current(&project.store, actor)?;
    let snapshot = project.store.snapshot()?;
    let now = Timestamp::now();
    authorize_on(
        &project.store,
        &snapshot.state,
        actor,
        Authority::Supervisor,
        now,
    )?;
    let kind = lifecycle::plan_claim(&snapshot.state, id, agent, &leases)?;
    let repo = Repo::open(&project.root)?;
    let integration = snapshot.state.config.integration_branch().to_owned();
    // With a shared remote, the integration tip and the task's branch are the remote's:
    // another host may have published, or worked on the task.
    let shared_tip = super::shared_git::sync_integration(project, &repo, &snapshot.state)?;
    super::shared_git::sync_task(project, &repo, &snapshot.state, id)?;
    let integration_tip = |repo: &Repo| -> Result<CommitId, OpsError> {
        match &shared_tip {
            Some(tip) => Ok(tip.clone()),
            None => repo.branch_tip(&integration)?.ok_or_else(|| {
                OpsError::refused(
                    RuleId::IntegrationBranch,
                    format!("the integration branch {integration} does not exist"),
                    format!("create it: git branch {integration} <base>"),
                )
            }),
        }
    };
    let mut saved = SavedWork::default();
    let mut base = None;
    let mut fix = None;
    match kind.worktree() {
        WorktreePlan::Fresh | WorktreePlan::ArchiveThenFresh => {
            if let ClaimKind::TakeOverExpired {
                previous: Some(previous),
            } = &kind
            {
                stop_previous_owner(project, &snapshot.state, previous);
            }
            let tip = integration_tip(&repo)?;
            let reason = match &kind {
                ClaimKind::Fresh => "a fresh claim".to_owned(),
                _ => format!("{agent} took the task over"),
            };
            saved = repo.create_task_worktree(&project.root, id, &tip, &integration, &reason)?;
            base = CommitId::parse(&tip);
        }
        WorktreePlan::Keep => repo.recreate_task_worktree(&project.root, id)?,
    }
    let fresh = kind.worktree() != WorktreePlan::Keep;
    if kind == ClaimKind::IntegrationFix {
        let tip = integration_tip(&repo)?;
        let prepared = prepare_integration_fix(&repo, project, id, &integration, tip)?;
        base = CommitId::parse(&prepared.tip);
        saved.wip_commit = prepared.wip_commit.clone();
        fix = Some(prepared);
    }
    if fresh
        && let Some(cmd) = &snapshot.state.config.post_worktree_cmd
        && let Err(e) = run_post_worktree(
            cmd,
            &project.root,
            &worktree_dir(&project.root, id),
            &snapshot.state.config.sandbox(),
        )
    {
        undo(&repo, project, id, &integration);
        return Err(e);
    }
    let result = transition(
        &project.store,
        actor,
        Authority::Supervisor,
        |state, _who, now| {
            let mut outcome =
                lifecycle::claim(state, id, agent, &kind, base.as_ref(), &leases, now)?;
            if saved.attic.is_some() || saved.wip_commit.is_some() || saved.moved_dir.is_some() {
                outcome.event(
                    EventKind::WorktreeArchived,
                    agent.as_str(),
                    Some(id),
                    Some(describe(&saved)),
                );
            }
            let event = outcome
                .events
                .first()
                .map(|e| e.action.clone())
                .unwrap_or_default();
            Ok((outcome, event))
        },
    );
    match result {
        Ok(done) => Ok(Transition {
            value: Claimed {
                task: id.clone(),
                agent: agent.clone(),
                event: done.value,
                worktree: lifecycle::worktree_path(id),
                base_commit: base.map(|b| b.to_string()),
                saved,
                conflicts: fix.map(|f| f.conflicts).unwrap_or_default(),
            },
            outcome: done.outcome,
            revision: done.revision,
        }),
        Err(e) => {
            if fresh {
                undo(&repo, project, id, &integration);
            }
            if let Some(fix) = &fix
                && let Err(undo) = repo.reset_worktree(&worktree_dir(&project.root, id), &fix.head)
            {
                tracing::warn!(task = %id, error = %undo, "could not undo the integration merge of a failed claim");
            }
            Err(e)
        }
    }
}

/// Describes saved work for a log entry.
pub fn describe(saved: &SavedWork) -> String {
    let mut parts = Vec::new();
    if let Some(c) = &saved.wip_commit {
        parts.push(format!("WIP commit {c}"));
    }
    if let Some(a) = &saved.attic {
        parts.push(format!("archived to {a}"));
    }
    if let Some(d) = &saved.moved_dir {
        parts.push(format!("leftover directory moved to {d}"));
    }
    parts.join("; ")
}

/// Removes a worktree this claim created (it holds nothing but the base commit).
fn undo(repo: &Repo, project: &Project, id: &TaskId, integration: &str) {
    if let Err(e) = repo.retire_worktree(&project.root, id, "an abandoned claim", integration) {
        tracing::warn!(task = %id, error = %e, "could not remove the worktree of a failed claim");
    }
}

/// Stops the previous owner's agent process group when it runs on this host (its lease
/// expired, so its supervisor is gone or stuck; the agent must not keep writing).
fn stop_previous_owner(project: &Project, state: &State, previous: &AgentId) {
    let records = project.store.live_records().unwrap_or_default();
    let Some(record) = records.current(state, previous) else {
        return;
    };
    let Some(pgid) = record.pgid else {
        return;
    };
    if !crate::blackboard::liveness::pid_space_here().holds(record) || pgid <= 1 {
        return;
    }
    let Ok(raw) = i32::try_from(pgid) else { return };
    let group = nix::unistd::Pid::from_raw(raw);
    if nix::sys::signal::killpg(group, None).is_ok() {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
        tracing::info!(agent = %previous, pgid, "stopped the previous owner's process group");
    }
}

/// Runs `post_worktree_cmd` in a new worktree, killed with its process group after 300 s:
/// sandboxed like the agents (it installs what the worktree's code names), with their
/// network (specs/sandbox.md *Checks*).
fn run_post_worktree(
    cmd: &CommandSpec,
    root: &Path,
    dir: &Path,
    sandbox: &crate::blackboard::model::SandboxConfig,
) -> Result<(), OpsError> {
    let Some(argv) = command::argv(cmd) else {
        return Ok(());
    };
    let jail = crate::sandbox::Jail::for_dir(root, dir, sandbox, sandbox.network());
    let run = Bounded {
        dir,
        jail: &jail,
        timeout: Duration::from_secs(300),
        output: None,
        env: &[],
    };
    let exit = run.run(&argv, |_| {});
    if exit.success() {
        return Ok(());
    }
    Err(OpsError::refused(
        RuleId::PostWorktreeCmd,
        format!(
            "post_worktree_cmd failed: it {}; the claim was undone",
            exit.describe()
        ),
        "fix config.post_worktree_cmd, or remove it",
    ))
}

/// A committed review claim; `spec_changed` holds the spec's blob ids (at finalize, now)
/// when the spec file changed since the task was finalized (spec currency: the review
/// prompt shows the diff, and a `spec_changed` anomaly is logged).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReviewClaim {
    /// The spec's blob ids (at finalize, now), when the spec changed since.
    pub spec_changed: Option<(String, String)>,
}

/// `claim-review <task> <reviewer>` on the CLI: people and scripts only.
pub fn claim_review(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    reviewer: &AgentId,
    check: LeaseCheck<'_>,
) -> Result<Transition<ReviewClaim>, OpsError> {
    supervisor_only(actor, "claim-review")?;
    let leases = check.leases(project, &[LeaseKey::Review(id.clone())])?;
    let spec_ref = project
        .store
        .snapshot()?
        .state
        .task(id)
        .and_then(|t| t.spec_ref.clone());
    let current = super::tasks::spec_facts(&project.root, spec_ref.as_deref());
    transition(
        &project.store,
        actor,
        Authority::Supervisor,
        |state, _who, now| {
            let mut outcome = lifecycle::claim_review(state, id, reviewer, &leases, now)?;
            let task = state.task(id);
            let finalized = task.and_then(|t| t.spec_hash.clone());
            let mut spec_changed = None;
            if let (Some(then), Some(blob)) = (finalized, current.blob.clone())
                && then != blob
                && task.is_some_and(|t| t.spec_ref == spec_ref)
            {
                let spec = lifecycle::spec_file(spec_ref.as_deref().unwrap_or("")).to_owned();
                push_anomaly(
                    state,
                    id,
                    "liza",
                    AnomalyType::SpecChanged,
                    &[
                        ("spec", text(spec.clone())),
                        ("finalized_blob", text(then.clone())),
                        ("current_blob", text(blob.clone())),
                    ],
                    now,
                );
                outcome.event(
                    EventKind::SpecChanged,
                    "liza",
                    Some(id),
                    Some(format!(
                        "{spec} changed since the task was finalized ({then} → {blob})"
                    )),
                );
                spec_changed = Some((then, blob));
            }
            Ok((outcome, ReviewClaim { spec_changed }))
        },
    )
}
