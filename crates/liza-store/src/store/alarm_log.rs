//! The alarms of a blackboard on files: `.liza/alerts.log`, one line per alarm, its
//! occurrence key last (`… [key]`). A line is appended only when no line has its key yet,
//! under an exclusive `flock` on the log, so two processes (two watchers, a watcher and a
//! supervisor) never both raise one alarm (specs/operations.md *Watch and alarms*).

use std::collections::HashSet;
use std::path::Path;

/// Appends each `(key, line)` whose key no line has yet; whether each was appended.
pub fn append_new(path: &Path, lines: &[(String, String)]) -> std::io::Result<Vec<bool>> {
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    super::locked_append::append(path, |text| {
        let mut known: HashSet<&str> = text.lines().filter_map(key_of).collect();
        let mut out = String::new();
        let mut appended = Vec::with_capacity(lines.len());
        for (key, line) in lines {
            let new = known.insert(key);
            if new {
                out.push_str(line);
                out.push('\n');
            }
            appended.push(new);
        }
        (out, appended)
    })
}

/// Every line of the log, oldest first (none when there is no log).
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The key of an alarm line (the text between the last ` [` and the final `]`).
pub fn key_of(line: &str) -> Option<&str> {
    let line = line.strip_suffix(']')?;
    line.rfind(" [").map(|i| &line[i + 2..])
}
