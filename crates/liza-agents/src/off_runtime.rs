//! The one way liza's async code runs slow work — files, git, the store (an HTTP call on
//! etcd), a process waited for — without stalling the runtime's thread, which the
//! supervisor's whole select loop shares (ARCHITECTURE.md *No slow work on the runtime*).

/// Runs `work` on tokio's blocking pool and returns what it returns; a panic in it is
/// carried back to the caller as if it had happened there.
pub async fn off_runtime<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> R {
    match tokio::task::spawn_blocking(work).await {
        Ok(r) => r,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
