//! The built-in coder (specs/builtin-agent.md *Coder*):
//! gather context within the token budget, ask for edits (full files or a unified diff),
//! apply them inside the worktree only, run the project's checks and feed failures back
//! (the truncation rule) up to `MAX_RETRIES` more drafts, then commit and
//! `submit-for-review`. The run's CommitResult goes to the task's history and the run log.

use crate::blackboard::EventKind;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::ask::{self, Question, read};
use super::context::{RunContext, Status};
use super::edits::{self, Edit, NotApplied};
use crate::blackboard::model::{Task, ValidationMode};
use crate::blackboard::node::Node;
use crate::git::cli::git_lines;
use crate::git::{Repo, dirty_files, head_of, task_branch};
use crate::lifecycle::RunResult;
use crate::lifecycle::task_scope::TaskScope;
use crate::llm::client::Usage;
use crate::llm::response::Expect;
use crate::llm::text::{estimate_tokens, truncate_output};
use crate::ops::{self, CheckRun};

/// Drafts after the first when the checks fail (specs/builtin-agent.md *Coder*:
/// `MAX_RETRIES`, default 2).
pub const MAX_RETRIES: u32 = 2;

const RULES: &str = "You are liza's built-in coder. You implement exactly one task by \
editing files of a git worktree. Paths are relative to the worktree root; never use \
absolute paths or `..`, never touch `.git/` or `.liza/`, and stay within the task's \
paths when it lists any. Do not modify tests unless the task asks for it. Reply with \
JSON only: no prose, no markdown fences.";

const ANSWER: &str = r#"# Answer

JSON only, one of:
- {"edits": [{"path": "relative/path", "content": "<the FULL new content of the file>"}]}   (sorted by path)
- {"diff": "<a unified diff with --- a/<path> and +++ b/<path> headers>"}
- {"status": "error", "reason": "<short reason you cannot do the task>"}"#;

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Full contents of the files to write, sorted by path.
    Edits(Vec<Edit>),
    /// A unified diff to apply with `git apply`.
    Diff(String),
    /// `{"status": "error"}`: the model cannot do the task, and why.
    CannotDo(String),
}

/// Reads the coder's answer in `mode` (see [`ask`]).
pub fn read_answer(
    value: &Value,
    mode: ValidationMode,
) -> Result<(Answer, Vec<String>), Vec<String>> {
    if value.get("status").and_then(Value::as_str) == Some("error") {
        let reason = read::opt_text(value, "reason").unwrap_or_else(|| "no reason given".into());
        return Ok((Answer::CannotDo(reason), Vec::new()));
    }
    if let Some(diff) = value.get("diff") {
        return match diff.as_str() {
            Some(d) if !d.trim().is_empty() => Ok((Answer::Diff(d.to_owned()), Vec::new())),
            _ => Err(vec!["answer.diff must be a non-empty unified diff".into()]),
        };
    }
    let Some(items) = value.get("edits").and_then(Value::as_array) else {
        return Err(vec![
            "the answer needs `edits` (a list) or `diff` (text)".into(),
        ]);
    };
    let mut kept = Vec::new();
    let mut errors = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("answer.edits[{i}]");
        match (
            read::text(item, "path", &at),
            item.get("content").and_then(Value::as_str),
        ) {
            (Ok(path), Some(content)) => kept.push(Edit {
                path,
                content: content.to_owned(),
            }),
            (Err(e), _) => errors.push(e.to_string()),
            (_, None) => errors.push(format!("{at}.content must be text (the full file)")),
        }
    }
    if mode == ValidationMode::Strict && !errors.is_empty() {
        return Err(errors);
    }
    kept.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((
        Answer::Edits(kept),
        if mode == ValidationMode::None {
            Vec::new()
        } else {
            errors
        },
    ))
}

/// The run's CommitResult (specs/builtin-agent.md *Coder*).
struct CommitResult {
    status: Status,
    commit_sha: Option<String>,
    notes: Vec<String>,
    retries: u32,
    /// Retries by reason (`transport`, `parse`, `schema`, `checks`), for the metrics.
    retry_reasons: BTreeMap<&'static str, u32>,
    usage: Usage,
    /// Lines added and removed by the committed change.
    patch_lines: u64,
}

/// One run of the coder on its task: drafts, checks, commit and submit; its
/// CommitResult goes to the task's history and the run log. No task given: HARD_FAIL.
pub async fn run(ctx: &RunContext) -> Status {
    let Some(task) = ctx.task.clone() else {
        eprintln!("liza builtin coder: no task given (--task ID)");
        return Status::HardFail;
    };
    let started = std::time::Instant::now();
    let result = work(ctx, &task).await;
    report(ctx, &task, &result, started.elapsed());
    result.status
}

async fn work(ctx: &RunContext, task: &Task) -> CommitResult {
    let mut result = CommitResult {
        status: Status::SoftFail,
        commit_sha: None,
        notes: Vec::new(),
        retries: 0,
        retry_reasons: BTreeMap::new(),
        usage: Usage::default(),
        patch_lines: 0,
    };
    let state = match ctx.project.store.snapshot() {
        Ok(s) => s.state,
        Err(e) => {
            result.status = Status::HardFail;
            result
                .notes
                .push(format!("cannot read the blackboard: {e}"));
            return result;
        }
    };
    let scope = TaskScope::of(task, &state.config);
    // The coder's inner loop runs the fast checks (format, lint, fast tests: the ones not
    // flagged); checks flagged on_review / on_merge are liza's own gates, run at review
    // and merge time whatever the coder claims.
    let checks: Vec<_> = state
        .config
        .checks
        .iter()
        .flatten()
        .filter(|c| c.on_review != Some(true) && c.on_merge != Some(true))
        .cloned()
        .collect();
    let budget = ctx.client.endpoint().context_tokens;
    let context = match gather_context(ctx, task, &scope, budget) {
        Ok(c) => c,
        Err(why) => {
            result.status = Status::HardFail;
            result.notes.push(why.to_string());
            return result;
        }
    };
    let system = ctx.system(RULES);
    let dry_run_answer = super::dry_run::edits(task, &state.config.test_paths());
    let mut feedback: Option<String> = None;
    let mut failures: BTreeMap<String, u32> = BTreeMap::new();
    for draft in 0..=MAX_RETRIES {
        if draft > 0 {
            result.retries += 1;
        }
        let mut user = context.clone();
        if let Some(f) = &feedback {
            user.push_str(&format!(
                "\n\n# What went wrong with your last draft\n\n{f}\n"
            ));
        }
        user.push_str("\n\n");
        user.push_str(ANSWER);
        let asked = ask::ask(
            &ctx.client,
            &ctx.artifacts,
            Question {
                system: &system,
                user,
                expect: Expect::Object,
                dry_run_answer: &dry_run_answer,
                label: &format!("draft-{}", draft + 1),
            },
            &read_answer,
        )
        .await;
        result.usage.add(asked.usage);
        for reason in &asked.retries {
            *result.retry_reasons.entry(reason).or_default() += 1;
        }
        let Some(answer) = asked.answer else {
            let why = asked.failure.unwrap_or_else(|| "no answer".into());
            ctx.runlog
                .append("error", json!({"draft": draft + 1, "reason": why}));
            result
                .notes
                .push(format!("draft {}: no usable answer ({why})", draft + 1));
            return result; // SOFT_FAIL: the supervisor counts it and tries again later
        };
        let applied = match answer {
            Answer::CannotDo(reason) => {
                ctx.runlog
                    .append("error", json!({"draft": draft + 1, "reason": reason}));
                result.status = Status::HardFail;
                result
                    .notes
                    .push(format!("the model cannot do the task: {reason}"));
                return result;
            }
            Answer::Edits(list) => edits::apply_edits(&ctx.worktree, &list, &scope),
            Answer::Diff(diff) => {
                match edits::apply_diff(&ctx.worktree, &diff, &scope, &apply_jail(ctx)) {
                    Ok(files) => Ok(files),
                    Err(NotApplied::Rejected { said: why }) => {
                        ctx.runlog.append("error", json!({"draft": draft + 1, "reason": format!("patch does not apply: {why}")}));
                        result.status = Status::HardFail;
                        result.notes.push(format!(
                            "the patch does not apply, even without trailing whitespace: {why}"
                        ));
                        return result;
                    }
                    Err(refused) => Err(refused),
                }
            }
        };
        let files = match applied {
            Ok(files) => files,
            Err(why) => {
                ctx.runlog.append(
                    "error",
                    json!({"draft": draft + 1, "reason": why.to_string()}),
                );
                result
                    .notes
                    .push(format!("draft {}: edit refused: {why}", draft + 1));
                feedback = Some(format!(
                    "Your edits were refused and nothing was written: {why}"
                ));
                continue;
            }
        };
        ctx.runlog
            .append("patch", json!({"draft": draft + 1, "files": files}));
        if dirty_files(&ctx.worktree).map_or(true, |d| d.is_empty()) {
            result.notes.push(format!(
                "draft {}: the edits left the worktree unchanged",
                draft + 1
            ));
            feedback = Some(
                "Your edits left the worktree exactly as it was: change the files the task needs."
                    .into(),
            );
            continue;
        }
        let mut failed = run_checks(ctx, &checks, &mut failures);
        let (optional, required): (Vec<CheckRun>, Vec<CheckRun>) = failed
            .drain(..)
            .partition(|run| checks.iter().any(|c| c.name == run.name && is_optional(c)));
        let failed = required;
        if failed.is_empty() {
            for run in &optional {
                trade_off(ctx, task, run, &mut result);
            }
            return finish(ctx, task, result).await;
        }
        let text: Vec<String> = failed
            .iter()
            .map(|c| {
                format!(
                    "## {} ({})\n\n{}",
                    c.name,
                    c.exit,
                    truncate_output(&c.output)
                )
            })
            .collect();
        result.notes.push(format!(
            "draft {}: checks failed: {}",
            draft + 1,
            failed
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        feedback = Some(format!(
            "The project's checks failed on your draft:\n\n{}",
            text.join("\n\n")
        ));
        if draft < MAX_RETRIES {
            *result.retry_reasons.entry("checks").or_default() += 1;
        }
    }
    result
}

/// The project's sandbox configuration as the blackboard has it now (the default where it
/// cannot be read: the sandbox on).
fn sandbox_config(ctx: &RunContext) -> crate::blackboard::model::SandboxConfig {
    ctx.project
        .store
        .snapshot()
        .map(|s| s.state.config.sandbox())
        .unwrap_or_default()
}

/// Where the model's diff is applied: a sandbox of the worktree with no network.
fn apply_jail(ctx: &RunContext) -> crate::sandbox::Jail {
    crate::sandbox::Jail::for_dir(
        &ctx.project.root,
        &ctx.worktree,
        &sandbox_config(ctx),
        crate::blackboard::model::SandboxNetwork::None,
    )
}

/// Runs every check (a failing one once more, for flaky tests); the ones still failing.
/// A check failing more than twice in this run is a `retry_loop` anomaly.
fn run_checks(
    ctx: &RunContext,
    checks: &[crate::blackboard::model::Check],
    failures: &mut BTreeMap<String, u32>,
) -> Vec<CheckRun> {
    let mut failed = Vec::new();
    let jail =
        crate::sandbox::Jail::for_checks(&ctx.project.root, &ctx.worktree, &sandbox_config(ctx));
    for check in checks {
        let Some(mut run) = ops::run_check(check, &ctx.worktree, &jail) else {
            continue;
        };
        if !run.passed
            && let Some(again) = ops::run_check(check, &ctx.worktree, &jail)
        {
            run = again;
        }
        ctx.runlog.append(
            "test_result",
            json!({"check": run.name, "passed": run.passed, "exit": run.exit}),
        );
        if run.passed {
            continue;
        }
        let count = failures.entry(run.name.clone()).or_default();
        *count += 1;
        if *count == 3
            && let Some(task) = ctx.task_id()
        {
            let pattern: String = run
                .output
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            let details = [
                format!("count={count}"),
                format!("error_pattern={} failed: {pattern}", run.name),
            ];
            if let Err(e) = ops::anomaly(&ctx.project, &ctx.actor, "retry_loop", task, &details) {
                tracing::warn!(error = %e, "could not record the retry_loop anomaly");
            }
        }
        failed.push(run);
    }
    failed
}

/// A check the project marks `optional: true`: its failure does not hold the work back.
fn is_optional(check: &crate::blackboard::model::Check) -> bool {
    check
        .extra
        .get("optional")
        .is_some_and(|n| matches!(n.value, crate::blackboard::node::Value::Bool(true)))
}

/// Accepting a result with a failing optional check is a trade-off, logged as it happens.
fn trade_off(ctx: &RunContext, task: &Task, run: &CheckRun, result: &mut CommitResult) {
    let last = run
        .output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let details = [
        format!(
            "what=submitted with the optional check `{}` failing",
            run.name
        ),
        "why=the required checks pass; the check is marked optional".to_owned(),
        format!(
            "debt_created=`{}` still fails: {}",
            run.name,
            last.chars().take(200).collect::<String>()
        ),
    ];
    if let Err(e) = ops::anomaly(&ctx.project, &ctx.actor, "trade_off", &task.id, &details) {
        tracing::warn!(error = %e, "could not record the trade_off anomaly");
    }
    result.notes.push(format!(
        "accepted with the optional check {} failing",
        run.name
    ));
}

/// Commits (`feat: <title>` + `[agent:<task>]`) and submits for review.
async fn finish(ctx: &RunContext, task: &Task, mut result: CommitResult) -> CommitResult {
    let title = task
        .description
        .as_deref()
        .and_then(|d| d.lines().next())
        .unwrap_or("the task")
        .trim()
        .to_owned();
    let message = format!("feat: {title}\n\n[agent:{}]\n", task.id);
    let committed =
        Repo::open(&ctx.project.root).and_then(|r| r.commit_all(&ctx.worktree, &message));
    match committed {
        Ok(Some(sha)) => {
            result.patch_lines = patch_lines(&ctx.worktree, &sha);
            result.commit_sha = Some(sha.to_string());
        }
        Ok(None) => match head_of(&ctx.worktree) {
            Ok(head) => result.commit_sha = Some(head.to_string()),
            Err(e) => {
                result.notes.push(format!("no commit: {e}"));
                return result;
            }
        },
        Err(e) => {
            result.status = Status::HardFail;
            result.notes.push(format!("could not commit: {e}"));
            return result;
        }
    }
    match ops::submit_for_review(
        &ctx.project,
        &ctx.actor,
        &task.id,
        result.commit_sha.as_deref(),
    ) {
        Ok(_) => {
            result.status = Status::Success;
            result.notes.push("submitted for review".into());
        }
        Err(e) => {
            result.status = Status::SoftFail;
            result.notes.push(format!("submit-for-review refused: {e}"));
        }
    }
    result
}

/// Records the CommitResult in the task's history (with the usage) and the run log.
fn report(ctx: &RunContext, task: &Task, result: &CommitResult, took: std::time::Duration) {
    let value = json!({
        "task_id": task.id.as_str(),
        "commit_sha": result.commit_sha,
        "branch_name": task_branch(&task.id),
        "status": result.status.as_str(),
        "notes": result.notes,
        "retries": result.retries,
        "llm_tokens_used": result.usage.total(),
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "duration_ms": took.as_millis() as u64,
        "retry_reasons": result.retry_reasons,
        "patch_lines": result.patch_lines,
    });
    ctx.runlog.append("commit_result", value.clone());
    let summary = format!(
        "{}: {}",
        result.status.as_str(),
        result.notes.last().map_or("", String::as_str)
    );
    let run = RunResult {
        event: EventKind::CommitResult,
        result: serde_json::from_value::<Node>(value)
            .unwrap_or_else(|_| Node::new(crate::blackboard::node::Value::Null)),
        usage: (result.usage.prompt_tokens, result.usage.completion_tokens),
        summary,
    };
    if let Err(e) = ops::record_builtin_result(&ctx.project, &ctx.actor, &task.id, run) {
        tracing::warn!(error = %e, "could not record the run's result in the task history");
    }
    for note in &result.notes {
        eprintln!("  {note}");
    }
}

/// The task and its spec alone do not fit the context budget: no draft could be asked for.
#[derive(Debug, thiserror::Error)]
#[error(
    "context over budget: the task and its spec alone are ~{needed} tokens, more than config.builtin.context_tokens ({budget})"
)]
struct OverBudget {
    needed: usize,
    budget: usize,
}

/// The task, its spec, earlier feedback and the relevant files, within `budget` tokens.
fn gather_context(
    ctx: &RunContext,
    task: &Task,
    scope: &TaskScope,
    budget: usize,
) -> Result<String, OverBudget> {
    let mut text = format!(
        "# Task {}\n\n{}\n",
        task.id,
        task.description.as_deref().unwrap_or("")
    );
    if let Some(done) = &task.done_when {
        text.push_str(&format!("\n## Done when\n\n{done}\n"));
    }
    if let Some(scope) = &task.scope {
        text.push_str(&format!("\n## Scope\n\n{scope}\n"));
    }
    if scope.is_limited() {
        text.push_str(&format!("\nYou may change only: {}\n", scope.describe()));
    }
    if let Some(spec) = &task.spec_ref {
        let file = spec.split('#').next().unwrap_or(spec);
        if let Some(body) = crate::confine::read_inside(&ctx.worktree, file) {
            text.push_str(&format!(
                "\n## Spec ({spec})\n\n{}\n",
                truncate_output(&body)
            ));
        }
    }
    if let Some(reason) = &task.rejection_reason {
        text.push_str(&format!(
            "\n## The last review rejected the work\n\n{reason}\n"
        ));
    }
    if let Some(failure) = &task.integration_failure {
        text.push_str(&format!(
            "\n## The merge into integration failed ({:?})\n\nFiles: {}\n{}\n",
            failure.kind,
            failure.paths.clone().unwrap_or_default().join(", "),
            truncate_output(failure.log.as_deref().unwrap_or(""))
        ));
    }
    let needed = estimate_tokens(&text);
    if needed > budget {
        return Err(OverBudget { needed, budget });
    }
    let files = worktree_files(&ctx.worktree);
    text.push_str(&format!(
        "\n## Files in the worktree\n\n{}\n",
        files
            .iter()
            .take(200)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    ));
    let mut mentioned = relevant_files(task, &files);
    for f in grep_files(&ctx.worktree, task) {
        if !mentioned.contains(&f) {
            mentioned.push(f);
        }
    }
    let mut left = budget.saturating_sub(estimate_tokens(&text));
    let mut shown = String::new();
    for path in mentioned {
        let Ok(body) = std::fs::read_to_string(ctx.worktree.join(&path)) else {
            continue;
        };
        let cost = estimate_tokens(&body) + 16;
        let body = if cost <= left {
            body
        } else if left > 200 {
            // Over budget: the head and tail of the file (the truncation rule's shape).
            let keep = (left - 100) * 4;
            let head: String = body.chars().take(keep * 2 / 3).collect();
            let tail: String = body
                .chars()
                .rev()
                .take(keep / 3)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("{head}\n... (truncated to fit the context budget) ...\n{tail}")
        } else {
            break;
        };
        left = left.saturating_sub(estimate_tokens(&body) + 16);
        shown.push_str(&format!("\n### {path}\n\n```\n{body}\n```\n"));
    }
    if !shown.is_empty() {
        text.push_str("\n## Current content of the relevant files\n");
        text.push_str(&shown);
    }
    if let Some(prompt) = &ctx.supervisor_prompt
        && let Some(notes) = prompt.split("## Human notes").nth(1)
    {
        text.push_str(&format!("\n## Human notes\n{}\n", truncate_output(notes)));
    }
    Ok(text)
}

/// Lines added plus removed by `commit` (`git diff --numstat` against its parent).
fn patch_lines(worktree: &Path, commit: &str) -> u64 {
    git_lines(
        worktree,
        &["diff", "--numstat", &format!("{commit}^"), commit],
    )
    .iter()
    .filter_map(|l| {
        let mut parts = l.split_whitespace();
        let added: u64 = parts.next()?.parse().ok()?;
        let removed: u64 = parts.next()?.parse().ok()?;
        Some(added + removed)
    })
    .sum()
}

/// The task's description, done-when and scope, as one text to search.
fn task_text(task: &Task) -> String {
    [
        task.description.as_deref(),
        task.done_when.as_deref(),
        task.scope.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ")
}

/// The worktree's files (tracked and untracked, not ignored), sorted.
fn worktree_files(worktree: &Path) -> Vec<String> {
    let mut files = git_lines(worktree, &["ls-files", "-co", "--exclude-standard"]);
    files.sort();
    files
}

/// Files under the task's paths, and files its text names, in that order.
fn relevant_files(task: &Task, files: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in task.paths.iter().flatten() {
        let p = p.trim().trim_start_matches("./").trim_end_matches('/');
        for f in files
            .iter()
            .filter(|f| *f == p || f.starts_with(&format!("{p}/")))
        {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
    }
    let words = task_text(task);
    for f in files {
        let name = f.rsplit('/').next().unwrap_or(f);
        if (words.contains(f.as_str()) || (name.contains('.') && words.contains(name)))
            && !out.contains(f)
        {
            out.push(f.clone());
        }
    }
    out
}

/// Files that contain a name the task quotes in backticks (`parse_args`, `--json`):
/// `git grep` in the worktree, at most five files per name.
fn grep_files(worktree: &Path, task: &Task) -> Vec<String> {
    let text = task_text(task);
    let names: Vec<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|n| n.len() >= 3 && n.len() <= 80 && !n.contains('\n'))
        .collect();
    let mut found = Vec::new();
    for name in names {
        for f in git_lines(worktree, &["grep", "-l", "-F", "--", name])
            .into_iter()
            .take(5)
        {
            if !found.contains(&f) {
                found.push(f);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_each_shape_and_mode() {
        let edits =
            json!({"edits": [{"path": "b.rs", "content": "b"}, {"path": "a.rs", "content": "a"}]});
        let (a, errors) = read_answer(&edits, ValidationMode::Strict).unwrap();
        assert_eq!(
            a,
            Answer::Edits(vec![
                Edit {
                    path: "a.rs".into(),
                    content: "a".into()
                },
                Edit {
                    path: "b.rs".into(),
                    content: "b".into()
                }
            ])
        );
        assert!(errors.is_empty());
        let mixed = json!({"edits": [{"path": "a.rs", "content": "a"}, {"path": "", "content": "x"}, {"path": "c.rs"}]});
        assert_eq!(
            read_answer(&mixed, ValidationMode::Strict)
                .unwrap_err()
                .len(),
            2
        );
        let (lenient, errors) = read_answer(&mixed, ValidationMode::Lenient).unwrap();
        assert_eq!(
            lenient,
            Answer::Edits(vec![Edit {
                path: "a.rs".into(),
                content: "a".into()
            }])
        );
        assert_eq!(errors.len(), 2);
        let (none, errors) = read_answer(&mixed, ValidationMode::None).unwrap();
        assert_eq!(none, lenient);
        assert!(errors.is_empty());
        assert_eq!(
            read_answer(&json!({"diff": "--- a/x\n"}), ValidationMode::Strict)
                .unwrap()
                .0,
            Answer::Diff("--- a/x\n".into())
        );
        assert_eq!(
            read_answer(
                &json!({"status": "error", "reason": "no spec"}),
                ValidationMode::Strict
            )
            .unwrap()
            .0,
            Answer::CannotDo("no spec".into())
        );
        assert!(read_answer(&json!({"files": []}), ValidationMode::Lenient).is_err());
    }
}
