//! `discover`, `anomaly`, `discovery convert|defer|reject`.

use super::CliError;
use super::output::Output;
use super::report::{context, show, task_id};
use crate::ops::{self, DiscoveryDecision};

#[derive(clap::Args)]
pub(super) struct DiscoverArgs {
    /// The task during which it was found.
    #[arg(long)]
    task: String,
    /// What was found.
    #[arg(long = "desc")]
    description: String,
    /// critical, high, medium or low.
    #[arg(long)]
    severity: String,
    /// immediate or deferred (default).
    #[arg(long)]
    urgency: Option<String>,
    /// What to do about it.
    #[arg(long)]
    recommendation: Option<String>,
}

pub(super) fn cmd_discover(args: DiscoverArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let done = ops::discover(
        &project,
        &actor,
        &id,
        &args.description,
        &args.severity,
        args.urgency.as_deref(),
        args.recommendation.as_deref(),
    )?;
    show(out, &done, |disc| format!("{disc} recorded"))
}

#[derive(clap::Args)]
pub(super) struct AnomalyArgs {
    /// One of the 13 anomaly types (retry_loop, trade_off, spec_ambiguity, ...).
    #[arg(long = "type")]
    kind: String,
    /// The task it happened in.
    #[arg(long)]
    task: String,
    /// key=value, repeated; each type has required keys.
    #[arg(long = "detail")]
    details: Vec<String>,
}

pub(super) fn cmd_anomaly(args: AnomalyArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let done = ops::anomaly(&project, &actor, &args.kind, &id, &args.details)?;
    show(out, &done, |_| {
        format!("{} anomaly recorded on {id}", args.kind)
    })
}

#[derive(clap::Subcommand)]
pub(super) enum DiscoveryCommand {
    /// The discovery became a task.
    Convert {
        /// The discovery id.
        discovery: String,
        /// The task it became.
        #[arg(long)]
        task: String,
    },
    /// Keep it for later.
    Defer {
        /// The discovery id.
        discovery: String,
        /// Why it waits.
        #[arg(long)]
        reason: String,
    },
    /// Not worth doing.
    Reject {
        /// The discovery id.
        discovery: String,
        /// Why it is not worth doing.
        #[arg(long)]
        reason: String,
    },
}

pub(super) fn cmd_discovery(command: DiscoveryCommand, out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    let (disc, decision) = match command {
        DiscoveryCommand::Convert { discovery, task } => (
            discovery,
            DiscoveryDecision::Convert {
                task: task_id(&task)?,
            },
        ),
        DiscoveryCommand::Defer { discovery, reason } => {
            (discovery, DiscoveryDecision::Defer { reason })
        }
        DiscoveryCommand::Reject { discovery, reason } => {
            (discovery, DiscoveryDecision::Reject { reason })
        }
    };
    let done = ops::discovery(&project, &actor, &disc, &decision)?;
    show(out, &done, |_| String::new())
}
