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
    pub causes: Vec<String>,
    pub hints: Vec<String>,
    pub findings: Vec<Finding>,
    /// The file the findings are in, for `file:line:column` prefixes.
    pub file: Option<String>,
}

impl CliError {
    pub fn new(class: ErrorClass, message: String) -> CliError {
        CliError {
            class,
            message,
            causes: Vec::new(),
            hints: Vec::new(),
            findings: Vec::new(),
            file: None,
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
        let mut causes = Vec::new();
        let mut source = err.source();
        while let Some(s) = source {
            causes.push(s.to_string());
            source = s.source();
        }
        CliError {
            class: err.class(),
            message: err.to_string(),
            causes,
            hints: err.hints(),
            findings: Vec::new(),
            file: None,
        }
    }
}

impl From<StoreError> for CliError {
    fn from(err: StoreError) -> CliError {
        let mut out = CliError::from_diagnostic(&err);
        out.findings = err.findings().to_vec();
        if let StoreError::Invalid { path, .. } = &err {
            out.file = Some(path.clone());
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
        match err {
            OpsError::Store(store) => store.into(),
            other => CliError::from_diagnostic(&other),
        }
    }
}
