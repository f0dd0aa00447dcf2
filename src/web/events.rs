//! Live pages: one thread follows the blackboard through `Store::changes` — the watch the
//! TUI dashboard uses — and bumps a counter every open page listens to over server-sent
//! events. An idle blackboard costs one sleeping thread and one sleeping task per page:
//! nothing polls per client.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::channel::Channel;
use hyper::body::{Bytes, Frame};
use tokio::sync::watch;

use crate::blackboard::store::changes::Topic;
use crate::ops::Project;

/// How long the watch gathers a burst of changes into one event.
const DEBOUNCE: Duration = Duration::from_millis(50);
/// How often, while pages are open, the agents' heartbeats are compared (they are not a
/// topic of the watch: a heartbeat changes no state, but what an agent runs and waits for
/// is in it).
const HEARTBEAT_LOOK: Duration = Duration::from_secs(2);
/// A comment sent on a quiet stream, so proxies keep it and a page that went is noticed
/// (a closed connection shows only when written to) and its slot freed.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(5);
/// A stream ends after this long; the browser reconnects at once (`retry`), so no
/// connection holds its slot for ever.
pub(crate) const STREAM_LIFETIME: Duration = Duration::from_secs(600);

/// The count of changes seen, for the streams to follow.
#[derive(Clone)]
pub(crate) struct Feed(watch::Receiver<u64>);

/// Starts the thread that follows `project`'s blackboard.
pub(crate) fn follow(project: Arc<Project>) -> std::io::Result<Feed> {
    let (sender, receiver) = watch::channel(0u64);
    std::thread::Builder::new()
        .name("liza-serve-watch".into())
        .spawn(move || {
            let mut changes = project.store.changes(
                &[Topic::State, Topic::Log, Topic::Control, Topic::Alerts],
                DEBOUNCE,
            );
            let mut heartbeats = fingerprint(&project);
            loop {
                let changed = changes.wait(HEARTBEAT_LOOK);
                if sender.is_closed() {
                    return;
                }
                // Heartbeats are read only while someone looks.
                let looked = (sender.receiver_count() > 1).then(|| fingerprint(&project));
                let beat = looked.is_some_and(|now| std::mem::replace(&mut heartbeats, now) != now);
                if changed || beat {
                    sender.send_modify(|n| *n += 1);
                }
            }
        })?;
    Ok(Feed(receiver))
}

/// What of the heartbeats a page shows, hashed: who waits for what, runs what, where.
fn fingerprint(project: &Project) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    for (agent, record) in project.store.live_records().unwrap_or_default().0 {
        let seen = (
            agent.as_str(),
            &record.generation,
            &record.waiting,
            &record.cli,
            &record.sandbox,
            record.pgid,
            record.usage_limit_until.map(|t| t.to_string()),
        );
        hasher.update(format!("{seen:?}\n").as_bytes());
    }
    hasher.finalize()
}

impl Feed {
    /// The changes seen so far: a page carries it, and refreshes when its stream's first
    /// event says more were seen since it was rendered.
    pub(crate) fn seen(&self) -> u64 {
        *self.0.borrow()
    }

    /// The body of one `/events` stream: `event: changed` after each change, a comment
    /// every [`KEEP_ALIVE`], ended after [`STREAM_LIFETIME`] or when the page goes.
    pub(crate) fn stream(&self, permit: tokio::sync::OwnedSemaphorePermit) -> Channel<Bytes> {
        let (mut sender, body) = Channel::new(4);
        let mut changes = self.0.clone();
        tokio::spawn(async move {
            // The stream's slot is free again when it ends.
            let _permit = permit;
            let first = *changes.borrow_and_update();
            let hello = format!("retry: 1000\nevent: hello\ndata: {first}\n\n");
            if sender.send_data(Bytes::from(hello)).await.is_err() {
                return;
            }
            let end = tokio::time::sleep(STREAM_LIFETIME);
            tokio::pin!(end);
            loop {
                let message = tokio::select! {
                    seen = changes.changed() => match seen {
                        Ok(()) => format!("event: changed\ndata: {}\n\n", *changes.borrow_and_update()),
                        Err(_) => return,
                    },
                    () = tokio::time::sleep(KEEP_ALIVE) => ": still here\n\n".to_owned(),
                    () = &mut end => return,
                };
                if sender
                    .send(Frame::data(Bytes::from(message)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
        body
    }
}
