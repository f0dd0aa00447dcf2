//! A commit copies the YAML and JSON text of the tasks a transaction did not change.
//! Whatever the change (edit, add, remove, reorder tasks, other sections), the written
//! state.yaml must be exactly what a full rewrite gives, and the cache exactly the state.

use crate::common::{Lcg, Repo, assert_success};
use liza::blackboard::document;
use liza::blackboard::model::{HistoryEvent, Task, TaskStatus};
use liza::blackboard::{Actor, Store, TaskId};

fn check(repo: &Repo, store: &Store, step: &str) {
    let bytes = std::fs::read(repo.state_path()).unwrap();
    let decoded = document::decode(&bytes).unwrap_or_else(|f| panic!("{step}: {f:?}"));
    let rewritten = document::emit(&decoded.state, 0);
    assert!(
        rewritten.as_bytes() == bytes.as_slice(),
        "{step}: copied task text differs from a full rewrite"
    );
    let snapshot = store.snapshot().unwrap();
    assert_eq!(
        snapshot.state, decoded.state,
        "{step}: the cache holds another state"
    );
    assert!(!snapshot.pending_hand_edit, "{step}");
}

#[test]
fn copied_task_texts_always_equal_a_full_rewrite() {
    let repo = Repo::with_generated_board(40, 2000);
    let store = liza::ops::open_store(repo.path()).unwrap();
    check(&repo, &store, "adopt");
    let mut rng = Lcg(42);
    let mut added = 0;
    for step in 0..80 {
        let op = rng.next(6);
        let pick = rng.next(1000);
        store
            .transact(&Actor::Human, |tx| {
                let n = tx.state.tasks.len();
                match op {
                    0 => {
                        // Edit one task: a field, and a history event with a multi-line detail.
                        let id = tx.state.tasks[pick % n].id.clone();
                        let task = tx.state.task_mut(&id).unwrap();
                        task.description = Some(format!(
                            "edited at step {step}:\n  with \"quotes\" and a tab\t"
                        ));
                        let mut extra = liza::blackboard::node::Extra::default();
                        extra.insert(
                            "detail",
                            liza::blackboard::node::Node::str("line 1\nline 2\n\n"),
                        );
                        task.history_mut().push(HistoryEvent {
                            time: tx.now,
                            event: "note_added".into(),
                            agent: Some("human".into()),
                            extra,
                        });
                    }
                    1 => {
                        added += 1;
                        let id = TaskId::parse(&format!("new-{step}-{added}")).unwrap();
                        let mut task = Task::new(id.clone(), TaskStatus::Draft);
                        task.description = Some("added".into());
                        tx.state.tasks.push_task(task);
                        tx.state
                            .sprint
                            .scope
                            .as_mut()
                            .unwrap()
                            .planned
                            .get_or_insert_with(Vec::new)
                            .push(id);
                    }
                    2 => {
                        // Remove a DRAFT or ABANDONED task nothing refers to.
                        let removable: Vec<TaskId> = tx
                            .state
                            .tasks
                            .iter()
                            .filter(|t| {
                                matches!(t.status, TaskStatus::Draft | TaskStatus::Abandoned)
                            })
                            .map(|t| t.id.clone())
                            .filter(|id| {
                                !tx.state.tasks.iter().any(|t| {
                                    t.depends_on().contains(id)
                                        || t.superseded_by.as_ref().is_some_and(|s| s.contains(id))
                                })
                            })
                            .collect();
                        if let Some(id) = removable.get(pick % removable.len().max(1)) {
                            tx.state.tasks.retain(|t| &t.id != id);
                            if let Some(planned) =
                                tx.state.sprint.scope.as_mut().unwrap().planned.as_mut()
                            {
                                planned.retain(|p| p != id);
                            }
                        }
                    }
                    3 => {
                        let (a, b) = (pick % n, (pick / 7) % n);
                        tx.state.tasks.swap(a, b);
                    }
                    4 => {
                        tx.state.goal.description = format!("goal changed at step {step}");
                    }
                    _ => {
                        // Touch a task without changing it: still copied.
                        let id = tx.state.tasks[pick % n].id.clone();
                        let _ = tx.state.task(&id);
                    }
                }
                tx.log_named("test_step");
                Ok::<_, String>(())
            })
            .unwrap_or_else(|e| panic!("step {step} op {op}: {e:?}"));
        check(&repo, &store, &format!("step {step} (op {op})"));
    }
}

#[test]
fn a_process_reuses_its_last_commit_only_while_state_yaml_is_unchanged() {
    let repo = Repo::initialized();
    let store = liza::ops::open_store(repo.path()).unwrap();
    let add_note = |text: &str| {
        store
            .transact(&Actor::Human, |tx| {
                tx.state.human_notes.get_or_insert_with(Vec::new).push(
                    liza::blackboard::model::HumanNote {
                        id: Some(format!("note-{text}")),
                        timestamp: Some(tx.now),
                        message: text.into(),
                        target: Some("all".into()),
                        seen_by: None,
                        extra: Default::default(),
                    },
                );
                Ok::<_, String>(())
            })
            .unwrap()
    };
    add_note("first");
    // Another process commits meanwhile; this process must not build on its own memory.
    assert_success(&repo.liza(&["note", "all", "from another process"]));
    add_note("second");
    // And a hand edit is seen as well.
    let edited = repo
        .state_text()
        .replace("message: second", "message: second, edited");
    std::fs::write(repo.state_path(), edited).unwrap();
    add_note("third");
    let text = repo.state_text();
    for message in ["first", "from another process", "second, edited", "third"] {
        assert!(
            text.contains(&format!("message: {message}\n")),
            "{message} lost:\n{text}"
        );
    }
    check(&repo, &store, "after mixed writers");
}
