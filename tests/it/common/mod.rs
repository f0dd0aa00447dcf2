//! Shared helpers for the end-to-end tests: hermetic temp repositories and the real
//! `liza` binary.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod board;
pub mod etcd;
pub mod markdown;
pub mod retro;
pub mod supervision;
pub mod team;
pub mod webdriver;

pub const LIZA: &str = env!("CARGO_BIN_EXE_liza");

/// Whether `program` runs here (`program <version_arg>` succeeds). CI has every tool the
/// tests use (`.ci/run` installs them): there a missing one fails the test; elsewhere the
/// test skips with a printed reason.
pub fn tool_available(program: &str, version_arg: &str, package: &str) -> bool {
    if Command::new(program)
        .arg(version_arg)
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{program} is missing in CI: .ci/run installs it (apt install {package})"
    );
    eprintln!("skipped: {program} is not installed (apt install {package})");
    false
}

/// Whether bubblewrap can start a sandbox here (specs/sandbox.md *The mechanism*). CI
/// has it (`.ci/run` installs bubblewrap): there its absence fails the test; elsewhere
/// the test skips with a printed reason.
pub fn sandbox_available() -> bool {
    match liza::sandbox::mechanism::probe() {
        liza::sandbox::mechanism::Availability::Available(_) => true,
        liza::sandbox::mechanism::Availability::Unavailable { reason, fix } => {
            assert!(
                std::env::var_os("CI").is_none(),
                "no sandbox in CI ({reason}): .ci/run installs bubblewrap"
            );
            eprintln!("skipped: no sandbox here: {reason} ({fix})");
            false
        }
    }
}

/// A valid mid-sprint blackboard with all 11 task statuses.
pub const MID_SPRINT: &str = include_str!("../../fixtures/mid-sprint.yaml");

/// The worktree directories [`MID_SPRINT`]'s tasks name.
pub const MID_SPRINT_WORKTREES: &[&str] = &[
    "t-claimed",
    "t-review",
    "t-rejected",
    "t-approved",
    "t-intfail",
    "t-fix",
];

/// A temporary git repository with `specs/vision.md` committed.
pub struct Repo {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl Repo {
    pub fn new() -> Repo {
        let repo = Repo {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(repo.path().join("specs")).unwrap();
        std::fs::write(
            repo.path().join("specs/vision.md"),
            "# Vision\n\nA report CLI with --json.\n",
        )
        .unwrap();
        repo.git(&["add", "."]);
        repo.git(&["commit", "-q", "-m", "start"]);
        repo
    }

    /// A repository whose blackboard is a generated one (`liza::bench`: every status,
    /// agents, histories) of `tasks` tasks, adopted as another tool's with the spec files
    /// and worktrees it names, and committed once by `liza note` (a full parse, after
    /// which the parse cache is warm).
    pub fn with_generated_board(tasks: usize, bytes_per_task: usize) -> Repo {
        let repo = Repo::initialized();
        let state =
            liza::bench::generate_state(tasks, bytes_per_task, liza::blackboard::Timestamp::now());
        let text = liza::blackboard::document::emit(&state, 0);
        liza::bench::adopt_state(&repo.liza_dir(), &text).unwrap();
        for spec in liza::bench::spec_files() {
            std::fs::write(repo.path().join(spec), "# spec\n").unwrap();
        }
        for wt in liza::bench::worktree_dirs(&state) {
            std::fs::create_dir_all(repo.path().join(wt)).unwrap();
        }
        assert_success(&repo.liza(&["note", "all", "adopt"]));
        repo
    }

    /// A clone of the repository at `url` (another host's checkout).
    pub fn cloned(url: &str) -> Repo {
        let repo = Repo {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        repo.git(&["clone", "-q", url, "."]);
        repo
    }

    /// A repository with `liza init` done.
    pub fn initialized() -> Repo {
        let repo = Repo::new();
        let out = repo.liza(&["init", "Add a --json flag to the report CLI"]);
        assert_success(&out);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn liza_dir(&self) -> PathBuf {
        self.path().join(".liza")
    }

    pub fn state_path(&self) -> PathBuf {
        self.liza_dir().join("state.yaml")
    }

    pub fn state_text(&self) -> String {
        std::fs::read_to_string(self.state_path()).unwrap()
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("LC_ALL", "C");
    }

    pub fn git(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        self.env(&mut cmd);
        let out = cmd.args(args).current_dir(self.path()).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// git in another directory of this repository (a worktree).
    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        self.env(&mut cmd);
        let out = cmd.args(args).current_dir(dir).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// A `liza` command in this repository with a hermetic environment.
    pub fn command(&self) -> Command {
        self.command_for(LIZA)
    }

    /// `program` in this repository with the same hermetic environment.
    pub fn command_for(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        self.env(&mut cmd);
        cmd.current_dir(self.path());
        cmd
    }

    pub fn liza(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    pub fn liza_in(&self, dir: &Path, args: &[&str]) -> Output {
        self.command().current_dir(dir).args(args).output().unwrap()
    }

    pub fn liza_env(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        let mut cmd = self.command();
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(args).output().unwrap()
    }

    /// Everything a refused command must leave byte-identical (specs/blackboard.md): state.yaml,
    /// log.yaml, the journal, worktrees and git refs.
    pub fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        for name in ["state.yaml", "log.yaml"] {
            if let Ok(bytes) = std::fs::read(self.liza_dir().join(name)) {
                out.insert(name.to_owned(), bytes);
            }
        }
        collect(&self.liza_dir().join("journal"), "journal", &mut out);
        collect(&self.path().join(".worktrees"), ".worktrees", &mut out);
        out.insert(
            "refs".into(),
            self.git(&["for-each-ref", "--format=%(refname) %(objectname)"])
                .into_bytes(),
        );
        out
    }

    /// Writes the mid-sprint fixture (every task status) as state.yaml, by hand: the next
    /// transaction adopts it. Creates the worktree directories its CLAIMED tasks need.
    /// Puts the mid-sprint fixture in place as a blackboard written by another tool: no
    /// journal, so the next transaction adopts it (a hand edit adding tasks past DRAFT
    /// would be rejected).
    pub fn write_mid_sprint(&self) {
        let text = MID_SPRINT.replace("revision: 41", "revision: 1");
        liza::bench::adopt_state(&self.liza_dir(), &text).unwrap();
        for wt in MID_SPRINT_WORKTREES {
            std::fs::create_dir_all(self.path().join(".worktrees").join(wt)).unwrap();
        }
    }

    pub fn state_json(&self) -> serde_json::Value {
        let out = self.liza(&["--json", "status"]);
        assert_success(&out);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["result"].clone()
    }

    pub fn revision(&self) -> u64 {
        self.state_json()["revision"].as_u64().unwrap()
    }

    /// The files kept under `.liza/rejected/`: (the human's file, its note), oldest first.
    pub fn rejected(&self) -> Vec<(String, String)> {
        let dir = self.liza_dir().join("rejected");
        let mut kept: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        kept.sort();
        kept.iter()
            .filter(|p| !p.to_string_lossy().ends_with(".note.txt"))
            .map(|p| {
                (
                    std::fs::read_to_string(p).unwrap(),
                    std::fs::read_to_string(p.with_extension("note.txt")).unwrap(),
                )
            })
            .collect()
    }

    /// The entries of log.yaml as JSON objects.
    pub fn log(&self) -> Vec<serde_json::Value> {
        let out = self.liza(&["--json", "log"]);
        assert_success(&out);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["result"]["entries"].as_array().unwrap().clone()
    }
}

fn collect(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let path = entry.path();
        let name = format!("{prefix}/{}", entry.file_name().to_string_lossy());
        if path.is_dir() {
            collect(&path, &name, out);
        } else {
            out.insert(name, std::fs::read(&path).unwrap_or_default());
        }
    }
}

/// A small deterministic pseudo-random generator (no dependency, same sequence each run).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number below `bound`.
    pub fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % bound as u64) as usize
    }
}

/// A long-running `liza` process a test started (a watcher): killed when the test ends,
/// a failed assertion included, so nothing of a test outlives it.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    );
}

pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(out),
        stderr(out)
    );
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// `liza doctor --json`'s check named `name`.
pub fn doctor_check(repo: &Repo, name: &str) -> serde_json::Value {
    let out = repo.liza(&["--json", "doctor"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["result"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check: {report}"))
}
