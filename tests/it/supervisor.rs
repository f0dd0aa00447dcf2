//! `liza-agent` end to end: startup failures with their exit codes, and whole sprints run
//! by real supervisor processes driving the fake agent CLI (tests/fake-agent/agent.sh,
//! registered as a user backend).

use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;

const GUARD: Duration = Duration::from_secs(60);

#[test]
fn startup_failures_say_what_is_wrong_and_exit_with_the_documented_codes() {
    let project = AgentProject::new();
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], i32, &'a str);
    let cases: [Case; 6] = [
        (&[], &["coder"], 1, "LIZA_AGENT_ID is not set"),
        (
            &[("LIZA_AGENT_ID", "coder")],
            &["coder"],
            1,
            "lacks the number",
        ),
        (
            &[("LIZA_AGENT_ID", "coder1")],
            &["coder"],
            1,
            "coder-<number>",
        ),
        (
            &[("LIZA_AGENT_ID", "my-coder-1")],
            &["coder"],
            1,
            "must be coder-<number>",
        ),
        (
            &[("LIZA_AGENT_ID", "planner-1")],
            &["coder"],
            1,
            "names a planner",
        ),
        (
            &[("LIZA_AGENT_ID", "coder-1")],
            &["coder", "--cli", "claude-not-installed"],
            1,
            "unknown agent backend",
        ),
    ];
    for (env, args, code, says) in cases {
        let before = project.repo.files();
        let out = project.agent_command(env, args);
        assert_exit(&out, code);
        assert!(
            stderr(&out).contains(says),
            "{args:?} {env:?}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("hint:"), "{}", stderr(&out));
        assert_eq!(
            before,
            project.repo.files(),
            "a failed start changes nothing"
        );
    }

    // A backend whose program is missing: exit 5, before registering.
    configure(&project.repo, |c| {
        let mut tools = c.agent_tools.clone().unwrap();
        tools.0[0].1.executable = Some("/nonexistent/agent".into());
        c.agent_tools = Some(tools);
    });
    let before = project.repo.files();
    let out = project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder"]);
    assert_exit(&out, 5);
    assert!(stderr(&out).contains("not on PATH"), "{}", stderr(&out));
    assert_eq!(before, project.repo.files());

    // A live registration of the same id: COLLISION, exit 1, the live entry untouched.
    let project = AgentProject::new();
    let generation = register(&project.repo, "coder-1");
    let before = project.repo.files();
    let out = project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("COLLISION: coder-1 already registered"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, project.repo.files());
    assert!(project.repo.state_text().contains(&generation));

    // No blackboard: exit 4 with `liza init` suggested.
    let bare = Repo::new();
    let out = std::process::Command::new(LIZA_AGENT)
        .current_dir(bare.path())
        .env("LIZA_AGENT_ID", "coder-1")
        .arg("coder")
        .output()
        .unwrap();
    assert_exit(&out, 4);
    assert!(stderr(&out).contains("liza init"), "{}", stderr(&out));
}

#[test]
fn a_sprint_runs_from_planning_to_goal_complete_with_real_supervisors() {
    whole_sprint(&AgentProject::new());
}

#[test]
fn a_sprint_runs_from_planning_to_goal_complete_on_a_blackboard_in_etcd() {
    if let Some(project) = AgentProject::on(crate::common::board::Kind::Etcd) {
        whole_sprint(&project);
    }
}

fn whole_sprint(project: &AgentProject) {
    project.plan_four_tasks_one_rejected();
    // t-3 is blocked, and the planner replaces it with t-3a.
    project.step(
        "planner",
        "BLOCKED_TASKS",
        "liza add-task --id t-3a --desc 'Implement t-3 as plain text' --spec specs/vision.md \
         --done 't-3a.txt holds the text' --scope t-3a.txt --supersedes t-3\n\
         liza rescope t-3 --into t-3a --reason 'the format was never specified; plain text it is'\n\
         liza finalize-task t-3a\n",
    );
    project.step(
        "coder",
        "t-3",
        "block 'the output format is unspecified' 'JSON or plain text?'\n",
    );

    let supervisors = project.team();
    for (name, out) in project.wait_all(supervisors, Duration::from_secs(180)) {
        assert!(
            out.status.success(),
            "{name} exited {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let state = model(&project.repo);
    assert_eq!(state["goal"]["status"], "COMPLETED");
    assert_eq!(state["sprint"]["status"], "COMPLETED");
    assert_eq!(
        statuses(&project.repo),
        [
            ("t-1", "MERGED"),
            ("t-2", "MERGED"),
            ("t-3", "SUPERSEDED"),
            ("t-3a", "MERGED"),
            ("t-4", "MERGED"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(
        project.repo.git(&["show", "integration:t-2.txt"]),
        "the text of t-2\n"
    );
    // Every revision valid (the journal keeps each; file checks belong to the present).
    let mut revisions = 0;
    for revision in 1..=project.repo.revision() {
        let out = project
            .repo
            .liza(&["history", "--rev", &revision.to_string()]);
        if !out.status.success() {
            continue; // older than the journal keeps
        }
        let now = liza::blackboard::Timestamp::now();
        let mut env = liza::blackboard::validate::ValidationEnv::new(None, now);
        let checked = liza::blackboard::document::check(&out.stdout, &mut env);
        assert!(!checked.has_errors(), "revision {revision} is invalid");
        revisions += 1;
    }
    assert!(revisions > 30, "{revisions} revisions");
    assert_success(&project.repo.liza(&["validate"]));
    // Merges by the reviewer's supervisor move integration during other agents' runs:
    // liza's own merges are no role-boundary violation.
    let violations: Vec<_> = project
        .repo
        .log()
        .into_iter()
        .filter(|e| e["action"] == "role_boundary_violation")
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");

    // Exactly the runs the scenario needs: no re-spawn loops.
    let runs = project.runs();
    let count = |role: &str| {
        runs.iter()
            .filter(|r| r.starts_with(&format!("{role} ")))
            .count()
    };
    assert_eq!(count("planner"), 3, "{runs:#?}");
    assert_eq!(count("coder"), 6, "{runs:#?}");
    assert_eq!(count("code-reviewer"), 5, "{runs:#?}");
    assert!(
        state["agents"].as_object().is_none_or(|a| a.is_empty()),
        "every supervisor unregistered"
    );
}

#[test]
fn the_review_prompt_shows_the_spec_change_and_the_on_review_checks() {
    use crate::common::supervision::task_of;
    let project = AgentProject::new();
    configure(&project.repo, |c| {
        c.checks = Some(vec![liza::blackboard::model::Check {
            name: "smoke".into(),
            run: liza::blackboard::model::CommandSpec::Argv(vec![
                "sh".into(),
                "-c".into(),
                "echo check-output-42".into(),
            ]),
            timeout: Some(30),
            on_review: Some(true),
            on_merge: None,
            extra: Default::default(),
        }]);
    });
    add(&project.repo, "t-1", "");
    project.step("coder", "default", "work t-1.txt done\nsubmit\n");
    project.step(
        "code-reviewer",
        "default",
        "printf '%s\\n' \"$prompt\" > \"$FAKE_AGENT_DIR/review-prompt.md\"\napprove\n",
    );
    let coder = project.supervisor("coder", "coder-1");
    let guard = Duration::from_secs(60);
    project.wait_until("the submission", guard, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    std::fs::write(
        project.repo.path().join("specs/vision.md"),
        "# Vision\n\nA report CLI with --json and --csv.\n",
    )
    .unwrap();
    let reviewer = project.supervisor("code-reviewer", "code-reviewer-1");
    project.wait_until("the approval", guard, || {
        task_of(&project.repo, "t-1")["status"] == "APPROVED"
            || task_of(&project.repo, "t-1")["status"] == "MERGED"
    });
    let prompt = std::fs::read_to_string(project.scenario.path().join("review-prompt.md")).unwrap();
    assert!(prompt.contains("SPEC CHANGED"), "{prompt}");
    assert!(
        prompt.contains("+ A report CLI with --json and --csv."),
        "{prompt}"
    );
    assert!(
        prompt.contains("- smoke: passed") && prompt.contains("check-output-42"),
        "{prompt}"
    );
    assert!(prompt.contains("TASK: t-1"), "{prompt}");
    // The only task merged: the sprint completed and both supervisors leave by themselves.
    for (name, out) in project.wait_all(vec![reviewer, coder], guard) {
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// An idle supervisor says why it has nothing to do — once, and again when it changes —
/// naming what holds each task (specs/supervisor.md *Main loop*).
#[test]
fn an_idle_supervisor_says_what_holds_each_task() {
    let project = AgentProject::new();
    let repo = &project.repo;
    let draft = |id: &str| {
        assert_success(&repo.liza(&[
            "add-task",
            "--id",
            id,
            "--desc",
            "a draft",
            "--spec",
            SPEC,
            "--done",
            "the draft is approved",
            "--scope",
            "x",
        ]));
    };
    draft("t-1");
    let coder = project.supervisor("coder", "coder-1");
    let first =
        "coder-1: no task to work on: t-1 is DRAFT (approve the plan: `liza finalize-task t-1`)\n";
    project.wait_until("the idle coder says why", GUARD, || {
        coder.output_so_far().contains(first)
    });
    draft("t-2");
    let second = "t-1 is DRAFT (approve the plan: `liza finalize-task t-1`); t-2 is DRAFT";
    project.wait_until("and again on change", GUARD, || {
        coder.output_so_far().contains(second)
    });
    let (_, out) = stop(coder, nix::sys::signal::Signal::SIGINT);
    assert_eq!(out.matches(first).count(), 1, "said once: {out}");
}
