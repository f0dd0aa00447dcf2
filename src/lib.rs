//! # liza
//!
//! A supervisor for a small team of AI coding agents — a planner, coders, code reviewers —
//! that coordinate through a **blackboard**: `.liza/state.yaml` (the current state) and
//! `.liza/log.yaml` (the activity log) in the git repository they work on.
//!
//! ## Theory of operation
//!
//! - **The blackboard.** state.yaml is typed by [`blackboard::model`]; unknown keys are
//!   kept, so files written by humans or by the original tooling survive rewrites.
//! - **One writer.** Only [`blackboard::Store::transact`] writes state.yaml: it takes the
//!   sidecar lock, reads (through a parse cache keyed by content hash), runs a pure change,
//!   validates, writes a journal entry, swaps the file in atomically, fsyncs and appends to
//!   log.yaml. Nothing slow (git, processes, HTTP) happens while the lock is held. Readers
//!   take lock-free snapshots; the atomic swap makes every read whole.
//! - **Hand edits.** A state.yaml whose bytes are not the last committed revision was
//!   edited outside liza; the next transaction reconciles it first.
//! - **The lifecycle.** `lifecycle` holds the transition table as data and one pure
//!   function per row (guards first, then effects, history event and log entries), the
//!   claimability order, limits, registration and the sprint and goal machines.
//! - **Leases.** Registration, task and review leases last `lease_duration`; heartbeats
//!   renew them in liveness records (`.liza/live/`), never in state.yaml; readers use the
//!   later of the two, and each transaction folds the records in. Every agent write
//!   presents its id and `generation` (a fencing token minted at registration).
//! - **Worktrees.** A claimed task works in `.worktrees/<id>` on `task/<id>`, created from
//!   the integration tip outside the state lock; before any worktree is removed or
//!   replaced its uncommitted files become a WIP commit and unmerged commits an attic
//!   branch, so nothing in a worktree is ever deleted.
//! - **Merges.** Approved tasks wait in the merge queue on the blackboard; a merger (the
//!   reviewer's supervisor or `liza merge`) drains it under the integration lock in
//!   batches: merged in memory one after another, each change verified to be kept,
//!   checked once per batch in detached `.worktrees/_integration*` worktrees — the next
//!   batch speculatively on top — bisected when they fail, and published by one
//!   compare-and-swap of the integration ref. A crash leaves intents the next merger
//!   finishes or drops. No person's checkout is touched.
//! - **Operations.** [`ops`] combines the store, the lifecycle and git so the CLI, the
//!   supervisor and the built-in agent share one implementation of each operation; [`cli`]
//!   renders them.
//! - **The sandbox.** Every agent CLI and every check runs in a bubblewrap sandbox
//!   ([`sandbox`]): its worktree writable, `.liza/`, the person's checkout and `$HOME`
//!   hidden, a coder's commits in a private store liza checks and brings in; its `liza`
//!   commands reach its supervisor over a Unix socket, which runs them as that agent.
//! - **Supervisors.** [`supervisor`] runs one agent: every policy (claim or wait,
//!   restarts and their backoff, limits, usage-limit waits, PAUSE/ABORT/CHECKPOINT,
//!   planner wake-ups, reviewer merges) is one pure function, `supervisor::policy::decide`,
//!   over what it observes and an injected clock; an async runner executes its actions.
//!   Every supervisor write is fenced by its registration's generation.
//!
//! ## Crates and modules
//!
//! The lower layers are crates of their own (ARCHITECTURE.md *Crates*: `liza-base`,
//! `liza-yaml`, `liza-etcd`, `liza-model`, `liza-git`, `liza-store`, `liza-ops`,
//! `liza-agents`), re-exported here under the paths they had: [`blackboard`] (the model,
//! YAML, validation, the store, the activity log), `lifecycle`, `git`, [`sandbox`],
//! [`ops`], [`supervisor`], [`backend`], [`llm`], `builtin`. This crate holds what is
//! above them, each layer using only those below (a test checks it):
//!
//! - [`monitor`]: `liza watch` — alarms, the webhook, `/metrics`.
//! - [`status`]: the status report; `dashboard`: `liza status --watch`; [`web`]: `liza serve`,
//!   the web dashboard.
//! - [`cli`]: the `liza` command line; `doctor`, `retro`, `tmux` (`liza up`),
//!   `demo` (a whole sprint offline).
//! - `bench` (feature `bench`, on in the tests and benchmarks): generated blackboards.

#[cfg(any(test, feature = "bench"))]
pub mod bench;
pub mod cli;
pub(crate) mod dashboard;
pub(crate) mod demo;
pub(crate) mod doctor;
pub mod monitor;
pub(crate) mod retro;
pub mod status;
pub(crate) mod tmux;
pub mod web;

// The layers below are crates of their own (ARCHITECTURE.md *Crates*); their modules keep
// the paths they had here.
pub(crate) use liza_agents::builtin;
pub use liza_agents::{backend, llm, supervisor};
pub use liza_base::failpoint;
pub(crate) use liza_base::{error, terminal_text};
pub(crate) use liza_git as git;
pub(crate) use liza_model::lifecycle;
pub use liza_ops::{ops, sandbox};
pub use liza_store::blackboard;
