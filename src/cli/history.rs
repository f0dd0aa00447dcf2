//! `liza history [--rev N]` and `liza diff <revA> <revB>`: the journal, read.

use std::io::Write;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::ops::{self, Project};

#[derive(clap::Args)]
pub(super) struct HistoryArgs {
    /// Print the state.yaml of this revision, as committed.
    #[arg(long, value_name = "N")]
    rev: Option<u64>,
}

#[derive(clap::Args)]
pub(super) struct DiffArgs {
    /// The earlier revision.
    from: u64,
    /// The later revision.
    to: u64,
}

pub(super) fn cmd_history(args: HistoryArgs, out: &Output) -> Result<i32, CliError> {
    let project = Project::discover(&current_dir()?)?;
    if let Some(revision) = args.rev {
        let text = ops::revision_text(&project, revision)?;
        if out.json {
            let text = String::from_utf8_lossy(&text).into_owned();
            out.ok(
                serde_json::json!({"revision": revision, "text": text}),
                String::new,
            );
        } else {
            let _ = std::io::stdout().write_all(&text);
        }
        return Ok(EXIT_OK);
    }
    let revisions = ops::history(&project)?;
    out.ok(serde_json::to_value(&revisions).unwrap_or_default(), || {
        let mut text = String::new();
        for r in &revisions {
            if r.damaged {
                text += &format!(
                    "r{:<5} DAMAGED: its journal entry is not whole (`liza doctor` says more)\n",
                    r.revision
                );
            }
            match r.entries.as_slice() {
                [] => text += &format!("r{}\n", r.revision),
                entries => {
                    for (i, e) in entries.iter().enumerate() {
                        let label = if i == 0 {
                            format!("r{}", r.revision)
                        } else {
                            String::new()
                        };
                        text += &format!("{label:<6} {e}\n");
                    }
                }
            }
        }
        text
    });
    Ok(EXIT_OK)
}

pub(super) fn cmd_diff(args: DiffArgs, out: &Output) -> Result<i32, CliError> {
    let project = Project::discover(&current_dir()?)?;
    let changes = ops::diff(&project, args.from, args.to)?;
    out.ok(serde_json::to_value(&changes).unwrap_or_default(), || {
        if changes.is_empty() {
            format!("no changes from revision {} to {}\n", args.from, args.to)
        } else {
            changes.iter().map(|c| format!("{c}\n")).collect()
        }
    });
    Ok(EXIT_OK)
}
