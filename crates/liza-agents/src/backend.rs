//! Agent backends (specs/supervisor.md *Backends*): what turns a prompt, a worktree and an
//! environment into an agent process. The built-in CLI backends (`claude`, `codex`,
//! `gemini`, `mistral`, `aider`, `opencode`) with arguments verified against each CLI's
//! current release (`catalog`), the user's own and adjustments of the built-in ones from
//! `config.agent_tools` (`resolve`), the agent's environment (`environment`), and what a
//! CLI's output says about usage limits and logins (`signals`). Always an argv vector;
//! blackboard content reaches the agent only as the prompt (stdin or a file), never
//! through a shell.

pub mod auth;
pub mod catalog;
pub mod environment;
pub mod kind;
pub mod probe;
pub mod resolve;
pub mod signals;
pub mod usage;
pub mod zone;

pub use environment::is_secret;
pub use kind::BackendKind;
pub use resolve::{Backend, BackendError, Invocation, ReportFiles, RunInput, find_executable};
