//! The store's rules, on both stores (specs/blackboard.md *The store*, specs/shared-store.md
//! *A transaction*): every transition is one revision, concurrent writers each get exactly
//! one, a refusal writes nothing, and `liza edit` applies a person's change as one
//! transaction, merged onto changes made meanwhile. Each rule runs on the files of
//! `.liza/` and on a real etcd.

use std::path::Path;

use crate::common::board::{Board, Kind};
use crate::common::*;

/// Runs `rule` on both stores (etcd skips, saying why, where it is not installed).
macro_rules! on_both_stores {
    ($rule:ident) => {
        mod $rule {
            use super::*;

            #[test]
            fn on_files() {
                super::$rule(Board::initialized(Kind::Files).unwrap());
            }

            #[test]
            fn on_etcd() {
                if let Some(board) = Board::initialized(Kind::Etcd) {
                    super::$rule(board);
                }
            }
        }
    };
}

on_both_stores!(each_transition_is_one_revision_logged_with_it);
on_both_stores!(sixteen_concurrent_writers_each_get_exactly_one_revision);
on_both_stores!(refusals_leave_everything_byte_identical);
on_both_stores!(liza_edit_applies_a_change_as_one_transaction);
on_both_stores!(liza_edit_merges_onto_a_change_made_while_editing);
on_both_stores!(liza_edit_refuses_a_conflict_and_keeps_the_text);

fn add_task(board: &Board, id: &str) {
    add_described(board, id, "Add the flag");
}

fn add_described(board: &Board, id: &str, description: &str) {
    assert_success(&board.repo.liza(&[
        "add-task",
        "--id",
        id,
        "--desc",
        description,
        "--spec",
        "specs/vision.md",
        "--done",
        "report --json prints JSON",
        "--scope",
        "src/report.rs",
    ]));
}

/// (revision, action) of every log entry.
fn logged(board: &Board) -> Vec<(u64, String)> {
    board
        .repo
        .log()
        .iter()
        .map(|e| {
            (
                e["revision"].as_u64().unwrap_or(0),
                e["action"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn each_transition_is_one_revision_logged_with_it(board: Board) {
    assert_eq!(board.repo.revision(), 1);
    add_task(&board, "t-1");
    assert_success(&board.repo.liza(&["note", "t-1", "mind the tests"]));
    assert_eq!(board.repo.revision(), 3);
    assert_eq!(
        logged(&board),
        [
            (1, "init".to_owned()),
            (2, "created".to_owned()),
            (3, "human_note".to_owned()),
        ]
    );
    // The history keeps each revision's state: the task's note arrived in revision 3.
    let history = json(&board.repo.liza(&["--json", "history"]));
    let revisions: Vec<u64> = history["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(revisions, [1, 2, 3], "{history}");
    let diff = stdout(&board.repo.liza(&["diff", "2", "3"]));
    assert!(diff.contains("mind the tests"), "{diff}");
    // The checkout's state.yaml (the mirror, on etcd) shows the newest revision and is
    // valid.
    assert_success(&board.repo.liza(&["validate"]));
    assert!(board.repo.state_text().contains("revision: 3"));
}

fn sixteen_concurrent_writers_each_get_exactly_one_revision(board: Board) {
    let start = board.repo.revision();
    let writers: Vec<_> = (0..16)
        .map(|i| {
            board
                .repo
                .command()
                .args(["note", "all", &format!("writer {i}")])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut writer in writers {
        assert!(writer.wait().unwrap().success());
    }
    assert_eq!(board.repo.revision(), start + 16);
    let mut noted: Vec<u64> = logged(&board)
        .into_iter()
        .filter(|(_, action)| action == "human_note")
        .map(|(revision, _)| revision)
        .collect();
    noted.sort();
    assert_eq!(noted, ((start + 1)..=(start + 16)).collect::<Vec<_>>());
    let state = board.repo.state_text();
    for i in 0..16 {
        assert!(state.contains(&format!("writer {i}")), "writer {i} lost");
    }
    // Writers refreshing one checkout's files side by side never take each other's
    // writes for a person's.
    assert_eq!(board.repo.rejected(), []);
}

fn refusals_leave_everything_byte_identical(board: Board) {
    add_task(&board, "t-1");
    let before = board.everything();
    // A duplicate id, a note for a task that does not exist, finalizing a task whose
    // spec file is missing, an agent's command without its registration.
    let refusals: [&[&str]; 3] = [
        &[
            "add-task",
            "--id",
            "t-1",
            "--desc",
            "again",
            "--spec",
            "specs/vision.md",
            "--done",
            "x",
            "--scope",
            "y",
        ],
        &["note", "t-404", "nobody reads this"],
        &["unblock", "t-1"],
    ];
    for args in refusals {
        let out = board.repo.liza(args);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert_eq!(board.everything(), before, "{args:?} changed something");
    }
    let out = board
        .repo
        .liza_env(&[("LIZA_AGENT_ID", "coder-9")], &["note", "t-1", "x"]);
    assert!(!out.status.success());
    assert_eq!(board.everything(), before);
}

/// An `EDITOR` script: `body` runs with the file as `$1`, `liza` on the PATH.
fn editor(board: &Board, body: &str) -> String {
    let path = board.repo.home.path().join("editor.sh");
    let bin = Path::new(LIZA).parent().unwrap().display().to_string();
    std::fs::write(
        &path,
        format!("#!/bin/sh\nset -e\nexport PATH=\"{bin}:$PATH\"\n{body}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn description(board: &Board, id: &str) -> String {
    let out = json(&board.repo.liza(&["--json", "show", id]));
    out["result"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn liza_edit_applies_a_change_as_one_transaction(board: Board) {
    add_task(&board, "t-1");
    let script = editor(
        &board,
        "sed -i 's/description: Add the flag/description: Add the --json flag/' \"$1\"",
    );
    let out = board.repo.liza_env(&[("EDITOR", &script)], &["edit"]);
    assert_success(&out);
    assert_eq!(description(&board, "t-1"), "Add the --json flag");
    assert_eq!(board.repo.revision(), 3);
    assert_eq!(
        logged(&board).last().unwrap(),
        &(3, "human_edit".to_owned())
    );
}

fn liza_edit_merges_onto_a_change_made_while_editing(board: Board) {
    add_task(&board, "t-1");
    add_described(&board, "t-2", "Write the docs");
    // While the person edits t-1, someone amends t-2.
    let script = editor(
        &board,
        "liza amend-task t-2 --desc 'Document the flag' >/dev/null\n\
         sed -i 's/description: Add the flag/description: Add the --json flag/' \"$1\"",
    );
    let out = board.repo.liza_env(&[("EDITOR", &script)], &["edit"]);
    assert_success(&out);
    assert_eq!(description(&board, "t-1"), "Add the --json flag");
    assert_eq!(description(&board, "t-2"), "Document the flag");
    assert_eq!(board.repo.revision(), 5);
}

fn liza_edit_refuses_a_conflict_and_keeps_the_text(board: Board) {
    add_task(&board, "t-1");
    // While the person edits t-1's description, someone changes it too.
    let script = editor(
        &board,
        "liza amend-task t-1 --desc 'Theirs' >/dev/null\n\
         sed -i 's/description: Add the flag/description: Mine/' \"$1\"",
    );
    let before_edit = board.repo.revision();
    let out = board.repo.liza_env(&[("EDITOR", &script)], &["edit"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("changed the same fields"), "{err}");
    assert!(err.contains("kept at"), "{err}");
    // Only the amendment made meanwhile was committed.
    assert_eq!(description(&board, "t-1"), "Theirs");
    assert_eq!(board.repo.revision(), before_edit + 1);
}
