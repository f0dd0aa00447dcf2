//! The shared store as a [`Backend`]: the blackboard, its log and its side files as keys
//! of one prefix in etcd (specs/shared-store.md).

use std::time::Duration;

use super::{EtcdStore, Inspection, max_txn_keys};
use crate::liveness::{LiveRecord, LiveRecords};
use crate::log::{self, Item, LogEntry};
use crate::store::backend::{Backend, ErasedChange, ErasedUpdate};
use crate::store::changes::{Changes, Topic};
use crate::store::hand_edit::Rejection;
use crate::store::log_feed::LogFeed;
use crate::store::{Committed, Document, Snapshot, StoreError, TxError, run};
use liza_etcd::StoreAddress;
use liza_model::control::{Control, ControlFlags};
use liza_model::ids::{Actor, AgentId};
use liza_model::model::State;
use liza_model::paths::LizaPaths;
use liza_model::timestamp::Timestamp;
use liza_yaml::merge3::Choices;

/// How a document's update ended short: the store failed, or the change refused (which
/// stops [`EtcdStore::update_document`]'s loop without writing).
enum Outcome {
    Store(StoreError),
    Refused,
}

impl From<StoreError> for Outcome {
    fn from(e: StoreError) -> Self {
        Outcome::Store(e)
    }
}

impl Backend for EtcdStore {
    fn paths(&self) -> &LizaPaths {
        EtcdStore::paths(self)
    }

    /// No lock: the wait is for an etcd that does not answer.
    fn with_wait(self: Box<Self>, timeout: Duration) -> Box<dyn Backend> {
        Box::new(EtcdStore::with_wait(*self, timeout))
    }

    fn transact(
        &self,
        actor: &Actor,
        change: &mut ErasedChange<'_>,
    ) -> Result<Committed<usize>, TxError<()>> {
        run(self, actor, change)
    }

    fn snapshot(&self) -> Result<Snapshot, StoreError> {
        EtcdStore::snapshot(self)
    }

    fn append_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        EtcdStore::append_log(self, entries)
    }

    fn revisions(&self) -> Result<Vec<u64>, StoreError> {
        EtcdStore::revisions(self)
    }

    fn revision_text(&self, revision: u64) -> Result<Option<Vec<u8>>, StoreError> {
        EtcdStore::revision_text(self, revision)
    }

    fn committed_state(&self) -> Option<State> {
        EtcdStore::snapshot(self).ok().map(|s| s.state)
    }

    fn live_records(&self) -> Result<LiveRecords, StoreError> {
        EtcdStore::live_records(self)
    }

    /// The record lives as long as its longest lease, then vanishes by itself if no
    /// heartbeat renewed it.
    fn write_live(&self, agent: &AgentId, record: &LiveRecord) -> Result<(), StoreError> {
        let until = [record.task_lease_expires, record.review_lease_expires]
            .into_iter()
            .flatten()
            .fold(record.lease_expires, Timestamp::max);
        let ttl = until.seconds_since(record.heartbeat).max(1);
        EtcdStore::write_live(self, agent, record, Duration::from_secs(ttl as u64))
    }

    fn remove_live(&self, agent: &AgentId) -> Result<(), StoreError> {
        EtcdStore::remove_live(self, agent)
    }

    fn log_text(&self) -> Result<Vec<u8>, StoreError> {
        EtcdStore::log_text(self)
    }

    fn stream_log(
        &self,
        follow: bool,
        visit: &mut dyn FnMut(Item),
    ) -> Result<(bool, Option<LogFeed>), StoreError> {
        let (torn, at) = EtcdStore::stream_log(self, visit)?;
        Ok((torn, follow.then(|| self.log_feed_after(at))))
    }

    fn follow_log(&self) -> Result<(Vec<u8>, LogFeed), StoreError> {
        EtcdStore::follow_log(self)
    }

    fn log_tail(&self, n: usize) -> Vec<LogEntry> {
        let text = EtcdStore::log_text(self).unwrap_or_default();
        let mut entries = log::parse_items(&text, 0).entries;
        entries.drain(..entries.len().saturating_sub(n));
        entries
    }

    fn changes(&self, topics: &[Topic], debounce: Duration) -> Changes {
        EtcdStore::changes(self, topics, debounce)
    }

    fn control_flags(&self) -> Result<ControlFlags, StoreError> {
        EtcdStore::control_flags(self)
    }

    fn raise(&self, control: Control, text: &str) -> Result<(), StoreError> {
        EtcdStore::raise(self, control, text)
    }

    fn lower(&self, control: Control) -> Result<bool, StoreError> {
        EtcdStore::lower(self, control)
    }

    fn text(&self) -> Result<Vec<u8>, StoreError> {
        EtcdStore::text(self)
    }

    fn append_alarms(&self, lines: &[(String, String)]) -> Result<Vec<bool>, StoreError> {
        EtcdStore::append_alarms(self, lines)
    }

    fn claim_delivery(&self, key: &str) -> Result<bool, StoreError> {
        EtcdStore::claim_delivery(self, key)
    }

    fn alarm_lines(&self) -> Result<Vec<String>, StoreError> {
        EtcdStore::alarm_lines(self)
    }

    fn append_ledger(
        &self,
        entries: &[liza_model::ledger::LedgerEntry],
    ) -> Result<Vec<bool>, StoreError> {
        EtcdStore::append_ledger(self, entries)
    }

    fn ledger(&self) -> Result<Vec<liza_model::ledger::LedgerEntry>, StoreError> {
        EtcdStore::ledger(self)
    }

    fn record_quota(&self, hit: &liza_model::quota::QuotaHit) -> Result<(), StoreError> {
        EtcdStore::record_quota(self, hit)
    }

    fn quotas(&self) -> Result<Vec<liza_model::quota::QuotaHit>, StoreError> {
        EtcdStore::quotas(self)
    }

    fn document(&self, document: &Document) -> Result<Option<Vec<u8>>, StoreError> {
        EtcdStore::document(self, document)
    }

    /// The change runs again on the newer text when another writer replaced it meanwhile.
    fn update_document(
        &self,
        document: &Document,
        change: &mut ErasedUpdate<'_>,
    ) -> Result<(), StoreError> {
        EtcdStore::update_document(self, document, |kept| change(kept).ok_or(Outcome::Refused))
            .or_else(|e| match e {
                Outcome::Store(e) => Err(e),
                Outcome::Refused => Ok(()),
            })
    }

    fn document_place(&self, document: &Document) -> String {
        format!("{} {}", self.address(), document.key())
    }

    fn submit_edit(
        &self,
        bytes: &[u8],
        choices: &Choices,
    ) -> Result<Result<u64, Rejection>, StoreError> {
        EtcdStore::submit_edit(self, bytes, choices)
    }

    fn keys_per_transition(&self) -> Option<usize> {
        Some(max_txn_keys())
    }

    fn address(&self) -> Option<&StoreAddress> {
        Some(EtcdStore::address(self))
    }

    fn inspect_shared(&self) -> Option<Inspection> {
        Some(self.inspect())
    }
}
