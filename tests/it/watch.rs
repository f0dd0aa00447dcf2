//! `liza watch`: every alarm rule of specs/operations.md, each condition created for real
//! (commands, or a person's edit of a timestamp where the rule is about time passing),
//! then fired exactly once across two concurrent watcher processes, several periodic
//! cycles, an unrelated transaction and a watcher restart — and again only when the
//! condition escalates or a new occurrence begins.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::team::*;
use crate::common::{Repo, assert_success, json, stderr};
use liza::blackboard::TaskId;

/// Runs a watcher for `cycles` evaluations, 50 ms apart.
fn watch(repo: &Repo, cycles: u32) -> std::process::Output {
    let out = repo.liza(&[
        "--json",
        "watch",
        "--cycles",
        &cycles.to_string(),
        "--interval",
        "0.05",
    ]);
    assert_success(&out);
    out
}

/// The keys in alerts.log, in order.
fn keys(repo: &Repo) -> Vec<String> {
    std::fs::read_to_string(repo.liza_dir().join("alerts.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let start = l.rfind(" [").unwrap() + 2;
            l[start..l.len() - 1].to_owned()
        })
        .collect()
}

fn lines(repo: &Repo, category: &str) -> Vec<String> {
    std::fs::read_to_string(repo.liza_dir().join("alerts.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split(' ').nth(2) == Some(category))
        .map(str::to_owned)
        .collect()
}

fn with_prefix(repo: &Repo, prefix: &str) -> Vec<String> {
    keys(repo)
        .into_iter()
        .filter(|k| k.starts_with(prefix))
        .collect()
}

/// Two watchers at once, then more cycles, an unrelated transaction and a restart: the
/// alarm with a key starting `prefix` is in alerts.log exactly once. Returns its key.
fn fires_once(repo: &Repo, prefix: &str) -> String {
    fires_once_each(repo, &[prefix]).remove(0)
}

/// [`fires_once`] for alarms whose conditions hold at the same time.
fn fires_once_each(repo: &Repo, prefixes: &[&str]) -> Vec<String> {
    fires_once_around(repo, prefixes, true)
}

/// The checks of [`fires_once_each`]; `transaction: false` when no transaction can
/// commit (an unreadable blackboard).
fn fires_once_around(repo: &Repo, prefixes: &[&str], transaction: bool) -> Vec<String> {
    let spawn = || {
        repo.command()
            .args(["watch", "--cycles", "3", "--interval", "0.05"])
            .output()
            .unwrap()
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(spawn);
        let b = s.spawn(spawn);
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_success(&a);
    assert_success(&b);
    let mut found = Vec::new();
    for prefix in prefixes {
        let keys_now = with_prefix(repo, prefix);
        assert_eq!(keys_now.len(), 1, "{prefix}: {:?}", keys(repo));
        // The one that fired it showed it; the other too when it was running by then
        // (a watcher shows every alarm that appears while it runs), never twice.
        let printed: Vec<usize> = [&a, &b]
            .iter()
            .map(|o| stderr(o).matches(&format!("[{}]", keys_now[0])).count())
            .collect();
        assert!(
            printed.contains(&1) && printed.iter().all(|n| *n <= 1),
            "{:?}\n{}\n---\n{}",
            keys(repo),
            stderr(&a),
            stderr(&b)
        );
        found.push(keys_now[0].clone());
    }
    if transaction {
        assert_success(&repo.liza(&["note", "all", "an unrelated transaction"]));
    }
    watch(repo, 3);
    watch(repo, 2);
    for (prefix, key) in prefixes.iter().zip(&found) {
        assert_eq!(
            &with_prefix(repo, prefix),
            std::slice::from_ref(key),
            "{prefix} fired again"
        );
    }
    found
}

/// After an escalation or a new occurrence: one more key with `prefix`, the old one kept.
fn fires_again(repo: &Repo, prefix: &str, before: &str) -> String {
    watch(repo, 2);
    watch(repo, 2);
    let found = with_prefix(repo, prefix);
    assert_eq!(found.len(), 2, "{prefix}: {:?}", keys(repo));
    assert_eq!(found[0], before);
    found[1].clone()
}

struct Team {
    repo: Repo,
    generations: BTreeMap<String, String>,
}

impl Team {
    fn new() -> Team {
        Team::with_repo(Repo::initialized())
    }

    fn with_repo(repo: Repo) -> Team {
        let mut generations = BTreeMap::new();
        for agent in ["coder-1", "coder-2", "code-reviewer-1"] {
            generations.insert(agent.to_owned(), register(&repo, agent));
        }
        Team { repo, generations }
    }

    fn env<'a>(&'a self, agent: &'a str) -> [(&'a str, &'a str); 2] {
        as_agent(agent, &self.generations[agent])
    }

    fn worktree(&self, task: &str) -> PathBuf {
        self.repo.path().join(".worktrees").join(task)
    }

    fn claim(&self, task: &str, coder: &str) {
        assert_success(&self.repo.liza(&["claim-task", task, coder]));
    }

    /// Commits a change in the task's worktree and submits it; returns the commit.
    fn submit(&self, task: &str, coder: &str, text: &str) -> String {
        let head = commit_in(&self.repo, &self.worktree(task), "work.txt", text);
        assert_success(
            &self
                .repo
                .liza_env(&self.env(coder), &["submit-for-review", task, &head]),
        );
        head
    }

    fn review(&self, task: &str, commit: &str, verdict: &str, reason: Option<&str>) {
        assert_success(&self.repo.liza(&["claim-review", task, "code-reviewer-1"]));
        let mut args = vec!["submit-verdict", task, verdict, "--commit", commit];
        if let Some(r) = reason {
            args.extend(["--reason", r]);
        }
        assert_success(&self.repo.liza_env(&self.env("code-reviewer-1"), &args));
    }

    /// One claim (or re-claim), submission and rejection for `reason`.
    fn rejected(&self, task: &str, coder: &str, n: usize, reason: &str) {
        self.claim(task, coder);
        let commit = self.submit(task, coder, &format!("try {n}\n"));
        self.review(task, &commit, "reject", Some(reason));
    }

    fn block(&self, task: &str, coder: &str) {
        assert_success(&self.repo.liza_env(
            &self.env(coder),
            &[
                "block",
                task,
                "--reason",
                "the output format is unspecified",
                "--question",
                "JSON or CSV?",
            ],
        ));
    }
}

fn task_id(id: &str) -> TaskId {
    TaskId::parse(id).unwrap()
}

#[test]
fn expired_agent_task_and_review_leases_fire_after_the_grace_period() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    add(repo, "t-2", "");
    team.claim("t-1", "coder-1");
    team.claim("t-2", "coder-2");
    let commit = team.submit("t-2", "coder-2", "done\n");
    assert_success(&repo.liza(&["claim-review", "t-2", "code-reviewer-1"]));
    // Expired a second ago: within the 60 s grace, nothing yet.
    edit_state(repo, "test_expire", |s, now| {
        s.task_mut(&task_id("t-1")).unwrap().lease_expires = Some(now.plus_seconds(-1));
    });
    watch(repo, 2);
    assert!(
        with_prefix(repo, "task-lease:").is_empty(),
        "{:?}",
        keys(repo)
    );
    edit_state(repo, "test_expire", |s, now| {
        s.task_mut(&task_id("t-1")).unwrap().lease_expires = Some(now.plus_seconds(-120));
        s.task_mut(&task_id("t-2")).unwrap().review_lease_expires = Some(now.plus_seconds(-120));
    });
    let [task, review]: [String; 2] =
        fires_once_each(repo, &["task-lease:t-1:", "review-lease:t-2:"])
            .try_into()
            .unwrap();
    assert!(lines(repo, "LEASE_EXPIRED").len() >= 2);
    // Agent leases: heartbeats are liveness records; stopping them lets the lease lapse.
    let live = repo.liza_dir().join("live");
    let _ = std::fs::remove_dir_all(&live);
    edit_state(repo, "test_expire", |s, now| {
        let id = liza::blackboard::AgentId::parse("coder-1").unwrap();
        s.agents.get_mut(&id).unwrap().lease_expires = Some(now.plus_seconds(-300));
    });
    let agent = fires_once(repo, "agent-lease:coder-1:");
    // A renewed lease that lapses again is a new occurrence.
    edit_state(repo, "test_expire", |s, now| {
        s.task_mut(&task_id("t-1")).unwrap().lease_expires = Some(now.plus_seconds(-200));
    });
    fires_again(repo, "task-lease:t-1:", &task);
    assert_eq!(with_prefix(repo, "review-lease:"), [review]);
    assert_eq!(with_prefix(repo, "agent-lease:"), [agent]);
    let _ = commit;
}

#[test]
fn a_blocked_task_fires_with_its_reason_and_again_when_blocked_anew() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    team.claim("t-1", "coder-1");
    team.block("t-1", "coder-1");
    let first = fires_once(repo, "blocked:t-1:");
    let line = &lines(repo, "TASK_BLOCKED")[0];
    assert!(
        line.contains("the output format is unspecified") && line.contains("JSON or CSV?"),
        "{line}"
    );
    assert_success(&repo.liza(&["unblock", "t-1", "--reason", "JSON"]));
    // Blocked again a second later: a new occurrence (timestamps have second precision).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    team.claim("t-1", "coder-1");
    team.block("t-1", "coder-1");
    fires_again(repo, "blocked:t-1:", &first);
}

#[test]
fn review_loops_warn_at_three_and_escalate_to_deadlock_at_the_limit() {
    let team = Team::new();
    let repo = &team.repo;
    configure(repo, |c| c.max_review_cycles = Some(4));
    add(repo, "t-1", "");
    for n in 1..=3 {
        team.rejected(
            "t-1",
            "coder-1",
            n,
            &format!("work.txt:1 problem number {n}"),
        );
    }
    let warn = fires_once(repo, "review-loop:t-1:");
    assert!(warn.ends_with(":warn"), "{warn}");
    team.rejected("t-1", "coder-1", 4, "work.txt:1 problem number 4");
    let deadlock = fires_again(repo, "review-loop:t-1:", &warn);
    assert!(deadlock.ends_with(":deadlock"), "{deadlock}");
    assert_eq!(lines(repo, "REVIEW_DEADLOCK").len(), 1);
}

#[test]
fn repeated_identical_rejections_fire_and_escalate_with_each_repeat() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    team.rejected("t-1", "coder-1", 1, "work.txt:1 the totals key is missing");
    watch(repo, 2);
    assert!(with_prefix(repo, "repeated-rejection:").is_empty());
    team.rejected(
        "t-1",
        "coder-1",
        2,
        "work.txt:1   the totals key is missing",
    );
    let twice = fires_once(repo, "repeated-rejection:t-1:");
    assert!(twice.ends_with(":2"), "{twice}");
    team.rejected("t-1", "coder-1", 3, "work.txt:1 the totals key is missing");
    let thrice = fires_again(repo, "repeated-rejection:t-1:", &twice);
    assert!(thrice.ends_with(":3"), "{thrice}");
}

#[test]
fn an_orphaned_rejection_fires_when_its_coder_is_gone() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    team.rejected("t-1", "coder-1", 1, "work.txt:1 wrong");
    watch(repo, 2);
    assert!(with_prefix(repo, "orphaned-rejected:").is_empty());
    assert_success(&repo.liza(&["unregister", "coder-1"]));
    fires_once(repo, "orphaned-rejected:t-1:");
}

#[test]
fn an_integration_failure_fires_once() {
    let repo = Repo::new();
    let script = repo.path().join("scripts/integration-test.sh");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, "#!/bin/sh\necho failing on purpose >&2\nexit 1\n").unwrap();
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "integration test"]);
    assert_success(&repo.liza(&["init", "Add a --json flag to the report CLI"]));
    let team = Team::with_repo(repo);
    let repo = &team.repo;
    add(repo, "t-1", "");
    team.claim("t-1", "coder-1");
    let commit = team.submit("t-1", "coder-1", "done\n");
    team.review("t-1", &commit, "approve", None);
    let out = repo.liza(&["merge", "t-1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    fires_once(repo, "integration-failed:t-1:");
    assert_eq!(lines(repo, "INTEGRATION_FAILED").len(), 1);
}

#[test]
fn hypothesis_exhaustion_fires_for_open_tasks_only() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    // The supervisor blocks a coder that reached its iteration limit (failed_by += coder).
    let project = liza::ops::Project::discover(repo.path()).unwrap();
    configure(repo, |c| c.max_coder_iterations = Some(1));
    for coder in ["coder-1", "coder-2"] {
        team.claim("t-1", coder);
        let agent = liza::blackboard::AgentId::parse(coder).unwrap();
        liza::ops::start_run(
            &project,
            &liza::blackboard::Actor::Human,
            &task_id("t-1"),
            &agent,
            None,
        )
        .unwrap();
        liza::ops::start_run(
            &project,
            &liza::blackboard::Actor::Human,
            &task_id("t-1"),
            &agent,
            None,
        )
        .unwrap();
        if coder == "coder-1" {
            assert_success(&repo.liza(&["reassign", "t-1", "--reason", "try another coder"]));
        }
    }
    assert_eq!(status(repo, "t-1"), "BLOCKED");
    let key = fires_once(repo, "hypothesis:t-1:");
    assert!(key.ends_with(":2"), "{key}");
    // Abandoned (terminal): a third failure would not count; nothing new fires.
    assert_success(&repo.liza(&["abandon", "t-1", "--reason", "not worth it"]));
    watch(repo, 2);
    assert_eq!(with_prefix(repo, "hypothesis:"), [key]);
}

#[test]
fn iterations_near_the_limit_warn_then_escalate_at_the_last_run() {
    let team = Team::new();
    let repo = &team.repo;
    configure(repo, |c| c.max_coder_iterations = Some(5));
    add(repo, "t-1", "");
    team.claim("t-1", "coder-1");
    let project = liza::ops::Project::discover(repo.path()).unwrap();
    let agent = liza::blackboard::AgentId::parse("coder-1").unwrap();
    for _ in 0..3 {
        liza::ops::start_run(
            &project,
            &liza::blackboard::Actor::Human,
            &task_id("t-1"),
            &agent,
            None,
        )
        .unwrap();
    }
    watch(repo, 2);
    assert!(
        with_prefix(repo, "iterations:").is_empty(),
        "3 of 5 is 60 %"
    );
    liza::ops::start_run(
        &project,
        &liza::blackboard::Actor::Human,
        &task_id("t-1"),
        &agent,
        None,
    )
    .unwrap();
    let near = fires_once(repo, "iterations:t-1:coder-1:");
    assert!(near.ends_with(":near"), "{near}");
    liza::ops::start_run(
        &project,
        &liza::blackboard::Actor::Human,
        &task_id("t-1"),
        &agent,
        None,
    )
    .unwrap();
    let last = fires_again(repo, "iterations:t-1:coder-1:", &near);
    assert!(last.ends_with(":last"), "{last}");
}

#[test]
fn a_stalled_sprint_and_a_stale_draft_fire_after_thirty_minutes() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    add_draft(repo, "t-2");
    team.claim("t-1", "coder-1");
    watch(repo, 2);
    assert!(with_prefix(repo, "stalled:").is_empty());
    assert!(with_prefix(repo, "stale-draft:").is_empty());
    // Half an hour passes (the tasks' status times moved back by a person's edit).
    edit_state(repo, "test_age", |s, now| {
        for id in ["t-1", "t-2"] {
            let t = s.task_mut(&task_id(id)).unwrap();
            t.status_changed_at = Some(now.plus_seconds(-31 * 60));
            t.created = Some(now.plus_seconds(-40 * 60));
        }
    });
    let stalled = fires_once_each(repo, &["stalled:", "stale-draft:t-2:"]).remove(0);
    // Work moves, then stalls again: a new occurrence.
    team.submit("t-1", "coder-1", "done\n");
    watch(repo, 2);
    assert_eq!(
        with_prefix(repo, "stalled:"),
        std::slice::from_ref(&stalled)
    );
    edit_state(repo, "test_age", |s, now| {
        for id in ["t-1", "t-2"] {
            s.task_mut(&task_id(id)).unwrap().status_changed_at = Some(now.plus_seconds(-45 * 60));
        }
    });
    fires_again(repo, "stalled:", &stalled);
}

#[test]
fn an_immediate_discovery_fires_until_it_is_converted() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let discover = |desc: &str| {
        assert_success(&repo.liza(&[
            "discover",
            "--task",
            "t-1",
            "--desc",
            desc,
            "--severity",
            "high",
            "--urgency",
            "immediate",
        ]))
    };
    discover("the config loader drops unknown keys");
    let first = fires_once(&repo, "immediate-discovery:");
    discover("the report crashes on empty input");
    fires_again(&repo, "immediate-discovery:", &first);
    let line = lines(&repo, "IMMEDIATE_DISCOVERY").join("\n");
    assert!(
        line.contains("the config loader drops unknown keys"),
        "{line}"
    );
}

#[test]
fn a_rejected_hand_edit_and_an_unreadable_blackboard_fire_once_each() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    // A broken save: the watcher reconciles it (set aside, revision restored) and the
    // store's alarm is the watcher's: one line.
    std::fs::write(repo.state_path(), "tasks: [unclosed\n").unwrap();
    fires_once(&repo, "hand-edit-rejected:");
    assert_eq!(lines(&repo, "HAND_EDIT_REJECTED").len(), 1);
    // No journal to restore from: nothing to reconcile with, the blackboard is unreadable.
    std::fs::remove_dir_all(repo.liza_dir().join("journal")).unwrap();
    std::fs::write(repo.state_path(), "version: [\n").unwrap();
    let first = fires_once_around(&repo, &["invalid-state:"], false).remove(0);
    // A different broken content is a new occurrence.
    std::fs::write(repo.state_path(), "version: {\n").unwrap();
    fires_again(&repo, "invalid-state:", &first);
}

#[test]
fn a_checkpoint_waiting_for_a_person_escalates_through_its_tiers() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    assert_success(&repo.liza(&["checkpoint", "--message", "look at the plan"]));
    watch(&repo, 2);
    assert!(with_prefix(&repo, "checkpoint-waiting:").is_empty());
    let age = |minutes: i64| {
        edit_state(&repo, "test_age", move |s, now| {
            s.sprint.timeline.as_mut().unwrap().checkpoint_at =
                Some(now.plus_seconds(-minutes * 60));
        })
    };
    age(31);
    let first = fires_once(&repo, "checkpoint-waiting:");
    assert!(first.ends_with(":30m"), "{first}");
    // Moving the same checkpoint's time is a new occurrence at the 2 h tier.
    age(125);
    let second = fires_again(&repo, "checkpoint-waiting:", &first);
    assert!(second.ends_with(":2h"), "{second}");
}

#[test]
fn a_pause_left_for_hours_escalates() {
    let repo = Repo::initialized();
    assert_success(&repo.liza(&["pause"]));
    watch(&repo, 2);
    assert!(with_prefix(&repo, "pause-waiting:").is_empty());
    let since = liza::blackboard::Timestamp::now().plus_seconds(-(2 * 3600 + 60));
    std::fs::write(repo.liza_dir().join("PAUSE"), format!("{since}\n")).unwrap();
    let first = fires_once(&repo, "pause-waiting:");
    assert!(first.ends_with(":2h"), "{first}");
    let since = since.plus_seconds(-6 * 3600);
    std::fs::write(repo.liza_dir().join("PAUSE"), format!("{since}\n")).unwrap();
    watch(&repo, 2);
    let all = with_prefix(&repo, "pause-waiting:");
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all[1].ends_with(":8h"), "{all:?}");
    assert!(lines(&repo, "PAUSE_WAITING")[1].contains(" ERROR "));
}

#[test]
fn the_watch_json_lists_what_this_watcher_fired() {
    let team = Team::new();
    let repo = &team.repo;
    add(repo, "t-1", "");
    team.claim("t-1", "coder-1");
    team.block("t-1", "coder-1");
    let v = json(&watch(repo, 1));
    assert_eq!(v["result"]["cycles"], 1);
    let fired = v["result"]["fired"].as_array().unwrap();
    assert!(
        fired
            .iter()
            .any(|k| k.as_str().unwrap().starts_with("blocked:t-1:"))
    );
    let v = json(&watch(repo, 1));
    assert_eq!(v["result"]["fired"], serde_json::json!([]));
}

fn blocked_team() -> Team {
    let team = Team::new();
    add(&team.repo, "t-1", "");
    team.claim("t-1", "coder-1");
    team.block("t-1", "coder-1");
    team
}

#[test]
fn alarms_reach_the_webhook_as_documented_json() {
    let receiver = webhook_receiver();
    let team = blocked_team();
    let repo = &team.repo;
    let url = format!("{}/hooks/liza", receiver.base_url());
    configure(repo, |c| c.escalation_webhook = Some(url.clone()));
    let key = fires_once(repo, "blocked:t-1:");
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "one POST for one alarm: {requests:?}");
    assert_eq!(requests[0].path, "/v1/hooks/liza");
    let body: serde_json::Value = serde_json::from_str(&requests[0].body).unwrap();
    let mut fields: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "agent", "category", "key", "level", "message", "project", "revision", "task", "ts"
        ]
    );
    assert_eq!(body["key"], key.as_str());
    assert_eq!(body["category"], "TASK_BLOCKED");
    assert_eq!(body["level"], "WARN");
    assert_eq!(body["task"], "t-1");
    assert_eq!(body["agent"], "coder-1");
    assert!(body["revision"].as_u64().unwrap() > 0);
    assert_eq!(
        std::path::Path::new(body["project"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        repo.path().canonicalize().unwrap()
    );
}

#[test]
fn a_webhook_that_hangs_or_is_down_never_holds_the_watcher() {
    use liza::llm::scripted_server::{Script, ScriptedServer, Step};
    // A receiver that takes a minute to answer, then one that is not there at all.
    let hanging = ScriptedServer::start(Script {
        steps: vec![Step {
            delay_ms: 60_000,
            times: Some(0),
            ..Step::default()
        }],
    })
    .unwrap();
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    for url in [
        format!("{}/hook", hanging.base_url()),
        format!("http://{closed}/hook"),
    ] {
        let team = blocked_team();
        let repo = &team.repo;
        configure(repo, |c| c.escalation_webhook = Some(url.clone()));
        // The cycles run and the alarm is written while the receiver does not answer.
        let out = watch(repo, 3);
        assert_eq!(with_prefix(repo, "blocked:t-1:").len(), 1, "{url}");
        // The exiting watcher gave the delivery a bounded wait, then said where the
        // alarm is.
        assert!(
            stderr(&out).contains("did not take every alarm before exiting"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn notify_send_is_called_when_it_is_installed() {
    let team = blocked_team();
    let repo = &team.repo;
    let bin = tempfile::tempdir().unwrap();
    let calls = bin.path().join("calls.txt");
    let script = bin.path().join("notify-send");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\necho >> '{}'\n",
            calls.display(),
            calls.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = repo.liza_env(
        &[("PATH", &path)],
        &["watch", "--cycles", "2", "--interval", "0.05"],
    );
    assert_success(&out);
    // notify-send runs detached; wait for its line (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(&calls).is_ok_and(|t| t.ends_with('\n'))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(&calls).unwrap();
    assert!(
        text.starts_with("-u|normal|-a|liza|liza: TASK_BLOCKED|t-1 is BLOCKED"),
        "{text}"
    );
}

#[test]
fn the_planners_supervisor_runs_the_watcher() {
    use crate::common::supervision::*;
    let project = AgentProject::new();
    let repo = &project.repo;
    add(repo, "t-1", "");
    let coder = register(repo, "coder-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    assert_success(&repo.liza_env(
        &as_agent("coder-1", &coder),
        &[
            "block",
            "t-1",
            "--reason",
            "unclear",
            "--question",
            "which format?",
        ],
    ));
    // The planner's turn leaves the task blocked; its supervisor's watcher reports it.
    project.step("planner", "default", "exit 0\n");
    let planner = project.supervisor("planner", "planner-1");
    project.wait_until(
        "the planner's watcher to fire",
        std::time::Duration::from_secs(60),
        || !with_prefix(repo, "blocked:t-1:").is_empty(),
    );
    let (code, output) = stop(planner, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(code, Some(143), "{output}");
    assert!(
        output.contains("alarm: ") && output.contains("TASK_BLOCKED"),
        "{output}"
    );
    // A watcher started afterwards does not fire it again.
    watch(repo, 2);
    assert_eq!(with_prefix(repo, "blocked:t-1:").len(), 1);
}

/// An alarm another process raised — here the built-in planner, which cannot plan —
/// reaches every running watcher's stderr, and notify-send and the webhook once, whoever
/// of the watchers delivers it (specs/operations.md *Watch and alarms*). Ctrl-C ends a
/// watcher after delivering its queue.
#[test]
fn alarms_raised_elsewhere_reach_every_watcher_and_the_webhook_once() {
    use liza::llm::scripted_server::{Script, ScriptedServer, Step};
    use std::io::Read;
    let receiver = webhook_receiver();
    let repo = Repo::initialized();
    let url = format!("{}/hooks/liza", receiver.base_url());
    configure(&repo, |c| c.escalation_webhook = Some(url.clone()));
    let started = |path: &std::path::Path| {
        std::fs::read_to_string(path).is_ok_and(|t| t.contains("evaluating the alarm rules"))
    };
    let scratch = tempfile::tempdir().unwrap();
    let mut watchers: Vec<(std::process::Child, PathBuf)> = (0..2)
        .map(|i| {
            let err = scratch.path().join(format!("watch-{i}.err"));
            let child = repo
                .command()
                .args(["watch", "--interval", "0.1"])
                .stderr(std::fs::File::create(&err).unwrap())
                .spawn()
                .unwrap();
            (child, err)
        })
        .collect();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !watchers.iter().all(|(_, err)| started(err)) {
        assert!(
            std::time::Instant::now() < until,
            "the watchers did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let model = ScriptedServer::start(Script {
        steps: vec![Step {
            times: Some(0),
            ..Step::answer(r#"{"status": "error", "reason": "the goal is too vague"}"#)
        }],
    })
    .unwrap();
    let out = repo
        .command()
        .env("LIZA_AGENT_ID", "planner-1")
        .env("LIZA_LLM_BASE_URL", model.base_url())
        .args(["agent", "planner", "--cli", "builtin", "--once"])
        .output()
        .unwrap();
    let alerts = std::fs::read_to_string(repo.liza_dir().join("alerts.log")).unwrap_or_default();
    assert!(
        alerts.contains("PLANNER_CANNOT_PLAN"),
        "{alerts}\n{}",
        stderr(&out)
    );
    // Both watchers show it on stderr.
    while !watchers.iter().all(|(_, err)| {
        std::fs::read_to_string(err).is_ok_and(|t| t.contains("PLANNER_CANNOT_PLAN"))
    }) {
        assert!(
            std::time::Instant::now() < until,
            "a watcher did not show the alarm"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Ctrl-C: each finishes its cycle and its webhook queue, and exits 0.
    for (child, err) in &mut watchers {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let status = child.wait().unwrap();
        let mut said = String::new();
        std::fs::File::open(&*err)
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        assert!(status.success(), "{status:?}: {said}");
    }
    let posts: Vec<_> = receiver
        .requests()
        .into_iter()
        .filter(|r| r.body.contains("PLANNER_CANNOT_PLAN"))
        .collect();
    assert_eq!(posts.len(), 1, "one POST for one alarm: {posts:?}");
}

/// A hand edit set aside by a watcher's first cycle reaches the webhook of the state it
/// restored (the webhook is known before anything is delivered).
#[test]
fn the_first_cycles_alarm_reaches_the_webhook() {
    let receiver = webhook_receiver();
    let team = blocked_team();
    let repo = &team.repo;
    let url = format!("{}/hooks/liza", receiver.base_url());
    configure(repo, |c| c.escalation_webhook = Some(url.clone()));
    let mut text = repo.state_text();
    text.push_str("tasks: [\n");
    std::fs::write(repo.state_path(), text).unwrap();
    watch(repo, 1);
    let posts = receiver.requests();
    assert!(
        posts.iter().any(|r| r.body.contains("HAND_EDIT_REJECTED")),
        "{posts:?}"
    );
}

/// A webhook receiver on loopback that takes every POST (200, empty body).
fn webhook_receiver() -> liza::llm::scripted_server::ScriptedServer {
    use liza::llm::scripted_server::{Script, ScriptedServer, Step};
    ScriptedServer::start(Script {
        steps: vec![Step {
            status: Some(200),
            body: Some(String::new()),
            times: Some(0),
            ..Step::default()
        }],
    })
    .unwrap()
}
