//! A person's comments cost nothing and survive everything (specs/blackboard.md *Hand
//! edits*, specs/quality.md): comments, blank lines, key order and quoting of a
//! commented state.yaml stay byte-identical through every transaction, and the next
//! process reads the result from the parse cache, never by parsing what liza wrote.

use liza::blackboard::model::HumanNote;
use liza::blackboard::{Actor, TaskId};
use proptest::prelude::*;
use std::sync::Arc;

use crate::common::team::add;
use crate::common::*;

fn store(repo: &Repo) -> liza::blackboard::Store {
    liza::ops::open_store(repo.path()).unwrap()
}

/// A blackboard with three tasks and a note, in liza's own text.
fn board() -> Repo {
    let repo = Repo::initialized();
    for id in ["t-1", "t-2", "t-3"] {
        add(&repo, id, "");
    }
    assert_success(&repo.liza(&["note", "all", "first"]));
    repo
}

/// The lines a person added or kept that no transaction may touch: comment lines and
/// blank lines, in order, and the comments at the ends of lines.
fn persons_lines(text: &str) -> (Vec<&str>, Vec<&str>) {
    let whole = text
        .lines()
        .filter(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        .collect();
    let trailing = text
        .lines()
        .filter_map(|l| l.find(" #~").map(|i| &l[i..]))
        .collect();
    (whole, trailing)
}

/// `text` with comment lines inserted before the lines at `before` and a comment at the
/// end of the lines at `after`, each kept only where the blackboard still reads the same.
fn with_comments(text: &str, before: &[usize], after: &[usize]) -> String {
    let state = liza::blackboard::document::decode(text.as_bytes())
        .unwrap()
        .state;
    let reads_same = |candidate: &str| {
        liza::blackboard::document::decode(candidate.as_bytes()).is_ok_and(|d| d.state == state)
    };
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for (k, at) in after.iter().enumerate() {
        let i = at % lines.len();
        let mut candidate = lines.clone();
        candidate[i].push_str(&format!(" #~ end {k}"));
        if reads_same(&(candidate.join("\n") + "\n")) {
            lines = candidate;
        }
    }
    for (k, at) in before.iter().enumerate() {
        // Every other one goes above a list item (a task, a note, a history event).
        let items: Vec<usize> = (0..lines.len())
            .filter(|i| lines[*i].trim_start().starts_with("- "))
            .collect();
        let i = if k % 2 == 0 && !items.is_empty() {
            items[at % items.len()]
        } else {
            at % (lines.len() + 1)
        };
        let indent = lines
            .get(i)
            .map_or("", |l| &l[..l.len() - l.trim_start().len()])
            .to_owned();
        let mut candidate = lines.clone();
        let comment = if k % 3 == 2 {
            String::new() // a blank line
        } else {
            format!("{indent}# comment {k}: ask Ann")
        };
        candidate.insert(i, comment);
        if reads_same(&(candidate.join("\n") + "\n")) {
            lines = candidate;
        }
    }
    lines.join("\n") + "\n"
}

/// One transaction a supervisor or a person makes, on random targets.
#[derive(Debug, Clone)]
enum Change {
    Note(String),
    Describe(usize, String),
    Prioritise(usize, i64),
    AddTask(usize),
    RemoveNote,
    CliNote(String),
}

fn change() -> impl Strategy<Value = Change> {
    let text = "[a-z #:'\"-]{1,24}";
    prop_oneof![
        text.prop_map(Change::Note),
        (0usize..3, text).prop_map(|(i, t)| Change::Describe(i, t)),
        (0usize..3, 1i64..5).prop_map(|(i, p)| Change::Prioritise(i, p)),
        (0usize..1000).prop_map(Change::AddTask),
        Just(Change::RemoveNote),
        "[a-z ]{1,12}".prop_map(Change::CliNote),
    ]
}

fn apply(repo: &Repo, store: &liza::blackboard::Store, change: &Change, step: usize) {
    if let Change::CliNote(text) = change {
        assert_success(&repo.liza(&["note", "all", &format!("cli {text}")]));
        return;
    }
    store
        .transact(&Actor::Human, |tx| {
            let n = tx.state.tasks.len();
            match change {
                Change::Note(text) => {
                    tx.state
                        .human_notes
                        .get_or_insert_with(Vec::new)
                        .push(HumanNote {
                            id: Some(format!("note-p{step}")),
                            timestamp: Some(tx.now),
                            message: text.clone(),
                            target: Some("all".into()),
                            seen_by: Some(Vec::new()),
                            extra: Default::default(),
                        });
                }
                Change::Describe(i, text) => {
                    tx.state.tasks.get_mut(i % n).unwrap().description = Some(format!("d {text}"));
                }
                Change::Prioritise(i, p) => {
                    tx.state.tasks.get_mut(i % n).unwrap().priority = Some(*p);
                }
                Change::AddTask(from) => {
                    let mut task = (*tx.state.tasks.0[from % n]).clone();
                    task.id = TaskId::parse(&format!("p-{step}")).unwrap();
                    tx.state.tasks.0.push(Arc::new(task));
                }
                Change::RemoveNote => {
                    // Notes the person did not comment on: the last one, if liza added it.
                    let notes = tx.state.human_notes.get_or_insert_with(Vec::new);
                    if notes.len() > 1 {
                        notes.pop();
                    }
                }
                Change::CliNote(_) => unreachable!(),
            }
            tx.log_named("human_note");
            Ok::<_, String>(())
        })
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn comments_blank_lines_and_line_end_comments_survive_random_transactions(
        before in proptest::collection::vec(0usize..400, 1..12),
        after in proptest::collection::vec(0usize..400, 0..6),
        changes in proptest::collection::vec(change(), 1..7),
    ) {
        let repo = board();
        let text = with_comments(&repo.state_text(), &before, &after);
        std::fs::write(repo.state_path(), &text).unwrap();
        let expected = persons_lines(&text);
        let store = store(&repo);
        for (step, change) in changes.iter().enumerate() {
            apply(&repo, &store, change, step);
            let now = repo.state_text();
            prop_assert_eq!(&persons_lines(&now), &expected, "after {:?}:\n{}", change, now);
        }
        assert_success(&repo.liza(&["validate"]));
    }
}

#[test]
fn quoting_key_order_and_layout_of_untouched_values_are_the_persons() {
    let repo = board();
    // The person reorders t-2's keys, quotes its description, indents the list at column 0.
    let text = repo.state_text();
    let t2 = text.find("  - id: t-2\n").unwrap();
    let t3 = text.find("  - id: t-3\n").unwrap();
    let item = &text[t2..t3];
    let description = item
        .lines()
        .find(|l| l.trim_start().starts_with("description:"))
        .unwrap()
        .trim_start()
        .to_owned();
    let quoted = "    description: 'Implement part of the report flag'\n";
    let reordered = format!(
        "  - id: t-2\n{quoted}{}",
        item.lines()
            .skip(1)
            .filter(|l| !l.trim_start().starts_with("description:"))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
    assert!(description.starts_with("description: "));
    let text = format!(
        "# planned by Ann\n{}{reordered}{}",
        &text[..t2],
        &text[t3..]
    );
    std::fs::write(repo.state_path(), &text).unwrap();
    // Transactions on other tasks, and one on t-2 itself.
    assert_success(&repo.liza(&["note", "all", "second"]));
    assert_success(&repo.liza(&["amend-task", "t-3", "--desc", "Reworded: t-3"]));
    assert_success(&repo.liza(&["note", "t-2", "about t-2"]));
    let now = repo.state_text();
    assert!(now.starts_with("# planned by Ann\n"), "{now}");
    assert!(now.contains(&format!("  - id: t-2\n{quoted}")), "{now}");
    assert!(now.contains("Reworded: t-3"), "{now}");
    assert_success(&repo.liza(&["validate"]));
}

/// The parse cache describes a commented text too: the next process reads it from there.
/// Proven by tampering with the cache while state.yaml is unchanged: the tampered value
/// is what the next command sees (a parse would have found the file's).
#[test]
fn the_next_process_reads_a_commented_text_from_the_cache() {
    let repo = board();
    let text = format!("# by hand\n{}", repo.state_text());
    std::fs::write(repo.state_path(), &text).unwrap();
    assert_success(&repo.liza(&["note", "all", "adopted"]));
    assert_success(&repo.liza(&["note", "all", "cached"]));
    let caches: Vec<_> = std::fs::read_dir(repo.liza_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("state.cache.")
        })
        .collect();
    assert_eq!(caches.len(), 1, "{caches:?}");
    let cache = std::fs::read_to_string(&caches[0]).unwrap();
    let header = cache.lines().next().unwrap();
    assert!(
        !header.ends_with(" layout=0"),
        "a commented text has its layout: {header}"
    );
    let goal = "Add a --json flag to the report CLI";
    assert!(cache.contains(goal), "{cache}");
    std::fs::write(&caches[0], cache.replace(goal, "TAMPERED")).unwrap();
    let status = stdout(&repo.liza(&["status", "--json"]));
    assert!(status.contains("TAMPERED"), "read from the cache: {status}");
    assert!(repo.state_text().contains(goal));
    assert!(repo.state_text().starts_with("# by hand\n"));
}
