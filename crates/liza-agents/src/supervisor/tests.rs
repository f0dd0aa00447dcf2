//! The runner through its ports: a real blackboard and a real repository in a temporary
//! directory, liza's own store, git and operations as they run, and a scripted agent in
//! place of the agent CLI's process — no process is started, so what the runner does
//! with what a run left is tested on its own, as the policy is (`policy/tests.rs`).
//!
//! The scripted agent stands for aider 0.86.2 as observed (tests/fake-clis/aider): it
//! cannot run commands, applies its edits to the files and commits them itself, and
//! exits 0 — or, as any CLI may, hangs without a word.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::clock::SystemClock;
use super::ports::{Pending, Ports, RunningAgent, Spawn, Spawner};
use super::stop::Stop;
use super::{Console, Options, Session};
use crate::blackboard::model::{ExecutionTimeout, SandboxConfig, SandboxMode, TaskStatus};
use crate::blackboard::{Actor, State, TaskId};
use crate::lifecycle::NewTask;
use crate::ops::{self, Project};
use liza_git::testing::commit_file;

/// A git repository with one commit and a spec, initialised as a liza project whose
/// runs are not sandboxed (no process is started), with one task ready to claim.
fn project(configure: impl Fn(&mut State)) -> (tempfile::TempDir, Project) {
    let (dir, project) = liza_ops::testing::project();
    project
        .store
        .transact(&Actor::Human, |tx| {
            tx.state.config.sandbox = Some(SandboxConfig {
                mode: Some(SandboxMode::Off),
                ..SandboxConfig::default()
            });
            configure(&mut tx.state);
            Ok::<_, std::convert::Infallible>(())
        })
        .unwrap();
    let task = NewTask {
        id: "t-1".into(),
        description: "Add --json to report".into(),
        spec_ref: Some("specs/vision.md".into()),
        done_when: Some("report --json prints a totals key".into()),
        scope: Some("the report command".into()),
        finalize: true,
        ..NewTask::default()
    };
    ops::add_tasks(&project, &Actor::Human, &[task]).unwrap();
    (dir, project)
}

/// What the scripted agent does once started.
#[derive(Clone)]
enum Script {
    /// Edits `file` and commits it, says so, exits 0 (aider with auto-commits).
    CommitAndExit { file: &'static str },
    /// Answers `text` without touching a file, exits 0 (a review).
    Answer { text: &'static str },
    /// Writes nothing and never exits until stopped.
    Hang,
}

/// The agent CLI's process, scripted; what it was asked to start is kept.
struct Scripted {
    script: Script,
    started: Mutex<Vec<(Vec<String>, PathBuf)>>,
    stopped: Arc<AtomicBool>,
    /// A SIGTERM to the supervisor as the run ends (set once the session exists).
    signal_at_exit: Mutex<Option<Stop>>,
}

impl Scripted {
    fn new(script: Script) -> Arc<Scripted> {
        Arc::new(Scripted {
            script,
            started: Mutex::default(),
            stopped: Arc::default(),
            signal_at_exit: Mutex::default(),
        })
    }
}

impl Spawner for Scripted {
    fn find(&self, program: &str) -> Option<PathBuf> {
        Some(Path::new("/scripted").join(program))
    }

    fn spawn(&self, spawn: Spawn<'_>) -> std::io::Result<Box<dyn RunningAgent>> {
        let mut started = self.started.lock().unwrap();
        started.push((spawn.invocation.argv.clone(), spawn.cwd.to_path_buf()));
        let (exit, output) = match self.script {
            Script::CommitAndExit { file } => {
                commit_file(spawn.cwd, file, "fn main() {}\n", "aider: add --json");
                let said = format!("Applied edit to {file}\nCommit 1a2b3c4 aider: add --json\n");
                (Some(0), said)
            }
            Script::Answer { text } => (Some(0), text.to_owned()),
            Script::Hang => (None, String::new()),
        };
        Ok(Box::new(ScriptedRun {
            exit,
            output,
            began: Instant::now(),
            stopped: self.stopped.clone(),
            signal_at_exit: self.signal_at_exit.lock().unwrap().clone(),
        }))
    }
}

struct ScriptedRun {
    /// `None`: it runs until stopped.
    exit: Option<i32>,
    output: String,
    began: Instant,
    stopped: Arc<AtomicBool>,
    signal_at_exit: Option<Stop>,
}

/// The signal comes once the runner is done with the process: after its exit was seen.
impl Drop for ScriptedRun {
    fn drop(&mut self) {
        if let Some(stop) = &self.signal_at_exit {
            stop.signalled(15);
        }
    }
}

impl RunningAgent for ScriptedRun {
    fn pgid(&self) -> i32 {
        0
    }

    fn wait(&mut self) -> Pending<'_, std::io::Result<Option<i32>>> {
        match self.exit {
            Some(code) => Box::pin(std::future::ready(Ok(Some(code)))),
            None => Box::pin(std::future::pending()),
        }
    }

    fn stop(&mut self, _grace: Duration) -> Pending<'_, ()> {
        self.stopped.store(true, Ordering::SeqCst);
        Box::pin(std::future::ready(()))
    }

    fn last_output(&self) -> Option<Instant> {
        (!self.output.is_empty()).then_some(self.began)
    }

    fn output_tail(&self) -> String {
        self.output.clone()
    }
}

/// The supervisor's lines, kept.
#[derive(Default)]
struct Lines(Mutex<Vec<String>>);

impl Console for Lines {
    fn info(&self, line: &str) {
        self.0.lock().unwrap().push(line.to_owned());
    }

    fn agent_output(&self, _: &[u8]) {}
}

impl Lines {
    fn said(&self, part: &str) -> bool {
        self.0.lock().unwrap().iter().any(|l| l.contains(part))
    }
}

/// Runs `coder-1` on aider, `--once`, in `root` with `agent` for its process; its exit.
fn serve_once(root: &Path, agent: Arc<Scripted>, console: Arc<Lines>) -> i32 {
    serve_once_as("coder-1", root, agent, console)
}

/// Runs the supervisor of `id` on aider, `--once`; `signal_at_exit`: SIGTERM arrives as the
/// agent's run ends.
fn serve_once_as(id: &str, root: &Path, agent: Arc<Scripted>, console: Arc<Lines>) -> i32 {
    serve(id, root, agent, console, false)
}

fn serve(
    id: &str,
    root: &Path,
    agent: Arc<Scripted>,
    console: Arc<Lines>,
    signal_at_exit: bool,
) -> i32 {
    let role = id.rsplit_once('-').unwrap().0;
    let options = Options {
        role: role.into(),
        agent_id: Some(id.into()),
        cli: Some("aider".into()),
        once: true,
        ..Options::default()
    };
    let ports = Ports {
        console,
        spawner: agent.clone(),
        clock: Arc::new(SystemClock::new()),
        cwd: root.to_path_buf(),
        signals: false,
        beside_planner: None,
        // No `liza worktree-state` here: a live run's worktree reads as unread.
        liza: PathBuf::from("/nonexistent/liza"),
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move {
            let mut session = Session::start(options, ports).await.unwrap();
            if signal_at_exit {
                *agent.signal_at_exit.lock().unwrap() = Some(session.stop.clone());
            }
            let code = session.serve().await.unwrap();
            session.finish().await;
            code
        })
}

fn status(project: &Project, task: &str) -> (TaskStatus, Option<String>) {
    let state = project.store.snapshot().unwrap().state;
    let t = state.task(&TaskId::parse(task).unwrap()).unwrap();
    (t.status, t.blocked_reason.clone())
}

/// An agent that cannot run commands commits and exits 0: the runner reports the
/// commit, the policy asks for the submission, the runner carries it out as the agent.
#[test]
fn the_commit_of_an_agent_that_cannot_run_commands_is_submitted_for_it() {
    let (dir, project) = project(|_| {});
    let agent = Scripted::new(Script::CommitAndExit { file: "report.rs" });
    let console = Arc::new(Lines::default());
    assert_eq!(serve_once(dir.path(), agent.clone(), console.clone()), 0);

    assert_eq!(status(&project, "t-1").0, TaskStatus::ReadyForReview);
    assert!(console.said("submitted t-1 for review on the agent's behalf"));
    let started = agent.started.lock().unwrap();
    let (argv, cwd) = &started[0];
    assert_eq!(started.len(), 1, "one run: {started:?}");
    assert_eq!(argv[0], "aider", "{argv:?}");
    assert!(argv.iter().any(|a| a == "--message-file"), "{argv:?}");
    assert!(cwd.ends_with(".worktrees/t-1"), "{}", cwd.display());
}

/// An agent that says nothing and changes nothing is stopped at the progress limit, and
/// the coder's task is blocked for it.
#[test]
fn a_silent_agent_is_stopped_by_the_watchdog_and_its_task_blocked() {
    let (dir, project) = project(|state| {
        state.config.agent_progress_timeout = Some(1);
        // A backstop: broken, the watchdog's stall rule fails the test at this limit
        // (another reason), never hangs it.
        state.config.execution_timeout = Some(ExecutionTimeout {
            coder: Some(10),
            ..ExecutionTimeout::default()
        });
    });
    let agent = Scripted::new(Script::Hang);
    let console = Arc::new(Lines::default());
    assert_eq!(serve_once(dir.path(), agent.clone(), console), 0);

    assert!(
        agent.stopped.load(Ordering::SeqCst),
        "the agent was stopped"
    );
    let (status, reason) = status(&project, "t-1");
    assert_eq!(status, TaskStatus::Blocked);
    assert_eq!(reason.as_deref(), Some("watchdog: no progress for 1 s"));
}

/// A reviewer that cannot run commands ends its answer with a verdict line: the runner
/// records it as the reviewer, and `--once` merges the approval before it exits.
#[test]
fn the_verdict_line_of_a_reviewer_that_cannot_run_commands_is_recorded_then_merged() {
    let (dir, project) = project(|_| {});
    let coder = Scripted::new(Script::CommitAndExit { file: "report.rs" });
    let console = Arc::new(Lines::default());
    assert_eq!(serve_once(dir.path(), coder, console), 0);
    assert_eq!(status(&project, "t-1").0, TaskStatus::ReadyForReview);

    let answer = "The change adds --json with a test.\nLIZA-VERDICT: approve\n";
    let reviewer = Scripted::new(Script::Answer { text: answer });
    let console = Arc::new(Lines::default());
    let code = serve_once_as(
        "code-reviewer-1",
        dir.path(),
        reviewer.clone(),
        console.clone(),
    );
    assert_eq!(code, 0);
    assert!(console.said("t-1 approved (the verdict line of the agent's answer)"));
    assert_eq!(status(&project, "t-1").0, TaskStatus::Merged);
    let started = reviewer.started.lock().unwrap();
    assert!(started[0].1.ends_with(".worktrees/t-1"), "{started:?}");
}

/// SIGTERM arrives as the run of an agent that cannot run commands ends: what liza does
/// for it is still done before the supervisor stops (the stopping path), then it exits
/// 128 + 15.
#[test]
fn a_signal_as_the_run_ends_still_lets_liza_submit_for_the_agent() {
    let (dir, project) = project(|_| {});
    let agent = Scripted::new(Script::CommitAndExit { file: "report.rs" });
    let console = Arc::new(Lines::default());
    assert_eq!(
        serve("coder-1", dir.path(), agent, console.clone(), true),
        143
    );
    assert_eq!(status(&project, "t-1").0, TaskStatus::ReadyForReview);
    assert!(console.said("submitted t-1 for review on the agent's behalf"));
}
