//! `config`: every key of specs/blackboard.md with its default. Fields are optional in the file
//! (missing keys take defaults, through the accessors) so a rewrite never adds keys the
//! human did not write.

use serde::{Deserialize, Serialize};

use crate::codec::{Decode, Decoder, Emit, IdMap, Number, record, yaml_enum};
use crate::node::{Extra, Node, Value};
use crate::yaml::Emitter;

yaml_enum! {
    /// `config.plan_approval`: who finalizes the planner's tasks (specs/lifecycle.md *Plan
    /// approval and spec currency*).
    pub enum PlanApproval (Some(11), "config-value", "plan_approval") {
        /// The planner finalizes its own tasks.
        Auto = "auto",
        /// The planner's tasks stay DRAFT until a person finalizes them.
        Human = "human",
    }
}

yaml_enum! {
    /// How a backend of the user's gets its prompt (`config.agent_tools.<name>.prompt`).
    pub enum PromptMode (Some(11), "config-value", "agent_tools prompt mode") {
        /// On standard input.
        Stdin = "stdin",
        /// As the last argument.
        Arg = "arg",
        /// In a file: its path is appended unless `{prompt_file}` appears in `args`.
        File = "file",
    }
}

yaml_enum! {
    /// `config.builtin.validation_mode`: how the built-in agent judges a model's answer
    /// against its schema (specs/builtin-agent.md *Calling the model*).
    pub enum ValidationMode (Some(11), "config-value", "builtin validation_mode") {
        /// A violation is a failed attempt, asked again up to `max_attempts`.
        Strict = "strict",
        /// The valid parts are kept, the errors recorded, a minimal result made from the
        /// rest.
        Lenient = "lenient",
        /// The reader takes what it can without judging.
        None = "none",
    }
}

yaml_enum! {
    /// `config.sandbox.mode` (specs/sandbox.md *Modes*).
    pub enum SandboxMode (Some(11), "config-value", "sandbox mode") {
        /// Sandboxed wherever bubblewrap works; elsewhere unsandboxed, said loudly.
        Auto = "auto",
        /// Sandboxed, or no agent and no check runs.
        Required = "required",
        /// Never sandboxed.
        Off = "off",
    }
}

yaml_enum! {
    /// What a sandboxed process may reach on the network (specs/sandbox.md *Network*).
    pub enum SandboxNetwork (Some(11), "config-value", "sandbox network") {
        /// The host's network: the agent CLIs need their API.
        Full = "full",
        /// Only a loopback of its own.
        None = "none",
    }
}

/// `config.sandbox` (specs/sandbox.md *Configuration*).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SandboxConfig {
    /// Whether agents and checks are sandboxed (default `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    /// The agents' network (default `full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<SandboxNetwork>,
    /// The checks' network (default `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks_network: Option<SandboxNetwork>,
    /// Extra paths a sandboxed process sees read-only (absolute, or `~/…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<Vec<String>>,
    /// Extra paths a sandboxed process may write (absolute, or `~/…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writable: Option<Vec<String>>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(SandboxConfig {
    opt mode: "mode",
    opt network: "network",
    opt checks_network: "checks_network",
    opt read_only: "read_only",
    opt writable: "writable",
});

impl SandboxConfig {
    /// `mode`, or its default `auto`.
    pub fn mode(&self) -> SandboxMode {
        self.mode.unwrap_or(SandboxMode::Auto)
    }

    /// `network`, or its default `full`.
    pub fn network(&self) -> SandboxNetwork {
        self.network.unwrap_or(SandboxNetwork::Full)
    }

    /// `checks_network`, or its default `none`.
    pub fn checks_network(&self) -> SandboxNetwork {
        self.checks_network.unwrap_or(SandboxNetwork::None)
    }

    /// `read_only`, or none.
    pub fn read_only(&self) -> &[String] {
        self.read_only.as_deref().unwrap_or_default()
    }

    /// `writable`, or none.
    pub fn writable(&self) -> &[String] {
        self.writable.as_deref().unwrap_or_default()
    }
}

/// Keys the original bash tooling wrote that liza does not use.
pub const LEGACY_CONFIG_KEYS: &[&str] =
    &["coder_max_wait", "planner_max_wait", "reviewer_max_wait"];

/// A command from config: an argv list, or a string the user wants run by `sh -c`
/// (their own command; blackboard content is never interpolated into it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommandSpec {
    /// An argv list, run without a shell.
    Argv(Vec<String>),
    /// A command string, run with `sh -c`.
    Shell(String),
}

impl Decode for CommandSpec {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.value {
            Value::Str(s) => Some(CommandSpec::Shell(s.clone())),
            Value::Seq(_) => Vec::decode(node, d).map(CommandSpec::Argv),
            _ => d.expected(node, "an argv list or a command string"),
        }
    }
}

impl Emit for CommandSpec {
    fn emit(&self, e: &mut Emitter) {
        match self {
            CommandSpec::Argv(argv) => argv.emit(e),
            CommandSpec::Shell(s) => e.str(s),
        }
    }
}

/// `execution_timeout`: seconds per run and role.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionTimeout {
    /// Seconds per coder run (default 7200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coder: Option<i64>,
    /// `code-reviewer`: seconds per code reviewer run (default 1800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_reviewer: Option<i64>,
    /// Seconds per planner run (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<i64>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(ExecutionTimeout {
    opt coder: "coder",
    opt code_reviewer: "code-reviewer",
    opt planner: "planner",
});

/// One project check (`config.checks[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Its name.
    pub name: String,
    /// The command: an argv list, or a string run with `sh -c`.
    pub run: CommandSpec,
    /// Seconds it may run (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    /// Run on every review commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_review: Option<bool>,
    /// Run on every merge candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_merge: Option<bool>,
    /// Keys liza does not know, kept as written (`optional` among them).
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Check {
    req name: "name",
    req run: "run",
    opt timeout: "timeout",
    opt on_review: "on_review",
    opt on_merge: "on_merge",
});

/// An agent CLI backend of the user's (`config.agent_tools.<name>`). Under a built-in
/// backend's name it adjusts that backend: what it leaves out keeps the built-in value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentTool {
    /// The program; required for a backend that is not built in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// Arguments before the prompt, replacing the built-in ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Arguments added after `args` (the built-in ones, unless `args` replaces them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_args: Option<Vec<String>>,
    /// How the prompt is passed (default `stdin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PromptMode>,
    /// Extra environment; `${VAR}` in a value is taken from the supervisor's environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<IdMap<String, String>>,
    /// Secret variables passed through from the supervisor's environment as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_env: Option<Vec<String>>,
    /// The model, mapped to the CLI's own flag (`liza-agent --model` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether the agent can run shell commands (`liza submit-for-review`) itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_commands: Option<bool>,
    /// Arguments for an interactive run (`-i`), replacing `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive_args: Option<Vec<String>>,
    /// Its own state files and directories, writable inside the sandbox (added to a
    /// built-in backend's; specs/sandbox.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Vec<String>>,
    /// Backends to run instead, in order, while this one's provider refuses for a usage
    /// limit (specs/ledger.md *Fallbacks*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Vec<String>>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(AgentTool {
    opt executable: "executable",
    opt args: "args",
    opt extra_args: "extra_args",
    opt prompt: "prompt",
    opt env: "env",
    opt pass_env: "pass_env",
    opt model: "model",
    opt runs_commands: "runs_commands",
    opt interactive_args: "interactive_args",
    opt state: "state",
    opt fallback: "fallback",
});

/// Per-role settings of the built-in agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuiltinRoleConfig {
    /// The model for this role, ahead of `LIZA_LLM_MODEL` and `config.builtin.model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(BuiltinRoleConfig { opt model: "model" });

/// `config.builtin`: the built-in agent (specs/builtin-agent.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuiltinConfig {
    /// The model for every role without one of its own (after `LIZA_LLM_MODEL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How answers are checked against the schema (default `strict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_mode: Option<ValidationMode>,
    /// Attempts per question when the answer breaks the schema (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<i64>,
    /// The budget for context, in estimated tokens (default 8000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<i64>,
    /// The planner's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<BuiltinRoleConfig>,
    /// The coder's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coder: Option<BuiltinRoleConfig>,
    /// `code-reviewer`: the code reviewer's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_reviewer: Option<BuiltinRoleConfig>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(BuiltinConfig {
    opt model: "model",
    opt validation_mode: "validation_mode",
    opt max_attempts: "max_attempts",
    opt context_tokens: "context_tokens",
    opt planner: "planner",
    opt coder: "coder",
    opt code_reviewer: "code-reviewer",
});

/// `config.circuit_breaker`: which circuit-breaker matches checkpoint the sprint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CircuitBreakerConfig {
    /// The severities of a circuit-breaker match that checkpoint the sprint (default
    /// `ARCHITECTURE_FLAW`, `SPEC_FLAW`, `EXTERNAL_DEPENDENCY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_at: Option<Vec<String>>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(CircuitBreakerConfig { opt checkpoint_at: "checkpoint_at" });

/// `config.journal_keep`: how much the journal keeps, whichever bound is hit first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JournalKeep {
    /// Revisions kept (default 200, at least 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revisions: Option<i64>,
    /// Bytes kept (default 64 MiB, at least 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<i64>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(JournalKeep {
    opt revisions: "revisions",
    opt bytes: "bytes",
});

/// `config.merge`: the merge queue (specs/git.md *Merge*).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MergeConfig {
    /// Tasks checked together in one batch (default 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<i64>,
    /// Batches in flight at once, each on top of the one before (default 2; 1: no
    /// speculation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_batches: Option<i64>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(MergeConfig {
    opt max_batch: "max_batch",
    opt parallel_batches: "parallel_batches",
});

/// `config.prices.<model>`: what a model costs, in US dollars per million tokens
/// (specs/ledger.md *Cost*), for runs whose CLI reports no cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceConfig {
    /// Per million uncached input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Number>,
    /// Per million output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Number>,
    /// Per million cache-read tokens (default: the input's price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<Number>,
    /// Per million cache-write tokens (default: the input's price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<Number>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(PriceConfig {
    opt input: "input",
    opt output: "output",
    opt cache_read: "cache_read",
    opt cache_write: "cache_write",
});

/// A budget: tokens, US dollars, or both (the first one reached counts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetLimit {
    /// Tokens of every kind, input, output and cache together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<i64>,
    /// US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<Number>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(BudgetLimit {
    opt tokens: "tokens",
    opt usd: "usd",
});

/// `config.budget` (specs/ledger.md *Budgets*).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetConfig {
    /// What one task may use, all its runs together; over it the task is BLOCKED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<BudgetLimit>,
    /// What the current sprint may use; over it no new run starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sprint: Option<BudgetLimit>,
    /// What one agent may use in a day (UTC); over it that agent starts no new run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_per_day: Option<BudgetLimit>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(BudgetConfig {
    opt task: "task",
    opt sprint: "sprint",
    opt agent_per_day: "agent_per_day",
});

/// `config`: the settings of specs/blackboard.md *config*. Every key is optional; the
/// accessors give the defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Who finalizes the planner's tasks (default `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_approval: Option<PlanApproval>,
    /// Agent runs per task and coder before the task is BLOCKED (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_coder_iterations: Option<i64>,
    /// Rejections before the review-deadlock block (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_review_cycles: Option<i64>,
    /// Exit-42 restarts without progress before the task is BLOCKED (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit42_restart_threshold: Option<i64>,
    /// Seconds between heartbeats (default 15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval: Option<i64>,
    /// Seconds a registration, task or review lease lasts (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration: Option<i64>,
    /// Seconds between a coder's fallback polls (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coder_poll_interval: Option<i64>,
    /// Seconds between a reviewer's fallback polls (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_poll_interval: Option<i64>,
    /// Seconds between a planner's fallback polls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner_poll_interval: Option<i64>,
    /// Seconds with no non-terminal task before an idle supervisor exits (unset: only when
    /// the sprint or goal ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_exit_after: Option<i64>,
    /// Watchdog: seconds without progress before a run is stopped (default 1800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_progress_timeout: Option<i64>,
    /// The longest run per role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_timeout: Option<ExecutionTimeout>,
    /// The branch approved work is merged into (default `integration`): a plain branch
    /// name, not a `task/…` one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration_branch: Option<String>,
    /// The bare repository every host shares (specs/shared-store.md *Git across hosts*):
    /// task branches are pushed there and the integration branch moves only there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_remote: Option<String>,
    /// Run in each fresh worktree: an argv list, or a string run with `sh -c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_worktree_cmd: Option<CommandSpec>,
    /// The project's checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<Check>>,
    /// Globs of what counts as a test file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_paths: Option<Vec<String>>,
    /// Globs a coder may not change unless the task's `allow_protected` covers them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected_paths: Option<Vec<String>>,
    /// The backend used without `--cli` (default `claude`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_cli: Option<String>,
    /// Backends of the user's own, or adjustments of built-in ones, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_tools: Option<IdMap<String, AgentTool>>,
    /// Whether the codex backend writes structured run reports (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_report: Option<bool>,
    /// The built-in agent's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin: Option<BuiltinConfig>,
    /// The URL alarms are POSTed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_webhook: Option<String>,
    /// The circuit breaker's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreakerConfig>,
    /// Seconds a command waits for the state lock (default 10; supervisors wait 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_timeout: Option<i64>,
    /// How much the journal keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_keep: Option<JournalKeep>,
    /// Seconds after which a terminal task is moved to the archive by the watcher (unset:
    /// only when the next sprint opens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_after: Option<i64>,
    /// How agents and checks are confined (specs/sandbox.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxConfig>,
    /// The merge queue's batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeConfig>,
    /// Model prices for runs whose CLI reports no cost (specs/ledger.md *Cost*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<IdMap<String, PriceConfig>>,
    /// Token and dollar budgets (specs/ledger.md *Budgets*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetConfig>,
    /// Keys liza does not know, kept as written; the validator warns about them, v0.1's
    /// unused keys ([`LEGACY_CONFIG_KEYS`]) aside.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Config {
    opt plan_approval: "plan_approval",
    opt max_coder_iterations: "max_coder_iterations",
    opt max_review_cycles: "max_review_cycles",
    opt exit42_restart_threshold: "exit42_restart_threshold",
    opt heartbeat_interval: "heartbeat_interval",
    opt lease_duration: "lease_duration",
    opt coder_poll_interval: "coder_poll_interval",
    opt reviewer_poll_interval: "reviewer_poll_interval",
    opt planner_poll_interval: "planner_poll_interval",
    opt idle_exit_after: "idle_exit_after",
    opt agent_progress_timeout: "agent_progress_timeout",
    opt execution_timeout: "execution_timeout",
    opt integration_branch: "integration_branch",
    opt git_remote: "git_remote",
    opt post_worktree_cmd: "post_worktree_cmd",
    opt checks: "checks",
    opt test_paths: "test_paths",
    opt protected_paths: "protected_paths",
    opt default_cli: "default_cli",
    opt agent_tools: "agent_tools",
    opt codex_report: "codex_report",
    opt builtin: "builtin",
    opt escalation_webhook: "escalation_webhook",
    opt circuit_breaker: "circuit_breaker",
    opt lock_timeout: "lock_timeout",
    opt journal_keep: "journal_keep",
    opt archive_after: "archive_after",
    opt sandbox: "sandbox",
    opt merge: "merge",
    opt prices: "prices",
    opt budget: "budget",
});

/// A positive setting read with its default: out-of-range values are reported by the
/// validator and never used.
fn positive(value: Option<i64>, default: i64) -> i64 {
    value.filter(|v| *v > 0).unwrap_or(default)
}

impl Config {
    /// The integer settings with their allowed minimum, for the validator.
    pub fn integer_settings(&self) -> [(&'static str, Option<i64>, i64); 16] {
        [
            ("archive_after", self.archive_after, 1),
            ("max_coder_iterations", self.max_coder_iterations, 1),
            ("max_review_cycles", self.max_review_cycles, 1),
            ("exit42_restart_threshold", self.exit42_restart_threshold, 1),
            ("heartbeat_interval", self.heartbeat_interval, 1),
            ("lease_duration", self.lease_duration, 1),
            ("coder_poll_interval", self.coder_poll_interval, 1),
            ("reviewer_poll_interval", self.reviewer_poll_interval, 1),
            ("planner_poll_interval", self.planner_poll_interval, 1),
            ("idle_exit_after", self.idle_exit_after, 1),
            ("agent_progress_timeout", self.agent_progress_timeout, 1),
            ("lock_timeout", self.lock_timeout, 0),
            (
                "journal_keep.revisions",
                self.journal_keep.as_ref().and_then(|j| j.revisions),
                2,
            ),
            (
                "journal_keep.bytes",
                self.journal_keep.as_ref().and_then(|j| j.bytes),
                1024,
            ),
            (
                "merge.max_batch",
                self.merge.as_ref().and_then(|m| m.max_batch),
                1,
            ),
            (
                "merge.parallel_batches",
                self.merge.as_ref().and_then(|m| m.parallel_batches),
                1,
            ),
        ]
    }

    /// `plan_approval`, or its default `auto`.
    pub fn plan_approval(&self) -> PlanApproval {
        self.plan_approval.unwrap_or(PlanApproval::Auto)
    }

    /// `max_coder_iterations` when positive, else its default 10.
    pub fn max_coder_iterations(&self) -> i64 {
        positive(self.max_coder_iterations, 10)
    }

    /// `max_review_cycles` when positive, else its default 5.
    pub fn max_review_cycles(&self) -> i64 {
        positive(self.max_review_cycles, 5)
    }

    /// `exit42_restart_threshold` when positive, else its default 5.
    pub fn exit42_restart_threshold(&self) -> i64 {
        positive(self.exit42_restart_threshold, 5)
    }

    /// `heartbeat_interval` in seconds when positive, else its default 15.
    pub fn heartbeat_interval(&self) -> i64 {
        positive(self.heartbeat_interval, 15)
    }

    /// `lease_duration` in seconds when positive, else its default 120.
    pub fn lease_duration(&self) -> i64 {
        positive(self.lease_duration, 120)
    }

    /// `integration_branch`, or its default `integration` when unset or empty.
    pub fn integration_branch(&self) -> &str {
        self.integration_branch
            .as_deref()
            .filter(|b| !b.is_empty())
            .unwrap_or("integration")
    }

    /// `merge.max_batch` when positive, else its default 8.
    pub fn max_batch(&self) -> usize {
        positive(self.merge.as_ref().and_then(|m| m.max_batch), 8) as usize
    }

    /// `merge.parallel_batches` when positive, else its default 2.
    pub fn parallel_batches(&self) -> usize {
        positive(self.merge.as_ref().and_then(|m| m.parallel_batches), 2) as usize
    }

    /// Seconds to wait for the state lock (humans' commands; supervisors wait longer).
    pub fn lock_timeout(&self) -> i64 {
        self.lock_timeout.filter(|v| *v >= 0).unwrap_or(10)
    }

    /// The journal bound: (revisions, bytes), whichever is hit first.
    pub fn journal_keep(&self) -> (u64, u64) {
        let keep = self.journal_keep.as_ref();
        let revisions = keep
            .and_then(|k| k.revisions)
            .filter(|v| *v >= 2)
            .unwrap_or(200);
        let bytes = keep
            .and_then(|k| k.bytes)
            .filter(|v| *v >= 1024)
            .unwrap_or(64 * 1024 * 1024);
        (revisions as u64, bytes as u64)
    }

    /// `protected_paths`, or the default globs.
    pub fn protected_paths(&self) -> Vec<String> {
        self.protected_paths.clone().unwrap_or_else(|| {
            [
                "scripts/integration-test.sh",
                ".ci/**",
                ".liza/**",
                ".worktrees/**",
            ]
            .map(String::from)
            .to_vec()
        })
    }

    /// `test_paths`, or the default globs.
    pub fn test_paths(&self) -> Vec<String> {
        self.test_paths.clone().unwrap_or_else(|| {
            [
                "tests/**",
                "test/**",
                "**/*_test.*",
                "**/test_*.*",
                "**/*.test.*",
                "**/*_spec.*",
                "**/__tests__/**",
            ]
            .map(String::from)
            .to_vec()
        })
    }

    /// The checks liza runs on a review commit (`on_review: true`).
    pub fn review_checks(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .flatten()
            .filter(|c| c.on_review == Some(true))
    }

    /// `config.sandbox`, or its defaults.
    pub fn sandbox(&self) -> SandboxConfig {
        self.sandbox.clone().unwrap_or_default()
    }

    /// `default_cli`, or its default `claude`.
    pub fn default_cli(&self) -> &str {
        self.default_cli.as_deref().unwrap_or("claude")
    }
}
