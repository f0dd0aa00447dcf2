//! The operations and the sandbox. [`ops`]: each operation once — the store, the
//! lifecycle and git combined — shared by the command line, the supervisors and the
//! built-in agent. [`sandbox`]: bubblewrap around every agent CLI and every project
//! command (specs/sandbox.md), and the wire format of the channel a sandboxed agent's
//! `liza` commands travel on.

#![warn(missing_docs)]

pub mod ops;
pub mod sandbox;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

// The crates below, by the paths the modules here name them.
use liza_base::{confine, error, failpoint, program, untrusted};
use liza_git as git;
use liza_model::lifecycle;
use liza_store::blackboard;
