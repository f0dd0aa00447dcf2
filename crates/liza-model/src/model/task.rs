//! Tasks: the 11 states, every field of specs/blackboard.md's task table, and history events.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::history::{History, HistoryEvent, ReviewCounts, history_skipped};
use crate::codec::{Decode, Decoder, Emit, record, yaml_enum};
use crate::ids::{AgentId, TaskId};
use crate::node::{Extra, Node, Value};
use crate::timestamp::Timestamp;
use crate::yaml::Emitter;

yaml_enum! {
    /// The 11 task states of specs/lifecycle.md.
    pub enum TaskStatus (Some(2), "task-status", "task status") {
        /// The planner is still writing it; invisible to coders.
        Draft = "DRAFT",
        /// Ready; claimable once its dependencies are satisfied.
        Unclaimed = "UNCLAIMED",
        /// A coder holds it under a lease.
        Claimed = "CLAIMED",
        /// Submitted at `review_commit`; reviewable when no review lease is live.
        ReadyForReview = "READY_FOR_REVIEW",
        /// A reviewer rejected it with a reason; back to the coder.
        Rejected = "REJECTED",
        /// A reviewer approved it; the merge is pending.
        Approved = "APPROVED",
        /// On the integration branch. Terminal.
        Merged = "MERGED",
        /// Cannot proceed; waits for the planner.
        Blocked = "BLOCKED",
        /// Replaced by rescoped tasks. Terminal.
        Superseded = "SUPERSEDED",
        /// Dropped by the planner or a person. Terminal.
        Abandoned = "ABANDONED",
        /// The merge conflicted or the integration checks failed.
        IntegrationFailed = "INTEGRATION_FAILED",
    }
}

impl TaskStatus {
    /// MERGED, SUPERSEDED and ABANDONED: nothing moves out of them.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Merged | TaskStatus::Superseded | TaskStatus::Abandoned
        )
    }

    /// States that need `done_when` and `spec_ref` (all but DRAFT, SUPERSEDED, ABANDONED).
    pub fn needs_definition(self) -> bool {
        !matches!(
            self,
            TaskStatus::Draft | TaskStatus::Superseded | TaskStatus::Abandoned
        )
    }
}

yaml_enum! {
    /// Why a merge failed.
    pub enum FailureKind (None, "integration-failure-kind", "integration failure kind") {
        /// The task branch did not merge cleanly.
        Conflict = "conflict",
        /// The integration checks failed.
        Tests = "tests",
    }
}

/// A commit id: full 40-hex (or 64-hex) SHAs as liza writes them, or an abbreviation of
/// at least 4 hex digits as other tools may write.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommitId(String);

impl CommitId {
    /// The id `text` names: 4 to 64 hex digits, lowercased.
    pub fn parse(text: &str) -> Option<CommitId> {
        ((4..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| CommitId(text.to_ascii_lowercase()))
    }

    /// The hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id git gave an object (`git2::Oid` as hex): the git wrapper's way to hand
    /// commit ids to the rest of liza.
    pub fn of_object(hex: String) -> CommitId {
        CommitId(hex)
    }
}

impl std::ops::Deref for CommitId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for CommitId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for CommitId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for CommitId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl std::fmt::Debug for CommitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for CommitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Decode for CommitId {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let text = match &node.value {
            Value::Str(s) => s.clone(),
            // An all-digit abbreviated SHA reads as an integer.
            Value::Int(i) if *i >= 0 => i.to_string(),
            _ => return d.expected(node, "a commit SHA"),
        };
        let parsed = CommitId::parse(&text);
        if parsed.is_none() {
            d.error(
                None,
                "commit-id",
                node.pos,
                format!("{text:?} is not a commit SHA (4 to 64 hexadecimal digits)"),
            );
        }
        parsed
    }
}

impl Emit for CommitId {
    fn emit(&self, e: &mut Emitter) {
        e.str(&self.0);
    }
}

/// `supersedes` holds one id or a list of ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single value.
    One(T),
    /// A list.
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The values, one or many.
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(v) => std::slice::from_ref(v),
            OneOrMany::Many(v) => v,
        }
    }
}

impl<T: Decode> Decode for OneOrMany<T> {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.value {
            Value::Seq(_) => Vec::decode(node, d).map(OneOrMany::Many),
            _ => T::decode(node, d).map(OneOrMany::One),
        }
    }
}

impl<T: Emit> Emit for OneOrMany<T> {
    fn emit(&self, e: &mut Emitter) {
        match self {
            OneOrMany::One(v) => v.emit(e),
            OneOrMany::Many(v) => v.emit(e),
        }
    }
}

/// `integration_failure`: why the last merge failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntegrationFailure {
    /// Whether it conflicted or the checks failed.
    pub kind: FailureKind,
    /// The conflicting paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// The log file of the checks' output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// When the merge failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(IntegrationFailure {
    req kind: "kind",
    opt paths: "paths",
    opt log: "log",
    opt at: "at",
});

/// `merge_intent`: written before a merge's git work, cleared when it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeIntent {
    /// The commit about to be published: the review commit until the merge commit is built.
    pub candidate: CommitId,
    /// The integration tip the merge started from.
    pub integration_tip: CommitId,
    /// When the intent was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
    /// The merger at work: `<host>/<pid>` (absent in intents written before the queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merger: Option<String>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(MergeIntent {
    req candidate: "candidate",
    req integration_tip: "integration_tip",
    opt at: "at",
    opt merger: "merger",
});

/// `usage`: token and run totals of the task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens the built-in agent used on the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<i64>,
    /// Completion tokens the built-in agent used on the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<i64>,
    /// Agent runs launched on the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_runs: Option<i64>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Usage {
    opt prompt_tokens: "prompt_tokens",
    opt completion_tokens: "completion_tokens",
    opt agent_runs: "agent_runs",
});

/// A task (specs/blackboard.md, *tasks[]*).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Unique, archived tasks included; it names the task's directory and branch.
    pub id: TaskId,
    /// What the task is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where it stands in the lifecycle.
    pub status: TaskStatus,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_changed_at: Option<Timestamp>,
    /// 1 (highest) to 5; 3 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// When it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    /// `path[#anchor]` of its spec, inside the repository; required outside DRAFT,
    /// SUPERSEDED and ABANDONED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_ref: Option<String>,
    /// A falsifiable acceptance criterion; required outside DRAFT, SUPERSEDED and
    /// ABANDONED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_when: Option<String>,
    /// What is in and out, functionally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Globs of the files it may change (the matching test files are always allowed too);
    /// none means anything outside `protected_paths`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Globs of protected paths it may change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_protected: Option<Vec<String>>,
    /// Exact ids of the live or archived tasks it waits on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<TaskId>>,
    /// The coder holding it, or that last held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_to: Option<AgentId>,
    /// `.worktrees/<id>` while it has a worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// The integration tip its worktree started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<CommitId>,
    /// The coder's lease on the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_expires: Option<Timestamp>,
    /// Agent runs on it by its current coder; reset on reassignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<i64>,
    /// Overrides `config.max_coder_iterations` for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<i64>,
    /// Rejections since the last reset (reassignment, or an unblock that asks for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_cycles_current: Option<i64>,
    /// Every rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_cycles_total: Option<i64>,
    /// The commit submitted for review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_commit: Option<CommitId>,
    /// The reviewer holding the review claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewing_by: Option<AgentId>,
    /// The review lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_lease_expires: Option<Timestamp>,
    /// The reviewer that approved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<AgentId>,
    /// The integration commit after the merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<CommitId>,
    /// Why it was last rejected, citing `path:line`; required when REJECTED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection_reason: Option<String>,
    /// Why it is BLOCKED; required then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// 1 to 3 questions for the planner; required when BLOCKED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_questions: Option<Vec<String>>,
    /// What the coder tried before blocking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempted: Option<Vec<String>>,
    /// The coders that failed it, each once; two or more is hypothesis exhaustion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_by: Option<Vec<AgentId>>,
    /// Its replacements after a rescope; required when SUPERSEDED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<Vec<TaskId>>,
    /// The task or tasks it replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<OneOrMany<TaskId>>,
    /// The root cause given for the rescope; required when SUPERSEDED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescope_reason: Option<String>,
    /// Claimed from INTEGRATION_FAILED, to fix a failed merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration_fix: Option<bool>,
    /// Why the last merge failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration_failure: Option<IntegrationFailure>,
    /// A merge in progress: the next merge finishes or drops it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_intent: Option<MergeIntent>,
    /// The next run resumes from its `handoff` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_pending: Option<bool>,
    /// The git blob id of its spec file at finalize; the text is kept under `.liza/specs/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
    /// Token and run totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// What happened to it, in order; its events are the log's actions.
    #[serde(default, skip_serializing_if = "history_skipped")]
    pub history: Option<History>,
    /// Keys liza does not know, kept as written.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
record!(Task {
    req id: "id",
    opt description: "description",
    req status: "status",
    opt status_changed_at: "status_changed_at",
    opt priority: "priority",
    opt created: "created",
    opt spec_ref: "spec_ref",
    opt done_when: "done_when",
    opt scope: "scope",
    opt paths: "paths",
    opt allow_protected: "allow_protected",
    opt depends_on: "depends_on",
    opt assigned_to: "assigned_to",
    opt worktree: "worktree",
    opt base_commit: "base_commit",
    opt lease_expires: "lease_expires",
    opt iteration: "iteration",
    opt max_iterations: "max_iterations",
    opt review_cycles_current: "review_cycles_current",
    opt review_cycles_total: "review_cycles_total",
    opt review_commit: "review_commit",
    opt reviewing_by: "reviewing_by",
    opt review_lease_expires: "review_lease_expires",
    opt approved_by: "approved_by",
    opt merge_commit: "merge_commit",
    opt rejection_reason: "rejection_reason",
    opt blocked_reason: "blocked_reason",
    opt blocked_questions: "blocked_questions",
    opt attempted: "attempted",
    opt failed_by: "failed_by",
    opt superseded_by: "superseded_by",
    opt supersedes: "supersedes",
    opt rescope_reason: "rescope_reason",
    opt integration_fix: "integration_fix",
    opt integration_failure: "integration_failure",
    opt merge_intent: "merge_intent",
    opt handoff_pending: "handoff_pending",
    opt spec_hash: "spec_hash",
    opt usage: "usage",
    opt history: "history",
});

/// The blackboard's tasks. Each is shared (`Arc`), so a transaction can tell which tasks
/// it changed — a changed task is a new allocation (`Arc::make_mut` on a shared task
/// clones it) — and the store reuses the YAML and JSON text of all the others.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskList(pub Vec<Arc<Task>>);

impl TaskList {
    /// Appends `task`.
    pub fn push_task(&mut self, task: Task) {
        self.0.push(Arc::new(task));
    }

    /// Mutable access to a task, cloning it first if it is shared.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut Task> {
        self.0.get_mut(index).map(Arc::make_mut)
    }
}

impl<'a> IntoIterator for &'a TaskList {
    type Item = &'a Arc<Task>;
    type IntoIter = std::slice::Iter<'a, Arc<Task>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl std::ops::Deref for TaskList {
    type Target = Vec<Arc<Task>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for TaskList {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl FromIterator<Task> for TaskList {
    fn from_iter<I: IntoIterator<Item = Task>>(iter: I) -> Self {
        TaskList(iter.into_iter().map(Arc::new).collect())
    }
}

impl Decode for TaskList {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        Vec::<Task>::decode(node, d).map(|tasks| tasks.into_iter().collect())
    }
}

impl Emit for TaskList {
    fn emit(&self, e: &mut Emitter) {
        if !e.begin_seq(self.0.len()) {
            return;
        }
        for task in &self.0 {
            // Text of an unchanged task is copied from the previous commit.
            let key = Arc::as_ptr(task) as usize;
            let start = match e.reuse_item(key) {
                Some(start) => start,
                None => {
                    let start = e.item();
                    task.emit(e);
                    start
                }
            };
            e.record_item(key, start);
        }
        e.end_seq();
    }
}

impl Task {
    /// A new DRAFT task with only the required fields.
    pub fn new(id: TaskId, status: TaskStatus) -> Task {
        Task {
            id,
            description: None,
            status,
            status_changed_at: None,
            priority: None,
            created: None,
            spec_ref: None,
            done_when: None,
            scope: None,
            paths: None,
            allow_protected: None,
            depends_on: None,
            assigned_to: None,
            worktree: None,
            base_commit: None,
            lease_expires: None,
            iteration: None,
            max_iterations: None,
            review_cycles_current: None,
            review_cycles_total: None,
            review_commit: None,
            reviewing_by: None,
            review_lease_expires: None,
            approved_by: None,
            merge_commit: None,
            rejection_reason: None,
            blocked_reason: None,
            blocked_questions: None,
            attempted: None,
            failed_by: None,
            superseded_by: None,
            supersedes: None,
            rescope_reason: None,
            integration_fix: None,
            integration_failure: None,
            merge_intent: None,
            handoff_pending: None,
            spec_hash: None,
            usage: None,
            history: None,
            extra: Extra::default(),
        }
    }

    /// `depends_on`, or none.
    pub fn depends_on(&self) -> &[TaskId] {
        self.depends_on.as_deref().unwrap_or(&[])
    }

    /// `history`, or none.
    pub fn history(&self) -> &[HistoryEvent] {
        self.history.as_ref().map_or(&[], History::events)
    }

    /// The history to append to (created when the task has none).
    pub fn history_mut(&mut self) -> &mut Vec<HistoryEvent> {
        self.history
            .get_or_insert_with(History::default)
            .events_mut()
    }

    /// What the task's history counts for the sprint metrics, without decoding a history
    /// the parse cache counted.
    pub fn review_counts(&self) -> ReviewCounts {
        self.history
            .as_ref()
            .map_or_else(ReviewCounts::default, History::review_counts)
    }

    /// Priority with the documented default (3).
    pub fn priority(&self) -> i64 {
        self.priority.unwrap_or(3)
    }

    /// When the task entered its current status: `status_changed_at`, else the last
    /// history event, else its creation.
    pub fn entered_status_at(&self) -> Option<Timestamp> {
        self.status_changed_at
            .or_else(|| self.history().last().map(|h| h.time))
            .or(self.created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::ItemTexts;

    fn list() -> TaskList {
        ["a", "b"]
            .iter()
            .map(|id| Task::new(TaskId::parse(id).unwrap(), TaskStatus::Draft))
            .collect()
    }

    #[test]
    fn unchanged_tasks_are_copied_and_recorded() {
        let tasks = list();
        // A stand-in earlier text for task b proves the copy is used.
        let old = b"  - id: b\n    status: DRAFT\n    marker: copied".to_vec();
        let key_b = Arc::as_ptr(&tasks[1]) as usize;
        let reuse = ItemTexts {
            spans: [(key_b, 0..old.len())].into_iter().collect(),
            text: old,
        };
        let mut e = Emitter::default().with_reuse(reuse);
        assert!(e.begin_map(1));
        e.field("tasks");
        tasks.emit(&mut e);
        e.end_map();
        let (text, spans) = e.finish_with_items();
        assert_eq!(
            text,
            "tasks:\n  - id: a\n    status: DRAFT\n  - id: b\n    status: DRAFT\n    marker: copied\n"
        );
        assert_eq!(&text[spans[0].1.clone()], "  - id: a\n    status: DRAFT");
        assert_eq!(
            &text[spans[1].1.clone()],
            "  - id: b\n    status: DRAFT\n    marker: copied"
        );
    }

    #[test]
    fn changing_a_shared_task_gives_it_a_new_identity() {
        let mut tasks = list();
        let original = tasks.clone();
        tasks.get_mut(0).unwrap().priority = Some(1);
        assert!(!Arc::ptr_eq(&tasks[0], &original[0]));
        assert!(Arc::ptr_eq(&tasks[1], &original[1]));
    }
}
