//! Wake-ups: what tells a waiter (a supervisor, `liza watch`, the dashboard) that the
//! blackboard changed. On files, a debounced watch of `.liza/` (the directory, because
//! the store replaces state.yaml by rename); in etcd, a watch of the project's keys that
//! resumes after the last revision it saw, so a reconnect misses nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::watch::DirWatch;
use liza_etcd::{Client, Event, WatchItem, prefix_end};
use liza_etcd::{StoreAddress, Watch};
use liza_model::control::Control;

/// What a waiter wants to be woken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// The state (a transition, a hand edit).
    State,
    /// The control flags.
    Control,
    /// The log (entries that change no state as well).
    Log,
    /// The alarms raised (`.liza/alerts.log`; in etcd the project's `alarm/` keys).
    Alerts,
}

/// A feed of changes; see [`Changes::wait`].
pub struct Changes {
    source: Source,
    debounce: Duration,
}

enum Source {
    Files(DirWatch),
    Etcd(EtcdChanges),
    /// No events to be had: waits are plain polls.
    None,
}

struct EtcdChanges {
    client: Arc<Client>,
    /// The key prefixes of the topics watched.
    wanted: Vec<Vec<u8>>,
    prefix: Vec<u8>,
    watch: Watch,
}

impl Changes {
    /// Changes of `topics` in the files of `dir` (`.liza/`).
    pub fn files(dir: &std::path::Path, topics: &[Topic], debounce: Duration) -> Changes {
        let mut names = Vec::new();
        for topic in topics {
            match topic {
                Topic::State => names.push("state.yaml"),
                Topic::Log => names.push("log.yaml"),
                Topic::Control => names.extend(Control::ALL.map(Control::name)),
                Topic::Alerts => names.push("alerts.log"),
            }
        }
        // The directory watch applies the debounce itself.
        let source = match DirWatch::new(dir, &names, debounce) {
            Ok(watch) => Source::Files(watch),
            Err(e) => {
                tracing::warn!(error = %e, "no file events; polling only");
                Source::None
            }
        };
        Changes {
            source,
            debounce: Duration::ZERO,
        }
    }

    /// Changes of `topics` in etcd, from now on.
    pub(super) fn etcd(
        client: Arc<Client>,
        address: &StoreAddress,
        topics: &[Topic],
        debounce: Duration,
    ) -> Changes {
        let mut wanted = Vec::new();
        for topic in topics {
            match topic {
                Topic::State => {
                    wanted.push(address.key("head"));
                    wanted.push(address.key("task/"));
                }
                Topic::Log => wanted.push(address.key("log/")),
                Topic::Control => wanted.push(address.key("control/")),
                // Local: a watch of its own would be needed; they show at the next change.
                Topic::Alerts => wanted.push(address.key("alarm/")),
            }
        }
        let prefix = address.key("");
        let watch = client.watch(&prefix, &prefix_end(&prefix), 0);
        Changes {
            source: Source::Etcd(EtcdChanges {
                client,
                wanted,
                prefix,
                watch,
            }),
            debounce,
        }
    }

    /// Waits for a change for at most `timeout` (the polling fallback); `true` when one
    /// was seen. The rest of a burst is absorbed before returning.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        match &mut self.source {
            Source::Files(watch) => watch.wait(timeout),
            Source::None => {
                std::thread::sleep(timeout);
                false
            }
            Source::Etcd(etcd) => {
                let deadline = Instant::now() + timeout;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    if etcd.next(left) {
                        break;
                    }
                }
                if !self.debounce.is_zero() {
                    std::thread::sleep(self.debounce);
                }
                while etcd.next(Duration::ZERO) {}
                true
            }
        }
    }
}

impl EtcdChanges {
    /// Takes one item within `timeout`; `true` when it holds a wanted change.
    fn next(&mut self, timeout: Duration) -> bool {
        let started = Instant::now();
        match self.watch.recv_timeout(timeout) {
            Some(WatchItem::Events(events)) => events.iter().any(|e| {
                let key = match e {
                    Event::Put(kv) => &kv.key,
                    Event::Delete { key, .. } => key,
                };
                self.wanted.iter().any(|w| key.starts_with(w))
            }),
            Some(WatchItem::Compacted { .. }) => {
                // History this watch had not delivered is gone: start again from now,
                // and let the waiter read everything.
                self.watch = self
                    .client
                    .watch(&self.prefix, &prefix_end(&self.prefix), 0);
                true
            }
            None => {
                // A watch whose task ended answers at once: wait like a poll.
                std::thread::sleep(timeout.saturating_sub(started.elapsed()));
                false
            }
        }
    }
}
