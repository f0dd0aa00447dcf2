//! Three-way merge of blackboard documents at field level (specs/blackboard.md *Hand edits*):
//! a human's edit made on an older revision (`theirs`, based on `base`) is merged onto the
//! latest revision (`ours`). Mappings merge key by key, lists of records with an `id` merge
//! record by record, anything else is one value. A field changed on both sides to different
//! values is a conflict; so is a record deleted on one side and changed on the other.

use std::collections::HashMap;

use super::keyed::{field, keyed, record, record_id};
use super::node::{Entry, Node, Pos, Value};

/// One field both sides changed differently.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// Where, e.g. `tasks[t-1].priority`.
    pub path: String,
    /// The human's value (`None`: deleted).
    pub theirs: Option<String>,
    /// The latest revision's value (`None`: deleted).
    pub ours: Option<String>,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(deleted)".into());
        write!(
            f,
            "{}: you wrote {}, the blackboard now has {}",
            self.path,
            show(&self.theirs),
            show(&self.ours)
        )
    }
}

/// Which side a person chose for a conflicting field (`liza edit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The latest revision's value.
    Ours,
    /// The person's value.
    Theirs,
}

/// Choices by conflict path.
pub type Choices = HashMap<String, Side>;

/// Merges `theirs` (edited from `base`) onto `ours`; every conflict when they clash.
pub fn merge(base: &Node, ours: &Node, theirs: &Node) -> Result<Node, Vec<Conflict>> {
    merge_resolving(base, ours, theirs, &Choices::new())
}

/// [`merge`], taking the side in `choices` for a conflict at a path it names.
pub fn merge_resolving(
    base: &Node,
    ours: &Node,
    theirs: &Node,
    choices: &Choices,
) -> Result<Node, Vec<Conflict>> {
    let mut conflicts = Vec::new();
    let merged = merge_value(
        "",
        Some(base),
        Some(ours),
        Some(theirs),
        &mut Merge {
            conflicts: &mut conflicts,
            choices,
        },
    );
    if conflicts.is_empty() {
        Ok(merged.unwrap_or_else(|| Node::new(Value::Null)))
    } else {
        Err(conflicts)
    }
}

/// The merge in progress: conflicts found, and the choices that settle some.
struct Merge<'a> {
    conflicts: &'a mut Vec<Conflict>,
    choices: &'a Choices,
}

fn merge_value(
    path: &str,
    base: Option<&Node>,
    ours: Option<&Node>,
    theirs: Option<&Node>,
    m: &mut Merge<'_>,
) -> Option<Node> {
    if ours == theirs || base == theirs {
        return ours.cloned();
    }
    if base == ours {
        return theirs.cloned();
    }
    // Both sides changed it, differently.
    match (ours.map(|n| &n.value), theirs.map(|n| &n.value)) {
        (Some(Value::Map(o)), Some(Value::Map(t))) => {
            let b = match base.map(|n| &n.value) {
                Some(Value::Map(b)) => b.as_slice(),
                _ => &[],
            };
            let pos = ours.map_or(Pos::UNKNOWN, |n| n.pos);
            Some(Node::at(Value::Map(merge_maps(path, b, o, t, m)), pos))
        }
        (Some(Value::Seq(o)), Some(Value::Seq(t)))
            if keyed(o)
                && keyed(t)
                && base.is_none_or(|b| matches!(&b.value, Value::Seq(s) if keyed(s))) =>
        {
            let b = match base.map(|n| &n.value) {
                Some(Value::Seq(b)) => b.as_slice(),
                _ => &[],
            };
            let pos = ours.map_or(Pos::UNKNOWN, |n| n.pos);
            Some(Node::at(Value::Seq(merge_records(path, b, o, t, m)), pos))
        }
        _ => {
            let path = if path.is_empty() {
                "(the whole file)".to_owned()
            } else {
                path.to_owned()
            };
            match m.choices.get(&path) {
                Some(Side::Ours) => return ours.cloned(),
                Some(Side::Theirs) => return theirs.cloned(),
                None => {}
            }
            m.conflicts.push(Conflict {
                path,
                theirs: theirs.map(show),
                ours: ours.map(show),
            });
            ours.cloned()
        }
    }
}

/// Keys in `ours` order, then keys only `theirs` added, in theirs' order.
fn merge_maps(
    path: &str,
    base: &[Entry],
    ours: &[Entry],
    theirs: &[Entry],
    m: &mut Merge<'_>,
) -> Vec<Entry> {
    let mut keys: Vec<&Entry> = ours.iter().collect();
    keys.extend(
        theirs
            .iter()
            .filter(|t| !ours.iter().any(|o| o.key == t.key)),
    );
    // A key deleted by ours but still in base and theirs is visited through theirs.
    let mut out = Vec::new();
    for entry in keys {
        let key = &entry.key;
        let at = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        let merged = merge_value(
            &at,
            field(base, key),
            field(ours, key),
            field(theirs, key),
            m,
        );
        if let Some(value) = merged {
            out.push(Entry {
                key: key.clone(),
                key_pos: entry.key_pos,
                value,
            });
        }
    }
    out
}

/// Records matched by `id`: ours' order, then records only theirs added.
fn merge_records(
    path: &str,
    base: &[Node],
    ours: &[Node],
    theirs: &[Node],
    m: &mut Merge<'_>,
) -> Vec<Node> {
    let mut ids: Vec<&str> = ours.iter().filter_map(record_id).collect();
    ids.extend(
        theirs
            .iter()
            .filter_map(record_id)
            .filter(|id| record(ours, id).is_none()),
    );
    let mut out = Vec::new();
    for id in ids {
        let at = format!("{path}[{id}]");
        if let Some(node) = merge_value(
            &at,
            record(base, id),
            record(ours, id),
            record(theirs, id),
            m,
        ) {
            out.push(node);
        }
    }
    out
}

/// A short rendering of a value for a conflict message.
fn show(node: &Node) -> String {
    let text = node.to_json().to_string();
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(json: serde_json::Value) -> Node {
        serde_json::from_value(json).unwrap()
    }

    fn merged(
        base: serde_json::Value,
        ours: serde_json::Value,
        theirs: serde_json::Value,
    ) -> serde_json::Value {
        merge(&node(base), &node(ours), &node(theirs))
            .unwrap()
            .to_json()
    }

    #[test]
    fn changes_to_different_fields_of_the_same_record_both_survive() {
        let base = serde_json::json!({"revision": 4, "tasks": [
            {"id": "t-1", "status": "UNCLAIMED", "priority": 3, "description": "a"},
            {"id": "t-2", "status": "DRAFT", "priority": 3}]});
        let ours = serde_json::json!({"revision": 7, "tasks": [
            {"id": "t-1", "status": "CLAIMED", "priority": 3, "description": "a", "assigned_to": "coder-1"},
            {"id": "t-2", "status": "DRAFT", "priority": 3}]});
        let theirs = serde_json::json!({"revision": 4, "tasks": [
            {"id": "t-1", "status": "UNCLAIMED", "priority": 1, "description": "a, better"},
            {"id": "t-2", "status": "DRAFT", "priority": 3},
            {"id": "t-3", "status": "DRAFT", "priority": 2}]});
        assert_eq!(
            merged(base, ours, theirs),
            serde_json::json!({"revision": 7, "tasks": [
                {"id": "t-1", "status": "CLAIMED", "priority": 1, "description": "a, better", "assigned_to": "coder-1"},
                {"id": "t-2", "status": "DRAFT", "priority": 3},
                {"id": "t-3", "status": "DRAFT", "priority": 2}]})
        );
    }

    #[test]
    fn the_same_field_changed_differently_is_a_conflict_with_its_path() {
        let base = serde_json::json!({"tasks": [{"id": "t-1", "priority": 3}]});
        let ours = serde_json::json!({"tasks": [{"id": "t-1", "priority": 2}]});
        let theirs = serde_json::json!({"tasks": [{"id": "t-1", "priority": 1}]});
        let conflicts = merge(&node(base), &node(ours), &node(theirs)).unwrap_err();
        assert_eq!(
            conflicts,
            [Conflict {
                path: "tasks[t-1].priority".into(),
                theirs: Some("1".into()),
                ours: Some("2".into()),
            }]
        );
        assert_eq!(
            conflicts[0].to_string(),
            "tasks[t-1].priority: you wrote 1, the blackboard now has 2"
        );
    }

    #[test]
    fn the_same_change_on_both_sides_is_no_conflict() {
        let base = serde_json::json!({"a": 1, "b": {"c": 1}});
        let both = serde_json::json!({"a": 2, "b": {"c": 5}});
        assert_eq!(merged(base, both.clone(), both.clone()), both);
    }

    #[test]
    fn deletions_merge_unless_the_other_side_changed_the_record() {
        let base = serde_json::json!({"notes": [{"id": "n-1", "m": "x"}, {"id": "n-2", "m": "y"}], "k": 1});
        // The human deleted n-1 and k; the blackboard left both alone.
        let ours = serde_json::json!({"notes": [{"id": "n-1", "m": "x"}, {"id": "n-2", "m": "y"}, {"id": "n-3", "m": "z"}], "k": 1});
        let theirs = serde_json::json!({"notes": [{"id": "n-2", "m": "y"}]});
        assert_eq!(
            merged(base.clone(), ours, theirs.clone()),
            serde_json::json!({"notes": [{"id": "n-2", "m": "y"}, {"id": "n-3", "m": "z"}]})
        );
        // The blackboard changed n-1 meanwhile: deleting it would lose that.
        let ours = serde_json::json!({"notes": [{"id": "n-1", "m": "x!"}, {"id": "n-2", "m": "y"}], "k": 1});
        let conflicts = merge(&node(base), &node(ours), &node(theirs)).unwrap_err();
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].path, "notes[n-1]");
        assert_eq!(conflicts[0].theirs, None);
    }

    #[test]
    fn lists_without_ids_are_single_values() {
        let base = serde_json::json!({"deps": ["a"]});
        let ours = serde_json::json!({"deps": ["a", "b"]});
        let theirs = serde_json::json!({"deps": ["c"]});
        let conflicts = merge(&node(base.clone()), &node(ours.clone()), &node(theirs)).unwrap_err();
        assert_eq!(conflicts[0].path, "deps");
        // Only one side changed it: that side wins.
        assert_eq!(merged(base.clone(), ours.clone(), base.clone()), ours);
    }
}
