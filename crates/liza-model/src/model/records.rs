//! The smaller sections: discoveries, handoffs, human notes, anomalies, spec changes,
//! the circuit breaker and the archive index.

use serde::{Deserialize, Serialize};

use crate::TaskId;
use crate::codec::{Decode, Decoder, Emit, IdMap, Number, record, yaml_enum};
use crate::node::{Extra, Node, Value};
use crate::timestamp::Timestamp;
use crate::yaml::Emitter;

use super::TaskStatus;

yaml_enum! {
    /// `discovered[].severity`: how serious a discovery is.
    pub enum DiscoverySeverity (None, "discovery-severity", "discovery severity") {
        /// Critical.
        Critical = "critical",
        /// High.
        High = "high",
        /// Medium.
        Medium = "medium",
        /// Low.
        Low = "low",
    }
}

yaml_enum! {
    /// `discovered[].urgency`: when the planner should look at a discovery.
    pub enum Urgency (Some(10), "discovery-urgency", "discovery urgency") {
        /// At once: an unconverted immediate discovery wakes the planner.
        Immediate = "immediate",
        /// In the planner's own time (the default).
        Deferred = "deferred",
    }
}

yaml_enum! {
    /// The 13 anomaly types of specs/blackboard.md.
    pub enum AnomalyType (Some(10), "anomaly-type", "anomaly type") {
        /// A fix was retried again and again (details: `count`, `error_pattern`).
        RetryLoop = "retry_loop",
        /// A trade-off was made (details: `what`, `why`, `debt_created`).
        TradeOff = "trade_off",
        /// The spec can be read more than one way.
        SpecAmbiguity = "spec_ambiguity",
        /// Something outside the project blocks the work (details: `blocker_service`).
        ExternalBlocker = "external_blocker",
        /// An assumption turned out false (details: `assumption`, `reality`).
        AssumptionViolated = "assumption_violated",
        /// The work went outside the task's scope.
        ScopeDeviation = "scope_deviation",
        /// A workaround was used.
        Workaround = "workaround",
        /// Technical debt was created.
        DebtCreated = "debt_created",
        /// The task's spec changed since the task was finalized.
        SpecChanged = "spec_changed",
        /// Two coders failed the task: its framing is presumed wrong.
        HypothesisExhaustion = "hypothesis_exhaustion",
        /// The spec says nothing where it should.
        SpecGap = "spec_gap",
        /// Review cycles reached `max_review_cycles`.
        ReviewDeadlock = "review_deadlock",
        /// The protocol itself is unclear (details: `protocol_section`, `question`).
        SystemAmbiguity = "system_ambiguity",
    }
}

impl AnomalyType {
    /// The `details` keys this type requires.
    pub fn required_details(self) -> &'static [&'static str] {
        match self {
            AnomalyType::RetryLoop => &["count", "error_pattern"],
            AnomalyType::TradeOff => &["what", "why", "debt_created"],
            AnomalyType::ExternalBlocker => &["blocker_service"],
            AnomalyType::AssumptionViolated => &["assumption", "reality"],
            AnomalyType::SystemAmbiguity => &["protocol_section", "question"],
            _ => &[],
        }
    }
}

yaml_enum! {
    /// `circuit_breaker.status`: the outcome of the last analysis.
    pub enum CircuitBreakerStatus (None, "circuit-breaker-status", "circuit breaker status") {
        /// No pattern matched.
        Ok = "OK",
        /// A pattern matched.
        Triggered = "TRIGGERED",
    }
}

/// `discovered[]`: something found while working that may become a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Discovery {
    /// `disc-N`.
    pub id: String,
    /// Who reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The task being worked on when it was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<String>,
    /// What was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How serious it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<DiscoverySeverity>,
    /// When the planner should look at it (absent: deferred).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgency: Option<Urgency>,
    /// What the reporter recommends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<String>,
    /// When it was reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    /// The task it was converted to (`liza discovery convert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converted_to_task: Option<String>,
    /// Keys liza does not know, kept as written (`liza discovery defer` and `reject` add
    /// `deferred_reason` or `rejected_reason`, and `decided_at`).
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Discovery {
    req id: "id",
    opt by: "by",
    opt during: "during",
    opt description: "description",
    opt severity: "severity",
    opt urgency: "urgency",
    opt recommendation: "recommendation",
    opt created: "created",
    opt converted_to_task: "converted_to_task",
});

/// `handoff.<task>.context_used`: a number (`91`, `0.91`) or Liza v0.1's percentage
/// text (`91%`, `"91%"`), kept as it was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ContextUsed {
    /// A number: `91`, or a share such as `0.91`.
    Number(Number),
    /// Liza v0.1's percentage text, such as `91%`.
    Text(String),
}

impl ContextUsed {
    /// The share of the context used, in percent (`0.91` and `91%` are both 91).
    pub fn percent(&self) -> f64 {
        let value = match self {
            ContextUsed::Number(n) => n.as_f64(),
            ContextUsed::Text(t) => percent_text(t).unwrap_or(0.0),
        };
        if value <= 1.0 { value * 100.0 } else { value }
    }
}

/// `91%`, `91 %`, `91.5%` or a bare `91` as text.
fn percent_text(text: &str) -> Option<f64> {
    let t = text.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    number
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

impl Decode for ContextUsed {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.value {
            Value::Int(_) | Value::Float(_) => Number::decode(node, d).map(ContextUsed::Number),
            Value::Str(s) if percent_text(s).is_some() => Some(ContextUsed::Text(s.clone())),
            _ => d.expected(node, "a number or a percentage such as 91%"),
        }
    }
}

impl Emit for ContextUsed {
    fn emit(&self, e: &mut Emitter) {
        match self {
            ContextUsed::Number(n) => n.emit(e),
            ContextUsed::Text(t) => e.str(t),
        }
    }
}

/// `handoff.<task>`: notes for the next run after context exhaustion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    /// The agent that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// How much of its context the agent had used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_used: Option<ContextUsed>,
    /// When it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// What is done; required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The next step; required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
    /// Free-form: the approach taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approach: Option<Node>,
    /// Free-form: what stands in the way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blockers: Option<Node>,
    /// Free-form: the files changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_modified: Option<Node>,
    /// Free-form: the steps after the next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_steps: Option<Node>,
    /// Keys liza does not know, kept as written (a flat v0.1 handoff's `task` among them).
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Handoff {
    opt agent: "agent",
    opt context_used: "context_used",
    opt timestamp: "timestamp",
    opt summary: "summary",
    opt next_action: "next_action",
    opt approach: "approach",
    opt blockers: "blockers",
    opt files_modified: "files_modified",
    opt next_steps: "next_steps",
});

/// The `handoff` section: keyed by task id, or — as Liza v0.1's protocol has a coder
/// write it — one flat handoff naming its task with `task:`. A flat one is written back
/// flat while it is the only handoff, so v0.1 tooling still reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Handoffs {
    /// The handoffs by task id.
    pub map: IdMap<TaskId, Handoff>,
    /// Read as one flat v0.1 handoff, and written back flat while it is the only one.
    pub flat: bool,
}

impl Handoffs {
    /// Whether this is one handoff that names its own task (`task:` kept in extra).
    fn names_its_task(&self) -> bool {
        matches!(self.map.0.as_slice(),
            [(id, h)] if h.extra.get("task").and_then(|t| t.as_str()) == Some(id.as_str()))
    }
}

// JSON (`--json`, the parse cache) shows the handoffs keyed by task, as they are; a flat
// one is recognised again by naming its own task.
impl Serialize for Handoffs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Handoffs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut handoffs = Handoffs::from(IdMap::deserialize(d)?);
        handoffs.flat = handoffs.names_its_task();
        Ok(handoffs)
    }
}

impl std::ops::Deref for Handoffs {
    type Target = IdMap<TaskId, Handoff>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl std::ops::DerefMut for Handoffs {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.map
    }
}

impl From<IdMap<TaskId, Handoff>> for Handoffs {
    fn from(map: IdMap<TaskId, Handoff>) -> Self {
        Handoffs { map, flat: false }
    }
}

impl Decode for Handoffs {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let flat = matches!(&node.value, Value::Map(entries)
            if entries.iter().any(|e| e.key == "summary" || e.key == "next_action"));
        if !flat {
            return IdMap::decode(node, d).map(Handoffs::from);
        }
        let handoff = Handoff::decode(node, d)?;
        let task = handoff.extra.get("task").and_then(|t| t.as_str());
        match task.map(TaskId::parse) {
            Some(Ok(id)) => Some(Handoffs {
                map: IdMap(vec![(id, handoff)]),
                flat: true,
            }),
            Some(Err(e)) => {
                d.error(Some(10), "handoff-task", node.pos, format!("handoff: {e}"));
                None
            }
            None => {
                d.error(
                    Some(10),
                    "handoff-task",
                    node.pos,
                    "a flat handoff (Liza v0.1's form) names its task with `task: <id>`; \
                     or key it by the task id"
                        .into(),
                );
                None
            }
        }
    }
}

impl Emit for Handoffs {
    fn emit(&self, e: &mut Emitter) {
        match self.map.0.as_slice() {
            // Still the one flat handoff it was read as.
            [(_, h)] if self.flat && self.names_its_task() => h.emit(e),
            _ => self.map.emit(e),
        }
    }
}

/// `human_notes[]`: a note from a person to one task's agents or to all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanNote {
    /// `note-N`; absent in Liza v0.1 notes until the next write assigns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// When it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// What it says.
    pub message: String,
    /// `for`: a task id or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The planners that were woken for it (`HUMAN_NOTE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_by: Option<Vec<String>>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(HumanNote {
    opt id: "id",
    opt timestamp: "timestamp",
    req message: "message",
    opt target: "for",
    opt seen_by: "seen_by",
});

/// `anomalies[]`: something an agent or liza noticed and must report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// When it was reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// The task it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Who reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporter: Option<String>,
    /// `type`: what kind of anomaly it is.
    pub kind: AnomalyType,
    /// The keys its type requires, and any others the reporter gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Node>,
    /// The planners that were woken for it (`SYSTEM_AMBIGUITY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_by: Option<Vec<String>>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Anomaly {
    opt timestamp: "timestamp",
    opt task: "task",
    opt reporter: "reporter",
    req kind: "type",
    opt details: "details",
    opt seen_by: "seen_by",
});

/// `spec_changes[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecChange {
    /// When the spec changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// The spec that changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// What changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    /// What caused the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggered_by: Option<String>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(SpecChange {
    opt timestamp: "timestamp",
    opt spec: "spec",
    opt change: "change",
    opt triggered_by: "triggered_by",
});

/// `circuit_breaker`: the last analysis (specs/operations.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CircuitBreaker {
    /// When the last analysis ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_check: Option<Timestamp>,
    /// Whether the last analysis matched a pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CircuitBreakerStatus>,
    /// The patterns the last analysis matched (`pattern`, `severity`, `count`, `group`…);
    /// absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_trigger: Option<Node>,
    /// Past triggers, each recorded when an analysis found a different one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Node>>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(CircuitBreaker {
    opt last_check: "last_check",
    opt status: "status",
    opt current_trigger: "current_trigger",
    opt history: "history",
});

/// `archived.<task>`: a terminal task moved to `archive/<sprint>.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchivedTask {
    /// Its status when archived: MERGED, SUPERSEDED or ABANDONED.
    pub status: TaskStatus,
    /// The sprint whose archive file holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sprint: Option<String>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(ArchivedTask {
    req status: "status",
    opt sprint: "sprint",
});

/// `archive/<sprint>.yaml`: terminal tasks moved out of state.yaml (specs/blackboard.md
/// *Growth*), each with its full record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Archive {
    /// The sprint the file is for.
    pub sprint: String,
    /// The archived tasks, with their full records.
    pub tasks: super::TaskList,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Archive {
    req sprint: "sprint",
    req tasks: "tasks",
});
