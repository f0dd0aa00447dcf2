//! The blackboard's model and rules, pure: the typed state of specs/blackboard.md and its
//! mapping to YAML trees ([`model`], [`codec`], [`document`]), validation ([`validate`]),
//! the records heartbeats write ([`liveness`]), and the lifecycle — the transition table
//! as data and one pure function per row ([`lifecycle`]). It writes nothing and runs
//! nothing — no store, no git, no process; it reads only what validation checks exists (a
//! spec file) and a document it is asked to load. The store, the supervisors and the
//! operations (the `liza` crate) call it. With the feature `bench`: generated blackboards
//! of a chosen size (the module `bench`), for the benchmarks and the tests.

#![warn(missing_docs)]

#[cfg(feature = "bench")]
pub mod bench;
pub mod codec;
pub mod control;
pub mod document;
pub mod event;
pub mod finding;
pub mod ids;
pub mod ledger;
pub mod lifecycle;
pub mod liveness;
pub mod metrics;
pub mod model;
pub mod paths;
pub mod quota;
pub mod summary;
pub mod timestamp;
pub mod validate;

// The crates below, by the names the modules here use for them.
use liza_base::confine;
use liza_yaml as yaml;
use liza_yaml::node;

pub use event::EventKind;
pub use finding::{FieldPath, Finding, Severity};
pub use ids::{Actor, AgentId, IdError, Role, TaskId};
pub use model::State;
pub use paths::LizaPaths;
pub use timestamp::Timestamp;
