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

fn statuses(repo: &Repo) -> Vec<(String, String)> {
    let mut statuses: Vec<(String, String)> = model(repo)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    statuses.sort();
    statuses
}

#[test]
fn a_sprint_with_the_planner_and_reviewer_on_one_host_and_two_coders_on_another() {
    let Some(hosts) = Hosts::start() else { return };
    let project = &hosts.project;
    project.step(
        "planner",
        "INITIAL_PLANNING",
        "task t-1\ntask t-2\ntask t-3\ntask t-4 --depends t-1\n",
    );
    project.step("planner", "SPRINT_COMPLETE", "liza goal complete\n");
    project.step(
        "coder",
        "default",
        "work \"$key.txt\" \"the text of $key\"\nsubmit\n",
    );
    project.step("coder", "t-2.1", "work t-2.txt draft\nsubmit\n");
    project.step(
        "code-reviewer",
        "t-2.1",
        "reject 't-2.txt:1 is a draft — write the final text. Overall: rework'\n",
    );
    project.step("code-reviewer", "default", "approve\n");

    let supervisors = vec![
        hosts.on_a("planner", "planner-1"),
        hosts.on_a("code-reviewer", "code-reviewer-1"),
        hosts.on_b("coder", "coder-1"),
        hosts.on_b("coder", "coder-2"),
    ];
    for (name, out) in project.wait_all(supervisors, Duration::from_secs(240)) {
        assert!(
            out.status.success(),
            "{name} exited {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let expected: Vec<(String, String)> = ["t-1", "t-2", "t-3", "t-4"]
        .map(|t| (t.to_owned(), "MERGED".to_owned()))
        .to_vec();
    assert_eq!(statuses(&project.repo), expected);
    assert_eq!(statuses(&hosts.b), expected);
    // Every task's work is on the shared remote's integration branch.
    for t in ["t-1", "t-2", "t-3", "t-4"] {
        assert_eq!(
            hosts
                .remote_file("integration", &format!("{t}.txt"))
                .as_deref(),
            Some(format!("the text of {t}\n").as_str()),
            "{t} is not on the remote's integration"
        );
    }
    let log = project.repo.log();
    // Both hosts list the same log, with the same revisions.
    assert_eq!(log, hosts.b.log());
    assert_eq!(model(&project.repo)["goal"]["status"], "COMPLETED");
}
