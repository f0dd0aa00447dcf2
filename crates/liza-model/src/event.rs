//! What happened, by name: the `action` of a log.yaml entry and the `event` of a task's
//! history. liza writes and reads them as [`EventKind`]s; the names are strings only in
//! the YAML. An action liza does not define (`liza log add --action test_run`, another
//! tool's entries) parses to `None` and is kept as written.

use super::timestamp::Timestamp;

macro_rules! events {
    ($($(#[$meta:meta])* $variant:ident => $name:literal,)*) => {
        /// A kind of event in log.yaml or a task's history.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $($(#[$meta])* $variant,)*
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
    /// `abandoned`: a task was abandoned.
    Abandoned => "abandoned",
    /// `agent_registered`: an agent was registered (its role and generation in the detail).
    AgentRegistered => "agent_registered",
    /// `agent_run`: a supervisor launched its agent on a task (the iteration in the
    /// detail).
    AgentRun => "agent_run",
    /// `agent_run_ended`: an agent run ended; its supervisor logs how ([`RunEnded`]).
    AgentRunEnded => "agent_run_ended",
    /// `agent_unregistered`: an agent was unregistered.
    AgentUnregistered => "agent_unregistered",
    /// `amended`: a task's definition was amended (the changed fields with it).
    Amended => "amended",
    /// `anomaly`: an agent reported an anomaly.
    Anomaly => "anomaly",
    /// `approval_withdrawn`: the task branch moved after its approval; the task went back
    /// to review instead of being merged.
    ApprovalWithdrawn => "approval_withdrawn",
    /// `approved`: a reviewer approved a task.
    Approved => "approved",
    /// `archived`: terminal tasks were moved to `archive/<sprint>.yaml`.
    Archived => "archived",
    /// `blocked`: a task was blocked.
    Blocked => "blocked",
    /// `checkpoint`: the sprint took a checkpoint.
    Checkpoint => "checkpoint",
    /// `circuit_breaker_check`: the circuit breaker's analysis ran (`OK` or `TRIGGERED` in
    /// the detail).
    CircuitBreakerCheck => "circuit_breaker_check",
    /// `claim_failed`: a claim failed for a reason other than losing the race
    /// (specs/lifecycle.md *Claimability and ordering*).
    ClaimFailed => "claim_failed",
    /// `claimed`: a coder claimed an UNCLAIMED task.
    Claimed => "claimed",
    /// `claimed_for_integration_fix`: a coder claimed an INTEGRATION_FAILED task to fix it.
    ClaimedForIntegrationFix => "claimed_for_integration_fix",
    /// `coder_claim_released`: a person released a coder's claim; the task is UNCLAIMED
    /// again.
    CoderClaimReleased => "coder_claim_released",
    /// `commit_result`: the built-in coder's result for a run, with its usage.
    CommitResult => "commit_result",
    /// `created`: a task was added, as DRAFT.
    Created => "created",
    /// `demo_config`: `liza demo` set its configuration.
    DemoConfig => "demo_config",
    /// `discovery`: an agent reported a discovery.
    Discovery => "discovery",
    /// `discovery_converted`: a discovery was converted to a task.
    DiscoveryConverted => "discovery_converted",
    /// `discovery_deferred`: a discovery was deferred.
    DiscoveryDeferred => "discovery_deferred",
    /// `discovery_rejected`: a discovery was rejected.
    DiscoveryRejected => "discovery_rejected",
    /// `finalized`: a DRAFT task was finalized and became UNCLAIMED.
    Finalized => "finalized",
    /// `goal_aborted`: the goal was aborted, and its sprint with it.
    GoalAborted => "goal_aborted",
    /// `goal_completed`: the goal was declared complete.
    GoalCompleted => "goal_completed",
    /// `goal_started`: the next goal was started.
    GoalStarted => "goal_started",
    /// `hand_edit_rejected`: a hand edit of state.yaml was set aside under `rejected/`.
    HandEditRejected => "hand_edit_rejected",
    /// `handoff`: an agent wrote a handoff for its task.
    Handoff => "handoff",
    /// `human_edit`: a person's edit of state.yaml was committed.
    HumanEdit => "human_edit",
    /// `human_note`: a person left a note for the agents.
    HumanNote => "human_note",
    /// `hypothesis_exhaustion`: a task two coders failed was rescoped; it is logged before
    /// the rescope.
    HypothesisExhaustion => "hypothesis_exhaustion",
    /// `init`: `liza init` created the blackboard.
    Init => "init",
    /// `initialization`: the goal's first alignment event (`goal.alignment_history`),
    /// written at init.
    Initialization => "initialization",
    /// `integration_failed`: a merge conflicted or its integration checks failed.
    IntegrationFailed => "integration_failed",
    /// `integration_rewind_accepted`: a person accepted that the task's merge commit left
    /// the integration branch (`liza integration accept-rewind`).
    IntegrationRewindAccepted => "integration_rewind_accepted",
    /// `lease_expired_reassigned`: another coder took over a CLAIMED task whose lease ran
    /// out.
    LeaseExpiredReassigned => "lease_expired_reassigned",
    /// `merge_candidate`: a merge recorded the candidate commit it is about to publish.
    MergeCandidate => "merge_candidate",
    /// `merge_intent_dropped`: an interrupted or refused merge's intent was cleared.
    MergeIntentDropped => "merge_intent_dropped",
    /// `merge_intent_renewed`: a merger whose checks still run renewed its intent (every
    /// quarter of an hour), so no other host takes it for dead.
    MergeIntentRenewed => "merge_intent_renewed",
    /// `merge_started`: a merge recorded its intent before its git work.
    MergeStarted => "merge_started",
    /// `merged`: a task was merged into the integration branch.
    Merged => "merged",
    /// `note`: a note; a defined name liza itself never writes.
    Note => "note",
    /// `paused`: a person paused the sprint.
    Paused => "paused",
    /// `planner_seen`: the planner saw the trigger a task raised (edge-triggered planner
    /// wake-ups).
    PlannerSeen => "planner_seen",
    /// `ready_for_review`: a coder submitted a task for review.
    ReadyForReview => "ready_for_review",
    /// `reassigned`: a task was reassigned and is UNCLAIMED again.
    Reassigned => "reassigned",
    /// `reassigned_after_rejection`: another coder claimed a REJECTED task.
    ReassignedAfterRejection => "reassigned_after_rejection",
    /// `reclaimed_after_rejection`: the same coder claimed its REJECTED task again.
    ReclaimedAfterRejection => "reclaimed_after_rejection",
    /// `rejected`: a reviewer rejected a task.
    Rejected => "rejected",
    /// `resumed`: a coder resumed its CLAIMED task, or a person resumed the sprint.
    Resumed => "resumed",
    /// `review_claim_released`: a review claim was released.
    ReviewClaimReleased => "review_claim_released",
    /// `review_claimed`: a reviewer claimed a task for review.
    ReviewClaimed => "review_claimed",
    /// `review_lease_expired`: a reviewer claimed a task whose previous review lease ran
    /// out.
    ReviewLeaseExpired => "review_lease_expired",
    /// `review_result`: the built-in reviewer's result for a run, with its usage.
    ReviewResult => "review_result",
    /// `role_boundary_violation`: an agent's run changed what its role may not change.
    RoleBoundaryViolation => "role_boundary_violation",
    /// `run_report`: an agent run's structured report.
    RunReport => "run_report",
    /// `run_report_invalid`: an agent run's report could not be used.
    RunReportInvalid => "run_report_invalid",
    /// `spec_changed`: a task's spec changed since the task was finalized.
    SpecChanged => "spec_changed",
    /// `sprint_aborted`: the sprint was aborted.
    SprintAborted => "sprint_aborted",
    /// `sprint_completed`: the sprint completed: no planned task is left outside MERGED,
    /// SUPERSEDED and ABANDONED.
    SprintCompleted => "sprint_completed",
    /// `sprint_started`: the next sprint was opened.
    SprintStarted => "sprint_started",
    /// `superseded`: a task was replaced by rescoped tasks.
    Superseded => "superseded",
    /// `unblocked`: a BLOCKED task was unblocked and is UNCLAIMED again.
    Unblocked => "unblocked",
    /// `verdict_voided`: a verdict was voided because the reviewer's run changed the
    /// worktree.
    VerdictVoided => "verdict_voided",
    /// `woke`: a supervisor woke up to work (with `wake_latency_ms`).
    Woke => "woke",
    /// `worktree_archived`: a task's worktree was saved before it was removed or replaced.
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
    /// When the entry was logged (`timestamp`).
    pub ts: Timestamp,
    /// The agent whose run it was.
    pub agent: String,
    /// `role`: the agent's role (`unknown` when the entry has none).
    pub role: String,
    /// The task the run was on, if any.
    pub task: Option<String>,
    /// `ok`, `graceful_abort`, `crash`, `usage_limit`, `soft_fail`, `hard_fail`,
    /// `stalled`, `timed_out`, `not_started`, `aborted`, `signalled`.
    pub exit_class: String,
    /// `seen_revision`: the blackboard revision the supervisor saw after the run.
    pub revision: Option<u64>,
}

impl RunEnded {
    /// Whether the run crashed.
    pub fn is_crash(&self) -> bool {
        self.exit_class == "crash"
    }
}
