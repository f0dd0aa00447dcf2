//! The built-in code reviewer (specs/builtin-agent.md *Roles*): the task, its spec, the diff
//! `base_commit..review_commit` (chunked to the context budget) and the results of the
//! checks liza itself runs on the review commit; the mechanical blockers liza finds on its
//! own; a grounded verdict — every model finding must quote the file at the review commit
//! verbatim, or it is dropped. A failing check forces a reject; a reject without a grounded
//! blocker is asked once more, then recorded as no verdict (the review is released).

use crate::blackboard::EventKind;
use std::path::Path;

use serde_json::{Value, json};

use super::ask::{self, Question, read};
use super::context::{RunContext, Status};
use crate::blackboard::model::{State, Task, ValidationMode};
use crate::blackboard::node::Node;
use crate::git::cli::git;
use crate::lifecycle::task_scope::TaskScope;
use crate::lifecycle::text_rules::{any_match, citations};
use crate::lifecycle::{RunResult, Verdict};
use crate::llm::chunk::chunk;
use crate::llm::client::Usage;
use crate::llm::grounding::{Quote, Source, chunk_of, quote_id};
use crate::llm::response::Expect;
use crate::llm::text::{CharIndex, line_of, truncate_output};
use crate::ops::{self, CheckRun};

const RULES: &str = "You are liza's built-in code reviewer. You judge one submitted change \
against its task and spec. Every finding quotes the code it is about verbatim, with the \
quote's Unicode code-point offsets in the file at the review commit. Reject only for \
blockers you can quote. Reply with JSON only: no prose, no markdown fences.";

const ANSWER: &str = r#"# Answer

JSON only:
{"verdict": "approve" | "reject",
 "findings": [{"severity": "blocker" | "concern", "path": "<file>",
               "quotes": [{"text": "<verbatim code>", "start_pos": <int>, "end_pos": <int>}],
               "issue": "<what is wrong>", "suggestion": "<how to fix it>"}],
 "overall": "<one paragraph>"}
Each finding has 1 to 3 quotes."#;

/// How much a finding weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// It must be fixed: a reject rests on at least one.
    Blocker,
    /// Worth saying, not worth a reject.
    Concern,
}

/// One finding of the model on the change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Blocker or concern.
    pub severity: Severity,
    /// The file it is about, relative to the worktree.
    pub path: String,
    /// 1 to 3 quotes of the file at the review commit; after grounding, only those that
    /// hold.
    pub quotes: Vec<Quote>,
    /// What is wrong.
    pub issue: String,
    /// How to fix it.
    pub suggestion: Option<String>,
    /// The 1-based line of the first quote in the file (set by grounding).
    pub line: usize,
}

/// What the model answered: the verdict, the findings and an overall judgement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Review {
    /// `None`: no usable verdict (lenient reading of a broken one).
    pub approve: Option<bool>,
    /// The findings, blockers and concerns.
    pub findings: Vec<Finding>,
    /// One paragraph on the change as a whole.
    pub overall: String,
}

/// Reads the reviewer's answer in `mode` (see [`ask`]).
pub fn read_review(
    value: &Value,
    mode: ValidationMode,
) -> Result<(Review, Vec<String>), Vec<String>> {
    let mut errors = Vec::new();
    let approve = match value
        .get("verdict")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("approve") => Some(true),
        Some("reject") => Some(false),
        _ => {
            errors.push("answer.verdict must be \"approve\" or \"reject\"".to_owned());
            None
        }
    };
    let mut findings = Vec::new();
    let items = match value.get("findings") {
        Some(Value::Array(items)) => items.as_slice(),
        None => &[],
        Some(_) => {
            errors.push("answer.findings must be a list".into());
            &[]
        }
    };
    for (i, item) in items.iter().enumerate() {
        match read_finding(item, &format!("answer.findings[{i}]")) {
            Ok(f) => findings.push(f),
            Err(e) => errors.extend(e),
        }
    }
    let overall = read::opt_text(value, "overall").unwrap_or_default();
    if mode == ValidationMode::Strict && !errors.is_empty() {
        return Err(errors);
    }
    if mode == ValidationMode::None {
        errors.clear();
    }
    Ok((
        Review {
            approve,
            findings,
            overall,
        },
        errors,
    ))
}

fn read_finding(item: &Value, at: &str) -> Result<Finding, Vec<String>> {
    let mut errors = Vec::new();
    let severity = match item.get("severity").and_then(Value::as_str) {
        Some("blocker") => Some(Severity::Blocker),
        Some("concern") => Some(Severity::Concern),
        _ => {
            errors.push(format!("{at}.severity must be \"blocker\" or \"concern\""));
            None
        }
    };
    let path = read::text_noted(item, "path", at, &mut errors);
    let issue = read::text_noted(item, "issue", at, &mut errors);
    let mut quotes = Vec::new();
    match item.get("quotes").and_then(Value::as_array) {
        Some(list) if (1..=3).contains(&list.len()) => {
            for (j, q) in list.iter().enumerate() {
                match serde_json::from_value::<Quote>(q.clone()) {
                    Ok(q) => quotes.push(q),
                    Err(_) => errors.push(format!(
                        "{at}.quotes[{j}] needs text, start_pos and end_pos"
                    )),
                }
            }
        }
        _ => errors.push(format!("{at}.quotes must hold 1 to 3 quotes")),
    }
    match (severity, path, issue) {
        (Some(severity), Some(path), Some(issue)) if errors.is_empty() => Ok(Finding {
            severity,
            path,
            quotes,
            issue,
            suggestion: read::opt_text(item, "suggestion"),
            line: 1,
        }),
        _ => Err(errors),
    }
}

/// What liza knows about the change before asking anyone.
struct Facts {
    head: String,
    changed: Vec<String>,
    diff: String,
    checks: Vec<CheckRun>,
    blockers: Vec<String>,
}

/// One review of the task's submitted change: the checks and the mechanical blockers,
/// the model's grounded verdict, then the verdict submitted and the run's result in the
/// task's history. No verdict, or a refused one: SOFT_FAIL.
pub async fn run(ctx: &RunContext) -> Status {
    let Some(task) = ctx.task.clone() else {
        eprintln!("liza builtin code-reviewer: no task given (--task ID)");
        return Status::HardFail;
    };
    let state = match ctx.project.store.snapshot() {
        Ok(s) => s.state,
        Err(e) => {
            eprintln!("liza builtin code-reviewer: cannot read the blackboard: {e}");
            return Status::HardFail;
        }
    };
    let facts = match facts(ctx, &state, &task) {
        Ok(f) => f,
        Err(why) => {
            eprintln!("liza builtin code-reviewer: {why}");
            return Status::HardFail;
        }
    };
    let started = std::time::Instant::now();
    let mut usage = Usage::default();
    let mut dropped = 0usize;
    let mut retries: Vec<&'static str> = Vec::new();
    let mut review = ask_review(
        ctx,
        &task,
        &facts,
        None,
        &mut usage,
        &mut dropped,
        &mut retries,
    )
    .await;
    let grounded_blockers = |r: &Option<Review>| {
        r.as_ref()
            .is_some_and(|r| r.findings.iter().any(|f| f.severity == Severity::Blocker))
    };
    if facts.blockers.is_empty()
        && review.as_ref().is_some_and(|r| r.approve == Some(false))
        && !grounded_blockers(&review)
    {
        let nudge = "Your reject had no blocker that quotes the code verbatim. Quote the code for each blocker, or approve.";
        review = ask_review(
            ctx,
            &task,
            &facts,
            Some(nudge),
            &mut usage,
            &mut dropped,
            &mut retries,
        )
        .await;
    }
    let verdict = decide(&facts, review.as_ref());
    let (status, outcome) = match &verdict {
        Some(v) => match ops::submit_verdict(&ctx.project, &ctx.actor, &task.id, v, &facts.head) {
            Ok(_) => (
                Status::Success,
                if matches!(v, Verdict::Approve) {
                    "approve"
                } else {
                    "reject"
                },
            ),
            Err(e) => {
                eprintln!("liza builtin code-reviewer: the verdict was refused: {e}");
                (Status::SoftFail, "refused")
            }
        },
        None => (Status::SoftFail, "no verdict"),
    };
    let reason = match &verdict {
        Some(Verdict::Reject { reason }) => Some(reason.clone()),
        _ => None,
    };
    let result = json!({
        "task_id": task.id.as_str(),
        "review_commit": facts.head,
        "verdict": outcome,
        "status": status.as_str(),
        "mechanical_blockers": facts.blockers,
        "findings": review.as_ref().map_or(0, |r| r.findings.len()),
        "quotes_dropped": dropped,
        "reason": reason,
        "llm_tokens_used": usage.total(),
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "duration_ms": started.elapsed().as_millis() as u64,
        "retry_reasons": retries.iter().fold(std::collections::BTreeMap::<&str, u32>::new(), |mut m, r| {
            *m.entry(r).or_default() += 1;
            m
        }),
    });
    ctx.runlog.append("verdict", result.clone());
    let run = RunResult {
        event: EventKind::ReviewResult,
        result: serde_json::from_value::<Node>(result)
            .unwrap_or_else(|_| Node::new(crate::blackboard::node::Value::Null)),
        usage: (usage.prompt_tokens, usage.completion_tokens),
        summary: format!("{outcome} ({})", status.as_str()),
    };
    if let Err(e) = ops::record_builtin_result(&ctx.project, &ctx.actor, &task.id, run) {
        tracing::warn!(error = %e, "could not record the review's result in the task history");
    }
    status
}

/// The verdict: mechanical blockers (a failing check among them) force a reject; else the
/// model's verdict when a reject has a grounded blocker; else none.
fn decide(facts: &Facts, review: Option<&Review>) -> Option<Verdict> {
    let mut lines: Vec<String> = facts.blockers.clone();
    if let Some(r) = review {
        for f in &r.findings {
            let kind = if f.severity == Severity::Blocker {
                ""
            } else {
                "(concern) "
            };
            let cite = format!("{}:{}", f.path, f.line);
            let fix = f
                .suggestion
                .as_deref()
                .map(|s| format!(" — {s}"))
                .unwrap_or_default();
            lines.push(format!("{cite}: {kind}{}{fix}", f.issue));
        }
    }
    let overall = review
        .map(|r| r.overall.clone())
        .filter(|o| !o.trim().is_empty());
    let reject = !facts.blockers.is_empty()
        || review.is_some_and(|r| {
            r.approve == Some(false) && r.findings.iter().any(|f| f.severity == Severity::Blocker)
        });
    if reject {
        let overall = overall.unwrap_or_else(|| "rework the blockers above".into());
        return Some(Verdict::Reject {
            reason: format!("{}\nOverall: {overall}", lines.join("\n")),
        });
    }
    match review?.approve? {
        true => Some(Verdict::Approve),
        false => None, // a reject with no grounded blocker, asked twice
    }
}

async fn ask_review(
    ctx: &RunContext,
    task: &Task,
    facts: &Facts,
    nudge: Option<&str>,
    usage: &mut Usage,
    dropped: &mut usize,
    retries: &mut Vec<&'static str>,
) -> Option<Review> {
    let budget = ctx.client.endpoint().context_tokens;
    let head_text = prompt_head(ctx, task, facts);
    let diff_chunks = chunk(&facts.diff, (budget / 2).max(256));
    let index = CharIndex::new(&facts.diff);
    let system = ctx.system(RULES);
    let mut merged: Option<Review> = None;
    for (n, c) in diff_chunks.iter().enumerate() {
        let part = if diff_chunks.len() > 1 {
            format!(" (part {} of {})", n + 1, diff_chunks.len())
        } else {
            String::new()
        };
        let mut user = format!(
            "{head_text}\n## The diff{part}\n\n```diff\n{}\n```\n",
            c.text(&facts.diff, &index)
        );
        if let Some(nudge) = nudge {
            user.push_str(&format!("\n# Note\n\n{nudge}\n"));
        }
        user.push('\n');
        user.push_str(ANSWER);
        let asked = ask::ask(
            &ctx.client,
            &ctx.artifacts,
            Question {
                system: &system,
                user,
                expect: Expect::Object,
                dry_run_answer: r#"{"verdict": "approve", "findings": [], "overall": "dry run"}"#,
                label: &format!(
                    "review-{}{}",
                    n + 1,
                    if nudge.is_some() { "-again" } else { "" }
                ),
            },
            &read_review,
        )
        .await;
        usage.add(asked.usage);
        retries.extend(asked.retries.iter().copied());
        let mut review = asked.answer?;
        review.findings = ground(ctx, task, facts, review.findings, dropped);
        merged = Some(match merged {
            None => review,
            Some(mut m) => {
                m.approve = match (m.approve, review.approve) {
                    (Some(a), Some(b)) => Some(a && b),
                    _ => None,
                };
                m.findings.extend(review.findings);
                if !review.overall.is_empty() {
                    m.overall = format!("{} {}", m.overall, review.overall)
                        .trim()
                        .to_owned();
                }
                m
            }
        });
    }
    merged
}

/// Keeps the findings whose quotes hold in the file at the review commit.
fn ground(
    ctx: &RunContext,
    task: &Task,
    facts: &Facts,
    findings: Vec<Finding>,
    dropped: &mut usize,
) -> Vec<Finding> {
    let mut kept = Vec::new();
    for mut f in findings {
        let Some(text) = file_at(&facts.head, &f.path, &ctx.worktree) else {
            tracing::warn!(path = %f.path, "finding dropped: no such file at the review commit");
            *dropped += f.quotes.len();
            continue;
        };
        let source = Source::new(&text);
        let before = f.quotes.len();
        f.quotes = source.ground(&f.quotes, 3, "review finding");
        *dropped += before - f.quotes.len();
        let Some(first) = f.quotes.first() else {
            tracing::warn!(path = %f.path, "finding dropped: none of its quotes is in the file");
            continue;
        };
        f.line = line_of(&text, first.start_pos);
        let chunks = chunk(&text, ctx.client.endpoint().context_tokens);
        let ids: Vec<String> = f
            .quotes
            .iter()
            .map(|q| {
                quote_id(
                    &format!("{}:{}", task.id, f.path),
                    None,
                    chunk_of(&chunks, q),
                    q,
                )
            })
            .collect();
        ctx.runlog
            .append("grounding", json!({"path": f.path, "quote_ids": ids}));
        kept.push(f);
    }
    kept
}

fn prompt_head(ctx: &RunContext, task: &Task, facts: &Facts) -> String {
    let mut text = format!(
        "# Review task {} at commit {}\n\n{}\n",
        task.id,
        facts.head,
        task.description.as_deref().unwrap_or("")
    );
    if let Some(done) = &task.done_when {
        text.push_str(&format!("\n## Done when\n\n{done}\n"));
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
    // Spec currency: the spec changed since the task was finalized (liza logged the
    // spec_changed anomaly when the review was claimed).
    let current = ops::spec_facts(&ctx.project.root, task.spec_ref.as_deref()).blob;
    if let (Some(then), Some(now)) = (&task.spec_hash, &current)
        && then != now
    {
        text.push_str(&ops::spec_change_text(&ctx.project, task, then, now));
        text.push('\n');
    }
    text.push_str(&format!(
        "\n## Files changed\n\n{}\n",
        facts.changed.join("\n")
    ));
    text.push_str("\n## Checks liza ran on the review commit\n\n");
    if facts.checks.is_empty() {
        text.push_str("(no checks configured)\n");
    }
    for c in &facts.checks {
        text.push_str(&format!(
            "### {}: {}\n\n{}\n",
            c.name,
            c.exit,
            truncate_output(&c.output)
        ));
    }
    if !facts.blockers.is_empty() {
        text.push_str(&format!(
            "\n## Blockers liza found itself (already part of the verdict)\n\n{}\n",
            facts.blockers.join("\n")
        ));
    }
    text
}

/// Why the facts of a review could not be gathered (the run ends HARD_FAIL).
#[derive(Debug, thiserror::Error)]
enum NoFacts {
    /// The task has no commit to review, or no base to compare it with.
    #[error("the task has no {0}")]
    Missing(&'static str),
    /// git could not show the change.
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
}

/// Changed files, the diff, the checks and the mechanical blockers; also logs the
/// anomalies liza can see itself (`scope_deviation`).
fn facts(ctx: &RunContext, state: &State, task: &Task) -> Result<Facts, NoFacts> {
    let head = task
        .review_commit
        .as_ref()
        .map(ToString::to_string)
        .ok_or(NoFacts::Missing("review_commit"))?;
    let base = task
        .base_commit
        .as_ref()
        .map(ToString::to_string)
        .ok_or(NoFacts::Missing("base_commit"))?;
    let changed: Vec<String> = git(
        &ctx.worktree,
        &["diff", "--name-only", &format!("{base}..{head}")],
    )?
    .lines()
    .map(str::to_owned)
    .collect();
    let diff = git(&ctx.worktree, &["diff", &format!("{base}..{head}")])?;
    let jail =
        crate::sandbox::Jail::for_checks(&ctx.project.root, &ctx.worktree, &state.config.sandbox());
    let checks: Vec<CheckRun> = state
        .config
        .review_checks()
        .filter_map(|c| ops::run_check(c, &ctx.worktree, &jail))
        .collect();
    for c in &checks {
        ctx.runlog.append(
            "test_result",
            json!({"check": c.name, "passed": c.passed, "exit": c.exit}),
        );
    }
    let blockers = mechanical_blockers(state, task, &changed, &checks);
    let scope = TaskScope::of(task, &state.config);
    let outside: Vec<&String> = changed.iter().filter(|f| !scope.admits(f)).collect();
    if !outside.is_empty() {
        let details = [format!(
            "files={}",
            outside
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(",")
        )];
        if let Err(e) = ops::anomaly(
            &ctx.project,
            &ctx.actor,
            "scope_deviation",
            &task.id,
            &details,
        ) {
            tracing::warn!(error = %e, "could not record the scope_deviation anomaly");
        }
    }
    Ok(Facts {
        head,
        changed,
        diff,
        checks,
        blockers,
    })
}

/// The blockers of specs/builtin-agent.md liza adds before asking the model, each citing a
/// `path:line` as rejections must.
pub fn mechanical_blockers(
    state: &State,
    task: &Task,
    changed: &[String],
    checks: &[CheckRun],
) -> Vec<String> {
    let cite =
        |file: Option<&String>| file.map_or_else(|| "(no file):1".to_owned(), |f| format!("{f}:1"));
    let code: Vec<&String> = changed.iter().filter(|f| is_code(f)).collect();
    let mut blockers = Vec::new();
    for c in checks.iter().filter(|c| !c.passed) {
        let at = first_citation(&c.output, changed)
            .unwrap_or_else(|| cite(code.first().copied().or(changed.first())));
        let last = c
            .output
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map_or_else(
                || "(it printed nothing)".to_owned(),
                |l| l.trim().to_owned(),
            );
        blockers.push(format!(
            "{at}: the check `{}` fails on the review commit ({}): {last}",
            c.name, c.exit
        ));
    }
    // The TDD rule holds where the coder could add tests: always, since a task admits
    // its tests, unless every test location is protected or none is configured.
    let tests = state.config.test_paths();
    let protected = state.config.protected_paths();
    let tests_allowed = !tests.is_empty() && !tests.iter().all(|t| any_match(&protected, t));
    if tests_allowed && !code.is_empty() && !changed.iter().any(|f| any_match(&tests, f)) {
        blockers.push(format!(
            "{}: code changed but no test was added or changed (test_paths: {})",
            cite(code.first().copied()),
            tests.join(", ")
        ));
    }
    for c in checks.iter().filter(|c| reports_zero_tests(&c.output)) {
        blockers.push(format!(
            "{}: the check `{}` ran zero tests",
            cite(code.first().copied().or(changed.first())),
            c.name
        ));
    }
    let scope = TaskScope::of(task, &state.config);
    for f in changed.iter().filter(|f| !scope.admits(f)) {
        blockers.push(format!(
            "{f}:1: changed outside what the task may change ({})",
            scope.describe()
        ));
    }
    blockers
}

/// Documentation and configuration are not code (they need no test).
fn is_code(path: &str) -> bool {
    const NOT_CODE: &[&str] = &[
        "md", "txt", "rst", "adoc", "toml", "yaml", "yml", "json", "ini", "cfg", "conf", "lock",
        "csv",
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    !(path.starts_with("docs/")
        || name.starts_with('.')
        || name.eq_ignore_ascii_case("LICENSE")
        || ext.is_some_and(|e| NOT_CODE.contains(&e.as_str())))
}

fn reports_zero_tests(output: &str) -> bool {
    let lower = output.to_ascii_lowercase();
    [
        "running 0 tests",
        "collected 0 items",
        "ran 0 tests",
        "no tests ran",
        "no tests found",
        "0 tests run",
        "tests: 0",
        "0 passing",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// The first `path:line` in `output` naming a changed file.
fn first_citation(output: &str, changed: &[String]) -> Option<String> {
    citations(output)
        .into_iter()
        .find(|c| changed.iter().any(|f| c.starts_with(&format!("{f}:"))))
        .map(str::to_owned)
}

/// The text of `path` at `commit` (quotes are grounded in it).
fn file_at(commit: &str, path: &str, dir: &Path) -> Option<String> {
    git(dir, &["show", &format!("{commit}:{path}")]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_in_each_mode() {
        let good = json!({"verdict": "reject", "findings": [
            {"severity": "blocker", "path": "a.rs", "quotes": [{"text": "x", "start_pos": 0, "end_pos": 1}], "issue": "bad", "suggestion": "fix"},
            {"severity": "nit", "path": "a.rs", "quotes": [], "issue": "meh"}
        ], "overall": "no"});
        assert_eq!(
            read_review(&good, ValidationMode::Strict)
                .unwrap_err()
                .len(),
            2
        );
        let (lenient, errors) = read_review(&good, ValidationMode::Lenient).unwrap();
        assert_eq!(lenient.approve, Some(false));
        assert_eq!(lenient.findings.len(), 1);
        assert_eq!(errors.len(), 2);
        let (none, errors) = read_review(&json!({"findings": "x"}), ValidationMode::None).unwrap();
        assert_eq!(none.approve, None);
        assert!(errors.is_empty());
    }

    #[test]
    fn code_docs_and_zero_tests() {
        assert!(is_code("src/main.rs"));
        assert!(is_code("tests/run.sh"));
        assert!(!is_code("README.md"));
        assert!(!is_code("docs/guide.txt"));
        assert!(!is_code("Cargo.toml"));
        assert!(reports_zero_tests(
            "running 0 tests\n\ntest result: ok. 0 passed"
        ));
        assert!(!reports_zero_tests("running 3 tests"));
        assert_eq!(
            first_citation("error at src/a.rs:12: boom", &["src/a.rs".into()]),
            Some("src/a.rs:12".into())
        );
    }
}
