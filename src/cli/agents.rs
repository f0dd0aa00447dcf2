//! Supervisor-only commands, for people and scripts: `register`, `heartbeat`,
//! `unregister`, `claim-task`, `claim-review` (refused when an agent identity is set).

use super::output::Output;
use super::progress::Progress;
use super::report::{agent_id, context, show, task_id};
use super::{CliError, EXIT_OK};
use crate::lifecycle::Registration;
use crate::ops;

#[derive(clap::Args)]
pub(super) struct RegisterArgs {
    /// The agent id (<role>-<number>, e.g. coder-1).
    agent: String,
    /// The backend name recorded in the entry.
    #[arg(long)]
    cli: Option<String>,
}

pub(super) fn cmd_register(args: RegisterArgs, out: &Output) -> Result<i32, CliError> {
    let id = agent_id(&args.agent)?;
    let (project, actor) = context()?;
    let info = Registration {
        pid: Some(i64::from(std::process::id())),
        terminal: std::env::var("TMUX_PANE")
            .ok()
            .or_else(|| std::env::var("TERM").ok()),
        cli: args.cli,
        identity: None,
        holder_dead: false,
        holder_alive: false,
        supervised: false,
    };
    let say = |line: &str| eprintln!("{line}");
    let done = ops::register(
        &project,
        &actor,
        &id,
        &info,
        ops::LeaseCheck::WatchNow(&say),
    )?;
    if out.json {
        // specs/operations.md: `--json` → `result.generation`.
        let result = serde_json::json!({
            "generation": done.value,
            "revision": done.revision,
            "events": done.outcome.events,
        });
        out.ok(result, String::new);
        return Ok(EXIT_OK);
    }
    // The generation alone on stdout, so scripts can capture it.
    println!("{}", done.value);
    Ok(EXIT_OK)
}

#[derive(clap::Args)]
pub(super) struct HeartbeatArgs {
    /// The agent id.
    agent: String,
    /// The generation to renew (default: the registered one).
    #[arg(long)]
    generation: Option<String>,
    /// Process group of the agent process now running.
    #[arg(long)]
    pgid: Option<i64>,
}

pub(super) fn cmd_heartbeat(args: HeartbeatArgs, out: &Output) -> Result<i32, CliError> {
    let id = agent_id(&args.agent)?;
    let (project, actor) = context()?;
    let beat = ops::heartbeat(
        &project,
        &actor,
        &id,
        args.generation.as_deref(),
        &ops::BeatFacts {
            pgid: args.pgid,
            ..ops::BeatFacts::default()
        },
    )?;
    out.ok(serde_json::to_value(&beat).unwrap_or_default(), || {
        format!("{id} lease until {}\n", beat.lease_expires)
    });
    Ok(EXIT_OK)
}

#[derive(clap::Args)]
pub(super) struct UnregisterArgs {
    /// The agent id.
    agent: String,
    /// Only if this generation is the registered one.
    #[arg(long)]
    generation: Option<String>,
}

pub(super) fn cmd_unregister(args: UnregisterArgs, out: &Output) -> Result<i32, CliError> {
    let id = agent_id(&args.agent)?;
    let (project, actor) = context()?;
    let done = ops::unregister(&project, &actor, &id, args.generation.as_deref())?;
    show(out, &done, |_| format!("{id} unregistered"))
}

#[derive(clap::Args)]
pub(super) struct ClaimArgs {
    /// The task id.
    task: String,
    /// The agent that claims it.
    agent: String,
}

pub(super) fn cmd_claim_task(args: ClaimArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let agent = agent_id(&args.agent)?;
    let (project, actor) = context()?;
    let progress = Progress::start(out.json);
    let done = ops::claim_task(&project, &actor, &id, &agent, &|s| progress.step(s));
    progress.finish();
    let done = done?;
    show(out, &done, |c| {
        let mut text = format!("{} {} by {} in {}", c.event, c.task, c.agent, c.worktree);
        if !c.conflicts.is_empty() {
            text.push_str(&format!(
                "; the integration tip was merged in, with conflicts left to resolve in: {}",
                c.conflicts.join(", ")
            ));
        }
        text
    })
}

pub(super) fn cmd_claim_review(args: ClaimArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let agent = agent_id(&args.agent)?;
    let (project, actor) = context()?;
    let progress = Progress::start(out.json);
    let say = |s: &str| progress.step(s);
    let done = ops::claim_review(
        &project,
        &actor,
        &id,
        &agent,
        ops::LeaseCheck::WatchNow(&say),
    );
    progress.finish();
    let done = done?;
    show(out, &done, |claim| match &claim.spec_changed {
        Some((then, now)) => format!(
            "review of {id} claimed by {agent}; its spec changed since it was finalized ({then} → {now})"
        ),
        None => format!("review of {id} claimed by {agent}"),
    })
}
