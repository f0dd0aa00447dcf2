//! `liza merge <task>`: merge an APPROVED task into the integration branch. Exits 0 when
//! MERGED, 1 when the merge ended INTEGRATION_FAILED (recorded on the blackboard).

use super::output::Output;
use super::progress::Progress;
use super::report::{context, show, task_id, transition_json};
use super::{CliError, EXIT_OK};
use crate::ops::{self, MergeResult};

#[derive(clap::Args)]
pub(super) struct MergeArgs {
    /// The APPROVED task to merge.
    task: String,
}

pub(super) fn cmd_merge(args: MergeArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let progress = Progress::start(out.json);
    let done = ops::merge(&project, &actor, &id, &mut |line| progress.step(line));
    progress.finish();
    let done = done?;
    for r in &done.value.recovered {
        if !out.json {
            eprintln!(
                "liza: recovered the interrupted merge of {} ({}, candidate {})",
                r.task, r.action, r.candidate
            );
        }
    }
    match &done.value.result {
        MergeResult::Merged {
            merge_commit,
            merge_type,
            drift_commits,
            ..
        } => {
            show(out, &done, |_| {
                format!(
                    "task {id} merged ({merge_type} {merge_commit}, {drift_commits} integration commits since its base)"
                )
            })?;
            Ok(EXIT_OK)
        }
        MergeResult::NothingToMerge => {
            let err = CliError::refused(format!(
                "task {id} is not merged: nothing of it reaches integration (merging its approved commit would change no file there); it is BLOCKED"
            ))
            .with_hint(
                "the planner (or you) supersedes it if its work is done or no longer wanted, or unblocks it to redo the change",
            );
            let text = || format!("task {id} BLOCKED: nothing of it reaches integration\n");
            Ok(out.fail_with_result(transition_json(&done), &err, text))
        }
        MergeResult::IntegrationFailed {
            kind,
            paths,
            log,
            reason,
        } => {
            for w in &done.outcome.warnings {
                if !out.json {
                    eprintln!("warning: {w}");
                }
            }
            let mut err = CliError::refused(format!(
                "task {id} is INTEGRATION_FAILED ({kind}): {reason}"
            ));
            if let Some(log) = log {
                err = err.with_hint(format!("the check output is in {log}"));
            }
            err = err.with_hint(
                "a coder claims it for an integration fix (the integration tip is merged into its worktree), or the planner rescopes it",
            );
            let text = || {
                let mut text = format!("task {id} INTEGRATION_FAILED ({kind}): {reason}\n");
                for p in paths {
                    text.push_str(&format!("  conflict: {p}\n"));
                }
                if let Some(log) = log {
                    text.push_str(&format!("  log: {log}\n"));
                }
                for hint in &err.hints {
                    text.push_str(&format!("hint: {hint}\n"));
                }
                text
            };
            Ok(out.fail_with_result(transition_json(&done), &err, text))
        }
    }
}
