//! Checkpoints end to end: the sprint summary a person reads, `resume --decision`, the
//! automatic checkpoint at the sprint deadline, and the watcher's continuous analysis
//! checkpointing a sprint that real supervisors are working on — which then wait, and
//! continue after `liza resume`.

use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;

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
    let mut watcher = repo
        .command()
        .args(["watch", "--interval", "0.2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    project.wait_until("the automatic checkpoint", Duration::from_secs(60), || {
        model(repo)["sprint"]["status"] == "CHECKPOINT"
    });
    let state = model(repo);
    assert_eq!(state["circuit_breaker"]["status"], "TRIGGERED");
    assert_eq!(
        state["circuit_breaker"]["current_trigger"][0]["pattern"],
        "retry_cluster"
    );
    assert!(repo.liza_dir().join("circuit_breaker_report.md").exists());
    assert!(summary(repo).contains("circuit breaker: retry_cluster"));

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
    let _ = watcher.kill();
    let _ = watcher.wait();
    let (code, output) = stop(coder, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, Some(143), "{output}");
}
