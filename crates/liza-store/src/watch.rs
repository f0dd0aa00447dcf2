//! Directory watching (notify): wakes a waiter when files of interest in a directory
//! change. The directory is watched, not the files, because the store replaces state.yaml
//! by rename. Bursts are coalesced by the waiter (it sleeps the debounce once after the
//! first event and drains the rest) rather than by a ticking debouncer thread, so an idle
//! watcher costs no CPU at all (specs/quality.md P7).

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

/// Changes of named files in one directory.
pub(crate) struct DirWatch {
    _watcher: notify::RecommendedWatcher,
    rx: Receiver<()>,
    debounce: Duration,
}

impl DirWatch {
    /// Watches `dir` for changes to files whose names are in `names` (all when empty);
    /// a burst of changes within `debounce` wakes the waiter once.
    pub(crate) fn new(dir: &Path, names: &[&str], debounce: Duration) -> notify::Result<DirWatch> {
        let (tx, rx) = channel();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut watcher =
            notify::recommended_watcher(move |result: notify::Result<notify::Event>| {
                let relevant = match result {
                    Ok(event) => {
                        !event.kind.is_access()
                            && (names.is_empty()
                                || event.paths.iter().any(|p| {
                                    p.file_name()
                                        .and_then(|n| n.to_str())
                                        .is_some_and(|n| names.iter().any(|w| w == n))
                                }))
                    }
                    // On watcher errors wake the waiter; it re-reads and decides.
                    Err(_) => true,
                };
                if relevant {
                    let _ = tx.send(());
                }
            })?;
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(DirWatch {
            _watcher: watcher,
            rx,
            debounce,
        })
    }

    /// Waits for a change for at most `timeout` (the polling fallback); `true` when one
    /// was seen. The rest of a burst is absorbed before returning.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let seen = match self.rx.recv_timeout(timeout) {
            Ok(()) => true,
            Err(RecvTimeoutError::Timeout) => false,
            // The watcher thread is gone: behave like a poll.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout);
                false
            }
        };
        if seen && !self.debounce.is_zero() {
            std::thread::sleep(self.debounce);
        }
        while self.rx.try_recv().is_ok() {}
        seen
    }
}
