//! `liza builtin <role> --task ID` (hidden): one run of the built-in agent, started by a
//! supervisor with `--cli builtin`.

use std::path::PathBuf;

use super::CliError;
use super::output::Output;
use crate::builtin::run::{self, Invocation};
use crate::supervisor::identity::normalise_role;

#[derive(clap::Args)]
pub(super) struct BuiltinArgs {
    /// planner, coder or code-reviewer.
    role: String,
    /// The task this run is for (the planner's turn has none).
    #[arg(long)]
    task: Option<String>,
    /// The supervisor's prompt for this run (its human notes are passed on).
    #[arg(long)]
    prompt_file: Option<PathBuf>,
    /// Where to write the tokens the model endpoint served this run (JSON).
    #[arg(long)]
    usage_file: Option<PathBuf>,
}

pub(super) fn cmd_builtin(args: BuiltinArgs, _out: &Output) -> Result<i32, CliError> {
    let role = normalise_role(&args.role)
        .map_err(|e| CliError::usage(e.to_string()).with_hint("liza builtin coder --task t-1"))?;
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::refused(format!("cannot read the current directory: {e}")))?;
    Ok(run::run(&Invocation {
        role,
        task: args.task,
        prompt_file: args.prompt_file,
        usage_file: args.usage_file,
        cwd,
    }))
}
