//! How a blackboard is laid out in etcd keys (specs/shared-store.md *Keys*): the head —
//! the state without its tasks and notes, and their order — and one key per task and per
//! note, so no value comes near etcd's request limit and a transition rewrites only what
//! it changed.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use liza_etcd::Change;
use liza_etcd::KeyValue;
use liza_etcd::StoreAddress;
use liza_model::TaskId;
use liza_model::model::{HumanNote, State, Task, TaskList};

/// The head key's value: the tasks' order (state.yaml's list order, which people choose)
/// and the rest of the state.
#[derive(Serialize, Deserialize)]
struct Head {
    order: Vec<TaskId>,
    /// The notes' ids, in order, each note in a key of its own; absent: the notes are in
    /// `state` (some lack an id, or two share one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    notes: Option<Vec<String>>,
    state: State,
}

/// Why the keys of a blackboard in etcd do not read as one.
#[expect(missing_docs, reason = "each variant's message is its documentation")]
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error(
        "the blackboard in etcd has no head key `{key}`: is the store address right (`liza init --store` creates it)?"
    )]
    NoHead { key: String },
    #[error(
        "etcd key `{key}` does not hold what liza wrote there ({detail}); `liza doctor` checks the store"
    )]
    Unreadable { key: String, detail: String },
    #[error("task {id} is listed in the head but its key `{key}` is missing")]
    MissingTask { id: String, key: String },
    #[error("etcd key `{key}` holds a task the head does not list")]
    UnlistedTask { key: String },
}

/// The key of the head.
pub fn head_key(address: &StoreAddress) -> Vec<u8> {
    address.key("head")
}

/// The key every commit handed over to the checkout's next writer before etcd answered
/// writes a value of its own to: that value there proves the commit was applied (see
/// `known_file`, *Handed over at the send*).
pub fn commit_key(address: &StoreAddress) -> Vec<u8> {
    address.key("commit")
}

/// The key of task `id` (ids are validated: they are safe in a key).
pub fn task_key(address: &StoreAddress, id: &TaskId) -> Vec<u8> {
    address.key(&format!("task/{}", id.as_str()))
}

/// The prefix every task key starts with.
pub fn task_prefix(address: &StoreAddress) -> Vec<u8> {
    address.key("task/")
}

/// The key of the note with id `id` (hex: any id a person wrote is safe in a key).
pub fn note_key(address: &StoreAddress, id: &str) -> Vec<u8> {
    address.key(&format!("note/{}", hex(id)))
}

/// The key of the alarm raised once per `key` (hex, as note ids).
pub fn alarm_key(address: &StoreAddress, key: &str) -> Vec<u8> {
    address.key(&format!("alarm/{}", hex(key)))
}

/// Where a watcher claims the delivery of an alarm to notify-send and the webhook: the
/// first to create it delivers (specs/operations.md *Watch and alarms*).
pub fn delivered_key(address: &StoreAddress, key: &str) -> Vec<u8> {
    address.key(&format!("delivered/{}", hex(key)))
}

fn hex(text: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(text.len() * 2);
    for b in text.bytes() {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// The prefix every note key starts with.
pub fn note_prefix(address: &StoreAddress) -> Vec<u8> {
    address.key("note/")
}

/// The notes of `state` by id, when each has an id of its own: then each is a key, so a
/// transition that adds a note writes that note, not all of them (they grow without
/// bound, and every transition rewrites the head).
fn keyed_notes(state: &State) -> Option<Vec<(&str, &HumanNote)>> {
    let notes = state.human_notes.as_ref()?;
    let mut seen = std::collections::HashSet::with_capacity(notes.len());
    notes
        .iter()
        .map(|n| {
            let id = n.id.as_deref()?;
            seen.insert(id).then_some((id, n))
        })
        .collect()
}

fn head_value(state: &State) -> Vec<u8> {
    let notes: Option<Vec<String>> =
        keyed_notes(state).map(|notes| notes.iter().map(|(id, _)| (*id).to_owned()).collect());
    // The state without its tasks (and its notes, when they have keys of their own),
    // cloned field by field: the bulk of it is not copied to be dropped.
    let rest = State {
        version: state.version,
        revision: state.revision,
        goal: state.goal.clone(),
        tasks: TaskList::default(),
        agents: state.agents.clone(),
        discovered: state.discovered.clone(),
        handoff: state.handoff.clone(),
        human_notes: if notes.is_some() {
            None
        } else {
            state.human_notes.clone()
        },
        anomalies: state.anomalies.clone(),
        spec_changes: state.spec_changes.clone(),
        sprint: state.sprint.clone(),
        circuit_breaker: state.circuit_breaker.clone(),
        archived: state.archived.clone(),
        merge_queue: state.merge_queue.clone(),
        config: state.config.clone(),
        extra: state.extra.clone(),
    };
    let head = Head {
        order: state.tasks.iter().map(|t| t.id.clone()).collect(),
        notes,
        state: rest,
    };
    serde_json::to_vec(&head).expect("a state serialises")
}

fn note_value(note: &HumanNote) -> Vec<u8> {
    serde_json::to_vec(note).expect("a note serialises")
}

fn task_value(task: &Task) -> Vec<u8> {
    serde_json::to_vec(task).expect("a task serialises")
}

/// Every key of `state`: the head, then each task.
pub fn encode(address: &StoreAddress, state: &State) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut kvs = Vec::with_capacity(state.tasks.len() + 1);
    kvs.push((head_key(address), head_value(state)));
    for task in &state.tasks {
        kvs.push((task_key(address, &task.id), task_value(task)));
    }
    for (id, note) in keyed_notes(state).unwrap_or_default() {
        kvs.push((note_key(address, id), note_value(note)));
    }
    kvs
}

/// A key and its value as read: from etcd, or borrowed from bytes read elsewhere (the
/// checkout's `.liza/etcd.known`, decoded where it lies rather than copied first).
pub trait Entry {
    /// The key.
    fn key(&self) -> &[u8];
    /// Its value.
    fn value(&self) -> &[u8];
}

impl Entry for KeyValue {
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn value(&self) -> &[u8] {
        &self.value
    }
}

/// A key and its value borrowed from the bytes they were read in.
#[derive(Clone, Copy)]
pub struct Borrowed<'a> {
    /// The key.
    pub key: &'a [u8],
    /// Its value.
    pub value: &'a [u8],
}

impl Entry for Borrowed<'_> {
    fn key(&self) -> &[u8] {
        self.key
    }
    fn value(&self) -> &[u8] {
        self.value
    }
}

/// The state the keys of one read (`kvs`, any order; keys outside the head and the
/// tasks are ignored) hold.
pub fn decode<E: Entry>(address: &StoreAddress, kvs: &[E]) -> Result<State, LayoutError> {
    decode_since(address, kvs, None)
}

/// [`decode`] of a read that returned only the tasks changed since `known` was read:
/// a task the head lists and the read did not return is `known`'s (unchanged, so the
/// same allocation). A task missing from both is [`LayoutError::MissingTask`].
pub fn decode_since<E: Entry>(
    address: &StoreAddress,
    kvs: &[E],
    known: Option<&State>,
) -> Result<State, LayoutError> {
    let head_key = head_key(address);
    let task_prefix = task_prefix(address);
    let shown = |key: &[u8]| String::from_utf8_lossy(key).escape_debug().to_string();
    let head = kvs
        .iter()
        .find(|kv| kv.key() == head_key.as_slice())
        .ok_or_else(|| LayoutError::NoHead {
            key: shown(&head_key),
        })?;
    let head: Head = serde_json::from_slice(head.value()).map_err(|e| LayoutError::Unreadable {
        key: shown(&head_key),
        detail: e.to_string(),
    })?;
    // The revision numbers log keys: one that liza cannot have written would make the
    // next commit reuse or skip revisions.
    match head.state.revision {
        Some(r) if (1..=i64::MAX / 2).contains(&r) => {}
        other => {
            return Err(LayoutError::Unreadable {
                key: shown(&head_key),
                detail: format!(
                    "its revision is {}, not one liza writes",
                    other.map_or_else(|| "missing".to_owned(), |r| r.to_string())
                ),
            });
        }
    }
    let mut tasks: HashMap<&[u8], &E> = kvs
        .iter()
        .filter_map(|kv| Some((kv.key().strip_prefix(task_prefix.as_slice())?, kv)))
        .collect();
    let known_state = known;
    let known: HashMap<&TaskId, &Arc<Task>> = known
        .map(|k| k.tasks.iter().map(|t| (&t.id, t)).collect())
        .unwrap_or_default();
    let mut list = Vec::with_capacity(head.order.len());
    for id in &head.order {
        let key = task_key(address, id);
        let Some(kv) = tasks.remove(id.as_str().as_bytes()) else {
            match known.get(id) {
                Some(unchanged) => {
                    list.push(Arc::clone(unchanged));
                    continue;
                }
                None => {
                    return Err(LayoutError::MissingTask {
                        id: id.as_str().to_string(),
                        key: shown(&key),
                    });
                }
            }
        };
        let task: Task =
            serde_json::from_slice(kv.value()).map_err(|e| LayoutError::Unreadable {
                key: shown(&key),
                detail: e.to_string(),
            })?;
        if task.id != *id {
            return Err(LayoutError::Unreadable {
                key: shown(&key),
                detail: format!("it holds task {}", task.id.as_str()),
            });
        }
        list.push(Arc::new(task));
    }
    if let Some(kv) = tasks.values().min_by_key(|kv| kv.key()) {
        return Err(LayoutError::UnlistedTask {
            key: shown(kv.key()),
        });
    }
    let mut state = head.state;
    state.tasks = TaskList(list);
    if let Some(ids) = &head.notes {
        let note_prefix = note_prefix(address);
        // By the hex of the id: only the notes read are looked at, not every note's key
        // formatted.
        let read: HashMap<&[u8], &E> = kvs
            .iter()
            .filter_map(|kv| Some((kv.key().strip_prefix(note_prefix.as_slice())?, kv)))
            .collect();
        let known_notes: HashMap<&str, &HumanNote> = known_state
            .and_then(|k| k.human_notes.as_ref())
            .map(|notes| {
                notes
                    .iter()
                    .filter_map(|n| Some((n.id.as_deref()?, n)))
                    .collect()
            })
            .unwrap_or_default();
        let mut notes = Vec::with_capacity(ids.len());
        for id in ids {
            let found = if read.is_empty() {
                None
            } else {
                read.get(hex(id).as_bytes())
            };
            let key = || note_key(address, id);
            let note = match found {
                Some(kv) => serde_json::from_slice::<HumanNote>(kv.value()).map_err(|e| {
                    LayoutError::Unreadable {
                        key: shown(&key()),
                        detail: e.to_string(),
                    }
                })?,
                None => match known_notes.get(id.as_str()) {
                    Some(note) => (*note).clone(),
                    None => {
                        return Err(LayoutError::MissingTask {
                            id: format!("note {id}"),
                            key: shown(&key()),
                        });
                    }
                },
            };
            notes.push(note);
        }
        state.human_notes = Some(notes);
    }
    Ok(state)
}

/// What turns `before` into `after` in etcd: the head (always: its revision moves), each
/// task that is new or changed, and a delete for each task that is gone.
pub fn changes(address: &StoreAddress, before: &State, after: &State) -> Vec<Change> {
    let old: HashMap<&TaskId, &Arc<Task>> = before.tasks.iter().map(|t| (&t.id, t)).collect();
    let mut out = vec![Change::Put {
        key: head_key(address),
        value: head_value(after),
        lease: 0,
    }];
    for task in &after.tasks {
        // A task the change left alone is the same allocation (the store clones on write).
        let unchanged = old
            .get(&task.id)
            .is_some_and(|o| Arc::ptr_eq(o, task) || ***o == **task);
        if !unchanged {
            out.push(Change::Put {
                key: task_key(address, &task.id),
                value: task_value(task),
                lease: 0,
            });
        }
    }
    let kept: std::collections::HashSet<&TaskId> = after.tasks.iter().map(|t| &t.id).collect();
    for task in &before.tasks {
        if !kept.contains(&task.id) {
            out.push(Change::Delete(task_key(address, &task.id)));
        }
    }
    let before_notes = keyed_notes(before).unwrap_or_default();
    let after_notes = keyed_notes(after).unwrap_or_default();
    // Notes are mostly appended: what both lists start with is unchanged, and (ids being
    // unique in each list) no id of the rest is in it.
    let same = before_notes
        .iter()
        .zip(&after_notes)
        .take_while(|(b, a)| b == a)
        .count();
    let old_notes: HashMap<&str, &HumanNote> = before_notes[same..].iter().copied().collect();
    let new_notes = &after_notes[same..];
    for (id, note) in new_notes {
        if old_notes.get(id) != Some(note) {
            out.push(Change::Put {
                key: note_key(address, id),
                value: note_value(note),
                lease: 0,
            });
        }
    }
    let kept_notes: std::collections::HashSet<&str> = new_notes.iter().map(|(id, _)| *id).collect();
    for id in old_notes.keys() {
        if !kept_notes.contains(id) {
            out.push(Change::Delete(note_key(address, id)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use liza_model::Timestamp;

    fn address() -> StoreAddress {
        "etcd://127.0.0.1:2379/team/p".parse().unwrap()
    }

    /// Every name the layout puts under a project's prefix is one no project's prefix
    /// may go through (else a project `team/p/task` would share keys with `team/p`) —
    /// but `delivered`, whose keys are hex (no name of the layout is) and which projects
    /// made before it may have in their prefix.
    #[test]
    fn the_names_under_a_prefix_are_reserved_for_it() {
        let a = address();
        let id = TaskId::parse("t-1").unwrap();
        let keys = [
            head_key(&a),
            task_key(&a, &id),
            note_key(&a, "n-1"),
            alarm_key(&a, "k"),
        ];
        let prefix = a.key("");
        for key in keys {
            let rest = String::from_utf8(key[prefix.len()..].to_vec()).unwrap();
            let name = rest.split('/').next().unwrap();
            let nested = format!("etcd://127.0.0.1:2379/team/p/{name}");
            let refused = nested.parse::<StoreAddress>().unwrap_err();
            assert!(
                matches!(refused.problem(), liza_etcd::AddressProblem::ReservedSegment(n) if *n == name),
                "{nested}: {refused}"
            );
        }
    }

    fn as_read(kvs: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<KeyValue> {
        kvs.into_iter()
            .map(|(key, value)| KeyValue {
                key,
                value,
                ..KeyValue::default()
            })
            .collect()
    }

    #[test]
    fn a_thousand_task_blackboard_round_trips_in_values_far_below_the_request_limit() {
        let state = liza_model::bench::generate_state(1000, 13_500, Timestamp::now());
        let kvs = encode(&address(), &state);
        let notes = state.human_notes.as_ref().map_or(0, Vec::len);
        assert_eq!(kvs.len(), 1001 + notes);
        let (size, key) = kvs
            .iter()
            .map(|(k, v)| (k.len() + v.len(), String::from_utf8_lossy(k).into_owned()))
            .max()
            .unwrap();
        // etcd refuses requests over 1.5 MiB; a transition writes the head and a task or two.
        eprintln!("largest: {key}, {size} bytes");
        assert!(size < 256 * 1024, "largest: {key}, {size} bytes");
        let mut read = as_read(kvs);
        read.reverse(); // etcd returns keys sorted, never in the list's order
        assert_eq!(decode(&address(), &read).unwrap(), state);
    }

    #[test]
    fn a_transition_writes_the_head_and_only_the_tasks_it_changed() {
        let before = liza_model::bench::generate_state(20, 500, Timestamp::now());
        let mut after = before.clone();
        after.revision = Some(after.revision() as i64 + 1);
        let mut changed = (*after.tasks.0[3]).clone();
        changed.description = Some("amended".into());
        let changed_id = changed.id.clone();
        after.tasks.0[3] = Arc::new(changed);
        let removed = after.tasks.0.remove(7).id.clone();
        let out = changes(&address(), &before, &after);
        let described: Vec<String> = out
            .iter()
            .map(|c| match c {
                Change::Put { key, .. } => format!("put {}", String::from_utf8_lossy(key)),
                Change::Delete(key) => format!("delete {}", String::from_utf8_lossy(key)),
            })
            .collect();
        assert_eq!(
            described,
            [
                "put team/p/head".to_string(),
                format!("put team/p/task/{}", changed_id.as_str()),
                format!("delete team/p/task/{}", removed.as_str()),
            ]
        );
        // Applied to the keys of `before`, they give `after`.
        let mut keys: HashMap<Vec<u8>, Vec<u8>> = encode(&address(), &before).into_iter().collect();
        for change in out {
            match change {
                Change::Put { key, value, .. } => {
                    keys.insert(key, value);
                }
                Change::Delete(key) => {
                    keys.remove(&key);
                }
            }
        }
        let read = as_read(keys.into_iter().collect());
        assert_eq!(decode(&address(), &read).unwrap(), after);
    }

    #[test]
    fn a_note_is_a_key_of_its_own_and_adding_one_writes_only_it_and_the_head() {
        let mut before = liza_model::bench::generate_state(5, 200, Timestamp::now());
        before.assign_note_ids();
        let mut after = before.clone();
        after.revision = Some(after.revision() as i64 + 1);
        after
            .human_notes
            .get_or_insert_with(Vec::new)
            .push(HumanNote {
                id: Some("note-new".into()),
                timestamp: Some(Timestamp::now()),
                message: "mind the tests".into(),
                target: Some("all".into()),
                seen_by: Some(Vec::new()),
                extra: Default::default(),
            });
        let out = changes(&address(), &before, &after);
        assert_eq!(out.len(), 2, "the head and the new note");
        // The head no longer carries the notes' texts.
        let Change::Put { value: head, .. } = &out[0] else {
            panic!("the head comes first")
        };
        assert!(!String::from_utf8_lossy(head).contains("mind the tests"));
        let mut keys: HashMap<Vec<u8>, Vec<u8>> = encode(&address(), &before).into_iter().collect();
        for change in out {
            if let Change::Put { key, value, .. } = change {
                keys.insert(key, value);
            }
        }
        let read = as_read(keys.into_iter().collect());
        assert_eq!(decode(&address(), &read).unwrap(), after);
        // Two notes sharing an id stay in the head, whole.
        let mut twins = after.clone();
        let copy = twins.human_notes.as_ref().unwrap()[0].clone();
        twins.human_notes.as_mut().unwrap().push(copy);
        let read = as_read(encode(&address(), &twins));
        assert_eq!(decode(&address(), &read).unwrap(), twins);
    }

    #[test]
    fn keys_that_do_not_add_up_are_refused_naming_the_key() {
        let state = liza_model::bench::generate_state(3, 200, Timestamp::now());
        let kvs = encode(&address(), &state);
        let err = decode(&address(), &as_read(kvs[1..].to_vec())).unwrap_err();
        assert!(err.to_string().contains("team/p/head"), "{err}");
        let missing = decode(&address(), &as_read(kvs[..2].to_vec())).unwrap_err();
        assert!(
            matches!(missing, LayoutError::MissingTask { .. }),
            "{missing}"
        );
        let mut stray = kvs.clone();
        stray.push((b"team/p/task/t-999".to_vec(), stray[1].1.clone()));
        let unlisted = decode(&address(), &as_read(stray)).unwrap_err();
        assert!(
            unlisted.to_string().contains("team/p/task/t-999"),
            "{unlisted}"
        );
        let mut swapped = kvs.clone();
        swapped[1].1 = kvs[2].1.clone();
        let wrong = decode(&address(), &as_read(swapped)).unwrap_err();
        assert!(wrong.to_string().contains("holds task"), "{wrong}");
        let mut garbage = kvs;
        garbage[0].1 = b"not json".to_vec();
        let unreadable = decode(&address(), &as_read(garbage)).unwrap_err();
        assert!(
            matches!(unreadable, LayoutError::Unreadable { .. }),
            "{unreadable}"
        );
    }
}
