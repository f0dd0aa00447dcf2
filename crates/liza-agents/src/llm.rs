//! Talking to a model over any OpenAI-compatible chat-completions endpoint, apart from
//! what the built-in agent's roles ask (`builtin`):
//!
//! - [`endpoint`]: where the model is and the rules of a role's calls.
//! - [`client`]: the HTTP client with retries, bounds and usage.
//! - [`chunk`] and [`grounding`]: source text cut into cited chunks, and citations checked
//!   against them.
//! - [`response`]: reading JSON out of a model's answer.
//! - [`scrub`]: secrets out of everything sent or written.
//! - [`text`]: code-point offsets, token estimates, bounds.
//! - [`scripted_server`]: a scripted model server on loopback for the tests and the demo.

pub mod chunk;
pub mod client;
pub mod endpoint;
pub mod grounding;
pub mod response;
pub mod scripted_server;
pub mod scrub;
pub mod text;
