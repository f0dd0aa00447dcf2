//! Looking things up in document trees the way the blackboard is shaped: mapping fields by
//! key, and records in lists by their `id` (tasks, notes, anomalies, discoveries).

use super::node::{Entry, Node};

/// The value of `key` among a mapping's entries.
pub fn field<'a>(entries: &'a [Entry], key: &str) -> Option<&'a Node> {
    entries.iter().find(|e| e.key == key).map(|e| &e.value)
}

/// The record with `id` in a list.
pub fn record<'a>(items: &'a [Node], id: &str) -> Option<&'a Node> {
    items.iter().find(|n| record_id(n) == Some(id))
}

/// A record's `id`, when it is a mapping with a string `id`.
pub fn record_id(node: &Node) -> Option<&str> {
    node.get("id").and_then(Node::as_str)
}

/// Whether every item is a mapping with a distinct string `id`.
pub fn keyed(items: &[Node]) -> bool {
    let ids: Vec<&str> = items.iter().filter_map(record_id).collect();
    ids.len() == items.len() && (1..ids.len()).all(|i| !ids[..i].contains(&ids[i]))
}
