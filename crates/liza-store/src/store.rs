//! The store: the only writer of the blackboard (specs/blackboard.md *The store*,
//! specs/shared-store.md).
//!
//! [`Store::transact`] is the one transactional function, whatever holds the blackboard:
//! the backend reads the committed state (the file store under its lock, see
//! [`file`]), the change runs on it and the result is validated here, then the backend
//! commits it as the next revision with its log entries. A refused or failed change
//! writes nothing. [`Store::snapshot`] reads without the lock for display and for
//! decisions that will be re-checked in a transaction.

pub mod alarm_log;
pub mod atomic;
mod backend;
pub mod cache;
pub mod changes;
pub mod commented;
pub mod etcd;
mod file;
pub mod hand_edit;
pub mod hash;
pub mod journal;
pub mod ledger_file;
pub mod lock;
mod locked_append;
pub mod log_feed;
mod mirror;
pub mod quota_file;

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use self::backend::Backend;
use self::etcd::{EtcdAttempt, EtcdStore};
pub use self::file::write_revision_files;
use self::file::{FileAttempt, FileStore};
use self::hand_edit::HandEditPolicy;
use self::hash::ContentHash;
use super::liveness::{LiveRecord, LiveRecords};
use super::log::LogEntry;
use liza_base::error::{Diagnostic, ErrorClass};
use liza_etcd::StoreAddress;
use liza_model::control::{Control, ControlFlags};
use liza_model::document;
use liza_model::event::EventKind;
use liza_model::finding::Finding;
use liza_model::ids::{Actor, AgentId};
use liza_model::model::{State, Task};
use liza_model::paths::LizaPaths;
use liza_model::timestamp::Timestamp;
use liza_model::validate::{ValidationEnv, validate};
use liza_yaml::merge3;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The checkout has no `.liza/`.
    #[error("no blackboard here: {dir} does not exist")]
    NotInitialized {
        /// The `.liza/` looked for.
        dir: String,
    },
    /// A blackboard was to be created or joined where `.liza/` exists already.
    #[error("{dir} already exists")]
    AlreadyInitialized {
        /// The `.liza/` found.
        dir: String,
    },
    /// `.liza/` exists but state.yaml does not.
    #[error("{path} is missing")]
    StateMissing {
        /// state.yaml's path.
        path: String,
        /// The journal's last entry, to copy back (`None`: none to offer).
        restore: Option<String>,
    },
    /// A file operation failed.
    #[error("cannot {action} {path}")]
    Io {
        /// What was being done, a verb the path completes (`read`, `replace`, `create a
        /// directory in`…).
        action: &'static str,
        /// The file or directory it was done to.
        path: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The state lock (in etcd: this process's turn to write) stayed taken for the whole
    /// wait.
    #[error("timed out after {:.1} s waiting for the blackboard lock {lock}", waited.as_secs_f64())]
    LockTimeout {
        /// The lock file, or the turn waited for.
        lock: String,
        /// How long it was waited for.
        waited: Duration,
        /// Who holds it, as its owner note says (`None`: no note).
        holder: Option<String>,
    },
    /// A text that should hold a blackboard does not (state.yaml, a journal entry, the
    /// state read from etcd).
    #[error("{path} is not a valid blackboard ({} error{})", findings.len(), if findings.len() == 1 { "" } else { "s" })]
    Invalid {
        /// Where the text is: a path, or the store address.
        path: String,
        /// What is wrong, each located in the text.
        findings: Vec<Finding>,
        /// The journal's last entry, to copy back (`None`: none to offer).
        restore: Option<String>,
    },
    /// state.yaml is a symbolic link.
    #[error(
        "{path} is a symbolic link (to {target}); liza replaces the file atomically and will not write through or over a link"
    )]
    Symlink {
        /// The link.
        path: String,
        /// Where it points.
        target: String,
    },
    /// state.yaml is not writable.
    #[error("{path} is read-only; liza will not replace it")]
    ReadOnly {
        /// Its path.
        path: String,
    },
    /// The change would add errors to the blackboard: nothing was written.
    #[error("refused: the change would make the blackboard invalid")]
    WouldInvalidate {
        /// The errors the change would add (those already there are not counted).
        findings: Vec<Finding>,
    },
    /// A supervisor's write after its agent was registered anew or unregistered.
    #[error("{agent}'s supervisor (generation {presented}) was superseded: {}", match registered {
        Some(current) => format!("{agent} is now registered with generation {current}"),
        None => format!("{agent} is no longer registered"),
    })]
    Superseded {
        /// The agent.
        agent: String,
        /// The generation the supervisor wrote as.
        presented: String,
        /// The agent's registered generation now (`(none)` when it has none); `None`:
        /// the agent is not registered.
        registered: Option<String>,
    },
    #[error(
        "refused: the change would make {path} {} MiB, over the {} MiB liza reads back",
        bytes >> 20, document::MAX_STATE_BYTES >> 20
    )]
    /// The new state.yaml would be larger than liza reads back: nothing was written.
    TooLarge {
        /// state.yaml's path.
        path: String,
        /// The size the text would have had.
        bytes: usize,
    },
    #[error(
        "refused: the change would write {} KiB to etcd in one transaction, over the {} KiB a transaction may carry",
        bytes >> 10, limit >> 10
    )]
    /// The etcd txn of the change would be larger than etcd takes: nothing was written.
    TransactionTooLarge {
        /// What the txn would have carried.
        bytes: usize,
        /// What one txn may carry.
        limit: usize,
    },
    #[error(
        "refused: the change would write {keys} keys to etcd in one transaction, over the {limit} a transaction may write"
    )]
    /// The etcd txn of the change would write more keys than etcd takes: nothing was
    /// written.
    TransactionTooManyKeys {
        /// The keys the txn would have written.
        keys: usize,
        /// The keys one txn may write.
        limit: usize,
    },
    /// A ledger run or a quota's backend that cannot name a key: nothing was written.
    #[error("refused: {detail}")]
    BadName {
        /// What is wrong.
        detail: String,
    },
    /// A blackboard was to be created in etcd where keys exist under the prefix already.
    #[error("{address} already holds a project")]
    ProjectExists {
        /// The store address.
        address: String,
    },
    /// A store address that does not parse.
    #[error("{origin}: {source}")]
    Address {
        /// Where the address came from (`LIZA_STORE`, `.liza/store`, `--store`).
        origin: String,
        /// What is wrong in it.
        #[source]
        source: liza_etcd::AddressError,
    },
    /// A call to etcd failed.
    #[error("the blackboard in etcd ({address}) cannot be used: {source}")]
    Etcd {
        /// The store address.
        address: String,
        /// What went wrong.
        #[source]
        source: liza_etcd::EtcdError,
    },
    /// The keys in etcd do not read as a blackboard.
    #[error("the blackboard in etcd ({address}) does not read: {source}")]
    Layout {
        /// The store address.
        address: String,
        /// Which key, and what is wrong with it.
        #[source]
        source: crate::store::etcd::layout::LayoutError,
    },
    /// A task history in the parse cache did not decode (see `model/history.rs`).
    #[error("the parse cache {path} was damaged: a task history in it does not decode")]
    DamagedCache {
        /// The cache file (removed since).
        path: String,
    },
}

impl Diagnostic for StoreError {
    fn class(&self) -> ErrorClass {
        match self {
            StoreError::LockTimeout { .. } => ErrorClass::LockTimeout,
            StoreError::WouldInvalidate { .. }
            | StoreError::AlreadyInitialized { .. }
            | StoreError::ProjectExists { .. }
            | StoreError::TooLarge { .. }
            | StoreError::TransactionTooLarge { .. }
            | StoreError::TransactionTooManyKeys { .. }
            | StoreError::Superseded { .. }
            | StoreError::BadName { .. } => ErrorClass::Refused,
            _ => ErrorClass::Blackboard,
        }
    }

    fn hints(&self) -> Vec<String> {
        match self {
            StoreError::NotInitialized { .. } => {
                vec!["run `liza init \"<goal>\"` in the repository first".into()]
            }
            StoreError::AlreadyInitialized { .. } => {
                vec!["this repository already has a blackboard; `liza status` shows it".into()]
            }
            StoreError::StateMissing { restore, .. } => match restore {
                Some(r) => vec![format!(
                    "restore the last committed revision: cp {r} .liza/state.yaml"
                )],
                None => vec![
                    "the journal is empty too; re-create the blackboard with `liza init`".into(),
                ],
            },
            StoreError::Io { .. } => vec!["check the permissions and free space of .liza/".into()],
            StoreError::BadName { .. } => {
                vec!["this is liza's own naming; report it with the command that printed it".into()]
            }
            StoreError::LockTimeout { holder, lock, .. } => {
                let mut hints = vec![
                    "another liza process holds the lock; retry, or wait for it to finish".into(),
                ];
                match holder.as_deref().map(|h| (h, lock::dead_owner(h))) {
                    Some((h, Some(pid))) => {
                        hints = vec![
                            format!(
                                "the lock's owner note names pid {pid}, which is no longer running: \
                                 that note is stale ({h})"
                            ),
                            format!(
                                "the lock is held by a process that did not record itself (one \
                                 that inherited it from pid {pid}, or another tool): `fuser -v {lock}` \
                                 names it; stop it and the lock is free (never delete the lock file)"
                            ),
                        ];
                    }
                    Some((h, None)) => hints.insert(0, format!("held by {h}")),
                    None => {}
                }
                hints
            }
            StoreError::Invalid { path, .. } if path.contains("/journal/") => {
                // liza's own record is damaged, not a person's file: nothing is removed.
                vec![format!(
                    "the journal's last entry {path} is damaged (a disk error?): move it aside (mv {path} {path}.damaged), then copy the entry before it over .liza/state.yaml"
                )]
            }
            StoreError::Invalid { restore, .. } => {
                let mut hints = vec![
                    "fix the file (`liza validate` lists every error) and run the command again"
                        .into(),
                ];
                if let Some(r) = restore {
                    hints.push(format!(
                        "or restore the last good revision: cp {r} .liza/state.yaml"
                    ));
                }
                hints
            }
            StoreError::Symlink { .. } => {
                vec!["replace the link with a regular file: cp --remove-destination \"$(readlink -f .liza/state.yaml)\" .liza/state.yaml".into()]
            }
            StoreError::ReadOnly { .. } => {
                vec![
                    "if the blackboard should change, make it writable: chmod u+w .liza/state.yaml"
                        .into(),
                ]
            }
            StoreError::WouldInvalidate { .. } => {
                vec!["the state is unchanged; fix what the findings name first".into()]
            }
            StoreError::TransactionTooLarge { .. } => vec![
                "the state is unchanged; every transition rewrites the head key (the goal with its alignment history, the agents): shorten the texts the change adds, or change fewer tasks at once".into(),
            ],
            StoreError::TransactionTooManyKeys { .. } => vec![
                "the state is unchanged; change fewer tasks at once (a shorter `liza add-tasks` list), or start etcd with a larger --max-txn-ops and set LIZA_ETCD_MAX_TXN_OPS to it".into(),
            ],
            StoreError::TooLarge { .. } => vec![
                "the state is unchanged; shorten the texts the change adds (descriptions, notes, reasons)".into(),
            ],
            StoreError::Superseded { .. } => vec![
                "the state is unchanged; this supervisor stops — the newer registration's supervisor serves the agent".into(),
            ],
            StoreError::Etcd { source, .. } => match source {
                liza_etcd::EtcdError::Unreachable { .. } => vec![
                    "start etcd, or check the address (`liza doctor` tries every member); nothing was changed".into(),
                ],
                liza_etcd::EtcdError::Indeterminate { .. } => vec![
                    "`liza log` shows whether the change was made before you try it again".into(),
                ],
                _ => vec!["`liza doctor` checks the store".into()],
            },
            StoreError::ProjectExists { address } => vec![format!(
                "to work on it from this checkout: liza join {address}; for a new project, choose another prefix"
            )],
            StoreError::Address { origin, .. } => vec![format!(
                "correct {origin}; `liza join etcd://HOST:PORT/PREFIX` attaches a checkout to a blackboard in etcd"
            )],
            StoreError::Layout { .. } => vec![
                "`liza doctor` checks the store; a key written by another program is named above".into(),
            ],
            StoreError::DamagedCache { .. } => vec![
                "the state is unchanged and the cache was removed: run the command again (state.yaml is read in full this time)".into(),
            ],
        }
    }
}

impl StoreError {
    /// Findings to show under the error, if it has any.
    pub fn findings(&self) -> &[Finding] {
        match self {
            StoreError::Invalid { findings, .. } | StoreError::WouldInvalidate { findings } => {
                findings
            }
            _ => &[],
        }
    }
}

/// A failed transaction: the store failed, or the change itself refused.
#[derive(Debug)]
pub enum TxError<E> {
    /// The store failed: nothing was written.
    Store(StoreError),
    /// The change refused, with its reason: nothing was written.
    Refused(E),
}

impl<E> From<StoreError> for TxError<E> {
    fn from(e: StoreError) -> Self {
        TxError::Store(e)
    }
}

/// Refuses a supervisor's transaction unless `generation` is its agent's registered one
/// (specs/supervisor.md *Startup*: one process supervises one registration).
fn fence(state: &State, id: &AgentId, generation: &str) -> Result<(), StoreError> {
    let registered = state.agents.get(id).and_then(|a| a.generation.as_deref());
    if registered == Some(generation) {
        return Ok(());
    }
    Err(StoreError::Superseded {
        agent: id.to_string(),
        presented: generation.to_owned(),
        registered: state
            .agents
            .get(id)
            .map(|a| a.generation.clone().unwrap_or_else(|| "(none)".to_owned())),
    })
}

/// The state being changed inside a transaction, and the log entries it will write.
pub struct Tx {
    /// The state the change edits: the committed state, liveness records folded in.
    pub state: State,
    /// The time of the transaction (each attempt reads the clock again).
    pub now: Timestamp,
    actor: Actor,
    live: LiveRecords,
    log: Vec<LogEntry>,
}

impl Tx {
    /// Who makes the change.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// The liveness records folded into `state`. In etcd the commit is guarded by
    /// them (it is refused if one changed since); on files they were read just before
    /// the lock. A check of who is behind the caller reads them here, not with a read
    /// of its own.
    pub fn live(&self) -> &LiveRecords {
        &self.live
    }

    /// Adds a log entry for this transaction (by the acting agent or `human`).
    pub fn log(&mut self, action: EventKind) -> &mut LogEntry {
        self.log_named(action.as_str())
    }

    /// A log entry whose action is given by name (an event of the change, or what a
    /// person logged).
    pub fn log_named(&mut self, action: &str) -> &mut LogEntry {
        let mut entry = LogEntry::new(self.now, self.actor.name(), EventKind::Init);
        entry.action = action.to_owned();
        self.log.push(entry);
        self.log.last_mut().expect("just pushed")
    }
}

/// A committed transaction.
#[derive(Debug)]
pub struct Committed<R> {
    /// What the change returned (on the attempt that committed).
    pub value: R,
    /// The revision it made.
    pub revision: u64,
    /// The log entries it wrote.
    pub entries: Vec<LogEntry>,
}

/// A state read without the lock.
#[derive(Debug)]
pub struct Snapshot {
    /// The state, liveness records folded in.
    pub state: State,
    /// Names what was read: the hash of state.yaml's bytes on files, of the head's
    /// revision in etcd (see [`Store::refuse_damaged`]).
    pub hash: ContentHash,
    /// state.yaml differs from the last committed revision (edited by hand, or written
    /// by another tool); the next transaction reconciles it.
    pub pending_hand_edit: bool,
}

/// The blackboard of one project, in whichever store holds it.
pub struct Store {
    backend: Box<dyn Backend>,
}

/// A file liza keeps beside the blackboard: under `.liza/` on files, under the project's
/// prefix in etcd (where every host reads it). Names are checked by the caller (sprint
/// ids as task ids are; blobs are git object ids).
pub enum Document<'a> {
    /// The terminal tasks of a past sprint (`liza archive`, read by `liza retro`).
    Archive {
        /// The sprint's id.
        sprint: &'a str,
    },
    /// A spec's text as a task was finalized against it (the git blob id).
    SpecText {
        /// The spec's git blob id.
        blob: &'a str,
    },
}

impl Document<'_> {
    fn path(&self, paths: &LizaPaths) -> PathBuf {
        match self {
            Document::Archive { sprint } => paths.archive(sprint),
            Document::SpecText { blob } => paths.specs().join(blob),
        }
    }

    /// `doc/archive/<sprint>`, `doc/spec/<blob>`: its key under the prefix in etcd.
    pub(crate) fn key(&self) -> String {
        match self {
            Document::Archive { sprint } => format!("doc/archive/{sprint}"),
            Document::SpecText { blob } => format!("doc/spec/{blob}"),
        }
    }
}

/// What a store does to run a transaction; [`run`] holds what is common.
trait Transactional {
    /// What the commit needs of the read (the file store's lock, say).
    type Attempt;
    /// Reads the committed state, liveness records folded in, and those records.
    fn begin(&self) -> Result<(State, LiveRecords, Self::Attempt), StoreError>;
    /// Commits `state` as the next revision with `log`.
    fn finish(
        &self,
        attempt: Self::Attempt,
        state: State,
        log: Vec<LogEntry>,
    ) -> Result<Finished, StoreError>;
    /// Whether a commit whose outcome was unknown was applied: `None` while it may still
    /// land (the store has not reached the revision it would have made). Asked after
    /// `begin`, so a commit that landed before the attempt's read is found.
    fn was_applied(&self, unknown: &Unknown) -> Result<Option<bool>, StoreError>;
    /// The project root (validation checks paths under it).
    fn root(&self) -> &Path;
    /// Whether the state `attempt` started from is older than the blackboard now (it
    /// came from what the process knew, not from a read): a refusal on it is checked
    /// again on the newer state before it is final. The file store reads under its lock:
    /// never.
    fn outdated(&self, attempt: Self::Attempt) -> Result<bool, StoreError> {
        drop(attempt);
        Ok(false)
    }
}

/// How a commit ended.
pub(super) enum Finished {
    Committed(u64, Vec<LogEntry>),
    /// Another writer committed first: run the change again on the newer state.
    Conflict,
    /// Sent, and no answer came back: maybe applied.
    Unknown(Unknown),
}

/// A commit that may or may not have been applied: the revision it would have made,
/// its log entries, and what its first log entry was written as (written by it alone).
pub(super) struct Unknown {
    pub revision: u64,
    pub entries: Vec<LogEntry>,
    pub first_log: Option<(Vec<u8>, Vec<u8>)>,
}

impl Transactional for FileStore {
    type Attempt = FileAttempt;

    fn begin(&self) -> Result<(State, LiveRecords, FileAttempt), StoreError> {
        FileStore::begin(self)
    }

    fn finish(
        &self,
        attempt: FileAttempt,
        state: State,
        log: Vec<LogEntry>,
    ) -> Result<Finished, StoreError> {
        let (revision, entries) = FileStore::finish(self, attempt, state, log)?;
        Ok(Finished::Committed(revision, entries))
    }

    fn was_applied(&self, _: &Unknown) -> Result<Option<bool>, StoreError> {
        // A commit to files always knows how it ended.
        Ok(Some(false))
    }

    fn root(&self) -> &Path {
        &self.paths().root
    }
}

impl Transactional for EtcdStore {
    type Attempt = EtcdAttempt;

    fn begin(&self) -> Result<(State, LiveRecords, EtcdAttempt), StoreError> {
        EtcdStore::begin(self)
    }

    fn outdated(&self, attempt: EtcdAttempt) -> Result<bool, StoreError> {
        EtcdStore::outdated(self, attempt)
    }

    fn finish(
        &self,
        attempt: EtcdAttempt,
        state: State,
        log: Vec<LogEntry>,
    ) -> Result<Finished, StoreError> {
        EtcdStore::finish(self, attempt, state, log)
    }

    fn was_applied(&self, unknown: &Unknown) -> Result<Option<bool>, StoreError> {
        EtcdStore::was_applied(self, unknown)
    }

    fn root(&self) -> &Path {
        &self.paths().root
    }
}

/// One transaction on `store`: read, fence, change, validate, commit — again from the
/// read when another writer committed first. A commit whose outcome is unknown is
/// settled on the next read before the change runs again: it is never applied twice.
fn run<S: Transactional, R, E, F: FnMut(&mut Tx) -> Result<R, E> + ?Sized>(
    store: &S,
    actor: &Actor,
    change: &mut F,
) -> Result<Committed<R>, TxError<E>> {
    // Commits sent with no answer back, each with what its change returned: at most one
    // of them can land (each was guarded by a head read after the one before it).
    let mut unknowns: Vec<(Unknown, R)> = Vec::new();
    // A refusal was checked again on a state read for it.
    let mut rechecked = false;
    loop {
        // Settled after the read the attempt starts from, never before: a commit that
        // lands between the two would be in the attempt's state and applied again.
        let (state, live, attempt) = store.begin()?;
        let mut undecided = Vec::new();
        for (pending, value) in std::mem::take(&mut unknowns) {
            match store.was_applied(&pending)? {
                Some(true) => {
                    return Ok(Committed {
                        value,
                        revision: pending.revision,
                        entries: pending.entries,
                    });
                }
                Some(false) => {}
                None => undecided.push((pending, value)),
            }
        }
        unknowns = undecided;
        if let Actor::Supervisor { id, generation } = actor {
            fence(&state, id, generation)?;
        }
        let mut tx = Tx {
            state,
            now: Timestamp::now(),
            actor: actor.clone(),
            live,
            log: Vec::new(),
        };
        let env = ValidationEnv::new(Some(store.root()), tx.now);
        let before: HashSet<_> = validate(&tx.state, &env)
            .iter()
            .filter(|f| f.is_error())
            .map(Finding::identity)
            .collect();
        let value = match change(&mut tx) {
            Ok(value) => value,
            // Refused on what this process knew: final only once the blackboard is
            // known to be no newer.
            Err(_) if !rechecked && store.outdated(attempt)? => {
                rechecked = true;
                continue;
            }
            Err(e) => return Err(TxError::Refused(e)),
        };
        let introduced: Vec<Finding> = validate(&tx.state, &env)
            .into_iter()
            .filter(|f| f.is_error() && !before.contains(&f.identity()))
            .collect();
        if !introduced.is_empty() {
            if !rechecked && store.outdated(attempt)? {
                rechecked = true;
                continue;
            }
            return Err(StoreError::WouldInvalidate {
                findings: introduced,
            }
            .into());
        }
        match store.finish(attempt, tx.state, tx.log)? {
            Finished::Committed(revision, entries) => {
                return Ok(Committed {
                    value,
                    revision,
                    entries,
                });
            }
            Finished::Conflict => {}
            Finished::Unknown(pending) => unknowns.push((pending, value)),
        }
    }
}

impl Store {
    /// Opens the blackboard of the project at `root`: in etcd when `LIZA_STORE` or the
    /// checkout's `.liza/store` names an address, else the files of `.liza/` (which must
    /// exist). Hand edits are reconciled with `policy` (the status changes a person may
    /// make, where alarms go). `ops::open_store` opens it with the lifecycle's rules.
    pub fn open(root: &Path, policy: Arc<dyn HandEditPolicy>) -> Result<Store, StoreError> {
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let backend: Box<dyn Backend> = match locate(&root)? {
            Some(address) => Box::new(EtcdStore::connect(&root, address, policy)?),
            None => Box::new(FileStore::open(&root, policy)?),
        };
        Ok(Store { backend })
    }

    /// Creates the blackboard with `state` as revision 1: in `.liza/`, or in etcd at
    /// `address` with the checkout's `.liza/store` naming it.
    pub fn initialize(
        root: &Path,
        address: Option<StoreAddress>,
        state: State,
        entry: LogEntry,
        policy: Arc<dyn HandEditPolicy>,
    ) -> Result<Store, StoreError> {
        let Some(address) = address else {
            return Ok(Store {
                backend: Box::new(FileStore::initialize(root, state, entry, policy)?),
            });
        };
        let paths = LizaPaths::new(root);
        if paths.dir.exists() {
            return Err(StoreError::AlreadyInitialized {
                dir: paths.dir.display().to_string(),
            });
        }
        let store = EtcdStore::connect(root, address.clone(), policy)?;
        store.initialize(state, entry)?;
        remember_address(&paths, &address)?;
        // The checkout's mirror shows revision 1 from the start.
        store.snapshot()?;
        Ok(Store {
            backend: Box::new(store),
        })
    }

    /// Attaches the checkout at `root` to the blackboard in etcd at `address`, which
    /// must exist: `.liza/store` names it from then on.
    pub fn join(
        root: &Path,
        address: StoreAddress,
        policy: Arc<dyn HandEditPolicy>,
    ) -> Result<Store, StoreError> {
        let paths = LizaPaths::new(root);
        if paths.dir.exists() {
            return Err(StoreError::AlreadyInitialized {
                dir: paths.dir.display().to_string(),
            });
        }
        let store = EtcdStore::connect(root, address.clone(), policy)?;
        store.snapshot()?;
        remember_address(&paths, &address)?;
        store.snapshot()?;
        Ok(Store {
            backend: Box::new(store),
        })
    }

    /// What `liza doctor` checks of a blackboard in etcd (`None` on files).
    pub fn inspect_shared(&self) -> Option<etcd::Inspection> {
        self.backend.inspect_shared()
    }

    /// The etcd address of the blackboard, when it is in etcd.
    pub fn address(&self) -> Option<&StoreAddress> {
        self.backend.address()
    }

    /// Waits this long for the lock instead of `config.lock_timeout` (supervisors: 60 s).
    pub fn with_lock_timeout(self, timeout: Duration) -> Store {
        Store {
            backend: self.backend.with_wait(timeout),
        }
    }

    /// The checkout's `.liza/` files.
    pub fn paths(&self) -> &LizaPaths {
        self.backend.paths()
    }

    /// Runs `change` as one transaction (see the module docs). `change` must be pure and
    /// fast — no git, processes, HTTP or waiting —, and may run more than once: again on
    /// the newer state when another writer committed first.
    pub fn transact<R, E>(
        &self,
        actor: &Actor,
        mut change: impl FnMut(&mut Tx) -> Result<R, E>,
    ) -> Result<Committed<R>, TxError<E>> {
        // The backend sees the change without its types: each attempt's value is kept
        // here and the backend answers which attempt committed.
        let mut values: Vec<Option<R>> = Vec::new();
        let mut refusal: Option<E> = None;
        let mut erased = |tx: &mut Tx| match change(tx) {
            Ok(value) => {
                values.push(Some(value));
                Ok(values.len() - 1)
            }
            Err(e) => {
                refusal = Some(e);
                Err(())
            }
        };
        let outcome = self.backend.transact(actor, &mut erased);
        match outcome {
            Ok(committed) => Ok(Committed {
                value: values[committed.value]
                    .take()
                    .expect("the attempt that committed returned a value"),
                revision: committed.revision,
                entries: committed.entries,
            }),
            Err(TxError::Store(e)) => Err(TxError::Store(e)),
            Err(TxError::Refused(())) => Err(TxError::Refused(
                refusal.expect("a refused change returned its refusal"),
            )),
        }
    }

    /// Reads the published state without the lock (display, decisions re-checked later).
    pub fn snapshot(&self) -> Result<Snapshot, StoreError> {
        self.backend.snapshot()
    }

    /// Refuses `tasks` read from the text hashing to `hash` if one of their histories
    /// could not be given back by the parse cache (see `FileStore::refuse_damaged`).
    pub fn refuse_damaged<'t>(
        &self,
        hash: ContentHash,
        tasks: impl IntoIterator<Item = &'t Task>,
    ) -> Result<(), StoreError> {
        let tasks: Vec<&Task> = tasks.into_iter().collect();
        self.backend.refuse_damaged(hash, &tasks)
    }

    /// Appends entries that record no state change (a supervisor's wake-ups and agent
    /// run ends) to the log.
    pub fn append_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        self.backend.append_log(entries)
    }

    /// Who holds the state lock right now (`None`: free), without waiting.
    pub fn lock_holder(&self) -> Result<Option<String>, StoreError> {
        self.backend.lock_holder()
    }

    /// The revisions whose text can still be read, oldest first.
    pub fn revisions(&self) -> Result<Vec<u64>, StoreError> {
        self.backend.revisions()
    }

    /// The kept revisions whose journal entry is not whole (its size is not the one its
    /// name says): a write that failed before liza wrote entries under a temporary name.
    pub fn damaged_revisions(&self) -> Result<Vec<u64>, StoreError> {
        self.backend.damaged_revisions()
    }

    /// The state.yaml text of `revision` as committed, if it is still kept.
    pub fn revision_text(&self, revision: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.backend.revision_text(revision)
    }

    /// Reconciles a hand edit now, with no change of its own.
    pub fn reconcile(&self) -> Result<(), StoreError> {
        self.backend.reconcile()
    }

    /// The last committed revision's state, whatever a person's unreconciled edit says.
    pub fn committed_state(&self) -> Option<State> {
        self.backend.committed_state()
    }

    /// What the next transaction would make of a pending hand edit (`None`: there is
    /// none), without the lock and without writing.
    pub fn pending_hand_edit(
        &self,
    ) -> Result<Option<Result<(), hand_edit::Rejection>>, StoreError> {
        self.backend.pending_hand_edit()
    }

    /// The agents' liveness records (specs/blackboard.md *Liveness*).
    pub fn live_records(&self) -> Result<LiveRecords, StoreError> {
        self.backend.live_records()
    }

    /// Writes `agent`'s liveness record (a heartbeat). In etcd it lives as long as its
    /// longest lease, then vanishes by itself if no heartbeat renewed it.
    pub fn write_live(&self, agent: &AgentId, record: &LiveRecord) -> Result<(), StoreError> {
        self.backend.write_live(agent, record)
    }

    /// Removes every liveness record of `agent` (a registration ended or was replaced).
    pub fn remove_live(&self, agent: &AgentId) -> Result<(), StoreError> {
        self.backend.remove_live(agent)
    }

    /// The log as log.yaml text: every entry, oldest first.
    pub fn log_text(&self) -> Result<Vec<u8>, StoreError> {
        self.backend.log_text()
    }

    /// A feed of the changes of `topics` from now on, bursts within `debounce` waking
    /// a waiter once.
    pub fn changes(&self, topics: &[changes::Topic], debounce: Duration) -> changes::Changes {
        self.backend.changes(topics, debounce)
    }

    /// The control flags raised now.
    pub fn control_flags(&self) -> Result<ControlFlags, StoreError> {
        self.backend.control_flags()
    }

    /// Raises `control` with `text` (its first line: when).
    pub fn raise(&self, control: Control, text: &str) -> Result<(), StoreError> {
        self.backend.raise(control, text)
    }

    /// Lowers `control`; `false` when it was not raised.
    pub fn lower(&self, control: Control) -> Result<bool, StoreError> {
        self.backend.lower(control)
    }

    /// Hands the log to `visit` entry by entry — from log.yaml as it is read, holding one
    /// entry at a time — and returns whether it ended torn and, with `follow`, the feed of
    /// what is appended after the last entry visited.
    pub fn stream_log(
        &self,
        follow: bool,
        visit: &mut dyn FnMut(crate::log::Item),
    ) -> Result<(bool, Option<log_feed::LogFeed>), StoreError> {
        self.backend.stream_log(follow, visit)
    }

    /// The log as log.yaml text, and a feed of the entries written after it.
    pub fn follow_log(&self) -> Result<(Vec<u8>, log_feed::LogFeed), StoreError> {
        self.backend.follow_log()
    }

    /// The last `n` log entries.
    pub fn log_tail(&self, n: usize) -> Vec<LogEntry> {
        self.backend.log_tail(n)
    }

    /// The blackboard as state.yaml text: the file as it is, or etcd's state rendered.
    pub fn text(&self) -> Result<Vec<u8>, StoreError> {
        self.backend.text()
    }

    /// Adds each `(key, line)` to the alarm log unless an alarm with its key was raised
    /// before, by any process (on any host, in etcd); whether each was added.
    pub fn append_alarms(&self, lines: &[(String, String)]) -> Result<Vec<bool>, StoreError> {
        self.backend.append_alarms(lines)
    }

    /// Claims the delivery of the alarm `key` to notify-send and the webhook: true for the
    /// one watcher, of all processes and hosts, that gets to deliver it.
    pub fn claim_delivery(&self, key: &str) -> Result<bool, StoreError> {
        self.backend.claim_delivery(key)
    }

    /// Every alarm line raised, oldest first.
    pub fn alarm_lines(&self) -> Result<Vec<String>, StoreError> {
        self.backend.alarm_lines()
    }

    /// Adds each run to the ledger unless it is there already, by any process (on any
    /// host, in etcd); whether each was added (specs/ledger.md). Never part of a
    /// transition: a transition's cost does not grow with the ledger.
    pub fn append_ledger(
        &self,
        entries: &[liza_model::ledger::LedgerEntry],
    ) -> Result<Vec<bool>, StoreError> {
        for entry in entries {
            entry.check().map_err(|e| StoreError::BadName {
                detail: e.to_string(),
            })?;
        }
        self.backend.append_ledger(entries)
    }

    /// Every run in the ledger, oldest first.
    pub fn ledger(&self) -> Result<Vec<liza_model::ledger::LedgerEntry>, StoreError> {
        self.backend.ledger()
    }

    /// Records a usage limit hit, for every supervisor of its backend and account (specs/ledger.md
    /// *Quota*); a later reset already recorded is kept.
    pub fn record_quota(&self, hit: &liza_model::quota::QuotaHit) -> Result<(), StoreError> {
        hit.check().map_err(|e| StoreError::BadName {
            detail: e.to_string(),
        })?;
        self.backend.record_quota(hit)
    }

    /// The usage limits recorded (some may have reset already: see `QuotaHit::holds_at`).
    pub fn quotas(&self) -> Result<Vec<liza_model::quota::QuotaHit>, StoreError> {
        self.backend.quotas()
    }

    /// The last `n` alarm lines (none when they cannot be read).
    pub fn recent_alarms(&self, n: usize) -> Vec<String> {
        let mut lines = self.alarm_lines().unwrap_or_default();
        lines.drain(..lines.len().saturating_sub(n));
        lines
    }

    /// The text of `document`, if it was kept.
    pub fn document(&self, document: &Document) -> Result<Option<Vec<u8>>, StoreError> {
        self.backend.document(document)
    }

    /// Keeps `bytes` as `document`, replacing what was kept: whole or not at all.
    pub fn keep_document(&self, document: &Document, bytes: &[u8]) -> Result<(), StoreError> {
        self.update_document(document, |_| Ok::<_, StoreError>(bytes.to_vec()))
    }

    /// Replaces `document` by what `change` makes of the text kept (`None`: none yet),
    /// whole or not at all; a writer that replaced it meanwhile is never overwritten
    /// unseen (on files the document's directory is locked while it runs; in etcd the
    /// change runs again on the newer text).
    pub fn update_document<E: From<StoreError>>(
        &self,
        document: &Document,
        mut change: impl FnMut(Option<&[u8]>) -> Result<Vec<u8>, E>,
    ) -> Result<(), E> {
        // A refusal stops the update; the backend sees it as "write nothing".
        let mut refusal: Option<E> = None;
        let mut erased = |kept: Option<&[u8]>| match change(kept) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                refusal = Some(e);
                None
            }
        };
        let outcome = self.backend.update_document(document, &mut erased);
        match refusal {
            Some(e) => Err(e),
            None => outcome.map_err(E::from),
        }
    }

    /// How many keys one transition may write (etcd's per-txn limit); `None`: no limit.
    pub fn keys_per_transition(&self) -> Option<usize> {
        self.backend.keys_per_transition()
    }

    /// Where `document` is kept, for messages: a path under `.liza/`, or a key in etcd.
    pub fn document_place(&self, document: &Document) -> String {
        self.backend.document_place(document)
    }

    /// Applies a person's edited text (`liza edit`) as one transaction, merged onto the
    /// latest revision with `choices` for fields both sides changed.
    pub fn submit_edit(
        &self,
        bytes: &[u8],
        choices: &merge3::Choices,
    ) -> Result<Result<u64, hand_edit::Rejection>, StoreError> {
        self.backend.submit_edit(bytes, choices)
    }
}

/// The bytes of the file at `path` under `.liza/`; `None` when there is none.
fn read_if_there(paths: &LizaPaths, path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StoreError::Io {
            action: "read",
            path: paths.display(path),
            source,
        }),
    }
}

/// The address the global `--store` gave, for this process.
static ADDRESS_OVERRIDE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Makes every store this process opens the one at `address` (the global `--store`);
/// the first call wins.
pub fn use_address(address: String) {
    let _ = ADDRESS_OVERRIDE.set(address);
}

/// The etcd address given to this process — the global `--store`, else `LIZA_STORE` —,
/// as written (`None`: the checkouts' own).
pub fn given_address() -> Option<String> {
    ADDRESS_OVERRIDE.get().cloned().or_else(|| {
        std::env::var("LIZA_STORE")
            .ok()
            .filter(|s| !s.trim().is_empty())
    })
}

/// The etcd address a checkout at `root` uses: the global `--store`, else `LIZA_STORE`,
/// else `.liza/store`; `None`: the file store.
pub fn locate(root: &Path) -> Result<Option<StoreAddress>, StoreError> {
    if let Some(text) = ADDRESS_OVERRIDE.get() {
        return parse_address(text.trim(), "--store").map(Some);
    }
    if let Ok(text) = std::env::var("LIZA_STORE")
        && !text.trim().is_empty()
    {
        return parse_address(text.trim(), "LIZA_STORE").map(Some);
    }
    let path = LizaPaths::new(root).store_address();
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_address(text.trim(), ".liza/store").map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StoreError::Io {
            action: "read",
            path: path.display().to_string(),
            source,
        }),
    }
}

fn parse_address(text: &str, origin: &str) -> Result<StoreAddress, StoreError> {
    text.parse().map_err(|source| StoreError::Address {
        origin: origin.to_owned(),
        source,
    })
}

/// Creates `.liza/` holding `store` (the address), built aside and renamed into place so
/// a concurrent or failed command leaves nothing half-made.
fn remember_address(paths: &LizaPaths, address: &StoreAddress) -> Result<(), StoreError> {
    let io = |action: &'static str, path: &Path| {
        let path = path.display().to_string();
        move |source| StoreError::Io {
            action,
            path,
            source,
        }
    };
    let staging = tempfile::Builder::new()
        .prefix(".liza.join-")
        .tempdir_in(&paths.root)
        .map_err(io("create a directory in", &paths.root))?;
    let file = staging.path().join(LizaPaths::STORE_ADDRESS);
    atomic::create_synced(&file, format!("{address}\n").as_bytes()).map_err(io("write", &file))?;
    let staged = staging.keep();
    if let Err(e) = atomic::rename_noreplace(&paths.root, &staged, &paths.dir) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(match e.kind() {
            io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty => {
                StoreError::AlreadyInitialized {
                    dir: paths.dir.display().to_string(),
                }
            }
            _ => io("create", &paths.dir)(e),
        });
    }
    atomic::fsync_dir(&paths.root).map_err(io("sync", &paths.root))
}
