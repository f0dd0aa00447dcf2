//! Wake-ups: a (20 ms) debounced watch of `.liza/` (the directory, because the store replaces
//! state.yaml by rename) forwarded to the async loop. The poll interval is only the
//! fallback for filesystems without events.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::watch::DirWatch;

/// Files whose change may mean new work or a control change.
const WATCHED: &[&str] = &["state.yaml", "PAUSE", "ABORT", "CHECKPOINT"];

pub struct Wake {
    notify: Arc<Notify>,
}

impl Wake {
    /// Starts watching `liza_dir`; without file events, waits are plain polls.
    pub fn start(liza_dir: &Path) -> Wake {
        let notify = Arc::new(Notify::new());
        match DirWatch::new(liza_dir, WATCHED, Duration::from_millis(20)) {
            Ok(watch) => {
                let forward = notify.clone();
                std::thread::spawn(move || {
                    loop {
                        if watch.wait(Duration::from_secs(3600)) {
                            forward.notify_one();
                        }
                    }
                });
            }
            Err(e) => tracing::warn!(error = %e, "no file events; polling only"),
        }
        Wake { notify }
    }

    /// Waits for a change, at most `timeout`; `true` when one was seen.
    pub async fn wait(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.notify.notified())
            .await
            .is_ok()
    }
}
