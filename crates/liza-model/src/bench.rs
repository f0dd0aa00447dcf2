//! Generated blackboards of a chosen size, for the benchmark (specs/quality.md) and for tests
//! that need a realistic mid-sprint state: every task status, agents, histories, notes.
//!
//! The states are valid when the spec files of [`spec_files`] and the worktree
//! directories of [`worktree_dirs`] exist under the project root.

use crate::Timestamp;
use crate::codec::{IdMap, Number};
use crate::ids::{AgentId, Role, TaskId};
use crate::model::{
    Agent, AgentStatus, Anomaly, AnomalyType, CommitId, ContextUsed, Discovery, DiscoverySeverity,
    Handoff, HistoryEvent, HumanNote, State, Task, TaskStatus, Urgency,
};
use crate::node::{Entry, Node, Pos, Value};

/// Spec files the generated tasks refer to (relative to the project root).
pub fn spec_files() -> Vec<String> {
    (0..5).map(|i| format!("specs/area-{i}.md")).collect()
}

/// Worktree directories the generated CLAIMED tasks need (relative to the root).
pub fn worktree_dirs(state: &State) -> Vec<String> {
    state
        .tasks
        .iter()
        .filter_map(|t| t.worktree.clone())
        .collect()
}

fn sha(seed: usize) -> CommitId {
    let hex: String = format!(
        "{:040x}",
        (seed as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
    );
    CommitId::parse(&hex[hex.len() - 40..]).expect("40 hex digits")
}

fn id(i: usize) -> TaskId {
    TaskId::parse(&format!("task-{i:04}")).expect("generated ids are valid")
}

fn coder(i: usize) -> AgentId {
    AgentId::parse(&format!("coder-{i}")).expect("generated ids are valid")
}

/// A state with `tasks` tasks of about `bytes_per_task` bytes of YAML each, cycling
/// through all 11 statuses. 2 600 bytes/task gives the ~130 KB 50-task blackboard of
/// specs/quality.md, 13 500 the ~4 MB 300-task one.
pub fn generate_state(tasks: usize, bytes_per_task: usize, now: Timestamp) -> State {
    let start = now.plus_seconds(-86_400);
    let statuses = TaskStatus::ALL;
    let mut list = Vec::with_capacity(tasks);
    let mut agents: IdMap<AgentId, Agent> = IdMap::default();
    let agent = |role: Role, status: AgentStatus, task: Option<TaskId>| Agent {
        role,
        status,
        generation: Some("g0000000000000001".into()),
        current_task: task,
        lease_expires: Some(now.plus_seconds(600)),
        heartbeat: Some(now),
        registered_at: Some(start),
        terminal: Some("/dev/pts/1".into()),
        cli: Some("claude".into()),
        identity: None,
        pid: Some(4242),
        iterations_total: Some(3),
        context_percent: Some(Number::Int(40)),
        extra: Default::default(),
    };
    agents.insert(
        AgentId::parse("planner-1").expect("valid"),
        agent(Role::Planner, AgentStatus::Idle, None),
    );
    agents.insert(
        AgentId::parse("code-reviewer-1").expect("valid"),
        agent(Role::CodeReviewer, AgentStatus::Idle, None),
    );
    for i in 0..tasks {
        let status = statuses[i % statuses.len()];
        let mut t = Task::new(id(i), status);
        t.description = Some(format!(
            "Implement part {i} of the report CLI: parse the options, render the table and cover the edge cases named in the spec"
        ));
        t.status_changed_at = Some(start.plus_seconds(i as i64 * 60));
        t.priority = Some(1 + (i % 5) as i64);
        t.created = Some(start);
        t.spec_ref = Some(format!("specs/area-{}.md#part-{i}", i % 5));
        t.done_when = Some(format!(
            "`report --json` prints part {i} as a JSON object and the test suite covers it"
        ));
        t.scope = Some("IN: the option and its rendering. OUT: other output formats.".into());
        t.paths = Some(vec![
            format!("src/part_{i}.rs"),
            format!("tests/part_{i}.rs"),
        ]);
        let assigned = coder(i + 1);
        match status {
            TaskStatus::Draft => t.spec_ref = None,
            TaskStatus::Unclaimed => {
                if i >= 11 {
                    t.depends_on = Some(vec![id(i - 11)]);
                }
            }
            TaskStatus::Claimed => {
                t.assigned_to = Some(assigned.clone());
                t.worktree = Some(format!(".worktrees/{}", t.id));
                t.base_commit = Some(sha(i));
                t.lease_expires = Some(now.plus_seconds(600));
                t.iteration = Some(2);
                agents.insert(
                    assigned.clone(),
                    agent(Role::Coder, AgentStatus::Working, Some(t.id.clone())),
                );
            }
            TaskStatus::ReadyForReview | TaskStatus::Rejected | TaskStatus::Approved => {
                t.assigned_to = Some(assigned.clone());
                t.worktree = Some(format!(".worktrees/{}", t.id));
                t.base_commit = Some(sha(i));
                t.review_commit = Some(sha(i + 1000));
                t.iteration = Some(3);
                t.review_cycles_current = Some(1);
                t.review_cycles_total = Some(1);
                if status == TaskStatus::Rejected {
                    t.rejection_reason = Some(format!(
                        "src/part_{i}.rs:42: the JSON output drops the header row; add it and a test"
                    ));
                }
                if status == TaskStatus::Approved {
                    t.approved_by = Some(AgentId::parse("code-reviewer-1").expect("valid"));
                }
                agents.insert(
                    assigned.clone(),
                    agent(Role::Coder, AgentStatus::Waiting, Some(t.id.clone())),
                );
            }
            TaskStatus::Merged => {
                t.assigned_to = Some(assigned);
                t.base_commit = Some(sha(i));
                t.review_commit = Some(sha(i + 1000));
                t.merge_commit = Some(sha(i + 2000));
                t.approved_by = Some(AgentId::parse("code-reviewer-1").expect("valid"));
                t.iteration = Some(1);
            }
            TaskStatus::Blocked => {
                t.blocked_reason =
                    Some("the spec does not say what happens on partial failure".into());
                t.blocked_questions = Some(vec!["Should partial results be printed?".into()]);
                t.attempted = Some(vec!["Read specs/area-0.md".into()]);
                t.failed_by = Some(vec![assigned]);
            }
            TaskStatus::Superseded => {
                t.superseded_by = Some(vec![id(i - 7)]);
                t.rescope_reason =
                    Some("split into smaller tasks after two failed attempts".into());
            }
            TaskStatus::Abandoned => {}
            TaskStatus::IntegrationFailed => {
                t.assigned_to = Some(assigned);
                t.worktree = Some(format!(".worktrees/{}", t.id));
                t.base_commit = Some(sha(i));
                t.review_commit = Some(sha(i + 1000));
            }
        }
        pad_history(&mut t, bytes_per_task, start);
        list.push(t);
    }
    let planned: Vec<TaskId> = list.iter().map(|t| t.id.clone()).collect();
    let mut handoff = IdMap::default();
    if let Some(first) = list.iter().find(|t| t.status == TaskStatus::Claimed) {
        handoff.insert(
            first.id.clone(),
            Handoff {
                agent: first.assigned_to.as_ref().map(ToString::to_string),
                context_used: Some(ContextUsed::Number(Number::Int(85))),
                timestamp: Some(now),
                summary: Some("Parser done, renderer half way".into()),
                next_action: Some("Finish the renderer and run the tests".into()),
                approach: None,
                blockers: None,
                files_modified: None,
                next_steps: None,
                extra: Default::default(),
            },
        );
    }
    let mut state = State::initial(
        "Add a --json flag to the report CLI",
        "specs/area-0.md",
        "integration",
        start,
    );
    state.revision = Some(1);
    state.tasks = list.into_iter().collect();
    state.agents = agents;
    state.discovered = Some(vec![Discovery {
        id: "disc-1".into(),
        by: Some("coder-1".into()),
        during: Some("task-0002".into()),
        description: Some("The CSV writer has no tests".into()),
        severity: Some(DiscoverySeverity::Low),
        urgency: Some(Urgency::Deferred),
        recommendation: Some("Add tests when touching it".into()),
        created: Some(start),
        converted_to_task: None,
        extra: Default::default(),
    }]);
    state.handoff = Some(handoff.into());
    state.human_notes = Some(vec![HumanNote {
        id: Some("note-1".into()),
        timestamp: Some(start),
        message: "Prefer serde_json for the output".into(),
        target: Some("all".into()),
        seen_by: Some(vec!["planner-1".into()]),
        extra: Default::default(),
    }]);
    let detail = |key: &str, value: Node| Entry {
        key: key.into(),
        key_pos: Pos::UNKNOWN,
        value,
    };
    state.anomalies = Some(vec![Anomaly {
        timestamp: Some(start),
        task: Some("task-0002".into()),
        reporter: Some("coder-3".into()),
        kind: AnomalyType::RetryLoop,
        details: Some(Node::new(Value::Map(vec![
            detail("count", Node::new(Value::Int(3))),
            detail("error_pattern", Node::str("E0308 mismatched types")),
        ]))),
        seen_by: None,
        extra: Default::default(),
    }]);
    if let Some(scope) = state.sprint.scope.as_mut() {
        scope.planned = Some(planned);
    }
    state
}

/// Adds `count` MERGED tasks of earlier work (`hist-0000`…, about `bytes_per_task` each):
/// kept in `state.tasks` when `archived` is false, else only in the `archived` index, their
/// records returned for the archive file (specs/blackboard.md *Growth*).
pub fn add_history(
    state: &mut State,
    count: usize,
    bytes_per_task: usize,
    archived: bool,
) -> Vec<std::sync::Arc<Task>> {
    let start = state
        .sprint
        .timeline
        .as_ref()
        .and_then(|t| t.started)
        .unwrap_or(Timestamp::from_unix(0))
        .plus_seconds(-7 * 86_400);
    let mut records = Vec::with_capacity(count);
    for i in 0..count {
        let id = TaskId::parse(&format!("hist-{i:04}")).expect("generated ids are valid");
        let mut t = Task::new(id, TaskStatus::Merged);
        t.description = Some(format!("Earlier part {i} of the report CLI"));
        t.status_changed_at = Some(start.plus_seconds(i as i64 * 60));
        t.created = Some(start);
        t.spec_ref = Some(format!("specs/area-{}.md#part-{i}", i % 5));
        t.done_when = Some(format!("part {i} is covered by the test suite"));
        t.assigned_to = Some(coder(1 + i % 3));
        t.base_commit = Some(sha(i + 5000));
        t.review_commit = Some(sha(i + 6000));
        t.merge_commit = Some(sha(i + 7000));
        t.approved_by = Some(AgentId::parse("code-reviewer-1").expect("valid"));
        t.iteration = Some(1);
        pad_history(&mut t, bytes_per_task, start);
        records.push(std::sync::Arc::new(t));
    }
    if archived {
        let index = state.archived.get_or_insert_with(IdMap::default);
        for t in &records {
            index.insert(
                t.id.clone(),
                crate::model::ArchivedTask {
                    status: TaskStatus::Merged,
                    sprint: Some("sprint-0".into()),
                    extra: Default::default(),
                },
            );
        }
    } else {
        state.tasks.0.extend(records.iter().cloned());
    }
    records
}

/// Adds history events until the task is about `target` bytes of YAML.
fn pad_history(task: &mut Task, target: usize, start: Timestamp) {
    const BASE: usize = 900;
    const PER_EVENT: usize = 230;
    let events = target.saturating_sub(BASE) / PER_EVENT;
    let names = [
        "claimed",
        "note_added",
        "ready_for_review",
        "rejected",
        "reclaimed_after_rejection",
    ];
    let history = task.history_mut();
    for k in 0..events.max(1) {
        let mut extra = crate::node::Extra::default();
        extra.insert(
            "detail",
            Node::str(format!(
                "run {k}: edited src/part.rs and tests/part.rs, ran cargo test (41 passed), committed the change for review"
            )),
        );
        history.push(HistoryEvent {
            time: start.plus_seconds(k as i64 * 30),
            event: names[k % names.len()].into(),
            agent: Some(format!("coder-{}", 1 + k % 3)),
            extra,
        });
    }
}
