//! Rows that report work: submit for review, verdicts (and the automatic review-deadlock
//! block), voiding a verdict, block and handoff.

use crate::EventKind;
use crate::model::{AgentStatus, Anomaly, AnomalyType, CommitId, Handoff, State, TaskStatus};
use crate::node::{Entry, Node, Value};
use crate::{AgentId, TaskId, Timestamp};

use super::RuleId;
use super::context::{
    Outcome, Who, history, release_agent, required_text, set_agent, set_status, task, task_mut,
    text,
};
use super::refusal::Refusal;
use super::table::{Command, Kind, row};
use super::task_scope::TaskScope;
use super::text_rules::{any_match, citations};

/// What git says about the worktree at submit time (gathered by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitFacts {
    /// The worktree's HEAD commit.
    pub head: CommitId,
    /// Staged, unstaged and untracked (non-ignored) files.
    pub dirty: Vec<String>,
    /// Files changed in `base_commit..HEAD`.
    pub changed: Vec<String>,
    /// HEAD descends from `base_commit` (or is it).
    pub descends_from_base: bool,
}

fn caller_agent(who: &Who) -> Result<&AgentId, Refusal> {
    match who {
        Who::Agent(id) => Ok(id),
        _ => Err(Refusal::new(
            RuleId::AgentIdentity,
            "this command is an agent's",
            "run it with LIZA_AGENT_ID and LIZA_AGENT_GENERATION set",
        )),
    }
}

/// `submit-for-review`: every submit-time check of specs/git.md, then CLAIMED → READY_FOR_REVIEW.
pub fn submit(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    requested: Option<&str>,
    facts: &SubmitFacts,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::SubmitForReview, Some(t.status), who.kind())?;
    let agent = caller_agent(who)?;
    if t.assigned_to.as_ref() != Some(agent) {
        return Err(Refusal::new(
            RuleId::SubmitAssignee,
            format!(
                "task {id} is assigned to {}, not {agent}",
                t.assigned_to.as_ref().map_or("nobody", AgentId::as_str)
            ),
            "only the coder holding the task submits it",
        ));
    }
    if !facts.dirty.is_empty() {
        return Err(Refusal::new(
            RuleId::CleanWorktree,
            format!(
                "the worktree of {id} has uncommitted files: {}",
                list(&facts.dirty)
            ),
            "commit them (or add them to .gitignore), then submit again",
        ));
    }
    if let Some(sha) = requested
        && !same_commit(sha, facts.head.as_str())
    {
        return Err(Refusal::new(
            RuleId::SubmitHead,
            format!("commit {sha} is not the worktree's HEAD ({})", facts.head),
            "submit the HEAD of the task worktree (omit the SHA to use it)",
        ));
    }
    if t.base_commit
        .as_ref()
        .is_some_and(|b| same_commit(b.as_str(), facts.head.as_str()))
    {
        return Err(Refusal::new(
            RuleId::SubmitNewCommit,
            format!(
                "nothing was committed on {id}: HEAD is still the base commit {}",
                facts.head
            ),
            "commit the work in the worktree first",
        ));
    }
    if !facts.descends_from_base {
        return Err(Refusal::new(
            RuleId::SubmitDescends,
            format!(
                "HEAD {} does not descend from the task's base commit",
                facts.head
            ),
            "rebase or merge the task branch onto its base instead of rewriting it",
        ));
    }
    let scope = TaskScope::of(t, &state.config);
    let outside: Vec<String> = facts
        .changed
        .iter()
        .filter(|f| !scope.admits(f))
        .cloned()
        .collect();
    if let Some(first) = outside.first() {
        return Err(Refusal::new(
            RuleId::TaskPaths,
            format!(
                "changes outside what the task may change ({}): {}",
                scope.describe(),
                list(&outside)
            ),
            format!("revert those files; or {}", scope.widen_hint(first)),
        ));
    }
    let protected = state.config.protected_paths();
    let allowed = t.allow_protected.clone().unwrap_or_default();
    let touched: Vec<String> = facts
        .changed
        .iter()
        .filter(|f| any_match(&protected, f) && !any_match(&allowed, f))
        .cloned()
        .collect();
    if !touched.is_empty() {
        return Err(Refusal::new(
            RuleId::ProtectedPaths,
            format!("changes to protected paths: {}", list(&touched)),
            "revert them; only a task with --allow-protected covering them may change them",
        ));
    }
    let t = task_mut(state, id);
    t.review_commit = Some(facts.head.clone());
    t.handoff_pending = None;
    set_status(t, TaskStatus::ReadyForReview, now);
    history(
        t,
        now,
        row.event,
        agent.as_str(),
        &[("commit", text(facts.head.to_string()))],
    );
    set_agent(state, agent, AgentStatus::Waiting, Some(id));
    let mut outcome = Outcome::default();
    outcome.event(
        row.event,
        agent.as_str(),
        Some(id),
        Some(format!("commit {}", facts.head)),
    );
    Ok(outcome)
}

fn list(files: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = files
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > SHOWN {
        text.push_str(&format!(" and {} more", files.len() - SHOWN));
    }
    text
}

/// Whether `given` names `full`: equal, or an abbreviation of at least 7 hex digits.
pub fn same_commit(given: &str, full: &str) -> bool {
    let given = given.to_ascii_lowercase();
    let full = full.to_ascii_lowercase();
    given == full || (given.len() >= 7 && (full.starts_with(&given) || given.starts_with(&full)))
}

/// A reviewer's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Approve the commit.
    Approve,
    /// Reject the commit.
    Reject {
        /// Why, citing at least one `path:line`.
        reason: String,
    },
}

/// `submit-verdict`: the claiming reviewer approves or rejects the commit it reviewed.
/// A rejection that brings `review_cycles_current` to `max_review_cycles` blocks the task
/// (review deadlock) in the same transaction.
pub fn verdict(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    verdict: &Verdict,
    commit: &str,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let command = match verdict {
        Verdict::Approve => Command::Approve,
        Verdict::Reject { .. } => Command::Reject,
    };
    let row = row(command, Some(t.status), who.kind())?;
    let reviewer = caller_agent(who)?;
    if t.reviewing_by.as_ref() != Some(reviewer) {
        return Err(Refusal::new(
            RuleId::VerdictClaim,
            format!(
                "a verdict on {id} is accepted only from the reviewer that claimed it ({})",
                t.reviewing_by
                    .as_ref()
                    .map_or("nobody has", AgentId::as_str)
            ),
            "verdicts are the claiming reviewer's alone; a person uses release-claim, reassign or abandon",
        ));
    }
    let Some(review_commit) = t.review_commit.clone() else {
        return Err(Refusal::new(
            RuleId::VerdictCommit,
            format!("task {id} has no review_commit"),
            "the coder must submit it again",
        ));
    };
    if !same_commit(commit, review_commit.as_str()) {
        return Err(Refusal::new(
            RuleId::VerdictCommit,
            format!("--commit {commit} is not the submitted review_commit {review_commit}"),
            "review the commit that was submitted",
        ));
    }
    let reason = match verdict {
        Verdict::Approve => None,
        Verdict::Reject { reason } => {
            let reason = required_text(
                reason,
                "the rejection reason",
                "say what is wrong and where (path:line)",
            )?;
            if citations(&reason).is_empty() {
                return Err(Refusal::new(
                    RuleId::RejectionCites,
                    "a rejection must cite at least one path:line (e.g. src/report.rs:42)",
                    "point the coder at the code: --reason \"src/report.rs:42 drops the totals key\"",
                ));
            }
            Some(reason)
        }
    };
    let coder = t.assigned_to.clone();
    let max_cycles = state.config.max_review_cycles();
    let t = task_mut(state, id);
    t.reviewing_by = None;
    t.review_lease_expires = None;
    let mut outcome = Outcome::default();
    match reason {
        None => {
            t.approved_by = Some(reviewer.clone());
            t.rejection_reason = None;
            set_status(t, TaskStatus::Approved, now);
            history(
                t,
                now,
                row.event,
                reviewer.as_str(),
                &[("commit", text(review_commit.to_string()))],
            );
            super::merge_queue::enqueue(state, id);
            outcome.event(
                row.event,
                reviewer.as_str(),
                Some(id),
                Some(format!("commit {review_commit}")),
            );
        }
        Some(reason) => {
            t.rejection_reason = Some(reason.clone());
            t.approved_by = None;
            let current = t.review_cycles_current.unwrap_or(0) + 1;
            t.review_cycles_current = Some(current);
            t.review_cycles_total = Some(t.review_cycles_total.unwrap_or(0) + 1);
            set_status(t, TaskStatus::Rejected, now);
            history(
                t,
                now,
                row.event,
                reviewer.as_str(),
                &[
                    ("reason", text(reason.clone())),
                    ("commit", text(review_commit.to_string())),
                ],
            );
            outcome.event(row.event, reviewer.as_str(), Some(id), Some(reason));
            if current >= max_cycles {
                outcome.merge(review_deadlock(state, id, current, now)?);
            }
        }
    }
    release_agent(state, Some(reviewer), id);
    if let Some(coder) = coder
        && state
            .task(id)
            .is_some_and(|t| t.status == TaskStatus::Rejected)
    {
        // The coder is woken for the same task.
        set_agent(state, &coder, AgentStatus::Waiting, Some(id));
    }
    Ok(outcome)
}

/// REJECTED → BLOCKED when the review cycles reach the limit: questions for the planner,
/// the coder added to `failed_by`, a `review_deadlock` anomaly.
fn review_deadlock(
    state: &mut State,
    id: &TaskId,
    cycles: i64,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::ReviewDeadlock, Some(t.status), Kind::Supervisor)?;
    let coder = t.assigned_to.clone();
    let last = t.rejection_reason.clone().unwrap_or_default();
    let t = task_mut(state, id);
    t.blocked_reason = Some("review_deadlock".into());
    t.blocked_questions = Some(vec![
        format!("The task was rejected {cycles} times; is its done_when achievable as written?"),
        format!("Should the spec be clarified about the last rejection: {last}?"),
    ]);
    if let Some(coder) = &coder {
        add_failed_by(t, coder);
    }
    t.lease_expires = None;
    set_status(t, TaskStatus::Blocked, now);
    history(
        t,
        now,
        row.event,
        "liza",
        &[("reason", text("review_deadlock"))],
    );
    release_agent(state, coder.as_ref(), id);
    push_anomaly(
        state,
        id,
        "liza",
        AnomalyType::ReviewDeadlock,
        &[
            ("review_cycles", Value::Int(cycles)),
            ("last_rejection", text(last)),
        ],
        now,
    );
    let mut outcome = Outcome::default();
    outcome.event(
        row.event,
        "liza",
        Some(id),
        Some(format!("review_deadlock after {cycles} rejections")),
    );
    Ok(outcome)
}

/// Adds `coder` to the task's `failed_by` (distinct ids).
fn add_failed_by(t: &mut crate::model::Task, coder: &AgentId) {
    let failed = t.failed_by.get_or_insert_with(Vec::new);
    if !failed.contains(coder) {
        failed.push(coder.clone());
    }
}

/// Appends an anomaly `{timestamp, task, reporter, type, details}`.
pub fn push_anomaly(
    state: &mut State,
    id: &TaskId,
    reporter: &str,
    kind: AnomalyType,
    details: &[(&str, Value)],
    now: Timestamp,
) {
    let details = Node::new(Value::Map(
        details
            .iter()
            .map(|(k, v)| Entry {
                key: (*k).to_owned(),
                value: Node::new(v.clone()),
                key_pos: Default::default(),
            })
            .collect(),
    ));
    state.anomalies.get_or_insert_with(Vec::new).push(Anomaly {
        timestamp: Some(now),
        task: Some(id.to_string()),
        reporter: Some(reporter.to_owned()),
        kind,
        details: Some(details),
        seen_by: None,
        extra: Default::default(),
    });
}

/// APPROVED/REJECTED → READY_FOR_REVIEW: the reviewer's run broke a role boundary, so its
/// verdict does not count.
pub fn void_verdict(
    state: &mut State,
    id: &TaskId,
    why: &str,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::VoidVerdict, Some(t.status), Kind::Supervisor)?;
    let was_rejection = t.status == TaskStatus::Rejected;
    let reviewer = t.approved_by.clone();
    // After an approval its author may have claimed other work; a coder holds one active
    // task, so the task goes back to review without it (a later rejection is then any
    // coder's to take).
    let author_moved_on = t
        .assigned_to
        .as_ref()
        .and_then(|a| super::claims::other_active_task(state, a, id))
        .map(|other| other.id.clone());
    let t = task_mut(state, id);
    t.approved_by = None;
    t.rejection_reason = None;
    if was_rejection {
        t.review_cycles_current = Some((t.review_cycles_current.unwrap_or(1) - 1).max(0));
        t.review_cycles_total = Some((t.review_cycles_total.unwrap_or(1) - 1).max(0));
    }
    let mut fields = vec![("reason", text(why))];
    if let Some(other) = &author_moved_on {
        if let Some(author) = t.assigned_to.take() {
            fields.push(("previous_assignee", text(author.to_string())));
        }
        t.worktree = None;
        fields.push(("author_now_on", text(other.to_string())));
    }
    set_status(t, TaskStatus::ReadyForReview, now);
    history(t, now, row.event, "liza", &fields);
    push_anomaly(
        state,
        id,
        "liza",
        AnomalyType::ScopeDeviation,
        &[
            ("what", text("reviewer changed the worktree")),
            ("detail", text(why)),
        ],
        now,
    );
    let mut outcome = Outcome::default();
    outcome.event(
        row.event,
        "liza",
        Some(id),
        Some(format!(
            "{why}{}",
            reviewer.map(|r| format!(" (by {r})")).unwrap_or_default()
        )),
    );
    Ok(outcome)
}

/// Why a task is blocked and who decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockCause {
    /// The coder itself (`liza block`).
    Agent,
    /// The supervisor, for the coder's failure (iteration or no-progress limit, watchdog,
    /// crash loop): the coder joins `failed_by`.
    CoderFailure,
    /// The supervisor, for the environment (usage limits, endpoint outage, broken
    /// worktree): nobody is blamed.
    Environment,
}

/// `block`: CLAIMED → BLOCKED with a reason and 1–3 questions for the planner.
#[expect(
    clippy::too_many_arguments,
    reason = "each is a field of the block row; callers name them at the call site"
)]
pub fn block(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    reason: &str,
    questions: &[String],
    attempted: &[String],
    cause: BlockCause,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::Block, Some(t.status), who.kind())?;
    if let Who::Agent(agent) = who
        && t.assigned_to.as_ref() != Some(agent)
    {
        return Err(Refusal::new(
            RuleId::BlockAssignee,
            format!("task {id} is not assigned to {agent}"),
            "a coder blocks only its own task",
        ));
    }
    if (cause == BlockCause::Agent) != matches!(who, Who::Agent(_)) {
        return Err(Refusal::new(
            RuleId::BlockCause,
            "only the supervisor blocks for a coder's failure or the environment",
            "coders use `liza block` for their own task",
        ));
    }
    let reason = required_text(
        reason,
        "the block reason",
        "say why the task cannot proceed",
    )?;
    let questions: Vec<String> = questions
        .iter()
        .map(|q| q.trim().to_owned())
        .filter(|q| !q.is_empty())
        .collect();
    if !(1..=3).contains(&questions.len()) {
        return Err(Refusal::new(
            RuleId::BlockQuestions,
            format!(
                "a block needs 1 to 3 questions for the planner, not {}",
                questions.len()
            ),
            "ask what you need decided: --question \"...\" (up to three)",
        ));
    }
    let coder = t.assigned_to.clone();
    let t = task_mut(state, id);
    t.blocked_reason = Some(reason.clone());
    t.blocked_questions = Some(questions);
    if !attempted.is_empty() {
        t.attempted = Some(attempted.to_vec());
    }
    if cause == BlockCause::CoderFailure
        && let Some(coder) = &coder
    {
        add_failed_by(t, coder);
    }
    t.lease_expires = None;
    set_status(t, TaskStatus::Blocked, now);
    history(
        t,
        now,
        row.event,
        &who_or(who, coder.as_ref()),
        &[("reason", text(reason.clone()))],
    );
    release_agent(state, coder.as_ref(), id);
    let mut outcome = Outcome::default();
    outcome.event(
        row.event,
        &who_or(who, coder.as_ref()),
        Some(id),
        Some(reason),
    );
    Ok(outcome)
}

fn who_or(who: &Who, agent: Option<&AgentId>) -> String {
    match (who, agent) {
        (Who::Supervisor, Some(a)) => a.to_string(),
        _ => who.name(),
    }
}

/// `handoff`: the coder ran out of context; notes for its next run, status HANDOFF.
pub fn handoff(
    state: &mut State,
    who: &Who,
    id: &TaskId,
    summary: &str,
    next_action: &str,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let agent = caller_agent(who)?;
    if who.kind() != Kind::Coder {
        return Err(Refusal::new(
            RuleId::Permission,
            "only a coder hands off its task",
            "handoff is for context exhaustion of a coder",
        ));
    }
    if t.status != TaskStatus::Claimed || t.assigned_to.as_ref() != Some(agent) {
        return Err(Refusal::new(
            RuleId::HandoffAssignee,
            format!("task {id} is not CLAIMED by {agent}"),
            "hand off only your own claimed task",
        ));
    }
    let summary = required_text(summary, "the handoff summary", "say what was done")?;
    let next_action = required_text(
        next_action,
        "the next action",
        "say what the next run should do first",
    )?;
    state.handoff.get_or_insert_with(Default::default).insert(
        id.clone(),
        Handoff {
            agent: Some(agent.to_string()),
            context_used: None,
            timestamp: Some(now),
            summary: Some(summary.clone()),
            next_action: Some(next_action),
            approach: None,
            blockers: None,
            files_modified: None,
            next_steps: None,
            extra: Default::default(),
        },
    );
    task_mut(state, id).handoff_pending = Some(true);
    set_agent(state, agent, AgentStatus::Handoff, Some(id));
    let mut outcome = Outcome::default();
    outcome.event(EventKind::Handoff, agent.as_str(), Some(id), Some(summary));
    Ok(outcome)
}
