//! Registration, the sprint and goal machines, claimability and ordering.

use super::*;

// ----- registration

#[test]
fn registration_collision_and_generations() {
    let mut w = W::new();
    let c1 = agent("coder-1");
    let again = |s: &mut State, l: &Leases, n| {
        register(s, &c1, Role::Coder, "new", &Registration::default(), l, n)
    };
    assert_eq!(w.refused_l(again), "collision");
    // Its lease's timestamp long past by this clock proves nothing: only its
    // registration seen silent for the lease period does.
    w.now = w.now.plus_seconds(7200);
    assert_eq!(w.refused_l(again), "collision");
    assert_eq!(
        w.refused_l(|s, l, n| register(
            s,
            &agent("coder-5"),
            Role::Planner,
            "x",
            &Registration::default(),
            l,
            n
        )),
        "agent-role"
    );
    w.later(121);
    w.ok_l(again);
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
        crate::lifecycle::RuleId::AgentGeneration
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
    w.ok_l(|s, l, n| {
        register(
            s,
            &agent("code-reviewer-1"),
            Role::CodeReviewer,
            "again",
            &Registration::default(),
            l,
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
        w.refused(|s, n| resume(s, &planner(), None, false, n)),
        "permission"
    );
    assert_eq!(
        w.refused(|s, n| resume(s, &Who::Human, Some("MAYBE"), false, n)),
        "resume-decision"
    );
    w.ok(|s, n| resume(s, &Who::Human, Some("REPLAN"), false, n));
    assert_eq!(w.s.sprint.status, SprintStatus::InProgress);
    assert!(format!("{:?}", w.s.sprint.retrospective).contains("REPLAN"));
    w.ok(|s, n| abort(s, &Who::Human, true, n));
    assert_eq!(
        (w.s.sprint.status, w.s.goal.status),
        (SprintStatus::Aborted, Some(GoalStatus::Aborted))
    );
}

#[test]
fn an_abort_is_undone_by_resume_or_followed_by_the_next_sprint() {
    // Resumed: the sprint and the goal aborted with it run again where they stopped.
    let mut w = W::new();
    w.ok(|s, n| abort(s, &Who::Human, true, n));
    w.ok(|s, n| resume(s, &Who::Human, None, false, n));
    assert_eq!(
        (w.s.sprint.status, w.s.goal.status),
        (SprintStatus::InProgress, Some(GoalStatus::InProgress))
    );
    assert_eq!(w.s.sprint.timeline.as_ref().unwrap().ended, None);
    // Or the next sprint opens after it (the goal still in progress).
    w.ok(|s, n| abort(s, &Who::Human, false, n));
    let before = w.s.sprint.id.clone();
    w.ok(|s, n| sprint_next(s, &Who::Human, n));
    assert_ne!(w.s.sprint.id, before);
    assert_eq!(w.s.sprint.status, SprintStatus::InProgress);
    // Only a person moves on from an abort (a planner mid-turn would undo it).
    w.ok(|s, n| abort(s, &Who::Human, false, n));
    assert_eq!(
        w.refused(|s, n| sprint_next(s, &planner(), n)),
        "permission"
    );
    // An aborted sprint under a goal since completed is not reopened.
    w.s.goal.status = Some(GoalStatus::Completed);
    assert_eq!(
        w.refused(|s, n| resume(s, &Who::Human, None, false, n)),
        "sprint-status"
    );
    // A finished sprint is resumed only out of a pause raised on it.
    let mut w = W::new();
    w.s.sprint.status = SprintStatus::Completed;
    assert_eq!(
        w.refused(|s, n| resume(s, &Who::Human, None, false, n)),
        "sprint-status"
    );
    w.ok(|s, n| resume(s, &Who::Human, None, true, n));
    assert_eq!(w.s.sprint.status, SprintStatus::Completed);
}

#[test]
fn the_next_goal_follows_a_finished_one_on_the_same_blackboard() {
    let mut w = W::new();
    // Refused while the goal runs, and by anyone but a person.
    assert_eq!(
        w.refused(|s, n| goal_next(s, &Who::Human, "next", "specs/next.md", n)),
        "goal-status"
    );
    w.ok(|s, n| abort(s, &Who::Human, true, n));
    assert_eq!(
        w.refused(|s, n| goal_next(s, &planner(), "next", "specs/next.md", n)),
        "permission"
    );
    assert_eq!(
        w.refused(|s, n| goal_next(s, &Who::Human, "  ", "specs/next.md", n)),
        "goal-text"
    );
    // The last goal's open tasks are abandoned or finished first.
    w.s.tasks
        .push(crate::model::Task::new(id("t-9"), crate::model::TaskStatus::Unclaimed).into());
    assert_eq!(
        w.refused(|s, n| goal_next(s, &Who::Human, "Add CSV export", "specs/next.md", n)),
        "goal-open-tasks"
    );
    w.s.tasks.retain(|t| t.id.as_str() != "t-9");
    let sprint = w.s.sprint.id.clone();
    w.ok(|s, n| goal_next(s, &Who::Human, "Add CSV export", "specs/next.md", n));
    assert_eq!(w.s.goal.id, "goal-2");
    assert_eq!(w.s.goal.status, Some(GoalStatus::InProgress));
    assert_eq!(w.s.goal.spec_ref.as_deref(), Some("specs/next.md"));
    assert_ne!(w.s.sprint.id, sprint);
    assert_eq!(w.s.sprint.status, SprintStatus::InProgress);
    assert_eq!(w.s.sprint.goal_ref.as_deref(), Some("goal-2"));
    let past = format!("{:?}", w.s.extra);
    assert!(
        past.contains("past_goals") && past.contains("goal-1"),
        "{past}"
    );
}

/// INITIAL_PLANNING holds on a new blackboard and on the sprint `goal next` (or `sprint
/// next`) opened with the last one's tasks archived — not on a sprint whose planned tasks
/// were archived while it ran.
#[test]
fn the_planner_plans_a_new_blackboard_and_the_sprint_a_next_goal_opened() {
    let initial = |s: &State| {
        let me = crate::AgentId::parse("planner-1").unwrap();
        crate::lifecycle::planner_triggers(s, &me)
            .iter()
            .any(|t| t.kind == crate::lifecycle::TriggerKind::InitialPlanning)
    };
    let mut w = W::new();
    assert!(initial(&w.s));
    w.add("t-1", &[]);
    assert!(!initial(&w.s));
    // t-1 archived while its sprint runs: the sprint keeps its plan.
    let archive = |s: &mut State| {
        let task = s
            .tasks
            .iter()
            .find(|t| t.id.as_str() == "t-1")
            .cloned()
            .unwrap();
        s.tasks.retain(|t| t.id.as_str() != "t-1");
        s.archived.get_or_insert_with(Default::default).0.push((
            task.id.clone(),
            crate::model::ArchivedTask {
                status: crate::model::TaskStatus::Abandoned,
                sprint: s.sprint.id.clone().into(),
                extra: Default::default(),
            },
        ));
    };
    archive(&mut w.s);
    assert!(!initial(&w.s));
    // The next goal's sprint has nothing planned: the planner plans it.
    w.ok(|s, n| abort(s, &Who::Human, true, n));
    w.ok(|s, n| goal_next(s, &Who::Human, "Add CSV export", "specs/next.md", n));
    assert!(initial(&w.s));
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
    let order = |w: &W, coder: &str| -> Vec<(WorkClass, String)> {
        coder_work(&w.s, &agent(coder), &w.l())
            .into_iter()
            .map(|c| (c.class, c.task.to_string()))
            .collect()
    };
    // A coder works on one task at a time: its own claimed task is all its work.
    assert_eq!(
        order(&w, "coder-2"),
        [(WorkClass::OwnClaimed, "mine".into())]
    );
    assert_eq!(
        order(&w, "coder-4"),
        [
            (WorkClass::IntegrationFix, "fix".into()),
            (WorkClass::Unclaimed, "hub".into()),
            (WorkClass::Unclaimed, "leaf".into()),
            (WorkClass::Unclaimed, "low".into()),
        ]
    );
    // While its task is in review it has none at all (the claim would be refused), and
    // no lease lapsing elsewhere is work for it later.
    w.claimed("theirs", 3);
    assert!(coder_work_frees_in(&w.s, &agent("coder-4"), &w.l()).is_some());
    w.s.task_mut(&id("mine")).unwrap().status = crate::model::TaskStatus::ReadyForReview;
    assert_eq!(order(&w, "coder-2"), []);
    assert_eq!(coder_work_frees_in(&w.s, &agent("coder-2"), &w.l()), None);
    // Rejected, it is its work again, and still its only work.
    w.s.task_mut(&id("mine")).unwrap().status = crate::model::TaskStatus::Rejected;
    assert_eq!(
        order(&w, "coder-2"),
        [(WorkClass::OwnRejected, "mine".into())]
    );
    w.s.task_mut(&id("mine")).unwrap().status = crate::model::TaskStatus::Claimed;
    w.s.task_mut(&id("hub")).unwrap().failed_by = Some(vec![agent("coder-1")]);
    let for_c1: Vec<String> = coder_work(&w.s, &agent("coder-1"), &w.l())
        .into_iter()
        .map(|c| c.task.to_string())
        .collect();
    assert!(!for_c1.contains(&"hub".to_owned()), "the caller failed it");
    w.later(121);
    let expired = coder_work(&w.s, &agent("coder-1"), &w.l());
    assert!(
        expired
            .iter()
            .any(|c| c.class == WorkClass::Expired && c.task == id("mine"))
    );
}

#[test]
fn work_that_frees_up_when_a_lease_lapses_is_announced_by_when_it_would() {
    let mut w = W::new();
    w.claimed("theirs", 2);
    // Another coder may take it over once its holder was seen silent for the lease
    // period (120 s); its owner has it already.
    let period = std::time::Duration::from_secs(120);
    assert_eq!(
        coder_work_frees_in(&w.s, &agent("coder-1"), &w.l()),
        Some(period)
    );
    assert_eq!(coder_work_frees_in(&w.s, &agent("coder-2"), &w.l()), None);
    w.s.task_mut(&id("theirs")).unwrap().failed_by = Some(vec![agent("coder-1")]);
    assert_eq!(coder_work_frees_in(&w.s, &agent("coder-1"), &w.l()), None);
    w.s.task_mut(&id("theirs")).unwrap().failed_by = None;
    w.later(100);
    assert_eq!(
        coder_work_frees_in(&w.s, &agent("coder-1"), &w.l()),
        Some(std::time::Duration::from_secs(20))
    );
    // Once it lapsed it is work now, not later.
    w.later(20);
    assert_eq!(coder_work_frees_in(&w.s, &agent("coder-1"), &w.l()), None);
    assert!(
        coder_work(&w.s, &agent("coder-1"), &w.l())
            .iter()
            .any(|c| c.task == id("theirs"))
    );

    let w = {
        let mut w = W::new();
        w.in_review("r", 1, 1);
        w
    };
    assert_eq!(
        reviewer_work_frees_in(&w.s, &agent("code-reviewer-2"), &w.l()),
        Some(period)
    );
    assert_eq!(
        reviewer_work_frees_in(&w.s, &agent("code-reviewer-1"), &w.l()),
        None,
        "its own review is work already"
    );
    let mut w = W::new();
    w.approved("a");
    w.later(30);
    assert_eq!(
        reviewer_work_frees_in(&w.s, &agent("code-reviewer-2"), &w.l()),
        Some(std::time::Duration::from_secs(90)),
        "the approval is another reviewer's to merge once its approver is gone"
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
    let work = reviewer_work(&w.s, &agent("code-reviewer-1"), &w.l());
    assert_eq!(
        work,
        [
            ReviewWork::Merge(id("a")),
            ReviewWork::Review(id("b")),
            ReviewWork::Review(id("c"))
        ]
    );
    let other = reviewer_work(&w.s, &agent("code-reviewer-2"), &w.l());
    assert_eq!(
        other[0],
        ReviewWork::Review(id("b")),
        "another reviewer's live approval is theirs to merge"
    );
}
