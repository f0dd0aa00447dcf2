//! What this checkout's processes last read or wrote of the blackboard in etcd, kept in
//! `.liza/etcd.known` (specs/shared-store.md *A transaction*, "a new process"): a new
//! `liza` process starts from it as a long-lived one starts from what it read before —
//! it asks etcd only for the keys changed since, and commits at once, guarded by "nothing
//! changed since" (a conflict brings what changed). Agents run liza one process per
//! command, so without it each would read the whole blackboard first.
//!
//! The file is a journal: a whole state, then what each commit changed, each record
//! with the etcd revision it leads to and its own hash. The checkout's writer whose turn
//! it is (`host_lock`) catches up on the records appended since it last looked — a few
//! keys, not the whole blackboard — and appends its commit before it lets the turn go, so
//! the next process of the checkout starts from the newest state and does not lose a race
//! to the one before it. A damaged or torn record ends what is read (the state before it
//! is still a state the blackboard was at); a foreign or old file only means a full read.
//! Written without fsync (it is a cache); rewritten whole, by a rename, when the records
//! outgrow the state.
//!
//! *Handed over at the send.* The writer whose turn it is appends the state its commit
//! leads to *before* it sends it — as pending: at the etcd revision it will have if etcd
//! applies it next (its base's, plus one), with the value of its own the commit writes to
//! the `commit` key (`p` entry) — and lets the turn go. The checkout's next writer builds
//! on it while etcd writes it, and its own commit is guarded by that key holding that
//! value, written at exactly that revision: if the
//! commit before it was refused, or landed at another revision, the next one is refused
//! too, reads the blackboard whole (never what changed since a state that may not be),
//! and runs again. So the checkout's commits follow each other on the wire, and etcd
//! writes them to its log together, instead of one round trip after another. Once its
//! commit is applied at that revision, the sender appends an empty record at the same
//! revision when the turn is free: the state before it is applied.
//!
//! ```text
//! liza-etcd-known/4/<liza version>
//! <store address>
//! <nonce: drawn anew each time the file is written whole>
//! r <etcd revision> <payload length>\n<payload> <blake3 of the record up to here>\n
//! ```
//!
//! A payload is entries `s <key length> <value length>\n<key><value>` (a state key:
//! the head, a section, a task, a note), `d <key length>\n<key>` (a key deleted), `l …` as `s`
//! (a liveness record: each record holds them all) and `p <key length>\n<key>` (the
//! record is pending: the `commit` key value that proves it). The first record holds every state
//! key; the head a record holds says which tasks and notes there are.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use liza_etcd::{Change, KeyValue, StoreAddress};

use super::group_commit::Known;
use super::layout::{self, Borrowed};

const FORMAT: &str = concat!("liza-etcd-known/4/", env!("CARGO_PKG_VERSION"));

/// Records appended after the whole state, at most, before the file is written whole
/// again (and at most as many bytes as the whole state: a new process reads them all).
const MAX_RECORDS: usize = 512;
const MAX_GROWTH: u64 = 2;

/// The file of the checkout whose `.liza/` is `dir`.
pub(super) fn path(dir: &Path) -> PathBuf {
    dir.join("etcd.known")
}

/// What this process last read of a file, or wrote to it: where its good records end,
/// and the state they lead to.
struct Kept {
    /// The file read (device, inode), and its header, whose last line is drawn anew
    /// each time the file is written whole: a file written whole again is another one,
    /// even where the filesystem gives it the inode of the one before.
    file: (u64, u64),
    header: Vec<u8>,
    /// The end of the last whole record read or written.
    end: u64,
    /// Whether the file holds nothing after `end` that is not a whole record (a
    /// damaged or torn one: the next save writes the file whole again).
    clean: bool,
    /// The size of the first record (the whole state), and how many follow it.
    base: u64,
    records: usize,
    known: Known,
}

fn kept() -> &'static Mutex<HashMap<PathBuf, Kept>> {
    static KEPT: OnceLock<Mutex<HashMap<PathBuf, Kept>>> = OnceLock::new();
    KEPT.get_or_init(Default::default)
}

/// The etcd revision of the state this process last read at `path` or kept there (0:
/// none): the file holds at least that.
pub(super) fn revision_seen(path: &Path) -> i64 {
    kept()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(path)
        .map_or(0, |k| k.known.revision)
}

/// The state kept at `path` for `address` when it is newer than what this process last
/// read there or wrote: only the records appended since are read, unless the file was
/// written whole again (then all of it). `None`: nothing newer, or no usable file.
pub(super) fn newer(path: &Path, address: &StoreAddress) -> Option<Known> {
    let mut all = kept().lock().unwrap_or_else(|e| e.into_inner());
    let mut file = File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    let id = (meta.dev(), meta.ino());
    match all.get_mut(path) {
        Some(k) if k.file == id && starts_with(&mut file, &k.header) => {
            if meta.len() <= k.end {
                k.clean = meta.len() == k.end;
                return None;
            }
            let was_pending = k.known.pending.is_some();
            let mut tail = Vec::with_capacity((meta.len() - k.end) as usize);
            file.seek(SeekFrom::Start(k.end)).ok()?;
            file.read_to_end(&mut tail).ok()?;
            let before = k.known.revision;
            let (records, read) = records(&tail, k.known.revision);
            k.clean = read == tail.len();
            for record in records {
                let Some(next) = apply(address, &k.known, &record) else {
                    k.clean = false;
                    break;
                };
                k.known = next;
                k.end += record.length;
                k.records += 1;
            }
            let confirmed = was_pending && k.known.pending.is_none();
            (k.known.revision > before || confirmed).then(|| k.known.clone())
        }
        _ => {
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            file.seek(SeekFrom::Start(0)).ok()?;
            file.read_to_end(&mut bytes).ok()?;
            let loaded = load(&bytes, address, id)?;
            let known = loaded.known.clone();
            let newer = all
                .get(path)
                .is_none_or(|k| k.known.revision < known.revision || known.replaces(&k.known));
            all.insert(path.to_path_buf(), loaded);
            newer.then_some(known)
        }
    }
}

/// Whether `file` starts with `header` (read from its start).
fn starts_with(file: &mut File, header: &[u8]) -> bool {
    let mut start = vec![0; header.len()];
    file.seek(SeekFrom::Start(0)).is_ok() && file.read_exact(&mut start).is_ok() && start == header
}

/// Keeps `known` at `path` for the checkout's next processes, if it is newer than the
/// file's last record: appended as what changed since that record, or the file written
/// whole again. To be called by the checkout's writer whose turn it is (`host_lock`),
/// after [`newer`]. A failure is only a cache not written; whether `known` was written.
pub(super) fn save(path: &Path, address: &StoreAddress, known: &Known) -> bool {
    let mut all = kept().lock().unwrap_or_else(|e| e.into_inner());
    let appended = match all.get_mut(path) {
        // A state only sent is replaced at its revision by the one applied there
        // (written whole: records follow each other in revision order).
        Some(k) if known.replaces(&k.known) => false,
        Some(k) if k.known.revision >= known.revision => return false,
        Some(k)
            if k.clean && k.records < MAX_RECORDS && k.end < k.base.saturating_mul(MAX_GROWTH) =>
        {
            append(path, address, k, known)
        }
        _ => false,
    };
    if appended {
        return true;
    }
    match write_whole(path, address, known) {
        Ok(kept) => {
            all.insert(path.to_path_buf(), kept);
            true
        }
        Err(e) => {
            all.remove(path);
            tracing::debug!(error = %e, "could not keep the etcd state for the next process");
            false
        }
    }
}

/// Records that the pending state this process kept at `path` — at `revision`, proven
/// by `proof` — was applied, if it is still the file's last record: an empty record at
/// its revision. To be called with the turn, as [`save`].
pub(super) fn confirm(path: &Path, revision: i64, proof: &[u8]) {
    let mut all = kept().lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = all.get_mut(path) else { return };
    if k.known.revision != revision || k.known.pending.as_deref() != Some(proof) {
        return;
    }
    let mut known = k.known.clone();
    known.pending = None;
    // A file another writer appended to since has its own newer record: nothing to say.
    let _ = append_record(path, k, &record(revision, &[]), known);
}

/// Appends to the file `k` read what changed from its state to `known`; false when the
/// file is no longer the one read (it is then written whole).
fn append(path: &Path, address: &StoreAddress, k: &mut Kept, known: &Known) -> bool {
    let mut payload = Vec::new();
    for change in layout::changes(address, &k.known.state, &known.state) {
        match change {
            Change::Put { key, value, .. } => entry(&mut payload, "s", &key, Some(&value)),
            Change::Delete(key) => entry(&mut payload, "d", &key, None),
        }
    }
    if !live_entries(&mut payload, address, known) {
        return false;
    }
    pending_entry(&mut payload, known);
    let record = record(known.revision, &payload);
    append_record(path, k, &record, known.clone())
}

/// Appends `record` to the file `k` read, which then holds `known`; false when the file
/// is no longer the one read.
fn append_record(path: &Path, k: &mut Kept, record: &[u8], known: Known) -> bool {
    let written = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| {
            let meta = file.metadata()?;
            let mut reader = File::open(path)?;
            if (meta.dev(), meta.ino()) != k.file
                || meta.len() != k.end
                || !starts_with(&mut reader, &k.header)
            {
                return Err(std::io::Error::other("the file changed since it was read"));
            }
            file.write_all(record)
        });
    match written {
        Ok(()) => {
            k.end += record.len() as u64;
            k.records += 1;
            k.known = known;
            true
        }
        Err(e) => {
            tracing::debug!(error = %e, "writing the etcd state whole again");
            false
        }
    }
}

/// Writes `known` as the file's only record, by a rename.
fn write_whole(path: &Path, address: &StoreAddress, known: &Known) -> std::io::Result<Kept> {
    let keys: BTreeMap<Vec<u8>, Vec<u8>> =
        layout::encode(address, &known.state).into_iter().collect();
    let mut payload = Vec::with_capacity(keys.iter().map(|(k, v)| k.len() + v.len() + 16).sum());
    for (key, value) in &keys {
        entry(&mut payload, "s", key, Some(value));
    }
    if !live_entries(&mut payload, address, known) {
        return Err(std::io::Error::other(
            "a liveness record does not serialise",
        ));
    }
    pending_entry(&mut payload, known);
    let mut head = header(address);
    head.extend_from_slice(format!("{}\n", nonce()).as_bytes());
    let record = record(known.revision, &payload);
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no directory"))?;
    let mut file = tempfile::Builder::new()
        .prefix(".etcd.known.")
        .tempfile_in(dir)?;
    file.write_all(&head)?;
    file.write_all(&record)?;
    let meta = file.as_file().metadata()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(Kept {
        file: (meta.dev(), meta.ino()),
        header: head,
        end: meta.len(),
        clean: true,
        base: record.len() as u64,
        records: 0,
        known: known.clone(),
    })
}

/// The lines every file for `address` starts with (its last header line, the nonce,
/// follows).
fn header(address: &StoreAddress) -> Vec<u8> {
    format!("{FORMAT}\n{address}\n").into_bytes()
}

/// A line no other writing of the file has: this process and this instant.
fn nonce() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{:x}.{:x}.{:x}",
        std::process::id(),
        now.as_secs(),
        now.subsec_nanos()
    )
}

fn entry(payload: &mut Vec<u8>, kind: &str, key: &[u8], value: Option<&[u8]>) {
    let line = match value {
        Some(value) => format!("{kind} {} {}\n", key.len(), value.len()),
        None => format!("{kind} {}\n", key.len()),
    };
    payload.extend_from_slice(line.as_bytes());
    payload.extend_from_slice(key);
    payload.extend_from_slice(value.unwrap_or_default());
}

/// Every liveness record of `known`, as `l` entries.
fn live_entries(payload: &mut Vec<u8>, address: &StoreAddress, known: &Known) -> bool {
    for (agent, record) in &known.live.0 {
        let key = address.key(&format!("live/{}.{}", agent.as_str(), record.generation));
        let Ok(value) = serde_json::to_vec(record) else {
            return false;
        };
        entry(payload, "l", &key, Some(&value));
    }
    true
}

/// The `p` entry of a pending state.
fn pending_entry(payload: &mut Vec<u8>, known: &Known) {
    if let Some(key) = &known.pending {
        entry(payload, "p", key, None);
    }
}

fn record(revision: i64, payload: &[u8]) -> Vec<u8> {
    let mut record = format!("r {revision} {}\n", payload.len()).into_bytes();
    record.extend_from_slice(payload);
    record.push(b' ');
    let hash = blake3::hash(&record);
    record.extend_from_slice(hash.to_hex().as_bytes());
    record.push(b'\n');
    record
}

/// One record as read: its revision, its entries, its length in the file. One without
/// entries at the revision of the one before it says that pending state was applied.
struct Record<'a> {
    revision: i64,
    /// Borrowed from the bytes read: a whole file's keys are decoded where they lie.
    state: Vec<Borrowed<'a>>,
    deleted: Vec<&'a [u8]>,
    live: Vec<KeyValue>,
    pending: Option<Vec<u8>>,
    length: u64,
}

/// The whole records at the start of `bytes`, each at a revision after the one before
/// it (the first after `after`), and how many bytes they take.
fn records(bytes: &[u8], mut after: i64) -> (Vec<Record<'_>>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(record) = one_record(&bytes[at..]) {
        let confirms = record.revision == after && record.is_empty();
        if record.revision <= after && !confirms {
            break;
        }
        after = record.revision;
        at += record.length as usize;
        out.push(record);
    }
    (out, at)
}

impl Record<'_> {
    fn is_empty(&self) -> bool {
        self.state.is_empty()
            && self.deleted.is_empty()
            && self.live.is_empty()
            && self.pending.is_none()
    }
}

fn one_record(bytes: &[u8]) -> Option<Record<'_>> {
    let mut rest = bytes;
    let header = std::str::from_utf8(line(&mut rest)?).ok()?;
    let mut parts = header.split(' ');
    if parts.next()? != "r" {
        return None;
    }
    let revision: i64 = parts.next()?.parse().ok()?;
    let length: usize = parts.next()?.parse().ok()?;
    let start = header.len() + 1;
    let hashed = start.checked_add(length)?.checked_add(1)?;
    let end = hashed.checked_add(65)?;
    if bytes.len() < end || bytes[hashed - 1] != b' ' || bytes[end - 1] != b'\n' {
        return None;
    }
    if blake3::hash(&bytes[..hashed]).to_hex().as_bytes() != &bytes[hashed..end - 1] {
        return None;
    }
    let mut payload = &bytes[start..start + length];
    let mut record = Record {
        revision,
        state: Vec::new(),
        deleted: Vec::new(),
        live: Vec::new(),
        pending: None,
        length: end as u64,
    };
    while !payload.is_empty() {
        let header = std::str::from_utf8(line(&mut payload)?).ok()?;
        let mut parts = header.split(' ');
        let kind = parts.next()?;
        let key_len: usize = parts.next()?.parse().ok()?;
        if kind == "d" || kind == "p" {
            let key = payload.get(..key_len)?;
            payload = &payload[key_len..];
            if kind == "d" {
                record.deleted.push(key);
            } else {
                record.pending = Some(key.to_vec());
            }
            continue;
        }
        let value_len: usize = parts.next()?.parse().ok()?;
        let both = key_len.checked_add(value_len)?;
        let (key, value) = (payload.get(..key_len)?, payload.get(key_len..both)?);
        payload = &payload[both..];
        match kind {
            "s" => record.state.push(Borrowed { key, value }),
            "l" => record.live.push(KeyValue {
                key: key.to_vec(),
                value: value.to_vec(),
                ..Default::default()
            }),
            _ => return None,
        }
    }
    Some(record)
}

/// A whole file: its records' keys merged, then decoded once.
fn load(bytes: &[u8], address: &StoreAddress, file: (u64, u64)) -> Option<Kept> {
    let mut rest = bytes.strip_prefix(header(address).as_slice())?;
    line(&mut rest)?;
    let head = &bytes[..bytes.len() - rest.len()];
    let body = rest;
    let (records, read) = records(body, 0);
    let (first, rest) = records.split_first()?;
    let mut keys: BTreeMap<&[u8], &[u8]> = BTreeMap::new();
    for record in &records {
        for kv in &record.state {
            keys.insert(kv.key, kv.value);
        }
        for key in &record.deleted {
            keys.remove(key);
        }
    }
    // A confirmation (an empty record at the revision of the one before it) only says
    // that state was applied: the revision and liveness records are that state's.
    let confirmed = matches!(records.as_slice(), [.., before, last]
        if last.is_empty() && last.revision == before.revision);
    let last = if confirmed {
        &records[records.len() - 2]
    } else {
        records.last()?
    };
    let kvs: Vec<Borrowed<'_>> = keys
        .into_iter()
        .map(|(key, value)| Borrowed { key, value })
        .collect();
    let state = Arc::new(layout::decode_since(address, &kvs, None).ok()?);
    let live = super::live_records(&address.key("live/"), &last.live);
    Some(Kept {
        file,
        header: head.to_vec(),
        end: (head.len() + read) as u64,
        clean: head.len() + read == bytes.len(),
        base: first.length,
        records: rest.len(),
        known: Known {
            revision: last.revision,
            state,
            live,
            pending: last.pending.clone().filter(|_| !confirmed),
        },
    })
}

/// The state `record`, appended after `known`'s, leads to.
fn apply(address: &StoreAddress, known: &Known, record: &Record) -> Option<Known> {
    if record.revision == known.revision && record.is_empty() && known.pending.is_some() {
        return Some(Known {
            pending: None,
            ..known.clone()
        });
    }
    if record.revision <= known.revision {
        return None;
    }
    let state = layout::decode_since(address, &record.state, Some(&known.state)).ok()?;
    Some(Known {
        revision: record.revision,
        state: Arc::new(state),
        live: super::live_records(&address.key("live/"), &record.live),
        pending: record.pending.clone(),
    })
}

/// The next line of `rest`, taken off it.
fn line<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let at = rest.iter().position(|b| *b == b'\n')?;
    let (l, r) = rest.split_at(at);
    *rest = &r[1..];
    Some(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::liveness::LiveRecords;
    use liza_model::Timestamp;
    use liza_model::model::{HumanNote, State};

    fn address() -> StoreAddress {
        "etcd://127.0.0.1:2379/team/known".parse().unwrap()
    }

    fn known(revision: i64, state: State) -> Known {
        Known {
            revision,
            state: Arc::new(state),
            live: LiveRecords::default(),
            pending: None,
        }
    }

    /// `state` with a note more, at the next revision.
    fn noted(state: &State, n: usize) -> State {
        let mut next = state.clone();
        next.revision = Some(state.revision() as i64 + 1);
        next.human_notes
            .get_or_insert_with(Vec::new)
            .push(HumanNote {
                id: Some(format!("note-{n}")),
                timestamp: None,
                message: format!("note {n}"),
                target: Some("all".into()),
                seen_by: None,
                extra: Default::default(),
            });
        next
    }

    /// What a new process of the checkout finds (this process forgets what it read).
    fn fresh_process_reads(path: &Path) -> Option<Known> {
        kept().lock().unwrap().remove(path);
        newer(path, &address())
    }

    #[test]
    fn commits_are_appended_as_what_changed_and_a_new_process_reads_the_newest_state() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let mut state = liza_model::bench::generate_state(20, 2000, Timestamp::now());
        save(&path, &address(), &known(10, state.clone()));
        let whole = std::fs::metadata(&path).unwrap().len();
        for n in 0..5 {
            state = noted(&state, n);
            save(&path, &address(), &known(11 + n as i64, state.clone()));
        }
        let grown = std::fs::metadata(&path).unwrap().len() - whole;
        // Five records of a note and the head each, not five whole states.
        assert!(grown / 5 < whole / 4, "{grown} bytes appended to {whole}");
        let read = fresh_process_reads(&path).unwrap();
        assert_eq!(read.revision, 15);
        assert_eq!(*read.state, state);
    }

    /// A state handed over at the send is read as pending, with its proof, by a new
    /// process and by one that read the file before; once confirmed, as applied — and a
    /// pending state replaced at its revision (its commit was refused) is read as the
    /// one that replaced it.
    #[test]
    fn a_pending_state_is_read_as_pending_until_it_is_confirmed_or_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let state = liza_model::bench::generate_state(5, 500, Timestamp::now());
        save(&path, &address(), &known(10, state.clone()));
        let other_reads = |path: &Path| {
            // Another process: what it read before is kept apart from this one's.
            let mine = kept().lock().unwrap().remove(path);
            let read = newer(path, &address());
            let theirs = kept().lock().unwrap().remove(path);
            if let Some(k) = mine {
                kept().lock().unwrap().insert(path.to_path_buf(), k);
            }
            (read, theirs)
        };
        let (_, mut theirs) = other_reads(&path);
        let next = noted(&state, 1);
        let sent = Known {
            pending: Some(b"team/known/log/000000000011/000".to_vec()),
            ..known(11, next.clone())
        };
        save(&path, &address(), &sent);
        let read = fresh_process_reads(&path).unwrap();
        assert_eq!(
            (read.revision, read.pending.as_deref()),
            (11, sent.pending.as_deref())
        );
        assert_eq!(*read.state, next);
        // Confirmed: an empty record at its revision.
        save(&path, &address(), &known(10, state.clone()));
        save(&path, &address(), &sent);
        confirm(&path, 11, b"team/known/log/000000000011/000");
        let read = fresh_process_reads(&path).unwrap();
        assert_eq!((read.revision, read.pending), (11, None));
        assert_eq!(*read.state, next);
        // A process that read the file before catches up on the confirmation alone.
        let catch_up = |theirs: &mut Option<Kept>| {
            let mine = kept().lock().unwrap().remove(&path);
            if let Some(k) = theirs.take() {
                kept().lock().unwrap().insert(path.clone(), k);
            }
            let read = newer(&path, &address());
            *theirs = kept().lock().unwrap().remove(&path);
            if let Some(k) = mine {
                kept().lock().unwrap().insert(path.clone(), k);
            }
            read
        };
        let read = catch_up(&mut theirs).unwrap();
        assert_eq!((read.revision, read.pending), (11, None));
        // A confirmation of another proof, or of a state no longer the last, is not made.
        let other = Known {
            pending: Some(b"team/known/log/000000000012/000".to_vec()),
            ..known(12, noted(&next, 2))
        };
        save(&path, &address(), &other);
        confirm(&path, 12, b"team/known/log/000000000011/000");
        assert!(fresh_process_reads(&path).unwrap().pending.is_some());
        // Replaced at its revision by the commit that came instead.
        let instead = known(12, noted(&next, 3));
        save(&path, &address(), &instead);
        let read = fresh_process_reads(&path).unwrap();
        assert_eq!((read.revision, read.pending), (12, None));
        assert_eq!(*read.state, *instead.state);
    }

    #[test]
    fn a_process_catches_up_on_what_another_appended_reading_only_that() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let state = liza_model::bench::generate_state(5, 500, Timestamp::now());
        save(&path, &address(), &known(3, state.clone()));
        // This process read it; another appends a commit.
        assert!(fresh_process_reads(&path).is_some());
        let theirs = noted(&state, 1);
        let record = {
            let mut payload = Vec::new();
            for change in layout::changes(&address(), &state, &theirs) {
                if let Change::Put { key, value, .. } = change {
                    entry(&mut payload, "s", &key, Some(&value));
                }
            }
            record(4, &payload)
        };
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(&record).unwrap();
        let caught_up = newer(&path, &address()).unwrap();
        assert_eq!((caught_up.revision, &*caught_up.state), (4, &theirs));
        assert!(newer(&path, &address()).is_none(), "nothing newer since");
    }

    #[test]
    fn a_torn_or_damaged_record_ends_what_is_read_and_the_next_save_writes_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let first = liza_model::bench::generate_state(5, 500, Timestamp::now());
        let second = noted(&first, 1);
        let third = noted(&second, 2);
        save(&path, &address(), &known(1, first.clone()));
        save(&path, &address(), &known(2, second.clone()));
        let good = std::fs::read(&path).unwrap();
        save(&path, &address(), &known(3, third.clone()));
        // Torn: the last record is cut short — the one before is what is read.
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 10]).unwrap();
        let read = fresh_process_reads(&path).unwrap();
        assert_eq!((read.revision, &*read.state), (2, &second));
        // Damaged in the middle of the second record: the first is what is read.
        let mut damaged = good.clone();
        let at = damaged.len() - 80;
        damaged[at] ^= 0x55;
        std::fs::write(&path, &damaged).unwrap();
        let read = fresh_process_reads(&path).unwrap();
        assert_eq!((read.revision, &*read.state), (1, &first));
        // The next save does not append after the damage: it writes the file whole.
        save(&path, &address(), &known(3, third.clone()));
        assert!(
            !std::fs::read(&path)
                .unwrap()
                .starts_with(&damaged[..damaged.len() - 100])
        );
        let read = fresh_process_reads(&path).unwrap();
        assert_eq!((read.revision, &*read.state), (3, &third));
        // Another blackboard's file is not read at all.
        let other: StoreAddress = "etcd://127.0.0.1:2379/team/other".parse().unwrap();
        kept().lock().unwrap().remove(&path);
        assert!(newer(&path, &other).is_none());
    }

    #[test]
    fn records_that_outgrow_the_whole_state_are_folded_into_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let mut state = liza_model::bench::generate_state(2, 100, Timestamp::now());
        save(&path, &address(), &known(1, state.clone()));
        let mut largest = 0;
        for n in 0..200 {
            state = noted(&state, n);
            save(&path, &address(), &known(2 + n as i64, state.clone()));
            largest = largest.max(std::fs::metadata(&path).unwrap().len());
        }
        let whole_now = layout::encode(&address(), &state)
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>() as u64;
        assert!(
            largest < whole_now * (MAX_GROWTH + 1) + 4096,
            "{largest} bytes for a {whole_now}-byte state"
        );
        let read = fresh_process_reads(&path).unwrap();
        assert_eq!((read.revision, &*read.state), (201, &state));
    }

    /// A file written whole again is another file even on the same inode (ext4 hands
    /// inodes back): what a process read of the old one is never the base of a record of
    /// the new one — it reads the new one whole.
    #[test]
    fn a_file_written_whole_again_is_read_whole_even_on_a_reused_inode_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path());
        let mut first = liza_model::bench::generate_state(3, 200, Timestamp::now());
        Arc::make_mut(&mut first.tasks.0[0]).priority = Some(1);
        save(&path, &address(), &known(10, first.clone()));
        assert!(fresh_process_reads(&path).is_some());
        let mine = kept().lock().unwrap().remove(&path).unwrap();
        // Others write it whole twice (the second holds a task changed at the same
        // length), then append a commit; the file is given this process's old inode and
        // its record ends where this process's did.
        let mut second = first.clone();
        second.revision = Some(20);
        Arc::make_mut(&mut second.tasks.0[0]).priority = Some(2);
        let theirs = noted(&second, 1);
        let header = |p: &Path| {
            let bytes = std::fs::read(p).unwrap();
            bytes[..mine.header.len()].to_vec()
        };
        write_whole(&path, &address(), &known(30, second.clone())).unwrap();
        let rewritten = std::fs::read(&path).unwrap();
        assert_ne!(header(&path), mine.header, "a new nonce");
        // Stand in for the filesystem: same inode, and an end at this process's offset.
        let mut kept_again = mine;
        kept_again.file = {
            let meta = std::fs::metadata(&path).unwrap();
            (meta.dev(), meta.ino())
        };
        kept_again.end = rewritten.len() as u64;
        kept().lock().unwrap().insert(path.clone(), kept_again);
        let mut payload = Vec::new();
        for change in layout::changes(&address(), &second, &theirs) {
            if let Change::Put { key, value, .. } = change {
                entry(&mut payload, "s", &key, Some(&value));
            }
        }
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(&record(31, &payload)).unwrap();
        let read = newer(&path, &address()).unwrap();
        assert_eq!((read.revision, &*read.state), (31, &theirs));
        assert_eq!(read.state.tasks.0[0].priority, Some(2));
    }
}
