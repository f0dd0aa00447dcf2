//! `liza demo` end to end (specs/operations.md *Demo*, specs/quality.md P9 is measured by
//! running it): real supervisors and the built-in agent against the scripted model server
//! complete a sprint with every task merged on integration, after a rejection forced by the
//! check liza ran on the first, wrong, edit.

use std::process::Command;

const LIZA: &str = env!("CARGO_BIN_EXE_liza");

/// `liza [before…] demo --dir <home>/demo` with a clean environment: the demo's
/// directory and everything it printed, once it succeeded.
fn run_demo(home: &std::path::Path, before: &[&str]) -> (std::path::PathBuf, String) {
    let dir = home.join("demo");
    let out = Command::new(LIZA)
        .args(before)
        .args(["demo", "--dir"])
        .arg(&dir)
        .env("HOME", home)
        .env_remove("LIZA_LLM_BASE_URL")
        .env_remove("LIZA_AGENT_ID")
        .env_remove("LIZA_STORE")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    (dir, text)
}

#[test]
fn the_demo_completes_a_sprint_with_a_real_rejection_and_rework() {
    let home = tempfile::tempdir().unwrap();
    let (dir, text) = run_demo(home.path(), &[]);
    // It ends with where to look, as docs/getting-started.md shows.
    for shown in [
        "sprint complete",
        "git log --oneline --graph integration",
        "liza status          # the board",
        "liza log             # every transition",
    ] {
        assert!(text.contains(shown), "no {shown:?} in: {text}");
    }
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // Both tools are on integration, and the project's own tests pass there.
    assert_eq!(
        git(&["show", "integration:greet.sh"]),
        "#!/bin/sh\necho \"hello, $1\"\n"
    );
    assert!(git(&["show", "integration:shout.sh"]).contains("tr '[:lower:]' '[:upper:]'"));
    let checkout = home.path().join("check");
    git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        checkout.to_str().unwrap(),
        "integration",
    ]);
    let tests = Command::new("sh")
        .arg("tests/run.sh")
        .current_dir(&checkout)
        .output()
        .unwrap();
    assert!(
        tests.status.success(),
        "{}",
        String::from_utf8_lossy(&tests.stdout)
    );
    // The rejection came from the check liza ran, and the rework was reviewed again.
    let log = std::fs::read_to_string(dir.join(".liza/log.yaml")).unwrap();
    assert!(
        log.contains("the check `tests` fails on the review commit"),
        "{log}"
    );
    let state = Command::new(LIZA)
        .args(["status", "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let state: serde_json::Value = serde_json::from_slice(&state.stdout).unwrap();
    let state = &state["result"];
    let tasks = state["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert!(tasks.iter().all(|t| t["status"] == "MERGED"), "{tasks:#?}");
    assert!(
        tasks
            .iter()
            .any(|t| t["id"] == "shout" && t["review_cycles_total"] == 1),
        "{tasks:#?}"
    );
    // The planner named only the source files, as most do; the coder wrote the tests
    // the reviewer requires, and nothing was blocked for it.
    let board = std::fs::read_to_string(dir.join(".liza/state.yaml")).unwrap();
    assert!(board.contains("paths: [greet.sh]\n"), "{board}");
    assert!(board.contains("paths: [shout.sh]\n"), "{board}");
    assert!(!board.contains("- tests/test_greet.sh"), "{board}");
    assert!(!log.contains("blocked"), "{log}");
    let merged = Command::new("git")
        .args(["ls-tree", "-r", "--name-only", "integration"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let merged = String::from_utf8_lossy(&merged.stdout);
    assert!(merged.contains("tests/test_greet.sh"), "{merged}");
    assert!(merged.contains("tests/test_shout.sh"), "{merged}");
    assert_eq!(state["goal"]["status"], "COMPLETED");
    // The built-in agent's metrics, per agent and in total.
    let metrics = &state["builtin"];
    let total = &metrics["total"];
    assert_eq!(total["outcomes"]["reject"], 1, "{metrics:#}");
    assert_eq!(total["outcomes"]["approve"], 2, "{metrics:#}");
    assert_eq!(total["outcomes"]["SUCCESS"], 3, "{metrics:#}");
    assert_eq!(total["runs"], 6, "{metrics:#}");
    assert!(total["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(total["patch_lines"].as_u64().unwrap() >= 6);
    // Which coder took which task is up to the race between them; together they ran 3.
    let agents = metrics["agents"].as_object().unwrap();
    let coder_runs: u64 = agents
        .iter()
        .filter(|(id, _)| id.starts_with("coder-"))
        .map(|(_, m)| m["runs"].as_u64().unwrap())
        .sum();
    assert_eq!(coder_runs, 3, "{metrics:#}");
    assert_eq!(
        metrics["agents"]["code-reviewer-1"]["runs"], 3,
        "{metrics:#}"
    );
    // doctor right after: green, or explains — the demo's model server is gone with it,
    // and no hosted endpoint is probed.
    let doctor = Command::new(LIZA)
        .args(["--json", "doctor"])
        .current_dir(&dir)
        .env_remove("LIZA_LLM_BASE_URL")
        .env_remove("DRY_RUN")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&doctor.stdout).unwrap();
    assert!(doctor.status.success(), "{report:#}");
    let endpoint = report["result"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "model endpoint")
        .cloned()
        .unwrap();
    assert_eq!(endpoint["status"], "warn", "{endpoint}");
    assert!(
        endpoint["detail"].as_str().unwrap().contains("liza demo"),
        "{endpoint}"
    );
}

/// `liza demo --store` with no etcd there fails at once with the fix, and leaves no
/// repository behind (specs/operations.md *Demo*).
#[test]
fn the_demo_without_its_etcd_fails_fast_and_leaves_nothing() {
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = format!("etcd://127.0.0.1:{port}/demo");
    for dir in [Some(home.path().join("demo")), None] {
        let mut cmd = Command::new(LIZA);
        cmd.args(["--store", &store, "demo"]);
        if let Some(dir) = &dir {
            cmd.arg("--dir").arg(dir);
        }
        let out = cmd
            .env("HOME", home.path())
            .env("TMPDIR", home.path())
            .env_remove("LIZA_STORE")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("no etcd answers at etcd://127.0.0.1:{port}/demo")),
            "{err}"
        );
        assert!(err.contains("hint: start etcd there"), "{err}");
        assert_eq!(err.matches("127.0.0.1").count(), 1, "said once: {err}");
        let left: Vec<_> = std::fs::read_dir(home.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn the_demo_runs_on_a_blackboard_in_etcd() {
    if !crate::common::etcd::available() {
        return;
    }
    let member = crate::common::etcd::Etcd::start();
    let address = format!("etcd://{}/demo/sprint", member.endpoint());
    let home = tempfile::tempdir().unwrap();
    let (dir, text) = run_demo(home.path(), &["--store", &address]);
    assert!(
        text.contains("merged on integration: greet, shout"),
        "{text}"
    );
    assert!(text.contains("liza log"), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.join(".liza/store")).unwrap(),
        format!("{address}\n")
    );
    // The log is in etcd, whole: every transition of the sprint, ending with the goal.
    let log = Command::new(LIZA)
        .args(["--json", "log"])
        .current_dir(&dir)
        .env("HOME", home.path())
        .output()
        .unwrap();
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).unwrap();
    let actions: Vec<&str> = log["result"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert!(actions.contains(&"merged"), "{actions:?}");
    assert!(actions.contains(&"goal_completed"), "{actions:?}");
}
