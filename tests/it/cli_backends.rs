//! The built-in CLI backends against fakes of the real CLIs (tests/fake-clis/, each
//! reproducing what the release named in its header was seen to do): a one-task sprint
//! with the same CLI as coder and reviewer reaches MERGED for every backend, with a
//! 300 KB prompt and the user setting nothing but the CLI's usual key and base URL; the
//! arguments liza used before fail against the fakes as they failed against the real
//! CLIs; a CLI without its key stops the supervisor with the fix. `scripts/e2e-real-clis`
//! runs the same sprint against the real CLIs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use crate::common::team::*;
use crate::common::*;
use liza::blackboard::model::SandboxMode;

const GUARD: Duration = Duration::from_secs(90);
const LIZA_AGENT: &str = env!("CARGO_BIN_EXE_liza-agent");

fn fakes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-clis")
}

/// A project with one finalized task whose description makes the prompt over 300 KB,
/// and a scenario directory for the fake agent's step scripts.
struct CliProject {
    repo: Repo,
    scenario: tempfile::TempDir,
}

impl CliProject {
    fn new() -> CliProject {
        let repo = Repo::initialized();
        add(&repo, "t-1", "");
        let id = liza::blackboard::TaskId::parse("t-1").unwrap();
        edit_state(&repo, "test_big_description", |state, _| {
            let line = "Keep every line of the report stable across runs. ";
            let task = state.task_mut(&id).unwrap();
            task.description = Some(format!(
                "Implement the report flag.\n{}",
                line.repeat(300_000 / line.len() + 1)
            ));
        });
        let scenario = tempfile::tempdir().unwrap();
        // The fakes log their runs there, sandboxed like the real CLIs.
        configure(&repo, |c| {
            c.sandbox = Some(crate::common::supervision::sandbox_writing(scenario.path()))
        });
        CliProject { repo, scenario }
    }

    fn step(&self, role: &str, script: &str) {
        let dir = self.scenario.path().join(role);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("t-1.sh"), script).unwrap();
    }

    /// `liza-agent <role>` with the fakes on PATH and `env` (the user's variables).
    fn command(&self, role: &str, id: &str, env: &[(&str, &str)], args: &[&str]) -> Command {
        let mut cmd = self.repo.command_for(LIZA_AGENT);
        let path = format!("{}:{}", fakes().display(), std::env::var("PATH").unwrap());
        cmd.env("PATH", path)
            .env("FAKE_AGENT_DIR", self.scenario.path())
            .env("LIZA_AGENT_ID", id)
            .envs(env.iter().copied())
            .arg(role)
            .args(args);
        cmd
    }

    fn spawn(&self, role: &str, id: &str, env: &[(&str, &str)], args: &[&str]) -> Child {
        let out = std::fs::File::create(self.scenario.path().join(format!("{id}.out"))).unwrap();
        self.command(role, id, env, args)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap()
    }

    fn output(&self, role: &str, id: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
        self.command(role, id, env, args).output().unwrap()
    }

    /// The fakes' runs: (cli, argv, prompt bytes).
    fn cli_runs(&self) -> Vec<(String, String, usize)> {
        std::fs::read_to_string(self.scenario.path().join("clis.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let parts: Vec<&str> = l.split('\t').collect();
                let bytes = parts[2]
                    .trim_start_matches("prompt_bytes=")
                    .trim()
                    .parse()
                    .unwrap();
                (parts[0].to_owned(), parts[1].to_owned(), bytes)
            })
            .collect()
    }

    fn supervisor_output(&self, id: &str) -> String {
        std::fs::read_to_string(self.scenario.path().join(format!("{id}.out"))).unwrap_or_default()
    }
}

/// What a user of each CLI exports: its key, and a base URL where it takes one.
fn user_env(cli: &str) -> Vec<(&'static str, &'static str)> {
    match cli {
        "claude" => vec![
            ("ANTHROPIC_API_KEY", "sk-ant-test-0123456789"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
        ],
        "codex" => vec![
            ("CODEX_API_KEY", "sk-test-0123456789"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ],
        "gemini" => vec![
            ("GEMINI_API_KEY", "g-test-0123456789"),
            ("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9"),
        ],
        "mistral" => vec![("MISTRAL_API_KEY", "m-test-0123456789")],
        "aider" => vec![
            ("OPENAI_API_KEY", "sk-test-0123456789"),
            ("OPENAI_API_BASE", "http://127.0.0.1:9/v1"),
        ],
        "opencode" => vec![
            ("OPENAI_API_KEY", "sk-test-0123456789"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ],
        _ => unreachable!(),
    }
}

fn wait_for(project: &CliProject, status: &str, children: &mut [Child]) {
    let deadline = Instant::now() + GUARD;
    while Instant::now() < deadline {
        if crate::common::team::status(&project.repo, "t-1") == status {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for c in children.iter_mut() {
        let _ = c.kill();
    }
    panic!(
        "t-1 never reached {status}: {}\ncoder:\n{}\nreviewer:\n{}\nclis:\n{:?}",
        task_of_json(project),
        project.supervisor_output("coder-1"),
        project.supervisor_output("code-reviewer-1"),
        project.cli_runs()
    );
}

fn task_of_json(project: &CliProject) -> serde_json::Value {
    project.repo.state_json()["tasks"][0].clone()
}

fn sprint_with(cli: &str) {
    let project = CliProject::new();
    if cli == "aider" {
        // aider edits and commits; it cannot run `liza`, so its commits are submitted
        // for it, and its verdict is a line of its answer.
        project.step("coder", "printf 'done\\n' > \"$wt/t-1.txt\"\n");
        project.step(
            "code-reviewer",
            "echo 'Looks right.'\necho 'LIZA-VERDICT: approve'\n",
        );
    } else {
        project.step("coder", "work t-1.txt done\nsubmit\n");
        project.step("code-reviewer", "approve\n");
    }
    let env = user_env(cli);
    let mut children = vec![
        project.spawn("coder", "coder-1", &env, &["--cli", cli]),
        project.spawn("code-reviewer", "code-reviewer-1", &env, &["--cli", cli]),
    ];
    wait_for(&project, "MERGED", &mut children);
    for mut c in children {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = c.wait();
    }
    let runs = project.cli_runs();
    assert!(runs.len() >= 2, "{runs:?}");
    for (_, argv, bytes) in &runs {
        assert!(
            *bytes > 300_000,
            "the whole prompt arrives ({bytes} bytes): {argv}"
        );
        assert!(
            argv.len() < 4096,
            "the prompt is not an argument: {} bytes",
            argv.len()
        );
    }
    ledger_equals_what_was_served(&project, cli);
    // Nothing the CLI dropped in the worktree was committed.
    let merged = project
        .repo
        .git(&["ls-tree", "-r", "--name-only", "integration"]);
    for dropped in [
        ".aider",
        ".gemini",
        ".codex",
        ".claude",
        ".vibe",
        ".opencode",
        ".gitignore",
    ] {
        assert!(!merged.contains(dropped), "{dropped} committed:\n{merged}");
    }
}

/// The sprint's ledger holds every run, and its tokens are exactly what the fake
/// provider served (tests/fake-clis/lib.sh, `served.log`): each CLI's report read in its
/// own meaning, no call counted twice, none left out — and a count the provider's API
/// does not have (a cache write for Gemini or Mistral) is absent, not 0.
fn ledger_equals_what_was_served(project: &CliProject, cli: &str) {
    let served =
        std::fs::read_to_string(project.scenario.path().join("served.log")).unwrap_or_default();
    let mut want = [Some(0u64); 4];
    for line in served.lines() {
        // "<executable> <input> <output> <cache read> <cache write>"
        let fields: Vec<&str> = line.split_whitespace().collect();
        for (i, field) in fields[1..].iter().enumerate() {
            want[i] = match (want[i], field.parse::<u64>().ok()) {
                (Some(sum), Some(n)) => Some(sum + n),
                _ => None,
            };
        }
    }
    assert!(!served.is_empty(), "the fake {cli} served nothing");
    let ledger = std::fs::read_to_string(project.repo.path().join(".liza/ledger.jsonl"))
        .expect("the sprint's runs are in .liza/ledger.jsonl");
    let entries: Vec<serde_json::Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let runs = project.cli_runs().len();
    assert_eq!(entries.len(), runs, "one entry per run:\n{ledger}");
    let mut got = [None::<u64>; 4];
    for entry in &entries {
        assert_eq!(entry["backend"], cli, "{entry}");
        for model in entry["models"].as_array().into_iter().flatten() {
            for (i, key) in [
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
            ]
            .iter()
            .enumerate()
            {
                if let Some(n) = model[key].as_u64() {
                    got[i] = Some(got[i].unwrap_or(0) + n);
                }
            }
        }
    }
    assert_eq!(
        got, want,
        "{cli}: the ledger (input, output, cache read, cache write) against what was served\nledger:\n{ledger}\nserved:\n{served}"
    );
}

#[test]
fn a_sprint_completes_with_claude_for_every_role() {
    sprint_with("claude");
}

#[test]
fn a_sprint_completes_with_codex_for_every_role() {
    sprint_with("codex");
}

#[test]
fn a_sprint_completes_with_gemini_for_every_role() {
    sprint_with("gemini");
}

#[test]
fn a_sprint_completes_with_mistral_vibe_for_every_role() {
    sprint_with("mistral");
}

#[test]
fn a_sprint_completes_with_aider_for_every_role() {
    sprint_with("aider");
}

#[test]
fn a_sprint_completes_with_opencode_for_every_role() {
    sprint_with("opencode");
}

/// The arguments liza passed before issue 20 fail against the fakes the way they failed
/// against the real CLIs: a fake that accepted them would prove nothing.
#[test]
fn the_previous_arguments_fail_as_they_did_against_the_real_clis() {
    let old: &[(&str, &[&str], &str)] = &[
        ("gemini", &["--yolo", "-p"], "stdin"),
        (
            "codex",
            &[
                "exec",
                "--sandbox",
                "workspace-write",
                "--cd",
                "{worktree}",
                "--add-dir",
                "{git_dir}",
                "--add-dir",
                "{liza_dir}",
                "-",
            ],
            "stdin",
        ),
        ("mistral", &["-p"], "arg"),
        ("opencode", &["run"], "arg"),
    ];
    for (cli, args, prompt) in old {
        let project = CliProject::new();
        project.step("coder", "work t-1.txt done\nsubmit\n");
        configure(&project.repo, |c| {
            let tool = liza::blackboard::model::AgentTool {
                args: Some(args.iter().map(|a| (*a).to_owned()).collect()),
                prompt: Some(if *prompt == "arg" {
                    liza::blackboard::model::PromptMode::Arg
                } else {
                    liza::blackboard::model::PromptMode::Stdin
                }),
                ..Default::default()
            };
            c.agent_tools = Some(liza::blackboard::codec::IdMap(vec![(
                (*cli).to_owned(),
                tool,
            )]));
        });
        let out = project.output(
            "coder",
            "coder-1",
            &user_env(cli),
            &["--cli", cli, "--once"],
        );
        assert_ne!(
            crate::common::team::status(&project.repo, "t-1"),
            "READY_FOR_REVIEW",
            "{cli} with {args:?} should fail: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }
}

/// codex's own arguments (its workspace-write sandbox) where liza's sandbox is off: each
/// writable root and `allow_login_shell=false` are needed; inside liza's sandbox the same
/// arguments cannot run a command at all (codex's sandbox cannot nest), which is why liza
/// gives codex `--sandbox danger-full-access` there.
#[test]
fn codex_without_the_worktrees_git_dir_cannot_commit_and_without_allow_login_shell_cannot_find_liza()
 {
    for (drop, says, sandbox) in [
        (
            "{worktree_git_dir}",
            "Read-only file system",
            SandboxMode::Off,
        ),
        (
            "allow_login_shell=false",
            "liza: command not found",
            SandboxMode::Off,
        ),
        ("(nothing)", "nesting depth", SandboxMode::Auto),
    ] {
        let project = CliProject::new();
        project.step("coder", "work t-1.txt done\nsubmit\n");
        let args: Vec<String> = liza::backend::catalog::find("codex")
            .unwrap()
            .args
            .iter()
            .map(|a| (*a).to_owned())
            .collect();
        let mut kept = Vec::new();
        let mut skip = false;
        for (i, a) in args.iter().enumerate() {
            if skip {
                skip = false;
                continue;
            }
            if args.get(i + 1).is_some_and(|next| next == drop) {
                skip = true;
                continue;
            }
            kept.push(a.clone());
        }
        configure(&project.repo, |c| {
            c.sandbox.get_or_insert_with(Default::default).mode = Some(sandbox);
            let tool = liza::blackboard::model::AgentTool {
                args: Some(kept.clone()),
                ..Default::default()
            };
            c.agent_tools = Some(liza::blackboard::codec::IdMap(vec![(
                "codex".to_owned(),
                tool,
            )]));
        });
        let out = project.output(
            "coder",
            "coder-1",
            &user_env("codex"),
            &["--cli", "codex", "--once"],
        );
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(text.contains(says), "without {drop}: {text}");
        assert_eq!(crate::common::team::status(&project.repo, "t-1"), "CLAIMED");
    }
}

#[test]
fn a_cli_without_its_key_stops_the_supervisor_with_the_variable_to_set() {
    for (cli, hint) in [
        ("claude", "ANTHROPIC_API_KEY"),
        ("codex", "CODEX_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
        ("mistral", "MISTRAL_API_KEY"),
        ("aider", "OPENAI_API_KEY"),
    ] {
        let project = CliProject::new();
        project.step("coder", "work t-1.txt done\nsubmit\n");
        let started = Instant::now();
        let out = project.output("coder", "coder-1", &[], &["--cli", cli]);
        assert_exit(&out, 5);
        let err = stderr(&out);
        assert!(err.contains("could not log in"), "{cli}: {err}");
        assert!(err.contains(hint), "{cli}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{cli} stopped at once"
        );
        assert_eq!(crate::common::team::status(&project.repo, "t-1"), "CLAIMED");
    }
}
