//! What every transition shares: who acts, what it reports, and the small steps all
//! rows take (status change with `status_changed_at`, a history event, freeing an agent).

use std::collections::BTreeMap;

use crate::model::{AgentStatus, HistoryEvent, State, Task, TaskStatus};
use crate::node::{Node, Value};
use crate::{AgentId, EventKind, TaskId, Timestamp};

use super::RuleId;
use super::refusal::Refusal;
use super::table::Kind;

/// Who performs an operation, as the lifecycle sees it. Agents' identities (id and
/// generation) are verified by the caller before it builds a `Who::Agent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// A person: no agent identity.
    Human,
    /// `liza-agent` acting for its agent, or a person running a supervisor-only command.
    Supervisor,
    /// An agent acting under its verified identity.
    Agent(AgentId),
}

impl Who {
    /// Its column in the transition table.
    pub fn kind(&self) -> Kind {
        match self {
            Who::Human => Kind::Human,
            Who::Supervisor => Kind::Supervisor,
            Who::Agent(id) => match id.role() {
                crate::Role::Planner => Kind::Planner,
                crate::Role::Coder => Kind::Coder,
                crate::Role::CodeReviewer => Kind::Reviewer,
            },
        }
    }

    /// The name in history events and log entries.
    pub fn name(&self) -> String {
        match self {
            Who::Human => "human".into(),
            Who::Supervisor => "liza".into(),
            Who::Agent(id) => id.to_string(),
        }
    }
}

/// One thing that happened, for log.yaml.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Event {
    /// An [`EventKind`]'s name, or the action a person logged (`liza log add`).
    pub action: String,
    /// Who acted, by name (see [`Who::name`]).
    pub agent: String,
    /// The task concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// A one-line summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Structured fields of the log entry beyond `detail` (e.g. `drift_commits`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, Field>,
}

/// A structured log field.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Field {
    /// A number.
    Int(i64),
    /// Text.
    Text(String),
}

impl Field {
    /// The field as a YAML value.
    pub fn value(&self) -> Value {
        match self {
            Field::Int(n) => Value::Int(*n),
            Field::Text(s) => Value::Str(s.clone()),
        }
    }
}

/// What an operation did: the log entries to write and warnings for the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    /// The log entries to write, in order.
    pub events: Vec<Event>,
    /// Warnings for the caller to show.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Outcome {
    /// Records a log entry of kind `action`.
    pub fn event(
        &mut self,
        action: EventKind,
        agent: &str,
        task: Option<&TaskId>,
        detail: Option<String>,
    ) {
        self.push(action.as_str(), agent, task, detail);
    }

    /// An event liza does not define: what `liza log add --action NAME` records.
    pub fn logged(
        &mut self,
        action: &str,
        agent: &str,
        task: Option<&TaskId>,
        detail: Option<String>,
    ) {
        self.push(action, agent, task, detail);
    }

    fn push(&mut self, action: &str, agent: &str, task: Option<&TaskId>, detail: Option<String>) {
        self.events.push(Event {
            action: action.to_owned(),
            agent: agent.to_owned(),
            task: task.cloned(),
            detail,
            fields: BTreeMap::new(),
        });
    }

    /// Adds a structured field to the last event.
    pub fn field(&mut self, key: &str, value: Field) {
        if let Some(last) = self.events.last_mut() {
            last.fields.insert(key.to_owned(), value);
        }
    }

    /// Appends `other`'s log entries and warnings to these.
    pub fn merge(&mut self, other: Outcome) {
        self.events.extend(other.events);
        self.warnings.extend(other.warnings);
    }
}

/// The task `id`, or a refusal saying it does not exist.
pub fn task<'s>(state: &'s State, id: &TaskId) -> Result<&'s Task, Refusal> {
    state.task(id).ok_or_else(|| {
        let archived = state.archived.as_ref().is_some_and(|a| a.contains_key(id));
        Refusal::new(
            RuleId::TaskExists,
            if archived {
                format!("task {id} is archived (terminal); nothing moves out of it")
            } else {
                format!("there is no task {id}")
            },
            "list the tasks with `liza status`",
        )
    })
}

/// The task `id`, to change; the caller looked it up first (it panics otherwise).
pub fn task_mut<'s>(state: &'s mut State, id: &TaskId) -> &'s mut Task {
    state
        .task_mut(id)
        .expect("the task was looked up before it is changed")
}

/// Sets the status and `status_changed_at`.
pub fn set_status(task: &mut Task, to: TaskStatus, now: Timestamp) {
    task.status = to;
    task.status_changed_at = Some(now);
}

/// Appends `{time, event, agent, ...fields}` to the task's history.
pub fn history(
    task: &mut Task,
    now: Timestamp,
    event: EventKind,
    agent: &str,
    fields: &[(&str, Value)],
) {
    let mut entry = HistoryEvent {
        time: now,
        event: event.as_str().to_owned(),
        agent: Some(agent.to_owned()),
        extra: Default::default(),
    };
    for (key, value) in fields {
        entry.extra.insert(key, Node::new(value.clone()));
    }
    task.history_mut().push(entry);
}

/// `s` as a YAML text value.
pub fn text(s: impl Into<String>) -> Value {
    Value::Str(s.into())
}

/// `items` as a YAML list of texts.
pub fn text_list<T: ToString>(items: &[T]) -> Value {
    Value::Seq(items.iter().map(|i| Node::str(i.to_string())).collect())
}

/// The agent whose task left its hands: IDLE, no current task (specs/lifecycle.md *Agent states*).
pub fn release_agent(state: &mut State, agent: Option<&AgentId>, task: &TaskId) {
    if let Some(agent) = agent.and_then(|a| state.agents.get_mut(a))
        && agent.current_task.as_ref() == Some(task)
    {
        agent.current_task = None;
        agent.status = AgentStatus::Idle;
    }
}

/// Sets an agent's status and current task, if it is registered.
pub fn set_agent(state: &mut State, agent: &AgentId, status: AgentStatus, task: Option<&TaskId>) {
    if let Some(entry) = state.agents.get_mut(agent) {
        entry.status = status;
        entry.current_task = task.cloned();
    }
}

/// A non-empty, trimmed text argument, or a refusal naming it.
pub fn required_text(value: &str, what: &'static str, hint: &str) -> Result<String, Refusal> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(Refusal::new(
            RuleId::RequiredText,
            format!("{what} is empty"),
            hint,
        ));
    }
    Ok(trimmed.to_owned())
}
