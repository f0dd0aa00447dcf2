//! Registered agents (`agents.<id>`).

use serde::{Deserialize, Serialize};

use crate::codec::{Decode, Decoder, Emit, Number, record, yaml_enum};
use crate::ids::{Role, TaskId};
use crate::node::{Extra, Node};
use crate::timestamp::Timestamp;
use crate::yaml::Emitter;

yaml_enum! {
    /// The 6 agent states of specs/lifecycle.md.
    pub enum AgentStatus (Some(8), "agent-status", "agent status") {
        /// Starting up, before IDLE; liza itself registers agents as IDLE.
        Starting = "STARTING",
        /// Registered, with nothing to do.
        Idle = "IDLE",
        /// A coder working on its task.
        Working = "WORKING",
        /// A coder whose task was submitted, waiting for its review.
        Waiting = "WAITING",
        /// A reviewer reviewing a task.
        Reviewing = "REVIEWING",
        /// Its context ran out: it wrote a handoff, and the next run starts fresh from it.
        Handoff = "HANDOFF",
    }
}

impl Decode for Role {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let role = node.as_str().and_then(Role::from_yaml_name);
        if role.is_none() {
            d.error(
                Some(8),
                "agent-role",
                node.pos,
                format!(
                    "role {} is not one of planner, coder, code_reviewer",
                    node.as_str()
                        .map_or_else(|| node.kind_name().to_owned(), |s| format!("{s:?}"))
                ),
            );
        }
        role
    }
}

impl Emit for Role {
    fn emit(&self, e: &mut Emitter) {
        e.plain(self.yaml_name());
    }
}

/// An agent entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// Planner, coder or code reviewer; it matches the id's prefix.
    pub role: Role,
    /// Set by the supervisor (specs/lifecycle.md *Agent states*).
    pub status: AgentStatus,
    /// A random token minted at each registration: the fencing token agents present as
    /// `LIZA_AGENT_GENERATION`. Absent in v0.1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<String>,
    /// The task it works on or reviews.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_task: Option<TaskId>,
    /// The registration lease, renewed by heartbeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_expires: Option<Timestamp>,
    /// The last heartbeat folded in from its liveness record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat: Option<Timestamp>,
    /// When it was registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_at: Option<Timestamp>,
    /// The terminal its supervisor runs in (diagnostic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<String>,
    /// The backend's name (`--cli`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli: Option<String>,
    /// The built-in agent's identity (`--identity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The registering process's pid; diagnostic only, never used for a decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    /// Agent runs started by this agent id, kept across registrations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_total: Option<i64>,
    /// Kept as written (v0.1 tooling); liza does not set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_percent: Option<Number>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Agent {
    req role: "role",
    req status: "status",
    opt generation: "generation",
    opt current_task: "current_task",
    opt lease_expires: "lease_expires",
    opt heartbeat: "heartbeat",
    opt registered_at: "registered_at",
    opt terminal: "terminal",
    opt cli: "cli",
    opt identity: "identity",
    opt pid: "pid",
    opt iterations_total: "iterations_total",
    opt context_percent: "context_percent",
});
