//! One test per row of the transition table and per guard of each row, and per forbidden
//! move. Every refusal is checked to leave the state exactly as it was, and every accepted
//! change to leave a state the validator accepts.

use crate::blackboard::model::{
    AgentStatus, AnomalyType, CommitId, FailureKind, GoalStatus, PlanApproval, SprintStatus, State,
    TaskStatus as S,
};
use crate::blackboard::validate::{ValidationEnv, validate};
use crate::blackboard::{AgentId, Role, TaskId, Timestamp};

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
}

impl W {
    fn new() -> W {
        let now = Timestamp::from_unix(T0);
        let mut s = crate::ops::initial_state("goal", "specs/vision.md", "integration", now);
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
                now,
            )
            .unwrap();
        }
        W { s, now }
    }

    /// Applies an accepted change and checks the result validates.
    fn ok<R>(&mut self, f: impl FnOnce(&mut State, Timestamp) -> Result<R, Refusal>) -> R {
        let r = f(&mut self.s, self.now).unwrap_or_else(|e| panic!("refused: {e}"));
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
        r.rule
    }

    fn later(&mut self, seconds: i64) {
        self.now = self.now.plus_seconds(seconds);
    }

    fn task(&self, t: &str) -> &crate::blackboard::model::Task {
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
        let kind = plan_claim(&self.s, &id(t), &a, self.now).unwrap();
        let base = CommitId::parse(BASE).unwrap();
        self.ok(|s, n| claim(s, &id(t), &a, &kind, Some(&base), n))
    }

    fn submitted(&mut self, t: &str, c: u32) {
        self.claimed(t, c);
        self.ok(|s, n| submit(s, &coder(c), &id(t), None, &facts(), n));
    }

    fn in_review(&mut self, t: &str, c: u32, r: u32) {
        self.submitted(t, c);
        self.ok(|s, n| claim_review(s, &id(t), &agent(&format!("code-reviewer-{r}")), n));
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
        self.ok(|s, n| {
            merged(
                s,
                &id(t),
                &CommitId::parse(HEAD).unwrap(),
                "fast-forward",
                n,
            )
        });
    }

    fn failed_integration(&mut self, t: &str) {
        self.approved(t);
        self.ok(|s, n| {
            integration_failed(s, &id(t), FailureKind::Conflict, &["a.txt".into()], None, n)
        });
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

// ----- (new) → DRAFT

#[test]
fn add_task_creates_a_draft_in_the_sprint_scope() {
    let mut w = W::new();
    w.add("t-1", &[]);
    let t = w.task("t-1");
    assert_eq!(t.status, S::Draft);
    assert_eq!(w.events("t-1"), ["created"]);
    assert_eq!(w.s.sprint.planned(), [id("t-1")]);
    assert_eq!(
        w.s.goal
            .alignment_history
            .as_ref()
            .unwrap()
            .last()
            .unwrap()
            .event,
        "planning"
    );
}

#[test]
fn add_task_guards() {
    let mut w = W::new();
    w.add("t-1", &[]);
    assert_eq!(
        w.refused(|s, n| add_task(s, &planner(), &new_task("t-1", &[]), n)),
        "task-id-unused"
    );
    assert_eq!(
        w.refused(|s, n| add_task(s, &planner(), &new_task("all", &[]), n)),
        "task-id"
    );
    assert_eq!(
        w.refused(|s, n| add_task(s, &planner(), &new_task("../x", &[]), n)),
        "task-id"
    );
    assert_eq!(
        w.refused(|s, n| add_task(s, &planner(), &new_task("t-2", &["nope"]), n)),
        "dependency-exists"
    );
    let mut sup = new_task("t-2", &[]);
    sup.supersedes = Some("nope".into());
    assert_eq!(
        w.refused(|s, n| add_task(s, &planner(), &sup, n)),
        "supersedes-exists"
    );
    let mut prio = new_task("t-2", &[]);
    prio.priority = Some(9);
    assert_eq!(
        w.refused(|s, n| add_task(s, &planner(), &prio, n)),
        "priority-range"
    );
    assert_eq!(
        w.refused(|s, n| add_task(s, &coder(1), &new_task("t-2", &[]), n)),
        "permission"
    );
    let cycle = [new_task("a", &["b"]), new_task("b", &["a"])];
    assert_eq!(
        w.refused(|s, n| add_tasks(s, &planner(), &cycle, n)),
        "dependency-cycle"
    );
    // A batch may depend on its own members.
    let batch = [new_task("x", &[]), new_task("y", &["x"])];
    w.ok(|s, n| add_tasks(s, &Who::Human, &batch, n));
}

// ----- amend-task

#[test]
fn amend_task_changes_fields_and_records_them() {
    let mut w = W::new();
    w.add("t-1", &[]);
    w.add("t-2", &[]);
    let change = Amendment {
        priority: Some(1),
        depends_on: Some(vec![id("t-1")]),
        ..Amendment::default()
    };
    w.ok(|s, n| amend_task(s, &planner(), &id("t-2"), &change, n));
    assert_eq!(w.task("t-2").priority, Some(1));
    assert_eq!(w.events("t-2").last().unwrap(), "amended");
}

#[test]
fn amend_task_guards() {
    let mut w = W::new();
    w.add("t-1", &[]);
    w.add("t-2", &["t-1"]);
    let cycle = Amendment {
        depends_on: Some(vec![id("t-2")]),
        ..Amendment::default()
    };
    assert_eq!(
        w.refused(|s, n| amend_task(s, &planner(), &id("t-1"), &cycle, n)),
        "dependency-cycle"
    );
    let same = Amendment {
        description: Some("Implement t-1".into()),
        ..Amendment::default()
    };
    assert_eq!(
        w.refused(|s, n| amend_task(s, &planner(), &id("t-1"), &same, n)),
        "amend-changes"
    );
    let prio = Amendment {
        priority: Some(2),
        ..Amendment::default()
    };
    assert_eq!(
        w.refused(|s, n| amend_task(s, &coder(1), &id("t-1"), &prio, n)),
        "permission"
    );
    w.claimed("t-3", 1);
    assert_eq!(
        w.refused(|s, n| amend_task(s, &planner(), &id("t-3"), &prio, n)),
        "no-such-transition"
    );
}

// ----- DRAFT → UNCLAIMED

#[test]
fn finalize_keeps_the_spec_blob() {
    let mut w = W::new();
    w.unclaimed("t-1", &[]);
    assert_eq!(w.task("t-1").status, S::Unclaimed);
    assert_eq!(w.task("t-1").spec_hash.as_deref(), Some("abc123"));
    assert_eq!(w.events("t-1"), ["created", "finalized"]);
}

#[test]
fn finalize_gates() {
    let mut w = W::new();
    w.add("t-1", &[]);
    let missing = SpecFacts {
        exists: false,
        blob: None,
    };
    assert_eq!(
        w.refused(|s, n| finalize(s, &planner(), &id("t-1"), &missing, n)),
        "finalize-gates"
    );
    let vague = Amendment {
        done_when: Some("it works".into()),
        ..Amendment::default()
    };
    w.ok(|s, n| amend_task(s, &planner(), &id("t-1"), &vague, n));
    assert_eq!(
        w.refused(|s, n| finalize(s, &planner(), &id("t-1"), &spec(), n)),
        "finalize-gates"
    );
    let good = Amendment {
        done_when: Some("report --json prints a totals key".into()),
        scope: Some(String::new()),
        ..Amendment::default()
    };
    w.ok(|s, n| amend_task(s, &planner(), &id("t-1"), &good, n));
    assert_eq!(
        w.refused(|s, n| finalize(s, &planner(), &id("t-1"), &spec(), n)),
        "finalize-gates",
        "no scope"
    );
    assert_eq!(
        w.refused(|s, n| finalize(s, &coder(1), &id("t-1"), &spec(), n)),
        "permission"
    );
    w.unclaimed("t-2", &[]);
    assert_eq!(
        w.refused(|s, n| finalize(s, &planner(), &id("t-2"), &spec(), n)),
        "no-such-transition"
    );
}

#[test]
fn plan_approval_human_leaves_finalizing_to_people() {
    let mut w = W::new();
    w.s.config.plan_approval = Some(PlanApproval::Human);
    w.add("t-1", &[]);
    assert_eq!(
        w.refused(|s, n| finalize(s, &planner(), &id("t-1"), &spec(), n)),
        "plan-approval"
    );
    w.ok(|s, n| finalize(s, &Who::Human, &id("t-1"), &spec(), n));
}

#[test]
fn test_only_tasks_are_finalized_with_a_warning() {
    let mut w = W::new();
    let mut t = new_task("t-1", &[]);
    t.description = "Write tests for the parser".into();
    t.scope = Some("tests/parser.rs".into());
    w.ok(|s, n| add_task(s, &planner(), &t, n));
    let outcome = w.ok(|s, n| finalize(s, &planner(), &id("t-1"), &spec(), n));
    assert_eq!(outcome.warnings.len(), 1);
}

// ----- UNCLAIMED → CLAIMED

#[test]
fn claim_sets_the_worktree_lease_and_agent() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    let t = w.task("t-1");
    assert_eq!(t.status, S::Claimed);
    assert_eq!(t.assigned_to, Some(agent("coder-1")));
    assert_eq!(t.worktree.as_deref(), Some(".worktrees/t-1"));
    assert_eq!(t.base_commit.as_ref().map(|c| c.as_str()), Some(BASE));
    assert_eq!(t.lease_expires, Some(w.now.plus_seconds(120)));
    assert_eq!(t.iteration, Some(0));
    let a = w.s.agents.get(&agent("coder-1")).unwrap();
    assert_eq!(
        (a.status, a.current_task.clone()),
        (AgentStatus::Working, Some(id("t-1")))
    );
    assert_eq!(w.events("t-1").last().unwrap(), "claimed");
}

#[test]
fn claim_guards() {
    let mut w = W::new();
    w.unclaimed("dep", &[]);
    w.unclaimed("t-1", &["dep"]);
    let c1 = agent("coder-1");
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("t-1"), &c1, n)),
        "dependencies-satisfied"
    );
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("dep"), &agent("coder-9"), n)),
        "registered"
    );
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("dep"), &agent("code-reviewer-1"), n)),
        "claim-coder"
    );
    w.claimed("t-2", 1);
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("dep"), &c1, n)),
        "one-task-per-coder"
    );
    let t = w.s.task_mut(&id("dep")).unwrap();
    t.failed_by = Some(vec![agent("coder-2")]);
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("dep"), &agent("coder-2"), n)),
        "failed-by"
    );
    w.s.task_mut(&id("dep")).unwrap().failed_by = Some(vec![agent("coder-2"), agent("coder-1")]);
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("dep"), &agent("coder-3"), n)),
        "hypothesis-exhaustion"
    );
    w.add("draft", &[]);
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("draft"), &agent("coder-3"), n)),
        "forbidden-transition"
    );
}

#[test]
fn a_claim_whose_plan_changed_meanwhile_is_refused() {
    let mut w = W::new();
    w.unclaimed("t-1", &[]);
    let base = CommitId::parse(BASE).unwrap();
    let stale_plan = ClaimKind::IntegrationFix;
    assert_eq!(
        w.refused(|s, n| claim(
            s,
            &id("t-1"),
            &agent("coder-1"),
            &stale_plan,
            Some(&base),
            n
        )),
        "claim-changed"
    );
}

#[test]
fn same_coder_reclaims_a_rejected_task_keeping_its_counters() {
    let mut w = W::new();
    w.rejected("t-1");
    w.claim("t-1", 1);
    let t = w.task("t-1");
    assert_eq!(t.status, S::Claimed);
    assert_eq!(t.review_cycles_current, Some(1));
    assert_eq!(w.events("t-1").last().unwrap(), "reclaimed_after_rejection");
}

#[test]
fn same_coder_resumes_its_claimed_task() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    w.later(60);
    w.claim("t-1", 1);
    assert_eq!(w.task("t-1").lease_expires, Some(w.now.plus_seconds(120)));
    assert_eq!(w.events("t-1").last().unwrap(), "resumed");
}

#[test]
fn another_coder_takes_over_a_rejected_task_only_when_the_assignee_is_gone() {
    let mut w = W::new();
    w.rejected("t-1");
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("t-1"), &agent("coder-2"), n)),
        "claimed-by-other"
    );
    w.later(121);
    w.claim("t-1", 2);
    let t = w.task("t-1");
    assert_eq!(
        (t.assigned_to.clone(), t.review_cycles_current, t.iteration),
        (Some(agent("coder-2")), Some(0), Some(0))
    );
    let last = t.history().last().unwrap();
    assert_eq!(last.event, "reassigned_after_rejection");
    assert_eq!(
        last.extra.get("previous_assignee").and_then(|n| n.as_str()),
        Some("coder-1")
    );
}

#[test]
fn another_coder_takes_over_a_claimed_task_when_its_lease_expired() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("t-1"), &agent("coder-2"), n)),
        "claimed-by-other"
    );
    w.later(121);
    w.claim("t-1", 2);
    assert_eq!(w.events("t-1").last().unwrap(), "lease_expired_reassigned");
    assert_eq!(
        w.s.agents.get(&agent("coder-1")).unwrap().current_task,
        None
    );
}

#[test]
fn integration_failed_tasks_are_claimed_for_a_fix_keeping_the_worktree() {
    let mut w = W::new();
    w.failed_integration("t-1");
    w.claim("t-1", 2);
    let t = w.task("t-1");
    assert_eq!((t.status, t.integration_fix), (S::Claimed, Some(true)));
    assert_eq!(
        w.events("t-1").last().unwrap(),
        "claimed_for_integration_fix"
    );
}

// ----- CLAIMED → READY_FOR_REVIEW

#[test]
fn submit_records_the_commit_and_waits() {
    let mut w = W::new();
    w.submitted("t-1", 1);
    let t = w.task("t-1");
    assert_eq!(
        (t.status, t.review_commit.as_ref().map(|c| c.as_str())),
        (S::ReadyForReview, Some(HEAD))
    );
    assert_eq!(
        w.s.agents.get(&agent("coder-1")).unwrap().status,
        AgentStatus::Waiting
    );
}

#[test]
fn submit_guards() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    let t1 = id("t-1");
    let with = |f: fn(&mut SubmitFacts)| {
        let mut x = facts();
        f(&mut x);
        x
    };
    assert_eq!(
        w.refused(|s, n| submit(s, &coder(2), &t1, None, &facts(), n)),
        "submit-assignee"
    );
    assert_eq!(
        w.refused(|s, n| submit(s, &Who::Human, &t1, None, &facts(), n)),
        "permission"
    );
    assert_eq!(
        w.refused(|s, n| submit(
            s,
            &coder(1),
            &t1,
            None,
            &with(|f| f.dirty = vec!["x".into()]),
            n
        )),
        "clean-worktree"
    );
    assert_eq!(
        w.refused(|s, n| submit(s, &coder(1), &t1, Some("3333333"), &facts(), n)),
        "submit-head"
    );
    assert_eq!(
        w.refused(|s, n| submit(
            s,
            &coder(1),
            &t1,
            None,
            &with(|f| f.head = CommitId::parse(BASE).unwrap()),
            n
        )),
        "submit-new-commit"
    );
    assert_eq!(
        w.refused(|s, n| submit(
            s,
            &coder(1),
            &t1,
            None,
            &with(|f| f.descends_from_base = false),
            n
        )),
        "submit-descends"
    );
    assert_eq!(
        w.refused(|s, n| submit(
            s,
            &coder(1),
            &t1,
            None,
            &with(|f| f.changed = vec![".ci/run".into()]),
            n
        )),
        "protected-paths"
    );
    w.s.task_mut(&t1).unwrap().paths = Some(vec!["src/**".into()]);
    assert_eq!(
        w.refused(|s, n| submit(
            s,
            &coder(1),
            &t1,
            None,
            &with(|f| f.changed = vec!["README.md".into()]),
            n
        )),
        "task-paths"
    );
    w.s.task_mut(&t1).unwrap().allow_protected = Some(vec![".ci/**".into()]);
    w.s.task_mut(&t1).unwrap().paths = None;
    w.ok(|s, n| {
        submit(
            s,
            &coder(1),
            &t1,
            Some(&HEAD[..7]),
            &with(|f| f.changed = vec![".ci/run".into()]),
            n,
        )
    });
}

// ----- claim review, verdicts

#[test]
fn claim_review_guards() {
    let mut w = W::new();
    w.in_review("t-1", 1, 1);
    assert_eq!(w.task("t-1").reviewing_by, Some(agent("code-reviewer-1")));
    assert_eq!(
        w.refused(|s, n| claim_review(s, &id("t-1"), &agent("code-reviewer-2"), n)),
        "review-lease-live"
    );
    assert_eq!(
        w.refused(|s, n| claim_review(s, &id("t-1"), &agent("code-reviewer-7"), n)),
        "registered"
    );
    assert_eq!(
        w.refused(|s, n| claim_review(s, &id("t-1"), &agent("coder-1"), n)),
        "claim-reviewer"
    );
    w.submitted("t-2", 2);
    assert_eq!(
        w.refused(|s, n| claim_review(s, &id("t-2"), &agent("code-reviewer-1"), n)),
        "one-review-per-reviewer"
    );
    w.later(121);
    w.ok(|s, n| claim_review(s, &id("t-1"), &agent("code-reviewer-2"), n));
    assert!(w.events("t-1").contains(&"review_lease_expired".to_owned()));
    w.claimed("t-3", 3);
    assert_eq!(
        w.refused(|s, n| claim_review(s, &id("t-3"), &agent("code-reviewer-1"), n)),
        "no-such-transition"
    );
}

#[test]
fn approve_by_the_claiming_reviewer_for_the_submitted_commit() {
    let mut w = W::new();
    w.approved("t-1");
    let t = w.task("t-1");
    assert_eq!(
        (t.status, t.approved_by.clone(), t.reviewing_by.clone()),
        (S::Approved, Some(agent("code-reviewer-1")), None)
    );
}

#[test]
fn verdict_guards() {
    let mut w = W::new();
    w.in_review("t-1", 1, 1);
    let t1 = id("t-1");
    assert_eq!(
        w.refused(|s, n| verdict(s, &reviewer(2), &t1, &Verdict::Approve, HEAD, n)),
        "verdict-claim"
    );
    assert_eq!(
        w.refused(|s, n| verdict(s, &Who::Human, &t1, &Verdict::Approve, HEAD, n)),
        "permission"
    );
    assert_eq!(
        w.refused(|s, n| verdict(s, &reviewer(1), &t1, &Verdict::Approve, BASE, n)),
        "verdict-commit"
    );
    let vague = Verdict::Reject {
        reason: "the tests fail".into(),
    };
    assert_eq!(
        w.refused(|s, n| verdict(s, &reviewer(1), &t1, &vague, HEAD, n)),
        "rejection-cites"
    );
    w.claimed("t-2", 2);
    assert_eq!(
        w.refused(|s, n| verdict(s, &reviewer(1), &id("t-2"), &Verdict::Approve, HEAD, n)),
        "forbidden-transition"
    );
}

#[test]
fn reject_counts_cycles_and_wakes_the_coder() {
    let mut w = W::new();
    w.rejected("t-1");
    let t = w.task("t-1");
    assert_eq!(
        (t.status, t.review_cycles_current, t.review_cycles_total),
        (S::Rejected, Some(1), Some(1))
    );
    assert!(
        t.rejection_reason
            .as_deref()
            .unwrap()
            .contains("src/report.rs:42")
    );
    assert_eq!(
        w.refused(|s, n| verdict(s, &reviewer(1), &id("t-1"), &Verdict::Approve, HEAD, n)),
        "forbidden-transition"
    );
}

#[test]
fn the_last_allowed_rejection_blocks_the_task_as_a_review_deadlock() {
    let mut w = W::new();
    w.s.config.max_review_cycles = Some(2);
    w.rejected("t-1");
    w.claim("t-1", 1);
    w.ok(|s, n| submit(s, &coder(1), &id("t-1"), None, &facts(), n));
    w.ok(|s, n| claim_review(s, &id("t-1"), &agent("code-reviewer-1"), n));
    w.ok(|s, n| verdict(s, &reviewer(1), &id("t-1"), &reject(), HEAD, n));
    let t = w.task("t-1");
    assert_eq!(
        (t.status, t.blocked_reason.as_deref()),
        (S::Blocked, Some("review_deadlock"))
    );
    assert_eq!(t.failed_by.as_deref(), Some(&[agent("coder-1")][..]));
    assert!(!t.blocked_questions.as_ref().unwrap().is_empty());
    assert_eq!(
        w.s.anomalies().last().unwrap().kind,
        AnomalyType::ReviewDeadlock
    );
}

#[test]
fn a_verdict_from_a_broken_boundary_is_voided() {
    let mut w = W::new();
    w.approved("t-1");
    w.ok(|s, n| void_verdict(s, &id("t-1"), "reviewer changed the worktree", n));
    assert_eq!(w.task("t-1").status, S::ReadyForReview);
    w.s.task_mut(&id("t-1")).unwrap().reviewing_by = None;
    w.ok(|s, n| claim_review(s, &id("t-1"), &agent("code-reviewer-1"), n));
    w.ok(|s, n| verdict(s, &reviewer(1), &id("t-1"), &reject(), HEAD, n));
    w.ok(|s, n| void_verdict(s, &id("t-1"), "again", n));
    assert_eq!(w.task("t-1").review_cycles_current, Some(0));
    w.claimed("t-2", 2);
    assert_eq!(
        w.refused(|s, n| void_verdict(s, &id("t-2"), "x", n)),
        "no-such-transition"
    );
}

// ----- block, handoff

#[test]
fn block_by_the_coder_and_by_the_supervisor() {
    let mut w = W::new();
    w.blocked("t-1");
    let t = w.task("t-1");
    assert_eq!(
        (t.status, t.failed_by.as_ref().map(Vec::len)),
        (S::Blocked, Some(0)),
        "a coder's own block blames nobody"
    );
    assert_eq!(
        w.s.agents.get(&agent("coder-1")).unwrap().status,
        AgentStatus::Idle
    );
    w.claimed("t-2", 2);
    w.ok(|s, n| {
        block(
            s,
            &Who::Supervisor,
            &id("t-2"),
            "Max iterations (10) reached without approval",
            &["split it?".into()],
            &[],
            BlockCause::CoderFailure,
            n,
        )
    });
    assert_eq!(
        w.task("t-2").failed_by.as_deref(),
        Some(&[agent("coder-2")][..])
    );
    w.claimed("t-3", 3);
    w.ok(|s, n| {
        block(
            s,
            &Who::Supervisor,
            &id("t-3"),
            "usage limit",
            &["wait?".into()],
            &[],
            BlockCause::Environment,
            n,
        )
    });
    assert_eq!(w.task("t-3").failed_by.as_ref().map(Vec::len), Some(0));
}

#[test]
fn block_guards() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    let t1 = id("t-1");
    assert_eq!(
        w.refused(|s, n| block(s, &coder(1), &t1, "x", &[], &[], BlockCause::Agent, n)),
        "block-questions"
    );
    let four: Vec<String> = (0..4).map(|i| format!("q{i}")).collect();
    assert_eq!(
        w.refused(|s, n| block(s, &coder(1), &t1, "x", &four, &[], BlockCause::Agent, n)),
        "block-questions"
    );
    assert_eq!(
        w.refused(|s, n| block(
            s,
            &coder(2),
            &t1,
            "x",
            &["q".into()],
            &[],
            BlockCause::Agent,
            n
        )),
        "block-assignee"
    );
    assert_eq!(
        w.refused(|s, n| block(
            s,
            &Who::Human,
            &t1,
            "x",
            &["q".into()],
            &[],
            BlockCause::Agent,
            n
        )),
        "permission"
    );
    assert_eq!(
        w.refused(|s, n| block(
            s,
            &coder(1),
            &t1,
            "x",
            &["q".into()],
            &[],
            BlockCause::CoderFailure,
            n
        )),
        "block-cause"
    );
}

#[test]
fn handoff_marks_the_task_and_the_agent() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    assert_eq!(
        w.refused(|s, n| handoff(s, &coder(2), &id("t-1"), "did x", "do y", n)),
        "handoff-assignee"
    );
    w.ok(|s, n| handoff(s, &coder(1), &id("t-1"), "did x", "do y", n));
    assert_eq!(w.task("t-1").handoff_pending, Some(true));
    assert_eq!(
        w.s.agents.get(&agent("coder-1")).unwrap().status,
        AgentStatus::Handoff
    );
    let work = coder_work(&w.s, &agent("coder-1"), w.now);
    assert_eq!(work[0].class, WorkClass::Handoff);
}

// ----- limits

#[test]
fn runs_count_iterations_until_the_limit_blocks_the_task() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    w.s.task_mut(&id("t-1")).unwrap().max_iterations = Some(2);
    let c1 = agent("coder-1");
    assert_eq!(
        w.ok(|s, n| start_run(s, &id("t-1"), &c1, n)).1,
        RunStart::Launch { iteration: 1 }
    );
    assert_eq!(
        w.ok(|s, n| start_run(s, &id("t-1"), &c1, n)).1,
        RunStart::Launch { iteration: 2 }
    );
    assert_eq!(
        w.ok(|s, n| start_run(s, &id("t-1"), &c1, n)).1,
        RunStart::LimitReached { limit: 2 }
    );
    let t = w.task("t-1");
    assert_eq!(t.status, S::Blocked);
    assert_eq!(
        t.blocked_reason.as_deref(),
        Some("Max iterations (2) reached without approval")
    );
    assert_eq!(t.failed_by.as_deref(), Some(&[c1.clone()][..]));
    assert_eq!(t.usage.as_ref().and_then(|u| u.agent_runs), Some(2));
    assert_eq!(w.s.agents.get(&c1).unwrap().iterations_total, Some(2));
    assert_eq!(
        w.refused(|s, n| start_run(s, &id("t-1"), &c1, n)),
        "run-claimed"
    );
    w.s.config.max_coder_iterations = Some(7);
    w.claimed("t-2", 2);
    assert_eq!(iteration_limit(&w.s, &id("t-2")), 7);
}

// ----- merge outcomes

#[test]
fn merged_and_integration_failed() {
    let mut w = W::new();
    w.merged("t-1");
    let t = w.task("t-1");
    assert_eq!((t.status, t.worktree.clone()), (S::Merged, None));
    w.failed_integration("t-2");
    let failure = w.task("t-2").integration_failure.clone().unwrap();
    assert_eq!(failure.paths, Some(vec!["a.txt".to_owned()]));
    w.claimed("t-3", 3);
    let sha = CommitId::parse(HEAD).unwrap();
    assert_eq!(
        w.refused(|s, n| merged(s, &id("t-3"), &sha, "", n)),
        "forbidden-transition"
    );
}

// ----- reassign, unblock, rescope, abandon, releases

#[test]
fn reassign_from_each_source() {
    for setup in [
        W::blocked as fn(&mut W, &str),
        W::rejected,
        W::failed_integration,
    ] {
        let mut w = W::new();
        setup(&mut w, "t-1");
        w.ok(|s, n| reassign(s, &planner(), &id("t-1"), "fresh eyes", false, n));
        let t = w.task("t-1");
        assert_eq!(
            (t.status, t.assigned_to.clone(), t.worktree.clone()),
            (S::Unclaimed, None, None)
        );
        assert_eq!(t.review_cycles_current, Some(0));
        assert_eq!(w.events("t-1").last().unwrap(), "reassigned");
    }
}

#[test]
fn reassign_of_a_live_claim_needs_an_expired_lease_or_a_person_forcing_it() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    assert_eq!(
        w.refused(|s, n| reassign(s, &planner(), &id("t-1"), "x", false, n)),
        "reassign-live-lease"
    );
    assert_eq!(
        w.refused(|s, n| reassign(s, &planner(), &id("t-1"), "x", true, n)),
        "reassign-live-lease"
    );
    assert_eq!(
        w.refused(|s, n| reassign(s, &coder(1), &id("t-1"), "x", true, n)),
        "permission"
    );
    w.ok(|s, n| reassign(s, &Who::Human, &id("t-1"), "x", true, n));
    w.claimed("t-2", 2);
    w.later(121);
    w.ok(|s, n| reassign(s, &planner(), &id("t-2"), "gone", false, n));
}

#[test]
fn unblock_optionally_resets_review_cycles() {
    let mut w = W::new();
    w.s.config.max_review_cycles = Some(1);
    w.rejected("t-1");
    assert_eq!(w.task("t-1").status, S::Blocked);
    w.ok(|s, n| unblock(s, &planner(), &id("t-1"), "spec clarified", false, n));
    assert_eq!(w.task("t-1").review_cycles_current, Some(1));
    w.s.config.max_review_cycles = Some(5);
    w.blocked("t-2");
    w.s.task_mut(&id("t-2")).unwrap().review_cycles_current = Some(3);
    w.ok(|s, n| unblock(s, &Who::Human, &id("t-2"), "spec clarified", true, n));
    assert_eq!(w.task("t-2").review_cycles_current, Some(0));
    w.claimed("t-3", 3);
    assert_eq!(
        w.refused(|s, n| unblock(s, &planner(), &id("t-3"), "x", false, n)),
        "no-such-transition"
    );
}

#[test]
fn rescope_into_replacements_that_name_the_task() {
    let mut w = W::new();
    w.blocked("t-1");
    w.s.task_mut(&id("t-1")).unwrap().failed_by = Some(vec![agent("coder-1"), agent("coder-2")]);
    let mut r = new_task("t-1a", &[]);
    r.supersedes = Some("t-1".into());
    w.ok(|s, n| add_task(s, &planner(), &r, n));
    let into = [id("t-1a")];
    assert_eq!(
        w.refused(|s, n| rescope(s, &planner(), &id("t-1"), &into, "bad", n)),
        "rescope-reason"
    );
    assert_eq!(
        w.refused(|s, n| rescope(
            s,
            &planner(),
            &id("t-1"),
            &[],
            "the format was never specified",
            n
        )),
        "rescope-into"
    );
    w.add("other", &[]);
    assert_eq!(
        w.refused(|s, n| rescope(
            s,
            &planner(),
            &id("t-1"),
            &[id("other")],
            "the format was never specified",
            n
        )),
        "rescope-supersedes"
    );
    assert_eq!(
        w.refused(|s, n| rescope(
            s,
            &coder(1),
            &id("t-1"),
            &into,
            "the format was never specified",
            n
        )),
        "permission"
    );
    w.ok(|s, n| {
        rescope(
            s,
            &planner(),
            &id("t-1"),
            &into,
            "the format was never specified",
            n,
        )
    });
    let t = w.task("t-1");
    assert_eq!(
        (t.status, t.superseded_by.clone()),
        (S::Superseded, Some(into.to_vec()))
    );
    assert_eq!(
        w.s.anomalies().last().unwrap().kind,
        AnomalyType::HypothesisExhaustion
    );
    assert_eq!(
        w.s.goal
            .alignment_history
            .as_ref()
            .unwrap()
            .last()
            .unwrap()
            .event,
        "rescope_t-1"
    );
    w.claimed("t-2", 2);
    assert_eq!(
        w.refused(|s, n| rescope(
            s,
            &planner(),
            &id("t-2"),
            &into,
            "the format was never specified",
            n
        )),
        "no-such-transition"
    );
}

#[test]
fn abandon_any_non_terminal_task_and_warn_about_dependents() {
    for status in [
        S::Draft,
        S::Unclaimed,
        S::Claimed,
        S::ReadyForReview,
        S::Rejected,
        S::Approved,
        S::Blocked,
        S::IntegrationFailed,
    ] {
        let mut w = W::new();
        reach(&mut w, "t-1", status);
        w.ok(|s, n| abandon(s, &planner(), &id("t-1"), "not needed", n));
        assert_eq!(w.task("t-1").status, S::Abandoned, "from {status:?}");
    }
    let mut w = W::new();
    w.unclaimed("t-1", &[]);
    w.unclaimed("t-2", &["t-1"]);
    let outcome = w.ok(|s, n| abandon(s, &Who::Human, &id("t-1"), "not needed", n));
    assert!(outcome.warnings[0].contains("t-2"));
    assert_eq!(
        w.refused(|s, n| abandon(s, &coder(1), &id("t-2"), "x", n)),
        "permission"
    );
}

#[test]
fn release_claims() {
    let mut w = W::new();
    w.in_review("t-1", 1, 1);
    assert_eq!(
        w.refused(|s, n| release_review(s, &Who::Human, &id("t-1"), false, n)),
        "review-lease-expired"
    );
    assert_eq!(
        w.refused(|s, n| release_review(s, &Who::Supervisor, &id("t-1"), true, n)),
        "review-lease-expired"
    );
    w.ok(|s, n| release_review(s, &Who::Human, &id("t-1"), true, n));
    assert_eq!(w.task("t-1").reviewing_by, None);
    assert_eq!(
        w.refused(|s, n| release_review(s, &Who::Human, &id("t-1"), true, n)),
        "review-claimed"
    );
    w.claimed("t-2", 2);
    assert_eq!(
        w.refused(|s, n| planner_moves::release_coder(s, &Who::Human, &id("t-2"), "x", false, n)),
        "coder-lease-expired"
    );
    assert_eq!(
        w.refused(|s, n| planner_moves::release_coder(s, &planner(), &id("t-2"), "x", true, n)),
        "permission"
    );
    w.ok(|s, n| planner_moves::release_coder(s, &Who::Human, &id("t-2"), "x", true, n));
    assert_eq!(w.events("t-2").last().unwrap(), "coder_claim_released");
}

#[test]
fn clear_stale_releases_only_expired_review_claims() {
    let mut w = W::new();
    w.in_review("t-1", 1, 1);
    let none = w.ok(|s, n| clear_stale(s, &Who::Supervisor, n));
    assert!(none.events.is_empty());
    w.later(121);
    let some = w.ok(|s, n| clear_stale(s, &Who::Supervisor, n));
    assert_eq!(some.events.len(), 1);
    assert_eq!(w.task("t-1").reviewing_by, None);
}

// ----- forbidden, terminal

/// Drives a new task into `status` through the lifecycle itself.
fn reach(w: &mut W, t: &str, status: S) {
    match status {
        S::Draft => w.add(t, &[]),
        S::Unclaimed => w.unclaimed(t, &[]),
        S::Claimed => w.claimed(t, 1),
        S::ReadyForReview => w.submitted(t, 1),
        S::Rejected => w.rejected(t),
        S::Approved => w.approved(t),
        S::Merged => w.merged(t),
        S::Blocked => w.blocked(t),
        S::IntegrationFailed => w.failed_integration(t),
        S::Abandoned => {
            w.unclaimed(t, &[]);
            w.ok(|s, n| abandon(s, &Who::Human, &id(t), "x", n));
        }
        S::Superseded => {
            w.unclaimed(t, &[]);
            let mut r = new_task(&format!("{t}-r"), &[]);
            r.supersedes = Some(t.into());
            w.ok(|s, n| add_task(s, &planner(), &r, n));
            w.ok(|s, n| {
                rescope(
                    s,
                    &planner(),
                    &id(t),
                    &[id(&format!("{t}-r"))],
                    "the task was framed wrongly",
                    n,
                )
            });
        }
    }
    assert_eq!(w.task(t).status, status);
}

#[test]
fn nothing_moves_out_of_terminal_states() {
    for status in [S::Merged, S::Superseded, S::Abandoned] {
        let mut w = W::new();
        reach(&mut w, "t-1", status);
        let t1 = id("t-1");
        let rule = "terminal-status";
        assert_eq!(w.refused(|s, n| abandon(s, &Who::Human, &t1, "x", n)), rule);
        assert_eq!(
            w.refused(|s, n| reassign(s, &Who::Human, &t1, "x", true, n)),
            rule
        );
        assert_eq!(
            w.refused(|s, n| unblock(s, &Who::Human, &t1, "x", false, n)),
            rule
        );
        assert_eq!(
            w.refused(|s, n| plan_claim(s, &t1, &agent("coder-2"), n)),
            rule
        );
        assert_eq!(
            w.refused(|s, n| amend_task(
                s,
                &Who::Human,
                &t1,
                &Amendment {
                    priority: Some(1),
                    ..Amendment::default()
                },
                n
            )),
            rule
        );
        assert_eq!(
            w.refused(|s, n| verdict(s, &reviewer(1), &t1, &Verdict::Approve, HEAD, n)),
            rule
        );
    }
}

#[test]
fn forbidden_moves_name_their_rule() {
    let mut w = W::new();
    w.add("draft", &[]);
    assert_eq!(
        w.refused(|s, n| plan_claim(s, &id("draft"), &agent("coder-1"), n)),
        "forbidden-transition"
    );
    w.claimed("c", 2);
    let sha = CommitId::parse(HEAD).unwrap();
    assert_eq!(
        w.refused(|s, n| merged(s, &id("c"), &sha, "", n)),
        "forbidden-transition"
    );
    assert_eq!(
        w.refused(|s, n| verdict(s, &reviewer(1), &id("c"), &Verdict::Approve, HEAD, n)),
        "forbidden-transition"
    );
    w.rejected("r");
    assert_eq!(
        w.refused(|s, n| verdict(s, &reviewer(1), &id("r"), &Verdict::Approve, HEAD, n)),
        "forbidden-transition"
    );
}

// ----- registration

#[test]
fn registration_collision_and_generations() {
    let mut w = W::new();
    let c1 = agent("coder-1");
    let rule = w.refused(|s, n| register(s, &c1, Role::Coder, "new", &Registration::default(), n));
    assert_eq!(rule, "collision");
    assert_eq!(
        w.refused(|s, n| register(
            s,
            &agent("coder-5"),
            Role::Planner,
            "x",
            &Registration::default(),
            n
        )),
        "agent-role"
    );
    w.later(121);
    w.ok(|s, n| register(s, &c1, Role::Coder, "new", &Registration::default(), n));
    assert_eq!(
        w.s.agents.get(&c1).unwrap().generation.as_deref(),
        Some("new")
    );
    assert_eq!(
        w.refused(|s, _| unregister(s, &c1, Some("old"))),
        "stale-generation"
    );
    w.ok(|s, _| unregister(s, &c1, Some("new")));
    assert!(w.s.agents.get(&c1).is_none());
    assert_eq!(
        check_generation(&c1, Some("a"), None).unwrap_err().rule,
        "agent-generation"
    );
    assert!(
        check_generation(&c1, None, None).is_ok(),
        "entries of the original tooling have no generation"
    );
}

#[test]
fn a_restarted_reviewer_drops_its_stale_review_claims() {
    let mut w = W::new();
    w.in_review("t-1", 1, 1);
    w.later(121);
    w.ok(|s, n| {
        register(
            s,
            &agent("code-reviewer-1"),
            Role::CodeReviewer,
            "again",
            &Registration::default(),
            n,
        )
    });
    assert_eq!(w.task("t-1").reviewing_by, None);
}

// ----- sprint and goal

#[test]
fn the_transaction_that_finishes_the_last_planned_task_completes_the_sprint() {
    let mut w = W::new();
    w.merged("t-1");
    w.blocked("t-2");
    assert!(
        complete_if_done(&mut w.s, w.now).is_none(),
        "BLOCKED is not terminal"
    );
    w.ok(|s, n| abandon(s, &planner(), &id("t-2"), "dropped", n));
    assert!(complete_if_done(&mut w.s, w.now).is_some());
    assert_eq!(w.s.sprint.status, SprintStatus::Completed);
    w.ok(|s, n| sprint_next(s, &planner(), n));
    assert_eq!(
        (w.s.sprint.id.as_str(), w.s.sprint.status),
        ("sprint-2", SprintStatus::InProgress)
    );
    assert!(w.s.sprint.planned().is_empty());
    w.ok(|s, n| goal_complete(s, &planner(), n));
    assert_eq!(w.s.goal.status, Some(GoalStatus::Completed));
}

#[test]
fn sprint_controls() {
    let mut w = W::new();
    w.unclaimed("t-1", &[]);
    assert_eq!(
        w.refused(|s, n| sprint_next(s, &planner(), n)),
        "sprint-status"
    );
    assert_eq!(
        w.refused(|s, n| goal_complete(s, &planner(), n)),
        "goal-open-tasks"
    );
    assert_eq!(
        w.refused(|s, n| checkpoint(s, &coder(1), None, n)),
        "permission"
    );
    w.ok(|s, n| checkpoint(s, &planner(), Some("review the plan"), n));
    assert_eq!(w.s.sprint.status, SprintStatus::Checkpoint);
    assert_eq!(
        w.refused(|s, n| resume(s, &planner(), None, n)),
        "permission"
    );
    assert_eq!(
        w.refused(|s, n| resume(s, &Who::Human, Some("MAYBE"), n)),
        "resume-decision"
    );
    w.ok(|s, n| resume(s, &Who::Human, Some("REPLAN"), n));
    assert_eq!(w.s.sprint.status, SprintStatus::InProgress);
    assert!(format!("{:?}", w.s.sprint.retrospective).contains("REPLAN"));
    w.ok(|s, n| abort(s, &Who::Human, true, n));
    assert_eq!(
        (w.s.sprint.status, w.s.goal.status),
        (SprintStatus::Aborted, Some(GoalStatus::Aborted))
    );
}

// ----- claimability and ordering

#[test]
fn coder_work_follows_the_six_classes_then_priority_dependents_and_age() {
    let mut w = W::new();
    w.unclaimed("low", &[]);
    w.s.task_mut(&id("low")).unwrap().priority = Some(5);
    w.later(1);
    w.unclaimed("hub", &[]);
    w.later(1);
    w.unclaimed("leaf", &[]);
    w.add("waits", &["hub"]);
    w.failed_integration("fix");
    w.s.task_mut(&id("fix")).unwrap().assigned_to = Some(agent("coder-3"));
    w.claimed("mine", 2);
    let order: Vec<(WorkClass, String)> = coder_work(&w.s, &agent("coder-2"), w.now)
        .into_iter()
        .map(|c| (c.class, c.task.to_string()))
        .collect();
    assert_eq!(
        order,
        [
            (WorkClass::OwnClaimed, "mine".into()),
            (WorkClass::IntegrationFix, "fix".into()),
            (WorkClass::Unclaimed, "hub".into()),
            (WorkClass::Unclaimed, "leaf".into()),
            (WorkClass::Unclaimed, "low".into()),
        ]
    );
    w.s.task_mut(&id("hub")).unwrap().failed_by = Some(vec![agent("coder-1")]);
    let for_c1: Vec<String> = coder_work(&w.s, &agent("coder-1"), w.now)
        .into_iter()
        .map(|c| c.task.to_string())
        .collect();
    assert!(!for_c1.contains(&"hub".to_owned()), "the caller failed it");
    w.later(121);
    let expired = coder_work(&w.s, &agent("coder-1"), w.now);
    assert!(
        expired
            .iter()
            .any(|c| c.class == WorkClass::Expired && c.task == id("mine"))
    );
}

#[test]
fn reviewer_work_merges_its_approvals_first_then_reviews_oldest_first() {
    let mut w = W::new();
    w.approved("a");
    w.s.task_mut(&id("a")).unwrap().assigned_to = None;
    w.s.agents.get_mut(&agent("coder-1")).unwrap().current_task = None;
    w.submitted("b", 2);
    w.later(5);
    w.submitted("c", 3);
    let work = reviewer_work(&w.s, &agent("code-reviewer-1"), w.now);
    assert_eq!(
        work,
        [
            ReviewWork::Merge(id("a")),
            ReviewWork::Review(id("b")),
            ReviewWork::Review(id("c"))
        ]
    );
    let other = reviewer_work(&w.s, &agent("code-reviewer-2"), w.now);
    assert_eq!(
        other[0],
        ReviewWork::Review(id("b")),
        "another reviewer's live approval is theirs to merge"
    );
}

// ----- property: random operation sequences

mod property {
    use std::sync::atomic::{AtomicU16, Ordering};

    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::*;

    static SEEN: AtomicU16 = AtomicU16::new(0);

    fn bit(status: S) -> u16 {
        1 << S::ALL.iter().position(|s| *s == status).unwrap()
    }

    /// Applies operation `op` to task `t` with actors picked by `a`; `Err` is a refusal.
    fn apply(w: &mut W, op: u8, t: usize, a: usize) -> Result<(), Refusal> {
        let tid = id(&format!("t{t}"));
        let c = agent(&format!("coder-{}", a % 3 + 1));
        let r = agent(&format!("code-reviewer-{}", a % 2 + 1));
        let now = w.now;
        let s = &mut w.s;
        let assignee = || {
            s.task(&tid)
                .and_then(|x| x.assigned_to.clone())
                .map(Who::Agent)
                .unwrap_or(Who::Human)
        };
        let who_reviews = s
            .task(&tid)
            .and_then(|x| x.reviewing_by.clone())
            .map(Who::Agent)
            .unwrap_or(Who::Human);
        let base = CommitId::parse(BASE).unwrap();
        match op {
            0 => {
                let deps: Vec<&str> = Vec::new();
                let mut n = new_task(tid.as_str(), &deps);
                if t > 0 && a.is_multiple_of(2) {
                    n.depends_on = vec![format!("t{}", t - 1)];
                }
                add_task(s, &planner(), &n, now).map(drop)
            }
            1 => finalize(s, &planner(), &tid, &spec(), now).map(drop),
            2 => {
                let kind = plan_claim(s, &tid, &c, now)?;
                claim(s, &tid, &c, &kind, Some(&base), now).map(drop)
            }
            3 => {
                let who = assignee();
                submit(s, &who, &tid, None, &facts(), now).map(drop)
            }
            4 => claim_review(s, &tid, &r, now).map(drop),
            5 => verdict(s, &who_reviews, &tid, &Verdict::Approve, HEAD, now).map(drop),
            6 => verdict(s, &who_reviews, &tid, &reject(), HEAD, now).map(drop),
            7 => {
                let who = assignee();
                block(
                    s,
                    &who,
                    &tid,
                    "stuck",
                    &["what now?".into()],
                    &[],
                    BlockCause::Agent,
                    now,
                )
                .map(drop)
            }
            8 => merged(s, &tid, &CommitId::parse(HEAD).unwrap(), "", now).map(drop),
            9 => integration_failed(s, &tid, FailureKind::Tests, &[], Some(".liza/x.log"), now)
                .map(drop),
            10 => reassign(s, &planner(), &tid, "another try", a.is_multiple_of(2), now).map(drop),
            11 => unblock(s, &Who::Human, &tid, "clarified", a.is_multiple_of(2), now).map(drop),
            12 => {
                let rid = format!("r{t}x{a}");
                let mut n = new_task(&rid, &[]);
                n.supersedes = Some(tid.to_string());
                add_task(s, &planner(), &n, now)?;
                rescope(
                    s,
                    &planner(),
                    &tid,
                    &[id(&rid)],
                    "the framing was wrong",
                    now,
                )
                .map(drop)
            }
            13 => abandon(s, &planner(), &tid, "not needed", now).map(drop),
            14 => release_review(s, &Who::Human, &tid, a.is_multiple_of(2), now).map(drop),
            15 => planner_moves::release_coder(
                s,
                &Who::Human,
                &tid,
                "stuck",
                a.is_multiple_of(2),
                now,
            )
            .map(drop),
            16 => void_verdict(s, &tid, "boundary", now).map(drop),
            17 => {
                w.later(121);
                Ok(())
            }
            18 => {
                let who = assignee();
                handoff(s, &who, &tid, "half done", "finish it", now).map(drop)
            }
            _ => register(
                s,
                &c,
                Role::Coder,
                &format!("g{t}{a}"),
                &Registration::default(),
                now,
            )
            .map(drop),
        }
    }

    /// "Advance task t along the happy path (or a failure branch, by `a`)".
    const ADVANCE: u8 = 100;

    fn next_step(w: &W, t: usize, a: usize) -> u8 {
        let task = w.s.task(&id(&format!("t{t}")));
        match task.map(|x| (x.status, x.reviewing_by.is_some())) {
            None => 0,
            Some((S::Draft, _)) => 1,
            Some((S::Unclaimed | S::Rejected | S::IntegrationFailed, _)) => 2,
            Some((S::Claimed, _)) => {
                if a == 5 {
                    7
                } else {
                    3
                }
            }
            Some((S::ReadyForReview, false)) => 4,
            Some((S::ReadyForReview, true)) => {
                if a.is_multiple_of(3) {
                    6
                } else {
                    5
                }
            }
            Some((S::Approved, _)) => {
                if a.is_multiple_of(3) {
                    9
                } else {
                    8
                }
            }
            Some((S::Blocked, _)) => 11,
            Some(_) => 13,
        }
    }

    fn run(ops: &[(u8, usize, usize)]) -> Result<(), TestCaseError> {
        let mut w = W::new();
        for &(op, t, a) in ops {
            let op = if op == ADVANCE {
                next_step(&w, t, a)
            } else {
                op
            };
            let before = w.s.clone();
            match apply(&mut w, op, t, a) {
                Ok(()) => {
                    let env = ValidationEnv::new(None, w.now);
                    let errors: Vec<String> = validate(&w.s, &env)
                        .into_iter()
                        .filter(|f| f.is_error())
                        .map(|f| f.message)
                        .collect();
                    prop_assert!(
                        errors.is_empty(),
                        "op {op} on t{t} left an invalid state: {errors:?}"
                    );
                }
                Err(refusal) => {
                    // op 12 adds its replacement before a rescope that may be refused.
                    if op != 12 {
                        prop_assert_eq!(
                            &w.s,
                            &before,
                            "refused op {} ({}) changed the state",
                            op,
                            refusal
                        );
                    }
                }
            }
            for task in &w.s.tasks {
                SEEN.fetch_or(bit(task.status), Ordering::Relaxed);
            }
        }
        Ok(())
    }

    #[test]
    fn random_operations_never_make_an_invalid_state_and_refusals_change_nothing() {
        // Operations favour the happy path so that long chains (to MERGED) are common.
        let weights: [(u8, usize); 21] = [
            (ADVANCE, 40),
            (0, 2),
            (1, 2),
            (2, 3),
            (3, 3),
            (4, 3),
            (5, 2),
            (6, 2),
            (7, 2),
            (8, 2),
            (9, 2),
            (10, 1),
            (11, 1),
            (12, 1),
            (13, 1),
            (14, 1),
            (15, 1),
            (16, 1),
            (17, 1),
            (18, 1),
            (19, 1),
        ];
        let pool: Vec<u8> = weights
            .iter()
            .flat_map(|(op, n)| std::iter::repeat_n(*op, *n))
            .collect();
        let op = proptest::sample::select(pool);
        let strategy = proptest::collection::vec((op, 0usize..3, 0usize..6), 1..80);
        let mut runner = TestRunner::new(Config {
            cases: 512,
            ..Config::default()
        });
        runner.run(&strategy, |ops| run(&ops)).unwrap();
        let seen = SEEN.load(Ordering::Relaxed);
        let missing: Vec<&str> = S::ALL
            .iter()
            .filter(|s| seen & bit(**s) == 0)
            .map(|s| s.as_str())
            .collect();
        assert!(
            missing.is_empty(),
            "the generator never reached {missing:?}"
        );
    }
}
