//! The store: the only writer of `.liza/state.yaml`, on files or on etcd
//! (specs/shared-store.md) — one facade, [`Store`], over a `Backend` (`store/backend.rs`) each
//! of the two implements once; the activity log, `.liza/log.yaml` ([`log`], and what the
//! watcher and the metrics count of it: [`log_tally`]); the heartbeats' liveness files
//! ([`liveness`]). Every change is one transaction of the one engine: the lock taken, the
//! state read, a pure change run and validated, the journal written, the file swapped in,
//! the log appended; nothing slow runs while the lock is held.

#![warn(missing_docs)]

pub mod blackboard;
pub mod liveness;
pub mod log;
pub mod log_tally;
pub mod store;
mod watch;

pub use store::{Committed, Snapshot, Store, StoreError, Tx, TxError};
