//! The blackboard as one namespace, for the crates above: `.liza/state.yaml` and
//! `.liza/log.yaml`, their model, and the store that is the only writer of state.yaml.
//!
//! - [`model`]: the typed schema of specs/blackboard.md, unknown keys preserved.
//! - [`document`]: text ↔ model, with located findings; [`validate`]: rules 1–12.
//! - [`node`], [`yaml`], [`codec`]: the YAML tree, its parser and writer, and the mapping
//!   to the model.

// The model, the YAML document engine and the etcd client are crates of their own (the
// crate table in ARCHITECTURE.md); the crates above name their modules by these paths.
pub use crate::{liveness, log, log_tally, store};
pub use liza_etcd as etcd;
pub use liza_model::{
    codec, control, document, event, finding, ids, ledger, metrics, model, paths, quota, summary,
    timestamp, validate,
};
pub use liza_yaml as yaml;
pub use liza_yaml::{keyed, merge3, node, tree_diff};

pub use event::EventKind;
pub use finding::{FieldPath, Finding, Severity};
pub use ids::{Actor, AgentId, IdError, Role, TaskId};
pub use model::State;
pub use paths::LizaPaths;
pub use store::{Committed, Snapshot, Store, StoreError, Tx, TxError};
pub use timestamp::Timestamp;
