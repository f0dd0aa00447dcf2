//! The typed state.yaml model of specs/blackboard.md: every section and field, statuses as
//! enums, ids and timestamps as validated types, and unknown keys kept at every level.

mod agent;
mod config;
mod history;
mod records;
mod sprint;
mod state;
mod task;

pub use agent::{Agent, AgentStatus};
pub use config::{
    AgentTool, BudgetConfig, BudgetLimit, BuiltinConfig, BuiltinRoleConfig, Check,
    CircuitBreakerConfig, CommandSpec, Config, ExecutionTimeout, JournalKeep, LEGACY_CONFIG_KEYS,
    MergeConfig, PlanApproval, PriceConfig, PromptMode, SandboxConfig, SandboxMode, SandboxNetwork,
    ValidationMode,
};
pub use history::{CachedJson, History, HistoryEvent, ReviewCounts, without_histories};
pub use records::{
    Anomaly, AnomalyType, Archive, ArchivedTask, CircuitBreaker, CircuitBreakerStatus, ContextUsed,
    Discovery, DiscoverySeverity, Handoff, Handoffs, HumanNote, SpecChange, Urgency,
};
pub use sprint::{
    AlignmentEvent, Goal, GoalStatus, Metrics, Scope, Sprint, SprintStatus, Timeline,
};
pub use state::State;
pub use task::{
    CommitId, FailureKind, IntegrationFailure, MergeIntent, OneOrMany, Task, TaskList, TaskStatus,
    Usage,
};
