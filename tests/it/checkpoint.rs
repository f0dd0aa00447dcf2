//! Checkpoints end to end: the sprint summary a person reads, `resume --decision`, the
//! automatic checkpoint at the sprint deadline, and the watcher's continuous analysis
//! checkpointing a sprint that real supervisors are working on — which then wait, and
//! continue after `liza resume`.

use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;

const GUARD: Duration = Duration::from_secs(60);

fn summary(repo: &Repo) -> String {
    std::fs::read_to_string(repo.liza_dir().join("sprint_summary.md")).unwrap()
}

#[test]
fn a_checkpoint_writes_a_summary_to_decide_on_and_resume_records_the_decision() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    add(&repo, "t-2", "");
    let coder = register(&repo, "coder-1");
    let reviewer = register(&repo, "code-reviewer-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    assert_success(&repo.liza_env(
        &as_agent("coder-1", &coder),
        &[
            "block",
            "t-1",
            "--reason",
            "the output format is unspecified",
            "--question",
            "JSON or CSV?",
            "--attempted",
            "read the spec twice",
        ],
    ));
    assert_success(&repo.liza(&["claim-task", "t-2", "coder-1"]));
    let wt = repo.path().join(".worktrees/t-2");
    let head = commit_in(&repo, &wt, "t-2.txt", "done\n");
    assert_success(&repo.liza_env(
        &as_agent("coder-1", &coder),
        &["submit-for-review", "t-2", &head],
    ));
    assert_success(&repo.liza(&["claim-review", "t-2", "code-reviewer-1"]));
    assert_success(&repo.liza_env(
        &as_agent("code-reviewer-1", &reviewer),
        &["submit-verdict", "t-2", "approve", "--commit", &head],
    ));
    retry_loop(&repo, "t-2", "E0308");

    assert_success(&repo.liza(&["checkpoint", "--message", "look at t-1"]));
    let text = summary(&repo);
    for expected in [
        "# Sprint sprint-1 — checkpoint",
        "Checkpoint at ",
        ": look at t-1",
        "- BLOCKED: 1",
        "- APPROVED: 1",
        "| t-1 | BLOCKED |",
        "| t-2 | APPROVED |",
        "### t-1 (BLOCKED)",
        "the output format is unspecified",
        "- Q: JSON or CSV?",
        "- tried: read the spec twice",
        "- retry_loop on t-2 by human",
        "E0308",
        "- approvals: 1",
        "## Review checklist",
        "- [ ] Answer the questions of the 1 blocked task(s)",
        "`liza resume --decision D`",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from\n{text}");
    }
    // Per-task durations come from the history: t-2 spent time in work and in review.
    let row = text.lines().find(|l| l.starts_with("| t-2 |")).unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // | task | status | waited | in work | in review | total | runs | review cycles |
    assert_eq!(cells.len(), 10, "{row}");
    assert!(cells[4].ends_with('s') && cells[5].ends_with('s'), "{row}");
    assert_eq!(cells[8], "0", "{row}");

    // A refused checkpoint changes nothing, the summary included.
    let before = repo.files();
    let summary_before = summary(&repo);
    let out = repo.liza(&["checkpoint"]);
    assert_exit(&out, 1);
    assert_eq!(before, repo.files());
    assert_eq!(summary_before, summary(&repo));

    assert_success(&repo.liza(&["resume", "--decision", "ADJUST_SPECS"]));
    let state = model(&repo);
    assert_eq!(state["sprint"]["status"], "IN_PROGRESS");
    let decision = &state["sprint"]["retrospective"]["decisions"][0];
    assert_eq!(decision["decision"], "ADJUST_SPECS");
    assert_eq!(decision["by"], "human");
    assert!(!repo.liza_dir().join("CHECKPOINT").exists());
}

#[test]
fn the_watcher_checkpoints_the_sprint_at_its_deadline() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    edit_state(&repo, "test_deadline", |s, now| {
        s.sprint.timeline.as_mut().unwrap().deadline = Some(now.plus_seconds(3600));
    });
    assert_success(&repo.liza(&["watch", "--cycles", "2", "--interval", "0.05"]));
    assert_eq!(model(&repo)["sprint"]["status"], "IN_PROGRESS", "not yet");
    edit_state(&repo, "test_deadline", |s, now| {
        s.sprint.timeline.as_mut().unwrap().deadline = Some(now.plus_seconds(-5));
    });
    let out = repo.liza(&["watch", "--cycles", "2", "--interval", "0.05"]);
    assert_success(&out);
    let state = model(&repo);
    assert_eq!(state["sprint"]["status"], "CHECKPOINT");
    assert!(repo.liza_dir().join("CHECKPOINT").exists());
    assert!(
        summary(&repo).contains("the sprint deadline"),
        "{}",
        summary(&repo)
    );
    let entry = repo
        .log()
        .into_iter()
        .rev()
        .find(|e| e["action"] == "checkpoint")
        .unwrap();
    assert_eq!(entry["agent"], "liza");
    // Resumed past the deadline, the sprint runs on: one stop per deadline.
    assert_success(&repo.liza(&["resume", "--decision", "CONTINUE"]));
    assert_success(&repo.liza(&["watch", "--cycles", "2", "--interval", "0.05"]));
    assert_eq!(model(&repo)["sprint"]["status"], "IN_PROGRESS");
    // A new deadline that passes stops it again.
    edit_state(&repo, "test_deadline", |s, now| {
        s.sprint.timeline.as_mut().unwrap().deadline = Some(now.plus_seconds(-1));
    });
    assert_success(&repo.liza(&["watch", "--cycles", "2", "--interval", "0.05"]));
    assert_eq!(model(&repo)["sprint"]["status"], "CHECKPOINT");
    let stops = repo
        .log()
        .iter()
        .filter(|e| e["action"] == "checkpoint")
        .count();
    assert_eq!(stops, 2);
}

#[test]
fn the_watchers_analysis_checkpoints_running_supervisors_and_resume_continues() {
    let project = AgentProject::new();
    let repo = &project.repo;
    add(repo, "t-1", "");
    add(repo, "t-2", "");
    for t in ["t-1", "t-2", "t-1"] {
        retry_loop(repo, t, "E0308 mismatched types");
    }
    project.step(
        "coder",
        "default",
        "work \"$key.txt\" \"the text of $key\"\nsubmit\n",
    );
    let watcher = Reaped(
        repo.command()
            .args(["watch", "--interval", "0.2"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The summary is written once the checkpoint is committed, so after the status.
    project.wait_until("the automatic checkpoint", Duration::from_secs(60), || {
        model(repo)["sprint"]["status"] == "CHECKPOINT"
            && repo.liza_dir().join("sprint_summary.md").exists()
    });
    let state = model(repo);
    assert_eq!(state["circuit_breaker"]["status"], "TRIGGERED");
    assert_eq!(
        state["circuit_breaker"]["current_trigger"][0]["pattern"],
        "retry_cluster"
    );
    assert!(repo.liza_dir().join("circuit_breaker_report.md").exists());
    assert!(summary(repo).contains("circuit breaker: retry_cluster"));
    // The analysis is liza's own act, logged as liza, never as a person.
    let analysis = repo
        .log()
        .into_iter()
        .find(|e| e["action"] == "circuit_breaker_check")
        .unwrap();
    assert_eq!(analysis["agent"], "liza", "{analysis}");

    // A coder started now registers and waits: no run while the sprint is at checkpoint.
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until(
        "coder-1 waiting on the checkpoint",
        Duration::from_secs(60),
        || waiting_of(repo, "coder-1").as_deref() == Some("checkpoint"),
    );
    assert!(project.runs().is_empty(), "{:?}", project.runs());

    assert_success(&repo.liza(&["resume", "--decision", "CONTINUE"]));
    project.wait_until("a task submitted", Duration::from_secs(60), || {
        ["t-1", "t-2"]
            .iter()
            .any(|t| task_of(repo, t)["status"] == "READY_FOR_REVIEW")
    });
    // The unchanged analysis does not checkpoint the resumed sprint again.
    let state = model(repo);
    assert_eq!(state["sprint"]["status"], "IN_PROGRESS");
    assert_eq!(
        state["sprint"]["retrospective"]["decisions"][0]["decision"],
        "CONTINUE"
    );
    let checkpoints = repo
        .log()
        .iter()
        .filter(|e| e["action"] == "checkpoint")
        .count();
    assert_eq!(checkpoints, 1);
    drop(watcher);
    let (code, output) = stop(coder, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, Some(143), "{output}");
}

/// The states that hold the team, at the top of `liza status` with the command that
/// continues (`attention` in `--json`).
fn attention(repo: &Repo) -> Vec<(String, String)> {
    let out = repo.liza(&["--json", "status"]);
    assert_success(&out);
    json(&out)["result"]["attention"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["state"].as_str().unwrap().to_owned(),
                a["next"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// An abort is seen at the top of `status` and undone by `liza resume`: the flag goes
/// with it, and supervisors started after it work instead of exiting "the sprint is
/// over" (specs/lifecycle.md *Sprint and goal*).
#[test]
fn an_aborted_sprint_is_resumed_and_agents_work_again() {
    let project = AgentProject::new();
    let repo = &project.repo;
    add(repo, "t-1", "");
    project.step("coder", "t-1", "work t-1.txt done\nsubmit\n");
    assert_success(&repo.liza(&["abort"]));
    let shown = attention(repo);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!(shown[0].0, "ABORTED");
    assert!(shown[0].1.contains("`liza resume`"), "{shown:?}");
    assert!(stdout(&repo.liza(&["status"])).starts_with(">> ABORTED — "));
    let resumed = repo.liza(&["resume"]);
    assert_success(&resumed);
    assert_eq!(model(repo)["sprint"]["status"], "IN_PROGRESS");
    assert!(!repo.liza_dir().join("ABORT").exists());
    assert!(attention(repo).is_empty(), "{:?}", attention(repo));
    assert!(
        repo.log()
            .iter()
            .any(|e| e["action"] == "resumed" && e["detail"] == "reopened after abort")
    );
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("t-1 submitted", GUARD, || {
        task_of(repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    let (_, _) = stop(coder, nix::sys::signal::Signal::SIGINT);
}

/// A pause is seen at the top whatever the sprint's state, is lifted by `resume` on a
/// completed sprint (the dashboard's `p` then `r`), and a pause still raised when the
/// next sprint opens is said; the next sprint also follows an aborted one, its abort
/// lowered.
#[test]
fn a_pause_is_seen_and_lifted_and_the_next_sprint_follows_an_abort() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    assert_success(&repo.liza(&["abandon", "t-1", "--reason", "not needed"]));
    assert_eq!(model(&repo)["sprint"]["status"], "COMPLETED");
    assert_success(&repo.liza(&["pause"]));
    let states: Vec<String> = attention(&repo).into_iter().map(|a| a.0).collect();
    assert_eq!(states, ["PAUSED", "SPRINT COMPLETED"]);
    assert_success(&repo.liza(&["resume"]));
    assert!(!repo.liza_dir().join("PAUSE").exists());
    // Nothing left to resume: refused, with what to do instead.
    let out = repo.liza(&["resume"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("liza sprint next"),
        "{}",
        stderr(&out)
    );
    // Paused into the next sprint: said.
    assert_success(&repo.liza(&["pause"]));
    let next = repo.liza(&["sprint", "next"]);
    assert_success(&next);
    assert!(stderr(&next).contains("is paused"), "{}", stderr(&next));
    assert_success(&repo.liza(&["resume"]));
    // The next sprint after an aborted one, the abort lowered.
    assert_success(&repo.liza(&["abort"]));
    assert_success(&repo.liza(&["sprint", "next"]));
    assert_eq!(model(&repo)["sprint"]["id"], "sprint-3");
    assert_eq!(model(&repo)["sprint"]["status"], "IN_PROGRESS");
    assert!(!repo.liza_dir().join("ABORT").exists());
    assert!(attention(&repo).is_empty(), "{:?}", attention(&repo));
}

/// A met goal is followed by the next one on the same blackboard: `goal next` refused
/// (files byte-identical) while the goal runs; after `goal complete` the status says what
/// continues, and `goal next` starts goal-2 with its first sprint, the finished sprint's
/// tasks archived and the previous goal kept under `past_goals`.
#[test]
fn the_next_goal_starts_on_the_same_blackboard() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let before = repo.files();
    let out = repo.liza(&["goal", "next", "Add CSV export"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("liza goal complete"),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.files(), before, "a refusal changes nothing");
    assert_success(&repo.liza(&["abandon", "t-1", "--reason", "not needed"]));
    assert_success(&repo.liza(&["goal", "complete"]));
    let shown = attention(&repo);
    assert_eq!(shown[0].0, "GOAL COMPLETED");
    assert!(shown[0].1.contains("liza goal next"), "{shown:?}");
    let out = repo.liza(&["goal", "next", "Add CSV export"]);
    assert_success(&out);
    assert!(
        stdout(&out).contains("goal goal-2 started"),
        "{}",
        stdout(&out)
    );
    let state = model(&repo);
    assert_eq!(state["goal"]["id"], "goal-2");
    assert_eq!(state["goal"]["status"], "IN_PROGRESS");
    assert_eq!(state["goal"]["spec_ref"], "specs/vision.md");
    assert_eq!(state["sprint"]["id"], "sprint-2");
    assert_eq!(state["sprint"]["goal_ref"], "goal-2");
    let text = repo.state_text();
    let past = &text[text.find("past_goals:").expect("past_goals kept")..];
    assert!(
        past.contains("id: goal-1") && past.contains("status: COMPLETED"),
        "{past}"
    );
    assert_eq!(state["archived"]["t-1"]["status"], "ABANDONED");
    assert!(attention(&repo).is_empty(), "{:?}", attention(&repo));
    assert!(repo.log().iter().any(|e| e["action"] == "goal_started"));
    assert_success(&repo.liza(&["validate"]));
    add(&repo, "t-2", "");
    assert_eq!(task_of(&repo, "t-2")["status"], "UNCLAIMED");
}
