//! `liza doctor`: every check with its result and, for a problem, what to do.

use serde_json::json;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::doctor::{self, Status};
use crate::llm::endpoint::ProcessEnv;

/// Exit status when a check failed.
const EXIT_PROBLEM: i32 = 1;

pub(super) fn cmd_doctor(out: &Output) -> Result<i32, CliError> {
    let checks = doctor::run(&current_dir()?, &ProcessEnv);
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warned = checks.iter().filter(|c| c.status == Status::Warn).count();
    if out.json {
        // One object like every command; `ok` says whether anything failed.
        println!(
            "{}",
            json!({"ok": failed == 0, "result": {"checks": checks, "failed": failed, "warnings": warned}})
        );
    } else {
        for c in &checks {
            let mark = match c.status {
                Status::Ok => "ok  ",
                Status::Warn => "warn",
                Status::Fail => "FAIL",
            };
            println!("{mark} {:<20} {}", c.name, c.detail);
            if let Some(hint) = &c.hint {
                println!("     {:<20} hint: {hint}", "");
            }
        }
        println!(
            "\n{}",
            match (failed, warned) {
                (0, 0) => "everything looks right".to_owned(),
                (0, w) => format!("{w} warning(s), nothing failed"),
                (f, w) => format!("{f} problem(s), {w} warning(s)"),
            }
        );
    }
    Ok(if failed == 0 { EXIT_OK } else { EXIT_PROBLEM })
}
