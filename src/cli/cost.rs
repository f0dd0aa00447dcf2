//! `liza cost [--sprint S] [--by task|agent|backend|model|sprint|role] [--json]`: what the
//! agents' runs used — tokens and dollars, added up from the ledger (specs/ledger.md) —
//! grouped as asked, with the total.

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::ledger::{self, GroupBy, LedgerEntry, Totals};
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
    out.ok(json, || table(by, &groups, &total, sprint.as_deref()));
    Ok(EXIT_OK)
}

/// The groups as a table, the total last, and what the figures leave out.
pub(crate) fn table(
    by: GroupBy,
    groups: &std::collections::BTreeMap<String, Totals>,
    total: &Totals,
    sprint: Option<&str>,
) -> String {
    if total.runs == 0 {
        return match sprint {
            Some(s) => format!("no agent run recorded in sprint {s}\n"),
            None => "no agent run recorded yet (.liza/ledger.jsonl)\n".to_owned(),
        };
    }
    let header = [
        by.name(),
        "runs",
        "input",
        "output",
        "cache read",
        "cache write",
        "cost",
    ];
    let row = |label: &str, t: &Totals| -> Vec<String> {
        let count = |n: Option<u64>| n.map_or_else(|| "-".to_owned(), ledger::thousands);
        vec![
            label.to_owned(),
            t.runs.to_string(),
            count(t.input_tokens),
            count(t.output_tokens),
            count(t.cache_read_tokens),
            count(t.cache_write_tokens),
            t.cost_usd.map_or_else(|| "-".to_owned(), ledger::dollars),
        ]
    };
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    rows.extend(groups.iter().map(|(label, t)| row(label, t)));
    rows.push(row("total", total));
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for (n, r) in rows.iter().enumerate() {
        if n == rows.len() - 1 {
            text.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            text.push('\n');
        }
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                if i == 0 {
                    format!("{cell:<w$}", w = widths[i])
                } else {
                    format!("{cell:>w$}", w = widths[i])
                }
            })
            .collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    if total.runs_unreported > 0 {
        text.push_str(&format!(
            "{} run(s) of a backend that reports no usage are counted as runs only\n",
            total.runs_unreported
        ));
    }
    if total.runs_approximate > 0 {
        text.push_str(&format!(
            "{} run(s) reported rounded counts (aider): their tokens are lower bounds\n",
            total.runs_approximate
        ));
    }
    text.push_str("- : not reported by any run counted\n");
    text
}
