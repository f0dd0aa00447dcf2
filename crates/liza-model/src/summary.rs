//! A one-line summary of what changed between two states, for the `human_edit` log
//! entry: which sections, which tasks and agents, which of their fields.

use super::document;
use super::model::State;
use super::node::{Node, Value};
use super::yaml;

/// Summarises `after` relative to `before`, e.g.
/// `tasks t-1: priority, description; tasks +t-9; human_notes`.
pub fn summarize(before: &State, after: &State) -> String {
    let (Some(old), Some(new)) = (tree(before), tree(after)) else {
        return "state replaced".into();
    };
    let mut parts: Vec<String> = Vec::new();
    let (Value::Map(old_entries), Value::Map(new_entries)) = (&old.value, &new.value) else {
        return "state replaced".into();
    };
    for entry in new_entries {
        if entry.key == "revision" || entry.key == "sprint" && only_metrics_differ(&old, &new) {
            continue;
        }
        match old_entries.iter().find(|e| e.key == entry.key) {
            None => parts.push(format!("+{}", entry.key)),
            Some(o) if o.value == entry.value => {}
            Some(o) => match entry.key.as_str() {
                "tasks" => parts.extend(keyed_changes(
                    "tasks",
                    &o.value.value,
                    &entry.value.value,
                    "id",
                )),
                "agents" | "handoff" => parts.extend(keyed_changes(
                    &entry.key,
                    &o.value.value,
                    &entry.value.value,
                    "",
                )),
                key => match (&o.value.value, &entry.value.value) {
                    (Value::Map(_), Value::Map(_)) => parts.push(format!(
                        "{key}: {}",
                        changed_fields(&o.value, &entry.value).join(", ")
                    )),
                    _ => parts.push(key.to_owned()),
                },
            },
        }
    }
    for entry in old_entries {
        if !new_entries.iter().any(|e| e.key == entry.key) {
            parts.push(format!("-{}", entry.key));
        }
    }
    if parts.is_empty() {
        return "no change in content (formatting or comments only)".into();
    }
    let mut line = parts.join("; ");
    if line.len() > 300 {
        let cut = line.char_indices().nth(297).map_or(line.len(), |(i, _)| i);
        line.truncate(cut);
        line.push_str("...");
    }
    line
}

fn tree(state: &State) -> Option<Node> {
    yaml::parse(&document::emit(state, 0)).ok()?.root
}

fn only_metrics_differ(old: &Node, new: &Node) -> bool {
    let strip = |n: &Node| match n.get("sprint").map(|s| &s.value) {
        Some(Value::Map(entries)) => entries
            .iter()
            .filter(|e| e.key != "metrics")
            .cloned()
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    strip(old) == strip(new)
}

/// Changes of a list keyed by `id_key` (or a mapping keyed by its keys when empty):
/// `tasks t-1: priority`, `tasks +t-2`, `tasks -t-3`.
fn keyed_changes(section: &str, old: &Value, new: &Value, id_key: &str) -> Vec<String> {
    let items = |v: &Value| -> Vec<(String, Node)> {
        match v {
            Value::Seq(items) => items
                .iter()
                .map(|n| {
                    let id = n
                        .get(id_key)
                        .and_then(Node::as_str)
                        .unwrap_or("?")
                        .to_owned();
                    (id, n.clone())
                })
                .collect(),
            Value::Map(entries) => entries
                .iter()
                .map(|e| (e.key.clone(), e.value.clone()))
                .collect(),
            _ => Vec::new(),
        }
    };
    let (old, new) = (items(old), items(new));
    let mut out = Vec::new();
    for (id, node) in &new {
        match old.iter().find(|(o, _)| o == id) {
            None => out.push(format!("{section} +{id}")),
            Some((_, o)) if o == node => {}
            Some((_, o)) => {
                let fields = changed_fields(o, node);
                out.push(format!("{section} {id}: {}", fields.join(", ")));
            }
        }
    }
    for (id, _) in &old {
        if !new.iter().any(|(n, _)| n == id) {
            out.push(format!("{section} -{id}"));
        }
    }
    out
}

fn changed_fields(old: &Node, new: &Node) -> Vec<String> {
    let (Value::Map(o), Value::Map(n)) = (&old.value, &new.value) else {
        return vec!["value".into()];
    };
    let mut fields: Vec<String> = n
        .iter()
        .filter(|e| {
            o.iter()
                .find(|x| x.key == e.key)
                .is_none_or(|x| x.value != e.value)
        })
        .map(|e| e.key.clone())
        .collect();
    fields.extend(
        o.iter()
            .filter(|e| !n.iter().any(|x| x.key == e.key))
            .map(|e| format!("-{}", e.key)),
    );
    fields
}
