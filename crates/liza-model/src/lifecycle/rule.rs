//! The rules that refuse an operation, by name: every refusal carries one, `--json` errors
//! show it as `error.rule`, and the supervisor decides on it (never on an error's text).
//! The names are the ones specs/lifecycle.md, specs/git.md and specs/operations.md use in brackets.

macro_rules! rules {
    ($($variant:ident => $name:literal,)*) => {
        /// A rule of the specification that refused an operation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleId {
            $($variant,)*
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
    AddTasks => "add-tasks",
    AgentGeneration => "agent-generation",
    AgentId => "agent-id",
    AgentIdentity => "agent-identity",
    AgentRole => "agent-role",
    AmendChanges => "amend-changes",
    AnomalyDetails => "anomaly-details",
    AnomalyType => "anomaly-type",
    ArchiveName => "archive-name",
    ArchiveReadable => "archive-readable",
    BlockAssignee => "block-assignee",
    BlockCause => "block-cause",
    BlockQuestions => "block-questions",
    BranchMoved => "branch-moved",
    Caller => "caller",
    ChannelCommand => "channel-command",
    ClaimBase => "claim-base",
    ClaimChanged => "claim-changed",
    ClaimCoder => "claim-coder",
    ClaimReviewer => "claim-reviewer",
    ClaimedByOther => "claimed-by-other",
    CleanWorktree => "clean-worktree",
    CoderLeaseExpired => "coder-lease-expired",
    Collision => "collision",
    Definition => "definition",
    DependenciesSatisfied => "dependencies-satisfied",
    DiscoveryExists => "discovery-exists",
    DiscoveryOpen => "discovery-open",
    DependencyCycle => "dependency-cycle",
    DependencyExists => "dependency-exists",
    DiscoverySeverity => "discovery-severity",
    DiscoveryUrgency => "discovery-urgency",
    FailedBy => "failed-by",
    FileWrite => "file-write",
    FinalizeDrafts => "finalize-drafts",
    FinalizeGates => "finalize-gates",
    ForbiddenTransition => "forbidden-transition",
    GoalOpenTasks => "goal-open-tasks",
    GoalStatus => "goal-status",
    GoalText => "goal-text",
    HandoffAssignee => "handoff-assignee",
    HumanOnly => "human-only",
    HypothesisExhaustion => "hypothesis-exhaustion",
    IntegrationBranch => "integration-branch",
    IntegrationCheckedOut => "integration-checked-out",
    IntegrationRewound => "integration-rewound",
    JournalRevision => "journal-revision",
    LogAction => "log-action",
    LogDetail => "log-detail",
    MergeIntent => "merge-intent",
    NoSuchTransition => "no-such-transition",
    NotAuthor => "not-author",
    NoteText => "note-text",
    OneReviewPerReviewer => "one-review-per-reviewer",
    OneTaskPerCoder => "one-task-per-coder",
    Permission => "permission",
    PlanApproval => "plan-approval",
    PostWorktreeCmd => "post-worktree-cmd",
    PriorityRange => "priority-range",
    ProtectedPaths => "protected-paths",
    ReassignLiveLease => "reassign-live-lease",
    Registered => "registered",
    RegisteredRole => "registered-role",
    RejectionCites => "rejection-cites",
    RequiredText => "required-text",
    RescopeInto => "rescope-into",
    RescopeReason => "rescope-reason",
    RescopeSupersedes => "rescope-supersedes",
    ResumeDecision => "resume-decision",
    ReviewClaimed => "review-claimed",
    ReviewCommit => "review-commit",
    ReviewLeaseExpired => "review-lease-expired",
    ReviewLeaseLive => "review-lease-live",
    RunClaimed => "run-claimed",
    SandboxRequired => "sandbox-required",
    SpecCommitted => "spec-committed",
    SpecPath => "spec-path",
    SprintDeadline => "sprint-deadline",
    SprintStatus => "sprint-status",
    StaleGeneration => "stale-generation",
    SubmitAssignee => "submit-assignee",
    SubmitDescends => "submit-descends",
    SubmitHead => "submit-head",
    SubmitNewCommit => "submit-new-commit",
    Superseded => "superseded",
    SupersedesExists => "supersedes-exists",
    SupervisorOnly => "supervisor-only",
    TaskBusy => "task-busy",
    TaskExists => "task-exists",
    TaskId => "task-id",
    TaskIdUnused => "task-id-unused",
    TaskPaths => "task-paths",
    TerminalStatus => "terminal-status",
    VerdictClaim => "verdict-claim",
    VerdictCommit => "verdict-commit",
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
