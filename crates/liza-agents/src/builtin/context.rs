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
    /// The role's work is done.
    Success,
    /// No result: no usable answer, or the submit was refused.
    SoftFail,
    /// The task cannot be done this way.
    HardFail,
}

impl Status {
    /// Its name in the CommitResult: `SUCCESS`, `SOFT_FAIL`, `HARD_FAIL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "SUCCESS",
            Status::SoftFail => "SOFT_FAIL",
            Status::HardFail => "HARD_FAIL",
        }
    }

    /// The exit code of `liza builtin` for it: 0, 3 or 4.
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
    /// The project it works in.
    pub project: Project,
    /// Who it writes as: the agent, with the generation the supervisor gave it.
    pub actor: Actor,
    /// The agent's id (`LIZA_AGENT_ID`).
    pub agent: String,
    /// The task, as the blackboard held it when the run started; `None` for the planner.
    pub task: Option<Task>,
    /// Where it works: `LIZA_WORKTREE`, else the current directory.
    pub worktree: PathBuf,
    /// The model client.
    pub client: ChatClient,
    /// Where its debug artifacts go.
    pub artifacts: Artifacts,
    /// Its run log.
    pub runlog: RunLog,
    /// The identity's `prompt_prefix`, opening every system message.
    pub identity_prefix: Option<String>,
    /// The supervisor's prompt for this run (human notes, feedback), when given.
    pub supervisor_prompt: Option<String>,
}

impl RunContext {
    /// The task's id, when there is a task.
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
