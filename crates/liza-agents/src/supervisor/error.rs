//! Why a supervisor stopped, with the exit codes of specs/supervisor.md: 1 identity,
//! registration or configuration error; 4 no `.liza/` or a corrupt blackboard; 5 backend
//! missing; 6 claims kept failing.

use super::identity::IdentityError;
use crate::backend::BackendError;
use crate::error::{Diagnostic, ErrorClass};
use crate::ops::OpsError;

/// Its work is over (ABORT, the sprint or goal ended, idle, `--once`).
pub(super) const EXIT_DONE: i32 = 0;
/// An identity, registration or configuration error, or the registration was replaced.
pub(super) const EXIT_REFUSED: i32 = 1;
/// No `.liza/`, or a blackboard that cannot be read.
pub(super) const EXIT_BLACKBOARD: i32 = 4;
/// The backend's program is missing, or its CLI cannot log in.
pub(super) const EXIT_BACKEND: i32 = 5;
/// Claims kept failing.
pub(super) const EXIT_CLAIMS_FAILING: i32 = 6;
/// Stopped by a signal: 128 + its number (SIGHUP 129, SIGINT 130, SIGTERM 143).
pub(super) const EXIT_SIGNAL_BASE: i32 = 128;

/// Every exit code of `liza-agent` (`liza agent`) with what it means, for the reference
/// and its tests; usage errors exit as `liza`'s do (64).
pub const EXITS: &[(i32, &str)] = &[
    (EXIT_DONE, "done"),
    (
        EXIT_REFUSED,
        "identity, registration or configuration error; superseded",
    ),
    (EXIT_BLACKBOARD, "no blackboard, or a corrupt one"),
    (EXIT_BACKEND, "backend missing, or its CLI cannot log in"),
    (EXIT_CLAIMS_FAILING, "claims kept failing"),
    (EXIT_SIGNAL_BASE + 1, "SIGHUP"),
    (EXIT_SIGNAL_BASE + 2, "SIGINT"),
    (EXIT_SIGNAL_BASE + 15, "SIGTERM"),
];

/// Why a supervisor could not start or had to stop, with its exit code
/// ([`SupervisorError::exit_code`]) and what a person can do about it
/// ([`SupervisorError::hints`]).
#[expect(missing_docs, reason = "each variant's message is its documentation")]
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error(transparent)]
    Identity(IdentityError),
    #[error("no blackboard here: {0}")]
    NoBlackboard(String),
    #[error(transparent)]
    Backend(BackendError),
    #[error("registration refused: {0}")]
    Registration(OpsError),
    #[error("{0}")]
    Ops(OpsError),
    /// The agent was registered anew (or unregistered) by someone else: this supervisor's
    /// writes are refused, so it stops.
    #[error("{0}")]
    Superseded(String),
    #[error("claims failed {count} times in a row (last: {last})")]
    ClaimsFailing { count: u32, last: String },
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    AgentIdentity(crate::builtin::identities::IdentityError),
    #[error(
        "the {name} backend cannot run commands, so it cannot plan (a plan is made of `liza add-task` commands)"
    )]
    CannotPlan { name: String },
    #[error(transparent)]
    SandboxRequired(crate::sandbox::SandboxRequired),
    #[error("the {name} backend has no interactive mode")]
    NoInteractiveMode { name: String },
    #[error("the {name} agent could not log in: {message}")]
    AuthRequired {
        name: String,
        message: String,
        hint: String,
    },
}

impl From<OpsError> for SupervisorError {
    fn from(e: OpsError) -> SupervisorError {
        if e.superseded() {
            SupervisorError::Superseded(e.to_string())
        } else {
            SupervisorError::Ops(e)
        }
    }
}

impl SupervisorError {
    /// The exit code of `liza-agent` for it (specs/supervisor.md *Exit codes*).
    pub fn exit_code(&self) -> i32 {
        match self {
            SupervisorError::Identity(_)
            | SupervisorError::Registration(_)
            | SupervisorError::Superseded(_) => EXIT_REFUSED,
            SupervisorError::NoBlackboard(_) => EXIT_BLACKBOARD,
            SupervisorError::Backend(BackendError::Missing { .. }) => EXIT_BACKEND,
            SupervisorError::Backend(_) => EXIT_REFUSED,
            SupervisorError::Ops(e) => match e.class() {
                ErrorClass::Blackboard => EXIT_BLACKBOARD,
                ErrorClass::MissingProgram => EXIT_BACKEND,
                _ => EXIT_REFUSED,
            },
            SupervisorError::ClaimsFailing { .. } => EXIT_CLAIMS_FAILING,
            SupervisorError::Runtime(_)
            | SupervisorError::AgentIdentity(_)
            | SupervisorError::NoInteractiveMode { .. }
            | SupervisorError::CannotPlan { .. }
            | SupervisorError::SandboxRequired(_) => EXIT_REFUSED,
            SupervisorError::AuthRequired { .. } => EXIT_BACKEND,
        }
    }

    /// What a person can do about it: the error's `hint:` lines.
    pub fn hints(&self) -> Vec<String> {
        match self {
            SupervisorError::Identity(e) => vec![format!("e.g. {}", e.example())],
            SupervisorError::NoBlackboard(_) => {
                vec!["run `liza init \"<goal>\"` in the project's repository first".into()]
            }
            SupervisorError::Backend(e) => vec![e.hint()],
            SupervisorError::Registration(e) | SupervisorError::Ops(e) => e.hints(),
            SupervisorError::ClaimsFailing { .. } => vec![
                "look at `liza log` and the lock holders; restart the supervisor when fixed".into(),
            ],
            SupervisorError::Runtime(_) => Vec::new(),
            SupervisorError::Superseded(_) => vec![
                "nothing was changed by this supervisor after that; the newer registration's supervisor serves the agent (`liza status` shows it)".into(),
            ],
            SupervisorError::CannotPlan { .. } => vec![
                "run the planner with another backend, e.g. `liza-agent planner --cli claude`"
                    .into(),
            ],
            SupervisorError::NoInteractiveMode { .. } => {
                vec!["run it without -i, or choose another backend with --cli".into()]
            }
            SupervisorError::AuthRequired { hint, .. } => vec![
                hint.clone(),
                "the task stays claimed; start the supervisor again once the key is set".into(),
            ],
            SupervisorError::SandboxRequired(r) => vec![
                r.fix.clone(),
                "or set config.sandbox.mode to auto with `liza edit` (agents then run unsandboxed where no sandbox can start, said loudly)".into(),
            ],
            SupervisorError::AgentIdentity(_) => vec![
                "fix identities.yaml (a list of {id, name, prompt_prefix}) or drop --identity"
                    .into(),
            ],
        }
    }
}
