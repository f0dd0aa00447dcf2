//! liza's YAML document engine: parsing to a [`node::Node`] tree with positions, writing
//! YAML, the layout of a text a person wrote, minimal patches of it, three-way merge and
//! field-level differences. It knows nothing of tasks or agents — the blackboard's model
//! (the `liza-model` crate's `codec`) maps these trees to types — and nothing else in
//! liza touches YAML syntax, so the parser crate can be swapped here alone.

#![warn(missing_docs)]

pub mod keyed;
pub mod layout;
pub mod merge3;
pub mod node;
pub mod patch;
pub mod tree_diff;

mod emit;
mod parse;
mod scalar;

pub use emit::{Emitter, ItemTexts};
pub use parse::{MAX_SCALAR_BYTES, Parsed, YamlError, parse};
pub use scalar::is_flow_plain_safe;
