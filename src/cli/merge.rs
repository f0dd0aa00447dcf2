//! `liza merge [<task>]`: merge the queue of APPROVED tasks into the integration branch,
//! batch after batch, until `<task>` is merged (or every task, without one). Exits 0 when
//! MERGED, 1 when the merge ended otherwise (recorded on the blackboard).

use super::output::Output;
use super::progress::Progress;
use super::report::{context, show, task_id, transition_json};
use super::{CliError, EXIT_OK};
use crate::ops::{self, MergeResult};

#[derive(clap::Args)]
pub(super) struct MergeArgs {
    /// The APPROVED task to merge (the queue is merged up to it); without one, the whole
    /// queue.
    task: Option<String>,
}

pub(super) fn cmd_merge(args: MergeArgs, out: &Output) -> Result<i32, CliError> {
    let id = args.task.as_deref().map(task_id).transpose()?;
    let (project, actor) = context()?;
    let progress = Progress::start(out.json);
    let done = ops::merge(
        &project,
        &actor,
        id.as_ref(),
        ops::MergeWait::Wait,
        &mut |line| progress.step(line),
    );
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
    if !out.json {
        for t in done
            .value
            .tasks
            .iter()
            .filter(|t| Some(&t.task) != id.as_ref())
        {
            eprintln!("liza: {}: {}", t.task, t.result.describe());
        }
        for p in done
            .value
            .passed_over
            .iter()
            .filter(|p| Some(&p.task) != id.as_ref())
        {
            eprintln!("liza: {}: still in the queue: {}", p.task, p.reason);
        }
    }
    let Some(id) = id else {
        let failed = done
            .value
            .tasks
            .iter()
            .filter(|t| !matches!(t.result, MergeResult::Merged { .. }))
            .count();
        let ended = done.value.tasks.len();
        if !done.value.passed_over.is_empty() {
            // The queue is not merged: say which tasks stay in it, as an error.
            let left: Vec<String> = done
                .value
                .passed_over
                .iter()
                .map(|p| p.task.to_string())
                .collect();
            let err = CliError::refused(format!(
                "{} task(s) left in the merge queue: {}",
                left.len(),
                left.join(", ")
            ))
            .with_hint("each line above says why; `liza merge` again once that is over");
            let text = || {
                format!(
                    "{ended} task(s) ended, {failed} of them not merged; {} left in the merge queue\n",
                    left.len()
                )
            };
            return Ok(out.fail_with_result(transition_json(&done), &err, text));
        }
        show(out, &done, |_| {
            format!(
                "the merge queue is merged: {ended} task(s) ended, {failed} of them not merged\n"
            )
        })?;
        return Ok(if failed == 0 { EXIT_OK } else { 1 });
    };
    let result = done.value.result.clone().unwrap_or(MergeResult::Queued);
    match &result {
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
        MergeResult::Queued => {
            let why = done.value.passed_over.iter().find(|p| p.task == id);
            let err = match why {
                Some(p) => CliError::refused(format!(
                    "task {id} is still in the merge queue: {}",
                    p.reason
                ))
                .with_hint("`liza merge` again once that is over; `liza status` shows the queue"),
                None => CliError::refused(format!("task {id} is still in the merge queue"))
                    .with_hint("another merge is running; `liza status` shows the queue"),
            };
            let text = || format!("task {id} still queued\n");
            Ok(out.fail_with_result(transition_json(&done), &err, text))
        }
        MergeResult::Withdrawn { reason } => {
            let err = CliError::refused(format!("task {id} is not merged: {reason}"))
                .with_hint("a reviewer reviews the branch as it is now; to merge what was approved, reset the branch to the approved commit (keep the later commits on another branch first)");
            let text = || format!("task {id} READY_FOR_REVIEW: {reason}\n");
            Ok(out.fail_with_result(transition_json(&done), &err, text))
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
