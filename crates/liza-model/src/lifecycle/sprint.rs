//! The sprint and goal machines (specs/lifecycle.md *Sprint and goal*).

use crate::EventKind;
use crate::model::{Goal, GoalStatus, Sprint, SprintStatus, State, Timeline};
use crate::node::{Entry, Node, Value};
use crate::{TaskId, Timestamp};

use super::RuleId;
use super::context::{Outcome, Who};
use super::refusal::Refusal;
use super::table::Kind;

/// The decisions `liza resume --decision` records.
pub const DECISIONS: &[&str] = &["CONTINUE", "ADJUST_SPECS", "REPLAN", "PIVOT", "STOP"];

fn planner_or_human(who: &Who, what: &str) -> Result<(), Refusal> {
    match who.kind() {
        Kind::Planner | Kind::Human => Ok(()),
        _ => Err(Refusal::new(
            RuleId::Permission,
            format!("only the planner or a person may {what}"),
            "see operations.md, Commands",
        )),
    }
}

fn human(who: &Who, what: &str) -> Result<(), Refusal> {
    match who.kind() {
        Kind::Human => Ok(()),
        _ => Err(Refusal::new(
            RuleId::Permission,
            format!("only a person may {what}"),
            "unset LIZA_AGENT_ID to act as a person",
        )),
    }
}

/// Refuses unless the sprint is in `expected`.
fn require_sprint(state: &State, expected: SprintStatus, hint: &str) -> Result<(), Refusal> {
    if state.sprint.status == expected {
        return Ok(());
    }
    Err(Refusal::new(
        RuleId::SprintStatus,
        format!(
            "the sprint is {}, not {}",
            state.sprint.status.as_str(),
            expected.as_str()
        ),
        hint,
    ))
}

fn is_done(state: &State, id: &TaskId) -> bool {
    match state.task(id) {
        Some(t) => t.status.is_terminal(),
        None => state
            .archived
            .as_ref()
            .and_then(|a| a.get(id))
            .is_some_and(|a| a.status.is_terminal()),
    }
}

fn timeline_mut(sprint: &mut Sprint) -> &mut Timeline {
    sprint.timeline.get_or_insert_with(Timeline::default)
}

/// IN_PROGRESS → COMPLETED when every planned task is terminal; called by every
/// transaction that moves a task, so the one that finishes the last planned task
/// completes the sprint.
pub fn complete_if_done(state: &mut State, now: Timestamp) -> Option<Outcome> {
    let planned = state.sprint.planned();
    if state.sprint.status != SprintStatus::InProgress
        || planned.is_empty()
        || !planned.iter().all(|id| is_done(state, id))
    {
        return None;
    }
    state.sprint.status = SprintStatus::Completed;
    timeline_mut(&mut state.sprint).ended = Some(now);
    let mut outcome = Outcome::default();
    let detail = format!(
        "{}: {} planned tasks terminal",
        state.sprint.id,
        state.sprint.planned().len()
    );
    outcome.event(EventKind::SprintCompleted, "liza", None, Some(detail));
    Some(outcome)
}

/// `checkpoint`: IN_PROGRESS → CHECKPOINT (supervisors finish their step and wait).
pub fn checkpoint(
    state: &mut State,
    who: &Who,
    message: Option<&str>,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    // liza checkpoints by itself at the deadline and on a circuit-breaker match.
    if who.kind() != Kind::Supervisor {
        planner_or_human(who, "checkpoint the sprint")?;
    }
    require_sprint(
        state,
        SprintStatus::InProgress,
        "only a running sprint takes a checkpoint",
    )?;
    state.sprint.status = SprintStatus::Checkpoint;
    timeline_mut(&mut state.sprint).checkpoint_at = Some(now);
    let mut outcome = Outcome::default();
    outcome.event(
        EventKind::Checkpoint,
        &who.name(),
        None,
        message.map(str::to_owned),
    );
    Ok(outcome)
}

/// The automatic checkpoint at `sprint.timeline.deadline` (S): once per deadline — the
/// deadline it stopped for is remembered in `timeline.deadline_reached`, so a sprint a
/// person resumed past its deadline runs on until the deadline is moved.
pub fn checkpoint_at_deadline(
    state: &mut State,
    who: &Who,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let timeline = state.sprint.timeline.clone().unwrap_or_default();
    let Some(deadline) = timeline.deadline.filter(|d| *d <= now) else {
        return Err(Refusal::new(
            RuleId::SprintDeadline,
            "the sprint's deadline has not passed",
            "nothing to do",
        ));
    };
    let reached = deadline.to_string();
    if timeline
        .extra
        .get("deadline_reached")
        .and_then(Node::as_str)
        == Some(reached.as_str())
    {
        return Err(Refusal::new(
            RuleId::SprintDeadline,
            format!("the sprint already stopped for its deadline {deadline}"),
            "move sprint.timeline.deadline to stop at another time",
        ));
    }
    let message = format!("the sprint deadline ({deadline}) was reached");
    let outcome = checkpoint(state, who, Some(&message), now)?;
    timeline_mut(&mut state.sprint)
        .extra
        .insert("deadline_reached", Node::str(reached));
    Ok(outcome)
}

/// `resume [--decision D]`: CHECKPOINT → IN_PROGRESS, the decision recorded in
/// `sprint.retrospective`. Resuming a sprint that is only paused changes no status.
pub fn resume(
    state: &mut State,
    who: &Who,
    decision: Option<&str>,
    paused: bool,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    human(who, "resume the sprint")?;
    if let Some(d) = decision
        && !DECISIONS.contains(&d)
    {
        return Err(Refusal::new(
            RuleId::ResumeDecision,
            format!("decision {d:?} is not one of {}", DECISIONS.join(", ")),
            "choose one of the checkpoint decisions",
        ));
    }
    let mut detail = decision.map(str::to_owned);
    match state.sprint.status {
        SprintStatus::Checkpoint => {
            state.sprint.status = SprintStatus::InProgress;
            timeline_mut(&mut state.sprint).checkpoint_at = None;
        }
        SprintStatus::InProgress => {}
        // An abort is undone: the sprint (and the goal, if it was aborted with it) runs
        // again where it stopped.
        SprintStatus::Aborted
            if matches!(
                state.goal.status,
                None | Some(GoalStatus::InProgress | GoalStatus::Aborted)
            ) =>
        {
            state.sprint.status = SprintStatus::InProgress;
            timeline_mut(&mut state.sprint).ended = None;
            if state.goal.status == Some(GoalStatus::Aborted) {
                state.goal.status = Some(GoalStatus::InProgress);
            }
            detail = Some(detail.map_or("reopened after abort".into(), |d| {
                format!("{d}; reopened after abort")
            }));
        }
        // A finished sprint has nothing to resume but a pause raised on it.
        SprintStatus::Completed if paused => {}
        other => {
            return Err(Refusal::new(
                RuleId::SprintStatus,
                format!(
                    "the sprint is {}: there is nothing to resume",
                    other.as_str()
                ),
                "open the next sprint with `liza sprint next`, or the next goal with `liza goal next \"<goal>\"`",
            ));
        }
    }
    if let Some(d) = decision {
        record_decision(&mut state.sprint, d, &who.name(), now);
    }
    let mut outcome = Outcome::default();
    outcome.event(EventKind::Resumed, &who.name(), None, detail);
    Ok(outcome)
}

fn record_decision(sprint: &mut Sprint, decision: &str, by: &str, now: Timestamp) {
    let item = Node::new(Value::Map(vec![
        entry("timestamp", Node::str(now.to_string())),
        entry("decision", Node::str(decision)),
        entry("by", Node::str(by)),
    ]));
    let retro = sprint
        .retrospective
        .get_or_insert_with(|| Node::new(Value::Map(Vec::new())));
    if !matches!(retro.value, Value::Map(_)) {
        // Keep whatever a person wrote there, under `notes`.
        let old = std::mem::replace(retro, Node::new(Value::Map(Vec::new())));
        if let Value::Map(entries) = &mut retro.value {
            entries.push(entry("notes", old));
        }
    }
    if let Value::Map(entries) = &mut retro.value {
        match entries.iter_mut().find(|e| e.key == "decisions") {
            Some(Entry {
                value:
                    Node {
                        value: Value::Seq(items),
                        ..
                    },
                ..
            }) => items.push(item),
            Some(e) => e.value = Node::new(Value::Seq(vec![e.value.clone(), item])),
            None => entries.push(entry("decisions", Node::new(Value::Seq(vec![item])))),
        }
    }
}

fn entry(key: &str, value: Node) -> Entry {
    Entry {
        key: key.to_owned(),
        value,
        key_pos: Default::default(),
    }
}

/// `abort [--goal]`: the sprint (and the goal) → ABORTED; every supervisor exits.
pub fn abort(state: &mut State, who: &Who, goal: bool, now: Timestamp) -> Result<Outcome, Refusal> {
    human(who, "abort")?;
    if !matches!(
        state.sprint.status,
        SprintStatus::InProgress | SprintStatus::Checkpoint
    ) && !goal
    {
        return Err(Refusal::new(
            RuleId::SprintStatus,
            format!("the sprint is already {}", state.sprint.status.as_str()),
            "nothing is running",
        ));
    }
    if matches!(
        state.sprint.status,
        SprintStatus::InProgress | SprintStatus::Checkpoint
    ) {
        state.sprint.status = SprintStatus::Aborted;
        timeline_mut(&mut state.sprint).ended = Some(now);
    }
    if goal {
        if state
            .goal
            .status
            .is_some_and(|s| s != GoalStatus::InProgress)
        {
            return Err(Refusal::new(
                RuleId::GoalStatus,
                "the goal is not IN_PROGRESS",
                "nothing to abort; `liza goal next \"<goal>\"` starts the next goal",
            ));
        }
        state.goal.status = Some(GoalStatus::Aborted);
    }
    let mut outcome = Outcome::default();
    outcome.event(
        if goal {
            EventKind::GoalAborted
        } else {
            EventKind::SprintAborted
        },
        &who.name(),
        None,
        None,
    );
    Ok(outcome)
}

/// `goal complete`: the planner (or a person) declares the goal met; every live task must
/// be terminal.
pub fn goal_complete(state: &mut State, who: &Who, now: Timestamp) -> Result<Outcome, Refusal> {
    planner_or_human(who, "complete the goal")?;
    if state
        .goal
        .status
        .is_some_and(|s| s != GoalStatus::InProgress)
    {
        return Err(Refusal::new(
            RuleId::GoalStatus,
            format!(
                "the goal is {}",
                state.goal.status.map_or("", |s| s.as_str())
            ),
            "only a goal in progress is completed",
        ));
    }
    no_open_task(state, "finish, rescope or abandon them first")?;
    state.goal.status = Some(GoalStatus::Completed);
    if matches!(
        state.sprint.status,
        SprintStatus::InProgress | SprintStatus::Checkpoint
    ) {
        state.sprint.status = SprintStatus::Completed;
        timeline_mut(&mut state.sprint).ended = Some(now);
    }
    let mut outcome = Outcome::default();
    outcome.event(
        EventKind::GoalCompleted,
        &who.name(),
        None,
        Some(state.goal.id.clone()),
    );
    Ok(outcome)
}

/// `sprint next`: after a completed sprint, a new one with an empty scope; the previous
/// sprint's record is kept under `past_sprints`.
pub fn sprint_next(state: &mut State, who: &Who, now: Timestamp) -> Result<Outcome, Refusal> {
    planner_or_human(who, "open the next sprint")?;
    // An abort is a person's: only a person moves on from it (a planner mid-turn
    // would undo it).
    if state.sprint.status == SprintStatus::Aborted {
        human(who, "open the next sprint after an abort")?;
    }
    if !matches!(
        state.sprint.status,
        SprintStatus::Completed | SprintStatus::Aborted
    ) {
        require_sprint(
            state,
            SprintStatus::Completed,
            "the next sprint opens after every planned task is terminal, or after `liza abort`",
        )?;
    }
    if state
        .goal
        .status
        .is_some_and(|s| s != GoalStatus::InProgress)
    {
        return Err(Refusal::new(
            RuleId::GoalStatus,
            format!(
                "the goal is {}",
                state.goal.status.map_or("", |s| s.as_str())
            ),
            "start the next goal on this blackboard: `liza goal next \"<goal>\"`",
        ));
    }
    let next_id = next_sprint_id(&state.sprint.id);
    let previous = std::mem::replace(
        &mut state.sprint,
        Sprint::start(next_id.clone(), &state.goal.id, now),
    );
    let summary = Node::new(Value::Map(vec![
        entry("id", Node::str(previous.id.clone())),
        entry("status", Node::str(previous.status.as_str())),
        entry(
            "planned",
            Node::new(Value::Seq(
                previous
                    .planned()
                    .iter()
                    .map(|t| Node::str(t.as_str()))
                    .collect(),
            )),
        ),
        entry(
            "started",
            previous
                .timeline
                .as_ref()
                .and_then(|t| t.started)
                .map_or(Node::new(Value::Null), |t| Node::str(t.to_string())),
        ),
        entry(
            "ended",
            previous
                .timeline
                .as_ref()
                .and_then(|t| t.ended)
                .map_or(Node::new(Value::Null), |t| Node::str(t.to_string())),
        ),
    ]));
    push_extra(state, "past_sprints", summary);
    let mut outcome = Outcome::default();
    outcome.event(
        EventKind::SprintStarted,
        &who.name(),
        None,
        Some(format!("{next_id} after {}", previous.id)),
    );
    Ok(outcome)
}

/// `goal next "<description>" [--spec S]` (a person): the next goal on the same
/// blackboard, once the current one is COMPLETED or ABORTED — the next id (`goal-2`),
/// IN_PROGRESS, the previous goal summarised under the top-level `past_goals` list — and
/// the next sprint opened for it as `sprint next` does.
pub fn goal_next(
    state: &mut State,
    who: &Who,
    description: &str,
    spec_ref: &str,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    human(who, "start the next goal")?;
    let description = description.trim();
    if description.is_empty() {
        return Err(Refusal::new(
            RuleId::GoalText,
            "the goal is empty",
            "describe the next goal in one sentence: liza goal next \"Add CSV export\"",
        ));
    }
    let ended = state.goal.status;
    if !matches!(ended, Some(GoalStatus::Completed | GoalStatus::Aborted)) {
        return Err(Refusal::new(
            RuleId::GoalStatus,
            format!(
                "the goal {} is {}",
                state.goal.id,
                ended.map_or("IN_PROGRESS", |s| s.as_str())
            ),
            "finish it first: `liza goal complete` (every task terminal) or `liza abort --goal`",
        ));
    }
    no_open_task(
        state,
        "abandon them (`liza abandon <task> --reason …`) or finish them first: the next goal starts with no task of the last",
    )?;
    let previous = state.goal.clone();
    let summary = Node::new(Value::Map(vec![
        entry("id", Node::str(previous.id.clone())),
        entry("description", Node::str(previous.description.clone())),
        entry(
            "status",
            Node::str(previous.status.map_or("", |s| s.as_str())),
        ),
        entry(
            "spec_ref",
            previous
                .spec_ref
                .as_deref()
                .map_or(Node::new(Value::Null), Node::str),
        ),
    ]));
    push_extra(state, "past_goals", summary);
    let id = next_sprint_id(&previous.id);
    state.goal = Goal::start(
        id.clone(),
        description,
        spec_ref,
        format!(
            "Next goal after {} ({}). No tasks defined yet.",
            previous.id,
            previous.status.map_or("", |s| s.as_str())
        ),
        now,
    );
    let mut outcome = Outcome::default();
    outcome.event(
        EventKind::GoalStarted,
        &who.name(),
        None,
        Some(format!("{id} after {}: {description}", previous.id)),
    );
    outcome.merge(sprint_next(state, who, now)?);
    Ok(outcome)
}

/// Appends `item` to the top-level list `key` (`past_sprints`, `past_goals`).
fn push_extra(state: &mut State, key: &str, item: Node) {
    match state.extra.0.iter_mut().find(|e| e.key == key) {
        Some(Entry {
            value: Node {
                value: Value::Seq(items),
                ..
            },
            ..
        }) => items.push(item),
        _ => {
            state.extra.0.retain(|e| e.key != key);
            state
                .extra
                .0
                .push(entry(key, Node::new(Value::Seq(vec![item]))));
        }
    }
}

/// Refuses (`goal-open-tasks`, naming them) while any task of the goal is not terminal.
fn no_open_task(state: &State, hint: &str) -> Result<(), Refusal> {
    let open: Vec<&str> = state
        .tasks
        .iter()
        .filter(|t| !t.status.is_terminal())
        .map(|t| t.id.as_str())
        .collect();
    if open.is_empty() {
        return Ok(());
    }
    Err(Refusal::new(
        RuleId::GoalOpenTasks,
        format!(
            "tasks of {} are still open: {}",
            state.goal.id,
            open.join(", ")
        ),
        hint,
    ))
}

fn next_sprint_id(id: &str) -> String {
    match id.rsplit_once('-') {
        Some((stem, n)) if n.parse::<u64>().is_ok() => {
            format!("{stem}-{}", n.parse::<u64>().unwrap_or(0) + 1)
        }
        _ => format!("{id}-2"),
    }
}
