//! The store's discipline: hand edits (applied, merged or set aside), the swapped-out file check, the
//! no-new-violation rule, the journal bound, the parse cache, the lock timeout, and
//! unknown keys surviving rewrites.

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::team::add_draft;
use crate::common::{Repo, assert_exit, assert_success, json, stderr, stdout};
use liza::blackboard::State;
use liza::blackboard::document;
use liza::blackboard::model::{HistoryEvent, HumanNote, Task, TaskStatus};
use liza::blackboard::store::hand_edit::{HandEditOutcome, HandEditPolicy};
use liza::blackboard::{Actor, Store, StoreError, TaskId, TxError};

fn store(repo: &Repo) -> Store {
    liza::ops::open_store(repo.path()).unwrap()
}

/// A supervisor's transaction is fenced by its registration: once its agent is registered
/// anew (or unregistered), the store refuses it and changes nothing.
#[test]
fn a_supervisor_transaction_from_a_superseded_generation_is_refused_byte_identical() {
    let repo = Repo::initialized();
    let old = crate::common::team::register(&repo, "coder-1");
    assert_success(&repo.liza(&["unregister", "coder-1"]));
    let current = crate::common::team::register(&repo, "coder-1");
    let id = liza::blackboard::AgentId::parse("coder-1").unwrap();
    let store = store(&repo);
    let attempt = |generation: &str| {
        let actor = Actor::Supervisor {
            id: id.clone(),
            generation: generation.to_owned(),
        };
        store.transact(&actor, |tx| {
            tx.state.goal.description.push('!');
            Ok::<_, ()>(())
        })
    };
    let before = repo.files();
    match attempt(&old) {
        Err(TxError::Store(e @ StoreError::Superseded { .. })) => {
            assert!(e.to_string().contains(&current), "{e}");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(repo.files(), before);
    assert_success(&repo.liza(&["unregister", "coder-1"]));
    let before = repo.files();
    match attempt(&current) {
        Err(TxError::Store(e @ StoreError::Superseded { .. })) => {
            assert!(e.to_string().contains("no longer registered"), "{e}");
        }
        other => panic!("not refused after unregistering: {other:?}"),
    }
    assert_eq!(repo.files(), before);
}

fn note(repo: &Repo, text: &str) {
    assert_success(&repo.liza(&["note", "all", text]));
}

#[test]
fn a_valid_hand_edit_is_committed_as_human_edit() {
    let repo = Repo::initialized();
    note(&repo, "one");
    let text = repo
        .state_text()
        .replace("message: one", "message: one, edited by hand");
    std::fs::write(repo.state_path(), text).unwrap();
    note(&repo, "two");
    let log = repo.log();
    let edit = &log[2];
    assert_eq!(edit["action"], "human_edit");
    assert_eq!(edit["agent"], "human");
    assert_eq!(edit["revision"], 3);
    assert_eq!(edit["detail"], "human_notes");
    assert_eq!(log[3]["revision"], 4);
    assert!(repo.state_text().contains("message: one, edited by hand"));
    // The edited revision is in the journal like any other.
    let entries = std::fs::read_dir(repo.liza_dir().join("journal"))
        .unwrap()
        .count();
    assert_eq!(entries, 4);
}

#[test]
fn editing_task_fields_is_summarised_per_task() {
    let repo = Repo::initialized();
    repo.write_mid_sprint();
    note(&repo, "adopt");
    let edited = repo
        .state_text()
        .replace("priority: 4", "priority: 1")
        .replace(
            "description: XML output",
            "description: XML output (maybe later)",
        );
    std::fs::write(repo.state_path(), edited).unwrap();
    note(&repo, "after");
    let log = repo.log();
    let detail = log
        .iter()
        .rev()
        .find(|e| e["action"] == "human_edit")
        .unwrap()["detail"]
        .clone();
    assert_eq!(
        detail,
        "tasks t-draft: priority; tasks t-abandoned: description"
    );
}

fn alerts(repo: &Repo) -> String {
    std::fs::read_to_string(repo.liza_dir().join("alerts.log")).unwrap_or_default()
}

#[test]
fn an_invalid_hand_edit_is_set_aside_and_the_last_good_revision_restored() {
    let repo = Repo::initialized();
    note(&repo, "one");
    let good = repo.state_text();
    let broken = good.replace(
        "status: IN_PROGRESS\n  alignment_history",
        "status: DONE\n  alignment_history",
    );
    std::fs::write(repo.state_path(), &broken).unwrap();
    // Readers see the last good revision while the broken save waits.
    assert_success(&repo.liza(&["status"]));
    let out = repo.liza(&["note", "all", "two"]);
    assert_success(&out);
    // The human's file is kept byte for byte, with a note giving line and column.
    let kept = repo.rejected();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0, broken);
    assert!(
        kept[0]
            .1
            .contains(".liza/state.yaml:8:11: goal status \"DONE\""),
        "{}",
        kept[0].1
    );
    assert!(
        kept[0].1.contains("put back to revision 2"),
        "{}",
        kept[0].1
    );
    // The blackboard went on from the last good revision: revision 3 is the note.
    assert_eq!(repo.revision(), 3);
    assert!(repo.state_text().contains("message: one"));
    assert!(repo.state_text().contains("message: two"));
    assert!(!repo.state_text().contains("status: DONE"));
    let log = repo.log();
    let rejection = log
        .iter()
        .find(|e| e["action"] == "hand_edit_rejected")
        .unwrap();
    assert!(
        rejection["detail"]
            .as_str()
            .unwrap()
            .contains("revision 2 restored"),
        "{rejection}"
    );
    let alarms = alerts(&repo);
    assert!(alarms.contains("ERROR HAND_EDIT_REJECTED"), "{alarms}");
    assert!(alarms.contains(".liza/state.yaml:8:11:"), "{alarms}");
    // A state-rule violation introduced by hand is set aside the same way.
    let bad = repo
        .state_text()
        .replace("planned: []", "planned: [t-ghost]");
    std::fs::write(repo.state_path(), &bad).unwrap();
    let out = repo.liza(&["note", "all", "three"]);
    assert_success(&out);
    // The command that set it aside says so on its terminal: the file, why, the fix.
    let said = stderr(&out);
    assert!(
        said.contains("a hand edit of .liza/state.yaml was set aside"),
        "{said}"
    );
    assert!(
        said.contains("t-ghost") && said.contains(".liza/rejected/"),
        "{said}"
    );
    assert!(said.contains("liza edit"), "{said}");
    let kept = repo.rejected();
    assert_eq!(kept.len(), 2);
    assert!(
        kept.iter()
            .any(|(file, note)| *file == bad && note.contains("t-ghost"))
    );
    assert!(!repo.state_text().contains("t-ghost"));
    assert!(repo.state_text().contains("message: three"));
}

#[test]
fn a_stale_hand_edit_is_merged_onto_the_latest_revision() {
    let repo = Repo::initialized();
    let stale = repo.state_text().replace(
        "Add a --json flag",
        "Add a --json flag (from an old buffer)",
    );
    note(&repo, "one");
    note(&repo, "two");
    std::fs::write(repo.state_path(), &stale).unwrap();
    assert_success(&repo.liza(&["note", "all", "three"]));
    let text = repo.state_text();
    assert!(
        text.contains("Add a --json flag (from an old buffer)"),
        "{text}"
    );
    for message in ["one", "two", "three"] {
        assert!(text.contains(&format!("message: {message}")), "{text}");
    }
    let log = repo.log();
    let edit = log.iter().find(|e| e["action"] == "human_edit").unwrap();
    assert_eq!(edit["revision"], 4);
    assert!(
        edit["detail"]
            .as_str()
            .unwrap()
            .ends_with("(edited on revision 1, merged onto 3)"),
        "{edit}"
    );
    assert!(repo.rejected().is_empty());
}

#[test]
fn a_stale_hand_edit_that_conflicts_is_set_aside_with_what_conflicted() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    let stale = repo.state_text().replace("priority: 3", "priority: 1");
    assert_success(&repo.liza(&["amend-task", "t-1", "--priority", "2"]));
    let latest = repo.state_text();
    std::fs::write(repo.state_path(), &stale).unwrap();
    assert_success(&repo.liza(&["note", "all", "x"]));
    assert!(repo.state_text().contains("priority: 2"));
    assert!(repo.state_text().contains("message: x"));
    let kept = repo.rejected();
    assert_eq!(kept[0].0, stale);
    assert!(
        kept[0]
            .1
            .contains("tasks[t-1].priority: you wrote 1, the blackboard now has 2"),
        "{}",
        kept[0].1
    );
    assert!(alerts(&repo).contains("tasks[t-1].priority"));
    // Nothing of the latest revision was lost.
    assert!(
        latest
            .lines()
            .filter(|l| l.contains("priority"))
            .all(|l| repo.state_text().contains(l))
    );
}

#[test]
fn a_stale_hand_edit_whose_base_left_the_journal_is_set_aside() {
    let repo = Repo::initialized();
    let stale = repo.state_text().replace("Add a --json flag", "Changed");
    note(&repo, "one");
    let journal = repo.liza_dir().join("journal");
    for entry in std::fs::read_dir(&journal).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("000000000001-")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    std::fs::write(repo.state_path(), &stale).unwrap();
    assert_success(&repo.liza(&["note", "all", "two"]));
    assert!(!repo.state_text().contains("Changed"));
    let kept = repo.rejected();
    assert_eq!(kept[0].0, stale);
    assert!(
        kept[0].1.contains("no longer in the journal"),
        "{}",
        kept[0].1
    );
}

#[test]
fn a_status_change_a_person_may_not_make_is_set_aside() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    let before = repo.state_text();
    let forbidden = before.replace("status: DRAFT", "status: MERGED");
    std::fs::write(repo.state_path(), &forbidden).unwrap();
    assert_success(&repo.liza(&["note", "all", "x"]));
    assert!(repo.state_text().contains("status: DRAFT"));
    let kept = repo.rejected();
    assert!(
        kept[0]
            .1
            .contains("t-1: DRAFT → MERGED is not a move a person may make"),
        "{}",
        kept[0].1
    );
    // The forced moves are a person's to make.
    let text = repo
        .state_text()
        .replace("status: DRAFT", "status: ABANDONED");
    std::fs::write(repo.state_path(), &text).unwrap();
    assert_success(&repo.liza(&["note", "all", "y"]));
    assert!(repo.state_text().contains("status: ABANDONED"));
    assert_eq!(repo.rejected().len(), 1);
}

#[test]
fn a_task_added_by_hand_starts_as_draft() {
    let repo = Repo::initialized();
    let task = |status: &str| {
        repo.state_text().replace(
            "tasks: []\n",
            &format!(
                "tasks:\n  - id: by-hand\n    description: Added by hand\n    status: {status}\n    \
                 spec_ref: specs/vision.md\n    done_when: report --json prints a totals key\n"
            ),
        )
    };
    let unclaimed = task("UNCLAIMED");
    std::fs::write(repo.state_path(), &unclaimed).unwrap();
    assert_success(&repo.liza(&["note", "all", "x"]));
    assert!(!repo.state_text().contains("by-hand"));
    let kept = repo.rejected();
    assert!(
        kept[0]
            .1
            .contains("by-hand: a task added by hand starts as DRAFT (it is UNCLAIMED)"),
        "{}",
        kept[0].1
    );
    std::fs::write(repo.state_path(), task("DRAFT")).unwrap();
    assert_success(&repo.liza(&["note", "all", "y"]));
    assert!(repo.state_text().contains("id: by-hand"));
}

#[test]
fn comments_only_edits_are_recorded_without_content_changes() {
    let repo = Repo::initialized();
    let text = format!("# my notes about this sprint\n{}", repo.state_text());
    std::fs::write(repo.state_path(), text).unwrap();
    note(&repo, "x");
    let log = repo.log();
    assert_eq!(log[1]["action"], "human_edit");
    assert_eq!(
        log[1]["detail"],
        "no change in content (formatting or comments only)"
    );
}

/// Commits `agent_change` while a person saves `human` in the middle of the transaction
/// (between the read and the swap: the race the swapped-out check exists for).
fn commit_during_a_save(repo: &Repo, human: &str, agent_change: &str) -> u64 {
    let store = store(repo);
    let path = repo.state_path();
    store
        .transact(&Actor::Human, |tx| {
            std::fs::write(&path, human).unwrap();
            tx.state.goal.description = agent_change.into();
            tx.log_named("test_change");
            Ok::<_, String>(())
        })
        .unwrap()
        .revision
}

/// A person's save (`header` above liza's text, then one changed line) lands between a
/// commit's read and its swap: both survive — the commit, then the save merged onto it as
/// revision 4, the only `human_edit`, its header kept.
fn a_save_during_a_commit_is_merged_once(header: &str) {
    let repo = Repo::initialized();
    note(&repo, "one");
    let human = format!(
        "{header}{}",
        repo.state_text()
            .replace("message: one", "message: one, edited during a commit")
    );
    assert_eq!(commit_during_a_save(&repo, &human, "agent change"), 3);
    let text = repo.state_text();
    assert!(text.starts_with(header), "{text}");
    assert!(text.contains("description: agent change"), "{text}");
    assert!(
        text.contains("message: one, edited during a commit"),
        "{text}"
    );
    assert_eq!(repo.revision(), 4);
    let log = repo.log();
    assert_eq!(log.last().unwrap()["action"], "human_edit");
    let edits = log.iter().filter(|e| e["action"] == "human_edit").count();
    assert_eq!(edits, 1);
    assert!(repo.rejected().is_empty());
}

#[test]
fn a_save_landing_during_a_transaction_is_merged_after_it() {
    a_save_during_a_commit_is_merged_once("");
}

/// With a comment in the save, no revision of liza's is taken for a person's (the text a
/// commit is built from is not always what was on disk).
#[test]
fn a_commented_save_landing_during_a_transaction_is_merged_once_with_its_comment() {
    a_save_during_a_commit_is_merged_once("# a person\n");
}

#[test]
fn a_save_landing_during_a_transaction_that_conflicts_is_kept_not_lost() {
    let repo = Repo::initialized();
    let human = repo.state_text().replace(
        "goal-1\n  description: Add",
        "goal-1\n  description: HUMAN Add",
    );
    assert_eq!(commit_during_a_save(&repo, &human, "agent change"), 2);
    assert!(repo.state_text().contains("description: agent change"));
    let kept = repo.rejected();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0, human);
    assert!(
        kept[0].1.contains("goal.description: you wrote"),
        "{}",
        kept[0].1
    );
    let log = repo.log();
    assert_eq!(log.last().unwrap()["action"], "hand_edit_rejected");
}

/// A person who saves again while liza judges their previous save (the policy is asked
/// under the lock, in the middle of it): the second save lands then, by rename.
struct SavesWhileJudging {
    state: PathBuf,
    next: Mutex<Option<String>>,
    /// Edits whose goal description contains this are refused.
    forbid: &'static str,
}

impl HandEditPolicy for SavesWhileJudging {
    fn forbidden_changes(&self, _before: &State, after: &State) -> Vec<String> {
        if let Some(text) = self.next.lock().unwrap().take() {
            let temp = self.state.with_file_name("editor.tmp");
            std::fs::write(&temp, text).unwrap();
            std::fs::rename(&temp, &self.state).unwrap();
        }
        if after.goal.description.contains(self.forbid) {
            vec!["goal.description: refused by the test's policy".into()]
        } else {
            Vec::new()
        }
    }
    fn reconciled(&self, _outcome: &HandEditOutcome) {}
}

/// `text` (a state.yaml) with one more human note, `id`.
fn with_note(text: &str, id: &str) -> String {
    let mut state = document::decode(text.as_bytes()).unwrap().state;
    state
        .human_notes
        .get_or_insert_with(Vec::new)
        .push(HumanNote {
            id: Some(id.into()),
            timestamp: Some(liza::blackboard::Timestamp::now()),
            message: format!("{id} by hand"),
            target: Some("all".into()),
            seen_by: Some(Vec::new()),
            extra: Default::default(),
        });
    document::emit(&state, 0)
}

fn policy_store(repo: &Repo, next: String, forbid: &'static str) -> Store {
    let policy = Arc::new(SavesWhileJudging {
        state: repo.state_path(),
        next: Mutex::new(Some(next)),
        forbid,
    });
    Store::open(repo.path(), policy).unwrap()
}

#[test]
fn a_save_swapped_out_by_a_commit_is_judged_where_the_next_save_cannot_replace_it() {
    let repo = Repo::initialized();
    let original = repo.state_text();
    let first = with_note(&original, "note-7");
    let second = with_note(&original, "note-8");
    let store = policy_store(&repo, second, "NEVER");
    let path = repo.state_path();
    let revision = store
        .transact(&Actor::Human, |tx| {
            std::fs::write(&path, &first).unwrap();
            tx.state.goal.description = "agent change".into();
            tx.log_named("test_change");
            Ok::<_, String>(())
        })
        .unwrap()
        .revision;
    assert_eq!(revision, 2);
    // The commit, the save it swapped out, then the save made while that one was judged.
    let text = repo.state_text();
    for expected in [
        "description: agent change",
        "note-7 by hand",
        "note-8 by hand",
    ] {
        assert!(text.contains(expected), "{expected} lost:\n{text}");
    }
    assert_eq!(repo.revision(), 4);
    let actions: Vec<_> = repo.log().iter().map(|e| e["action"].clone()).collect();
    assert_eq!(actions[1..], ["test_change", "human_edit", "human_edit"]);
    assert!(repo.rejected().is_empty());
}

#[test]
fn a_save_landing_while_a_refused_one_is_restored_is_judged_and_the_refused_one_kept() {
    let repo = Repo::initialized();
    let original = repo.state_text();
    let refused = original.replace(
        "goal-1\n  description: Add",
        "goal-1\n  description: FORBIDDEN Add",
    );
    assert_ne!(refused, original);
    let next = with_note(&original, "note-9");
    let store = policy_store(&repo, next, "FORBIDDEN");
    std::fs::write(repo.state_path(), &refused).unwrap();
    store.reconcile().unwrap();
    let kept = repo.rejected();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, refused);
    assert!(
        kept[0].1.contains("refused by the test's policy"),
        "{}",
        kept[0].1
    );
    let text = repo.state_text();
    assert!(text.contains("note-9 by hand"), "{text}");
    assert!(!text.contains("FORBIDDEN"), "{text}");
    let actions: Vec<_> = repo.log().iter().map(|e| e["action"].clone()).collect();
    assert_eq!(actions[1..], ["hand_edit_rejected", "human_edit"]);
}

#[test]
fn a_change_may_not_introduce_a_violation_but_may_repair_one() {
    let repo = Repo::initialized();
    let store = store(&repo);
    let before = repo.files();
    let result = store.transact(&Actor::Human, |tx| {
        let mut task = Task::new(TaskId::parse("t-1").unwrap(), TaskStatus::Claimed);
        task.description = Some("claimed without anything".into());
        tx.state.tasks.push_task(task);
        Ok::<_, String>(())
    });
    match result {
        Err(TxError::Store(StoreError::WouldInvalidate { findings })) => {
            let checks: Vec<_> = findings.iter().map(|f| f.check).collect();
            assert!(checks.contains(&"claimed-unassigned"), "{checks:?}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(repo.files(), before);

    // A refusal of the change itself writes nothing either.
    let refused = store.transact(&Actor::Human, |tx| {
        tx.state.goal.description = "changed".into();
        Err::<(), _>("guard failed")
    });
    assert!(matches!(refused, Err(TxError::Refused("guard failed"))));
    assert_eq!(repo.files(), before);

    // An already-invalid state (a task's spec file deleted) still takes changes that do
    // not add violations.
    store
        .transact(&Actor::Human, |tx| {
            let mut task = Task::new(TaskId::parse("t-2").unwrap(), TaskStatus::Unclaimed);
            task.spec_ref = Some("specs/vision.md".into());
            task.done_when = Some("it works".into());
            tx.state.tasks.push_task(task);
            Ok::<_, String>(())
        })
        .unwrap();
    std::fs::remove_file(repo.path().join("specs/vision.md")).unwrap();
    assert_exit(&repo.liza(&["validate"]), 1);
    note(&repo, "still possible");
}

#[test]
fn the_journal_is_bounded() {
    let repo = Repo::initialized();
    let text = repo.state_text().replace(
        "config:\n  integration_branch: integration\n",
        "config:\n  integration_branch: integration\n  journal_keep:\n    revisions: 4\n",
    );
    std::fs::write(repo.state_path(), text).unwrap();
    for i in 0..10 {
        note(&repo, &format!("n{i}"));
    }
    let mut names: Vec<String> = std::fs::read_dir(repo.liza_dir().join("journal"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names[3].starts_with("000000000012-"), "{names:?}");
    // The head is exactly state.yaml.
    let head = std::fs::read(repo.liza_dir().join("journal").join(&names[3])).unwrap();
    assert_eq!(head, std::fs::read(repo.state_path()).unwrap());
}

/// The cache files in `.liza/` (one per committed revision, the old ones removed).
fn cache_files(repo: &Repo) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(repo.liza_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("state.cache.")
        })
        .collect()
}

#[test]
fn the_parse_cache_is_an_optimisation_only() {
    let repo = Repo::initialized();
    note(&repo, "one");
    let caches = cache_files(&repo);
    assert_eq!(caches.len(), 1, "{caches:?}");
    let header = std::fs::read_to_string(&caches[0]).unwrap();
    assert!(header.starts_with("liza-state-cache/5/"), "{header}");
    // Missing: full parse, and the next commit writes it again.
    std::fs::remove_file(&caches[0]).unwrap();
    assert_success(&repo.liza(&["status"]));
    note(&repo, "two");
    assert_eq!(cache_files(&repo).len(), 1);
    // Damaged: ignored.
    let cache = cache_files(&repo).remove(0);
    std::fs::write(&cache, "garbage").unwrap();
    note(&repo, "three");
    // Tampered with but for the same bytes: trusted only while state.yaml is unchanged;
    // any edit changes the hash and forces a full parse.
    let cache = cache_files(&repo).remove(0);
    let text = std::fs::read_to_string(&cache).unwrap();
    std::fs::write(&cache, text.replace("three", "TAMPERED")).unwrap();
    let edited = repo
        .state_text()
        .replace("message: three", "message: three!");
    std::fs::write(repo.state_path(), edited).unwrap();
    let v = repo.state_json();
    assert_eq!(v["revision"], 4);
    let out = repo.liza(&["note", "all", "four"]);
    assert_success(&out);
    assert!(repo.state_text().contains("message: three!"));
    assert!(!repo.state_text().contains("TAMPERED"));
    assert_eq!(cache_files(&repo).len(), 1);
}

/// A blackboard with two DRAFT tasks, t-1 and t-2.
fn two_drafts() -> Repo {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    add_draft(&repo, "t-2");
    repo
}

/// `text` (a parse cache file) with task `id`'s history replaced by `history` (JSON).
/// A task line: `<start> <end> <counts> <n> <task JSON, n bytes><history JSON>`.
fn with_cached_history(text: &str, id: &str, history: serde_json::Value) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.splitn(5, ' ').collect();
        let task = fields
            .get(3)
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| fields.get(4).and_then(|rest| rest.get(..n)))
            .and_then(|json| serde_json::from_str::<serde_json::Value>(json).ok());
        match task {
            Some(task) if task["id"] == id => {
                let task = task.to_string();
                out.push_str(&format!(
                    "{} {} {} {} {task}{history}\n",
                    fields[0],
                    fields[1],
                    fields[2],
                    task.len()
                ));
            }
            _ => out.push_str(&format!("{line}\n")),
        }
    }
    out
}

/// Task histories come from the parse cache undecoded (crates/liza-model/src/model/history.rs):
/// a transaction decodes only those it reads, and one that does not decode is never
/// written back from what was read of it.
#[test]
fn a_cached_history_that_does_not_decode_is_never_committed_from() {
    let repo = two_drafts();
    note(&repo, "one");
    let cache = cache_files(&repo).remove(0);
    let text = std::fs::read_to_string(&cache).unwrap();
    let tampered = with_cached_history(&text, "t-1", serde_json::json!([{"not": "an event"}]));
    assert_ne!(tampered, text, "t-1's line is in the cache");
    std::fs::write(&cache, tampered).unwrap();
    // What state.yaml itself says (`liza status` would show the cache's version).
    let t1_events = |repo: &Repo| -> Vec<String> {
        let state = document::decode(repo.state_text().as_bytes())
            .unwrap()
            .state;
        let t1 = state.tasks.iter().find(|t| t.id.as_str() == "t-1").unwrap();
        t1.history().iter().map(|e| e.event.clone()).collect()
    };
    // A transaction that does not read t-1's history commits, and state.yaml keeps the
    // history it had.
    note(&repo, "two");
    assert_eq!(t1_events(&repo), ["created"]);
    // One that changes it is refused, nothing written, and the cache is dropped.
    let t1 = TaskId::parse("t-1").unwrap();
    let append = |store: &Store| {
        store.transact(&Actor::Human, |tx| {
            let event = HistoryEvent {
                time: tx.now,
                event: "created".into(),
                agent: Some("human".into()),
                extra: Default::default(),
            };
            tx.state.task_mut(&t1).unwrap().history_mut().push(event);
            Ok::<_, ()>(())
        })
    };
    let before = repo.files();
    match append(&store(&repo)) {
        Err(TxError::Store(e @ StoreError::DamagedCache { .. })) => {
            assert!(e.to_string().contains("state.cache."), "{e}");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(repo.files(), before);
    assert!(
        cache_files(&repo).is_empty(),
        "the damaged cache is removed"
    );
    // The next one reads state.yaml in full: the history is whole, plus the change.
    append(&store(&repo)).unwrap();
    assert_eq!(t1_events(&repo), ["created", "created"]);
}

/// t-1's history events in state.yaml itself, parsed in full.
fn events_in_file(repo: &Repo, id: &str) -> Vec<String> {
    let state = document::decode(repo.state_text().as_bytes())
        .unwrap()
        .state;
    let task = state.tasks.iter().find(|t| t.id.as_str() == id).unwrap();
    task.history().iter().map(|e| e.event.clone()).collect()
}

fn archive_all(
    repo: &Repo,
    sprint: &str,
) -> Result<Option<liza::ops::Archived>, liza::ops::OpsError> {
    let project = liza::ops::Project::discover(repo.path()).unwrap();
    liza::ops::archive_terminal(
        &project,
        &Actor::Human,
        liza::ops::Authority::Supervisor,
        sprint,
        liza::ops::ArchiveSelect::AllTerminal,
    )
}

/// The archive of `sprint` as text, and task `id`'s history events in it.
fn archived_events(repo: &Repo, sprint: &str, id: &str) -> (String, Vec<String>) {
    let path = repo
        .liza_dir()
        .join("archive")
        .join(format!("{sprint}.yaml"));
    let text = std::fs::read_to_string(path).unwrap();
    let archive: liza::blackboard::model::Archive =
        document::decode_record(text.as_bytes()).unwrap();
    let task = archive.tasks.iter().find(|t| t.id.as_str() == id).unwrap();
    let events = task.history().iter().map(|e| e.event.clone()).collect();
    (text, events)
}

/// Archiving writes the records in full: a history the cache cannot give back is refused
/// before the archive is written, not archived empty (found by review).
#[test]
fn archiving_a_task_whose_cached_history_does_not_decode_is_refused() {
    let repo = two_drafts();
    assert_success(&repo.liza(&["abandon", "t-1", "--reason", "not needed"]));
    note(&repo, "one");
    let events = events_in_file(&repo, "t-1");
    assert!(events.len() >= 2, "{events:?}");
    let cache = cache_files(&repo).remove(0);
    let text = std::fs::read_to_string(&cache).unwrap();
    let tampered = with_cached_history(&text, "t-1", serde_json::json!([{"not": "an event"}]));
    assert_ne!(tampered, text);
    std::fs::write(&cache, tampered).unwrap();
    let sprint = repo.state_json()["sprint"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = repo.files();
    match archive_all(&repo, &sprint) {
        Err(liza::ops::OpsError::Store(StoreError::DamagedCache { .. })) => {}
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(repo.files(), before);
    assert!(
        !repo
            .liza_dir()
            .join("archive")
            .join(format!("{sprint}.yaml"))
            .exists()
    );
    // Run again, it reads state.yaml in full and archives the whole history.
    archive_all(&repo, &sprint).unwrap().unwrap();
    assert_eq!(archived_events(&repo, &sprint, "t-1").1, events);
}

/// A history JSON cannot hand back as it is — an event whose one extra key is `$float`,
/// the tag of a non-finite float in liza's JSON form — is not put in the cache: every
/// command parses state.yaml, as when a task did not decode, and nothing is refused or
/// lost (found by review).
#[test]
fn a_history_json_cannot_give_back_leaves_the_state_uncached_and_whole() {
    let repo = two_drafts();
    note(&repo, "one");
    // A person adds `$float: inf` to t-1's first history event.
    let text = repo.state_text();
    let at = text.find("- id: t-1").unwrap();
    let at = at + text[at..].find("    history:\n").unwrap();
    let agent = at + text[at..].find("agent: ").unwrap();
    let eol = agent + text[agent..].find('\n').unwrap() + 1;
    let line_start = text[..agent].rfind('\n').unwrap() + 1;
    let indent = " ".repeat(agent - line_start);
    let edited = format!("{}{indent}$float: inf\n{}", &text[..eol], &text[eol..]);
    std::fs::write(repo.state_path(), &edited).unwrap();
    note(&repo, "two");
    assert!(cache_files(&repo).is_empty(), "{:?}", cache_files(&repo));
    for message in ["a", "b", "c"] {
        assert_success(&repo.liza(&["note", "t-1", message]));
    }
    assert_success(&repo.liza(&["abandon", "t-1", "--reason", "x"]));
    let events = events_in_file(&repo, "t-1");
    assert!(events.len() >= 2, "{events:?}");
    assert!(repo.state_text().contains("$float: inf"));
    let sprint = repo.state_json()["sprint"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    archive_all(&repo, &sprint).unwrap().unwrap();
    let (text, archived) = archived_events(&repo, &sprint, "t-1");
    assert!(text.contains("$float: inf"), "{text}");
    assert_eq!(archived, events);
}

/// Sprint metrics count approvals, rejections and submissions from every task's history;
/// a commit from the parse cache counts them from what the cache stored beside each
/// history, and must agree with a full parse.
#[test]
fn metrics_from_cached_review_counts_match_a_full_parse() {
    let repo = two_drafts();
    let t1 = TaskId::parse("t-1").unwrap();
    let kinds = [
        "ready_for_review",
        "rejected",
        "ready_for_review",
        "approved",
    ];
    store(&repo)
        .transact(&Actor::Human, |tx| {
            let task = tx.state.task_mut(&t1).unwrap();
            let template = task.history()[0].clone();
            for kind in kinds {
                let mut event = template.clone();
                event.event = kind.into();
                task.history_mut().push(event);
            }
            Ok::<_, ()>(())
        })
        .unwrap();
    let metrics = |repo: &Repo| repo.state_json()["sprint"]["metrics"].clone();
    let from_events = metrics(&repo);
    assert_eq!(from_events["review_verdict_approvals"], 1, "{from_events}");
    assert_eq!(from_events["review_verdict_rejections"], 1, "{from_events}");
    assert_eq!(
        from_events["task_submitted_for_review_count"], 2,
        "{from_events}"
    );
    // Committed from the cache (t-1's history left undecoded) ...
    note(&repo, "one");
    let from_cache = metrics(&repo);
    // ... and from a full parse.
    for cache in cache_files(&repo) {
        std::fs::remove_file(cache).unwrap();
    }
    note(&repo, "two");
    assert_eq!(from_cache, from_events);
    assert_eq!(metrics(&repo), from_events);
}

#[test]
fn a_held_lock_times_out_naming_the_holder_while_reads_continue() {
    let repo = Repo::initialized();
    let lock = File::options()
        .read(true)
        .write(true)
        .open(repo.liza_dir().join("state.yaml.lock"))
        .unwrap();
    lock.lock().unwrap();
    // This process holds the lock, and the owner note says so.
    let me = std::process::id();
    std::fs::write(
        repo.liza_dir().join("state.yaml.lock.owner"),
        format!("pid {me} since 2026-03-01T09:00:00Z command liza merge t-1\n"),
    )
    .unwrap();
    let before = repo.files();
    let started = std::time::Instant::now();
    let out = repo.liza_env(&[("LIZA_LOCK_TIMEOUT", "0.3")], &["note", "all", "x"]);
    assert_exit(&out, 2);
    assert!(started.elapsed() < Duration::from_secs(20));
    let err = stderr(&out);
    assert!(
        err.contains("timed out after 0.3 s waiting for the blackboard lock .liza/state.yaml.lock"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "hint: held by pid {me} since 2026-03-01T09:00:00Z command liza merge t-1"
        )),
        "{err}"
    );
    assert_eq!(repo.files(), before);
    // Snapshot reads never take the lock.
    assert_success(&repo.liza(&["status"]));
    assert_success(&repo.liza(&["validate"]));
    let out = repo.liza_env(
        &[("LIZA_LOCK_TIMEOUT", "0.3")],
        &["--json", "note", "all", "x"],
    );
    assert_eq!(json(&out)["error"]["code"], "lock_timeout");
    drop(lock);
    note(&repo, "after release");
}

#[test]
fn unknown_keys_survive_rewrites_at_every_level() {
    let repo = Repo::initialized();
    let text = repo
        .state_text()
        .replace(
            "version: 1\n",
            "version: 1\nx-team: {owner: ana, tags: [a, b]}\n",
        )
        .replace(
            "  id: goal-1\n",
            "  id: goal-1\n  x-goal-note: \"keep: me\"\n",
        )
        .replace(
            "  integration_branch: integration\n",
            "  integration_branch: integration\n  my_setting: 3\n",
        )
        .replace(
            "  timeline:\n",
            "  timeline:\n    x-milestone: 2026-04-01\n",
        );
    std::fs::write(repo.state_path(), text).unwrap();
    note(&repo, "one");
    note(&repo, "two");
    let state = repo.state_text();
    assert!(
        state.contains("x-team:\n  owner: ana\n  tags: [a, b]\n"),
        "{state}"
    );
    assert!(state.contains("x-goal-note: \"keep: me\"\n"), "{state}");
    assert!(state.contains("  my_setting: 3\n"), "{state}");
    assert!(state.contains("x-milestone: \"2026-04-01\"\n"), "{state}");
    let out = repo.liza(&["validate"]);
    assert_success(&out);
    assert!(stdout(&out).contains("1 warning"), "{}", stdout(&out));
}

#[test]
fn a_blackboard_of_the_original_tooling_loads_and_is_adopted() {
    let repo = Repo::initialized();
    std::fs::create_dir_all(repo.path().join(".worktrees/render-json")).unwrap();
    std::fs::write(
        repo.state_path(),
        include_str!("../fixtures/bash-style.yaml"),
    )
    .unwrap();
    std::fs::write(
        repo.liza_dir().join("log.yaml"),
        include_str!("../fixtures/bash-style-log.yaml"),
    )
    .unwrap();
    std::fs::remove_dir_all(repo.liza_dir().join("journal")).unwrap();
    for cache in cache_files(&repo) {
        std::fs::remove_file(cache).unwrap();
    }
    let v = repo.state_json();
    assert_eq!(v["revision"], 0);
    assert_eq!(v["agents"][1]["role"], "code_reviewer");
    note(&repo, "hello from liza");
    let log = repo.log();
    let actions: Vec<_> = log.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        ["initialized", "task_added", "human_edit", "human_note"]
    );
    assert!(
        log[2]["detail"]
            .as_str()
            .unwrap()
            .contains("without liza's journal")
    );
    let state = repo.state_text();
    // Its comments are the person's: kept, with the file's own layout around them.
    assert!(state.contains("\nrevision: 2\n"), "{state}");
    assert!(
        state.contains("deadline: null  # Human sets deadline\n"),
        "{state}"
    );
    assert!(state.contains("base_commit: a1b2c3d\n"));
    assert!(state.contains("coder_max_wait: 300\n"));
    assert!(state.contains("role: code_reviewer\n"));
}

#[test]
fn history_and_diff_read_the_journal() {
    let repo = Repo::initialized();
    add_draft(&repo, "t-1");
    assert_success(&repo.liza(&["amend-task", "t-1", "--priority", "1"]));
    let out = repo.liza(&["history"]);
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("r1     human init"), "{text}");
    assert!(
        text.contains("r3     human amended t-1: priority"),
        "{text}"
    );
    let out = repo.liza(&["history", "--rev", "2"]);
    assert_success(&out);
    assert!(stdout(&out).starts_with("version: 1\nrevision: 2\n"));
    assert!(stdout(&out).contains("priority: 3"));
    let out = repo.liza(&["diff", "2", "3"]);
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("~ tasks[t-1].priority: 3 → 1"), "{text}");
    assert!(text.contains("+ tasks[t-1].history[1]: "), "{text}");
    let out = repo.liza(&["--json", "diff", "2", "3"]);
    let changes = json(&out)["result"].as_array().unwrap().clone();
    assert!(
        changes
            .iter()
            .any(|c| c["path"] == "tasks[t-1].priority" && c["after"] == "1")
    );
    let before = repo.files();
    let out = repo.liza(&["diff", "1", "9"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("revision 9 is not in the journal (it keeps revisions 1 to 3)"));
    assert_eq!(repo.files(), before);
}

#[test]
fn one_process_keeps_a_persons_comments_across_its_transactions() {
    // A supervisor's store remembers the text it wrote; the comments must come with it.
    let repo = Repo::initialized();
    note(&repo, "first");
    let text = format!(
        "# Monday's plan — Ann\n{}",
        repo.state_text()
            .replace("  - id: note-1\n", "  # keep this one\n  - id: note-1\n")
    );
    std::fs::write(repo.state_path(), &text).unwrap();
    let store = store(&repo);
    for i in 0..3 {
        store
            .transact(&Actor::Human, |tx| {
                let notes = tx.state.human_notes.get_or_insert_with(Vec::new);
                notes[0].message = format!("edited {i}");
                tx.log_named("human_note");
                Ok::<_, String>(())
            })
            .unwrap();
        let now = repo.state_text();
        assert!(now.starts_with("# Monday's plan — Ann\n"), "{now}");
        assert!(now.contains("  # keep this one\n  - id: note-1\n"), "{now}");
        assert!(now.contains(&format!("message: edited {i}\n")), "{now}");
    }
    assert_success(&repo.liza(&["validate"]));
}

/// A big state.yaml is hashed while the parse cache of the journal head is decoded on the
/// side (specs/quality.md P2); that guess serves only the bytes it belongs to.
#[test]
fn a_big_blackboard_is_read_from_its_cache_only_while_its_bytes_are_the_cached_ones() {
    let repo = Repo::with_generated_board(60, 13_500);
    assert!(
        repo.state_text().len() > 512 * 1024,
        "not big enough to be hashed aside"
    );
    note(&repo, "one");
    assert!(repo.state_text().contains("message: one"));
    // The cache of the head says something else, and state.yaml was edited by hand: the
    // guess (that cache) must not be what the next transaction starts from.
    let cache = cache_files(&repo).remove(0);
    let cached = std::fs::read_to_string(&cache).unwrap();
    assert!(cached.contains("\"one\""));
    std::fs::write(&cache, cached.replace("\"one\"", "\"TAMPERED\"")).unwrap();
    let edited = repo
        .state_text()
        .replace("message: one", "message: one, by hand");
    std::fs::write(repo.state_path(), edited).unwrap();
    note(&repo, "two");
    let text = repo.state_text();
    assert!(
        text.contains("message: one, by hand"),
        "the hand edit was lost"
    );
    assert!(
        !text.contains("TAMPERED"),
        "a stale cache was taken for state.yaml"
    );
    assert_success(&repo.liza(&["validate"]));

    // A commit killed after its journal entry: the journal head is a revision state.yaml
    // never held. Even with a cache for that head (planted here), the guess is refused.
    let crashed = repo.liza_env(
        &[("LIZA_FAILPOINT", "after-journal")],
        &["note", "all", "lost"],
    );
    assert!(!crashed.status.success());
    let mut journal: Vec<_> = std::fs::read_dir(repo.liza_dir().join("journal"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    journal.sort();
    let head_hash = journal
        .last()
        .unwrap()
        .trim_end_matches(".yaml")
        .rsplit('-')
        .next()
        .unwrap()
        .to_string();
    let cache = cache_files(&repo).remove(0);
    let cached = std::fs::read_to_string(&cache).unwrap();
    let read_hash = cached.split_whitespace().nth(1).unwrap().to_string();
    let planted = cached
        .replacen(&read_hash, &head_hash, 1)
        .replace("\"two\"", "\"TAMPERED\"");
    assert!(planted.contains("TAMPERED"));
    std::fs::write(
        repo.liza_dir()
            .join(format!("state.cache.{}.json", &head_hash[..32])),
        planted,
    )
    .unwrap();
    note(&repo, "three");
    let text = repo.state_text();
    assert!(text.contains("message: two") && text.contains("message: three"));
    assert!(
        !text.contains("TAMPERED"),
        "the cache of a revision never committed was used"
    );
    assert!(!text.contains("message: lost"));
}

/// A hand edit setting `config.integration_branch` to the branch the person's checkout
/// has checked out is set aside like any invalid edit, as `liza init` refuses it: liza
/// would otherwise move that branch under the person's files at the next merge.
#[test]
fn a_hand_edit_pointing_integration_at_a_checked_out_branch_is_set_aside() {
    let repo = Repo::initialized();
    let text = repo.state_text();
    assert!(text.contains("integration_branch: integration"), "{text}");
    let bad = text.replace(
        "integration_branch: integration",
        "integration_branch: main",
    );
    std::fs::write(repo.state_path(), &bad).unwrap();
    assert_success(&repo.liza(&["note", "all", "after the edit"]));
    let kept = repo.rejected();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, bad);
    assert!(kept[0].1.contains("is checked out in"), "{}", kept[0].1);
    assert!(
        repo.state_text()
            .contains("integration_branch: integration")
    );
    assert!(alerts(&repo).contains("HAND_EDIT_REJECTED"));
    // A branch nobody has checked out is taken.
    repo.git(&["branch", "elsewhere", "main"]);
    let good = repo.state_text().replace(
        "integration_branch: integration",
        "integration_branch: elsewhere",
    );
    std::fs::write(repo.state_path(), &good).unwrap();
    assert_success(&repo.liza(&["note", "all", "another edit"]));
    assert!(repo.state_text().contains("integration_branch: elsewhere"));
}
