//! All YAML text handling of liza: parsing to a [`Node`](super::node::Node) tree with
//! positions, and writing YAML. Nothing else in the crate touches YAML syntax, so the
//! parser crate can be swapped here alone.

mod emit;
pub mod layout;
mod parse;
pub mod patch;
mod scalar;

pub use emit::{Emitter, ItemTexts};
pub use parse::{MAX_SCALAR_BYTES, Parsed, YamlError, parse};
pub(crate) use scalar::is_flow_plain_safe;
