//! `liza cost [--sprint S] [--by task|agent|backend|model|sprint|role] [--json]`: what the
//! agents' runs used — tokens and dollars, added up from the ledger (specs/ledger.md) —
//! grouped as asked, with the total.

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::ledger::{self, GroupBy, LedgerEntry};
use crate::ops::Project;

#[derive(clap::Args)]
pub(super) struct CostArgs {
    /// Only the runs of this sprint (`current`: the sprint under way).
    #[arg(long, value_name = "SPRINT")]
    sprint: Option<String>,
    /// What to group the runs by: task, agent, backend, model, sprint or role.
    #[arg(long, default_value = "task", value_name = "WHAT")]
    by: String,
    /// Only the runs of this task.
    #[arg(long, value_name = "TASK")]
    task: Option<String>,
    /// Only the runs of this agent.
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,
}

pub(super) fn cmd_cost(args: CostArgs, out: &Output) -> Result<i32, CliError> {
    let by = GroupBy::parse(&args.by).ok_or_else(|| {
        CliError::usage(format!("--by {:?} is not a way to group runs", args.by))
            .with_hint("--by task, agent, backend, model, sprint or role")
    })?;
    let project = Project::discover(&current_dir()?)?;
    let sprint = match args.sprint.as_deref() {
        Some("current") => Some(project.store.snapshot()?.state.sprint.id.clone()),
        other => other.map(str::to_owned),
    };
    let entries = project.store.ledger()?;
    let chosen: Vec<&LedgerEntry> = entries
        .iter()
        .filter(|e| sprint.as_ref().is_none_or(|s| e.sprint.as_ref() == Some(s)))
        .filter(|e| {
            args.task
                .as_ref()
                .is_none_or(|t| e.task.as_ref() == Some(t))
        })
        .filter(|e| args.agent.as_ref().is_none_or(|a| &e.agent == a))
        .collect();
    let groups = ledger::group(chosen.iter().copied(), by);
    let total = ledger::total(chosen.iter().copied());
    let json = serde_json::json!({
        "by": by.name(),
        "sprint": sprint,
        "groups": groups
            .iter()
            .map(|(key, totals)| {
                let mut value = serde_json::to_value(totals).unwrap_or_default();
                if let Some(object) = value.as_object_mut() {
                    object.insert(by.name().into(), key.clone().into());
                }
                value
            })
            .collect::<Vec<_>>(),
        "total": total,
    });
    out.ok(json, || {
        ledger::table(by, &groups, &total, sprint.as_deref())
    });
    Ok(EXIT_OK)
}
