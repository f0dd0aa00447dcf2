//! Crash injection for the reliability tests (specs/quality.md R1): `LIZA_FAILPOINT=<step>`
//! aborts the process at that step of a transaction, as a crash or SIGKILL would;
//! `<step>:stop` stops it there with SIGSTOP instead (a process paused mid-operation,
//! resumed by the test with SIGCONT); `<step>:until=<path>` blocks there until `path`
//! exists, having created `<path>.waiting` (an operation that takes as long as the test
//! wants). Only
//! with the `failpoints` feature (the test suite's): a build people run ignores the
//! variable, so nobody can make liza abort mid-transaction by setting it.

#[cfg(not(feature = "failpoints"))]
fn active() -> Option<&'static str> {
    None
}

#[cfg(feature = "failpoints")]
fn active() -> Option<&'static str> {
    use std::sync::OnceLock;
    static ACTIVE: OnceLock<Option<String>> = OnceLock::new();
    ACTIVE
        .get_or_init(|| {
            std::env::var("LIZA_FAILPOINT")
                .ok()
                .filter(|s| !s.is_empty())
        })
        .as_deref()
}

/// Whether `step` is the armed failpoint.
pub fn is_armed(step: &str) -> bool {
    active() == Some(step)
}

/// Aborts the process here when `step` is armed; stops it when `<step>:stop` is.
pub fn hit(step: &str) {
    if is_armed(step) {
        std::process::abort();
    }
    let Some(armed) = active() else { return };
    if armed.strip_suffix(":stop") == Some(step) {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
    }
    if let Some(path) = armed
        .strip_prefix(step)
        .and_then(|rest| rest.strip_prefix(":until="))
    {
        block_until(std::path::Path::new(path));
    }
}

/// Blocks until `path` exists (at most ten minutes), having created `<path>.waiting`.
fn block_until(path: &std::path::Path) {
    let mut waiting = path.as_os_str().to_owned();
    waiting.push(".waiting");
    let _ = std::fs::write(&waiting, b"");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while !path.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The steps a transaction passes, in order (the last one after the lock is released).
pub const STEPS: &[&str] = &[
    "after-lock",
    "after-journal",
    "after-temp",
    "after-swap",
    "after-cache",
    "during-log",
    "after-log",
    "after-dirsync",
];
