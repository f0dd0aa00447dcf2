//! Provider usage limits (supervisor.md *Running the agent*): recognising a quota or
//! rate-limit message in the tail of an agent's output, how long to sleep — until the
//! reset the message announces, else 30 minutes — and what the supervisor does: the
//! coder's dirty worktree saved as a WIP commit, an alarm, the task kept claimed, no run
//! of any kind until the reset (no restart storm), and no `failed_by` entry.

use std::time::Instant;

pub use crate::backend::signals::{is_usage_limit, sleep_for};

use super::session::Session;
use crate::blackboard::{Role, TaskId};
use crate::git::{Repo, worktree_dir};
use crate::ops::alarms::Level;

impl Session {
    /// The last run ended on a provider usage limit.
    pub(super) async fn hit_usage_limit(&mut self, task: Option<&TaskId>) {
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
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let sleep = sleep_for(&self.last_output, epoch);
        self.quota_until = Some(Instant::now() + sleep);
        self.alarm(
            Level::Error,
            "PROVIDER_QUOTA_EXHAUSTED",
            &format!(
                "{}: the provider reports a usage limit; no runs for {} min",
                self.agent,
                sleep.as_secs().div_ceil(60)
            ),
            &crate::monitor::rules::quota_key(
                self.agent.as_str(),
                self.last_run_end
                    .unwrap_or_else(crate::blackboard::Timestamp::now),
            ),
        );
    }
}
