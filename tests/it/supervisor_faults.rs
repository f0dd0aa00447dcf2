//! Supervisors under faults and controls (specs/supervisor.md, specs/lifecycle.md *Leases*,
//! *Sprint and goal*): a coder supervisor killed with SIGKILL mid-task — another coder
//! takes the task over once the lease lapses (fresh worktree, the first one's work on an
//! attic branch, its orphaned agent killed), or the same id restarted before the lapse
//! resumes it; PAUSE stops new runs but not the running one; ABORT stops runs after a WIP
//! commit and every supervisor exits.

use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;
use nix::sys::signal::Signal;

const GUARD: Duration = Duration::from_secs(60);

const FIRST_RUN_HANGS: &str = "if [ \"$LIZA_AGENT_ID\" = coder-1 ] && [ \"$n\" = 1 ]; then\n\
    echo 'work in progress' > \"$wt/wip.txt\"\n\
    touch \"$FAKE_AGENT_DIR/first\"\n\
    hang 3600\n\
fi\n\
work t-1.txt done\nsubmit\n";

/// The process group of coder-1's first, hanging run.
fn first_agent_pid(project: &AgentProject) -> i32 {
    project.wait_for_agent("coder-1", "first", GUARD)
}

/// Sandboxed, the agent dies with its supervisor's SIGKILL (bubblewrap's
/// --die-with-parent); unsandboxed, it outlives it and the takeover stops it.
#[test]
fn another_coder_takes_over_after_the_lease_lapses_and_nothing_is_lost() {
    for sandboxed in [true, false] {
        if sandboxed && !sandbox_available() {
            continue;
        }
        takeover_after_the_lease_lapses(sandboxed);
    }
}

fn takeover_after_the_lease_lapses(sandboxed: bool) {
    let project = AgentProject::new();
    if !sandboxed {
        sandbox_off(&project.repo);
    }
    configure(&project.repo, |c| {
        c.lease_duration = Some(3);
        c.heartbeat_interval = Some(1);
        // A lease runs out with no file event: the waiting coder must not need a poll.
        c.coder_poll_interval = Some(3600);
    });
    add(&project.repo, "t-1", "");
    project.step("coder", "default", FIRST_RUN_HANGS);
    let mut first = project.supervisor("coder", "coder-1");
    let orphan = first_agent_pid(&project);
    first.kill();
    if sandboxed {
        project.wait_until(
            "the sandboxed agent to die with its supervisor",
            GUARD,
            || !alive(orphan),
        );
    } else {
        assert!(alive(orphan), "the agent outlives its supervisor's SIGKILL");
    }

    let second = project.supervisor("coder", "coder-2");
    project.wait_until("coder-2's submission", GUARD, || {
        let t = task_of(&project.repo, "t-1");
        t["status"] == "READY_FOR_REVIEW" && t["assigned_to"] == "coder-2"
    });
    assert!(!alive(orphan), "the previous owner's agent was stopped");
    assert_eq!(
        project.repo.git(&["show", "liza/attic/t-1-1:wip.txt"]),
        "work in progress\n",
        "the first coder's uncommitted work is on an attic branch"
    );
    let history = history_events(&project.repo, "t-1");
    assert!(
        history.contains(&"lease_expired_reassigned".to_owned()),
        "{history:?}"
    );
    let (code, out) = stop(second, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
}

#[test]
fn the_same_coder_restarted_before_its_lease_lapses_resumes_its_task() {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    project.step("coder", "default", FIRST_RUN_HANGS);
    let mut first = project.supervisor("coder", "coder-1");
    let orphan = first_agent_pid(&project);
    first.kill();

    let again = project.supervisor("coder", "coder-1");
    project.wait_until("the resumed run's submission", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    assert!(!alive(orphan), "the dead supervisor's agent was stopped");
    let task = task_of(&project.repo, "t-1");
    assert_eq!(task["assigned_to"], "coder-1");
    let events: Vec<String> = task["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["event"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        !events.contains(&"lease_expired_reassigned".to_owned()),
        "{events:?}"
    );
    assert!(
        project
            .repo
            .git(&["branch", "--list", "liza/attic/*"])
            .trim()
            .is_empty(),
        "nothing was archived: the same worktree was kept"
    );
    assert_eq!(
        project.repo.git(&["show", "task/t-1:wip.txt"]),
        "work in progress\n"
    );
    let (code, out) = stop(again, Signal::SIGINT);
    assert_eq!(code, Some(130), "{out}");
}

#[test]
fn pause_stops_new_runs_without_killing_the_running_agent() {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    let gate = project.scenario.path().join("gate");
    project.step(
        "coder",
        "t-1",
        "touch \"$FAKE_AGENT_DIR/t-1.started\"\nwhile [ ! -f \"$FAKE_AGENT_DIR/gate\" ]; do sleep 0.05; done\n\
         work t-1.txt done\nsubmit\n",
    );
    project.step("coder", "t-2", "work t-2.txt done\nsubmit\n");
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("t-1's run", GUARD, || {
        project.scenario.path().join("t-1.started").exists()
    });
    assert_success(&project.repo.liza(&["pause"]));
    std::fs::write(&gate, "").unwrap();
    project.wait_until("t-1 submitted while paused", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    // coder-1 now waits on its review; a second coder starts while paused.
    add(&project.repo, "t-2", "");
    let second = project.supervisor("coder", "coder-2");
    project.wait_until("coder-2 waiting on the pause", GUARD, || {
        waiting_of(&project.repo, "coder-2").as_deref() == Some("paused")
    });
    assert_eq!(
        task_of(&project.repo, "t-2")["status"],
        "UNCLAIMED",
        "no new run while paused"
    );
    assert_success(&project.repo.liza(&["resume"]));
    project.wait_until("t-2 worked after resume", GUARD, || {
        task_of(&project.repo, "t-2")["status"] == "READY_FOR_REVIEW"
    });
    for child in [coder, second] {
        let (code, out) = stop(child, Signal::SIGTERM);
        assert_eq!(code, Some(143), "{out}");
    }
}

/// A claim that finds the task locked by another process (which may give up without
/// changing the state, so no file event follows) is tried again shortly, not after the
/// poll interval.
#[test]
fn a_task_locked_by_another_claim_is_tried_again_without_waiting_for_the_poll() {
    let project = AgentProject::new();
    configure(&project.repo, |c| c.coder_poll_interval = Some(3600));
    add(&project.repo, "t-1", "");
    project.step("coder", "t-1", "work t-1.txt done\nsubmit\n");
    let locks = project.repo.liza_dir().join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(locks.join("task-t-1.lock"))
        .unwrap();
    held.try_lock().unwrap();
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("coder-1 waiting on the busy task", GUARD, || {
        waiting_of(&project.repo, "coder-1").as_deref() == Some("busy")
    });
    assert_eq!(task_of(&project.repo, "t-1")["status"], "UNCLAIMED");
    // The other claim gives up: nothing changes in .liza/ but the lock.
    held.unlock().unwrap();
    drop(held);
    project.wait_until("t-1 claimed once the lock is free", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
}

#[test]
fn a_review_whose_claim_ran_out_is_taken_over_without_waiting_for_the_poll() {
    let project = AgentProject::new();
    let repo = &project.repo;
    configure(repo, |c| {
        c.lease_duration = Some(3);
        c.heartbeat_interval = Some(1);
        c.reviewer_poll_interval = Some(3600);
    });
    add(repo, "t-1", "");
    let coder = register(repo, "coder-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let head = commit_in(
        repo,
        &repo.path().join(".worktrees/t-1"),
        "t-1.txt",
        "done\n",
    );
    assert_success(&repo.liza_env(
        &as_agent("coder-1", &coder),
        &["submit-for-review", "t-1", &head],
    ));
    // A reviewer that claims the review and is never heard of again.
    register(repo, "code-reviewer-1");
    assert_success(&repo.liza(&["claim-review", "t-1", "code-reviewer-1"]));
    project.step("code-reviewer", "default", "approve\n");
    let reviewer = project.supervisor("code-reviewer", "code-reviewer-2");
    // It takes the review over, approves, merges; the one-task sprint is then over.
    for (name, out) in project.wait_all(vec![reviewer], GUARD) {
        assert!(out.status.success(), "{name}: {}", project.diagnostics());
    }
    let t1 = task_of(repo, "t-1");
    assert_eq!(t1["approved_by"], "code-reviewer-2");
    assert_eq!(t1["status"], "MERGED");
}

#[test]
fn abort_stops_the_running_agent_after_saving_its_work_and_every_supervisor_exits() {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    project.step(
        "coder",
        "t-1",
        "echo draft > \"$wt/draft.txt\"\ntouch \"$FAKE_AGENT_DIR/working\"\nhang 3600\n",
    );
    let coder = project.supervisor("coder", "coder-1");
    let reviewer = project.supervisor("code-reviewer", "code-reviewer-1");
    let pid = project.wait_for_agent("coder-1", "working", GUARD);
    assert_success(&project.repo.liza(&["abort"]));
    for (name, out) in project.wait_all(vec![coder, reviewer], GUARD) {
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(!alive(pid), "the agent was stopped");
    let log = project.repo.git(&["log", "-1", "--format=%s", "task/t-1"]);
    assert!(log.starts_with("WIP: saved by liza"), "{log}");
    assert_eq!(project.repo.git(&["show", "task/t-1:draft.txt"]), "draft\n");
    assert!(
        model(&project.repo)["agents"]
            .as_object()
            .is_none_or(|a| a.is_empty())
    );
}

/// The `heartbeat:` values in coder-1's liveness records.
fn heartbeats(project: &AgentProject) -> Vec<String> {
    let dir = project.repo.liza_dir().join("live");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !entry.file_name().to_string_lossy().starts_with("coder-1.") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        found.extend(
            text.lines()
                .filter_map(|l| l.strip_prefix("heartbeat:"))
                .map(|v| v.trim().to_owned()),
        );
    }
    found
}

#[test]
fn heartbeats_keep_their_time_while_a_git_operation_blocks_for_seconds() {
    let project = AgentProject::new();
    configure(&project.repo, |c| c.heartbeat_interval = Some(1));
    add(&project.repo, "t-1", "");
    project.step("coder", "default", "work t-1.txt done\nsubmit\n");
    // Every `git status` of the supervisor blocks until the test releases it.
    let release = project.scenario.path().join("release");
    let failpoint = format!("git-status:until={}", release.display());
    let coder = project.supervisor_env("coder", "coder-1", &[("LIZA_FAILPOINT", &failpoint)]);
    let waiting = project.scenario.path().join("release.waiting");
    project.wait_until("a git status to block", GUARD, || waiting.exists());
    let mut seen = std::collections::BTreeSet::new();
    project.wait_until(
        "three heartbeats during the blocked git status",
        GUARD,
        || {
            seen.extend(heartbeats(&project));
            seen.len() >= 3
        },
    );
    assert!(!release.exists());
    std::fs::write(&release, "").unwrap();
    project.wait_until("the submission", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
}

/// A git killed mid-commit in the worktree leaves the locks a commit takes (`index.lock`,
/// `HEAD.lock`, the task branch's); the next run's every commit would fail on them. The
/// supervisor removes them before the run when no process holds them, says so, and the
/// task goes on (specs/git.md *Git's locks*). Seen in the S1 benchmark: a supervisor
/// stopped while its agent committed left `HEAD.lock`, and three runs crashed on it.
#[test]
fn stale_commit_locks_left_in_the_worktree_are_removed_before_the_next_run() {
    let project = AgentProject::new();
    sandbox_off(&project.repo);
    add(&project.repo, "t-1", "");
    project.step(
        "coder",
        "t-1.1",
        "gd=$(git -C \"$wt\" rev-parse --path-format=absolute --git-dir)\n\
         cd=$(git -C \"$wt\" rev-parse --path-format=absolute --git-common-dir)\n\
         touch \"$gd/index.lock\" \"$gd/HEAD.lock\" \"$cd/refs/heads/task/t-1.lock\"\nexit 1\n",
    );
    project.step("coder", "t-1.2", "work t-1.txt \"the text\"\nsubmit\n");
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("the second run's submission", GUARD, || {
        task_of(&project.repo, "t-1")["status"] == "READY_FOR_REVIEW"
    });
    let (_, out) = stop(coder, Signal::SIGTERM);
    for lock in ["index.lock", "HEAD.lock", "task/t-1.lock"] {
        assert!(
            out.lines()
                .any(|l| l.contains("removed git's stale lock") && l.contains(lock)),
            "{lock}: {out}"
        );
    }
}

/// A claimant in another pid namespace under the same host name (a second container on
/// the machine, here a bubblewrap pid namespace) cannot see coder-1's supervisor: its
/// pid there is no process, yet coder-1 lives. The lease is judged by watching it, as
/// across hosts, and nothing is taken (specs/blackboard.md *Leases are observed*).
#[test]
fn a_claimant_in_another_pid_namespace_takes_nothing_from_a_live_coder() {
    if !sandbox_available() {
        return;
    }
    let project = one_task_short_leases();
    let repo = &project.repo;
    let _coder = project.supervisor("coder", "coder-1");
    project.wait_for_agent("coder-1", "started", GUARD);
    register(repo, "coder-2");
    let out = repo
        .command_for("bwrap")
        .args([
            "--dev-bind",
            "/",
            "/",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--",
        ])
        .arg(LIZA)
        .args(["claim-task", "t-1", "coder-2"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stdout(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("whose lease is live"), "{said}");
    assert_eq!(task_of(repo, "t-1")["assigned_to"], "coder-1");
    assert!(
        !history_events(repo, "t-1").contains(&"lease_expired_reassigned".to_owned()),
        "{:?}",
        history_events(repo, "t-1")
    );
}

/// After `liza-agent coder --once` the task stays CLAIMED for the same agent to resume;
/// its supervisor left, so a person releases the claim without `--force` (nothing of a
/// holder no longer registered can renew it). A supervisor would still wait the lease
/// period (specs/blackboard.md *Leases are observed*).
#[test]
fn a_claim_left_by_a_once_run_is_released_by_a_person_without_force() {
    let project = AgentProject::new();
    let repo = &project.repo;
    add(repo, "t-1", "");
    project.step("coder", "default", "work t-1.txt half\n");
    let out = project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder", "--once"]);
    assert_success(&out);
    assert_eq!(task_of(repo, "t-1")["status"], "CLAIMED");
    let out = repo.liza(&[
        "release-claim",
        "t-1",
        "--role",
        "coder",
        "--reason",
        "tried once",
    ]);
    assert_success(&out);
    assert_eq!(task_of(repo, "t-1")["status"], "UNCLAIMED");
}
