//! Running the project's own commands (`post_worktree_cmd`, `config.checks`, the
//! integration test script): an argv vector, or a string the user wrote run with `sh -c`
//! (blackboard content is never put into it); stdin closed; output to a file or nowhere;
//! its own process group, killed whole after the timeout — and after it exits, so no
//! stray child outlives the check.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::blackboard::model::CommandSpec;

/// How a bounded command ended.
#[derive(Debug)]
pub(super) enum Exit {
    Success,
    Failed(ExitStatus),
    TimedOut(Duration),
    NotStarted(std::io::Error),
}

impl Exit {
    pub(super) fn success(&self) -> bool {
        matches!(self, Exit::Success)
    }

    /// A short phrase for messages: "exited with status 1", "timed out after 30 s".
    pub(super) fn describe(&self) -> String {
        match self {
            Exit::Success => "succeeded".into(),
            Exit::Failed(status) => match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => format!("was killed ({status})"),
            },
            Exit::TimedOut(after) => format!("timed out after {} s", after.as_secs()),
            Exit::NotStarted(e) => format!("could not be started: {e}"),
        }
    }
}

/// One command to run.
pub(super) struct Bounded<'a> {
    pub dir: &'a Path,
    /// Where it runs: a sandbox of `dir` (specs/sandbox.md *Checks*), or not.
    pub jail: &'a crate::sandbox::Jail,
    pub timeout: Duration,
    /// Where stdout and stderr go (both to the same file); `None` discards them.
    pub output: Option<&'a File>,
    pub env: &'a [(&'a str, String)],
}

/// The argv of a command spec; `None` for an empty argv (nothing to run).
pub(super) fn argv(spec: &CommandSpec) -> Option<Vec<String>> {
    match spec {
        CommandSpec::Argv(argv) if argv.is_empty() => None,
        CommandSpec::Argv(argv) => Some(argv.clone()),
        CommandSpec::Shell(text) => Some(vec!["sh".into(), "-c".into(), text.clone()]),
    }
}

impl Bounded<'_> {
    /// Runs `argv` (non-empty) to completion or timeout. `started` receives the process
    /// group id as soon as the command runs (so a crash of ours can be cleaned up after).
    pub(super) fn run(&self, argv: &[String], started: impl FnOnce(i32)) -> Exit {
        if argv.is_empty() {
            return Exit::Success;
        }
        let argv = match self.jail.argv(argv) {
            Ok(argv) => argv,
            Err(why) => return Exit::NotStarted(std::io::Error::other(why)),
        };
        let Some((program, args)) = argv.split_first() else {
            return Exit::Success;
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(self.dir)
            .stdin(Stdio::null())
            .env_remove("LIZA_AGENT_ID")
            .env_remove("LIZA_AGENT_GENERATION")
            .process_group(0);
        for (key, value) in self.env {
            command.env(key, value);
        }
        match self.output.map(|f| (f.try_clone(), f.try_clone())) {
            Some((Ok(out), Ok(err))) => {
                command.stdout(out).stderr(err);
            }
            Some((Err(e), _) | (_, Err(e))) => return Exit::NotStarted(e),
            None => {
                command.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => return Exit::NotStarted(e),
        };
        let group = i32::try_from(child.id()).map(Pid::from_raw).ok();
        if let Some(group) = group {
            started(group.as_raw());
        }
        let (done, finished) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(child.wait());
        });
        let kill = |signal| {
            if let Some(group) = group {
                let _ = killpg(group, signal);
            }
        };
        let status = match finished.recv_timeout(self.timeout) {
            Ok(status) => status,
            Err(_) => {
                kill(Signal::SIGTERM);
                if finished.recv_timeout(Duration::from_secs(5)).is_err() {
                    kill(Signal::SIGKILL);
                    let _ = finished.recv();
                }
                kill(Signal::SIGKILL);
                return Exit::TimedOut(self.timeout);
            }
        };
        kill(Signal::SIGKILL);
        match status {
            Ok(s) if s.success() => Exit::Success,
            Ok(s) => Exit::Failed(s),
            Err(e) => Exit::NotStarted(e),
        }
    }
}
