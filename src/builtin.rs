//! The built-in agent (builtin-agent.md): liza's own planner, coder and reviewer over any
//! OpenAI-compatible chat-completions endpoint, run by the supervisor as
//! `liza builtin <role> --task ID` like any other agent CLI.
//!
//! - [`endpoint`]: where the model is and the rules of a role's calls.
//! - [`client`]: the HTTP client with retries, bounds and usage.
//! - [`response`]: reading JSON out of a model's answer.
//! - [`scrub`]: secrets out of everything sent or written.
//! - [`scripted_server`]: a scripted model server on loopback for tests and the demo.

pub mod artifacts;
pub mod ask;
pub mod chunk;
pub mod client;
pub mod coder;
pub mod edits;
pub mod endpoint;
pub mod git_cli;
pub mod grounding;
pub mod identities;
pub mod metrics;
pub mod planner;
pub mod response;
pub mod reviewer;
pub mod run;
pub mod runlog;
pub mod scripted_server;
pub mod scrub;
pub mod text;

/// Exit codes of `liza builtin` (builtin-agent.md): the role's work is done; no result
/// (counts toward the iteration limits); hard failure (the task is blocked at once).
pub const EXIT_DONE: i32 = 0;
pub const EXIT_SOFT_FAIL: i32 = 3;
pub const EXIT_HARD_FAIL: i32 = 4;
