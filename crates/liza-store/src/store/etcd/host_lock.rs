//! The checkout's writers take turns (specs/shared-store.md *A transaction*, step 5): the
//! processes of one checkout hold `.liza/etcd.lock` from the start of a transaction to
//! its commit, as they hold the file store's lock, so they do not race each other on the
//! head key — a race lost costs a read and the change run again. Within a process, the
//! lock is shared by its writers (their commits are grouped already): it is taken by the
//! first and let go by the last. Other hosts' writers race as before, guarded by etcd.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The process's hold on one checkout's lock: the file and how many writers share it.
fn holds() -> &'static Mutex<HashMap<PathBuf, (File, usize)>> {
    static HOLDS: OnceLock<Mutex<HashMap<PathBuf, (File, usize)>>> = OnceLock::new();
    HOLDS.get_or_init(Default::default)
}

/// One writer's share of the lock; let go when dropped.
pub(super) struct HostTurn {
    path: PathBuf,
}

/// Takes a share of the lock of the checkout whose `.liza/` is `dir`, waiting at most
/// `wait` for another process to let it go; `None` when it cannot be had (no file, the
/// wait ran out): the writer then races, guarded by etcd, as without it.
pub(super) fn take(dir: &Path, wait: Duration) -> Option<HostTurn> {
    let path = dir.join("etcd.lock");
    {
        let mut holds = holds().lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = holds.get_mut(&path) {
            *count += 1;
            return Some(HostTurn { path });
        }
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .ok()?;
    match file.try_lock() {
        Ok(()) => {}
        // Woken by the kernel when the holder lets go, as the file store's lock.
        Err(TryLockError::WouldBlock) if !wait.is_zero() => {
            crate::store::lock::wait_for(&file, wait).ok()?;
        }
        Err(_) => return None,
    }
    let mut holds = holds().lock().unwrap_or_else(|e| e.into_inner());
    match holds.get_mut(&path) {
        // Another writer of this process took it meanwhile: share theirs.
        Some((_, count)) => *count += 1,
        None => {
            holds.insert(path.clone(), (file, 1));
        }
    }
    Some(HostTurn { path })
}

impl Drop for HostTurn {
    fn drop(&mut self) {
        let mut holds = holds().lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = holds.get_mut(&self.path) {
            *count -= 1;
            if *count == 0 {
                // Closing the file lets the lock go.
                holds.remove(&self.path);
            }
        }
    }
}
