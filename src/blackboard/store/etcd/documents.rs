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

use super::{EtcdStore, group_commit, prefix_end};
use crate::blackboard::etcd::layout;
use crate::blackboard::etcd::{Change, Condition, EtcdError, TxnOutcome};
use crate::blackboard::store::{Document, StoreError};

/// A chunk's size: a chunk and its framing (base64 on the JSON gateway) stay well under
/// etcd's request limit.
const CHUNK: usize = 512 * 1024;

/// A document as read: its text, and the manifest that named it, at its mod revision.
struct Kept {
    text: Vec<u8>,
    manifest: Manifest,
    at: i64,
}

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
        Ok(self.read_document(document)?.map(|kept| kept.text))
    }

    /// Keeps `bytes` as `document`, whatever was kept before.
    pub fn keep_document(&self, document: &Document, bytes: &[u8]) -> Result<(), StoreError> {
        self.update_document(document, |_| Ok::<_, StoreError>(bytes.to_vec()))
    }

    /// Replaces `document` by what `change` makes of it (`None`: not kept yet), again on
    /// the newer text when another writer replaced it meanwhile: no writer's text is lost.
    pub fn update_document<E: From<StoreError>>(
        &self,
        document: &Document,
        mut change: impl FnMut(Option<&[u8]>) -> Result<Vec<u8>, E>,
    ) -> Result<(), E> {
        loop {
            let kept = self.read_document(document)?;
            let bytes = change(kept.as_ref().map(|k| &k.text[..]))?;
            if self.write_document(document, &bytes, kept.as_ref())? {
                return Ok(());
            }
        }
    }

    /// The text of `document`, its manifest and the manifest's mod revision: the
    /// manifest, then the chunks it names at the revision the manifest was read at.
    fn read_document(&self, document: &Document) -> Result<Option<Kept>, StoreError> {
        let manifest_key = self.address.key(&document.key());
        let damaged = |detail: String| {
            self.fail(EtcdError::BadAnswer {
                detail: format!("{}: {detail}", String::from_utf8_lossy(&manifest_key)),
            })
        };
        let mut tries = 0;
        loop {
            let (kvs, at) = self.call(|c| c.range(&manifest_key, &[], 0))?;
            let Some(kv) = kvs.into_iter().next() else {
                return Ok(None);
            };
            let manifest: Manifest = serde_json::from_slice(&kv.value)
                .map_err(|e| damaged(format!("not a document manifest ({e})")))?;
            let chunks = self.generation_prefix(document, &manifest.generation);
            let chunk_kvs = match self.call(|c| c.range(&chunks, &prefix_end(&chunks), at)) {
                Ok((kvs, _)) => kvs,
                // Compacted past the manifest's revision meanwhile: read again.
                Err(StoreError::Etcd { source, .. }) if source.is_compacted() && tries < 3 => {
                    tries += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            // Keys come back in order, and chunk numbers have a fixed width.
            let text: Vec<u8> = chunk_kvs.iter().flat_map(|kv| kv.value.clone()).collect();
            if chunk_kvs.len() != manifest.chunks || text.len() != manifest.bytes {
                return Err(damaged(format!(
                    "{} of {} chunks, {} of {} bytes",
                    chunk_kvs.len(),
                    manifest.chunks,
                    text.len(),
                    manifest.bytes
                )));
            }
            return Ok(Some(Kept {
                text,
                manifest,
                at: kv.mod_revision,
            }));
        }
    }

    /// `doc/<kind>/<name>/<generation>/`.
    fn generation_prefix(&self, document: &Document, generation: &str) -> Vec<u8> {
        self.address
            .key(&format!("{}/{generation}/", document.key()))
    }

    /// Writes `bytes` as a new generation of `document` and names it in the manifest —
    /// only if the manifest is still the one `kept` was read from (`None`: there was
    /// none); `false`, and this generation's chunks dropped, when another writer was
    /// first. The replaced generation's chunks are dropped.
    fn write_document(
        &self,
        document: &Document,
        bytes: &[u8],
        kept: Option<&Kept>,
    ) -> Result<bool, StoreError> {
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let manifest_key = self.address.key(&document.key());
        let generation = format!(
            "{:x}-{}-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
            std::process::id(),
            WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let chunks = self.generation_prefix(document, &generation);
        let pieces: Vec<&[u8]> = if bytes.is_empty() {
            Vec::new()
        } else {
            bytes.chunks(CHUNK).collect()
        };
        for (n, piece) in pieces.iter().enumerate() {
            let mut key = chunks.clone();
            key.extend_from_slice(format!("{n:04}").as_bytes());
            self.call(|c| c.put(&key, piece, 0))?;
        }
        let manifest = Manifest {
            generation,
            chunks: pieces.len(),
            bytes: bytes.len(),
        };
        let put = [Change::Put {
            key: manifest_key.clone(),
            value: serde_json::to_vec(&manifest).expect("a manifest serialises"),
            lease: 0,
        }];
        let guard = [Condition::ModRevision(
            manifest_key,
            kept.map_or(0, |k| k.at),
        )];
        let applied = matches!(
            self.call(|c| c.txn(&guard, &put))?,
            TxnOutcome::Applied { .. }
        );
        // The chunks no manifest names any more: the replaced generation's, or this
        // one's when another writer was first.
        let stale = match (applied, kept) {
            (true, Some(kept)) => self.generation_prefix(document, &kept.manifest.generation),
            (true, None) => return Ok(true),
            (false, _) => chunks,
        };
        let keys: Vec<Change> = self
            .call(|c| c.keys(&stale, &prefix_end(&stale)))?
            .into_iter()
            .map(Change::Delete)
            .collect();
        for batch in keys.chunks(group_commit::max_ops()) {
            self.call(|c| c.txn(&[], batch))?;
        }
        Ok(applied)
    }

    /// Adds each `(key, line)` to the project's alarms (`alarm/<key, hex>`) unless an
    /// alarm with its key is there; whether each was added.
    pub fn append_alarms(&self, lines: &[(String, String)]) -> Result<Vec<bool>, StoreError> {
        let mut added = Vec::with_capacity(lines.len());
        for (key, line) in lines {
            let key = layout::alarm_key(&self.address, key);
            let guard = [Condition::ModRevision(key.clone(), 0)];
            let put = [Change::Put {
                key: key.clone(),
                value: line.clone().into_bytes(),
                lease: 0,
            }];
            let outcome = match self.patiently(|c| c.txn(&guard, &put)) {
                Ok(TxnOutcome::Applied { .. }) => Ok(true),
                Ok(TxnOutcome::Conflict { .. }) => Ok(false),
                // Sent, no answer: it was added if the key holds this very line.
                Err(EtcdError::Indeterminate { .. }) => self
                    .call(|c| c.get(&key))
                    .map(|kv| kv.is_some_and(|kv| kv.value == line.as_bytes())),
                Err(e) => Err(self.fail(e)),
            };
            match outcome {
                Ok(was_added) => added.push(was_added),
                // The ones added are reported; the others are raised again next time.
                Err(e) if added.contains(&true) => {
                    tracing::warn!(error = %e, "some alarms could not be raised; they are raised again when seen again");
                    added.resize(lines.len(), false);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(added)
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
