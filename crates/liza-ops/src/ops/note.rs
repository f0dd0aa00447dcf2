//! `liza note`: a person leaves a note for one task's agents or for all.

use super::OpsError;
use super::authority::{Authority, CallerFacts, authorize, people_only_in};
use crate::blackboard::EventKind;
use crate::blackboard::model::HumanNote;
use crate::blackboard::{Actor, Store, TaskId};
use crate::lifecycle::RuleId;

/// A note left.
#[derive(Debug, serde::Serialize)]
pub struct NoteOutcome {
    /// The note's id, `note-N`.
    pub id: String,
    /// Whom it is for: a task id, or `all`.
    pub target: String,
    /// The revision it was committed as.
    pub revision: u64,
}

/// Appends a human note `{id: note-N, timestamp, message, for, seen_by: []}`.
pub fn note(
    store: &Store,
    actor: &Actor,
    target: &str,
    message: &str,
) -> Result<NoteOutcome, OpsError> {
    super::authority::no_agent_identity(actor, "note")?;
    let message = message.trim();
    if message.is_empty() {
        return Err(OpsError::refused(
            RuleId::NoteText,
            "the note is empty",
            "write the message as the second argument",
        ));
    }
    let task = if target == "all" {
        None
    } else {
        Some(TaskId::parse(target).map_err(|e| {
            OpsError::refused(
                RuleId::TaskId,
                format!("{e}"),
                "name a task id from `liza status`, or `all`",
            )
        })?)
    };
    let facts = CallerFacts::of(actor);
    let committed = store.transact(actor, |tx| {
        // A command for people, checked here rather than before (`people_only`): against
        // the liveness records this transaction reads anyway.
        people_only_in(tx, &facts, "note")?;
        authorize(
            &tx.state,
            tx.live(),
            actor,
            Authority::Caller,
            &facts,
            tx.now,
        )?;
        if let Some(task) = &task
            && !tx.state.task_exists(task)
        {
            return Err(OpsError::refused(
                RuleId::TaskExists,
                format!("there is no task {task}"),
                "name a task id from `liza status`, or `all`",
            ));
        }
        let id = tx.state.next_note_id();
        let target = task.as_ref().map_or("all", TaskId::as_str).to_owned();
        let note = HumanNote {
            id: Some(id.clone()),
            timestamp: Some(tx.now),
            message: message.to_owned(),
            target: Some(target.clone()),
            seen_by: Some(Vec::new()),
            extra: Default::default(),
        };
        tx.state.human_notes.get_or_insert_with(Vec::new).push(note);
        let entry = tx.log(EventKind::HumanNote);
        entry.task = task.as_ref().map(|t| t.to_string());
        entry.detail = Some(format!("{id}: {message}"));
        Ok((id, target))
    })?;
    let (id, target) = committed.value;
    Ok(NoteOutcome {
        id,
        target,
        revision: committed.revision,
    })
}
