//! Provider usage limits (supervisor.md *Running the agent*): what the supervisor does
//! when a run's output reports one (`backend::signals` recognises it, on any exit
//! status): the coder's dirty worktree saved as a WIP commit, an alarm, the task kept
//! claimed, no run of any kind until the announced reset (30 minutes when none is given,
//! with jitter) — shown by `liza status` from the heartbeats — and no `failed_by` entry.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::session::Session;
use crate::backend::signals::{self, UsageLimit};
use crate::blackboard::{Role, TaskId, Timestamp};
use crate::git::{Repo, worktree_dir};
use crate::ops::alarms::Level;

impl Session {
    /// The usage limit the last run's output reports, if any.
    pub(super) fn usage_limit(&self) -> Option<UsageLimit> {
        signals::usage_limit(self.backend.spec, &self.last_output, chrono::Utc::now())
    }

    /// The last run ended on a provider usage limit.
    pub(super) async fn hit_usage_limit(&mut self, task: Option<&TaskId>, limit: &UsageLimit) {
        if let Some(task) = task
            && self.role() == Role::Coder
        {
            let (root, dir) = (
                self.project.root.clone(),
                worktree_dir(&self.project.root, task),
            );
            let saved = self
                .blocking(move |_| {
                    Repo::open(&root).and_then(|r| r.commit_wip(&dir, "a provider usage limit"))
                })
                .await;
            if let Err(e) = saved {
                tracing::warn!(error = %e, "could not save the work in progress");
            }
        }
        let now = chrono::Utc::now();
        let base = limit.wait(now, std::time::Duration::ZERO);
        let seed =
            u64::from(std::process::id()) ^ self.generation.len() as u64 ^ now.timestamp() as u64;
        let wait = base + signals::jitter(base, seed);
        self.quota_until = Some(Instant::now() + wait);
        let until = Timestamp::now().plus_seconds(wait.as_secs() as i64);
        self.usage_limit_until.store(until.unix(), Ordering::SeqCst);
        self.heartbeat_now().await;
        let when = local_clock(until);
        let source = if limit.resets_at.is_some() {
            "the announced reset"
        } else {
            "30 minutes: no reset time was given"
        };
        self.console.info(&format!(
            "{} waiting for usage limit until {when} ({source}): {}",
            self.agent, limit.line
        ));
        self.alarm(
            Level::Error,
            "PROVIDER_QUOTA_EXHAUSTED",
            &format!(
                "{}: the provider reports a usage limit ({}); no runs until {when}",
                self.agent, limit.line
            ),
            &crate::monitor::rules::quota_key(
                self.agent.as_str(),
                self.last_run_end.unwrap_or_else(Timestamp::now),
            ),
        );
    }
}

/// `15:00` today, `Nov 26 15:00` another day, in the machine's time zone.
pub fn local_clock(at: Timestamp) -> String {
    use chrono::TimeZone;
    let Some(at) = chrono::Local.timestamp_opt(at.unix(), 0).single() else {
        return at.to_string();
    };
    if at.date_naive() == chrono::Local::now().date_naive() {
        at.format("%H:%M").to_string()
    } else {
        at.format("%b %d %H:%M").to_string()
    }
}
