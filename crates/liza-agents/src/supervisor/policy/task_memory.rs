//! What a supervisor remembers about one task (or the planner's turns) across agent runs:
//! the counters of specs/lifecycle.md *Limits and counters* and the restart backoffs of the
//! exit-code protocol (specs/supervisor.md *Exit codes*). Kept in memory only: a restarted
//! supervisor starts afresh, which is what a restart is for.

use std::time::Duration;

use crate::supervisor::clock::Moment;

/// Exit 42: restart after 2 s, doubling to 60 s while no progress is made.
const GRACEFUL_FIRST: Duration = Duration::from_secs(2);
const GRACEFUL_MAX: Duration = Duration::from_secs(60);
/// A crash: restart after 5 s, doubling to 5 min.
const CRASH_FIRST: Duration = Duration::from_secs(5);
const CRASH_MAX: Duration = Duration::from_secs(300);
/// Crashes this close together form a loop.
pub const CRASH_WINDOW: Duration = Duration::from_secs(300);
/// ... when there are this many of them.
pub const CRASH_LOOP: usize = 3;

/// What a supervisor remembers of one task, or of the planner's turns.
#[derive(Debug, Default, Clone)]
pub struct TaskMemory {
    /// Exit-0 runs in a row that left the task CLAIMED and the worktree unchanged.
    pub no_progress: u32,
    /// Exit-42 runs in a row without progress.
    pub exit42: u32,
    /// When the recent crashes happened (only those within [`CRASH_WINDOW`] matter).
    pub crashes: Vec<Moment>,
    /// Review runs that ended without a verdict.
    pub failed_reviews: u32,
    /// The current restart delay, doubled by each further exit 42 or crash.
    pub backoff: Option<Duration>,
    /// No run before this instant.
    pub resume_at: Option<Moment>,
    /// What the last run left undone, said in the next prompt.
    pub left_undone: Option<String>,
}

impl TaskMemory {
    /// Exit 0: the backoff and the exit-42 count start over; an exit-0 run that changed
    /// nothing counts towards the no-progress limit. Returns the no-progress count.
    pub fn finished(&mut self, progressed: bool) -> u32 {
        self.exit42 = 0;
        self.backoff = None;
        self.resume_at = None;
        if progressed {
            self.no_progress = 0;
        } else {
            self.no_progress += 1;
        }
        self.no_progress
    }

    /// Exit 42 at `now`: the next run waits 2 s, doubling to 60 s while no progress is
    /// made (progress resets it). Returns the exit-42 runs without progress in a row.
    pub fn graceful_exit(&mut self, progressed: bool, now: Moment) -> u32 {
        if progressed {
            self.exit42 = 0;
            self.backoff = None;
        } else {
            self.exit42 += 1;
        }
        self.back_off(GRACEFUL_FIRST, GRACEFUL_MAX, now);
        self.exit42
    }

    /// A crash at `now`: the next run waits 5 s, doubling to 5 min. Returns the crashes
    /// within the last [`CRASH_WINDOW`] (a loop at [`CRASH_LOOP`]).
    pub fn crashed(&mut self, now: Moment) -> usize {
        self.crashes.retain(|t| now.since(*t) < CRASH_WINDOW);
        self.crashes.push(now);
        self.back_off(CRASH_FIRST, CRASH_MAX, now);
        self.crashes.len()
    }

    /// Whether a run may start at `now`.
    pub fn may_run(&self, now: Moment) -> bool {
        self.resume_at.is_none_or(|at| at <= now)
    }

    fn back_off(&mut self, first: Duration, max: Duration, now: Moment) {
        let delay = self.backoff.map_or(first, |d| (d * 2).clamp(first, max));
        self.backoff = Some(delay);
        self.resume_at = Some(now + delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graceful_exits_back_off_from_2_s_doubling_to_60_s_and_progress_resets_them() {
        let now = Moment::ZERO + Duration::from_secs(1000);
        let mut m = TaskMemory::default();
        let delays: Vec<u64> = (0..7)
            .map(|_| {
                m.graceful_exit(false, now);
                m.backoff.unwrap().as_secs()
            })
            .collect();
        assert_eq!(delays, [2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(m.exit42, 7);
        assert_eq!(m.graceful_exit(true, now), 0);
        assert_eq!(m.backoff, Some(GRACEFUL_FIRST));
        assert_eq!(m.resume_at, Some(now + GRACEFUL_FIRST));
        assert!(!m.may_run(now));
        assert!(m.may_run(now + GRACEFUL_FIRST));
    }

    #[test]
    fn crashes_back_off_from_5_s_doubling_to_5_min_and_count_within_5_minutes() {
        let start = Moment::ZERO + Duration::from_secs(1000);
        let mut m = TaskMemory::default();
        let delays: Vec<u64> = (0..8)
            .map(|_| {
                m.crashed(start);
                m.backoff.unwrap().as_secs()
            })
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300]);
        let mut m = TaskMemory::default();
        assert_eq!(m.crashed(start), 1);
        assert_eq!(m.crashed(start + Duration::from_secs(200)), 2);
        // The first crash is more than 5 minutes before this one: no loop yet.
        assert_eq!(m.crashed(start + Duration::from_secs(301)), 2);
        assert_eq!(m.crashed(start + Duration::from_secs(302)), CRASH_LOOP);
    }

    #[test]
    fn a_finished_run_counts_no_progress_and_clears_the_backoff() {
        let now = Moment::ZERO + Duration::from_secs(1000);
        let mut m = TaskMemory::default();
        m.crashed(now);
        assert_eq!(m.finished(false), 1);
        assert_eq!(m.finished(false), 2);
        assert!(m.may_run(now));
        assert_eq!(m.backoff, None);
        assert_eq!(m.finished(true), 0);
    }
}
