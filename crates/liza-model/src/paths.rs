//! Where everything under `.liza/` lives (specs/blackboard.md *Files*).

use std::path::{Path, PathBuf};

/// The files of one blackboard.
#[derive(Debug, Clone)]
pub struct LizaPaths {
    /// The project root: the repository's main checkout.
    pub root: PathBuf,
    /// `<root>/.liza`.
    pub dir: PathBuf,
}

impl LizaPaths {
    /// The blackboard's directory under the project root.
    pub const DIR_NAME: &'static str = ".liza";
    /// The current state's file name.
    pub const STATE: &'static str = "state.yaml";
    /// The file name of the etcd address, on a blackboard kept in etcd.
    pub const STORE_ADDRESS: &'static str = "store";

    /// The files of the blackboard of project `root`.
    pub fn new(root: &Path) -> LizaPaths {
        LizaPaths {
            root: root.to_path_buf(),
            dir: root.join(Self::DIR_NAME),
        }
    }

    /// `state.yaml`: the current state.
    pub fn state(&self) -> PathBuf {
        self.dir.join(Self::STATE)
    }

    /// The address of the blackboard in etcd, when it is there (specs/shared-store.md).
    pub fn store_address(&self) -> PathBuf {
        self.dir.join(Self::STORE_ADDRESS)
    }

    /// The lock target: created once, never deleted or renamed.
    pub fn lock(&self) -> PathBuf {
        self.dir.join("state.yaml.lock")
    }

    /// Who holds the lock (pid, command, since), written after acquisition.
    pub fn lock_owner(&self) -> PathBuf {
        self.dir.join("state.yaml.lock.owner")
    }

    /// `log.yaml`: the activity log.
    pub fn log(&self) -> PathBuf {
        self.dir.join("log.yaml")
    }

    /// `journal/`: the last committed revisions.
    pub fn journal(&self) -> PathBuf {
        self.dir.join("journal")
    }

    /// `rejected/`: hand edits liza did not apply, each with a note.
    pub fn rejected(&self) -> PathBuf {
        self.dir.join("rejected")
    }

    /// Liveness records written by heartbeats.
    pub fn live(&self) -> PathBuf {
        self.dir.join("live")
    }

    /// Spec texts tasks were finalized against, by git blob id.
    pub fn specs(&self) -> PathBuf {
        self.dir.join("specs")
    }

    /// Control files (presence is what counts).
    pub fn control(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `archive/<sprint>.yaml` (the sprint id is checked by the caller).
    pub fn archive(&self, sprint: &str) -> PathBuf {
        self.dir.join("archive").join(format!("{sprint}.yaml"))
    }

    /// `alerts.log`: one line per alarm.
    pub fn alerts(&self) -> PathBuf {
        self.dir.join("alerts.log")
    }

    /// The keys of the alarms a watcher delivered to notify-send and the webhook.
    pub fn alerts_delivered(&self) -> PathBuf {
        self.dir.join("alerts.delivered")
    }

    /// `ledger.jsonl`: one line per agent run (specs/ledger.md).
    pub fn ledger(&self) -> PathBuf {
        self.dir.join("ledger.jsonl")
    }

    /// `quota.json`: the usage limits agents hit, per backend (specs/ledger.md *Quota*).
    pub fn quota(&self) -> PathBuf {
        self.dir.join("quota.json")
    }

    /// Path relative to the project root, for messages (`.liza/state.yaml`).
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}
