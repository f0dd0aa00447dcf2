//! The checkout's writers take turns (specs/shared-store.md *A transaction*, step 5): the
//! processes of one checkout hold `.liza/etcd.lock` from the start of a transaction to
//! its send (its answer, when it was built on a state only sent: see `known_file`,
//! *Handed over at the send*), so they do not race each other on the
//! head key — a race lost costs a read and the change run again. Within a process, the
//! lock is shared by its writers (their commits are grouped already): it is taken by the
//! first and let go by the last. Other hosts' writers race as before, guarded by etcd.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The process's hold on one checkout's lock.
enum Hold {
    /// A writer of this process waits for the lock: the others wait for it to have it
    /// (two waiting in `flock` on two descriptors would not share it).
    Taking,
    /// Held: the locked file (closing it lets the lock go) and how many writers share it.
    Held { _file: File, count: usize },
}

struct Holds {
    by_path: Mutex<HashMap<PathBuf, Hold>>,
    /// Signalled when a lock is had, or given up on.
    changed: Condvar,
}

fn holds() -> &'static Holds {
    static HOLDS: OnceLock<Holds> = OnceLock::new();
    HOLDS.get_or_init(|| Holds {
        by_path: Mutex::new(HashMap::new()),
        changed: Condvar::new(),
    })
}

fn lock_holds() -> MutexGuard<'static, HashMap<PathBuf, Hold>> {
    holds().by_path.lock().unwrap_or_else(|e| e.into_inner())
}

/// One writer's share of the lock; let go when dropped.
pub(super) struct HostTurn {
    path: PathBuf,
}

/// Takes a share of the lock of the checkout whose `.liza/` is `dir`, waiting at most
/// `wait` for another process to let it go; `None` when it cannot be had (no file, the
/// wait ran out): the writer then races, guarded by etcd, as without it.
pub(super) fn take(dir: &Path, wait: Duration) -> Option<HostTurn> {
    let path = dir.join(LOCK);
    let deadline = Instant::now() + wait;
    let mut all = lock_holds();
    loop {
        match all.get_mut(&path) {
            Some(Hold::Held { count, .. }) => {
                *count += 1;
                return Some(HostTurn { path });
            }
            // Another writer of this process is taking it: its hold is shared.
            Some(Hold::Taking) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return None;
                }
                all = holds()
                    .changed
                    .wait_timeout(all, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            None => break,
        }
    }
    all.insert(path.clone(), Hold::Taking);
    drop(all);
    let file = lock_file(&path, wait);
    let mut all = lock_holds();
    let taken = match file {
        Some(file) => {
            all.insert(
                path.clone(),
                Hold::Held {
                    _file: file,
                    count: 1,
                },
            );
            Some(HostTurn { path })
        }
        None => {
            all.remove(&path);
            None
        }
    };
    holds().changed.notify_all();
    taken
}

/// Whether a writer waits for the turn of the checkout whose `.liza/` is `dir` (each
/// holds a shared lock on `etcd.wait` while it waits, see [`lock_file`]); probed without
/// waiting, a lock found free is let go at once. The writer that has the turn is not
/// counted: it may be a process keeping what it read as it exits, not a writer.
pub(super) fn a_writer_waits(dir: &Path) -> bool {
    held_elsewhere(&dir.join(WAITING))
}

/// Whether some other open file holds a lock on `path`.
fn held_elsewhere(path: &Path) -> bool {
    let Ok(file) = OpenOptions::new().write(true).open(path) else {
        return false;
    };
    matches!(file.try_lock(), Err(TryLockError::WouldBlock))
}

/// The turn's lock file in `.liza/`.
const LOCK: &str = "etcd.lock";
/// Writers waiting for the turn each hold a shared lock on this file in `.liza/`.
const WAITING: &str = "etcd.wait";

/// The lock file, locked: at once, or waiting in `flock` on a helper thread (woken by
/// the kernel when the holder lets go, as the file store's lock) at most `wait`.
fn lock_file(path: &Path, wait: Duration) -> Option<File> {
    let file = open_or_create(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) if !wait.is_zero() => {
            // Announced while it waits: the writer that has the turn then leaves the
            // mirror to this one (see `a_writer_waits`).
            let _waiting = announce(&path.with_file_name(WAITING));
            crate::store::lock::wait_for(&file, wait).ok()?;
        }
        Err(_) => return None,
    }
    Some(file)
}

/// A lock file of `.liza/`, created empty if it is not there.
fn open_or_create(path: &Path) -> Option<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()
}

/// A shared lock on `path`, held while the writer waits; best effort (a writer that
/// cannot announce itself only costs the one before it a needless mirror write).
fn announce(path: &Path) -> Option<File> {
    let file = open_or_create(path)?;
    file.try_lock_shared().ok()?;
    Some(file)
}

impl Drop for HostTurn {
    fn drop(&mut self) {
        let mut all = lock_holds();
        if let Some(Hold::Held { count, .. }) = all.get_mut(&self.path) {
            *count -= 1;
            if *count == 0 {
                // Closing the file lets the lock go.
                all.remove(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two writers of a process that wait for the lock another process holds share it
    /// once it is let go: neither waits for the other's turn to end.
    #[test]
    fn writers_of_a_process_waiting_for_the_lock_share_it_when_it_comes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etcd.lock");
        // Another process's hold: a descriptor of its own.
        let other = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap();
        other.lock().unwrap();
        let both = std::sync::Arc::new(std::sync::Barrier::new(2));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (dir, both) = (dir.path().to_path_buf(), std::sync::Arc::clone(&both));
                std::thread::spawn(move || {
                    let turn = take(&dir, Duration::from_secs(2));
                    // Each holds its share until the other has one too.
                    both.wait();
                    turn.is_some()
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        other.unlock().unwrap();
        for w in waiters {
            assert!(
                w.join().unwrap(),
                "a writer waited for the other's turn and gave up"
            );
        }
    }
}
