//! The built-in agent (specs/builtin-agent.md): liza's own planner, coder and reviewer over any
//! OpenAI-compatible chat-completions endpoint, run by the supervisor as
//! `liza builtin <role> --task ID` like any other agent CLI.
//!
//! The three roles sit on top of [`crate::llm`] (the HTTP client, the endpoint, chunking,
//! grounding, response parsing, scrubbing):
//!
//! - [`run`]: one run of a role — its context, the model client, the run log, the exit code.
//! - [`planner`], [`coder`], [`reviewer`]: what each role asks and does with the answer.
//! - [`ask`]: one question to the model with its artifacts; [`artifacts`]: what a run
//!   keeps; [`runlog`]: the run's log; [`edits`]: applying a coder's edits inside its scope.
//! - [`identities`]: `identities.yaml`; [`metrics`]: the runs' metrics for `liza status`.

pub mod artifacts;
pub mod ask;
pub mod coder;
pub mod context;
pub mod dry_run;
pub mod edits;
pub mod identities;
pub mod metrics;
pub mod planner;
pub mod reviewer;
pub mod run;
pub mod runlog;

/// Exit codes of `liza builtin` (specs/builtin-agent.md): the role's work is done; no result
/// (counts toward the iteration limits); hard failure (the task is blocked at once).
pub const EXIT_DONE: i32 = 0;
/// SOFT_FAIL: no result (no usable answer, submit refused); a no-progress run.
pub const EXIT_SOFT_FAIL: i32 = 3;
/// HARD_FAIL: the task cannot be done this way; the supervisor blocks it at once.
pub const EXIT_HARD_FAIL: i32 = 4;
