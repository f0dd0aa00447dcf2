//! What a person does from the dashboard: each action is the CLI command it mirrors —
//! the same operation, as the person (`Actor::Human`), its outcome said as the CLI says
//! it (its line with the revision, its warnings; or `error: …` with its hints). Nothing
//! an agent does is here.

use crate::blackboard::{Actor, TaskId};
use crate::error::{Diagnostic as _, ErrorClass};
use crate::ops::{self, OpsError, Project, ReleaseRole, Transition};

/// The actions, by their route's last segment (`POST /action/<name>`).
pub(crate) const NAMES: &[&str] = &[
    "pause",
    "resume",
    "abort",
    "checkpoint",
    "note",
    "unblock",
    "release-claim",
];

/// What an action did.
pub(crate) struct Outcome {
    pub class: Class,
    /// What the CLI prints for it: its line, or its refusal with hints.
    pub said: String,
    /// The command it was, as the person would have typed it.
    pub command: String,
}

/// How an action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Done,
    /// A rule refused it; nothing changed.
    Refused,
    /// Something else went wrong (the blackboard, git, a lock).
    Failed,
}

/// Runs action `name` with the form's `fields`; `None` when there is no such action.
pub(crate) fn run(project: &Project, name: &str, fields: &[(String, String)]) -> Option<Outcome> {
    // A field left empty is one not given, as an option left out.
    let field = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.trim().is_empty())
    };
    let flag = |key: &str| field(key).is_some_and(|v| v == "on" || v == "1" || v == "true");
    let actor = Actor::Human;
    let (command, result): (String, Result<String, OpsError>) = match name {
        "pause" => (
            "liza pause".into(),
            ops::pause(project, &actor)
                .map(|done| said(&done, "paused: no new agent runs until `liza resume`")),
        ),
        "resume" => {
            let decision = field("decision");
            (
                match decision {
                    Some(d) => format!("liza resume --decision {}", quoted(d)),
                    None => "liza resume".into(),
                },
                ops::resume(project, &actor, decision).map(|done| said(&done, "resumed")),
            )
        }
        "abort" => (
            "liza abort".into(),
            ops::abort(project, &actor, false).map(|done| said(&done, "aborted: supervisors stop")),
        ),
        "checkpoint" => {
            let message = field("message");
            (
                match message {
                    Some(m) => format!("liza checkpoint --message {}", quoted(m)),
                    None => "liza checkpoint".into(),
                },
                ops::checkpoint(project, &actor, message)
                    .map(|done| said(&done, "sprint at checkpoint; `liza resume` continues")),
            )
        }
        "note" => {
            let target = field("target").unwrap_or("all");
            let message = field("message").unwrap_or("");
            (
                format!("liza note {} {}", quoted(target), quoted(message)),
                ops::note(&project.store, &actor, target, message)
                    .map(|n| format!("{} added for {} (revision {})", n.id, n.target, n.revision)),
            )
        }
        "unblock" => {
            let task = field("task").unwrap_or("");
            let reason = field("reason").unwrap_or("");
            let reset = flag("reset_review_cycles");
            (
                format!(
                    "liza unblock {} --reason {}{}",
                    quoted(task),
                    quoted(reason),
                    if reset { " --reset-review-cycles" } else { "" }
                ),
                task_id(task).and_then(|id| {
                    ops::unblock(project, &actor, &id, reason, reset)
                        .map(|done| said(&done, &format!("task {id} unblocked")))
                }),
            )
        }
        "release-claim" => {
            let task = field("task").unwrap_or("");
            let reason = field("reason").unwrap_or("");
            let force = flag("force");
            let role_name = field("role").unwrap_or("reviewer");
            let role = match role_name {
                "coder" => Ok(ReleaseRole::Coder),
                "reviewer" => Ok(ReleaseRole::Reviewer),
                "both" => Ok(ReleaseRole::Both),
                other => Err(OpsError::refused(
                    crate::lifecycle::RuleId::Permission,
                    format!("{other:?} is not a role whose claim can be released"),
                    "choose coder, reviewer or both",
                )),
            };
            (
                format!(
                    "liza release-claim {} --role {} --reason {}{}",
                    quoted(task),
                    quoted(role_name),
                    quoted(reason),
                    if force { " --force" } else { "" }
                ),
                role.and_then(|role| {
                    let id = task_id(task)?;
                    ops::release_claim(project, &actor, &id, role, reason, force, &|_| {})
                        .map(|done| said(&done, &format!("claim on {id} released")))
                }),
            )
        }
        _ => return None,
    };
    Some(match result {
        Ok(said) => Outcome {
            class: Class::Done,
            said,
            command,
        },
        Err(e) => Outcome {
            class: if e.class() == ErrorClass::Refused {
                Class::Refused
            } else {
                Class::Failed
            },
            said: refusal(&e),
            command,
        },
    })
}

/// A committed transition as the CLI prints it (`cli::report::show`): its warnings, then
/// its line and the revision.
fn said<T>(done: &Transition<T>, line: &str) -> String {
    let mut text: String = done
        .outcome
        .warnings
        .iter()
        .map(|w| format!("warning: {w}\n"))
        .collect();
    text.push_str(&format!("{line} (revision {})", done.revision));
    text
}

/// A task id as the CLI reads it, refused with the CLI's words.
fn task_id(text: &str) -> Result<TaskId, OpsError> {
    TaskId::parse(text).map_err(|e| {
        OpsError::refused(
            crate::lifecycle::RuleId::TaskExists,
            e.to_string(),
            "task ids are 1-64 ASCII letters, digits, '-', '_' and '.', starting with a letter or digit",
        )
    })
}

/// A failure as the CLI prints it: `error: <what>` and its hints.
fn refusal(e: &OpsError) -> String {
    let mut text = format!("error: {e}");
    for hint in e.hints() {
        text.push_str("\nhint: ");
        text.push_str(&hint);
    }
    text
}

/// An argument as a shell would need it to be typed.
fn quoted(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:,".contains(&b))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_shown_as_they_would_be_typed() {
        assert_eq!(quoted("t-1"), "t-1");
        assert_eq!(quoted("use JSON"), "'use JSON'");
        assert_eq!(quoted("it's"), "'it'\\''s'");
        assert_eq!(quoted(""), "''");
    }
}
