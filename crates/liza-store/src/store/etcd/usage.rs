//! The ledger and the usage limits in etcd (specs/ledger.md): `ledger/<run>`, created once
//! (guarded by its absence, so a retried append never counts a run twice), and
//! `quota/<backend>/<account>`, replaced by compare-and-swap so the later reset wins
//! whatever host records it.

use super::{EtcdStore, prefix_end};
use crate::store::StoreError;
use crate::store::etcd::layout;
use liza_etcd::{Change, Condition, EtcdError, TxnOutcome};
use liza_model::ledger::LedgerEntry;
use liza_model::quota::{self, QuotaHit};

/// Keys read per request when listing: a page stays far under a gRPC answer's size.
const PAGE: i64 = 2000;

impl EtcdStore {
    /// Adds each run unless its key exists; whether each was added.
    pub fn append_ledger(&self, entries: &[LedgerEntry]) -> Result<Vec<bool>, StoreError> {
        let mut added = Vec::with_capacity(entries.len());
        for entry in entries {
            let key = layout::ledger_key(&self.address, &entry.run);
            let value = entry.to_line().into_bytes();
            let guard = [Condition::ModRevision(key.clone(), 0)];
            let put = [Change::Put {
                key: key.clone(),
                value: value.clone(),
                lease: 0,
            }];
            let mut tries = 0;
            let outcome = loop {
                tries += 1;
                match self.patiently(|c| c.txn(&guard, &put)) {
                    Ok(TxnOutcome::Applied { .. }) => break true,
                    Ok(TxnOutcome::Conflict { .. }) => break false,
                    // Sent, no answer: added if the key holds this very entry; not there,
                    // it was not applied and is sent again (its guard makes that safe).
                    Err(EtcdError::Indeterminate { .. }) => match self.call(|c| c.get(&key))? {
                        Some(kv) => break kv.value == value,
                        None if tries < 3 => {}
                        None => {
                            return Err(self.fail(EtcdError::BadAnswer {
                                detail: format!(
                                    "the ledger entry {} could not be confirmed after 3 sends",
                                    entry.run
                                ),
                            }));
                        }
                    },
                    Err(e) => return Err(self.fail(e)),
                }
            };
            added.push(outcome);
        }
        Ok(added)
    }

    /// Every run, in the order they ended.
    pub fn ledger(&self) -> Result<Vec<LedgerEntry>, StoreError> {
        let mut entries: Vec<LedgerEntry> = self
            .read_prefix("ledger/")?
            .iter()
            .filter_map(|value| std::str::from_utf8(value).ok())
            .filter_map(LedgerEntry::from_line)
            .collect();
        entries.sort_by(|a, b| a.ended.cmp(&b.ended).then_with(|| a.run.cmp(&b.run)));
        Ok(entries)
    }

    /// Records `hit` unless a later reset is recorded for its key.
    pub fn record_quota(&self, hit: &QuotaHit) -> Result<(), StoreError> {
        let key = layout::quota_key(&self.address, &hit.key());
        loop {
            let kept = self.call(|c| c.get(&key))?;
            let (kept_hit, at) = match &kept {
                Some(kv) => (serde_json::from_slice(&kv.value).ok(), kv.mod_revision),
                None => (None, 0),
            };
            let new = quota::later(kept_hit, hit.clone());
            let value = serde_json::to_vec(&new).unwrap_or_default();
            if kept.as_ref().is_some_and(|kv| kv.value == value) {
                return Ok(());
            }
            let guard = [Condition::ModRevision(key.clone(), at)];
            let put = [Change::Put {
                key: key.clone(),
                value: value.clone(),
                lease: 0,
            }];
            match self.patiently(|c| c.txn(&guard, &put)) {
                Ok(TxnOutcome::Applied { .. }) => return Ok(()),
                // Another host recorded one meanwhile: weigh this one against it.
                Ok(TxnOutcome::Conflict { .. }) | Err(EtcdError::Indeterminate { .. }) => {}
                Err(e) => return Err(self.fail(e)),
            }
        }
    }

    /// Every usage limit recorded.
    pub fn quotas(&self) -> Result<Vec<QuotaHit>, StoreError> {
        Ok(self
            .read_prefix("quota/")?
            .iter()
            .filter_map(|value| serde_json::from_slice(value).ok())
            .collect())
    }

    /// The values of every key under `<prefix>/<what>`, read a page at a time at one
    /// revision.
    fn read_prefix(&self, what: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let prefix = self.address.key(what);
        let end = prefix_end(&prefix);
        let mut values = Vec::new();
        let (mut from, mut revision) = (prefix.clone(), 0);
        loop {
            let (kvs, at, more) = self.call(|c| c.range_page(&from, &end, revision, PAGE))?;
            revision = at;
            let Some(last) = kvs.last() else { break };
            from = last.key.clone();
            from.push(0);
            values.extend(kvs.into_iter().map(|kv| kv.value));
            if !more {
                break;
            }
        }
        Ok(values)
    }
}
