//! Sprint and goal control: `goal complete`, `sprint next`, `pause`, `resume`, `abort`,
//! `checkpoint`, with their control files (`.liza/PAUSE`, `ABORT`, `CHECKPOINT`; presence
//! is what counts), written after the transaction commits.

use super::spec_committed::{SpecAt, Start, not_committed, spec_at, start_tip};
use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::EventKind;
use crate::blackboard::control::Control;
use crate::blackboard::{Actor, StoreError};
use crate::lifecycle::{self, Kind, Outcome, Refusal, RuleId};

fn write_control(project: &Project, control: Control, text: &str) -> Result<(), OpsError> {
    Ok(project.store.raise(control, text)?)
}

fn remove_control(project: &Project, control: Control) -> Result<bool, OpsError> {
    Ok(project.store.lower(control)?)
}

/// `goal complete`: the planner or a person declares the goal met, once every live task
/// is terminal; a sprint in progress or at a checkpoint completes with it.
pub fn goal_complete(project: &Project, actor: &Actor) -> Result<Transition<()>, OpsError> {
    transition(&project.store, actor, Authority::Caller, |s, w, n| {
        Ok((lifecycle::goal_complete(s, w, n)?, ()))
    })
}

/// `sprint next`; the finished sprint's terminal tasks then move to its archive.
pub fn sprint_next(project: &Project, actor: &Actor) -> Result<Transition<String>, OpsError> {
    let done = transition(&project.store, actor, Authority::Caller, |s, w, n| {
        let previous = s.sprint.id.clone();
        let outcome = lifecycle::sprint_next(s, w, n)?;
        Ok((outcome, (s.sprint.id.clone(), previous)))
    })?;
    after_next_sprint(project, actor, done)
}

/// `goal next "<description>" [--spec S]`: the next goal on this blackboard once the
/// current one ended (its spec by default the previous goal's), and its first sprint —
/// the previous sprint's terminal tasks archived as `sprint next` does. Returns the new
/// goal's id.
pub fn goal_next(
    project: &Project,
    actor: &Actor,
    description: &str,
    spec: Option<&std::path::Path>,
    cwd: &std::path::Path,
) -> Result<Transition<String>, OpsError> {
    let spec_ref = match spec {
        Some(path) => Some(super::init::resolve_spec(&project.root, cwd, Some(path))?),
        None => None,
    };
    if let Some(spec_ref) = &spec_ref {
        let config = project.store.snapshot()?.state.config;
        let repo = crate::git::Repo::open(&project.root)?;
        if let Some(tip) = start_tip(&project.root, &config)?
            && spec_at(&repo, &project.root, &tip, spec_ref) == SpecAt::Absent
        {
            let start = config
                .git_remote
                .as_deref()
                .map_or(Start::Local, Start::Remote);
            return Err(not_committed(
                spec_ref,
                config.integration_branch(),
                &tip,
                start,
            ));
        }
    }
    let done = transition(&project.store, actor, Authority::Caller, |s, w, n| {
        let previous = s.sprint.id.clone();
        let spec_ref = spec_ref
            .clone()
            .or_else(|| s.goal.spec_ref.clone())
            .unwrap_or_else(|| "specs/vision.md".into());
        let outcome = lifecycle::goal_next(s, w, description, &spec_ref, n)?;
        Ok((outcome, (s.sprint.id.clone(), previous)))
    })?;
    let goal = project.store.snapshot()?.state.goal.id;
    let done = after_next_sprint(project, actor, done)?;
    Ok(Transition {
        value: goal,
        outcome: done.outcome,
        revision: done.revision,
    })
}

/// What follows a new sprint's opening: the previous sprint's abort lowered (a pause
/// carries on, and is said) and its terminal tasks archived.
fn after_next_sprint(
    project: &Project,
    actor: &Actor,
    mut done: Transition<(String, String)>,
) -> Result<Transition<String>, OpsError> {
    let (next, previous) = done.value.clone();
    // The previous sprint's abort is over with it; a pause carries on, and is said.
    remove_control(project, Control::Abort)?;
    if project
        .store
        .control_flags()
        .is_ok_and(|f| f.is_raised(Control::Pause))
    {
        done.outcome.warnings.push(format!(
            "{next} is paused (.liza/PAUSE, raised before): no agent starts a run until `liza resume`"
        ));
    }
    // The new sprint is open either way; a failed move only leaves the tasks live.
    match super::archive_terminal(
        project,
        actor,
        Authority::Caller,
        &previous,
        super::ArchiveSelect::AllTerminal,
    ) {
        Ok(Some(archived)) => done.revision = archived.revision,
        Ok(None) => {}
        Err(e) => done.outcome.warnings.push(format!(
            "the terminal tasks of {previous} stay in state.yaml: {e}"
        )),
    }
    Ok(Transition {
        value: next,
        outcome: done.outcome,
        revision: done.revision,
    })
}

/// `checkpoint [--message M]`: sprint → CHECKPOINT, `.liza/CHECKPOINT` and
/// `.liza/sprint_summary.md`.
pub fn checkpoint(
    project: &Project,
    actor: &Actor,
    message: Option<&str>,
) -> Result<Transition<()>, OpsError> {
    checkpoint_as(project, actor, Authority::Caller, message)
}

/// The checkpoint liza takes itself when the circuit breaker found a pattern that needs a
/// person.
pub fn auto_checkpoint(project: &Project, message: &str) -> Result<Transition<()>, OpsError> {
    checkpoint_as(project, &Actor::Liza, Authority::Supervisor, Some(message))
}

/// The checkpoint at the sprint deadline (once per deadline; refused when not due).
pub fn deadline_checkpoint(project: &Project) -> Result<Transition<()>, OpsError> {
    let done = transition(
        &project.store,
        &Actor::Liza,
        Authority::Supervisor,
        |s, w, n| Ok((lifecycle::checkpoint_at_deadline(s, w, n)?, ())),
    )?;
    let message = done.outcome.events.first().and_then(|e| e.detail.clone());
    after_checkpoint(project, message.as_deref())?;
    Ok(done)
}

fn checkpoint_as(
    project: &Project,
    actor: &Actor,
    authority: Authority,
    message: Option<&str>,
) -> Result<Transition<()>, OpsError> {
    let done = transition(&project.store, actor, authority, |s, w, n| {
        Ok((lifecycle::checkpoint(s, w, message, n)?, ()))
    })?;
    after_checkpoint(project, message)?;
    Ok(done)
}

/// `.liza/CHECKPOINT` and `.liza/sprint_summary.md`, once the checkpoint is committed.
fn after_checkpoint(project: &Project, message: Option<&str>) -> Result<(), OpsError> {
    let now = crate::blackboard::Timestamp::now();
    write_control(
        project,
        Control::Checkpoint,
        &format!("{now}\n{}\n", message.unwrap_or("")),
    )?;
    // The summary describes the committed checkpoint; a failure to read it back only
    // costs the summary, never the checkpoint.
    match project.store.snapshot() {
        Ok(snapshot) => {
            let text = super::sprint_summary::render(&snapshot.state, message, now);
            let path = project.store.paths().dir.join("sprint_summary.md");
            std::fs::write(&path, text).map_err(|source| {
                OpsError::Store(StoreError::Io {
                    action: "write",
                    path: path.display().to_string(),
                    source,
                })
            })?;
        }
        Err(e) => tracing::warn!(error = %e, "checkpoint taken; could not write sprint_summary.md"),
    }
    Ok(())
}

/// `pause`: supervisors start no new runs while `.liza/PAUSE` exists.
pub fn pause(project: &Project, actor: &Actor) -> Result<Transition<()>, OpsError> {
    let done = transition(&project.store, actor, Authority::Caller, |_s, w, _n| {
        if w.kind() != Kind::Human {
            return Err(Refusal::new(
                RuleId::Permission,
                "only a person pauses the sprint",
                "unset LIZA_AGENT_ID",
            ));
        }
        let mut outcome = Outcome::default();
        outcome.event(EventKind::Paused, &w.name(), None, None);
        Ok((outcome, ()))
    })?;
    write_control(
        project,
        Control::Pause,
        &format!("{}\n", crate::blackboard::Timestamp::now()),
    )?;
    Ok(done)
}

/// `resume [--decision D]`: CHECKPOINT or ABORTED → IN_PROGRESS (an aborted goal with
/// it); the PAUSE, CHECKPOINT and ABORT flags lowered.
pub fn resume(
    project: &Project,
    actor: &Actor,
    decision: Option<&str>,
) -> Result<Transition<()>, OpsError> {
    let paused = project
        .store
        .control_flags()
        .is_ok_and(|f| f.is_raised(Control::Pause));
    let done = transition(&project.store, actor, Authority::Caller, |s, w, n| {
        Ok((lifecycle::resume(s, w, decision, paused, n)?, ()))
    })?;
    remove_control(project, Control::Pause)?;
    remove_control(project, Control::Checkpoint)?;
    remove_control(project, Control::Abort)?;
    Ok(done)
}

/// `abort [--goal]`: sprint (and goal) ABORTED and `.liza/ABORT`.
pub fn abort(project: &Project, actor: &Actor, goal: bool) -> Result<Transition<()>, OpsError> {
    let done = transition(&project.store, actor, Authority::Caller, |s, w, n| {
        Ok((lifecycle::abort(s, w, goal, n)?, ()))
    })?;
    write_control(
        project,
        Control::Abort,
        &format!("{}\n", crate::blackboard::Timestamp::now()),
    )?;
    Ok(done)
}
