//! Rows of planning: add-task, amend-task, finalize-task.

use super::*;

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
    let missing = SpecFacts::missing();
    assert_eq!(
        w.refused(|s, n| finalize(s, &planner(), &id("t-1"), &missing, n)),
        "finalize-gates"
    );
    // In the main checkout but not on the integration branch, where worktrees start.
    let uncommitted = SpecFacts {
        committed: false,
        ..spec()
    };
    assert_eq!(
        w.refused(|s, n| finalize(s, &planner(), &id("t-1"), &uncommitted, n)),
        "spec-committed"
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
