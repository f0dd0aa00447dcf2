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
        Starting = "STARTING",
        Idle = "IDLE",
        Working = "WORKING",
        Waiting = "WAITING",
        Reviewing = "REVIEWING",
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
    pub role: Role,
    pub status: AgentStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_task: Option<TaskId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_expires: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_total: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_percent: Option<Number>,
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
