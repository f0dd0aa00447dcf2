//! The state lock: an exclusive `flock` on the sidecar `state.yaml.lock` (never on
//! state.yaml itself, which the store replaces by rename), with a timeout and an owner
//! file naming the holder.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use liza_model::timestamp::Timestamp;

/// A held lock; released on drop.
pub struct StateLock {
    file: File,
    /// When it was taken.
    pub acquired: Instant,
    /// How long taking it took.
    pub waited: Duration,
}

impl Drop for StateLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Why the lock could not be taken.
pub enum LockFailure {
    /// The lock file could not be opened or locked.
    Io(io::Error),
    /// Not acquired within the timeout.
    TimedOut {
        /// The owner file's content, if any.
        holder: Option<String>,
    },
}

/// Takes the exclusive lock on `lock_path`, waiting up to `timeout`, and records this
/// process as the holder in `owner_path`.
/// `timeout` is only asked for when the lock is busy (finding it costs a directory read).
pub fn acquire(
    lock_path: &Path,
    owner_path: &Path,
    timeout: impl FnOnce() -> Duration,
) -> Result<StateLock, LockFailure> {
    let start = Instant::now();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock_path)
        .map_err(LockFailure::Io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            wait_for(&file, timeout()).map_err(|e| match e {
                Some(err) => LockFailure::Io(err),
                None => LockFailure::TimedOut {
                    holder: read_owner(owner_path),
                },
            })?
        }
        Err(std::fs::TryLockError::Error(err)) => return Err(LockFailure::Io(err)),
    }
    let lock = StateLock {
        file,
        acquired: Instant::now(),
        waited: start.elapsed(),
    };
    // Best effort: the owner file only serves error messages.
    let _ = write_owner(owner_path);
    Ok(lock)
}

/// Whether the lock is held right now, and by whom (the owner file's line): for
/// `liza doctor`. Never waits.
pub fn probe(lock_path: &Path, owner_path: &Path) -> io::Result<Option<String>> {
    let file = match File::open(lock_path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            Ok(None)
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(Some(
            read_owner(owner_path).unwrap_or_else(|| "an unknown process".into()),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Blocks in `flock` on a helper thread so waiters are woken by the kernel as soon as
/// the holder releases, instead of polling; gives up after `timeout`. A helper that
/// acquires after the caller gave up releases the lock at once.
pub(crate) fn wait_for(file: &File, timeout: Duration) -> Result<(), Option<io::Error>> {
    let clone = file.try_clone().map_err(Some)?;
    let abandoned = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let flag = Arc::clone(&abandoned);
    std::thread::spawn(move || {
        let result = clone.lock();
        if flag.load(Ordering::SeqCst) {
            let _ = clone.unlock();
            return;
        }
        if tx.send(result).is_err() {
            let _ = clone.unlock();
        }
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(Some(err)),
        Err(_) => {
            abandoned.store(true, Ordering::SeqCst);
            // The helper may have acquired between the timeout and the flag.
            if let Ok(Ok(())) = rx.try_recv() {
                let _ = file.unlock();
            }
            Err(None)
        }
    }
}

/// Size of the owner record. It is rewritten in place at this fixed size: truncating or
/// replacing the file would make ext4 flush it at the next fsync, on every transaction.
const OWNER_RECORD: usize = 320;

fn write_owner(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let command: Vec<String> = std::env::args().collect();
    let mut text = format!(
        "pid {} since {} command {}",
        std::process::id(),
        Timestamp::now(),
        command.join(" ").replace('\n', " ")
    );
    let mut cut = text.len().min(OWNER_RECORD - 1);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    let mut record = text.into_bytes();
    record.resize(OWNER_RECORD - 1, b' ');
    record.push(b'\n');
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    file.write_all_at(&record, 0)
}

/// The pid an owner line (`pid N since …`) names, when that process is no longer
/// running: the line is stale, and whoever holds the lock did not record itself (it
/// inherited the lock, or is another tool).
pub fn dead_owner(holder: &str) -> Option<i32> {
    let pid: i32 = holder
        .strip_prefix("pid ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let alive = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    };
    (!alive && pid > 0).then_some(pid)
}

fn read_owner(path: &Path) -> Option<String> {
    let mut text = String::new();
    File::open(path)
        .ok()?
        .take(512)
        .read_to_string(&mut text)
        .ok()?;
    let line = text.lines().next()?.trim().to_owned();
    (!line.is_empty()).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_times_out_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("state.yaml.lock");
        let owner = dir.path().join("state.yaml.lock.owner");
        let held = acquire(&lock, &owner, || Duration::from_secs(1))
            .ok()
            .unwrap();
        match acquire(&lock, &owner, || Duration::from_millis(50)) {
            Err(LockFailure::TimedOut { holder }) => {
                let holder = holder.unwrap();
                assert!(
                    holder.contains(&format!("pid {}", std::process::id())),
                    "{holder}"
                );
            }
            _ => panic!("expected a timeout"),
        }
        drop(held);
        // Released: the abandoned helper must not keep it.
        let again = acquire(&lock, &owner, || Duration::from_secs(5));
        assert!(again.is_ok());
    }

    #[test]
    fn a_waiter_gets_the_lock_when_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("l");
        let owner = dir.path().join("o");
        let held = acquire(&lock, &owner, || Duration::from_secs(1))
            .ok()
            .unwrap();
        let (lock2, owner2) = (lock.clone(), owner.clone());
        let waiter = std::thread::spawn(move || {
            acquire(&lock2, &owner2, || Duration::from_secs(30)).is_ok()
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert!(waiter.join().unwrap());
    }
}
