//! The file store: state.yaml in `.liza/` of one checkout, written under a file lock
//! (specs/blackboard.md *The store*). A transaction locks the sidecar, reads and hashes
//! state.yaml, loads it (from the parse cache when liza wrote those bytes, otherwise a
//! full parse that is reconciled as a hand edit first); the shared part of
//! [`super::Store::transact`] runs the change and validates; then the journal entry is
//! written, the new file swapped in atomically, what was swapped out checked, the cache
//! refreshed, the log appended and the lock released, and the writes made durable.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::atomic;
use super::cache::{Loaded, ParseCache, TaskTexts};
use super::commented::Commented;
use super::hand_edit::HandEditPolicy;
use liza_base::failpoint;

mod backend;
mod saves;
use super::hash::ContentHash;
use super::journal::{Journal, JournalEntry};
use super::lock::{self, LockFailure, StateLock};
use super::{Snapshot, StoreError};
use crate::liveness::{self, LiveRecords};
use crate::log::{self as activity, LogEntry, millis};
use liza_model::codec::Emit;
use liza_model::document;
use liza_model::finding::Finding;
use liza_model::metrics;
use liza_model::model::{History, State, Task, TaskList};
use liza_model::paths::LizaPaths;
use liza_model::timestamp::Timestamp;
use liza_model::validate::ValidationEnv;
use liza_yaml::{Emitter, ItemTexts};

/// The file store: the blackboard in `.liza/` of one checkout (specs/blackboard.md).
pub(super) struct FileStore {
    pub(super) paths: LizaPaths,
    pub(super) journal: Journal,
    pub(super) cache: ParseCache,
    pub(super) lock_timeout: Option<Duration>,
    /// The last state this process committed or read through the parse cache, with its
    /// task texts: the next transaction (of a supervisor, or of a command that read a
    /// snapshot first) reuses it when state.yaml still has those bytes.
    pub(super) last_commit: Mutex<Option<Memo>>,
    /// The lifecycle's say on hand edits, and where their alarms go (`ops` provides it:
    /// the store cannot reconcile a person's save without it).
    pub(super) policy: Arc<dyn HandEditPolicy>,
}

pub(super) struct Memo {
    pub(super) hash: ContentHash,
    pub(super) state: State,
    pub(super) texts: Option<TaskTexts>,
    /// The text, when it holds a person's comments (see [`Current::commented`]).
    pub(super) commented: Option<Commented>,
}

impl From<Current> for Memo {
    fn from(current: Current) -> Memo {
        Memo {
            hash: current.hash,
            state: current.state,
            texts: current.texts,
            commented: current.commented,
        }
    }
}

pub(super) fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.display().to_string(),
        source,
    }
}

impl FileStore {
    /// Opens the blackboard of the project at `root` (which must hold `.liza/`); hand
    /// edits are reconciled with `policy` (the status changes a person may make, where
    /// alarms go). `ops::open_store` opens it with the lifecycle's rules.
    pub(super) fn open(
        root: &Path,
        policy: Arc<dyn HandEditPolicy>,
    ) -> Result<FileStore, StoreError> {
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let paths = LizaPaths::new(&root);
        if !paths.dir.is_dir() {
            return Err(StoreError::NotInitialized {
                dir: paths.dir.display().to_string(),
            });
        }
        Ok(FileStore::at(paths, policy))
    }

    pub(super) fn at(paths: LizaPaths, policy: Arc<dyn HandEditPolicy>) -> FileStore {
        FileStore {
            journal: Journal::new(paths.journal()),
            cache: ParseCache::new(paths.dir.clone()),
            paths,
            lock_timeout: None,
            last_commit: Mutex::new(None),
            policy,
        }
    }

    /// Waits this long for the lock instead of `config.lock_timeout` (supervisors: 60 s).
    pub(super) fn with_lock_timeout(mut self, timeout: Duration) -> FileStore {
        self.lock_timeout = Some(timeout);
        self
    }

    pub(super) fn paths(&self) -> &LizaPaths {
        &self.paths
    }

    /// Creates `.liza/` with `state` as revision 1: built in a temporary directory and
    /// renamed into place, so a concurrent or failed init leaves nothing half-made.
    pub(super) fn initialize(
        root: &Path,
        mut state: State,
        entry: LogEntry,
        policy: Arc<dyn HandEditPolicy>,
    ) -> Result<FileStore, StoreError> {
        let paths = LizaPaths::new(root);
        let dir_name = paths.dir.display().to_string();
        if paths.dir.exists() {
            return Err(StoreError::AlreadyInitialized { dir: dir_name });
        }
        let staging = tempfile::Builder::new()
            .prefix(".liza.init-")
            .tempdir_in(root)
            .map_err(io_err("create a directory in", root))?;
        let staged = FileStore::at(
            LizaPaths {
                root: root.to_path_buf(),
                dir: staging.path().to_path_buf(),
            },
            policy.clone(),
        );
        state.revision = Some(1);
        metrics::recompute(&mut state);
        let timeout = state.config.lock_timeout() as u64;
        let Rendered {
            bytes,
            task_spans: spans,
            ..
        } = render(&state, None);
        let hash = ContentHash::of(&bytes);
        let p = &staged.paths;
        fs::write(p.lock(), b"").map_err(io_err("create", &p.lock()))?;
        staged
            .journal
            .write(1, hash, &bytes, &[])
            .map_err(io_err("write the journal in", &p.journal()))?;
        atomic::create_synced(&p.state(), &bytes).map_err(io_err("write", &p.state()))?;
        let mut entry = entry;
        entry.revision = Some(1);
        activity::append(&p.log(), &[entry]).map_err(io_err("write", &p.log()))?;
        let _ = staged.cache.store(
            &staged
                .cache
                .encode(hash, &mut state, &spans, None, None, timeout),
            hash,
        );
        atomic::fsync_dir(&p.dir).map_err(io_err("sync", &p.dir))?;
        let staging_path = staging.keep();
        match atomic::rename_noreplace(root, &staging_path, &paths.dir) {
            Ok(()) => {}
            Err(e) => {
                let _ = fs::remove_dir_all(&staging_path);
                return Err(match e.kind() {
                    io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty => {
                        StoreError::AlreadyInitialized { dir: dir_name }
                    }
                    _ => io_err("create", &paths.dir)(e),
                });
            }
        }
        atomic::fsync_dir(root).map_err(io_err("sync", root))?;
        Ok(FileStore::at(paths, policy))
    }

    /// Reads the published state without the lock (display, decisions re-checked later).
    pub(super) fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let path = self.paths.state();
        let bytes = match document::read_limited(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(self.state_missing()),
            Err(e) => return Err(io_err("read", &path)(e)),
        };
        let hash = ContentHash::of(&bytes);
        let state = match self.peek(hash) {
            Some(state) => state,
            None => match self.cache.load(hash, bytes) {
                Ok(loaded) => {
                    // A command that reads, then transacts (claim, submit) decodes once.
                    let current = Current::cached(loaded, hash, Vec::new());
                    let state = current.state.clone();
                    self.remember(current.into());
                    state
                }
                Err(bytes) => match document::decode(&bytes) {
                    Ok(decoded) => decoded.state,
                    // A broken hand edit waits for the next transaction to put the last
                    // good revision back; readers see that revision meanwhile.
                    Err(findings) => self.head_state().ok_or_else(|| self.invalid(findings))?,
                },
            },
        };
        let entries = self
            .journal
            .entries()
            .map_err(io_err("read", self.journal.dir()))?;
        let mut state = state;
        liveness::fold(&mut state, &liveness::read_all(&self.paths.live()));
        Ok(Snapshot {
            state,
            hash,
            pending_hand_edit: !self.is_committed(&entries, hash)?,
        })
    }

    /// Starts a transaction: takes the lock and reads the committed state, a hand edit
    /// reconciled first. Liveness records are read before the lock (a heartbeat written
    /// meanwhile is folded by the next transaction): the lock is held for the state alone.
    pub(super) fn begin(&self) -> Result<(State, LiveRecords, FileAttempt), StoreError> {
        let live = liveness::read_all(&self.paths.live());
        let lock = self.lock()?;
        failpoint::hit("after-lock");
        self.clean_leftovers()?;
        let current = self.read_current(&lock)?;
        // Holding the original tasks keeps their allocations alive, so a task the change
        // touches is cloned (a new address) and one it leaves alone keeps its address:
        // that is how the commit knows which task texts it may copy.
        let original = current.state.tasks.clone();
        // A person's text is rewritten from the state it reads as.
        let read_as = current.commented.is_some().then(|| current.state.clone());
        let Current {
            mut state,
            hash,
            journal,
            texts,
            commented,
        } = current;
        // Heartbeats renewed leases in liveness records; this commit makes them part of
        // the state (specs/blackboard.md *Liveness*).
        liveness::fold(&mut state, &live);
        let attempt = FileAttempt {
            lock,
            hash,
            journal,
            texts,
            commented,
            original,
            read_as,
        };
        Ok((state, live, attempt))
    }

    /// Commits `state` as the next revision with `log` (see the module docs).
    pub(super) fn finish(
        &self,
        attempt: FileAttempt,
        mut state: State,
        log: Vec<LogEntry>,
    ) -> Result<(u64, Vec<LogEntry>), StoreError> {
        let FileAttempt {
            lock,
            hash,
            journal,
            texts,
            commented,
            original,
            read_as,
        } = attempt;
        let replaced = Replaced {
            hash,
            texts,
            commented: commented.as_ref(),
            before: read_as.as_ref(),
        };
        let committed = self.commit(&lock, &mut state, journal, replaced, log)?;
        drop(original);
        drop(read_as);
        if let Some(saved) = &committed.concurrent_save {
            // Rare: finish this commit, then reconcile the save under the same lock.
            committed.durable.complete()?;
            let current = self.reconcile_swapped_out(&lock, saved)?;
            self.remember(current.into());
            drop(lock);
            return Ok((committed.revision, committed.entries));
        }
        self.remember(Memo {
            hash: committed.hash,
            state,
            texts: committed.texts,
            commented: committed.commented,
        });
        // The new state is visible from the swap on; what only makes it durable (the
        // directory and log fsyncs, journal pruning) waits outside the lock, before the
        // command reports success.
        drop(lock);
        committed.durable.complete()?;
        Ok((committed.revision, committed.entries))
    }

    /// Refuses `tasks` (read from the state.yaml text hashing to `hash`) if one of their
    /// histories was read and the parse cache could not give it back (`model/history.rs`):
    /// the cache is removed, so the command run again reads state.yaml in full. Whatever
    /// writes tasks out — a commit, an archive — checks them once it has read them, or it
    /// would write such a history empty (an unread one is copied as its text).
    pub(super) fn refuse_damaged<'t>(
        &self,
        hash: ContentHash,
        tasks: impl IntoIterator<Item = &'t Task>,
    ) -> Result<(), StoreError> {
        let damaged = tasks
            .into_iter()
            .filter_map(|t| t.history.as_ref())
            .any(History::is_damaged);
        if !damaged {
            return Ok(());
        }
        self.cache.remove(hash);
        Err(StoreError::DamagedCache {
            path: self.paths.display(&self.cache.path_for(hash)),
        })
    }

    /// Appends entries that record no state change (a supervisor's wake-ups and agent run
    /// ends) to log.yaml, under the state lock so they never land inside a transaction's
    /// append; the lock is held for the append alone.
    pub(super) fn append_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        let lock = self.lock()?;
        let file = activity::append_unsynced(&self.paths.log(), entries)
            .map_err(io_err("append to", &self.paths.log()))?;
        drop(lock);
        file.sync_data().map_err(io_err("sync", &self.paths.log()))
    }

    /// Who holds the state lock right now (`None`: free), without waiting.
    pub(super) fn lock_holder(&self) -> Result<Option<String>, StoreError> {
        lock::probe(&self.paths.lock(), &self.paths.lock_owner())
            .map_err(io_err("read", &self.paths.lock()))
    }

    /// The revisions kept in the journal, oldest first (`config.journal_keep` bounds them).
    pub(super) fn revisions(&self) -> Result<Vec<u64>, StoreError> {
        let entries = self
            .journal
            .entries()
            .map_err(io_err("read", self.journal.dir()))?;
        Ok(entries.iter().map(|e| e.revision).collect())
    }

    /// The kept revisions whose journal entry is not whole.
    pub(super) fn damaged_revisions(&self) -> Result<Vec<u64>, StoreError> {
        let entries = self
            .journal
            .entries()
            .map_err(io_err("read", self.journal.dir()))?;
        Ok(entries
            .iter()
            .filter(|e| !self.journal.looks_whole(e))
            .map(|e| e.revision)
            .collect())
    }

    /// The state.yaml text of `revision` as committed, if the journal still holds it.
    pub(super) fn revision_text(&self, revision: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let entries = self
            .journal
            .entries()
            .map_err(io_err("read", self.journal.dir()))?;
        match entries.iter().find(|e| e.revision == revision) {
            Some(entry) => self
                .journal
                .read(entry)
                .map(Some)
                .map_err(io_err("read", &entry.path)),
            None => Ok(None),
        }
    }

    /// Reconciles a hand edit of state.yaml now, with no change of its own (the
    /// supervisors' file watch: a human's save is applied, merged or set aside within a
    /// second rather than at the next transaction).
    pub(super) fn reconcile(&self) -> Result<(), StoreError> {
        let lock = self.lock()?;
        self.clean_leftovers()?;
        let current = self.read_current(&lock)?;
        self.remember(current.into());
        Ok(())
    }

    pub(super) fn lock(&self) -> Result<StateLock, StoreError> {
        let timeout = || {
            self.lock_timeout
                .or_else(lock_timeout_from_env)
                .unwrap_or_else(|| Duration::from_secs(self.cache.lock_timeout().unwrap_or(10)))
        };
        lock::acquire(&self.paths.lock(), &self.paths.lock_owner(), timeout).map_err(|e| match e {
            LockFailure::Io(source) => io_err("lock", &self.paths.lock())(source),
            LockFailure::TimedOut { holder } => StoreError::LockTimeout {
                lock: self.paths.display(&self.paths.lock()),
                waited: timeout(),
                holder,
            },
        })
    }

    pub(super) fn validation_env(&self, now: Timestamp) -> ValidationEnv<'_> {
        ValidationEnv::new(Some(&self.paths.root), now)
    }

    pub(super) fn state_missing(&self) -> StoreError {
        StoreError::StateMissing {
            path: self.paths.display(&self.paths.state()),
            restore: self.head_path(),
        }
    }

    /// The last committed revision's state (the journal head), whatever a person's
    /// unreconciled edit of state.yaml says meanwhile.
    pub(super) fn committed_state(&self) -> Option<State> {
        self.head_state()
    }

    pub(super) fn head_state(&self) -> Option<State> {
        let head = self.journal.entries().ok()?.pop()?;
        let bytes = self.journal.read(&head).ok()?;
        match self.cache.load(head.hash, bytes) {
            Ok(loaded) => Some(loaded.state),
            Err(bytes) => document::decode(&bytes).ok().map(|d| d.state),
        }
    }

    pub(super) fn head_path(&self) -> Option<String> {
        let entries = self.journal.entries().ok()?;
        Some(self.paths.display(&entries.last()?.path))
    }

    pub(super) fn invalid(&self, findings: Vec<Finding>) -> StoreError {
        StoreError::Invalid {
            path: self.paths.display(&self.paths.state()),
            findings,
            restore: self.head_path(),
        }
    }

    /// The journal's last entry does not decode: it is named, and nothing is offered to
    /// restore from (that entry is what a restore would copy).
    pub(super) fn undecodable_head(
        &self,
        head: &JournalEntry,
        findings: Vec<Finding>,
    ) -> StoreError {
        StoreError::Invalid {
            path: self.paths.display(&head.path),
            findings,
            restore: None,
        }
    }

    /// Refuses to replace a file that is missing, a symlink or read-only.
    pub(super) fn check_replaceable(&self, path: &Path) -> Result<(), StoreError> {
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(self.state_missing()),
            Err(e) => return Err(io_err("inspect", path)(e)),
        };
        let shown = self.paths.display(path);
        if meta.file_type().is_symlink() {
            let target = fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            return Err(StoreError::Symlink {
                path: shown,
                target,
            });
        }
        if meta.permissions().readonly() {
            return Err(StoreError::ReadOnly { path: shown });
        }
        Ok(())
    }

    /// Reads state.yaml under the lock; a hand edit is reconciled (committed as its own
    /// `human_edit` transaction) before the caller's change runs.
    pub(super) fn read_current(&self, lock: &StateLock) -> Result<Current, StoreError> {
        let path = self.paths.state();
        self.check_replaceable(&path)?;
        let bytes = document::read_limited(&path).map_err(io_err("read", &path))?;
        let (hash, entries, speculated) = self.hash_and_list(&bytes);
        let entries = entries.map_err(io_err("read", self.journal.dir()))?;
        if self.is_committed(&entries, hash)? {
            if let Some(head) = entries.last()
                && head.hash != hash
            {
                // A transaction crashed after writing its journal entry and before the
                // swap: state.yaml still holds the previous revision.
                self.journal
                    .discard(head)
                    .map_err(io_err("clean up", &head.path))?;
            }
            let mut entries = entries;
            if entries.last().is_some_and(|head| head.hash != hash) {
                entries.pop();
            }
            let speculated = speculated.filter(|(guess, _)| *guess == hash);
            return self.load_committed(hash, bytes, entries, speculated.map(|(_, l)| l));
        }
        self.reconcile_hand_edit(lock, &bytes, hash, entries)
    }

    /// The hash of state.yaml's `bytes` and the journal. A big state.yaml is hashed on a
    /// second thread while this one decodes the parse cache of the journal head — what
    /// state.yaml holds unless a person or a crash intervened —, so hashing megabytes
    /// costs no wall time (specs/quality.md P2). The guess comes back with its hash; it
    /// is used only if that is the hash of `bytes`.
    pub(super) fn hash_and_list(
        &self,
        bytes: &[u8],
    ) -> (
        ContentHash,
        io::Result<Vec<JournalEntry>>,
        Option<(ContentHash, Loaded)>,
    ) {
        if bytes.len() < 512 * 1024 {
            return (ContentHash::of(bytes), self.journal.entries(), None);
        }
        std::thread::scope(|s| {
            let hasher = s.spawn(|| ContentHash::of(bytes));
            let entries = self.journal.entries();
            let speculated = entries
                .as_ref()
                .ok()
                .and_then(|e| e.last())
                .map(|head| head.hash)
                .filter(|guess| !self.remembers(*guess))
                .and_then(|guess| Some((guess, self.cache.load_unconfirmed(guess, bytes)?)));
            let hash = hasher.join().unwrap_or_else(|_| ContentHash::of(bytes));
            (hash, entries, speculated)
        })
    }

    /// Whether bytes with `hash` are the last committed revision: the journal head, or
    /// the entry before it when the head was written by a transaction that crashed
    /// before its swap (its revision never reached log.yaml).
    pub(super) fn is_committed(
        &self,
        entries: &[JournalEntry],
        hash: ContentHash,
    ) -> Result<bool, StoreError> {
        match entries {
            [.., head] if head.hash == hash => Ok(true),
            [.., previous, head] if previous.hash == hash => self.never_committed(head),
            _ => Ok(false),
        }
    }

    /// Whether the journal head's revision never reached log.yaml: with state.yaml equal
    /// to the entry before it, that means the swap never happened.
    pub(super) fn never_committed(&self, head: &JournalEntry) -> Result<bool, StoreError> {
        let logged = activity::last_logged_revision(&self.paths.log())
            .map_err(io_err("read", &self.paths.log()))?;
        Ok(logged.is_none_or(|r| r < head.revision as i64))
    }

    /// Keeps the state just committed for the next transaction of this process.
    pub(super) fn remember(&self, memo: Memo) {
        if let Ok(mut last) = self.last_commit.lock() {
            *last = Some(memo);
        }
    }

    /// Whether this process remembers the state with `hash` (it committed it last).
    pub(super) fn remembers(&self, hash: ContentHash) -> bool {
        self.last_commit
            .lock()
            .is_ok_and(|memo| memo.as_ref().is_some_and(|m| m.hash == hash))
    }

    /// A copy of the remembered state, if it has `hash` (tasks are shared, so it is cheap).
    pub(super) fn peek(&self, hash: ContentHash) -> Option<State> {
        let memo = self.last_commit.lock().ok()?;
        memo.as_ref()
            .filter(|m| m.hash == hash)
            .map(|m| m.state.clone())
    }

    /// The state this process last committed, if state.yaml still holds its bytes.
    pub(super) fn recall(&self, hash: ContentHash) -> Option<Memo> {
        let mut memo = self.last_commit.lock().ok()?;
        if memo.as_ref().is_some_and(|m| m.hash == hash) {
            return memo.take();
        }
        None
    }

    /// `cached`: the parse cache of `hash`, already decoded (see [`Self::hash_and_list`]).
    pub(super) fn load_committed(
        &self,
        hash: ContentHash,
        bytes: Vec<u8>,
        journal: Vec<JournalEntry>,
        cached: Option<Loaded>,
    ) -> Result<Current, StoreError> {
        if let Some(memo) = self.recall(hash) {
            return Ok(Current {
                state: memo.state,
                hash,
                journal,
                texts: memo.texts,
                commented: memo.commented,
            });
        }
        if let Some(mut loaded) = cached {
            loaded.texts.yaml.text = bytes;
            return Ok(Current::cached(loaded, hash, journal));
        }
        let bytes = match self.cache.load(hash, bytes) {
            Ok(loaded) => return Ok(Current::cached(loaded, hash, journal)),
            Err(bytes) => bytes,
        };
        let decoded = document::decode(&bytes).map_err(|f| self.invalid(f))?;
        let commented = Commented::decoded(&bytes, decoded.has_comments);
        let state = decoded.state;
        Ok(Current {
            state,
            hash,
            journal,
            texts: None,
            commented,
        })
    }

    /// Writes `state` as the next revision (module docs, steps 5 and 6). `previous` holds
    /// the texts of the state it was loaded from: unchanged tasks are copied from there.
    pub(super) fn commit(
        &self,
        lock: &StateLock,
        state: &mut State,
        journal: Vec<JournalEntry>,
        replaced: Replaced<'_>,
        mut entries: Vec<LogEntry>,
    ) -> Result<CommitInfo, StoreError> {
        let Replaced {
            hash: read_hash,
            texts: previous,
            commented,
            before,
        } = replaced;
        let revision = state.revision() + 1;
        state.revision = Some(revision as i64);
        metrics::recompute(state);
        // Liza v0.1 notes come without ids; every write gives them theirs.
        state.assign_note_ids();
        let (previous_yaml, previous_json) = match previous {
            Some(p) => (Some(p.yaml), Some((p.json_text, p.json))),
            None => (None, None),
        };
        // A person's comments and layout survive: the change is applied to their text.
        let rewritten = commented.and_then(|c| {
            c.rewrite(before, state, |s| {
                String::from_utf8(render(s, None).bytes).unwrap_or_default()
            })
        });
        if commented.is_some() && rewritten.is_none() {
            tracing::warn!("could not keep the comments of state.yaml; wrote it in full");
        }
        let is_commented = rewritten.is_some();
        // The text this transaction read, when it is at hand (the swap below checks the
        // file it swapped out against it).
        let mut read_text: Option<Vec<u8>> = None;
        let (bytes, task_spans, layout, longest) = match rewritten {
            Some(r) => (
                r.text.into_bytes(),
                r.task_spans,
                r.layout,
                r.longest_scalar,
            ),
            None => {
                // A person's item texts are not liza's: only liza's own are copied.
                let reuse = if commented.is_some() {
                    None
                } else {
                    previous_yaml
                };
                let r = render(state, reuse);
                read_text = r.previous;
                (r.bytes, r.task_spans, None, r.longest)
            }
        };
        let read_text: Option<&[u8]> = match commented {
            Some(c) => Some(c.text.as_bytes()),
            None => read_text.as_deref().filter(|t| !t.is_empty()),
        };
        // A history the cache could not give back is never written from what was read of
        // it: nothing is committed, and the next command parses state.yaml instead.
        self.refuse_damaged(read_hash, state.tasks.iter().map(|t| &**t))?;
        // A commented text the cache cannot describe is parsed by the next reader.
        let cacheable = !is_commented || layout.is_some();
        // Never commit what could not be read back: the journal would then prune good
        // revisions for one no command can load.
        if bytes.len() > document::MAX_STATE_BYTES {
            return Err(StoreError::TooLarge {
                path: self.paths.display(&self.paths.state()),
                bytes: bytes.len(),
            });
        }
        // A value over the parser's limits (one text over 8 MiB) would make a revision
        // no command can load: read such a text back before it replaces a good one.
        // (Texts copied from the previous revision were read or written within limits.)
        if longest > liza_yaml::MAX_SCALAR_BYTES
            && let Err(findings) = document::decode(&bytes)
        {
            return Err(StoreError::WouldInvalidate { findings });
        }
        let hash = ContentHash::of(&bytes);
        let dir = &self.paths.dir;
        let target = self.paths.state();
        let timeout = state.config.lock_timeout() as u64;
        let previous_json = previous_json.map(|(json_text, json)| TaskTexts {
            json_text,
            json,
            ..TaskTexts::default()
        });

        // The journal entry and the temp file are written and fsynced side by side, and
        // the cache is serialised meanwhile: the commit waits for the disk once, not
        // three times.
        // For big blackboards the cache is serialised while the disk writes are waited for.
        let (written, encoded) = if bytes.len() < 512 * 1024 {
            let written =
                write_revision_files(&self.journal, &journal, dir, revision, hash, &bytes);
            let encoded = self.cache.encode(
                hash,
                state,
                &task_spans,
                previous_json.as_ref(),
                layout.as_ref(),
                timeout,
            );
            (written, Ok(encoded))
        } else {
            std::thread::scope(|s| {
                let encoded = s.spawn(|| {
                    self.cache.encode(
                        hash,
                        state,
                        &task_spans,
                        previous_json.as_ref(),
                        layout.as_ref(),
                        timeout,
                    )
                });
                let written =
                    write_revision_files(&self.journal, &journal, dir, revision, hash, &bytes);
                (written, encoded.join())
            })
        };
        let (temp, new_entry) = written.map_err(|(action, path, source)| StoreError::Io {
            action,
            path: path.display().to_string(),
            source,
        })?;
        failpoint::hit("after-journal");
        failpoint::hit("after-temp");
        let encoded = encoded.map_err(|_| StoreError::Io {
            action: "serialise the parse cache for",
            path: self.paths.display(&target),
            source: io::Error::other("the cache thread panicked"),
        })?;
        let swapped = atomic::exchange(dir, &temp, &target).map_err(io_err("replace", &target))?;
        failpoint::hit("after-swap");
        let concurrent_save = match swapped {
            atomic::Swapped::Previous => self.settle_swapped_out(&temp, read_hash, read_text),
            _ => None,
        };
        let cacheable = cacheable && encoded.readable;
        if !cacheable {
            self.cache.remove(read_hash);
        } else if let Err(err) = self.cache.store(&encoded, read_hash) {
            tracing::warn!(%err, "could not refresh the parse cache; the next command parses state.yaml");
        }
        failpoint::hit("after-cache");
        let (wait, hold) = (millis(lock.waited), millis(lock.acquired.elapsed()));
        for e in &mut entries {
            e.revision = Some(revision as i64);
            e.lock_wait_ms = Some(wait);
            e.lock_hold_ms = Some(hold);
        }
        let log = match activity::append_unsynced(&self.paths.log(), &entries) {
            Ok(file) => Some(file),
            Err(err) => {
                // The transaction is committed; only its log entry is missing.
                tracing::warn!(%err, "committed revision {revision} but could not append to log.yaml");
                None
            }
        };
        failpoint::hit("after-log");
        let mut journal: Vec<JournalEntry> = journal
            .into_iter()
            .filter(|e| e.revision < revision)
            .collect();
        journal.push(new_entry);
        let durable = Durability {
            dir: dir.clone(),
            log,
            journal: Journal::new(self.journal.dir().to_path_buf()),
            prune: (journal, state.config.journal_keep()),
        };
        // The text goes with the comments it holds, or is copied from by the next commit.
        let (commented, yaml_text) = if is_commented {
            let text = String::from_utf8(bytes).unwrap_or_default();
            (Some(Commented { text, layout }), Vec::new())
        } else {
            (None, bytes)
        };
        let texts = TaskTexts {
            yaml: ItemTexts {
                text: yaml_text,
                spans: task_spans.into_iter().collect(),
            },
            json_text: Arc::new(encoded.bytes),
            json: encoded.json,
        };
        Ok(CommitInfo {
            revision,
            hash,
            entries,
            texts: cacheable.then_some(texts),
            commented,
            durable,
            concurrent_save,
        })
    }

    /// After the swap, the previous state.yaml sits at the temp path. It should be the
    /// bytes this transaction read; if not, a human saved during the transaction: that
    /// save is returned, to be reconciled like any hand edit once this commit is done.
    ///
    /// With the text read at hand, the file is first compared with it byte for byte: in
    /// the usual case that answers without hashing megabytes under the lock (P2).
    pub(super) fn settle_swapped_out(
        &self,
        temp: &Path,
        read_hash: ContentHash,
        read_text: Option<&[u8]>,
    ) -> Option<PathBuf> {
        // Equal bytes settle it; otherwise the hash does, since the text at hand may be
        // what the commit was built from rather than what was on disk (a person's edit
        // applied by `liza edit`, or a save being reconciled).
        let same = fs::read(temp).is_ok_and(|b| {
            read_text.is_some_and(|text| b == text) || ContentHash::of(&b) == read_hash
        });
        if same {
            let _ = fs::remove_file(temp);
            return None;
        }
        Some(temp.to_path_buf())
    }

    /// Moves `file` to `rejected/<ts>-<label>.yaml` with a note beside it.
    pub(super) fn keep_rejected(&self, file: &Path, label: &str, note: &str) -> Option<String> {
        let dir = self.paths.rejected();
        fs::create_dir_all(&dir).ok()?;
        let stamp = Timestamp::now().to_string().replace(':', "");
        let mut n = 0;
        let target = loop {
            let name = format!(
                "{stamp}-{label}{}.yaml",
                if n == 0 {
                    String::new()
                } else {
                    format!("-{n}")
                }
            );
            let candidate = dir.join(name);
            if !candidate.exists() {
                break candidate;
            }
            n += 1;
        };
        fs::rename(file, &target).ok()?;
        let _ = fs::write(target.with_extension("note.txt"), format!("{note}\n"));
        let _ = atomic::fsync_dir(&dir);
        Some(self.paths.display(&target))
    }

    /// Removes temp files a crashed transaction left behind. A swapped-out file whose
    /// bytes are not a committed revision may be a human's save: it is kept.
    /// Lists `.liza/` once per transaction and removes what a crashed transaction left
    /// behind: temp files and extra cache files (each commit replaces its one cache).
    pub(super) fn clean_leftovers(&self) -> Result<(), StoreError> {
        let dir = &self.paths.dir;
        let read = fs::read_dir(dir).map_err(io_err("read", dir))?;
        let mut leftovers = Vec::new();
        let mut caches = Vec::new();
        for entry in read.filter_map(Result::ok) {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.ends_with(".tmp") && name.starts_with(TEMP_PREFIX) {
                leftovers.push(entry.path());
            } else if ParseCache::is_cache_file(name) {
                caches.push(entry.path());
            }
        }
        if caches.len() > 1 {
            let newest = caches
                .iter()
                .max_by_key(|p| fs::metadata(p).and_then(|m| m.modified()).ok())
                .cloned();
            for stray in caches.iter().filter(|p| Some(*p) != newest.as_ref()) {
                let _ = fs::remove_file(stray);
            }
        }
        if leftovers.is_empty() {
            return Ok(());
        }
        let entries = self
            .journal
            .entries()
            .map_err(io_err("read", self.journal.dir()))?;
        let committed: HashSet<ContentHash> = entries.iter().map(|e| e.hash).collect();
        // A commit writes its journal entry in full before creating its temp file, so a
        // temp file cut short by a kill is a prefix of one of the newest entries.
        let newest: Vec<Vec<u8>> = entries
            .iter()
            .rev()
            .take(2)
            .filter_map(|e| self.journal.read(e).ok())
            .collect();
        for path in leftovers {
            let Ok(bytes) = fs::read(&path) else { continue };
            let ours = committed.contains(&ContentHash::of(&bytes))
                || newest.iter().any(|entry| entry.starts_with(&bytes));
            if ours {
                let _ = fs::remove_file(&path);
            } else {
                let note = "liza found this file after an interrupted transaction; it was state.yaml \
                            before that transaction (possibly a save of yours). Compare it with .liza/state.yaml.";
                self.keep_rejected(&path, "interrupted", note);
            }
        }
        Ok(())
    }
}

/// Prefix of the temp files of a commit (hidden, in `.liza/`).
pub(super) const TEMP_PREFIX: &str = ".state.yaml.";

/// The end of a commit: fsync the directory (the swap) and the log, prune the journal.
pub(super) struct Durability {
    pub(super) dir: PathBuf,
    pub(super) log: Option<File>,
    pub(super) journal: Journal,
    /// The journal after this commit, and its bound.
    pub(super) prune: (Vec<JournalEntry>, (u64, u64)),
}

impl Durability {
    /// Returns the journal as it stands after pruning.
    pub(super) fn complete(self) -> Result<Vec<JournalEntry>, StoreError> {
        atomic::fsync_dir(&self.dir).map_err(io_err("sync", &self.dir))?;
        failpoint::hit("after-dirsync");
        if let Some(log) = self.log
            && let Err(err) = log.sync_all()
        {
            tracing::warn!(%err, "could not sync log.yaml; its last entry may be lost in a crash");
        }
        let (entries, (revisions, bytes)) = self.prune;
        Ok(self.journal.prune(entries, revisions, bytes))
    }
}

/// A transaction of the file store between its read and its commit: the lock, and what
/// the commit needs of the state it read.
pub(super) struct FileAttempt {
    lock: StateLock,
    hash: ContentHash,
    journal: Vec<JournalEntry>,
    texts: Option<TaskTexts>,
    commented: Option<Commented>,
    original: TaskList,
    read_as: Option<State>,
}

pub(super) struct Current {
    pub(super) state: State,
    pub(super) hash: ContentHash,
    /// The journal as listed under the lock (after removing a crashed commit's entry).
    pub(super) journal: Vec<JournalEntry>,
    /// The texts of its tasks, when it came from the cache or a commit in this process.
    pub(super) texts: Option<TaskTexts>,
    /// The text, when a person wrote comments in it: the next revision is written as
    /// minimal edits of it.
    pub(super) commented: Option<Commented>,
}

/// What a commit replaces: the hash of the bytes read, their task texts (to copy the
/// unchanged ones), and their text when a person wrote comments in it.
pub(super) struct Replaced<'a> {
    pub hash: ContentHash,
    pub texts: Option<TaskTexts>,
    pub commented: Option<&'a Commented>,
    /// The state the commented text reads as, when known: its rewrite edits only what
    /// changed from it.
    pub before: Option<&'a State>,
}

impl Current {
    /// What the parse cache holds for the text with `hash`.
    pub(super) fn cached(loaded: Loaded, hash: ContentHash, journal: Vec<JournalEntry>) -> Current {
        let Loaded {
            state,
            mut texts,
            layout,
        } = loaded;
        // A commented text is kept with its layout (its task texts are the person's, never
        // copied into liza's rendering); the cache names liza's own renderings by giving
        // none, so their `#`s (in a description) cost no scan.
        let commented = layout.and_then(|layout| {
            let text = String::from_utf8(std::mem::take(&mut texts.yaml.text)).ok()?;
            Some(Commented {
                text,
                layout: Some(layout),
            })
        });
        Current {
            state,
            hash,
            journal,
            texts: Some(texts),
            commented,
        }
    }
}

pub(super) struct CommitInfo {
    pub(super) revision: u64,
    pub(super) hash: ContentHash,
    /// What is left to make the commit durable; done after the lock is released.
    pub(super) durable: Durability,
    pub(super) entries: Vec<LogEntry>,
    pub(super) texts: Option<TaskTexts>,
    /// A human's save that landed during the commit (its temp path), to reconcile next.
    pub(super) concurrent_save: Option<PathBuf>,
    /// The text written, when it was a minimal edit of a commented one.
    pub(super) commented: Option<Commented>,
}

/// The durable writes of a new revision before its swap, with no parsing or logic: the
/// journal entry (fsynced, see [`Journal::write`]), then the temp file in `dir` (fsynced).
/// Returns the temp file. Also the benchmark's floor.
///
/// The journal entry comes first so that state.yaml always equals some entry, and a temp
/// file left by a killed process always has its entry: cleanup can tell it from a
/// human's save swapped out of place. (Fsyncing the two side by side was measured: on
/// ext4 it is slower than one after the other.)
pub fn write_revision_files<'p>(
    journal: &'p Journal,
    known: &[JournalEntry],
    dir: &'p Path,
    revision: u64,
    hash: ContentHash,
    bytes: &[u8],
) -> Result<(PathBuf, JournalEntry), (&'static str, &'p Path, io::Error)> {
    let entry = journal
        .write(revision, hash, bytes, known)
        .map_err(|e| ("write the journal in", journal.dir(), e))?;
    let temp = atomic::write_temp_synced(dir, TEMP_PREFIX, bytes)
        .map_err(|e| ("write a temporary file in", dir, e))?;
    Ok((temp, entry))
}

/// A state as liza writes it.
pub(super) struct Rendered {
    pub(super) bytes: Vec<u8>,
    /// Where each task is in `bytes`, by its `Arc` address.
    pub(super) task_spans: Vec<(usize, Range<usize>)>,
    /// The longest scalar written (copied tasks aside).
    pub(super) longest: usize,
    /// The earlier text it copied from, given back.
    pub(super) previous: Option<Vec<u8>>,
}

/// state.yaml text for `state`, copying unchanged tasks from `previous`.
pub(super) fn render(state: &State, previous: Option<ItemTexts>) -> Rendered {
    let size_hint = previous.as_ref().map_or(0, |y| y.text.len());
    let mut emitter = Emitter::with_capacity(size_hint + size_hint / 8 + 4096);
    if let Some(yaml) = previous {
        emitter = emitter.with_reuse(yaml);
    }
    state.emit(&mut emitter);
    let longest = emitter.longest_scalar();
    let previous = emitter.take_reuse().map(|p| p.text);
    let (text, task_spans) = emitter.finish_with_items();
    Rendered {
        bytes: text.into_bytes(),
        task_spans,
        longest,
        previous,
    }
}

/// `LIZA_LOCK_TIMEOUT` (seconds, may be fractional) overrides the configured timeout.
pub(super) fn lock_timeout_from_env() -> Option<Duration> {
    let text = std::env::var("LIZA_LOCK_TIMEOUT").ok()?;
    let secs: f64 = text.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}
