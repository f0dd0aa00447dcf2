//! `liza doctor`: each problem it looks for, created for real, reported with its hint and
//! exit 1; a healthy project exits 0. Also `liza completions`, `liza man` and the grouped
//! `liza --help`.

use crate::common::supervision::fake_agent;
use crate::common::team::*;
use crate::common::*;

/// `liza --json doctor`: the exit code and the checks by name.
fn doctor(repo: &Repo, env: &[(&str, &str)]) -> (i32, Vec<serde_json::Value>) {
    let mut all = vec![("LIZA_LLM_BASE_URL", "")];
    all.extend_from_slice(env);
    let out = repo.liza_env(&all, &["--json", "doctor"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}{}", stdout(&out), stderr(&out)));
    (
        out.status.code().unwrap(),
        v["result"]["checks"].as_array().unwrap().clone(),
    )
}

fn check<'a>(checks: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    checks
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks:#?}"))
}

/// A project whose default backend is the fake agent (installed, so healthy).
fn healthy() -> Repo {
    let repo = Repo::initialized();
    let agent = fake_agent().display().to_string();
    configure(&repo, |c| {
        c.agent_tools = Some(liza::blackboard::codec::IdMap(vec![(
            "fake".to_owned(),
            liza::blackboard::model::AgentTool {
                executable: Some(agent.clone()),
                ..Default::default()
            },
        )]));
        c.default_cli = Some("fake".into());
        // A healthy project runs its tests before a merge.
        c.checks = Some(vec![liza::blackboard::model::Check {
            name: "tests".into(),
            run: liza::blackboard::model::CommandSpec::Shell("true".into()),
            timeout: None,
            on_review: None,
            on_merge: Some(true),
            extra: Default::default(),
        }]);
    });
    repo
}

#[test]
fn a_healthy_project_passes_and_the_text_says_so() {
    let repo = healthy();
    let (code, checks) = doctor(&repo, &[]);
    assert_eq!(code, 0, "{checks:#?}");
    for name in [
        "git",
        "blackboard",
        "backend fake",
        "checks",
        "worktrees",
        "state lock",
        "agents",
    ] {
        assert_eq!(check(&checks, name)["status"], "ok", "{name}: {checks:#?}");
    }
    let out = repo.liza_env(&[("LIZA_LLM_BASE_URL", "")], &["doctor"]);
    assert_success(&out);
    assert!(
        stdout(&out).contains("everything looks right"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_missing_agent_cli_fails_with_how_to_fix_it() {
    let repo = healthy();
    configure(&repo, |c| c.default_cli = Some("claude".into()));
    // PATH without any claude: only git's directory and the system's.
    let (code, checks) = doctor(&repo, &[("PATH", "/usr/local/bin:/usr/bin:/bin")]);
    assert_eq!(code, 1);
    let c = check(&checks, "backend claude");
    assert_eq!(c["status"], "fail");
    assert!(c["detail"].as_str().unwrap().contains("not on PATH"), "{c}");
    assert!(c["hint"].as_str().unwrap().contains("--cli"), "{c}");
    // The backend that is installed is still reported fine.
    assert_eq!(check(&checks, "backend fake")["status"], "ok");
}

#[test]
fn the_model_endpoint_is_checked_when_the_built_in_agent_is_used() {
    use liza::llm::scripted_server::{Script, ScriptedServer, Step};
    let repo = healthy();
    configure(&repo, |c| c.default_cli = Some("builtin".into()));
    // Down.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}/v1");
    let (code, checks) = doctor(&repo, &[("LIZA_LLM_BASE_URL", &url)]);
    assert_eq!(code, 1);
    let c = check(&checks, "model endpoint");
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["detail"].as_str().unwrap().contains("cannot be reached"),
        "{c}"
    );
    assert!(
        c["hint"].as_str().unwrap().contains("LIZA_LLM_BASE_URL"),
        "{c}"
    );
    // Up but refusing the key.
    let server = ScriptedServer::start(Script {
        steps: vec![Step {
            status: Some(401),
            body: Some("{\"error\":\"bad key\"}".into()),
            times: Some(0),
            ..Step::default()
        }],
    })
    .unwrap();
    let (code, checks) = doctor(
        &repo,
        &[
            ("LIZA_LLM_BASE_URL", &server.base_url()),
            ("LIZA_LLM_API_KEY", "wrong"),
        ],
    );
    assert_eq!(code, 1);
    let c = check(&checks, "model endpoint");
    assert!(
        c["hint"].as_str().unwrap().contains("LIZA_LLM_API_KEY"),
        "{c}"
    );
    // Up and answering.
    let server = ScriptedServer::start(Script {
        steps: vec![Step {
            status: Some(200),
            body: Some("{\"data\":[]}".into()),
            times: Some(0),
            ..Step::default()
        }],
    })
    .unwrap();
    let (code, checks) = doctor(&repo, &[("LIZA_LLM_BASE_URL", &server.base_url())]);
    assert_eq!(code, 0, "{checks:#?}");
    assert_eq!(check(&checks, "model endpoint")["status"], "ok");
    assert_eq!(server.requests()[0].path, "/v1/models");
}

#[test]
fn worktrees_missing_or_orphaned_are_reported() {
    let repo = healthy();
    add(&repo, "t-1", "");
    register(&repo, "coder-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    std::fs::remove_dir_all(repo.path().join(".worktrees/t-1")).unwrap();
    repo.git(&["worktree", "prune"]);
    std::fs::create_dir_all(repo.path().join(".worktrees/ghost")).unwrap();
    let (code, checks) = doctor(&repo, &[]);
    assert_eq!(code, 1);
    let c = check(&checks, "worktrees");
    assert_eq!(c["status"], "fail");
    assert!(c["detail"].as_str().unwrap().contains("t-1"), "{c}");
    assert!(c["hint"].as_str().unwrap().contains("liza reassign"), "{c}");
    let c = check(&checks, "orphaned worktrees");
    assert_eq!(c["status"], "warn");
    assert!(
        c["detail"].as_str().unwrap().contains(".worktrees/ghost"),
        "{c}"
    );
    assert!(c["hint"].as_str().unwrap().contains("liza gc"), "{c}");
}

#[test]
fn a_lock_held_past_the_lock_timeout_is_named_with_its_holder() {
    let repo = healthy();
    let paths = liza::blackboard::paths::LizaPaths::new(repo.path());
    // This test process takes the state lock, as a stuck command would.
    let held =
        match liza::blackboard::store::lock::acquire(&paths.lock(), &paths.lock_owner(), || {
            std::time::Duration::from_secs(5)
        }) {
            Ok(lock) => lock,
            Err(_) => panic!("the lock is free"),
        };
    let (code, checks) = doctor(&repo, &[]);
    assert_eq!(code, 0, "held briefly is fine: {checks:#?}");
    let c = check(&checks, "state lock");
    assert!(
        c["detail"].as_str().unwrap().contains("held right now"),
        "{c}"
    );
    // The owner record says it has been held for an hour.
    let since = liza::blackboard::Timestamp::now().plus_seconds(-3600);
    std::fs::write(
        paths.lock_owner(),
        format!("pid {} since {since} command stuck\n", std::process::id()),
    )
    .unwrap();
    let (code, checks) = doctor(&repo, &[]);
    assert_eq!(code, 1);
    let c = check(&checks, "state lock");
    assert_eq!(c["status"], "fail");
    assert!(
        c["detail"].as_str().unwrap().contains("command stuck"),
        "{c}"
    );
    assert!(c["hint"].as_str().unwrap().contains("stop it"), "{c}");
    drop(held);
    let (_, checks) = doctor(&repo, &[]);
    assert_eq!(check(&checks, "state lock")["detail"], "free");
}

#[test]
fn agents_and_liveness_records_left_behind_are_reported() {
    let repo = healthy();
    let generation = register(&repo, "coder-1");
    assert_success(&repo.liza(&["heartbeat", "coder-1"]));
    // The supervisor went away: its lease lapses.
    edit_state(&repo, "test_expire", |s, now| {
        let id = liza::blackboard::AgentId::parse("coder-1").unwrap();
        s.agents.get_mut(&id).unwrap().lease_expires = Some(now.plus_seconds(-600));
    });
    let live = repo.liza_dir().join("live");
    for entry in std::fs::read_dir(&live).unwrap().flatten() {
        std::fs::remove_file(entry.path()).unwrap();
    }
    // A record of a generation that is no longer registered.
    std::fs::write(
        live.join("coder-7.0123456789abcdef.yaml"),
        "generation: 0123456789abcdef\nheartbeat: 2026-01-01T00:00:00Z\nlease_expires: 2026-01-01T00:05:00Z\n",
    )
    .unwrap();
    let (code, checks) = doctor(&repo, &[]);
    assert_eq!(code, 0, "warnings only: {checks:#?}");
    let c = check(&checks, "agents");
    assert_eq!(c["status"], "warn");
    assert!(c["detail"].as_str().unwrap().contains("coder-1"), "{c}");
    assert!(
        c["hint"].as_str().unwrap().contains("liza unregister"),
        "{c}"
    );
    let c = check(&checks, "liveness records");
    assert_eq!(c["status"], "warn");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("coder-7.0123456789abcdef.yaml"),
        "{c}"
    );
    let _ = generation;
}

#[test]
fn git_missing_from_path_is_a_failure_with_an_install_hint() {
    let repo = healthy();
    let (code, checks) = doctor(&repo, &[("PATH", "/nonexistent")]);
    assert_eq!(code, 1);
    let c = check(&checks, "git");
    assert_eq!(c["status"], "fail", "{c}");
    assert!(c["hint"].as_str().unwrap().contains("install git"), "{c}");
}

#[test]
fn outside_a_project_doctor_says_where_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_liza"))
        .current_dir(dir.path())
        .args(["--json", "doctor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = v["result"]["checks"].as_array().unwrap();
    assert_eq!(check(checks, "git")["status"], "ok");
    let c = check(checks, "blackboard");
    assert!(c["hint"].as_str().unwrap().contains("liza init"), "{c}");
}

#[test]
fn help_is_grouped_and_completions_and_man_pages_are_generated() {
    let repo = Repo::new();
    let help = stdout(&repo.liza(&["--help"]));
    let order: Vec<usize> = [
        "Setup:",
        "Inspection",
        "Planner",
        "Coder:",
        "Reviewer:",
        "Operator:",
    ]
    .iter()
    .map(|h| {
        help.find(h)
            .unwrap_or_else(|| panic!("{h} missing:\n{help}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{help}");
    assert!(help.contains("  submit-verdict"), "{help}");
    for shell in ["bash", "zsh", "fish"] {
        let out = repo.liza(&["completions", shell]);
        assert_success(&out);
        assert!(stdout(&out).contains("submit-verdict"), "{shell}");
    }
    let out = repo.liza(&["man"]);
    assert_success(&out);
    assert!(stdout(&out).starts_with(".ie") || stdout(&out).contains(".TH liza 1"));
    let dir = tempfile::tempdir().unwrap();
    let out = repo.liza(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_success(&out);
    for page in [
        "liza.1",
        "liza-init.1",
        "liza-submit-verdict.1",
        "liza-watch.1",
    ] {
        assert!(dir.path().join(page).exists(), "{page}");
    }
    let usage = repo.liza(&["completions", "nosh"]);
    assert_exit(&usage, 64);
}

/// A directory holding an executable `claude` with `script` as its body, for PATH.
fn installed_claude(script: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claude");
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn with_claude(repo: &Repo, dir: &tempfile::TempDir) -> (i32, Vec<serde_json::Value>) {
    configure(repo, |c| c.default_cli = Some("claude".into()));
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", dir.path().display());
    doctor(repo, &[("PATH", path.as_str())])
}

#[test]
fn the_installed_clis_version_and_flags_are_checked_against_what_liza_passes() {
    let repo = healthy();
    let help = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/clis/help/claude.txt"),
    )
    .unwrap();
    // The real 2.1.197: version in range, every flag known.
    let real = installed_claude(&format!(
        "case \"$1\" in --version) echo '2.1.197 (Claude Code)';; *) cat <<'HELP'\n{help}\nHELP\n;; esac"
    ));
    let (_, checks) = with_claude(&repo, &real);
    assert_eq!(
        check(&checks, "backend claude version")["status"],
        "ok",
        "{checks:#?}"
    );
    assert_eq!(
        check(&checks, "backend claude flags")["status"],
        "ok",
        "{checks:#?}"
    );
    assert_eq!(
        check(&checks, "backend claude interactive flags")["status"],
        "ok"
    );
    // An old release whose help lacks --permission-mode.
    let old_help = help.replace("--permission-mode", "--mode");
    let old = installed_claude(&format!(
        "case \"$1\" in --version) echo '1.0.3 (Claude Code)';; *) cat <<'HELP'\n{old_help}\nHELP\n;; esac"
    ));
    let (code, checks) = with_claude(&repo, &old);
    assert_eq!(code, 1);
    let version = check(&checks, "backend claude version");
    assert_eq!(version["status"], "warn");
    assert!(
        version["detail"]
            .as_str()
            .unwrap()
            .contains("1.0.3 is outside"),
        "{version}"
    );
    let flags = check(&checks, "backend claude flags");
    assert_eq!(flags["status"], "fail");
    assert!(
        flags["detail"]
            .as_str()
            .unwrap()
            .contains("does not know --permission-mode"),
        "{flags}"
    );
    assert!(
        flags["hint"]
            .as_str()
            .unwrap()
            .contains("config.agent_tools.claude.args"),
        "{flags}"
    );
}

#[test]
fn a_cli_that_hangs_on_version_is_reported_not_waited_for() {
    let repo = healthy();
    let hangs = installed_claude("sleep 600");
    let started = std::time::Instant::now();
    let (_, checks) = with_claude(&repo, &hangs);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let version = check(&checks, "backend claude version");
    assert_eq!(version["status"], "warn");
    assert!(
        version["detail"]
            .as_str()
            .unwrap()
            .contains("did not answer within 10 s"),
        "{version}"
    );
}

/// A project whose reviews and merges would run none of its tests is told so (a warning:
/// it may be meant), and how to add them.
#[test]
fn a_project_without_checks_is_warned_that_no_test_runs() {
    let repo = Repo::initialized();
    let check = doctor_check(&repo, "checks");
    assert_eq!(check["status"], "warn", "{check}");
    assert!(
        check["hint"].as_str().unwrap().contains("liza edit"),
        "{check}"
    );
    crate::common::team::configure(&repo, |c| {
        c.checks = Some(vec![liza::blackboard::model::Check {
            name: "tests".into(),
            run: liza::blackboard::model::CommandSpec::Shell("true".into()),
            timeout: None,
            on_review: Some(true),
            on_merge: None,
            extra: Default::default(),
        }]);
    });
    let check = doctor_check(&repo, "checks");
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["detail"].as_str().unwrap().contains("1 gating"),
        "{check}"
    );
}
