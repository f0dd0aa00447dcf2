//! What log.yaml says happened, tallied for the metrics and the runtime alarm rules: every
//! transaction's action and lock timings (`lock_wait_ms`, `lock_hold_ms`), supervisors'
//! wake-ups (`woke`, `wake_latency_ms`) and agent runs (`agent_run_ended`, with role and
//! exit class). Read incrementally: a long-running watcher only parses what was appended
//! since its last look; a torn final line is left for the next look.

use std::collections::BTreeMap;

use super::log::{LogEntry, parse_items};
use super::store::Store;
use super::store::log_feed::LogFeed;
use liza_model::event::{EventKind, RunEnded};
use liza_model::timestamp::Timestamp;
use liza_yaml::node::{Node, Value};

/// The log action a supervisor appends when an agent run ends.
pub const RUN_ENDED: EventKind = EventKind::AgentRunEnded;
/// The log action a supervisor appends when a wake-up led it to act.
pub const WOKE: EventKind = EventKind::Woke;

/// Upper bounds (ms) of the latency histograms' buckets; `+Inf` is implied.
pub const BUCKETS_MS: &[f64] = &[
    0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0,
];

/// A latency histogram in milliseconds (cumulative counts per bucket at render time).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// Observations per bucket of [`BUCKETS_MS`], plus one for `+Inf`.
    pub counts: Vec<u64>,
    /// The sum of the observations.
    pub sum: f64,
    /// How many observations.
    pub count: u64,
}

impl Histogram {
    /// Counts one observation of `ms`.
    pub fn observe(&mut self, ms: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS_MS.len() + 1];
        }
        let slot = BUCKETS_MS
            .iter()
            .position(|b| ms <= *b)
            .unwrap_or(BUCKETS_MS.len());
        self.counts[slot] += 1;
        self.sum += ms;
        self.count += 1;
    }

    /// `(upper bound, cumulative count)` per bucket, `+Inf` last as `f64::INFINITY`.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        BUCKETS_MS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .enumerate()
            .map(|(i, bound)| {
                total += self.counts.get(i).copied().unwrap_or(0);
                (bound, total)
            })
            .collect()
    }
}

/// How many clock skews an [`Activity`] keeps.
pub const CLOCK_SKEWS_KEPT: usize = 64;

/// An entry whose writer's clock was behind the log's last entry (specs/blackboard.md
/// *Timestamps*): stamped at that last entry's time instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockSkew {
    /// The entry's timestamp: the time it was stamped at.
    pub ts: Timestamp,
    /// Who wrote it (empty when the entry does not say).
    pub agent: String,
    /// Its action.
    pub action: String,
    /// How far its writer's clock was behind, in seconds (the entry's `clock_behind_s`).
    pub behind_s: i64,
}

/// The tally of log.yaml so far.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    /// Committed transactions by their log action.
    pub transitions: BTreeMap<String, u64>,
    /// How long transactions waited for the state lock (one observation per revision).
    pub lock_wait: Histogram,
    /// How long transactions held the state lock (one observation per revision).
    pub lock_hold: Histogram,
    /// How long supervisors took to wake after a change they then acted on (`woke`
    /// entries' `wake_latency_ms`).
    pub wake_latency: Histogram,
    /// Agent runs by `(role, exit class)`.
    pub runs: BTreeMap<(String, String), u64>,
    /// Every run end, oldest first (crash loops, usage-limit storms).
    pub run_ends: Vec<RunEnded>,
    /// Committed `merged` entries.
    pub merges: u64,
    /// Committed `integration_failed` entries.
    pub integration_failures: u64,
    /// Entries whose writer's clock was behind the log's (`clock_behind_s`), the latest
    /// [`CLOCK_SKEWS_KEPT`], oldest first.
    pub clock_skews: Vec<ClockSkew>,
    /// Entries that could not be read.
    pub unreadable: u64,
    last_timed_revision: Option<i64>,
}

impl Activity {
    /// Takes `entry` into the tally.
    pub fn add(&mut self, entry: &LogEntry) {
        if entry.revision.is_some() {
            *self.transitions.entry(entry.action.clone()).or_insert(0) += 1;
            // A transaction with several events logs its timings on each entry: one
            // observation per revision.
            if entry.revision != self.last_timed_revision {
                if let Some(ms) = entry.lock_wait_ms {
                    self.lock_wait.observe(ms.as_f64());
                }
                if let Some(ms) = entry.lock_hold_ms {
                    self.lock_hold.observe(ms.as_f64());
                }
                if entry.lock_wait_ms.is_some() || entry.lock_hold_ms.is_some() {
                    self.last_timed_revision = entry.revision;
                }
            }
            match entry.kind() {
                Some(EventKind::Merged) => self.merges += 1,
                Some(EventKind::IntegrationFailed) => self.integration_failures += 1,
                _ => {}
            }
        }
        // Any entry may carry a skew, and still counts for what it is.
        if let Some(behind) = number(entry.extra.get("clock_behind_s")) {
            if self.clock_skews.len() == CLOCK_SKEWS_KEPT {
                self.clock_skews.remove(0);
            }
            self.clock_skews.push(ClockSkew {
                ts: entry.timestamp.unwrap_or(Timestamp::from_unix(0)),
                agent: entry.agent.clone().unwrap_or_default(),
                action: entry.action.clone(),
                behind_s: behind as i64,
            });
        }
        match entry.kind() {
            Some(WOKE) => {
                if let Some(ms) = number(entry.extra.get("wake_latency_ms")) {
                    self.wake_latency.observe(ms);
                }
            }
            Some(RUN_ENDED) => {
                let text = |key: &str| entry.extra.get(key).and_then(Node::as_str);
                let end = RunEnded {
                    ts: entry.timestamp.unwrap_or(Timestamp::from_unix(0)),
                    agent: entry.agent.clone().unwrap_or_default(),
                    role: text("role").unwrap_or("unknown").to_owned(),
                    task: entry.task.clone(),
                    exit_class: text("exit_class").unwrap_or("unknown").to_owned(),
                    revision: number(entry.extra.get("seen_revision")).map(|r| r as u64),
                };
                *self
                    .runs
                    .entry((end.role.clone(), end.exit_class.clone()))
                    .or_insert(0) += 1;
                self.run_ends.push(end);
            }
            _ => {}
        }
    }
}

fn number(node: Option<&Node>) -> Option<f64> {
    match node.map(|n| &n.value) {
        Some(Value::Int(i)) => Some(*i as f64),
        Some(Value::Float(f)) => Some(*f),
        Some(Value::Str(s)) => s.parse().ok(),
        _ => None,
    }
}

/// Reads the log incrementally into an [`Activity`].
pub struct ActivityReader {
    /// The entries written after those tallied (`None`: the log could not be read;
    /// the next refresh tries again).
    feed: Option<LogFeed>,
    /// The tally so far.
    pub activity: Activity,
}

impl ActivityReader {
    /// The log of `store` as it stands, tallied; [`Self::refresh`] takes in what follows.
    pub fn new(store: &Store) -> ActivityReader {
        let mut reader = ActivityReader {
            feed: None,
            activity: Activity::default(),
        };
        reader.start(store);
        reader
    }

    fn start(&mut self, store: &Store) {
        match store.follow_log() {
            Ok((text, feed)) => {
                self.activity = tally(&text);
                self.feed = Some(feed);
            }
            Err(err) => tracing::warn!(%err, "cannot read the log; its numbers wait"),
        }
    }

    /// The whole log, read once.
    pub fn read_all(store: &Store) -> Activity {
        tally(&store.log_text().unwrap_or_default())
    }

    /// Takes in what was written since the last call.
    pub fn refresh(&mut self, store: &Store) {
        match &mut self.feed {
            Some(feed) => {
                for entry in feed.next(std::time::Duration::ZERO) {
                    self.activity.add(&entry);
                }
            }
            None => self.start(store),
        }
    }
}

/// The activity of a whole log text.
fn tally(text: &[u8]) -> Activity {
    let mut activity = Activity::default();
    let read = parse_items(text, 1);
    for entry in &read.entries {
        activity.add(entry);
    }
    activity.unreadable += read.unreadable.len() as u64;
    activity
}
