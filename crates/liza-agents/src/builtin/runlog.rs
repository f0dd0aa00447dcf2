//! The built-in agent's run log (specs/builtin-agent.md *Run log*): JSON lines in
//! `.liza/runs/<date>.log.jsonl`, `{ts, agent, role, task, type, data}`, appended one
//! whole line per write and never rewritten; text fields bounded to 4000 characters and
//! scrubbed of secrets.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::llm::scrub::Scrubber;

/// The longest text field kept, in characters.
pub const FIELD_CHARS: usize = 4000;

/// The run log of one run: who writes, for which task, and the scrubber for its fields.
pub struct RunLog {
    dir: PathBuf,
    agent: String,
    role: String,
    task: Option<String>,
    scrubber: Scrubber,
}

impl RunLog {
    /// The log of `agent` in `role` working on `task`, appended to under `liza_dir`'s
    /// `runs/`.
    pub fn new(
        liza_dir: &std::path::Path,
        agent: &str,
        role: &str,
        task: Option<&str>,
        scrubber: Scrubber,
    ) -> RunLog {
        RunLog {
            dir: liza_dir.join("runs"),
            agent: agent.to_owned(),
            role: role.to_owned(),
            task: task.map(str::to_owned),
            scrubber,
        }
    }

    /// Appends one entry; `kind` is `plan`, `patch`, `test_result`, `verdict` or `error`
    /// (or another step of the run). A failure to write is logged, never fatal.
    pub fn append(&self, kind: &str, data: Value) {
        let now = chrono::Utc::now();
        let entry = json!({
            "ts": now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "agent": self.agent,
            "role": self.role,
            "task": self.task,
            "type": kind,
            "data": self.bounded(data),
        });
        let path = self
            .dir
            .join(format!("{}.log.jsonl", now.format("%Y-%m-%d")));
        let mut line = entry.to_string();
        line.push('\n');
        let written = std::fs::create_dir_all(&self.dir).and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(line.as_bytes()))
        });
        if let Err(err) = written {
            tracing::warn!(%err, path = %path.display(), "could not append to the run log");
        }
    }

    fn bounded(&self, value: Value) -> Value {
        match value {
            Value::String(s) => {
                let s = self.scrubber.scrub(&s);
                if s.chars().count() > FIELD_CHARS {
                    let mut cut: String = s.chars().take(FIELD_CHARS - 1).collect();
                    cut.push('…');
                    Value::String(cut)
                } else {
                    Value::String(s)
                }
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.bounded(v)).collect())
            }
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, self.bounded(v))).collect())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_appended_bounded_and_scrubbed() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::new(
            dir.path(),
            "coder-1",
            "coder",
            Some("t-1"),
            Scrubber::new(["canary-12345678".to_owned()]),
        );
        log.append(
            "patch",
            json!({"files": ["a.rs"], "note": "x".repeat(5000)}),
        );
        log.append("error", json!({"reason": "key canary-12345678 leaked"}));
        let files: Vec<_> = std::fs::read_dir(dir.path().join("runs"))
            .unwrap()
            .collect();
        assert_eq!(files.len(), 1);
        let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["type"], "patch");
        assert_eq!(lines[0]["task"], "t-1");
        assert_eq!(
            lines[0]["data"]["note"].as_str().unwrap().chars().count(),
            FIELD_CHARS
        );
        assert!(!text.contains("canary-12345678"));
    }
}
