//! Following the log (`liza log --follow`): the entries written after a read of it, as
//! they come — appended to log.yaml on files, new `log/` keys in etcd.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::log::{LogEntry, parse_items};
use crate::watch::DirWatch;
use liza_etcd::{Client, Event, KeyValue, Watch, WatchItem, prefix_end};

/// The entries written after a read of the log.
pub struct LogFeed {
    source: Source,
}

enum Source {
    File {
        path: PathBuf,
        /// The end of the last complete entry read.
        offset: u64,
        watch: Option<DirWatch>,
    },
    Etcd {
        client: Arc<Client>,
        prefix: Vec<u8>,
        watch: Watch,
        /// The last revision delivered.
        seen: i64,
    },
}

impl LogFeed {
    /// log.yaml at `path` after its first `offset` bytes.
    pub(super) fn file(path: PathBuf, offset: u64) -> LogFeed {
        let dir = path.parent().map(PathBuf::from).unwrap_or_default();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("log.yaml")
            .to_owned();
        let watch = DirWatch::new(&dir, &[&name], Duration::from_millis(50)).ok();
        LogFeed {
            source: Source::File {
                path,
                offset,
                watch,
            },
        }
    }

    /// The `log/` keys under `prefix` written after etcd revision `revision`.
    pub(super) fn etcd(client: Arc<Client>, prefix: Vec<u8>, revision: i64) -> LogFeed {
        let watch = client.watch(&prefix, &prefix_end(&prefix), revision + 1);
        LogFeed {
            source: Source::Etcd {
                client,
                prefix,
                watch,
                seen: revision,
            },
        }
    }

    /// The entries written since the last call, waiting at most `timeout` for some.
    pub fn next(&mut self, timeout: Duration) -> Vec<LogEntry> {
        match &mut self.source {
            Source::File {
                path,
                offset,
                watch,
            } => {
                match watch {
                    Some(w) => {
                        w.wait(timeout);
                    }
                    None => std::thread::sleep(timeout),
                }
                let Ok(mut file) = std::fs::File::open(&*path) else {
                    return Vec::new();
                };
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                if len < *offset {
                    // A torn final entry was cut off by the next append.
                    *offset = len;
                }
                if len == *offset || file.seek(SeekFrom::Start(*offset)).is_err() {
                    return Vec::new();
                }
                let mut chunk = Vec::new();
                if file.read_to_end(&mut chunk).is_err() {
                    return Vec::new();
                }
                let complete = chunk.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                *offset += complete as u64;
                parse_items(&chunk[..complete], 1).entries
            }
            Source::Etcd {
                client,
                prefix,
                watch,
                seen,
            } => {
                let started = Instant::now();
                match watch.recv_timeout(timeout) {
                    Some(WatchItem::Events(events)) => {
                        let mut created = Vec::new();
                        for event in events {
                            *seen = (*seen).max(event.revision());
                            if let Event::Put(kv) = event
                                && kv.create_revision == kv.mod_revision
                            {
                                created.push(kv);
                            }
                        }
                        parse_items(&log_text(created), 1).entries
                    }
                    Some(WatchItem::Compacted { .. }) => {
                        // Entries between the last one shown and the compaction point
                        // are still keys (log keys are never deleted): read them.
                        let mut entries = Vec::new();
                        if let Ok((kvs, revision)) = client.range(prefix, &prefix_end(prefix), 0) {
                            let created = kvs
                                .into_iter()
                                .filter(|kv| kv.create_revision > *seen)
                                .collect();
                            entries = parse_items(&log_text(created), 1).entries;
                            *seen = revision;
                        }
                        *watch = client.watch(prefix, &prefix_end(prefix), *seen + 1);
                        entries
                    }
                    None => {
                        std::thread::sleep(timeout.saturating_sub(started.elapsed()));
                        Vec::new()
                    }
                }
            }
        }
    }
}

/// The log text of `kvs` (log keys in order): each value a revision's entries as liza
/// writes them, a YAML list item per line. A value that is not (another tool wrote it)
/// is left out, named in a warning, so it costs only itself.
pub(super) fn log_text(kvs: Vec<KeyValue>) -> Vec<u8> {
    let mut text = Vec::new();
    for kv in kvs {
        let entries = kv.value.strip_suffix(b"\n").unwrap_or(&kv.value);
        if entries.is_empty() || !entries.split(|b| *b == b'\n').all(|l| l.starts_with(b"- ")) {
            tracing::warn!(
                key = %String::from_utf8_lossy(&kv.key),
                "a log key does not hold a log entry as liza writes it; skipped"
            );
            continue;
        }
        text.extend_from_slice(&kv.value);
        if !kv.value.ends_with(b"\n") {
            text.push(b'\n');
        }
    }
    text
}
