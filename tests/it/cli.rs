//! The CLI end to end: init, note, status, show, log, validate in real repositories; exit
//! codes, the JSON envelope, and refusals that leave every file byte-identical.

use crate::common::{Repo, assert_exit, assert_success, doctor_check, json, stderr, stdout};

#[test]
fn init_creates_the_blackboard_branch_and_excludes() {
    let repo = Repo::new();
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let out = repo.liza(&[
        "--json",
        "init",
        "Add a --json flag",
        "--integration-branch",
        "liza/int",
    ]);
    assert_success(&out);
    let v = json(&out);
    assert_eq!(v["ok"], true);
    assert_eq!(v["result"]["integration_branch"], "liza/int");
    assert_eq!(v["result"]["branch_created"], true);
    assert_eq!(repo.git(&["rev-parse", "liza/int"]).trim(), head);
    for f in ["state.yaml", "log.yaml", "state.yaml.lock", "journal"] {
        assert!(repo.liza_dir().join(f).exists(), "{f}");
    }
    let exclude = std::fs::read_to_string(repo.path().join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == ".liza/") && exclude.lines().any(|l| l == ".worktrees/"));
    // The human's checkout is untouched: .liza/ is ignored, HEAD unchanged.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(
        repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    let state = repo.state_text();
    assert!(state.contains("revision: 1\n"), "{state}");
    assert!(state.contains("spec_ref: specs/vision.md\n"));
    assert!(state.contains("integration_branch: liza/int\n"));
    let out = repo.liza(&["validate"]);
    assert_success(&out);
    let log = repo.log();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["action"], "init");
    assert_eq!(log[0]["revision"], 1);
}

#[test]
fn init_keeps_an_existing_integration_branch_and_honours_base() {
    let repo = Repo::new();
    let first = repo.git(&["rev-parse", "HEAD"]).trim().to_owned();
    std::fs::write(repo.path().join("b.txt"), "b").unwrap();
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "second"]);
    let out = repo.liza(&["--json", "init", "Goal", "--base", &first]);
    assert_success(&out);
    assert_eq!(repo.git(&["rev-parse", "integration"]).trim(), first);

    let other = Repo::new();
    other.git(&["branch", "integration"]);
    let tip = other.git(&["rev-parse", "integration"]).trim().to_owned();
    let out = other.liza(&["--json", "init", "Goal"]);
    assert_success(&out);
    assert_eq!(json(&out)["result"]["branch_created"], false);
    assert_eq!(other.git(&["rev-parse", "integration"]).trim(), tip);
}

#[test]
fn init_refusals_change_nothing() {
    // Existing blackboard.
    let repo = Repo::initialized();
    let before = repo.files();
    let out = repo.liza(&["init", "Again"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(repo.files(), before);

    // Missing spec: no .liza/, no branch.
    let repo = Repo::new();
    let before = repo.files();
    let out = repo.liza(&["init", "Goal", "--spec", "specs/missing.md"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("spec file specs/missing.md does not exist"));
    assert!(stderr(&out).contains("hint:"));
    assert!(!repo.liza_dir().exists());
    assert_eq!(repo.files(), before);

    // Empty goal, bad branch name, unknown base.
    for (args, code) in [
        (vec!["init", "  "], 1),
        (vec!["init", "Goal", "--integration-branch", "bad name"], 1),
        (vec!["init", "Goal", "--base", "no-such-ref"], 3),
    ] {
        let out = repo.liza(&args);
        assert_exit(&out, code);
        assert!(!repo.liza_dir().exists(), "{args:?}");
        assert_eq!(repo.files(), before, "{args:?}");
    }
}

#[test]
fn init_needs_a_commit_and_a_repository() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo {
        dir,
        home: tempfile::tempdir().unwrap(),
    };
    // Not a repository at all.
    std::fs::create_dir_all(repo.path().join("specs")).unwrap();
    std::fs::write(repo.path().join("specs/vision.md"), "x").unwrap();
    let out = repo.liza(&["init", "Goal"]);
    assert_exit(&out, 3);
    assert!(stderr(&out).contains("not inside a git repository"));
    // A repository without commits.
    repo.git(&["init", "-q"]);
    let out = repo.liza(&["init", "Goal"]);
    assert_exit(&out, 3);
    assert!(stderr(&out).contains("no commits yet"), "{}", stderr(&out));
    assert!(stderr(&out).contains("hint: make a first commit"));
    assert!(!repo.liza_dir().exists());
}

#[test]
fn notes_are_transactions_from_any_directory_or_worktree() {
    let repo = Repo::initialized();
    std::fs::create_dir_all(repo.path().join("src/deep")).unwrap();
    let out = repo.liza_in(
        &repo.path().join("src/deep"),
        &["note", "all", "from a subdirectory"],
    );
    assert_success(&out);
    assert_eq!(stdout(&out), "note-1 added for all (revision 2)\n");

    repo.git(&["worktree", "add", "-q", ".worktrees/w1", "-b", "task/w1"]);
    let out = repo.liza_in(
        &repo.path().join(".worktrees/w1"),
        &["--json", "note", "all", "from a worktree"],
    );
    assert_success(&out);
    assert_eq!(json(&out)["result"]["id"], "note-2");
    assert_eq!(json(&out)["result"]["revision"], 3);
    // The worktree did not get a blackboard of its own.
    assert!(!repo.path().join(".worktrees/w1/.liza").exists());
    let state = repo.state_text();
    assert!(state.contains("message: from a subdirectory"));
    assert!(state.contains("message: from a worktree"));
    let log = repo.log();
    let actions: Vec<_> = log.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["init", "human_note", "human_note"]);
    assert!(log[2]["lock_wait_ms"].is_number() && log[2]["lock_hold_ms"].is_number());
}

#[test]
fn refused_notes_leave_every_file_byte_identical() {
    let repo = Repo::initialized();
    assert_success(&repo.liza(&["note", "all", "first"]));
    let before = repo.files();
    /// (arguments, environment, exit code, message)
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, i32, &'a str);
    let cases: Vec<Case> = vec![
        (
            vec!["note", "t-nope", "x"],
            vec![],
            1,
            "there is no task t-nope",
        ),
        (
            vec!["note", "../evil", "x"],
            vec![],
            1,
            "task id \"../evil\"",
        ),
        (vec!["note", "all", "   "], vec![], 1, "the note is empty"),
        (
            vec!["note", "all", "x"],
            vec![("LIZA_AGENT_ID", "coder-1")],
            1,
            "note is a command for people, refused for coder-1",
        ),
        (
            vec!["note", "all", "x"],
            vec![("LIZA_AGENT_ID", "coder1")],
            1,
            "LIZA_AGENT_ID is set to an invalid id",
        ),
    ];
    for (args, env, code, message) in cases {
        let out = repo.liza_env(&env, &args);
        assert_exit(&out, code);
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("hint:"), "{args:?}: {}", stderr(&out));
        assert_eq!(repo.files(), before, "{args:?}");
    }
}

#[test]
fn json_envelope_for_results_and_errors() {
    let repo = Repo::initialized();
    let out = repo.liza(&["--json", "note", "nope", "x"]);
    assert_exit(&out, 1);
    let v = json(&out);
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["code"], "refused");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no task nope")
    );
    assert!(v["error"]["hint"].is_string());
    assert_eq!(
        v["error"]["rule"], "task-exists",
        "the refusing rule, typed"
    );
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));

    let out = repo.liza(&["--json", "frobnicate"]);
    assert_exit(&out, 64);
    assert_eq!(json(&out)["error"]["code"], "usage");
    let out = repo.liza(&["frobnicate"]);
    assert_exit(&out, 64);
    let out = repo.liza(&["note"]);
    assert_exit(&out, 64);
    let out = repo.liza(&["--help"]);
    assert_exit(&out, 0);
}

#[test]
fn commands_without_a_blackboard_exit_4_with_a_hint() {
    let repo = Repo::new();
    for args in [
        vec!["status"],
        vec!["note", "all", "x"],
        vec!["log"],
        vec!["show", "t-1"],
        vec!["validate"],
    ] {
        let out = repo.liza(&args);
        assert_exit(&out, 4);
        assert!(stderr(&out).contains("hint:"), "{args:?}: {}", stderr(&out));
    }
    let outside = tempfile::tempdir().unwrap();
    let out = repo.liza_in(outside.path(), &["status"]);
    assert_exit(&out, 4);
    assert!(stderr(&out).contains("not inside a git repository"));
}

#[test]
fn status_show_and_log_render_the_blackboard() {
    let repo = Repo::initialized();
    // A realistic mid-sprint state, written by hand.
    repo.write_mid_sprint();
    let out = repo.liza(&["status"]);
    assert_success(&out);
    let text_out = stdout(&out);
    assert!(
        text_out.contains("Goal goal-1 (IN_PROGRESS): Add a --json flag to the report CLI"),
        "{text_out}"
    );
    assert!(text_out.contains("changed outside liza"), "{text_out}");
    assert!(text_out.contains("Tasks (12)"));
    assert!(text_out.contains("t-claimed"));

    let v = repo.state_json();
    assert_eq!(v["pending_hand_edit"], true);
    assert_eq!(v["tasks"].as_array().unwrap().len(), 12);
    assert_eq!(v["sprint"]["counts"]["CLAIMED"], 2);
    assert_eq!(v["agents"][1]["id"], "coder-2");
    assert!(v["agents"][1]["lease_remaining_s"].as_i64().unwrap() > 0);
    // Timestamps are RFC 3339 text in --json output.
    assert_eq!(v["agents"][1]["lease_expires"], "2099-01-01T00:00:00Z");
    assert_eq!(v["sprint"]["started"], "2026-03-01T09:00:00Z");

    // The next transaction records the edit.
    assert_success(&repo.liza(&["note", "t-claimed", "please add tests"]));
    let v = repo.state_json();
    assert_eq!(v["pending_hand_edit"], false);
    assert_eq!(v["revision"], 3);
    // Metrics are kept current by every transaction.
    assert_eq!(v["sprint"]["metrics"]["tasks_done"], 3);
    assert_eq!(v["sprint"]["metrics"]["tasks_blocked"], 2);

    let out = repo.liza(&["show", "t-rejected"]);
    assert_success(&out);
    assert!(
        stdout(&out).starts_with("# task t-rejected · REJECTED · revision 3\n"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("  Blockers:\n"));
    let out = repo.liza(&["--json", "show", "t-merged"]);
    assert_success(&out);
    let task = json(&out)["result"].clone();
    assert_eq!(task["status"], "MERGED");
    assert_eq!(
        task["x-review-notes"],
        "kept because liza keeps unknown keys"
    );
    let out = repo.liza(&["show", "t-old"]);
    assert_success(&out);
    assert!(stdout(&out).contains("archived (MERGED, sprint-0)"));
    assert_exit(&repo.liza(&["show", "t-nope"]), 1);

    let out = repo.liza(&["log", "--task", "t-claimed"]);
    assert_success(&out);
    let printed = stdout(&out);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("human_note") && lines[0].contains("note-2: please add tests"));
    let log = repo.log();
    assert!(log[1]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(log[1]["action"], "human_edit");
    assert_eq!(log[1]["revision"], 2);
}

#[test]
fn validate_without_file_checks_this_repository() {
    let repo = Repo::initialized();
    let out = repo.liza_in(&repo.path().join("specs"), &["validate"]);
    assert_success(&out);
    assert!(stdout(&out).contains(".liza/state.yaml is valid (0 tasks)"));
    std::fs::remove_file(repo.path().join("specs/vision.md")).unwrap();
    // The goal's spec is not a task spec: still valid.
    assert_success(&repo.liza(&["validate"]));
}

#[test]
fn log_follow_prints_entries_as_they_are_appended() {
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;

    let repo = Repo::initialized();
    let mut child = repo
        .command()
        .args(["log", "--follow", "--task", "t-1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // Entries for other tasks are filtered out; ours appear as they are written. The
    // follower may start after the first note: keep adding until one shows up.
    let text = repo
        .state_text()
        .replace("tasks: []\n", "tasks:\n  - id: t-1\n    status: DRAFT\n");
    std::fs::write(repo.state_path(), text).unwrap();
    assert_success(&repo.liza(&["note", "all", "not this one"]));
    let mut seen = None;
    for round in 0..200 {
        assert_success(&repo.liza(&["note", "t-1", &format!("followed {round}")]));
        if let Ok(line) = rx.recv_timeout(std::time::Duration::from_millis(500)) {
            seen = Some(line);
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let line = seen.expect("log --follow printed the new entry");
    assert!(
        line.contains("human_note") && line.contains("followed"),
        "{line}"
    );
    assert!(!line.contains("not this one"));
}

/// `liza log` streams (specs/operations.md *CLI conventions*): a log of 200 000 entries
/// (~30 MB) is printed whole under a 192 MiB address-space limit (`prlimit --as`), where
/// reading it into memory took over 300 MB; `--json` keeps its one object, entries in
/// order, an unreadable entry warned about and skipped, a torn tail said.
#[test]
fn liza_log_streams_a_large_log_in_bounded_memory() {
    let repo = Repo::initialized();
    let log = repo.liza_dir().join("log.yaml");
    {
        use std::io::Write;
        let mut f =
            std::io::BufWriter::new(std::fs::OpenOptions::new().append(true).open(&log).unwrap());
        for i in 0..200_000 {
            writeln!(
                f,
                "- {{timestamp: 2026-11-27T10:00:00Z, agent: coder-{}, action: note_added, task: t-{}, detail: \"a note of some length, number {i}\"}}",
                i % 5,
                i % 100
            )
            .unwrap();
        }
    }
    let out = repo
        .command_for("prlimit")
        .arg(format!("--as={}", 192 * 1024 * 1024))
        .args(["--", crate::common::LIZA, "log"])
        .output()
        .unwrap();
    assert_success(&out);
    let text = stdout(&out);
    assert_eq!(
        text.lines().filter(|l| l.contains("note_added")).count(),
        200_000
    );
    assert!(
        text.trim_end().ends_with("number 199999"),
        "{}",
        &text[text.len() - 200..]
    );

    // The JSON object, on a small log with a bad item and a torn tail.
    let small = Repo::initialized();
    let log = small.liza_dir().join("log.yaml");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("- {timestamp: 2026-11-27T10:00:00Z, agent: a, action: one}\n");
    text.push_str("- {timestamp: [not, a, time], action: bad}\n");
    text.push_str("- {timestamp: 2026-11-27T10:00:01Z, agent: b, action: two}\n");
    text.push_str("- {timestamp: 2026-11-27T10:00:02Z, agent: c, act");
    std::fs::write(&log, text).unwrap();
    let out = small.liza(&["--json", "log"]);
    assert_success(&out);
    let v = json(&out);
    let actions: Vec<&str> = v["result"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions[actions.len() - 2..], ["one", "two"]);
    assert_eq!(v["result"]["torn_tail"], true);
    assert!(
        stderr(&out).contains("unreadable entry skipped"),
        "{}",
        stderr(&out)
    );
}

/// Every refusal names its rule, as docs/troubleshooting.md says: in the message
/// (`[rule]`) and as `error.rule` in `--json` — a task that does not exist, an invalid
/// `LIZA_AGENT_ID`.
#[test]
fn refusals_name_their_rule() {
    let repo = Repo::initialized();
    for (env, args, rule) in [
        (vec![], vec!["show", "nosuch"], "task-exists"),
        (
            vec![("LIZA_AGENT_ID", "bogus")],
            vec!["note", "all", "x"],
            "agent-id",
        ),
    ] {
        let out = repo.liza_env(&env, &args);
        assert_exit(&out, 1);
        assert!(
            stderr(&out).contains(&format!("[{rule}]")),
            "{}",
            stderr(&out)
        );
        let mut json_args = vec!["--json"];
        json_args.extend(&args);
        let out = repo.liza_env(&env, &json_args);
        assert_eq!(json(&out)["error"]["rule"], rule, "{args:?}");
    }
}

/// An unquoted comma inside a `{…}` task cuts its value in two: the error says so and
/// how to write it, instead of only naming an unknown field.
#[test]
fn add_tasks_says_when_an_unquoted_comma_cut_a_value() {
    let repo = Repo::initialized();
    let file = repo.path().join("tasks.yaml");
    std::fs::write(
        &file,
        "- {id: t-9, desc: Add a sum, spec: specs/vision.md, done: add(1, 3) returns 4, scope: x}\n",
    )
    .unwrap();
    let before = repo.files();
    let out = repo.liza(&["add-tasks", "--file", file.to_str().unwrap()]);
    assert_exit(&out, 1);
    let said = stderr(&out);
    assert!(said.contains("tasks.yaml:1:3"), "{said}");
    assert!(said.contains("`3) returns 4` was read as one"), "{said}");
    assert!(said.contains("done: \"add(1, 3) returns 4\""), "{said}");
    assert_eq!(repo.files(), before);
}

#[test]
fn the_spec_must_be_committed_where_worktrees_start() {
    // init: a spec written but never committed is refused, and nothing is created.
    let repo = Repo::new();
    std::fs::write(repo.path().join("specs/draft.md"), "# Draft\n").unwrap();
    let before = repo.files();
    let out = repo.liza(&["init", "Goal", "--spec", "specs/draft.md"]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("[spec-committed]"), "{err}");
    assert!(
        err.contains("specs/draft.md is not committed (commit"),
        "{err}"
    );
    assert!(err.contains("then run `liza init` again"), "{err}");
    assert!(err.contains("git add specs/draft.md"), "{err}");
    assert!(!repo.liza_dir().exists());
    assert_eq!(repo.files(), before);

    // finalize: a spec committed on main after init is not on integration yet.
    let repo = Repo::initialized();
    std::fs::write(repo.path().join("specs/later.md"), "# Later\n").unwrap();
    repo.git(&["add", "specs/later.md"]);
    repo.git(&["commit", "-q", "-m", "a later spec"]);
    let add = |id: &str| add_finalized(&repo, id, "specs/later.md");
    let before = repo.files();
    let out = add("t-1");
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("[spec-committed]"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("git fetch . HEAD:integration"),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.files(), before);
    assert_eq!(doctor_check(&repo, "spec")["status"], "ok");
    // The hint works: integration fast-forwards to the commit, and the task is finalized.
    repo.git(&["fetch", "-q", ".", "HEAD:integration"]);
    assert_success(&add("t-1"));
    assert_eq!(doctor_check(&repo, "spec")["status"], "ok");

    // doctor: an uncommitted change to the goal's spec is said; a missing one fails.
    std::fs::write(repo.path().join("specs/vision.md"), "# Vision, changed\n").unwrap();
    let check = doctor_check(&repo, "spec");
    assert_eq!(check["status"], "warn", "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("agents read integration's"),
        "{check}"
    );
    repo.git(&["rm", "-q", "specs/later.md"]);
    repo.git(&["commit", "-q", "-m", "spec gone"]);
    repo.git(&["fetch", "-q", ".", "HEAD:integration"]);
    let check = doctor_check(&repo, "spec");
    assert_eq!(check["status"], "fail", "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("specs/later.md not committed"),
        "{check}"
    );
}

/// With a shared remote, worktrees start at the remote's integration tip: a spec only on
/// this repository's branch is refused, with the push that brings it there; a path
/// written another way (`./specs/…`) names the same committed file.
#[test]
fn with_a_shared_remote_the_spec_must_be_on_the_remotes_integration() {
    let repo = Repo::new();
    let bare = tempfile::tempdir().unwrap();
    let url = bare.path().display().to_string();
    std::process::Command::new("git")
        .args(["init", "-q", "--bare", &url])
        .output()
        .unwrap();
    assert_success(&repo.liza(&["init", "Goal", "--git-remote", &url]));
    std::fs::write(repo.path().join("specs/new.md"), "# New\n").unwrap();
    repo.git(&["add", "specs/new.md"]);
    repo.git(&["commit", "-q", "-m", "a new spec"]);
    repo.git(&["fetch", "-q", ".", "HEAD:integration"]);
    let add = |id: &str, spec: &str| add_finalized(&repo, id, spec);
    // Refused, nothing changed — but liza's record of what it last read from the remote
    // (`refs/liza/remote/…`, which every sync writes), since the check reads the remote.
    let without_fetched = |mut files: std::collections::BTreeMap<String, Vec<u8>>| {
        let refs = String::from_utf8(files.remove("refs").unwrap()).unwrap();
        let kept: String = refs
            .lines()
            .filter(|l| !l.starts_with("refs/liza/remote/"))
            .map(|l| format!("{l}\n"))
            .collect();
        files.insert("refs".into(), kept.into_bytes());
        files
    };
    let before = without_fetched(repo.files());
    let out = add("t-1", "specs/new.md");
    assert_exit(&out, 1);
    assert_eq!(
        without_fetched(repo.files()),
        before,
        "a refusal changes nothing"
    );
    assert!(
        stderr(&out).contains("[spec-committed]"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains(&format!("git push {url} HEAD:integration")),
        "{}",
        stderr(&out)
    );
    repo.git(&["push", "-q", &url, "HEAD:integration"]);
    assert_success(&add("t-1", "./specs/new.md"));
    assert_eq!(doctor_check(&repo, "spec")["status"], "ok");
}

/// `liza add-task <id> … --spec <spec> --finalize`.
fn add_finalized(repo: &Repo, id: &str, spec: &str) -> std::process::Output {
    repo.liza(&[
        "add-task",
        "--id",
        id,
        "--desc",
        "d",
        "--spec",
        spec,
        "--done",
        "report --json prints JSON",
        "--scope",
        "s",
        "--finalize",
    ])
}
