//! How a blackboard is laid out in etcd keys (specs/shared-store.md *Keys*): the head —
//! the revision, the tasks' order and the notes' ids —, each other section of the state
//! (goal, agents, sprint, config, …) in a key of its own under the head, and one key per
//! task and per note, so no value comes near etcd's request limit and a transition
//! rewrites only what it changed: a `liza note` writes the small head and the note.
//!
//! Layout 1 kept the sections, and the notes' ids one by one, in the head, which every
//! transition rewrote whole and which grew all sprint; it is still read (etcd's history
//! holds it), and the store upgrades a blackboard laid out so on its first read
//! ([`upgrade`]).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use liza_etcd::Change;
use liza_etcd::KeyValue;
use liza_etcd::StoreAddress;
use liza_model::TaskId;
use liza_model::model::{HumanNote, State, Task, TaskList};

/// The head key's value: the state's revision, the tasks' order (state.yaml's list
/// order, which people choose) and the notes' ids, in order.
#[derive(Serialize, Deserialize)]
struct Head {
    /// [`LAYOUT`].
    layout: u32,
    /// Where layout 1 kept the rest of the state: a sentence here, so that a liza that
    /// knows only layout 1 refuses the head, saying why, instead of reading a state
    /// without its sections and notes and writing it back. (Written before the fields
    /// such a liza would misread first.)
    #[serde(default)]
    state: String,
    version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revision: Option<i64>,
    order: Vec<TaskId>,
    /// The notes' ids, in order, each note in a key of its own; absent: the notes are the
    /// `human_notes` section (some lack an id, or two share one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    notes: Option<Vec<IdRun>>,
}

/// The layout [`Head`] describes.
pub const LAYOUT: u32 = 2;

const UPGRADE_LIZA: &str =
    "this blackboard is laid out for a newer liza (etcd layout 2): upgrade liza to use it";

/// Notes' ids as the head lists them: liza's own ids in a row (`note-7`, `note-8`, …,
/// `note-40`) as `[7, 40]`, so the head stays small however many notes a sprint has;
/// any other id as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum IdRun {
    Run([u64; 2]),
    Id(String),
}

/// The number `n` of an id liza gives (`note-<n>`, no leading zero).
fn note_number(id: &str) -> Option<u64> {
    let digits = id.strip_prefix("note-")?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

fn id_runs<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<IdRun> {
    let mut runs: Vec<IdRun> = Vec::new();
    for id in ids {
        let number = note_number(id);
        if let (Some(n), Some(IdRun::Run([_, last]))) = (number, runs.last_mut())
            && last.checked_add(1) == Some(n)
        {
            *last = n;
            continue;
        }
        runs.push(match number {
            Some(n) => IdRun::Run([n, n]),
            None => IdRun::Id(id.to_owned()),
        });
    }
    runs
}

/// The ids `runs` list, one after another (a run is expanded as it is walked: a head
/// that lists more notes than there are fails at the first one missing, and allocates
/// nothing for the rest).
fn run_ids(runs: &[IdRun]) -> impl Iterator<Item = String> + '_ {
    runs.iter()
        .flat_map(|run| -> Box<dyn Iterator<Item = String> + '_> {
            match run {
                IdRun::Id(id) => Box::new(std::iter::once(id.clone())),
                IdRun::Run([first, last]) => {
                    Box::new((*first..=*last).map(|n| format!("note-{n}")))
                }
            }
        })
}

/// The head of layout 1: the tasks' order, the notes' ids, and the rest of the state.
#[derive(Deserialize)]
struct HeadLayout1 {
    order: Vec<TaskId>,
    #[serde(default)]
    notes: Option<Vec<String>>,
    state: State,
}

/// Which layout a head value is of: only its `layout` field is looked at.
fn layout_of(value: &[u8]) -> Result<u32, serde_json::Error> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default = "layout_1")]
        layout: u32,
    }
    fn layout_1() -> u32 {
        1
    }
    serde_json::from_slice::<Probe>(value).map(|p| p.layout)
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
    /// `what`: `task <id>`, `note <id>` or `section <name>`.
    #[error(
        "{what} is listed in the head but its key `{key}` is missing; `liza doctor` checks the store"
    )]
    MissingKey { what: String, key: String },
    #[error(
        "the blackboard in etcd (head `{key}`) is laid out as {layout}, by a newer liza than this one: upgrade liza to use it"
    )]
    NewerLayout { key: String, layout: u32 },
    #[error(
        "the blackboard in etcd (head `{key}`) was laid out by an older liza again as soon as it was upgraded: upgrade every liza that uses it (`liza --version` on each host)"
    )]
    StillLayout1 { key: String },
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

/// The ledger entry of one agent run (its id is checked: `[A-Za-z0-9._-]`).
pub fn ledger_key(address: &StoreAddress, run: &str) -> Vec<u8> {
    address.key(&format!("ledger/{run}"))
}

/// The usage limit of a backend's account (`<backend>/<account>`, both checked).
pub fn quota_key(address: &StoreAddress, key: &str) -> Vec<u8> {
    address.key(&format!("quota/{key}"))
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
    let keyed: Vec<(&str, &HumanNote)> = notes
        .iter()
        .map(|n| Some((n.id.as_deref()?, n)))
        .collect::<Option<_>>()?;
    // liza's own ids, each higher than the one before, are distinct without a look at
    // the others: the usual list, whose every transition would otherwise hash them all.
    let mut last = None;
    let increasing = keyed.iter().all(|(id, _)| {
        let n = note_number(id);
        let higher = n.is_some() && (last.is_none() || n > last);
        last = n;
        higher
    });
    if !increasing {
        let mut seen = std::collections::HashSet::with_capacity(keyed.len());
        if !keyed.iter().all(|(id, _)| seen.insert(*id)) {
            return None;
        }
    }
    Some(keyed)
}

/// The prefix of the head's sections: `head/<field>`. (Under the head's own name, which
/// no project's prefix may go through, so a new name needs no reserving.)
pub fn section_prefix(address: &StoreAddress) -> Vec<u8> {
    address.key("head/")
}

/// The state's top-level fields that are sections of their own: all but the revision
/// and version (the head's), the tasks and the notes. A field added to `State` does not
/// compile until it is placed here or in the head.
macro_rules! sections {
    ($($field:ident),* $(,)?) => {
        /// Each section's name and value.
        fn section_values(state: &State) -> Vec<(&'static str, Vec<u8>)> {
            let State {
                version: _,
                revision: _,
                tasks: _,
                human_notes: _,
                $($field: _,)*
            } = state;
            vec![
                $((stringify!($field), serde_json::to_vec(&state.$field).expect("a state serialises")),)*
                ("human_notes", unkeyed_notes_value(state)),
            ]
        }

        /// The sections `after` changed since `before`, with their new values.
        /// (`keyed`: whether each state's notes have keys of their own.)
        fn changed_sections(
            before: &State,
            after: &State,
            keyed: (bool, bool),
        ) -> Vec<(&'static str, Vec<u8>)> {
            let mut out = Vec::new();
            $(
                if before.$field != after.$field {
                    out.push((stringify!($field), serde_json::to_vec(&after.$field).expect("a state serialises")));
                }
            )*
            let (before_notes, after_notes) = (unkeyed(before, keyed.0), unkeyed(after, keyed.1));
            if before_notes != after_notes {
                out.push(("human_notes", serde_json::to_vec(&after_notes).expect("notes serialise")));
            }
            out
        }

        /// The state of a head of layout 2 (`version`, `revision`), its tasks and notes
        /// left empty: each section as `read` holds it (by name), else as `known` has it.
        fn sectioned_state(
            address: &StoreAddress,
            read: &HashMap<&[u8], &[u8]>,
            known: Option<&State>,
            version: i64,
            revision: Option<i64>,
        ) -> Result<State, LayoutError> {
            Ok(State {
                version,
                revision,
                tasks: TaskList::default(),
                human_notes: None,
                $($field: match read.get(stringify!($field).as_bytes()) {
                    Some(value) => section(address, stringify!($field), value)?,
                    None => match known {
                        Some(known) => known.$field.clone(),
                        None => return Err(missing_section(address, stringify!($field))),
                    },
                },)*
            })
        }

        /// Every section's name.
        const SECTIONS: &[&str] = &[$(stringify!($field),)* "human_notes"];
    };
}

sections!(
    goal,
    agents,
    discovered,
    handoff,
    anomalies,
    spec_changes,
    sprint,
    circuit_breaker,
    archived,
    merge_queue,
    config,
    extra,
);

/// The value of section `name`, read.
fn section<T: serde::de::DeserializeOwned>(
    address: &StoreAddress,
    name: &str,
    value: &[u8],
) -> Result<T, LayoutError> {
    serde_json::from_slice(value).map_err(|e| LayoutError::Unreadable {
        key: shown(&section_key(address, name)),
        detail: e.to_string(),
    })
}

fn missing_section(address: &StoreAddress, name: &str) -> LayoutError {
    LayoutError::MissingKey {
        what: format!("section {name}"),
        key: shown(&section_key(address, name)),
    }
}

fn section_key(address: &StoreAddress, name: &str) -> Vec<u8> {
    address.key(&format!("head/{name}"))
}

/// A key as an error message shows it.
fn shown(key: &[u8]) -> String {
    String::from_utf8_lossy(key).escape_debug().to_string()
}

/// The notes when they cannot have keys of their own (some lack an id, or two share
/// one): then they are the `human_notes` section.
fn unkeyed_notes(state: &State) -> Option<&Vec<HumanNote>> {
    unkeyed(state, keyed_notes(state).is_some())
}

/// [`unkeyed_notes`], told whether the notes have keys.
fn unkeyed(state: &State, keyed: bool) -> Option<&Vec<HumanNote>> {
    state.human_notes.as_ref().filter(|_| !keyed)
}

fn unkeyed_notes_value(state: &State) -> Vec<u8> {
    serde_json::to_vec(&unkeyed_notes(state)).expect("notes serialise")
}

fn head_value(state: &State) -> Vec<u8> {
    head_value_keyed(state, keyed_notes(state).as_deref())
}

/// [`head_value`], given the state's [`keyed_notes`].
fn head_value_keyed(state: &State, keyed: Option<&[(&str, &HumanNote)]>) -> Vec<u8> {
    let head = Head {
        layout: LAYOUT,
        version: state.version,
        revision: state.revision,
        order: state.tasks.iter().map(|t| t.id.clone()).collect(),
        notes: keyed.map(|notes| id_runs(notes.iter().map(|(id, _)| *id))),
        state: UPGRADE_LIZA.to_owned(),
    };
    serde_json::to_vec(&head).expect("a state serialises")
}

/// The state revision a head value holds (of either layout).
pub fn head_revision(value: &[u8]) -> Result<i64, serde_json::Error> {
    #[derive(Deserialize)]
    struct RevisionOnly {
        #[serde(default)]
        revision: Option<i64>,
    }
    #[derive(Deserialize)]
    struct Layout1 {
        state: RevisionOnly,
    }
    if layout_of(value)? == 1 {
        let head: Layout1 = serde_json::from_slice(value)?;
        return Ok(head.state.revision.unwrap_or(0));
    }
    let head: RevisionOnly = serde_json::from_slice(value)?;
    Ok(head.revision.unwrap_or(0))
}

fn note_value(note: &HumanNote) -> Vec<u8> {
    serde_json::to_vec(note).expect("a note serialises")
}

fn task_value(task: &Task) -> Vec<u8> {
    serde_json::to_vec(task).expect("a task serialises")
}

/// Every key of `state`: the head, its sections, each task and each note.
pub fn encode(address: &StoreAddress, state: &State) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut kvs = Vec::with_capacity(state.tasks.len() + SECTIONS.len() + 1);
    kvs.push((head_key(address), head_value(state)));
    kvs.extend(upgraded_sections(address, state));
    for task in &state.tasks {
        kvs.push((task_key(address, &task.id), task_value(task)));
    }
    for (id, note) in keyed_notes(state).unwrap_or_default() {
        kvs.push((note_key(address, id), note_value(note)));
    }
    kvs
}

fn upgraded_sections<'a>(
    address: &'a StoreAddress,
    state: &State,
) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> + 'a {
    let prefix = section_prefix(address);
    section_values(state).into_iter().map(move |(name, value)| {
        let mut key = prefix.clone();
        key.extend_from_slice(name.as_bytes());
        (key, value)
    })
}

/// Whether the keys of a read (`kvs`) hold a head of layout 1, which the store upgrades
/// with [`upgrade`] before it writes.
pub fn is_layout_1<E: Entry>(address: &StoreAddress, kvs: &[E]) -> bool {
    let head_key = head_key(address);
    kvs.iter()
        .find(|kv| kv.key() == head_key.as_slice())
        .is_some_and(|head| layout_of(head.value()).ok() == Some(1))
}

/// What turns the keys of a blackboard of layout 1 that holds `state` (read as `kvs`)
/// into layout 2: the head, every section, and a key for each note that can have one
/// and has none yet (a layout-1 head may hold notes with ids of their own inline: an
/// older liza's, or a person's). Tasks, and notes already keyed, keep their keys.
pub fn upgrade<E: Entry>(address: &StoreAddress, state: &State, kvs: &[E]) -> Vec<Change> {
    let present: std::collections::HashSet<&[u8]> = kvs.iter().map(|kv| kv.key()).collect();
    let notes = keyed_notes(state)
        .unwrap_or_default()
        .into_iter()
        .map(|(id, note)| (note_key(address, id), note_value(note)))
        .filter(|(key, _)| !present.contains(key.as_slice()));
    std::iter::once((head_key(address), head_value(state)))
        .chain(upgraded_sections(address, state))
        .chain(notes)
        .map(|(key, value)| Change::Put {
            key,
            value,
            lease: 0,
        })
        .collect()
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

/// [`decode`] of a read that returned only the tasks, notes and sections changed since
/// `known` was read: one the head lists and the read did not return is `known`'s
/// (unchanged, so the same allocation). One missing from both is
/// [`LayoutError::MissingKey`].
pub fn decode_since<E: Entry>(
    address: &StoreAddress,
    kvs: &[E],
    known: Option<&State>,
) -> Result<State, LayoutError> {
    let head_key = head_key(address);
    let head = kvs
        .iter()
        .find(|kv| kv.key() == head_key.as_slice())
        .ok_or_else(|| LayoutError::NoHead {
            key: shown(&head_key),
        })?;
    let unreadable = |detail: String| LayoutError::Unreadable {
        key: shown(&head_key),
        detail,
    };
    let layout = layout_of(head.value()).map_err(|e| unreadable(e.to_string()))?;
    let (order, note_ids, mut state) = match layout {
        1 => {
            let head: HeadLayout1 =
                serde_json::from_slice(head.value()).map_err(|e| unreadable(e.to_string()))?;
            (head.order, head.notes.map(NoteIds::Listed), head.state)
        }
        LAYOUT => {
            let head: Head =
                serde_json::from_slice(head.value()).map_err(|e| unreadable(e.to_string()))?;
            let prefix = section_prefix(address);
            let read: HashMap<&[u8], &[u8]> = kvs
                .iter()
                .filter_map(|kv| Some((kv.key().strip_prefix(prefix.as_slice())?, kv.value())))
                .collect();
            let mut state = sectioned_state(address, &read, known, head.version, head.revision)?;
            if head.notes.is_none() {
                state.human_notes = match read.get(&b"human_notes"[..]) {
                    Some(value) => section(address, "human_notes", value)?,
                    None => match known {
                        Some(known) => unkeyed_notes(known).cloned(),
                        None => return Err(missing_section(address, "human_notes")),
                    },
                };
            }
            (head.order, head.notes.map(NoteIds::Runs), state)
        }
        other => {
            return Err(LayoutError::NewerLayout {
                key: shown(&head_key),
                layout: other,
            });
        }
    };
    // The revision numbers log keys: one that liza cannot have written would make the
    // next commit reuse or skip revisions.
    match state.revision {
        Some(r) if (1..=i64::MAX / 2).contains(&r) => {}
        other => {
            return Err(unreadable(format!(
                "its revision is {}, not one liza writes",
                other.map_or_else(|| "missing".to_owned(), |r| r.to_string())
            )));
        }
    }
    let task_prefix = task_prefix(address);
    let mut tasks: HashMap<&[u8], &E> = kvs
        .iter()
        .filter_map(|kv| Some((kv.key().strip_prefix(task_prefix.as_slice())?, kv)))
        .collect();
    let known_tasks: HashMap<&TaskId, &Arc<Task>> = known
        .map(|k| k.tasks.iter().map(|t| (&t.id, t)).collect())
        .unwrap_or_default();
    let mut list = Vec::with_capacity(order.len());
    for id in &order {
        let key = task_key(address, id);
        let Some(kv) = tasks.remove(id.as_str().as_bytes()) else {
            match known_tasks.get(id) {
                Some(unchanged) => {
                    list.push(Arc::clone(unchanged));
                    continue;
                }
                None => {
                    return Err(LayoutError::MissingKey {
                        what: format!("task {}", id.as_str()),
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
    state.tasks = TaskList(list);
    if let Some(ids) = note_ids {
        state.human_notes = Some(keyed_notes_read(address, kvs, known, ids)?);
    }
    Ok(state)
}

/// The notes' ids a head lists: one by one (layout 1), or in runs.
enum NoteIds {
    Listed(Vec<String>),
    Runs(Vec<IdRun>),
}

/// The notes `ids` names, each as the read (`kvs`) holds it, else as `known` has it.
fn keyed_notes_read<E: Entry>(
    address: &StoreAddress,
    kvs: &[E],
    known: Option<&State>,
    ids: NoteIds,
) -> Result<Vec<HumanNote>, LayoutError> {
    let note_prefix = note_prefix(address);
    // By the hex of the id: only the notes read are looked at, not every note's key
    // formatted.
    let read: HashMap<&[u8], &E> = kvs
        .iter()
        .filter_map(|kv| Some((kv.key().strip_prefix(note_prefix.as_slice())?, kv)))
        .collect();
    let known_list: &[HumanNote] = known.map_or(&[], |k| k.human_notes());
    // Known notes by id, made the first time a note is not where it was (rarely: notes
    // are appended, and a read from a known state lists them in the same places).
    let mut known_by_id: Option<HashMap<&str, &HumanNote>> = None;
    let head = || shown(&head_key(address));
    if let NoteIds::Runs(runs) = &ids
        && let Some(IdRun::Run([first, last])) = runs
            .iter()
            .find(|run| matches!(run, IdRun::Run([first, last]) if first > last))
    {
        return Err(LayoutError::Unreadable {
            key: head(),
            detail: format!("its notes run from note-{first} down to note-{last}"),
        });
    }
    let ids: Box<dyn Iterator<Item = String>> = match &ids {
        NoteIds::Listed(ids) => Box::new(ids.iter().cloned()),
        NoteIds::Runs(runs) => Box::new(run_ids(runs)),
    };
    let mut notes = Vec::new();
    // liza's own ids rise one by one: only a list that does not is checked for an id
    // listed twice (which would make two notes one key) — at once, so a head listing one
    // note over and over costs no more than the ids before the first repeat.
    let mut last_number = None;
    let mut rising = true;
    let mut seen: Option<std::collections::HashSet<String>> = None;
    for (i, id) in ids.enumerate() {
        let number = note_number(&id);
        rising = rising && number.is_some() && (last_number.is_none() || number > last_number);
        last_number = number;
        if !rising {
            let seen = seen.get_or_insert_with(|| {
                notes
                    .iter()
                    .filter_map(|n: &HumanNote| n.id.clone())
                    .collect()
            });
            if !seen.insert(id.clone()) {
                return Err(LayoutError::Unreadable {
                    key: head(),
                    detail: format!("it lists note {id} twice"),
                });
            }
        }
        let key = || note_key(address, &id);
        if let Some(kv) = (!read.is_empty())
            .then(|| read.get(hex(&id).as_bytes()))
            .flatten()
        {
            let note = serde_json::from_slice::<HumanNote>(kv.value()).map_err(|e| {
                LayoutError::Unreadable {
                    key: shown(&key()),
                    detail: e.to_string(),
                }
            })?;
            if note.id.as_deref() != Some(id.as_str()) {
                return Err(LayoutError::Unreadable {
                    key: shown(&key()),
                    detail: format!(
                        "it holds note {}, not {id}",
                        note.id.as_deref().unwrap_or("without an id")
                    ),
                });
            }
            notes.push(note);
            continue;
        }
        let in_place = known_list
            .get(i)
            .filter(|note| note.id.as_deref() == Some(id.as_str()));
        let note = match in_place {
            Some(note) => note,
            None => {
                let by_id = known_by_id.get_or_insert_with(|| {
                    known_list
                        .iter()
                        .filter_map(|n| Some((n.id.as_deref()?, n)))
                        .collect()
                });
                match by_id.get(id.as_str()) {
                    Some(note) => note,
                    None => {
                        return Err(LayoutError::MissingKey {
                            what: format!("note {id}"),
                            key: shown(&key()),
                        });
                    }
                }
            }
        };
        notes.push(note.clone());
    }
    Ok(notes)
}

/// What turns `before` into `after` in etcd: the head (always: its revision moves), each
/// section, task and note that is new or changed, and a delete for each task and note
/// that is gone.
pub fn changes(address: &StoreAddress, before: &State, after: &State) -> Vec<Change> {
    let old: HashMap<&TaskId, &Arc<Task>> = before.tasks.iter().map(|t| (&t.id, t)).collect();
    // Each list of notes is walked for its keys once: every pass is over every note.
    let (before_keyed, after_keyed) = (keyed_notes(before), keyed_notes(after));
    let mut out = vec![Change::Put {
        key: head_key(address),
        value: head_value_keyed(after, after_keyed.as_deref()),
        lease: 0,
    }];
    let keyed = (before_keyed.is_some(), after_keyed.is_some());
    for (name, value) in changed_sections(before, after, keyed) {
        out.push(Change::Put {
            key: section_key(address, name),
            value,
            lease: 0,
        });
    }
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
    let before_notes = before_keyed.unwrap_or_default();
    let after_notes = after_keyed.unwrap_or_default();
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
        assert_eq!(kvs.len(), 1 + SECTIONS.len() + 1000 + notes);
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
        // A head of a layout this liza does not know: a newer liza's, said as such.
        let mut newer = kvs.clone();
        let mut head: serde_json::Value = serde_json::from_slice(&newer[0].1).unwrap();
        head["layout"] = serde_json::json!(LAYOUT + 1);
        newer[0].1 = serde_json::to_vec(&head).unwrap();
        let err = decode(&address(), &as_read(newer)).unwrap_err();
        assert!(
            matches!(&err, LayoutError::NewerLayout { layout, .. } if *layout == LAYOUT + 1),
            "{err}"
        );
        assert!(err.to_string().contains("upgrade liza"), "{err}");
        // The head and its sections, one task: the others are missing.
        let first_task = 1 + SECTIONS.len();
        let missing = decode(&address(), &as_read(kvs[..=first_task].to_vec())).unwrap_err();
        assert!(
            matches!(&missing, LayoutError::MissingKey { what, .. } if what == "task task-0001"),
            "{missing}"
        );
        // A section missing.
        let mut no_goal = kvs.clone();
        no_goal.retain(|(key, _)| key != b"team/p/head/goal");
        let missing = decode(&address(), &as_read(no_goal)).unwrap_err();
        assert!(
            missing.to_string().contains("team/p/head/goal"),
            "{missing}"
        );
        let mut stray = kvs.clone();
        stray.push((b"team/p/task/t-999".to_vec(), stray[first_task].1.clone()));
        let unlisted = decode(&address(), &as_read(stray)).unwrap_err();
        assert!(
            unlisted.to_string().contains("team/p/task/t-999"),
            "{unlisted}"
        );
        let mut swapped = kvs.clone();
        swapped[first_task].1 = kvs[first_task + 1].1.clone();
        let wrong = decode(&address(), &as_read(swapped)).unwrap_err();
        assert!(wrong.to_string().contains("holds task"), "{wrong}");
        let mut garbage = kvs.clone();
        garbage[0].1 = b"not json".to_vec();
        let unreadable = decode(&address(), &as_read(garbage)).unwrap_err();
        assert!(
            matches!(unreadable, LayoutError::Unreadable { .. }),
            "{unreadable}"
        );
        let mut bad_section = kvs.clone();
        bad_section[1].1 = b"{".to_vec();
        let unreadable = decode(&address(), &as_read(bad_section)).unwrap_err();
        assert!(
            unreadable.to_string().contains("team/p/head/"),
            "{unreadable}"
        );
        let mut future = kvs;
        future[0].1 = br#"{"layout":3}"#.to_vec();
        let unknown = decode(&address(), &as_read(future)).unwrap_err();
        assert!(unknown.to_string().contains("upgrade liza"), "{unknown}");
    }

    /// `state` with `n` notes more, ids `note-1`…, and one written by a person among them.
    fn with_notes(mut state: State, n: usize) -> State {
        let notes = state.human_notes.get_or_insert_with(Vec::new);
        notes.clear();
        for i in 1..=n {
            let id = if i == n / 2 {
                "from-ann".to_owned()
            } else {
                format!("note-{i}")
            };
            notes.push(HumanNote {
                id: Some(id),
                timestamp: None,
                message: format!("note {i}"),
                target: Some("all".into()),
                seen_by: None,
                extra: Default::default(),
            });
        }
        state
    }

    #[test]
    fn the_head_stays_small_however_many_notes_and_a_note_writes_only_it_and_the_head() {
        let before = with_notes(
            liza_model::bench::generate_state(50, 2600, Timestamp::now()),
            2000,
        );
        let kvs = encode(&address(), &before);
        let head = &kvs[0].1;
        assert!(
            head.len() < 1024,
            "{} bytes: {}",
            head.len(),
            String::from_utf8_lossy(head)
        );
        assert_eq!(decode(&address(), &as_read(kvs.clone())).unwrap(), before);
        let after = with_notes(before.clone(), 2001);
        let out = changes(&address(), &before, &after);
        let written: Vec<String> = out
            .iter()
            .map(|c| match c {
                Change::Put { key, .. } => String::from_utf8_lossy(key).into_owned(),
                Change::Delete(key) => format!("delete {}", String::from_utf8_lossy(key)),
            })
            .collect();
        assert_eq!(
            written,
            [
                "team/p/head".to_owned(),
                format!("team/p/note/{}", hex("note-2001"))
            ]
        );
    }

    #[test]
    fn a_change_to_one_section_writes_only_it_and_a_read_of_what_changed_decodes_it() {
        let before = liza_model::bench::generate_state(5, 200, Timestamp::now());
        let mut after = before.clone();
        after.revision = Some(after.revision() as i64 + 1);
        after.goal.description = "Ship it".into();
        let out = changes(&address(), &before, &after);
        let keys: Vec<&[u8]> = out
            .iter()
            .map(|c| match c {
                Change::Put { key, .. } | Change::Delete(key) => key.as_slice(),
            })
            .collect();
        assert_eq!(keys, [&b"team/p/head"[..], b"team/p/head/goal"]);
        // What changed alone, on what was known: the state after.
        let read: Vec<KeyValue> = out
            .into_iter()
            .map(|c| match c {
                Change::Put { key, value, .. } => KeyValue {
                    key,
                    value,
                    ..KeyValue::default()
                },
                Change::Delete(_) => unreachable!("nothing deleted"),
            })
            .collect();
        assert_eq!(
            decode_since(&address(), &read, Some(&before)).unwrap(),
            after
        );
    }

    #[test]
    fn notes_moved_by_hand_are_read_from_where_they_were_known_and_a_new_one_from_its_key() {
        let before = with_notes(
            liza_model::bench::generate_state(2, 200, Timestamp::now()),
            6,
        );
        let mut after = before.clone();
        after.revision = Some(after.revision() as i64 + 1);
        let notes = after.human_notes.as_mut().unwrap();
        notes.swap(0, 4);
        notes.remove(2);
        notes.push(
            with_notes(before.clone(), 7)
                .human_notes
                .unwrap()
                .pop()
                .unwrap(),
        );
        let out = changes(&address(), &before, &after);
        let read: Vec<KeyValue> = out
            .into_iter()
            .filter_map(|c| match c {
                Change::Put { key, value, .. } => Some(KeyValue {
                    key,
                    value,
                    ..KeyValue::default()
                }),
                Change::Delete(_) => None,
            })
            .collect();
        assert_eq!(
            decode_since(&address(), &read, Some(&before)).unwrap(),
            after
        );
    }

    #[test]
    fn note_ids_in_runs_read_back_exactly_as_listed() {
        let cases: [&[&str]; 5] = [
            &["note-1", "note-2", "note-3"],
            &["note-0", "note-1", "note-01", "note-2", "note-4", "note-5"],
            &["note-9", "note-8", "x", "note-10", "note-11"],
            &["note-18446744073709551615", "note-0"],
            &[],
        ];
        for ids in cases {
            let runs = id_runs(ids.iter().copied());
            let back: Vec<String> = run_ids(&runs).collect();
            assert_eq!(back, ids, "{runs:?}");
        }
        assert_eq!(
            id_runs(["note-1", "note-2", "note-3", "ann", "note-4"].into_iter()),
            [
                IdRun::Run([1, 3]),
                IdRun::Id("ann".into()),
                IdRun::Run([4, 4])
            ]
        );
    }

    #[test]
    fn a_head_listing_more_notes_than_there_are_fails_at_the_first_missing_one() {
        let state = with_notes(
            liza_model::bench::generate_state(2, 200, Timestamp::now()),
            3,
        );
        let mut kvs = encode(&address(), &state);
        let mut head: serde_json::Value = serde_json::from_slice(&kvs[0].1).unwrap();
        head["notes"] = serde_json::json!([[1, u64::MAX]]);
        kvs[0].1 = serde_json::to_vec(&head).unwrap();
        let err = decode(&address(), &as_read(kvs)).unwrap_err();
        assert!(
            matches!(&err, LayoutError::MissingKey { what, .. } if what == "note note-1"),
            "{err}"
        );
    }

    #[test]
    fn note_keys_and_runs_that_do_not_add_up_are_refused_naming_the_key() {
        let state = with_notes(
            liza_model::bench::generate_state(2, 200, Timestamp::now()),
            4,
        );
        let kvs = encode(&address(), &state);
        assert!(decode(&address(), &as_read(kvs.clone())).is_ok());
        let with_head = |notes: serde_json::Value| {
            let mut kvs = kvs.clone();
            let mut head: serde_json::Value = serde_json::from_slice(&kvs[0].1).unwrap();
            head["notes"] = notes;
            kvs[0].1 = serde_json::to_vec(&head).unwrap();
            decode(&address(), &as_read(kvs)).unwrap_err().to_string()
        };
        let err = with_head(serde_json::json!([[1, 1], "from-ann", [4, 3]]));
        assert!(
            err.contains("note-4 down to note-3") && err.contains("team/p/head"),
            "{err}"
        );
        let err = with_head(serde_json::json!([[1, 1], "from-ann", [3, 4], [4, 4]]));
        assert!(err.contains("lists note note-4 twice"), "{err}");
        let err = with_head(serde_json::json!(vec![[1, 1]; 200_000]));
        assert!(err.contains("lists note note-1 twice"), "{err}");
        // A note key that holds another note.
        let mut moved = kvs.clone();
        let three = note_key(&address(), "note-3");
        let kv = moved.iter_mut().find(|(k, _)| *k == three).unwrap();
        let mut note: serde_json::Value = serde_json::from_slice(&kv.1).unwrap();
        note["id"] = "note-4".into();
        kv.1 = serde_json::to_vec(&note).unwrap();
        let err = decode(&address(), &as_read(moved)).unwrap_err().to_string();
        assert!(
            err.contains("it holds note note-4, not note-3") && err.contains(&shown(&three)),
            "{err}"
        );
    }

    /// The keys layout 1 wrote for `state`: the head with the rest of the state and the
    /// notes' ids (as the liza before layout 2 did), each task and each note.
    fn layout_1(state: &State) -> Vec<(Vec<u8>, Vec<u8>)> {
        layout_1_with(state, false)
    }

    /// [`layout_1`], the notes inline in the head when `inline` (as an older liza kept
    /// them, ids or not).
    fn layout_1_with(state: &State, inline: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut rest = state.clone();
        rest.tasks = TaskList::default();
        let notes: Option<Vec<String>> = keyed_notes(state)
            .filter(|_| !inline)
            .map(|notes| notes.iter().map(|(id, _)| (*id).to_owned()).collect());
        if notes.is_some() {
            rest.human_notes = None;
        }
        // Typed, as that liza wrote it (a JSON map would sort the agents by id).
        #[derive(Serialize)]
        struct Written<'a> {
            order: Vec<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            notes: Option<Vec<String>>,
            state: State,
        }
        let head = Written {
            order: state.tasks.iter().map(|t| t.id.as_str()).collect(),
            notes,
            state: rest,
        };
        let mut kvs = vec![(head_key(&address()), serde_json::to_vec(&head).unwrap())];
        kvs.extend(encode(&address(), state).into_iter().filter(|(key, _)| {
            key.starts_with(b"team/p/task/") || (!inline && key.starts_with(b"team/p/note/"))
        }));
        kvs
    }

    #[test]
    fn a_blackboard_of_layout_1_reads_and_upgrades_and_a_liza_of_layout_1_refuses_layout_2() {
        let state = with_notes(
            liza_model::bench::generate_state(4, 300, Timestamp::now()),
            5,
        );
        let old = layout_1(&state);
        let read = as_read(old.clone());
        assert!(is_layout_1(&address(), &read));
        assert_eq!(decode(&address(), &read).unwrap(), state);
        // Upgraded: the head and every section rewritten, tasks and notes untouched.
        let mut keys: HashMap<Vec<u8>, Vec<u8>> = old.into_iter().collect();
        for change in upgrade(&address(), &state, &read) {
            let Change::Put { key, value, .. } = change else {
                panic!("an upgrade deletes nothing")
            };
            assert!(
                key == b"team/p/head" || key.starts_with(b"team/p/head/"),
                "{}",
                String::from_utf8_lossy(&key)
            );
            keys.insert(key, value);
        }
        let read = as_read(keys.into_iter().collect());
        assert!(!is_layout_1(&address(), &read));
        assert_eq!(decode(&address(), &read).unwrap(), state);
        // Notes a layout-1 head held inline though each has an id of its own get their
        // keys in the upgrade.
        let inline = layout_1_with(&state, true);
        assert!(
            !inline
                .iter()
                .any(|(key, _)| key.starts_with(b"team/p/note/"))
        );
        let inline_read = as_read(inline.clone());
        assert_eq!(decode(&address(), &inline_read).unwrap(), state);
        let mut keys: HashMap<Vec<u8>, Vec<u8>> = inline.into_iter().collect();
        for change in upgrade(&address(), &state, &inline_read) {
            if let Change::Put { key, value, .. } = change {
                keys.insert(key, value);
            }
        }
        assert_eq!(
            decode(&address(), &as_read(keys.into_iter().collect())).unwrap(),
            state
        );
        // Notes without ids of their own stay whole: in the head (layout 1), in their
        // section (layout 2).
        let mut unkeyed = state.clone();
        unkeyed.human_notes.as_mut().unwrap()[1].id = None;
        assert_eq!(
            decode(&address(), &as_read(layout_1(&unkeyed))).unwrap(),
            unkeyed
        );
        assert_eq!(
            decode(&address(), &as_read(encode(&address(), &unkeyed))).unwrap(),
            unkeyed
        );
        // A liza that knows only layout 1 reads the head as its own and is refused,
        // told why.
        let head = &encode(&address(), &state)[0].1;
        let err = serde_json::from_slice::<HeadLayout1>(head).err().unwrap();
        assert!(err.to_string().contains("upgrade liza"), "{err}");
        // Either layout's revision.
        assert_eq!(head_revision(head).unwrap(), state.revision.unwrap());
        assert_eq!(
            head_revision(&layout_1(&state)[0].1).unwrap(),
            state.revision.unwrap()
        );
    }
}
