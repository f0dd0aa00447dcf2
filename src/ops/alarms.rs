//! Alarms (operations.md *Watch and alarms*): one line per alarm in `.liza/alerts.log`,
//! `<ts> <LEVEL> <CATEGORY> <message> [key]`, raised once per occurrence across all
//! processes and restarts — the key (rule, task or agent, the revision that created the
//! condition) is looked up in the log before an alarm fires. The full rule set and the
//! webhook (`webhook.rs`) is driven by `liza watch`.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use super::Project;
use crate::blackboard::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Warn,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
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
    let path = liza_dir.join("alerts.log");
    let marker = format!("[{key}]");
    if std::fs::read_to_string(&path).is_ok_and(|log| log.lines().any(|l| l.ends_with(&marker))) {
        return Ok(None);
    }
    let message: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = format!(
        "{} {} {} {} {marker}",
        Timestamp::now(),
        level.as_str(),
        category,
        message
    );
    let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    Ok(Some(line))
}
