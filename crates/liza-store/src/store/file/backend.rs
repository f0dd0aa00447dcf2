//! The file store as a [`Backend`]: state.yaml, log.yaml and the side files of `.liza/`.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use super::FileStore;
use crate::liveness::{self, LiveRecord, LiveRecords};
use crate::log::{self, Item, LogEntry};
use crate::store::backend::{Backend, ErasedChange, ErasedUpdate};
use crate::store::changes::{Changes, Topic};
use crate::store::hand_edit::Rejection;
use crate::store::hash::ContentHash;
use crate::store::log_feed::LogFeed;
use crate::store::{
    Committed, Document, Snapshot, StoreError, TxError, alarm_log, atomic, ledger_file, quota_file,
    read_if_there, run,
};
use liza_model::control::{Control, ControlFlags, Raised};
use liza_model::document;
use liza_model::ids::{Actor, AgentId};
use liza_model::model::{State, Task};
use liza_model::paths::LizaPaths;
use liza_model::timestamp::Timestamp;
use liza_yaml::merge3::Choices;

impl FileStore {
    /// How an I/O error on `path` under `.liza/` is told.
    fn io_error(
        &self,
        action: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(io::Error) -> StoreError {
        let path = self.paths().display(path);
        move |source| StoreError::Io {
            action,
            path,
            source,
        }
    }
}

impl Backend for FileStore {
    fn paths(&self) -> &LizaPaths {
        FileStore::paths(self)
    }

    fn with_wait(self: Box<Self>, timeout: Duration) -> Box<dyn Backend> {
        Box::new(self.with_lock_timeout(timeout))
    }

    fn transact(
        &self,
        actor: &Actor,
        change: &mut ErasedChange<'_>,
    ) -> Result<Committed<usize>, TxError<()>> {
        run(self, actor, change)
    }

    fn snapshot(&self) -> Result<Snapshot, StoreError> {
        FileStore::snapshot(self)
    }

    fn append_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        FileStore::append_log(self, entries)
    }

    fn revisions(&self) -> Result<Vec<u64>, StoreError> {
        FileStore::revisions(self)
    }

    fn revision_text(&self, revision: u64) -> Result<Option<Vec<u8>>, StoreError> {
        FileStore::revision_text(self, revision)
    }

    fn committed_state(&self) -> Option<State> {
        FileStore::committed_state(self)
    }

    fn live_records(&self) -> Result<LiveRecords, StoreError> {
        Ok(liveness::read_all(&self.paths().live()))
    }

    fn write_live(&self, agent: &AgentId, record: &LiveRecord) -> Result<(), StoreError> {
        let dir = self.paths().live();
        liveness::write(&dir, agent, record)
            .map(drop)
            .map_err(self.io_error("write", &dir))
    }

    fn remove_live(&self, agent: &AgentId) -> Result<(), StoreError> {
        let dir = self.paths().live();
        liveness::remove_all(&dir, agent).map_err(self.io_error("write", &dir))
    }

    fn log_text(&self) -> Result<Vec<u8>, StoreError> {
        Ok(read_if_there(self.paths(), &self.paths().log())?.unwrap_or_default())
    }

    fn stream_log(
        &self,
        follow: bool,
        visit: &mut dyn FnMut(Item),
    ) -> Result<(bool, Option<LogFeed>), StoreError> {
        let path = self.paths().log();
        let file = match std::fs::File::open(&path) {
            Ok(file) => Some(file),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(source) => return Err(self.io_error("read", &path)(source)),
        };
        let (torn, complete) = match file {
            Some(file) => {
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                let mut reader =
                    log::EntryReader::new(io::BufReader::with_capacity(256 * 1024, file), len);
                for item in reader.by_ref() {
                    visit(item);
                }
                (reader.torn_tail, reader.complete)
            }
            None => (false, 0),
        };
        Ok((torn, follow.then(|| LogFeed::file(path, complete))))
    }

    fn follow_log(&self) -> Result<(Vec<u8>, LogFeed), StoreError> {
        let text = Backend::log_text(self)?;
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let feed = LogFeed::file(self.paths().log(), complete as u64);
        Ok((text, feed))
    }

    fn log_tail(&self, n: usize) -> Vec<LogEntry> {
        log::tail(&self.paths().log(), n)
    }

    fn changes(&self, topics: &[Topic], debounce: Duration) -> Changes {
        Changes::files(&self.paths().dir, topics, debounce)
    }

    fn control_flags(&self) -> Result<ControlFlags, StoreError> {
        let flags = Control::ALL
            .into_iter()
            .filter_map(|control| {
                let path = self.paths().control(control.name());
                let text = std::fs::read_to_string(&path).ok()?;
                let written = std::fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| Timestamp::from_unix(d.as_secs() as i64));
                Some((control, Raised::read(text, written)))
            })
            .collect();
        Ok(ControlFlags(flags))
    }

    fn raise(&self, control: Control, text: &str) -> Result<(), StoreError> {
        let path = self.paths().control(control.name());
        std::fs::write(&path, text).map_err(self.io_error("write", &path))
    }

    fn lower(&self, control: Control) -> Result<bool, StoreError> {
        let path = self.paths().control(control.name());
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(self.io_error("remove", &path)(source)),
        }
    }

    fn text(&self) -> Result<Vec<u8>, StoreError> {
        let path = self.paths().state();
        document::read_limited(&path).map_err(self.io_error("read", &path))
    }

    fn append_alarms(&self, lines: &[(String, String)]) -> Result<Vec<bool>, StoreError> {
        let path = self.paths().alerts();
        alarm_log::append_new(&path, lines).map_err(self.io_error("write", &path))
    }

    fn claim_delivery(&self, key: &str) -> Result<bool, StoreError> {
        let path = self.paths().alerts_delivered();
        let line = (key.to_owned(), format!("[{key}]").replacen('[', " [", 1));
        alarm_log::append_new(&path, &[line])
            .map(|added| added.first() == Some(&true))
            .map_err(self.io_error("write", &path))
    }

    fn alarm_lines(&self) -> Result<Vec<String>, StoreError> {
        Ok(alarm_log::lines(&self.paths().alerts()))
    }

    fn append_ledger(
        &self,
        entries: &[liza_model::ledger::LedgerEntry],
    ) -> Result<Vec<bool>, StoreError> {
        let path = self.paths().ledger();
        ledger_file::append_new(&path, entries).map_err(self.io_error("write", &path))
    }

    fn ledger(&self) -> Result<Vec<liza_model::ledger::LedgerEntry>, StoreError> {
        let path = self.paths().ledger();
        ledger_file::read(&path).map_err(self.io_error("read", &path))
    }

    fn record_quota(&self, hit: &liza_model::quota::QuotaHit) -> Result<(), StoreError> {
        let path = self.paths().quota();
        quota_file::record(&path, hit, Timestamp::now()).map_err(self.io_error("write", &path))
    }

    fn quotas(&self) -> Result<Vec<liza_model::quota::QuotaHit>, StoreError> {
        let path = self.paths().quota();
        quota_file::read(&path).map_err(self.io_error("read", &path))
    }

    fn document(&self, document: &Document) -> Result<Option<Vec<u8>>, StoreError> {
        read_if_there(self.paths(), &document.path(self.paths()))
    }

    /// The document's directory is locked while `change` runs, so a writer that replaced
    /// the document meanwhile is never overwritten unseen.
    fn update_document(
        &self,
        document: &Document,
        change: &mut ErasedUpdate<'_>,
    ) -> Result<(), StoreError> {
        let path = document.path(self.paths());
        let dir: PathBuf = path.parent().unwrap_or(&path).to_path_buf();
        std::fs::create_dir_all(&dir).map_err(self.io_error("create", &path))?;
        let lock = std::fs::File::open(&dir).map_err(self.io_error("open", &path))?;
        lock.lock().map_err(self.io_error("lock", &path))?;
        let kept = read_if_there(self.paths(), &path)?;
        let Some(bytes) = change(kept.as_deref()) else {
            return Ok(());
        };
        let temp = atomic::write_temp_synced(&dir, ".keep-", &bytes)
            .map_err(self.io_error("write", &path))?;
        if let Err(e) = std::fs::rename(&temp, &path) {
            let _ = std::fs::remove_file(&temp);
            return Err(self.io_error("replace", &path)(e));
        }
        atomic::fsync_dir(&dir).map_err(self.io_error("sync", &path))
    }

    fn document_place(&self, document: &Document) -> String {
        self.paths().display(&document.path(self.paths()))
    }

    fn submit_edit(
        &self,
        bytes: &[u8],
        choices: &Choices,
    ) -> Result<Result<u64, Rejection>, StoreError> {
        FileStore::submit_edit(self, bytes, choices)
    }

    fn refuse_damaged(&self, hash: ContentHash, tasks: &[&Task]) -> Result<(), StoreError> {
        FileStore::refuse_damaged(self, hash, tasks.iter().copied())
    }

    fn lock_holder(&self) -> Result<Option<String>, StoreError> {
        FileStore::lock_holder(self)
    }

    fn damaged_revisions(&self) -> Result<Vec<u64>, StoreError> {
        FileStore::damaged_revisions(self)
    }

    fn reconcile(&self) -> Result<(), StoreError> {
        FileStore::reconcile(self)
    }

    fn pending_hand_edit(&self) -> Result<Option<Result<(), Rejection>>, StoreError> {
        FileStore::pending_hand_edit(self)
    }
}
