//! A blocking client of etcd v3 — reads and transactions over gRPC, leases and watches
//! over the JSON gateway — and their wire forms: generic keys and values, no liza types. The shared store (`store::etcd` in the crate `liza-store`,
//! specs/shared-store.md) lays a blackboard out in keys on top of it.

#![warn(missing_docs)]

pub mod address;
pub mod client;
mod grpc;
pub mod proto;
pub mod wire;

pub use address::{AddressError, AddressProblem, StoreAddress};

pub use client::{
    Change, Client, Condition, EtcdError, Event, TxnOutcome, Watch, WatchItem, prefix_end,
};
pub use wire::KeyValue;
