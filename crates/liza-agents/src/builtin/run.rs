//! `liza builtin <role> --task ID`: one run of the built-in agent, started by the
//! supervisor like any agent CLI (so its process control, watchdogs and exit-code
//! protocol apply unchanged). It reads who it is from the supervisor's environment
//! (`LIZA_AGENT_ID`, `LIZA_AGENT_GENERATION`, `LIZA_WORKTREE`, `LIZA_IDENTITY`), reports
//! through `ops` under that identity, and exits 0 (done), 3 (SOFT_FAIL) or 4 (HARD_FAIL).

use std::path::PathBuf;

use super::artifacts::Artifacts;
use super::context::RunContext;
use super::runlog::RunLog;
use super::{EXIT_HARD_FAIL, identities};
use crate::blackboard::ids::Role;
use crate::blackboard::{Actor, IdError, StoreError, TaskId};
use crate::llm::client::{ChatClient, RetryPolicy};
use crate::llm::endpoint::{Endpoint, EndpointError, ProcessEnv};
use crate::ops::{self, Project};

/// The options of `liza builtin`.
pub struct Invocation {
    /// The role to play.
    pub role: Role,
    /// `--task ID`: the task to work on, as given (checked against the blackboard).
    pub task: Option<String>,
    /// `--prompt-file`: the supervisor's prompt for this run (human notes, feedback).
    pub prompt_file: Option<PathBuf>,
    /// `--usage-file`: where the tokens the endpoint served this run are written as it
    /// ends (the supervisor's ledger entry, specs/ledger.md).
    pub usage_file: Option<PathBuf>,
    /// The directory it was started in, where the project is looked for.
    pub cwd: PathBuf,
}

/// Why a run could not be set up; its text goes to stderr before HARD_FAIL.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// No project here, or no agent id in the environment.
    #[error(transparent)]
    Project(#[from] ops::OpsError),
    /// `LIZA_AGENT_ID` is unset: a person ran `liza builtin` by hand.
    #[error(
        "LIZA_AGENT_ID is not set: `liza builtin` is run by the supervisor (liza-agent --cli builtin)"
    )]
    NotAnAgent,
    /// The blackboard could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `--task` is not a task id.
    #[error("--task {given}: {problem}")]
    TaskId {
        /// The text given.
        given: String,
        /// What is wrong with it.
        problem: IdError,
    },
    /// `--task` names no task on the blackboard.
    #[error("there is no task {0}")]
    NoSuchTask(TaskId),
    /// The model endpoint is not configured, or its client cannot be built.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// `LIZA_IDENTITY` names an identity that cannot be read.
    #[error(transparent)]
    Identity(#[from] identities::IdentityError),
}

/// Sets the run up from the environment.
pub fn context(inv: &Invocation) -> Result<RunContext, SetupError> {
    let project = Project::discover(&inv.cwd)?;
    let actor = ops::actor_from_env()?;
    let agent = match &actor {
        Actor::Agent { id, .. } => id.to_string(),
        Actor::Human | Actor::Liza | Actor::Supervisor { .. } => {
            return Err(SetupError::NotAnAgent);
        }
    };
    let state = project.store.snapshot()?.state;
    let task = match &inv.task {
        Some(id) if !id.is_empty() => {
            let id = TaskId::parse(id).map_err(|problem| SetupError::TaskId {
                given: id.clone(),
                problem,
            })?;
            Some(state.task(&id).cloned().ok_or(SetupError::NoSuchTask(id))?)
        }
        _ => None,
    };
    let worktree = std::env::var_os("LIZA_WORKTREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| inv.cwd.clone());
    let config = state.config.builtin.clone().unwrap_or_default();
    let endpoint = Endpoint::resolve(&ProcessEnv, &config, inv.role)?;
    let dry_run = std::env::var("DRY_RUN").is_ok_and(|v| v.trim() == "1");
    let client = ChatClient::new(endpoint, RetryPolicy::from_env(), dry_run)?;
    let identity_prefix = match std::env::var("LIZA_IDENTITY")
        .ok()
        .filter(|s| !s.is_empty())
    {
        Some(id) => Some(identities::find(&project.root, &id)?.prompt_prefix),
        None => None,
    };
    let liza_dir = project.store.paths().dir.clone();
    let what = task
        .as_ref()
        .map_or_else(|| "turn".to_owned(), |t| t.id.to_string());
    let artifacts = Artifacts::new(&liza_dir, &agent, &what, client.scrubber().clone());
    let runlog = RunLog::new(
        &liza_dir,
        &agent,
        inv.role_name(),
        task.as_ref().map(|t| t.id.as_str()),
        client.scrubber().clone(),
    );
    let supervisor_prompt = inv
        .prompt_file
        .as_deref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    Ok(RunContext {
        project,
        actor,
        agent,
        task,
        worktree,
        client,
        artifacts,
        runlog,
        identity_prefix,
        supervisor_prompt,
    })
}

impl Invocation {
    /// The role's name on the command line and in the run log: `planner`, `coder` or
    /// `code-reviewer`.
    pub fn role_name(&self) -> &'static str {
        match self.role {
            Role::Planner => "planner",
            Role::Coder => "coder",
            Role::CodeReviewer => "code-reviewer",
        }
    }
}

/// Runs the role once; returns the process exit code.
pub fn run(inv: &Invocation) -> i32 {
    let ctx = match context(inv) {
        Ok(c) => c,
        Err(message) => {
            eprintln!("liza builtin: {message}");
            return EXIT_HARD_FAIL;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("liza builtin: could not start: {e}");
            return EXIT_HARD_FAIL;
        }
    };
    let status = runtime.block_on(async {
        match inv.role {
            Role::Coder => super::coder::run(&ctx).await,
            Role::CodeReviewer => super::reviewer::run(&ctx).await,
            Role::Planner => super::planner::run(&ctx).await,
        }
    });
    if let (Some(path), Some(served)) = (&inv.usage_file, ctx.client.served()) {
        let written = serde_json::to_vec(&served)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(path, bytes));
        if let Err(e) = written {
            eprintln!(
                "liza builtin: could not write the run's usage to {}: {e}",
                path.display()
            );
        }
    }
    println!("liza builtin {}: {}", inv.role_name(), status.as_str());
    status.exit_code()
}
