//! Agents on several machines (specs/shared-store.md): one etcd holds the blackboard, one
//! bare repository the git history; each "host" is a clone of its own with its own
//! `LIZA_HOST_ID`, its supervisors started in it. (Separate directories, not network
//! namespaces: the hosts share nothing but etcd and the remote, as machines would.)

use std::path::Path;
use std::time::Duration;

use crate::common::etcd::{self, Etcd};
use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;

/// Host A (the project's first checkout, holding the scenario) and host B (a clone of
/// the shared remote that joined the blackboard).
struct Hosts {
    project: AgentProject,
    b: Repo,
    remote: tempfile::TempDir,
}

impl Hosts {
    fn start() -> Option<Hosts> {
        if !etcd::available() {
            return None;
        }
        let member = Etcd::start();
        let address = format!("etcd://{}/team/hosts", member.endpoint());
        let remote = tempfile::tempdir().unwrap();
        let url = remote.path().display().to_string();
        let a = Repo::new();
        a.git(&["init", "-q", "--bare", &url]);
        a.git(&["push", "-q", &url, "main"]);
        assert_success(&a.liza(&[
            "init",
            "Add a --json flag to the report CLI",
            "--store",
            &address,
            "--git-remote",
            &url,
        ]));
        let project = AgentProject::around(a, Some(member));
        let b = Repo::cloned(&url);
        assert_success(&b.liza(&["join", &address]));
        Some(Hosts { project, b, remote })
    }

    fn url(&self) -> String {
        self.remote.path().display().to_string()
    }

    fn on_a(&self, role: &str, id: &str) -> Supervisor {
        self.project
            .supervisor_in(&self.project.repo, role, id, &[("LIZA_HOST_ID", "host-a")])
    }

    fn on_b(&self, role: &str, id: &str) -> Supervisor {
        self.project
            .supervisor_in(&self.b, role, id, &[("LIZA_HOST_ID", "host-b")])
    }

    /// `git show <branch>:<file>` in the shared remote.
    fn remote_file(&self, branch: &str, file: &str) -> Option<String> {
        let out = std::process::Command::new("git")
            .args(["show", &format!("{branch}:{file}")])
            .current_dir(Path::new(&self.url()))
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Planner and reviewer on host A, two coders on host B.
fn team(hosts: &Hosts) -> Vec<Supervisor> {
    vec![
        hosts.on_a("planner", "planner-1"),
        hosts.on_a("code-reviewer", "code-reviewer-1"),
        hosts.on_b("coder", "coder-1"),
        hosts.on_b("coder", "coder-2"),
    ]
}

fn wait_successful(project: &AgentProject, supervisors: Vec<Supervisor>) {
    for (name, out) in project.wait_all(supervisors, Duration::from_secs(240)) {
        assert!(
            out.status.success(),
            "{name} exited {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every task merged, on both hosts' view and on the remote's integration branch.
fn assert_all_merged(hosts: &Hosts, tasks: &[&str]) {
    let expected: Vec<(String, String)> = tasks
        .iter()
        .map(|t| ((*t).to_owned(), "MERGED".to_owned()))
        .collect();
    assert_eq!(statuses(&hosts.project.repo), expected);
    assert_eq!(statuses(&hosts.b), expected);
    for t in tasks {
        assert_eq!(
            hosts
                .remote_file("integration", &format!("{t}.txt"))
                .as_deref(),
            Some(format!("the text of {t}\n").as_str()),
            "{t} is not on the remote's integration"
        );
    }
}

#[test]
fn a_sprint_with_the_planner_and_reviewer_on_one_host_and_two_coders_on_another() {
    let Some(hosts) = Hosts::start() else { return };
    let project = &hosts.project;
    project.plan_four_tasks_one_rejected();
    wait_successful(project, team(&hosts));
    assert_all_merged(&hosts, &["t-1", "t-2", "t-3", "t-4"]);
    // Both hosts list the same log, with the same revisions.
    assert_eq!(project.repo.log(), hosts.b.log());
    assert_eq!(model(&project.repo)["goal"]["status"], "COMPLETED");
}

#[test]
fn etcd_killed_mid_sprint_and_restarted_loses_nothing_and_the_sprint_completes() {
    let Some(mut hosts) = Hosts::start() else {
        return;
    };
    hosts.project.plan_four_tasks_one_rejected();
    let supervisors = team(&hosts);
    let project = &hosts.project;
    project.wait_until("the sprint under way", Duration::from_secs(120), || {
        statuses(&project.repo)
            .iter()
            .any(|(_, s)| s != "DRAFT" && s != "UNCLAIMED")
    });
    // What was acknowledged before the crash.
    let acknowledged = project.repo.log();
    let member = hosts.project.etcd.as_mut().unwrap();
    member.kill();
    member.restart();
    let project = &hosts.project;
    wait_successful(project, supervisors);
    assert_all_merged(&hosts, &["t-1", "t-2", "t-3", "t-4"]);
    let after = project.repo.log();
    assert_eq!(
        &after[..acknowledged.len()],
        &acknowledged[..],
        "an acknowledged log entry was lost or changed"
    );
    // Revisions rose by one per transition throughout.
    let revisions: Vec<u64> = after
        .iter()
        .filter_map(|e| e["revision"].as_u64())
        .collect();
    assert!(
        revisions
            .windows(2)
            .all(|w| w[1] == w[0] || w[1] == w[0] + 1),
        "{revisions:?}"
    );
}

/// Host B's coders commit their first run's work (pushed when the run ends), then hang
/// in the next run (in `sleep 3596`, found by its command line); host A's coder-3
/// finishes the task.
const B_COMMITS_THEN_HANGS: &str = "if [ \"$LIZA_AGENT_ID\" = coder-3 ]; then\n\
    work \"$key.txt\" \"the text of $key\"\n\
    submit\n\
elif [ \"$n\" = 1 ]; then\n\
    work \"$key.txt\" \"partial $key from host B\"\n\
else\n\
    touch \"$FAKE_AGENT_DIR/hang-$key\"\n\
    hang 3596\n\
fi\n";

#[test]
fn a_dead_host_s_claims_expire_and_another_host_takes_them_over_losing_no_pushed_commit() {
    let Some(hosts) = Hosts::start() else { return };
    let project = &hosts.project;
    configure(&project.repo, |c| {
        c.lease_duration = Some(3);
        c.heartbeat_interval = Some(1);
    });
    add(&project.repo, "t-1", "");
    add(&project.repo, "t-2", "");
    project.step("coder", "default", B_COMMITS_THEN_HANGS);
    project.step("code-reviewer", "default", "approve\n");
    let mut b = vec![
        hosts.on_b("coder", "coder-1"),
        hosts.on_b("coder", "coder-2"),
    ];
    // Both tasks claimed on B, their first commits pushed, their second runs hanging.
    for t in ["t-1", "t-2"] {
        let marker = project.scenario.path().join(format!("hang-{t}"));
        project.wait_until(
            &format!("{t}'s second run"),
            Duration::from_secs(60),
            || marker.exists(),
        );
    }
    for t in ["t-1", "t-2"] {
        assert_eq!(
            hosts
                .remote_file(&format!("task/{t}"), &format!("{t}.txt"))
                .as_deref(),
            Some(format!("partial {t} from host B\n").as_str())
        );
    }
    // `liza status --json` on host A names the host of each agent.
    let agents = project.repo.state_json()["agents"].clone();
    for coder in ["coder-1", "coder-2"] {
        let line = agents
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == coder)
            .unwrap_or_else(|| panic!("{coder} not listed: {agents}"));
        assert_eq!(line["host"], "host-b", "{agents}");
    }
    // Host B dies: its supervisors and their agents (sandboxed agents die with their
    // supervisor; unsandboxed ones are killed here).
    for supervisor in &mut b {
        supervisor.kill();
    }
    for pid in processes_running(&["sleep", "3596"]) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let a = vec![
        hosts.on_a("coder", "coder-3"),
        hosts.on_a("code-reviewer", "code-reviewer-1"),
    ];
    project.wait_until("host A merged both tasks", Duration::from_secs(120), || {
        statuses(&project.repo)
            .iter()
            .all(|(_, status)| status == "MERGED")
    });
    for mut supervisor in a {
        supervisor.kill();
    }
    assert_all_merged(&hosts, &["t-1", "t-2"]);
    // B's pushed commits are kept on the remote, under the attic.
    let attic = std::process::Command::new("git")
        .args([
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/liza/attic/",
        ])
        .current_dir(hosts.url())
        .output()
        .unwrap();
    let attic = String::from_utf8_lossy(&attic.stdout).into_owned();
    for t in ["t-1", "t-2"] {
        let kept = attic
            .lines()
            .find(|b| b.starts_with(&format!("liza/attic/{t}-r")))
            .unwrap_or_else(|| panic!("no attic branch of {t} on the remote: {attic}"));
        assert_eq!(
            hosts.remote_file(kept, &format!("{t}.txt")).as_deref(),
            Some(format!("partial {t} from host B\n").as_str())
        );
    }
    // The takeover is in each task's history.
    for t in ["t-1", "t-2"] {
        let events = history_events(&project.repo, t);
        assert!(
            events.contains(&"lease_expired_reassigned".to_owned()),
            "{events:?}"
        );
    }
}

/// Adds `task`, has `coder` claim it in `checkout` (its host), commit `file` and submit.
fn worked_on(hosts: &Hosts, checkout: &Repo, task: &str, coder: &str, generation: &str) -> String {
    add(&hosts.project.repo, task, "");
    assert_success(&checkout.liza(&["claim-task", task, coder]));
    let worktree = checkout.path().join(".worktrees").join(task);
    std::fs::write(
        worktree.join(format!("{task}.txt")),
        format!("the text of {task}\n"),
    )
    .unwrap();
    checkout.git_in(&worktree, &["add", "-A"]);
    checkout.git_in(
        &worktree,
        &["commit", "-q", "-m", &format!("work on {task}")],
    );
    let head = checkout
        .git_in(&worktree, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    assert_success(&checkout.liza_env(
        &as_agent(coder, generation),
        &["submit-for-review", task, &head],
    ));
    head
}

#[test]
fn two_hosts_publishing_integration_at_once_one_wins_and_the_other_merges_again() {
    let Some(hosts) = Hosts::start() else { return };
    let (a, b) = (&hosts.project.repo, &hosts.b);
    let generation = |agent: &str| register(a, agent);
    let (c1, c2, r1, r2) = (
        generation("coder-1"),
        generation("coder-2"),
        generation("code-reviewer-1"),
        generation("code-reviewer-2"),
    );
    let head1 = worked_on(&hosts, a, "t-1", "coder-1", &c1);
    let head2 = worked_on(&hosts, b, "t-2", "coder-2", &c2);
    let approve = |checkout: &Repo, task: &str, reviewer: &str, generation: &str, head: &str| {
        assert_success(&checkout.liza(&["claim-review", task, reviewer]));
        assert_success(&checkout.liza_env(
            &as_agent(reviewer, generation),
            &["submit-verdict", task, "approve", "--commit", head],
        ));
    };
    // Both merges stop right before publishing, and are let go at once. Each host's
    // merger takes the queue as it finds it: t-2 is approved once A's merger holds t-1,
    // so B's takes t-2 alone (a task another host's merger holds is its own).
    let gates = tempfile::tempdir().unwrap();
    let merge = |checkout: &Repo, task: &str, gate: &str| {
        let failpoint = format!(
            "merge-before-publish:until={}",
            gates.path().join(gate).display()
        );
        checkout
            .command()
            .env("LIZA_FAILPOINT", failpoint)
            .args(["--json", "merge", task])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    approve(a, "t-1", "code-reviewer-1", &r1, &head1);
    let first = merge(a, "t-1", "a");
    hosts.project.wait_until(
        "A's merge ready to publish",
        Duration::from_secs(60),
        || gates.path().join("a.waiting").exists(),
    );
    approve(b, "t-2", "code-reviewer-2", &r2, &head2);
    let second = merge(b, "t-2", "b");
    hosts.project.wait_until(
        "B's merge ready to publish",
        Duration::from_secs(60),
        || gates.path().join("b.waiting").exists(),
    );
    let merges = [first, second];
    std::fs::write(gates.path().join("a"), "").unwrap();
    std::fs::write(gates.path().join("b"), "").unwrap();
    let mut retries = Vec::new();
    for child in merges {
        let out = child.wait_with_output().unwrap();
        assert_success(&out);
        let report = json(&out);
        let result = &report["result"]["value"];
        assert_eq!(result["status"], "MERGED", "{report}");
        retries.push(result["retries"].as_u64().unwrap());
    }
    retries.sort();
    assert_eq!(
        retries,
        [0, 1],
        "one publication won, the other merged again"
    );
    // The remote's integration has both, one on top of the other.
    for t in ["t-1", "t-2"] {
        assert_eq!(
            hosts
                .remote_file("integration", &format!("{t}.txt"))
                .as_deref(),
            Some(format!("the text of {t}\n").as_str())
        );
    }
    assert_eq!(
        statuses(a),
        [("t-1", "MERGED"), ("t-2", "MERGED")].map(|(t, s)| (t.to_owned(), s.to_owned()))
    );
}

#[test]
fn doctor_checks_that_the_shared_remote_answers() {
    let Some(hosts) = Hosts::start() else { return };
    let remote_check = |repo: &Repo| doctor_check(repo, "git remote");
    assert_eq!(remote_check(&hosts.b)["status"], "ok");
    let moved = hosts.remote.path().with_extension("moved");
    std::fs::rename(hosts.remote.path(), &moved).unwrap();
    let check = remote_check(&hosts.b);
    std::fs::rename(&moved, hosts.remote.path()).unwrap();
    assert_eq!(check["status"], "fail", "{check}");
    assert!(
        check["hint"].as_str().unwrap().contains("reachable"),
        "{check}"
    );
}

#[test]
fn a_claim_never_moves_the_integration_branch_under_a_persons_checkout() {
    let Some(hosts) = Hosts::start() else { return };
    let (a, b) = (&hosts.project.repo, &hosts.b);
    // A person on host A works with integration checked out; host B's work lands on
    // the remote's integration meanwhile.
    a.git(&["switch", "-q", "integration"]);
    let before = a.git(&["rev-parse", "integration"]);
    b.git(&["fetch", "-q", "origin", "integration"]);
    b.git(&["switch", "-q", "-c", "work", "FETCH_HEAD"]);
    std::fs::write(b.path().join("from-b.txt"), "host B\n").unwrap();
    b.git(&["add", "from-b.txt"]);
    b.git(&["commit", "-q", "-m", "host B's work"]);
    b.git(&["push", "-q", "origin", "work:integration"]);
    add(a, "t-1", "");
    register(a, "coder-1");
    assert_success(&a.liza(&["claim-task", "t-1", "coder-1"]));
    assert_eq!(a.git(&["rev-parse", "integration"]), before);
    assert_eq!(a.git(&["status", "--short"]), "");
    // The task starts from the shared integration tip all the same.
    assert!(a.path().join(".worktrees/t-1/from-b.txt").exists());
}

/// specs/ledger.md *Quota*: a usage limit a run hits on host A is recorded in etcd; host
/// B's supervisor of the same backend, on the same key, waits for that reset instead of
/// running its agent to discover the limit — and says why in `liza status`.
#[test]
fn a_usage_limit_hit_on_one_host_makes_the_other_hosts_supervisor_wait() {
    let Some(hosts) = Hosts::start() else { return };
    let project = &hosts.project;
    add(&project.repo, "t-1", "");
    add(&project.repo, "t-2", "");
    configure(&project.repo, |c| c.default_cli = Some("claude".into()));
    let fakes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-clis");
    let path = format!("{}:{}", fakes.display(), std::env::var("PATH").unwrap());
    let env = |host: &'static str| {
        vec![
            ("LIZA_HOST_ID", host.to_owned()),
            ("PATH", path.clone()),
            ("ANTHROPIC_API_KEY", "sk-ant-shared-0123456789".to_owned()),
        ]
    };
    let start = |checkout: &Repo, id: &str, host: &'static str| {
        let env = env(host);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        project.supervisor_in(checkout, "coder", id, &env)
    };
    project.step(
        "coder",
        "default",
        "echo \"You've hit your usage limit · retry in 30m\"\nexit 1\n",
    );
    let a = start(&project.repo, "coder-1", "host-a");
    project.wait_until("the limit recorded in etcd", GUARD_HOSTS, || {
        json(&project.repo.liza(&["--json", "status"]))["result"]["usage"]["limits"]
            .as_array()
            .is_some_and(|l| !l.is_empty())
    });
    let b = start(&hosts.b, "coder-2", "host-b");
    project.wait_until("coder-2 waiting for the usage limit", GUARD_HOSTS, || {
        waiting_of(&project.repo, "coder-2").as_deref() == Some("usage_limit")
    });
    std::thread::sleep(Duration::from_secs(2));
    let runs = project.runs();
    assert!(
        runs.iter().all(|r| !r.contains("coder-2")),
        "host B never ran its agent: {runs:?}"
    );
    let limits = json(&hosts.b.liza(&["--json", "status"]))["result"]["usage"]["limits"].clone();
    assert_eq!(limits[0]["backend"], "claude", "{limits}");
    assert_eq!(limits[0]["seen_by"], "coder-1", "{limits}");
    drop((a, b));
}

const GUARD_HOSTS: Duration = Duration::from_secs(90);
