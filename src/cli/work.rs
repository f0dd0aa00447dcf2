//! The coder's and reviewer's commands: `submit-for-review`, `block`, `handoff`,
//! `submit-verdict`.

use std::path::PathBuf;

use super::CliError;
use super::output::Output;
use super::report::{context, show, task_id};
use crate::lifecycle::Verdict;
use crate::ops;

#[derive(clap::Args)]
pub(super) struct SubmitArgs {
    /// The task id.
    task: String,
    /// The commit to submit (default: the worktree's HEAD).
    sha: Option<String>,
}

pub(super) fn cmd_submit(args: SubmitArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let done = ops::submit_for_review(&project, &actor, &id, args.sha.as_deref())?;
    show(out, &done, |head| {
        format!("task {id} submitted for review at {head}")
    })
}

#[derive(clap::Args)]
pub(super) struct BlockArgs {
    /// The task id.
    task: String,
    /// Why the task cannot proceed.
    #[arg(long)]
    reason: String,
    /// A question for the planner (1 to 3).
    #[arg(long = "question", required = true)]
    questions: Vec<String>,
    /// What was tried.
    #[arg(long)]
    attempted: Vec<String>,
}

pub(super) fn cmd_block(args: BlockArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let done = ops::block(
        &project,
        &actor,
        &id,
        &args.reason,
        &args.questions,
        &args.attempted,
    )?;
    show(out, &done, |_| format!("task {id} blocked"))
}

#[derive(clap::Args)]
pub(super) struct HandoffArgs {
    /// The task id.
    task: String,
    /// What was done so far.
    #[arg(long)]
    summary: String,
    /// What the next run should do first.
    #[arg(long)]
    next_action: String,
}

pub(super) fn cmd_handoff(args: HandoffArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let done = ops::handoff(&project, &actor, &id, &args.summary, &args.next_action)?;
    show(out, &done, |_| format!("task {id} handed off"))
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Decision {
    Approve,
    Reject,
}

#[derive(clap::Args)]
pub(super) struct VerdictArgs {
    /// The task id.
    task: String,
    /// The verdict.
    #[arg(value_enum)]
    decision: Decision,
    /// The reviewed commit; must equal the task's review_commit.
    #[arg(long)]
    commit: String,
    /// Why it is rejected, citing at least one path:line.
    #[arg(long, conflicts_with = "reason_file")]
    reason: Option<String>,
    /// Read the reason from a file.
    #[arg(long)]
    reason_file: Option<PathBuf>,
}

pub(super) fn cmd_verdict(args: VerdictArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let reason = match (&args.reason, &args.reason_file) {
        (Some(r), _) => Some(r.clone()),
        (None, Some(f)) => Some(
            String::from_utf8(super::channel::read_file_argument(f)?)
                .map_err(|_| CliError::refused(format!("{} is not UTF-8 text", f.display())))?,
        ),
        (None, None) => None,
    };
    let verdict = match args.decision {
        Decision::Approve => Verdict::Approve,
        Decision::Reject => Verdict::Reject {
            reason: reason.ok_or_else(|| {
                CliError::refused("a rejection needs --reason (citing path:line)".into())
                    .with_hint("e.g. --reason \"src/report.rs:42 drops the totals key\"")
            })?,
        },
    };
    let done = ops::submit_verdict(&project, &actor, &id, &verdict, &args.commit)?;
    show(out, &done, |_| String::new())
}
