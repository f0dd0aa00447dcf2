//! The answers `DRY_RUN=1` gives in place of a model (specs/builtin-agent.md *DRY_RUN*):
//! deterministic, of the right shape, and such that a whole sprint runs offline on one's
//! own project — a plan of real tasks taken from the goal's spec, each writing a note
//! inside its own paths, approved, merged, and the goal completed.

use std::path::Path;

use serde_json::json;

use crate::blackboard::TaskId;
use crate::blackboard::model::{State, Task};
use crate::lifecycle::{Trigger, TriggerKind, spec_file};

/// Where the dry run's planned tasks write their notes.
pub const NOTES_DIR: &str = "liza-dry-run/";

/// How many tasks a dry-run plan has at most.
const MAX_TASKS: usize = 3;

/// The planner's plan: one task per top-level item of the goal's spec (a `## ` heading or
/// a `- `/`* ` bullet, up to three; else one for the goal itself), each writing
/// `liza-dry-run/dry-run-<id>.md`.
pub fn plan(root: &Path, state: &State) -> String {
    let spec_ref = state.goal.spec_ref.clone();
    let text = spec_ref
        .as_deref()
        .and_then(|s| crate::confine::read_inside(root, spec_file(s)))
        .unwrap_or_default();
    let mut items: Vec<String> = spec_items(&text).into_iter().take(MAX_TASKS).collect();
    if items.is_empty() {
        items.push(state.goal.description.trim().to_owned());
    }
    let mut ids = free_ids(state);
    let tasks: Vec<_> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let id = ids.next().unwrap_or_default();
            let note = format!("{NOTES_DIR}dry-run-{id}.md");
            json!({
                "id": id,
                "title": shorten(item, 72),
                "rationale": "DRY_RUN=1: no model was asked; the task writes a note in its own paths",
                "acceptance": format!("{note} exists and names task {id}"),
                "artifacts": [NOTES_DIR],
                "spec_ref": spec_ref,
                "scope": format!("{note} only"),
                "priority": (i + 1).min(5),
            })
        })
        .collect();
    json!({"plan_id": "plan_dry_run", "tasks": tasks}).to_string()
}

/// The planner's decisions: the goal completed once its sprint is (so a dry run ends),
/// nothing else decided.
pub fn decisions(triggers: &[Trigger]) -> String {
    if triggers
        .iter()
        .any(|t| t.kind == TriggerKind::SprintComplete)
    {
        json!([{"decision": "goal_complete", "reason": "DRY_RUN=1: every planned task is merged"}])
            .to_string()
    } else {
        "[]".to_owned()
    }
}

/// The coder's edits: a note inside the task's paths — a directory they name, else one of
/// the test paths a coder may always change, else (no paths: anything goes) the root.
pub fn edits(task: &Task, test_paths: &[String]) -> String {
    let dir = match &task.paths {
        Some(paths) if !paths.is_empty() => paths
            .iter()
            .chain(test_paths)
            .find_map(|p| directory_of(p))
            .unwrap_or_default(),
        _ => String::new(),
    };
    json!({"edits": [{
        "path": format!("{dir}dry-run-{}.md", task.id),
        "content": format!("Dry run of task {}.\n", task.id),
    }]})
    .to_string()
}

/// The directory a path pattern names whole (`dir/`, `dir/*`, `dir/**`, `dir/**/*`), with
/// its trailing slash.
fn directory_of(pattern: &str) -> Option<String> {
    let p = pattern.trim().trim_start_matches("./");
    let dir = ["/**/*", "/**", "/*", "/"]
        .iter()
        .find_map(|tail| p.strip_suffix(tail))?;
    (!dir.is_empty() && !dir.contains(['*', '?', '[', '{'])).then(|| format!("{dir}/"))
}

/// The spec's top-level items: second-level headings and unindented bullets.
fn spec_items(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            // Lines of a fenced code block are code, not items.
            if line.starts_with("```") || line.starts_with("~~~") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .filter_map(|line| {
            ["## ", "- ", "* "]
                .iter()
                .find_map(|marker| line.strip_prefix(marker))
        })
        .map(|item| item.trim().to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

/// Task ids `t-1`, `t-2`, … that the blackboard does not use yet.
fn free_ids(state: &State) -> impl Iterator<Item = String> + '_ {
    (1..)
        .map(|n| format!("t-{n}"))
        .filter(|id| TaskId::parse(id).is_ok_and(|id| !state.task_exists(&id)))
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackboard::model::TaskStatus;

    #[test]
    fn a_note_goes_to_a_directory_the_paths_name_else_to_a_test_path() {
        assert_eq!(
            directory_of("src/report/**").as_deref(),
            Some("src/report/")
        );
        assert_eq!(directory_of("./docs/").as_deref(), Some("docs/"));
        assert_eq!(directory_of("src/**/*.rs"), None);
        assert_eq!(directory_of("src/cli.rs"), None);
        assert_eq!(directory_of("**"), None);
        let mut task = Task::new(TaskId::parse("t-1").unwrap(), TaskStatus::Claimed);
        task.paths = Some(vec!["src/cli.rs".into()]);
        let edits = edits(&task, &["tests/**".into()]);
        assert!(edits.contains("\"tests/dry-run-t-1.md\""), "{edits}");
    }

    #[test]
    fn the_spec_items_become_the_plan() {
        let items = spec_items(
            "# Vision\n\n- `sh greet.sh NAME` prints hello\n  - nested\n## Shout\ntext\n",
        );
        assert_eq!(items, ["`sh greet.sh NAME` prints hello", "Shout"]);
    }
}
