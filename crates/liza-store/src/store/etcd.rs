//! The shared store: the blackboard in etcd v3, for supervisors on several hosts
//! (specs/shared-store.md). A transaction reads the head, its sections, the tasks, the
//! notes and the liveness records at one etcd revision `R`; the shared part of
//! [`super::Store::transact`] runs the change and validates; the commit is one etcd txn
//! — the head, the sections, tasks and notes the change touched, the log entries —
//! applied only if neither the head nor any section or task changed after `R`. Another writer first: read again and run the change again. No lock is held
//! anywhere, so a dead host holds nothing up.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::changes::{Changes, Topic};
use super::hand_edit::{self, HandEditPolicy, Head, Rejection, hand_edit_detail};
use super::hash::ContentHash;
use super::log_feed::LogFeed;
use super::mirror::{Mirror, MirrorWriter};
use super::{Finished, Snapshot, StoreError, Unknown};
use group_commit::{Known, Outcome, Sealed, Settled};

mod backend;
mod documents;
mod group_commit;
mod host_lock;
mod known_file;
pub mod layout;
mod usage;
use crate::liveness::{LiveRecord, LiveRecords};
use crate::log::LogEntry;
use layout::LayoutError;
use liza_base::failpoint;
use liza_etcd::address::FLOORS;
use liza_etcd::{
    Change, Client, Condition, EtcdError, KeyValue, StoreAddress, TxnOutcome, prefix_end,
};
use liza_model::control::{Control, ControlFlags, Raised};
use liza_model::document;
use liza_model::event::EventKind;
use liza_model::ids::AgentId;
use liza_model::metrics;
use liza_model::model::State;
use liza_model::paths::LizaPaths;
use liza_model::timestamp::Timestamp;
use liza_yaml::merge3::Choices;

/// etcd refuses a request over 1.5 MiB; a transition stays under it with room for the
/// txn's framing.
const MAX_TXN_BYTES: usize = 1024 * 1024;

/// How often (in blackboard revisions) a commit compacts etcd's history.
const COMPACT_EVERY: u64 = 50;

/// How long a command waits for an etcd that does not answer, unless told otherwise.
const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// How long one request to etcd may take before the next member is tried.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The client of `endpoints` in this process: one connection pool and one runtime
/// thread, however many stores the process opens on them (a command checks its caller,
/// then runs: each opens the project). Kept to the end of the process.
fn shared_client(endpoints: &[String]) -> Result<Arc<Client>, EtcdError> {
    static ALL: std::sync::OnceLock<Mutex<HashMap<Vec<String>, Arc<Client>>>> =
        std::sync::OnceLock::new();
    let mut all = ALL
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(client) = all.get(endpoints) {
        return Ok(Arc::clone(client));
    }
    let client = Arc::new(Client::new(endpoints, REQUEST_TIMEOUT)?);
    all.insert(endpoints.to_vec(), Arc::clone(&client));
    Ok(client)
}

/// How long a read of the liveness records answers again in the process that made it.
/// Records live for tens of seconds between heartbeats: an answer this old is as good
/// as one that took this long to come.
const RECENT_LIVE: Duration = Duration::from_millis(100);

/// The last read of each blackboard's liveness records in this process, with when it
/// was asked, and when the process last changed one.
#[derive(Default)]
struct RecentLive {
    reads: HashMap<String, (Instant, LiveRecords)>,
    writes: HashMap<String, Instant>,
}

impl RecentLive {
    /// The records of a read asked less than [`RECENT_LIVE`] ago.
    fn get(&self, address: &str) -> Option<LiveRecords> {
        let (asked, records) = self.reads.get(address)?;
        (asked.elapsed() < RECENT_LIVE).then(|| records.clone())
    }

    /// Keeps a read asked at `asked`, unless this process wrote a record since (the read
    /// may not hold it).
    fn keep(&mut self, address: String, asked: Instant, records: &LiveRecords) {
        if self.writes.get(&address).is_some_and(|w| *w >= asked) {
            return;
        }
        self.reads.insert(address, (asked, records.clone()));
    }

    fn forget(&mut self, address: String) {
        self.reads.remove(&address);
        self.writes.insert(address, Instant::now());
    }
}

fn recent_live() -> &'static Mutex<RecentLive> {
    static RECENT: std::sync::OnceLock<Mutex<RecentLive>> = std::sync::OnceLock::new();
    RECENT.get_or_init(Default::default)
}

/// How many keys one transaction may write (etcd's `--max-txn-ops`, less its guards).
pub fn max_txn_keys() -> usize {
    group_commit::max_ops()
}

/// The blackboard of one project in etcd, seen from one checkout.
pub struct EtcdStore {
    /// The checkout's `.liza/` (the store address, the mirror).
    paths: LizaPaths,
    address: StoreAddress,
    client: Arc<Client>,
    policy: Arc<dyn HandEditPolicy>,
    /// The etcd lease of each liveness record this process writes, by record key.
    leases: Mutex<HashMap<Vec<u8>, i64>>,
    mirror: Arc<Mirror>,
    /// Writes the mirror off the commit's path (started on first use).
    mirror_writer: Mutex<Option<MirrorWriter>>,
    /// This process's writers of the blackboard, and the newest state it read or wrote
    /// (see [`EtcdStore::read`]).
    pipeline: Arc<group_commit::Pipeline>,
    /// Races lost in a row (see [`EtcdStore::back_off`]).
    conflicts: std::sync::atomic::AtomicU32,
    /// Set once the checkout's `.liza/store` was seen to name this blackboard.
    own: std::sync::OnceLock<()>,
    /// How long an operation waits for an etcd that does not answer (restarting, a
    /// failover) before it fails: what a command waits for the file store's lock.
    wait: Duration,
}

impl Drop for EtcdStore {
    /// The newest state this process read is kept for the checkout's next process
    /// (`known_file`), if the checkout's writers' turn is free now (a writer that has
    /// it keeps what it commits).
    ///
    /// The mirror is brought up to that state too: a writer that caught up and then
    /// committed nothing may be the last of a row whose earlier writers left the mirror
    /// to it (see [`MirrorWriter`]).
    fn drop(&mut self) {
        // A state only sent is not shown: the mirror holds what etcd holds.
        let Some(known) = self.pipeline.committed().filter(|k| k.pending.is_none()) else {
            return;
        };
        if !self.is_checkouts_own() {
            return;
        }
        self.refresh_mirror(&known.state);
        let path = known_file::path(&self.paths.dir);
        if known.revision > known_file::revision_seen(&path)
            && let Some(_turn) = host_lock::take(&self.paths.dir, Duration::ZERO)
        {
            let _ = known_file::newer(&path, &self.address);
            known_file::save(&path, &self.address, &known);
        }
    }
}

/// A transaction between its read and its commit: its turn, which holds the state it
/// started from (what the change is compared with to know what to write).
pub(super) struct EtcdAttempt {
    turn: group_commit::Turn,
    /// The checkout's writers' turn (`host_lock`), held to the commit.
    _host: Option<host_lock::HostTurn>,
}

impl EtcdAttempt {
    /// The state the transaction started from.
    fn read(&self) -> &State {
        &self.turn.base.state
    }
}

/// What [`EtcdStore::inspect`] found.
pub struct Inspection {
    /// Each member and whether it answered.
    pub members: Vec<(String, Result<(), EtcdError>)>,
    /// Keys under the prefix that are no part of the layout.
    pub strays: Vec<String>,
    /// Each liveness record with its lease.
    pub leases: Vec<LeaseFacts>,
    /// When this host read the leases (its clock).
    pub read_at: Timestamp,
}

/// A liveness record and its etcd lease.
pub struct LeaseFacts {
    /// The record's key.
    pub key: String,
    /// The host that wrote it, as the record says.
    pub host: Option<String>,
    /// The lease's end as the writing host's clock put it.
    pub lease_expires: Option<Timestamp>,
    /// The key is attached to an etcd lease (without one it never vanishes by itself).
    pub has_lease: bool,
    /// What etcd says is left of it, in whole seconds.
    pub seconds_left: Option<i64>,
}

impl LeaseFacts {
    /// How far the writing host's clock is ahead of this one's (negative: behind), in
    /// seconds, measured through etcd's lease clock: the record's end by its writer's
    /// clock against this host's now plus what etcd says is left. Whole seconds each, so
    /// the measure is ±1 s.
    pub fn skew(&self, read_at: Timestamp) -> Option<i64> {
        let end = self.lease_expires?;
        let left = self.seconds_left?;
        Some(end.seconds_since(read_at) - left)
    }
}

/// What one read did to a blackboard of layout 1 it found: how many upgrades it tried,
/// whether one was applied, and whether one may have been (its answer lost).
#[derive(Clone, Copy, Default)]
struct Upgrading {
    tries: u8,
    applied: bool,
    maybe: bool,
}

/// Upgrades a read tries, each refused because the head changed first, before it says
/// an older liza keeps writing the blackboard.
const MAX_UPGRADE_TRIES: u8 = 3;

/// One read of the project: the state, the liveness records, the etcd revision.
struct Read {
    state: Arc<State>,
    live: LiveRecords,
    revision: i64,
    /// The head's mod revision: names the state read (a snapshot's hash).
    head_revision: i64,
}

impl EtcdStore {
    /// The store of the checkout at `root` whose blackboard is at `address`. Nothing is
    /// sent yet; the connection to etcd is made in the background.
    pub fn connect(
        root: &Path,
        address: StoreAddress,
        policy: Arc<dyn HandEditPolicy>,
    ) -> Result<EtcdStore, StoreError> {
        let client =
            shared_client(&address.endpoints).map_err(|source| etcd_error(&address, source))?;
        // Every use of the store calls etcd: the connection is made while the process
        // reads its checkout and waits for its turn.
        client.warm();
        Ok(EtcdStore {
            pipeline: group_commit::of(&address),
            paths: LizaPaths::new(root),
            address,
            client,
            policy,
            leases: Mutex::new(HashMap::new()),
            mirror: Arc::new(Mirror::default()),
            mirror_writer: Mutex::new(None),
            conflicts: std::sync::atomic::AtomicU32::new(0),
            own: std::sync::OnceLock::new(),
            wait: super::file::lock_timeout_from_env().unwrap_or(DEFAULT_WAIT),
        })
    }

    /// Waits this long for an etcd that does not answer (supervisors: 60 s).
    pub fn with_wait(mut self, wait: Duration) -> EtcdStore {
        self.wait = wait;
        self
    }

    /// Runs `op`, again while no member answers, for at most the store's wait.
    fn patiently<T>(
        &self,
        mut op: impl FnMut(&Client) -> Result<T, EtcdError>,
    ) -> Result<T, EtcdError> {
        let deadline = Instant::now() + self.wait;
        let mut pause = Duration::from_millis(50);
        loop {
            match op(&self.client) {
                Err(EtcdError::Unreachable { .. }) if Instant::now() + pause < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    /// [`Self::patiently`], its failure a store error.
    fn call<T>(&self, op: impl FnMut(&Client) -> Result<T, EtcdError>) -> Result<T, StoreError> {
        self.patiently(op).map_err(|e| self.fail(e))
    }

    /// The checkout's `.liza/` files.
    pub fn paths(&self) -> &LizaPaths {
        &self.paths
    }

    /// Where the blackboard is.
    pub fn address(&self) -> &StoreAddress {
        &self.address
    }

    fn fail(&self, source: EtcdError) -> StoreError {
        etcd_error(&self.address, source)
    }

    fn layout_error(&self, source: LayoutError) -> StoreError {
        StoreError::Layout {
            address: self.address.to_string(),
            source,
        }
    }

    /// Creates the project under the prefix with `state` as revision 1, unless a project
    /// is there already.
    pub fn initialize(&self, mut state: State, mut entry: LogEntry) -> Result<(), StoreError> {
        state.revision = Some(1);
        metrics::recompute(&mut state);
        entry.revision = Some(1);
        // Nothing under the prefix yet: not a project, not the leftovers of one.
        let prefix = self.address.key("");
        let guard = Condition::UnchangedSince {
            range_end: prefix_end(&prefix),
            key: prefix,
            revision: 0,
        };
        let mut changes: Vec<Change> = layout::encode(&self.address, &state)
            .into_iter()
            .map(|(key, value)| Change::Put {
                key,
                value,
                lease: 0,
            })
            .collect();
        changes.push(self.log_put(1, std::slice::from_ref(&entry)));
        match self.patiently(|c| c.txn(std::slice::from_ref(&guard), &changes)) {
            Ok(TxnOutcome::Applied { revision }) => {
                // From its first revision on, the project holds etcd's compaction back
                // to what its history needs (see `compact_history`).
                let floor = format!("{FLOORS}/{}", self.address.prefix).into_bytes();
                self.call(|c| c.put(&floor, revision.to_string().as_bytes(), 0))
                    .map(drop)
            }
            Ok(TxnOutcome::Conflict { .. }) => Err(StoreError::ProjectExists {
                address: self.address.to_string(),
            }),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The head, the tasks and the liveness records at one revision (`0`: the newest).
    ///
    /// A read of the newest state by a process that read or wrote one before asks only
    /// for the tasks changed since (the head says which tasks there are): a transition
    /// reads what it changed, not the whole blackboard.
    fn read(&self, at: i64) -> Result<Read, StoreError> {
        let known = if at == 0 {
            self.catch_up();
            self.pipeline.committed()
        } else {
            None
        };
        match self.read_since(at, known.as_ref()) {
            // A key the head lists came back neither read nor known: read it all.
            Err(StoreError::Layout {
                source: LayoutError::MissingKey { .. },
                ..
            }) if known.is_some() => self.read_since(at, None),
            other => other,
        }
    }

    fn read_since(&self, at: i64, known: Option<&Known>) -> Result<Read, StoreError> {
        self.read_since_upgrading(at, known, Upgrading::default())
    }

    /// [`Self::read_since`], `upgrading` saying what this read did so far to a
    /// blackboard of layout 1.
    fn read_since_upgrading(
        &self,
        at: i64,
        known: Option<&Known>,
        upgrading: Upgrading,
    ) -> Result<Read, StoreError> {
        let since = known.map_or(0, |k| k.revision + 1);
        let ranges = StateRanges::of(&self.address);
        let mut asked = ranges.asked(since);
        // A state only sent is the base of what changed since once its proof is read.
        let commit = layout::commit_key(&self.address);
        let proof = known.and_then(|k| k.pending.as_deref());
        if proof.is_some() {
            asked.push((&commit, &[], 0));
        }
        let (mut ranges, revision) = self.call(|c| c.read_ranges(&asked, at))?;
        if let (Some(known), Some(proof)) = (known, proof) {
            let landed = ranges.pop().unwrap_or_default();
            if !proven(&landed, known.revision, proof) {
                // Not what etcd holds: no longer a base, for this read or the next.
                self.pipeline.forget(known);
                return self.read_since_upgrading(at, None, upgrading);
            }
        }
        let (kvs, live_kvs) = StateRanges::split(ranges);
        let head_revision = kvs.first().map_or(0, |kv| kv.mod_revision);
        let state = layout::decode_since(&self.address, &kvs, known.map(|k| &*k.state))
            .map_err(|e| self.layout_error(e))?;
        if at == 0 && layout::is_layout_1(&self.address, &kvs) {
            // Laid out by an older liza: upgraded before anything is written on it (a
            // commit writes only what it changed, in this layout). A head written in
            // layout 1 again right after this read upgraded it — or again and again —
            // is an older liza still at work on it: said, not fought.
            if upgrading.applied || upgrading.tries == MAX_UPGRADE_TRIES {
                return Err(self.layout_error(LayoutError::StillLayout1 {
                    key: String::from_utf8_lossy(&layout::head_key(&self.address)).into_owned(),
                }));
            }
            let outcome = self.upgrade_layout(&state, &kvs, head_revision)?;
            failpoint::hit("etcd-upgraded");
            let next = Upgrading {
                tries: upgrading.tries + 1,
                applied: outcome == Some(true),
                maybe: outcome != Some(false),
            };
            return self.read_since_upgrading(at, None, next);
        }
        if upgrading.maybe {
            tracing::warn!(
                store = %self.address,
                "upgraded the blackboard in etcd to layout {}: a liza older than this one can no longer use it",
                layout::LAYOUT
            );
        }
        let state = Arc::new(state);
        let live = live_records(&self.address.key("live/"), &live_kvs);
        if at == 0 {
            self.remember(revision, &state, &live);
        }
        Ok(Read {
            state,
            live,
            revision,
            head_revision,
        })
    }

    /// Rewrites the head and the sections of a blackboard of layout 1 (holding `state`,
    /// its head last written at etcd revision `head_revision`) in layout 2, unless the
    /// head changed since: the blackboard stays at its revision, its tasks and keyed
    /// notes where they are; notes the head held inline get keys when they can have them
    /// (specs/shared-store.md *Keys*). Whether this process upgraded it: `None` when
    /// the answer was lost.
    fn upgrade_layout(
        &self,
        state: &State,
        kvs: &[KeyValue],
        head_revision: i64,
    ) -> Result<Option<bool>, StoreError> {
        let guard = Condition::ModRevision(layout::head_key(&self.address), head_revision);
        match self.patiently(|c| {
            c.txn(
                std::slice::from_ref(&guard),
                &layout::upgrade(&self.address, state, kvs),
            )
        }) {
            Ok(TxnOutcome::Applied { .. }) => Ok(Some(true)),
            // Changed since (upgraded by another process, or written): the next read
            // tells which. An answer lost: so does the next read.
            Ok(TxnOutcome::Conflict { .. }) => Ok(Some(false)),
            Err(EtcdError::Indeterminate { .. }) => Ok(None),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Starts from what the checkout's processes kept (`known_file`) when it is newer
    /// than what this process knows: a new process then asks etcd only for what changed
    /// since, and a writer whose turn it is starts from the commit of the one before.
    fn catch_up(&self) {
        if !self.is_checkouts_own() {
            return;
        }
        if let Some(known) = known_file::newer(&known_file::path(&self.paths.dir), &self.address) {
            self.pipeline.remember(known);
        }
    }

    /// Keeps the newest committed state for the checkout's next processes, while this
    /// writer has the checkout's turn.
    fn keep_committed(&self) {
        if let Some(known) = self.pipeline.committed()
            && self.is_checkouts_own()
        {
            known_file::save(&known_file::path(&self.paths.dir), &self.address, &known);
        }
    }

    /// Keeps `state` and `live`, as of etcd revision `revision`, for the next read and
    /// the next transaction.
    fn remember(&self, revision: i64, state: &Arc<State>, live: &LiveRecords) {
        self.pipeline.remember(Known {
            revision,
            state: Arc::clone(state),
            live: live.clone(),
            pending: None,
        });
    }

    /// Starts a transaction from the state this process's transactions lead to, else
    /// the state it last read or wrote, without a round trip: the commit is guarded by
    /// "nothing changed since", and a conflict brings the newer state back with it (see
    /// `send`). A process with nothing known reads first. The transaction has its turn
    /// until it commits or gives up (see [`group_commit`]).
    pub(super) fn begin(&self) -> Result<(State, LiveRecords, EtcdAttempt), StoreError> {
        let host = self
            .is_checkouts_own()
            .then(|| host_lock::take(&self.paths.dir, self.wait))
            .flatten();
        // With the turn, what the checkout's last writer committed is the newest state
        // this checkout knows of.
        self.catch_up();
        let turn = self.pipeline.turn(self.wait, || {
            let fresh = self.read(0)?;
            Ok(Known {
                revision: fresh.revision,
                state: fresh.state,
                live: fresh.live,
                pending: None,
            })
        })?;
        let mut state = (*turn.base.state).clone();
        // Heartbeats renewed leases in liveness records; the commit makes them part of
        // the state, as on files (specs/blackboard.md *Liveness*).
        crate::liveness::fold(&mut state, &turn.base.live);
        let live = turn.base.live.clone();
        Ok((state, live, EtcdAttempt { turn, _host: host }))
    }

    /// Whether the blackboard is newer than the state `attempt` started from (read now,
    /// asking only for what changed): the read is what the next attempt starts from.
    pub(super) fn outdated(&self, attempt: EtcdAttempt) -> Result<bool, StoreError> {
        let started_from = attempt.read().revision();
        // The turn goes first: the read does not need it, and other writers may.
        drop(attempt);
        let fresh = self.read(0)?;
        Ok(fresh.state.revision() != started_from)
    }

    /// Commits `state` as the next revision, in a batch with this process's other
    /// transactions of the moment; `Conflict` when the head or a task changed after the
    /// read.
    pub(super) fn finish(
        &self,
        attempt: EtcdAttempt,
        mut state: State,
        mut log: Vec<LogEntry>,
    ) -> Result<Finished, StoreError> {
        let read = attempt.read();
        let revision = read.revision() + 1;
        state.revision = Some(revision as i64);
        metrics::recompute(&mut state);
        // Liza v0.1 notes come without ids; every write gives them theirs.
        state.assign_note_ids();
        let mut changes = layout::changes(&self.address, read, &state);
        for entry in log.iter_mut() {
            entry.revision = Some(revision as i64);
        }
        if !log.is_empty() {
            changes.push(self.log_put(revision, &log));
        }
        let bytes: usize = changes.iter().map(change_size).sum();
        if bytes > MAX_TXN_BYTES {
            return Err(StoreError::TransactionTooLarge {
                bytes,
                limit: MAX_TXN_BYTES,
            });
        }
        let notes = layout::note_prefix(&self.address);
        let guarded = changes
            .iter()
            .filter(|c| match c {
                Change::Put { key, .. } | Change::Delete(key) => key.starts_with(&notes),
            })
            .count();
        if changes.len().max(guarded + 1) > group_commit::max_ops() {
            return Err(StoreError::TransactionTooManyKeys {
                keys: changes.len(),
                limit: group_commit::max_ops(),
            });
        }
        let first_log = self.log_key(revision, 0);
        let first_entry = changes.iter().find_map(|c| match c {
            Change::Put { key, value, .. } if *key == first_log => {
                Some((key.clone(), value.clone()))
            }
            _ => None,
        });
        let transition = group_commit::Transition {
            state,
            changes,
            bytes,
            first_log,
            guarded,
        };
        let had_turn = attempt._host.is_some();
        let mut host = attempt._host;
        let Some(ticket) = self.pipeline.join(attempt.turn, transition) else {
            return Ok(Finished::Conflict);
        };
        // The etcd revision the commit was handed over as, and its proof (`hand_over`).
        let mut handed = None;
        if ticket.first
            && let Some(mut sealed) = self.pipeline.seal(&ticket)
        {
            if had_turn {
                // The mirror of the state sent is rendered while etcd writes it.
                self.with_mirror_writer(|writer| writer.prepare(&sealed.last));
                handed = self.hand_over(&mut sealed);
                // This writer's share of the turn goes with it; the checkout's next
                // writer builds on the state sent.
                if handed.is_some() {
                    host = None;
                }
            }
            failpoint::hit("etcd-handed-over");
            let revisions = sealed.base.revision() + 1..=sealed.last.revision();
            let keep = sealed.last.config.journal_keep().0;
            let settled = self.send(&sealed);
            let lost = matches!(settled, Settled::Conflict(_));
            self.pipeline.settle(sealed, settled);
            if lost {
                self.back_off();
            } else if let Some(due) = revisions.rev().find(|r| r.is_multiple_of(COMPACT_EVERY)) {
                self.compact_history(due, keep);
            }
        }
        let sent = ticket.first;
        match &*self.pipeline.outcome(ticket) {
            Outcome::Applied { state, sender } => {
                // The sender keeps the state for the checkout's next writer before the
                // turn is let go (handed over: as it sent it), then brings the checkout's
                // mirror up to date for every writer of its batch — unless a writer
                // waiting for the turn is next.
                match handed {
                    Some((revision, proof)) if sent => self.confirm_handed(revision, &proof),
                    _ if sent && host.is_some() => self.keep_committed(),
                    _ => {}
                }
                // Only a commit kept in etcd.known may be left to a writer waiting for the
                // turn: that writer starts from it.
                let kept = sent && had_turn;
                drop(host);
                if kept {
                    self.refresh_mirror(state);
                } else if sent || *sender != self.paths.root {
                    let _ = self.with_mirror_writer(|writer| writer.send_unleavable(state));
                }
                Ok(Finished::Committed(revision, log))
            }
            Outcome::Conflict => Ok(Finished::Conflict),
            // Sent, no answer: the next read settles it (see `was_applied`).
            Outcome::Unknown => Ok(Finished::Unknown(Unknown {
                revision,
                entries: log,
                first_log: first_entry,
            })),
            Outcome::Failed(e) => Err(self.fail(e.clone())),
        }
    }

    /// Keeps the state `sealed` leads to in `etcd.known` before it is sent, as pending
    /// at the etcd revision it will have if etcd applies it next — the base's, plus one
    /// — and makes the batch write a value of its own to the `commit` key: that value
    /// there at that revision proves it was applied (see `known_file`, *Handed over at
    /// the send*; a log key would not: another commit of the same blackboard revision,
    /// from another host or after this one was refused, writes the same key). The
    /// revision and the proof, if the state was kept.
    ///
    /// Only a batch built on a state known applied is handed over: one built on a state
    /// only sent keeps the turn to its answer and then keeps what it learnt. A pending
    /// state is thus one commit ahead of one applied, at most, and the next writer that
    /// commits after reading replaces it if it was refused (its revision is at least that
    /// one's) — a chain of pending states built on one that was refused would be taken up
    /// by each next writer, refused in turn.
    fn hand_over(&self, sealed: &mut Sealed) -> Option<(i64, Vec<u8>)> {
        if sealed.pending.is_some() {
            return None;
        }
        let proof = commit_proof();
        let revision = sealed.guard + 1;
        let kept = known_file::save(
            &known_file::path(&self.paths.dir),
            &self.address,
            &Known {
                revision,
                state: Arc::clone(&sealed.last),
                live: sealed.live.clone(),
                pending: Some(proof.clone()),
            },
        );
        if !kept {
            return None;
        }
        sealed.changes.push(Change::Put {
            key: layout::commit_key(&self.address),
            value: proof.clone(),
            lease: 0,
        });
        Some((revision, proof))
    }

    /// After a commit handed over as pending at `revision` (proven by `proof`) was
    /// applied, if the turn is free now (else the next writer has it, and keeps its own
    /// commit): at that revision, the record is confirmed, so the next writer hands its
    /// own over too; at another (etcd wrote some other key first), the state is kept as
    /// applied. A next writer that built on it meanwhile is refused and reads.
    fn confirm_handed(&self, revision: i64, proof: &[u8]) {
        let Some(known) = self.pipeline.committed() else {
            return;
        };
        let Some(_turn) = host_lock::take(&self.paths.dir, Duration::ZERO) else {
            return;
        };
        let path = known_file::path(&self.paths.dir);
        if known.revision == revision {
            known_file::confirm(&path, revision, proof);
        } else {
            let _ = known_file::newer(&path, &self.address);
            known_file::save(&path, &self.address, &known);
        }
    }

    /// Sends a batch of transitions as one txn, guarded like a single transition: the
    /// head, its sections, the tasks, the notes and the liveness records unchanged since the state the
    /// batch was built on, and no log entry yet at any of its revisions.
    fn send(&self, batch: &Sealed) -> Settled {
        let mut conditions = self.unchanged_since(batch.guard, &batch.changes);
        // The liveness records folded into this state are still the newest.
        let live = self.address.key("live/");
        conditions.push(Condition::UnchangedSince {
            range_end: prefix_end(&live),
            key: live.clone(),
            revision: batch.guard,
        });
        // A revision's log keys are written once: a head that lies about its revision
        // can never make a commit overwrite an earlier revision's entries.
        for key in &batch.first_logs {
            conditions.push(Condition::ModRevision(key.clone(), 0));
        }
        // Built on a commit another process only sent: that commit was applied, at the
        // revision the batch is guarded by.
        let commit = layout::commit_key(&self.address);
        if let Some(proof) = &batch.pending {
            conditions.push(Condition::Value(commit.clone(), proof.clone()));
            conditions.push(Condition::ModRevision(commit.clone(), batch.guard));
        }
        let ranges = StateRanges::of(&self.address);
        let mut reads = ranges.asked(batch.guard + 1);
        if batch.pending.is_some() {
            reads.push((&commit, &[], 0));
        }
        match self.patiently(|c| c.txn_or_read(&conditions, &batch.changes, &reads)) {
            Ok((TxnOutcome::Applied { revision }, _)) => {
                self.conflicts
                    .store(0, std::sync::atomic::Ordering::Relaxed);
                Settled::Applied {
                    revision,
                    sender: self.paths.root.clone(),
                }
            }
            Ok((TxnOutcome::Conflict { revision }, mut read)) => {
                // What changed came back with the refusal: the next attempt starts there —
                // unless the base, only sent, was not applied as the batch assumed (then
                // what changed since is not known: the next attempt reads).
                if let Some(proof) = &batch.pending
                    && !proven(&read.pop().unwrap_or_default(), batch.guard, proof)
                {
                    return Settled::Conflict(None);
                }
                let (kvs, live_kvs) = StateRanges::split(read);
                // A head laid out as layout 1 again (put back by hand): no base for a
                // commit, which writes only what changed; the next attempt's read
                // upgrades it first.
                if layout::is_layout_1(&self.address, &kvs) {
                    return Settled::Conflict(None);
                }
                let fresh = layout::decode_since(&self.address, &kvs, Some(&batch.base))
                    .ok()
                    .map(|state| Known {
                        revision,
                        state: Arc::new(state),
                        live: live_records(&live, &live_kvs),
                        pending: None,
                    });
                Settled::Conflict(fresh)
            }
            Err(EtcdError::Indeterminate { .. }) => Settled::Unknown,
            Err(e) => Settled::Failed(e),
        }
    }

    /// Whether the commit of `unknown` was applied: once etcd's head is at its revision
    /// or past it, that revision's log key — written by that commit alone — is its or
    /// another's; before, it may still land (a later commit guarded by the same head
    /// excludes it).
    pub(super) fn was_applied(&self, unknown: &Unknown) -> Result<Option<bool>, StoreError> {
        let Some((key, value)) = &unknown.first_log else {
            // A commit without log entries cannot be told from another: taken as not
            // applied (every transition logs; this is the store's own safety net).
            return Ok(Some(false));
        };
        // The head and the log key at one etcd revision (never this process's queued
        // state, which etcd may not hold): the commit is ruled out only by etcd's own
        // head being at or past it without its log key then.
        let head = layout::head_key(&self.address);
        let (mut ranges, _) = self.call(|c| c.read_ranges(&[(&head, &[], 0), (key, &[], 0)], 0))?;
        let logged = ranges.pop().unwrap_or_default().into_iter().next();
        let head = ranges.pop().unwrap_or_default().into_iter().next();
        if let Some(stored) = logged {
            return Ok(Some(stored.value == *value));
        }
        let committed = match head {
            Some(kv) => head_revision(&kv).map_err(|e| self.layout_error(e))?,
            None => 0,
        };
        Ok((committed >= unknown.revision).then_some(false))
    }

    /// After losing a race, waits a random while that grows with the losses in a row
    /// (up to ~6 ms), so writers that keep colliding spread out instead of all retrying
    /// at once and losing again.
    fn back_off(&self) {
        use std::sync::atomic::Ordering;
        let lost = self.conflicts.fetch_add(1, Ordering::Relaxed).min(5);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .subsec_nanos() as u64;
        let mut x = nanos ^ (std::process::id() as u64) << 32 ^ (self as *const _ as u64);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let slots = 1u64 << lost;
        std::thread::sleep(Duration::from_micros((x % (slots + 1)) * 200));
    }

    /// Every [`COMPACT_EVERY`] revisions, drops etcd's history from before the oldest of
    /// the last `keep` revisions (`config.journal_keep.revisions`, what `liza history`
    /// shows), so it stays bounded whatever etcd's own settings. Compaction is etcd-wide:
    /// each project records the oldest etcd revision it needs as its floor
    /// (`liza-floors/<prefix>`), and history goes only up to the lowest floor, so one
    /// project never takes another's history. Current keys — the log among them — are
    /// never compacted away. A failure only postpones it.
    fn compact_history(&self, revision: u64, keep: u64) {
        if !revision.is_multiple_of(COMPACT_EVERY) || revision <= keep {
            return;
        }
        let oldest_kept = self.log_key(revision - keep + 1, 0);
        let floors = format!("{FLOORS}/").into_bytes();
        let mine = format!("{FLOORS}/{}", self.address.prefix).into_bytes();
        let compacted = self.client.get(&oldest_kept).and_then(|kv| {
            let Some(kv) = kv else { return Ok(()) };
            self.client
                .put(&mine, kv.mod_revision.to_string().as_bytes(), 0)?;
            let (all, _) = self.client.range(&floors, &prefix_end(&floors), 0)?;
            let lowest = all
                .iter()
                .filter_map(|f| std::str::from_utf8(&f.value).ok()?.parse::<i64>().ok())
                .min()
                .unwrap_or(kv.mod_revision);
            self.client.compact(lowest.min(kv.mod_revision))
        });
        if let Err(err) = compacted
            && !err.is_compacted()
        {
            tracing::warn!(%err, "could not compact etcd's history; the next try is {COMPACT_EVERY} revisions on");
        }
    }

    /// Brings this checkout's mirror up to `state` (see [`Mirror`]) — only when this is
    /// the checkout's own blackboard: one named by `--store` or `LIZA_STORE` elsewhere
    /// (another project's, or over a file store's `.liza/`) never writes there.
    fn refresh_mirror(&self, state: &Arc<State>) {
        let sent = self.with_mirror_writer(|writer| writer.send(state));
        if sent == Some(false) {
            // No thread to be had: written here.
            self.mirror
                .refresh(&self.paths, &self.address.to_string(), state, yaml_text);
        }
    }

    /// Runs `job` with this checkout's mirror writer, started on first use: `None` when
    /// the blackboard is not the checkout's own, `Some(false)` when no thread could be
    /// started for it.
    fn with_mirror_writer(&self, job: impl FnOnce(&MirrorWriter)) -> Option<bool> {
        if !self.is_checkouts_own() {
            return None;
        }
        let mut writer = self.mirror_writer.lock().ok()?;
        if writer.is_none() {
            *writer = MirrorWriter::start(
                Arc::clone(&self.mirror),
                self.paths.clone(),
                self.address.to_string(),
                yaml_text,
                host_lock::a_writer_waits,
            );
        }
        Some(writer.as_ref().map(job).is_some())
    }

    /// Whether the checkout's `.liza/store` names this blackboard.
    fn is_checkouts_own(&self) -> bool {
        if self.own.get().is_some() {
            return true;
        }
        let named = std::fs::read_to_string(self.paths.store_address())
            .ok()
            .and_then(|text| text.trim().parse::<StoreAddress>().ok());
        let own = named.as_ref() == Some(&self.address);
        if own {
            let _ = self.own.set(());
        }
        own
    }

    /// The guard of a commit that writes `changes`: neither the head nor any section or
    /// task changed after `revision`, nor any note the commit writes. Every transition of
    /// liza rewrites the head, so the head alone orders liza's writers; the tasks'
    /// range also catches another etcd client's write to a task. Notes are guarded one
    /// by one, those written: their range grows with every note of the sprint, and etcd
    /// compares each key of a range.
    fn unchanged_since(&self, revision: i64, changes: &[Change]) -> Vec<Condition> {
        let tasks = layout::task_prefix(&self.address);
        let sections = layout::section_prefix(&self.address);
        let notes = layout::note_prefix(&self.address);
        let mut guard = vec![
            Condition::UnchangedSince {
                key: layout::head_key(&self.address),
                range_end: Vec::new(),
                revision,
            },
            Condition::UnchangedSince {
                range_end: prefix_end(&sections),
                key: sections,
                revision,
            },
            Condition::UnchangedSince {
                range_end: prefix_end(&tasks),
                key: tasks,
                revision,
            },
        ];
        for change in changes {
            let key = match change {
                Change::Put { key, .. } | Change::Delete(key) => key,
            };
            if key.starts_with(&notes) {
                guard.push(Condition::UnchangedSince {
                    key: key.clone(),
                    range_end: Vec::new(),
                    revision,
                });
            }
        }
        guard
    }

    /// `log/<revision>/<n>`: the entries of a revision, in order.
    fn log_key(&self, revision: u64, n: usize) -> Vec<u8> {
        self.address.key(&format!("log/{revision:012}/{n:03}"))
    }

    /// A revision's log entries: one key, a line each (a transition writes one key for
    /// its log, however many entries — an etcd txn writes a bounded number of keys).
    fn log_put(&self, revision: u64, entries: &[LogEntry]) -> Change {
        Change::Put {
            key: self.log_key(revision, 0),
            value: entries
                .iter()
                .map(LogEntry::to_line)
                .collect::<String>()
                .into_bytes(),
            lease: 0,
        }
    }

    /// Reads the state now, liveness records folded in; the checkout's mirror is brought
    /// up to it.
    pub fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let Read {
            state,
            live,
            head_revision,
            ..
        } = self.read(0)?;
        self.refresh_mirror(&state);
        let mut state = Arc::unwrap_or_clone(state);
        crate::liveness::fold(&mut state, &live);
        Ok(Snapshot {
            state,
            hash: ContentHash::of(&head_revision.to_be_bytes()),
            pending_hand_edit: false,
        })
    }

    /// The liveness records, as every transaction folds them. A read this process made
    /// of them less than [`RECENT_LIVE`] ago answers, unless the process wrote one since:
    /// a command reads them to know its caller, then again in its transition.
    pub fn live_records(&self) -> Result<LiveRecords, StoreError> {
        let key = self.address.to_string();
        if let Some(records) = recent_live()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(records);
        }
        let live = self.address.key("live/");
        let asked = Instant::now();
        let (kvs, _) = self.call(|c| c.range(&live, &prefix_end(&live), 0))?;
        let records = live_records(&live, &kvs);
        recent_live()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keep(key, asked, &records);
        Ok(records)
    }

    /// This process changed a liveness record: its next read asks etcd.
    fn forget_recent_live(&self) {
        recent_live()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget(self.address.to_string());
    }

    /// Writes `agent`'s liveness record under an etcd lease of `ttl` seconds, renewed by
    /// each write: a host that stops writing loses its records when the lease runs out.
    pub fn write_live(
        &self,
        agent: &AgentId,
        record: &LiveRecord,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let key = self
            .address
            .key(&format!("live/{}.{}", agent.as_str(), record.generation));
        let value = serde_json::to_vec(record).expect("a liveness record serialises");
        let known = self.leases.lock().ok().and_then(|l| l.get(&key).copied());
        let lease = match known {
            Some(id) if self.call(|c| c.keep_alive(id))?.is_some() => id,
            _ => {
                let id = self.call(|c| c.grant_lease(ttl.as_secs().max(1) as i64))?;
                if let Ok(mut leases) = self.leases.lock() {
                    leases.insert(key.clone(), id);
                }
                id
            }
        };
        let written = self.call(|c| c.put(&key, &value, lease).map(drop));
        self.forget_recent_live();
        written
    }

    /// Removes every liveness record of `agent` (it was unregistered).
    pub fn remove_live(&self, agent: &AgentId) -> Result<(), StoreError> {
        let prefix = self.address.key(&format!("live/{}.", agent.as_str()));
        let leases: Vec<i64> = match self.leases.lock() {
            Ok(mut leases) => {
                let keys: Vec<Vec<u8>> = leases
                    .keys()
                    .filter(|k| k.starts_with(&prefix))
                    .cloned()
                    .collect();
                keys.iter().filter_map(|k| leases.remove(k)).collect()
            }
            Err(_) => Vec::new(),
        };
        for id in leases {
            let revoked = self.call(|c| c.revoke_lease(id));
            // A revoked lease takes its records with it.
            self.forget_recent_live();
            revoked?;
        }
        let (kvs, _) = self.call(|c| c.range(&prefix, &prefix_end(&prefix), 0))?;
        let deletes: Vec<Change> = kvs.into_iter().map(|kv| Change::Delete(kv.key)).collect();
        if !deletes.is_empty() {
            let deleted = self.call(|c| c.txn(&[], &deletes));
            self.forget_recent_live();
            deleted?;
        }
        Ok(())
    }

    /// Appends entries that record no state change, after the entries of the revision
    /// current now.
    pub fn append_log(&self, entries: &[LogEntry]) -> Result<(), StoreError> {
        let head = layout::head_key(&self.address);
        let kv = self.call(|c| c.get(&head))?;
        let revision = match kv {
            Some(kv) => head_revision(&kv).map_err(|e| self.layout_error(e))?,
            None => 0,
        };
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let changes: Vec<Change> = entries
            .iter()
            .enumerate()
            .map(|(n, entry)| Change::Put {
                // After the revision's own entries (digits sort before `x`), in time order.
                key: self.address.key(&format!(
                    "log/{revision:012}/x{stamp:020}-{}-{n:03}",
                    std::process::id()
                )),
                value: entry.to_line().into_bytes(),
                lease: 0,
            })
            .collect();
        match self.patiently(|c| c.txn(&[], &changes)) {
            Ok(_) | Err(EtcdError::Indeterminate { .. }) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The log as text, as log.yaml holds it: every entry, in order.
    pub fn log_text(&self) -> Result<Vec<u8>, StoreError> {
        Ok(self.read_log()?.0)
    }

    /// The log as text, and the etcd revision it was read at.
    fn read_log(&self) -> Result<(Vec<u8>, i64), StoreError> {
        let prefix = self.address.key("log/");
        let (kvs, revision) = self.call(|c| c.range(&prefix, &prefix_end(&prefix), 0))?;
        Ok((super::log_feed::log_text(kvs), revision))
    }

    /// Hands the log to `visit` entry by entry, read a page of keys at a time at one etcd
    /// revision (memory bounded by a page, whatever the log's size); whether an item was
    /// torn, and the revision read at.
    pub fn stream_log(
        &self,
        visit: &mut dyn FnMut(crate::log::Item),
    ) -> Result<(bool, i64), StoreError> {
        /// Keys per page: a key is one revision's entries (a transition's few lines).
        const PAGE: i64 = 256;
        let prefix = self.address.key("log/");
        let end = prefix_end(&prefix);
        let mut from = prefix;
        let (mut at, mut line, mut torn) = (0, 1, false);
        loop {
            // Every page at the first page's revision, so that the feed that follows
            // starts right where the pages end; a page compacted away meanwhile is read
            // now instead (log keys are only ever added), and the feed starts from there.
            // (A range's header carries etcd's current revision, not the one asked for.)
            let (kvs, more) = match self.call(|c| c.range_page(&from, &end, at, PAGE)) {
                Ok((kvs, now, more)) => {
                    if at == 0 {
                        at = now;
                    }
                    (kvs, more)
                }
                Err(StoreError::Etcd { source, .. }) if at != 0 && source.is_compacted() => {
                    let (kvs, now, more) = self.call(|c| c.range_page(&from, &end, 0, PAGE))?;
                    at = now;
                    (kvs, more)
                }
                Err(e) => return Err(e),
            };
            let Some(last) = kvs.last() else { break };
            from = last.key.clone();
            from.push(0);
            let text = super::log_feed::log_text(kvs);
            let read = crate::log::parse_items(&text, line);
            line += text.iter().filter(|b| **b == b'\n').count();
            torn |= read.torn_tail;
            for entry in read.entries {
                visit(Ok(entry));
            }
            for unreadable in read.unreadable {
                visit(Err(unreadable));
            }
            if !more {
                break;
            }
        }
        Ok((torn, at))
    }

    /// A feed of the log entries written after etcd revision `revision`.
    pub fn log_feed_after(&self, revision: i64) -> LogFeed {
        LogFeed::etcd(Arc::clone(&self.client), self.address.key("log/"), revision)
    }

    /// The log, and a feed of the entries written after it.
    pub fn follow_log(&self) -> Result<(Vec<u8>, LogFeed), StoreError> {
        let (text, revision) = self.read_log()?;
        Ok((text, self.log_feed_after(revision)))
    }

    /// The revisions whose state can still be read, oldest first.
    pub fn revisions(&self) -> Result<Vec<u64>, StoreError> {
        let prefix = self.address.key("log/");
        let (kvs, _) = self.call(|c| c.range(&prefix, &prefix_end(&prefix), 0))?;
        // Each revision's first log key, and the etcd revision that wrote it.
        let mut firsts: Vec<(u64, i64)> = kvs
            .iter()
            .filter_map(|kv| {
                let rest = kv.key.strip_prefix(prefix.as_slice())?;
                let rest = std::str::from_utf8(rest).ok()?;
                let (revision, n) = rest.split_once('/')?;
                (n == "000").then(|| Some((revision.parse().ok()?, kv.mod_revision)))?
            })
            .collect();
        firsts.dedup_by_key(|(revision, _)| *revision);
        let mut readable = Vec::with_capacity(firsts.len());
        let mut newer_at = None;
        for (revision, at) in firsts.into_iter().rev() {
            // A batch's transitions share its etcd revision, which holds the last one's
            // state: the earlier ones have no state of their own to show.
            if newer_at == Some(at) {
                continue;
            }
            newer_at = Some(at);
            if self.state_at(revision)?.is_none() {
                break;
            }
            readable.push(revision);
        }
        readable.reverse();
        Ok(readable)
    }

    /// The state of `revision`, if etcd still has it (the history before its compaction
    /// point is gone) and it is a state of its own (not one inside a batch).
    fn state_at(&self, revision: u64) -> Result<Option<State>, StoreError> {
        let Some(first) = self.call(|c| c.get(&self.log_key(revision, 0)))? else {
            return Ok(None);
        };
        match self.read(first.mod_revision) {
            // Transitions committed in one batch share an etcd revision, which holds the
            // last one's state: the others' states are not kept (their log entries are).
            Ok(read) => {
                Ok((read.state.revision() == revision).then(|| Arc::unwrap_or_clone(read.state)))
            }
            Err(StoreError::Etcd { source, .. }) if source.is_compacted() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The state.yaml text of `revision`, if etcd still has it.
    pub fn revision_text(&self, revision: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.state_at(revision)?.map(|s| yaml_text(&s)))
    }

    /// `liza edit`: `bytes`, edited from the revision they name, judged against the
    /// newest and committed as a `human_edit` — again on the newer state when another
    /// writer committed first.
    pub fn submit_edit(
        &self,
        bytes: &[u8],
        choices: &Choices,
    ) -> Result<Result<u64, Rejection>, StoreError> {
        // Commits sent with no answer back (see `store::run`).
        let mut unknowns: Vec<Unknown> = Vec::new();
        loop {
            // Settled after the attempt's read (see `store::run`).
            let (current, _, attempt) = self.begin()?;
            let mut undecided = Vec::new();
            for pending in std::mem::take(&mut unknowns) {
                match self.was_applied(&pending)? {
                    Some(true) => return Ok(Ok(pending.revision)),
                    Some(false) => {}
                    None => undecided.push(pending),
                }
            }
            unknowns = undecided;
            let latest = attempt.read().revision();
            let head_text = yaml_text(attempt.read());
            let head_decoded =
                document::decode(&head_text).map_err(|findings| StoreError::Invalid {
                    path: self.address.to_string(),
                    findings,
                    restore: None,
                })?;
            let text_of = |revision: u64| self.revision_text(revision).ok().flatten();
            let head = Head {
                revision: latest,
                decoded: &head_decoded,
                text_of: &text_of,
            };
            let (mut state, merged_from) =
                match hand_edit::judge(bytes, &head, &self.paths.root, &*self.policy, choices) {
                    Ok(judged) => judged,
                    Err(why) => return Ok(Err(why)),
                };
            let written = state.revision();
            let mut detail = format!(
                "liza edit: {}",
                hand_edit_detail(&current, &state, merged_from, latest)
            );
            if written > latest {
                detail.push_str(&format!(
                    " (the file said revision {written}; ignored, liza numbers revisions)"
                ));
            }
            state.revision = Some(latest as i64);
            let mut entry = LogEntry::new(Timestamp::now(), "human", EventKind::HumanEdit);
            entry.detail = Some(detail);
            match self.finish(attempt, state, vec![entry])? {
                Finished::Committed(revision, _) => return Ok(Ok(revision)),
                Finished::Conflict => {}
                Finished::Unknown(pending) => unknowns.push(pending),
            }
        }
    }

    /// The control flags raised now.
    pub fn control_flags(&self) -> Result<ControlFlags, StoreError> {
        let prefix = self.address.key("control/");
        let (kvs, _) = self.call(|c| c.range(&prefix, &prefix_end(&prefix), 0))?;
        let flags = kvs
            .into_iter()
            .filter_map(|kv| {
                let name = std::str::from_utf8(kv.key.strip_prefix(prefix.as_slice())?).ok()?;
                let control = Control::from_name(name)?;
                let text = String::from_utf8_lossy(&kv.value).into_owned();
                Some((control, Raised::read(text, None)))
            })
            .collect();
        Ok(ControlFlags(flags))
    }

    /// Raises `control` with `text` (its first line: when).
    pub fn raise(&self, control: Control, text: &str) -> Result<(), StoreError> {
        let key = self.address.key(&format!("control/{}", control.name()));
        self.call(|c| c.put(&key, text.as_bytes(), 0).map(drop))
    }

    /// Lowers `control`; `false` when it was not raised.
    pub fn lower(&self, control: Control) -> Result<bool, StoreError> {
        let key = self.address.key(&format!("control/{}", control.name()));
        if self.call(|c| c.get(&key))?.is_none() {
            return Ok(false);
        }
        self.call(|c| c.txn(&[], &[Change::Delete(key.clone())]).map(|_| true))
    }

    /// What `liza doctor` checks of the store: each member, keys the layout does not
    /// know, and each liveness record's etcd lease.
    pub fn inspect(&self) -> Inspection {
        let members = self
            .address
            .endpoints
            .iter()
            .map(|endpoint| {
                let answer = Client::new(std::slice::from_ref(endpoint), REQUEST_TIMEOUT)
                    .and_then(|c| c.get(&layout::head_key(&self.address)).map(drop));
                (endpoint.clone(), answer)
            })
            .collect();
        let prefix = self.address.key("");
        let strays = match self.client.keys(&prefix, &prefix_end(&prefix)) {
            Ok(keys) => keys
                .into_iter()
                .filter_map(|key| {
                    let rest = std::str::from_utf8(key.strip_prefix(prefix.as_slice())?).ok()?;
                    let known = rest == "head"
                        || rest == "commit"
                        || [
                            "head/",
                            "task/",
                            "note/",
                            "log/",
                            "live/",
                            "control/",
                            "doc/",
                            "alarm/",
                            "delivered/",
                        ]
                        .iter()
                        .any(|p| rest.starts_with(p));
                    (!known).then(|| String::from_utf8_lossy(&key).into_owned())
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        let live = self.address.key("live/");
        let leases = match self.client.range(&live, &prefix_end(&live), 0) {
            Ok((kvs, _)) => kvs
                .into_iter()
                .map(|kv| {
                    let record: Option<LiveRecord> = serde_json::from_slice(&kv.value).ok();
                    let seconds_left = match kv.lease {
                        0 => None,
                        id => self.client.time_to_live(id).ok().flatten(),
                    };
                    LeaseFacts {
                        key: String::from_utf8_lossy(&kv.key).into_owned(),
                        host: record.as_ref().and_then(|r| r.host.clone()),
                        lease_expires: record.map(|r| r.lease_expires),
                        has_lease: kv.lease != 0,
                        seconds_left,
                    }
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        Inspection {
            members,
            strays,
            leases,
            read_at: Timestamp::now(),
        }
    }

    /// A feed of the changes of `topics`, from now on.
    pub fn changes(&self, topics: &[Topic], debounce: Duration) -> Changes {
        Changes::etcd(Arc::clone(&self.client), &self.address, topics, debounce)
    }

    /// The blackboard as a state.yaml text (for `liza edit` and `liza validate`).
    pub fn text(&self) -> Result<Vec<u8>, StoreError> {
        let state = self.read(0)?.state;
        self.refresh_mirror(&state);
        Ok(yaml_text(&state))
    }
}

/// The etcd keys of liveness records under `prefix` (`live/<agent>.<generation>`); a key
/// or value that does not read is skipped, as a malformed record file is.
fn live_records(prefix: &[u8], kvs: &[KeyValue]) -> LiveRecords {
    let mut records: Vec<(AgentId, LiveRecord)> = kvs
        .iter()
        .filter_map(|kv| {
            let name = std::str::from_utf8(kv.key.strip_prefix(prefix)?).ok()?;
            let (agent, generation) = name.rsplit_once('.')?;
            let agent = AgentId::parse(agent).ok()?;
            let record: LiveRecord = serde_json::from_slice(&kv.value).ok()?;
            (record.generation == generation).then_some((agent, record))
        })
        .collect();
    records.sort_by(|a, b| a.0.cmp(&b.0));
    LiveRecords(records)
}

/// The revision a head value holds.
/// Whether the read of the `commit` key finds a pending state's proof (see
/// [`Known::pending`]) written at `revision`: the state was applied there.
fn proven(read: &[KeyValue], revision: i64, proof: &[u8]) -> bool {
    read.first()
        .is_some_and(|kv| kv.mod_revision == revision && kv.value == proof)
}

/// A value no other commit writes to the `commit` key: this host, process, instant and
/// count, and the process's random hasher keys, hashed.
fn commit_proof() -> Vec<u8> {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut keyed = std::collections::hash_map::RandomState::new().build_hasher();
    keyed.write_u128(now.as_nanos());
    let host = nix::unistd::gethostname().unwrap_or_default();
    let seed = format!(
        "{}.{}.{}.{}.{:x}",
        host.to_string_lossy(),
        std::process::id(),
        now.as_nanos(),
        COUNT.fetch_add(1, Ordering::Relaxed),
        keyed.finish()
    );
    blake3::hash(seed.as_bytes()).to_hex()[..32]
        .as_bytes()
        .to_vec()
}

fn head_revision(kv: &KeyValue) -> Result<u64, LayoutError> {
    let revision = layout::head_revision(&kv.value).map_err(|e| LayoutError::Unreadable {
        key: String::from_utf8_lossy(&kv.key).into_owned(),
        detail: e.to_string(),
    })?;
    Ok(revision.max(0) as u64)
}

fn yaml_text(state: &State) -> Vec<u8> {
    super::file::render(state, None).bytes
}

/// The bytes a change adds to a txn request.
fn change_size(change: &Change) -> usize {
    match change {
        Change::Put { key, value, .. } => key.len() + value.len(),
        Change::Delete(key) => key.len(),
    }
}

fn etcd_error(address: &StoreAddress, source: EtcdError) -> StoreError {
    StoreError::Etcd {
        address: address.to_string(),
        source,
    }
}

/// The ranges a read of the state asks for, in this order: the head (always whole: its
/// revision is the state's), then — changed since a revision, or all — its sections,
/// the tasks and the notes, then the liveness records (always all).
struct StateRanges {
    keys: [Vec<u8>; 5],
    ends: [Vec<u8>; 5],
}

impl StateRanges {
    fn of(address: &StoreAddress) -> Self {
        let keys = [
            layout::head_key(address),
            layout::section_prefix(address),
            layout::task_prefix(address),
            layout::note_prefix(address),
            address.key("live/"),
        ];
        let ends = [
            Vec::new(),
            prefix_end(&keys[1]),
            prefix_end(&keys[2]),
            prefix_end(&keys[3]),
            prefix_end(&keys[4]),
        ];
        StateRanges { keys, ends }
    }

    /// The ranges, those that may be read in part from revision `since` (0: all).
    fn asked(&self, since: i64) -> Vec<(&[u8], &[u8], i64)> {
        (0..5)
            .map(|i| {
                let since = if i == 0 || i == 4 { 0 } else { since };
                (self.keys[i].as_slice(), self.ends[i].as_slice(), since)
            })
            .collect()
    }

    /// The keys read for the state (the head first) and the liveness records, from
    /// the answers to [`StateRanges::asked`] (anything asked after them left out).
    fn split(mut read: Vec<Vec<KeyValue>>) -> (Vec<KeyValue>, Vec<KeyValue>) {
        read.truncate(5);
        let live = read.pop().unwrap_or_default();
        (read.into_iter().flatten().collect(), live)
    }
}
