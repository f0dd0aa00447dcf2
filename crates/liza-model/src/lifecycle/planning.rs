//! Planning rows: add a task (DRAFT), amend it, finalize it (DRAFT → UNCLAIMED) through the
//! planner's gates.

use crate::EventKind;
use std::collections::{HashMap, HashSet};

use crate::model::{AlignmentEvent, OneOrMany, PlanApproval, Scope, State, Task, TaskStatus};
use crate::{TaskId, Timestamp};

use super::RuleId;
use super::context::{Outcome, Who, history, set_status, task, task_mut, text, text_list};
use super::refusal::Refusal;
use super::table::{Command, Kind, row};
use super::text_rules::{only_about_tests, unfalsifiable};

/// The fields of `add-task` (and of each item of `add-tasks --file`).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    /// The new task's id (`--id`).
    pub id: String,
    /// What the task is (`--desc`).
    #[serde(alias = "desc")]
    pub description: String,
    /// `path[#anchor]` of its spec (`--spec`).
    #[serde(alias = "spec")]
    pub spec_ref: Option<String>,
    /// Its falsifiable acceptance criterion (`--done`).
    #[serde(alias = "done")]
    pub done_when: Option<String>,
    /// What is in and out.
    pub scope: Option<String>,
    /// 1 (highest) to 5; 3 when absent.
    pub priority: Option<i64>,
    /// Ids of the tasks it waits on (`--depends`).
    #[serde(default, alias = "depends")]
    pub depends_on: Vec<String>,
    /// Globs of the files it may change.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Globs of protected paths it may change.
    #[serde(default)]
    pub allow_protected: Vec<String>,
    /// The task it replaces.
    pub supersedes: Option<String>,
    /// Finalize it in the same transaction.
    #[serde(default)]
    pub finalize: bool,
}

/// `amend-task`: only the fields given change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Amendment {
    /// The new description.
    pub description: Option<String>,
    /// The new acceptance criterion.
    pub done_when: Option<String>,
    /// The new scope.
    pub scope: Option<String>,
    /// The new spec reference.
    pub spec_ref: Option<String>,
    /// The new dependencies, replacing the old.
    pub depends_on: Option<Vec<TaskId>>,
    /// The new priority.
    pub priority: Option<i64>,
    /// The new globs of the files it may change.
    pub paths: Option<Vec<String>>,
}

/// What the caller found out about a task's spec file (the lifecycle does no I/O).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecFacts {
    /// The file exists under the project root.
    pub exists: bool,
    /// Its git blob id, when it exists.
    pub blob: Option<String>,
    /// The integration branch's tip holds the file (worktrees start there).
    pub committed: bool,
}

impl SpecFacts {
    /// A spec file that is not there.
    pub fn missing() -> SpecFacts {
        SpecFacts {
            exists: false,
            blob: None,
            committed: false,
        }
    }
}

fn parse_id(text: &str, what: &str) -> Result<TaskId, Refusal> {
    TaskId::parse(text.trim()).map_err(|e| {
        Refusal::new(
            RuleId::TaskId,
            format!("{what}: {e}"),
            "task ids are 1-64 ASCII letters, digits, '-', '_' and '.', starting with a letter or digit",
        )
    })
}

fn check_priority(priority: Option<i64>) -> Result<(), Refusal> {
    match priority {
        Some(p) if !(1..=5).contains(&p) => Err(Refusal::new(
            RuleId::PriorityRange,
            format!("priority {p} is outside 1-5"),
            "1 is the highest priority, 5 the lowest; 3 is the default",
        )),
        _ => Ok(()),
    }
}

/// Adds a DRAFT task (specs/lifecycle.md row "(new) → DRAFT"); the operations add tasks in
/// batches ([`add_tasks`]), the tests one at a time.
#[cfg(test)]
pub fn add_task(
    state: &mut State,
    who: &Who,
    new: &NewTask,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    add_tasks(state, who, std::slice::from_ref(new), now)
}

/// Adds several tasks, all or nothing; they may depend on each other.
pub fn add_tasks(
    state: &mut State,
    who: &Who,
    new: &[NewTask],
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    row(Command::AddTask, None, who.kind())?;
    if new.is_empty() {
        return Err(Refusal::new(
            RuleId::AddTasks,
            "no tasks to add",
            "give at least one task",
        ));
    }
    let mut prepared = Vec::with_capacity(new.len());
    let mut batch: HashSet<TaskId> = HashSet::new();
    for n in new {
        let id = parse_id(&n.id, "task id")?;
        if state.task_exists(&id) || !batch.insert(id.clone()) {
            return Err(Refusal::new(
                RuleId::TaskIdUnused,
                format!("task id {id} is already used"),
                "choose another id (ids are unique, archived tasks included)",
            ));
        }
        prepared.push(id);
    }
    let mut added = Vec::with_capacity(new.len());
    for (n, id) in new.iter().zip(&prepared) {
        check_priority(n.priority)?;
        let description = n.description.trim();
        if description.is_empty() {
            return Err(Refusal::new(
                RuleId::RequiredText,
                format!("task {id} has no description"),
                "say what the task is with --desc",
            ));
        }
        let mut deps = Vec::new();
        for d in &n.depends_on {
            let dep = parse_id(d, "dependency")?;
            if !state.task_exists(&dep) && !batch.contains(&dep) {
                return Err(Refusal::new(
                    RuleId::DependencyExists,
                    format!("task {id} depends on {dep}, which does not exist"),
                    "dependencies are exact ids of existing tasks (`liza status` lists them)",
                ));
            }
            if dep == *id {
                return Err(Refusal::new(
                    RuleId::DependencyCycle,
                    format!("task {id} depends on itself"),
                    "remove it from --depends",
                ));
            }
            if !deps.contains(&dep) {
                deps.push(dep);
            }
        }
        let supersedes = match &n.supersedes {
            Some(s) => {
                let target = parse_id(s, "--supersedes")?;
                if !state.task_exists(&target) {
                    return Err(Refusal::new(
                        RuleId::SupersedesExists,
                        format!("task {id} supersedes {target}, which does not exist"),
                        "name the task this one replaces",
                    ));
                }
                Some(OneOrMany::One(target))
            }
            None => None,
        };
        check_paths(id, n.spec_ref.as_deref(), &n.paths)?;
        let mut task = Task::new(id.clone(), TaskStatus::Draft);
        task.description = Some(description.to_owned());
        task.spec_ref = n.spec_ref.clone().filter(|s| !s.trim().is_empty());
        task.done_when = n.done_when.clone().filter(|s| !s.trim().is_empty());
        task.scope = n.scope.clone().filter(|s| !s.trim().is_empty());
        task.priority = Some(n.priority.unwrap_or(3));
        task.created = Some(now);
        task.status_changed_at = Some(now);
        task.depends_on = Some(deps);
        task.paths = (!n.paths.is_empty()).then(|| n.paths.clone());
        task.allow_protected = (!n.allow_protected.is_empty()).then(|| n.allow_protected.clone());
        task.supersedes = supersedes;
        task.iteration = Some(0);
        task.review_cycles_current = Some(0);
        task.review_cycles_total = Some(0);
        task.failed_by = Some(Vec::new());
        history(&mut task, now, EventKind::Created, &who.name(), &[]);
        added.push(task);
    }
    // Built on a copy (tasks are shared, so this is cheap): a refusal changes nothing.
    let mut trial = state.clone();
    let mut outcome = Outcome::default();
    for task in added {
        let id = task.id.clone();
        let summary = format!("{id}: {}", task.description.as_deref().unwrap_or(""));
        trial.tasks.push_task(task);
        let scope = trial.sprint.scope.get_or_insert_with(Scope::default);
        scope.planned.get_or_insert_with(Vec::new).push(id.clone());
        trial
            .goal
            .alignment_history
            .get_or_insert_with(Vec::new)
            .push(AlignmentEvent {
                timestamp: now,
                event: "planning".into(),
                summary: Some(summary.clone()),
                extra: Default::default(),
            });
        outcome.event(EventKind::Created, &who.name(), Some(&id), Some(summary));
    }
    if let Some(cycle) = find_cycle(&trial) {
        return Err(cycle_refusal(&cycle));
    }
    *state = trial;
    Ok(outcome)
}

/// `amend-task`: DRAFT, UNCLAIMED or BLOCKED; dependencies stay acyclic.
pub fn amend_task(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    change: &Amendment,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let current = task(state, id)?;
    row(Command::AmendTask, Some(current.status), who.kind())?;
    check_priority(change.priority)?;
    check_paths(
        id,
        change.spec_ref.as_deref(),
        change.paths.as_deref().unwrap_or_default(),
    )?;
    let mut updated = current.clone();
    let mut fields: Vec<&str> = Vec::new();
    let mut set_text = |field: &mut Option<String>, value: &Option<String>, name: &'static str| {
        if let Some(v) = value {
            let v = Some(v.trim().to_owned()).filter(|v| !v.is_empty());
            if *field != v {
                *field = v;
                fields.push(name);
            }
        }
    };
    set_text(&mut updated.description, &change.description, "description");
    set_text(&mut updated.done_when, &change.done_when, "done_when");
    set_text(&mut updated.scope, &change.scope, "scope");
    set_text(&mut updated.spec_ref, &change.spec_ref, "spec_ref");
    if let Some(p) = change.priority
        && updated.priority != Some(p)
    {
        updated.priority = Some(p);
        fields.push("priority");
    }
    if let Some(paths) = &change.paths {
        let paths = (!paths.is_empty()).then(|| paths.clone());
        if updated.paths != paths {
            updated.paths = paths;
            fields.push("paths");
        }
    }
    if let Some(deps) = &change.depends_on {
        for dep in deps {
            if dep == id {
                return Err(Refusal::new(
                    RuleId::DependencyCycle,
                    format!("task {id} cannot depend on itself"),
                    "remove it from --depends",
                ));
            }
            if !state.task_exists(dep) {
                return Err(Refusal::new(
                    RuleId::DependencyExists,
                    format!("task {id} would depend on {dep}, which does not exist"),
                    "dependencies are exact ids of existing tasks",
                ));
            }
        }
        if updated.depends_on.as_deref().unwrap_or(&[]) != deps.as_slice() {
            updated.depends_on = Some(deps.clone());
            fields.push("depends_on");
        }
    }
    if fields.is_empty() {
        return Err(Refusal::new(
            RuleId::AmendChanges,
            format!("nothing to amend on {id}: every given field already has that value"),
            "give at least one changed field",
        ));
    }
    if updated.status != TaskStatus::Draft
        && fields
            .iter()
            .any(|f| matches!(*f, "done_when" | "spec_ref" | "scope"))
        && updated.done_when.is_none()
    {
        return Err(Refusal::new(
            RuleId::Definition,
            format!(
                "task {id} is {} and needs a done_when",
                updated.status.as_str()
            ),
            "give --done with a falsifiable criterion",
        ));
    }
    history(
        &mut updated,
        now,
        EventKind::Amended,
        &who.name(),
        &[("fields", text_list(&fields))],
    );
    let mut trial = state.clone();
    *task_mut(&mut trial, id) = updated;
    if let Some(cycle) = find_cycle(&trial) {
        return Err(cycle_refusal(&cycle));
    }
    *state = trial;
    let mut outcome = Outcome::default();
    outcome.event(
        EventKind::Amended,
        &who.name(),
        Some(id),
        Some(fields.join(", ")),
    );
    Ok(outcome)
}

/// A task's spec file and paths name files inside the repository: relative, no `..`
/// (where a symbolic link leads is checked by the operation, which may read the disk).
fn check_paths(id: &TaskId, spec_ref: Option<&str>, paths: &[String]) -> Result<(), Refusal> {
    if let Some(spec) = spec_ref.filter(|s| !s.trim().is_empty())
        && let Err(e) = crate::confine::relative(spec_file(spec))
    {
        return Err(Refusal::new(
            RuleId::SpecPath,
            format!("task {id}: spec_ref {e}"),
            "e.g. --spec specs/report.md (inside the repository)",
        ));
    }
    for path in paths {
        if let Err(e) = crate::confine::relative(path) {
            return Err(Refusal::new(
                RuleId::TaskPaths,
                format!("task {id}: path {e}"),
                "paths are files or folders relative to the repository root, e.g. src/report/",
            ));
        }
    }
    Ok(())
}

/// The file part of a `spec_ref` (`path#anchor` → `path`).
pub fn spec_file(spec_ref: &str) -> &str {
    spec_ref.split_once('#').map_or(spec_ref, |(p, _)| p)
}

/// `finalize-task`: the planner's gates, then DRAFT → UNCLAIMED with the spec's blob id.
pub fn finalize(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    spec: &SpecFacts,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let current = task(state, id)?;
    row(Command::FinalizeTask, Some(current.status), who.kind())?;
    if who.kind() == Kind::Planner && state.config.plan_approval() == PlanApproval::Human {
        return Err(Refusal::new(
            RuleId::PlanApproval,
            format!(
                "task {id} stays DRAFT: config.plan_approval is human, so a person finalizes the plan"
            ),
            "a person reads the plan and runs `liza finalize-task --all`",
        ));
    }
    let gate = |what: String, hint: &str| {
        Err(Refusal::new(
            RuleId::FinalizeGates,
            format!("task {id} cannot be finalized: {what}"),
            hint,
        ))
    };
    let Some(spec_ref) = current.spec_ref.as_deref() else {
        return gate("it has no spec_ref".into(), "amend it with --spec <path>");
    };
    if !spec.exists {
        return gate(
            format!("its spec file {} does not exist", spec_file(spec_ref)),
            "write the spec, or amend --spec to an existing file (relative to the project root)",
        );
    }
    if !spec.committed {
        let file = spec_file(spec_ref);
        let branch = state.config.integration_branch();
        let bring = match &state.config.git_remote {
            Some(url) => format!("push it to the shared {branch}: git push {url} HEAD:{branch}"),
            None => format!(
                "bring it to {branch}: git fetch . HEAD:{branch} (a fast-forward), or merge it there"
            ),
        };
        return Err(Refusal::new(
            RuleId::SpecCommitted,
            format!(
                "task {id} cannot be finalized: its spec file {file} is not committed on {branch}, \
                 where its worktree starts"
            ),
            format!("commit it (git add {file} && git commit), then {bring}"),
        ));
    }
    let Some(done) = current.done_when.as_deref() else {
        return gate(
            "it has no done_when".into(),
            "amend it with --done \"<a falsifiable criterion>\"",
        );
    };
    if let Some(why) = unfalsifiable(done) {
        return gate(
            format!("done_when {done:?} is not falsifiable: {why}"),
            "say what a reviewer can check, e.g. \"report --json prints a totals key\"",
        );
    }
    if current.scope.as_deref().is_none_or(|s| s.trim().is_empty()) {
        return gate(
            "it has no scope".into(),
            "amend it with --scope \"what is in and out\"",
        );
    }
    for dep in current.depends_on() {
        if !state.task_exists(dep) {
            return gate(
                format!("its dependency {dep} does not exist"),
                "amend --depends",
            );
        }
    }
    let mut outcome = Outcome::default();
    if only_about_tests(
        current.description.as_deref().unwrap_or(""),
        current.scope.as_deref().unwrap_or(""),
    ) {
        outcome.warnings.push(format!("task {id} looks like it only adds tests; tests usually belong with the change they check"));
    }
    let spec_ref = spec_ref.to_owned();
    let t = task_mut(state, id);
    set_status(t, TaskStatus::Unclaimed, now);
    t.spec_hash = spec.blob.clone();
    let mut fields = Vec::new();
    if let Some(blob) = &spec.blob {
        fields.push(("spec_hash", text(blob.clone())));
    }
    history(t, now, EventKind::Finalized, &who.name(), &fields);
    outcome.event(
        EventKind::Finalized,
        &who.name(),
        Some(id),
        spec.blob
            .clone()
            .map(|b| format!("spec {} at {b}", spec_file(&spec_ref))),
    );
    Ok(outcome)
}

/// A dependency cycle among live tasks, as the path of ids (first id repeated at the end).
pub fn find_cycle(state: &State) -> Option<Vec<TaskId>> {
    let deps: HashMap<&TaskId, &[TaskId]> = state
        .tasks
        .iter()
        .map(|t| (&t.id, t.depends_on()))
        .collect();
    // 0 unvisited, 1 on the stack, 2 done.
    let mut mark: HashMap<&TaskId, u8> = HashMap::new();
    for start in state.tasks.iter().map(|t| &t.id) {
        if mark.get(start).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut stack: Vec<(&TaskId, usize)> = vec![(start, 0)];
        mark.insert(start, 1);
        while let Some((node, next)) = stack.last_mut() {
            let children = deps.get(node).copied().unwrap_or(&[]);
            if let Some(child) = children.get(*next) {
                *next += 1;
                match mark.get(child).copied().unwrap_or(0) {
                    0 if deps.contains_key(child) => {
                        mark.insert(child, 1);
                        stack.push((child, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|(n, _)| *n == child).unwrap_or(0);
                        let mut cycle: Vec<TaskId> =
                            stack[from..].iter().map(|(n, _)| (*n).clone()).collect();
                        cycle.push(child.clone());
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                mark.insert(node, 2);
                stack.pop();
            }
        }
    }
    None
}

fn cycle_refusal(cycle: &[TaskId]) -> Refusal {
    let path: Vec<&str> = cycle.iter().map(TaskId::as_str).collect();
    Refusal::new(
        RuleId::DependencyCycle,
        format!("dependencies would form a cycle: {}", path.join(" → ")),
        "remove one of these dependencies",
    )
}
