//! The planner's and people's moves, and what may never move.

use super::*;

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
        w.ok_l(|s, l, n| reassign(s, &planner(), &id("t-1"), "fresh eyes", false, l, n));
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
        w.refused_l(|s, l, n| reassign(s, &planner(), &id("t-1"), "x", false, l, n)),
        "reassign-live-lease"
    );
    assert_eq!(
        w.refused_l(|s, l, n| reassign(s, &planner(), &id("t-1"), "x", true, l, n)),
        "reassign-live-lease"
    );
    assert_eq!(
        w.refused_l(|s, l, n| reassign(s, &coder(1), &id("t-1"), "x", true, l, n)),
        "permission"
    );
    w.ok_l(|s, l, n| reassign(s, &Who::Human, &id("t-1"), "x", true, l, n));
    w.claimed("t-2", 2);
    w.later(121);
    w.ok_l(|s, l, n| reassign(s, &planner(), &id("t-2"), "gone", false, l, n));
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
        w.refused_l(|s, l, n| release_review(s, &Who::Human, &id("t-1"), false, l, n)),
        "review-lease-expired"
    );
    assert_eq!(
        w.refused_l(|s, l, n| release_review(s, &Who::Supervisor, &id("t-1"), false, l, n)),
        "review-lease-expired"
    );
    w.ok_l(|s, l, n| release_review(s, &Who::Human, &id("t-1"), true, l, n));
    // The reviewer's own supervisor after a run without a verdict (specs/supervisor.md).
    w.in_review("t-3", 3, 2);
    w.ok_l(|s, l, n| release_review(s, &Who::Supervisor, &id("t-3"), true, l, n));
    assert_eq!(w.task("t-3").reviewing_by, None);
    assert_eq!(w.task("t-1").reviewing_by, None);
    assert_eq!(
        w.refused_l(|s, l, n| release_review(s, &Who::Human, &id("t-1"), true, l, n)),
        "review-claimed"
    );
    w.claimed("t-2", 2);
    assert_eq!(
        w.refused_l(|s, l, n| planner_moves::release_coder(
            s,
            &Who::Human,
            &id("t-2"),
            "x",
            false,
            l,
            n
        )),
        "coder-lease-expired"
    );
    assert_eq!(
        w.refused_l(|s, l, n| planner_moves::release_coder(
            s,
            &planner(),
            &id("t-2"),
            "x",
            true,
            l,
            n
        )),
        "permission"
    );
    w.ok_l(|s, l, n| planner_moves::release_coder(s, &Who::Human, &id("t-2"), "x", true, l, n));
    assert_eq!(w.events("t-2").last().unwrap(), "coder_claim_released");
}

#[test]
fn clear_stale_releases_only_expired_review_claims() {
    let mut w = W::new();
    w.in_review("t-1", 1, 1);
    let none = w.ok_l(|s, l, n| clear_stale(s, &Who::Supervisor, l, n));
    assert!(none.events.is_empty());
    w.later(121);
    let some = w.ok_l(|s, l, n| clear_stale(s, &Who::Supervisor, l, n));
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
            w.refused_l(|s, l, n| reassign(s, &Who::Human, &t1, "x", true, l, n)),
            rule
        );
        assert_eq!(
            w.refused(|s, n| unblock(s, &Who::Human, &t1, "x", false, n)),
            rule
        );
        assert_eq!(
            w.refused_l(|s, l, _| plan_claim(s, &t1, &agent("coder-2"), l)),
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
        w.refused_l(|s, l, _| plan_claim(s, &id("draft"), &agent("coder-1"), l)),
        "forbidden-transition"
    );
    w.claimed("c", 2);
    assert_eq!(
        w.refused(|s, n| merged(s, &id("c"), &merge_record(), n)),
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
