//! What happened, by name: the `action` of a log.yaml entry and the `event` of a task's
//! history. liza writes and reads them as [`EventKind`]s; the names are strings only in
//! the YAML. An action liza does not define (`liza log add --action test_run`, another
//! tool's entries) parses to `None` and is kept as written.

use super::timestamp::Timestamp;

macro_rules! events {
    ($($variant:ident => $name:literal,)*) => {
        /// A kind of event in log.yaml or a task's history.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $($variant,)*
        }

        impl EventKind {
            /// Every kind liza defines.
            pub const KNOWN: &'static [EventKind] = &[$(EventKind::$variant,)*];

            /// The name written in the YAML.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }

            /// The kind named `name`, if liza defines it.
            pub fn parse(name: &str) -> Option<EventKind> {
                match name {
                    $($name => Some(EventKind::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

events! {
    Abandoned => "abandoned",
    AgentRegistered => "agent_registered",
    AgentRun => "agent_run",
    AgentRunEnded => "agent_run_ended",
    AgentUnregistered => "agent_unregistered",
    Amended => "amended",
    Anomaly => "anomaly",
    Approved => "approved",
    Archived => "archived",
    Blocked => "blocked",
    Checkpoint => "checkpoint",
    CircuitBreakerCheck => "circuit_breaker_check",
    ClaimFailed => "claim_failed",
    Claimed => "claimed",
    ClaimedForIntegrationFix => "claimed_for_integration_fix",
    CoderClaimReleased => "coder_claim_released",
    CommitResult => "commit_result",
    Created => "created",
    DemoConfig => "demo_config",
    Discovery => "discovery",
    DiscoveryConverted => "discovery_converted",
    DiscoveryDeferred => "discovery_deferred",
    DiscoveryRejected => "discovery_rejected",
    Finalized => "finalized",
    GoalAborted => "goal_aborted",
    GoalCompleted => "goal_completed",
    GoalStarted => "goal_started",
    HandEditRejected => "hand_edit_rejected",
    Handoff => "handoff",
    HumanEdit => "human_edit",
    HumanNote => "human_note",
    HypothesisExhaustion => "hypothesis_exhaustion",
    Init => "init",
    Initialization => "initialization",
    IntegrationFailed => "integration_failed",
    IntegrationRewindAccepted => "integration_rewind_accepted",
    LeaseExpiredReassigned => "lease_expired_reassigned",
    MergeCandidate => "merge_candidate",
    MergeIntentDropped => "merge_intent_dropped",
    MergeStarted => "merge_started",
    Merged => "merged",
    Note => "note",
    Paused => "paused",
    PlannerSeen => "planner_seen",
    ReadyForReview => "ready_for_review",
    Reassigned => "reassigned",
    ReassignedAfterRejection => "reassigned_after_rejection",
    ReclaimedAfterRejection => "reclaimed_after_rejection",
    Rejected => "rejected",
    Resumed => "resumed",
    ReviewClaimReleased => "review_claim_released",
    ReviewClaimed => "review_claimed",
    ReviewLeaseExpired => "review_lease_expired",
    ReviewResult => "review_result",
    RoleBoundaryViolation => "role_boundary_violation",
    RunReport => "run_report",
    RunReportInvalid => "run_report_invalid",
    SpecChanged => "spec_changed",
    SprintAborted => "sprint_aborted",
    SprintCompleted => "sprint_completed",
    SprintStarted => "sprint_started",
    Superseded => "superseded",
    Unblocked => "unblocked",
    VerdictVoided => "verdict_voided",
    Woke => "woke",
    WorktreeArchived => "worktree_archived",
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for kind in EventKind::KNOWN {
            let name = kind.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name}"
            );
            assert_eq!(EventKind::parse(name), Some(*kind));
        }
        assert_eq!(EventKind::parse("test_run"), None);
    }
}

/// How an agent run ended, as logged by its supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnded {
    pub ts: Timestamp,
    pub agent: String,
    pub role: String,
    pub task: Option<String>,
    /// `ok`, `graceful_abort`, `crash`, `usage_limit`, `soft_fail`, `hard_fail`,
    /// `stalled`, `timed_out`, `not_started`, `aborted`, `signalled`.
    pub exit_class: String,
    pub revision: Option<u64>,
}

impl RunEnded {
    pub fn is_crash(&self) -> bool {
        self.exit_class == "crash"
    }
}
