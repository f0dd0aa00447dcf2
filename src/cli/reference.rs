//! The command line's own documentation: `liza --help` grouped by who uses each command
//! (specs/operations.md *CLI conventions*), `liza completions <shell>`, `liza man`, and the
//! markdown reference docs/cli.md (`liza man --markdown`, checked by tests/it/docs.rs).

use std::io::Write;
use std::path::PathBuf;

use clap::{ArgAction, CommandFactory};

use super::output::Output;
use super::{Cli, CliError, EXIT_OK};
use crate::ops;

/// The audiences of `liza --help`, each with its commands in the order shown.
pub(super) const GROUPS: &[(&str, &[&str])] = &[
    (
        "Setup",
        &[
            "init",
            "join",
            "doctor",
            "demo",
            "help",
            "completions",
            "man",
        ],
    ),
    (
        "Inspection (anyone)",
        &[
            "status", "show", "cost", "log", "validate", "history", "diff",
        ],
    ),
    ("Planner (and people)", ops::PLANNER_COMMANDS),
    ("Coder", ops::CODER_COMMANDS),
    ("Reviewer", ops::REVIEWER_COMMANDS),
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
            "serve",
            "pause",
            "resume",
            "abort",
            "analyze",
            "retro",
            "release-claim",
            "clear-stale",
            "gc",
            "integration",
        ],
    ),
];

/// The root command with its subcommands listed by audience.
pub(super) fn command() -> clap::Command {
    let cmd = Cli::command();
    let text = grouped_commands(&cmd);
    cmd.before_help(text.trim_end().to_owned())
        .help_template("{about-with-newline}\n{usage-heading} {usage}\n\n{before-help}Options:\n{options}\n\nRun `liza help <command>` for one command, `liza help` for the documentation's topics, `liza man` for every command.\n")
}

/// The visible commands of `cmd` under the headings of [`GROUPS`], with their about lines.
pub(super) fn grouped_commands(cmd: &clap::Command) -> String {
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
    text
}

#[derive(clap::Args)]
pub(super) struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

pub(super) fn cmd_completions(args: CompletionsArgs, _out: &Output) -> Result<i32, CliError> {
    let mut cmd = Cli::command();
    let mut text = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "liza", &mut text);
    print_all(&text)
}

/// Writes `bytes` to stdout; a reader that stopped early (`| head`) is not an error.
pub(super) fn print_all(bytes: &[u8]) -> Result<i32, CliError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::refused(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(EXIT_OK),
    }
}

#[derive(clap::Args)]
pub(super) struct ManArgs {
    /// Write liza.1 and one page per command (liza-<command>.1) into this directory
    /// instead of printing liza.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print the markdown reference instead (docs/cli.md is its output).
    #[arg(long, hide = true, conflicts_with = "dir")]
    markdown: bool,
}

pub(super) fn cmd_man(args: ManArgs, out: &Output) -> Result<i32, CliError> {
    if args.markdown {
        return print_all(markdown().as_bytes());
    }
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

/// How docs/cli.md is regenerated; its header and the docs test name it.
pub(super) const MARKDOWN_REGENERATE: &str = "cargo run -q -- man --markdown > docs/cli.md";

/// The command reference in markdown: every visible command and subcommand with its
/// about, usage, arguments and options, from the same definitions as `--help`.
pub(super) fn markdown() -> String {
    let mut root = command();
    root.build();
    let mut text = format!(
        "# Command reference\n\n\
         <!-- Generated from the clap definitions (src/cli/reference.rs): do not edit.\n     \
         Regenerate with `{MARKDOWN_REGENERATE}`. -->\n\n\
         {}\n\n\
         `liza-agent <role> …` is `liza agent <role> …`. `liza help <command>` prints one \
         command's help, `liza help` the documentation's topics.\n\n\
         Every command takes these options:\n\n",
        escape(&root.get_about().map(|a| a.to_string()).unwrap_or_default())
    );
    let globals: Vec<&clap::Arg> = root
        .get_arguments()
        .filter(|a| a.is_global_set() && !a.is_hide_set())
        .collect();
    for arg in &globals {
        text.push_str(&arg_line(arg));
    }
    text.push_str("- `-h`, `--help`: Print help\n\n");
    text.push_str(&exit_table());
    for (group, names) in GROUPS {
        let links: Vec<String> = names.iter().map(|n| format!("[{n}](#liza-{n})")).collect();
        text.push_str(&format!("**{group}:** {}\n\n", links.join(" · ")));
    }
    for (group, names) in GROUPS {
        text.push_str(&format!("## {group}\n\n"));
        for name in *names {
            if let Some(sub) = root.find_subcommand(name) {
                command_markdown(sub, &format!("liza {name}"), 3, &mut text);
            }
        }
    }
    while text.ends_with("\n\n") {
        text.pop();
    }
    text
}

/// The exit codes of `liza` and of `liza agent` side by side (what
/// docs/troubleshooting.md explains).
fn exit_table() -> String {
    let liza = super::exit::EXITS;
    let agent = crate::supervisor::EXITS;
    let mut codes: Vec<i32> = liza.iter().chain(agent).map(|(c, _)| *c).collect();
    codes.sort_unstable();
    codes.dedup();
    let what = |list: &[(i32, &str)], code: i32| {
        list.iter()
            .find(|(c, _)| *c == code)
            .map_or("", |(_, what)| *what)
            .to_owned()
    };
    let mut text = String::from(
        "Exit codes (what to do about each: [troubleshooting](troubleshooting.md)):\n\n\
         | exit | `liza` | `liza agent`, `liza-agent` |\n|---|---|---|\n",
    );
    for code in codes {
        text.push_str(&format!(
            "| {code} | {} | {} |\n",
            what(liza, code),
            // The supervisor's command line is liza's: it reports usage errors the same way.
            if code == super::EXIT_USAGE {
                what(liza, code)
            } else {
                what(agent, code)
            }
        ));
    }
    text.push('\n');
    text
}

/// One command's section, then its subcommands' one level deeper.
fn command_markdown(cmd: &clap::Command, path: &str, level: usize, text: &mut String) {
    text.push_str(&format!("{} {path}\n\n", "#".repeat(level)));
    let about = cmd.get_long_about().or(cmd.get_about());
    if let Some(about) = about {
        text.push_str(&format!("{}\n\n", escape(&about.to_string())));
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage: Vec<&str> = usage
        .trim_start_matches("Usage:")
        .lines()
        .map(str::trim)
        .collect();
    text.push_str(&format!("```text\n{}\n```\n\n", usage.join("\n")));
    let positionals: Vec<&clap::Arg> = cmd.get_positionals().filter(|a| !a.is_hide_set()).collect();
    if !positionals.is_empty() {
        text.push_str("Arguments:\n\n");
        for arg in positionals {
            text.push_str(&arg_line(arg));
        }
        text.push('\n');
    }
    let options: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set() && !a.is_global_set())
        .filter(|a| !matches!(a.get_action(), ArgAction::Help | ArgAction::Version))
        .collect();
    if !options.is_empty() {
        text.push_str("Options:\n\n");
        for arg in options {
            text.push_str(&arg_line(arg));
        }
        text.push('\n');
    }
    for sub in cmd.get_subcommands().filter(|c| !c.is_hide_set()) {
        let path = format!("{path} {}", sub.get_name());
        command_markdown(sub, &path, level + 1, text);
    }
}

/// One argument as a list item: its forms, what it does, its default and values.
fn arg_line(arg: &clap::Arg) -> String {
    let value = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    let forms = if arg.is_positional() {
        let many = if matches!(arg.get_action(), ArgAction::Append) {
            "..."
        } else {
            ""
        };
        if arg.is_required_set() {
            format!("`<{value}>{many}`")
        } else {
            format!("`[{value}]{many}`")
        }
    } else {
        let takes = arg.get_action().takes_values();
        let mut forms = Vec::new();
        if let Some(short) = arg.get_short() {
            forms.push(format!("`-{short}`"));
        }
        if let Some(long) = arg.get_long() {
            if takes {
                forms.push(format!("`--{long} <{value}>`"));
            } else {
                forms.push(format!("`--{long}`"));
            }
        }
        forms.join(", ")
    };
    let mut help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| escape(&h.to_string()).replace('\n', "\n  "))
        .unwrap_or_default();
    let mut extras = Vec::new();
    if arg.get_action().takes_values() {
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|d| format!("`{}`", d.to_string_lossy()))
            .collect();
        if !defaults.is_empty() {
            extras.push(format!("Default: {}.", defaults.join(", ")));
        }
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        if !values.is_empty() {
            extras.push(format!("Values: {}.", values.join(", ")));
        }
    }
    if let Some(env) = arg.get_env() {
        extras.push(format!("Environment: `{}`.", env.to_string_lossy()));
    }
    if !extras.is_empty() {
        if !help.is_empty() && !help.ends_with(['.', '!', '?']) {
            help.push('.');
        }
        if !help.is_empty() {
            help.push(' ');
        }
        help.push_str(&extras.join(" "));
    }
    if help.is_empty() {
        format!("- {forms}\n")
    } else {
        format!("- {forms}: {}\n", help.trim_start())
    }
}

/// Escapes what markdown would take for markup (`<tag>`, emphasis) outside code spans.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => in_code = !in_code,
            '<' | '*' if !in_code => out.push('\\'),
            _ => {}
        }
        out.push(c);
    }
    out
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
