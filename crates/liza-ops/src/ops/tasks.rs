//! Planning operations: `add-task`, `add-tasks --file`, `amend-task`, `finalize-task`.

use std::collections::HashMap;
use std::path::Path;

use super::spec_committed::{SpecAt, spec_at, start_tip};
use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::model::TaskStatus;
use crate::blackboard::store::Document;
use crate::blackboard::{Actor, TaskId};
use crate::git::{Repo, blob_id};
use crate::lifecycle::{self, Amendment, NewTask, Outcome, RuleId, SpecFacts, spec_file};

/// What finalizing needs to know about a spec reference, read from the project root.
pub fn spec_facts(root: &Path, spec_ref: Option<&str>) -> SpecFacts {
    let Some(spec_ref) = spec_ref else {
        return SpecFacts::missing();
    };
    // A spec that leads outside the repository (absolute, `..`, a symbolic link out)
    // does not exist for liza: it is never read, hashed or copied.
    let path = match crate::confine::inside(root, spec_file(spec_ref)) {
        Ok(path) if path.is_file() => path,
        _ => return SpecFacts::missing(),
    };
    SpecFacts {
        exists: true,
        blob: blob_id(&path).ok(),
        committed: false,
    }
}

/// Refuses a spec_ref whose file leads outside the repository, or into liza's or git's
/// own files, through a symbolic link (the transition rules refuse absolute paths, `..`
/// and those files named directly themselves).
fn spec_inside(project: &Project, spec_ref: &str) -> Result<(), OpsError> {
    if spec_ref.trim().is_empty() {
        return Ok(());
    }
    match crate::confine::inside(&project.root, spec_file(spec_ref)) {
        Err(e @ (crate::confine::Escape::Outside { .. } | crate::confine::Escape::Private(_))) => {
            Err(OpsError::refused(
                RuleId::SpecPath,
                format!("spec_ref {e}"),
                "point --spec at a file inside the repository (copy the spec in if it lives elsewhere)",
            ))
        }
        _ => Ok(()),
    }
}

/// Keeps the spec text each task was finalized against (`.liza/specs/<blob>`, or in
/// etcd where a reviewer on another host reads it).
fn keep_spec_texts(project: &Project, specs: &HashMap<String, SpecFacts>) {
    for (spec_ref, facts) in specs {
        let Some(blob) = &facts.blob else { continue };
        let document = Document::SpecText { blob };
        if matches!(project.store.document(&document), Ok(Some(_))) {
            continue;
        }
        let Some(text) = crate::confine::read_inside(&project.root, spec_file(spec_ref)) else {
            continue;
        };
        if let Err(e) = project.store.keep_document(&document, text.as_bytes()) {
            tracing::warn!(spec = %spec_ref, error = %e, "could not keep the spec text");
        }
    }
}

/// The facts of each spec, and whether the integration branch's tip holds it.
fn facts_for<'a>(
    project: &Project,
    refs: impl Iterator<Item = &'a str>,
) -> Result<HashMap<String, SpecFacts>, OpsError> {
    let config = project.store.snapshot()?.state.config;
    let repo = Repo::open(&project.root)?;
    let tip = start_tip(&project.root, &config)?;
    Ok(refs
        .map(|r| {
            let mut facts = spec_facts(&project.root, Some(r));
            facts.committed = tip
                .as_ref()
                .is_some_and(|tip| spec_at(&repo, &project.root, tip, r) != SpecAt::Absent);
            (r.to_owned(), facts)
        })
        .collect())
}

/// `add-task` / `add-tasks`: all or nothing; items with `finalize` are finalized in the
/// same transaction.
pub fn add_tasks(
    project: &Project,
    actor: &Actor,
    tasks: &[NewTask],
) -> Result<Transition<Vec<TaskId>>, OpsError> {
    for spec in tasks.iter().filter_map(|t| t.spec_ref.as_deref()) {
        spec_inside(project, spec)?;
    }
    let specs = facts_for(
        project,
        tasks
            .iter()
            .filter(|t| t.finalize)
            .filter_map(|t| t.spec_ref.as_deref()),
    )?;
    let done = transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            let mut outcome = lifecycle::add_tasks(state, who, tasks, now)?;
            let mut ids = Vec::new();
            for new in tasks {
                let id = TaskId::parse(new.id.trim()).map_err(|e| {
                    lifecycle::Refusal::new(RuleId::TaskId, e.to_string(), "fix the id")
                })?;
                if new.finalize {
                    let facts = new
                        .spec_ref
                        .as_deref()
                        .and_then(|r| specs.get(r))
                        .cloned()
                        .unwrap_or_else(SpecFacts::missing);
                    outcome.merge(lifecycle::finalize(state, who, &id, &facts, now)?);
                }
                ids.push(id);
            }
            Ok((outcome, ids))
        },
    )?;
    keep_spec_texts(project, &specs);
    Ok(done)
}

/// `amend-task`.
pub fn amend_task(
    project: &Project,
    actor: &Actor,
    id: &TaskId,
    change: &Amendment,
) -> Result<Transition<()>, OpsError> {
    if let Some(spec) = &change.spec_ref {
        spec_inside(project, spec)?;
    }
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| Ok((lifecycle::amend_task(state, who, id, change, now)?, ())),
    )
}

/// `finalize-task <ids> | --all`: all or nothing.
pub fn finalize_tasks(
    project: &Project,
    actor: &Actor,
    ids: &[TaskId],
    all: bool,
) -> Result<Transition<Vec<TaskId>>, OpsError> {
    let snapshot = project.store.snapshot()?;
    let chosen: Vec<TaskId> = if all {
        snapshot
            .state
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Draft)
            .map(|t| t.id.clone())
            .collect()
    } else {
        ids.to_vec()
    };
    if chosen.is_empty() {
        return Err(OpsError::refused(
            RuleId::FinalizeDrafts,
            "there is no DRAFT task to finalize",
            "add tasks with `liza add-task` first",
        ));
    }
    let specs = facts_for(
        project,
        chosen
            .iter()
            .filter_map(|id| snapshot.state.task(id))
            .filter_map(|t| t.spec_ref.as_deref()),
    )?;
    let done = transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            let mut outcome = Outcome::default();
            for id in &chosen {
                let spec_ref = state.task(id).and_then(|t| t.spec_ref.clone());
                // A spec_ref amended since the snapshot is looked up again by the next try.
                let facts = spec_ref
                    .as_deref()
                    .and_then(|r| specs.get(r))
                    .cloned()
                    .unwrap_or_else(SpecFacts::missing);
                outcome.merge(lifecycle::finalize(state, who, id, &facts, now)?);
            }
            Ok((outcome, chosen.clone()))
        },
    )?;
    keep_spec_texts(project, &specs);
    Ok(done)
}

/// The spec-currency section: the spec changed since the task was finalized; the lines
/// removed and added since (the finalized text is kept beside the blackboard).
pub fn spec_change_text(
    project: &Project,
    t: &crate::blackboard::model::Task,
    then: &str,
    now: &str,
) -> String {
    let spec = lifecycle::spec_file(t.spec_ref.as_deref().unwrap_or(""));
    let old = project
        .store
        .document(&Document::SpecText { blob: then })
        .ok()
        .flatten()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let new = crate::confine::read_inside(&project.root, spec).unwrap_or_default();
    let mut diff = Vec::new();
    for line in old.lines().filter(|l| !new.lines().any(|n| n == *l)) {
        diff.push(format!("- {line}"));
    }
    for line in new.lines().filter(|l| !old.lines().any(|o| o == *l)) {
        diff.push(format!("+ {line}"));
    }
    format!(
        "\nSPEC CHANGED since the task was finalized ({then} → {now}); review against the current spec, and log a spec_changed anomaly if the change matters:\n{}",
        diff.join("\n")
    )
}
