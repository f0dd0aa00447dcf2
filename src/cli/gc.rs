//! `liza gc [--apply]`: list (and with --apply remove) task worktrees and branches no live
//! task owns, saving their work first.

use super::output::Output;
use super::progress::Progress;
use super::report::context;
use super::{CliError, EXIT_OK};
use crate::error::ErrorClass;
use crate::ops::{self, Orphan};

#[derive(clap::Args)]
pub(super) struct GcArgs {
    /// Save and remove what is listed (default: only list it).
    #[arg(long)]
    pub(super) apply: bool,
}

pub(super) fn cmd_gc(args: GcArgs, out: &Output) -> Result<i32, CliError> {
    let (project, _actor) = context()?;
    let progress = Progress::start(out.json);
    progress.step("looking for orphaned worktrees and branches");
    let report = ops::gc(&project, args.apply);
    progress.finish();
    let report = report?;
    let value = serde_json::to_value(&report).unwrap_or_default();
    let failed: Vec<&str> = report
        .orphans
        .iter()
        .filter(|o| o.failed)
        .map(|o| o.name.as_str())
        .collect();
    let text = || {
        let mut text = String::new();
        if report.orphans.is_empty() {
            text.push_str(
                "nothing to collect: every task worktree and branch belongs to a live task\n",
            );
        } else if report.applied {
            text.push_str("orphaned task worktrees and branches:\n");
        } else {
            text.push_str("orphaned task worktrees and branches (dry run; `liza gc --apply` saves and removes them):\n");
        }
        for orphan in &report.orphans {
            text.push_str(&format!("  {}\n", line(orphan, report.applied)));
        }
        for name in &report.left_alone {
            text.push_str(&format!("  left alone: {name} (not a task id)\n"));
        }
        text
    };
    if failed.is_empty() {
        out.ok(value, text);
        return Ok(EXIT_OK);
    }
    // Something listed is still there: the command did not do what it was asked.
    let err = CliError::new(
        ErrorClass::Git,
        format!("gc could not remove {}", failed.join(", ")),
    )
    .with_hint("each line says why; fix that and run `liza gc --apply` again (nothing was lost: work is saved before removal)");
    Ok(out.fail_with_result(value, &err, text))
}

fn line(orphan: &Orphan, applied: bool) -> String {
    let what: Vec<&str> = [orphan.worktree.as_deref(), orphan.branch.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let mut plan = Vec::new();
    if orphan.uncommitted > 0 {
        plan.push(format!(
            "save {} uncommitted file(s) as a WIP commit",
            orphan.uncommitted
        ));
    }
    if orphan.unmerged_commits > 0 {
        plan.push(format!(
            "archive {} commit(s) not on integration as liza/attic/{}-<n>",
            orphan.unmerged_commits, orphan.name
        ));
    }
    plan.push("remove".into());
    let mut text = format!("{} ({}): {}", orphan.name, what.join(", "), orphan.why);
    if applied {
        let outcome = orphan.outcome.as_deref().unwrap_or("removed");
        text.push_str(&format!(" → {outcome}"));
        if let Some(saved) = &orphan.saved {
            text.push_str(&format!(" ({})", ops::describe_saved(saved)));
        }
    } else {
        text.push_str(&format!(" → would {}", plan.join(", then ")));
    }
    text
}
