//! What liza keeps beside the blackboard, in etcd: sprint archives and finalized spec
//! texts ([`Document`]), and the alarm log — under the project's prefix, so every host
//! reads what any host wrote.
//!
//! A document can outgrow one etcd request (1.5 MiB), so it is kept in chunks under a
//! generation of its own (`doc/<kind>/<name>/<generation>/<n>`), and then named by its
//! manifest (`doc/<kind>/<name>`) in one txn that also drops the previous generation: a
//! reader, reading the manifest and the chunks at one revision, sees one whole text,
//! never a mix of two.

use serde::{Deserialize, Serialize};

use super::{EtcdStore, prefix_end};
use crate::blackboard::etcd::layout;
use crate::blackboard::etcd::{Change, Condition, EtcdError, TxnOutcome};
use crate::blackboard::store::{Document, StoreError};

/// A chunk's size: a chunk and its framing (base64 on the JSON gateway) stay well under
/// etcd's request limit.
const CHUNK: usize = 512 * 1024;

/// `doc/<kind>/<name>`: which generation holds the text, and its length.
#[derive(Serialize, Deserialize)]
struct Manifest {
    generation: String,
    chunks: usize,
    bytes: usize,
}

impl EtcdStore {
    /// The text of `document`, if it was kept.
    pub fn document(&self, document: &Document) -> Result<Option<Vec<u8>>, StoreError> {
        let manifest_key = self.address.key(&document.key());
        let chunks = self.address.key(&format!("{}/", document.key()));
        let (mut ranges, _) = self.call(|c| {
            c.read_ranges(
                &[(&manifest_key, &[], 0), (&chunks, &prefix_end(&chunks), 0)],
                0,
            )
        })?;
        let chunk_kvs = ranges.pop().unwrap_or_default();
        let Some(manifest) = ranges.pop().unwrap_or_default().into_iter().next() else {
            return Ok(None);
        };
        let damaged = |detail: String| {
            self.fail(EtcdError::BadAnswer {
                detail: format!("{}: {detail}", String::from_utf8_lossy(&manifest_key)),
            })
        };
        let manifest: Manifest = serde_json::from_slice(&manifest.value)
            .map_err(|e| damaged(format!("not a document manifest ({e})")))?;
        let generation = self
            .address
            .key(&format!("{}/{}/", document.key(), manifest.generation));
        // Keys come back in order, and chunk numbers have a fixed width.
        let mut text = Vec::with_capacity(manifest.bytes);
        let mut count = 0;
        for kv in chunk_kvs
            .iter()
            .filter(|kv| kv.key.starts_with(&generation))
        {
            text.extend_from_slice(&kv.value);
            count += 1;
        }
        if count != manifest.chunks || text.len() != manifest.bytes {
            return Err(damaged(format!(
                "{count} of {} chunks, {} of {} bytes",
                manifest.chunks,
                text.len(),
                manifest.bytes
            )));
        }
        Ok(Some(text))
    }

    /// Keeps `bytes` as `document`: the chunks first, then the manifest naming them.
    pub fn keep_document(&self, document: &Document, bytes: &[u8]) -> Result<(), StoreError> {
        let manifest_key = self.address.key(&document.key());
        let previous: Option<Manifest> = self
            .call(|c| c.get(&manifest_key))?
            .and_then(|kv| serde_json::from_slice(&kv.value).ok());
        let generation = format!(
            "{:x}-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
            std::process::id()
        );
        let chunk_key = |generation: &str, n: usize| {
            self.address
                .key(&format!("{}/{generation}/{n:04}", document.key()))
        };
        let pieces: Vec<&[u8]> = if bytes.is_empty() {
            Vec::new()
        } else {
            bytes.chunks(CHUNK).collect()
        };
        for (n, piece) in pieces.iter().enumerate() {
            let key = chunk_key(&generation, n);
            self.call(|c| c.put(&key, piece, 0))?;
        }
        let manifest = Manifest {
            generation,
            chunks: pieces.len(),
            bytes: bytes.len(),
        };
        let mut changes = vec![Change::Put {
            key: manifest_key,
            value: serde_json::to_vec(&manifest).expect("a manifest serialises"),
            lease: 0,
        }];
        if let Some(previous) = previous {
            changes.extend(
                (0..previous.chunks).map(|n| Change::Delete(chunk_key(&previous.generation, n))),
            );
        }
        self.call(|c| c.txn(&[], &changes)).map(drop)
    }

    /// Adds each `(key, line)` to the project's alarms (`alarm/<key, hex>`) unless an
    /// alarm with its key is there; whether each was added.
    pub fn append_alarms(&self, lines: &[(String, String)]) -> Result<Vec<bool>, StoreError> {
        lines
            .iter()
            .map(|(key, line)| {
                let key = layout::alarm_key(&self.address, key);
                let guard = [Condition::ModRevision(key.clone(), 0)];
                let put = [Change::Put {
                    key,
                    value: line.clone().into_bytes(),
                    lease: 0,
                }];
                match self.patiently(|c| c.txn(&guard, &put)) {
                    Ok(TxnOutcome::Applied { .. }) => Ok(true),
                    Ok(TxnOutcome::Conflict { .. }) => Ok(false),
                    Err(e) => Err(self.fail(e)),
                }
            })
            .collect()
    }

    /// Every alarm line, oldest first (lines begin with their time).
    pub fn alarm_lines(&self) -> Result<Vec<String>, StoreError> {
        let prefix = self.address.key("alarm/");
        let (kvs, _) = self.call(|c| c.range(&prefix, &prefix_end(&prefix), 0))?;
        let mut lines: Vec<String> = kvs
            .into_iter()
            .filter_map(|kv| String::from_utf8(kv.value).ok())
            .collect();
        lines.sort();
        Ok(lines)
    }
}
