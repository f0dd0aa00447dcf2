//! `liza show <task>`: one task in full, as it stands in state.yaml.

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::TaskId;
use crate::blackboard::codec::Emit;
use crate::blackboard::store::Document;
use crate::blackboard::yaml::{self, Emitter};
use crate::ops::Project;

#[derive(clap::Args)]
pub(super) struct ShowArgs {
    /// The task id.
    task: String,
}

pub(super) fn cmd_show(args: ShowArgs, out: &Output) -> Result<i32, CliError> {
    let id = TaskId::parse(&args.task).map_err(|e| CliError::refused(e.to_string()))?;
    let project = Project::discover(&current_dir()?)?;
    let snapshot = project.store.snapshot()?;
    let state = &snapshot.state;
    let Some(task) = state.task(&id) else {
        if let Some(archived) = state.archived.as_ref().and_then(|a| a.get(&id)) {
            let sprint = archived.sprint.clone().unwrap_or_else(|| "?".into());
            let document = Document::Archive { sprint: &sprint };
            let place = project.store.document_place(&document);
            let result = serde_json::json!({"id": id, "archived": true, "status": archived.status, "sprint": sprint, "record": place});
            out.ok(result, || {
                format!(
                    "{id} is archived ({}, {sprint}); its record is in {place}\n",
                    archived.status
                )
            });
            return Ok(EXIT_OK);
        }
        return Err(crate::ops::OpsError::refused(
            crate::lifecycle::RuleId::TaskExists,
            format!("there is no task {id}"),
            "liza status lists the tasks",
        )
        .into());
    };
    let mut e = Emitter::default();
    task.emit(&mut e);
    let text = e.finish();
    let mut json = yaml::parse(&text)
        .ok()
        .and_then(|p| p.root)
        .map(|n| n.to_json())
        .unwrap_or_default();
    // Work saved from the task's worktrees (abandon, release, takeover) lives on in git.
    let attic = crate::git::Repo::open(&project.root)
        .map(|r| r.attic_refs(&id))
        .unwrap_or_default();
    if !attic.is_empty()
        && let Some(object) = json.as_object_mut()
    {
        object.insert(
            "saved_work".into(),
            attic
                .iter()
                .map(|(name, tip)| serde_json::json!({"ref": name, "commit": tip}))
                .collect(),
        );
    }
    // Each run of an agent on the task, and whether it ran sandboxed (specs/sandbox.md
    // *Modes*): the `agent_run_ended` entries of the log.
    let runs = runs_of(&project, &id);
    if !runs.is_empty()
        && let Some(object) = json.as_object_mut()
    {
        object.insert(
            "runs".into(),
            runs.iter()
                .map(|r| {
                    serde_json::json!({"ended": r.ended, "agent": r.agent, "exit_class": r.exit_class, "sandbox": r.sandbox})
                })
                .collect(),
        );
    }
    // What its runs used (specs/ledger.md): the ledger's totals, beside the v0.1 fields
    // a task's `usage` may hold.
    let ledger = project.store.ledger().unwrap_or_default();
    let used = crate::blackboard::ledger::total(
        ledger
            .iter()
            .filter(|e| e.task.as_deref() == Some(id.as_str())),
    );
    if used.runs > 0
        && let Some(object) = json.as_object_mut()
    {
        let usage = object
            .entry("usage")
            .or_insert_with(|| serde_json::json!({}));
        if let (Some(usage), serde_json::Value::Object(totals)) = (
            usage.as_object_mut(),
            serde_json::to_value(&used).unwrap_or_default(),
        ) {
            usage.extend(totals);
        }
    }
    // Its place in the merge queue (specs/git.md *The queue*).
    let queue = crate::lifecycle::merge_queue(state);
    let place = queue.iter().position(|t| t == &id);
    if let Some(place) = place
        && let Some(object) = json.as_object_mut()
    {
        object.insert(
            "merge_queue".into(),
            serde_json::json!({"place": place + 1, "of": queue.len(), "merging": task.merge_intent.is_some()}),
        );
    }
    out.ok(json, || {
        let queued = place.map_or_else(String::new, |p| {
            format!(
                "# merge queue: {} of {}{}\n",
                p + 1,
                queue.len(),
                if task.merge_intent.is_some() {
                    ", being merged"
                } else {
                    ""
                }
            )
        });
        let ready = task
            .depends_on()
            .iter()
            .all(|d| state.dependency_satisfied(d));
        let deps = if task.depends_on().is_empty() {
            String::new()
        } else if ready {
            "# dependencies: all satisfied\n".to_owned()
        } else {
            "# dependencies: not all satisfied yet\n".to_owned()
        };
        let saved: String = attic
            .iter()
            .map(|(name, tip)| format!("# saved work: {name} ({})\n", &tip[..12.min(tip.len())]))
            .collect();
        let runs: String = runs
            .iter()
            .map(|r| {
                let sandbox = match r.sandbox.as_str() {
                    "on" => "sandboxed".to_owned(),
                    "" => "sandbox not recorded".to_owned(),
                    other => format!("NOT sandboxed ({other})"),
                };
                crate::terminal_text::visible(&format!(
                    "# run: {} {} ended {}, {sandbox}\n",
                    r.ended, r.agent, r.exit_class
                ))
                .into_owned()
            })
            .collect();
        let usage = if used.runs == 0 {
            String::new()
        } else {
            format!(
                "# usage: {} over {} run(s){}\n",
                crate::blackboard::ledger::phrase(&used.usage()),
                used.runs,
                if used.runs_approximate > 0 {
                    ", at least"
                } else {
                    ""
                }
            )
        };
        format!(
            "# task {id} · {} · revision {}\n{queued}{deps}{saved}{runs}{usage}{text}",
            task.status,
            state.revision()
        )
    });
    Ok(EXIT_OK)
}

/// One agent run on a task, as its `agent_run_ended` log entry says.
struct Run {
    ended: String,
    agent: String,
    exit_class: String,
    /// `on`, `off`, `unavailable`, or empty for runs logged before liza sandboxed them.
    sandbox: String,
}

fn runs_of(project: &Project, id: &TaskId) -> Vec<Run> {
    let Ok(bytes) = project.store.log_text() else {
        return Vec::new();
    };
    let text = |e: &crate::blackboard::log::LogEntry, key: &str| {
        e.extra
            .get(key)
            .and_then(|n| n.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    crate::blackboard::log::parse_items(&bytes, 1)
        .entries
        .iter()
        .filter(|e| {
            e.action == crate::blackboard::log_tally::RUN_ENDED.as_str()
                && e.task.as_deref() == Some(id.as_str())
        })
        .map(|e| Run {
            ended: e.timestamp.map(|t| t.to_string()).unwrap_or_default(),
            agent: e.agent.clone().unwrap_or_default(),
            exit_class: text(e, "exit_class"),
            sandbox: text(e, "sandbox"),
        })
        .collect()
}
