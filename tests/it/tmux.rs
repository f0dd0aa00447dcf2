//! `liza up` against a real tmux server on a private socket (`TMUX_TMPDIR`): a pane per
//! agent running `liza-agent` with fake-agent backends and the live status pane; the
//! sprint completes; `capture-pane` shows each agent's output and the dashboard; `liza up
//! --down` stops everything and leaves no process behind. `.ci/run` installs tmux; a
//! machine without it skips with a printed reason (never in CI).

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;

/// tmux on the private server of `tmp`.
fn tmux(tmp: &Path, args: &[&str]) -> Output {
    Command::new("tmux")
        .env("TMUX_TMPDIR", tmp)
        .env_remove("TMUX")
        .args(args)
        .output()
        .unwrap()
}

fn tmux_available() -> bool {
    crate::common::tool_available("tmux", "-V", "tmux")
}

/// `liza up …` with the private server and the fake agent's scenario.
fn up(project: &AgentProject, tmp: &Path, args: &[&str]) -> Output {
    project
        .repo
        .command()
        .env("TMUX_TMPDIR", tmp)
        .env_remove("TMUX")
        .env("FAKE_AGENT_DIR", project.scenario.path())
        .arg("up")
        .args(args)
        .output()
        .unwrap()
}

/// `liza` in the project, on the private tmux server of `tmp`.
fn liza_on(project: &AgentProject, tmp: &Path) -> Command {
    let mut command = project.repo.command();
    command.env("TMUX_TMPDIR", tmp).env_remove("TMUX");
    command
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

#[test]
fn liza_up_runs_a_sprint_in_tmux_and_down_leaves_nothing_behind() {
    if tmux_available() {
        up_runs_a_sprint_and_down_leaves_nothing_behind(AgentProject::new());
    }
}

/// The same with the blackboard in etcd: the panes find it through the checkout's
/// `.liza/store` and `LIZA_STORE`.
#[test]
fn liza_up_runs_a_sprint_in_tmux_on_a_blackboard_in_etcd() {
    if !tmux_available() {
        return;
    }
    if let Some(project) = AgentProject::on(crate::common::board::Kind::Etcd) {
        up_runs_a_sprint_and_down_leaves_nothing_behind(project);
    }
}

fn up_runs_a_sprint_and_down_leaves_nothing_behind(project: AgentProject) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = &project.repo;
    add(repo, "t-1", "");
    add(repo, "t-2", "");
    project.step("planner", "SPRINT_COMPLETE", "liza goal complete\n");
    project.step("planner", "default", "exit 0\n");
    project.step(
        "coder",
        "default",
        "work \"$key.txt\" \"the text of $key\"\nsubmit\n",
    );
    project.step("code-reviewer", "default", "approve\n");

    let out = up(&project, tmp.path(), &["--session", "t1", "--json"]);
    assert_success(&out);
    let v = json(&out);
    assert_eq!(
        v["result"]["agents"],
        serde_json::json!(["planner-1", "coder-1", "coder-2", "code-reviewer-1"])
    );
    // Pane titles name the agents; each pane runs the liza-agent beside liza.
    let panes = String::from_utf8(
        tmux(
            tmp.path(),
            &[
                "list-panes",
                "-s",
                "-t",
                "=t1",
                "-F",
                "#{pane_title}\t#{pane_pid}\t#{pane_current_command}",
            ],
        )
        .stdout,
    )
    .unwrap();
    let titles: Vec<&str> = panes
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "planner-1",
            "coder-1",
            "coder-2",
            "code-reviewer-1",
            "status"
        ],
        "{panes}"
    );
    let pids: Vec<i32> = panes
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().parse().unwrap())
        .collect();

    project.wait_until("the goal to be completed", Duration::from_secs(120), || {
        model(repo)["goal"]["status"] == "COMPLETED"
    });
    let state = model(repo);
    for t in ["t-1", "t-2"] {
        assert_eq!(task_of(repo, t)["status"], "MERGED", "{state}");
    }
    // Each agent's pane shows its supervisor's output; the status pane the dashboard.
    let capture = |pane: usize| {
        let target = format!("=t1:liza.{pane}");
        String::from_utf8(
            tmux(
                tmp.path(),
                &["capture-pane", "-p", "-J", "-t", &target, "-S", "-200"],
            )
            .stdout,
        )
        .unwrap()
    };
    for (i, id) in ["planner-1", "coder-1", "coder-2", "code-reviewer-1"]
        .iter()
        .enumerate()
    {
        let text = capture(i);
        assert!(
            text.contains(&format!("{id} registered")),
            "pane {i}:\n{text}"
        );
    }
    project.wait_until(
        "the dashboard to show the goal",
        Duration::from_secs(30),
        || {
            let text = capture(4);
            text.contains("Tasks (2)") && text.contains("MERGED") && text.contains("q quit")
        },
    );

    let before_down = String::from_utf8_lossy(
        &tmux(
            tmp.path(),
            &[
                "list-panes",
                "-s",
                "-t",
                "=t1",
                "-F",
                "#{pane_id} #{pane_pid} #{pane_dead} #{pane_title}",
            ],
        )
        .stdout,
    )
    .into_owned();
    let out = up(
        &project,
        tmp.path(),
        &["--down", "--session", "t1", "--json"],
    );
    let panes = format!(
        "{panes}\nbefore --down:\n{before_down}\nstderr: {}",
        stderr(&out)
    );
    assert_success(&out);
    assert!(
        !tmux(tmp.path(), &["has-session", "-t", "=t1"])
            .status
            .success(),
        "the session is gone"
    );
    for pid in &pids {
        assert!(
            !alive(*pid),
            "pane process {pid} survived --down: {} {}\n{panes}\n{}",
            std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default(),
            std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default(),
            stdout(&out)
        );
    }
    // No supervisor or fake agent of this project is left (tmux's server exits on its
    // own once its last session is gone: it is given the moment it takes).
    let project_dir = repo.path().display().to_string();
    let leftovers = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| alive(*pid))
            .filter_map(|pid| {
                let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
                cwd.starts_with(&project_dir).then(|| {
                    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                        .unwrap_or_default()
                        .replace('\0', " ")
                })
            })
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !leftovers().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = leftovers();
    assert!(left.is_empty(), "{left:?}");
    assert!(
        model(repo)["agents"]
            .as_object()
            .is_none_or(|a| a.is_empty())
    );
    let _ = tmux(tmp.path(), &["kill-server"]);
}

#[test]
fn up_reuses_a_running_session_allocates_free_ids_and_refuses_without_tmux() {
    if !tmux_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let project = AgentProject::new();
    let repo = &project.repo;
    project.step("planner", "default", "exit 0\n");
    // coder-1 is held by a live agent: the session takes coder-2.
    register(repo, "coder-1");
    let out = up(
        &project,
        tmp.path(),
        &[
            "--session",
            "t2",
            "--coders",
            "1",
            "--reviewers",
            "0",
            "--json",
        ],
    );
    assert_success(&out);
    assert_eq!(
        json(&out)["result"]["agents"],
        serde_json::json!(["planner-1", "coder-2"])
    );
    let again = up(&project, tmp.path(), &["--session", "t2", "--json"]);
    assert_success(&again);
    assert_eq!(json(&again)["result"]["created"], false);
    // The dashboard's keys: p pauses, r resumes, q quits cleanly (exit 0).
    let status_pane = "=t2:liza.2";
    let pause = repo.liza_dir().join("PAUSE");
    let screen = || {
        String::from_utf8_lossy(
            &tmux(tmp.path(), &["capture-pane", "-p", "-t", status_pane]).stdout,
        )
        .into_owned()
    };
    // Quit: the pane's process is gone, not by a signal, and with status 0 once tmux has
    // it (it may mark the pane dead at the pty's end before it reaps the process).
    let quit = || {
        let info = String::from_utf8_lossy(
            &tmux(
                tmp.path(),
                &[
                    "display-message",
                    "-p",
                    "-t",
                    status_pane,
                    "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}",
                ],
            )
            .stdout,
        )
        .trim()
        .to_owned();
        matches!(info.as_str(), "1|0|" | "1||")
    };
    project.wait_until("the dashboard", Duration::from_secs(30), || {
        screen().contains("q quit")
    });
    // Under heavy parallel load a keystroke sent with send-keys now and then never reaches
    // the pane's program (it sits idle in its poll); a key without effect is sent again.
    let press = |key: &str, done: &dyn Fn() -> bool| {
        for _ in 0..5 {
            let sent = tmux(tmp.path(), &["send-keys", "-t", status_pane, key]);
            assert!(
                sent.status.success(),
                "send-keys {key}: {}",
                String::from_utf8_lossy(&sent.stderr)
            );
            for _ in 0..50 {
                if done() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let info = String::from_utf8_lossy(
            &tmux(tmp.path(), &["display-message", "-p", "-t", status_pane, "dead=#{pane_dead} status=#{pane_dead_status} signal=#{pane_dead_signal} pid=#{pane_pid}"]).stdout,
        )
        .into_owned();
        panic!("{key} had no effect: {info}\n{}", screen());
    };
    press("p", &|| pause.exists());
    press("r", &|| !pause.exists());
    press("q", &quit);
    assert_success(&up(&project, tmp.path(), &["--down", "--session", "t2"]));
    let gone = up(&project, tmp.path(), &["--down", "--session", "t2"]);
    assert_exit(&gone, 1);
    assert!(
        stderr(&gone).contains("no tmux session t2"),
        "{}",
        stderr(&gone)
    );
    // Without tmux on PATH: exit 5 with what to do.
    let out = project
        .repo
        .command()
        .env("PATH", "/nonexistent")
        .args(["up", "--session", "t3"])
        .output()
        .unwrap();
    assert_exit(&out, 5);
    assert!(
        stderr(&out).contains("tmux is not installed"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("scripts/liza-tmux.sh"),
        "{}",
        stderr(&out)
    );
    let _ = tmux(tmp.path(), &["kill-server"]);
}

/// `liza up` never reports success while what it started cannot run: a backend that is
/// not installed is refused before any pane starts (no session left), and agents whose
/// panes die at start — here a tmux server started earlier, whose environment lacks a
/// variable the backend needs — are named with their last lines, and the command fails.
#[test]
fn up_refuses_a_backend_that_cannot_run_and_reports_panes_that_died() {
    if !tmux_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let project = AgentProject::new();
    let repo = &project.repo;
    // A sprint that does not run: agents would exit at once; refused with what continues.
    assert_success(&repo.liza(&["abort"]));
    let out = up(&project, tmp.path(), &["--session", "t3"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("liza resume"), "{}", stderr(&out));
    assert!(
        !tmux(tmp.path(), &["has-session", "-t", "=t3"])
            .status
            .success()
    );
    assert_success(&repo.liza(&["resume"]));
    configure(repo, |c| c.default_cli = Some("claude-not-here".into()));
    configure(repo, |c| {
        let mut tools = c.agent_tools.clone().unwrap();
        let mut missing = tools.0[0].1.clone();
        missing.executable = Some("/nonexistent/claude".into());
        tools.0.push(("claude-not-here".into(), missing));
        c.agent_tools = Some(tools);
    });
    let out = up(&project, tmp.path(), &["--session", "t4"]);
    assert_exit(&out, 1);
    let said = stderr(&out);
    assert!(
        said.contains("not on PATH") || said.contains("/nonexistent/claude"),
        "{said}"
    );
    assert!(said.contains("config.default_cli"), "{said}");
    assert!(
        !tmux(tmp.path(), &["has-session", "-t", "=t4"])
            .status
            .success()
    );
    // The server runs already, started without LIZA_TEST_TOKEN; `liza up` has it.
    configure(repo, |c| {
        c.default_cli = Some("fake".into());
        let mut tools = c.agent_tools.clone().unwrap();
        tools.0[0].1.env = Some(liza::blackboard::codec::IdMap(vec![(
            "TOKEN".to_owned(),
            "${LIZA_TEST_TOKEN}".to_owned(),
        )]));
        c.agent_tools = Some(tools);
    });
    assert!(
        tmux(tmp.path(), &["new-session", "-d", "-s", "earlier"])
            .status
            .success()
    );
    let out = liza_on(&project, tmp.path())
        .env("LIZA_TEST_TOKEN", "secret")
        .args(["up", "--session", "t5", "--coders", "1", "--reviewers", "0"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let said = stderr(&out);
    assert!(said.contains("2 of its 2 agents stopped at once"), "{said}");
    assert!(
        said.contains("planner-1:") && said.contains("coder-1:"),
        "{said}"
    );
    assert!(said.contains("LIZA_TEST_TOKEN"), "{said}");
    assert!(said.contains("liza up --down --session t5"), "{said}");
    let _ = tmux(tmp.path(), &["kill-server"]);
}

/// What this terminal chose for the built-in agent (`DRY_RUN`, the endpoint) reaches
/// every pane, though the tmux server was started without it: the offline way to try
/// liza on one's own project runs a whole sprint in tmux.
#[test]
fn up_gives_its_panes_the_dry_run_this_terminal_chose() {
    if !tmux_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let project = AgentProject::new();
    let repo = &project.repo;
    assert!(
        tmux(tmp.path(), &["new-session", "-d", "-s", "earlier"])
            .status
            .success()
    );
    let out = liza_on(&project, tmp.path())
        .env("DRY_RUN", "1")
        .args(["up", "--session", "dry", "--cli", "builtin"])
        .args(["--coders", "1", "--reviewers", "1"])
        .output()
        .unwrap();
    assert_success(&out);
    project.wait_until(
        "the dry-run goal completed",
        Duration::from_secs(120),
        || model(repo)["goal"]["status"] == "COMPLETED",
    );
    let merged = repo.git(&["diff", "--name-only", "main", "integration"]);
    assert!(merged.contains("liza-dry-run/dry-run-t-1.md"), "{merged}");
    // The next goal; `liza up` again starts the agents whose panes ended with the last.
    assert_success(&repo.liza(&["goal", "next", "A second goal"]));
    let again = liza_on(&project, tmp.path())
        .env("DRY_RUN", "1")
        .args(["--json", "up", "--session", "dry", "--cli", "builtin"])
        .output()
        .unwrap();
    assert_success(&again);
    let mut respawned: Vec<String> = json(&again)["result"]["respawned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    respawned.sort();
    assert_eq!(respawned, ["code-reviewer-1", "coder-1", "planner-1"]);
    project.wait_until(
        "the second goal completed",
        Duration::from_secs(120),
        || {
            let state = model(repo);
            state["goal"]["id"] == "goal-2" && state["goal"]["status"] == "COMPLETED"
        },
    );
    let down = liza_on(&project, tmp.path())
        .args(["up", "--down", "--session", "dry"])
        .output()
        .unwrap();
    assert_success(&down);
    let _ = tmux(tmp.path(), &["kill-server"]);
}

/// The dashboard in a real tmux pane, 80×24 then 200×50 (specs/operations.md *Status and
/// the live view*): what does not fit is counted ("+N more"), an alarm whose cause is gone
/// is cleared (counted, not listed), and a task's record scrolls to the end of its history.
#[test]
fn the_dashboard_in_a_tmux_pane_counts_what_it_cannot_show() {
    if !tmux_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = Repo::initialized();
    for i in 1..=12 {
        add(&repo, &format!("t-{i:02}"), "");
    }
    // Two tasks blocked, the alarms raised by `liza watch`; then one unblocked.
    for (task, agent) in [("t-01", "coder-1"), ("t-02", "coder-2")] {
        let generation = register(&repo, agent);
        let coder = as_agent(agent, &generation);
        assert_success(&repo.liza(&["claim-task", task, agent]));
        assert_success(&repo.liza_env(
            &coder,
            &[
                "block",
                task,
                "--reason",
                "the format is unspecified",
                "--question",
                "JSON or CSV?",
            ],
        ));
    }
    assert_success(&repo.liza(&["watch", "--cycles", "1", "--interval", "0.1"]));
    assert_success(&repo.liza(&["unblock", "t-01", "--reason", "JSON, see specs/vision.md"]));
    let liza = env!("CARGO_BIN_EXE_liza");
    assert!(
        tmux(
            tmp.path(),
            &[
                "new-session",
                "-d",
                "-s",
                "dash",
                "-x",
                "80",
                "-y",
                "24",
                "-c",
                repo.path().to_str().unwrap(),
                "-e",
                &format!("HOME={}", repo.home.path().display()),
                liza,
                "status",
                "--watch",
            ],
        )
        .status
        .success()
    );
    let screen = || {
        String::from_utf8_lossy(&tmux(tmp.path(), &["capture-pane", "-p", "-t", "dash:"]).stdout)
            .into_owned()
    };
    let wait_for = |what: &str| {
        let until = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let text = screen();
            if text.contains(what) {
                return text;
            }
            assert!(std::time::Instant::now() < until, "no {what:?} in:\n{text}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let small = wait_for("Tasks (12)");
    assert!(small.contains("1–8 shown, +4 more below"), "{small}");
    assert!(
        small.contains("1 open") && small.contains("1 cleared"),
        "{small}"
    );
    assert!(small.contains("t-02 is BLOCKED"), "{small}");
    assert!(!small.contains("t-01 is BLOCKED"), "{small}");
    // The record of t-01 opens, and End shows the end of its history: the unblocking.
    tmux(tmp.path(), &["send-keys", "-t", "dash:", "Enter"]);
    wait_for("Esc closes");
    tmux(tmp.path(), &["send-keys", "-t", "dash:", "End"]);
    let record = wait_for("JSON, see specs/vision.md");
    assert!(record.contains("rows "), "{record}");
    tmux(tmp.path(), &["send-keys", "-t", "dash:", "Escape"]);
    // Larger: every task, no count of hidden ones.
    tmux(
        tmp.path(),
        &["resize-window", "-t", "dash:", "-x", "200", "-y", "50"],
    );
    let large = wait_for("t-12");
    assert!(!large.contains("more below"), "{large}");
    assert!(large.contains("Alarms (1 open, 1 cleared)"), "{large}");
    tmux(tmp.path(), &["send-keys", "-t", "dash:", "q"]);
    let _ = tmux(tmp.path(), &["kill-server"]);
}

/// A tmux server started with `DRY_RUN=1` (another day's trial) does not hand it to the
/// agents of a `liza up` run without it: they ask their model, and plan nothing here. And
/// a model endpoint that does not answer is refused before any agent starts.
#[test]
fn up_does_not_hand_on_a_dry_run_the_tmux_server_holds() {
    use liza::llm::scripted_server::{Script, ScriptedServer, Step};
    if !tmux_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let project = AgentProject::new();
    let repo = &project.repo;
    let started = Command::new("tmux")
        .env("TMUX_TMPDIR", tmp.path())
        .env_remove("TMUX")
        .env("DRY_RUN", "1")
        .args(["new-session", "-d", "-s", "earlier"])
        .status()
        .unwrap();
    assert!(started.success());
    let up_builtin = |base_url: &str| {
        liza_on(&project, tmp.path())
            .env_remove("DRY_RUN")
            .env("LIZA_LLM_BASE_URL", base_url)
            .args(["up", "--session", "real", "--cli", "builtin"])
            .args(["--coders", "1", "--reviewers", "0"])
            .output()
            .unwrap()
    };
    // Nobody answers there: refused, no session.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = up_builtin(&format!("http://{closed}/v1"));
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("model endpoint does not answer"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("DRY_RUN=1"), "{}", stderr(&out));
    assert!(
        !tmux(tmp.path(), &["has-session", "-t", "=real"])
            .status
            .success()
    );
    // A model that cannot plan: the planner asks it (no dry run), and nothing is planned.
    let server = ScriptedServer::start(Script {
        steps: vec![Step {
            times: Some(0),
            ..Step::answer(r#"{"status": "error", "reason": "not today"}"#)
        }],
    })
    .unwrap();
    assert_success(&up_builtin(&server.base_url()));
    project.wait_until(
        "the planner asked the model",
        Duration::from_secs(60),
        || {
            server
                .requests()
                .iter()
                .any(|r| r.path.ends_with("/chat/completions"))
        },
    );
    let tasks = model(repo)["tasks"].clone();
    assert!(tasks.as_array().is_none_or(|t| t.is_empty()), "{tasks:#}");
    let _ = tmux(tmp.path(), &["kill-server"]);
}
