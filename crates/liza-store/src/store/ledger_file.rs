//! The ledger of a blackboard on files: `.liza/ledger.jsonl`, one JSON line per agent run
//! (specs/ledger.md). An entry is appended only when no line has its run yet, under an
//! exclusive `flock` on the file, so a retried append never counts a run twice; a line
//! torn by a crash is ended before the next is written, and skipped by readers.

use std::path::Path;

use liza_model::ledger::{self, LedgerEntry};

/// Appends each entry whose run no line has yet; whether each was appended.
pub fn append_new(path: &Path, entries: &[LedgerEntry]) -> std::io::Result<Vec<bool>> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    super::locked_append::append(path, |text| {
        let mut out = String::new();
        if !text.is_empty() && !text.ends_with('\n') {
            out.push('\n');
        }
        let mut appended = Vec::with_capacity(entries.len());
        let mut known = std::collections::HashSet::new();
        for entry in entries {
            // Every line starts with its run: `{"run":"<id>",`.
            let start = format!("{{\"run\":{},", serde_json::Value::from(entry.run.as_str()));
            let new =
                known.insert(entry.run.as_str()) && !text.lines().any(|l| l.starts_with(&start));
            if new {
                out.push_str(&entry.to_line());
                out.push('\n');
            }
            appended.push(new);
        }
        if !appended.contains(&true) {
            // Nothing new: a torn line is ended by the next append that writes.
            out.clear();
        }
        (out, appended)
    })
}

/// Every entry, oldest first (none when there is no ledger).
pub fn read(path: &Path) -> std::io::Result<Vec<LedgerEntry>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(ledger::parse_jsonl(&String::from_utf8_lossy(&bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    fn entry(run: &str) -> LedgerEntry {
        LedgerEntry {
            run: run.into(),
            agent: "coder-1".into(),
            role: "coder".into(),
            task: Some("t-1".into()),
            sprint: None,
            backend: "claude".into(),
            started: "2026-11-29T10:00:00Z".into(),
            ended: "2026-11-29T10:00:01Z".into(),
            wall_ms: 1000,
            exit_class: "success".into(),
            models: Vec::new(),
            approximate: false,
        }
    }

    #[test]
    fn a_run_is_appended_once_and_a_torn_line_is_ended_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.jsonl");
        assert_eq!(append_new(&path, &[entry("r1")]).unwrap(), [true]);
        assert_eq!(
            append_new(&path, &[entry("r1"), entry("r2"), entry("r2")]).unwrap(),
            [false, true, false]
        );
        // A crash mid-line, inside a character.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"run\":\"r3\",\"agent\":\"\xc3").unwrap();
        assert_eq!(append_new(&path, &[entry("r4")]).unwrap(), [true]);
        let runs: Vec<String> = read(&path).unwrap().into_iter().map(|e| e.run).collect();
        assert_eq!(runs, ["r1", "r2", "r4"]);
    }
}
