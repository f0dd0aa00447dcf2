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
on_both_stores!(writers_in_one_process_and_in_others_each_get_exactly_one_revision);
on_both_stores!(an_alarm_is_raised_once_however_many_processes_raise_it);
on_both_stores!(a_finished_sprint_is_archived_and_read_back_whole);
on_both_stores!(each_run_is_in_the_ledger_once_and_the_later_reset_wins);
on_both_stores!(writers_updating_one_document_at_once_lose_nothing);
on_both_stores!(refusals_leave_everything_byte_identical);
on_both_stores!(liza_edit_applies_a_change_as_one_transaction);
on_both_stores!(liza_edit_merges_onto_a_change_made_while_editing);
on_both_stores!(liza_edit_refuses_a_conflict_and_keeps_the_text);

fn add_task(board: &Board, id: &str) {
    board.add_task(id, "Add the flag", false);
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

/// Eight threads of this process (each with a store of its own, as a supervisor's agents
/// have; on etcd their transitions are committed in batches) and eight `liza note`
/// processes at once: every transition is there once, with a revision of its own, and
/// the state of a revision, where it can be read, is that revision's.
fn writers_in_one_process_and_in_others_each_get_exactly_one_revision(board: Board) {
    let start = board.repo.revision();
    let root = board.repo.path().to_path_buf();
    let others: Vec<_> = (0..8)
        .map(|i| {
            board
                .repo
                .command()
                .args(["note", "all", &format!("process {i}")])
                .spawn()
                .unwrap()
        })
        .collect();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                let store = liza::ops::open_store(&root).unwrap();
                (0..4)
                    .map(|n| {
                        store
                            .transact(&liza::blackboard::Actor::Human, |tx| {
                                let notes = tx.state.human_notes.get_or_insert_with(Vec::new);
                                notes.push(liza::blackboard::model::HumanNote {
                                    id: Some(format!("note-thread-{i}-{n}")),
                                    timestamp: Some(tx.now),
                                    message: format!("thread {i} note {n}"),
                                    target: Some("all".into()),
                                    seen_by: Some(Vec::new()),
                                    extra: Default::default(),
                                });
                                tx.log(liza::blackboard::EventKind::HumanNote);
                                Ok::<_, String>(())
                            })
                            .unwrap()
                            .revision
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut given: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    for mut other in others {
        assert!(other.wait().unwrap().success());
    }
    let total = 8 * 4 + 8;
    assert_eq!(board.repo.revision(), start + total);
    // Each thread's transitions got revisions of their own, among the ones logged.
    given.sort();
    given.dedup();
    assert_eq!(given.len(), 32, "two transitions were given one revision");
    let mut noted: Vec<u64> = logged(&board)
        .into_iter()
        .filter(|(_, action)| action == "human_note")
        .map(|(revision, _)| revision)
        .collect();
    noted.sort();
    assert_eq!(noted, ((start + 1)..=(start + total)).collect::<Vec<_>>());
    assert!(given.iter().all(|r| noted.contains(r)));
    let state = board.repo.state_text();
    for i in 0..8 {
        assert!(state.contains(&format!("process {i}")), "process {i} lost");
        for n in 0..4 {
            let note = format!("thread {i} note {n}");
            assert_eq!(state.matches(&note).count(), 1, "{note}");
        }
    }
    // History lists the revision before the writers and the last one, with every
    // revision between that has a state of its own; a revision's text, where the store
    // still has it, is that revision's.
    let store = liza::ops::open_store(&root).unwrap();
    let kept = store.revisions().unwrap();
    assert!(
        kept.contains(&start) && kept.contains(&(start + total)),
        "{kept:?}"
    );
    for revision in &kept {
        assert!(
            store.revision_text(*revision).unwrap().is_some(),
            "{revision}"
        );
    }
    for revision in start + 1..=start + total {
        if let Some(text) = store.revision_text(revision).unwrap() {
            let text = String::from_utf8(text).unwrap();
            let line = format!("revision: {revision}");
            assert!(
                text.lines().any(|l| l == line),
                "revision {revision} reads as another: {text}"
            );
        }
    }
    assert_eq!(board.repo.rejected(), []);
}

/// Eight stores raise the same alarm at once, each one of its own too: it is raised once,
/// the others each once, and `liza status` shows them (specs/operations.md *Watch and
/// alarms*; in etcd they are the project's, not one host's).
fn an_alarm_is_raised_once_however_many_processes_raise_it(board: Board) {
    use liza::ops::alarms::{Alarm, Level, fire};
    let alarm = |key: &str| Alarm {
        level: Level::Warn,
        category: "LEASE_EXPIRED".into(),
        message: format!("alarm {key}"),
        task: None,
        agent: None,
        revision: None,
        key: key.into(),
    };
    let root = board.repo.path().to_path_buf();
    let raisers: Vec<_> = (0..8)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                let store = liza::ops::open_store(&root).unwrap();
                fire(&store, vec![alarm("shared"), alarm(&format!("own-{i}"))])
                    .unwrap()
                    .into_iter()
                    .map(|f| f.alarm.key)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut raised: Vec<String> = raisers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    raised.sort();
    let mut expected: Vec<String> = (0..8).map(|i| format!("own-{i}")).collect();
    expected.push("shared".into());
    expected.sort();
    assert_eq!(raised, expected, "an alarm was raised twice, or not at all");
    let store = liza::ops::open_store(&root).unwrap();
    let lines = store.alarm_lines().unwrap();
    assert_eq!(lines.len(), 9, "{lines:?}");
    assert_eq!(lines.iter().filter(|l| l.ends_with("[shared]")).count(), 1);
    // Raised again later: nothing new.
    assert!(fire(&store, vec![alarm("shared")]).unwrap().is_empty());
    let status = json(&board.repo.liza(&["--json", "status"]));
    let shown = status["result"]["alarms"].as_array().unwrap();
    assert_eq!(shown.len(), 5, "{status}");
    assert!(
        shown
            .iter()
            .all(|l| lines.contains(&l.as_str().unwrap().to_owned()))
    );
    // A store in etcd keeps them there, where every host reads them.
    let alerts_log = board.repo.liza_dir().join("alerts.log");
    assert_eq!(alerts_log.exists(), matches!(board.kind, Kind::Files));
}

/// specs/ledger.md: eight stores append runs at once, one run of them all, each one of its
/// own twice: every run is in the ledger once, and `liza cost` adds them up; a usage limit
/// recorded by one store holds for every store, the later of two resets kept; a run id
/// that could leave its key is refused, nothing written.
fn each_run_is_in_the_ledger_once_and_the_later_reset_wins(board: Board) {
    use liza::blackboard::Timestamp;
    use liza::blackboard::ledger::{LedgerEntry, ModelUsage};
    use liza::blackboard::quota::QuotaHit;
    let entry = |run: &str, task: &str| LedgerEntry {
        run: run.into(),
        agent: "coder-1".into(),
        role: "coder".into(),
        task: Some(task.into()),
        sprint: Some("sprint-1".into()),
        backend: "claude".into(),
        started: "2026-11-29T10:00:00Z".into(),
        ended: "2026-11-29T10:00:05Z".into(),
        wall_ms: 5000,
        exit_class: "ok".into(),
        models: vec![ModelUsage {
            model: Some("claude-x".into()),
            input_tokens: Some(100),
            output_tokens: Some(10),
            cost_usd: Some(0.25),
            ..ModelUsage::default()
        }],
        approximate: false,
    };
    let root = board.repo.path().to_path_buf();
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                let store = liza::ops::open_store(&root).unwrap();
                let own = entry(&format!("coder-1-own-{i}"), "t-2");
                let first = store
                    .append_ledger(&[entry("coder-1-shared", "t-1"), own.clone()])
                    .unwrap();
                let again = store.append_ledger(&[own]).unwrap();
                (first, again)
            })
        })
        .collect();
    let mut shared_added = 0;
    for w in writers {
        let (first, again) = w.join().unwrap();
        shared_added += usize::from(first[0]);
        assert!(first[1], "a run of its own is added");
        assert_eq!(again, [false], "a run appended again is not added twice");
    }
    assert_eq!(
        shared_added, 1,
        "the shared run was added by one store exactly"
    );
    let store = liza::ops::open_store(&root).unwrap();
    let entries = store.ledger().unwrap();
    assert_eq!(entries.len(), 9);
    let cost = json(&board.repo.liza(&["--json", "cost", "--by", "task"]));
    let total = &cost["result"]["total"];
    assert_eq!(total["runs"], 9, "{cost}");
    assert_eq!(total["input_tokens"], 900, "{cost}");
    assert_eq!(
        total["cache_read_tokens"],
        serde_json::Value::Null,
        "{cost}"
    );
    let groups = cost["result"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{cost}");
    assert_eq!(groups[0]["task"], "t-1");
    assert_eq!(groups[0]["runs"], 1);
    assert_eq!(groups[1]["runs"], 8);
    // A run id that could leave its key: refused, nothing written.
    let before = store.ledger().unwrap();
    assert!(store.append_ledger(&[entry("../escape", "t-1")]).is_err());
    assert_eq!(store.ledger().unwrap(), before);
    // Quota: the later reset wins, whichever store records it, and every store reads it.
    let now = Timestamp::now();
    let hit = |resets: i64, by: &str| QuotaHit {
        backend: "claude".into(),
        account: "default".into(),
        resets_at: now.plus_seconds(resets),
        seen_at: now,
        seen_by: by.into(),
        line: "You've hit your limit".into(),
    };
    let other = liza::ops::open_store(&root).unwrap();
    store.record_quota(&hit(3600, "coder-1")).unwrap();
    other.record_quota(&hit(600, "coder-2")).unwrap();
    let hits = other.quotas().unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].seen_by, "coder-1");
    assert_eq!(hits[0].resets_at, now.plus_seconds(3600));
}

/// `liza sprint next` moves the finished sprint's terminal tasks to its archive, which
/// the store gives back whole; `liza show` says where the record is.
fn a_finished_sprint_is_archived_and_read_back_whole(board: Board) {
    add_task(&board, "t-1");
    add_task(&board, "t-2");
    for id in ["t-1", "t-2"] {
        assert_success(&board.repo.liza(&["abandon", id, "--reason", "not needed"]));
    }
    assert_success(&board.repo.liza(&["sprint", "next"]));
    let store = liza::ops::open_store(board.repo.path()).unwrap();
    let document = liza::blackboard::store::Document::Archive { sprint: "sprint-1" };
    let bytes = store.document(&document).unwrap().expect("no archive");
    let archive: liza::blackboard::model::Archive =
        liza::blackboard::document::decode_record(&bytes).unwrap();
    let ids: Vec<String> = archive.tasks.0.iter().map(|t| t.id.to_string()).collect();
    assert_eq!(ids, ["t-1", "t-2"]);
    let shown = stdout(&board.repo.liza(&["show", "t-1"]));
    assert!(shown.contains(&store.document_place(&document)), "{shown}");
    let on_disk = board.repo.liza_dir().join("archive/sprint-1.yaml");
    assert_eq!(on_disk.exists(), matches!(board.kind, Kind::Files));
}

/// Eight stores add a line each to one document at once (as archivers on several hosts
/// add their tasks to a sprint's archive): every line is there.
fn writers_updating_one_document_at_once_lose_nothing(board: Board) {
    let root = board.repo.path().to_path_buf();
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                let store = liza::ops::open_store(&root).unwrap();
                let document = liza::blackboard::store::Document::Archive { sprint: "race" };
                store
                    .update_document(&document, |kept| {
                        let mut text = kept.unwrap_or_default().to_vec();
                        text.extend_from_slice(format!("writer {i}\n").as_bytes());
                        Ok::<_, liza::blackboard::StoreError>(text)
                    })
                    .unwrap();
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let store = liza::ops::open_store(&root).unwrap();
    let document = liza::blackboard::store::Document::Archive { sprint: "race" };
    let text = String::from_utf8(store.document(&document).unwrap().unwrap()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    let expected: Vec<String> = (0..8).map(|i| format!("writer {i}")).collect();
    assert_eq!(lines, expected);
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
    board.add_task("t-2", "Write the docs", false);
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
