//! Why a supervisor stops between decisions: a signal (SIGINT, SIGTERM, SIGHUP), or its
//! registration superseded (a write or a heartbeat refused for its generation). Either
//! wakes every wait, so a running agent is stopped and the loop ends at once.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// Shared by the runner, the signal task and the heartbeat thread.
#[derive(Clone, Default)]
pub(super) struct Stop {
    /// The signal received (0: none).
    signal: Arc<AtomicI32>,
    /// Why the registration was superseded, once it was (the first reason).
    superseded: Arc<Mutex<Option<String>>>,
    /// Wakes whoever waits.
    notify: Arc<Notify>,
}

impl Stop {
    /// The signal received, if one was (2, 15, 1).
    pub(super) fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig),
        }
    }

    /// Why this supervisor was superseded, once it was.
    pub(super) fn superseded_by(&self) -> Option<String> {
        self.superseded.lock().ok().and_then(|s| s.clone())
    }

    /// A signal arrived.
    pub(super) fn signalled(&self, signal: i32) {
        self.signal.store(signal, Ordering::SeqCst);
        self.wake();
    }

    /// The registration was superseded (the first reason is kept).
    pub(super) fn supersede(&self, why: String) {
        if let Ok(mut slot) = self.superseded.lock()
            && slot.is_none()
        {
            tracing::warn!(reason = %why, "this supervisor was superseded; stopping");
            *slot = Some(why);
        }
        self.wake();
    }

    /// Resolves when a stop was asked for (at once if one was asked before).
    pub(super) async fn asked(&self) {
        self.notify.notified().await;
    }

    fn wake(&self) {
        self.notify.notify_waiters();
        self.notify.notify_one();
    }
}
