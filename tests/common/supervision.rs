//! Supervisors and the fake agent for end-to-end tests: a project whose agents are the
//! fake agent CLI (tests/fake-agent/agent.sh) driven by step scripts, supervisor
//! processes, and waiting on them and on the blackboard.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
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
}

impl AgentProject {
    pub fn new() -> AgentProject {
        let repo = Repo::initialized();
        let agent = fake_agent().display().to_string();
        configure(&repo, |c| {
            let tool = liza::blackboard::model::AgentTool {
                executable: agent.clone(),
                args: None,
                prompt: Some(liza::blackboard::model::PromptMode::Stdin),
                env: None,
                interactive_args: None,
                extra: Default::default(),
            };
            c.agent_tools = Some(liza::blackboard::codec::IdMap(vec![(
                "fake".to_owned(),
                tool,
            )]));
            c.default_cli = Some("fake".into());
        });
        AgentProject {
            repo,
            scenario: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes the step script `<role>/<name>.sh`.
    pub fn step(&self, role: &str, name: &str, script: &str) {
        let path = self.scenario.path().join(role).join(format!("{name}.sh"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, script).unwrap();
    }

    pub fn supervisor(&self, role: &str, id: &str) -> Child {
        let mut cmd = self.repo.command();
        cmd.env("LIZA_AGENT_ID", id)
            .env("FAKE_AGENT_DIR", self.scenario.path())
            .arg("agent")
            .arg(role)
            .stdout(std::fs::File::create(self.scenario.path().join(format!("{id}.out"))).unwrap())
            .stderr(Stdio::piped());
        cmd.spawn().unwrap()
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

    /// The runs the fake agent made, as `role agent key n` lines.
    pub fn runs(&self) -> Vec<String> {
        std::fs::read_to_string(self.scenario.path().join("runs.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Waits for every child, with a generous guard against hangs; returns their outputs.
pub fn wait_all(children: Vec<(String, Child)>, guard: Duration) -> Vec<(String, Output)> {
    let deadline = Instant::now() + guard;
    let mut pending = children;
    let mut done = Vec::new();
    while !pending.is_empty() {
        let mut still = Vec::new();
        for (name, mut child) in pending {
            if child.try_wait().unwrap().is_some() {
                done.push((name, child.wait_with_output().unwrap()));
            } else {
                still.push((name, child));
            }
        }
        pending = still;
        if Instant::now() > deadline {
            let stuck: Vec<String> = pending
                .into_iter()
                .map(|(name, mut child)| {
                    let _ = child.kill();
                    let out = child.wait_with_output().unwrap();
                    format!(
                        "{name} did not exit:\n{}\n{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    )
                })
                .collect();
            panic!("{}", stuck.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done
}

/// Polls `condition` every 50 ms until it holds; panics with `what` after `guard`.
pub fn wait_until(what: &str, guard: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + guard;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A task of the model by id (`null` when absent).
pub fn task_of(repo: &Repo, id: &str) -> serde_json::Value {
    model(repo)["tasks"]
        .as_array()
        .and_then(|tasks| tasks.iter().find(|t| t["id"] == id).cloned())
        .unwrap_or(serde_json::Value::Null)
}

/// Sends `signal` to a supervisor and returns its exit code and output.
pub fn stop(mut child: Child, signal: nix::sys::signal::Signal) -> (Option<i32>, String) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, signal).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the supervisor ignored {signal}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Whether process `pid` runs (exists and is not a zombie).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}
