//! One test per row of the transition table and per guard of each row, and per forbidden
//! move. Every refusal is checked to leave the state exactly as it was, and every accepted
//! change to leave a state the validator accepts.

use crate::model::{
    AgentStatus, AnomalyType, CommitId, FailureKind, GoalStatus, PlanApproval, SprintStatus, State,
    TaskStatus as S,
};
use crate::validate::{ValidationEnv, validate};
use crate::{AgentId, Role, TaskId, Timestamp};

use super::*;

const T0: i64 = 1_800_000_000;
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";

fn id(s: &str) -> TaskId {
    TaskId::parse(s).unwrap()
}
fn agent(s: &str) -> AgentId {
    AgentId::parse(s).unwrap()
}
fn coder(n: u32) -> Who {
    Who::Agent(agent(&format!("coder-{n}")))
}
fn reviewer(n: u32) -> Who {
    Who::Agent(agent(&format!("code-reviewer-{n}")))
}
fn planner() -> Who {
    Who::Agent(agent("planner-1"))
}

struct W {
    s: State,
    now: Timestamp,
    /// A claimant watching the leases all along, on a monotonic clock that moves with
    /// `now` (specs/blackboard.md *Leases are observed*).
    watch: std::cell::RefCell<LeaseWatch>,
    at: std::time::Duration,
}

impl W {
    fn new() -> W {
        let now = Timestamp::from_unix(T0);
        let mut s = crate::State::initial("goal", "specs/vision.md", "integration", now);
        for a in [
            "coder-1",
            "coder-2",
            "coder-3",
            "code-reviewer-1",
            "code-reviewer-2",
            "planner-1",
        ] {
            let a = agent(a);
            register(
                &mut s,
                &a,
                a.role(),
                &format!("g{}", a.as_str().len()),
                &Registration::default(),
                &Leases::default(),
                now,
            )
            .unwrap();
        }
        W {
            s,
            now,
            watch: Default::default(),
            at: std::time::Duration::ZERO,
        }
    }

    /// What the watching claimant concludes now.
    fn l(&self) -> Leases {
        let none = crate::liveness::LiveRecords::default();
        self.watch.borrow_mut().observe(&self.s, &none, self.at)
    }

    /// [`W::ok`] for a rule that asks about leases.
    fn ok_l<R>(
        &mut self,
        f: impl FnOnce(&mut State, &Leases, Timestamp) -> Result<R, Refusal>,
    ) -> R {
        let leases = self.l();
        self.ok(|s, n| f(s, &leases, n))
    }

    /// [`W::refused`] for a rule that asks about leases.
    fn refused_l<R: std::fmt::Debug>(
        &mut self,
        f: impl FnOnce(&mut State, &Leases, Timestamp) -> Result<R, Refusal>,
    ) -> &'static str {
        let leases = self.l();
        self.refused(|s, n| f(s, &leases, n))
    }

    /// Applies an accepted change and checks the result validates.
    fn ok<R>(&mut self, f: impl FnOnce(&mut State, Timestamp) -> Result<R, Refusal>) -> R {
        let r = f(&mut self.s, self.now).unwrap_or_else(|e| panic!("refused: {e}"));
        self.l();
        let env = ValidationEnv::new(None, self.now);
        let errors: Vec<_> = validate(&self.s, &env)
            .into_iter()
            .filter(|f| f.is_error())
            .collect();
        assert!(errors.is_empty(), "invalid after change: {errors:#?}");
        r
    }

    /// Applies a refused change, checks nothing moved, returns the rule.
    fn refused<R: std::fmt::Debug>(
        &mut self,
        f: impl FnOnce(&mut State, Timestamp) -> Result<R, Refusal>,
    ) -> &'static str {
        let before = self.s.clone();
        let r = f(&mut self.s, self.now).expect_err("should be refused");
        assert_eq!(self.s, before, "a refusal changed the state: {r}");
        r.rule.as_str()
    }

    fn later(&mut self, seconds: i64) {
        self.l();
        self.now = self.now.plus_seconds(seconds);
        self.at += std::time::Duration::from_secs(seconds.unsigned_abs());
    }

    fn task(&self, t: &str) -> &crate::model::Task {
        self.s.task(&id(t)).unwrap()
    }

    fn events(&self, t: &str) -> Vec<String> {
        self.task(t)
            .history()
            .iter()
            .map(|h| h.event.clone())
            .collect()
    }

    fn add(&mut self, t: &str, deps: &[&str]) {
        let new = new_task(t, deps);
        self.ok(|s, n| add_task(s, &planner(), &new, n));
    }

    fn unclaimed(&mut self, t: &str, deps: &[&str]) {
        self.add(t, deps);
        self.ok(|s, n| finalize(s, &planner(), &id(t), &spec(), n));
    }

    fn claimed(&mut self, t: &str, c: u32) {
        self.unclaimed(t, &[]);
        self.claim(t, c);
    }

    fn claim(&mut self, t: &str, c: u32) -> Outcome {
        let a = agent(&format!("coder-{c}"));
        let kind = plan_claim(&self.s, &id(t), &a, &self.l()).unwrap();
        let base = CommitId::parse(BASE).unwrap();
        self.ok_l(|s, l, n| claim(s, &id(t), &a, &kind, Some(&base), l, n))
    }

    fn submitted(&mut self, t: &str, c: u32) {
        self.claimed(t, c);
        self.ok(|s, n| submit(s, &coder(c), &id(t), None, &facts(), n));
    }

    fn in_review(&mut self, t: &str, c: u32, r: u32) {
        self.submitted(t, c);
        self.ok_l(|s, l, n| claim_review(s, &id(t), &agent(&format!("code-reviewer-{r}")), l, n));
    }

    fn approved(&mut self, t: &str) {
        self.in_review(t, 1, 1);
        self.ok(|s, n| verdict(s, &reviewer(1), &id(t), &Verdict::Approve, HEAD, n));
    }

    fn rejected(&mut self, t: &str) {
        self.in_review(t, 1, 1);
        self.ok(|s, n| verdict(s, &reviewer(1), &id(t), &reject(), HEAD, n));
    }

    fn blocked(&mut self, t: &str) {
        self.claimed(t, 1);
        self.ok(|s, n| {
            block(
                s,
                &coder(1),
                &id(t),
                "unclear",
                &["which format?".into()],
                &[],
                BlockCause::Agent,
                n,
            )
        });
    }

    fn merged(&mut self, t: &str) {
        self.approved(t);
        self.ok(|s, n| merged(s, &id(t), &merge_record(), n));
    }

    fn failed_integration(&mut self, t: &str) {
        self.approved(t);
        self.ok(|s, n| integration_failed(s, &id(t), &conflict_in(&["a.txt"]), n));
    }
}

/// A fast-forward merge to HEAD with two integration commits of drift.
fn merge_record() -> MergeRecord {
    MergeRecord {
        commit: CommitId::parse(HEAD).unwrap(),
        merge_type: "fast-forward".into(),
        drift_commits: 2,
        retries: 0,
        batch: 1,
    }
}

fn conflict_in(paths: &[&str]) -> MergeFailure {
    MergeFailure {
        kind: FailureKind::Conflict,
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
        log: None,
        reason: String::new(),
    }
}

fn new_task(t: &str, deps: &[&str]) -> NewTask {
    NewTask {
        id: t.into(),
        description: format!("Implement {t}"),
        spec_ref: Some("specs/vision.md".into()),
        done_when: Some("report --json prints a totals key".into()),
        scope: Some("the report command".into()),
        depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
        ..NewTask::default()
    }
}

fn spec() -> SpecFacts {
    SpecFacts {
        exists: true,
        blob: Some("abc123".into()),
        committed: true,
    }
}

fn facts() -> SubmitFacts {
    SubmitFacts {
        head: CommitId::parse(HEAD).unwrap(),
        dirty: vec![],
        changed: vec!["src/report.rs".into()],
        descends_from_base: true,
    }
}

fn reject() -> Verdict {
    Verdict::Reject {
        reason: "src/report.rs:42 drops the totals key".into(),
    }
}

mod claim_rows;
mod machines;
mod move_rows;
mod planning_rows;
mod property;
mod review_rows;
