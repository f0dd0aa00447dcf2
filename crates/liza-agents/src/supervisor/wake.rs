//! Wake-ups: a (20 ms) debounced watch of `.liza/` (the directory, because the store replaces
//! state.yaml by rename) forwarded to the async loop. The poll interval is only the
//! fallback for filesystems without events.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::blackboard::Store;
use crate::blackboard::store::changes::Topic;

pub(super) struct Wake {
    notify: Arc<Notify>,
}

impl Wake {
    /// Starts watching the state and the control flags of `store`; without events,
    /// waits are plain polls.
    pub(super) fn start(store: &Store) -> Wake {
        let notify = Arc::new(Notify::new());
        let mut changes = store.changes(&[Topic::State, Topic::Control], Duration::from_millis(20));
        let forward = notify.clone();
        std::thread::spawn(move || {
            loop {
                if changes.wait(Duration::from_secs(3600)) {
                    forward.notify_one();
                }
            }
        });
        Wake { notify }
    }

    /// What wakes the loop from another thread (a background merge that ended).
    pub(super) fn notifier(&self) -> Arc<Notify> {
        self.notify.clone()
    }

    /// Waits for a change, at most `timeout`; `true` when one was seen.
    pub(super) async fn wait(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.notify.notified())
            .await
            .is_ok()
    }
}
