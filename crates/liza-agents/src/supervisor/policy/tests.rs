//! Every supervisor policy, driven through [`decide`] with a manual clock: no process, no
//! file, no sleep — time moves when a test moves it.

use std::time::Duration;

use super::*;
use crate::backend::signals::UsageLimit;
use crate::blackboard::model::{CommitId, HumanNote, TaskStatus};
use crate::lifecycle::{self, NewTask, Registration, SpecFacts, Who};
use crate::supervisor::clock::{Clock, ManualClock};

const T0: i64 = 1_800_000_000;
const BASE: &str = "1111111111111111111111111111111111111111";

fn id(s: &str) -> TaskId {
    TaskId::parse(s).unwrap()
}

fn agent(s: &str) -> AgentId {
    AgentId::parse(s).unwrap()
}

/// A blackboard, one supervisor's memory and a manual clock.
struct World {
    state: State,
    me: AgentId,
    memory: Memory,
    clock: ManualClock,
    controls: Controls,
    once: bool,
    /// The agent CLI can run commands (aider cannot).
    runs_commands: bool,
    /// The supervisor's watch of the leases, on the manual clock.
    watch: lifecycle::LeaseWatch,
}

impl World {
    fn new(me: &str) -> World {
        let wall = Timestamp::from_unix(T0);
        let mut state =
            crate::blackboard::State::initial("goal", "specs/vision.md", "integration", wall);
        for a in [
            "coder-1",
            "coder-2",
            "code-reviewer-1",
            "code-reviewer-2",
            "planner-1",
        ] {
            let a = agent(a);
            lifecycle::register(
                &mut state,
                &a,
                a.role(),
                "g1",
                &Registration::default(),
                &crate::lifecycle::Leases::default(),
                wall,
            )
            .unwrap();
        }
        let clock = ManualClock::starting_at(wall);
        World {
            state,
            me: agent(me),
            memory: Memory::new(None, clock.now()),
            clock,
            controls: Controls::default(),
            once: false,
            runs_commands: true,
            watch: lifecycle::LeaseWatch::new(),
        }
    }

    /// What the supervisor concludes about the leases now.
    fn leases(&mut self) -> lifecycle::Leases {
        let none = crate::blackboard::liveness::LiveRecords::default();
        let at = self.clock.now().at.since_start();
        self.watch.observe(&self.state, &none, at)
    }

    fn now(&self) -> Now {
        self.clock.now()
    }

    fn later(&mut self, d: Duration) {
        self.leases();
        self.clock.advance(d);
    }

    fn decide(&mut self, observation: Observation) -> Vec<Action> {
        let leases = self.leases();
        let view = View {
            leases: &leases,
            state: &self.state,
            agent: &self.me,
            generation: "g1",
            controls: self.controls,
            once: self.once,
            spending: Default::default(),
            backend: BackendView {
                name: "claude",
                soft_and_hard: false,
                auth_hint: "set ANTHROPIC_API_KEY",
                runs_commands: self.runs_commands,
                fallbacks: false,
            },
        };
        let now = self.clock.now();
        decide(&view, &mut self.memory, observation, now)
    }

    fn look(&mut self) -> Vec<Action> {
        self.decide(Observation::Look)
    }

    /// An UNCLAIMED task.
    fn task(&mut self, t: &str) {
        let new = NewTask {
            id: t.into(),
            description: format!("Implement {t}"),
            spec_ref: Some("specs/vision.md".into()),
            done_when: Some("report --json prints a totals key".into()),
            scope: Some("the report command".into()),
            ..NewTask::default()
        };
        let planner = Who::Agent(agent("planner-1"));
        let now = self.clock.now().wall;
        lifecycle::add_tasks(&mut self.state, &planner, std::slice::from_ref(&new), now).unwrap();
        let spec = SpecFacts {
            exists: true,
            blob: Some("abc".into()),
            committed: true,
        };
        lifecycle::finalize(&mut self.state, &planner, &id(t), &spec, now).unwrap();
    }

    /// `t` claimed by `coder`.
    fn claimed(&mut self, t: &str, coder: &str) {
        self.task(t);
        let (coder, now) = (agent(coder), self.clock.now().wall);
        let leases = self.leases();
        let kind = lifecycle::plan_claim(&self.state, &id(t), &coder, &leases).unwrap();
        let base = CommitId::parse(BASE).unwrap();
        lifecycle::claim(
            &mut self.state,
            &id(t),
            &coder,
            &kind,
            Some(&base),
            &leases,
            now,
        )
        .unwrap();
        self.leases();
    }

    /// `t` APPROVED by `reviewer`.
    fn approved(&mut self, t: &str, reviewer: &str) {
        self.claimed(t, "coder-2");
        let task = self.state.task_mut(&id(t)).unwrap();
        task.status = TaskStatus::Approved;
        task.approved_by = Some(agent(reviewer));
        task.review_commit = CommitId::parse(BASE);
    }

    fn coder_run(&self, t: &str, end: RunEnd, progressed: bool) -> Observation {
        Observation::CoderRunEnded(CoderRun {
            task: id(t),
            end,
            progressed,
            still_mine: true,
            committed: progressed,
            dirty: Vec::new(),
            on_behalf: None,
            output_tail: String::new(),
            ended_at: self.clock.now().wall,
            seed: 7,
        })
    }

    fn review_run(&self, t: &str, end: RunEnd) -> ReviewRun {
        ReviewRun {
            task: id(t),
            end,
            still_reviewing: false,
            verdict_given: true,
            changed_worktree: false,
            review_commit: Some(BASE.into()),
            output_tail: String::new(),
            on_behalf: None,
            revision: 3,
            ended_at: self.clock.now().wall,
            seed: 7,
        }
    }

    /// Looks, and returns the wait it decided on.
    fn look_wait(&mut self) -> Option<(Duration, bool)> {
        let actions = self.look();
        self.wait_for(&actions)
    }

    fn wait_for(&self, actions: &[Action]) -> Option<(Duration, bool)> {
        let now = self.clock.now().at;
        actions.iter().find_map(|a| match a {
            Action::Wait {
                until, on_change, ..
            } => Some((now.until(*until), *on_change)),
            _ => None,
        })
    }
}

fn blocks(actions: &[Action]) -> Option<&str> {
    actions.iter().find_map(|a| match a {
        Action::Block { reason, .. } => Some(reason.as_str()),
        _ => None,
    })
}

fn alarms(actions: &[Action]) -> Vec<&str> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Alarm { category, .. } => Some(category.as_str()),
            _ => None,
        })
        .collect()
}

const POLL: Duration = Duration::from_secs(30);

#[test]
fn a_coder_claims_the_first_candidate_and_moves_on_when_a_claim_is_refused() {
    let mut w = World::new("coder-1");
    w.task("t-1");
    w.task("t-2");
    assert_eq!(w.look(), [Action::Work(id("t-1"))]);
    let next = w.decide(Observation::ClaimEnded {
        task: id("t-1"),
        claim: ClaimResult::Refused,
    });
    assert_eq!(next, [Action::Work(id("t-2"))]);
    // Both refused: nothing left, so it waits for a state change, at most the poll.
    let next = w.decide(Observation::ClaimEnded {
        task: id("t-2"),
        claim: ClaimResult::Refused,
    });
    assert_eq!(w.wait_for(&next), Some((POLL, true)));
    // A new look starts a new pass.
    assert_eq!(w.look(), [Action::Work(id("t-1"))]);
}

#[test]
fn a_busy_task_is_tried_again_shortly_not_at_the_next_poll() {
    let mut w = World::new("coder-1");
    w.task("t-1");
    w.look();
    let next = w.decide(Observation::ClaimEnded {
        task: id("t-1"),
        claim: ClaimResult::Busy,
    });
    assert_eq!(w.wait_for(&next), Some((BUSY_RETRY, true)));
}

#[test]
fn the_task_on_the_command_line_comes_first_once() {
    let mut w = World::new("coder-1");
    w.task("t-1");
    w.task("t-2");
    w.memory.first_task = Some(id("t-2"));
    assert_eq!(w.look(), [Action::Work(id("t-2"))]);
    assert_eq!(w.look(), [Action::Work(id("t-1"))]);
}

#[test]
fn another_coders_task_is_taken_over_when_its_lease_runs_out() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-2");
    let lease = w.state.task(&id("t-1")).unwrap().lease_expires.unwrap();
    let remaining = Duration::from_secs((lease.unix() - T0) as u64);
    // Waits for the lease (or the poll, whichever comes first), not a wake-up alone.
    w.state.config.coder_poll_interval = Some(3600);
    let first = w.look();
    assert_eq!(
        w.wait_for(&first),
        Some((remaining + Duration::from_millis(50), true))
    );
    w.later(remaining + Duration::from_secs(1));
    assert_eq!(w.look(), [Action::Work(id("t-1"))]);
}

#[test]
fn exit_42_restarts_after_2_s_doubling_and_state_changes_do_not_cut_it_short() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    for (n, secs) in [2u64, 4, 8].into_iter().enumerate() {
        let after = w.decide(w.coder_run("t-1", RunEnd::Exited(Some(42)), false));
        assert!(blocks(&after).is_none(), "run {n}");
        let next = w.look();
        assert_eq!(w.wait_for(&next), Some((Duration::from_secs(secs), false)));
        w.later(Duration::from_secs(secs));
        assert_eq!(w.look(), [Action::Work(id("t-1"))]);
    }
}

#[test]
fn exit_42_without_progress_blocks_at_the_threshold() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    w.state.config.exit42_restart_threshold = Some(3);
    let mut blocked = Vec::new();
    for _ in 0..3 {
        let after = w.decide(w.coder_run("t-1", RunEnd::Exited(Some(42)), false));
        blocked.push(blocks(&after).map(str::to_owned));
        w.later(Duration::from_secs(120));
    }
    assert_eq!(blocked[..2], [None, None]);
    assert_eq!(
        blocked[2].as_deref(),
        Some("3 exit-42 restarts without progress")
    );
}

#[test]
fn crashes_back_off_from_5_s_and_three_in_5_minutes_block_the_task() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    let after = w.decide(w.coder_run("t-1", RunEnd::Exited(Some(1)), false));
    assert!(blocks(&after).is_none());
    let next = w.look();
    assert_eq!(w.wait_for(&next), Some((Duration::from_secs(5), false)));
    w.later(Duration::from_secs(5));
    assert!(blocks(&w.decide(w.coder_run("t-1", RunEnd::Exited(Some(1)), false))).is_none());
    w.later(Duration::from_secs(10));
    let third = w.decide(w.coder_run("t-1", RunEnd::Exited(None), false));
    assert_eq!(
        blocks(&third),
        Some("crash loop: 3 crashes in 5 minutes (last: a signal)")
    );
}

#[test]
fn crashes_further_apart_than_5_minutes_are_no_loop() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    for _ in 0..4 {
        let after = w.decide(w.coder_run("t-1", RunEnd::Exited(Some(1)), false));
        assert!(blocks(&after).is_none());
        w.later(Duration::from_secs(200));
    }
}

#[test]
fn three_runs_without_progress_block_the_task_and_progress_resets_the_count() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    let exit0 = RunEnd::Exited(Some(0));
    assert!(blocks(&w.decide(w.coder_run("t-1", exit0.clone(), false))).is_none());
    assert!(blocks(&w.decide(w.coder_run("t-1", exit0.clone(), false))).is_none());
    assert!(blocks(&w.decide(w.coder_run("t-1", exit0.clone(), true))).is_none());
    assert!(blocks(&w.decide(w.coder_run("t-1", exit0.clone(), false))).is_none());
    assert!(blocks(&w.decide(w.coder_run("t-1", exit0.clone(), false))).is_none());
    let third = w.decide(w.coder_run("t-1", exit0, false));
    assert_eq!(blocks(&third), Some("no progress in 3 runs"));
    assert!(third.contains(&Action::Say("t-1: BLOCKED (no progress in 3 runs)".into())));
}

#[test]
fn watchdogs_block_a_task_the_agent_still_holds() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    let stalled = w.decide(w.coder_run("t-1", RunEnd::Stalled(Duration::from_secs(1800)), false));
    assert_eq!(blocks(&stalled), Some("watchdog: no progress for 1800 s"));
    let timed_out =
        w.decide(w.coder_run("t-1", RunEnd::TimedOut(Duration::from_secs(7200)), false));
    assert_eq!(
        blocks(&timed_out),
        Some("execution timeout: the run took longer than 7200 s")
    );
}

#[test]
fn the_iteration_limit_is_reported_and_counts_as_work() {
    let mut w = World::new("coder-1");
    w.once = true;
    let after = w.decide(Observation::IterationLimit {
        task: id("t-1"),
        limit: 10,
    });
    assert_eq!(
        after,
        [
            Action::Say("t-1: BLOCKED, 10 runs without approval".into()),
            Action::Exit(Exit::Done)
        ]
    );
}

#[test]
fn an_agent_that_cannot_start_is_left_alone_for_30_s_with_an_alarm() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    let after = w.decide(w.coder_run("t-1", RunEnd::NotStarted("no such file".into()), false));
    assert_eq!(alarms(&after), ["AGENT_NOT_STARTED"]);
    let next = w.look();
    assert_eq!(w.wait_for(&next), Some((Duration::from_secs(30), false)));
}

#[test]
fn claims_that_keep_failing_end_the_supervisor_at_the_third() {
    let mut w = World::new("coder-1");
    w.task("t-1");
    let failed = |seed| Observation::ClaimEnded {
        task: id("t-1"),
        claim: ClaimResult::Failed {
            why: "git said no".into(),
            seed,
        },
    };
    let first = w.decide(failed(0));
    assert!(matches!(first[0], Action::LogClaimFailed { .. }));
    assert_eq!(
        w.wait_for(&first),
        Some((Duration::from_millis(1000), false))
    );
    let second = w.decide(failed(3999));
    assert_eq!(
        w.wait_for(&second),
        Some((Duration::from_millis(4999), false))
    );
    let third = w.decide(failed(5));
    assert_eq!(
        third.last(),
        Some(&Action::Exit(Exit::ClaimsFailing {
            count: 3,
            last: "git said no".into()
        }))
    );
    // A run resets the count.
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    w.decide(failed(0));
    w.decide(failed(0));
    w.decide(w.coder_run("t-1", RunEnd::Exited(Some(0)), true));
    assert_eq!(w.memory.claim_failures, 0);
}

#[test]
fn a_usage_limit_saves_the_work_and_stops_every_run_until_the_reset_plus_jitter() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    let resets_at = chrono::DateTime::from_timestamp(T0 + 7200, 0);
    let limit = UsageLimit {
        line: "Error: usage limit reached".into(),
        resets_at,
    };
    let after = w.decide(w.coder_run("t-1", RunEnd::UsageLimited(limit.clone()), false));
    assert!(after.contains(&Action::SaveWip {
        task: id("t-1"),
        why: "a provider usage limit".into()
    }));
    assert!(
        blocks(&after).is_none(),
        "the provider's limit is not the agent's failure"
    );
    assert_eq!(alarms(&after), ["PROVIDER_QUOTA_EXHAUSTED"]);
    let jitter = crate::backend::signals::jitter(Duration::from_secs(7200), 7);
    let wait = Duration::from_secs(7200) + jitter;
    assert!(after.contains(&Action::UsageLimit {
        until: Some((
            w.now().at + wait,
            w.now().wall.plus_seconds(wait.as_secs() as i64)
        ))
    }));
    // Waiting, still woken by state changes (ABORT is seen).
    let next = w.look();
    assert_eq!(w.wait_for(&next), Some((wait, true)));
    w.later(wait);
    assert_eq!(
        w.look(),
        [Action::UsageLimit { until: None }, Action::Work(id("t-1"))]
    );
}

#[test]
fn usage_limit_waits_differ_with_the_seed_and_default_to_30_minutes() {
    let mut a = World::new("code-reviewer-1");
    let mut b = World::new("code-reviewer-1");
    let limit = UsageLimit {
        line: "rate limit exceeded".into(),
        resets_at: None,
    };
    let run = |w: &World, seed| {
        Observation::ReviewRunEnded(ReviewRun {
            seed,
            ..w.review_run("t-1", RunEnd::UsageLimited(limit.clone()))
        })
    };
    let (ra, rb) = (run(&a, 1), run(&b, 2));
    a.decide(ra);
    b.decide(rb);
    let (wa, wb) = (
        a.memory.usage_limit_until.unwrap(),
        b.memory.usage_limit_until.unwrap(),
    );
    assert_ne!(wa, wb);
    for until in [wa, wb] {
        let wait = Moment::ZERO.until(until);
        assert!(wait >= Duration::from_secs(1800) && wait <= Duration::from_secs(1860));
    }
}

#[test]
fn abort_ends_and_pause_or_checkpoint_waits_with_heartbeats() {
    let mut w = World::new("coder-1");
    w.task("t-1");
    w.controls.pause = true;
    assert_eq!(w.look_wait(), Some((POLL, true)));
    w.controls = Controls {
        checkpoint: true,
        ..Controls::default()
    };
    assert_eq!(w.look_wait(), Some((POLL, true)));
    w.controls = Controls::default();
    w.state.sprint.status = SprintStatus::Checkpoint;
    assert_eq!(w.look_wait(), Some((POLL, true)));
    w.state.sprint.status = SprintStatus::InProgress;
    assert_eq!(w.look(), [Action::Work(id("t-1"))]);
    w.controls.abort = true;
    assert_eq!(w.look().last(), Some(&Action::Exit(Exit::Done)));
}

#[test]
fn coders_and_reviewers_end_with_the_sprint_the_planner_with_the_goal() {
    for (me, exits) in [
        ("coder-1", true),
        ("code-reviewer-1", true),
        ("planner-1", false),
    ] {
        let mut w = World::new(me);
        w.state.sprint.status = SprintStatus::Completed;
        assert_eq!(
            w.look().last() == Some(&Action::Exit(Exit::Done)),
            exits,
            "{me}"
        );
        w.state.goal.status = Some(GoalStatus::Completed);
        assert_eq!(w.look().last(), Some(&Action::Exit(Exit::Done)), "{me}");
    }
}

#[test]
fn signals_and_a_superseded_registration_stop_the_supervisor() {
    let mut w = World::new("coder-1");
    assert_eq!(
        w.decide(Observation::Signalled(15)),
        [Action::Exit(Exit::Signal(15))]
    );
    assert_eq!(
        w.decide(Observation::Superseded("coder-1 registered anew".into())),
        [Action::Exit(Exit::Superseded(
            "coder-1 registered anew".into()
        ))]
    );
}

#[test]
fn idle_exit_after_only_with_no_open_task() {
    let mut w = World::new("coder-1");
    w.state.config.idle_exit_after = Some(60);
    w.later(Duration::from_secs(61));
    assert_eq!(w.look().last(), Some(&Action::Exit(Exit::Done)));
    let mut w = World::new("coder-1");
    w.state.config.idle_exit_after = Some(60);
    w.claimed("t-1", "coder-2");
    w.state.config.coder_poll_interval = Some(5);
    w.later(Duration::from_secs(61));
    assert!(w.look_wait().is_some(), "another coder's task is open");
}

#[test]
fn once_ends_after_one_run() {
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    w.once = true;
    let after = w.decide(w.coder_run("t-1", RunEnd::Exited(Some(0)), true));
    assert_eq!(after.last(), Some(&Action::Exit(Exit::Done)));
}

#[test]
fn a_reviewer_merges_its_approvals_first_and_reviews_when_a_merge_does_not_run() {
    let mut w = World::new("code-reviewer-1");
    w.approved("t-1", "code-reviewer-1");
    w.claimed("t-2", "coder-1");
    let task = w.state.task_mut(&id("t-2")).unwrap();
    task.status = TaskStatus::ReadyForReview;
    task.review_commit = CommitId::parse(BASE);
    assert_eq!(w.look(), [Action::Merge(id("t-1"))]);
    let next = w.decide(Observation::MergeEnded {
        task: id("t-1"),
        ran: false,
    });
    assert_eq!(next, [Action::Review(id("t-2"))]);
    // --once: the approvals are merged before it exits.
    w.once = true;
    let after = w.decide(Observation::ReviewRunEnded(
        w.review_run("t-2", RunEnd::Exited(Some(0))),
    ));
    assert_eq!(after, [Action::Merge(id("t-1")), Action::Exit(Exit::Done)]);
}

#[test]
fn a_review_without_a_verdict_releases_the_claim_backs_off_and_alarms_the_second_time() {
    let mut w = World::new("code-reviewer-1");
    let failed = |w: &World| {
        Observation::ReviewRunEnded(ReviewRun {
            still_reviewing: true,
            verdict_given: false,
            ..w.review_run("t-1", RunEnd::Exited(Some(0)))
        })
    };
    let first = w.decide(failed(&w));
    assert_eq!(first[0], Action::ReleaseReview(id("t-1")));
    assert!(alarms(&first).is_empty());
    let expected = Some(w.now().at + reviewer::FAILED_REVIEW_PAUSE);
    assert_eq!(w.memory.task(&id("t-1")).resume_at, expected);
    let second = w.decide(failed(&w));
    assert_eq!(alarms(&second), ["REVIEW_FAILED"]);
    // A signal or a usage limit is no failed review.
    let mut w = World::new("code-reviewer-1");
    let signalled = Observation::ReviewRunEnded(ReviewRun {
        still_reviewing: true,
        ..w.review_run("t-1", RunEnd::Signalled)
    });
    assert!(
        !w.decide(signalled)
            .contains(&Action::ReleaseReview(id("t-1")))
    );
}

#[test]
fn a_review_backoff_is_waited_out_and_a_state_change_may_end_it() {
    let mut w = World::new("code-reviewer-1");
    w.claimed("t-1", "coder-1");
    let task = w.state.task_mut(&id("t-1")).unwrap();
    task.status = TaskStatus::ReadyForReview;
    task.review_commit = CommitId::parse(BASE);
    w.decide(Observation::ReviewRunEnded(
        w.review_run("t-1", RunEnd::Exited(Some(42))),
    ));
    assert_eq!(w.look_wait(), Some((Duration::from_secs(2), true)));
    w.later(Duration::from_secs(2));
    assert_eq!(w.look(), [Action::Review(id("t-1"))]);
}

#[test]
fn a_review_run_that_changed_the_worktree_voids_its_verdict() {
    let mut w = World::new("code-reviewer-1");
    let run = ReviewRun {
        changed_worktree: true,
        ..w.review_run("t-1", RunEnd::Exited(Some(0)))
    };
    let after = w.decide(Observation::ReviewRunEnded(run));
    assert!(matches!(&after[0], Action::VoidVerdict { task, .. } if *task == id("t-1")));
    assert!(matches!(
        &after[1],
        Action::BoundaryViolation { key, .. } if key == "review-modified:t-1:3"
    ));
}

#[test]
fn a_reviewer_crash_loop_alarms_once() {
    let mut w = World::new("code-reviewer-1");
    let crash =
        |w: &World| Observation::ReviewRunEnded(w.review_run("t-1", RunEnd::Exited(Some(2))));
    let mut raised = Vec::new();
    for _ in 0..4 {
        let c = crash(&w);
        raised.push(alarms(&w.decide(c)).len());
        w.later(Duration::from_secs(1));
    }
    assert_eq!(raised, [0, 0, 1, 0]);
}

#[test]
fn the_planner_runs_only_for_a_trigger_and_acknowledges_after_exit_0() {
    let mut w = World::new("planner-1");
    // No tasks: INITIAL_PLANNING.
    assert_eq!(w.look(), [Action::PlannerTurn]);
    let turn = PlannerTurn {
        end: RunEnd::Exited(Some(0)),
        shown: lifecycle::planner_triggers(&w.state, &w.me),
        ended_at: w.now().wall,
        seed: 1,
    };
    let after = w.decide(Observation::PlannerTurnEnded(Some(turn.clone())));
    assert!(matches!(&after[..], [Action::Acknowledge(shown)] if *shown == turn.shown));
    // It planned: nothing holds any more, so it waits for the next trigger.
    w.task("t-1");
    let after = w.decide(Observation::Acknowledged {
        shown: turn.shown.clone(),
        remaining: Vec::new(),
        revision: 4,
    });
    assert!(after.is_empty());
    let planner_poll = Duration::from_secs(60);
    assert_eq!(w.look_wait(), Some((planner_poll, true)));
}

#[test]
fn a_trigger_is_edge_triggered_a_note_acknowledged_once_wakes_nobody_again() {
    let mut w = World::new("planner-1");
    w.task("t-1");
    let note: HumanNote =
        serde_json::from_value(serde_json::json!({"message": "prefer small tasks", "for": "all"}))
            .unwrap();
    w.state.human_notes.get_or_insert_with(Vec::new).push(note);
    assert_eq!(w.look(), [Action::PlannerTurn]);
    let shown = lifecycle::planner_triggers(&w.state, &w.me);
    let now = w.now().wall;
    lifecycle::acknowledge(&mut w.state, &w.me, &shown, now);
    assert!(w.look_wait().is_some(), "not woken again for the same note");
}

#[test]
fn an_unhandled_initial_planning_backs_off_30_s_doubling_with_an_alarm() {
    let mut w = World::new("planner-1");
    let shown = lifecycle::planner_triggers(&w.state, &w.me);
    for secs in [30u64, 60, 120] {
        let after = w.decide(Observation::Acknowledged {
            shown: shown.clone(),
            remaining: shown.clone(),
            revision: 2,
        });
        assert_eq!(alarms(&after), ["PLANNER_UNHANDLED"]);
        assert_eq!(w.look_wait(), Some((Duration::from_secs(secs), true)));
        w.later(Duration::from_secs(secs));
        assert_eq!(w.look(), [Action::PlannerTurn]);
    }
}

#[test]
fn a_planner_that_crashes_backs_off_and_a_loop_alarms() {
    let mut w = World::new("planner-1");
    let mut raised = Vec::new();
    for _ in 0..3 {
        let turn = PlannerTurn {
            end: RunEnd::Exited(Some(1)),
            shown: Vec::new(),
            ended_at: w.now().wall,
            seed: 1,
        };
        raised.push(alarms(&w.decide(Observation::PlannerTurnEnded(Some(turn)))).len());
        w.later(Duration::from_secs(1));
    }
    assert_eq!(raised, [0, 0, 1]);
    let (wait, _) = w.look_wait().unwrap();
    assert_eq!(
        wait,
        Duration::from_secs(20 - 1),
        "5 s doubling: 20 s after the third"
    );
}

#[test]
fn each_wait_says_what_it_waits_for() {
    let why = |actions: &[Action]| {
        actions.iter().find_map(|a| match a {
            Action::Wait { why, .. } => Some(*why),
            _ => None,
        })
    };
    let mut w = World::new("coder-1");
    assert_eq!(why(&w.look()), Some(Waiting::Work));
    w.task("t-1");
    w.controls.pause = true;
    assert_eq!(why(&w.look()), Some(Waiting::Paused));
    w.controls = Controls {
        checkpoint: true,
        ..Controls::default()
    };
    assert_eq!(why(&w.look()), Some(Waiting::Checkpoint));
    w.controls = Controls::default();
    w.look();
    let busy = w.decide(Observation::ClaimEnded {
        task: id("t-1"),
        claim: ClaimResult::Busy,
    });
    assert_eq!(why(&busy), Some(Waiting::Busy));
    w.decide(w.coder_run("t-1", RunEnd::Exited(Some(42)), false));
    assert_eq!(why(&w.look()), Some(Waiting::Backoff));
    let limit = UsageLimit {
        line: "usage limit".into(),
        resets_at: None,
    };
    w.decide(w.coder_run("t-1", RunEnd::UsageLimited(limit), false));
    assert_eq!(why(&w.look()), Some(Waiting::UsageLimit));
    let mut other = World::new("coder-1");
    other.claimed("t-9", "coder-2");
    assert_eq!(why(&other.look()), Some(Waiting::Lease));
}

/// A run that could not log in: the work is kept (a coder's as a WIP commit, a
/// reviewer's claim released), one alarm names what to set, and the supervisor exits —
/// nothing after the exit, and no claim, block or backoff of the task.
#[test]
fn an_agent_that_cannot_log_in_keeps_the_work_raises_one_alarm_and_stops() {
    let exit = |line: &str| {
        Action::Exit(Exit::AuthRequired {
            backend: "claude".into(),
            line: line.into(),
            hint: "set ANTHROPIC_API_KEY".into(),
        })
    };
    let alarm = |who: &str| Action::Alarm {
        level: Level::Error,
        category: "AGENT_AUTH".into(),
        message: format!(
            "{who}: the claude agent could not log in (Invalid API key); set ANTHROPIC_API_KEY"
        ),
        key: format!("agent-auth:{who}:g1"),
    };
    let line = "Invalid API key";

    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    let run = w.coder_run("t-1", RunEnd::AuthRequired(line.into()), false);
    assert_eq!(
        w.decide(run),
        [
            Action::SaveWip {
                task: id("t-1"),
                why: "the agent could not log in".into()
            },
            alarm("coder-1"),
            exit(line),
        ]
    );

    let mut w = World::new("code-reviewer-1");
    let mut run = w.review_run("t-1", RunEnd::AuthRequired(line.into()));
    run.still_reviewing = true;
    run.verdict_given = false;
    assert_eq!(
        w.decide(Observation::ReviewRunEnded(run.clone())),
        [
            Action::ReleaseReview(id("t-1")),
            alarm("code-reviewer-1"),
            exit(line),
        ]
    );
    // A claim it no longer holds is not released again.
    run.still_reviewing = false;
    assert_eq!(
        w.decide(Observation::ReviewRunEnded(run)),
        [alarm("code-reviewer-1"), exit(line)]
    );

    let mut w = World::new("planner-1");
    let turn = PlannerTurn {
        end: RunEnd::AuthRequired(line.into()),
        shown: lifecycle::planner_triggers(&w.state, &w.me),
        ended_at: w.now().wall,
        seed: 1,
    };
    assert_eq!(
        w.decide(Observation::PlannerTurnEnded(Some(turn))),
        [alarm("planner-1"), exit(line)]
    );
}

/// A review whose worktree is gone: the claim released, then the alarm that says so, and
/// the task left alone for a while.
#[test]
fn a_review_without_its_worktree_releases_the_claim_then_raises_the_alarm() {
    let mut w = World::new("code-reviewer-1");
    let actions = w.decide(Observation::WorktreeMissing {
        task: id("t-1"),
        revision: 4,
    });
    assert_eq!(actions[0], Action::ReleaseReview(id("t-1")));
    assert_eq!(
        actions[1],
        Action::Alarm {
            level: Level::Error,
            category: "WORKTREE_MISSING".into(),
            message: "t-1: its worktree is missing; the review claim was released".into(),
            key: "worktree-missing:t-1:4".into(),
        }
    );
    assert_eq!(
        w.memory.tasks[&id("t-1")].resume_at,
        Some(w.now().at + super::reviewer::MISSING_WORKTREE_PAUSE)
    );
}

/// An agent that cannot run commands (aider): a clean committed run is submitted for it
/// before the run is reconciled; what came of it decides the rest.
#[test]
fn liza_submits_for_an_agent_that_cannot_run_commands_and_reconciles_what_came_of_it() {
    let mut w = World::new("coder-1");
    w.runs_commands = false;
    w.claimed("t-1", "coder-1");
    let Observation::CoderRunEnded(run) = w.coder_run("t-1", RunEnd::Exited(Some(0)), true) else {
        unreachable!()
    };
    // Committed and clean: submitted first, nothing else decided yet.
    let first = w.decide(Observation::CoderRunEnded(run.clone()));
    assert_eq!(first, [Action::SubmitForAgent(Box::new(run.clone()))]);
    assert_eq!(w.memory.runs, 0);

    // Submitted: the run is reconciled as work done, nothing left undone.
    let done = CoderRun {
        on_behalf: Some(OnBehalf::Done),
        still_mine: false,
        ..run.clone()
    };
    let after = w.decide(Observation::CoderRunEnded(done));
    assert!(!after.iter().any(Action::acts_for_agent), "{after:?}");
    assert_eq!(w.memory.runs, 1);
    assert_eq!(w.memory.task(&id("t-1")).left_undone, None);

    // Refused (a check failed): said, and the next prompt says why; never asked again.
    let refused = CoderRun {
        on_behalf: Some(OnBehalf::Refused("the check test exit 1".into())),
        ..run.clone()
    };
    let after = w.decide(Observation::CoderRunEnded(refused));
    assert_eq!(
        after[0],
        Action::Say("coder-1: t-1 not submitted: the check test exit 1".into())
    );
    assert!(!after.iter().any(Action::acts_for_agent));
    let note = w.memory.task(&id("t-1")).left_undone.clone().unwrap();
    assert!(
        note.contains("liza did not submit your work: the check test exit 1"),
        "{note}"
    );

    // Uncommitted files: nothing is submitted, the prompt says what was left.
    let dirty = CoderRun {
        dirty: vec!["a.rs".into()],
        ..run.clone()
    };
    assert!(
        !w.decide(Observation::CoderRunEnded(dirty))
            .iter()
            .any(Action::acts_for_agent)
    );
    let note = w.memory.task(&id("t-1")).left_undone.clone().unwrap();
    assert!(note.contains("uncommitted changes (a.rs)"), "{note}");

    // No commit, a crash, or a task no longer the agent's: nothing submitted.
    for other in [
        CoderRun {
            committed: false,
            ..run.clone()
        },
        CoderRun {
            end: RunEnd::Exited(Some(1)),
            ..run.clone()
        },
        CoderRun {
            still_mine: false,
            ..run.clone()
        },
    ] {
        assert!(
            !w.decide(Observation::CoderRunEnded(other))
                .iter()
                .any(Action::acts_for_agent)
        );
    }

    // An agent that could have submitted is told, never submitted for.
    let mut w = World::new("coder-1");
    w.claimed("t-1", "coder-1");
    let actions = w.decide(Observation::CoderRunEnded(run));
    assert!(!actions.iter().any(Action::acts_for_agent));
    let note = w.memory.task(&id("t-1")).left_undone.clone().unwrap();
    assert!(note.contains("did not submit"), "{note}");
}

/// A reviewer that cannot run commands: the verdict line of its answer is recorded for
/// it, on the reviewed commit — unless the run touched the worktree.
#[test]
fn liza_records_the_verdict_line_of_a_reviewer_that_cannot_run_commands() {
    let mut w = World::new("code-reviewer-1");
    w.runs_commands = false;
    let run = ReviewRun {
        still_reviewing: true,
        verdict_given: false,
        output_tail: "Looks fine.\nLIZA-VERDICT: reject\n**Blockers**\n- no test".into(),
        ..w.review_run("t-1", RunEnd::Exited(Some(0)))
    };
    assert_eq!(
        w.decide(Observation::ReviewRunEnded(run.clone())),
        [Action::VerdictForAgent {
            run: Box::new(run.clone()),
            verdict: Verdict::Reject {
                reason: "**Blockers**\n- no test".into()
            },
            commit: BASE.into(),
        }]
    );
    // Recorded: a review that gave its verdict; nothing released.
    let recorded = ReviewRun {
        on_behalf: Some(OnBehalf::Done),
        still_reviewing: false,
        verdict_given: true,
        ..run.clone()
    };
    let after = w.decide(Observation::ReviewRunEnded(recorded));
    assert!(
        !after.contains(&Action::ReleaseReview(id("t-1"))),
        "{after:?}"
    );
    assert!(!after.iter().any(Action::acts_for_agent));
    // Refused: said, and the claim released like any review without a verdict.
    let refused = ReviewRun {
        on_behalf: Some(OnBehalf::Refused("the review commit moved".into())),
        ..run.clone()
    };
    let after = w.decide(Observation::ReviewRunEnded(refused));
    assert_eq!(
        after[0],
        Action::Say(
            "code-reviewer-1: the agent's verdict on t-1 was refused: the review commit moved"
                .into()
        )
    );
    assert_eq!(after[1], Action::ReleaseReview(id("t-1")));
    // A run that changed the worktree, gave no verdict line, or crashed: nothing recorded.
    for other in [
        ReviewRun {
            changed_worktree: true,
            ..run.clone()
        },
        ReviewRun {
            output_tail: "no verdict".into(),
            ..run.clone()
        },
        ReviewRun {
            end: RunEnd::Exited(Some(2)),
            ..run.clone()
        },
    ] {
        assert!(
            !w.decide(Observation::ReviewRunEnded(other))
                .iter()
                .any(Action::acts_for_agent)
        );
    }
    // A reviewer that can run commands gives its own verdicts.
    w.runs_commands = true;
    assert!(
        !w.decide(Observation::ReviewRunEnded(run))
            .iter()
            .any(Action::acts_for_agent)
    );
}

/// The fallback poll: 30 s for a coder and a reviewer, 60 s for the planner
/// (specs/blackboard.md *config*), a configured interval instead.
#[test]
fn each_role_polls_at_its_own_interval_unless_configured() {
    let mut w = World::new("coder-1");
    let leases = w.leases();
    let interval = |state: &State, me: &str| {
        let me = agent(me);
        View {
            state,
            agent: &me,
            controls: Controls::default(),
            leases: &leases,
            generation: "g1",
            once: false,
            spending: Default::default(),
            backend: BackendView {
                name: "claude",
                soft_and_hard: false,
                auth_hint: "",
                runs_commands: true,
                fallbacks: false,
            },
        }
        .poll_interval()
    };
    let secs = Duration::from_secs;
    assert_eq!(interval(&w.state, "coder-1"), secs(30));
    assert_eq!(interval(&w.state, "code-reviewer-1"), secs(30));
    assert_eq!(interval(&w.state, "planner-1"), secs(60));
    w.state.config.planner_poll_interval = Some(5);
    w.state.config.coder_poll_interval = Some(0);
    assert_eq!(interval(&w.state, "planner-1"), secs(5));
    assert_eq!(interval(&w.state, "coder-1"), secs(30));
}
