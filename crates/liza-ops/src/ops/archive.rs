//! Terminal-task archiving (specs/blackboard.md *Growth*): the tasks' full records are written
//! to `.liza/archive/<sprint>.yaml` first (merged by id with what the file holds, written
//! atomically and synced), then one transaction removes them from state.yaml and indexes
//! them. A crash between the two leaves the tasks live and their copies in the archive,
//! which the next archiving overwrites: nothing is ever only in memory.

use crate::lifecycle::RuleId;
use std::sync::Arc;

use super::{Authority, OpsError, Project, transition};
use crate::blackboard::document::{decode_record, emit_record};
use crate::blackboard::model::{Archive, Task, TaskList};
use crate::blackboard::store::Document;
use crate::blackboard::{Actor, Store, Timestamp};
use crate::lifecycle;

/// Which terminal tasks to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    /// Every terminal task (the sprint is over).
    AllTerminal,
    /// Terminal tasks that entered their status more than this many seconds ago.
    OlderThan(i64),
}

/// Terminal tasks moved out of state.yaml into their sprint's archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archived {
    /// The sprint whose archive holds them.
    pub sprint: String,
    /// Where the archive is kept (a path, or a key in etcd).
    pub place: String,
    /// The ids of the tasks moved.
    pub tasks: Vec<String>,
    /// The revision of the last transaction that moved some.
    pub revision: u64,
}

/// Archives the selected terminal tasks under `sprint`; `None` when there were none.
pub fn archive_terminal(
    project: &Project,
    actor: &Actor,
    authority: Authority,
    sprint: &str,
    select: Select,
) -> Result<Option<Archived>, OpsError> {
    check_stem(sprint)?;
    let snapshot = project.store.snapshot()?;
    let state = snapshot.state;
    let now = Timestamp::now();
    let chosen: Vec<Arc<Task>> = state
        .tasks
        .iter()
        .filter(|t| t.status.is_terminal())
        .filter(|t| match select {
            Select::AllTerminal => true,
            Select::OlderThan(secs) => t
                .status_changed_at
                .is_some_and(|at| now.seconds_since(at) > secs),
        })
        .cloned()
        .collect();
    if chosen.is_empty() {
        return Ok(None);
    }
    // The records are written out in full: their histories are read here, and one the
    // parse cache cannot give back is refused before the archive is written.
    for task in &chosen {
        task.history();
    }
    project
        .store
        .refuse_damaged(snapshot.hash, chosen.iter().map(|t| &**t))?;
    let mut moved = Vec::new();
    let mut revision = None;
    // A step at a time: a transition in etcd writes a bounded number of keys (one per
    // task moved), and each step's records are in the archive before they leave the state.
    // The head and the log besides a key per task.
    let step = project
        .store
        .keys_per_transition()
        .map_or(ARCHIVE_STEP, |keys| {
            keys.saturating_sub(2).clamp(1, ARCHIVE_STEP)
        });
    for step in chosen.chunks(step) {
        write_archive(&project.store, sprint, step)?;
        match transition(&project.store, actor, authority, |s, w, _n| {
            Ok(lifecycle::archiving::archive(s, w, step, sprint))
        }) {
            Ok(done) => {
                moved.extend(done.value);
                revision = Some(done.revision);
            }
            Err(OpsError::Nothing) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(revision.map(|revision| Archived {
        sprint: sprint.to_owned(),
        place: project.store.document_place(&Document::Archive { sprint }),
        tasks: moved,
        revision,
    }))
}

/// Tasks moved per transition at most.
const ARCHIVE_STEP: usize = 100;

/// Sprint ids become file names: the same characters task ids allow.
pub fn check_stem(sprint: &str) -> Result<(), OpsError> {
    let ok = !sprint.is_empty()
        && sprint.len() <= 64
        && sprint
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && sprint
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !sprint.contains("..");
    if ok {
        return Ok(());
    }
    Err(OpsError::refused(
        RuleId::ArchiveName,
        format!("sprint id {sprint:?} cannot name an archive file"),
        "use letters, digits, `-`, `_` and `.` in sprint.id",
    ))
}

/// Merges `tasks` into the archive file by id (a newer record replaces an older one) and
/// writes it atomically. An archive that cannot be read is never overwritten.
fn write_archive(store: &Store, sprint: &str, tasks: &[Arc<Task>]) -> Result<(), OpsError> {
    let document = Document::Archive { sprint };
    store.update_document(&document, |kept| {
        let mut archive = match kept {
            Some(bytes) => decode_record::<Archive>(bytes).map_err(|findings| {
                let place = store.document_place(&document);
                OpsError::refused(
                    RuleId::ArchiveReadable,
                    format!(
                        "{place} cannot be read, so nothing is added to it: {}",
                        findings
                            .iter()
                            .map(|f| format!("{place}:{}:{}: {}", f.line, f.column, f.message))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                    "repair or move the file, then archive again",
                )
            })?,
            None => Archive {
                sprint: sprint.to_owned(),
                tasks: TaskList::default(),
                extra: Default::default(),
            },
        };
        for task in tasks {
            match archive.tasks.0.iter_mut().find(|t| t.id == task.id) {
                Some(slot) => *slot = task.clone(),
                None => archive.tasks.0.push(task.clone()),
            }
        }
        Ok(format!(
            "# Terminal tasks of {sprint}, moved out of state.yaml by liza (index: `archived`).\n{}",
            emit_record(&archive)
        )
        .into_bytes())
    })
}
