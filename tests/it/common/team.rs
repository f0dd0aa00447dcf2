//! The team's moves through the real CLI, for end-to-end tests: adding tasks, registering
//! agents, acting as an agent, committing in a worktree, reading the model, and test
//! set-up through the store as a person's edit would do it.

use std::path::Path;

use super::*;

pub const SPEC: &str = "specs/vision.md";

pub fn add(repo: &Repo, id: &str, deps: &str) {
    let mut args = vec![
        "add-task",
        "--id",
        id,
        "--desc",
        "Implement part of the report flag",
        "--spec",
        SPEC,
        "--done",
        "report --json prints a totals key",
        "--scope",
        "the report command",
        "--finalize",
    ];
    if !deps.is_empty() {
        args.extend(["--depends", deps]);
    }
    assert_success(&repo.liza(&args));
}

/// A task left in DRAFT (not finalized), to amend or edit by hand.
pub fn add_draft(repo: &Repo, id: &str) {
    assert_success(&repo.liza(&[
        "add-task",
        "--id",
        id,
        "--desc",
        "Parse the flag",
        "--spec",
        SPEC,
        "--done",
        "report --json prints a totals key",
        "--scope",
        "the option parser",
    ]));
}

pub fn register(repo: &Repo, agent: &str) -> String {
    let out = repo.liza(&["register", agent]);
    assert_success(&out);
    stdout(&out).trim().to_owned()
}

pub fn as_agent<'a>(agent: &'a str, generation: &'a str) -> [(&'a str, &'a str); 2] {
    [
        ("LIZA_AGENT_ID", agent),
        ("LIZA_AGENT_GENERATION", generation),
    ]
}

/// state.yaml as the model's JSON (field names as in the file).
pub fn model(repo: &Repo) -> serde_json::Value {
    let store = liza::ops::open_store(repo.path()).unwrap();
    serde_json::to_value(store.snapshot().unwrap().state).unwrap()
}

pub fn status(repo: &Repo, task: &str) -> String {
    let state = model(repo);
    state["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == task)
        .unwrap()["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub fn assert_valid(repo: &Repo) {
    let out = repo.liza(&["validate"]);
    assert_success(&out);
}

/// A refused command exits 1 and leaves every file byte-identical.
pub fn assert_refused(repo: &Repo, env: &[(&str, &str)], args: &[&str], says: &str) {
    let before = repo.files();
    let out = repo.liza_env(env, args);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains(says),
        "{args:?}: expected {says:?} in {}",
        stderr(&out)
    );
    assert_eq!(before, repo.files(), "{args:?} changed files");
}

pub fn commit_in(repo: &Repo, worktree: &Path, file: &str, text: &str) -> String {
    std::fs::write(worktree.join(file), text).unwrap();
    repo.git_in(worktree, &["add", "-A"]);
    repo.git_in(worktree, &["commit", "-q", "-m", &format!("edit {file}")]);
    repo.git_in(worktree, &["rev-parse", "HEAD"])
        .trim()
        .to_owned()
}

/// Changes the state through the store (test set-up a person could do by hand), logged
/// as `action`.
pub fn edit_state(
    repo: &Repo,
    action: &str,
    mut change: impl FnMut(&mut liza::blackboard::State, liza::blackboard::Timestamp),
) {
    let store = liza::ops::open_store(repo.path()).unwrap();
    store
        .transact(&liza::blackboard::Actor::Human, |tx| {
            change(&mut tx.state, tx.now);
            tx.log_named(action);
            Ok::<_, ()>(())
        })
        .unwrap();
}

/// Sets `task`'s lease in the past and the lease period to 2 s: a claimant that watches
/// it that long without seeing it renewed takes it over (specs/blackboard.md *Leases are
/// observed*).
pub fn expire_lease(repo: &Repo, task: &str) {
    let id = liza::blackboard::TaskId::parse(task).unwrap();
    edit_state(repo, "test_expire", |state, now| {
        state.config.lease_duration = Some(2);
        state.config.heartbeat_interval = Some(1);
        state.task_mut(&id).unwrap().lease_expires = Some(now.plus_seconds(-1));
    });
}

/// Sets a config value through the store, as a person's edit would.
pub fn configure(repo: &Repo, mut change: impl FnMut(&mut liza::blackboard::model::Config)) {
    edit_state(repo, "test_config", |state, _| change(&mut state.config));
}

/// A `retry_loop` anomaly on `task` with `pattern` as its error pattern.
pub fn retry_loop(repo: &Repo, task: &str, pattern: &str) {
    assert_success(&repo.liza(&[
        "anomaly",
        "--type",
        "retry_loop",
        "--task",
        task,
        "--detail",
        "count=3",
        "--detail",
        &format!("error_pattern={pattern}"),
    ]));
}

/// Takes `task` to APPROVED with `file` committed, by coder-1 and code-reviewer-1
/// (registered on first use).
pub fn approve(repo: &Repo, task: &str, file: &str) {
    approve_with(repo, task, &[(file, "done\n")]);
}

/// Takes `task` to APPROVED with `files` (path, text) committed.
pub fn approve_with(repo: &Repo, task: &str, files: &[(&str, &str)]) {
    add(repo, task, "");
    let generation = |agent: &str| {
        model(repo)["agents"][agent]["generation"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| register(repo, agent))
    };
    let coder = generation("coder-1");
    let reviewer = generation("code-reviewer-1");
    assert_success(&repo.liza(&["claim-task", task, "coder-1"]));
    let worktree = repo.path().join(".worktrees").join(task);
    for (file, text) in files {
        let path = worktree.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let head = commit_in(repo, &worktree, files[0].0, files[0].1);
    assert_success(&repo.liza_env(
        &as_agent("coder-1", &coder),
        &["submit-for-review", task, &head],
    ));
    assert_success(&repo.liza(&["claim-review", task, "code-reviewer-1"]));
    assert_success(&repo.liza_env(
        &as_agent("code-reviewer-1", &reviewer),
        &["submit-verdict", task, "approve", "--commit", &head],
    ));
}
