//! Group commit: the transactions of one process on one blackboard go to etcd in
//! batches, one batch in flight at a time, instead of racing each other.
//!
//! Writers of one process that raced each other lost most of their txns: a lost txn
//! costs etcd a round through its log like a won one, and 16 writers made 16 attempts
//! per success (specs/shared-store.md, E2). Here a writer runs its change on the state
//! every queued transition leads to — its *turn*, one writer at a time — and joins the
//! newest batch; the batch's first writer sends it once the batch before it is settled,
//! and every writer of the batch learns the outcome. Each transition keeps its own
//! revision and log entries; the batch commits them in one etcd txn, guarded like a
//! single transition's. A batch that loses to another process takes every batch built on
//! it down with it: their writers run their changes again, as after any lost race.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use crate::liveness::LiveRecords;
use crate::store::StoreError;
use liza_etcd::{Change, EtcdError, StoreAddress};
use liza_model::model::State;

/// etcd refuses a txn with more than `--max-txn-ops` compares, or operations in a branch
/// (128 unless the server was started with more: `LIZA_ETCD_MAX_TXN_OPS` says so).
const DEFAULT_MAX_TXN_OPS: usize = 128;

/// What a txn's guards other than the first log keys, and its failure reads, take.
const GUARD_OPS: usize = 8;

/// How many keys one txn may write, and first log keys it may guard.
pub(crate) fn max_ops() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        std::env::var("LIZA_ETCD_MAX_TXN_OPS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > GUARD_OPS)
            .unwrap_or(DEFAULT_MAX_TXN_OPS)
            - GUARD_OPS
    })
}

/// A state and the etcd revision it is the state of.
#[derive(Clone)]
pub(crate) struct Known {
    pub revision: i64,
    pub state: Arc<State>,
    pub live: LiveRecords,
    /// Sent, not yet known applied: the state a commit of another process of the
    /// checkout leads to if etcd applies it at `revision`, where that commit writes this
    /// value, its own, to the `commit` key (see `known_file`, *Handed over at the send*).
    /// A commit built on it is guarded by that; it is the base of a read of what changed
    /// since only once the read finds it, and never shown in the mirror.
    pub pending: Option<Vec<u8>>,
}

impl Known {
    /// Whether this state replaces `kept`, at the same revision: `kept` was only sent
    /// and this is another (applied, or sent by another commit: `kept`'s was not).
    pub(super) fn replaces(&self, kept: &Known) -> bool {
        self.revision == kept.revision && kept.pending.is_some() && kept.pending != self.pending
    }
}

/// The writers of one blackboard in this process.
pub(crate) struct Pipeline {
    inner: Mutex<Inner>,
    changed: Condvar,
}

#[derive(Default)]
struct Inner {
    /// A writer has its turn: it runs its change on [`Inner::tip`] or the committed state.
    turn_taken: bool,
    /// Grows whenever queued batches are dropped: a turn begun before cannot join.
    epoch: u64,
    /// The newest state known committed, and its etcd revision.
    committed: Option<Known>,
    /// The state every queued and in-flight batch leads to; `None` when none is.
    tip: Option<Known>,
    queued: VecDeque<Batch>,
    in_flight: bool,
    /// The etcd revision of the last batch applied.
    last_applied: i64,
    next_id: u64,
    /// Settled batches, with how many of their writers have yet to learn it.
    settled: HashMap<u64, (Arc<Outcome>, usize)>,
}

/// Transitions to be committed together.
struct Batch {
    id: u64,
    /// The etcd revision of the state the batch was built on: known once the batch
    /// before it is settled.
    guard: Option<i64>,
    /// The state the batch was built on (what a refusal's reads are decoded against).
    base: Arc<State>,
    /// The base was only sent by another process: the value of the `commit` key that proves it
    /// (see [`Known::pending`]).
    pending: Option<Vec<u8>>,
    /// The liveness records its transitions folded in.
    live: LiveRecords,
    /// The state after its last transition.
    last: Arc<State>,
    /// What it writes, by key: a later transition's write to a key replaces an earlier's.
    changes: BTreeMap<Vec<u8>, Change>,
    /// Each transition's first log key: absent until the batch writes it.
    first_logs: Vec<Vec<u8>>,
    /// Operations and bytes if every transition's writes were kept (an upper bound).
    ops: usize,
    bytes: usize,
    /// The compares beyond the guards: the first log keys, and the keys guarded one by
    /// one (an upper bound, as `ops`).
    compares: usize,
    writers: usize,
}

/// A batch taken out of the queue by its first writer, to be sent.
pub(crate) struct Sealed {
    pub id: u64,
    pub guard: i64,
    pub base: Arc<State>,
    /// As [`Batch`]'s: the base is applied at `guard` only if this key was written then.
    pub pending: Option<Vec<u8>>,
    pub live: LiveRecords,
    pub last: Arc<State>,
    pub changes: Vec<Change>,
    pub first_logs: Vec<Vec<u8>>,
    writers: usize,
    pipeline: Arc<Pipeline>,
    /// Set by [`Pipeline::settle`]; a batch dropped unsettled (its sender panicked)
    /// is settled as unknown, so no writer waits for it forever.
    settled: bool,
}

impl Drop for Sealed {
    fn drop(&mut self) {
        if !self.settled {
            let pipeline = Arc::clone(&self.pipeline);
            let sealed = Sealed {
                id: self.id,
                guard: self.guard,
                base: Arc::clone(&self.base),
                pending: self.pending.clone(),
                live: self.live.clone(),
                last: Arc::clone(&self.last),
                changes: Vec::new(),
                first_logs: Vec::new(),
                writers: self.writers,
                pipeline: Arc::clone(&pipeline),
                settled: true,
            };
            pipeline.settle(sealed, Settled::Unknown);
        }
    }
}

/// How a batch ended.
pub(crate) enum Outcome {
    Applied {
        state: Arc<State>,
        /// The checkout whose store sent the batch.
        sender: PathBuf,
    },
    /// Not applied (another writer first, or a batch before it was not): run again.
    Conflict,
    /// Sent, and no answer came back: maybe applied.
    Unknown,
    /// etcd could not be reached for as long as the sender would wait.
    Failed(EtcdError),
}

/// What the sender of a batch reports.
pub(crate) enum Settled {
    Applied {
        revision: i64,
        sender: PathBuf,
    },
    /// Refused; the newer state, when the refusal's reads could be decoded.
    Conflict(Option<Known>),
    Unknown,
    Failed(EtcdError),
}

/// One writer's transition, run and ready to join a batch.
pub(crate) struct Transition {
    pub state: State,
    pub changes: Vec<Change>,
    pub bytes: usize,
    pub first_log: Vec<u8>,
    /// The keys it writes that the txn guards one by one (notes).
    pub guarded: usize,
}

/// A writer's turn: held from the start of its transition until it joins a batch or
/// gives up (dropped), so no other writer of this process builds on the same state.
pub(crate) struct Turn {
    pipeline: Arc<Pipeline>,
    epoch: u64,
    /// What the transition starts from.
    pub base: Known,
    /// The base is what queued batches lead to, not a committed state.
    pending: bool,
    done: bool,
}

/// A writer's place in a batch.
pub(crate) struct Ticket {
    id: u64,
    pub first: bool,
}

/// The pipeline of `address` in this process.
pub(crate) fn of(address: &StoreAddress) -> Arc<Pipeline> {
    static ALL: OnceLock<Mutex<HashMap<String, Arc<Pipeline>>>> = OnceLock::new();
    let mut all = ALL
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    Arc::clone(all.entry(address.to_string()).or_insert_with(|| {
        Arc::new(Pipeline {
            inner: Mutex::new(Inner::default()),
            changed: Condvar::new(),
        })
    }))
}

impl Pipeline {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, inner: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
        self.changed.wait(inner).unwrap_or_else(|e| e.into_inner())
    }

    /// The newest committed state this process knows.
    pub(super) fn committed(&self) -> Option<Known> {
        self.lock().committed.clone()
    }

    /// Forgets `pending` if it is the state kept: a read found it was not applied.
    pub(super) fn forget(&self, pending: &Known) {
        let mut inner = self.lock();
        if inner.committed.as_ref().is_some_and(|k| {
            k.revision == pending.revision && k.pending.is_some() && k.pending == pending.pending
        }) {
            inner.committed = None;
        }
    }

    /// Keeps `known` as the newest committed state, unless a newer one is kept.
    pub(super) fn remember(&self, known: Known) {
        let mut inner = self.lock();
        if inner
            .committed
            .as_ref()
            .is_none_or(|k| k.revision < known.revision || known.replaces(k))
        {
            inner.committed = Some(known);
        }
    }

    /// Waits for this writer's turn — at most `wait`, as for the file store's lock —
    /// and gives it the state to start from: what the queued batches lead to, else the
    /// committed state, else what `read()` finds (read without the turn, so a slow etcd
    /// holds up one writer at a time, not all in a row).
    pub(super) fn turn(
        self: &Arc<Self>,
        wait: std::time::Duration,
        read: impl Fn() -> Result<Known, StoreError>,
    ) -> Result<Turn, StoreError> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let mut inner = self.lock();
            while inner.turn_taken {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Err(StoreError::LockTimeout {
                        lock: "the turn of this process's writers of the etcd blackboard".into(),
                        waited: wait,
                        holder: Some(format!("another thread of process {}", std::process::id())),
                    });
                }
                inner = self
                    .changed
                    .wait_timeout(inner, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            let (base, pending) = match (&inner.tip, &inner.committed) {
                (Some(tip), _) => (tip.clone(), true),
                (None, Some(committed)) => (committed.clone(), false),
                (None, None) => {
                    drop(inner);
                    self.remember(read()?);
                    continue;
                }
            };
            inner.turn_taken = true;
            return Ok(Turn {
                pipeline: Arc::clone(self),
                epoch: inner.epoch,
                base,
                pending,
                done: false,
            });
        }
    }

    /// Adds `transition`, run on `turn`'s state, to the newest batch (or a new one when
    /// that one is full); `None` when batches were dropped since the turn began (the
    /// state it ran on will not be committed: run it again).
    pub(super) fn join(&self, mut turn: Turn, transition: Transition) -> Option<Ticket> {
        turn.done = true;
        let mut inner = self.lock();
        inner.turn_taken = false;
        self.changed.notify_all();
        if inner.epoch != turn.epoch {
            return None;
        }
        let ops = transition.changes.len();
        let fits = |b: &Batch| {
            b.ops + ops <= max_ops()
                && b.bytes + transition.bytes <= super::MAX_TXN_BYTES
                && b.compares + 1 + transition.guarded <= max_ops()
        };
        let first = match inner.queued.back() {
            Some(newest) if fits(newest) => false,
            _ => {
                // A base that is a batch of this process is known applied once its guard
                // is; one another process only sent carries the key that proves it.
                let pending = if turn.pending {
                    None
                } else {
                    turn.base.pending.clone()
                };
                let guard = if !turn.pending {
                    Some(turn.base.revision)
                } else if inner.queued.is_empty() && !inner.in_flight {
                    // Every batch the turn's state came from was applied meanwhile.
                    Some(inner.last_applied)
                } else {
                    None
                };
                let id = inner.next_id;
                inner.next_id += 1;
                inner.queued.push_back(Batch {
                    id,
                    guard,
                    base: Arc::clone(&turn.base.state),
                    pending,
                    live: turn.base.live.clone(),
                    last: Arc::clone(&turn.base.state),
                    changes: BTreeMap::new(),
                    first_logs: Vec::new(),
                    ops: 0,
                    bytes: 0,
                    compares: 0,
                    writers: 0,
                });
                true
            }
        };
        let batch = inner
            .queued
            .back_mut()
            .expect("a batch was just found or made");
        for change in transition.changes {
            let key = match &change {
                Change::Put { key, .. } | Change::Delete(key) => key.clone(),
            };
            batch.changes.insert(key, change);
        }
        batch.first_logs.push(transition.first_log);
        batch.ops += ops;
        batch.bytes += transition.bytes;
        batch.compares += 1 + transition.guarded;
        batch.writers += 1;
        let state = Arc::new(transition.state);
        batch.last = Arc::clone(&state);
        let id = batch.id;
        let live = batch.live.clone();
        inner.tip = Some(Known {
            revision: 0,
            state,
            live,
            pending: None,
        });
        Some(Ticket { id, first })
    }

    /// For the first writer of a batch: waits until the batches before it are settled
    /// and takes it out of the queue to be sent; `None` when it was settled meanwhile
    /// (dropped with a batch before it).
    pub(super) fn seal(self: &Arc<Self>, ticket: &Ticket) -> Option<Sealed> {
        let mut inner = self.lock();
        loop {
            if inner.settled.contains_key(&ticket.id) {
                return None;
            }
            let ready = !inner.in_flight
                && inner
                    .queued
                    .front()
                    .is_some_and(|b| b.id == ticket.id && b.guard.is_some());
            if ready {
                break;
            }
            inner = self.wait(inner);
        }
        let batch = inner
            .queued
            .pop_front()
            .expect("the front batch was just seen");
        inner.in_flight = true;
        Some(Sealed {
            id: batch.id,
            guard: batch.guard.expect("checked above"),
            base: batch.base,
            pending: batch.pending,
            live: batch.live,
            last: batch.last,
            changes: batch.changes.into_values().collect(),
            first_logs: batch.first_logs,
            writers: batch.writers,
            pipeline: Arc::clone(self),
            settled: false,
        })
    }

    /// Records how the sealed batch ended, and what it means for the batches after it.
    pub(super) fn settle(&self, mut sealed: Sealed, settled: Settled) {
        sealed.settled = true;
        let mut inner = self.lock();
        inner.in_flight = false;
        let outcome = match settled {
            Settled::Applied { revision, sender } => {
                let state = Arc::clone(&sealed.last);
                inner.last_applied = revision;
                if inner.committed.as_ref().is_none_or(|k| {
                    k.revision < revision || (k.revision == revision && k.pending.is_some())
                }) {
                    inner.committed = Some(Known {
                        revision,
                        state: Arc::clone(&state),
                        live: sealed.live.clone(),
                        pending: None,
                    });
                }
                match inner.queued.front_mut() {
                    Some(next) => next.guard = Some(revision),
                    None => inner.tip = None,
                }
                Outcome::Applied { state, sender }
            }
            Settled::Conflict(fresh) => {
                inner.committed = fresh;
                drop_queued(&mut inner, || Outcome::Conflict);
                Outcome::Conflict
            }
            Settled::Unknown => {
                inner.committed = None;
                drop_queued(&mut inner, || Outcome::Conflict);
                Outcome::Unknown
            }
            Settled::Failed(error) => {
                inner.committed = None;
                // Batches never sent fail with it only when etcd could not be reached
                // (their writers would wait as long again); else they run again.
                let unreachable = matches!(error, EtcdError::Unreachable { .. });
                drop_queued(&mut inner, || {
                    if unreachable {
                        Outcome::Failed(error.clone())
                    } else {
                        Outcome::Conflict
                    }
                });
                Outcome::Failed(error)
            }
        };
        inner
            .settled
            .insert(sealed.id, (Arc::new(outcome), sealed.writers));
        self.changed.notify_all();
    }

    /// Waits for the outcome of the ticket's batch.
    pub(super) fn outcome(&self, ticket: Ticket) -> Arc<Outcome> {
        let mut inner = self.lock();
        loop {
            if let Some((outcome, left)) = inner.settled.get_mut(&ticket.id) {
                let outcome = Arc::clone(outcome);
                *left -= 1;
                if *left == 0 {
                    inner.settled.remove(&ticket.id);
                }
                return outcome;
            }
            inner = self.wait(inner);
        }
    }
}

/// Drops every queued batch (built on one that was not applied) with `outcome`.
fn drop_queued(inner: &mut Inner, outcome: impl Fn() -> Outcome) {
    inner.epoch += 1;
    inner.tip = None;
    for batch in std::mem::take(&mut inner.queued) {
        inner
            .settled
            .insert(batch.id, (Arc::new(outcome()), batch.writers));
    }
}

impl Pipeline {
    fn give_turn_back(&self) {
        self.lock().turn_taken = false;
        self.changed.notify_all();
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if !self.done {
            self.pipeline.give_turn_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use liza_model::timestamp::Timestamp;

    const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

    fn pipeline() -> Arc<Pipeline> {
        Arc::new(Pipeline {
            inner: Mutex::new(Inner::default()),
            changed: Condvar::new(),
        })
    }

    fn state(revision: i64) -> State {
        let mut state = liza_model::bench::generate_state(0, 0, Timestamp::from_unix(0));
        state.revision = Some(revision);
        state
    }

    fn known(revision: i64) -> Known {
        Known {
            revision,
            state: Arc::new(state(1)),
            live: LiveRecords::default(),
            pending: None,
        }
    }

    /// A transition of `turn`'s state to the next revision, writing `key`.
    fn transition(turn: &Turn, key: &str) -> Transition {
        let next = turn.base.state.revision.unwrap_or(0) + 1;
        Transition {
            state: state(next),
            changes: vec![Change::Put {
                key: key.as_bytes().to_vec(),
                value: next.to_string().into_bytes(),
                lease: 0,
            }],
            bytes: 10,
            first_log: format!("log/{next}").into_bytes(),
            guarded: 0,
        }
    }

    /// A writer's whole turn: its transition writing `key`, joined.
    fn write(p: &Arc<Pipeline>, key: &str) -> Ticket {
        let turn = p.turn(WAIT, || Ok(known(7))).unwrap();
        let transition = transition(&turn, key);
        p.join(turn, transition).unwrap()
    }

    #[test]
    fn transitions_queued_while_a_batch_is_in_flight_build_on_it_and_go_together() {
        let p = pipeline();
        let first = write(&p, "k/a");
        assert!(first.first);
        let sealed = p.seal(&first).unwrap();
        assert_eq!(sealed.guard, 7);
        // While it is in flight, two more build on its state, in one batch.
        let b = p.turn(WAIT, || unreachable!("the tip is known")).unwrap();
        assert_eq!(b.base.state.revision, Some(2));
        let tb = transition(&b, "k/b");
        let second = p.join(b, tb).unwrap();
        let c = p.turn(WAIT, || unreachable!()).unwrap();
        assert_eq!(c.base.state.revision, Some(3));
        let tc = transition(&c, "k/b");
        let third = p.join(c, tc).unwrap();
        assert!(second.first && !third.first);
        p.settle(
            sealed,
            Settled::Applied {
                revision: 8,
                sender: PathBuf::new(),
            },
        );
        assert!(matches!(*p.outcome(first), Outcome::Applied { .. }));
        let next = p.seal(&second).unwrap();
        // Guarded by the revision the first batch was applied at; one write per key,
        // the later one; every transition's first log key.
        assert_eq!(next.guard, 8);
        assert_eq!(next.base.revision, Some(2));
        assert_eq!(next.last.revision, Some(4));
        assert!(matches!(&next.changes[..], [Change::Put { value, .. }] if value == b"4"));
        assert_eq!(next.first_logs, [b"log/3".to_vec(), b"log/4".to_vec()]);
    }

    #[test]
    fn a_refused_batch_drops_the_batches_built_on_it_and_the_turns_begun_on_it() {
        let p = pipeline();
        let first = write(&p, "k/a");
        let sealed = p.seal(&first).unwrap();
        let second = write(&p, "k/b");
        // A turn begun on the batches' state, still running its change.
        let late = p.turn(WAIT, || unreachable!()).unwrap();
        let t_late = transition(&late, "k/c");
        let fresh = Known {
            revision: 9,
            state: Arc::new(state(5)),
            live: LiveRecords::default(),
            pending: None,
        };
        p.settle(sealed, Settled::Conflict(Some(fresh)));
        assert!(matches!(*p.outcome(first), Outcome::Conflict));
        assert!(p.seal(&second).is_none(), "a dropped batch was sent");
        assert!(matches!(*p.outcome(second), Outcome::Conflict));
        assert!(p.join(late, t_late).is_none(), "a stale turn joined");
        // The next turn starts from the state the refusal brought back.
        let next = p.turn(WAIT, || unreachable!()).unwrap();
        assert_eq!(next.base.revision, 9);
        assert_eq!(next.base.state.revision, Some(5));
    }

    #[test]
    fn a_turn_given_up_is_given_back_and_a_read_runs_without_it() {
        let p = pipeline();
        let a = p.turn(WAIT, || Ok(known(7))).unwrap();
        assert!(p.lock().turn_taken);
        drop(a);
        assert!(!p.lock().turn_taken, "a change that gave up kept the turn");
        let q = pipeline();
        let failed = q.turn(WAIT, || {
            assert!(!q.lock().turn_taken, "the read ran with the turn taken");
            Err(StoreError::NotInitialized { dir: "x".into() })
        });
        assert!(failed.is_err());
        assert!(!q.lock().turn_taken, "a failed read kept the turn");
    }

    #[test]
    fn a_writer_waits_for_the_turn_as_long_as_for_a_lock_then_fails_saying_so() {
        let p = pipeline();
        let _held = p.turn(WAIT, || Ok(known(7))).unwrap();
        let waited = p.turn(std::time::Duration::from_millis(20), || Ok(known(7)));
        assert!(matches!(waited, Err(StoreError::LockTimeout { .. })));
    }

    #[test]
    fn a_batch_its_sender_dropped_unsettled_is_settled_as_unknown() {
        let p = pipeline();
        let first = write(&p, "k/a");
        let sealed = p.seal(&first).unwrap();
        let second = write(&p, "k/b");
        drop(sealed);
        assert!(matches!(*p.outcome(first), Outcome::Unknown));
        assert!(matches!(*p.outcome(second), Outcome::Conflict));
        assert!(!p.lock().in_flight);
    }

    /// A state another process of the checkout only sent, proven by `proof`.
    fn pending(revision: i64, proof: &[u8]) -> Known {
        Known {
            pending: Some(proof.to_vec()),
            ..known(revision)
        }
    }

    #[test]
    fn a_read_that_finds_a_pending_state_unapplied_forgets_that_state_and_no_other() {
        let p = pipeline();
        p.remember(pending(10, b"mine"));
        // Another commit's pending state at the same revision, or an applied one, is
        // not the one found unapplied: kept.
        p.forget(&pending(10, b"theirs"));
        p.forget(&known(10));
        assert_eq!(
            p.committed().unwrap().pending.as_deref(),
            Some(&b"mine"[..])
        );
        p.forget(&pending(10, b"mine"));
        assert!(
            p.committed().is_none(),
            "a state known not applied was kept"
        );
        // An applied state is never forgotten for a pending one at its revision.
        p.remember(known(10));
        p.forget(&pending(10, b"mine"));
        p.forget(&known(10));
        assert!(p.committed().is_some_and(|k| k.pending.is_none()));
    }

    /// A pipeline whose one batch, built on revision 7, is on the wire when `pending` is
    /// read from the checkout, and then lands at revision 8: what it keeps.
    fn kept_after_landing_at_8_beside(pending: Known) -> Known {
        let p = pipeline();
        let first = write(&p, "k/a");
        let sealed = p.seal(&first).unwrap();
        p.remember(pending);
        p.settle(
            sealed,
            Settled::Applied {
                revision: 8,
                sender: PathBuf::new(),
            },
        );
        p.committed().unwrap()
    }

    #[test]
    fn a_batch_applied_at_a_pending_states_revision_replaces_it_and_an_older_one_does_not() {
        // Another process's state sent for revision 8: the batch landed there, so that
        // one did not.
        let kept = kept_after_landing_at_8_beside(pending(8, b"theirs"));
        assert_eq!(kept.revision, 8);
        assert!(
            kept.pending.is_none(),
            "the state only sent outlived the one applied"
        );
        assert_eq!(kept.state.revision, Some(2));
        // One sent for a later revision stays: it may yet be applied after this batch.
        let kept = kept_after_landing_at_8_beside(pending(9, b"theirs"));
        assert_eq!(
            (kept.revision, kept.pending.as_deref()),
            (9, Some(&b"theirs"[..]))
        );
    }
}
