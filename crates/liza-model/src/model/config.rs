//! `config`: every key of specs/blackboard.md with its default. Fields are optional in the file
//! (missing keys take defaults, through the accessors) so a rewrite never adds keys the
//! human did not write.

use serde::{Deserialize, Serialize};

use crate::codec::{Decode, Decoder, Emit, IdMap, record, yaml_enum};
use crate::node::{Extra, Node, Value};
use crate::yaml::Emitter;

yaml_enum! {
    pub enum PlanApproval (Some(11), "config-value", "plan_approval") {
        Auto = "auto",
        Human = "human",
    }
}

yaml_enum! {
    pub enum PromptMode (Some(11), "config-value", "agent_tools prompt mode") {
        Stdin = "stdin",
        Arg = "arg",
        File = "file",
    }
}

yaml_enum! {
    pub enum ValidationMode (Some(11), "config-value", "builtin validation_mode") {
        Strict = "strict",
        Lenient = "lenient",
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
    pub fn mode(&self) -> SandboxMode {
        self.mode.unwrap_or(SandboxMode::Auto)
    }

    pub fn network(&self) -> SandboxNetwork {
        self.network.unwrap_or(SandboxNetwork::Full)
    }

    pub fn checks_network(&self) -> SandboxNetwork {
        self.checks_network.unwrap_or(SandboxNetwork::None)
    }

    pub fn read_only(&self) -> &[String] {
        self.read_only.as_deref().unwrap_or_default()
    }

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
    Argv(Vec<String>),
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coder: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_reviewer: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<i64>,
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
    pub name: String,
    pub run: CommandSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_review: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_merge: Option<bool>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive_args: Option<Vec<String>>,
    /// Its own state files and directories, writable inside the sandbox (added to a
    /// built-in backend's; specs/sandbox.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Vec<String>>,
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
});

/// Per-role settings of the built-in agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuiltinRoleConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(BuiltinRoleConfig { opt model: "model" });

/// `config.builtin`: the built-in agent (specs/builtin-agent.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuiltinConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_mode: Option<ValidationMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<BuiltinRoleConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coder: Option<BuiltinRoleConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_reviewer: Option<BuiltinRoleConfig>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CircuitBreakerConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_at: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(CircuitBreakerConfig { opt checkpoint_at: "checkpoint_at" });

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JournalKeep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revisions: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(JournalKeep {
    opt revisions: "revisions",
    opt bytes: "bytes",
});

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_approval: Option<PlanApproval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_coder_iterations: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_review_cycles: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit42_restart_threshold: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coder_poll_interval: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_poll_interval: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner_poll_interval: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_exit_after: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_progress_timeout: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_timeout: Option<ExecutionTimeout>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration_branch: Option<String>,
    /// The bare repository every host shares (specs/shared-store.md *Git across hosts*):
    /// task branches are pushed there and the integration branch moves only there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_remote: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_worktree_cmd: Option<CommandSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<Check>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected_paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_cli: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_tools: Option<IdMap<String, AgentTool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_report: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin: Option<BuiltinConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_webhook: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreakerConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_timeout: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_keep: Option<JournalKeep>,
    /// Seconds after which a terminal task is moved to the archive by the watcher (unset:
    /// only when the next sprint opens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_after: Option<i64>,
    /// How agents and checks are confined (specs/sandbox.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxConfig>,
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
});

/// A positive setting read with its default: out-of-range values are reported by the
/// validator and never used.
fn positive(value: Option<i64>, default: i64) -> i64 {
    value.filter(|v| *v > 0).unwrap_or(default)
}

impl Config {
    /// The integer settings with their allowed minimum, for the validator.
    pub fn integer_settings(&self) -> [(&'static str, Option<i64>, i64); 14] {
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
        ]
    }

    pub fn plan_approval(&self) -> PlanApproval {
        self.plan_approval.unwrap_or(PlanApproval::Auto)
    }

    pub fn max_coder_iterations(&self) -> i64 {
        positive(self.max_coder_iterations, 10)
    }

    pub fn max_review_cycles(&self) -> i64 {
        positive(self.max_review_cycles, 5)
    }

    pub fn exit42_restart_threshold(&self) -> i64 {
        positive(self.exit42_restart_threshold, 5)
    }

    pub fn heartbeat_interval(&self) -> i64 {
        positive(self.heartbeat_interval, 15)
    }

    pub fn lease_duration(&self) -> i64 {
        positive(self.lease_duration, 120)
    }

    pub fn integration_branch(&self) -> &str {
        self.integration_branch
            .as_deref()
            .filter(|b| !b.is_empty())
            .unwrap_or("integration")
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

    pub fn default_cli(&self) -> &str {
        self.default_cli.as_deref().unwrap_or("claude")
    }
}
