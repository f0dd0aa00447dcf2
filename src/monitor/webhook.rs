//! The escalation webhook (specs/operations.md *Watch and alarms*): each alarm is POSTed as
//! `{"ts","level","category","message","task","agent","revision","key","project"}` to
//! `config.escalation_webhook`, from a thread of its own so the watcher never waits on
//! it. A failed delivery (connection refused, timeout, non-2xx) is retried with
//! exponential backoff; a full queue drops the newest alarm with a warning (the alarm is
//! still in `.liza/alerts.log`).

use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

use serde::Serialize;

use crate::ops::alarms::Alarm;

/// One alarm as the webhook receives it: `{"ts", "level", "category", "message", "task",
/// "agent", "revision", "key", "project"}` — the alarm's own fields between when and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AlarmPayload {
    pub ts: String,
    #[serde(flatten)]
    pub alarm: Alarm,
    pub project: String,
}

/// How deliveries are retried.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    /// Attempts per alarm (the first and the retries).
    pub attempts: u32,
    /// The first wait between attempts, doubled each time.
    pub backoff: Duration,
    /// Per request.
    pub timeout: Duration,
}

impl Default for Delivery {
    fn default() -> Self {
        Delivery {
            attempts: 5,
            backoff: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Alarms waiting for delivery at most; more are dropped (they stay in alerts.log).
const QUEUE: usize = 256;

/// The sender side; dropping it lets the delivery thread finish what is queued and end.
pub struct Webhook {
    queue: Option<SyncSender<AlarmPayload>>,
    thread: Option<std::thread::JoinHandle<Deliveries>>,
}

/// What the delivery thread did, by alarm key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deliveries {
    /// Accepted by the receiver (a 2xx answer).
    pub delivered: Vec<String>,
    /// Given up on after every attempt (the alarm stays in alerts.log).
    pub given_up: Vec<String>,
    /// POSTs made, retries included.
    pub attempts: u32,
}

impl Webhook {
    /// Starts the delivery thread for `url`.
    pub fn start(url: &str, delivery: Delivery) -> Result<Webhook, String> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "config.escalation_webhook is `{url}`: it must be an http:// or https:// URL"
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(delivery.timeout)
            .user_agent(concat!("liza/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("could not set up the webhook client: {e}"))?;
        let (queue, alarms) = sync_channel(QUEUE);
        let url = url.to_owned();
        let thread = std::thread::Builder::new()
            .name("liza-webhook".into())
            .spawn(move || deliver_all(&client, &url, delivery, alarms))
            .map_err(|e| format!("could not start the webhook thread: {e}"))?;
        Ok(Webhook {
            queue: Some(queue),
            thread: Some(thread),
        })
    }

    /// Queues `alarm` for delivery; never waits.
    pub fn send(&self, alarm: AlarmPayload) {
        let Some(queue) = &self.queue else { return };
        match queue.try_send(alarm) {
            Ok(()) => {}
            Err(TrySendError::Full(alarm)) => {
                tracing::warn!(key = %alarm.alarm.key, "webhook queue full; this alarm is only in alerts.log");
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Waits until every queued alarm was delivered or given up on; says which.
    pub fn finish(mut self) -> Deliveries {
        self.queue.take();
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }

    /// Like [`Webhook::finish`], but waits at most `limit`: a receiver that is down must
    /// not hold a watcher that is exiting (its alarms are in alerts.log). Returns whether
    /// every queued alarm was dealt with.
    pub fn finish_within(mut self, limit: Duration) -> bool {
        self.queue.take();
        let Some(t) = self.thread.take() else {
            return true;
        };
        let deadline = std::time::Instant::now() + limit;
        while !t.is_finished() {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = t.join();
        true
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        // Without `finish`, the thread ends on its own once the queue is drained.
        self.queue.take();
    }
}

fn deliver_all(
    client: &reqwest::Client,
    url: &str,
    delivery: Delivery,
    alarms: Receiver<AlarmPayload>,
) -> Deliveries {
    let mut done = Deliveries::default();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        tracing::warn!("could not start the webhook runtime; alarms stay in alerts.log");
        return done;
    };
    while let Ok(alarm) = alarms.recv() {
        let key = alarm.alarm.key.clone();
        if runtime.block_on(deliver(client, url, delivery, &alarm, &mut done.attempts)) {
            done.delivered.push(key);
        } else {
            done.given_up.push(key);
        }
    }
    done
}

/// POSTs one alarm, retrying with backoff; gives up after `delivery.attempts`.
async fn deliver(
    client: &reqwest::Client,
    url: &str,
    delivery: Delivery,
    alarm: &AlarmPayload,
    attempts: &mut u32,
) -> bool {
    let body = match serde_json::to_string(alarm) {
        Ok(b) => b,
        Err(_) => return false,
    };
    let mut wait = delivery.backoff;
    for attempt in 1..=delivery.attempts.max(1) {
        *attempts += 1;
        let sent = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => return true,
            Ok(r) => {
                tracing::warn!(status = r.status().as_u16(), attempt, key = %alarm.alarm.key, "webhook refused the alarm")
            }
            Err(e) => {
                tracing::warn!(error = %e, attempt, key = %alarm.alarm.key, "webhook unreachable")
            }
        }
        if attempt < delivery.attempts {
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2).min(Duration::from_secs(300));
        }
    }
    tracing::warn!(key = %alarm.alarm.key, "webhook delivery given up; the alarm is in alerts.log");
    false
}
