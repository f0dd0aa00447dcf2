//! Moving terminal tasks out of state.yaml (specs/blackboard.md *Growth*): the records were
//! written to `archive/<sprint>.yaml` first; this transition removes each task that is
//! still there exactly as written and still terminal, indexes it under `archived`
//! (`{status, sprint}`: dependencies, scopes and id uniqueness keep working), and — for a
//! task of the running sprint — adds it to the sprint metrics' running totals.

use crate::EventKind;
use std::sync::Arc;

use crate::State;
use crate::codec::IdMap;
use crate::metrics;
use crate::model::{ArchivedTask, Task};

use super::context::{Outcome, Who};
use super::table::Kind;

/// Archives `written` (the records now in the archive of `sprint`); returns the outcome
/// (no event when nothing could move) and the ids moved.
pub fn archive(
    state: &mut State,
    who: &Who,
    written: &[Arc<Task>],
    sprint: &str,
) -> (Outcome, Vec<String>) {
    let mut moved = Vec::new();
    for record in written {
        let Some(index) = state.tasks.iter().position(|t| t.id == record.id) else {
            continue;
        };
        let live = &state.tasks.0[index];
        // Changed since it was written (or no longer terminal): it stays live; the next
        // archiving writes its new record over the old one.
        if **live != **record || !live.status.is_terminal() {
            continue;
        }
        let task = state.tasks.0.remove(index);
        // Only the running sprint's own tasks belong in its totals.
        let in_scope =
            state.sprint.planned().contains(&task.id) || state.sprint.stretch().contains(&task.id);
        if state.sprint.id == sprint && in_scope {
            metrics::add_to_archived_totals(state, &task);
        }
        state.archived.get_or_insert_with(IdMap::default).insert(
            task.id.clone(),
            ArchivedTask {
                status: task.status,
                sprint: Some(sprint.to_owned()),
                extra: Default::default(),
            },
        );
        moved.push(task.id.to_string());
    }
    let mut outcome = Outcome::default();
    if !moved.is_empty() {
        let by = match who.kind() {
            Kind::Human => who.name(),
            _ => "liza".to_owned(),
        };
        outcome.event(
            EventKind::Archived,
            &by,
            None,
            Some(format!(
                "{} terminal task(s) to archive/{sprint}.yaml: {}",
                moved.len(),
                moved.join(", ")
            )),
        );
    }
    (outcome, moved)
}
