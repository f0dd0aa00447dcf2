//! The built-in planner (specs/builtin-agent.md *Planner*, with liza's task
//! gates): on INITIAL_PLANNING it asks for a plan and adds its tasks as drafts, then
//! finalizes each one whose gates pass; on every other trigger it asks for decisions and
//! applies each through the lifecycle operations. `{"status": "error"}` is a valid
//! "cannot plan" answer: an alarm, and no change.

use serde_json::{Value, json};

use super::ask::{self, Question, read};
use super::context::{RunContext, Status};
use crate::blackboard::TaskId;
use crate::blackboard::model::{State, TaskStatus, ValidationMode};
use crate::lifecycle::{self, NewTask, Trigger, TriggerKind};
use crate::llm::client::Usage;
use crate::llm::response::Expect;
use crate::llm::text::truncate_output;
use crate::ops::{self, DiscoveryDecision, alarms};

const RULES: &str = "You are liza's built-in planner. You split a goal into small, \
testable tasks and decide what happens to tasks that are blocked or failed. You do not \
write code. Reply with JSON only: no prose, no markdown fences.";

const PLAN_ANSWER: &str = r#"# Answer

JSON only:
{"plan_id": "plan_0001",
 "tasks": [{"id": "T1", "title": "<short action>", "rationale": "<why>",
            "acceptance": "<verifiable, falsifiable result>", "artifacts": ["<relative/path>"],
            "spec_ref": "<spec file that exists>", "scope": "<where>", "priority": 1,
            "depends_on": ["<earlier task id>"]}]}
or, if the goal cannot be planned: {"status": "error", "reason": "<short reason>"}"#;

const DECISIONS_ANSWER: &str = r#"# Answer

JSON only, a list of decisions, one per condition you handle:
[{"decision": "unblock" | "rescope" | "abandon" | "add_task" | "convert_discovery" | "defer_discovery" | "goal_complete" | "sprint_next",
  "task": "<task id, when it concerns one>", "discovery": "<discovery id>", "reason": "<why>",
  "tasks": [<new tasks for add_task / rescope / convert_discovery, as in a plan>]}]
or {"status": "error", "reason": "<short reason>"}"#;

/// A task of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// The id the model gave it: kept when it is a valid task id not in use, else
    /// replaced by the next free `T<n>`; other tasks of the plan name it in `depends_on`.
    pub id: Option<String>,
    /// A short action: the first line of the task's description.
    pub title: String,
    /// Why: the rest of the description.
    pub rationale: String,
    /// A verifiable result: the task's `done_when`.
    pub acceptance: String,
    /// The files it touches: the task's `paths`.
    pub artifacts: Vec<String>,
    /// The spec it implements: the task's `spec_ref`.
    pub spec_ref: Option<String>,
    /// Where it works: the task's `scope` (the artifacts, joined, when absent).
    pub scope: Option<String>,
    /// The task's `priority`.
    pub priority: Option<i64>,
    /// The tasks it waits for: ids of this plan, or of tasks already on the blackboard.
    pub depends_on: Vec<String>,
}

/// What the planner answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The tasks of a plan (`INITIAL_PLANNING`).
    Plan(Vec<Planned>),
    /// Decisions on the conditions of the other triggers.
    Decisions(Vec<Decision>),
    /// `{"status": "error"}`: the model cannot plan, and why.
    CannotPlan(String),
}

/// One decision of the planner on a condition it was woken for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// What to do: `unblock`, `rescope`, `abandon`, `add_task`, `convert_discovery`,
    /// `defer_discovery`, `goal_complete` or `sprint_next`.
    pub kind: String,
    /// The task it concerns (`unblock`, `rescope`, `abandon`).
    pub task: Option<String>,
    /// The discovery it concerns (`convert_discovery`, `defer_discovery`).
    pub discovery: Option<String>,
    /// Why, as the model gave it.
    pub reason: String,
    /// The new tasks (`add_task`, `rescope`, `convert_discovery`).
    pub tasks: Vec<Planned>,
}

const DECISION_KINDS: &[&str] = &[
    "unblock",
    "rescope",
    "abandon",
    "add_task",
    "convert_discovery",
    "defer_discovery",
    "goal_complete",
    "sprint_next",
];

fn cannot(value: &Value) -> Option<String> {
    (value.get("status").and_then(Value::as_str) == Some("error"))
        .then(|| read::opt_text(value, "reason").unwrap_or_else(|| "no reason given".into()))
}

fn read_planned(item: &Value, at: &str) -> Result<Planned, Vec<String>> {
    let mut errors = Vec::new();
    let title = read::text_noted(item, "title", at, &mut errors);
    let acceptance = read::text_noted(item, "acceptance", at, &mut errors);
    match (title, acceptance) {
        (Some(title), Some(acceptance)) => Ok(Planned {
            id: read::opt_text(item, "id"),
            title,
            rationale: read::opt_text(item, "rationale").unwrap_or_default(),
            acceptance,
            artifacts: read::texts(item, "artifacts"),
            spec_ref: read::opt_text(item, "spec_ref"),
            scope: read::opt_text(item, "scope"),
            priority: item.get("priority").and_then(Value::as_i64),
            depends_on: read::texts(item, "depends_on"),
        }),
        _ => Err(errors),
    }
}

/// Reads a plan (`Expect::Object`).
pub fn read_plan(
    value: &Value,
    mode: ValidationMode,
) -> Result<(Answer, Vec<String>), Vec<String>> {
    if let Some(reason) = cannot(value) {
        return Ok((Answer::CannotPlan(reason), Vec::new()));
    }
    let Some(items) = value.get("tasks").and_then(Value::as_array) else {
        return Err(vec!["answer.tasks must be a list of tasks".into()]);
    };
    let (tasks, errors) = collect(items, "answer.tasks", read_planned);
    finish(Answer::Plan(tasks), errors, mode)
}

/// Reads decisions (`Expect::List(["decisions"])`, or an error object).
pub fn read_decisions(
    value: &Value,
    mode: ValidationMode,
) -> Result<(Answer, Vec<String>), Vec<String>> {
    if let Some(reason) = cannot(value) {
        return Ok((Answer::CannotPlan(reason), Vec::new()));
    }
    let Some(items) = value.as_array() else {
        return Err(vec!["the answer must be a list of decisions".into()]);
    };
    let (decisions, errors) = collect(items, "answer", |item, at| {
        let kind = match item.get("decision").and_then(Value::as_str) {
            Some(k) if DECISION_KINDS.contains(&k) => k.to_owned(),
            _ => {
                return Err(vec![format!(
                    "{at}.decision must be one of {}",
                    DECISION_KINDS.join(", ")
                )]);
            }
        };
        let (tasks, errors) = match item.get("tasks").and_then(Value::as_array) {
            Some(list) => collect(list, &format!("{at}.tasks"), read_planned),
            None => (Vec::new(), Vec::new()),
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Decision {
            kind,
            task: read::opt_text(item, "task"),
            discovery: read::opt_text(item, "discovery"),
            reason: read::opt_text(item, "reason").unwrap_or_else(|| "(no reason given)".into()),
            tasks,
        })
    });
    finish(Answer::Decisions(decisions), errors, mode)
}

fn collect<T>(
    items: &[Value],
    at: &str,
    read: impl Fn(&Value, &str) -> Result<T, Vec<String>>,
) -> (Vec<T>, Vec<String>) {
    let mut kept = Vec::new();
    let mut errors = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match read(item, &format!("{at}[{i}]")) {
            Ok(t) => kept.push(t),
            Err(e) => errors.extend(e),
        }
    }
    (kept, errors)
}

fn finish(
    answer: Answer,
    mut errors: Vec<String>,
    mode: ValidationMode,
) -> Result<(Answer, Vec<String>), Vec<String>> {
    match mode {
        ValidationMode::Strict if !errors.is_empty() => Err(errors),
        ValidationMode::None => {
            errors.clear();
            Ok((answer, errors))
        }
        _ => Ok((answer, errors)),
    }
}

/// One turn of the planner: a plan on `INITIAL_PLANNING`, decisions on any other trigger
/// that holds, nothing (SUCCESS) when none does. No usable answer, or nothing applied:
/// SOFT_FAIL.
pub async fn run(ctx: &RunContext) -> Status {
    let state = match ctx.project.store.snapshot() {
        Ok(s) => s.state,
        Err(e) => {
            eprintln!("liza builtin planner: cannot read the blackboard: {e}");
            return Status::HardFail;
        }
    };
    let Ok(agent) = crate::blackboard::AgentId::parse(&ctx.agent) else {
        return Status::HardFail;
    };
    let triggers = lifecycle::planner_triggers(&state, &agent);
    let Some(first) = triggers.first() else {
        println!("liza builtin planner: nothing to do");
        return Status::Success;
    };
    let initial = first.kind == TriggerKind::InitialPlanning;
    let system = ctx.system(RULES);
    let (user, expect, reader, dry): (String, Expect, &ask::Reader<Answer>, String) = if initial {
        (
            format!("{}\n\n{PLAN_ANSWER}", planning_prompt(ctx, &state)),
            Expect::Object,
            &read_plan,
            super::dry_run::plan(&ctx.project.root, &state),
        )
    } else {
        (
            format!(
                "{}\n\n{DECISIONS_ANSWER}",
                decisions_prompt(&state, &triggers)
            ),
            Expect::List(&["decisions"]),
            &read_decisions,
            super::dry_run::decisions(&triggers),
        )
    };
    let asked = ask::ask(
        &ctx.client,
        &ctx.artifacts,
        Question {
            system: &system,
            user,
            expect,
            dry_run_answer: &dry,
            label: if initial { "plan" } else { "decisions" },
        },
        reader,
    )
    .await;
    let usage = asked.usage;
    let Some(answer) = asked.answer else {
        let why = asked.failure.unwrap_or_else(|| "no answer".into());
        ctx.runlog.append("error", json!({"reason": why}));
        eprintln!("liza builtin planner: no usable answer: {why}");
        return Status::SoftFail;
    };
    let status = match answer {
        Answer::CannotPlan(reason) => {
            ctx.runlog.append("error", json!({"reason": reason}));
            let message = format!(
                "the built-in planner cannot plan ({}): {reason}",
                first.describe()
            );
            let key = format!(
                "builtin-cannot-plan:{}:{}",
                state.revision(),
                first.describe()
            );
            let _ = alarms::raise(
                &ctx.project,
                alarms::Level::Warn,
                "PLANNER_CANNOT_PLAN",
                &message,
                &key,
            );
            Status::SoftFail
        }
        Answer::Plan(tasks) => apply_plan(ctx, &state, &tasks),
        Answer::Decisions(decisions) => apply_decisions(ctx, &state, &decisions),
    };
    log_usage(ctx, usage);
    status
}

fn log_usage(ctx: &RunContext, usage: Usage) {
    ctx.runlog.append(
        "usage",
        json!({"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}),
    );
}

/// Adds the plan's tasks as drafts, then finalizes each one whose gates pass.
fn apply_plan(ctx: &RunContext, state: &State, planned: &[Planned]) -> Status {
    ctx.runlog.append(
        "plan",
        json!({"tasks": planned.iter().map(|p| p.title.clone()).collect::<Vec<_>>()}),
    );
    let ids = plan_ids(state, planned);
    let new: Vec<NewTask> = planned
        .iter()
        .zip(&ids)
        .map(|(p, id)| to_new_task(p, id, &ids, planned))
        .collect();
    if new.is_empty() {
        eprintln!("liza builtin planner: the plan has no tasks");
        return Status::SoftFail;
    }
    // One at a time: a task the blackboard refuses does not take the others with it.
    let mut added = Vec::new();
    for task in &new {
        match ops::add_tasks(&ctx.project, &ctx.actor, std::slice::from_ref(task)) {
            Ok(_) => added.push(task.id.clone()),
            Err(e) => {
                let why = refusal_text(&e);
                eprintln!("liza builtin planner: task {} refused: {why}", task.id);
                ctx.runlog
                    .append("error", json!({"task": task.id, "reason": why}));
            }
        }
    }
    if added.is_empty() {
        return Status::SoftFail;
    }
    let mut finalized = 0;
    for id in added.iter().filter_map(|i| TaskId::parse(i).ok()) {
        match ops::finalize_tasks(&ctx.project, &ctx.actor, std::slice::from_ref(&id), false) {
            Ok(_) => finalized += 1,
            Err(e) => eprintln!(
                "liza builtin planner: {id} stays a draft: {}",
                refusal_text(&e)
            ),
        }
    }
    println!(
        "liza builtin planner: {} of {} tasks added, {finalized} finalized",
        added.len(),
        new.len()
    );
    Status::Success
}

/// An ops error with the findings that explain it, on one line.
fn refusal_text(e: &ops::OpsError) -> String {
    use crate::blackboard::StoreError;
    let mut text = e.to_string();
    if let ops::OpsError::Store(StoreError::WouldInvalidate { findings }) = e {
        for f in findings {
            text.push_str(&format!("; {} [{}]", f.message, f.check));
        }
    }
    text
}

/// Ids as given when they are valid and free, else `T1..Tn` (the next free ones).
fn plan_ids(state: &State, planned: &[Planned]) -> Vec<String> {
    assign_ids(
        state.tasks.iter().map(|t| t.id.to_string()).collect(),
        planned,
    )
}

fn assign_ids(mut taken: Vec<String>, planned: &[Planned]) -> Vec<String> {
    let mut next = 1;
    let mut ids = Vec::new();
    for p in planned {
        let given =
            p.id.as_deref()
                .filter(|id| TaskId::parse(id).is_ok() && !taken.iter().any(|t| t == id));
        let id = match given {
            Some(id) => id.to_owned(),
            None => loop {
                let candidate = format!("T{next}");
                next += 1;
                if !taken.contains(&candidate) {
                    break candidate;
                }
            },
        };
        taken.push(id.clone());
        ids.push(id);
    }
    ids
}

/// A planned task as liza's task: title + rationale → description, acceptance →
/// done_when, artifacts → paths. Dependencies name plan ids (mapped to the ids given).
fn to_new_task(p: &Planned, id: &str, ids: &[String], plan: &[Planned]) -> NewTask {
    let description = if p.rationale.is_empty() {
        p.title.clone()
    } else {
        format!("{}\n\n{}", p.title, p.rationale)
    };
    let depends_on = p
        .depends_on
        .iter()
        .map(|d| {
            plan.iter()
                .position(|q| q.id.as_deref() == Some(d.as_str()))
                .map_or_else(|| d.clone(), |i| ids[i].clone())
        })
        .collect();
    NewTask {
        id: id.to_owned(),
        description,
        spec_ref: p.spec_ref.clone(),
        done_when: Some(p.acceptance.clone()),
        scope: p
            .scope
            .clone()
            .or_else(|| (!p.artifacts.is_empty()).then(|| p.artifacts.join(", "))),
        priority: p.priority,
        depends_on,
        paths: p.artifacts.clone(),
        allow_protected: Vec::new(),
        supersedes: None,
        finalize: false,
    }
}

/// Applies each decision; a refused one is reported and the rest still applied.
fn apply_decisions(ctx: &RunContext, state: &State, decisions: &[Decision]) -> Status {
    ctx.runlog.append("plan", json!({"decisions": decisions.iter().map(|d| json!({"decision": d.kind, "task": d.task})).collect::<Vec<_>>()}));
    let mut applied = 0;
    for d in decisions {
        // The blackboard as the decisions before this one left it: a new task's id is the
        // next one free after theirs.
        let fresh = ctx.project.store.snapshot().map(|s| s.state).ok();
        let state = fresh.as_ref().unwrap_or(state);
        let task = d.task.as_deref().and_then(|t| TaskId::parse(t).ok());
        let result = match (d.kind.as_str(), &task) {
            ("unblock", Some(t)) => ops::unblock(&ctx.project, &ctx.actor, t, &d.reason, false)
                .map(drop)
                .map_err(DecisionRefused::from),
            ("abandon", Some(t)) => ops::abandon(&ctx.project, &ctx.actor, t, &d.reason)
                .map(drop)
                .map_err(DecisionRefused::from),
            ("rescope", Some(t)) => rescope(ctx, state, t, d),
            ("add_task", _) => add_and_finalize(ctx, state, &d.tasks, None),
            ("convert_discovery", _) | ("defer_discovery", _) => discovery(ctx, state, d),
            ("goal_complete", _) => ops::goal_complete(&ctx.project, &ctx.actor)
                .map(drop)
                .map_err(DecisionRefused::from),
            ("sprint_next", _) => ops::sprint_next(&ctx.project, &ctx.actor)
                .map(drop)
                .map_err(DecisionRefused::from),
            (kind, None) => Err(DecisionRefused::NoTask(kind.to_owned())),
            (kind, _) => Err(DecisionRefused::Unknown(kind.to_owned())),
        };
        match result {
            Ok(()) => applied += 1,
            Err(e) => {
                eprintln!("liza builtin planner: {} refused: {e}", d.kind);
                ctx.runlog.append(
                    "error",
                    json!({"decision": d.kind, "reason": e.to_string()}),
                );
            }
        }
    }
    println!(
        "liza builtin planner: {applied} of {} decisions applied",
        decisions.len()
    );
    if applied == 0 && !decisions.is_empty() {
        Status::SoftFail
    } else {
        Status::Success
    }
}

/// Why one of the planner's decisions was not applied.
#[derive(Debug, thiserror::Error)]
enum DecisionRefused {
    /// liza refused the move (the text carries the findings that explain it).
    #[error("{}", refusal_text(.0))]
    Ops(#[from] ops::OpsError),
    /// The decision concerns a task and names none (or no valid one).
    #[error("a {0} decision needs the task it concerns")]
    NoTask(String),
    /// The decision is not one the planner may take.
    #[error("unknown decision {0}")]
    Unknown(String),
    /// `add_task`, `rescope` or `convert_discovery` with an empty `tasks`.
    #[error("no tasks given")]
    NoTasks,
    /// A discovery decision without the discovery's id.
    #[error("a discovery decision needs `discovery`")]
    NoDiscovery,
    /// `convert_discovery` whose new task has no valid id.
    #[error("convert_discovery needs the new task")]
    NoNewTask,
}

fn add_and_finalize(
    ctx: &RunContext,
    state: &State,
    planned: &[Planned],
    supersedes: Option<&TaskId>,
) -> Result<(), DecisionRefused> {
    if planned.is_empty() {
        return Err(DecisionRefused::NoTasks);
    }
    let ids = plan_ids(state, planned);
    let mut new: Vec<NewTask> = planned
        .iter()
        .zip(&ids)
        .map(|(p, id)| to_new_task(p, id, &ids, planned))
        .collect();
    for t in &mut new {
        t.supersedes = supersedes.map(ToString::to_string);
    }
    ops::add_tasks(&ctx.project, &ctx.actor, &new)?;
    if supersedes.is_none() {
        for id in ids.iter().filter_map(|i| TaskId::parse(i).ok()) {
            let _ = ops::finalize_tasks(&ctx.project, &ctx.actor, std::slice::from_ref(&id), false);
        }
    }
    Ok(())
}

/// Replacements as drafts superseding `task`, the rescope, then finalizing them.
fn rescope(
    ctx: &RunContext,
    state: &State,
    task: &TaskId,
    d: &Decision,
) -> Result<(), DecisionRefused> {
    let ids = plan_ids(state, &d.tasks);
    add_and_finalize(ctx, state, &d.tasks, Some(task))?;
    let into: Vec<TaskId> = ids.iter().filter_map(|i| TaskId::parse(i).ok()).collect();
    ops::rescope(&ctx.project, &ctx.actor, task, &into, &d.reason)?;
    for id in &into {
        let _ = ops::finalize_tasks(&ctx.project, &ctx.actor, std::slice::from_ref(id), false);
    }
    Ok(())
}

fn discovery(ctx: &RunContext, state: &State, d: &Decision) -> Result<(), DecisionRefused> {
    let id = d.discovery.as_deref().ok_or(DecisionRefused::NoDiscovery)?;
    let decision = if d.kind == "defer_discovery" {
        DiscoveryDecision::Defer {
            reason: d.reason.clone(),
        }
    } else {
        let ids = plan_ids(state, &d.tasks);
        add_and_finalize(ctx, state, &d.tasks, None)?;
        let task = ids
            .first()
            .and_then(|i| TaskId::parse(i).ok())
            .ok_or(DecisionRefused::NoNewTask)?;
        DiscoveryDecision::Convert { task }
    };
    ops::discovery(&ctx.project, &ctx.actor, id, &decision)?;
    Ok(())
}

fn planning_prompt(ctx: &RunContext, state: &State) -> String {
    let goal = &state.goal;
    let mut text = format!("# Goal\n\n{}\n", goal.description);
    for spec in goal
        .spec_ref
        .as_deref()
        .into_iter()
        .chain(["specs/vision.md"])
    {
        let file = spec.split('#').next().unwrap_or(spec);
        if let Some(body) = crate::confine::read_inside(&ctx.project.root, file) {
            text.push_str(&format!(
                "\n## Spec ({file})\n\n{}\n",
                truncate_output(&body)
            ));
            break;
        }
    }
    text.push_str(&format!(
        "\n## Repository\n\n{}\n",
        repo_summary(&ctx.project.root)
    ));
    text.push_str("\nPlan small tasks a coder finishes in one sitting; each needs a spec_ref that exists, a falsifiable acceptance and the files it touches as artifacts.\n");
    text
}

fn decisions_prompt(state: &State, triggers: &[Trigger]) -> String {
    let mut text = "# Conditions to handle\n\n".to_owned();
    for t in triggers {
        text.push_str(&format!("- {}\n", t.describe()));
        if let Some(task) = t.task.as_ref().and_then(|id| state.task(id)) {
            text.push_str(&format!(
                "  task {}: {} — status {}\n",
                task.id,
                task.description
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or(""),
                task.status.as_str()
            ));
            if let Some(r) = &task.blocked_reason {
                text.push_str(&format!("  blocked: {r}\n"));
            }
            for q in task.blocked_questions.iter().flatten() {
                text.push_str(&format!("  question: {q}\n"));
            }
        }
    }
    let open = state
        .tasks
        .iter()
        .filter(|t| {
            !matches!(
                t.status,
                TaskStatus::Merged | TaskStatus::Abandoned | TaskStatus::Superseded
            )
        })
        .count();
    text.push_str(&format!(
        "\n# Sprint\n\n{} tasks, {open} not finished. Goal: {}\n",
        state.tasks.len(),
        state.goal.description
    ));
    text
}

/// Paths of the repository (tracked files), bounded.
fn repo_summary(root: &std::path::Path) -> String {
    let files = crate::git::cli::git_lines(root, &["ls-files"]);
    let mut text: Vec<String> = files.iter().take(200).cloned().collect();
    if files.len() > 200 {
        text.push(format!("… and {} more files", files.len() - 200));
    }
    text.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_decisions_in_each_mode() {
        let plan = json!({"plan_id": "p", "tasks": [
            {"id": "T1", "title": "Add greet", "acceptance": "greet prints hello", "artifacts": ["greet.sh"]},
            {"title": "no acceptance"}
        ]});
        assert!(read_plan(&plan, ValidationMode::Strict).is_err());
        let (Answer::Plan(tasks), errors) = read_plan(&plan, ValidationMode::Lenient).unwrap()
        else {
            panic!()
        };
        assert_eq!(tasks.len(), 1);
        assert_eq!(errors.len(), 1);
        assert_eq!(
            read_plan(
                &json!({"status": "error", "reason": "vague goal"}),
                ValidationMode::Strict
            )
            .unwrap()
            .0,
            Answer::CannotPlan("vague goal".into())
        );
        let decisions = json!([{"decision": "unblock", "task": "t-1", "reason": "answered"}, {"decision": "explode"}]);
        assert!(read_decisions(&decisions, ValidationMode::Strict).is_err());
        let (Answer::Decisions(d), _) =
            read_decisions(&decisions, ValidationMode::Lenient).unwrap()
        else {
            panic!()
        };
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind, "unblock");
    }

    #[test]
    fn ids_are_kept_when_valid_and_free_else_t1_to_tn() {
        let p = |id: Option<&str>| Planned {
            id: id.map(str::to_owned),
            title: "x".into(),
            rationale: String::new(),
            acceptance: "y".into(),
            artifacts: Vec::new(),
            spec_ref: None,
            scope: None,
            priority: None,
            depends_on: Vec::new(),
        };
        let ids = assign_ids(
            vec!["T1".into()],
            &[
                p(Some("greet")),
                p(Some("../bad")),
                p(None),
                p(Some("greet")),
            ],
        );
        assert_eq!(ids, ["greet", "T2", "T3", "T4"]);
        let mut dep = p(Some("b"));
        dep.depends_on = vec!["a".into()];
        let plan = [p(Some("a")), dep];
        let ids = assign_ids(Vec::new(), &plan);
        let new = to_new_task(&plan[1], &ids[1], &ids, &plan);
        assert_eq!(new.depends_on, ["a"]);
        assert!(!new.finalize, "added as a draft, finalized after");
    }
}
