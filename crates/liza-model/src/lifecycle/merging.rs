//! The merge rows (specs/git.md *Merge*, specs/lifecycle.md APPROVED → MERGED /
//! INTEGRATION_FAILED) and the `merge_intent` that makes a merge recoverable: recorded
//! before the git work, updated when the candidate is known, cleared when the merge ends
//! either way.

use crate::EventKind;
use crate::model::{CommitId, FailureKind, IntegrationFailure, MergeIntent, State, TaskStatus};
use crate::node::Node;
use crate::{AgentId, TaskId, Timestamp};

use super::RuleId;
use super::context::{
    Field, Outcome, history, release_agent, set_status, task, task_mut, text, text_list,
};
use super::refusal::Refusal;
use super::table::{Command, Kind, row};
use super::work_done::same_commit;

/// How long a merge intent recorded on another host counts as that host's merger at work:
/// longer than a batch's checks may take (the integration script's 30 min and the
/// `on_merge` checks' 10 min each, specs/git.md *A batch*). Past it, the merger is taken
/// for dead and its intent is recovered like one of this host's.
pub const FOREIGN_INTENT_LIVES: i64 = 3600;

/// How often a merger renews the `at` of its intents while their checks run: well within
/// [`FOREIGN_INTENT_LIVES`], so no other host takes the merger of a long check for dead.
pub const INTENT_RENEWED_EVERY: i64 = FOREIGN_INTENT_LIVES / 4;

/// A merger: the host it runs on, its process id and its checkout, as
/// `merge_intent.merger` names it (`<host>/<pid>/<checkout>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merger {
    /// `LIZA_HOST_ID`, else the hostname.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// Its checkout (a short hash of the root's path): each checkout has its own
    /// integration lock.
    pub checkout: String,
}

impl Merger {
    /// `<host>/<pid>/<checkout>`.
    pub fn name(&self) -> String {
        format!("{}/{}/{}", self.host, self.pid, self.checkout)
    }

    /// Whether `intent` belongs to another merger that may be at work now. One of this
    /// checkout's is not (this merger holds the checkout's integration lock whenever it
    /// asks); one of another checkout of this host is while its process lives
    /// (`alive`); one of another host is for [`FOREIGN_INTENT_LIVES`] after it was
    /// recorded.
    pub fn other_at_work(
        &self,
        intent: &MergeIntent,
        now: Timestamp,
        alive: impl Fn(u32) -> bool,
    ) -> bool {
        let Some(name) = intent.merger.as_deref() else {
            return false;
        };
        let mut parts = name.rsplitn(3, '/');
        let (checkout, pid, host) = (parts.next(), parts.next(), parts.next());
        let (Some(checkout), Some(pid), Some(host)) = (checkout, pid, host) else {
            return false;
        };
        let recent = intent
            .at
            .is_some_and(|at| now.seconds_since(at) < FOREIGN_INTENT_LIVES);
        if host != self.host {
            return recent;
        }
        checkout != self.checkout
            && recent
            && pid
                .parse::<u32>()
                .is_ok_and(|pid| pid != self.pid && alive(pid))
    }
}

/// What the merge needs to know about the task, read when its intent is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeStart {
    /// The approved commit.
    pub review_commit: CommitId,
    /// The integration tip the task's worktree started from.
    pub base_commit: Option<CommitId>,
    /// The task's description; its first line titles the merge commit.
    pub description: String,
    /// The task's `allow_protected` globs.
    pub allow_protected: Vec<String>,
}

/// How a merge ended well, for the task's history and the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRecord {
    /// The commit on integration after the merge.
    pub commit: CommitId,
    /// `fast-forward`, `merge-commit` or `already-merged`.
    pub merge_type: String,
    /// Integration commits since the task's base_commit.
    pub drift_commits: u64,
    /// The compare-and-swap found integration moved this many times.
    pub retries: u32,
    /// How many tasks its batch held (1: merged alone).
    pub batch: usize,
}

/// Records `merge_intent` on an APPROVED task before the merge's git work: `approved` is
/// its review_commit as git resolved it (full SHA), `tip` the integration tip.
pub fn begin_merge(
    state: &mut State,
    id: &TaskId,
    approved: &CommitId,
    tip: &CommitId,
    merger: &Merger,
    alive: &dyn Fn(u32) -> bool,
    now: Timestamp,
) -> Result<(Outcome, MergeStart), Refusal> {
    let t = task(state, id)?;
    row(Command::Merge, Some(t.status), Kind::Supervisor)?;
    refuse_other_merger(t, merger, alive, now)?;
    let Some(review_commit) = t.review_commit.clone() else {
        return Err(Refusal::new(
            RuleId::ReviewCommit,
            format!("task {id} is APPROVED but has no review_commit to merge"),
            "a reviewer approves a specific commit; reassign the task or set review_commit by hand",
        ));
    };
    if !same_commit(review_commit.as_str(), approved.as_str()) {
        return Err(Refusal::new(
            RuleId::ReviewCommit,
            format!("task {id} was approved at {review_commit}, not {approved}"),
            "run `liza merge` again",
        ));
    }
    let start = MergeStart {
        review_commit: review_commit.clone(),
        base_commit: t.base_commit.clone(),
        description: t.description.clone().unwrap_or_default(),
        allow_protected: t.allow_protected.clone().unwrap_or_default(),
    };
    let outcome = record_intent(
        state,
        id,
        EventKind::MergeStarted,
        approved,
        tip,
        merger,
        now,
    );
    Ok((outcome, start))
}

/// Records the candidate about to be published (a merge commit is known only after it
/// was built), so recovery after a crash can tell whether it was published.
pub fn set_merge_candidate(
    state: &mut State,
    id: &TaskId,
    candidate: &CommitId,
    tip: &CommitId,
    merger: &Merger,
    alive: &dyn Fn(u32) -> bool,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    row(Command::Merge, Some(t.status), Kind::Supervisor)?;
    if t.merge_intent.is_none() {
        return Err(no_intent(id));
    }
    refuse_other_merger(t, merger, alive, now)?;
    Ok(record_intent(
        state,
        id,
        EventKind::MergeCandidate,
        candidate,
        tip,
        merger,
        now,
    ))
}

/// Renews `at` of the intents `merger` holds on `ids`, for the tasks still APPROVED (each
/// logged); an intent of another merger, or none, is left as it is.
pub fn renew_merge_intents(
    state: &mut State,
    ids: &[TaskId],
    merger: &Merger,
    now: Timestamp,
) -> Outcome {
    let me = merger.name();
    let mut outcome = Outcome::default();
    for id in ids {
        if state
            .task(id)
            .is_none_or(|t| t.status != TaskStatus::Approved)
        {
            continue;
        }
        if let Some(intent) = state
            .task_mut(id)
            .and_then(|t| t.merge_intent.as_mut())
            .filter(|i| i.merger.as_deref() == Some(me.as_str()))
        {
            intent.at = Some(now);
            outcome.event(
                EventKind::MergeIntentRenewed,
                "liza",
                Some(id),
                Some(format!("{me}: its checks still run")),
            );
        }
    }
    outcome
}

/// Two mergers never merge one task at once: the first to record its intent has it (the
/// blackboard's transactions decide). `alive` is the caller's word on this host's
/// processes.
fn refuse_other_merger(
    t: &crate::model::Task,
    merger: &Merger,
    alive: &dyn Fn(u32) -> bool,
    now: Timestamp,
) -> Result<(), Refusal> {
    match &t.merge_intent {
        Some(intent) if merger.other_at_work(intent, now, alive) => Err(Refusal::new(
            RuleId::MergeIntent,
            format!(
                "task {} is being merged by {}",
                t.id,
                intent.merger.as_deref().unwrap_or("another merger")
            ),
            "its merger publishes it; `liza status` shows the queue",
        )),
        _ => Ok(()),
    }
}

fn record_intent(
    state: &mut State,
    id: &TaskId,
    event: EventKind,
    candidate: &CommitId,
    tip: &CommitId,
    merger: &Merger,
    now: Timestamp,
) -> Outcome {
    task_mut(state, id).merge_intent = Some(MergeIntent {
        candidate: candidate.clone(),
        integration_tip: tip.clone(),
        at: Some(now),
        merger: Some(merger.name()),
        extra: Default::default(),
    });
    let mut outcome = Outcome::default();
    outcome.event(
        event,
        "liza",
        Some(id),
        Some(format!("{candidate} onto {tip}")),
    );
    outcome
}

/// Clears an interrupted or refused merge's intent; the task stays APPROVED and the next
/// merge starts over.
pub fn drop_merge_intent(
    state: &mut State,
    id: &TaskId,
    reason: &str,
    _now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    if t.merge_intent.is_none() {
        return Err(no_intent(id));
    }
    task_mut(state, id).merge_intent = None;
    let mut outcome = Outcome::default();
    outcome.event(
        EventKind::MergeIntentDropped,
        "liza",
        Some(id),
        Some(reason.to_owned()),
    );
    Ok(outcome)
}

fn no_intent(id: &TaskId) -> Refusal {
    Refusal::new(
        RuleId::MergeIntent,
        format!("task {id} has no merge in progress"),
        "run `liza merge` again",
    )
}

/// APPROVED → MERGED (the merge pipeline's last step).
pub fn merged(
    state: &mut State,
    id: &TaskId,
    merge: &MergeRecord,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::Merge, Some(t.status), Kind::Supervisor)?;
    let coder = t.assigned_to.clone();
    let reviewer = t.approved_by.clone();
    let drift = i64::try_from(merge.drift_commits).unwrap_or(i64::MAX);
    let t = task_mut(state, id);
    t.merge_commit = Some(merge.commit.clone());
    t.worktree = None;
    t.merge_intent = None;
    t.lease_expires = None;
    t.integration_fix = None;
    set_status(t, TaskStatus::Merged, now);
    history(
        t,
        now,
        row.event,
        "liza",
        &[
            ("merge_commit", text(merge.commit.to_string())),
            ("merge_type", text(merge.merge_type.clone())),
            ("drift_commits", Field::Int(drift).value()),
        ],
    );
    release_agent(state, coder.as_ref(), id);
    release_agent(state, reviewer.as_ref(), id);
    super::merge_queue::dequeue(state, id);
    let mut outcome = Outcome::default();
    outcome.event(
        row.event,
        reviewer.as_ref().map_or("liza", AgentId::as_str),
        Some(id),
        Some(format!("{} {}", merge.merge_type, merge.commit)),
    );
    outcome.field("merge_commit", Field::Text(merge.commit.to_string()));
    outcome.field("merge_type", Field::Text(merge.merge_type.clone()));
    outcome.field("drift_commits", Field::Int(drift));
    if merge.retries > 0 {
        outcome.field("publish_retries", Field::Int(i64::from(merge.retries)));
    }
    if merge.batch > 1 {
        outcome.field("batch", Field::Int(merge.batch as i64));
    }
    Ok(outcome)
}

/// Why a merge failed, as `integration_failure` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeFailure {
    /// A conflict or failing checks.
    pub kind: FailureKind,
    /// Conflicting paths (conflicts).
    pub paths: Vec<String>,
    /// The check log, relative to the project root (failing checks).
    pub log: Option<String>,
    /// One line a person reads first: which check failed, or why publishing gave up.
    pub reason: String,
}

/// APPROVED → BLOCKED: merging the task would change no file of integration — its
/// changes are there already, or an integration fix resolved them all away — so it is
/// not recorded as merged (specs/git.md *Merge*): the planner decides (supersede it, or
/// unblock it to redo the change).
pub fn nothing_to_merge(
    state: &mut State,
    id: &TaskId,
    integration: &str,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::NothingToMerge, Some(t.status), Kind::Supervisor)?;
    let reason = format!(
        "nothing of this task reaches {integration}: merging its approved commit would change no file there (its change is on {integration} already, or an integration fix resolved it away)"
    );
    let coder = t.assigned_to.clone();
    let t = task_mut(state, id);
    t.blocked_reason = Some(reason.clone());
    t.blocked_questions = Some(vec![
        "supersede it (its work is done or no longer wanted), or unblock it to redo the change?"
            .to_owned(),
    ]);
    t.merge_intent = None;
    t.approved_by = None;
    set_status(t, TaskStatus::Blocked, now);
    history(
        t,
        now,
        row.event,
        "liza",
        &[("reason", text(reason.clone()))],
    );
    release_agent(state, coder.as_ref(), id);
    super::merge_queue::dequeue(state, id);
    let mut outcome = Outcome::default();
    outcome.event(row.event, "liza", Some(id), Some(reason));
    Ok(outcome)
}

/// APPROVED → INTEGRATION_FAILED: a conflict or failing integration checks.
pub fn integration_failed(
    state: &mut State,
    id: &TaskId,
    failure: &MergeFailure,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::IntegrationFailed, Some(t.status), Kind::Supervisor)?;
    let t = task_mut(state, id);
    let mut record = IntegrationFailure {
        kind: failure.kind,
        paths: (!failure.paths.is_empty()).then(|| failure.paths.clone()),
        log: failure.log.clone(),
        at: Some(now),
        extra: Default::default(),
    };
    if !failure.reason.is_empty() {
        record
            .extra
            .insert("reason", Node::new(text(failure.reason.clone())));
    }
    t.integration_failure = Some(record);
    t.merge_intent = None;
    set_status(t, TaskStatus::IntegrationFailed, now);
    let mut fields = vec![("kind", text(failure.kind.as_str()))];
    if !failure.paths.is_empty() {
        fields.push(("paths", text_list(&failure.paths)));
    }
    if let Some(log) = &failure.log {
        fields.push(("log", text(log.clone())));
    }
    history(t, now, row.event, "liza", &fields);
    super::merge_queue::dequeue(state, id);
    let mut outcome = Outcome::default();
    let detail = match (failure.paths.is_empty(), failure.reason.is_empty()) {
        (false, _) => format!("{}: {}", failure.kind.as_str(), failure.paths.join(", ")),
        (true, false) => format!("{}: {}", failure.kind.as_str(), failure.reason),
        (true, true) => failure.kind.as_str().to_owned(),
    };
    outcome.event(row.event, "liza", Some(id), Some(detail));
    outcome.field("kind", Field::Text(failure.kind.as_str().to_owned()));
    if let Some(log) = &failure.log {
        outcome.field("log", Field::Text(log.clone()));
    }
    Ok(outcome)
}

/// APPROVED → READY_FOR_REVIEW: the task branch moved after the approval (a commit, a
/// reset, a rewrite, a force push), so what would be merged is not what was reviewed
/// (specs/git.md *A batch*). `head` is where the branch points now; it is what the next
/// review judges.
pub fn withdraw_approval(
    state: &mut State,
    id: &TaskId,
    head: &CommitId,
    now: Timestamp,
) -> Result<Outcome, Refusal> {
    let t = task(state, id)?;
    let row = row(Command::WithdrawApproval, Some(t.status), Kind::Supervisor)?;
    let approved = t.review_commit.clone();
    let reviewer = t.approved_by.clone();
    let reason = format!(
        "{} moved from the approved {} to {head} after the approval: what would be merged was not reviewed",
        format_args!("task/{id}"),
        approved
            .as_ref()
            .map_or("(none)".to_owned(), |c| c.to_string()),
    );
    let t = task_mut(state, id);
    t.approved_by = None;
    t.merge_intent = None;
    t.reviewing_by = None;
    t.review_lease_expires = None;
    t.review_commit = Some(head.clone());
    set_status(t, TaskStatus::ReadyForReview, now);
    let mut fields = vec![
        ("reason", text(reason.clone())),
        ("commit", text(head.to_string())),
    ];
    if let Some(approved) = &approved {
        fields.push(("approved_commit", text(approved.to_string())));
    }
    history(t, now, row.event, "liza", &fields);
    super::merge_queue::dequeue(state, id);
    let mut outcome = Outcome::default();
    outcome.event(
        row.event,
        "liza",
        Some(id),
        Some(format!(
            "{reason}{}",
            reviewer
                .map(|r| format!(" (approved by {r})"))
                .unwrap_or_default()
        )),
    );
    Ok(outcome)
}
