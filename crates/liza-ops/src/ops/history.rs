//! `liza history` and `liza diff` over the journal: which revisions are kept, what each
//! one was (its log entries), its text, and what changed between two of them, field by
//! field.

use crate::lifecycle::RuleId;
use serde::Serialize;

use super::{OpsError, Project};
use crate::blackboard::document;
use crate::blackboard::log as activity;
use crate::blackboard::tree_diff::{self, Change};

/// One kept revision and what made it.
#[derive(Debug, Serialize)]
pub struct RevisionInfo {
    /// The revision's number.
    pub revision: u64,
    /// `agent action [task]: detail` of each log entry of that revision.
    pub entries: Vec<String>,
    /// Its journal entry is not whole: its text cannot be shown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub damaged: bool,
}

/// The revisions the journal keeps, oldest first, with their log entries.
pub fn history(project: &Project) -> Result<Vec<RevisionInfo>, OpsError> {
    let revisions = project.store.revisions()?;
    let damaged = project.store.damaged_revisions()?;
    let log = activity::parse_items(&project.store.log_text()?, 1).entries;
    Ok(revisions
        .into_iter()
        .map(|revision| RevisionInfo {
            revision,
            damaged: damaged.contains(&revision),
            entries: log
                .iter()
                .filter(|e| e.revision == Some(revision as i64))
                .map(|e| {
                    let task = e.task.as_ref().map(|t| format!(" {t}")).unwrap_or_default();
                    let detail = e
                        .detail
                        .as_ref()
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default();
                    let agent = e.agent.as_deref().unwrap_or("?");
                    format!("{agent} {}{task}{detail}", e.action)
                })
                .collect(),
        })
        .collect())
}

/// The text of `revision` as committed.
pub fn revision_text(project: &Project, revision: u64) -> Result<Vec<u8>, OpsError> {
    project
        .store
        .revision_text(revision)?
        .ok_or_else(|| gone(project, revision))
}

/// The fields that changed from revision `from` to revision `to`.
pub fn diff(project: &Project, from: u64, to: u64) -> Result<Vec<Change>, OpsError> {
    let tree = |revision: u64| -> Result<_, OpsError> {
        let text = revision_text(project, revision)?;
        document::decode(&text).map(|d| d.root).map_err(|_| {
            OpsError::refused(
                RuleId::JournalRevision,
                format!("revision {revision} in the journal does not parse"),
                "the journal entry is damaged; `liza history` lists the others",
            )
        })
    };
    Ok(tree_diff::changes(&tree(from)?, &tree(to)?))
}

fn gone(project: &Project, revision: u64) -> OpsError {
    let kept = project.store.revisions().unwrap_or_default();
    let range = match (kept.first(), kept.last()) {
        (Some(first), Some(last)) => format!("revisions {first} to {last}"),
        _ => "no revisions".into(),
    };
    let inside = project.store.address().is_some()
        && kept.first().is_some_and(|first| *first < revision)
        && kept.last().is_some_and(|last| revision < *last);
    if inside {
        // Transitions committed in etcd in one batch keep the last one's state.
        return OpsError::refused(
            RuleId::JournalRevision,
            format!(
                "revision {revision} was committed in one batch with the revisions after it; only the batch's last state is kept (its log entries are all there)"
            ),
            "`liza history` lists the revisions with a state of their own; `liza log` shows every revision's entries",
        );
    }
    OpsError::refused(
        RuleId::JournalRevision,
        format!("revision {revision} is not in the journal (it keeps {range})"),
        "`liza history` lists the kept revisions; config.journal_keep sets how many",
    )
}
