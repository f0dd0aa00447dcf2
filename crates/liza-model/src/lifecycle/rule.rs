//! The rules that refuse an operation, by name: every refusal carries one, `--json` errors
//! show it as `error.rule`, and the supervisor decides on it (never on an error's text).
//! The names are the ones specs/lifecycle.md, specs/git.md and specs/operations.md use in brackets.

macro_rules! rules {
    ($($(#[$meta:meta])* $variant:ident => $name:literal,)*) => {
        /// A rule of the specification that refused an operation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleId {
            $($(#[$meta])* $variant,)*
        }

        impl RuleId {
            /// Every rule, for documentation and tests.
            pub const ALL: &'static [RuleId] = &[$(RuleId::$variant,)*];

            /// The rule's name as written in messages, the log and `--json` errors.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $name,)*
                }
            }

            /// The rule named `name`, if there is one.
            pub fn parse(name: &str) -> Option<RuleId> {
                match name {
                    $($name => Some(RuleId::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

rules! {
    /// `add-tasks`: an `add-task` call gave no task to add.
    AddTasks => "add-tasks",
    /// `agent-generation`: the agent presented no generation, or is registered without one.
    AgentGeneration => "agent-generation",
    /// `agent-id`: the agent identity given to a command is malformed.
    AgentId => "agent-id",
    /// `agent-identity`: a command ran without the identity it needs: an agent's command
    /// without one, or a command an agent runs without its `LIZA_AGENT_ID`.
    AgentIdentity => "agent-identity",
    /// `agent-role`: an agent's registered role does not match the role its id names.
    AgentRole => "agent-role",
    /// `amend-changes`: an amendment changes no field.
    AmendChanges => "amend-changes",
    /// `anomaly-details`: an anomaly lacks the details its type requires, or a detail is
    /// not `key=value`.
    AnomalyDetails => "anomaly-details",
    /// `anomaly-type`: the anomaly type is not one of the 13.
    AnomalyType => "anomaly-type",
    /// `archive-name`: the sprint id cannot name an archive file.
    ArchiveName => "archive-name",
    /// `archive-readable`: the archive file cannot be read, so nothing is added to it.
    ArchiveReadable => "archive-readable",
    /// `block-assignee`: a coder blocks only a task assigned to it.
    BlockAssignee => "block-assignee",
    /// `block-cause`: only the supervisor blocks for a coder's failure or the environment.
    BlockCause => "block-cause",
    /// `block-questions`: a block needs 1 to 3 questions for the planner.
    BlockQuestions => "block-questions",
    /// `branch-moved`: a task branch moved: past the approved commit, or on the shared
    /// remote while this host pushed it.
    BranchMoved => "branch-moved",
    /// `caller`: the caller is not the kind of actor the command needs (a run result
    /// comes only from an agent).
    Caller => "caller",
    /// `channel-command`: a sandboxed agent's role may not run the command that came
    /// through its supervisor's channel.
    ChannelCommand => "channel-command",
    /// `claim-base`: a fresh claim lacks the integration tip its worktree starts from.
    ClaimBase => "claim-base",
    /// `claim-changed`: the task changed while its worktree was prepared.
    ClaimChanged => "claim-changed",
    /// `claim-coder`: only coders claim tasks.
    ClaimCoder => "claim-coder",
    /// `claim-reviewer`: only code reviewers claim reviews.
    ClaimReviewer => "claim-reviewer",
    /// `claimed-by-other`: another agent holds the task under a live lease.
    ClaimedByOther => "claimed-by-other",
    /// `clean-worktree`: the task's worktree has uncommitted files.
    CleanWorktree => "clean-worktree",
    /// `coder-lease-expired`: the coder's lease is still live.
    CoderLeaseExpired => "coder-lease-expired",
    /// `collision`: the agent id is already registered to a live supervisor.
    Collision => "collision",
    /// `definition`: a task past DRAFT must keep a `done_when`.
    Definition => "definition",
    /// `dependencies-satisfied`: the task waits on a dependency that is not satisfied.
    DependenciesSatisfied => "dependencies-satisfied",
    /// `discovery-exists`: there is no discovery with that id.
    DiscoveryExists => "discovery-exists",
    /// `discovery-open`: the discovery was already converted to a task.
    DiscoveryOpen => "discovery-open",
    /// `dependency-cycle`: the dependencies would form a cycle.
    DependencyCycle => "dependency-cycle",
    /// `dependency-exists`: a dependency names no existing or archived task.
    DependencyExists => "dependency-exists",
    /// `discovery-severity`: the discovery severity is not one liza knows.
    DiscoverySeverity => "discovery-severity",
    /// `discovery-urgency`: the discovery urgency is not `immediate` or `deferred`.
    DiscoveryUrgency => "discovery-urgency",
    /// `failed-by`: the coder already failed this task.
    FailedBy => "failed-by",
    /// `file-write`: a file under `.liza/` could not be written.
    FileWrite => "file-write",
    /// `finalize-drafts`: there is no DRAFT task to finalize.
    FinalizeDrafts => "finalize-drafts",
    /// `finalize-gates`: the task does not pass the planner's gates for finalizing.
    FinalizeGates => "finalize-gates",
    /// `forbidden-transition`: the move is forbidden always (specs/lifecycle.md
    /// *Transitions*).
    ForbiddenTransition => "forbidden-transition",
    /// `goal-open-tasks`: tasks of the goal are still open.
    GoalOpenTasks => "goal-open-tasks",
    /// `goal-status`: the goal's status does not allow the command.
    GoalStatus => "goal-status",
    /// `goal-text`: the goal's text is empty.
    GoalText => "goal-text",
    /// `handoff-assignee`: an agent hands off only a task it holds as CLAIMED.
    HandoffAssignee => "handoff-assignee",
    /// `human-only`: the command is for people, and an agent ran it.
    HumanOnly => "human-only",
    /// `hypothesis-exhaustion`: two coders failed the task; nobody may claim it any more.
    HypothesisExhaustion => "hypothesis-exhaustion",
    /// `integration-branch`: the integration branch is not a usable name, or appeared on
    /// the shared remote meanwhile.
    IntegrationBranch => "integration-branch",
    /// `integration-checked-out`: the integration branch is checked out somewhere; liza
    /// never moves a branch under a checkout.
    IntegrationCheckedOut => "integration-checked-out",
    /// `integration-rewound`: merged work left the integration branch, or there is no
    /// rewind to accept.
    IntegrationRewound => "integration-rewound",
    /// `journal-revision`: the journal holds no readable state for that revision.
    JournalRevision => "journal-revision",
    /// `log-action`: a log action name is malformed.
    LogAction => "log-action",
    /// `log-detail`: a log detail is not one line of plain text of at most 4096 bytes.
    LogDetail => "log-detail",
    /// `merge-intent`: the task has no merge in progress.
    MergeIntent => "merge-intent",
    /// `no-such-transition`: the command does not apply to the task's status.
    NoSuchTransition => "no-such-transition",
    /// `not-author`: a reviewer may not review a task it wrote.
    NotAuthor => "not-author",
    /// `note-text`: the note is empty.
    NoteText => "note-text",
    /// `one-review-per-reviewer`: the reviewer already holds another live review.
    OneReviewPerReviewer => "one-review-per-reviewer",
    /// `one-task-per-coder`: the coder already holds another task.
    OneTaskPerCoder => "one-task-per-coder",
    /// `permission`: the caller's kind may not perform the command.
    Permission => "permission",
    /// `plan-approval`: with `plan_approval: human`, only a person finalizes the plan.
    PlanApproval => "plan-approval",
    /// `post-worktree-cmd`: `post_worktree_cmd` failed and the claim was undone.
    PostWorktreeCmd => "post-worktree-cmd",
    /// `priority-range`: the priority is outside 1–5.
    PriorityRange => "priority-range",
    /// `protected-paths`: the changes touch protected paths the task's `allow_protected`
    /// does not cover.
    ProtectedPaths => "protected-paths",
    /// `reassign-live-lease`: a CLAIMED task is reassigned only once its lease ran out.
    ReassignLiveLease => "reassign-live-lease",
    /// `registered`: the agent is not registered.
    Registered => "registered",
    /// `registered-role`: the agent is registered with another role.
    RegisteredRole => "registered-role",
    /// `rejection-cites`: a rejection must cite at least one `path:line`.
    RejectionCites => "rejection-cites",
    /// `required-text`: a required text is empty.
    RequiredText => "required-text",
    /// `rescope-into`: a rescope names no replacement, or one that does not exist.
    RescopeInto => "rescope-into",
    /// `rescope-reason`: the rescope reason does not state a root cause.
    RescopeReason => "rescope-reason",
    /// `rescope-supersedes`: a replacement does not name the rescoped task in `supersedes`.
    RescopeSupersedes => "rescope-supersedes",
    /// `resume-decision`: the checkpoint decision is not one of the known ones.
    ResumeDecision => "resume-decision",
    /// `review-claimed`: there is no review claim to release.
    ReviewClaimed => "review-claimed",
    /// `review-commit`: the task's `review_commit` is missing, not in the repository, or
    /// not what was approved.
    ReviewCommit => "review-commit",
    /// `review-lease-expired`: the review lease is still live.
    ReviewLeaseExpired => "review-lease-expired",
    /// `review-lease-live`: another reviewer's live lease covers the task.
    ReviewLeaseLive => "review-lease-live",
    /// `run-claimed`: the agent runs only on a task it holds as CLAIMED.
    RunClaimed => "run-claimed",
    /// `sandbox-required`: a sandbox is required and cannot be had.
    SandboxRequired => "sandbox-required",
    /// `spec-committed`: the spec file is not committed where worktrees start.
    SpecCommitted => "spec-committed",
    /// `spec-path`: the spec file does not exist, or is not a path inside the repository.
    SpecPath => "spec-path",
    /// `sprint-deadline`: the sprint's deadline has not passed, or the sprint already
    /// stopped for it.
    SprintDeadline => "sprint-deadline",
    /// `sprint-status`: the sprint's status does not allow the command.
    SprintStatus => "sprint-status",
    /// `stale-generation`: the agent's generation was superseded by a newer registration.
    StaleGeneration => "stale-generation",
    /// `submit-assignee`: a coder submits only a task assigned to it.
    SubmitAssignee => "submit-assignee",
    /// `submit-descends`: the submitted HEAD does not descend from the task's base commit.
    SubmitDescends => "submit-descends",
    /// `submit-head`: the submitted commit is not the worktree's HEAD, or not a SHA.
    SubmitHead => "submit-head",
    /// `submit-new-commit`: nothing was committed since the base commit.
    SubmitNewCommit => "submit-new-commit",
    /// `superseded`: the supervisor's registration was superseded or removed.
    Superseded => "superseded",
    /// `supersedes-exists`: the task a new task supersedes does not exist.
    SupersedesExists => "supersedes-exists",
    /// `supervisor-only`: the command is the supervisor's, and an agent identity is set.
    SupervisorOnly => "supervisor-only",
    /// `task-busy`: another process holds the task's lock while it prepares the task.
    TaskBusy => "task-busy",
    /// `task-exists`: there is no such task.
    TaskExists => "task-exists",
    /// `task-id`: a task id is malformed.
    TaskId => "task-id",
    /// `task-id-unused`: the task id is already used, live or archived.
    TaskIdUnused => "task-id-unused",
    /// `task-paths`: a task path is malformed, or the changes go outside what the task may
    /// change.
    TaskPaths => "task-paths",
    /// `terminal-status`: the task is terminal: nothing moves out of MERGED, SUPERSEDED or
    /// ABANDONED.
    TerminalStatus => "terminal-status",
    /// `verdict-claim`: a verdict comes only from the reviewer that claimed the task.
    VerdictClaim => "verdict-claim",
    /// `verdict-commit`: the verdict's commit is not the submitted `review_commit`, or
    /// there is none.
    VerdictCommit => "verdict-commit",
    /// `worktree`: the task has no worktree.
    Worktree => "worktree",
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for rule in RuleId::ALL {
            let name = rule.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{name}"
            );
            assert_eq!(RuleId::parse(name), Some(*rule));
        }
        assert_eq!(RuleId::parse("no-such-rule-name"), None);
    }
}
