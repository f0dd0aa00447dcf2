//! What this checkout's processes last read or wrote of the blackboard in etcd, kept in
//! `.liza/etcd.known` (specs/shared-store.md *A transaction*, "a new process"): a new
//! `liza` process starts from it as a long-lived one starts from what it read before —
//! it asks etcd only for the keys changed since, and commits at once, guarded by "nothing
//! changed since" (a conflict brings what changed). Agents run liza one process per
//! command, so without it each would read the whole blackboard first.
//!
//! The file holds the state's keys as etcd holds them, with the etcd revision they are
//! the blackboard at, and a hash of all that: a damaged, foreign or stale file only means
//! a full read. Written without fsync (it is a cache), by a rename.
//!
//! ```text
//! liza-etcd-known/1/<liza version>
//! <store address>
//! <etcd revision>
//! s <key length> <value length>\n<key><value>      (the head, tasks and notes)
//! l <key length> <value length>\n<key><value>      (liveness records)
//! end <blake3 of everything above>
//! ```

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use liza_etcd::{Change, KeyValue, StoreAddress};
use liza_model::model::State;

use super::group_commit::Known;
use super::layout;

const FORMAT: &str = concat!("liza-etcd-known/1/", env!("CARGO_PKG_VERSION"));

/// The file of the checkout whose `.liza/` is `dir`.
pub(super) fn path(dir: &Path) -> PathBuf {
    dir.join("etcd.known")
}

/// What this process loaded from or saved to a file: the state and its keys' bytes, so
/// the next save re-encodes only what changed.
struct Kept {
    revision: i64,
    state: Arc<State>,
    keys: BTreeMap<Vec<u8>, Vec<u8>>,
}

fn kept() -> &'static Mutex<HashMap<PathBuf, Kept>> {
    static KEPT: OnceLock<Mutex<HashMap<PathBuf, Kept>>> = OnceLock::new();
    KEPT.get_or_init(Default::default)
}

/// The state kept at `path` for `address`, if the file is whole and names it.
pub(super) fn load(path: &Path, address: &StoreAddress) -> Option<Known> {
    let bytes = std::fs::read(path).ok()?;
    let (body, end) = split_end(&bytes)?;
    if blake3::hash(body).to_hex().as_str() != end {
        return None;
    }
    // The body ends with the line break before `end`.
    let mut rest = body.strip_suffix(b"\n")?;
    if line(&mut rest)? != FORMAT.as_bytes() || line(&mut rest)? != address.to_string().as_bytes() {
        return None;
    }
    let revision: i64 = std::str::from_utf8(line(&mut rest)?).ok()?.parse().ok()?;
    let mut state_kvs = Vec::new();
    let mut live_kvs = Vec::new();
    while !rest.is_empty() {
        let header = line(&mut rest)?;
        let header = std::str::from_utf8(header).ok()?;
        let mut parts = header.split(' ');
        let (kind, key_len, value_len) = (parts.next()?, parts.next()?, parts.next()?);
        let (key_len, value_len): (usize, usize) = (key_len.parse().ok()?, value_len.parse().ok()?);
        if rest.len() < key_len + value_len {
            return None;
        }
        let kv = KeyValue {
            key: rest[..key_len].to_vec(),
            value: rest[key_len..key_len + value_len].to_vec(),
            ..Default::default()
        };
        rest = &rest[key_len + value_len..];
        match kind {
            "s" => state_kvs.push(kv),
            "l" => live_kvs.push(kv),
            _ => return None,
        }
    }
    let state = Arc::new(layout::decode_since(address, &state_kvs, None).ok()?);
    let live = super::live_records(&address.key("live/"), &live_kvs);
    let keys = state_kvs.into_iter().map(|kv| (kv.key, kv.value)).collect();
    kept().lock().unwrap_or_else(|e| e.into_inner()).insert(
        path.to_path_buf(),
        Kept {
            revision,
            state: Arc::clone(&state),
            keys,
        },
    );
    Some(Known {
        revision,
        state,
        live,
    })
}

/// Keeps `known` at `path` for the next process, unless this process kept or loaded as
/// new a state already. A failure is only a cache not written.
pub(super) fn save(path: &Path, address: &StoreAddress, known: &Known) {
    let mut all = kept().lock().unwrap_or_else(|e| e.into_inner());
    let keys = match all.remove(path) {
        Some(k) if k.revision >= known.revision => {
            all.insert(path.to_path_buf(), k);
            return;
        }
        // Only what changed since is encoded again.
        Some(mut k) => {
            for change in layout::changes(address, &k.state, &known.state) {
                match change {
                    Change::Put { key, value, .. } => {
                        k.keys.insert(key, value);
                    }
                    Change::Delete(key) => {
                        k.keys.remove(&key);
                    }
                }
            }
            k.keys
        }
        None => layout::encode(address, &known.state).into_iter().collect(),
    };
    let mut body = Vec::with_capacity(keys.values().map(Vec::len).sum::<usize>() + 64 * 1024);
    body.extend_from_slice(FORMAT.as_bytes());
    body.push(b'\n');
    body.extend_from_slice(address.to_string().as_bytes());
    body.push(b'\n');
    body.extend_from_slice(known.revision.to_string().as_bytes());
    body.push(b'\n');
    let mut entry = |kind: &str, key: &[u8], value: &[u8]| {
        body.extend_from_slice(format!("{kind} {} {}\n", key.len(), value.len()).as_bytes());
        body.extend_from_slice(key);
        body.extend_from_slice(value);
    };
    for (key, value) in &keys {
        entry("s", key, value);
    }
    for (agent, record) in &known.live.0 {
        let key = address.key(&format!("live/{}.{}", agent.as_str(), record.generation));
        let Ok(value) = serde_json::to_vec(record) else {
            return;
        };
        entry("l", &key, &value);
    }
    all.insert(
        path.to_path_buf(),
        Kept {
            revision: known.revision,
            state: Arc::clone(&known.state),
            keys,
        },
    );
    drop(all);
    body.push(b'\n');
    let end = format!("end {}\n", blake3::hash(&body).to_hex());
    body.extend_from_slice(end.as_bytes());
    let Some(dir) = path.parent() else { return };
    let written = tempfile::Builder::new()
        .prefix(".etcd.known.")
        .tempfile_in(dir)
        .and_then(|mut file| {
            file.write_all(&body)?;
            file.persist(path).map_err(|e| e.error)?;
            Ok(())
        });
    if let Err(e) = written {
        tracing::debug!(error = %e, "could not keep the etcd state for the next process");
    }
}

/// The next line of `rest`, taken off it.
fn line<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let at = rest.iter().position(|b| *b == b'\n')?;
    let (l, r) = rest.split_at(at);
    *rest = &r[1..];
    Some(l)
}

/// The body and the hash of its `end` line.
fn split_end(bytes: &[u8]) -> Option<(&[u8], &str)> {
    let trimmed = bytes.strip_suffix(b"\n")?;
    let at = trimmed.iter().rposition(|b| *b == b'\n')? + 1;
    let end = std::str::from_utf8(&trimmed[at..])
        .ok()?
        .strip_prefix("end ")?;
    Some((&bytes[..at], end))
}
