//! Generated blackboards of a chosen size, for the benchmark (specs/quality.md) and for tests
//! that need a realistic mid-sprint state (`liza_model::bench`), and putting one in place.

pub use liza_model::bench::*;

/// Puts `text` in place as a blackboard written by another tool (no journal), so the next
/// transaction adopts it as it is; a hand edit that adds tasks past DRAFT would be set
/// aside instead.
pub fn adopt_state(liza_dir: &std::path::Path, text: &str) -> std::io::Result<()> {
    match std::fs::remove_dir_all(liza_dir.join("journal")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::write(liza_dir.join("state.yaml"), text)
}
