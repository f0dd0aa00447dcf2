//! The merge queue's faults found by review, each fixed: a task without review_commit,
//! a refused transaction while building, another merger's intent — none makes a merger
//! spin or take what is not its own.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::team::*;
use crate::common::*;
use crate::merge::Team;
use crate::merge_queue::set_batches;

/// Runs `liza <args>` with `env`; `None` when still running after `limit` (killed then).
fn liza_within(
    team: &Team,
    env: &[(&str, &str)],
    args: &[&str],
    limit: Duration,
) -> Option<Output> {
    let mut cmd = team.repo.command();
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

static LINES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn tid(s: &str) -> liza::blackboard::TaskId {
    liza::blackboard::TaskId::parse(s).unwrap()
}

/// An APPROVED task without review_commit (hand-approved, or a v0.1 board): admission
/// skips it without passing it over, `more_waiting` keeps seeing it: `liza merge` loops.
#[test]
fn an_approved_task_without_review_commit_never_makes_liza_merge_loop() {
    let team = Team::new(None);
    team.approved("t-1", "coder-1", &[("a.txt", "one\n")]);
    edit_state(&team.repo, "test_drop_review_commit", |s, _| {
        s.task_mut(&tid("t-1")).unwrap().review_commit = None;
    });
    assert_success(&team.repo.liza(&["validate"]));
    let out = liza_within(&team, &[], &["merge"], Duration::from_secs(20));
    let out = out.expect("`liza merge` still running after 20 s (a task with no review_commit)");
    // It says the task was left in the queue, and why, and does not claim the queue merged.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("t-1: still in the queue: "), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("the merge queue is merged"));
    let json = team.repo.liza(&["--json", "merge"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["ok"], false, "{report}");
    assert_eq!(
        report["result"]["value"]["passed_over"][0]["task"], "t-1",
        "{report}"
    );
    assert_eq!(status(&team.repo, "t-1"), "APPROVED");
}

/// Same, with the task as target.
#[test]
fn a_target_without_review_commit_is_refused_not_looped_over() {
    let team = Team::new(None);
    team.approved("t-1", "coder-1", &[("a.txt", "one\n")]);
    edit_state(&team.repo, "test_drop_review_commit", |s, _| {
        s.task_mut(&tid("t-1")).unwrap().review_commit = None;
    });
    let out = liza_within(&team, &[], &["merge", "t-1"], Duration::from_secs(20));
    assert!(
        out.is_some(),
        "`liza merge t-1` still running after 20 s (no review_commit)"
    );
}

/// A supervisor merger whose registration was superseded: every transaction is refused
/// (class Refused), `launch` takes that for "another merger took a task", aborts the
/// flight and starts it again, for ever, holding the integration lock.
#[test]
fn a_superseded_merger_stops_instead_of_spinning_on_the_lock() {
    let team = Team::new(None);
    team.approved("t-1", "coder-1", &[("a.txt", "one\n")]);
    let generation = register(&team.repo, "code-reviewer-2");
    assert_success(&team.repo.liza(&["unregister", "code-reviewer-2"]));
    let root = team.repo.path().to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let project = liza::ops::Project::discover(&root).unwrap();
        let actor = liza::blackboard::Actor::Supervisor {
            id: liza::blackboard::AgentId::parse("code-reviewer-2").unwrap(),
            generation,
        };
        let r = liza::ops::merge(
            &project,
            &actor,
            None,
            liza::ops::MergeWait::Leave,
            &mut |l| {
                let n = LINES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n < 3 || n.is_multiple_of(500) {
                    eprintln!("progress #{n}: {l}");
                }
            },
        );
        let _ = tx.send(format!("{:?}", r.map(|_| ())));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(r) => eprintln!("merger ended: {r}"),
        Err(_) => {
            // Meanwhile a person's `liza merge` waits for the lock for ever.
            let out = liza_within(&team, &[], &["merge"], Duration::from_secs(5));
            panic!(
                "the superseded merger still runs after 20 s; a person's merge {}",
                if out.is_none() { "blocks too" } else { "ran" }
            );
        }
    }
}

/// A person corrects review_commit of a queued APPROVED task while the batch before it
/// is checked: begin_merge refuses (ReviewCommit), `launch` aborts and retries for ever.
/// `liza merge t-1` on this host while another host's merger holds t-2 (its live intent):
/// t-2 waits in this merger's line; when t-1 is merged the drain ends and drops the
/// intents of everything in its line — the other merger's too.
#[test]
fn a_merger_never_drops_another_hosts_live_intent() {
    let team = Team::new(None);
    set_batches(&team, 1, 1);
    team.approved("t-1", "coder-1", &[("a.txt", "one\n")]);
    let head2 = team.approved("t-2", "coder-2", &[("b.txt", "two\n")]);
    let tip = team.integration();
    edit_state(&team.repo, "test_foreign_intent", |s, now| {
        s.task_mut(&tid("t-2")).unwrap().merge_intent =
            Some(liza::blackboard::model::MergeIntent {
                candidate: liza::blackboard::model::CommitId::parse(&head2).unwrap(),
                integration_tip: liza::blackboard::model::CommitId::parse(&tip).unwrap(),
                at: Some(now),
                merger: Some("another-host/4242/abcdef12".into()),
                extra: Default::default(),
            });
    });
    let out = team.repo.liza(&["merge", "t-1"]);
    assert_success(&out);
    assert_eq!(status(&team.repo, "t-1"), "MERGED");
    let t2 = team.task("t-2");
    eprintln!(
        "log: {:?}",
        team.repo
            .log()
            .into_iter()
            .filter(|e| e["action"] == "merge_intent_dropped")
            .collect::<Vec<_>>()
    );
    assert!(
        t2.get("merge_intent").is_some(),
        "another host's live intent on t-2 was dropped by this merger: {t2}"
    );
}
