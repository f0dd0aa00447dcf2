//! The documented exit codes (specs/operations.md *CLI conventions*).

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

/// Every exit code of `liza` with what it means, for the reference and its tests (a unit
/// test checks every `EXIT_` constant of this file is here).
pub const EXITS: &[(i32, &str)] = &[
    (EXIT_OK, "ok"),
    (EXIT_REFUSED, "refused"),
    (EXIT_LOCK_TIMEOUT, "lock timeout"),
    (EXIT_GIT, "git failure"),
    (EXIT_BLACKBOARD, "blackboard missing or invalid"),
    (EXIT_MISSING_PROGRAM, "missing program"),
    (EXIT_USAGE, "usage error"),
];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_constant_is_listed_once() {
        let source = include_str!("exit.rs");
        let re = regex::Regex::new(r"(?m)^pub const (EXIT_[A-Z_]+): i32 = (\d+);").unwrap();
        let defined: Vec<i32> = re
            .captures_iter(source)
            .map(|c| c[2].parse().unwrap())
            .collect();
        assert!(defined.len() >= 7, "{defined:?}");
        let mut listed: Vec<i32> = EXITS.iter().map(|(code, _)| *code).collect();
        listed.sort_unstable();
        listed.dedup();
        assert_eq!(listed.len(), EXITS.len(), "a code listed twice");
        for code in defined {
            assert!(listed.contains(&code), "exit {code} is not in EXITS");
        }
    }
}
