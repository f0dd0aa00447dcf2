//! Sprint and goal control: `goal complete`, `sprint next`, `pause`, `resume`, `abort`,
//! `checkpoint`, with their control files (`.liza/PAUSE`, `ABORT`, `CHECKPOINT`; presence
//! is what counts), written after the transaction commits.

use super::{Authority, OpsError, Project, Transition, transition};
use crate::blackboard::{Actor, StoreError};
use crate::lifecycle::{self, Kind, Outcome, Refusal};

fn write_control(project: &Project, name: &str, text: &str) -> Result<(), OpsError> {
    let path = project.store.paths().control(name);
    std::fs::write(&path, text).map_err(|source| {
        OpsError::Store(StoreError::Io {
            action: "write",
            path: path.display().to_string(),
            source,
        })
    })
}

fn remove_control(project: &Project, name: &str) -> Result<bool, OpsError> {
    let path = project.store.paths().control(name);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(OpsError::Store(StoreError::Io {
            action: "remove",
            path: path.display().to_string(),
            source,
        })),
    }
}

pub fn goal_complete(project: &Project, actor: &Actor) -> Result<Transition<()>, OpsError> {
    transition(&project.store, actor, Authority::Caller, |s, w, n| {
        Ok((lifecycle::goal_complete(s, w, n)?, ()))
    })
}

pub fn sprint_next(project: &Project, actor: &Actor) -> Result<Transition<String>, OpsError> {
    transition(&project.store, actor, Authority::Caller, |s, w, n| {
        let outcome = lifecycle::sprint_next(s, w, n)?;
        Ok((outcome, s.sprint.id.clone()))
    })
}

/// `checkpoint [--message M]`: sprint → CHECKPOINT and `.liza/CHECKPOINT`.
pub fn checkpoint(
    project: &Project,
    actor: &Actor,
    message: Option<&str>,
) -> Result<Transition<()>, OpsError> {
    let done = transition(&project.store, actor, Authority::Caller, |s, w, n| {
        Ok((lifecycle::checkpoint(s, w, message, n)?, ()))
    })?;
    let at = done
        .outcome
        .events
        .first()
        .map(|_| crate::blackboard::Timestamp::now())
        .unwrap_or_else(crate::blackboard::Timestamp::now);
    write_control(
        project,
        "CHECKPOINT",
        &format!("{at}\n{}\n", message.unwrap_or("")),
    )?;
    Ok(done)
}

/// `pause`: supervisors start no new runs while `.liza/PAUSE` exists.
pub fn pause(project: &Project, actor: &Actor) -> Result<Transition<()>, OpsError> {
    let done = transition(&project.store, actor, Authority::Caller, |_s, w, _n| {
        if w.kind() != Kind::Human {
            return Err(Refusal::new(
                "permission",
                "only a person pauses the sprint",
                "unset LIZA_AGENT_ID",
            ));
        }
        let mut outcome = Outcome::default();
        outcome.event("paused", &w.name(), None, None);
        Ok((outcome, ()))
    })?;
    write_control(
        project,
        "PAUSE",
        &format!("{}\n", crate::blackboard::Timestamp::now()),
    )?;
    Ok(done)
}

/// `resume [--decision D]`: CHECKPOINT → IN_PROGRESS; PAUSE and CHECKPOINT files removed.
pub fn resume(
    project: &Project,
    actor: &Actor,
    decision: Option<&str>,
) -> Result<Transition<()>, OpsError> {
    let done = transition(&project.store, actor, Authority::Caller, |s, w, n| {
        Ok((lifecycle::resume(s, w, decision, n)?, ()))
    })?;
    remove_control(project, "PAUSE")?;
    remove_control(project, "CHECKPOINT")?;
    Ok(done)
}

/// `abort [--goal]`: sprint (and goal) ABORTED and `.liza/ABORT`.
pub fn abort(project: &Project, actor: &Actor, goal: bool) -> Result<Transition<()>, OpsError> {
    let done = transition(&project.store, actor, Authority::Caller, |s, w, n| {
        Ok((lifecycle::abort(s, w, goal, n)?, ()))
    })?;
    write_control(
        project,
        "ABORT",
        &format!("{}\n", crate::blackboard::Timestamp::now()),
    )?;
    Ok(done)
}
