//! Where a fired alarm goes besides `.liza/alerts.log`: stderr (or the supervisor's
//! console), `notify-send` when it is installed, and the escalation webhook when
//! `config.escalation_webhook` is set. Nothing here waits: notify-send is spawned and
//! reaped on a thread, the webhook has its own delivery thread and queue.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::webhook::{AlarmPayload, Delivery, Webhook};
use crate::ops::alarms::{Fired, Level};

/// How long an exiting watcher waits for the webhook's queue.
const FINISH_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Shows an alarm line to the person running the watcher.
pub type Echo = Box<dyn Fn(&str) + Send>;

pub struct Outlets {
    project: String,
    echo: Echo,
    notify_send: Option<PathBuf>,
    webhook: Option<(String, Webhook)>,
    delivery: Delivery,
}

impl Outlets {
    pub fn new(project_root: &Path, echo: Echo) -> Outlets {
        Outlets {
            project: project_root.display().to_string(),
            echo,
            notify_send: crate::backend::find_executable("notify-send"),
            webhook: None,
            delivery: Delivery::default(),
        }
    }

    /// Retry policy of the webhook (tests shorten the backoff).
    pub fn with_delivery(mut self, delivery: Delivery) -> Outlets {
        self.delivery = delivery;
        self
    }

    /// Follows `config.escalation_webhook`: a new URL restarts the delivery thread.
    pub fn set_webhook(&mut self, url: Option<&str>) {
        if self.webhook.as_ref().map(|(u, _)| u.as_str()) == url {
            return;
        }
        if let Some((_, old)) = self.webhook.take() {
            drop(old);
        }
        if let Some(url) = url {
            match Webhook::start(url, self.delivery) {
                Ok(hook) => self.webhook = Some((url.to_owned(), hook)),
                Err(e) => (self.echo)(&format!("liza watch: {e}")),
            }
        }
    }

    /// Delivers each alarm: its line to this watcher's person, and — when `claim` says
    /// this watcher is the one, of all that see it, to deliver it — to notify-send and
    /// the webhook.
    pub fn deliver(&self, fired: &[Fired], claim: impl Fn(&str) -> bool) {
        for f in fired {
            (self.echo)(&f.line);
            if self.notify_send.is_none() && self.webhook.is_none() || !claim(&f.alarm.key) {
                continue;
            }
            if let Some(program) = &self.notify_send {
                notify(program, f);
            }
            if let Some((_, hook)) = &self.webhook {
                hook.send(AlarmPayload {
                    ts: f.ts.to_string(),
                    alarm: f.alarm.clone(),
                    project: self.project.clone(),
                });
            }
        }
    }

    /// Gives queued webhook deliveries a few seconds at exit.
    pub fn finish(mut self) {
        if let Some((url, hook)) = self.webhook.take()
            && !hook.finish_within(FINISH_WAIT)
        {
            (self.echo)(&format!(
                "liza watch: {url} did not take every alarm before exiting; they are in .liza/alerts.log"
            ));
        }
    }
}

fn notify(program: &Path, fired: &Fired) {
    let urgency = match fired.alarm.level {
        Level::Error => "critical",
        Level::Warn => "normal",
    };
    let child = Command::new(program)
        .args(["-u", urgency, "-a", "liza"])
        .arg(format!("liza: {}", fired.alarm.category))
        .arg(&fired.alarm.message)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match child {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => tracing::debug!(error = %e, "notify-send failed"),
    }
}
