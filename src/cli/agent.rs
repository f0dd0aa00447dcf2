//! `liza agent <role>` (and `liza-agent <role>`): run the per-agent supervisor.

use std::io::Write;
use std::sync::Arc;

use super::output::Output;
use super::{CliError, EXIT_OK};
use crate::supervisor::{self, Console, Options};

#[derive(clap::Args)]
pub struct AgentArgs {
    /// coder, code-reviewer or planner (code_reviewer, "Code Reviewer" … are accepted).
    role: String,
    /// A task to take first (resume it, or claim it if the rules allow).
    task: Option<String>,
    /// The agent backend (claude, codex, gemini, mistral, aider, opencode, or one of
    /// config.agent_tools); default config.default_cli.
    #[arg(long)]
    cli: Option<String>,
    /// The identity of the built-in agent to use.
    #[arg(long)]
    identity: Option<String>,
    /// Run the agent CLI interactively (prints the saved prompt's path).
    #[arg(short = 'i', long)]
    interactive: bool,
    /// Run the agent once, then exit.
    #[arg(long)]
    once: bool,
    /// Take the lowest free <role>-N instead of LIZA_AGENT_ID.
    #[arg(long)]
    auto_id: bool,
}

/// Prints the supervisor's lines on stderr and the agent's output on stdout.
struct Terminal;

impl Console for Terminal {
    fn info(&self, line: &str) {
        eprintln!("liza-agent: {line}");
    }

    fn agent_output(&self, chunk: &[u8]) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(chunk);
        let _ = out.flush();
    }
}

pub fn cmd_agent(args: AgentArgs, out: &Output) -> Result<i32, CliError> {
    let options = Options {
        role: args.role,
        agent_id: std::env::var("LIZA_AGENT_ID").ok(),
        auto_id: args.auto_id,
        task: args.task,
        cli: args.cli,
        identity: args.identity,
        interactive: args.interactive,
        once: args.once,
    };
    match supervisor::run(options, Arc::new(Terminal)) {
        Ok(code) => Ok(code),
        Err(e) => {
            let mut err = CliError::new(crate::error::ErrorClass::Refused, e.to_string());
            for hint in e.hints() {
                err = err.with_hint(hint);
            }
            out.error(&err);
            Ok(if e.exit_code() == 0 {
                EXIT_OK
            } else {
                e.exit_code()
            })
        }
    }
}
