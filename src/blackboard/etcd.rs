//! etcd v3, the store of a blackboard shared by several machines (specs/shared-store.md;
//! the file store stays the default): a blocking client of its JSON gateway and the
//! gateway's wire forms.

pub mod address;
pub mod client;
pub mod layout;
pub mod wire;

pub use address::{AddressError, StoreAddress};

pub use client::{
    Change, Client, Condition, EtcdError, Event, TxnOutcome, Watch, WatchItem, prefix_end,
};
pub use wire::KeyValue;
