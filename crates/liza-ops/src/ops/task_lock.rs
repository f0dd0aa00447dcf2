//! A per-task lock (`.liza/locks/task-<id>.lock`) held across the phases of an operation
//! that changes a task's worktree (claim, reassign, abandon…): check on a snapshot, git
//! work outside the state lock, re-check and commit. Two processes never prepare the same
//! task's worktree at once, so one can never undo or archive the other's fresh worktree.

use std::fs::{File, OpenOptions, TryLockError};

use super::OpsError;
use crate::blackboard::{Store, StoreError, TaskId};

pub(super) struct TaskLock {
    _file: File,
}

impl TaskLock {
    /// Takes the lock, or refuses at once when another process holds it.
    pub(super) fn try_acquire(store: &Store, id: &TaskId) -> Result<TaskLock, OpsError> {
        let dir = store.paths().dir.join("locks");
        let path = dir.join(format!("task-{id}.lock"));
        let io = |source| {
            OpsError::Store(StoreError::Io {
                action: "lock",
                path: path.display().to_string(),
                source,
            })
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(TaskLock { _file: file }),
            Err(TryLockError::WouldBlock) => Err(OpsError::TaskBusy {
                task: id.to_string(),
            }),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }
}
