//! Blackboards written by Liza v0.1.1's scripts and by hand after its docs
//! (specs/blackboard.md *Blackboards from the original tooling*): they load, get the
//! verdict the v0.1 rules give them, and survive any liza write without losing a field, a
//! comment or an unknown key.

use crate::common::*;

/// Every section v0.1 writes, in the forms its scripts and docs use: no `revision`, no
/// agent generations, `role: code-reviewer`, abbreviated SHAs, a flat handoff with
/// `context_used: 91%`, notes without ids or `seen_by`, an extra `checkpoint:` map.
const FULL: &str = include_str!("../fixtures/v01/full.yaml");

/// A repository whose blackboard is `text`, put there by another tool (no journal).
fn board(text: &str) -> Repo {
    let repo = Repo::initialized();
    liza::bench::adopt_state(&repo.liza_dir(), text).unwrap();
    repo
}

/// `text` without the top-level section `key` (its line and the indented ones after).
fn without(text: &str, key: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if !line.starts_with([' ', '#']) && !line.is_empty() {
            skipping = line.starts_with(&format!("{key}:"));
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The notes of state.yaml as (id, message), in order.
fn notes(repo: &Repo) -> Vec<(String, String)> {
    let root = liza::blackboard::yaml::parse(&repo.state_text())
        .unwrap()
        .root
        .unwrap();
    root.to_json()["human_notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap_or("").to_owned(),
                n["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn validate(repo: &Repo) -> (bool, String) {
    let out = repo.liza(&["validate"]);
    (
        out.status.success(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

/// Every key path of a YAML document (`tasks.0.history.0.event`), for "nothing lost".
fn key_paths(text: &str) -> Vec<String> {
    fn walk(node: &liza::blackboard::node::Node, at: &str, out: &mut Vec<String>) {
        use liza::blackboard::node::Value;
        match &node.value {
            Value::Map(entries) => {
                for e in entries {
                    let path = format!("{at}.{}", e.key);
                    out.push(path.clone());
                    walk(&e.value, &path, out);
                }
            }
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{at}.{i}"), out);
                }
            }
            _ => {}
        }
    }
    let root = liza::blackboard::yaml::parse(text).unwrap().root.unwrap();
    let mut out = Vec::new();
    walk(&root, "", &mut out);
    out
}

#[test]
fn the_full_v01_file_and_each_without_an_optional_section_are_valid() {
    let repo = board(FULL);
    let (ok, said) = validate(&repo);
    assert!(ok, "{said}");
    for section in [
        "discovered",
        "handoff",
        "human_notes",
        "anomalies",
        "spec_changes",
        "circuit_breaker",
        "checkpoint",
    ] {
        let text = without(FULL, section);
        assert!(!text.contains(&format!("\n{section}:")), "{section}");
        let (ok, said) = validate(&board(&text));
        assert!(ok, "without {section}: {said}");
    }
    // Empty sections are fine too.
    let mut empty = FULL.to_owned();
    for (section, nothing) in [
        ("discovered", "[]"),
        ("handoff", "{}"),
        ("human_notes", "[]"),
        ("anomalies", "[]"),
        ("spec_changes", "[]"),
    ] {
        empty = without(&empty, section);
        empty.push_str(&format!("{section}: {nothing}\n"));
    }
    let (ok, said) = validate(&board(&empty));
    assert!(ok, "{said}\n{empty}");
}

#[test]
fn context_used_takes_every_form_v01_writes_and_keeps_it() {
    for form in ["91%", "\"91%\"", "91", "0.91", "91.5 %"] {
        let text = FULL.replace("context_used: 91%", &format!("context_used: {form}"));
        let repo = board(&text);
        let (ok, said) = validate(&repo);
        assert!(ok, "{form}: {said}");
        assert_success(&repo.liza(&["note", "all", "a write"]));
        let kept = repo.state_text();
        let written = kept
            .lines()
            .find(|l| l.trim_start().starts_with("context_used:"))
            .unwrap()
            .trim_start()
            .trim_start_matches("context_used: ")
            .trim_matches('"')
            .to_owned();
        assert_eq!(written, form.trim_matches('"'), "{form}");
    }
    let (ok, said) = validate(&board(
        &FULL.replace("context_used: 91%", "context_used: lots"),
    ));
    assert!(!ok);
    assert!(
        said.contains("a number or a percentage such as 91%"),
        "{said}"
    );
}

#[test]
fn notes_without_ids_load_and_get_them_in_order_on_the_next_write() {
    let repo = board(FULL);
    assert_success(&repo.liza(&["note", "all", "third"]));
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        notes(&repo),
        pairs(&[
            ("note-1", "Use plain text for totals"),
            ("note-2", "Deadline is firm"),
            ("note-3", "third"),
        ])
    );
    // Ids in use are kept and numbering goes on after them.
    let mixed = FULL.replacen(
        "  - timestamp: 2026-03-01T12:05:00Z\n",
        "  - id: note-5\n    timestamp: 2026-03-01T12:05:00Z\n",
        1,
    );
    assert_ne!(mixed, FULL);
    let repo = board(&mixed);
    assert_success(&repo.liza(&["note", "all", "after"]));
    assert_eq!(
        notes(&repo),
        pairs(&[
            ("note-6", "Use plain text for totals"),
            ("note-5", "Deadline is firm"),
            ("note-7", "after"),
        ])
    );
}

#[test]
fn a_liza_write_loses_no_field_comment_or_unknown_key_of_a_v01_file() {
    let repo = board(FULL);
    assert_success(&repo.liza(&["note", "all", "a write"]));
    let after = repo.state_text();
    let kept = key_paths(&after);
    for path in key_paths(FULL) {
        assert!(kept.contains(&path), "{path} was lost:\n{after}");
    }
    for comment in FULL.lines().filter(|l| l.trim_start().starts_with('#')) {
        assert!(after.contains(comment), "comment {comment:?} was lost");
    }
    assert!(
        after.contains("checkpoint:\n  requested_by: planner-1"),
        "{after}"
    );
    // And the next writes keep it all the same.
    assert_success(&repo.liza(&["note", "all", "another"]));
    let again = key_paths(&repo.state_text());
    for path in &kept {
        assert!(again.contains(path), "{path} was lost on the second write");
    }
}

/// Files the v0.1 rules reject are rejected by liza for the same rule.
#[test]
fn invalid_v01_files_are_rejected_for_the_same_rule() {
    let cases = [
        // Agent ids follow ^(coder|code-reviewer|planner)-[0-9]+$.
        (
            "  coder-1:\n    role: coder\n",
            "  coder_1:\n    role: coder\n",
            "coder_1",
        ),
        // A role that does not match the id's prefix.
        (
            "  code-reviewer-1:\n    role: code-reviewer\n",
            "  code-reviewer-1:\n    role: coder\n",
            "role",
        ),
        // spec_ref is required once a task left DRAFT.
        (
            "    spec_ref: specs/vision.md\n    done_when: report --json prints rows\n",
            "    done_when: report --json prints rows\n",
            "spec_ref",
        ),
        // done_when likewise.
        (
            "    done_when: report --json prints rows\n",
            "",
            "done_when",
        ),
        // Dependencies must exist.
        (
            "    depends_on: [task-1]\n",
            "    depends_on: [task-9]\n",
            "task-9",
        ),
        // Task states are the 11 of the lifecycle.
        (
            "    status: UNCLAIMED\n",
            "    status: WAITING\n",
            "WAITING",
        ),
        // A BLOCKED task says why.
        (
            "    blocked_reason: format unspecified\n",
            "",
            "blocked_reason",
        ),
        // Timestamps are RFC 3339.
        (
            "    created: 2026-03-01T09:06:00Z\n    spec_ref: specs/vision.md\n    done_when: report --json prints rows\n",
            "    created: yesterday\n    spec_ref: specs/vision.md\n    done_when: report --json prints rows\n",
            "yesterday",
        ),
        // Notes need a message.
        ("    message: Deadline is firm\n", "", "message"),
        // A handoff needs its summary.
        ("    summary: Tried both formats\n", "", "summary"),
        // The rest of v0.1.1's liza-validate.sh, rule for rule.
        // A DRAFT task is nobody's.
        (
            "    status: UNCLAIMED\n",
            "    status: DRAFT\n    assigned_to: coder-1\n",
            "assigned_to",
        ),
        // A MERGED task's worktree is gone.
        (
            "    merge_commit: 3333333\n",
            "    merge_commit: 3333333\n    worktree: .worktrees/task-1\n",
            "worktree",
        ),
        // failed_by lists each coder once.
        (
            "    failed_by: [coder-2]\n",
            "    failed_by: [coder-2, coder-2]\n",
            "failed_by",
        ),
        // Discovery urgency is deferred or immediate.
        (
            "    urgency: deferred\n",
            "    urgency: someday\n",
            "someday",
        ),
        // Anomaly types are the 13 of the protocol.
        (
            "    type: spec_ambiguity\n",
            "    type: bad_vibes\n",
            "bad_vibes",
        ),
        // The sprint belongs to the goal.
        ("  goal_ref: goal-1\n", "  goal_ref: goal-2\n", "goal"),
        // Planned tasks exist.
        (
            "    planned: [task-1, task-2, task-3]\n",
            "    planned: [task-1, task-2, task-3, task-9]\n",
            "task-9",
        ),
        // The sprint says when it started.
        ("    started: 2026-03-01T09:00:00Z\n", "", "started"),
        // A WORKING agent has a task.
        (
            "    role: coder\n    status: IDLE\n",
            "    role: coder\n    status: WORKING\n",
            "coder-1",
        ),
    ];
    for (from, to, says) in cases {
        assert!(FULL.contains(from), "{from:?} is not in the fixture");
        let text = FULL.replacen(from, to, 1);
        let (ok, said) = validate(&board(&text));
        assert!(!ok, "{from:?} → {to:?} was accepted");
        assert!(said.contains(says), "{from:?} → {to:?}: {said}");
        assert!(said.contains(".liza/state.yaml:"), "no location: {said}");
    }
}

/// What `liza-init.sh` of v0.1.1 writes (goal id from the clock, an empty description,
/// nulls, the scripts' `*_max_wait` settings) with its first log entry: valid, the old
/// settings named, and `liza log` reads the log.
#[test]
fn a_fresh_v01_init_loads_with_its_log() {
    let repo = board(include_str!("../fixtures/v01/init.yaml"));
    std::fs::write(
        repo.liza_dir().join("log.yaml"),
        "- timestamp: 2026-03-01T09:00:00Z\n  agent: system\n  action: initialized\n  detail: \"\"\n",
    )
    .unwrap();
    let (ok, said) = validate(&repo);
    assert!(ok, "{said}");
    assert!(
        said.contains("config.planner_max_wait is a setting of the original scripts"),
        "{said}"
    );
    let log = stdout(&repo.liza(&["log"]));
    assert!(
        log.contains("system") && log.contains("initialized"),
        "{log}"
    );
    assert_success(&repo.liza(&["note", "all", "first"]));
    assert!(
        repo.state_text()
            .contains("deadline: null  # Human sets deadline")
    );
}

/// The forms of the v0.1 schema and protocol documents: null optional fields, flow-style
/// history with quoted times and extra keys, `type: coding`, discoveries with `source`
/// and `converted_to_task: deferred`, agents with `task: null`, a string `blockers`,
/// sprint and circuit-breaker nulls, `coder_max_wait`.
const DOC_FORMS: &str = include_str!("../fixtures/v01/doc-forms.yaml");

#[test]
fn the_v01_documents_forms_load_and_survive_a_write() {
    let repo = board(DOC_FORMS);
    let (ok, said) = validate(&repo);
    assert!(ok, "{said}");
    assert!(
        said.contains("config.coder_max_wait is a setting of the original scripts"),
        "{said}"
    );
    assert_success(&repo.liza(&["note", "all", "a write"]));
    let after = repo.state_text();
    let kept = key_paths(&after);
    for path in key_paths(DOC_FORMS) {
        assert!(kept.contains(&path), "{path} was lost:\n{after}");
    }
    assert!(after.contains("converted_to_task: deferred"), "{after}");
    assert!(after.contains("source: systemic-thinking"), "{after}");
    assert!(
        after.contains("context_used: 91%  # v1: heuristic estimate"),
        "{after}"
    );
}

/// v0.1.1's validator knows the same 11 task states (the older schema document's READY
/// and IMPLEMENTING are not among them) and wants a CLAIMED task's own lease.
#[test]
fn what_the_v011_validator_rejects_liza_rejects() {
    let ready = DOC_FORMS.replacen("    status: UNCLAIMED\n", "    status: READY\n", 1);
    let (ok, said) = validate(&board(&ready));
    assert!(!ok);
    assert!(
        said.contains("task status \"READY\" is not one of"),
        "{said}"
    );
    let claimed = DOC_FORMS
        .replacen(
            "    status: UNCLAIMED\n    priority: 2\n    depends_on: []",
            "    status: CLAIMED\n    priority: 2\n    assigned_to: coder-1\n    worktree: .worktrees/task-2\n    base_commit: a1b2c3d4\n    depends_on: []",
            1,
        )
        .replacen(
            "    status: IDLE\n    current_task: null\n    lease_expires: null\n    heartbeat: 2026-03-01T09:52:00Z",
            "    status: WORKING\n    current_task: task-2\n    lease_expires: 2099-03-01T09:57:00Z\n    heartbeat: 2026-03-01T09:52:00Z",
            1,
        );
    assert_ne!(claimed, DOC_FORMS);
    let repo = board(&claimed);
    std::fs::create_dir_all(repo.path().join(".worktrees/task-2")).unwrap();
    let (ok, said) = validate(&repo);
    assert!(!ok);
    assert!(said.contains("claimed-no-lease"), "{said}");
    let leased = claimed.replacen(
        "    base_commit: a1b2c3d4\n",
        "    base_commit: a1b2c3d4\n    lease_expires: 2099-03-01T09:57:00Z\n",
        1,
    );
    let repo = board(&leased);
    std::fs::create_dir_all(repo.path().join(".worktrees/task-2")).unwrap();
    let (ok, said) = validate(&repo);
    assert!(ok, "{said}");
}

/// v0.1's protocol has a coder write one flat handoff naming its task (`task: task-6`):
/// it is that task's handoff, written back flat while it is the only one; without a
/// `task:` it cannot be placed and is rejected with the fix.
#[test]
fn a_flat_v01_handoff_is_its_tasks_and_stays_flat() {
    let start = DOC_FORMS.find("handoff:\n").unwrap();
    let end = DOC_FORMS.find("human_notes:\n").unwrap();
    let flat = "handoff:\n  task: task-6\n  agent: coder-2\n  context_used: 92%\n  timestamp: 2026-03-01T10:10:00Z\n  # REQUIRED\n  summary: \"Backoff core done\"\n  next_action: \"Handle 429\"\n  files_modified:\n    - src/api/client.py\n";
    let text = format!("{}{flat}{}", &DOC_FORMS[..start], &DOC_FORMS[end..]);
    let decoded = liza::blackboard::document::decode(text.as_bytes()).unwrap();
    let task = liza::blackboard::TaskId::parse("task-6").unwrap();
    let handoff = decoded.state.handoff.as_ref().unwrap().get(&task).unwrap();
    assert_eq!(handoff.summary.as_deref(), Some("Backoff core done"));
    let repo = board(&text);
    let (ok, said) = validate(&repo);
    assert!(ok, "{said}");
    assert_success(&repo.liza(&["note", "all", "a write"]));
    let after = repo.state_text();
    assert!(after.contains("handoff:\n  task: task-6\n"), "{after}");
    assert!(after.contains("  # REQUIRED\n  summary:"), "{after}");
    // The next write starts from liza's own cache of that revision: still flat.
    assert_success(&repo.liza(&["note", "all", "another write"]));
    assert!(repo.state_text().contains("handoff:\n  task: task-6\n"));
    // Without its task.
    let nameless = text.replacen("handoff:\n  task: task-6\n", "handoff:\n", 1);
    let (ok, said) = validate(&board(&nameless));
    assert!(!ok);
    assert!(said.contains("names its task with `task: <id>`"), "{said}");
    // And the v0.1 rule: summary and next_action are required.
    let (ok, said) = validate(&board(&text.replace("  next_action: \"Handle 429\"\n", "")));
    assert!(!ok);
    assert!(said.contains("next_action"), "{said}");
}
