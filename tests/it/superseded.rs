//! A superseded supervisor changes nothing (specs/supervisor.md *Startup*: one process
//! supervises one registration). A supervisor is paused (SIGSTOP); meanwhile a person
//! registers its agent anew. When it resumes, its first write is refused — a claim, a run
//! start, a merge's publication — and it stops: the blackboard, the worktrees and every
//! git ref are byte-identical, its agent never runs again, and the task is untouched.

use std::time::{Duration, Instant};

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const GUARD: Duration = Duration::from_secs(60);

/// The process state letter of `/proc/<pid>/stat` (`T`: stopped).
fn process_state(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_owned))
        })
        .unwrap_or_default()
}

fn wait_stopped(project: &AgentProject, supervisor: &Supervisor) {
    let pid = supervisor.pid();
    project.wait_until("the supervisor to be stopped", GUARD, || {
        process_state(pid) == "T"
    });
}

/// A person replaces `agent`'s registration: unregister, register again.
fn register_anew(repo: &Repo, agent: &str) -> String {
    assert_success(&repo.liza(&["unregister", agent]));
    register(repo, agent)
}

/// Resumes a stopped supervisor and waits for it to exit; returns its code and output.
fn resume_until_exit(mut supervisor: Supervisor) -> (Option<i32>, String) {
    kill(Pid::from_raw(supervisor.pid()), Signal::SIGCONT).unwrap();
    let deadline = Instant::now() + GUARD;
    while supervisor.running() {
        assert!(
            Instant::now() < deadline,
            "the superseded supervisor did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    supervisor.exited()
}

#[test]
fn a_coder_supervisor_registered_over_while_paused_claims_and_runs_nothing() {
    let project = AgentProject::new();
    configure(&project.repo, |c| {
        c.heartbeat_interval = Some(1);
        c.coder_poll_interval = Some(3600);
    });
    project.step("coder", "default", "work t-1.txt done\nsubmit\n");
    let old = project.supervisor("coder", "coder-1");
    project.wait_until("coder-1's registration", GUARD, || {
        !model(&project.repo)["agents"]["coder-1"].is_null()
    });
    kill(Pid::from_raw(old.pid()), Signal::SIGSTOP).unwrap();
    wait_stopped(&project, &old);

    let generation = register_anew(&project.repo, "coder-1");
    add(&project.repo, "t-1", "");
    let before = project.repo.files();

    let (code, out) = resume_until_exit(old);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("superseded"), "{out}");
    assert_eq!(project.repo.files(), before, "files byte-identical");
    let task = task_of(&project.repo, "t-1");
    assert_eq!(task["status"], "UNCLAIMED");
    assert!(task["assigned_to"].is_null());
    assert!(project.runs().is_empty(), "the agent never ran");
    assert!(!project.repo.path().join(".worktrees/t-1").exists());
    assert_eq!(
        model(&project.repo)["agents"]["coder-1"]["generation"],
        generation.as_str(),
        "the newer registration stays"
    );
}

#[test]
fn a_coder_supervisor_registered_over_during_a_run_stops_its_agent_and_submits_nothing() {
    let project = AgentProject::new();
    configure(&project.repo, |c| {
        c.heartbeat_interval = Some(1);
    });
    add(&project.repo, "t-1", "");
    project.step(
        "coder",
        "default",
        "work t-1.txt done\ntouch \"$FAKE_AGENT_DIR/working\"\nhang 3600\n",
    );
    let old = project.supervisor("coder", "coder-1");
    let agent = project.wait_for_agent("coder-1", "working", GUARD);

    // The person takes coder-1 over while its supervisor is running the agent.
    register_anew(&project.repo, "coder-1");
    let state_before = project.repo.state_text();
    let (code, out) = stop_when_superseded(&project, old);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("superseded"), "{out}");
    assert!(
        !alive(agent),
        "the superseded supervisor's agent was stopped"
    );
    assert_eq!(
        project.repo.state_text(),
        state_before,
        "no write after the registration was replaced"
    );
    let task = task_of(&project.repo, "t-1");
    assert_eq!(task["status"], "CLAIMED", "the task is left as it was");
    assert_eq!(project.runs().len(), 1, "no further run");
}

/// Waits for a running supervisor to notice (at its next heartbeat) that it was
/// superseded and exit.
fn stop_when_superseded(
    project: &AgentProject,
    mut supervisor: Supervisor,
) -> (Option<i32>, String) {
    project.wait_until("the superseded supervisor to exit", GUARD, || {
        !supervisor.running()
    });
    supervisor.exited()
}

#[test]
fn a_reviewer_superseded_mid_merge_publishes_nothing() {
    let project = AgentProject::new();
    let repo = &project.repo;
    configure(repo, |c| c.heartbeat_interval = Some(1));
    // t-1 approved by code-reviewer-2, who then leaves: code-reviewer-1 merges it.
    let coder = register(repo, "coder-1");
    let other = register(repo, "code-reviewer-2");
    add(repo, "t-1", "");
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
    assert_success(&repo.liza(&["claim-review", "t-1", "code-reviewer-2"]));
    assert_success(&repo.liza_env(
        &as_agent("code-reviewer-2", &other),
        &["submit-verdict", "t-1", "approve", "--commit", &head],
    ));
    assert_success(&repo.liza(&["unregister", "code-reviewer-2"]));

    // The reviewer's supervisor stops itself right before publishing the merge.
    let reviewer = project.supervisor_env(
        "code-reviewer",
        "code-reviewer-1",
        &[("LIZA_FAILPOINT", "merge-before-publish:stop")],
    );
    wait_stopped(&project, &reviewer);
    let integration = repo.git(&["rev-parse", "integration"]);

    register_anew(repo, "code-reviewer-1");
    let before = repo.files();
    let (code, out) = resume_until_exit(reviewer);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("superseded"), "{out}");
    assert_eq!(
        repo.git(&["rev-parse", "integration"]),
        integration,
        "the integration branch did not move"
    );
    assert_eq!(repo.files(), before, "files byte-identical");
    let task = task_of(repo, "t-1");
    assert_eq!(task["status"], "APPROVED");
    assert!(
        !task["merge_intent"].is_null(),
        "the intent stays for the next merge to recover"
    );
}
