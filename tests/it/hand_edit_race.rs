//! specs/quality.md R3: a person saving copies of state.yaml — current ones, stale ones, stale
//! ones that clash with their own later save, broken ones — while real supervisors run a
//! sprint with fake agents. Nothing is lost: every non-conflicting change is merged (stale
//! ones included, and there must be some), every conflicting or broken save is kept under
//! `rejected/` with an alarm, every agent transition happened, and every revision in the
//! journal is valid.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;
use liza::blackboard::document;
use liza::blackboard::model::HumanNote;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Save {
    /// A copy of the latest file, with a new note and a new priority for t-1.
    Current,
    /// A copy from before the last `Current`, with a new note only: merged.
    Stale,
    /// A copy from before the last `Current`, with a note and another priority for t-1:
    /// both sides changed it, so it is set aside.
    Clashing,
    /// Not YAML.
    Broken,
}

/// What the person saved: the kind, the note it added (if any), the bytes.
struct Saved {
    kind: Save,
    note: Option<String>,
    bytes: Vec<u8>,
}

/// Saves by rename, as most editors do (an in-place write could be read half-written).
fn save(root: &Path, bytes: &[u8]) {
    let temp = root.join(".liza/editor-save.tmp");
    std::fs::write(&temp, bytes).unwrap();
    std::fs::rename(&temp, root.join(".liza/state.yaml")).unwrap();
}

fn with_note(text: &[u8], n: u32, priority: Option<i64>) -> (Vec<u8>, String) {
    let mut state = document::decode(text).unwrap().state;
    let id = format!("note-{}", 1000 + n);
    state
        .human_notes
        .get_or_insert_with(Vec::new)
        .push(HumanNote {
            id: Some(id.clone()),
            timestamp: Some(liza::blackboard::Timestamp::now()),
            message: format!("saved by hand, #{n}"),
            target: Some("all".into()),
            seen_by: Some(Vec::new()),
            extra: Default::default(),
        });
    if let Some(p) = priority {
        let t1 = liza::blackboard::TaskId::parse("t-1").unwrap();
        state.task_mut(&t1).unwrap().priority = Some(p);
    }
    (document::emit(&state, 0).into_bytes(), id)
}

/// Waits until the supervisors' watch reconciled the last save (state.yaml is a committed
/// revision again); `false` if that did not happen in time.
fn reconciled(root: &Path) -> bool {
    let store = liza::ops::open_store(root).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if store.snapshot().is_ok_and(|s| !s.pending_hand_edit) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn r3_a_person_saving_stale_clashing_and_broken_copies_during_a_sprint_loses_nothing() {
    let project = AgentProject::new();
    for t in 1..=4 {
        add(&project.repo, &format!("t-{t}"), "");
    }
    project.step("planner", "SPRINT_COMPLETE", "liza goal complete\n");
    // Agents that take a moment, so the sprint lasts while the person edits.
    project.step(
        "coder",
        "default",
        "sleep 0.5\nwork \"$key.txt\" \"the text of $key\"\nsubmit\n",
    );
    project.step("code-reviewer", "default", "sleep 0.3\napprove\n");
    let supervisors = project.team();

    let done = Arc::new(AtomicBool::new(false));
    let editor = {
        let done = done.clone();
        let root = project.repo.path().to_path_buf();
        std::thread::spawn(move || {
            let mut saves: Vec<Saved> = Vec::new();
            let mut before_last_current: Option<Vec<u8>> = None;
            let mut n = 0u32;
            let mut priority = 3i64;
            while !done.load(Ordering::SeqCst) && n < 60 {
                n += 1;
                let latest = std::fs::read(root.join(".liza/state.yaml")).unwrap();
                let kind = match n % 4 {
                    1 => Save::Current,
                    2 => Save::Stale,
                    3 => Save::Clashing,
                    _ => Save::Broken,
                };
                let saved = match (kind, &before_last_current) {
                    (Save::Current, _) => {
                        priority = priority % 5 + 1;
                        let (bytes, note) = with_note(&latest, n, Some(priority));
                        before_last_current = Some(latest);
                        Saved {
                            kind,
                            note: Some(note),
                            bytes,
                        }
                    }
                    (Save::Stale, Some(old)) => {
                        let (bytes, note) = with_note(old, n, None);
                        Saved {
                            kind,
                            note: Some(note),
                            bytes,
                        }
                    }
                    (Save::Clashing, Some(old)) => {
                        // Neither the copy's priority nor the latest one.
                        let other = priority % 5 + 1;
                        let (bytes, note) = with_note(old, n, Some(other));
                        Saved {
                            kind,
                            note: Some(note),
                            bytes,
                        }
                    }
                    (Save::Broken, _) => Saved {
                        kind,
                        note: None,
                        bytes: format!("goal: [unclosed #{n}\n").into_bytes(),
                    },
                    _ => continue,
                };
                save(&root, &saved.bytes);
                saves.push(saved);
                if !reconciled(&root) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            saves
        })
    };

    let outcomes = project.wait_all(supervisors, Duration::from_secs(240));
    done.store(true, Ordering::SeqCst);
    let saves = editor.join().unwrap();
    for (name, out) in outcomes {
        assert!(
            out.status.success(),
            "{name} exited {:?}",
            out.status.code()
        );
    }
    // A save after the supervisors left is reconciled by the next command.
    // (One that adds no note: liza numbers its notes after the highest id.)
    assert_success(&project.repo.liza(&[
        "log",
        "add",
        "--action",
        "after_the_sprint",
        "--detail",
        "x",
    ]));

    // Every agent transition happened: the sprint ran to its end.
    let state = model(&project.repo);
    assert_eq!(state["goal"]["status"], "COMPLETED");
    for t in 1..=4 {
        assert_eq!(
            task_of(&project.repo, &format!("t-{t}"))["status"],
            "MERGED"
        );
    }
    // Every non-conflicting change is in the state; the set-aside ones are kept whole.
    let notes: Vec<String> = state["human_notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect();
    let rejected: Vec<Vec<u8>> = std::fs::read_dir(project.repo.liza_dir().join("rejected"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
                .map(|p| std::fs::read(p).unwrap())
                .collect()
        })
        .unwrap_or_default();
    let count = |k: Save| saves.iter().filter(|s| s.kind == k).count();
    assert!(count(Save::Stale) > 0 && count(Save::Clashing) > 0 && count(Save::Broken) > 0);
    for s in &saves {
        match s.kind {
            Save::Current | Save::Stale => {
                let note = s.note.as_ref().unwrap();
                assert!(notes.contains(note), "{:?} save {note} lost", s.kind);
            }
            Save::Clashing | Save::Broken => {
                assert!(
                    rejected.contains(&s.bytes),
                    "a {:?} save was not kept",
                    s.kind
                );
                if let Some(note) = &s.note {
                    let seq: Vec<String> = saves
                        .iter()
                        .map(|s| format!("{:?} {:?}", s.kind, s.note))
                        .collect();
                    let log: Vec<String> = project
                        .repo
                        .log()
                        .iter()
                        .filter(|e| e["agent"] == "human")
                        .map(|e| format!("{} {} {}", e["revision"], e["action"], e["detail"]))
                        .collect();
                    assert!(
                        !notes.contains(note),
                        "the clashing save {note} was applied\nsaves: {seq:#?}\nlog: {log:#?}"
                    );
                }
            }
        }
    }
    let log = project.repo.log();
    let merged_stale = log
        .iter()
        .filter(|e| {
            e["action"] == "human_edit"
                && e["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("merged onto"))
        })
        .count();
    assert!(merged_stale > 0, "no stale save was merged");
    let alerts = std::fs::read_to_string(project.repo.liza_dir().join("alerts.log")).unwrap();
    let rejections = alerts.matches("HAND_EDIT_REJECTED").count();
    assert_eq!(
        rejections,
        count(Save::Clashing) + count(Save::Broken),
        "{alerts}"
    );
    // Every revision the journal keeps is valid.
    for entry in std::fs::read_dir(project.repo.liza_dir().join("journal"))
        .unwrap()
        .flatten()
    {
        let bytes = std::fs::read(entry.path()).unwrap();
        let now = liza::blackboard::Timestamp::now();
        let mut env = liza::blackboard::validate::ValidationEnv::new(None, now);
        assert!(
            !document::check(&bytes, &mut env).has_errors(),
            "{:?} is invalid",
            entry.path()
        );
    }
    assert_success(&project.repo.liza(&["validate"]));
    let violations: Vec<_> = log
        .iter()
        .filter(|e| e["action"] == "role_boundary_violation")
        .collect();
    assert!(
        violations.is_empty(),
        "liza's own work flagged as role-boundary violations: {violations:#?}"
    );
}
