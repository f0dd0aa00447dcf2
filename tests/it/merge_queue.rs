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

/// The bottom batch of a stack waits for the test's word; any other check passes at once,
/// leaving a mark in its worktree. After integration moved (`moved.txt` is in the
/// candidate), the bottom batch passes at once too. The wait lasts a minute at most.
const WAITS_FOR_THE_WORD: &str = "#!/bin/sh
# A merger whose clock is faked passes it on; the wait below is in real time.
unset LD_PRELOAD FAKETIME
if [ -f f1.txt ] && [ ! -f f3.txt ] && [ ! -f moved.txt ]; then
  touch CHECKING-BOTTOM
  i=0
  while [ ! -f GO ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
else
  touch CHECKED-ABOVE
fi
exit 0
";

/// `liza --json merge` started in the background, with `env`.
fn merger_started(team: &Team, env: &[(&str, &str)]) -> std::process::Child {
    team.repo
        .command()
        .envs(env.iter().copied())
        .args(["--json", "merge"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Gives the word to the checks waiting for it, and waits for the merger to end well.
fn go_and_merged(team: &Team, merger: std::process::Child) {
    for slot in slots_with(team, "CHECKING-BOTTOM") {
        std::fs::write(slot.join("GO"), "").unwrap();
    }
    let out = merger.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

/// The integration worktrees holding `mark`.
fn slots_with(team: &Team, mark: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(team.repo.path().join(".worktrees"))
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.join(mark).exists())
                .collect()
        })
        .unwrap_or_default()
}

/// A person commits to integration (from another clone) while the bottom batch of a
/// stack is checked and the one on it has passed: when the bottom one passes, both were
/// built on what is no longer the tip; they go back to the line in queue order and are
/// merged again, in approval order, on the new tip.
#[test]
fn batches_that_passed_on_an_integration_that_moved_are_merged_again_in_queue_order() {
    let team = Team::with_coders(Some(WAITS_FOR_THE_WORD), 4);
    set_batches(&team, 2, 2);
    for n in 1..=4 {
        let (task, coder) = (format!("t-{n}"), format!("coder-{n}"));
        team.approved(&task, &coder, &[(&format!("f{n}.txt"), "fine\n")]);
    }
    let merger = merger_started(&team, &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while slots_with(&team, "CHECKING-BOTTOM").is_empty()
        || slots_with(&team, "CHECKED-ABOVE").is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the two batches were never checked side by side"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let person = Repo::cloned(&team.repo.path().display().to_string());
    person.git(&["checkout", "-q", "integration"]);
    std::fs::write(person.path().join("moved.txt"), "a person's change\n").unwrap();
    person.git(&["add", "moved.txt"]);
    person.git(&["commit", "-q", "-m", "a person's commit"]);
    person.git(&["push", "-q", "origin", "integration"]);
    let moved = person.git(&["rev-parse", "HEAD"]).trim().to_owned();
    go_and_merged(&team, merger);
    let merged: Vec<String> = team
        .repo
        .git(&[
            "log",
            "--first-parent",
            "--reverse",
            "--format=%s",
            &format!("{moved}..integration"),
        ])
        .lines()
        .map(str::to_owned)
        .collect();
    let order: Vec<&str> = merged
        .iter()
        .filter_map(|s| s.split(':').next()?.strip_prefix("Merge task/"))
        .collect();
    assert_eq!(order, ["t-1", "t-2", "t-3", "t-4"], "{merged:?}");
    for n in 1..=4 {
        assert_eq!(status(&team, &format!("t-{n}")), "MERGED");
    }
    assert!(files_at(&team, "integration").contains(&"moved.txt".to_owned()));
    assert_success(&team.repo.liza(&["validate"]));
}

/// A check that outlasts the time other hosts give a merger at work: its intents are
/// renewed while it runs, so no other merger takes it for dead. The merger's wall clock
/// runs 200 times as fast (libfaketime): the renewal, every quarter of an hour, comes
/// every 4.5 s here.
#[test]
fn a_merger_renews_its_intents_while_a_long_check_runs() {
    if !crate::clocks::faketime_available() {
        return;
    }
    let team = Team::with_coders(Some(WAITS_FOR_THE_WORD), 2);
    for n in 1..=2 {
        let (task, coder) = (format!("t-{n}"), format!("coder-{n}"));
        team.approved(&task, &coder, &[(&format!("f{n}.txt"), "fine\n")]);
    }
    let merger = merger_started(
        &team,
        &[
            (
                "LD_PRELOAD",
                "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            ),
            ("FAKETIME", "+0 x200"),
            ("DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while slots_with(&team, "CHECKING-BOTTOM").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the batch was never checked"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let at_of = |task: &str| {
        let task = team.task(task);
        let at = task["merge_intent"]["at"].as_i64();
        at.unwrap_or_else(|| panic!("no merge_intent.at: {task}"))
    };
    let at = || at_of("t-1");
    let recorded = at();
    let mut merger = Some(merger);
    let renewed = loop {
        let now = at();
        if now > recorded {
            break now;
        }
        if std::time::Instant::now() > deadline {
            let mut merger = merger.take().unwrap();
            let _ = merger.kill();
            let out = merger.wait_with_output().unwrap();
            panic!(
                "the intent recorded at {recorded} was never renewed while its check ran: {}{}",
                stdout(&out),
                stderr(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let merger = merger.take().unwrap();
    assert!(
        renewed - recorded >= liza_model::lifecycle::INTENT_RENEWED_EVERY,
        "renewed after {} s",
        renewed - recorded
    );
    assert_eq!(at_of("t-2"), renewed);
    go_and_merged(&team, merger);
    for n in 1..=2 {
        assert_eq!(status(&team, &format!("t-{n}")), "MERGED");
    }
}
