//! The `liza` command line: one file per command, each an argument struct and a
//! `cmd_<name>` that calls an operation and renders its result (human text or `--json`).
//! Only this module and the binaries print.

mod agent;
mod agents;
mod analyze;
mod builtin;
mod channel;
mod cost;
mod demo;
mod doctor;
mod edit;
mod error;
mod exit;
mod gc;
mod help;
mod history;
mod init;
mod integration;
mod log;
mod merge;
mod moves;
mod note;
mod output;
mod planning;
mod progress;
mod reference;
mod report;
mod reports;
mod retro;
mod serve;
mod show;
mod sprint;
pub mod status;
mod up;
mod validate;
mod watch;
mod work;
mod worktree_state;

use clap::{Parser, Subcommand};

pub use error::CliError;
pub use exit::*;
use output::Output;

/// A supervisor for a team of AI coding agents coordinating through a YAML blackboard.
#[derive(Parser)]
#[command(name = "liza", version, about, long_about = None, disable_help_subcommand = true)]
struct Cli {
    /// Print one JSON object {"ok", "result", "error"} on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,

    /// More log output on stderr (-v info, -vv debug); LIZA_LOG sets a filter too.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,

    /// The blackboard in etcd to use (etcd://HOST:PORT[,…]/PREFIX) instead of the one
    /// this checkout names; LIZA_STORE does the same.
    #[arg(long, global = true, value_name = "URL")]
    store: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Each command's arguments are built only when that command runs (or its help is shown):
// building all of them cost every command 0.1–0.2 ms of start-up (specs/quality.md P1).
#[command(defer = true)]
enum Command {
    /// Create the blackboard (.liza/) and the integration branch in this repository.
    Init(init::InitArgs),
    /// Attach this checkout to a blackboard in etcd (another machine's project).
    Join(init::JoinArgs),
    /// Check a blackboard against every rule and report all findings.
    Validate(validate::ValidateArgs),
    /// Show the goal, sprint, agents and tasks.
    Status(status::StatusArgs),
    /// Show one task in full.
    Show(show::ShowArgs),
    /// What the agents' runs used, in tokens and dollars, from the ledger.
    Cost(cost::CostArgs),
    /// Print the activity log.
    Log(log::LogArgs),
    /// Edit state.yaml in $VISUAL/$EDITOR: validated on save, merged if the blackboard moved.
    Edit(edit::EditArgs),
    /// List the revisions the journal keeps, or print one (--rev N).
    History(history::HistoryArgs),
    /// What changed between two revisions, field by field.
    Diff(history::DiffArgs),
    /// Leave a note for one task's agents, or for all (`all`).
    Note(note::NoteArgs),

    // Planner (and people).
    /// Add a DRAFT task.
    AddTask(planning::AddTaskArgs),
    /// Add several tasks from a YAML file, all or nothing.
    AddTasks(planning::AddTasksArgs),
    /// Change a DRAFT, UNCLAIMED or BLOCKED task.
    AmendTask(planning::AmendTaskArgs),
    /// DRAFT → UNCLAIMED through the planner's gates.
    FinalizeTask(planning::FinalizeArgs),
    /// BLOCKED → UNCLAIMED.
    Unblock(moves::UnblockArgs),
    /// Give a task back for another coder (its worktree is saved to the attic).
    Reassign(moves::ReassignArgs),
    /// Replace a task by new ones that name it in --supersedes.
    Rescope(moves::RescopeArgs),
    /// Kill a task.
    Abandon(moves::AbandonArgs),
    /// Convert, defer or reject a discovery.
    #[command(subcommand)]
    Discovery(reports::DiscoveryCommand),
    /// Declare the goal met.
    #[command(subcommand)]
    Goal(sprint::GoalCommand),
    /// Open the next sprint.
    #[command(subcommand)]
    Sprint(sprint::SprintCommand),
    /// Sprint → CHECKPOINT: supervisors finish their step and wait.
    Checkpoint(sprint::CheckpointArgs),

    // Coder.
    /// CLAIMED → READY_FOR_REVIEW after the submit-time checks.
    SubmitForReview(work::SubmitArgs),
    /// CLAIMED → BLOCKED with questions for the planner.
    Block(work::BlockArgs),
    /// Hand the task over to a fresh run (context exhaustion).
    Handoff(work::HandoffArgs),

    // Reviewer.
    /// Approve or reject the submitted commit.
    SubmitVerdict(work::VerdictArgs),

    // Anyone.
    /// Record a discovery.
    Discover(reports::DiscoverArgs),
    /// Record an anomaly.
    Anomaly(reports::AnomalyArgs),

    // Supervisor-only (people and scripts on the CLI).
    /// Register an agent; prints its generation.
    Register(agents::RegisterArgs),
    /// Renew an agent's leases (a liveness record, not a state.yaml rewrite).
    Heartbeat(agents::HeartbeatArgs),
    /// Remove an agent entry (only its registered generation).
    Unregister(agents::UnregisterArgs),
    /// Claim a task for a coder (creates its worktree).
    ClaimTask(agents::ClaimArgs),
    /// Claim a submitted task for a reviewer.
    ClaimReview(agents::ClaimArgs),
    /// Merge an APPROVED task into the integration branch (checks, then publish).
    Merge(merge::MergeArgs),
    /// Run the supervisor of one agent (coder, code-reviewer or planner).
    Agent(agent::AgentArgs),
    /// One run of the built-in agent (started by a supervisor with --cli builtin).
    #[command(hide = true)]
    Builtin(builtin::BuiltinArgs),
    /// A worktree's HEAD and changed files, read for its supervisor during a run.
    #[command(hide = true)]
    WorktreeState(worktree_state::WorktreeStateArgs),
    /// A whole sprint, offline: planner, two coders and a reviewer on a tiny project.
    Demo(demo::DemoArgs),
    /// Check git, the blackboard, agent CLIs, the model endpoint, worktrees, the lock.
    Doctor,
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions(reference::CompletionsArgs),
    /// Print the man page (or write one per command with --dir).
    Man(reference::ManArgs),
    /// A page of the documentation (`liza help` lists them), or one command's help.
    Help(help::HelpArgs),

    // Operator.
    /// Release a coder's or reviewer's claim.
    ReleaseClaim(moves::ReleaseArgs),
    /// Release every expired review claim.
    ClearStale,
    /// The circuit breaker's patterns over the sprint's anomalies (may checkpoint it).
    Analyze,
    /// Code the sprint's interactions with one agent per identity, grounded in quotes.
    Retro(retro::RetroArgs),
    /// Alarms on every change and every 10 s, continuous analysis, /metrics.
    Watch(watch::WatchArgs),
    /// The web dashboard: live pages and a person's actions, behind a token.
    Serve(serve::ServeArgs),
    /// A tmux session with a pane per agent and the live status (--down stops it).
    Up(up::UpArgs),
    /// Supervisors start no new runs until `liza resume`.
    Pause,
    /// Continue after pause or checkpoint.
    Resume(sprint::ResumeArgs),
    /// Stop the sprint (and with --goal the goal); supervisors exit.
    Abort(sprint::AbortArgs),
    /// List orphaned task worktrees and branches; --apply saves and removes them.
    Gc(gc::GcArgs),
    /// The integration branch: accept-rewind after merged work left it.
    #[command(subcommand)]
    Integration(integration::IntegrationCommand),
}

/// Runs the command line and returns the process exit code.
pub fn run() -> i32 {
    run_with(std::env::args_os().collect())
}

/// Runs the command line `args` (program name first) and returns the exit code.
pub fn run_with(args: Vec<std::ffi::OsString>) -> i32 {
    // Inside a sandbox every command goes to the agent's supervisor
    // (specs/sandbox.md *The blackboard through the supervisor*).
    if let Some(code) = channel::forward_from_sandbox(&args) {
        return code;
    }
    let wants_json = args.iter().any(|a| a == "--json");
    let matches = match reference::command().try_get_matches_from(&args) {
        Ok(matches) => matches,
        Err(err) => return usage_error(err, wants_json),
    };
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => return usage_error(err, wants_json),
    };
    init_tracing(cli.verbose);
    if let Some(store) = cli.store.clone() {
        // The processes it starts get it as LIZA_STORE (see `Store::address`).
        crate::blackboard::store::use_address(store);
    }
    let out = Output { json: cli.json };
    if let Some(mode) = channel::ChannelMode::get()
        && let Err(err) = mode.check(matches.subcommand_name().unwrap_or(""), &args)
    {
        return out.error(&err);
    }
    if let Some(command) = cli.command.for_people()
        && let Err(err) = refuse_agents(command)
    {
        return out.error(&err);
    }
    let result = match cli.command {
        Command::Init(args) => init::cmd_init(args, &out),
        Command::Join(args) => init::cmd_join(args, &out),
        Command::Validate(args) => validate::cmd_validate(args, &out),
        Command::Status(args) => status::cmd_status(args, &out),
        Command::Show(args) => show::cmd_show(args, &out),
        Command::Cost(args) => cost::cmd_cost(args, &out),
        Command::Log(args) => log::cmd_log(args, &out),
        Command::Edit(args) => edit::cmd_edit(args, &out),
        Command::History(args) => history::cmd_history(args, &out),
        Command::Diff(args) => history::cmd_diff(args, &out),
        Command::Note(args) => note::cmd_note(args, &out),
        Command::AddTask(args) => planning::cmd_add_task(args, &out),
        Command::AddTasks(args) => planning::cmd_add_tasks(args, &out),
        Command::AmendTask(args) => planning::cmd_amend_task(args, &out),
        Command::FinalizeTask(args) => planning::cmd_finalize(args, &out),
        Command::Unblock(args) => moves::cmd_unblock(args, &out),
        Command::Reassign(args) => moves::cmd_reassign(args, &out),
        Command::Rescope(args) => moves::cmd_rescope(args, &out),
        Command::Abandon(args) => moves::cmd_abandon(args, &out),
        Command::Discovery(command) => reports::cmd_discovery(command, &out),
        Command::Goal(command) => sprint::cmd_goal(command, &out),
        Command::Sprint(command) => sprint::cmd_sprint(command, &out),
        Command::Checkpoint(args) => sprint::cmd_checkpoint(args, &out),
        Command::SubmitForReview(args) => work::cmd_submit(args, &out),
        Command::Block(args) => work::cmd_block(args, &out),
        Command::Handoff(args) => work::cmd_handoff(args, &out),
        Command::SubmitVerdict(args) => work::cmd_verdict(args, &out),
        Command::Discover(args) => reports::cmd_discover(args, &out),
        Command::Anomaly(args) => reports::cmd_anomaly(args, &out),
        Command::Register(args) => agents::cmd_register(args, &out),
        Command::Heartbeat(args) => agents::cmd_heartbeat(args, &out),
        Command::Unregister(args) => agents::cmd_unregister(args, &out),
        Command::ClaimTask(args) => agents::cmd_claim_task(args, &out),
        Command::ClaimReview(args) => agents::cmd_claim_review(args, &out),
        Command::Merge(args) => merge::cmd_merge(args, &out),
        Command::Agent(args) => agent::cmd_agent(args, &out),
        Command::Builtin(args) => builtin::cmd_builtin(args, &out),
        Command::WorktreeState(args) => worktree_state::cmd_worktree_state(args, &out),
        Command::Demo(args) => demo::cmd_demo(args, &out),
        Command::Doctor => doctor::cmd_doctor(&out),
        Command::Completions(args) => reference::cmd_completions(args, &out),
        Command::Man(args) => reference::cmd_man(args, &out),
        Command::Help(args) => help::cmd_help(args, &out),
        Command::ReleaseClaim(args) => moves::cmd_release(args, &out),
        Command::ClearStale => moves::cmd_clear_stale(&out),
        Command::Pause => sprint::cmd_pause(&out),
        Command::Analyze => analyze::cmd_analyze(&out),
        Command::Retro(args) => retro::cmd_retro(args, &out),
        Command::Watch(args) => watch::cmd_watch(args, &out),
        Command::Serve(args) => serve::cmd_serve(args, &out),
        Command::Up(args) => up::cmd_up(args, &out),
        Command::Resume(args) => sprint::cmd_resume(args, &out),
        Command::Abort(args) => sprint::cmd_abort(args, &out),
        Command::Gc(args) => gc::cmd_gc(args, &out),
        Command::Integration(command) => integration::cmd_integration(command, &out),
    };
    // A hand edit this command's transactions set aside is said, whatever the command —
    // to a person: an agent's command never hears how to edit the blackboard by hand.
    let told = crate::ops::take_set_aside();
    if std::env::var_os("LIZA_AGENT_ID").is_none_or(|id| id.is_empty()) {
        for told in told {
            eprintln!("warning: {told}");
        }
    }
    match result {
        Ok(code) => code,
        Err(err) => out.error(&err),
    }
}

impl Command {
    /// The name of a command for people only (specs/operations.md), if this is one.
    fn for_people(&self) -> Option<&'static str> {
        Some(match self {
            Command::Edit(_) => "edit",
            // `note` is one transaction: it checks inside it (`ops::note`), against the
            // liveness records it reads anyway.
            Command::ReleaseClaim(_) => "release-claim",
            Command::ClearStale => "clear-stale",
            Command::Pause => "pause",
            Command::Resume(_) => "resume",
            Command::Abort(_) => "abort",
            Command::Analyze => "analyze",
            Command::Retro(_) => "retro",
            Command::Watch(_) => "watch",
            Command::Serve(_) => "serve",
            Command::Up(_) => "up",
            Command::Gc(args) if args.apply => "gc --apply",
            Command::Integration(_) => "integration accept-rewind",
            _ => return None,
        })
    }
}

/// Refuses a command for people to an agent, before it does anything. Outside a
/// project there is nothing to protect: the command says so itself.
fn refuse_agents(command: &str) -> Result<(), CliError> {
    let actor = crate::ops::actor_from_env()?;
    let Ok(project) = crate::ops::Project::discover(&current_dir()?) else {
        return Ok(());
    };
    Ok(crate::ops::people_only(&project, &actor, command)?)
}

/// clap exits with 2 on usage errors; liza's 2 means "lock timeout", so usage is 64.
fn usage_error(err: clap::Error, json: bool) -> i32 {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                EXIT_USAGE
            } else {
                EXIT_OK
            }
        }
        _ if json => {
            let message = err.to_string();
            let first = message
                .lines()
                .next()
                .unwrap_or("usage error")
                .trim_start_matches("error: ");
            Output { json: true }.error(&CliError::usage(first.to_owned()))
        }
        _ => {
            let _ = err.print();
            EXIT_USAGE
        }
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = std::env::var("LIZA_LOG")
        .ok()
        .and_then(|f| tracing_subscriber::EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a person's terminal: a supervisor reads an agent's stderr.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .try_init();
}

fn current_dir() -> Result<std::path::PathBuf, CliError> {
    std::env::current_dir()
        .map_err(|e| CliError::blackboard(format!("cannot read the current directory: {e}")))
}
