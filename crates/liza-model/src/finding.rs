//! Findings: what validation (and decoding) reports about a blackboard, each with the
//! rule it breaks, the field path, the task or agent concerned, and where it is in the file.

use std::fmt;

use serde::{Serialize, Serializer};

use super::node::{Node, Pos, Value};

/// How bad a finding is: an error makes the file invalid (exit 1); a warning does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The file is invalid.
    Error,
    /// Worth a look; the file stays valid.
    Warning,
}

/// One step of a path into the document.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// A path like `tasks[3].lease_expires` or `agents.coder-1.status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldPath(pub Vec<Seg>);

impl FieldPath {
    /// The empty path: the whole document.
    pub fn root() -> FieldPath {
        FieldPath(Vec::new())
    }

    /// This path, then mapping key `key`.
    pub fn key(mut self, key: &str) -> FieldPath {
        self.0.push(Seg::Key(key.to_owned()));
        self
    }

    /// This path, then list index `index`.
    pub fn index(mut self, index: usize) -> FieldPath {
        self.0.push(Seg::Index(index));
        self
    }

    /// The position of the deepest node of this path that exists in `root` (the key's
    /// position for a mapping entry, so a finding points at the line that names it).
    pub fn locate(&self, root: &Node) -> Pos {
        let mut node = root;
        let mut pos = root.pos;
        for seg in &self.0 {
            match (seg, &node.value) {
                (Seg::Key(k), Value::Map(entries)) => match entries.iter().find(|e| &e.key == k) {
                    Some(entry) => {
                        pos = entry.key_pos;
                        node = &entry.value;
                    }
                    None => break,
                },
                (Seg::Index(i), Value::Seq(items)) => match items.get(*i) {
                    Some(item) => {
                        pos = item.pos;
                        node = item;
                    }
                    None => break,
                },
                _ => break,
            }
        }
        pos
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(document)");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

impl Serialize for FieldPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One problem found in a blackboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// The validation rule of specs/blackboard.md (1–12), or `None` for schema checks outside
    /// them (a field of the wrong type, a required field missing).
    pub rule: Option<u8>,
    /// A stable name of the check, e.g. `claimed-worktree-missing`.
    pub check: &'static str,
    /// Where in the document, e.g. `tasks[3].lease_expires`.
    pub path: FieldPath,
    /// The task or agent the finding is about.
    pub id: Option<String>,
    /// What is wrong, in a sentence.
    pub message: String,
    /// How to fix it, when there is more to say than the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// 1-based; 0 when the position is not known (the finding was not located).
    pub line: u32,
    /// 1-based; 0 when the position is not known.
    pub column: u32,
}

impl Finding {
    /// `path: message`, without the severity and position (a log entry's problem).
    pub fn path_and_message(&self) -> String {
        format!("{}: {}", self.path, self.message)
    }

    /// An error, not yet located.
    pub fn error(rule: Option<u8>, check: &'static str, path: FieldPath, message: String) -> Self {
        Finding {
            severity: Severity::Error,
            rule,
            check,
            path,
            id: None,
            message,
            hint: None,
            line: 0,
            column: 0,
        }
    }

    /// A warning, not yet located.
    pub fn warning(
        rule: Option<u8>,
        check: &'static str,
        path: FieldPath,
        message: String,
    ) -> Self {
        Finding {
            severity: Severity::Warning,
            ..Finding::error(rule, check, path, message)
        }
    }

    /// This finding, about task or agent `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// This finding, with a hint on how to fix it.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// This finding, located at `pos`.
    pub fn at(mut self, pos: Pos) -> Self {
        self.line = pos.line;
        self.column = pos.column;
        self
    }

    /// Whether it is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// What identifies "the same violation" across two states, so a transaction may
    /// repair an invalid state but never add a violation (specs/blackboard.md, store step 4).
    pub fn identity(&self) -> (&'static str, String, String) {
        let subject = self.id.clone().unwrap_or_else(|| self.path.to_string());
        (self.check, subject, self.message.clone())
    }

    /// `rule 3 claimed-worktree-missing` style label for human output.
    pub fn label(&self) -> String {
        match self.rule {
            Some(r) => format!("rule {r} {}", self.check),
            None => format!("schema {}", self.check),
        }
    }
}

/// Sorts findings by position, errors first at equal positions.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (a.line, a.column, a.severity, a.check).cmp(&(b.line, b.column, b.severity, b.check))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    #[test]
    fn paths_render_like_the_spec() {
        let p = FieldPath::root().key("tasks").index(3).key("lease_expires");
        assert_eq!(p.to_string(), "tasks[3].lease_expires");
        let p = FieldPath::root().key("agents").key("coder-1").key("status");
        assert_eq!(p.to_string(), "agents.coder-1.status");
    }

    #[test]
    fn locate_finds_the_deepest_existing_node() {
        let root = yaml::parse("tasks:\n  - id: a\n  - id: b\n    status: X\n")
            .unwrap()
            .root
            .unwrap();
        let p = FieldPath::root().key("tasks").index(1).key("status");
        assert_eq!(p.locate(&root), Pos::new(4, 5));
        let missing = FieldPath::root().key("tasks").index(1).key("worktree");
        assert_eq!(missing.locate(&root), Pos::new(3, 5));
    }
}
