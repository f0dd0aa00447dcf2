//! `liza agent <role>` / `liza-agent <role>` (specs/supervisor.md): one process supervises one
//! agent for its whole life — startup (identity, repository, backend, registration),
//! heartbeats, finding and claiming work, preparing the worktree and the prompt, running
//! the agent under watchdogs, classifying its exit, reconciling, merging what a reviewer
//! approved, waking the planner only when there is something to decide.
//!
//! Every decision is [`policy::decide`], a pure function of what the supervisor observes,
//! what it remembers and the time ([`clock`]). The runner — [`Session`] with `coder`,
//! `reviewer`, `planner`, `effects`, `run`, `heartbeat` and `stop` — only observes (the
//! agent process, the debounced watch of `.liza/`, timers, signals; one single-threaded
//! tokio runtime) and carries out the actions. Blocking work (store reads and
//! transactions, git, merges with their checks, building prompts) runs on the blocking
//! pool and heartbeats on a thread of their own, so nothing the supervisor does delays
//! them. Every write is made as `Actor::Supervisor` and fenced by the registration's
//! generation.

mod agent_process;
mod backends;
mod channel_server;
mod cli_config;
pub mod clock;
mod coder;
mod effects;
mod error;
mod heartbeat;
pub mod identity;
mod ledger;
mod planner;
pub mod policy;
pub mod ports;
pub mod prompt;
mod reviewer;
mod run;
mod sandboxed;
mod session;
mod spending;
mod stop;
#[cfg(test)]
mod tests;
pub(crate) mod usage_limit;
mod wake;

pub use error::{EXITS, SupervisorError};
pub use ports::Ports;
pub use session::Session;
pub use usage_limit::local_clock;

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The role as typed (normalised at startup).
    pub role: String,
    /// `LIZA_AGENT_ID`, if set.
    pub agent_id: Option<String>,
    /// `--auto-id`: take the lowest free `<role>-N`.
    pub auto_id: bool,
    /// `TASK_ID`: the first candidate.
    pub task: Option<String>,
    /// `--cli NAME`.
    pub cli: Option<String>,
    /// `--identity ID` (built-in agent identities).
    pub identity: Option<String>,
    /// `--model M`: the model, mapped to the backend's own flag.
    pub model: Option<String>,
    /// `-i`: run the agent CLI interactively.
    pub interactive: bool,
    /// `--once`: run the agent once, then exit.
    pub once: bool,
    /// `--no-sandbox`: run the agent and its checks unconfined.
    pub no_sandbox: bool,
}

/// Where the supervisor's own lines and the agent's output go (the terminal, in the CLI).
pub trait Console: Send + Sync {
    /// A line from the supervisor.
    fn info(&self, line: &str);
    /// A chunk of the agent's output.
    fn agent_output(&self, chunk: &[u8]);
}

/// Runs a supervisor to its end; returns its exit code (0 done or aborted, 130/143 on
/// signals) or the startup error.
pub fn run(options: Options, ports: Ports) -> Result<i32, SupervisorError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SupervisorError::Runtime)?;
    runtime.block_on(async move {
        let mut session = Session::start(options, ports).await?;
        let result = session.serve().await;
        session.finish().await;
        result
    })
}
