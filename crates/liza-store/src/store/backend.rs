//! What a store is made of: the file store (`store/file/backend.rs`) and etcd
//! (`store/etcd/backend.rs`) each implement [`Backend`] once, and [`Store`](super::Store)
//! dispatches to it in one place. What only one of them has (a parse cache, a lock file,
//! hand edits of a file, a doctor's inspection of etcd) has a default that says what a
//! store without it answers.

use std::time::Duration;

use super::changes::{Changes, Topic};
use super::etcd::Inspection;
use super::hand_edit::Rejection;
use super::hash::ContentHash;
use super::log_feed::LogFeed;
use super::{Committed, Document, Snapshot, StoreError, Tx, TxError};
use crate::liveness::{LiveRecord, LiveRecords};
use crate::log::{Item, LogEntry};
use liza_etcd::StoreAddress;
use liza_model::control::{Control, ControlFlags};
use liza_model::ids::{Actor, AgentId};
use liza_model::model::{State, Task};
use liza_model::paths::LizaPaths;
use liza_yaml::merge3::Choices;

/// A change as a backend runs it: its value kept by the caller, who is handed back the
/// index of the attempt that committed (a change may run more than once).
pub(super) type ErasedChange<'c> = dyn FnMut(&mut Tx) -> Result<usize, ()> + 'c;

/// A document's new text from the text kept; `None`: the change refused, write nothing.
pub(super) type ErasedUpdate<'c> = dyn FnMut(Option<&[u8]>) -> Option<Vec<u8>> + 'c;

/// One store: where the blackboard, its log and its side files are kept.
pub(super) trait Backend: Send + Sync {
    /// The checkout's `.liza/` files.
    fn paths(&self) -> &LizaPaths;
    /// The same store, waiting `timeout` for its lock (files) or its answers (etcd).
    fn with_wait(self: Box<Self>, timeout: Duration) -> Box<dyn Backend>;
    /// Runs `change` as one transaction (`store::run`).
    fn transact(
        &self,
        actor: &Actor,
        change: &mut ErasedChange<'_>,
    ) -> Result<Committed<usize>, TxError<()>>;
    fn snapshot(&self) -> Result<Snapshot, StoreError>;
    fn append_log(&self, entries: &[LogEntry]) -> Result<(), StoreError>;
    fn revisions(&self) -> Result<Vec<u64>, StoreError>;
    fn revision_text(&self, revision: u64) -> Result<Option<Vec<u8>>, StoreError>;
    fn committed_state(&self) -> Option<State>;
    fn live_records(&self) -> Result<LiveRecords, StoreError>;
    fn write_live(&self, agent: &AgentId, record: &LiveRecord) -> Result<(), StoreError>;
    fn remove_live(&self, agent: &AgentId) -> Result<(), StoreError>;
    fn log_text(&self) -> Result<Vec<u8>, StoreError>;
    fn stream_log(
        &self,
        follow: bool,
        visit: &mut dyn FnMut(Item),
    ) -> Result<(bool, Option<LogFeed>), StoreError>;
    fn follow_log(&self) -> Result<(Vec<u8>, LogFeed), StoreError>;
    fn log_tail(&self, n: usize) -> Vec<LogEntry>;
    fn changes(&self, topics: &[Topic], debounce: Duration) -> Changes;
    fn control_flags(&self) -> Result<ControlFlags, StoreError>;
    fn raise(&self, control: Control, text: &str) -> Result<(), StoreError>;
    fn lower(&self, control: Control) -> Result<bool, StoreError>;
    fn text(&self) -> Result<Vec<u8>, StoreError>;
    fn append_alarms(&self, lines: &[(String, String)]) -> Result<Vec<bool>, StoreError>;
    fn claim_delivery(&self, key: &str) -> Result<bool, StoreError>;
    fn alarm_lines(&self) -> Result<Vec<String>, StoreError>;
    fn append_ledger(
        &self,
        entries: &[liza_model::ledger::LedgerEntry],
    ) -> Result<Vec<bool>, StoreError>;
    fn ledger(&self) -> Result<Vec<liza_model::ledger::LedgerEntry>, StoreError>;
    fn record_quota(&self, hit: &liza_model::quota::QuotaHit) -> Result<(), StoreError>;
    fn quotas(&self) -> Result<Vec<liza_model::quota::QuotaHit>, StoreError>;
    fn document(&self, document: &Document) -> Result<Option<Vec<u8>>, StoreError>;
    fn update_document(
        &self,
        document: &Document,
        change: &mut ErasedUpdate<'_>,
    ) -> Result<(), StoreError>;
    fn document_place(&self, document: &Document) -> String;
    fn submit_edit(
        &self,
        bytes: &[u8],
        choices: &Choices,
    ) -> Result<Result<u64, Rejection>, StoreError>;

    // What one store has and the other has not.

    /// etcd's per-transaction key limit; files have none.
    fn keys_per_transition(&self) -> Option<usize> {
        None
    }
    /// etcd's address; files have none.
    fn address(&self) -> Option<&StoreAddress> {
        None
    }
    /// What `liza doctor` checks of a blackboard in etcd.
    fn inspect_shared(&self) -> Option<Inspection> {
        None
    }
    /// A parse cache's damaged histories (files); a store without one reads every
    /// history whole.
    fn refuse_damaged(&self, _hash: ContentHash, _tasks: &[&Task]) -> Result<(), StoreError> {
        Ok(())
    }
    /// Who holds the lock file (files); etcd has no lock.
    fn lock_holder(&self) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
    /// Journal entries that do not read (files).
    fn damaged_revisions(&self) -> Result<Vec<u64>, StoreError> {
        Ok(Vec::new())
    }
    /// A person's save of state.yaml reconciled (files); etcd is changed with `liza edit`.
    fn reconcile(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// What the next transaction would make of a person's pending save (files).
    fn pending_hand_edit(&self) -> Result<Option<Result<(), Rejection>>, StoreError> {
        Ok(None)
    }
}
