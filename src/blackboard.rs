//! The blackboard: `.liza/state.yaml` and `.liza/log.yaml`, their model, and the store
//! that is the only writer of state.yaml.
//!
//! - [`model`]: the typed schema of specs/blackboard.md, unknown keys preserved.
//! - [`document`]: text ↔ model, with located findings; [`validate`]: rules 1–12.
//! - [`node`], [`yaml`], [`codec`]: the YAML tree, its parser and writer, and the mapping
//!   to the model.

pub mod codec;
pub mod control;
pub mod document;
pub mod etcd;
pub mod event;
pub mod finding;
pub mod ids;
pub mod keyed;
pub mod liveness;
pub mod log;
pub mod log_tally;
pub mod merge3;
pub mod metrics;
pub mod model;
pub mod node;
pub mod paths;
pub mod store;
pub mod summary;
pub mod timestamp;
pub mod tree_diff;
pub mod validate;
pub mod yaml;

pub use event::EventKind;
pub use finding::{FieldPath, Finding, Severity};
pub use ids::{Actor, AgentId, IdError, Role, TaskId};
pub use model::State;
pub use paths::LizaPaths;
pub use store::{Committed, Snapshot, Store, StoreError, Tx, TxError};
pub use timestamp::Timestamp;
