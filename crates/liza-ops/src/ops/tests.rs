//! Operations on a real blackboard in a temporary repository: typed refusals, the fence
//! of a supervisor's registration, and the checks a write goes through before its
//! transaction.

use super::*;
use crate::blackboard::{Actor, AgentId, StoreError};
use crate::lifecycle::{Leases, Registration};
use crate::testing::project;

fn coder(n: u32) -> AgentId {
    AgentId::parse(&format!("coder-{n}")).unwrap()
}

fn supervisor_of(id: &AgentId, generation: &str) -> Actor {
    Actor::Supervisor {
        id: id.clone(),
        generation: generation.to_owned(),
    }
}

fn state_bytes(project: &Project) -> Vec<u8> {
    std::fs::read(project.store.paths().state()).unwrap()
}

#[test]
fn a_refusal_carries_its_rule_and_says_it() {
    let refused = OpsError::refused(RuleId::TaskExists, "there is no task t-9", "list them");
    assert_eq!(refused.rule(), Some(RuleId::TaskExists));
    assert_eq!(refused.to_string(), "there is no task t-9 [task-exists]");
    assert!(!refused.superseded());
    let busy = OpsError::TaskBusy { task: "t-1".into() };
    assert_eq!(busy.rule(), Some(RuleId::TaskBusy));
    let superseded = OpsError::Store(StoreError::Superseded {
        agent: "coder-1".into(),
        presented: "a".into(),
        registered: Some("b".into()),
    });
    assert_eq!(superseded.rule(), Some(RuleId::Superseded));
    assert!(superseded.superseded());
    assert_eq!(OpsError::Nothing.rule(), None);
}

/// `id` registered by a person, with nothing watched; its generation.
fn registered(project: &Project, id: &AgentId) -> String {
    register(
        project,
        &Actor::Human,
        id,
        &Registration::default(),
        LeaseCheck::Observed(&Leases::default()),
    )
    .unwrap()
    .value
}

#[test]
fn a_supervisor_writes_while_its_registration_is_the_agents() {
    let (_dir, project) = project();
    let id = coder(1);
    let generation = registered(&project, &id);
    let actor = supervisor_of(&id, &generation);
    still_current(&project.store, &actor).unwrap();
    log_add(&project, &actor, "test_step", "a step", None).unwrap();
    let logged = std::fs::read_to_string(project.store.paths().log()).unwrap();
    assert!(logged.contains("action: test_step"), "{logged}");
    assert!(logged.contains("agent: coder-1"), "{logged}");
}

#[test]
fn a_superseded_supervisor_is_refused_before_and_inside_the_transaction() {
    let (_dir, project) = project();
    let id = coder(1);
    let old = registered(&project, &id);
    unregister(&project, &Actor::Human, &id, None).unwrap();
    let actor = supervisor_of(&id, &old);
    // Unregistered: refused.
    let before = state_bytes(&project);
    let refused = log_add(&project, &actor, "test_step", "a step", None).unwrap_err();
    assert!(refused.superseded(), "{refused}");
    assert_eq!(refused.rule(), Some(RuleId::Superseded));
    assert_eq!(state_bytes(&project), before);
    // Registered anew: still refused, for the old generation.
    registered(&project, &id);
    let before = state_bytes(&project);
    let refused = still_current(&project.store, &actor).unwrap_err();
    assert_eq!(refused.rule(), Some(RuleId::Superseded));
    let refused = start_run(
        &project,
        &actor,
        &crate::blackboard::TaskId::parse("t-1").unwrap(),
        &id,
        None,
    )
    .unwrap_err();
    assert!(refused.superseded(), "{refused}");
    assert_eq!(state_bytes(&project), before, "byte-identical");
}

#[test]
fn a_logged_action_is_checked_before_the_transaction() {
    let (_dir, project) = project();
    let before = state_bytes(&project);
    for (action, detail, rule) in [
        ("has space", "x", RuleId::LogAction),
        ("ok", "line\nbreak", RuleId::LogDetail),
        ("ok", "\u{1b}[31mred", RuleId::LogDetail),
    ] {
        let refused = log_add(&project, &Actor::Human, action, detail, None).unwrap_err();
        assert_eq!(refused.rule(), Some(rule), "{action:?} {detail:?}");
    }
    assert_eq!(state_bytes(&project), before);
}
