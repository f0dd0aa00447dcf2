//! Rows of claiming and submitting.

use super::*;

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
        w.refused_l(|s, l, _| plan_claim(s, &id("t-1"), &c1, l)),
        "dependencies-satisfied"
    );
    assert_eq!(
        w.refused_l(|s, l, _| plan_claim(s, &id("dep"), &agent("coder-9"), l)),
        "registered"
    );
    assert_eq!(
        w.refused_l(|s, l, _| plan_claim(s, &id("dep"), &agent("code-reviewer-1"), l)),
        "claim-coder"
    );
    w.claimed("t-2", 1);
    assert_eq!(
        w.refused_l(|s, l, _| plan_claim(s, &id("dep"), &c1, l)),
        "one-task-per-coder"
    );
    let t = w.s.task_mut(&id("dep")).unwrap();
    t.failed_by = Some(vec![agent("coder-2")]);
    assert_eq!(
        w.refused_l(|s, l, _| plan_claim(s, &id("dep"), &agent("coder-2"), l)),
        "failed-by"
    );
    w.s.task_mut(&id("dep")).unwrap().failed_by = Some(vec![agent("coder-2"), agent("coder-1")]);
    assert_eq!(
        w.refused_l(|s, l, _| plan_claim(s, &id("dep"), &agent("coder-3"), l)),
        "hypothesis-exhaustion"
    );
    w.add("draft", &[]);
    assert_eq!(
        w.refused_l(|s, l, _| plan_claim(s, &id("draft"), &agent("coder-3"), l)),
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
        w.refused_l(|s, l, n| claim(
            s,
            &id("t-1"),
            &agent("coder-1"),
            &stale_plan,
            Some(&base),
            l,
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
        w.refused_l(|s, l, _| plan_claim(s, &id("t-1"), &agent("coder-2"), l)),
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
        w.refused_l(|s, l, _| plan_claim(s, &id("t-1"), &agent("coder-2"), l)),
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
