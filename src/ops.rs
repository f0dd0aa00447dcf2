//! Application operations: each combines the store, (later) the lifecycle rules and git
//! into one implementation shared by the CLI, the supervisor and the built-in agent.

mod init;
mod note;
mod project;

pub use init::{InitOutcome, InitRequest, init, initial_state};
pub use note::{NoteOutcome, note};
pub use project::{Project, actor_from_env};

use crate::blackboard::{IdError, StoreError, TxError};
use crate::error::{Diagnostic, ErrorClass};
use crate::git::GitError;

/// Why an operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{message}")]
    Refused {
        message: String,
        hint: Option<String>,
    },
    #[error("no blackboard: {cwd} is not inside a git repository")]
    NoProject { cwd: String },
    #[error("LIZA_AGENT_ID is set to an invalid id")]
    BadIdentity(#[source] IdError),
}

impl OpsError {
    pub fn refused(message: impl Into<String>, hint: impl Into<String>) -> OpsError {
        OpsError::Refused {
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
            OpsError::Refused { .. } | OpsError::BadIdentity(_) => ErrorClass::Refused,
            OpsError::NoProject { .. } => ErrorClass::Blackboard,
        }
    }

    fn hints(&self) -> Vec<String> {
        match self {
            OpsError::Store(e) => e.hints(),
            OpsError::Git(e) => e.hints(),
            OpsError::Refused { hint, .. } => hint.iter().cloned().collect(),
            OpsError::NoProject { .. } => {
                vec!["cd into the project's repository, or run `liza init \"<goal>\"` there".into()]
            }
            OpsError::BadIdentity(_) => vec![
                "agents get their identity from their supervisor; unset LIZA_AGENT_ID to act as a person".into(),
            ],
        }
    }
}
