//! What any agent or person reports: `discover`, `anomaly`, `log add`, and the planner's
//! handling of discoveries (`discovery convert|defer|reject`).

use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::EventKind;
use crate::blackboard::model::{AnomalyType, Discovery, DiscoverySeverity, Urgency};
use crate::blackboard::node::{Node, Value};
use crate::blackboard::{Actor, TaskId};
use crate::lifecycle::context::text;
use crate::lifecycle::work_done::push_anomaly;
use crate::lifecycle::{Kind, Outcome, Refusal, RuleId};

fn refusal(rule: RuleId, message: String, hint: &str) -> Refusal {
    Refusal::new(rule, message, hint)
}

/// `discover --task ID --desc D --severity S [--urgency U] [--recommendation R]`.
pub fn discover(
    project: &Project,
    actor: &Actor,
    task: &TaskId,
    description: &str,
    severity: &str,
    urgency: Option<&str>,
    recommendation: Option<&str>,
) -> Result<Transition<String>, OpsError> {
    let severity = DiscoverySeverity::parse(severity).ok_or_else(|| {
        OpsError::refused(
            RuleId::DiscoverySeverity,
            format!(
                "severity {severity:?} is not one of {}",
                DiscoverySeverity::names()
            ),
            "pick one of them",
        )
    })?;
    let urgency = match urgency {
        None => Urgency::Deferred,
        Some(u) => Urgency::parse(u).ok_or_else(|| {
            OpsError::refused(
                RuleId::DiscoveryUrgency,
                format!("urgency {u:?} is not immediate or deferred"),
                "pick one of them",
            )
        })?,
    };
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            if !state.task_exists(task) {
                return Err(refusal(
                    RuleId::TaskExists,
                    format!("there is no task {task}"),
                    "name the task you were working on",
                ));
            }
            let description = crate::lifecycle::context::required_text(
                description,
                "the description",
                "say what you found",
            )?;
            let next = state
                .discovered()
                .iter()
                .filter_map(|d| d.id.strip_prefix("disc-")?.parse::<u64>().ok())
                .max()
                .unwrap_or(0)
                + 1;
            let id = format!("disc-{next}");
            state
                .discovered
                .get_or_insert_with(Vec::new)
                .push(Discovery {
                    id: id.clone(),
                    by: Some(who.name()),
                    during: Some(task.to_string()),
                    description: Some(description.clone()),
                    severity: Some(severity),
                    urgency: Some(urgency),
                    recommendation: recommendation.map(str::to_owned),
                    created: Some(now),
                    converted_to_task: None,
                    extra: Default::default(),
                });
            let mut outcome = Outcome::default();
            outcome.event(
                EventKind::Discovery,
                &who.name(),
                Some(task),
                Some(format!(
                    "{id} ({}, {}): {description}",
                    severity.as_str(),
                    urgency.as_str()
                )),
            );
            Ok((outcome, id))
        },
    )
}

/// `anomaly --type T --task ID --detail key=value…`: the type's required details must be
/// given.
pub fn anomaly(
    project: &Project,
    actor: &Actor,
    kind: &str,
    task: &TaskId,
    details: &[String],
) -> Result<Transition<()>, OpsError> {
    let kind = AnomalyType::parse(kind).ok_or_else(|| {
        OpsError::refused(
            RuleId::AnomalyType,
            format!(
                "anomaly type {kind:?} is not one of {}",
                AnomalyType::names()
            ),
            "pick one of the 13 types",
        )
    })?;
    let mut pairs: Vec<(String, Value)> = Vec::new();
    for d in details {
        let Some((k, v)) = d.split_once('=') else {
            return Err(OpsError::refused(
                RuleId::AnomalyDetails,
                format!("detail {d:?} is not key=value"),
                "write each detail as --detail key=value",
            ));
        };
        let value = v.parse::<i64>().map(Value::Int).unwrap_or_else(|_| text(v));
        pairs.push((k.trim().to_owned(), value));
    }
    let missing: Vec<&str> = kind
        .required_details()
        .iter()
        .copied()
        .filter(|k| !pairs.iter().any(|(p, _)| p == k))
        .collect();
    if !missing.is_empty() {
        return Err(OpsError::refused(
            RuleId::AnomalyDetails,
            format!(
                "a {} anomaly needs the details {}",
                kind.as_str(),
                missing.join(", ")
            ),
            format!("add --detail {}=...", missing[0]),
        ));
    }
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            if !state.task_exists(task) {
                return Err(refusal(
                    RuleId::TaskExists,
                    format!("there is no task {task}"),
                    "name the task it concerns",
                ));
            }
            let borrowed: Vec<(&str, Value)> =
                pairs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            push_anomaly(state, task, &who.name(), kind, &borrowed, now);
            let mut outcome = Outcome::default();
            outcome.event(
                EventKind::Anomaly,
                &who.name(),
                Some(task),
                Some(kind.as_str().to_owned()),
            );
            Ok((outcome, ()))
        },
    )
}

/// `log add --action A --detail D [--task ID]`: a free-form log entry.
pub fn log_add(
    project: &Project,
    actor: &Actor,
    action: &str,
    detail: &str,
    task: Option<&TaskId>,
) -> Result<Transition<()>, OpsError> {
    let well_formed = (1..=64).contains(&action.len())
        && action
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !well_formed {
        return Err(OpsError::refused(
            RuleId::LogAction,
            format!("action {action:?} must be 1-64 letters, digits, '_', '-' or '.'"),
            "e.g. --action test_run",
        ));
    }
    if let Some(c) = detail
        .chars()
        .find(|&c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(OpsError::refused(
            RuleId::LogDetail,
            format!("the detail holds the control character U+{:04X}", c as u32),
            "log plain text: strip colour codes and escape sequences (e.g. NO_COLOR=1)",
        ));
    }
    if detail.contains('\n') || detail.len() > 4096 {
        return Err(OpsError::refused(
            RuleId::LogDetail,
            "the detail must be one line of at most 4096 bytes",
            "summarise it; long output belongs in a file",
        ));
    }
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, _now| {
            if let Some(task) = task
                && !state.task_exists(task)
            {
                return Err(refusal(
                    RuleId::TaskExists,
                    format!("there is no task {task}"),
                    "name an existing task or omit --task",
                ));
            }
            let mut outcome = Outcome::default();
            outcome.logged(action, &who.name(), task, Some(detail.to_owned()));
            Ok((outcome, ()))
        },
    )
}

/// What `discovery` does with a discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryDecision {
    /// `convert --task <id>`: the discovery became a task, which exists already.
    Convert {
        /// The task it became.
        task: TaskId,
    },
    /// `defer --reason R`: put off; its urgency becomes `deferred`.
    Defer {
        /// Why.
        reason: String,
    },
    /// `reject --reason R`: turned down; its urgency becomes `deferred` too.
    Reject {
        /// Why.
        reason: String,
    },
}

/// `discovery convert|defer|reject` (planner or person).
pub fn discovery(
    project: &Project,
    actor: &Actor,
    id: &str,
    decision: &DiscoveryDecision,
) -> Result<Transition<()>, OpsError> {
    transition(
        &project.store,
        actor,
        Authority::Caller,
        |state, who, now| {
            if !matches!(who.kind(), Kind::Planner | Kind::Human) {
                return Err(refusal(
                    RuleId::Permission,
                    format!("{} may not decide on discoveries", who.kind().name()),
                    "the planner (or a person) decides",
                ));
            }
            if let DiscoveryDecision::Convert { task } = decision
                && !state.task_exists(task)
            {
                return Err(refusal(
                    RuleId::TaskExists,
                    format!("there is no task {task}"),
                    "add the task first, then convert the discovery to it",
                ));
            }
            let Some(d) = state
                .discovered
                .as_mut()
                .and_then(|list| list.iter_mut().find(|d| d.id == id))
            else {
                return Err(refusal(
                    RuleId::DiscoveryExists,
                    format!("there is no discovery {id}"),
                    "`liza status --json` lists them",
                ));
            };
            if let Some(task) = &d.converted_to_task {
                return Err(refusal(
                    RuleId::DiscoveryOpen,
                    format!("discovery {id} was already converted to {task}"),
                    "nothing to do",
                ));
            }
            let (action, detail) = match decision {
                DiscoveryDecision::Convert { task } => {
                    d.converted_to_task = Some(task.to_string());
                    (EventKind::DiscoveryConverted, format!("{id} → {task}"))
                }
                DiscoveryDecision::Defer { reason } => {
                    d.urgency = Some(Urgency::Deferred);
                    d.extra.insert("deferred_reason", Node::str(reason.clone()));
                    d.extra.insert("decided_at", Node::str(now.to_string()));
                    (EventKind::DiscoveryDeferred, format!("{id}: {reason}"))
                }
                DiscoveryDecision::Reject { reason } => {
                    d.extra.insert("rejected_reason", Node::str(reason.clone()));
                    d.extra.insert("decided_at", Node::str(now.to_string()));
                    d.urgency = Some(Urgency::Deferred);
                    (EventKind::DiscoveryRejected, format!("{id}: {reason}"))
                }
            };
            let mut outcome = Outcome::default();
            outcome.event(action, &who.name(), None, Some(detail));
            Ok((outcome, ()))
        },
    )
}
