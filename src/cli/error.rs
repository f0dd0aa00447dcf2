//! The one error type of the command line: a headline, its causes, details (such as
//! findings) and hints, with the class that decides the exit code.

use crate::blackboard::{Finding, StoreError};
use crate::error::{Diagnostic, ErrorClass};
use crate::git::GitError;
use crate::ops::OpsError;

#[derive(Debug)]
pub struct CliError {
    pub class: ErrorClass,
    pub message: String,
    pub hints: Vec<String>,
    pub detail: Box<Detail>,
}

/// What an error may carry besides its message (boxed: errors travel by value).
#[derive(Debug, Default)]
pub struct Detail {
    pub causes: Vec<String>,
    pub findings: Vec<Finding>,
    /// The file the findings are in, for `file:line:column` prefixes.
    pub file: Option<String>,
    /// The rule that refused the operation (`error.rule` in `--json`).
    pub rule: Option<crate::lifecycle::RuleId>,
}

impl CliError {
    pub fn new(class: ErrorClass, message: String) -> CliError {
        CliError {
            class,
            message,
            hints: Vec::new(),
            detail: Box::default(),
        }
    }

    pub fn usage(message: String) -> CliError {
        CliError::new(ErrorClass::Usage, message).with_hint("run with --help for the syntax")
    }

    pub fn refused(message: String) -> CliError {
        CliError::new(ErrorClass::Refused, message)
    }

    pub fn blackboard(message: String) -> CliError {
        CliError::new(ErrorClass::Blackboard, message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> CliError {
        self.hints.push(hint.into());
        self
    }

    fn from_diagnostic(err: &dyn Diagnostic) -> CliError {
        let mut out = CliError::new(err.class(), err.to_string());
        let mut source = err.source();
        while let Some(s) = source {
            // A cause the headline already says in full is not said twice.
            let cause = s.to_string();
            if !out.message.contains(&cause) {
                out.detail.causes.push(cause);
            }
            source = s.source();
        }
        out.hints = err.hints();
        out
    }
}

impl From<StoreError> for CliError {
    fn from(err: StoreError) -> CliError {
        let mut out = CliError::from_diagnostic(&err);
        out.detail.findings = err.findings().to_vec();
        if let StoreError::Invalid { path, .. } = &err {
            out.detail.file = Some(path.clone());
        }
        out
    }
}

impl From<GitError> for CliError {
    fn from(err: GitError) -> CliError {
        CliError::from_diagnostic(&err)
    }
}

impl From<OpsError> for CliError {
    fn from(err: OpsError) -> CliError {
        let rule = err.rule();
        let mut out = match err {
            OpsError::Store(store) => store.into(),
            other => CliError::from_diagnostic(&other),
        };
        out.detail.rule = rule;
        out
    }
}

impl From<crate::tmux::TmuxError> for CliError {
    fn from(err: crate::tmux::TmuxError) -> CliError {
        CliError::from_diagnostic(&err)
    }
}

impl From<crate::retro::RetroError> for CliError {
    fn from(err: crate::retro::RetroError) -> CliError {
        match err {
            crate::retro::RetroError::Ops(ops) => ops.into(),
            other => CliError::from_diagnostic(&other),
        }
    }
}
