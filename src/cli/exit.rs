//! The documented exit codes (operations.md *CLI conventions*).

use crate::error::ErrorClass;

pub const EXIT_OK: i32 = 0;
/// Refused: invalid input, a failed guard, an invalid state (and `validate` findings).
pub const EXIT_REFUSED: i32 = 1;
/// The state lock was not acquired in time (retryable).
pub const EXIT_LOCK_TIMEOUT: i32 = 2;
pub const EXIT_GIT: i32 = 3;
/// The blackboard is missing, unparseable or inconsistent: a person must look.
pub const EXIT_BLACKBOARD: i32 = 4;
pub const EXIT_MISSING_PROGRAM: i32 = 5;
/// Usage error (clap's own status 2 is remapped).
pub const EXIT_USAGE: i32 = 64;

pub fn exit_code(class: ErrorClass) -> i32 {
    match class {
        ErrorClass::Refused => EXIT_REFUSED,
        ErrorClass::LockTimeout => EXIT_LOCK_TIMEOUT,
        ErrorClass::Git => EXIT_GIT,
        ErrorClass::Blackboard => EXIT_BLACKBOARD,
        ErrorClass::MissingProgram => EXIT_MISSING_PROGRAM,
        ErrorClass::Usage => EXIT_USAGE,
    }
}

/// The `error.code` of the JSON envelope.
pub fn code_name(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::Refused => "refused",
        ErrorClass::LockTimeout => "lock_timeout",
        ErrorClass::Git => "git",
        ErrorClass::Blackboard => "blackboard",
        ErrorClass::MissingProgram => "missing_program",
        ErrorClass::Usage => "usage",
    }
}
