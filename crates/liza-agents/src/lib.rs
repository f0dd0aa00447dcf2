//! The agents: [`supervisor`], one agent's supervisor — every decision a pure function
//! (`supervisor::policy::decide`), a runner that observes and executes through its ports;
//! [`backend`], the agent CLIs liza runs (what each takes, what its output means); [`llm`],
//! the client of any OpenAI-compatible model endpoint; [`builtin`], liza's own planner,
//! coder and reviewer on top of it; [`off_runtime`], blocking work moved off the
//! supervisor's async runtime.

#![warn(missing_docs)]

pub mod backend;
pub mod builtin;
pub mod llm;
pub mod off_runtime;
pub mod supervisor;

// The crates below, by the paths the modules here name them.
use liza_base::{confine, error, program, untrusted};
use liza_git as git;
use liza_model::lifecycle;
use liza_ops::{ops, sandbox};
use liza_store::blackboard;
