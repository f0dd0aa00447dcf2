//! The task lifecycle end to end, with the real `liza` binary and real git: a scripted
//! sprint, claim races between processes, identity and generation checks, hostile ids.

use crate::common::team::*;
use crate::common::*;

/// The end-to-end sprint of the issue, with only `liza` and `git`.
#[test]
fn a_scripted_sprint_runs_every_transition_through_the_cli() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    add(&repo, "t-2", "");
    add(&repo, "t-3", "t-2");
    assert_valid(&repo);
    let c1 = register(&repo, "coder-1");
    let c2 = register(&repo, "coder-2");
    let r1 = register(&repo, "code-reviewer-1");

    // t-1: claim, submit refused while dirty and when nothing was committed, reject, fix, approve.
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let wt = repo.path().join(".worktrees/t-1");
    assert!(wt.join("specs/vision.md").exists());
    assert_refused(
        &repo,
        &as_agent("coder-1", &c1),
        &["submit-for-review", "t-1"],
        "nothing was committed",
    );
    std::fs::write(wt.join("report.txt"), "draft").unwrap();
    assert_refused(
        &repo,
        &as_agent("coder-1", &c1),
        &["submit-for-review", "t-1"],
        "uncommitted files: report.txt",
    );
    repo.git_in(&wt, &["add", "-A"]);
    repo.git_in(&wt, &["commit", "-q", "-m", "first try"]);
    let first = repo.git_in(&wt, &["rev-parse", "HEAD"]).trim().to_owned();
    assert_success(&repo.liza_env(&as_agent("coder-1", &c1), &["submit-for-review", "t-1"]));
    assert_success(&repo.liza(&["claim-review", "t-1", "code-reviewer-1"]));
    assert_refused(
        &repo,
        &as_agent("code-reviewer-1", &r1),
        &[
            "submit-verdict",
            "t-1",
            "reject",
            "--commit",
            &first,
            "--reason",
            "wrong",
        ],
        "path:line",
    );
    assert_success(&repo.liza_env(
        &as_agent("code-reviewer-1", &r1),
        &[
            "submit-verdict",
            "t-1",
            "reject",
            "--commit",
            &first,
            "--reason",
            "report.txt:1 is a draft",
        ],
    ));
    assert_eq!(status(&repo, "t-1"), "REJECTED");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let fixed = commit_in(&repo, &wt, "report.txt", "final");
    assert_success(&repo.liza_env(
        &as_agent("coder-1", &c1),
        &["submit-for-review", "t-1", &fixed],
    ));
    assert_success(&repo.liza(&["claim-review", "t-1", "code-reviewer-1"]));
    assert_success(&repo.liza_env(
        &as_agent("code-reviewer-1", &r1),
        &["submit-verdict", "t-1", "approve", "--commit", &fixed],
    ));
    assert_eq!(status(&repo, "t-1"), "APPROVED");
    assert_valid(&repo);

    // t-2: claimed, blocked, rescoped into t-2a; t-3 waits until t-2a is merged.
    assert_refused(
        &repo,
        &[],
        &["claim-task", "t-3", "coder-2"],
        "waits on t-2",
    );
    assert_success(&repo.liza(&["claim-task", "t-2", "coder-2"]));
    assert_success(&repo.liza_env(
        &as_agent("coder-2", &c2),
        &[
            "block",
            "t-2",
            "--reason",
            "the format is unspecified",
            "--question",
            "JSON or CSV?",
        ],
    ));
    let mut args = vec![
        "add-task",
        "--id",
        "t-2a",
        "--desc",
        "Implement the JSON output only",
        "--spec",
        SPEC,
        "--done",
        "report --json prints a totals key",
        "--scope",
        "json",
        "--supersedes",
        "t-2",
        "--finalize",
    ];
    assert_success(&repo.liza(&args));
    args.clear();
    assert_success(&repo.liza(&[
        "rescope",
        "t-2",
        "--into",
        "t-2a",
        "--reason",
        "the output format was never decided",
    ]));
    assert_eq!(status(&repo, "t-2"), "SUPERSEDED");
    assert_refused(
        &repo,
        &[],
        &["claim-task", "t-3", "coder-2"],
        "waits on t-2",
    );
    assert_valid(&repo);
    assert_success(&repo.liza(&["merge", "t-1"]));
    assert_success(&repo.liza(&["claim-task", "t-2a", "coder-2"]));
    let wt2 = repo.path().join(".worktrees/t-2a");
    let head = commit_in(&repo, &wt2, "json.txt", "{}");
    assert_success(&repo.liza_env(&as_agent("coder-2", &c2), &["submit-for-review", "t-2a"]));
    assert_success(&repo.liza(&["claim-review", "t-2a", "code-reviewer-1"]));
    assert_success(&repo.liza_env(
        &as_agent("code-reviewer-1", &r1),
        &["submit-verdict", "t-2a", "approve", "--commit", &head],
    ));
    assert_success(&repo.liza(&["merge", "t-2a"]));
    assert_valid(&repo);

    // t-3: claimed by coder-1, whose lease expires; coder-2 takes it over and the
    // uncommitted file is preserved in an attic branch.
    assert_success(&repo.liza(&["claim-task", "t-3", "coder-1"]));
    let wt3 = repo.path().join(".worktrees/t-3");
    std::fs::write(wt3.join("unsaved.txt"), "work in progress").unwrap();
    expire_lease(&repo, "t-3");
    assert_success(&repo.liza(&["claim-task", "t-3", "coder-2"]));
    let attic = repo.git(&[
        "branch",
        "--list",
        "liza/attic/t-3-*",
        "--format=%(refname:short)",
    ]);
    let attic = attic.trim();
    assert_eq!(attic, "liza/attic/t-3-1");
    assert_eq!(
        repo.git(&["show", &format!("{attic}:unsaved.txt")]),
        "work in progress"
    );
    assert!(
        !wt3.join("unsaved.txt").exists(),
        "the new coder starts fresh"
    );
    assert_valid(&repo);

    // Every event is in the histories and the log.
    let state = model(&repo);
    let events = |id: &str| -> Vec<String> {
        state["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["event"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        events("t-1"),
        [
            "created",
            "finalized",
            "claimed",
            "ready_for_review",
            "review_claimed",
            "rejected",
            "reclaimed_after_rejection",
            "ready_for_review",
            "review_claimed",
            "approved",
            "merged"
        ]
    );
    assert_eq!(
        events("t-2"),
        ["created", "finalized", "claimed", "blocked", "superseded"]
    );
    assert_eq!(
        events("t-3"),
        [
            "created",
            "finalized",
            "claimed",
            "lease_expired_reassigned"
        ]
    );
    let actions: Vec<String> = repo
        .log()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect();
    for action in [
        "created",
        "finalized",
        "claimed",
        "ready_for_review",
        "review_claimed",
        "rejected",
        "reclaimed_after_rejection",
        "approved",
        "blocked",
        "superseded",
        "lease_expired_reassigned",
        "worktree_archived",
        "agent_registered",
    ] {
        assert!(
            actions.iter().any(|a| a == action),
            "log lacks {action}: {actions:?}"
        );
    }
}

#[test]
fn eight_claimers_race_for_twenty_tasks_and_each_task_is_claimed_once() {
    let repo = Repo::initialized();
    let tasks: Vec<String> = (1..=20).map(|i| format!("t-{i}")).collect();
    let file: String = tasks.iter().map(|t| format!("- {{id: {t}, desc: Implement {t}, spec: {SPEC}, done: report --json prints a totals key, scope: report, finalize: true}}\n")).collect();
    std::fs::write(repo.path().join("tasks.yaml"), file).unwrap();
    assert_success(&repo.liza(&["add-tasks", "--file", "tasks.yaml"]));
    for c in 1..=8 {
        register(&repo, &format!("coder-{c}"));
    }
    let handles: Vec<_> = (1..=8)
        .map(|c| {
            let mut cmds: Vec<std::process::Command> = Vec::new();
            for k in 0..20 {
                let task = format!("t-{}", (k + c * 3) % 20 + 1);
                let mut cmd = repo.command();
                cmd.args(["claim-task", &task, &format!("coder-{c}")]);
                cmds.push(cmd);
            }
            std::thread::spawn(move || {
                for mut cmd in cmds {
                    if cmd.output().unwrap().status.success() {
                        return 1;
                    }
                }
                0
            })
        })
        .collect();
    let claimed: i32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(claimed, 8, "each coder claims exactly one task");
    let state = model(&repo);
    let owners: Vec<String> = state["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "CLAIMED")
        .map(|t| t["assigned_to"].as_str().unwrap().to_owned())
        .collect();
    let mut distinct = owners.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        (owners.len(), distinct.len()),
        (8, 8),
        "no task twice, no agent with two"
    );
    let claims = repo
        .log()
        .iter()
        .filter(|e| e["action"] == "claimed")
        .count();
    assert_eq!(claims, 8);
    let worktrees = std::fs::read_dir(repo.path().join(".worktrees"))
        .unwrap()
        .count();
    assert_eq!(worktrees, 8, "a refused claim leaves no worktree behind");
    assert_valid(&repo);
}

#[test]
fn two_reviewers_racing_for_one_review_get_one_claim() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let c1 = register(&repo, "coder-1");
    register(&repo, "code-reviewer-1");
    register(&repo, "code-reviewer-2");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    commit_in(&repo, &repo.path().join(".worktrees/t-1"), "a.txt", "a");
    assert_success(&repo.liza_env(&as_agent("coder-1", &c1), &["submit-for-review", "t-1"]));
    let children: Vec<_> = ["code-reviewer-1", "code-reviewer-2"]
        .iter()
        .map(|r| {
            repo.command()
                .args(["claim-review", "t-1", r])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let wins = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.success())
        .filter(|ok| *ok)
        .count();
    assert_eq!(wins, 1);
    assert_eq!(
        repo.log()
            .iter()
            .filter(|e| e["action"] == "review_claimed")
            .count(),
        1
    );
}

#[test]
fn a_verdict_from_a_stale_generation_or_another_reviewer_is_refused() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let c1 = register(&repo, "coder-1");
    let old = register(&repo, "code-reviewer-1");
    let r2 = register(&repo, "code-reviewer-2");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let head = commit_in(&repo, &repo.path().join(".worktrees/t-1"), "a.txt", "a");
    assert_success(&repo.liza_env(&as_agent("coder-1", &c1), &["submit-for-review", "t-1"]));
    assert_success(&repo.liza(&["claim-review", "t-1", "code-reviewer-1"]));
    let approve = [
        "submit-verdict",
        "t-1",
        "approve",
        "--commit",
        head.as_str(),
    ];
    assert_refused(
        &repo,
        &as_agent("code-reviewer-2", &r2),
        &approve,
        "only from the reviewer that claimed it",
    );
    assert_refused(&repo, &[], &approve, "only a code reviewer may");
    // The reviewer is registered again: the old process's generation is stale.
    assert_success(&repo.liza(&["unregister", "code-reviewer-1"]));
    let new = register(&repo, "code-reviewer-1");
    assert_ne!(old, new);
    assert_refused(
        &repo,
        &as_agent("code-reviewer-1", &old),
        &approve,
        "stale agent generation",
    );
    assert_refused(
        &repo,
        &as_agent("code-reviewer-1", &old),
        &["unregister", "code-reviewer-1"],
        "supervisor",
    );
    assert_refused(
        &repo,
        &[],
        &["unregister", "code-reviewer-1", "--generation", &old],
        "stale agent generation",
    );
}

#[test]
fn a_command_without_identity_from_an_agents_process_group_is_refused() {
    let repo = Repo::initialized();
    register(&repo, "coder-1");
    // The liza commands below run in this test's process group: record it as the agent's.
    let pgid = nix::unistd::getpgrp().as_raw().to_string();
    assert_success(&repo.liza(&["heartbeat", "coder-1", "--pgid", &pgid]));
    let args = [
        "add-task",
        "--id",
        "t-1",
        "--desc",
        "d",
        "--spec",
        SPEC,
        "--done",
        "report --json prints totals",
        "--scope",
        "s",
    ];
    assert_refused(&repo, &[], &args, "agents act under their own identity");
    // Once the agent runs in another process group, the same command is a person's.
    assert_success(&repo.liza(&["heartbeat", "coder-1", "--pgid", "999999"]));
    assert_success(&repo.liza(&args));
}

#[test]
fn registration_collides_with_a_live_agent_and_changes_nothing() {
    let repo = Repo::initialized();
    register(&repo, "coder-1");
    let out = repo.liza(&["--json", "register", "coder-2"]);
    assert_success(&out);
    let generation = json(&out)["result"]["generation"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        model(&repo)["agents"]["coder-2"]["generation"],
        generation.as_str()
    );
    assert_refused(
        &repo,
        &[],
        &["register", "coder-1"],
        "COLLISION: coder-1 already registered until",
    );
    assert_refused(
        &repo,
        &as_agent("coder-1", "x"),
        &["register", "coder-2"],
        "refused when an agent identity is set",
    );
}

#[test]
fn hostile_ids_are_refused_before_touching_a_path_or_ref() {
    let repo = Repo::initialized();
    register(&repo, "coder-1");
    for bad in [
        "../x", "a/b", "-rf", "x.lock", "all", "tab\tid", "nl\nid", "é", ".hidden",
    ] {
        assert_refused(&repo, &[], &["claim-task", "--", bad, "coder-1"], "task id");
        assert_refused(
            &repo,
            &[],
            &[
                "add-task",
                &format!("--id={bad}"),
                "--desc",
                "d",
                "--spec",
                SPEC,
                "--done",
                "a b c",
                "--scope",
                "s",
            ],
            "task id",
        );
        assert_refused(
            &repo,
            &[],
            &["abandon", "--reason", "r", "--", bad],
            "task id",
        );
    }
    for bad in ["coder", "coder1", "my-coder-1", "../coder-1", "coder-1/x"] {
        assert_refused(&repo, &[], &["register", bad], "does not match");
        assert_refused(&repo, &[], &["claim-task", "t-1", bad], "does not match");
    }
    assert!(
        !repo.path().join(".worktrees").exists()
            || std::fs::read_dir(repo.path().join(".worktrees"))
                .unwrap()
                .count()
                == 0
    );
}

#[test]
fn agents_act_only_within_their_role() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let c1 = register(&repo, "coder-1");
    let coder = as_agent("coder-1", &c1);
    assert_refused(
        &repo,
        &coder,
        &[
            "add-task",
            "--id",
            "t-9",
            "--desc",
            "d",
            "--spec",
            SPEC,
            "--done",
            "report prints totals ok",
            "--scope",
            "s",
        ],
        "a coder may not run add-task",
    );
    assert_refused(
        &repo,
        &coder,
        &["abandon", "t-1", "--reason", "mine now"],
        "a coder may not run abandon",
    );
    assert_refused(
        &repo,
        &coder,
        &["claim-task", "t-1", "coder-1"],
        "supervisor-only",
    );
    assert_refused(
        &repo,
        &coder,
        &["goal", "complete"],
        "only the planner or a person",
    );
    assert_refused(
        &repo,
        &coder,
        &["release-claim", "t-1", "--reason", "x"],
        "for people",
    );
    let p1 = register(&repo, "planner-1");
    assert_refused(
        &repo,
        &as_agent("planner-1", &p1),
        &["submit-for-review", "t-1"],
        "the planner may not run submit-for-review",
    );
}

#[test]
fn heartbeats_renew_leases_without_rewriting_state_and_the_next_transaction_folds_them() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    register(&repo, "coder-1");
    register(&repo, "coder-2");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    expire_lease(&repo, "t-1");
    let before = repo.files();
    assert_success(&repo.liza(&["heartbeat", "coder-1"]));
    assert_eq!(
        before,
        repo.files(),
        "a heartbeat never rewrites state.yaml or the log"
    );
    // The effective lease (from the liveness record) keeps the task from other coders.
    assert_refused(
        &repo,
        &[],
        &["claim-task", "t-1", "coder-2"],
        "whose lease is live",
    );
    let text = std::fs::read_to_string(repo.liza_dir().join("state.yaml")).unwrap();
    assert_success(&repo.liza(&["note", "all", "fold the records"]));
    assert_ne!(text, repo.state_text());
    // Read the file itself (snapshots would fold the records in on their own).
    let written = liza::blackboard::document::decode(repo.state_text().as_bytes())
        .unwrap()
        .state;
    let lease = written.tasks[0].lease_expires.unwrap();
    assert!(
        lease > liza::blackboard::Timestamp::now(),
        "the record's lease is in state.yaml now"
    );
    // A heartbeat for a generation that is not the registered one is refused.
    assert_refused(
        &repo,
        &[],
        &["heartbeat", "coder-1", "--generation", "0000"],
        "stale agent generation",
    );
}

#[test]
fn a_takeover_stops_the_previous_owners_agent_process_group() {
    use std::os::unix::process::CommandExt;
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let generation = register(&repo, "coder-1");
    register(&repo, "coder-2");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let mut agent = std::process::Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .unwrap();
    // The supervisor's last heartbeat, long ago, named the agent's process group.
    let host = nix::unistd::gethostname().unwrap().into_string().unwrap();
    let past = liza::blackboard::Timestamp::now().plus_seconds(-300);
    let record = liza::blackboard::liveness::LiveRecord {
        generation,
        heartbeat: past,
        lease_expires: past,
        task_lease_expires: Some(past),
        review_lease_expires: None,
        host: Some(host),
        pgid: Some(i64::from(agent.id())),
        usage_limit_until: None,
        supervisor_pid: None,
        waiting: None,
        sandbox: None,
        sandbox_note: None,
        cli: None,
        pid_namespace: liza::blackboard::liveness::pid_namespace(),
        extra: Default::default(),
    };
    let id = liza::blackboard::AgentId::parse("coder-1").unwrap();
    liza::blackboard::liveness::write(&repo.liza_dir().join("live"), &id, &record).unwrap();
    expire_lease(&repo, "t-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-2"]));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = agent.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the old agent was not stopped"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(!status.success(), "stopped by a signal");
}

#[test]
fn a_failing_post_worktree_cmd_aborts_the_claim_cleanly() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    register(&repo, "coder-1");
    configure(&repo, |c| {
        c.post_worktree_cmd = Some(liza::blackboard::model::CommandSpec::Argv(vec![
            "false".into(),
        ]))
    });
    assert_refused(
        &repo,
        &[],
        &["claim-task", "t-1", "coder-1"],
        "post_worktree_cmd failed",
    );
    configure(&repo, |c| {
        c.post_worktree_cmd = Some(liza::blackboard::model::CommandSpec::Shell(
            "echo ready > .ready".into(),
        ))
    });
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    assert!(repo.path().join(".worktrees/t-1/.ready").exists());
}

#[test]
fn abandon_saves_committed_and_uncommitted_work_in_the_attic_before_removing_the_worktree() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    register(&repo, "coder-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let wt = repo.path().join(".worktrees/t-1");
    commit_in(&repo, &wt, "done.txt", "committed");
    std::fs::write(wt.join("wip.txt"), "not yet committed").unwrap();
    std::fs::remove_file(wt.join("specs/vision.md")).unwrap();
    assert_success(&repo.liza(&["abandon", "t-1", "--reason", "the goal changed"]));
    assert!(!wt.exists());
    assert!(!repo.git(&["worktree", "list"]).contains(".worktrees/t-1"));
    assert_eq!(
        repo.git(&["show", "liza/attic/t-1-1:done.txt"]),
        "committed"
    );
    assert_eq!(
        repo.git(&["show", "liza/attic/t-1-1:wip.txt"]),
        "not yet committed"
    );
    assert!(
        repo.git(&["log", "-1", "--format=%s", "liza/attic/t-1-1"])
            .starts_with("WIP: saved by liza before abandon")
    );
    assert!(
        repo.git(&["ls-tree", "-r", "--name-only", "liza/attic/t-1-1"])
            .lines()
            .all(|l| l != "specs/vision.md"),
        "deletions are saved too"
    );
    assert_eq!(status(&repo, "t-1"), "ABANDONED");
    assert_valid(&repo);
}

#[test]
fn add_tasks_is_all_or_nothing_and_finalize_keeps_the_spec_text() {
    let repo = Repo::initialized();
    let file = repo.path().join("tasks.yaml");
    std::fs::write(&file, format!("- {{id: a, desc: Implement a, spec: {SPEC}, done: report prints a totals key, scope: s}}\n- {{id: b, desc: Implement b, spec: {SPEC}, done: report prints a totals key, scope: s, depends: [nope]}}\n")).unwrap();
    assert_refused(
        &repo,
        &[],
        &["add-tasks", "--file", "tasks.yaml"],
        "depends on nope",
    );
    std::fs::write(&file, "- {id: a, desc: x, colour: red}\n").unwrap();
    assert_refused(
        &repo,
        &[],
        &["add-tasks", "--file", "tasks.yaml"],
        "tasks.yaml:1:3",
    );
    std::fs::write(&file, format!("- {{id: a, desc: Implement a, spec: {SPEC}, done: report prints a totals key, scope: s}}\n- {{id: b, desc: Implement b, spec: {SPEC}, done: report prints a totals key, scope: s, depends: [a]}}\n")).unwrap();
    assert_success(&repo.liza(&["add-tasks", "--file", "tasks.yaml"]));
    assert_success(&repo.liza(&["finalize-task", "--all"]));
    let blob = repo.git(&["hash-object", SPEC]).trim().to_owned();
    let state = model(&repo);
    assert_eq!(state["tasks"][0]["spec_hash"], blob.as_str());
    assert_eq!(
        std::fs::read_to_string(repo.liza_dir().join("specs").join(&blob)).unwrap(),
        std::fs::read_to_string(repo.path().join(SPEC)).unwrap()
    );
    assert_refused(&repo, &[], &["finalize-task", "--all"], "no DRAFT task");
    // The gates: a spec file that does not exist.
    assert_refused(
        &repo,
        &[],
        &[
            "add-task",
            "--id",
            "c",
            "--desc",
            "d",
            "--spec",
            "specs/missing.md",
            "--done",
            "report prints a totals key",
            "--scope",
            "s",
        ],
        "spec file specs/missing.md does not exist",
    );
}

#[test]
fn discoveries_anomalies_and_log_entries() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let c1 = register(&repo, "coder-1");
    let coder = as_agent("coder-1", &c1);
    let out = repo.liza_env(
        &coder,
        &[
            "--json",
            "discover",
            "--task",
            "t-1",
            "--desc",
            "the parser drops BOMs",
            "--severity",
            "high",
            "--urgency",
            "immediate",
        ],
    );
    assert_success(&out);
    assert_eq!(json(&out)["result"]["value"], "disc-1");
    assert_refused(
        &repo,
        &coder,
        &[
            "discover",
            "--task",
            "t-1",
            "--desc",
            "x",
            "--severity",
            "huge",
        ],
        "severity",
    );
    assert_refused(
        &repo,
        &coder,
        &[
            "anomaly",
            "--type",
            "retry_loop",
            "--task",
            "t-1",
            "--detail",
            "count=3",
        ],
        "error_pattern",
    );
    assert_success(&repo.liza_env(
        &coder,
        &[
            "anomaly",
            "--type",
            "retry_loop",
            "--task",
            "t-1",
            "--detail",
            "count=3",
            "--detail",
            "error_pattern=timeout",
        ],
    ));
    assert_success(&repo.liza_env(
        &coder,
        &[
            "log", "add", "--action", "test_run", "--detail", "3 passed", "--task", "t-1",
        ],
    ));
    assert_refused(
        &repo,
        &coder,
        &["discovery", "convert", "disc-1", "--task", "t-1"],
        "may not decide",
    );
    assert_success(&repo.liza(&["discovery", "convert", "disc-1", "--task", "t-1"]));
    assert_refused(
        &repo,
        &[],
        &["discovery", "reject", "disc-1", "--reason", "late"],
        "already converted",
    );
    let state = model(&repo);
    assert_eq!(state["discovered"][0]["converted_to_task"], "t-1");
    assert_eq!(state["anomalies"][0]["details"]["count"], 3);
    let log = repo.log();
    let entry = log.iter().find(|e| e["action"] == "test_run").unwrap();
    assert_eq!(
        (entry["agent"].as_str(), entry["task"].as_str()),
        (Some("coder-1"), Some("t-1"))
    );
    assert_valid(&repo);
}

#[test]
fn sprint_controls_and_the_transaction_that_completes_the_sprint() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let dir = repo.liza_dir();
    assert_success(&repo.liza(&["checkpoint", "--message", "look at the plan"]));
    assert!(
        std::fs::read_to_string(dir.join("CHECKPOINT"))
            .unwrap()
            .contains("look at the plan")
    );
    assert_eq!(model(&repo)["sprint"]["status"], "CHECKPOINT");
    assert_refused(&repo, &[], &["resume", "--decision", "MAYBE"], "not one of");
    assert_success(&repo.liza(&["resume", "--decision", "CONTINUE"]));
    assert!(!dir.join("CHECKPOINT").exists());
    assert_eq!(
        model(&repo)["sprint"]["retrospective"]["decisions"][0]["decision"],
        "CONTINUE"
    );
    assert_success(&repo.liza(&["pause"]));
    assert!(dir.join("PAUSE").exists());
    assert_success(&repo.liza(&["resume"]));
    assert!(!dir.join("PAUSE").exists());
    assert_refused(&repo, &[], &["sprint", "next"], "not COMPLETED");
    assert_success(&repo.liza(&["abandon", "t-1", "--reason", "replaced by a better plan"]));
    assert_eq!(
        model(&repo)["sprint"]["status"],
        "COMPLETED",
        "the last planned task became terminal"
    );
    assert!(repo.log().iter().any(|e| e["action"] == "sprint_completed"));
    assert_success(&repo.liza(&["sprint", "next"]));
    assert_eq!(model(&repo)["sprint"]["id"], "sprint-2");
    assert_success(&repo.liza(&["abort"]));
    assert!(dir.join("ABORT").exists());
    assert_eq!(model(&repo)["sprint"]["status"], "ABORTED");
    assert_success(&repo.liza(&["goal", "complete"]));
    assert_eq!(model(&repo)["goal"]["status"], "COMPLETED");
    assert_valid(&repo);
}

#[test]
fn a_review_of_a_task_whose_spec_changed_since_it_was_finalized_logs_spec_changed() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let c1 = register(&repo, "coder-1");
    register(&repo, "code-reviewer-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    commit_in(&repo, &repo.path().join(".worktrees/t-1"), "a.txt", "a");
    assert_success(&repo.liza_env(&as_agent("coder-1", &c1), &["submit-for-review", "t-1"]));
    std::fs::write(repo.path().join(SPEC), "# Vision\n\nNow with CSV too.\n").unwrap();
    let out = repo.liza(&["--json", "claim-review", "t-1", "code-reviewer-1"]);
    assert_success(&out);
    assert!(json(&out)["result"]["value"]["spec_changed"].is_array());
    let state = model(&repo);
    let anomaly = state["anomalies"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (anomaly["kind"].as_str(), anomaly["task"].as_str()),
        (Some("spec_changed"), Some("t-1"))
    );
    assert!(repo.log().iter().any(|e| e["action"] == "spec_changed"));
}

#[test]
fn validate_counts_heartbeats_in_effective_leases() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    register(&repo, "coder-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let agent = liza::blackboard::AgentId::parse("coder-1").unwrap();
    edit_state(&repo, "test_expire", |state, now| {
        state.agents.get_mut(&agent).unwrap().lease_expires = Some(now.plus_seconds(-600));
    });
    // The record its registration wrote is gone too: nothing renews the lease.
    std::fs::remove_dir_all(repo.liza_dir().join("live")).unwrap();
    let lease_warnings = |repo: &Repo| {
        let out = repo.liza(&["--json", "validate"]);
        json(&out)["result"]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["message"].as_str().unwrap_or("").contains("lease"))
            .count()
    };
    assert_eq!(
        lease_warnings(&repo),
        1,
        "a WORKING agent whose lease expired"
    );
    assert_success(&repo.liza(&["heartbeat", "coder-1"]));
    assert_eq!(lease_warnings(&repo), 0, "the liveness record renews it");
}

#[test]
fn handoff_then_a_person_releases_the_claim_with_the_work_saved() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let c1 = register(&repo, "coder-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    std::fs::write(repo.path().join(".worktrees/t-1/notes.txt"), "half done").unwrap();
    assert_success(&repo.liza_env(
        &as_agent("coder-1", &c1),
        &[
            "handoff",
            "t-1",
            "--summary",
            "parser half done",
            "--next-action",
            "finish the flag",
        ],
    ));
    let state = model(&repo);
    assert_eq!(state["agents"]["coder-1"]["status"], "HANDOFF");
    assert_eq!(state["handoff"]["t-1"]["next_action"], "finish the flag");
    assert_refused(
        &repo,
        &[],
        &["release-claim", "t-1", "--role", "both", "--reason", "x"],
        "is live",
    );
    assert_success(&repo.liza(&[
        "release-claim",
        "t-1",
        "--role",
        "both",
        "--force",
        "--reason",
        "coder stuck",
    ]));
    assert_eq!(status(&repo, "t-1"), "UNCLAIMED");
    assert_eq!(
        repo.git(&["show", "liza/attic/t-1-1:notes.txt"]),
        "half done"
    );
    assert_valid(&repo);
}

/// `clear-stale` decides each review claim on its own (specs/blackboard.md *Leases are
/// observed*): a reviewer that keeps heartbeating keeps its claim, one that went silent
/// loses it — a live claim does not stop the watch of the others.
#[test]
fn clear_stale_releases_the_silent_review_claim_and_keeps_the_live_one() {
    let repo = Repo::initialized();
    configure(&repo, |c| {
        c.lease_duration = Some(2);
        c.heartbeat_interval = Some(1);
    });
    for (task, coder) in [("t-1", "coder-1"), ("t-2", "coder-2")] {
        add(&repo, task, "");
        let generation = register(&repo, coder);
        assert_success(&repo.liza(&["claim-task", task, coder]));
        let wt = repo.path().join(".worktrees").join(task);
        commit_in(&repo, &wt, "f.txt", task);
        assert_success(&repo.liza_env(&as_agent(coder, &generation), &["submit-for-review", task]));
    }
    register(&repo, "code-reviewer-1");
    register(&repo, "code-reviewer-2");
    assert_success(&repo.liza(&["claim-review", "t-1", "code-reviewer-1"]));
    assert_success(&repo.liza(&["claim-review", "t-2", "code-reviewer-2"]));
    // code-reviewer-2 went silent long ago; code-reviewer-1 heartbeats all along.
    let t2 = liza::blackboard::TaskId::parse("t-2").unwrap();
    edit_state(&repo, "test_expire", |state, now| {
        state.task_mut(&t2).unwrap().review_lease_expires = Some(now.plus_seconds(-60));
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let beating = {
        let stop = stop.clone();
        let mut cmd = repo.command();
        cmd.args(["heartbeat", "code-reviewer-1"]);
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = cmd.output();
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
        })
    };
    let out = repo.liza(&["--json", "clear-stale"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    beating.join().unwrap();
    assert_success(&out);
    let task = |id: &str| {
        model(&repo)["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(task("t-1")["reviewing_by"], "code-reviewer-1", "{out:?}");
    assert!(
        task("t-2").get("reviewing_by").is_none_or(|r| r.is_null()),
        "{}",
        task("t-2")
    );
}
