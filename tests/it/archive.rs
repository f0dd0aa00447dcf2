//! Terminal-task archiving (specs/blackboard.md *Growth*): `liza sprint next` moves the finished
//! sprint's terminal tasks to `.liza/archive/<sprint>.yaml`; the watcher moves those older
//! than `config.archive_after`. The records are kept in full, the index keeps dependencies
//! and id uniqueness working, and status and metrics keep counting them.

use crate::common::team::*;
use crate::common::*;

struct Team {
    repo: Repo,
    coder: String,
    reviewer: String,
}

impl Team {
    fn new() -> Team {
        let repo = Repo::initialized();
        let coder = register(&repo, "coder-1");
        let reviewer = register(&repo, "code-reviewer-1");
        Team {
            repo,
            coder,
            reviewer,
        }
    }

    /// Claim, commit, submit, approve and merge `task`.
    fn merge(&self, task: &str) {
        let repo = &self.repo;
        assert_success(&repo.liza(&["claim-task", task, "coder-1"]));
        let wt = repo.path().join(".worktrees").join(task);
        let head = commit_in(repo, &wt, &format!("{task}.txt"), "done\n");
        assert_success(&repo.liza_env(
            &as_agent("coder-1", &self.coder),
            &["submit-for-review", task, &head],
        ));
        assert_success(&repo.liza(&["claim-review", task, "code-reviewer-1"]));
        assert_success(&repo.liza_env(
            &as_agent("code-reviewer-1", &self.reviewer),
            &["submit-verdict", task, "approve", "--commit", &head],
        ));
        assert_success(&repo.liza(&["merge", task]));
    }
}

fn archive_file(repo: &Repo, sprint: &str) -> serde_json::Value {
    let bytes = std::fs::read(repo.liza_dir().join(format!("archive/{sprint}.yaml"))).unwrap();
    let archive: liza::blackboard::model::Archive =
        liza::blackboard::document::decode_record(&bytes).unwrap();
    serde_json::to_value(archive).unwrap()
}

fn live_ids(repo: &Repo) -> Vec<String> {
    model(repo)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn sprint_next_archives_the_finished_sprint_and_nothing_is_lost() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    add(repo, "t-2", "");
    team.merge("t-1");
    let merged_record = crate::common::supervision::task_of(repo, "t-1");
    assert_success(&repo.liza(&["abandon", "t-2", "--reason", "not needed"]));
    let metrics_before = model(repo)["sprint"]["metrics"].clone();
    assert_eq!(model(repo)["sprint"]["status"], "COMPLETED");

    assert_success(&repo.liza(&["sprint", "next"]));
    let state = model(repo);
    assert_eq!(state["sprint"]["id"], "sprint-2");
    assert!(live_ids(repo).is_empty(), "{:?}", live_ids(repo));
    assert_eq!(state["archived"]["t-1"]["status"], "MERGED");
    assert_eq!(state["archived"]["t-1"]["sprint"], "sprint-1");
    assert_eq!(state["archived"]["t-2"]["status"], "ABANDONED");
    // The full records, byte for byte as they were in state.yaml.
    let archive = archive_file(repo, "sprint-1");
    assert_eq!(archive["sprint"], "sprint-1");
    assert_eq!(archive["tasks"][0], merged_record);
    assert_eq!(archive["tasks"].as_array().unwrap().len(), 2);
    assert!(
        repo.log().iter().any(
            |e| e["action"] == "archived" && e["detail"].as_str().unwrap().contains("t-1, t-2")
        )
    );
    assert_success(&repo.liza(&["validate"]));
    assert!(
        metrics_before["tasks_done"] == 2,
        "the finished sprint counted both: {metrics_before}"
    );

    // The index keeps dependencies and ids working.
    add(repo, "t-3", "t-1");
    assert_success(&repo.liza(&["claim-task", "t-3", "coder-1"]));
    let out = repo.liza(&[
        "add-task", "--id", "t-1", "--desc", "again", "--spec", SPEC, "--done", "d", "--scope", "s",
    ]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("t-1"), "{}", stderr(&out));
    let show = repo.liza(&["show", "t-1"]);
    assert_success(&show);
    assert!(stdout(&show).contains(".liza/archive/sprint-1.yaml"));
}

#[test]
fn the_watcher_archives_old_terminal_tasks_and_the_sprint_keeps_counting_them() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    add(repo, "t-2", "");
    add(repo, "t-3", "");
    team.merge("t-1");
    assert_success(&repo.liza(&["abandon", "t-2", "--reason", "not needed"]));
    configure(repo, |c| c.archive_after = Some(3600));
    assert_success(&repo.liza(&["watch", "--cycles", "1", "--interval", "0.05"]));
    assert_eq!(live_ids(repo), ["t-1", "t-2", "t-3"], "not old enough yet");
    let before = model(repo)["sprint"]["metrics"].clone();
    let status_before =
        json(&repo.liza(&["--json", "status"]))["result"]["sprint"]["counts"].clone();

    edit_state(repo, "test_age", |s, now| {
        for id in ["t-1", "t-2"] {
            let t = s
                .task_mut(&liza::blackboard::TaskId::parse(id).unwrap())
                .unwrap();
            t.status_changed_at = Some(now.plus_seconds(-7200));
        }
    });
    assert_success(&repo.liza(&["watch", "--cycles", "1", "--interval", "0.05"]));
    assert_eq!(live_ids(repo), ["t-3"]);
    let state = model(repo);
    assert_eq!(state["archived"]["t-1"]["sprint"], "sprint-1");
    assert_eq!(
        archive_file(repo, "sprint-1")["tasks"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Metrics and status still count the archived tasks (running totals).
    let after = &state["sprint"]["metrics"];
    for key in [
        "tasks_done",
        "iterations_total",
        "review_verdict_approvals",
        "task_submitted_for_review_count",
    ] {
        assert_eq!(after[key], before[key], "{key}: {before} vs {after}");
    }
    assert!(
        repo.state_text()
            .contains("    archived:\n      tasks: 2\n"),
        "{}",
        repo.state_text()
    );
    let status = json(&repo.liza(&["--json", "status"]));
    assert_eq!(status["result"]["sprint"]["counts"], status_before);
    assert_eq!(
        status["result"]["operations"]["tasks_by_status"]["MERGED"],
        1
    );
    assert_eq!(status["result"]["sprint"]["planned_terminal"], 2);
    // Finishing the last task completes the sprint with the archived ones counted.
    assert_success(&repo.liza(&["abandon", "t-3", "--reason", "done elsewhere"]));
    let state = model(repo);
    assert_eq!(state["sprint"]["status"], "COMPLETED");
    assert_eq!(state["sprint"]["metrics"]["tasks_done"], 3);
}

#[test]
fn an_unreadable_archive_is_never_overwritten_and_the_tasks_stay_live() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    add(repo, "t-2", "");
    assert_success(&repo.liza(&["abandon", "t-1", "--reason", "not needed"]));
    let dir = repo.liza_dir().join("archive");
    std::fs::create_dir_all(&dir).unwrap();
    let broken = b"sprint: sprint-1\ntasks: [ {id: \n".to_vec();
    std::fs::write(dir.join("sprint-1.yaml"), &broken).unwrap();
    configure(repo, |c| c.archive_after = Some(1));
    edit_state(repo, "test_age", |s, now| {
        let t = s
            .task_mut(&liza::blackboard::TaskId::parse("t-1").unwrap())
            .unwrap();
        t.status_changed_at = Some(now.plus_seconds(-60));
    });
    let out = repo.liza(&["watch", "--cycles", "1", "--interval", "0.05", "-v"]);
    assert_success(&out);
    assert_eq!(std::fs::read(dir.join("sprint-1.yaml")).unwrap(), broken);
    assert_eq!(live_ids(repo), ["t-1", "t-2"]);
    assert!(
        stderr(&out).contains("sprint-1.yaml") && stderr(&out).contains("cannot be read"),
        "{}",
        stderr(&out)
    );
}
