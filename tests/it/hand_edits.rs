//! Hand edits with real editors and `liza edit` (specs/blackboard.md *Hand edits*): scripted
//! `EDITOR`s standing in for a person, `vim -es` and `sed -i` saving in place and by
//! rename, a copy reopened with its errors until valid or abandoned, and an edit merged
//! onto a blackboard that moved meanwhile — or refused on a real conflict.

use std::path::{Path, PathBuf};

use crate::common::team::add_draft;
use crate::common::{Repo, assert_exit, assert_success, stderr, stdout};

/// An `EDITOR` script in the repository's home directory; it gets the file as `$1` and
/// counts its runs in `editor.runs`.
fn editor(repo: &Repo, script: &str) -> PathBuf {
    let path = repo.home.path().join("editor.sh");
    let runs = repo.home.path().join("editor.runs");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nset -e\nn=$(( $(cat '{runs}' 2>/dev/null || echo 0) + 1 ))\necho $n > '{runs}'\n{script}",
            runs = runs.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn edit(repo: &Repo, editor: &Path) -> std::process::Output {
    repo.liza_env(
        &[("EDITOR", &editor.display().to_string()), ("VISUAL", "")],
        &["edit"],
    )
}

fn runs(repo: &Repo) -> u32 {
    std::fs::read_to_string(repo.home.path().join("editor.runs"))
        .map_or(0, |t| t.trim().parse().unwrap())
}

/// A blackboard holding a person's comments: `liza edit` commits exactly one revision and
/// keeps them (a commit once took its own previous revision for a concurrent save, judged
/// it as a person's edit, and did so again after each such revision until the stack ran
/// out).
#[test]
fn liza_edit_on_a_commented_blackboard_commits_once_and_keeps_the_comments() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    let commented = format!("# my own note\n{}", repo.state_text());
    std::fs::write(repo.state_path(), commented).unwrap();
    assert_success(&repo.liza(&["note", "all", "adopt the comment"]));
    let before = repo.revision();
    let script = editor(&repo, "sed -i 's/priority: 3/priority: 1/' \"$1\"\n");
    let out = edit(&repo, &script);
    assert_success(&out);
    assert_eq!(repo.revision(), before + 1, "{}", stdout(&out));
    let text = repo.state_text();
    assert!(text.starts_with("# my own note\n"), "{text}");
    assert!(text.contains("priority: 1"));
    let edits = repo
        .log()
        .iter()
        .filter(|e| e["action"] == "human_edit" && e["revision"].as_u64() > Some(before))
        .count();
    assert_eq!(edits, 1);
}

#[test]
fn liza_edit_commits_a_valid_edit() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    let script = editor(&repo, "sed -i 's/priority: 3/priority: 1/' \"$1\"\n");
    let out = edit(&repo, &script);
    assert_success(&out);
    assert!(
        stdout(&out).contains("committed as revision 3"),
        "{}",
        stdout(&out)
    );
    assert!(repo.state_text().contains("priority: 1"));
    let log = repo.log();
    let last = log.last().unwrap();
    assert_eq!(last["action"], "human_edit");
    assert_eq!(last["detail"], "liza edit: tasks t-1: priority");
}

#[test]
fn liza_edit_reopens_the_copy_with_its_errors_until_it_is_valid() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    let seen = repo.home.path().join("seen-errors");
    let script = editor(
        &repo,
        &format!(
            "if [ $n = 1 ]; then sed -i 's/status: DRAFT/status: NOPE/' \"$1\"; exit 0; fi\n\
             grep '^# liza edit: ' \"$1\" > '{}'\n\
             sed -i 's/status: NOPE/status: DRAFT/; s/priority: 3/priority: 2/' \"$1\"\n",
            seen.display()
        ),
    );
    let out = edit(&repo, &script);
    assert_success(&out);
    assert_eq!(runs(&repo), 2);
    let errors = std::fs::read_to_string(&seen).unwrap();
    assert!(
        errors.contains("# liza edit: state.yaml:") && errors.contains("\"NOPE\""),
        "{errors}"
    );
    assert!(repo.state_text().contains("priority: 2"));
    assert!(!repo.state_text().contains("# liza edit"));
}

#[test]
fn an_abandoned_liza_edit_changes_nothing() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    // Breaks it, then saves the errors-annotated copy unchanged: abandoned.
    let script = editor(
        &repo,
        "if [ $n = 1 ]; then sed -i 's/status: DRAFT/status: NOPE/' \"$1\"; fi\n",
    );
    let before = repo.files();
    let out = edit(&repo, &script);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("edit abandoned"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("your text is kept at"),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.files(), before);
    // An editor that fails commits nothing either.
    let script = editor(
        &repo,
        "sed -i 's/priority: 3/priority: 1/' \"$1\"\nexit 3\n",
    );
    let out = edit(&repo, &script);
    assert_exit(&out, 1);
    assert_eq!(repo.files(), before);
}

#[test]
fn liza_edit_merges_onto_a_blackboard_that_moved_and_refuses_a_real_conflict() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    let liza = env!("CARGO_BIN_EXE_liza");
    // While the person edits, an agent-like writer commits something else.
    let script = editor(
        &repo,
        &format!(
            "cd '{root}' && '{liza}' note all meanwhile >/dev/null\n\
             sed -i 's/priority: 3/priority: 1/' \"$1\"\n",
            root = repo.path().display()
        ),
    );
    assert_success(&edit(&repo, &script));
    let text = repo.state_text();
    assert!(
        text.contains("priority: 1") && text.contains("message: meanwhile"),
        "{text}"
    );
    // The same field changed meanwhile: no terminal to ask, so the edit is refused.
    let script = editor(
        &repo,
        &format!(
            "cd '{root}' && '{liza}' amend-task t-1 --priority 2 >/dev/null\n\
             sed -i 's/priority: 1/priority: 5/' \"$1\"\n",
            root = repo.path().display()
        ),
    );
    let out = edit(&repo, &script);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("tasks[t-1].priority: you wrote 5, the blackboard now has 2"),
        "{}",
        stderr(&out)
    );
    assert!(repo.state_text().contains("priority: 2"));
}

#[test]
fn vim_and_sed_saves_are_detected_and_applied() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    // vim writing in place (backupcopy=yes keeps the inode). .ci/run installs vim; a
    // machine without it outside CI skips this half with a reason.
    let has_vim = std::process::Command::new("vim")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_vim && std::env::var_os("CI").is_none() {
        eprintln!("skipping the vim half: vim is not installed (.ci/run installs it)");
        return sed_saves_by_rename(&repo, "3", 1);
    }
    let out = std::process::Command::new("vim")
        .args([
            "-es",
            "-u",
            "NONE",
            "-c",
            "set backupcopy=yes",
            "-c",
            "%s/priority: 3/priority: 1/",
            "-c",
            "wq",
        ])
        .arg(repo.state_path())
        .output()
        .expect("vim is installed by .ci/run");
    assert!(out.status.success(), "{out:?}");
    assert_success(&repo.liza(&["note", "all", "after vim"]));
    assert!(repo.state_text().contains("priority: 1"));
    sed_saves_by_rename(&repo, "1", 2);
}

/// `sed -i` saving by rename is applied; `edits` human edits in the log in all.
fn sed_saves_by_rename(repo: &Repo, priority: &str, edits: usize) {
    let out = std::process::Command::new("sed")
        .args(["-i", &format!("s/priority: {priority}/priority: 4/")])
        .arg(repo.state_path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_success(&repo.liza(&["note", "all", "after sed"]));
    assert!(repo.state_text().contains("priority: 4"));
    let applied = repo
        .log()
        .iter()
        .filter(|e| e["action"] == "human_edit")
        .count();
    assert_eq!(applied, edits);
}

#[test]
fn a_comment_above_a_task_survives_the_agents_transitions_on_it() {
    use crate::common::team::{add, as_agent, commit_in, register};
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    add(&repo, "t-2", "");
    let comment = "  # t-1: ask Ann before touching the parser\n";
    let text = repo
        .state_text()
        .replacen("  - id: t-1\n", &format!("{comment}  - id: t-1\n"), 1);
    let text = text.replacen("tasks:\n", "# tasks, as planned on Monday\ntasks:\n", 1);
    std::fs::write(repo.state_path(), &text).unwrap();
    // Three transitions on t-1 by agents, and one on another task.
    let coder = register(&repo, "coder-1");
    assert_success(&repo.liza(&["claim-task", "t-1", "coder-1"]));
    let worktree = repo.path().join(".worktrees/t-1");
    commit_in(&repo, &worktree, "t-1.txt", "done\n");
    assert_success(&repo.liza_env(&as_agent("coder-1", &coder), &["submit-for-review", "t-1"]));
    let reviewer = register(&repo, "code-reviewer-1");
    assert_success(&repo.liza(&["claim-review", "t-1", "code-reviewer-1"]));
    assert_success(&repo.liza(&["note", "t-2", "unrelated"]));
    let after = repo.state_text();
    assert!(
        after.contains(&format!("{comment}  - id: t-1\n")),
        "{after}"
    );
    assert!(
        after.contains("# tasks, as planned on Monday\ntasks:\n"),
        "{after}"
    );
    let t1 = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(t1["status"], "READY_FOR_REVIEW");
    assert_eq!(t1["reviewing_by"], "code-reviewer-1");
    let _ = reviewer;
    assert_success(&repo.liza(&["validate"]));
}

/// An editor that is not installed is a missing program (exit 5, as
/// docs/troubleshooting.md says) with how to choose one, and nothing changes.
#[test]
fn liza_edit_with_no_such_editor_exits_5_and_says_how_to_choose_one() {
    let repo = Repo::initialized();
    let before = repo.files();
    let out = repo
        .command()
        .env("VISUAL", "")
        .env("EDITOR", "/nonexistent/editor")
        .arg("edit")
        .output()
        .unwrap();
    assert_exit(&out, 5);
    let said = stderr(&out);
    assert!(said.contains("/nonexistent/editor was not found"), "{said}");
    assert!(said.contains("$EDITOR"), "{said}");
    assert_eq!(repo.files(), before);
}

/// On a terminal (a real pty from util-linux `script`), a conflict is explained, asked
/// about, and the merge committed at once — the editor is not opened again.
#[test]
fn a_conflict_answered_on_the_terminal_is_committed_without_reopening_the_editor() {
    if !crate::common::tool_available("script", "--version", "util-linux") {
        return;
    }
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    let liza = env!("CARGO_BIN_EXE_liza");
    let script = editor(
        &repo,
        &format!(
            "cd '{root}' && '{liza}' amend-task t-1 --priority 2 >/dev/null\n\
             sed -i 's/priority: 3/priority: 5/' \"$1\"\n",
            root = repo.path().display()
        ),
    );
    let mut child = repo
        .command_for("script")
        .args(["-qec", &format!("'{liza}' edit"), "/dev/null"])
        .env("EDITOR", &script)
        .env("VISUAL", "")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("changed on both sides"), "{said}");
    assert!(
        said.contains("merged with what changed meanwhile"),
        "{said}"
    );
    assert_eq!(runs(&repo), 1, "the editor opened again: {said}");
    assert!(repo.state_text().contains("priority: 5"));
}

/// A copy saved without comments in a layout of its own is written in liza's layout, and
/// `liza edit` says so; a status of a file that does not read says it does not.
#[test]
fn liza_edit_says_when_it_did_not_keep_the_layout_and_status_when_a_save_does_not_read() {
    let repo = Repo::initialized();
    let script = editor(
        &repo,
        "sed -i 's/^config:$/config:\\n  checks: [{name: unit, run: \"true\"}]/' \"$1\"\n",
    );
    let out = edit(&repo, &script);
    assert_success(&out);
    assert!(
        stdout(&out).contains("liza wrote it in its own layout"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("add a comment"), "{}", stdout(&out));
    // With a comment, the layout is kept and nothing is said.
    let script = editor(
        &repo,
        "sed -i 's/^config:$/config:  # kept as written/' \"$1\"\nsed -i 's/^  checks:$/  checks: [{name: unit, run: \"true\"}]/' \"$1\"\nsed -i '/^    - name: unit$/d; /^      run: \"true\"$/d' \"$1\"\n",
    );
    let out = edit(&repo, &script);
    assert_success(&out);
    assert!(!stdout(&out).contains("its own layout"), "{}", stdout(&out));
    assert!(
        repo.state_text()
            .contains("checks: [{name: unit, run: \"true\"}]"),
        "{}",
        repo.state_text()
    );
    // A save that does not read: status says so, with where.
    let mut text = repo.state_text();
    text.push_str("tasks: [\n");
    std::fs::write(repo.state_path(), text).unwrap();
    let out = repo.liza(&["status"]);
    assert_success(&out);
    assert!(
        stdout(&out).contains("does not read (state.yaml:"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("unclosed bracket"),
        "{}",
        stdout(&out)
    );
}
