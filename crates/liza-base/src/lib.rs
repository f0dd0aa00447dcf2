//! The base layer: what every other part of liza needs to touch what agents and people
//! wrote safely — files read without following a link or waiting on a FIFO
//! ([`untrusted`]), paths from the blackboard kept inside the repository ([`confine`]),
//! and agent text made safe for a terminal ([`terminal_text`]); how every error maps onto
//! an exit class ([`error`]), the reliability tests' crash injection ([`failpoint`]), and
//! programs found as a shell would find them ([`program`]). It knows nothing of the
//! blackboard.

#![warn(missing_docs)]

pub mod confine;
pub mod error;
pub mod failpoint;
pub mod program;
pub mod terminal_text;
pub mod untrusted;
