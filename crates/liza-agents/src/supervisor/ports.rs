//! The runner's ports to what liza does not own: the agent processes ([`Spawner`]), the
//! terminal ([`Console`]), time ([`Clock`]), the directory it was started in, the
//! process's signals and liza's own executable — and what the front runs beside a planner
//! ([`Beside`]: the watcher, a layer above the supervisor's). Every build people run uses
//! the machine's ([`Ports::machine`]); the runner's tests put a scripted agent, a
//! recording console, no signals and no liza executable in their place
//! (`supervisor/tests.rs`). liza's own store and git are no ports: the tests use them for
//! real, on a repository in a temporary directory.

use std::fs::File;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::Console;
use super::agent_process::AgentProcess;
use super::clock::{Clock, SystemClock};
use crate::backend::Invocation;
use crate::backend::usage::Transcript;
use crate::sandbox::info_pipe::InfoPipe;
use liza_model::ledger::RunUsage;

/// A future a running agent answers with.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What starting an agent takes.
pub struct Spawn<'a> {
    /// Its argv (bubblewrap's, for a sandboxed run), stdin and the environment it keeps.
    pub invocation: &'a Invocation,
    /// Where it runs (the task's worktree).
    pub cwd: &'a Path,
    /// What its environment gains.
    pub env: &'a [(String, String)],
    /// Where its output is kept (`.liza/agent-logs/`).
    pub log: Option<File>,
    /// Where its output is shown.
    pub console: Arc<dyn Console>,
    /// The pipe bubblewrap reports its first process on (a sandboxed run).
    pub info: Option<InfoPipe>,
    /// How its stdout is read for the usage it reports (`None`: it reports none).
    pub transcript: Option<Transcript>,
}

/// Where agent processes come from.
pub trait Spawner: Send + Sync {
    /// Where `program` would be started from (`None`: it is not there).
    fn find(&self, program: &str) -> Option<PathBuf>;
    /// Starts an agent.
    fn spawn(&self, spawn: Spawn<'_>) -> io::Result<Box<dyn RunningAgent>>;
}

/// An agent that runs.
pub trait RunningAgent: Send {
    /// The process group its heartbeats report (and a person may signal).
    fn pgid(&self) -> i32;
    /// Its exit code once it ends (`None`: killed by a signal); what it left of its group
    /// killed. Cancel-safe: a `select!` may drop it and call it again.
    fn wait(&mut self) -> Pending<'_, io::Result<Option<i32>>>;
    /// Stops it: SIGTERM to its group, `grace`, then SIGKILL.
    fn stop(&mut self, grace: Duration) -> Pending<'_, ()>;
    /// When it last wrote output.
    fn last_output(&self) -> Option<Instant>;
    /// The end of its output (usage limits, logins, a verdict line).
    fn output_tail(&self) -> String;
    /// What it reported of usage, once it has ended (`report`: the file in the run's
    /// directory its backend leaves it in). An agent that reports none has none.
    fn usage(&mut self, _report: Option<&[u8]>) -> Option<RunUsage> {
        None
    }
}

/// The machine's processes: the agent CLI found on `PATH`, in a process group of its own.
pub struct Processes;

impl Spawner for Processes {
    fn find(&self, program: &str) -> Option<PathBuf> {
        crate::program::find_executable(program)
    }

    fn spawn(&self, spawn: Spawn<'_>) -> io::Result<Box<dyn RunningAgent>> {
        let process = AgentProcess::spawn(
            spawn.invocation,
            spawn.cwd,
            spawn.env,
            spawn.log,
            spawn.console,
            spawn.info,
            spawn.transcript,
        )?;
        Ok(Box::new(process))
    }
}

impl RunningAgent for AgentProcess {
    fn pgid(&self) -> i32 {
        self.pgid
    }

    fn wait(&mut self) -> Pending<'_, io::Result<Option<i32>>> {
        Box::pin(async move { AgentProcess::wait(self).await.map(|s| s.code()) })
    }

    fn stop(&mut self, grace: Duration) -> Pending<'_, ()> {
        Box::pin(async move {
            let _ = AgentProcess::stop(self, grace).await;
        })
    }

    fn last_output(&self) -> Option<Instant> {
        AgentProcess::last_output(self)
    }

    fn output_tail(&self) -> String {
        AgentProcess::output_tail(self)
    }

    fn usage(&mut self, report: Option<&[u8]>) -> Option<RunUsage> {
        AgentProcess::usage(self, report)
    }
}

/// Work that runs beside a planner's supervisor, on a thread of its own, given the
/// project's root, the flag raised when the supervisor ends, and its console: `liza
/// watch` — alarms, the deadline checkpoint, continuous analysis (specs/operations.md) —
/// which the front (`cli::agent`) puts there, the watcher being a layer above.
pub type Beside = Box<dyn FnOnce(PathBuf, Arc<AtomicBool>, Arc<dyn Console>) + Send>;

/// Everything a supervisor reaches outside liza.
pub struct Ports {
    /// Where its lines and the agent's output go.
    pub console: Arc<dyn Console>,
    /// Where its agents come from.
    pub spawner: Arc<dyn Spawner>,
    /// Where its policies read the time.
    pub clock: Arc<dyn Clock>,
    /// Where it was started: the project is found from there.
    pub cwd: PathBuf,
    /// SIGINT, SIGTERM and SIGHUP stop it (a test stops it by itself).
    pub signals: bool,
    /// liza's own executable, which reads a live run's worktree in a process of its own
    /// (`liza worktree-state`).
    pub liza: PathBuf,
    /// What runs beside it when it supervises a planner.
    pub beside_planner: Option<Beside>,
}

impl Ports {
    /// The machine's: processes, the system clock, the current directory, the signals.
    pub fn machine(console: Arc<dyn Console>) -> io::Result<Ports> {
        Ok(Ports {
            console,
            spawner: Arc::new(Processes),
            clock: Arc::new(SystemClock::new()),
            cwd: std::env::current_dir()?,
            signals: true,
            liza: crate::program::liza_executable(),
            beside_planner: None,
        })
    }
}
