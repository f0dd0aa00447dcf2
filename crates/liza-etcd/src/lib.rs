//! A blocking client of etcd v3's JSON gateway and the gateway's wire forms: generic keys
//! and values, no liza types. The shared store (`store::etcd` in the crate `liza-store`,
//! specs/shared-store.md) lays a blackboard out in keys on top of it.

#![warn(missing_docs)]

pub mod address;
pub mod client;
pub mod wire;

pub use address::{AddressError, AddressProblem, StoreAddress};

pub use client::{
    Change, Client, Condition, EtcdError, Event, TxnOutcome, Watch, WatchItem, prefix_end,
};
pub use wire::KeyValue;
