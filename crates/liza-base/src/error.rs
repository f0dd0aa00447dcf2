//! How library errors map onto the documented exit codes (specs/operations.md): every error
//! type of the crate says which class it is in and what a person can do about it.

/// The classes of failure the CLI distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Invalid input, a guard that failed, a change that would make the state invalid.
    Refused,
    /// The state lock could not be taken in time (retryable).
    LockTimeout,
    /// A git operation failed.
    Git,
    /// The blackboard is missing, unparseable or inconsistent: a person must look.
    Blackboard,
    /// An external program or endpoint is missing.
    MissingProgram,
    /// The command line itself is wrong.
    Usage,
}

/// Implemented by every error type of the library.
pub trait Diagnostic: std::error::Error {
    /// Which class of failure it is (the exit code follows from it).
    fn class(&self) -> ErrorClass;

    /// What to do about it, one line each.
    fn hints(&self) -> Vec<String> {
        Vec::new()
    }
}
