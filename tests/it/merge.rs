//! The merge pipeline end to end (specs/git.md *Merge*, specs/quality.md R6), with the real `liza`
//! binary and real repositories: fast-forward and merge commits, conflicts and the
//! integration fix, integration checks, an integration branch moved during a merge,
//! crashes mid-merge, worktrees and branches deleted by hand, concurrent merges, `gc`, and
//! the human's main checkout left untouched throughout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::supervision::alive;
use crate::common::team::*;
use crate::common::*;
use serde_json::Value;

/// A project with registered coders and a reviewer; `script` is committed as
/// `scripts/integration-test.sh` before `liza init`.
pub(crate) struct Team {
    pub(crate) repo: Repo,
    generations: BTreeMap<String, String>,
}

impl Team {
    pub(crate) fn new(script: Option<&str>) -> Team {
        Team::with_coders(script, 3)
    }

    /// A team of `coders` coders (`coder-1`…) and one reviewer.
    pub(crate) fn with_coders(script: Option<&str>, coders: usize) -> Team {
        let repo = Repo::new();
        if let Some(script) = script {
            write(&repo.path().join("scripts/integration-test.sh"), script);
            repo.git(&["add", "."]);
            repo.git(&["commit", "-q", "-m", "integration test"]);
        }
        assert_success(&repo.liza(&["init", "Add a --json flag to the report CLI"]));
        let mut generations = BTreeMap::new();
        let agents = (1..=coders)
            .map(|n| format!("coder-{n}"))
            .chain(["code-reviewer-1".to_owned()]);
        for agent in agents {
            let generation = register(&repo, &agent);
            generations.insert(agent, generation);
        }
        Team { repo, generations }
    }

    pub(crate) fn env<'a>(&'a self, agent: &'a str) -> [(&'a str, &'a str); 2] {
        as_agent(agent, &self.generations[agent])
    }

    pub(crate) fn worktree(&self, task: &str) -> PathBuf {
        self.repo.path().join(".worktrees").join(task)
    }

    /// Adds and claims `task` for `coder`, commits `files` in its worktree; returns HEAD.
    pub(crate) fn work(&self, task: &str, coder: &str, files: &[(&str, &str)]) -> String {
        add(&self.repo, task, "");
        assert_success(&self.repo.liza(&["claim-task", task, coder]));
        self.commit(task, files)
    }

    pub(crate) fn commit(&self, task: &str, files: &[(&str, &str)]) -> String {
        let wt = self.worktree(task);
        for (path, text) in files {
            write(&wt.join(path), text);
        }
        self.repo.git_in(&wt, &["add", "-A"]);
        self.repo
            .git_in(&wt, &["commit", "-q", "-m", &format!("work on {task}")]);
        self.head(&wt)
    }

    pub(crate) fn head(&self, dir: &Path) -> String {
        self.repo
            .git_in(dir, &["rev-parse", "HEAD"])
            .trim()
            .to_owned()
    }

    /// Submits `task` (its worktree HEAD) as `coder` and has the reviewer approve it.
    pub(crate) fn approve(&self, task: &str, coder: &str) -> String {
        let head = self.head(&self.worktree(task));
        assert_success(
            &self
                .repo
                .liza_env(&self.env(coder), &["submit-for-review", task, &head]),
        );
        assert_success(&self.repo.liza(&["claim-review", task, "code-reviewer-1"]));
        assert_success(&self.repo.liza_env(
            &self.env("code-reviewer-1"),
            &["submit-verdict", task, "approve", "--commit", &head],
        ));
        head
    }

    pub(crate) fn approved(&self, task: &str, coder: &str, files: &[(&str, &str)]) -> String {
        self.work(task, coder, files);
        self.approve(task, coder)
    }

    /// `liza --json merge <task>`: the exit code and the transition's value.
    pub(crate) fn merge(&self, task: &str) -> (i32, Value) {
        let out = self.repo.liza(&["--json", "merge", task]);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("merge {task}: {}{}", stdout(&out), stderr(&out)));
        (
            out.status.code().unwrap_or(-1),
            v["result"]["value"].clone(),
        )
    }

    pub(crate) fn integration(&self) -> String {
        self.repo
            .git(&["rev-parse", "integration"])
            .trim()
            .to_owned()
    }

    pub(crate) fn task(&self, task: &str) -> Value {
        model(&self.repo)["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == task)
            .cloned()
            .unwrap()
    }

    pub(crate) fn branch_exists(&self, name: &str) -> bool {
        !self
            .repo
            .git(&["branch", "--list", name, "--format=%(refname)"])
            .trim()
            .is_empty()
    }

    pub(crate) fn log_entry(&self, action: &str, task: &str) -> Value {
        self.repo
            .log()
            .into_iter()
            .rev()
            .find(|e| e["action"] == action && e["task"] == task)
            .unwrap_or_else(|| panic!("no {action} entry for {task}"))
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The human's main checkout: HEAD (symbolic and resolved), the index file, and every
/// file outside `.git`, `.liza` and `.worktrees`.
fn main_checkout(repo: &Repo) -> (String, String, Vec<u8>, BTreeMap<PathBuf, Vec<u8>>) {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if [".git", ".liza", ".worktrees"]
                .iter()
                .any(|skip| rel == Path::new(skip))
            {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(repo.path(), repo.path(), &mut files);
    (
        repo.git(&["symbolic-ref", "HEAD"]),
        repo.git(&["rev-parse", "HEAD"]),
        std::fs::read(repo.path().join(".git/index")).unwrap(),
        files,
    )
}

#[test]
fn a_clean_fast_forward_publishes_the_approved_commit_and_leaves_the_main_checkout_alone() {
    let team = Team::new(None);
    let before = main_checkout(&team.repo);
    let head = team.approved("t-1", "coder-1", &[("report.txt", "json\n")]);
    let files = team.repo.files();
    let out = team
        .repo
        .liza_env(&team.env("code-reviewer-1"), &["merge", "t-1"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("[supervisor-only]"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files, team.repo.files(), "an agent's merge changes nothing");
    let (code, value) = team.merge("t-1");
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["status"], "MERGED");
    assert_eq!(value["merge_type"], "fast-forward");
    assert_eq!(value["merge_commit"], head.as_str());
    assert_eq!(value["drift_commits"], 0);
    assert_eq!(team.integration(), head);

    let task = team.task("t-1");
    assert_eq!(task["status"], "MERGED");
    assert_eq!(task["merge_commit"], head.as_str());
    assert!(task.get("worktree").is_none() && task.get("merge_intent").is_none());
    assert!(!team.worktree("t-1").exists(), "the worktree is removed");
    assert!(
        !team.branch_exists("task/t-1"),
        "the merged branch is deleted"
    );
    assert!(
        !team.repo.git(&["worktree", "list"]).contains("t-1"),
        "git's worktree entry is gone"
    );
    let entry = team.log_entry("merged", "t-1");
    assert_eq!(entry["merge_type"], "fast-forward");
    assert_eq!(entry["drift_commits"], 0);
    let history = task["history"].as_array().unwrap();
    assert_eq!(history.last().unwrap()["event"], "merged");
    assert_eq!(
        model(&team.repo)["sprint"]["metrics"]["tasks_done"],
        1,
        "sprint metrics count the merge"
    );
    assert_eq!(
        main_checkout(&team.repo),
        before,
        "the main checkout changed"
    );
    assert_success(&team.repo.liza(&["validate"]));
}

#[test]
fn a_merge_commit_is_built_when_integration_moved_since_the_claim() {
    let team = Team::new(None);
    let before = main_checkout(&team.repo);
    // Both claimed on one base; t-2 approved only once t-1 is merged.
    team.work("t-1", "coder-1", &[("report.txt", "json\n")]);
    team.work("t-2", "coder-2", &[("totals.txt", "totals\n")]);
    let first = team.approve("t-1", "coder-1");
    assert_eq!(team.merge("t-1").0, 0);
    let second = team.approve("t-2", "coder-2");
    let (code, value) = team.merge("t-2");
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["merge_type"], "merge-commit");
    assert_eq!(value["drift_commits"], 1, "t-1 landed after t-2's base");
    let tip = team.integration();
    assert_eq!(value["merge_commit"], tip.as_str());
    let parents = team.repo.git(&["rev-list", "--parents", "-n", "1", &tip]);
    assert_eq!(
        parents.split_whitespace().skip(1).collect::<Vec<_>>(),
        [first.as_str(), second.as_str()],
        "first parent is the old integration tip"
    );
    let subject = team.repo.git(&["log", "-1", "--format=%s%n%an", &tip]);
    assert!(
        subject.starts_with("Merge task/t-2: "),
        "merge commit subject: {subject}"
    );
    assert!(subject.contains("liza"));
    let files = team.repo.git(&["ls-tree", "--name-only", "integration"]);
    assert!(files.contains("report.txt") && files.contains("totals.txt"));
    assert_eq!(main_checkout(&team.repo), before);
}

#[test]
fn a_conflict_fails_integration_and_an_integration_fix_resolves_it() {
    let team = Team::new(None);
    let before = main_checkout(&team.repo);
    team.work("t-1", "coder-1", &[("report.txt", "one\n")]);
    team.work("t-2", "coder-2", &[("report.txt", "two\n")]);
    team.approve("t-1", "coder-1");
    assert_eq!(team.merge("t-1").0, 0);
    team.approve("t-2", "coder-2");
    let tip = team.integration();

    let (code, value) = team.merge("t-2");
    assert_eq!(code, 1, "a failed merge exits 1: {value}");
    assert_eq!(value["status"], "INTEGRATION_FAILED");
    assert_eq!(value["kind"], "conflict");
    assert_eq!(value["paths"], serde_json::json!(["report.txt"]));
    assert_eq!(team.integration(), tip, "nothing was published");
    let task = team.task("t-2");
    assert_eq!(task["status"], "INTEGRATION_FAILED");
    assert_eq!(task["integration_failure"]["kind"], "conflict");
    assert_eq!(
        task["integration_failure"]["paths"],
        serde_json::json!(["report.txt"])
    );
    assert!(task.get("merge_intent").is_none());
    assert!(team.worktree("t-2").exists(), "the worktree is kept");

    // Any coder takes the fix; the integration tip is merged in with conflict markers.
    let out = team.repo.liza(&["--json", "claim-task", "t-2", "coder-3"]);
    assert_success(&out);
    let claim: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        claim["result"]["value"]["event"],
        "claimed_for_integration_fix"
    );
    assert_eq!(
        claim["result"]["value"]["conflicts"],
        serde_json::json!(["report.txt"])
    );
    let task = team.task("t-2");
    assert_eq!(task["integration_fix"], true);
    assert_eq!(
        task["base_commit"],
        tip.as_str(),
        "the new base is the tip merged in"
    );
    let wt = team.worktree("t-2");
    let marked = std::fs::read_to_string(wt.join("report.txt")).unwrap();
    assert!(
        marked.contains("<<<<<<<") && marked.contains(">>>>>>> integration"),
        "{marked}"
    );

    // The coder resolves and commits (git concludes the merge), review, merge.
    write(&wt.join("report.txt"), "one and two\n");
    team.repo
        .git_in(&wt, &["commit", "-q", "-am", "resolve the conflict"]);
    let resolved = team.head(&wt);
    let parents = team
        .repo
        .git(&["rev-list", "--parents", "-n", "1", &resolved]);
    assert_eq!(parents.split_whitespace().count(), 3, "a merge commit");
    team.approve("t-2", "coder-3");
    let (code, value) = team.merge("t-2");
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["merge_type"], "fast-forward");
    assert_eq!(team.integration(), resolved);
    assert_eq!(
        team.repo.git(&["show", "integration:report.txt"]),
        "one and two\n"
    );
    let events: Vec<String> = team.task("t-2")["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["event"].as_str().unwrap().to_owned())
        .collect();
    assert!(events.ends_with(&[
        "integration_failed".to_owned(),
        "claimed_for_integration_fix".to_owned(),
        "ready_for_review".to_owned(),
        "review_claimed".to_owned(),
        "approved".to_owned(),
        "merged".to_owned(),
    ]));
    assert_eq!(main_checkout(&team.repo), before);
    assert_success(&team.repo.liza(&["validate"]));
}

const NEEDS_OK_FILE: &str =
    "#!/bin/sh\nif [ ! -f ok.txt ]; then echo \"ok.txt is missing\"; exit 1; fi\necho all good\n";

#[test]
fn failing_integration_checks_publish_nothing_and_point_to_their_log() {
    let team = Team::new(Some(NEEDS_OK_FILE));
    let before = main_checkout(&team.repo);
    let tip = team.integration();
    team.approved("t-1", "coder-1", &[("other.txt", "x\n")]);
    let (code, value) = team.merge("t-1");
    assert_eq!(code, 1);
    assert_eq!(value["status"], "INTEGRATION_FAILED");
    assert_eq!(value["kind"], "tests");
    assert_eq!(team.integration(), tip, "the integration ref is unchanged");
    let log = value["log"].as_str().unwrap().to_owned();
    assert!(
        log.starts_with(".liza/integration-test-t-1-") && log.ends_with(".log"),
        "{log}"
    );
    let text = std::fs::read_to_string(team.repo.path().join(&log)).unwrap();
    assert!(text.contains("ok.txt is missing"), "{text}");
    assert!(
        value["reason"]
            .as_str()
            .unwrap()
            .contains("scripts/integration-test.sh")
    );
    let task = team.task("t-1");
    assert_eq!(task["integration_failure"]["log"], log.as_str());
    assert!(team.worktree("t-1").exists());

    // A task that makes the check pass merges.
    team.approved("t-2", "coder-2", &[("ok.txt", "ok\n")]);
    assert_eq!(team.merge("t-2").0, 0);
    assert_eq!(main_checkout(&team.repo), before);
}

#[test]
fn the_integration_test_runs_as_it_is_at_the_integration_tip() {
    let team = Team::new(Some(NEEDS_OK_FILE));
    // A person lifted the protection: the task rewrites the test to always pass.
    configure(&team.repo, |c| c.protected_paths = Some(Vec::new()));
    team.approved(
        "t-1",
        "coder-1",
        &[("scripts/integration-test.sh", "#!/bin/sh\nexit 0\n")],
    );
    let (code, value) = team.merge("t-1");
    assert_eq!(code, 1, "judged by the tip's script: {value}");
    assert_eq!(value["kind"], "tests");
}

#[test]
fn a_change_to_the_integration_test_is_refused_at_submit_unless_allowed() {
    let team = Team::new(Some(NEEDS_OK_FILE));
    team.work(
        "t-1",
        "coder-1",
        &[("scripts/integration-test.sh", "#!/bin/sh\nexit 0\n")],
    );
    let before = team.repo.files();
    let out = team
        .repo
        .liza_env(&team.env("coder-1"), &["submit-for-review", "t-1"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("scripts/integration-test.sh"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, team.repo.files(), "a refusal changes nothing");

    // With allow_protected the reviewer saw the change, and the candidate's script runs.
    let mut args = vec![
        "add-task",
        "--id",
        "t-2",
        "--desc",
        "Relax the integration test",
        "--spec",
        SPEC,
        "--done",
        "the test passes",
        "--scope",
        "tests",
        "--allow-protected",
        "scripts/integration-test.sh",
        "--finalize",
    ];
    assert_success(&team.repo.liza(&args));
    args.clear();
    assert_success(&team.repo.liza(&["claim-task", "t-2", "coder-2"]));
    team.commit(
        "t-2",
        &[("scripts/integration-test.sh", "#!/bin/sh\nexit 0\n")],
    );
    team.approve("t-2", "coder-2");
    let (code, value) = team.merge("t-2");
    assert_eq!(code, 0, "{value}");
}

#[test]
fn on_merge_checks_run_with_their_timeouts_and_others_do_not() {
    let team = Team::new(None);
    configure(&team.repo, |c| {
        c.checks = Some(vec![
            check("never-on-merge", &["false"], None, false),
            check("needs-extra", &["test", "-f", "extra.txt"], None, true),
        ]);
    });
    team.approved("t-1", "coder-1", &[("a.txt", "a\n")]);
    let (code, value) = team.merge("t-1");
    assert_eq!(code, 1, "{value}");
    assert!(value["reason"].as_str().unwrap().contains("needs-extra"));

    configure(&team.repo, |c| {
        c.checks = Some(vec![check("slow", &["sleep", "30"], Some(1), true)]);
    });
    team.approved("t-2", "coder-2", &[("extra.txt", "x\n")]);
    let started = Instant::now();
    let (code, value) = team.merge("t-2");
    assert_eq!(code, 1, "{value}");
    assert!(value["reason"].as_str().unwrap().contains("timed out"));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the timeout stopped it"
    );

    configure(&team.repo, |c| {
        c.checks = Some(vec![check(
            "needs-extra",
            &["test", "-f", "extra.txt"],
            None,
            true,
        )]);
    });
    team.approved("t-3", "coder-3", &[("extra.txt", "x\n")]);
    assert_eq!(team.merge("t-3").0, 0);
}

pub(crate) fn check(
    name: &str,
    argv: &[&str],
    timeout: Option<i64>,
    on_merge: bool,
) -> liza::blackboard::model::Check {
    liza::blackboard::model::Check {
        name: name.into(),
        run: liza::blackboard::model::CommandSpec::Argv(
            argv.iter().map(|a| (*a).to_owned()).collect(),
        ),
        timeout,
        on_review: None,
        on_merge: Some(on_merge),
        extra: Default::default(),
    }
}

/// An integration test that commits to `integration` from outside liza while it runs:
/// once (when `$HOME/moved` does not exist yet), or every time.
fn moving_script(always: bool) -> String {
    let guard = if always {
        ""
    } else {
        "[ -f \"$HOME/moved\" ] && exit 0\ntouch \"$HOME/moved\"\n"
    };
    format!(
        "#!/bin/sh\nset -e\n{guard}n=$(date +%s%N)\nexport GIT_INDEX_FILE=\"$HOME/index-$n\"\n\
         git read-tree \"$LIZA_INTEGRATION_TIP\"\n\
         blob=$(echo \"$n\" | git hash-object -w --stdin)\n\
         git update-index --add --cacheinfo \"100644,$blob,outside-$n.txt\"\n\
         tree=$(git write-tree)\n\
         c=$(git commit-tree \"$tree\" -p \"$LIZA_INTEGRATION_TIP\" -m \"outside commit\")\n\
         git update-ref refs/heads/integration \"$c\"\n"
    )
}

/// The integration script plays a person moving `integration` from outside liza while
/// the checks run: a sandboxed check cannot (specs/sandbox.md *Checks*), so these run
/// with the sandbox off.
fn moving_team(always: bool) -> Team {
    let team = Team::new(Some(&moving_script(always)));
    configure(&team.repo, |c| {
        c.sandbox = Some(liza::blackboard::model::SandboxConfig {
            mode: Some(liza::blackboard::model::SandboxMode::Off),
            ..Default::default()
        });
    });
    team
}

#[test]
fn integration_moved_during_the_checks_is_merged_again_against_the_new_tip() {
    let team = moving_team(false);
    let head = team.approved("t-1", "coder-1", &[("report.txt", "json\n")]);
    let (code, value) = team.merge("t-1");
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["retries"], 1);
    assert_eq!(value["merge_type"], "merge-commit");
    let tip = team.integration();
    let parents = team.repo.git(&["rev-list", "--parents", "-n", "1", &tip]);
    let parents: Vec<&str> = parents.split_whitespace().skip(1).collect();
    assert_eq!(parents.len(), 2);
    assert_eq!(parents[1], head, "the approved commit is merged");
    assert_eq!(
        team.repo
            .git(&["log", "-1", "--format=%s", parents[0]])
            .trim(),
        "outside commit",
        "the outside commit is kept as the first parent"
    );
    let files = team.repo.git(&["ls-tree", "--name-only", "integration"]);
    assert!(files.contains("report.txt") && files.contains("outside-"));
    assert_eq!(team.log_entry("merged", "t-1")["publish_retries"], 1);
    let log = team.task("t-1")["history"].as_array().unwrap().len();
    assert!(log > 0);
}

#[test]
fn integration_moving_on_every_attempt_gives_up_after_three_retries() {
    let team = moving_team(true);
    team.approved("t-1", "coder-1", &[("report.txt", "json\n")]);
    let (code, value) = team.merge("t-1");
    assert_eq!(code, 1, "{value}");
    assert!(
        value["reason"].as_str().unwrap().contains("moved 4 times"),
        "{value}"
    );
    assert!(
        !team
            .repo
            .git(&["ls-tree", "--name-only", "integration"])
            .contains("report.txt"),
        "nothing of the task was published"
    );
}

/// A merge killed while its check runs: the next merge drops its intent and merges. A
/// sandboxed check dies with the merge that started it (bubblewrap's --die-with-parent);
/// an unsandboxed one is left running, and the next merge stops it.
#[test]
fn a_merge_killed_during_its_checks_is_recovered_by_the_next_merge() {
    for sandboxed in [true, false] {
        if sandboxed && !sandbox_available() {
            continue;
        }
        killed_during_checks(sandboxed);
    }
}

fn killed_during_checks(sandboxed: bool) {
    let script = "#!/bin/sh\nif [ -f \"$SIGNALS/hang\" ]; then touch \"$SIGNALS/started\"; sleep 120; fi\nexit 0\n";
    let team = Team::new(Some(script));
    // The check reads its signals from a directory the sandbox shares with it.
    let signals = tempfile::tempdir().unwrap();
    let shared = signals.path().display().to_string();
    configure(&team.repo, |c| {
        c.sandbox = Some(liza::blackboard::model::SandboxConfig {
            mode: Some(if sandboxed {
                liza::blackboard::model::SandboxMode::Auto
            } else {
                liza::blackboard::model::SandboxMode::Off
            }),
            writable: Some(vec![shared.clone()]),
            ..Default::default()
        });
    });
    let home = signals.path().to_path_buf();
    team.approved("t-1", "coder-1", &[("report.txt", "json\n")]);
    write(&home.join("hang"), "");
    let mut child = team
        .repo
        .command()
        .env("SIGNALS", &home)
        .args(["merge", "t-1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !home.join("started").exists() {
        assert!(Instant::now() < deadline, "the check never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The merger records the check's group once it spawned it: the check may mark itself
    // started first (seen under load, the full suite on 2 cores).
    let lock_file = team.repo.liza_dir().join("integration.lock");
    while !std::fs::read_to_string(&lock_file).is_ok_and(|l| l.contains("check_pgid=")) {
        assert!(
            Instant::now() < deadline,
            "the running check is never recorded"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(team.task("t-1").get("merge_intent").is_some());
    let lock = std::fs::read_to_string(team.repo.liza_dir().join("integration.lock")).unwrap();
    let pgid: i32 = lock
        .lines()
        .find_map(|l| l.strip_prefix("check_pgid="))
        .expect("the running check is recorded")
        .parse()
        .unwrap();
    if sandboxed {
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(pgid) {
            assert!(
                Instant::now() < deadline,
                "the sandboxed check outlived the merge that started it"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    } else {
        assert!(alive(pgid), "the orphaned check still runs");
    }

    std::fs::remove_file(home.join("hang")).unwrap();
    let out = team.repo.liza(&["--json", "merge", "t-1"]);
    assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["value"]["status"], "MERGED");
    assert_eq!(v["result"]["value"]["recovered"][0]["action"], "dropped");
    assert!(team.log_entry("merge_intent_dropped", "t-1").is_object());
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pgid) {
        assert!(
            Instant::now() < deadline,
            "the orphaned check was not stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_crash_before_or_after_publishing_is_finished_or_started_over() {
    let team = Team::new(None);
    let first = team.approved("t-1", "coder-1", &[("report.txt", "json\n")]);
    let tip = team.integration();

    // Killed after the checks, before publishing: nothing published, the merge starts over.
    let out = team.repo.liza_env(
        &[("LIZA_FAILPOINT", "merge-before-publish")],
        &["merge", "t-1"],
    );
    assert!(!out.status.success());
    assert_eq!(team.integration(), tip);
    assert_eq!(team.task("t-1")["status"], "APPROVED");
    assert!(team.task("t-1").get("merge_intent").is_some());

    // Killed right after publishing: the next merge (of another task) finishes it.
    let out = team.repo.liza_env(
        &[("LIZA_FAILPOINT", "merge-after-publish")],
        &["merge", "t-1"],
    );
    assert!(!out.status.success());
    assert_eq!(team.integration(), first, "published before the crash");
    assert_eq!(team.task("t-1")["status"], "APPROVED");
    assert_eq!(
        team.task("t-1")["merge_intent"]["candidate"],
        first.as_str()
    );
    team.approved("t-2", "coder-2", &[("totals.txt", "t\n")]);
    let (code, value) = team.merge("t-2");
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["recovered"][0]["task"], "t-1");
    assert_eq!(value["recovered"][0]["action"], "finished");
    let task = team.task("t-1");
    assert_eq!(task["status"], "MERGED");
    assert_eq!(task["merge_commit"], first.as_str());
    assert!(!team.worktree("t-1").exists());
    assert_eq!(team.task("t-2")["status"], "MERGED");
    assert_success(&team.repo.liza(&["validate"]));
}

#[test]
fn a_worktree_or_branch_deleted_by_hand_loses_no_commit() {
    let team = Team::new(None);
    let first = team.approved("t-1", "coder-1", &[("a.txt", "a\n")]);
    std::fs::remove_dir_all(team.worktree("t-1")).unwrap();
    let (code, value) = team.merge("t-1");
    assert_eq!(code, 0, "{value}");
    assert_eq!(team.integration(), first);

    let second = team.approved("t-2", "coder-2", &[("b.txt", "b\n")]);
    team.repo.git(&["update-ref", "-d", "refs/heads/task/t-2"]);
    let out = team.repo.liza(&["merge", "t-2"]);
    assert_success(&out);
    assert!(stderr(&out).contains("recreated"), "{}", stderr(&out));
    assert!(
        team.repo
            .git(&["log", "--format=%H", "integration"])
            .contains(&second)
    );

    // Commits made after the approval are not merged: the task goes back to review with
    // the branch as it is now, and the branch keeps them.
    let approved = team.approved("t-3", "coder-3", &[("c.txt", "c\n")]);
    let later = team.commit("t-3", &[("c.txt", "changed after approval\n")]);
    let tip = team.integration();
    let (code, value) = team.merge("t-3");
    assert_eq!(code, 1, "{value}");
    assert_eq!(value["status"], "READY_FOR_REVIEW", "{value}");
    assert!(
        value["reason"].as_str().unwrap().contains(&approved[..12]),
        "{value}"
    );
    assert_eq!(team.integration(), tip, "nothing was published");
    assert_eq!(team.repo.git(&["rev-parse", "task/t-3"]).trim(), later);
    let task = team.task("t-3");
    assert_eq!(task["status"], "READY_FOR_REVIEW");
    assert_eq!(task["review_commit"], later.as_str());
    assert!(task["approved_by"].is_null() && task["merge_intent"].is_null());
    assert_eq!(team.log_entry("approval_withdrawn", "t-3")["agent"], "liza");
    // Reviewed again, the branch as it is is merged.
    assert_success(&team.repo.liza(&["claim-review", "t-3", "code-reviewer-1"]));
    assert_success(&team.repo.liza_env(
        &team.env("code-reviewer-1"),
        &["submit-verdict", "t-3", "approve", "--commit", &later],
    ));
    assert_eq!(team.merge("t-3").0, 0);
    assert_eq!(team.integration(), later);
}

#[test]
fn a_merge_is_refused_while_integration_is_checked_out_in_a_persons_checkout() {
    let team = Team::new(None);
    team.approved("t-1", "coder-1", &[("a.txt", "a\n")]);
    team.repo.git(&["switch", "-q", "integration"]);
    let before = team.repo.files();
    let checkout = main_checkout(&team.repo);
    let out = team.repo.liza(&["merge", "t-1"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("[integration-checked-out]"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, team.repo.files());
    assert_eq!(checkout, main_checkout(&team.repo));
}

#[test]
fn two_reviewers_merging_at_once_are_serialised_and_both_land() {
    let script = "#!/bin/sh\nsleep 0.3\nexit 0\n";
    let team = Team::new(Some(script));
    let base = team.integration();
    let a = team.approved("t-1", "coder-1", &[("a.txt", "a\n")]);
    let b = team.approved("t-2", "coder-2", &[("b.txt", "b\n")]);
    let spawn = |task: &str| {
        team.repo
            .command()
            .args(["--json", "merge", task])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (spawn("t-1"), spawn("t-2"));
    for child in [one, two] {
        let out = child.wait_with_output().unwrap();
        assert_success(&out);
    }
    assert_eq!(team.task("t-1")["status"], "MERGED");
    assert_eq!(team.task("t-2")["status"], "MERGED");
    let history = team.repo.git(&[
        "rev-list",
        "--first-parent",
        &format!("{base}..integration"),
    ]);
    assert_eq!(
        history.lines().count(),
        2,
        "one fast-forward, one merge: {history}"
    );
    let all = team.repo.git(&["rev-list", "integration"]);
    assert!(all.contains(&a) && all.contains(&b));
    let files = team.repo.git(&["ls-tree", "--name-only", "integration"]);
    assert!(files.contains("a.txt") && files.contains("b.txt"));
    assert_success(&team.repo.liza(&["validate"]));
}

#[test]
fn gc_lists_orphans_then_saves_and_removes_them() {
    let team = Team::new(None);
    // A live claim gc must not touch.
    team.work("t-live", "coder-1", &[("live.txt", "live\n")]);
    // A worktree with no task: a commit and an uncommitted file.
    let ghost = team.repo.path().join(".worktrees/ghost");
    team.repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "task/ghost",
        ghost.to_str().unwrap(),
        "integration",
    ]);
    write(&ghost.join("kept.txt"), "committed\n");
    team.repo.git_in(&ghost, &["add", "-A"]);
    team.repo
        .git_in(&ghost, &["commit", "-q", "-m", "ghost work"]);
    write(&ghost.join("draft.txt"), "uncommitted\n");
    // A leftover branch whose commits are all on integration.
    team.repo.git(&["branch", "task/old", "integration"]);
    // Something that is not a task's.
    std::fs::create_dir_all(team.repo.path().join(".worktrees/Not A Task")).unwrap();

    let before = team.repo.files();
    let out = team.repo.liza(&["--json", "gc"]);
    assert_success(&out);
    assert_eq!(before, team.repo.files(), "a dry run changes nothing");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let orphans = v["result"]["orphans"].as_array().unwrap();
    let names: Vec<&str> = orphans
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ghost", "old"]);
    assert_eq!(orphans[0]["uncommitted"], 1);
    assert_eq!(orphans[0]["unmerged_commits"], 1);
    assert_eq!(orphans[1]["unmerged_commits"], 0);
    assert_eq!(v["result"]["left_alone"], serde_json::json!(["Not A Task"]));

    let out = team.repo.liza(&["--json", "gc", "--apply"]);
    assert_success(&out);
    assert!(!ghost.exists() && !team.branch_exists("task/ghost"));
    assert!(!team.branch_exists("task/old"));
    assert_eq!(
        team.repo.git(&["show", "liza/attic/ghost-1:kept.txt"]),
        "committed\n"
    );
    assert_eq!(
        team.repo.git(&["show", "liza/attic/ghost-1:draft.txt"]),
        "uncommitted\n"
    );
    assert!(!team.repo.git(&["worktree", "list"]).contains("ghost"));
    assert!(team.worktree("t-live").join("live.txt").exists());
    assert!(team.branch_exists("task/t-live"));
    assert!(team.repo.path().join(".worktrees/Not A Task").exists());
    let out = team.repo.liza(&["gc"]);
    assert!(
        stdout(&out).contains("nothing to collect"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn merging_a_task_that_is_not_approved_is_refused_and_changes_nothing() {
    let team = Team::new(None);
    team.work("t-1", "coder-1", &[("a.txt", "a\n")]);
    let files = team.repo.files();
    for (task, says) in [("t-1", "[forbidden-transition]"), ("t-9", "no task t-9")] {
        let out = team.repo.liza(&["merge", task]);
        assert_exit(&out, 1);
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    assert_eq!(files, team.repo.files());
    assert!(
        !team.repo.liza_dir().join("integration.lock").exists(),
        "refused before any lock was taken"
    );
}

/// A stale ref lock of git's on integration (a git killed while it moved the branch) is
/// named — the file, its age, that no process holds it, the fix — after liza waited for
/// it within the lock timeout; the approved task is never failed for it, and merges once
/// the lock is gone (specs/git.md *Git's locks*).
#[test]
fn a_stale_integration_ref_lock_is_named_waited_for_and_never_a_conflict() {
    let team = Team::new(None);
    configure(&team.repo, |c| c.lock_timeout = Some(1));
    team.approved("t-1", "coder-1", &[("report.txt", "json\n")]);
    let lock = team.repo.path().join(".git/refs/heads/integration.lock");
    std::fs::write(&lock, "").unwrap();
    let before = team.integration();
    refused_for_the_lock_then_merged(
        &team,
        &lock,
        &["refs/heads/integration.lock", "no process holds it open"],
        || assert_eq!(team.integration(), before),
    );
}

/// `merge t-1` refused for git's `lock`: named with its fix (`says`), never taken for a
/// moved branch nor failed; the task stays APPROVED (`unchanged` checks the rest) and
/// merges once the lock is gone.
fn refused_for_the_lock_then_merged(team: &Team, lock: &Path, says: &[&str], unchanged: impl Fn()) {
    let out = team.repo.liza(&["merge", "t-1"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let said = stderr(&out);
    for part in says.iter().chain(&["rm '"]) {
        assert!(said.contains(part), "no {part:?} in: {said}");
    }
    assert!(!said.contains("moved"), "taken for a moved branch: {said}");
    assert_eq!(team.task("t-1")["status"], "APPROVED");
    unchanged();
    assert!(
        !team
            .repo
            .log()
            .iter()
            .any(|e| e["action"] == "integration_failed"),
        "failed for a lock"
    );
    std::fs::remove_file(lock).unwrap();
    let (code, value) = team.merge("t-1");
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["status"], "MERGED");
}

/// A stale ref lock on the shared remote (a push there killed mid-way) is named as
/// git's lock on that remote — never taken for integration moved by another host — and
/// the task stays APPROVED until the lock is gone (specs/git.md *Git's locks*).
#[test]
fn a_stale_ref_lock_on_the_shared_remote_is_named_and_never_a_moved_branch() {
    let team = Team::new(None);
    let remote = tempfile::tempdir().unwrap();
    let url = remote.path().display().to_string();
    team.repo.git(&["init", "-q", "--bare", &url]);
    team.repo.git(&["push", "-q", &url, "main", "integration"]);
    configure(&team.repo, |c| {
        c.lock_timeout = Some(1);
        c.git_remote = Some(url.clone());
    });
    team.approved("t-1", "coder-1", &[("report.txt", "json\n")]);
    let lock = remote.path().join("refs/heads/integration.lock");
    std::fs::write(&lock, "").unwrap();
    let remote_tip = || {
        let out = std::process::Command::new("git")
            .args(["rev-parse", "integration"])
            .current_dir(remote.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let before = remote_tip();
    refused_for_the_lock_then_merged(
        &team,
        &lock,
        &["refs/heads/integration.lock", "on the shared remote"],
        || assert_eq!(remote_tip(), before),
    );
    assert_ne!(remote_tip(), before, "published on the remote");
}

/// `gc --apply` that could not remove a worktree says so with a non-zero exit, the work
/// saved all the same; once the obstacle is gone it removes it. (A tmpfs mounted inside
/// the worktree is the obstacle: root removes anything else; where mounting is not
/// allowed the test says so and is skipped.)
#[test]
fn gc_apply_that_cannot_remove_a_worktree_fails_and_says_which() {
    let team = Team::new(None);
    let ghost = team.repo.path().join(".worktrees/ghost");
    team.repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "task/ghost",
        ghost.to_str().unwrap(),
        "integration",
    ]);
    let mountpoint = ghost.join("mnt");
    std::fs::create_dir_all(&mountpoint).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mountpoint)
        .output()
        .unwrap();
    if !mounted.status.success() {
        eprintln!(
            "skipped: cannot mount a tmpfs here ({})",
            String::from_utf8_lossy(&mounted.stderr).trim()
        );
        return;
    }
    write(&mountpoint.join("busy.txt"), "in the way\n");
    let out = team.repo.liza(&["--json", "gc", "--apply"]);
    let _ = std::process::Command::new("umount")
        .arg("-l")
        .arg(&mountpoint)
        .status();
    assert_exit(&out, 3);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false, "{v}");
    let ghost_line = &v["result"]["orphans"][0];
    assert_eq!(ghost_line["name"], "ghost");
    assert_eq!(ghost_line["failed"], true, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("ghost"),
        "{v}"
    );
    let out = team.repo.liza(&["gc", "--apply"]);
    assert_success(&out);
    assert!(!ghost.exists());
}

/// An approved commit whose object was truncated (a disk that failed, a copy cut short) is
/// said to be damaged, with `git fsck` as the way to look — never "not in the repository",
/// which would send people looking for work that is there.
#[test]
fn a_truncated_approved_commit_is_said_to_be_damaged_not_missing() {
    let team = Team::new(None);
    let head = team.approved("t-1", "coder-1", &[("report.txt", "json\n")]);
    let object = team
        .repo
        .path()
        .join(".git/objects")
        .join(&head[..2])
        .join(&head[2..]);
    let len = std::fs::metadata(&object).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&object)
        .unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    let before = team.repo.files();
    let out = team.repo.liza(&["merge", "t-1"]);
    assert_exit(&out, 3);
    let said = stderr(&out);
    assert!(said.contains("cannot be read"), "{said}");
    assert!(said.contains("git fsck"), "{said}");
    assert!(!said.contains("not in the repository"), "{said}");
    assert_eq!(team.task("t-1")["status"], "APPROVED");
    assert_eq!(before, team.repo.files(), "a refused merge changed files");
}

/// An integration fix that resolves the conflict entirely to integration's side leaves
/// nothing of the task to merge: it is not recorded as MERGED (integration would not hold
/// its work) but BLOCKED with "nothing of this task reaches integration" for the planner,
/// who may supersede it (specs/git.md *Merge*).
#[test]
fn a_task_whose_merge_would_change_nothing_is_never_recorded_as_merged() {
    let team = Team::new(None);
    team.approved("t-1", "coder-1", &[("shared.txt", "t-1's text\n")]);
    team.approved("t-2", "coder-2", &[("shared.txt", "t-2's text\n")]);
    assert_eq!(team.merge("t-1").0, 0);
    let tip = team.integration();
    let (code, value) = team.merge("t-2");
    assert_eq!(code, 1, "{value}");
    assert_success(&team.repo.liza(&["claim-task", "t-2", "coder-3"]));
    let wt = team.worktree("t-2");
    // Resolved to integration's side: t-2's change is dropped.
    write(&wt.join("shared.txt"), "t-1's text\n");
    team.repo
        .git_in(&wt, &["commit", "-q", "-am", "resolve to integration"]);
    team.approve("t-2", "coder-3");
    let out = team.repo.liza(&["--json", "merge", "t-2"]);
    assert_exit(&out, 1);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["value"]["status"], "BLOCKED", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing of it reaches integration"),
        "{v}"
    );
    assert_eq!(team.integration(), tip, "nothing published");
    let task = team.task("t-2");
    assert_eq!(task["status"], "BLOCKED");
    assert!(
        task["blocked_reason"]
            .as_str()
            .unwrap()
            .contains("nothing of this task reaches integration"),
        "{task}"
    );
    assert!(
        !team
            .repo
            .log()
            .iter()
            .any(|e| e["action"] == "merged" && e["task"] == "t-2"),
        "recorded as merged"
    );
    assert_eq!(
        team.repo.git(&["show", "integration:shared.txt"]),
        "t-1's text\n"
    );
    assert!(team.worktree("t-2").exists(), "its worktree is kept");
    assert_success(&team.repo.liza(&["validate"]));
    // The planner (or a person) may supersede it.
    assert_success(
        &team
            .repo
            .liza(&["abandon", "t-2", "--reason", "t-1 holds what was wanted"]),
    );
}

/// Integration moved back by hand (`git update-ref` to an older commit) takes merged work
/// away: validate and doctor name the tasks whose work left, a merge refuses to publish on
/// top (INTEGRATION_REWOUND, nothing changed), and once a person accepts the rewind —
/// each commit kept under liza/attic/ — merges go on (specs/git.md *Integration keeps what
/// was merged*).
#[test]
fn a_rewound_integration_is_named_and_nothing_is_published_on_top_until_accepted() {
    let team = Team::new(None);
    let base = team.integration();
    team.approved("t-1", "coder-1", &[("one.txt", "one\n")]);
    team.approved("t-2", "coder-2", &[("two.txt", "two\n")]);
    // One batch merges both.
    assert_eq!(team.merge("t-1").0, 0);
    assert_eq!(team.task("t-2")["status"], "MERGED");
    let t1 = team.task("t-1")["merge_commit"]
        .as_str()
        .unwrap()
        .to_owned();
    team.repo
        .git(&["update-ref", "refs/heads/integration", &base]);

    let out = team.repo.liza(&["--json", "validate"]);
    assert_exit(&out, 1);
    let findings = json(&out)["result"]["findings"].clone();
    let rewound: Vec<&str> = findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "integration-rewound")
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(rewound, ["t-1", "t-2"], "{findings}");
    let check = doctor_check(&team.repo, "integration");
    assert_eq!(check["status"], "fail", "{check}");
    assert!(check["detail"].as_str().unwrap().contains("t-1"), "{check}");

    team.approved("t-3", "coder-3", &[("three.txt", "three\n")]);
    let before = team.repo.files();
    let out = team.repo.liza(&["merge", "t-3"]);
    assert_exit(&out, 1);
    let said = stderr(&out);
    assert!(
        said.contains("was rewound") && said.contains("t-1") && said.contains("t-2"),
        "{said}"
    );
    assert!(said.contains("[integration-rewound]"), "{said}");
    assert!(said.contains("accept-rewind"), "{said}");
    assert_eq!(before, team.repo.files(), "a refused merge changed files");
    assert_eq!(team.integration(), base);
    let alerts = std::fs::read_to_string(team.repo.liza_dir().join("alerts.log")).unwrap();
    assert_eq!(alerts.matches("INTEGRATION_REWOUND").count(), 1, "{alerts}");

    assert_success(&team.repo.liza(&["integration", "accept-rewind"]));
    assert_eq!(
        team.repo.git(&["rev-parse", "liza/attic/t-1-1"]).trim(),
        t1,
        "the commit that left is kept"
    );
    assert!(
        team.task("t-1")["history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["event"] == "integration_rewind_accepted")
    );
    assert_success(&team.repo.liza(&["validate"]));
    let (code, value) = team.merge("t-3");
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["status"], "MERGED");
    // An agent may not accept it.
    let out = team
        .repo
        .liza_env(&team.env("coder-1"), &["integration", "accept-rewind"]);
    assert_exit(&out, 1);
}
