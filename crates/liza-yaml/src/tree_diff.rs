//! What changed between two blackboard documents, field by field (`liza diff`): mappings
//! compared key by key, lists of records with an `id` record by record (so a change to one
//! task reads `tasks[t-1].status`, not a shifted list), anything else as one value.

use serde::Serialize;

use super::keyed::{field, keyed, record, record_id};
use super::node::{Node, Value};

/// One changed field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// e.g. `tasks[t-1].status`.
    pub path: String,
    /// The value before (`None`: added), as compact JSON.
    pub before: Option<String>,
    /// The value after (`None`: removed).
    pub after: Option<String>,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.before, &self.after) {
            (None, Some(after)) => write!(f, "+ {}: {after}", self.path),
            (Some(before), None) => write!(f, "- {}: {before}", self.path),
            (Some(before), Some(after)) => write!(f, "~ {}: {before} → {after}", self.path),
            (None, None) => write!(f, "  {}", self.path),
        }
    }
}

/// Every field that differs from `before` to `after`, in document order.
pub fn changes(before: &Node, after: &Node) -> Vec<Change> {
    let mut out = Vec::new();
    compare("", Some(before), Some(after), &mut out);
    out
}

fn compare(path: &str, before: Option<&Node>, after: Option<&Node>, out: &mut Vec<Change>) {
    if before == after {
        return;
    }
    match (before.map(|n| &n.value), after.map(|n| &n.value)) {
        (Some(Value::Map(b)), Some(Value::Map(a))) => {
            for entry in a {
                compare(
                    &join(path, &entry.key),
                    field(b, &entry.key),
                    Some(&entry.value),
                    out,
                );
            }
            for entry in b.iter().filter(|e| field(a, &e.key).is_none()) {
                compare(&join(path, &entry.key), Some(&entry.value), None, out);
            }
        }
        (Some(Value::Seq(b)), Some(Value::Seq(a))) if keyed(b) && keyed(a) => {
            for item in a {
                let id = record_id(item).unwrap_or_default();
                compare(&format!("{path}[{id}]"), record(b, id), Some(item), out);
            }
            for item in b {
                let id = record_id(item).unwrap_or_default();
                if record(a, id).is_none() {
                    compare(&format!("{path}[{id}]"), Some(item), None, out);
                }
            }
        }
        // A list that only grew at its end (histories, logs): the new items alone.
        (Some(Value::Seq(b)), Some(Value::Seq(a)))
            if a.len() > b.len() && a[..b.len()] == b[..] =>
        {
            for (i, item) in a.iter().enumerate().skip(b.len()) {
                compare(&format!("{path}[{i}]"), None, Some(item), out);
            }
        }
        _ => out.push(Change {
            path: if path.is_empty() {
                "(document)".into()
            } else {
                path.to_owned()
            },
            before: before.map(compact),
            after: after.map(compact),
        }),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn compact(node: &Node) -> String {
    node.to_json().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(json: serde_json::Value) -> Node {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn records_are_compared_by_id_and_fields_by_key() {
        let before = node(serde_json::json!({"revision": 3, "tasks": [
            {"id": "t-1", "status": "UNCLAIMED"}, {"id": "t-2", "status": "DRAFT"}]}));
        let after = node(serde_json::json!({"revision": 4, "tasks": [
            {"id": "t-2", "status": "DRAFT", "priority": 1}, {"id": "t-1", "status": "CLAIMED"},
            {"id": "t-3", "status": "DRAFT"}]}));
        let lines: Vec<String> = changes(&before, &after)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [
                "~ revision: 3 → 4",
                "+ tasks[t-2].priority: 1",
                "~ tasks[t-1].status: \"UNCLAIMED\" → \"CLAIMED\"",
                "+ tasks[t-3]: {\"id\":\"t-3\",\"status\":\"DRAFT\"}",
            ]
        );
        assert!(changes(&before, &before).is_empty());
        let grown = changes(
            &node(serde_json::json!({"h": [1, 2]})),
            &node(serde_json::json!({"h": [1, 2, 3]})),
        );
        assert_eq!(grown[0].to_string(), "+ h[2]: 3");
        let removed = changes(&after, &before);
        assert!(
            removed
                .iter()
                .any(|c| c.path == "tasks[t-3]" && c.after.is_none())
        );
    }
}
