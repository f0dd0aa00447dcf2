//! Rows of reviewing, blocking, handing off, limits and merge outcomes.

use super::*;

// ----- claim review, verdicts

#[test]
fn claim_review_guards() {
    let mut w = W::new();
    w.in_review("t-1", 1, 1);
    assert_eq!(w.task("t-1").reviewing_by, Some(agent("code-reviewer-1")));
    assert_eq!(
        w.refused_l(|s, l, n| claim_review(s, &id("t-1"), &agent("code-reviewer-2"), l, n)),
        "review-lease-live"
    );
    assert_eq!(
        w.refused_l(|s, l, n| claim_review(s, &id("t-1"), &agent("code-reviewer-7"), l, n)),
        "registered"
    );
    assert_eq!(
        w.refused_l(|s, l, n| claim_review(s, &id("t-1"), &agent("coder-1"), l, n)),
        "claim-reviewer"
    );
    w.submitted("t-2", 2);
    assert_eq!(
        w.refused_l(|s, l, n| claim_review(s, &id("t-2"), &agent("code-reviewer-1"), l, n)),
        "one-review-per-reviewer"
    );
    w.later(121);
    w.ok_l(|s, l, n| claim_review(s, &id("t-1"), &agent("code-reviewer-2"), l, n));
    assert!(w.events("t-1").contains(&"review_lease_expired".to_owned()));
    w.claimed("t-3", 3);
    assert_eq!(
        w.refused_l(|s, l, n| claim_review(s, &id("t-3"), &agent("code-reviewer-1"), l, n)),
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
    w.ok_l(|s, l, n| claim_review(s, &id("t-1"), &agent("code-reviewer-1"), l, n));
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
    w.ok_l(|s, l, n| claim_review(s, &id("t-1"), &agent("code-reviewer-1"), l, n));
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
    let work = coder_work(&w.s, &agent("coder-1"), &w.l());
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
        w.ok(|s, n| start_run(s, &id("t-1"), &c1, None, n)).1,
        RunStart::Launch { iteration: 1 }
    );
    assert_eq!(
        w.ok(|s, n| start_run(s, &id("t-1"), &c1, None, n)).1,
        RunStart::Launch { iteration: 2 }
    );
    assert_eq!(
        w.ok(|s, n| start_run(s, &id("t-1"), &c1, None, n)).1,
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
        w.refused(|s, n| start_run(s, &id("t-1"), &c1, None, n)),
        "run-claimed"
    );
    w.s.config.max_coder_iterations = Some(7);
    w.claimed("t-2", 2);
    assert_eq!(iteration_limit(&w.s, &id("t-2")), 7);
}

/// specs/ledger.md *Budgets*: a task whose runs reached `config.budget.task` is BLOCKED
/// with the figures instead of getting another run; under it, the run starts.
#[test]
fn a_task_over_its_budget_is_blocked_instead_of_run() {
    use crate::ledger::Totals;
    use crate::model::{BudgetConfig, BudgetLimit};
    let mut w = W::new();
    w.claimed("t-1", 1);
    w.s.config.budget = Some(BudgetConfig {
        task: Some(BudgetLimit {
            tokens: Some(1000),
            ..BudgetLimit::default()
        }),
        ..BudgetConfig::default()
    });
    let c1 = agent("coder-1");
    let used = |tokens| Totals {
        input_tokens: Some(tokens),
        runs: 1,
        ..Totals::default()
    };
    assert_eq!(
        w.ok(|s, n| start_run(s, &id("t-1"), &c1, Some(&used(999)), n))
            .1,
        RunStart::Launch { iteration: 1 }
    );
    let (_, start) = w.ok(|s, n| start_run(s, &id("t-1"), &c1, Some(&used(1000)), n));
    let reason = "Budget exceeded: t-1 used 1,000 tokens of its 1,000 token budget";
    assert_eq!(
        start,
        RunStart::OverBudget {
            reason: reason.into()
        }
    );
    let t = w.task("t-1");
    assert_eq!(t.status, S::Blocked);
    assert_eq!(t.blocked_reason.as_deref(), Some(reason));
    // Nobody is blamed, and the run was not counted.
    assert!(
        t.failed_by.as_ref().is_none_or(Vec::is_empty),
        "{:?}",
        t.failed_by
    );
    assert_eq!(t.iteration, Some(1));
}

/// A built-in coder's run is counted once: as it starts, not again as its result is
/// recorded.
#[test]
fn a_builtin_result_adds_its_tokens_but_not_another_run() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    let c1 = agent("coder-1");
    w.ok(|s, n| start_run(s, &id("t-1"), &c1, None, n));
    let run = crate::lifecycle::RunResult {
        event: crate::event::EventKind::CommitResult,
        result: crate::node::Node::new(crate::node::Value::Null),
        usage: (100, 50),
        summary: "done".into(),
    };
    w.ok(|s, n| crate::lifecycle::record_builtin_result(s, &id("t-1"), &c1, run.clone(), n));
    let usage = w.task("t-1").usage.clone().unwrap();
    assert_eq!(usage.agent_runs, Some(1));
    assert_eq!(
        (usage.prompt_tokens, usage.completion_tokens),
        (Some(100), Some(50))
    );
}

#[test]
fn a_run_report_is_recorded_in_the_history_without_changing_the_task() {
    let mut w = W::new();
    w.claimed("t-1", 1);
    let before = w.task("t-1").clone();
    let c1 = agent("coder-1");
    let report: crate::node::Node = serde_json::from_value(
        serde_json::json!({"implementation_summary": "did\nit", "notes": ""}),
    )
    .unwrap();
    let errors = ["`commit_message` is missing".to_owned()];
    let outcome = w.ok(|s, n| record_run_report(s, &id("t-1"), &c1, report.clone(), &errors, n));
    assert_eq!(outcome.events[0].action, "run_report");
    assert_eq!(outcome.events[0].detail.as_deref(), Some("did it"));
    let t = w.task("t-1");
    assert_eq!(
        (t.status, &t.assigned_to, t.iteration),
        (before.status, &before.assigned_to, before.iteration)
    );
    let event = t.history().last().unwrap();
    assert_eq!(event.event, "run_report");
    assert_eq!(event.agent.as_deref(), Some("coder-1"));
    assert_eq!(event.extra.get("report"), Some(&report));
    assert!(event.extra.get("validation_errors").is_some());
    assert_eq!(
        w.refused(|s, n| record_run_report(s, &id("t-9"), &c1, report.clone(), &[], n)),
        "task-exists"
    );
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
    assert_eq!(
        w.refused(|s, n| merged(s, &id("t-3"), &merge_record(), n)),
        "forbidden-transition"
    );
}

#[test]
fn merged_records_the_merge_type_and_drift_in_history_and_log() {
    let mut w = W::new();
    w.approved("t-1");
    let outcome = w.ok(|s, n| merged(s, &id("t-1"), &merge_record(), n));
    let event = &outcome.events[0];
    assert_eq!(event.action, "merged");
    assert_eq!(event.fields["drift_commits"], Field::Int(2));
    assert_eq!(
        event.fields["merge_type"],
        Field::Text("fast-forward".into())
    );
    let last = w.task("t-1").history().last().unwrap().clone();
    assert_eq!(last.event, "merged");
    assert!(last.extra.get("drift_commits").is_some());
    assert!(w.task("t-1").merge_intent.is_none());
}

#[test]
fn merge_intent_is_recorded_updated_and_dropped_on_approved_tasks_only() {
    let mut w = W::new();
    w.approved("t-1");
    let tip = CommitId::parse(&"b".repeat(40)).unwrap();
    let mut start = None;
    w.ok(|s, n| {
        let approved = s.task(&id("t-1")).unwrap().review_commit.clone().unwrap();
        let (outcome, facts) = begin_merge(s, &id("t-1"), &approved, &tip, &here(), &|_| true, n)?;
        start = Some(facts);
        Ok(outcome)
    });
    let start = start.unwrap();
    let intent = w.task("t-1").merge_intent.clone().unwrap();
    assert_eq!(intent.candidate, start.review_commit);
    assert_eq!(intent.integration_tip, tip);
    assert_eq!(w.task("t-1").status, S::Approved);

    let candidate = CommitId::parse(&"c".repeat(40)).unwrap();
    w.ok(|s, n| set_merge_candidate(s, &id("t-1"), &candidate, &tip, &here(), &|_| true, n));
    assert_eq!(
        w.task("t-1").merge_intent.clone().unwrap().candidate,
        candidate
    );
    w.ok(|s, n| drop_merge_intent(s, &id("t-1"), "interrupted", n));
    assert!(w.task("t-1").merge_intent.is_none());
    assert_eq!(
        w.refused(|s, n| drop_merge_intent(s, &id("t-1"), "again", n)),
        "merge-intent"
    );
    assert_eq!(
        w.refused(|s, n| set_merge_candidate(
            s,
            &id("t-1"),
            &candidate,
            &tip,
            &here(),
            &|_| true,
            n
        )),
        "merge-intent"
    );

    w.claimed("t-2", 2);
    assert_eq!(
        w.refused(
            |s, n| begin_merge(s, &id("t-2"), &tip, &tip, &here(), &|_| true, n).map(|(o, _)| o)
        ),
        "forbidden-transition"
    );
    w.approved("t-3");
    assert_eq!(
        w.refused(
            |s, n| begin_merge(s, &id("t-3"), &tip, &tip, &here(), &|_| true, n).map(|(o, _)| o)
        ),
        "review-commit",
        "only the approved commit is merged"
    );
}

fn here() -> Merger {
    Merger {
        host: "host-a".into(),
        pid: 100,
        checkout: "c1".into(),
    }
}

#[test]
fn a_task_another_hosts_merger_holds_is_refused_until_its_intent_is_an_hour_old() {
    let mut w = W::new();
    w.approved("t-1");
    let tip = CommitId::parse(&"b".repeat(40)).unwrap();
    let approved = w.task("t-1").review_commit.clone().unwrap();
    let other = Merger {
        host: "host-b".into(),
        pid: 100,
        checkout: "c1".into(),
    };
    w.ok(|s, n| begin_merge(s, &id("t-1"), &approved, &tip, &other, &|_| true, n).map(|(o, _)| o));
    assert_eq!(
        w.task("t-1")
            .merge_intent
            .clone()
            .unwrap()
            .merger
            .as_deref(),
        Some("host-b/100/c1")
    );
    assert_eq!(
        w.refused(
            |s, n| begin_merge(s, &id("t-1"), &approved, &tip, &here(), &|_| true, n)
                .map(|(o, _)| o)
        ),
        "merge-intent"
    );
    // Another merger of the same checkout is dead while this one holds its integration
    // lock.
    let sibling = Merger {
        host: "host-b".into(),
        pid: 200,
        checkout: "c1".into(),
    };
    w.ok(|s, n| set_merge_candidate(s, &id("t-1"), &tip, &tip, &sibling, &|_| true, n));
    // An hour later, the other host's merger is taken for dead.
    let intent = w.task("t-1").merge_intent.clone().unwrap();
    let at = intent.at.unwrap();
    let later = at.plus_seconds(FOREIGN_INTENT_LIVES);
    let alive = |_| true;
    assert!(here().other_at_work(&intent, at, alive));
    assert!(!here().other_at_work(&intent, later, alive));
    assert!(!sibling.other_at_work(&intent, at, alive));
    // Another checkout of the same host: at work while its process lives.
    let neighbour = Merger {
        host: "host-b".into(),
        pid: 300,
        checkout: "c2".into(),
    };
    assert!(neighbour.other_at_work(&intent, at, |pid| pid == 200));
    assert!(!neighbour.other_at_work(&intent, at, |_| false));
}

#[test]
fn an_approval_joins_the_merge_queue_and_the_merges_end_takes_it_out() {
    let mut w = W::new();
    w.approved("t-2");
    w.approved("t-1");
    assert_eq!(merge_queue(&w.s), [id("t-2"), id("t-1")]);
    assert_eq!(w.s.merge_queue, Some(vec![id("t-2"), id("t-1")]));
    // An APPROVED task the list misses (a hand edit, v0.1) comes after the listed ones;
    // an entry that is not APPROVED is passed over.
    w.approved("t-3");
    w.s.merge_queue = Some(vec![id("t-1"), id("t-9")]);
    assert_eq!(merge_queue(&w.s), [id("t-1"), id("t-2"), id("t-3")]);
    let record = MergeRecord {
        commit: CommitId::parse(&"a".repeat(40)).unwrap(),
        merge_type: "fast-forward".into(),
        drift_commits: 0,
        retries: 0,
        batch: 2,
    };
    w.ok(|s, n| merged(s, &id("t-1"), &record, n));
    assert_eq!(w.s.merge_queue, Some(vec![id("t-2"), id("t-3")]));
    let head = CommitId::parse(&"d".repeat(40)).unwrap();
    w.ok(|s, n| withdraw_approval(s, &id("t-2"), &head, n));
    let t = w.task("t-2");
    assert_eq!(t.status, S::ReadyForReview);
    assert_eq!(t.review_commit.as_ref(), Some(&head));
    assert!(t.approved_by.is_none());
    assert_eq!(t.history().last().unwrap().event, "approval_withdrawn");
    assert_eq!(w.s.merge_queue, Some(vec![id("t-3")]));
    w.ok(|s, n| nothing_to_merge(s, &id("t-3"), "integration", n));
    assert_eq!(w.s.merge_queue, None, "an empty queue leaves the file");
    assert_eq!(
        w.refused(|s, n| withdraw_approval(s, &id("t-3"), &head, n)),
        "no-such-transition"
    );
}

#[test]
fn integration_failure_records_kind_paths_log_and_reason() {
    let mut w = W::new();
    w.approved("t-1");
    let failure = MergeFailure {
        kind: FailureKind::Tests,
        paths: Vec::new(),
        log: Some(".liza/integration-test-t-1-x.log".into()),
        reason: "scripts/integration-test.sh exited with status 1".into(),
    };
    w.ok(|s, n| integration_failed(s, &id("t-1"), &failure, n));
    let t = w.task("t-1");
    let record = t.integration_failure.clone().unwrap();
    assert_eq!(record.kind, FailureKind::Tests);
    assert_eq!(record.log.as_deref(), failure.log.as_deref());
    assert!(record.extra.get("reason").is_some());
    assert_eq!(t.status, S::IntegrationFailed);
    assert!(t.worktree.is_some(), "the worktree is kept for the fix");
}

#[test]
fn an_approved_task_whose_merge_would_change_nothing_is_blocked_for_the_planner() {
    let mut w = W::new();
    w.approved("t-1");
    w.ok(|s, n| nothing_to_merge(s, &id("t-1"), "integration", n));
    let t = w.task("t-1");
    assert_eq!(t.status, S::Blocked);
    assert!(
        t.blocked_reason
            .as_deref()
            .unwrap()
            .contains("nothing of this task reaches integration")
    );
    assert!(t.merge_intent.is_none() && t.approved_by.is_none());
    assert_eq!(w.events("t-1").last().unwrap(), "blocked");
    w.unclaimed("t-2", &[]);
    assert_eq!(
        w.refused(|s, n| nothing_to_merge(s, &id("t-2"), "integration", n)),
        "no-such-transition"
    );
}

#[test]
fn a_merger_renews_only_its_own_intents_on_approved_tasks_and_logs_each() {
    let mut w = W::new();
    w.approved("t-1");
    w.approved("t-2");
    let tip = CommitId::parse(&"b".repeat(40)).unwrap();
    let other = Merger {
        host: "host-b".into(),
        pid: 100,
        checkout: "c1".into(),
    };
    for (task, merger) in [("t-1", here()), ("t-2", other)] {
        let approved = w.task(task).review_commit.clone().unwrap();
        w.ok(|s, n| {
            begin_merge(s, &id(task), &approved, &tip, &merger, &|_| true, n).map(|(o, _)| o)
        });
    }
    let before = w.task("t-2").merge_intent.clone();
    let later = w.now.plus_seconds(INTENT_RENEWED_EVERY);
    let outcome = renew_merge_intents(&mut w.s, &[id("t-1"), id("t-2"), id("t-9")], &here(), later);
    assert_eq!(w.task("t-1").merge_intent.clone().unwrap().at, Some(later));
    assert_eq!(
        w.task("t-2").merge_intent,
        before,
        "another merger's intent was renewed"
    );
    let renewed: Vec<_> = outcome
        .events
        .iter()
        .map(|e| (e.action.as_str(), e.task.clone()))
        .collect();
    assert_eq!(renewed, [("merge_intent_renewed", Some(id("t-1")))]);
}
