//! Debug artifacts of one built-in run (specs/builtin-agent.md *Calling the model*):
//! `.liza/agent-outputs/<agent>-<what>-<ts>/` with the prompt, the raw response, the parsed
//! result, and the validation mode and errors of each attempt — each file bounded in size
//! and scrubbed of secrets. The raw model content lives here and nowhere else.

use std::path::{Path, PathBuf};

use crate::llm::scrub::Scrubber;
use crate::llm::text::bounded;

/// The largest artifact file kept, in bytes.
pub const MAX_ARTIFACT_BYTES: usize = 256 * 1024;

/// The directory of one run's debug artifacts, and the scrubber for what goes in it.
pub struct Artifacts {
    dir: PathBuf,
    scrubber: Scrubber,
}

impl Artifacts {
    /// The artifacts of `agent` working on `what` (a task id, or `turn`), in a directory
    /// named with the time now under `liza_dir`'s `agent-outputs/`; made at the first
    /// write.
    pub fn new(liza_dir: &Path, agent: &str, what: &str, scrubber: Scrubber) -> Artifacts {
        let ts = chrono::Utc::now().format("%Y%m%dT%H%M%S%3fZ");
        Artifacts {
            dir: liza_dir
                .join("agent-outputs")
                .join(format!("{agent}-{what}-{ts}")),
            scrubber,
        }
    }

    /// Writes `name` (e.g. `attempt-1-response.txt`); failures are logged, never fatal.
    pub fn write(&self, name: &str, text: &str) {
        let text = bounded(&self.scrubber.scrub(text), MAX_ARTIFACT_BYTES);
        let written = std::fs::create_dir_all(&self.dir)
            .and_then(|_| std::fs::write(self.dir.join(name), text));
        if let Err(err) = written {
            tracing::warn!(%err, dir = %self.dir.display(), "could not write a debug artifact");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_are_bounded_and_scrubbed() {
        let dir = tempfile::tempdir().unwrap();
        let a = Artifacts::new(dir.path(), "coder-1", "t-1", Scrubber::default());
        a.write(
            "response.txt",
            &format!(
                "sk-abcdefghijklmnopqrstuvwx {}",
                "y".repeat(MAX_ARTIFACT_BYTES * 2)
            ),
        );
        let text = std::fs::read_to_string(a.dir.join("response.txt")).unwrap();
        assert!(text.starts_with("[REDACTED] yyy"));
        assert!(text.len() < MAX_ARTIFACT_BYTES + 100);
        assert!(a.dir.starts_with(dir.path().join("agent-outputs")));
    }
}
