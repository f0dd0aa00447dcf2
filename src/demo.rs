//! `liza demo` (specs/operations.md *Demo*): a throw-away repository with a tiny shell project,
//! `liza init`, and real supervisor processes — a planner, two coders and a reviewer —
//! running the built-in agent against a scripted model server on loopback, shown until
//! the sprint completes with every task MERGED on `integration`. One coder's first edit
//! genuinely fails the project's test: the reviewer's rejection comes from the check liza
//! ran, and the rework is real. With `LIZA_LLM_BASE_URL` set, that endpoint is used.

use crate::blackboard::EventKind;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::blackboard::Actor;
use crate::blackboard::model::{Check, CommandSpec, GoalStatus, TaskStatus};
use crate::git::cli::git;
use crate::llm::scripted_server::{Script, ScriptedServer, Step};

/// How long the demo waits for the sprint before giving up.
pub(crate) const DEADLINE: Duration = Duration::from_secs(180);

const GOAL: &str = "Greet people from the shell: greet.sh and shout.sh";

const VISION: &str = "# Vision\n\nTwo tiny POSIX shell tools.\n\n\
- `sh greet.sh NAME` prints `hello, NAME`.\n\
- `sh shout.sh NAME` prints `HELLO, NAME!` (upper case).\n\n\
Each tool has its test in `tests/test_<tool>.sh`; `sh tests/run.sh` runs them all.\n";

const RUN_TESTS: &str = "#!/bin/sh\n# Runs every tests/test_*.sh; fails on the first failure.\nset -e\nfor t in tests/test_*.sh; do\n  [ -e \"$t\" ] || continue\n  sh \"$t\"\n  echo \"ok $t\"\ndone\n";

const SYNTAX: &str = "#!/bin/sh\n# The coder's fast check: every shell script parses.\nfor f in *.sh tests/*.sh; do\n  [ -e \"$f\" ] || continue\n  sh -n \"$f\" || exit 1\ndone\n";

/// What the demo shows and leaves behind.
pub(crate) struct DemoReport {
    pub dir: PathBuf,
    pub elapsed: Duration,
    pub merged: Vec<String>,
}

/// Runs the demo in `dir` (created; must not exist or be empty). `liza` is this
/// executable; `show` receives the progress lines.
pub(crate) fn run(
    dir: &Path,
    liza: &Path,
    mut show: impl FnMut(&str),
) -> Result<DemoReport, String> {
    let started = Instant::now();
    preflight(Some(dir)).map_err(|(why, hint)| format!("{why}: {hint}"))?;
    let existed = dir.exists();
    if let Err(why) = create_project(dir, liza) {
        // Nothing half-made is left behind: the folder was new or empty.
        let removed = if existed {
            std::fs::read_dir(dir).map_or(Ok(()), |entries| {
                entries.flatten().try_for_each(|e| {
                    let path = e.path();
                    if path.is_dir() && !path.is_symlink() {
                        std::fs::remove_dir_all(path)
                    } else {
                        std::fs::remove_file(path)
                    }
                })
            })
        } else {
            std::fs::remove_dir_all(dir)
        };
        return Err(match removed {
            Ok(()) => format!(
                "{why}\n(the demo's repository in {} was removed)",
                dir.display()
            ),
            Err(e) => format!(
                "{why}\n(the demo's repository is left in {}: {e})",
                dir.display()
            ),
        });
    }
    show(&format!("project created in {}", dir.display()));
    let (server, base_url) = match std::env::var("LIZA_LLM_BASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        Some(url) => {
            show(&format!("model endpoint: {url}"));
            (None, url)
        }
        None => {
            let server = ScriptedServer::start(script())
                .map_err(|e| format!("could not start the scripted model server: {e}"))?;
            let url = server.base_url();
            show(&format!("model endpoint: the scripted server at {url}"));
            (Some(server), url)
        }
    };
    let logs = dir.join(".liza/demo");
    std::fs::create_dir_all(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let team = [
        ("planner", "planner-1"),
        ("coder", "coder-1"),
        ("coder", "coder-2"),
        ("code-reviewer", "code-reviewer-1"),
    ];
    let mut children = Vec::new();
    for (role, id) in team {
        children.push(spawn_supervisor(dir, liza, role, id, &base_url, &logs)?);
        show(&format!("started {id} (liza agent {role} --cli builtin)"));
    }
    let outcome = watch(dir, started, &mut show);
    stop(&mut children);
    drop(server);
    let merged = outcome?;
    Ok(DemoReport {
        dir: dir.to_path_buf(),
        elapsed: started.elapsed(),
        merged,
    })
}

/// The scripted model: the plan, each coder's edits (shout's first one wrong), approvals,
/// and the goal's completion. Steps are matched by what the request says, so the order in
/// which the agents happen to ask does not matter.
pub(crate) fn script() -> Script {
    let edits = |files: &[(&str, &str)]| {
        json!({"edits": files.iter().map(|(p, c)| json!({"path": p, "content": c})).collect::<Vec<_>>()}).to_string()
    };
    let greet = edits(&[
        ("greet.sh", "#!/bin/sh\necho \"hello, $1\"\n"),
        (
            "tests/test_greet.sh",
            "#!/bin/sh\n[ \"$(sh greet.sh Ada)\" = \"hello, Ada\" ]\n",
        ),
    ]);
    let shout_test = "#!/bin/sh\n[ \"$(sh shout.sh Ada)\" = \"HELLO, ADA!\" ]\n";
    // Looks right, parses, and is wrong: the test liza runs at review time fails on it.
    let shout_wrong = edits(&[
        ("shout.sh", "#!/bin/sh\necho \"hello, $1!\"\n"),
        ("tests/test_shout.sh", shout_test),
    ]);
    let shout_fixed = edits(&[
        (
            "shout.sh",
            "#!/bin/sh\necho \"hello, $1!\" | tr '[:lower:]' '[:upper:]'\n",
        ),
        ("tests/test_shout.sh", shout_test),
    ]);
    let plan = json!({"plan_id": "plan_0001", "tasks": [
        {"id": "greet", "title": "Add greet.sh", "rationale": "the first tool of the vision",
         "acceptance": "sh greet.sh Ada prints hello, Ada", "artifacts": ["greet.sh"],
         "spec_ref": "specs/vision.md", "scope": "greet.sh and its test", "priority": 1},
        {"id": "shout", "title": "Add shout.sh", "rationale": "the second tool of the vision",
         "acceptance": "sh shout.sh Ada prints HELLO, ADA!", "artifacts": ["shout.sh"],
         "spec_ref": "specs/vision.md", "scope": "shout.sh and its test", "priority": 2}
    ]});
    let approve = json!({"verdict": "approve", "findings": [], "overall": "does what the task asks, with its test"});
    let always = |when: &str, content: String| Step {
        times: Some(0),
        ..Step::answer_when(when, content)
    };
    Script {
        steps: vec![
            always("The last review rejected the work", shout_fixed),
            always("# Task shout", shout_wrong),
            always("# Task greet", greet),
            always("# Review task", approve.to_string()),
            always(
                "SPRINT_COMPLETE",
                json!([{"decision": "goal_complete", "reason": "both tools are merged"}])
                    .to_string(),
            ),
            always("# Goal", plan.to_string()),
        ],
    }
}

/// The demo's `--dir` is new or empty, and the etcd of `--store` (when given) answers:
/// checked before anything is created, so a refusal leaves nothing behind.
pub(crate) fn preflight(dir: Option<&Path>) -> Result<(), (String, String)> {
    if let Some(dir) = dir
        && dir.exists()
        && std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_some())
    {
        return Err((
            format!("{} exists and is not empty", dir.display()),
            "give --dir a new or empty folder".into(),
        ));
    }
    let Some(text) = crate::blackboard::store::given_address() else {
        return Ok(());
    };
    let address: crate::blackboard::etcd::StoreAddress =
        text.trim()
            .parse()
            .map_err(|e: crate::blackboard::etcd::AddressError| {
                (
                    e.to_string(),
                    "write it as etcd://HOST:PORT[,HOST:PORT…]/PREFIX".into(),
                )
            })?;
    let answers = |endpoint: &String| {
        use std::net::ToSocketAddrs;
        endpoint.to_socket_addrs().is_ok_and(|mut addrs| {
            addrs.any(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok())
        })
    };
    if address.endpoints.iter().any(answers) {
        return Ok(());
    }
    Err((
        format!("no etcd answers at {text} (--store): the demo's blackboard would be there"),
        "start etcd there (e.g. `etcd --data-dir /tmp/etcd-demo`), or run `liza demo` without --store".into(),
    ))
}

fn create_project(dir: &Path, liza: &Path) -> Result<(), String> {
    let write = |rel: &str, text: &str| -> Result<(), String> {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap_or(dir))
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write("specs/vision.md", VISION)?;
    write("tests/run.sh", RUN_TESTS)?;
    write("tests/syntax.sh", SYNTAX)?;
    write(
        "README.md",
        "# greetings\n\nA liza demo project. See specs/vision.md.\n",
    )?;
    git(dir, &["init", "-q", "-b", "main"]).map_err(|e| e.to_string())?;
    git(dir, &["add", "."]).map_err(|e| e.to_string())?;
    git(
        dir,
        &[
            "-c",
            "user.name=liza demo",
            "-c",
            "user.email=demo@liza.invalid",
            "commit",
            "-q",
            "-m",
            "A tiny shell project",
        ],
    )
    .map_err(|e| e.to_string())?;
    let mut init = vec!["init".to_owned(), GOAL.to_owned()];
    // `liza demo --store etcd://…`: the sprint runs on a blackboard in etcd.
    if let Some(address) = crate::blackboard::store::given_address() {
        init.extend(["--store".to_owned(), address]);
    }
    let out = Command::new(liza)
        .args(&init)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("could not run liza init: {e}"))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "liza init failed: {}",
            said.trim().trim_start_matches("error: ")
        ));
    }
    let store = crate::ops::open_store(dir).map_err(|e| e.to_string())?;
    store
        .transact(&Actor::Human, |tx| {
            let c = &mut tx.state.config;
            c.checks = Some(vec![
                check("syntax", "sh tests/syntax.sh", false),
                check("tests", "sh tests/run.sh", true),
            ]);
            c.default_cli = Some("builtin".into());
            c.coder_poll_interval = Some(1);
            c.reviewer_poll_interval = Some(1);
            c.planner_poll_interval = Some(1);
            c.heartbeat_interval = Some(5);
            tx.log(EventKind::DemoConfig);
            Ok::<_, String>(())
        })
        .map_err(|e| format!("could not configure the demo: {e:?}"))?;
    Ok(())
}

fn check(name: &str, run: &str, gate: bool) -> Check {
    Check {
        name: name.into(),
        run: CommandSpec::Shell(run.into()),
        timeout: Some(30),
        on_review: gate.then_some(true),
        on_merge: gate.then_some(true),
        extra: Default::default(),
    }
}

fn spawn_supervisor(
    dir: &Path,
    liza: &Path,
    role: &str,
    id: &str,
    base_url: &str,
    logs: &Path,
) -> Result<Child, String> {
    let out = std::fs::File::create(logs.join(format!("{id}.log"))).map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    Command::new(liza)
        .args(["agent", role, "--cli", "builtin"])
        .current_dir(dir)
        .env("LIZA_AGENT_ID", id)
        .env("LIZA_LLM_BASE_URL", base_url)
        .env("LIZA_LLM_BACKOFF_MS", "100")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("could not start {id}: {e}"))
}

/// Prints the sprint's transitions from the activity log as they happen, until every
/// task is merged and the goal complete; returns the merged tasks.
fn watch(dir: &Path, started: Instant, show: &mut impl FnMut(&str)) -> Result<Vec<String>, String> {
    let store = crate::ops::open_store(dir).map_err(|e| e.to_string())?;
    let mut shown = 0;
    loop {
        if started.elapsed() > DEADLINE {
            return Err(format!(
                "the sprint did not complete within {} s; the supervisors' output is in {}",
                DEADLINE.as_secs(),
                dir.join(".liza/demo").display()
            ));
        }
        if let Ok(text) = store.log_text() {
            let read = crate::blackboard::log::parse_items(&text, 1);
            for entry in read.entries.iter().skip(shown) {
                if entry.task.is_some() || entry.action.starts_with("goal") {
                    let detail = entry
                        .detail
                        .as_deref()
                        .and_then(|d| d.lines().next())
                        .map(|d| format!("  {}", d.chars().take(120).collect::<String>()))
                        .unwrap_or_default();
                    show(&format!(
                        "{:>5.1}s  {:<16} {:<26} {}{detail}",
                        started.elapsed().as_secs_f64(),
                        entry.agent.as_deref().unwrap_or("-"),
                        entry.action,
                        entry.task.as_deref().unwrap_or("")
                    ));
                }
            }
            shown = shown.max(read.entries.len());
        }
        if let Ok(snapshot) = store.snapshot() {
            let state = snapshot.state;
            let all_merged = !state.tasks.is_empty()
                && state.tasks.iter().all(|t| t.status == TaskStatus::Merged);
            if all_merged && state.goal.status == Some(GoalStatus::Completed) {
                return Ok(state.tasks.iter().map(|t| t.id.to_string()).collect());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Lets the supervisors exit on their own (the goal is complete), then stops the rest.
fn stop(children: &mut [Child]) {
    let until = Instant::now() + Duration::from_secs(10);
    for child in children.iter_mut() {
        while Instant::now() < until {
            if child.try_wait().is_ok_and(|s| s.is_some()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if child.try_wait().is_ok_and(|s| s.is_none()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let _ = child.wait();
        }
    }
}
