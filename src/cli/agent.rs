//! `liza agent <role>` (and `liza-agent <role>`): run the per-agent supervisor.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use super::output::Output;
use super::{CliError, EXIT_OK};
use crate::supervisor::{self, Console, Options};

#[derive(clap::Args)]
pub(super) struct AgentArgs {
    /// coder, code-reviewer or planner (code_reviewer, "Code Reviewer" … are accepted).
    role: String,
    /// A task to take first (resume it, or claim it if the rules allow).
    task: Option<String>,
    /// The agent backend (claude, codex, gemini, mistral, aider, opencode, or one of
    /// config.agent_tools); default config.default_cli.
    #[arg(long)]
    cli: Option<String>,
    /// The model, passed with the backend CLI's own flag (overrides
    /// config.agent_tools.<cli>.model).
    #[arg(long)]
    model: Option<String>,
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
    /// Run the agent and its checks outside the sandbox, with your user's full access
    /// (said in `liza status`, the dashboard and the agent's logs).
    #[arg(long)]
    no_sandbox: bool,
}

/// Prints the supervisor's lines on stderr and the agent's output on stdout, from a
/// thread of its own: a slow or stopped terminal never stalls the supervisor (its
/// heartbeats, watchdogs and signals). When the terminal falls far behind, output is
/// dropped from the terminal only — the agent's log file keeps it.
struct Terminal {
    lines: SyncSender<Chunk>,
    /// Supervisor lines dropped since the terminal last caught up.
    dropped: Arc<AtomicUsize>,
}

enum Chunk {
    Info(String),
    Output(Vec<u8>),
    Flushed(SyncSender<()>),
}

impl Terminal {
    fn start() -> Terminal {
        let (lines, received) = sync_channel::<Chunk>(4096);
        let dropped = Arc::new(AtomicUsize::new(0));
        let lost = dropped.clone();
        std::thread::spawn(move || {
            for chunk in received {
                let missed = lost.swap(0, Ordering::Relaxed);
                if missed > 0 {
                    eprintln!(
                        "liza-agent: ({missed} lines not shown: the terminal fell behind; \
                         .liza/agent-logs/ has the agent's output)"
                    );
                }
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
        Terminal { lines, dropped }
    }

    /// Waits (at most 2 s) until everything queued is written, before the process exits.
    /// A stopped terminal (a suspended pager, a full pipe) never holds the exit longer.
    fn flush(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        let (done, flushed) = sync_channel(1);
        let mut marker = Chunk::Flushed(done);
        loop {
            match self.lines.try_send(marker) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    marker = back;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(_) => return,
            }
        }
        let _ = flushed.recv_timeout(deadline.saturating_duration_since(Instant::now()));
    }
}

impl Console for Terminal {
    fn info(&self, line: &str) {
        if self.lines.try_send(Chunk::Info(line.to_owned())).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// What an agent prints reaches a person's terminal with its control characters
    /// shown, not obeyed: an escape sequence from a prompt-injected agent could set the
    /// clipboard, retitle the window or draw fake liza lines (its log keeps the bytes).
    fn agent_output(&self, chunk: &[u8]) {
        let text = String::from_utf8_lossy(chunk).replace("\r\n", "\n");
        let shown = crate::terminal_text::visible(&text);
        let _ = self
            .lines
            .try_send(Chunk::Output(shown.as_bytes().to_vec()));
    }
}

pub(super) fn cmd_agent(args: AgentArgs, out: &Output) -> Result<i32, CliError> {
    let options = Options {
        role: args.role,
        agent_id: std::env::var("LIZA_AGENT_ID").ok(),
        auto_id: args.auto_id,
        task: args.task,
        cli: args.cli,
        model: args.model,
        identity: args.identity,
        interactive: args.interactive,
        once: args.once,
        no_sandbox: args.no_sandbox,
    };
    let terminal = Arc::new(Terminal::start());
    let result = match supervisor::Ports::machine(terminal.clone()) {
        Ok(mut ports) => {
            // The planner's supervisor also runs the watcher (specs/operations.md).
            ports.beside_planner = Some(Box::new(crate::monitor::beside_planner));
            supervisor::run(options, ports)
        }
        Err(e) => Err(supervisor::SupervisorError::NoBlackboard(format!(
            "cannot read the current directory: {e}"
        ))),
    };
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
