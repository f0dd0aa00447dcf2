//! Alarms (specs/operations.md *Watch and alarms*): one line per alarm in `.liza/alerts.log`,
//! `<ts> <LEVEL> <CATEGORY> <message> [key]`, raised once per occurrence across all
//! processes and restarts — the key (rule, task or agent, what identifies the occurrence)
//! is looked up in the log before an alarm fires, under an exclusive `flock` on the log,
//! so two watchers (or a watcher and a supervisor) never both fire the same alarm. The
//! rules are evaluated by `liza watch` (`crate::monitor`); supervisors and the store raise
//! the alarms they see themselves through the same function.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use super::Project;
use crate::blackboard::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Warn,
    Error,
}

impl Level {
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
    pub level: Level,
    pub category: String,
    pub message: String,
    pub task: Option<String>,
    pub agent: Option<String>,
    /// The revision the watcher saw when it fired (the webhook's `revision`).
    pub revision: Option<u64>,
    pub key: String,
}

/// An alarm that was written to alerts.log by this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    pub alarm: Alarm,
    pub ts: Timestamp,
    pub line: String,
}

/// Appends the alarm unless one with `key` was raised before; returns the line written.
pub fn raise(
    project: &Project,
    level: Level,
    category: &str,
    message: &str,
    key: &str,
) -> std::io::Result<Option<String>> {
    raise_in(&project.store.paths().dir, level, category, message, key)
}

/// [`raise`] for the blackboard directory `liza_dir`.
pub fn raise_in(
    liza_dir: &Path,
    level: Level,
    category: &str,
    message: &str,
    key: &str,
) -> std::io::Result<Option<String>> {
    let alarm = Alarm {
        level,
        category: category.to_owned(),
        message: message.to_owned(),
        task: None,
        agent: None,
        revision: None,
        key: key.to_owned(),
    };
    let mut fired = fire(liza_dir, vec![alarm])?;
    Ok(fired.pop().map(|f| f.line))
}

/// Writes every alarm of `alarms` whose key is not yet in alerts.log (and not repeated
/// within `alarms`), all under one exclusive lock of the log; returns those written.
pub fn fire(liza_dir: &Path, alarms: Vec<Alarm>) -> std::io::Result<Vec<Fired>> {
    if alarms.is_empty() {
        return Ok(Vec::new());
    }
    let path = liza_dir.join("alerts.log");
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(&path)?;
    file.lock()?;
    let result = fire_locked(&mut file, alarms);
    let _ = file.unlock();
    result
}

fn fire_locked(file: &mut File, alarms: Vec<Alarm>) -> std::io::Result<Vec<Fired>> {
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let mut known: HashSet<&str> = text.lines().filter_map(key_of).collect();
    let mut out = String::new();
    let mut fired = Vec::new();
    let ts = Timestamp::now();
    for alarm in alarms {
        if known.contains(alarm.key.as_str())
            || fired.iter().any(|f: &Fired| f.alarm.key == alarm.key)
        {
            continue;
        }
        let line = format!(
            "{ts} {} {} {} [{}]",
            alarm.level.as_str(),
            alarm.category,
            one_line(&alarm.message),
            one_line(&alarm.key)
        );
        out.push_str(&line);
        out.push('\n');
        fired.push(Fired { alarm, ts, line });
    }
    known.clear();
    if !out.is_empty() {
        file.write_all(out.as_bytes())?;
        file.sync_data()?;
    }
    Ok(fired)
}

/// The key of an alerts.log line (the text between the last `[` and the final `]`).
pub fn key_of(line: &str) -> Option<&str> {
    let line = line.strip_suffix(']')?;
    line.rfind(" [").map(|i| &line[i + 2..])
}

/// Counts of alerts.log lines by category (the metrics' `alarms by category`).
pub fn counts_by_category(liza_dir: &Path) -> std::collections::BTreeMap<String, u64> {
    let mut counts = std::collections::BTreeMap::new();
    let text = std::fs::read_to_string(liza_dir.join("alerts.log")).unwrap_or_default();
    for line in text.lines() {
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
