//! `add-task`, `add-tasks --file`, `amend-task`, `finalize-task`.

use std::path::PathBuf;

use super::CliError;
use super::output::Output;
use super::report::{context, show, task_id, task_ids};
use crate::lifecycle::{Amendment, NewTask};
use crate::ops;

#[derive(clap::Args)]
pub(super) struct AddTaskArgs {
    /// The task id (letters, digits, '-', '_', '.').
    #[arg(long)]
    id: String,
    /// What the task is.
    #[arg(long = "desc")]
    description: String,
    /// The spec it implements: PATH[#anchor], relative to the project root.
    #[arg(long = "spec")]
    spec_ref: String,
    /// A falsifiable acceptance criterion.
    #[arg(long = "done")]
    done_when: String,
    /// What is in (and out).
    #[arg(long)]
    scope: String,
    /// 1 (highest) to 5; default 3.
    #[arg(long)]
    priority: Option<i64>,
    /// Task ids it depends on (comma-separated).
    #[arg(long = "depends", value_delimiter = ',')]
    depends_on: Vec<String>,
    /// Globs of the files it may change (comma-separated).
    #[arg(long, value_delimiter = ',')]
    paths: Vec<String>,
    /// Protected globs it may change.
    #[arg(long, value_delimiter = ',')]
    allow_protected: Vec<String>,
    /// The task it replaces (a rescope).
    #[arg(long)]
    supersedes: Option<String>,
    /// Finalize it at once (DRAFT → UNCLAIMED) through the planner's gates.
    #[arg(long)]
    finalize: bool,
}

pub(super) fn cmd_add_task(args: AddTaskArgs, out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    task_id(&args.id)?;
    let new = NewTask {
        id: args.id,
        description: args.description,
        spec_ref: Some(args.spec_ref),
        done_when: Some(args.done_when),
        scope: Some(args.scope),
        priority: args.priority,
        depends_on: args.depends_on,
        paths: args.paths,
        allow_protected: args.allow_protected,
        supersedes: args.supersedes,
        finalize: args.finalize,
    };
    let done = ops::add_tasks(&project, &actor, std::slice::from_ref(&new))?;
    show(out, &done, |ids| {
        let finalized = if new.finalize { " and finalized" } else { "" };
        format!(
            "task {} added{finalized}",
            ids.first().map(|i| i.as_str()).unwrap_or("")
        )
    })
}

#[derive(clap::Args)]
pub(super) struct AddTasksArgs {
    /// A YAML list of objects with add-task's fields (id, desc, spec, done, scope,
    /// priority, depends, paths, allow_protected, supersedes, finalize).
    #[arg(long)]
    file: PathBuf,
}

pub(super) fn cmd_add_tasks(args: AddTasksArgs, out: &Output) -> Result<i32, CliError> {
    let (project, actor) = context()?;
    let bytes = super::channel::read_file_argument(&args.file)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::refused(format!("{} is not UTF-8 text", args.file.display())))?;
    let tasks = read_task_list(&args.file.display().to_string(), &text)?;
    let done = ops::add_tasks(&project, &actor, &tasks)?;
    show(out, &done, |ids| {
        let names: Vec<&str> = ids.iter().map(|i| i.as_str()).collect();
        format!("{} tasks added: {}", ids.len(), names.join(", "))
    })
}

const LIST_HINT: &str =
    "write a YAML list: - {id: t-1, desc: ..., spec: specs/x.md, done: ..., scope: ...}";

/// The piece of a value an unquoted comma cut off, when serde's "unknown field" names
/// something no field name looks like (spaces, brackets): `3) returns 4`.
fn split_at_a_comma(error: &str) -> Option<String> {
    let field = error.strip_prefix("unknown field `")?.split('`').next()?;
    (!field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then(|| field.to_owned())
}

/// Reads `add-tasks --file`: a YAML list of task objects; errors name the file, line and
/// column.
fn read_task_list(file: &str, text: &str) -> Result<Vec<NewTask>, CliError> {
    use crate::blackboard::node::Value;
    let parsed = crate::blackboard::yaml::parse(text).map_err(|e| {
        CliError::refused(format!(
            "{file}:{}:{}: {}",
            e.pos.line, e.pos.column, e.message
        ))
        .with_hint(LIST_HINT)
    })?;
    let Some(root) = parsed.root else {
        return Err(CliError::refused(format!("{file} holds no tasks")).with_hint(LIST_HINT));
    };
    let Value::Seq(items) = &root.value else {
        return Err(CliError::refused(format!(
            "{file}:{}:{}: expected a list of tasks, found {}",
            root.pos.line,
            root.pos.column,
            root.kind_name()
        ))
        .with_hint(LIST_HINT));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value::<NewTask>(item.to_json()).map_err(|e| {
                let error = CliError::refused(format!(
                    "{file}:{}:{}: task {}: {e}",
                    item.pos.line,
                    item.pos.column,
                    i + 1
                ));
                match split_at_a_comma(&e.to_string()) {
                    Some(piece) => error.with_hint(format!(
                        "in `{{…}}` every comma separates fields, so `{piece}` was read as one: quote a value that holds a comma (done: \"add(1, 3) returns 4\"), or write the task in block style"
                    )),
                    None => error.with_hint(LIST_HINT),
                }
            })
        })
        .collect()
}

#[derive(clap::Args)]
pub(super) struct AmendTaskArgs {
    /// The task id.
    task: String,
    /// The new description.
    #[arg(long = "desc")]
    description: Option<String>,
    /// The new acceptance criterion.
    #[arg(long = "done")]
    done_when: Option<String>,
    /// The new scope.
    #[arg(long)]
    scope: Option<String>,
    /// The new spec reference, PATH[#anchor].
    #[arg(long = "spec")]
    spec_ref: Option<String>,
    /// The new dependency list (comma-separated; empty string for none).
    #[arg(long = "depends")]
    depends_on: Option<String>,
    /// The new priority, 1 (highest) to 5.
    #[arg(long)]
    priority: Option<i64>,
    /// The new path globs (comma-separated; empty string for none).
    #[arg(long)]
    paths: Option<String>,
}

pub(super) fn cmd_amend_task(args: AmendTaskArgs, out: &Output) -> Result<i32, CliError> {
    let id = task_id(&args.task)?;
    let (project, actor) = context()?;
    let split = |s: &str| {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let change = Amendment {
        description: args.description,
        done_when: args.done_when,
        scope: args.scope,
        spec_ref: args.spec_ref,
        depends_on: args
            .depends_on
            .as_deref()
            .map(|d| task_ids(&split(d)))
            .transpose()?,
        priority: args.priority,
        paths: args.paths.as_deref().map(split),
    };
    let done = ops::amend_task(&project, &actor, &id, &change)?;
    show(out, &done, |_| String::new())
}

#[derive(clap::Args)]
pub(super) struct FinalizeArgs {
    /// Task ids to finalize.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    tasks: Vec<String>,
    /// Every DRAFT task.
    #[arg(long)]
    all: bool,
}

pub(super) fn cmd_finalize(args: FinalizeArgs, out: &Output) -> Result<i32, CliError> {
    let ids = task_ids(&args.tasks)?;
    let (project, actor) = context()?;
    let done = ops::finalize_tasks(&project, &actor, &ids, args.all)?;
    show(out, &done, |ids| {
        let names: Vec<&str> = ids.iter().map(|i| i.as_str()).collect();
        format!("finalized {}", names.join(", "))
    })
}
