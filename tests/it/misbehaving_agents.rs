//! specs/quality.md R5 with real supervisors and the fake agent: each misbehaviour gets the
//! outcome specs/supervisor.md and specs/lifecycle.md specify, and the supervisor keeps
//! running (it is stopped by SIGTERM at the end: exit 143, unregistered).

use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;
use nix::sys::signal::Signal;

const GUARD: Duration = Duration::from_secs(60);

/// A project with task t-1 and the given step scripts for coder-1.
fn coder_project(steps: &[(&str, &str)]) -> AgentProject {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    for (name, script) in steps {
        project.step("coder", name, script);
    }
    project
}

/// The supervisor is still serving; SIGTERM ends it with 143 and unregisters it.
fn still_running_then_stop(project: &AgentProject, mut child: Supervisor, id: &str) {
    assert!(child.running(), "{id} exited early");
    let (code, output) = stop(child, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{output}");
    assert!(
        model(&project.repo)["agents"].get(id).is_none(),
        "{id} unregistered on SIGTERM"
    );
}

/// Two watchers at once, then a restart: alerts.log holds exactly one `category` alarm
/// (the supervisor's own, when it raised one, has the watcher's key); returns its line.
fn watchers_fire_once(project: &AgentProject, category: &str) -> String {
    let repo = &project.repo;
    let spawn = || {
        repo.command()
            .args(["watch", "--cycles", "2", "--interval", "0.05"])
            .output()
            .unwrap()
    };
    std::thread::scope(|s| {
        let a = s.spawn(spawn);
        let b = s.spawn(spawn);
        assert_success(&a.join().unwrap());
        assert_success(&b.join().unwrap());
    });
    assert_success(&repo.liza(&["watch", "--cycles", "2", "--interval", "0.05"]));
    let alerts = std::fs::read_to_string(repo.liza_dir().join("alerts.log")).unwrap_or_default();
    let found: Vec<&str> = alerts
        .lines()
        .filter(|l| l.split(' ').nth(2) == Some(category))
        .collect();
    assert_eq!(found.len(), 1, "{alerts}");
    found[0].to_owned()
}

fn blocked_reason(project: &AgentProject) -> String {
    task_of(&project.repo, "t-1")["blocked_reason"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn an_agent_that_exits_0_without_progress_is_blocked_after_3_runs() {
    let project = coder_project(&[("default", "exit 0\n")]);
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("BLOCKED", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "BLOCKED"
    });
    assert!(blocked_reason(&project).contains("no progress in 3 runs"));
    assert_eq!(project.runs().len(), 3, "{:?}", project.runs());
    assert_eq!(
        task_of(&project.repo, "t-1")["failed_by"],
        serde_json::json!(["coder-1"])
    );
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn a_hanging_agent_is_stopped_by_the_watchdog_and_the_task_blocked() {
    // The agent hangs in `sleep 3593`: found by its command line (a sandboxed agent's
    // pids are its sandbox's own).
    let project = coder_project(&[("default", "touch \"$FAKE_AGENT_DIR/hanging\"\nhang 3593\n")]);
    configure(&project.repo, |c| c.agent_progress_timeout = Some(1));
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("the agent to hang", GUARD, || {
        project.scenario.path().join("hanging").exists()
    });
    project.wait_until("BLOCKED", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "BLOCKED"
    });
    assert!(
        blocked_reason(&project).contains("watchdog"),
        "{}",
        blocked_reason(&project)
    );
    project.wait_until("the hung agent to be gone", GUARD, || {
        processes_running(&["sleep", "3593"]).is_empty()
    });
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn exit_42_forever_is_blocked_at_the_restart_threshold() {
    let project = coder_project(&[("default", "exit 42\n")]);
    configure(&project.repo, |c| c.exit42_restart_threshold = Some(2));
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("BLOCKED", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "BLOCKED"
    });
    assert!(
        blocked_reason(&project).contains("exit-42"),
        "{}",
        blocked_reason(&project)
    );
    assert_eq!(project.runs().len(), 2);
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn a_crash_loop_blocks_the_task_after_3_crashes() {
    let project = coder_project(&[("default", "crash 3\n")]);
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("BLOCKED", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "BLOCKED"
    });
    assert!(
        blocked_reason(&project).contains("crash loop"),
        "{}",
        blocked_reason(&project)
    );
    assert_eq!(project.runs().len(), 3);
    // The coder's supervisor blocks; the watcher's rule reads the crashes from log.yaml.
    let line = watchers_fire_once(&project, "CRASH_LOOP");
    assert!(
        line.contains("coder-1") && line.contains(" on t-1"),
        "{line}"
    );
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn flooding_output_and_orphaned_children_do_not_outlive_the_run() {
    // Sandboxed, the orphan dies with the sandbox's pid namespace; unsandboxed, with the
    // agent's process group (a `setsid` one would survive that: the sandbox is the answer).
    for (sandboxed, orphan) in [(true, "3594"), (false, "3595")] {
        if sandboxed && !sandbox_available() {
            continue;
        }
        orphans_do_not_outlive_the_run(sandboxed, orphan);
    }
}

fn orphans_do_not_outlive_the_run(sandboxed: bool, orphan: &str) {
    let project = coder_project(&[(
        "default",
        &format!(
            "flood 50000\n(sleep {orphan} &)\ntouch \"$FAKE_AGENT_DIR/orphaned\"\n\
             work t-1.txt done\nsubmit\n"
        ),
    )]);
    if !sandboxed {
        sandbox_off(&project.repo);
    }
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("READY_FOR_REVIEW", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    assert!(project.scenario.path().join("orphaned").exists());
    project.wait_until("the orphan to be killed", GUARD, || {
        processes_running(&["sleep", orphan]).is_empty()
    });
    let logs = project.repo.liza_dir().join("agent-logs");
    let log = std::fs::read_dir(&logs).unwrap().flatten().next().unwrap();
    let size = log.metadata().unwrap().len();
    assert!(
        size > 1_000_000 && size < 9 * 1024 * 1024,
        "the output is saved, capped: {size}"
    );
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn refused_submits_of_protected_paths_or_a_dirty_tree_leave_the_task_claimed() {
    let project = coder_project(&[
        (
            "t-1.1",
            "work .ci/run 'exit 0'\nsubmit || echo refused >> \"$FAKE_AGENT_DIR/refusals\"\n",
        ),
        (
            "t-1.2",
            "git -C \"$wt\" reset -q --hard HEAD~1\necho draft > \"$wt/draft.txt\"\n\
             submit || echo refused >> \"$FAKE_AGENT_DIR/refusals\"\n",
        ),
        ("t-1.3", "rm \"$wt/draft.txt\"\nwork t-1.txt done\nsubmit\n"),
    ]);
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("READY_FOR_REVIEW", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    let refusals = std::fs::read_to_string(project.scenario.path().join("refusals")).unwrap();
    assert_eq!(refusals.lines().count(), 2, "both bad submits were refused");
    assert_eq!(project.runs().len(), 3);
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn committing_outside_the_worktree_raises_a_role_boundary_alarm() {
    // An unsandboxed agent can (the sandbox hides the checkout: tests/it/sandbox.rs).
    let project = coder_project(&[(
        "default",
        "git -C \"$LIZA_PROJECT_ROOT\" commit -q --allow-empty -m 'not mine to make'\n\
         work t-1.txt done\nsubmit\n",
    )]);
    sandbox_off(&project.repo);
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("the alarm", GUARD, || {
        std::fs::read_to_string(project.repo.liza_dir().join("alerts.log"))
            .is_ok_and(|a| a.contains("ROLE_BOUNDARY") && a.contains("main checkout"))
    });
    assert!(
        project
            .repo
            .log()
            .iter()
            .any(|e| e["action"] == "role_boundary_violation")
    );
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn an_agent_editing_state_yaml_directly_is_reconciled_as_a_hand_edit() {
    // An unsandboxed agent can (the sandbox hides .liza/: tests/it/sandbox.rs).
    let project = coder_project(&[(
        "default",
        "sed -i 's/Implement part of the report flag/edited by the agent/' \
         \"$LIZA_PROJECT_ROOT/.liza/state.yaml\"\nwork t-1.txt done\nsubmit\n",
    )]);
    sandbox_off(&project.repo);
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("READY_FOR_REVIEW", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    assert!(
        project
            .repo
            .log()
            .iter()
            .any(|e| e["action"] == "human_edit")
    );
    assert_eq!(
        task_of(&project.repo, "t-1")["description"],
        "edited by the agent"
    );
    // Made while coder-1 was working: agents must not edit the blackboard.
    let alerts = std::fs::read_to_string(project.repo.liza_dir().join("alerts.log")).unwrap();
    assert!(
        alerts.contains("HAND_EDIT_DURING_RUN") && alerts.contains("coder-1"),
        "{alerts}"
    );
    assert_success(&project.repo.liza(&["validate"]));
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn a_reviewer_that_modifies_the_worktree_has_its_verdict_voided() {
    let project = coder_project(&[("default", "work t-1.txt done\nsubmit\n")]);
    project.step(
        "code-reviewer",
        "t-1.1",
        "echo 'reviewer was here' >> \"$wt/t-1.txt\"\napprove\n",
    );
    project.step("code-reviewer", "t-1.2", "exit 0\n");
    let coder = project.supervisor("coder", "coder-1");
    let reviewer = project.supervisor("code-reviewer", "code-reviewer-1");
    // The alarm comes last, after the verdict is voided and the violation logged.
    project.wait_until("the role-boundary alarm", GUARD, || {
        std::fs::read_to_string(project.repo.liza_dir().join("alerts.log"))
            .is_ok_and(|a| a.contains("changed the worktree"))
    });
    let log = project.repo.log();
    assert!(log.iter().any(|e| e["action"] == "verdict_voided"));
    assert!(log.iter().any(|e| e["action"] == "role_boundary_violation"));
    let task = task_of(&project.repo, "t-1");
    assert!(task["status"] == "READY_FOR_REVIEW", "{task}");
    still_running_then_stop(&project, reviewer, "code-reviewer-1");
    still_running_then_stop(&project, coder, "coder-1");
}

#[test]
fn a_provider_usage_limit_keeps_the_task_claimed_without_blame_or_restart_storm() {
    let project = coder_project(&[(
        "default",
        "echo draft > \"$wt/draft.txt\"\necho 'Error: usage limit reached; resets at 17:00' >&2\nexit 1\n",
    )]);
    let child = project.supervisor("coder", "coder-1");
    project.wait_until("the quota alarm", GUARD, || {
        std::fs::read_to_string(project.repo.liza_dir().join("alerts.log"))
            .is_ok_and(|a| a.contains("PROVIDER_QUOTA_EXHAUSTED"))
    });
    project.wait_until("coder-1 waiting for the usage limit", GUARD, || {
        waiting_of(&project.repo, "coder-1").as_deref() == Some("usage_limit")
    });
    assert_eq!(project.runs().len(), 1, "no restart storm");
    let task = task_of(&project.repo, "t-1");
    assert_eq!(task["status"], "CLAIMED");
    assert!(
        task["failed_by"].as_array().is_none_or(|f| f.is_empty()),
        "{task}"
    );
    let log = project.repo.git(&["log", "-1", "--format=%s", "task/t-1"]);
    assert!(log.starts_with("WIP: saved by liza"), "{log}");
    watchers_fire_once(&project, "PROVIDER_QUOTA_EXHAUSTED");
    still_running_then_stop(&project, child, "coder-1");
}

#[test]
fn a_reviewer_crash_loop_releases_the_review_and_raises_an_alarm() {
    let project = coder_project(&[("t-1", "work t-1.txt done\nsubmit\n")]);
    project.step("code-reviewer", "t-1", "crash 3\n");
    let coder = project.supervisor("coder", "coder-1");
    let reviewer = project.supervisor("code-reviewer", "code-reviewer-1");
    project.wait_until("the crash-loop alarm", GUARD, || {
        std::fs::read_to_string(project.repo.liza_dir().join("alerts.log"))
            .is_ok_and(|a| a.contains("CRASH_LOOP"))
    });
    let reviews = |p: &AgentProject| {
        p.runs()
            .iter()
            .filter(|r| r.starts_with("code-reviewer "))
            .count()
    };
    assert_eq!(
        reviews(&project),
        3,
        "one run per crash, with backoff between"
    );
    let t = task_of(&project.repo, "t-1");
    assert_eq!(t["status"], "READY_FOR_REVIEW");
    assert!(
        t["reviewing_by"].is_null(),
        "the review claim is released: {t}"
    );
    assert!(
        t["failed_by"].as_array().is_none_or(|f| f.is_empty()),
        "no blame for a reviewer crash: {t}"
    );
    watchers_fire_once(&project, "CRASH_LOOP");
    still_running_then_stop(&project, reviewer, "code-reviewer-1");
    still_running_then_stop(&project, coder, "coder-1");
}

#[test]
fn a_planner_crash_loop_backs_off_and_raises_an_alarm() {
    let project = AgentProject::new();
    project.step("planner", "default", "crash 3\n");
    let planner = project.supervisor("planner", "planner-1");
    project.wait_until("the crash-loop alarm", GUARD, || {
        std::fs::read_to_string(project.repo.liza_dir().join("alerts.log"))
            .is_ok_and(|a| a.contains("CRASH_LOOP") && a.contains("planner-1"))
    });
    // 5 s, then 10 s between the three turns: not a re-spawn loop.
    assert_eq!(project.runs().len(), 3, "{:?}", project.runs());
    // The planner's supervisor runs a watcher too: still one alarm.
    watchers_fire_once(&project, "CRASH_LOOP");
    still_running_then_stop(&project, planner, "planner-1");
}
