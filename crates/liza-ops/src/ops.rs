//! Application operations: each combines the store, the lifecycle rules and git into one
//! implementation shared by the CLI, the supervisor and the built-in agent. Lifecycle
//! changes run through [`transition`] (authority checked under the lock, sprint
//! completion, log entries); operations with git work check on a snapshot, do the git
//! work outside the state lock, then re-check and commit.

mod agents;
pub mod alarms;
mod analyze;
mod archive;
mod authority;
mod claim;
mod command;
mod gc;
mod hand_edits;
mod history;
mod init;
pub mod integration_check;
mod integration_lock;
pub mod leases;
pub use integration_lock::merge_running;
mod merge;
mod merge_batch;
mod merge_checks;
mod merge_outcome;
mod merge_plan;
mod merge_recovery;
mod merge_round;
mod merger;
mod moves;
mod note;
mod project;
mod reports;
mod shared_git;
pub mod spec_committed;
mod sprint;
mod sprint_summary;
mod supervision;
mod task_lock;
mod tasks;
mod work;

pub use agents::{BeatFacts, Heartbeat, heartbeat, mint_generation, register, unregister};
pub use analyze::{
    Analysis, DEFAULT_CHECKPOINT_AT, all_matches, analysis_recorded, analyze, analyze_with,
};
pub use archive::{
    Archived, Select as ArchiveSelect, archive_terminal, check_stem as check_sprint_stem,
};
pub use authority::{
    Authority, CHANNEL_FILES_VAR, CHANNEL_ROLE_VAR, CODER_COMMANDS, PLANNER_COMMANDS,
    REVIEWER_COMMANDS, SUPERVISOR_PID_VAR, Transition, authorize, channel_allows, channel_commands,
    dry_run, people_only, still_current, supervisor_only, transition,
};
pub use claim::{
    Claimed, ReviewClaim, claim_for, claim_review, claim_task, describe as describe_saved,
};
pub use gc::{GcReport, Orphan, gc};
pub use hand_edits::take_set_aside;
pub use history::{RevisionInfo, diff, history, revision_text};
pub use init::{InitOutcome, InitRequest, JoinOutcome, init, join};
pub use leases::{LeaseCheck, dead_holders};
pub use merge::{MergeReport, MergeResult, MergeWait, PUBLISH_RETRIES, TaskMerge, merge};
pub use merge_checks::{CheckRun, run_check, run_review_checks};
pub use merge_recovery::{Recovery, RecoveryAction, recover_merges};
pub use moves::{ReleaseRole, abandon, clear_stale, reassign, release_claim, rescope, unblock};
pub use note::{NoteOutcome, note};
pub use project::{Project, actor_from_env, open_store};
pub use reports::{DiscoveryDecision, anomaly, discover, discovery, log_add};
pub use shared_git::{fetch_task_worktree, push_task_after_run};
pub use sprint::{
    abort, auto_checkpoint, checkpoint, deadline_checkpoint, goal_complete, goal_next, pause,
    resume, sprint_next,
};
pub use supervision::{
    acknowledge_triggers, record_run_report, release_review_claim, start_run, supervisor_block,
    void_verdict,
};
pub use tasks::{add_tasks, amend_task, finalize_tasks, spec_change_text, spec_facts};
pub use work::{block, handoff, record_builtin_result, submit_for_review, submit_verdict};

use crate::blackboard::{IdError, StoreError, TxError};
use crate::error::{Diagnostic, ErrorClass};
use crate::git::GitError;
use crate::lifecycle::Refusal;
pub use crate::lifecycle::RuleId;

/// Why an operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// The blackboard could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A git step failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// A rule refused the operation; nothing was changed.
    #[error("{message} [{rule}]")]
    Refused {
        /// The rule that refused (lifecycle.md *Rule names*).
        rule: RuleId,
        /// What was wrong.
        message: String,
        /// What to do instead, if there is something.
        hint: Option<String>,
    },
    /// Another process holds the task's lock (claiming or changing it) right now: a
    /// refusal of the moment, worth retrying soon.
    #[error("task {task} is being claimed or changed by another process [task-busy]")]
    TaskBusy {
        /// The task's id.
        task: String,
    },
    /// The directory a command ran from is not inside a git repository, so there is no
    /// project and no blackboard.
    #[error("no blackboard: {cwd} is not inside a git repository")]
    NoProject {
        /// The directory, as shown.
        cwd: String,
    },
    /// `LIZA_AGENT_ID` does not parse as an agent id.
    #[error("LIZA_AGENT_ID is set to an invalid id [agent-id]")]
    BadIdentity(#[source] IdError),
    /// The operation had nothing to change (e.g. `clear-stale` with no stale claim); no
    /// transaction was committed.
    #[error("nothing to do")]
    Nothing,
}

impl From<Refusal> for OpsError {
    fn from(r: Refusal) -> Self {
        OpsError::Refused {
            rule: r.rule,
            message: r.message,
            hint: Some(r.hint),
        }
    }
}

impl OpsError {
    /// Whether a supervisor's write was refused because its registration was superseded
    /// (its agent registered anew, or unregistered): the supervisor must stop.
    pub fn superseded(&self) -> bool {
        matches!(
            self,
            OpsError::Store(StoreError::Superseded { .. })
                | OpsError::Refused {
                    rule: RuleId::Superseded,
                    ..
                }
        )
    }

    /// The rule that refused the operation, if a rule did.
    pub fn rule(&self) -> Option<RuleId> {
        match self {
            OpsError::Refused { rule, .. } => Some(*rule),
            OpsError::TaskBusy { .. } => Some(RuleId::TaskBusy),
            OpsError::BadIdentity(_) => Some(RuleId::AgentId),
            OpsError::Store(StoreError::Superseded { .. }) => Some(RuleId::Superseded),
            OpsError::Store(_)
            | OpsError::Git(_)
            | OpsError::NoProject { .. }
            | OpsError::Nothing => None,
        }
    }

    /// A refusal by `rule`: what was wrong and what to do instead.
    pub fn refused(rule: RuleId, message: impl Into<String>, hint: impl Into<String>) -> OpsError {
        OpsError::Refused {
            rule,
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

impl From<TxError<OpsError>> for OpsError {
    fn from(e: TxError<OpsError>) -> Self {
        match e {
            TxError::Store(s) => OpsError::Store(s),
            TxError::Refused(r) => r,
        }
    }
}

impl Diagnostic for OpsError {
    fn class(&self) -> ErrorClass {
        match self {
            OpsError::Store(e) => e.class(),
            OpsError::Git(e) => e.class(),
            OpsError::Refused { .. }
            | OpsError::TaskBusy { .. }
            | OpsError::BadIdentity(_)
            | OpsError::Nothing => ErrorClass::Refused,
            OpsError::NoProject { .. } => ErrorClass::Blackboard,
        }
    }

    fn hints(&self) -> Vec<String> {
        match self {
            OpsError::Store(e) => e.hints(),
            OpsError::Git(e) => e.hints(),
            OpsError::Refused { hint, .. } => hint.iter().cloned().collect(),
            OpsError::TaskBusy { .. } => vec!["try the next task, or retry in a moment".into()],
            OpsError::NoProject { .. } => {
                vec!["cd into the project's repository, or run `liza init \"<goal>\"` there".into()]
            }
            OpsError::Nothing => Vec::new(),
            OpsError::BadIdentity(_) => vec![
                "agents get their identity from their supervisor; unset LIZA_AGENT_ID to act as a person".into(),
            ],
        }
    }
}

#[cfg(test)]
mod tests;
