//! Minimal edits of a state.yaml a person wrote comments in (specs/blackboard.md *Hand edits*):
//! instead of writing the new state from scratch, the changes from the old document to the
//! new one are applied to the old text through a lossless syntax tree (`yaml-edit`), so
//! comments, key order and layout the person chose survive every later transaction.
//! Mappings change key by key, lists of records by `id`, lists that grew at the end get
//! their new items appended; anything else is replaced as one value. The result is checked
//! to read back as exactly the new document, or not used.

use std::str::FromStr;

use yaml_edit::{Document, Mapping, Sequence, YamlNode};

use crate::Emitter;
use crate::keyed::{field, keyed, record, record_id};
use crate::node::{Entry, Node, Pos, Value};

/// `text` (whose tree is `old`) edited into `new`; `None` when that cannot be done
/// faithfully (the caller then writes the new document in full).
pub fn patch(text: &str, old: &Node, new: &Node) -> Option<String> {
    let doc = Document::from_str(text).ok()?;
    let root = doc.as_mapping()?;
    let (Value::Map(old_entries), Value::Map(new_entries)) = (&old.value, &new.value) else {
        return None;
    };
    patch_mapping(&root, old_entries, new_entries)?;
    let patched = doc.to_string();
    let reread = crate::parse(&patched).ok()?.root?;
    same_content(&reread, new).then_some(patched)
}

/// Equal as blackboards: mappings as sets of keys (the person's key order is kept on
/// purpose), lists in order, scalars exactly.
fn same_content(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Map(x), Value::Map(y)) => {
            // `key: null` and no key read the same.
            let present = |entries: &[Entry]| entries.iter().filter(|e| !e.value.is_null()).count();
            present(x) == present(y)
                && x.iter()
                    .filter(|e| !e.value.is_null())
                    .all(|e| field(y, &e.key).is_some_and(|v| same_content(&e.value, v)))
        }
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_content(p, q))
        }
        _ => a == b,
    }
}

fn patch_mapping(target: &Mapping, old: &[Entry], new: &[Entry]) -> Option<()> {
    // A `key: null` the person wrote reads as absent: it stays, with its comment.
    for entry in old
        .iter()
        .filter(|e| field(new, &e.key).is_none() && !e.value.is_null())
    {
        target.remove(entry.key.as_str())?;
    }
    for entry in new {
        let key = entry.key.as_str();
        match field(old, key) {
            Some(before) if *before == entry.value => {}
            Some(before) => patch_value(target, key, before, &entry.value)?,
            None => target.set(key, as_yaml(&entry.value)?),
        }
    }
    Some(())
}

/// Changes the value under `key` from `before` to `after`, as locally as it can.
fn patch_value(target: &Mapping, key: &str, before: &Node, after: &Node) -> Option<()> {
    match (&before.value, &after.value) {
        (Value::Map(b), Value::Map(a)) if !b.is_empty() => {
            if let Some(child) = target.get_mapping(key) {
                return patch_mapping(&child, b, a);
            }
        }
        (Value::Seq(b), Value::Seq(a)) if !b.is_empty() => {
            if let Some(child) = target.get_sequence(key)
                && patch_sequence(&child, b, a).is_some()
            {
                return Some(());
            }
        }
        _ => {}
    }
    target.set(key, as_yaml(after)?);
    Some(())
}

/// Records matched by id (removed, changed in place, new ones appended), or new items
/// appended to a list that only grew; `None` for anything else (replace it whole).
fn patch_sequence(target: &Sequence, old: &[Node], new: &[Node]) -> Option<()> {
    if keyed(old) && keyed(new) {
        let old_ids: Vec<&str> = old.iter().filter_map(record_id).collect();
        let kept: Vec<&str> = old_ids
            .iter()
            .copied()
            .filter(|id| record(new, id).is_some())
            .collect();
        let new_order: Vec<&str> = new
            .iter()
            .filter_map(record_id)
            .filter(|id| kept.contains(id))
            .collect();
        if kept != new_order {
            return None; // reordered: not a local change
        }
        for (i, id) in old_ids.iter().enumerate().rev() {
            if record(new, id).is_none() {
                target.remove(i)?;
            }
        }
        for (i, id) in kept.iter().enumerate() {
            let (before, after) = (record(old, id)?, record(new, id)?);
            if before != after {
                let (Value::Map(b), Value::Map(a)) = (&before.value, &after.value) else {
                    return None;
                };
                let item = target.get(i)?;
                patch_mapping(item.as_mapping()?, b, a)?;
            }
        }
        for item in new
            .iter()
            .filter(|n| record_id(n).is_some_and(|id| !kept.contains(&id)))
        {
            target.push(as_yaml(item)?);
        }
        return Some(());
    }
    if new.len() >= old.len() && new[..old.len()] == *old {
        for item in &new[old.len()..] {
            target.push(as_yaml(item)?);
        }
        return Some(());
    }
    None
}

/// A value as liza would write it, as a `yaml-edit` node to insert.
fn as_yaml(value: &Node) -> Option<YamlNode> {
    let holder = Node::new(Value::Map(vec![Entry {
        key: "v".into(),
        key_pos: Pos::UNKNOWN,
        value: value.clone(),
    }]));
    let mut emitter = Emitter::with_capacity(256);
    emitter.node(&holder);
    let doc = Document::from_str(&emitter.finish()).ok()?;
    doc.as_mapping()?.get("v")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Node {
        crate::parse(text).unwrap().root.unwrap()
    }

    const COMMENTED: &str = "version: 1\nrevision: 3\n# the plan\ntasks:\n  # t-1 is the hard one: ask Ann\n  - id: t-1\n    status: UNCLAIMED\n    priority: 3\n    history:\n      - time: 1\n        event: created\n  - id: t-2\n    status: DRAFT\nhuman_notes: []\n";

    #[test]
    fn changes_are_applied_around_the_comments() {
        let new = tree(
            "version: 1\nrevision: 4\ntasks:\n  - id: t-1\n    status: CLAIMED\n    priority: 3\n    history:\n      - time: 1\n        event: created\n      - time: 2\n        event: claimed\n    assigned_to: coder-1\n  - id: t-3\n    status: DRAFT\nhuman_notes:\n  - id: note-1\n    message: hi\n",
        );
        let patched = patch(COMMENTED, &tree(COMMENTED), &new).unwrap();
        assert!(patched.contains("# the plan\ntasks:\n  # t-1 is the hard one: ask Ann\n  - id: t-1\n    status: CLAIMED\n"), "{patched}");
        assert!(same_content(&tree(&patched), &new));
        assert!(!patched.contains("t-2"));
    }

    #[test]
    fn a_reordered_list_is_replaced_whole_and_still_reads_back_exactly() {
        let new = tree(
            "version: 1\nrevision: 4\ntasks:\n  - id: t-2\n    status: DRAFT\n  - id: t-1\n    status: UNCLAIMED\n    priority: 3\n    history:\n      - time: 1\n        event: created\nhuman_notes: []\n",
        );
        let patched = patch(COMMENTED, &tree(COMMENTED), &new).unwrap();
        assert!(same_content(&tree(&patched), &new));
        assert!(patched.contains("# the plan"));
    }

    #[test]
    fn strings_that_need_quotes_get_them() {
        let new = tree(
            "version: 1\nrevision: 3\ntasks:\n  - id: t-1\n    status: UNCLAIMED\n    priority: 3\n    history:\n      - time: 1\n        event: created\n    description: \"yes: no # not a comment\"\n  - id: t-2\n    status: DRAFT\nhuman_notes: []\n",
        );
        let patched = patch(COMMENTED, &tree(COMMENTED), &new).unwrap();
        assert!(same_content(&tree(&patched), &new));
    }

    #[test]
    fn a_persons_key_order_is_kept() {
        let text = "revision: 1
name: x # trailing
id: 7
";
        let new = tree(
            "id: 7
revision: 2
name: x
",
        );
        let patched = patch(text, &tree(text), &new).unwrap();
        assert_eq!(
            patched,
            "revision: 2
name: x # trailing
id: 7
"
        );
        assert!(!same_content(
            &tree(
                "a: [1, 2]
"
            ),
            &tree(
                "a: [2, 1]
"
            )
        ));
    }
}
