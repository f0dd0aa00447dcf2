//! Directory watching: wakes a waiter when files of interest in a directory change. The
//! directory is watched, not the files, because the store replaces state.yaml by rename.
//! Bursts are coalesced by the waiter (it sleeps the debounce once after the first event
//! and drains the rest) rather than by a ticking debouncer thread, so an idle watcher
//! costs no CPU at all (specs/quality.md P7).
//!
//! On Linux, inotify is asked only for what finishes a change — a file closed after
//! writing, renamed in or out, created, deleted — not for every open and every write:
//! `.liza/` is opened and written to by every command and heartbeat of the team, and
//! each such event woke every supervisor's watcher thread (Q3). Elsewhere, notify.

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

#[cfg(not(target_os = "linux"))]
use notify::{RecursiveMode, Watcher};

/// Changes of named files in one directory.
pub(crate) struct DirWatch {
    #[cfg(target_os = "linux")]
    _watcher: linux::Watcher,
    #[cfg(not(target_os = "linux"))]
    _watcher: notify::RecommendedWatcher,
    rx: Receiver<()>,
    debounce: Duration,
}

impl DirWatch {
    /// Watches `dir` for changes to files whose names are in `names` (all when empty);
    /// a burst of changes within `debounce` wakes the waiter once.
    #[cfg(target_os = "linux")]
    pub(crate) fn new(dir: &Path, names: &[&str], debounce: Duration) -> std::io::Result<DirWatch> {
        let (tx, rx) = channel();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let watcher = linux::Watcher::start(dir, names, tx)?;
        Ok(DirWatch {
            _watcher: watcher,
            rx,
            debounce,
        })
    }

    /// Watches `dir` for changes to files whose names are in `names` (all when empty);
    /// a burst of changes within `debounce` wakes the waiter once.
    #[cfg(not(target_os = "linux"))]
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

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsStr;
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::Sender;

    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

    /// What ends a change of a file in the directory, and the directory's own end.
    fn mask() -> WatchMask {
        WatchMask::CLOSE_WRITE
            | WatchMask::MOVED_TO
            | WatchMask::MOVED_FROM
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::ATTRIB
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
    }

    /// A thread reading the directory's events; dropping it removes the watch, which
    /// wakes the thread to end.
    pub(super) struct Watcher {
        watches: Watches,
        wd: WatchDescriptor,
        stop: Arc<AtomicBool>,
    }

    impl Watcher {
        /// Sends on `tx` for each batch of events naming a file in `names` (any file when
        /// empty), and when the watch itself ends or fails.
        pub(super) fn start(
            dir: &Path,
            names: Vec<String>,
            tx: Sender<()>,
        ) -> std::io::Result<Watcher> {
            let mut inotify = Inotify::init()?;
            let mut watches = inotify.watches();
            let wd = watches.add(dir, mask())?;
            let stop = Arc::new(AtomicBool::new(false));
            let stopped = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("liza-watch".into())
                .spawn(move || {
                    let mut buffer = [0u8; 4096];
                    loop {
                        let events = match inotify.read_events_blocking(&mut buffer) {
                            Ok(events) => events,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                            // The waiter re-reads and decides; waits are polls from now on.
                            Err(_) => {
                                let _ = tx.send(());
                                return;
                            }
                        };
                        if stopped.load(Ordering::Relaxed) {
                            return;
                        }
                        let mut relevant = false;
                        let mut ended = false;
                        for event in events {
                            // The watch is gone (the directory went, or events were lost):
                            // wake the waiter; it polls from now on.
                            if event
                                .mask
                                .intersects(EventMask::IGNORED | EventMask::Q_OVERFLOW)
                            {
                                relevant = true;
                                ended |= event.mask.contains(EventMask::IGNORED);
                                continue;
                            }
                            relevant |= names.is_empty()
                                || event.name.is_none()
                                || event
                                    .name
                                    .and_then(OsStr::to_str)
                                    .is_some_and(|n| names.iter().any(|w| w == n));
                        }
                        if relevant && tx.send(()).is_err() {
                            return;
                        }
                        if ended {
                            return;
                        }
                    }
                })?;
            Ok(Watcher { watches, wd, stop })
        }
    }

    impl Drop for Watcher {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            let _ = self.watches.remove(self.wd.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Write;

    const NONE_WITHIN: Duration = Duration::from_millis(300);
    const SOON: Duration = Duration::from_secs(5);
    /// One change may come as several events (a creation, then a close after writing),
    /// read in several batches: the waiter's debounce takes them as one.
    const DEBOUNCE: Duration = Duration::from_millis(50);

    /// Every way a named file's change ends wakes the waiter; reading it, or changing a
    /// file of another name, does not.
    #[test]
    fn a_change_of_a_named_file_wakes_the_waiter_and_reads_or_other_files_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let (state, pause) = (dir.path().join("state.yaml"), dir.path().join("PAUSE"));
        fs::write(&state, "one\n").unwrap();
        let watch = DirWatch::new(dir.path(), &["state.yaml", "PAUSE"], DEBOUNCE).unwrap();
        for _ in 0..20 {
            fs::read(&state).unwrap();
        }
        fs::write(dir.path().join("heartbeat"), "x").unwrap();
        assert!(!watch.wait(NONE_WITHIN), "woken by a read or another file");
        // Replaced by rename, as the store writes it.
        let temp = dir.path().join(".state.yaml.tmp");
        fs::write(&temp, "two\n").unwrap();
        fs::rename(&temp, &state).unwrap();
        assert!(watch.wait(SOON), "a rename into place did not wake");
        // Written in place and closed, as an editor may.
        let mut file = fs::OpenOptions::new().append(true).open(&state).unwrap();
        file.write_all(b"three\n").unwrap();
        drop(file);
        assert!(watch.wait(SOON), "a write in place did not wake");
        fs::write(&pause, "").unwrap();
        assert!(watch.wait(SOON), "a control file created did not wake");
        fs::remove_file(&pause).unwrap();
        assert!(watch.wait(SOON), "a control file removed did not wake");
        assert!(!watch.wait(NONE_WITHIN), "woken with nothing changed");
    }

    /// The watched directory removed: the waiter is woken and polls from then on.
    #[test]
    fn a_watched_directory_removed_wakes_the_waiter_once_then_waits_are_polls() {
        let dir = tempfile::tempdir().unwrap();
        let watched = dir.path().join("liza");
        fs::create_dir(&watched).unwrap();
        let watch = DirWatch::new(&watched, &["state.yaml"], DEBOUNCE).unwrap();
        fs::remove_dir(&watched).unwrap();
        assert!(watch.wait(SOON));
        assert!(!watch.wait(Duration::from_millis(50)));
    }
}
