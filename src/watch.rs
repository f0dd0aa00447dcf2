//! Directory watching (notify, debounced): wakes a waiter when files of interest in a
//! directory change. The directory is watched, not the files, because the store replaces
//! state.yaml by rename.

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

/// Changes of named files in one directory.
pub struct DirWatch {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
    rx: Receiver<()>,
}

impl DirWatch {
    /// Watches `dir` for changes to files whose names are in `names` (all when empty),
    /// debounced by `debounce`.
    pub fn new(dir: &Path, names: &[&str], debounce: Duration) -> notify::Result<DirWatch> {
        let (tx, rx) = channel();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut debouncer = new_debouncer(debounce, None, move |result: DebounceEventResult| {
            let relevant = match result {
                Ok(events) => events.iter().any(|e| {
                    names.is_empty()
                        || e.paths.iter().any(|p| {
                            p.file_name()
                                .and_then(|n| n.to_str())
                                .is_some_and(|n| names.iter().any(|w| w == n))
                        })
                }),
                // On watcher errors wake the waiter; it re-reads and decides.
                Err(_) => true,
            };
            if relevant {
                let _ = tx.send(());
            }
        })
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
        debouncer.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(DirWatch {
            _debouncer: debouncer,
            rx,
        })
    }

    /// Waits for a change for at most `timeout` (the polling fallback); `true` when one
    /// was seen. Extra queued notifications are drained.
    pub fn wait(&self, timeout: Duration) -> bool {
        let seen = match self.rx.recv_timeout(timeout) {
            Ok(()) => true,
            Err(RecvTimeoutError::Timeout) => false,
            // The watcher thread is gone: behave like a poll.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout);
                false
            }
        };
        while self.rx.try_recv().is_ok() {}
        seen
    }
}
