//! `goal complete`, `sprint next`, `pause`, `resume`, `abort`, `checkpoint`.

use super::CliError;
use super::output::Output;
use super::report::{context, show};
use crate::ops;

#[derive(clap::Subcommand)]
pub(super) enum GoalCommand {
    /// Declare the goal met (every task terminal).
    Complete,
    /// Start the next goal on this blackboard, once the current one is completed or
    /// aborted (its first sprint opens with it).
    Next(GoalNextArgs),
}

#[derive(clap::Args)]
pub(super) struct GoalNextArgs {
    /// The next goal, in one sentence.
    goal: String,
    /// Its spec (default: the previous goal's), committed in the repository.
    #[arg(long)]
    spec: Option<std::path::PathBuf>,
}

#[derive(clap::Subcommand)]
pub(super) enum SprintCommand {
    /// Open the next sprint after a completed one.
    Next,
}

#[derive(clap::Args)]
pub(super) struct CheckpointArgs {
    /// Why, for the people who review the checkpoint.
    #[arg(long)]
    message: Option<String>,
}

#[derive(clap::Args)]
pub(super) struct ResumeArgs {
    /// CONTINUE, ADJUST_SPECS, REPLAN, PIVOT or STOP, recorded in sprint.retrospective.
    #[arg(long)]
    decision: Option<String>,
}

#[derive(clap::Args)]
pub(super) struct AbortArgs {
    /// Abort the goal too.
    #[arg(long)]
    goal: bool,
}

pub(super) fn cmd_goal(command: GoalCommand, out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    match command {
        GoalCommand::Complete => show(out, &ops::goal_complete(&project, &actor)?, |_| {
            "goal completed; start the next one with `liza goal next \"<goal>\"`".into()
        }),
        GoalCommand::Next(args) => {
            let cwd = super::current_dir()?;
            let done = ops::goal_next(&project, &actor, &args.goal, args.spec.as_deref(), &cwd)?;
            show(out, &done, |id| {
                format!(
                    "goal {id} started with its first sprint; next: add tasks (liza add-task …) or start agents (liza up)"
                )
            })
        }
    }
}

pub(super) fn cmd_sprint(command: SprintCommand, out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    match command {
        SprintCommand::Next => show(out, &ops::sprint_next(&project, &actor)?, |id| {
            format!("sprint {id} started")
        }),
    }
}

pub(super) fn cmd_checkpoint(args: CheckpointArgs, out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    show(
        out,
        &ops::checkpoint(&project, &actor, args.message.as_deref())?,
        |_| "sprint at checkpoint; `liza resume` continues".into(),
    )
}

pub(super) fn cmd_pause(out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    show(out, &ops::pause(&project, &actor)?, |_| {
        "paused: no new agent runs until `liza resume`".into()
    })
}

pub(super) fn cmd_resume(args: ResumeArgs, out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    show(
        out,
        &ops::resume(&project, &actor, args.decision.as_deref())?,
        |_| "resumed".into(),
    )
}

pub(super) fn cmd_abort(args: AbortArgs, out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    show(out, &ops::abort(&project, &actor, args.goal)?, |_| {
        "aborted: supervisors stop".into()
    })
}
