//! The planner's and people's moves: `unblock`, `reassign`, `rescope`, `abandon`,
//! `release-claim`, `clear-stale`.

use super::output::Output;
use super::progress::Progress;
use super::report::{context, show, task_id, task_ids};
use super::{CliError, EXIT_OK};
use crate::ops::{self, ReleaseRole};

#[derive(clap::Args)]
pub(super) struct UnblockArgs {
    /// The task id.
    task: String,
    /// What was decided (the answers to its questions).
    #[arg(long)]
    reason: String,
    /// Reset review_cycles_current (after clarifying the spec).
    #[arg(long)]
    reset_review_cycles: bool,
}

pub(super) fn cmd_unblock(args: UnblockArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let done = ops::unblock(
        &project,
        &actor,
        &id,
        &args.reason,
        args.reset_review_cycles,
    )?;
    show(out, &done, |_| format!("task {id} unblocked"))
}

#[derive(clap::Args)]
pub(super) struct ReassignArgs {
    /// The task id.
    task: String,
    /// Why, recorded in its history.
    #[arg(long)]
    reason: String,
    /// Take a CLAIMED task whose lease is still live (people only).
    #[arg(long)]
    force: bool,
}

pub(super) fn cmd_reassign(args: ReassignArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let progress = Progress::start(out.json);
    let done = ops::reassign(&project, &actor, &id, &args.reason, args.force, &|s| {
        progress.step(s)
    });
    progress.finish();
    let done = done?;
    show(out, &done, |_| format!("task {id} reassigned"))
}

#[derive(clap::Args)]
pub(super) struct RescopeArgs {
    /// The task to replace.
    task: String,
    /// The replacement task ids (comma-separated), each with --supersedes <task>.
    #[arg(long, required = true, value_delimiter = ',')]
    into: Vec<String>,
    /// The root cause.
    #[arg(long)]
    reason: String,
}

pub(super) fn cmd_rescope(args: RescopeArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let into = task_ids(&args.into)?;
    let (project, actor) = context()?;
    let done = ops::rescope(&project, &actor, &id, &into, &args.reason)?;
    show(out, &done, |_| format!("task {id} superseded"))
}

#[derive(clap::Args)]
pub(super) struct AbandonArgs {
    /// The task id.
    task: String,
    /// Why, recorded in its history.
    #[arg(long)]
    reason: String,
}

pub(super) fn cmd_abandon(args: AbandonArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let done = ops::abandon(&project, &actor, &id, &args.reason)?;
    show(out, &done, |_| format!("task {id} abandoned"))
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Role {
    Coder,
    Reviewer,
    Both,
}

#[derive(clap::Args)]
pub(super) struct ReleaseArgs {
    /// The task id.
    task: String,
    /// Whose claim to release.
    #[arg(long, value_enum, default_value = "reviewer")]
    role: Role,
    /// Release a claim whose lease is still live.
    #[arg(long)]
    force: bool,
    /// Why, recorded in its history.
    #[arg(long)]
    reason: String,
}

pub(super) fn cmd_release(args: ReleaseArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let role = match args.role {
        Role::Coder => ReleaseRole::Coder,
        Role::Reviewer => ReleaseRole::Reviewer,
        Role::Both => ReleaseRole::Both,
    };
    let progress = Progress::start(out.json);
    let done = ops::release_claim(
        &project,
        &actor,
        &id,
        role,
        &args.reason,
        args.force,
        &|s| progress.step(s),
    );
    progress.finish();
    let done = done?;
    show(out, &done, |_| format!("claim on {id} released"))
}

pub(super) fn cmd_clear_stale(out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    let progress = Progress::start(out.json);
    let released = ops::clear_stale(&project, &actor, &|s| progress.step(s));
    progress.finish();
    let released = released?;
    out.ok(serde_json::json!({ "released": released }), || {
        format!("{released} stale review claims released\n")
    });
    Ok(EXIT_OK)
}
