//! `liza doctor`'s look at an installed agent CLI: its `--version` and `--help`, run with
//! a short timeout, against the release range and the flags liza passes.
