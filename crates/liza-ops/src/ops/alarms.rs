//! Alarms (specs/operations.md *Watch and alarms*): one line per alarm in `.liza/alerts.log`,
//! `<ts> <LEVEL> <CATEGORY> <message> [key]`, raised once per occurrence across all
//! processes and restarts — the key (rule, task or agent, what identifies the occurrence)
//! is looked up in the log before an alarm fires, under an exclusive `flock` on the log,
//! so two watchers (or a watcher and a supervisor) never both fire the same alarm. The
//! rules are evaluated by `liza watch` (`crate::monitor`); supervisors and the store raise
//! the alarms they see themselves through the same function.

use std::path::Path;

use super::Project;
use crate::blackboard::store::alarm_log;
use crate::blackboard::{Store, StoreError, Timestamp};

/// The key of a crash loop completed by the run that ended at `ts`: the watcher's rule
/// and the supervisor that sees the loop itself raise the same alarm with it, so it
/// fires once.
pub fn crash_loop_key(agent: &str, task: Option<&str>, ts: Timestamp) -> String {
    format!("crash-loop:{agent}:{}:{ts}", task.unwrap_or("-"))
}

/// The key of a usage limit hit by the run that ended at `ts` (the watcher's and the
/// supervisor's, as [`crash_loop_key`]).
pub fn quota_key(agent: &str, ts: Timestamp) -> String {
    format!("quota:{agent}:{ts}")
}

/// How grave an alarm is: the `<LEVEL>` of its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    /// `WARN`.
    Warn,
    /// `ERROR`.
    Error,
}

impl Level {
    /// The level as its line writes it: `WARN` or `ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
}

/// One alarm: what the rule found, about which task or agent, and its occurrence key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Alarm {
    /// How grave it is.
    pub level: Level,
    /// What kind of alarm it is, in capitals (`TASK_BLOCKED`, `CRASH_LOOP`, …).
    pub category: String,
    /// What was found, for a person.
    pub message: String,
    /// The task it is about, if any.
    pub task: Option<String>,
    /// The agent it is about, if any.
    pub agent: Option<String>,
    /// The revision the watcher saw when it fired (the webhook's `revision`).
    pub revision: Option<u64>,
    /// The occurrence key: the rule, the task or agent, and what identifies the
    /// occurrence. An alarm fires once per key.
    pub key: String,
}

/// An alarm that was written to alerts.log by this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// The alarm.
    pub alarm: Alarm,
    /// When it was raised.
    pub ts: Timestamp,
    /// Its line in the log: `<ts> <LEVEL> <CATEGORY> <message> [key]`.
    pub line: String,
}

/// Raises the alarm unless one with `key` was raised before; returns the line written.
pub fn raise(
    project: &Project,
    level: Level,
    category: &str,
    message: &str,
    key: &str,
) -> Result<Option<String>, StoreError> {
    let alarm = Alarm {
        level,
        category: category.to_owned(),
        message: message.to_owned(),
        task: None,
        agent: None,
        revision: None,
        key: key.to_owned(),
    };
    let mut fired = fire(&project.store, vec![alarm])?;
    Ok(fired.pop().map(|f| f.line))
}

/// Raises every alarm of `alarms` whose key was not raised before (and is not repeated
/// within `alarms`) in the blackboard's alarm log — `.liza/alerts.log`, or the project's
/// `alarm/` keys in etcd, which every host sees; returns those raised.
pub fn fire(store: &Store, alarms: Vec<Alarm>) -> Result<Vec<Fired>, StoreError> {
    let (candidates, lines) = lines_of(alarms);
    let raised = store.append_alarms(&lines)?;
    Ok(keep_raised(candidates, raised))
}

/// [`fire`] into the alerts.log of the blackboard directory `liza_dir` (the file store's
/// own alarms, raised from inside it).
pub fn fire_in_dir(liza_dir: &Path, alarms: Vec<Alarm>) -> std::io::Result<Vec<Fired>> {
    let (candidates, lines) = lines_of(alarms);
    let raised = alarm_log::append_new(&liza_dir.join("alerts.log"), &lines)?;
    Ok(keep_raised(candidates, raised))
}

/// Each alarm (the first of each key) and its `(key, line)`:
/// `<ts> <LEVEL> <CATEGORY> <message> [key]`.
fn lines_of(alarms: Vec<Alarm>) -> (Vec<Fired>, Vec<(String, String)>) {
    let ts = Timestamp::now();
    let mut fired: Vec<Fired> = Vec::new();
    for alarm in alarms {
        if fired.iter().any(|f| f.alarm.key == alarm.key) {
            continue;
        }
        let line = format!(
            "{ts} {} {} {} [{}]",
            alarm.level.as_str(),
            alarm.category,
            one_line(&alarm.message),
            one_line(&alarm.key)
        );
        fired.push(Fired { alarm, ts, line });
    }
    let lines = fired
        .iter()
        .map(|f| (one_line(&f.alarm.key), f.line.clone()))
        .collect();
    (fired, lines)
}

fn keep_raised(candidates: Vec<Fired>, raised: Vec<bool>) -> Vec<Fired> {
    candidates
        .into_iter()
        .zip(raised)
        .filter_map(|(f, raised)| raised.then_some(f))
        .collect()
}

/// An alarm line of the log (`<ts> <LEVEL> <CATEGORY> <message> [key]`) as the alarm it
/// records: what a watcher delivers of the alarms other processes raised.
pub fn parse_line(line: &str) -> Option<Fired> {
    let (head, key) = line.trim_end().rsplit_once(" [")?;
    let key = key.strip_suffix(']')?;
    let mut parts = head.splitn(4, ' ');
    let ts = Timestamp::parse(parts.next()?).ok()?;
    let level = match parts.next()? {
        "WARN" => Level::Warn,
        "ERROR" => Level::Error,
        _ => return None,
    };
    let category = parts.next()?.to_owned();
    let message = parts.next().unwrap_or("").to_owned();
    Some(Fired {
        alarm: Alarm {
            level,
            category,
            message,
            task: None,
            agent: None,
            revision: None,
            key: key.to_owned(),
        },
        ts,
        line: line.trim_end().to_owned(),
    })
}

/// The key of an alarm line.
pub use crate::blackboard::store::alarm_log::key_of;

/// Counts of alarms by category (the metrics' `alarms by category`).
pub fn counts_by_category(store: &Store) -> std::collections::BTreeMap<String, u64> {
    let mut counts = std::collections::BTreeMap::new();
    for line in store.alarm_lines().unwrap_or_default() {
        // `<ts> <LEVEL> <CATEGORY> …`
        if let Some(category) = line.split(' ').nth(2) {
            *counts.entry(category.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Whether the cause of an alarm line (`… [key]`) is still there in `state`
/// (specs/operations.md *Watch and alarms*): an alarm about a task clears once the task
/// has left the status it was raised for, or is gone; a loop or limit about a task, once
/// the task ended. Every other alarm stays: alerts.log keeps them all.
pub fn still_current(line: &str, state: &crate::blackboard::model::State) -> bool {
    use crate::blackboard::model::TaskStatus as S;
    let Some((_, key)) = line.trim_end().rsplit_once(" [") else {
        return true;
    };
    let mut parts = key.trim_end_matches(']').splitn(3, ':');
    let (Some(rule), Some(task)) = (parts.next(), parts.next()) else {
        return true;
    };
    let Ok(id) = crate::blackboard::TaskId::parse(task) else {
        return true;
    };
    // A lease alarm names the lease that lapsed: renewed (or released) since, it is over.
    if rule == "task-lease" || rule == "review-lease" {
        let occurrence = parts.next().unwrap_or("");
        return state.task(&id).is_some_and(|t| {
            let lease = if rule == "task-lease" {
                (t.status == S::Claimed)
                    .then_some(t.lease_expires)
                    .flatten()
            } else {
                t.reviewing_by.as_ref().and(t.review_lease_expires)
            };
            lease.is_some_and(|l| l.to_string() == occurrence)
        });
    }
    let raised_in: Option<&[S]> = match rule {
        "blocked" => Some(&[S::Blocked]),
        "integration-failed" => Some(&[S::IntegrationFailed]),
        "orphaned-rejected" => Some(&[S::Rejected]),
        "stale-draft" => Some(&[S::Draft]),
        "hypothesis" | "review-loop" | "iterations" | "repeated-rejection" => None,
        _ => return true,
    };
    let occurrence = parts.next();
    state.task(&id).is_some_and(|t| match raised_in {
        // Raised when the task entered that status: a later stay there is another
        // occurrence, with an alarm of its own.
        Some(statuses) => {
            let entered = t.status_changed_at.or(t.created).map(|at| at.to_string());
            statuses.contains(&t.status)
                && (!matches!(
                    rule,
                    "blocked" | "integration-failed" | "orphaned-rejected" | "stale-draft"
                ) || occurrence.is_none_or(|o| entered.as_deref().is_none_or(|e| e == o)))
        }
        None => !t.status.is_terminal(),
    })
}
