//! The integration tests, in one test binary so the suite links once (as jj and just
//! do): each module is one area, driving the real `liza` and `liza-agent` binaries on
//! real git repositories. Run one area with `cargo test --test it <module>::`.

#![expect(
    unreachable_pub,
    reason = "helpers shared between test modules are pub within one test binary"
)]
#![expect(
    clippy::unwrap_used,
    reason = "tests and their helpers may unwrap: a failed unwrap is a failed test with its line"
)]

mod common;

mod adversary;
mod agent_duties;
mod analyze;
mod architecture;
mod archive;
mod bad_input;
mod builtin_agent;
mod checkpoint;
mod cli;
mod cli_backends;
mod clocks;
mod comments;
mod contention;
mod crash;
mod demo;
mod docs;
mod docs_commands;
mod doctor;
mod etcd_client;
mod full_disk;
mod hand_edit_race;
mod hand_edits;
mod ledger;
mod lifecycle;
mod live_endpoint;
mod merge;
mod merge_queue;
mod merge_queue_faults;
mod metrics;
mod misbehaving_agents;
mod model_client;
mod retro;
mod reuse;
mod sandbox;
mod several_hosts;
mod shared_store;
mod store;
mod store_suite;
mod superseded;
mod supervisor;
mod supervisor_faults;
mod supervisor_modes;
mod tmux;
mod v01;
mod validate;
mod watch;
mod web;
mod webhook;
