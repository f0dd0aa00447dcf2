//! The merge queue end to end (specs/git.md *Merge*): approved tasks queue on the
//! blackboard; a merger checks them in batches, side by side, bisects a failing batch down
//! to the tasks that break it, takes a conflict out alone, sends a branch moved after its
//! approval back to review, verifies every change is at the tip it publishes, and leaves
//! integration before or after a whole batch when it is killed at any stage. The real
//! `liza` binary, real repositories, the integration script run sandboxed.

use crate::common::team::*;
use crate::common::*;
use crate::merge::Team;
use serde_json::Value;

/// Fails, saying where, when a file of the candidate says BROKEN.
const FAILS_ON_BROKEN: &str = "#!/bin/sh\nif grep -rl BROKEN --include='*.txt' . ; then echo 'found BROKEN'; exit 1; fi\necho all good\n";

fn queue_of(team: &Team) -> Vec<String> {
    let out = team.repo.liza(&["--json", "status"]);
    assert_success(&out);
    json(&out)["result"]["merge_queue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["task"].as_str().unwrap().to_owned())
        .collect()
}

fn check_logs(team: &Team) -> Vec<String> {
    let mut logs: Vec<String> = std::fs::read_dir(team.repo.liza_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("integration-test-"))
        .collect();
    logs.sort();
    logs
}

/// `liza --json merge` (the whole queue): the exit code and the report.
fn merge_all(team: &Team, env: &[(&str, &str)]) -> (i32, Value) {
    let out = team.repo.liza_env(env, &["--json", "merge"]);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("merge: {}{}", stdout(&out), stderr(&out)));
    (out.status.code().unwrap_or(-1), v)
}

fn files_at(team: &Team, rev: &str) -> Vec<String> {
    team.repo
        .git(&["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn status(team: &Team, task: &str) -> String {
    team.task(task)["status"].as_str().unwrap().to_owned()
}

pub(crate) fn set_batches(team: &Team, max_batch: i64, parallel: i64) {
    configure(&team.repo, |c| {
        c.merge = Some(liza::blackboard::model::MergeConfig {
            max_batch: Some(max_batch),
            parallel_batches: Some(parallel),
            extra: Default::default(),
        });
    });
}

#[test]
fn approved_tasks_queue_and_one_batch_checked_once_merges_them_each_with_its_own_commit() {
    let team = Team::with_coders(Some(FAILS_ON_BROKEN), 4);
    let tip = team.integration();
    for n in 1..=4 {
        let (task, coder) = (format!("t-{n}"), format!("coder-{n}"));
        team.approved(&task, &coder, &[(&format!("f{n}.txt"), "fine\n")]);
    }
    // The queue, in approval order, in status (text and JSON) and show.
    assert_eq!(queue_of(&team), ["t-1", "t-2", "t-3", "t-4"]);
    let text = stdout(&team.repo.liza(&["status"]));
    assert!(
        text.contains("Merge queue (4)") && text.contains("  2. t-2"),
        "{text}"
    );
    let shown = stdout(&team.repo.liza(&["show", "t-3"]));
    assert!(shown.contains("# merge queue: 3 of 4"), "{shown}");
    assert_eq!(
        model(&team.repo)["merge_queue"],
        serde_json::json!(["t-1", "t-2", "t-3", "t-4"])
    );

    let (code, report) = merge_all(&team, &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(check_logs(&team).len(), 1, "one batch, checked once");
    let mut commits = Vec::new();
    for n in 1..=4 {
        let task = format!("t-{n}");
        assert_eq!(status(&team, &task), "MERGED");
        let commit = team.task(&task)["merge_commit"]
            .as_str()
            .unwrap()
            .to_owned();
        // Each task's own merge commit is on integration.
        team.repo
            .git(&["merge-base", "--is-ancestor", &commit, "integration"]);
        commits.push(commit);
        assert_eq!(team.log_entry("merged", &task)["batch"], 4);
    }
    commits.dedup();
    assert_eq!(commits.len(), 4, "every task has its own merge commit");
    assert_eq!(team.integration(), commits[3]);
    let parents = team
        .repo
        .git(&["rev-list", "--first-parent", &format!("{tip}..integration")]);
    assert_eq!(parents.lines().count(), 4, "{parents}");
    assert!(queue_of(&team).is_empty());
    assert!(model(&team.repo).get("merge_queue").is_none());
    assert_success(&team.repo.liza(&["validate"]));
}

#[test]
fn bisection_finds_two_failing_tasks_of_one_batch_and_the_speculation_on_it_is_built_again() {
    let team = Team::with_coders(Some(FAILS_ON_BROKEN), 6);
    set_batches(&team, 4, 2);
    for n in 1..=6 {
        let text = if n == 2 || n == 3 {
            "BROKEN\n"
        } else {
            "fine\n"
        };
        let (task, coder) = (format!("t-{n}"), format!("coder-{n}"));
        team.approved(&task, &coder, &[(&format!("f{n}.txt"), text)]);
    }
    let (code, report) = merge_all(&team, &[]);
    assert_eq!(code, 1, "two tasks were not merged: {report}");
    for bad in ["t-2", "t-3"] {
        let task = team.task(bad);
        assert_eq!(task["status"], "INTEGRATION_FAILED", "{bad}");
        assert_eq!(task["integration_failure"]["kind"], "tests");
        // Its own check, alone, says why.
        let log = task["integration_failure"]["log"].as_str().unwrap();
        assert!(
            log.starts_with(&format!(".liza/integration-test-{bad}-")),
            "{log}"
        );
        let text = std::fs::read_to_string(team.repo.path().join(log)).unwrap();
        assert!(text.contains(&format!("f{}.txt", &bad[2..])), "{text}");
        assert!(
            team.worktree(bad).exists(),
            "the worktree is kept for the fix"
        );
    }
    for good in ["t-1", "t-4", "t-5", "t-6"] {
        assert_eq!(status(&team, good), "MERGED", "{good}");
    }
    let files = files_at(&team, "integration");
    for n in [1, 4, 5, 6] {
        assert!(files.contains(&format!("f{n}.txt")), "{files:?}");
    }
    assert!(!files.contains(&"f2.txt".to_owned()) && !files.contains(&"f3.txt".to_owned()));
    // t-5 was built on the failing batch first, then again on what was published.
    let candidates = team
        .repo
        .log()
        .into_iter()
        .filter(|e| e["action"] == "merge_candidate" && e["task"] == "t-5")
        .count();
    assert!(candidates >= 2, "t-5 built {candidates} time(s)");
    assert_success(&team.repo.liza(&["validate"]));
}

#[test]
fn a_conflicting_task_is_taken_out_of_its_batch_alone() {
    let team = Team::new(None);
    team.approved("t-1", "coder-1", &[("a.txt", "one\n")]);
    team.approved("t-2", "coder-2", &[("a.txt", "two\n")]);
    team.approved("t-3", "coder-3", &[("b.txt", "three\n")]);
    let (code, report) = merge_all(&team, &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(status(&team, "t-1"), "MERGED");
    assert_eq!(status(&team, "t-3"), "MERGED");
    let t2 = team.task("t-2");
    assert_eq!(t2["status"], "INTEGRATION_FAILED");
    assert_eq!(t2["integration_failure"]["kind"], "conflict");
    assert_eq!(
        t2["integration_failure"]["paths"],
        serde_json::json!(["a.txt"])
    );
    assert_eq!(team.log_entry("merged", "t-3")["batch"], 2);
    assert_eq!(team.repo.git(&["show", "integration:a.txt"]).trim(), "one");
}

#[test]
fn a_task_branch_reset_after_approval_goes_back_to_review_and_is_never_merged() {
    let team = Team::new(None);
    let approved = team.approved("t-1", "coder-1", &[("a.txt", "reviewed\n")]);
    team.approved("t-2", "coder-2", &[("b.txt", "two\n")]);
    // The approved commit is reset away.
    team.repo
        .git_in(&team.worktree("t-1"), &["reset", "-q", "--hard", "HEAD~1"]);
    let head = team.head(&team.worktree("t-1"));
    assert_ne!(head, approved);
    let (code, report) = merge_all(&team, &[]);
    assert_eq!(code, 1, "{report}");
    let t1 = team.task("t-1");
    assert_eq!(t1["status"], "READY_FOR_REVIEW");
    assert_eq!(t1["review_commit"], head.as_str());
    let reason = team.log_entry("approval_withdrawn", "t-1")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains(&approved) && reason.contains(&head),
        "{reason}"
    );
    assert_eq!(status(&team, "t-2"), "MERGED");
    assert!(!files_at(&team, "integration").contains(&"a.txt".to_owned()));
    assert!(queue_of(&team).is_empty());
}

/// A batch of three, with `liza merge` killed at `failpoint`: integration holds the whole
/// batch or none of it, and the next merge resumes and merges them all.
fn killed_mid_batch(failpoint: &str) {
    let team = Team::new(Some(FAILS_ON_BROKEN));
    let before = team.integration();
    for n in 1..=3 {
        let (task, coder) = (format!("t-{n}"), format!("coder-{n}"));
        team.approved(&task, &coder, &[(&format!("f{n}.txt"), "fine\n")]);
    }
    let (code, _) = {
        let out = team
            .repo
            .liza_env(&[("LIZA_FAILPOINT", failpoint)], &["merge"]);
        (out.status.code(), out)
    };
    assert_ne!(code, Some(0), "{failpoint}: the merger was killed");
    let files = files_at(&team, "integration");
    let landed: Vec<bool> = (1..=3)
        .map(|n| files.contains(&format!("f{n}.txt")))
        .collect();
    assert!(
        landed.iter().all(|l| *l) || (landed.iter().all(|l| !*l) && team.integration() == before),
        "{failpoint}: integration holds part of the batch: {landed:?}"
    );
    for n in 1..=3 {
        assert_eq!(status(&team, &format!("t-{n}")), "APPROVED", "{failpoint}");
    }
    let (code, report) = merge_all(&team, &[]);
    assert_eq!(code, 0, "{failpoint}: {report}");
    for n in 1..=3 {
        assert_eq!(status(&team, &format!("t-{n}")), "MERGED", "{failpoint}");
        assert!(team.task(&format!("t-{n}")).get("merge_intent").is_none());
    }
    let recovered = report["result"]["value"]["recovered"].as_array().unwrap();
    let action = if failpoint == "merge-after-publish" {
        "finished"
    } else {
        "dropped"
    };
    assert_eq!(recovered.len(), 3, "{failpoint}: {report}");
    assert!(recovered.iter().all(|r| r["action"] == action), "{report}");
    assert_success(&team.repo.liza(&["validate"]));
}

#[test]
fn a_merger_killed_while_checking_a_batch_leaves_integration_before_it_and_the_next_resumes() {
    killed_mid_batch("merge-checking");
}

#[test]
fn a_merger_killed_before_publishing_a_batch_publishes_none_of_it() {
    killed_mid_batch("merge-before-publish");
}

#[test]
fn a_merger_killed_after_publishing_a_batch_is_finished_by_the_next() {
    killed_mid_batch("merge-after-publish");
}

/// t-2's branch took in t-1's commit and reverted it: merged after t-1, it fast-forwards
/// integration over t-1's change without a conflict — git's own merge loses it silently.
fn t2_undoes_t1(team: &Team) {
    team.work("t-1", "coder-1", &[("a.txt", "base\nA from t-1\n")]);
    team.approve("t-1", "coder-1");
    add(&team.repo, "t-2", "");
    assert_success(&team.repo.liza(&["claim-task", "t-2", "coder-2"]));
    let wt = team.worktree("t-2");
    team.repo
        .git_in(&wt, &["merge", "-q", "--ff-only", "task/t-1"]);
    team.repo.git_in(&wt, &["revert", "--no-edit", "HEAD"]);
    team.commit("t-2", &[("b.txt", "t-2's own\n")]);
    team.approve("t-2", "coder-2");
}

fn team_with_a_file() -> Team {
    let team = Team::new(None);
    // a.txt on integration before the tasks start.
    std::fs::write(team.repo.path().join("a.txt"), "base\n").unwrap();
    team.repo.git(&["add", "a.txt"]);
    team.repo.git(&["commit", "-q", "-m", "a.txt"]);
    team.repo.git(&["branch", "-f", "integration", "HEAD"]);
    team
}

#[test]
fn a_merge_that_would_lose_a_change_is_never_published_and_its_culprit_fails_alone() {
    let team = team_with_a_file();
    t2_undoes_t1(&team);
    let (code, report) = merge_all(&team, &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(status(&team, "t-1"), "MERGED");
    let t2 = team.task("t-2");
    assert_eq!(t2["status"], "INTEGRATION_FAILED");
    assert_eq!(t2["integration_failure"]["kind"], "conflict");
    let ended = report["result"]["value"]["tasks"].as_array().unwrap();
    let t2_ended = ended.iter().find(|t| t["task"] == "t-2").unwrap();
    let reason = t2_ended["reason"].as_str().unwrap();
    assert!(
        reason.contains("the change of t-1") && reason.contains("a.txt"),
        "{reason}"
    );
    assert!(
        team.repo
            .git(&["show", "integration:a.txt"])
            .contains("A from t-1"),
        "t-1's change is on integration"
    );
}

/// The mutation test of the check above: with it switched off (a failpoint, in the test
/// build only), the same merges publish t-2 over t-1's change and record both as MERGED —
/// so the test above fails whenever the check does not hold.
#[test]
fn without_the_preservation_check_the_same_merge_loses_the_change() {
    let team = team_with_a_file();
    t2_undoes_t1(&team);
    let (code, report) = merge_all(
        &team,
        &[("LIZA_FAILPOINT", "merge-skip-preservation-check")],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(status(&team, "t-1"), "MERGED");
    assert_eq!(status(&team, "t-2"), "MERGED");
    assert!(
        !team
            .repo
            .git(&["show", "integration:a.txt"])
            .contains("A from t-1"),
        "the lost change is what the check prevents"
    );
}
