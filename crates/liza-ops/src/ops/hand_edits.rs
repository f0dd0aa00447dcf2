//! The hand-edit policy the store reconciles with (specs/blackboard.md *Hand edits*,
//! specs/lifecycle.md: a status change by hand is accepted only as the transition table allows
//! a person, or as a forced move to BLOCKED or ABANDONED), and the alarms a hand edit
//! raises: rejected (each reason, with line and column for broken files), or made while
//! an agent was running (agents must not edit the blackboard directly).

use std::path::{Path, PathBuf};

use std::sync::mpsc::Sender;

use super::alarms::{Alarm, Fired, Level, fire_in_dir};
use crate::blackboard::model::{AgentStatus, State, TaskStatus};
use crate::blackboard::store::hand_edit::{HandEditOutcome, HandEditPolicy};
use crate::lifecycle::table::human_may_move;

/// The lifecycle's rules for hand edits, and where their alarms go.
pub(super) struct HandEditRules {
    liza_dir: PathBuf,
    /// Where the alarms this process raised go besides alerts.log (`liza watch` shows
    /// them like its own).
    forward: Option<Sender<Fired>>,
}

impl HandEditRules {
    pub(super) fn new(liza_dir: PathBuf) -> HandEditRules {
        HandEditRules {
            liza_dir,
            forward: None,
        }
    }

    pub(super) fn forwarding(mut self, to: Sender<Fired>) -> HandEditRules {
        self.forward = Some(to);
        self
    }

    fn raise(
        &self,
        level: Level,
        category: &str,
        message: String,
        key: String,
    ) -> std::io::Result<()> {
        let alarm = Alarm {
            level,
            category: category.to_owned(),
            message,
            task: None,
            agent: None,
            revision: None,
            key,
        };
        let fired = fire_in_dir(&self.liza_dir, vec![alarm])?;
        if let Some(to) = &self.forward {
            for f in fired {
                let _ = to.send(f);
            }
        }
        Ok(())
    }
}

impl HandEditPolicy for HandEditRules {
    fn forbidden_changes(&self, before: &State, after: &State) -> Vec<String> {
        let mut forbidden = Vec::new();
        for task in &after.tasks {
            match before.task(&task.id) {
                Some(old) if !human_may_move(old.status, task.status) => forbidden.push(format!(
                    "{}: {} → {} is not a move a person may make (lifecycle.md); use the liza command for it, or set BLOCKED or ABANDONED",
                    task.id,
                    old.status.as_str(),
                    task.status.as_str()
                )),
                None if task.status != TaskStatus::Draft => forbidden.push(format!(
                    "{}: a task added by hand starts as DRAFT (it is {}); finalize it with `liza finalize-task {}`",
                    task.id,
                    task.status.as_str(),
                    task.id
                )),
                _ => {}
            }
        }
        if let Some(problem) = integration_checked_out(&self.liza_dir, before, after) {
            forbidden.push(problem);
        }
        forbidden
    }

    fn reconciled(&self, outcome: &HandEditOutcome) {
        let raised = match outcome {
            HandEditOutcome::Applied {
                revision,
                summary,
                state,
                ..
            } => {
                let running = running_agents(state);
                if running.is_empty() {
                    return;
                }
                self.raise(
                    Level::Warn,
                    "HAND_EDIT_DURING_RUN",
                    format!(
                        "state.yaml was edited by hand while {} ran (revision {revision}: {summary}); agents must use liza commands, never edit the blackboard",
                        running.join(", ")
                    ),
                    format!("hand-edit-during-run:{revision}"),
                )
            }
            HandEditOutcome::Rejected {
                revision,
                why,
                kept_as,
            } => {
                let kept = kept_as.as_deref().unwrap_or("(could not be kept)");
                if let Ok(mut told) = SET_ASIDE.lock() {
                    told.push(format!(
                        "a hand edit of .liza/state.yaml was set aside and revision {revision} restored; the edited file is kept as {kept}:\n  {}\nfix it there, then copy it back or redo the change with `liza edit`",
                        why.lines(".liza/state.yaml").join("\n  ")
                    ));
                }
                self.raise(
                    Level::Error,
                    "HAND_EDIT_REJECTED",
                    format!(
                        "a hand edit of state.yaml was not applied and revision {revision} was restored; your file is {kept}: {}",
                        why.lines(".liza/state.yaml").join("; ")
                    ),
                    format!("hand-edit-rejected:{kept}"),
                )
            }
        };
        if let Err(e) = raised {
            tracing::warn!(error = %e, "could not write .liza/alerts.log");
        }
    }
}

/// The hand edits this process set aside, for the person at its terminal: a command
/// says so on stderr when it ends ([`take_set_aside`]), a supervisor on its next report
/// (specs/blackboard.md *Hand edits*). Filled under the state lock, printed outside it.
static SET_ASIDE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// What `SET_ASIDE` holds, emptied.
pub fn take_set_aside() -> Vec<String> {
    SET_ASIDE
        .lock()
        .map(|mut told| std::mem::take(&mut *told))
        .unwrap_or_default()
}

/// A new `config.integration_branch` that a checkout of this repository has checked out:
/// liza would move a branch under someone's files. `liza init` refuses it; so is a hand
/// edit (or `liza edit`) that sets it (specs/git.md *Layout*).
fn integration_checked_out(liza_dir: &Path, before: &State, after: &State) -> Option<String> {
    let branch = after.config.integration_branch();
    if branch == before.config.integration_branch() {
        return None;
    }
    let root = liza_dir.parent()?;
    // HEAD files read as files: this runs under the state lock, where git may not.
    let path = crate::git::checkouts::on_branch_from_root(root, branch)
        .into_iter()
        .next()?;
    Some(format!(
        "config.integration_branch: {branch} is checked out in {}; liza merges approved work into the integration branch and never moves a branch under someone's checkout — choose a branch nobody has checked out",
        path.display()
    ))
}

/// Agents working or reviewing right now.
fn running_agents(state: &State) -> Vec<String> {
    state
        .agents
        .iter()
        .filter(|(_, a)| matches!(a.status, AgentStatus::Working | AgentStatus::Reviewing))
        .map(|(id, _)| id.to_string())
        .collect()
}
