//! What every state-changing command shares: validated ids from the command line (checked
//! before they touch a path or a ref), the project and actor, and how a committed
//! transition is shown.

use serde_json::{Value, json};

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::{Actor, AgentId, TaskId};
use crate::ops::{self, Project, Transition};

/// A task id from the command line.
pub(super) fn task_id(text: &str) -> Result<TaskId, CliError> {
    TaskId::parse(text).map_err(|e| {
        CliError::refused(e.to_string())
            .with_hint("task ids are 1-64 ASCII letters, digits, '-', '_' and '.', starting with a letter or digit")
    })
}

pub(super) fn task_ids(texts: &[String]) -> Result<Vec<TaskId>, CliError> {
    texts
        .iter()
        .flat_map(|t| t.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(task_id)
        .collect()
}

/// An agent id from the command line.
pub(super) fn agent_id(text: &str) -> Result<AgentId, CliError> {
    AgentId::parse(text).map_err(|e| {
        CliError::refused(e.to_string()).with_hint("e.g. coder-1, code-reviewer-1, planner-1")
    })
}

/// The project of the current directory and who is acting.
pub(super) fn context() -> Result<(Project, Actor), CliError> {
    let actor = ops::actor_from_env()?;
    let project = Project::discover(&current_dir()?)?;
    Ok((project, actor))
}

/// The `--json` result of a committed transition.
pub(super) fn transition_json<T: serde::Serialize>(done: &Transition<T>) -> Value {
    json!({
        "revision": done.revision,
        "events": done.outcome.events,
        "warnings": done.outcome.warnings,
        "value": serde_json::to_value(&done.value).unwrap_or(Value::Null),
    })
}

/// Prints a committed transition: `human` and warnings as text, or the JSON envelope with
/// `revision`, `events`, `warnings` and `value`.
pub(super) fn show<T: serde::Serialize>(
    out: &Output,
    done: &Transition<T>,
    human: impl FnOnce(&T) -> String,
) -> Result<i32, CliError> {
    for w in &done.outcome.warnings {
        if !out.json {
            eprintln!("warning: {w}");
        }
    }
    out.ok(transition_json(done), || {
        let mut text = human(&done.value);
        if text.is_empty() {
            let events: Vec<String> = done
                .outcome
                .events
                .iter()
                .map(|e| {
                    format!(
                        "{}{}",
                        e.action,
                        e.task.as_ref().map(|t| format!(" {t}")).unwrap_or_default()
                    )
                })
                .collect();
            text = events.join(", ");
        }
        format!("{text} (revision {})\n", done.revision)
    });
    Ok(EXIT_OK)
}
