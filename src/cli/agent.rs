//! `liza agent <role>` (and `liza-agent <role>`): run the per-agent supervisor.

use std::io::Write;
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};

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

/// Prints the supervisor's lines on stderr and the agent's output on stdout, from a
/// thread of its own: a slow or stopped terminal never stalls the supervisor (its
/// heartbeats, watchdogs and signals). When the terminal falls far behind, output is
/// dropped from the terminal only — the agent's log file keeps it.
struct Terminal {
    lines: SyncSender<Chunk>,
}

enum Chunk {
    Info(String),
    Output(Vec<u8>),
    Flushed(SyncSender<()>),
}

impl Terminal {
    fn start() -> Terminal {
        let (lines, received) = sync_channel::<Chunk>(4096);
        std::thread::spawn(move || {
            for chunk in received {
                match chunk {
                    Chunk::Info(line) => eprintln!("liza-agent: {line}"),
                    Chunk::Output(bytes) => {
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(&bytes);
                        let _ = out.flush();
                    }
                    Chunk::Flushed(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Terminal { lines }
    }

    /// Waits (at most 2 s) until everything queued is written, before the process exits.
    fn flush(&self) {
        let (done, flushed) = sync_channel(1);
        if self.lines.send(Chunk::Flushed(done)).is_ok() {
            let _ = flushed.recv_timeout(std::time::Duration::from_secs(2));
        }
    }
}

impl Console for Terminal {
    fn info(&self, line: &str) {
        if self.lines.try_send(Chunk::Info(line.to_owned())).is_err() {
            eprintln!("liza-agent: {line}");
        }
    }

    fn agent_output(&self, chunk: &[u8]) {
        let _ = self.lines.try_send(Chunk::Output(chunk.to_vec()));
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
    let terminal = Arc::new(Terminal::start());
    let result = supervisor::run(options, terminal.clone());
    terminal.flush();
    match result {
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
