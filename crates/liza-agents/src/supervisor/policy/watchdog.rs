//! The watchdog (specs/supervisor.md *Running the agent*): when a running agent is stopped,
//! and how a run that ended is counted. The runner looks — at the process's output, the
//! worktree, the blackboard and the control files — and reports what it saw with the
//! time; [`RunWatch`] answers whether to stop the agent and why, [`ended`] what the end
//! was, all told (a CLI that ended saying it had no key, a provider's usage limit, a
//! strict run report that did not hold). No I/O and no clock: the tests move the time.

use std::time::Duration;

use super::RunEnd;
use super::run_report::ReportProblem;
use crate::backend::signals::UsageLimit;
use crate::blackboard::Role;
use crate::blackboard::model::Config;
use crate::supervisor::clock::Moment;

/// How long a CLI may keep reporting a usage limit, with no other progress, before it is
/// stopped: retrying against it gains nothing.
pub const LIMIT_PATIENCE: Duration = Duration::from_secs(120);

/// A run's limits, from the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// No progress for this long stops the run (`agent_progress_timeout`, 30 min).
    pub progress: Duration,
    /// A run longer than this is stopped (`execution_timeout` of the role).
    pub execution: Duration,
}

impl Limits {
    /// The limits of a `role` run under `config`: 30 min without progress, and 2 h for a
    /// coder, 30 min for a reviewer, 1 h for the planner, unless configured.
    pub fn of(config: &Config, role: Role) -> Limits {
        let progress = config
            .agent_progress_timeout
            .filter(|t| *t > 0)
            .unwrap_or(1800);
        let execution = config.execution_timeout.as_ref();
        let execution = match role {
            Role::Coder => execution.and_then(|e| e.coder).unwrap_or(7200),
            Role::CodeReviewer => execution.and_then(|e| e.code_reviewer).unwrap_or(1800),
            Role::Planner => execution.and_then(|e| e.planner).unwrap_or(3600),
        };
        Limits {
            progress: Duration::from_secs(progress.unsigned_abs()),
            execution: Duration::from_secs(execution.max(1).unsigned_abs()),
        }
    }

    /// How often the runner looks at the run: often enough to keep to the shorter limit,
    /// at most every 5 s, at least every 200 ms.
    pub fn look_every(&self) -> Duration {
        self.progress
            .min(self.execution)
            .min(Duration::from_secs(5))
            .max(Duration::from_millis(200))
    }
}

/// What the runner saw of a running agent at one look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// The output's last lines, as the agent CLI's signals read them (every half second:
    /// a CLI waiting for a login is stopped at once, nobody will log in).
    Output {
        /// A prompt for a login.
        login_wait: Option<String>,
        /// A provider's usage limit.
        usage_limit: Option<UsageLimit>,
    },
    /// The periodic look.
    Look {
        /// `.liza/ABORT` is raised.
        abort: bool,
        /// The worktree, the blackboard or a sandboxed coder's private branch changed
        /// since the last look.
        changed: bool,
        /// When the agent last wrote output.
        last_output: Option<Moment>,
    },
}

/// One run as the watchdog follows it.
#[derive(Debug, Clone)]
pub struct RunWatch {
    limits: Limits,
    started: Moment,
    progress_at: Moment,
    /// Since when every look at the output has found a usage limit.
    limited_since: Option<Moment>,
    changed_anything: bool,
}

impl RunWatch {
    /// A run started `now`.
    pub fn new(limits: Limits, now: Moment) -> RunWatch {
        RunWatch {
            limits,
            started: now,
            progress_at: now,
            limited_since: None,
            changed_anything: false,
        }
    }

    /// What the runner saw `now`; `Some` when the agent is to be stopped, with how its
    /// run ends.
    pub fn saw(&mut self, seen: Seen, now: Moment) -> Option<RunEnd> {
        match seen {
            Seen::Output {
                login_wait,
                usage_limit,
            } => {
                if let Some(line) = login_wait {
                    return Some(RunEnd::AuthRequired(line));
                }
                let Some(limit) = usage_limit else {
                    self.limited_since = None;
                    return None;
                };
                let since = *self.limited_since.get_or_insert(now);
                (now.since(since) > LIMIT_PATIENCE && self.progress_at < since)
                    .then_some(RunEnd::UsageLimited(limit))
            }
            Seen::Look {
                abort,
                changed,
                last_output,
            } => {
                if abort {
                    return Some(RunEnd::Aborted);
                }
                if changed {
                    self.changed_anything = true;
                    self.progress_at = now;
                }
                if let Some(out) = last_output {
                    self.progress_at = self.progress_at.max(out);
                }
                if now.since(self.progress_at) > self.limits.progress {
                    return Some(RunEnd::Stalled(self.limits.progress));
                }
                (now.since(self.started) > self.limits.execution)
                    .then_some(RunEnd::TimedOut(self.limits.execution))
            }
        }
    }

    /// Whether any look saw the run change something.
    pub fn changed_anything(&self) -> bool {
        self.changed_anything
    }
}

/// What the runner knows once the agent's process has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How the process ended, or why the watchdog stopped it.
    pub end: RunEnd,
    /// The run changed nothing: no look saw a change, and the worktree, the blackboard and
    /// the private branch are as before it.
    pub changed_nothing: bool,
    /// A line of the output's end saying the CLI has no usable key.
    pub auth_failure: Option<String>,
    /// A usage limit the output's end reports.
    pub usage_limit: Option<UsageLimit>,
}

/// How the run ended, all told. A run that ends saying it has no usable key failed for
/// want of one — unless it exited 0 having changed something (then it only talked about
/// keys; aider exits 0 when it has none, having done nothing). A usage limit is the
/// provider's, never the agent's failure: on any exit status, and when the watchdog
/// stopped a run that was waiting on one.
pub fn ended(finished: Finished) -> RunEnd {
    let Finished {
        end,
        changed_nothing,
        auth_failure,
        usage_limit,
    } = finished;
    if let RunEnd::Exited(code) = end
        && (code != Some(0) || changed_nothing)
        && let Some(line) = auth_failure
    {
        return RunEnd::AuthRequired(line);
    }
    if matches!(end, RunEnd::Exited(_) | RunEnd::Stalled(_))
        && let Some(limit) = usage_limit
    {
        return RunEnd::UsageLimited(limit);
    }
    end
}

/// A run that exited 0 but whose run report was refused (`config.builtin.validation_mode:
/// strict`, `policy::run_report::read`) failed: it counts as a crash.
pub fn with_report(end: RunEnd, refused: Option<&ReportProblem>) -> RunEnd {
    match (end, refused) {
        (RunEnd::Exited(Some(0)), Some(problem)) => RunEnd::Failed(problem.to_string()),
        (end, _) => end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn at(secs: u64) -> Moment {
        Moment::ZERO + S(secs)
    }

    fn look(changed: bool) -> Seen {
        Seen::Look {
            abort: false,
            changed,
            last_output: None,
        }
    }

    fn limits() -> Limits {
        Limits {
            progress: S(60),
            execution: S(600),
        }
    }

    #[test]
    fn a_run_without_progress_is_stopped_after_the_progress_limit_and_any_run_at_the_execution_limit()
     {
        let mut watch = RunWatch::new(limits(), at(0));
        assert_eq!(watch.saw(look(false), at(60)), None);
        assert_eq!(watch.saw(look(false), at(61)), Some(RunEnd::Stalled(S(60))));

        // Progress — a change, or output — moves the deadline; the execution limit does not.
        let mut watch = RunWatch::new(limits(), at(0));
        for t in (50..=600).step_by(50) {
            assert_eq!(watch.saw(look(true), at(t)), None, "at {t}");
        }
        let output = Seen::Look {
            abort: false,
            changed: false,
            last_output: Some(at(600)),
        };
        assert_eq!(watch.saw(output, at(601)), Some(RunEnd::TimedOut(S(600))));
        assert!(watch.changed_anything());
    }

    #[test]
    fn abort_stops_a_run_at_the_next_look() {
        let mut watch = RunWatch::new(limits(), at(0));
        let abort = Seen::Look {
            abort: true,
            changed: true,
            last_output: None,
        };
        assert_eq!(watch.saw(abort, at(1)), Some(RunEnd::Aborted));
    }

    #[test]
    fn a_cli_waiting_for_a_login_is_stopped_at_once() {
        let mut watch = RunWatch::new(limits(), at(0));
        let seen = Seen::Output {
            login_wait: Some("Please log in".into()),
            usage_limit: None,
        };
        assert_eq!(
            watch.saw(seen, at(1)),
            Some(RunEnd::AuthRequired("Please log in".into()))
        );
    }

    #[test]
    fn a_cli_retrying_against_a_usage_limit_is_stopped_after_the_patience_without_progress() {
        let limit = UsageLimit {
            resets_at: None,
            line: "rate limit".into(),
        };
        let limited = || Seen::Output {
            login_wait: None,
            usage_limit: Some(limit.clone()),
        };
        let mut watch = RunWatch::new(limits(), at(0));
        assert_eq!(watch.saw(limited(), at(10)), None);
        assert_eq!(watch.saw(limited(), at(130)), None);
        assert_eq!(
            watch.saw(limited(), at(131)),
            Some(RunEnd::UsageLimited(limit.clone()))
        );

        // The limit gone from the output starts the patience over.
        let mut watch = RunWatch::new(limits(), at(0));
        watch.saw(limited(), at(10));
        let clear = Seen::Output {
            login_wait: None,
            usage_limit: None,
        };
        watch.saw(clear, at(100));
        assert_eq!(watch.saw(limited(), at(131)), None);
        assert_eq!(
            watch.saw(limited(), at(252)),
            Some(RunEnd::UsageLimited(limit.clone()))
        );

        // Progress since the limit was first seen: the CLI is working, not only retrying.
        let mut watch = RunWatch::new(limits(), at(0));
        watch.saw(limited(), at(10));
        watch.saw(look(true), at(20));
        assert_eq!(watch.saw(limited(), at(200)), None);
    }

    #[test]
    fn the_end_of_a_run_is_told_by_its_output_and_its_report() {
        let limit = UsageLimit {
            resets_at: None,
            line: "quota".into(),
        };
        let finished = |end, changed_nothing, auth: bool, limited: bool| Finished {
            end,
            changed_nothing,
            auth_failure: auth.then(|| "no API key".to_owned()),
            usage_limit: limited.then(|| limit.clone()),
        };
        let auth = RunEnd::AuthRequired("no API key".into());
        // A key missing: on a failure, or on an exit 0 that did nothing.
        assert_eq!(
            ended(finished(RunEnd::Exited(Some(1)), false, true, false)),
            auth
        );
        assert_eq!(
            ended(finished(RunEnd::Exited(Some(0)), true, true, false)),
            auth
        );
        // An exit 0 that changed something only talked about keys.
        assert_eq!(
            ended(finished(RunEnd::Exited(Some(0)), false, true, false)),
            RunEnd::Exited(Some(0))
        );
        // A usage limit on any exit, and on a stalled run; never on a timeout.
        for end in [
            RunEnd::Exited(Some(0)),
            RunEnd::Exited(None),
            RunEnd::Stalled(S(60)),
        ] {
            assert_eq!(
                ended(finished(end, false, false, true)),
                RunEnd::UsageLimited(limit.clone())
            );
        }
        assert_eq!(
            ended(finished(RunEnd::TimedOut(S(600)), false, false, true)),
            RunEnd::TimedOut(S(600))
        );
        // A refused report fails an exit 0, and only that.
        let problem = ReportProblem::Missing;
        assert_eq!(
            with_report(RunEnd::Exited(Some(0)), Some(&problem)),
            RunEnd::Failed(problem.to_string())
        );
        assert_eq!(
            with_report(RunEnd::Exited(Some(1)), Some(&problem)),
            RunEnd::Exited(Some(1))
        );
        assert_eq!(
            with_report(RunEnd::Exited(Some(0)), None),
            RunEnd::Exited(Some(0))
        );
    }

    #[test]
    fn the_limits_come_from_the_configuration_by_role() {
        let mut config = Config::default();
        assert_eq!(
            Limits::of(&config, Role::Coder),
            Limits {
                progress: S(1800),
                execution: S(7200)
            }
        );
        config.agent_progress_timeout = Some(1);
        let limits = Limits::of(&config, Role::CodeReviewer);
        assert_eq!(limits.execution, S(1800));
        assert_eq!(limits.look_every(), Duration::from_millis(1000));
        config.agent_progress_timeout = Some(0);
        assert_eq!(Limits::of(&config, Role::Planner).progress, S(1800));
    }
}
