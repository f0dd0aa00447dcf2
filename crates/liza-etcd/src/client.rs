//! A blocking client of etcd v3: reads and transactions over gRPC (the KV service, its
//! messages encoded by hand in `proto`), leases, compaction and watches over the JSON
//! gateway with the reqwest the model client uses — no protoc and no generated code in
//! the build (specs/shared-store.md *The client*).
//!
//! Callers are synchronous — the CLI, and the supervisors from their one dispatcher
//! thread — so the client owns a small runtime on a thread of its own and callers wait
//! on a channel: blocking there never nests one runtime in another. Every call tries the
//! endpoints in turn, starting from the last one that answered; an endpoint that cannot
//! be reached, or answers "unavailable", hands over to the next.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::grpc::{CallError, Grpc};
use super::proto::{
    Compare, CompareResult, CompareTarget, DeleteRangeRequest, PutRequest, RangeRequest,
    RangeResponse, RequestOp, TxnRequest, TxnResponse,
};
use super::wire::{
    CompactionRequest, ErrorBody, KeepAliveResponse, KeyValue, LeaseGrantRequest, LeaseIdRequest,
    LeaseResponse, WatchCreate, WatchLine, WatchRequest,
};

/// gRPC's "unavailable": the member cannot serve now (no leader, shutting down).
const UNAVAILABLE: i64 = 14;
/// gRPC's "out of range": the revision asked for has been compacted.
const OUT_OF_RANGE: i64 = 11;

/// The KV service's methods liza calls.
const RANGE: &str = "/etcdserverpb.KV/Range";
const TXN: &str = "/etcdserverpb.KV/Txn";

/// What went wrong in a call to etcd.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EtcdError {
    /// No member answered (or the client could not be set up).
    #[error("cannot reach etcd at {endpoints}: {detail}")]
    Unreachable {
        /// The members tried, `host:port` separated by commas.
        endpoints: String,
        /// Why each one failed, separated by `; `.
        detail: String,
    },
    /// A member answered with an error.
    #[error("etcd refused the request: {message} (code {code})")]
    Refused {
        /// The gRPC status code (0 when the answer had none).
        code: i64,
        /// etcd's message.
        message: String,
    },
    /// An answer that does not read as the expected JSON — or a request that could not be
    /// written, or the client's thread gone.
    #[error("etcd answered something liza cannot read ({detail})")]
    BadAnswer {
        /// What failed.
        detail: String,
    },
    /// A change was sent but no answer came back: it may or may not have been applied.
    /// It is never sent again by the client; the caller reads to find out.
    #[error("etcd may or may not have applied the change ({detail}); read it back to know")]
    Indeterminate {
        /// The member and what happened to the request.
        detail: String,
    },
}

impl EtcdError {
    /// The revision asked for is older than etcd's compaction point.
    pub fn is_compacted(&self) -> bool {
        // Code 11 is also "a future revision": the message tells them apart.
        matches!(self, EtcdError::Refused { code, message }
            if *code == OUT_OF_RANGE && message.contains("compacted"))
    }
}

/// What a txn checks before it applies its changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The key was last changed at this revision (0: the key does not exist).
    ModRevision(Vec<u8>, i64),
    /// The key holds exactly this value (false when it does not exist).
    Value(Vec<u8>, Vec<u8>),
    /// No key in `[key, range_end)` was changed after `revision` — one compare for
    /// everything a transaction read at that revision. (A key deleted meanwhile is no
    /// longer in the range: deletions by other clients are not seen.)
    UnchangedSince {
        /// The first key of the range.
        key: Vec<u8>,
        /// The end of the range, not included.
        range_end: Vec<u8>,
        /// The revision the range was read at.
        revision: i64,
    },
}

/// One change of a txn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Writes `value` at `key`.
    Put {
        /// The key.
        key: Vec<u8>,
        /// Its new value.
        value: Vec<u8>,
        /// The lease to attach the key to: the key is deleted when the lease ends (0: none).
        lease: i64,
    },
    /// Deletes this key (nothing when it does not exist).
    Delete(Vec<u8>),
}

/// What a txn did: applied at `revision`, or refused because a condition no longer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOutcome {
    /// Every condition held and the changes were applied.
    Applied {
        /// The revision the changes made.
        revision: i64,
    },
    /// A condition failed: nothing was changed.
    Conflict {
        /// The store's revision when the txn was refused.
        revision: i64,
    },
}

/// A key change seen by a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A key written: the key as the change left it.
    Put(KeyValue),
    /// A key deleted.
    Delete {
        /// The key.
        key: Vec<u8>,
        /// The revision that deleted it.
        revision: i64,
    },
}

impl Event {
    /// The revision of the change.
    pub fn revision(&self) -> i64 {
        match self {
            Event::Put(kv) => kv.mod_revision,
            Event::Delete { revision, .. } => *revision,
        }
    }
}

/// What a watch delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchItem {
    /// The changes of one or more revisions, in order.
    Events(Vec<Event>),
    /// The revision to resume from was compacted away: read everything again, then
    /// watch from the revision that read returns. The watch has ended.
    Compacted {
        /// etcd's compaction point: the oldest revision it still keeps.
        compact_revision: i64,
    },
}

/// Txn read operations of `ranges` (`(key, range_end, min_mod_revision)`) at `revision`.
fn range_ops(ranges: &[(&[u8], &[u8], i64)], revision: i64) -> Vec<RequestOp> {
    ranges
        .iter()
        .map(|(key, range_end, min_mod_revision)| {
            RequestOp::Range(RangeRequest {
                key: key.to_vec(),
                range_end: range_end.to_vec(),
                limit: 0,
                revision,
                keys_only: false,
                min_mod_revision: *min_mod_revision,
            })
        })
        .collect()
}

/// The keys from `prefix` on that start with it: etcd's `range_end` for a prefix.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Only 0xff bytes (or empty): every key from the prefix on.
    vec![0]
}

/// The client's own runtime thread.
struct Runtime {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Runtime {
    fn start() -> std::io::Result<Runtime> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("liza-etcd".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })?;
        Ok(Runtime {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Runs `future` on the client's thread and waits for its result.
    fn run<T: Send + 'static>(
        &self,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(future.await);
        });
        rx.recv().ok()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Shared {
    /// The members, `host:port`.
    endpoints: Vec<String>,
    /// The endpoint that answered last.
    preferred: AtomicUsize,
    /// The JSON gateway's client: leases, compaction, watches.
    http: reqwest::Client,
    /// The KV service's: reads and transactions.
    grpc: Grpc,
    timeout: Duration,
}

/// A client of one etcd cluster: blocking calls, run on the client's own thread, each
/// tried on the members in turn.
pub struct Client {
    shared: Arc<Shared>,
    runtime: Runtime,
}

impl Client {
    /// A client of the members at `endpoints` (`host:port`), each request bounded by
    /// `timeout`. Nothing is sent yet.
    pub fn new(endpoints: &[String], timeout: Duration) -> Result<Client, EtcdError> {
        let unreachable = |detail: String| EtcdError::Unreachable {
            endpoints: endpoints.join(","),
            detail,
        };
        if endpoints.is_empty() {
            return Err(unreachable("no endpoint given".into()));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .no_proxy()
            .build()
            .map_err(|e| unreachable(e.to_string()))?;
        let runtime = Runtime::start().map_err(|e| unreachable(e.to_string()))?;
        Ok(Client {
            shared: Arc::new(Shared {
                endpoints: endpoints.to_vec(),
                preferred: AtomicUsize::new(0),
                http,
                grpc: Grpc::new(endpoints.len()),
                timeout,
            }),
            runtime,
        })
    }

    /// Connects to the member the next call goes to, in the background: the caller goes
    /// on with its work meanwhile, and that call finds the connection made (or, if it
    /// could not be, tries the next member at once).
    pub fn warm(&self) {
        let shared = Arc::clone(&self.shared);
        self.runtime.handle.spawn(async move {
            let member = shared.preferred.load(Ordering::Relaxed);
            shared
                .grpc
                .warm(member, &shared.endpoints[member], shared.timeout)
                .await;
        });
    }

    /// Calls `path` of the JSON gateway with `request` (every such call is safe to send
    /// again: leases, compaction).
    fn call<Req: Serialize, Resp: DeserializeOwned + Send + 'static>(
        &self,
        path: &'static str,
        request: &Req,
    ) -> Result<Resp, EtcdError> {
        let body = serde_json::to_vec(request).map_err(|e| EtcdError::BadAnswer {
            detail: e.to_string(),
        })?;
        let shared = Arc::clone(&self.shared);
        self.runtime
            .run(async move { shared.call(path, body).await })
            .unwrap_or_else(|| {
                Err(EtcdError::BadAnswer {
                    detail: "the etcd client's thread stopped".into(),
                })
            })
    }

    /// Calls `method` of etcd's KV service with `message`; the answer's message.
    fn kv(
        &self,
        method: &'static str,
        message: Vec<u8>,
        resend: Resend,
    ) -> Result<Vec<u8>, EtcdError> {
        let shared = Arc::clone(&self.shared);
        self.runtime
            .run(async move { shared.kv(method, &message, resend).await })
            .unwrap_or_else(|| {
                Err(EtcdError::BadAnswer {
                    detail: "the etcd client's thread stopped".into(),
                })
            })
    }

    fn range_call(&self, request: &RangeRequest) -> Result<RangeResponse, EtcdError> {
        let answer = self.kv(RANGE, request.encode(), Resend::Safe)?;
        RangeResponse::decode(&answer).map_err(|e| EtcdError::BadAnswer {
            detail: e.to_string(),
        })
    }

    /// The keys in `[key, range_end)` (only `key` when `range_end` is empty), as of
    /// `revision` (0: now), and the revision read at.
    pub fn range(
        &self,
        key: &[u8],
        range_end: &[u8],
        revision: i64,
    ) -> Result<(Vec<KeyValue>, i64), EtcdError> {
        let (kvs, revision, _) = self.range_page(key, range_end, revision, 0)?;
        Ok((kvs, revision))
    }

    /// Like [`Client::range`], at most `limit` keys (0: all) in key order: also whether
    /// more keys follow (read them from the last key's successor, at the same revision).
    pub fn range_page(
        &self,
        key: &[u8],
        range_end: &[u8],
        revision: i64,
        limit: i64,
    ) -> Result<(Vec<KeyValue>, i64, bool), EtcdError> {
        let response = self.range_call(&RangeRequest {
            key: key.to_vec(),
            range_end: range_end.to_vec(),
            limit,
            revision,
            keys_only: false,
            min_mod_revision: 0,
        })?;
        Ok((response.kvs, response.revision, response.more))
    }

    /// Several ranges (`(key, range_end, min_mod_revision)`, as for [`Client::range`];
    /// only keys changed at `min_mod_revision` or later when it is not 0) read at one
    /// revision — a txn of reads alone, safe to send again —, and that revision.
    pub fn read_ranges(
        &self,
        ranges: &[(&[u8], &[u8], i64)],
        revision: i64,
    ) -> Result<(Vec<Vec<KeyValue>>, i64), EtcdError> {
        let request = TxnRequest {
            compare: Vec::new(),
            success: range_ops(ranges, revision),
            failure: Vec::new(),
        };
        let answer = self.kv(TXN, request.encode(), Resend::Safe)?;
        let response = TxnResponse::decode(&answer).map_err(|e| EtcdError::BadAnswer {
            detail: e.to_string(),
        })?;
        if response.responses.len() != ranges.len() {
            return Err(EtcdError::BadAnswer {
                detail: format!(
                    "{} ranges asked, {} answered",
                    ranges.len(),
                    response.responses.len()
                ),
            });
        }
        let kvs = response
            .responses
            .into_iter()
            .map(|r| r.map(|r| r.kvs).unwrap_or_default())
            .collect();
        Ok((kvs, response.revision))
    }

    /// The keys in `[key, range_end)` now, without their values.
    pub fn keys(&self, key: &[u8], range_end: &[u8]) -> Result<Vec<Vec<u8>>, EtcdError> {
        let response = self.range_call(&RangeRequest {
            key: key.to_vec(),
            range_end: range_end.to_vec(),
            keys_only: true,
            ..RangeRequest::default()
        })?;
        Ok(response.kvs.into_iter().map(|kv| kv.key).collect())
    }

    /// One key, if it exists.
    pub fn get(&self, key: &[u8]) -> Result<Option<KeyValue>, EtcdError> {
        Ok(self.range(key, &[], 0)?.0.into_iter().next())
    }

    /// Applies `changes` at one revision if every condition holds.
    pub fn txn(
        &self,
        conditions: &[Condition],
        changes: &[Change],
    ) -> Result<TxnOutcome, EtcdError> {
        Ok(self.txn_or_read(conditions, changes, &[])?.0)
    }

    /// [`Client::txn`], reading `reads` (as for [`Client::read_ranges`]) in the same
    /// revision when a condition fails: a writer that lost the race learns what changed
    /// without another round trip. The reads come back only on a conflict.
    pub fn txn_or_read(
        &self,
        conditions: &[Condition],
        changes: &[Change],
        reads: &[(&[u8], &[u8], i64)],
    ) -> Result<(TxnOutcome, Vec<Vec<KeyValue>>), EtcdError> {
        let compare = conditions
            .iter()
            .map(|c| match c {
                Condition::ModRevision(key, revision) => Compare {
                    key: key.clone(),
                    range_end: Vec::new(),
                    target: CompareTarget::Mod(*revision),
                    result: CompareResult::Equal,
                },
                Condition::Value(key, value) => Compare {
                    key: key.clone(),
                    range_end: Vec::new(),
                    target: CompareTarget::Value(value.clone()),
                    result: CompareResult::Equal,
                },
                Condition::UnchangedSince {
                    key,
                    range_end,
                    revision,
                } => Compare {
                    key: key.clone(),
                    range_end: range_end.clone(),
                    target: CompareTarget::Mod(revision + 1),
                    result: CompareResult::Less,
                },
            })
            .collect();
        let success = changes
            .iter()
            .map(|c| match c {
                Change::Put { key, value, lease } => RequestOp::Put(PutRequest {
                    key: key.clone(),
                    value: value.clone(),
                    lease: *lease,
                }),
                Change::Delete(key) => RequestOp::Delete(DeleteRangeRequest {
                    key: key.clone(),
                    range_end: Vec::new(),
                }),
            })
            .collect();
        let failure = range_ops(reads, 0);
        // A txn is not sent twice: a second copy of an applied one would come back as a
        // conflict, and a caller that retries conflicts would apply it again.
        let request = TxnRequest {
            compare,
            success,
            failure,
        };
        let answer = self.kv(TXN, request.encode(), Resend::OnlyIfNeverSent)?;
        // An answer that cannot be read does not say whether the change was applied.
        let response = TxnResponse::decode(&answer).map_err(|e| EtcdError::Indeterminate {
            detail: e.to_string(),
        })?;
        let revision = response.revision;
        if response.succeeded {
            return Ok((TxnOutcome::Applied { revision }, Vec::new()));
        }
        let read = response
            .responses
            .into_iter()
            .map(|r| r.map(|r| r.kvs).unwrap_or_default())
            .collect();
        Ok((TxnOutcome::Conflict { revision }, read))
    }

    /// Writes one key; returns the revision.
    pub fn put(&self, key: &[u8], value: &[u8], lease: i64) -> Result<i64, EtcdError> {
        match self.txn(
            &[],
            &[Change::Put {
                key: key.to_vec(),
                value: value.to_vec(),
                lease,
            }],
        )? {
            TxnOutcome::Applied { revision } | TxnOutcome::Conflict { revision } => Ok(revision),
        }
    }

    /// A lease of `ttl` seconds; returns its id.
    pub fn grant_lease(&self, ttl: i64) -> Result<i64, EtcdError> {
        let response: LeaseResponse = self.call("/v3/lease/grant", &LeaseGrantRequest { ttl })?;
        Ok(response.id)
    }

    /// Renews lease `id`; `None` when it has already expired.
    pub fn keep_alive(&self, id: i64) -> Result<Option<i64>, EtcdError> {
        let response: KeepAliveResponse =
            self.call("/v3/lease/keepalive", &LeaseIdRequest { id })?;
        Ok((response.result.ttl > 0).then_some(response.result.ttl))
    }

    /// The whole seconds lease `id` has left (etcd's clock, rounded down); `None` when it
    /// has expired or never existed (etcd 3.4 answers TTL -1).
    pub fn time_to_live(&self, id: i64) -> Result<Option<i64>, EtcdError> {
        let response: LeaseResponse = self.call("/v3/lease/timetolive", &LeaseIdRequest { id })?;
        Ok((response.ttl >= 0).then_some(response.ttl))
    }

    /// Ends lease `id` now: its keys are deleted. An unknown lease is not an error.
    pub fn revoke_lease(&self, id: i64) -> Result<(), EtcdError> {
        match self.call::<_, serde_json::Value>("/v3/lease/revoke", &LeaseIdRequest { id }) {
            Err(EtcdError::Refused { code: 5, .. }) | Ok(_) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Drops the history before `revision`.
    pub fn compact(&self, revision: i64) -> Result<(), EtcdError> {
        self.call::<_, serde_json::Value>("/v3/kv/compaction", &CompactionRequest { revision })
            .map(drop)
    }

    /// Watches `[key, range_end)` from `start_revision` (0: from now on). The watch
    /// reconnects by itself — to any endpoint — and resumes after the last revision it
    /// delivered, so nothing is missed or repeated; it ends when dropped, or with
    /// [`WatchItem::Compacted`].
    pub fn watch(&self, key: &[u8], range_end: &[u8], start_revision: i64) -> Watch {
        let (tx, rx) = std::sync::mpsc::channel();
        let shared = Arc::clone(&self.shared);
        let create = WatchCreate {
            key: key.to_vec(),
            range_end: range_end.to_vec(),
            start_revision,
        };
        let task = self.runtime.handle.spawn(watch_loop(shared, create, tx));
        Watch {
            items: rx,
            task: task.abort_handle(),
        }
    }
}

/// A running watch; see [`Client::watch`].
pub struct Watch {
    items: std::sync::mpsc::Receiver<WatchItem>,
    task: tokio::task::AbortHandle,
}

impl Watch {
    /// The next item, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<WatchItem> {
        self.items.recv_timeout(timeout).ok()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether a request may go to the next member after the one tried failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resend {
    /// Reads: sending twice does no harm.
    Safe,
    /// Changes: only when the first member never got it (the connection failed).
    OnlyIfNeverSent,
}

impl Shared {
    fn order(&self) -> impl Iterator<Item = usize> + '_ {
        let first = self.preferred.load(Ordering::Relaxed);
        (0..self.endpoints.len()).map(move |i| (first + i) % self.endpoints.len())
    }

    /// What member `i`'s attempt at a call settles: the call's result, or `None` when
    /// the next member is to be tried (the reason kept in `failures`).
    fn settled<T>(
        &self,
        i: usize,
        attempt: Result<T, Failed>,
        failures: &mut Vec<String>,
    ) -> Option<Result<T, EtcdError>> {
        match attempt {
            Ok(answer) => {
                self.preferred.store(i, Ordering::Relaxed);
                Some(Ok(answer))
            }
            Err(Failed::Next(detail)) => {
                failures.push(format!("{}: {detail}", self.endpoints[i]));
                None
            }
            Err(Failed::Final(e)) => Some(Err(e)),
        }
    }

    /// No member answered.
    fn unreachable(&self, failures: Vec<String>) -> EtcdError {
        EtcdError::Unreachable {
            endpoints: self.endpoints.join(","),
            detail: failures.join("; "),
        }
    }

    /// A call of the KV service (`method`, with `message`) over gRPC, on each member in
    /// turn until one answers; its answer.
    async fn kv(&self, method: &str, message: &[u8], resend: Resend) -> Result<Vec<u8>, EtcdError> {
        let mut failures = Vec::new();
        for i in self.order() {
            let attempt = self.kv_once(i, method, message, resend).await;
            if let Some(done) = self.settled(i, attempt, &mut failures) {
                return done;
            }
        }
        Err(self.unreachable(failures))
    }

    async fn kv_once(
        &self,
        i: usize,
        method: &str,
        message: &[u8],
        resend: Resend,
    ) -> Result<Vec<u8>, Failed> {
        let endpoint = &self.endpoints[i];
        let change = resend == Resend::OnlyIfNeverSent;
        let indeterminate = |detail: String| {
            Failed::Final(EtcdError::Indeterminate {
                detail: format!("{endpoint}: {detail}"),
            })
        };
        match self
            .grpc
            .unary(i, endpoint, method, message, self.timeout)
            .await
        {
            Ok(answer) => Ok(answer),
            Err(CallError::NotSent(detail)) => Err(Failed::Next(detail)),
            // "Request timed out", "leader changed": a change may have been applied.
            Err(
                CallError::NoAnswer(detail)
                | CallError::Status {
                    code: UNAVAILABLE,
                    message: detail,
                },
            ) => Err(if change {
                indeterminate(detail)
            } else {
                Failed::Next(detail)
            }),
            Err(CallError::Status { code, message }) => {
                Err(Failed::Final(EtcdError::Refused { code, message }))
            }
            Err(CallError::BadAnswer(detail)) if change => Err(indeterminate(detail)),
            Err(CallError::BadAnswer(detail)) => Err(Failed::Final(EtcdError::BadAnswer {
                detail: format!("{method}: {detail}"),
            })),
        }
    }

    /// A call of the JSON gateway (`path`, with `body`), on each member in turn until
    /// one answers; its answer.
    async fn call<Resp: DeserializeOwned>(
        &self,
        path: &str,
        body: Vec<u8>,
    ) -> Result<Resp, EtcdError> {
        let mut failures = Vec::new();
        for i in self.order() {
            let attempt = self.call_once(i, path, &body).await;
            if let Some(done) = self.settled(i, attempt, &mut failures) {
                return done;
            }
        }
        Err(self.unreachable(failures))
    }

    async fn call_once<Resp: DeserializeOwned>(
        &self,
        i: usize,
        path: &str,
        body: &[u8],
    ) -> Result<Resp, Failed> {
        let endpoint = &self.endpoints[i];
        let sent = self
            .http
            .post(format!("http://{endpoint}{path}"))
            .header("content-type", "application/json")
            .body(body.to_vec())
            .timeout(self.timeout)
            .send()
            .await;
        let response = sent.map_err(|e| Failed::Next(transport(&e)))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| Failed::Next(transport(&e)))?;
        if !status.is_success() {
            let error: ErrorBody = serde_json::from_slice(&bytes).unwrap_or_else(|_| ErrorBody {
                code: 0,
                message: format!("HTTP {status}: {}", String::from_utf8_lossy(&bytes)),
                error: String::new(),
            });
            if error.code == UNAVAILABLE || status.is_server_error() && error.code == 0 {
                return Err(Failed::Next(error.message));
            }
            return Err(Failed::Final(EtcdError::Refused {
                code: error.code,
                message: if error.message.is_empty() {
                    error.error
                } else {
                    error.message
                },
            }));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            Failed::Final(EtcdError::BadAnswer {
                detail: format!("{path}: {e}"),
            })
        })
    }
}

/// How one member failed a call.
enum Failed {
    /// Another member may answer: the reason, for the error if none does.
    Next(String),
    /// The call's answer.
    Final(EtcdError),
}

/// A transport error in a person's words (reqwest's own chain is long).
fn transport(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection refused or unreachable".into()
    } else {
        e.to_string()
    }
}

/// Keeps one watch stream open, reconnecting after the last delivered revision.
async fn watch_loop(
    shared: Arc<Shared>,
    mut create: WatchCreate,
    tx: std::sync::mpsc::Sender<WatchItem>,
) {
    let mut backoff = Duration::from_millis(50);
    let mut attempt = 0usize;
    loop {
        let endpoint = &shared.endpoints
            [(shared.preferred.load(Ordering::Relaxed) + attempt) % shared.endpoints.len()];
        let body = serde_json::to_vec(&WatchRequest {
            create_request: create.clone(),
        })
        .unwrap_or_default();
        let sent = shared
            .http
            .post(format!("http://{endpoint}/v3/watch"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await;
        if let Ok(mut response) = sent
            && response.status().is_success()
        {
            let mut buffer: Vec<u8> = Vec::new();
            'stream: while let Ok(Some(chunk)) = response.chunk().await {
                buffer.extend_from_slice(&chunk);
                while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    let Ok(line) = serde_json::from_slice::<WatchLine>(&line) else {
                        continue;
                    };
                    let Some(result) = line.result else {
                        continue;
                    };
                    backoff = Duration::from_millis(50);
                    if result.canceled && result.compact_revision > 0 {
                        let _ = tx.send(WatchItem::Compacted {
                            compact_revision: result.compact_revision,
                        });
                        return;
                    }
                    if result.canceled {
                        // Cancelled for another reason: the stream delivers nothing more.
                        break 'stream;
                    }
                    if result.created && create.start_revision == 0 {
                        // From now on: a reconnect resumes after what was current.
                        create.start_revision = result.header.revision + 1;
                    }
                    if result.events.is_empty() {
                        continue;
                    }
                    let events: Vec<Event> = result
                        .events
                        .into_iter()
                        .map(|e| match e.kind.as_deref() {
                            Some("DELETE") => Event::Delete {
                                revision: e.kv.mod_revision,
                                key: e.kv.key,
                            },
                            _ => Event::Put(e.kv),
                        })
                        .collect();
                    let last = events.last().map_or(0, Event::revision);
                    create.start_revision = create.start_revision.max(last + 1);
                    if tx.send(WatchItem::Events(events)).is_err() {
                        return;
                    }
                }
            }
        }
        // The stream ended or never started: try the next endpoint after a pause.
        attempt += 1;
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}
