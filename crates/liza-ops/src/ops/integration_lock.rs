//! The integration lock `.liza/integration.lock` (specs/git.md *Merge*): held by a merge from its
//! start to its publish, so merges run one after the other and never share the
//! integration worktree. Taken before any state transaction (lock order: integration,
//! then state). The file records its holder — and the process group of a running check,
//! so that when a merge process dies mid-check, the next holder stops the orphaned check
//! before it reuses the integration worktree.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::OpsError;
use crate::blackboard::{Store, StoreError, TaskId, Timestamp};

pub(super) struct IntegrationLock {
    file: File,
    path: PathBuf,
    holder: String,
    /// The process groups of the checks running now, by integration worktree slot.
    checks: std::collections::BTreeMap<usize, i32>,
}

/// Whether a merge holds the integration lock right now (for `liza doctor`; never waits).
pub fn merge_running(store: &Store) -> bool {
    let Ok(file) = File::open(store.paths().dir.join("integration.lock")) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(_)) => false,
    }
}

impl IntegrationLock {
    /// Takes the lock, waiting as long as another merge holds it (`waiting` is told who);
    /// a merge is bounded by its checks' timeouts, and a dead holder releases it at once.
    pub(super) fn acquire(
        store: &Store,
        task: &TaskId,
        integration_dir: &Path,
        waiting: &mut dyn FnMut(&str),
    ) -> Result<IntegrationLock, OpsError> {
        let lock = Self::take(store, task, integration_dir, waiting, true)?;
        Ok(lock.expect("a waiting acquire returns the lock"))
    }

    fn take(
        store: &Store,
        task: &TaskId,
        integration_dir: &Path,
        waiting: &mut dyn FnMut(&str),
        wait: bool,
    ) -> Result<Option<IntegrationLock>, OpsError> {
        let path = store.paths().dir.join("integration.lock");
        let io = |action| {
            let path = path.display().to_string();
            move |source| {
                OpsError::Store(StoreError::Io {
                    action,
                    path,
                    source,
                })
            }
        };
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io("open"))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) if !wait => return Ok(None),
            Err(TryLockError::WouldBlock) => {
                let holder = read_holder(&mut file);
                let who = field(&holder, "task")
                    .map(|t| format!("the merge of {t}"))
                    .unwrap_or_else(|| "another merge".into());
                let pid = field(&holder, "pid")
                    .map(|p| format!(" (pid {p})"))
                    .unwrap_or_default();
                waiting(&format!("waiting for {who}{pid} to finish"));
                file.lock().map_err(io("lock"))?;
            }
            Err(TryLockError::Error(e)) => return Err(io("lock")(e)),
        }
        let previous = read_holder(&mut file);
        // The checks of a merger that died: each ran in an integration worktree (the
        // slots are `.worktrees/_integration` and `.worktrees/_integration-<n>`; task ids
        // never start with `_`).
        for group in fields(&previous, "check_pgid").filter_map(|p| p.parse::<i32>().ok()) {
            if group > 1
                && runs_in_integration(group, integration_dir)
                && killpg(Pid::from_raw(group), Signal::SIGKILL).is_ok()
            {
                tracing::warn!(
                    pgid = group,
                    "stopped the check of an interrupted merge that was still running"
                );
            }
        }
        let holder = format!(
            "pid={}\ntask={task}\nsince={}\n",
            std::process::id(),
            Timestamp::now()
        );
        let mut lock = IntegrationLock {
            file,
            path,
            holder,
            checks: Default::default(),
        };
        lock.write()?;
        Ok(Some(lock))
    }

    /// Takes the lock only if no other merge holds it.
    pub(super) fn try_acquire(
        store: &Store,
        task: &TaskId,
        integration_dir: &Path,
    ) -> Result<Option<IntegrationLock>, OpsError> {
        Self::take(store, task, integration_dir, &mut |_| {}, false)
    }

    /// Records the process group of the check now running in integration worktree
    /// `slot` (`None` when it ended).
    pub(super) fn record_check(&mut self, slot: usize, pgid: Option<i32>) {
        match pgid {
            Some(pgid) => self.checks.insert(slot, pgid),
            None => self.checks.remove(&slot),
        };
        if let Err(e) = self.write() {
            tracing::warn!(error = %e, "could not record the running check in the integration lock");
        }
    }

    fn write(&mut self) -> Result<(), OpsError> {
        let mut text = self.holder.clone();
        for pgid in self.checks.values() {
            text.push_str(&format!("check_pgid={pgid}\n"));
        }
        let result = self
            .file
            .set_len(0)
            .and_then(|()| self.file.seek(SeekFrom::Start(0)))
            .and_then(|_| self.file.write_all(text.as_bytes()));
        result.map_err(|source| {
            OpsError::Store(StoreError::Io {
                action: "write",
                path: self.path.display().to_string(),
                source,
            })
        })
    }
}

impl Drop for IntegrationLock {
    /// A clean release leaves no check recorded (the file itself stays: locks are never
    /// deleted, so no two processes can lock different files of the same name).
    fn drop(&mut self) {
        self.checks.clear();
        let _ = self.write();
    }
}

/// Whether process `pid` still runs inside an integration worktree — `integration_dir` or
/// one of its numbered siblings (a recorded process group id may have been reused by an
/// unrelated process since).
fn runs_in_integration(pid: i32, integration_dir: &Path) -> bool {
    let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd")) else {
        return false;
    };
    let dir =
        std::fs::canonicalize(integration_dir).unwrap_or_else(|_| integration_dir.to_path_buf());
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return false;
    };
    cwd.strip_prefix(parent)
        .ok()
        .and_then(|rest| rest.components().next())
        .is_some_and(|first| {
            let first = first.as_os_str().to_string_lossy();
            let name = name.to_string_lossy();
            first == name
                || first
                    .strip_prefix(name.as_ref())
                    .and_then(|n| n.strip_prefix('-'))
                    .is_some_and(|n| n.parse::<usize>().is_ok())
        })
}

fn read_holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text));
    text
}

fn field<'t>(text: &'t str, key: &'t str) -> Option<&'t str> {
    fields(text, key).next()
}

fn fields<'t>(text: &'t str, key: &'t str) -> impl Iterator<Item = &'t str> {
    text.lines()
        .filter_map(move |l| l.strip_prefix(key)?.strip_prefix('='))
        .map(str::trim)
}
