//! Supervisors and the fake agent for end-to-end tests: a project whose agents are the
//! fake agent CLI (tests/fake-agent/agent.sh) driven by step scripts, supervisor
//! processes, and waiting on them and on the blackboard.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Output};
use std::time::{Duration, Instant};

use super::team::*;
use super::*;

pub const LIZA_AGENT: &str = env!("CARGO_BIN_EXE_liza-agent");

pub fn fake_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-agent/agent.sh")
}

/// A project whose agents are the fake agent, driven by step scripts in `scenario`.
pub struct AgentProject {
    pub repo: Repo,
    pub scenario: tempfile::TempDir,
    /// The etcd holding the blackboard, when it is not in `.liza/`.
    pub etcd: Option<super::etcd::Etcd>,
}

impl AgentProject {
    pub fn new() -> AgentProject {
        Self::around(Repo::initialized(), None)
    }

    /// A project whose blackboard is on `kind`; `None` (skipped) without etcd.
    pub fn on(kind: super::board::Kind) -> Option<AgentProject> {
        let board = super::board::Board::initialized(kind)?;
        Some(Self::around(
            board.repo,
            board.etcd.map(|(member, _)| member),
        ))
    }

    /// A project around an initialised `repo`, its agents the fake agent.
    pub fn around(repo: Repo, etcd: Option<super::etcd::Etcd>) -> AgentProject {
        let agent = fake_agent().display().to_string();
        let scenario = tempfile::tempdir().unwrap();
        // The fake agent counts its runs and reads its step scripts there: the one place
        // outside its worktree a sandboxed run of it may write (specs/sandbox.md).
        configure(&repo, |c| {
            c.sandbox = Some(sandbox_writing(scenario.path()));
            let tool = liza::blackboard::model::AgentTool {
                executable: Some(agent.clone()),
                prompt: Some(liza::blackboard::model::PromptMode::Stdin),
                ..Default::default()
            };
            c.agent_tools = Some(liza::blackboard::codec::IdMap(vec![(
                "fake".to_owned(),
                tool,
            )]));
            c.default_cli = Some("fake".into());
        });
        AgentProject {
            repo,
            scenario,
            etcd,
        }
    }

    /// The sprint most supervisor tests run: four tasks (t-4 after t-1), each coded and
    /// approved, t-2's first submission rejected once.
    pub fn plan_four_tasks_one_rejected(&self) {
        self.step(
            "planner",
            "INITIAL_PLANNING",
            "task t-1\ntask t-2\ntask t-3\ntask t-4 --depends t-1\n",
        );
        self.step("planner", "SPRINT_COMPLETE", "liza goal complete\n");
        self.step(
            "coder",
            "default",
            "work \"$key.txt\" \"the text of $key\"\nsubmit\n",
        );
        self.step("coder", "t-2.1", "work t-2.txt draft\nsubmit\n");
        self.step(
            "code-reviewer",
            "t-2.1",
            "reject 't-2.txt:1 is a draft — write the final text. Overall: rework'\n",
        );
        self.step("code-reviewer", "default", "approve\n");
    }

    /// Writes the step script `<role>/<name>.sh`.
    pub fn step(&self, role: &str, name: &str, script: &str) {
        let path = self.scenario.path().join(role).join(format!("{name}.sh"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, script).unwrap();
    }

    /// Starts a supervisor; its stdout and stderr go to `<id>.out` / `<id>.err` in the
    /// scenario directory (files, not pipes: a pipe nobody reads until the end could fill
    /// and stall the supervisor under test).
    /// The sprint team: planner-1, coder-1, coder-2 and code-reviewer-1.
    pub fn team(&self) -> Vec<Supervisor> {
        vec![
            self.supervisor("planner", "planner-1"),
            self.supervisor("coder", "coder-1"),
            self.supervisor("coder", "coder-2"),
            self.supervisor("code-reviewer", "code-reviewer-1"),
        ]
    }

    pub fn supervisor(&self, role: &str, id: &str) -> Supervisor {
        self.supervisor_env(role, id, &[])
    }

    /// A supervisor with `env` added to its environment.
    pub fn supervisor_env(&self, role: &str, id: &str, env: &[(&str, &str)]) -> Supervisor {
        self.supervisor_in(&self.repo, role, id, env)
    }

    /// A supervisor in another checkout of the project (another host's).
    pub fn supervisor_in(
        &self,
        checkout: &Repo,
        role: &str,
        id: &str,
        env: &[(&str, &str)],
    ) -> Supervisor {
        let stdout = self.scenario.path().join(format!("{id}.out"));
        let stderr = self.scenario.path().join(format!("{id}.err"));
        let mut cmd = checkout.command();
        cmd.envs(env.iter().copied());
        cmd.env("LIZA_AGENT_ID", id)
            .env("FAKE_AGENT_DIR", self.scenario.path())
            .arg("agent")
            .arg(role)
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap());
        Supervisor {
            id: id.to_owned(),
            child: cmd.spawn().unwrap(),
            stdout,
            stderr,
        }
    }

    /// `liza-agent` with `env` and `args`, to completion.
    pub fn agent_command(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        let mut cmd = self.repo.command_for(LIZA_AGENT);
        cmd.env("FAKE_AGENT_DIR", self.scenario.path());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(args).output().unwrap()
    }

    /// Waits for a step script to touch `marker` in the scenario directory while
    /// `agent` runs, and returns the process group of what runs (the supervisor's
    /// heartbeat records it): the agent's own group, or in a sandbox the group of
    /// everything inside it, led by its first process — alive exactly as long as the
    /// sandbox is. (An agent's `$$` inside a sandbox is its sandbox's pid, not the host's.)
    pub fn wait_for_agent(&self, agent: &str, marker: &str, guard: Duration) -> i32 {
        let path = self.scenario.path().join(marker);
        self.wait_until(&format!("{marker} from {agent}"), guard, || path.exists());
        let mut pgid = 0;
        self.wait_until(
            &format!("{agent}'s running agent in its record"),
            guard,
            || {
                pgid = agent_group(&self.repo, agent).unwrap_or(0);
                pgid > 1
            },
        );
        pgid
    }

    /// The runs the fake agent made, as `role agent key n` lines.
    pub fn runs(&self) -> Vec<String> {
        std::fs::read_to_string(self.scenario.path().join("runs.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// A supervisor process started by [`AgentProject::supervisor`].
pub struct Supervisor {
    pub id: String,
    pub child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Supervisor {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// What it printed so far (stdout then stderr).
    pub fn output_so_far(&self) -> String {
        format!(
            "{}{}",
            std::fs::read_to_string(&self.stdout).unwrap_or_default(),
            std::fs::read_to_string(&self.stderr).unwrap_or_default()
        )
    }

    /// SIGKILL, then reaps it.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Reaps the exited process: its exit code and output (stdout then stderr).
    pub fn exited(self) -> (Option<i32>, String) {
        let out = self.finish();
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// Reaps the exited process and returns its exit status and output.
    fn finish(mut self) -> Output {
        let status: ExitStatus = self.child.wait().unwrap();
        Output {
            status,
            stdout: std::fs::read(&self.stdout).unwrap_or_default(),
            stderr: std::fs::read(&self.stderr).unwrap_or_default(),
        }
    }
}

/// A supervisor a test let go of while it ran is killed: nothing of a test outlives it.
impl Drop for Supervisor {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl AgentProject {
    /// Waits for every supervisor, with a generous guard against hangs; returns their
    /// outputs. On a hang, the panic shows what the supervisors and the blackboard were
    /// doing: each one's output, the runs, the alerts and the tasks' statuses.
    pub fn wait_all(&self, supervisors: Vec<Supervisor>, guard: Duration) -> Vec<(String, Output)> {
        let deadline = Instant::now() + guard;
        let mut pending = supervisors;
        let mut done = Vec::new();
        while !pending.is_empty() {
            let mut still = Vec::new();
            for mut supervisor in pending {
                if supervisor.running() {
                    still.push(supervisor);
                } else {
                    done.push((supervisor.id.clone(), supervisor.finish()));
                }
            }
            pending = still;
            if Instant::now() > deadline {
                let mut report = String::new();
                for mut supervisor in pending {
                    supervisor.kill();
                    let id = supervisor.id.clone();
                    let out = supervisor.finish();
                    report += &format!(
                        "{id} did not exit:\n{}\n{}\n",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                panic!("{report}{}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        done
    }

    /// The blackboard as a hung test sees it: task statuses, sprint, agents, runs, alerts.
    pub fn diagnostics(&self) -> String {
        let state = model(&self.repo);
        let tasks: Vec<String> = state["tasks"]
            .as_array()
            .map(|tasks| {
                tasks
                    .iter()
                    .map(|t| format!("{} {} {}", t["id"], t["status"], t["assigned_to"]))
                    .collect()
            })
            .unwrap_or_default();
        let read = |path: PathBuf| std::fs::read_to_string(path).unwrap_or_default();
        let mut outputs: Vec<PathBuf> = std::fs::read_dir(self.scenario.path())
            .map(|dir| {
                dir.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "out" || x == "err"))
                    .collect()
            })
            .unwrap_or_default();
        outputs.sort();
        let outputs: String = outputs
            .into_iter()
            .map(|p| format!("--- {}\n{}", p.display(), read(p.clone())))
            .collect();
        format!(
            "tasks: {tasks:#?}\nsprint: {}\ngoal: {}\nagents: {}\nruns:\n{}\nalerts:\n{}\n\
             supervisor output:\n{outputs}",
            state["sprint"],
            state["goal"],
            state["agents"],
            read(self.scenario.path().join("runs.log")),
            read(self.repo.liza_dir().join("alerts.log")),
        )
    }

    /// Polls `condition` every 50 ms until it holds; after `guard`, panics with `what` and
    /// the [`diagnostics`](Self::diagnostics).
    pub fn wait_until(&self, what: &str, guard: Duration, mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + guard;
        while !condition() {
            if Instant::now() >= deadline {
                panic!("timed out waiting for {what}\n{}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The fake agent's step for a coder whose agent marks `started` and hangs.
pub const HANGS: &str = "touch \"$FAKE_AGENT_DIR/started\"\nhang 3600\n";

/// A project with a 3 s lease (1 s heartbeats) and one task t-1, whose coder's agent
/// starts and hangs.
pub fn one_task_short_leases() -> AgentProject {
    let project = AgentProject::new();
    configure(&project.repo, |c| {
        c.lease_duration = Some(3);
        c.heartbeat_interval = Some(1);
    });
    add(&project.repo, "t-1", "");
    project.step("coder", "default", HANGS);
    project
}

/// (task id, status) of every task, sorted.
pub fn statuses(repo: &Repo) -> Vec<(String, String)> {
    let mut statuses: Vec<(String, String)> = model(repo)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    statuses.sort();
    statuses
}

/// The events of task `id`'s history, in order.
pub fn history_events(repo: &Repo, id: &str) -> Vec<String> {
    task_of(repo, id)["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["event"].as_str().unwrap().to_owned())
        .collect()
}

/// A task of the model by id (`null` when absent).
pub fn task_of(repo: &Repo, id: &str) -> serde_json::Value {
    model(repo)["tasks"]
        .as_array()
        .and_then(|tasks| tasks.iter().find(|t| t["id"] == id).cloned())
        .unwrap_or(serde_json::Value::Null)
}

/// Sends `signal` to a supervisor and returns its exit code and output.
pub fn stop(mut supervisor: Supervisor, signal: nix::sys::signal::Signal) -> (Option<i32>, String) {
    let pid = nix::unistd::Pid::from_raw(supervisor.pid());
    nix::sys::signal::kill(pid, signal).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while supervisor.running() {
        assert!(Instant::now() < deadline, "the supervisor ignored {signal}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = supervisor.finish();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The host pids of the running processes whose command line is exactly `argv`: how a
/// test finds an agent's process inside a sandbox, whose pids are its own.
pub fn processes_running(argv: &[&str]) -> Vec<i32> {
    let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted)
                        && alive(*pid)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The sandbox configuration that lets runs write `dir` too (`sandbox.writable`): where the
/// fakes keep their scenario, outside every worktree. The fakes themselves (`tests/`) are
/// shown read-only: a checkout under `/tmp` or `$HOME` is hidden from a run otherwise, and
/// a fake CLI runs the fake agent beside it.
pub fn sandbox_writing(dir: &Path) -> liza::blackboard::model::SandboxConfig {
    let fakes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    liza::blackboard::model::SandboxConfig {
        writable: Some(vec![dir.display().to_string()]),
        read_only: Some(vec![fakes.display().to_string()]),
        ..Default::default()
    }
}

/// Turns the sandbox off for the project's agents and checks (`config.sandbox.mode: off`),
/// keeping the rest of its sandbox settings.
pub fn sandbox_off(repo: &Repo) {
    configure(repo, |c| {
        c.sandbox.get_or_insert_with(Default::default).mode =
            Some(liza::blackboard::model::SandboxMode::Off);
    });
}

/// The process group the live record of `agent` names (its running agent's), if any.
pub fn agent_group(repo: &Repo, agent: &str) -> Option<i32> {
    let dir = repo.liza_dir().join("live");
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(&format!("{agent}.")) {
            return None;
        }
        let text = std::fs::read_to_string(e.path()).ok()?;
        text.lines()
            .find_map(|l| l.trim().strip_prefix("pgid:"))
            .and_then(|v| v.trim().parse::<i32>().ok())
    })
}

/// Whether process `pid` runs (exists and is not a zombie).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// What `agent`'s supervisor says it waits for (`liza status --json`: `waiting`).
pub fn waiting_of(repo: &Repo, agent: &str) -> Option<String> {
    let out = repo.liza(&["--json", "status"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    report["result"]["agents"]
        .as_array()?
        .iter()
        .find(|a| a["id"] == agent)?["waiting"]
        .as_str()
        .map(str::to_owned)
}
