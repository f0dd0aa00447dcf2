//! The `liza` command line: one file per command, each an argument struct and a
//! `cmd_<name>` that calls an operation and renders its result (human text or `--json`).
//! Only this module and the binaries print.

mod error;
mod exit;
mod init;
mod log;
mod note;
mod output;
mod show;
pub mod status;
mod validate;

use clap::{Parser, Subcommand};

pub use error::CliError;
pub use exit::*;
use output::Output;

/// A supervisor for a team of AI coding agents coordinating through a YAML blackboard.
#[derive(Parser)]
#[command(name = "liza", version, about, long_about = None)]
struct Cli {
    /// Print one JSON object {"ok", "result", "error"} on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,

    /// More log output on stderr (-v info, -vv debug); LIZA_LOG sets a filter too.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create the blackboard (.liza/) and the integration branch in this repository.
    Init(init::InitArgs),
    /// Check a blackboard against every rule and report all findings.
    Validate(validate::ValidateArgs),
    /// Show the goal, sprint, agents and tasks.
    Status(status::StatusArgs),
    /// Show one task in full.
    Show(show::ShowArgs),
    /// Print the activity log.
    Log(log::LogArgs),
    /// Leave a note for one task's agents, or for all (`all`).
    Note(note::NoteArgs),
}

/// Runs the command line and returns the process exit code.
pub fn run() -> i32 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let wants_json = args.iter().any(|a| a == "--json");
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => return usage_error(err, wants_json),
    };
    init_tracing(cli.verbose);
    let out = Output { json: cli.json };
    let result = match cli.command {
        Command::Init(args) => init::cmd_init(args, &out),
        Command::Validate(args) => validate::cmd_validate(args, &out),
        Command::Status(args) => status::cmd_status(args, &out),
        Command::Show(args) => show::cmd_show(args, &out),
        Command::Log(args) => log::cmd_log(args, &out),
        Command::Note(args) => note::cmd_note(args, &out),
    };
    match result {
        Ok(code) => code,
        Err(err) => out.error(&err),
    }
}

/// clap exits with 2 on usage errors; liza's 2 means "lock timeout", so usage is 64.
fn usage_error(err: clap::Error, json: bool) -> i32 {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                EXIT_USAGE
            } else {
                EXIT_OK
            }
        }
        _ if json => {
            let message = err.to_string();
            let first = message
                .lines()
                .next()
                .unwrap_or("usage error")
                .trim_start_matches("error: ");
            Output { json: true }.error(&CliError::usage(first.to_owned()))
        }
        _ => {
            let _ = err.print();
            EXIT_USAGE
        }
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = std::env::var("LIZA_LOG")
        .ok()
        .and_then(|f| tracing_subscriber::EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

fn current_dir() -> Result<std::path::PathBuf, CliError> {
    std::env::current_dir()
        .map_err(|e| CliError::blackboard(format!("cannot read the current directory: {e}")))
}
