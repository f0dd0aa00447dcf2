//! The command line's own documentation: `liza --help` grouped by who uses each command
//! (operations.md *CLI conventions*), `liza completions <shell>` and `liza man`.

use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;

use super::output::Output;
use super::{Cli, CliError, EXIT_OK};

/// The audiences of `liza --help`, each with its commands in the order shown.
pub const GROUPS: &[(&str, &[&str])] = &[
    ("Setup", &["init", "doctor", "demo", "completions", "man"]),
    (
        "Inspection (anyone)",
        &["status", "show", "log", "validate", "history", "diff"],
    ),
    (
        "Planner (and people)",
        &[
            "add-task",
            "add-tasks",
            "amend-task",
            "finalize-task",
            "unblock",
            "reassign",
            "rescope",
            "abandon",
            "discovery",
            "goal",
            "sprint",
            "checkpoint",
        ],
    ),
    ("Coder", &["submit-for-review", "block", "handoff"]),
    ("Reviewer", &["submit-verdict"]),
    ("Any agent", &["discover", "anomaly"]),
    (
        "Supervisor steps (liza-agent; people and scripts)",
        &[
            "agent",
            "register",
            "heartbeat",
            "unregister",
            "claim-task",
            "claim-review",
            "merge",
        ],
    ),
    (
        "Operator",
        &[
            "up",
            "edit",
            "note",
            "watch",
            "pause",
            "resume",
            "abort",
            "analyze",
            "retro",
            "release-claim",
            "clear-stale",
            "gc",
        ],
    ),
];

/// The root command with its subcommands listed by audience.
pub fn command() -> clap::Command {
    let cmd = Cli::command();
    let width = cmd
        .get_subcommands()
        .map(|c| c.get_name().len())
        .max()
        .unwrap_or(10)
        + 2;
    let mut text = String::new();
    for (group, names) in GROUPS {
        text.push_str(&format!("{group}:\n"));
        for name in *names {
            let about = cmd
                .find_subcommand(name)
                .and_then(|c| c.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default();
            text.push_str(&format!("  {name:<width$}{about}\n"));
        }
        text.push('\n');
    }
    cmd.before_help(text)
        .help_template("{about-with-newline}\n{usage-heading} {usage}\n\n{before-help}Options:\n{options}\n\nRun `liza <command> --help` for one command, `liza man` for all of them.\n")
}

#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

pub fn cmd_completions(args: CompletionsArgs, _out: &Output) -> Result<i32, CliError> {
    let mut cmd = Cli::command();
    let mut text = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "liza", &mut text);
    print_all(&text)
}

/// Writes `bytes` to stdout; a reader that stopped early (`| head`) is not an error.
fn print_all(bytes: &[u8]) -> Result<i32, CliError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::refused(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(EXIT_OK),
    }
}

#[derive(clap::Args)]
pub struct ManArgs {
    /// Write liza.1 and one page per command (liza-<command>.1) into this directory
    /// instead of printing liza.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn cmd_man(args: ManArgs, out: &Output) -> Result<i32, CliError> {
    let cmd = Cli::command();
    match args.dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .map_err(|e| CliError::refused(format!("cannot render the man page: {e}")))?;
            return print_all(&page);
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| CliError::refused(format!("cannot create {}: {e}", dir.display())))?;
            clap_mangen::generate_to(cmd, &dir).map_err(|e| {
                CliError::refused(format!(
                    "cannot write the man pages to {}: {e}",
                    dir.display()
                ))
            })?;
            let pages = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
            out.ok(
                serde_json::json!({"dir": dir.display().to_string(), "pages": pages}),
                || format!("{pages} man pages in {} (man -l {0}/liza.1)", dir.display()),
            );
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_command_is_in_exactly_one_group() {
        let cmd = Cli::command();
        let visible: Vec<&str> = cmd
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name())
            .collect();
        for name in &visible {
            let n = GROUPS
                .iter()
                .filter(|(_, names)| names.contains(name))
                .count();
            assert_eq!(n, 1, "{name} is in {n} groups");
        }
        for (_, names) in GROUPS {
            for name in *names {
                assert!(
                    visible.contains(name),
                    "{name} is grouped but not a command"
                );
            }
        }
    }
}
