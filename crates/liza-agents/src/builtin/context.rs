//! What one run of a role works with ([`RunContext`]) and how it ends ([`Status`]): shared
//! by the runner ([`super::run`]) and the roles, so neither depends on the other's module.

use std::path::PathBuf;

use super::artifacts::Artifacts;
use super::runlog::RunLog;
use super::{EXIT_DONE, EXIT_HARD_FAIL, EXIT_SOFT_FAIL};
use crate::blackboard::model::Task;
use crate::blackboard::{Actor, TaskId};
use crate::llm::client::ChatClient;
use crate::ops::Project;

/// How a run ended (the CommitResult status of specs/builtin-agent.md *Coder*, for every role).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Success,
    SoftFail,
    HardFail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "SUCCESS",
            Status::SoftFail => "SOFT_FAIL",
            Status::HardFail => "HARD_FAIL",
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            Status::Success => EXIT_DONE,
            Status::SoftFail => EXIT_SOFT_FAIL,
            Status::HardFail => EXIT_HARD_FAIL,
        }
    }
}

/// Everything one run works with.
pub struct RunContext {
    pub project: Project,
    pub actor: Actor,
    pub agent: String,
    pub task: Option<Task>,
    pub worktree: PathBuf,
    pub client: ChatClient,
    pub artifacts: Artifacts,
    pub runlog: RunLog,
    /// The identity's `prompt_prefix`, opening every system message.
    pub identity_prefix: Option<String>,
    /// The supervisor's prompt for this run (human notes, feedback), when given.
    pub supervisor_prompt: Option<String>,
}

impl RunContext {
    pub fn task_id(&self) -> Option<&TaskId> {
        self.task.as_ref().map(|t| &t.id)
    }

    /// `rules` under the identity's prefix.
    pub fn system(&self, rules: &str) -> String {
        match &self.identity_prefix {
            Some(prefix) => format!("{prefix}\n\n{rules}"),
            None => rules.to_owned(),
        }
    }
}
