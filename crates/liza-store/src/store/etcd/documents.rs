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
use crate::store::etcd::layout;
use crate::store::{Document, StoreError};
use liza_etcd::{Change, Condition, EtcdError, TxnOutcome};

/// A chunk's size: a chunk and its framing stay well under etcd's request limit.
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
        let chunk_key = |prefix: &[u8], n: usize| {
            let mut key = prefix.to_vec();
            key.extend_from_slice(format!("{n:04}").as_bytes());
            key
        };
        let pieces: Vec<&[u8]> = if bytes.is_empty() {
            Vec::new()
        } else {
            bytes.chunks(CHUNK).collect()
        };
        for (n, piece) in pieces.iter().enumerate() {
            let key = chunk_key(&chunks, n);
            if let Err(e) = self.call(|c| c.put(&key, piece, 0)) {
                self.drop_chunks(&chunks);
                return Err(e);
            }
        }
        let manifest = Manifest {
            generation: generation.clone(),
            chunks: pieces.len(),
            bytes: bytes.len(),
        };
        let mut changes = vec![Change::Put {
            key: manifest_key.clone(),
            value: serde_json::to_vec(&manifest).expect("a manifest serialises"),
            lease: 0,
        }];
        // The replaced generation goes in the same txn when it fits (else right after).
        let replaced = kept.map(|k| self.generation_prefix(document, &k.manifest.generation));
        let in_txn = kept
            .zip(replaced.as_ref())
            .filter(|(k, _)| k.manifest.chunks < group_commit::max_ops());
        if let Some((k, prefix)) = in_txn {
            changes.extend((0..k.manifest.chunks).map(|n| Change::Delete(chunk_key(prefix, n))));
        }
        let dropped_in_txn = in_txn.is_some();
        let guard = [Condition::ModRevision(
            manifest_key.clone(),
            kept.map_or(0, |k| k.at),
        )];
        let mut unanswered = false;
        let applied = match self.patiently(|c| c.txn(&guard, &changes)) {
            Ok(TxnOutcome::Applied { .. }) => true,
            Ok(TxnOutcome::Conflict { .. }) => false,
            // Sent, no answer: applied if the manifest names this generation now. It may
            // still land later, so its chunks stay (the next write's guard, on the
            // manifest, sees it if it does).
            Err(EtcdError::Indeterminate { .. }) => {
                unanswered = true;
                let now = self.call(|c| c.get(&manifest_key))?;
                now.and_then(|kv| serde_json::from_slice::<Manifest>(&kv.value).ok())
                    .is_some_and(|m| m.generation == generation)
            }
            Err(e) => {
                self.drop_chunks(&chunks);
                return Err(self.fail(e));
            }
        };
        match (applied, replaced) {
            (true, Some(replaced)) if !dropped_in_txn => self.drop_chunks(&replaced),
            (true, _) => {}
            (false, _) if !unanswered => self.drop_chunks(&chunks),
            (false, _) => {}
        }
        Ok(applied)
    }

    /// Deletes the chunks under `prefix` (a generation no manifest names). Best effort:
    /// the write they belong to has succeeded or failed already; left over, they cost
    /// only their space.
    fn drop_chunks(&self, prefix: &[u8]) {
        let dropped = self
            .call(|c| c.keys(prefix, &prefix_end(prefix)))
            .and_then(|keys| {
                let deletes: Vec<Change> = keys.into_iter().map(Change::Delete).collect();
                deletes
                    .chunks(group_commit::max_ops())
                    .try_for_each(|batch| self.call(|c| c.txn(&[], batch)).map(drop))
            });
        if let Err(e) = dropped {
            tracing::warn!(error = %e, generation = %String::from_utf8_lossy(prefix), "could not delete the chunks of a replaced document");
        }
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

    /// Claims the delivery of the alarm `key` (`delivered/<key, hex>`): true for the one
    /// caller that created the claim.
    pub fn claim_delivery(&self, key: &str) -> Result<bool, StoreError> {
        let claim = layout::delivered_key(&self.address, key);
        let guard = [Condition::ModRevision(claim.clone(), 0)];
        let put = [Change::Put {
            key: claim,
            value: Vec::new(),
            lease: 0,
        }];
        match self.patiently(|c| c.txn(&guard, &put)) {
            Ok(TxnOutcome::Applied { .. }) => Ok(true),
            Ok(TxnOutcome::Conflict { .. }) => Ok(false),
            // Unknown whether it was created: not delivering twice beats delivering.
            Err(EtcdError::Indeterminate { .. }) => Ok(false),
            Err(e) => Err(self.fail(e)),
        }
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
