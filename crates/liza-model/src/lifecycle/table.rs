//! The transition table of specs/lifecycle.md, as data: for every command, the statuses it
//! moves a task from and to, who may perform it, and the history event it writes. The
//! transition functions look their row up here before they check anything else, so a
//! move the table does not list cannot happen, and the hand-edit reconciler asks the
//! same table what a person may do.

use crate::model::TaskStatus::{self, *};

use super::RuleId;
use super::refusal::Refusal;
use crate::EventKind;

/// Who performs an operation: P planner, C coder, R code reviewer (agents acting under
/// their identity), S the supervisor (in-process, or a person or script running a
/// supervisor-only command on the CLI), H a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// P: the planner.
    Planner,
    /// C: a coder.
    Coder,
    /// R: a code reviewer.
    Reviewer,
    /// S: the supervisor.
    Supervisor,
    /// H: a person.
    Human,
}

impl Kind {
    /// The letter the spec's tables use.
    pub fn letter(self) -> char {
        match self {
            Kind::Planner => 'P',
            Kind::Coder => 'C',
            Kind::Reviewer => 'R',
            Kind::Supervisor => 'S',
            Kind::Human => 'H',
        }
    }

    /// How messages name it (`the planner`, `a person`…).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Planner => "the planner",
            Kind::Coder => "a coder",
            Kind::Reviewer => "a code reviewer",
            Kind::Supervisor => "the supervisor",
            Kind::Human => "a person",
        }
    }
}

/// The commands that change a task's status (or its claims).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// `add-task`: (new) → DRAFT.
    AddTask,
    /// `amend-task`: DRAFT, UNCLAIMED or BLOCKED, status kept.
    AmendTask,
    /// `finalize-task`: DRAFT → UNCLAIMED.
    FinalizeTask,
    /// `claim-task`: UNCLAIMED → CLAIMED.
    ClaimTask,
    /// `claim-task` by the same coder: REJECTED → CLAIMED.
    ReclaimSameCoder,
    /// `claim-task` by its own coder after a restart: CLAIMED, status kept.
    ResumeSameCoder,
    /// `claim-task` by another coder once the assignee's lease ran out (or was released):
    /// REJECTED → CLAIMED.
    TakeOverRejected,
    /// `claim-task` by another coder once the assignee's lease ran out: CLAIMED → CLAIMED.
    TakeOverExpired,
    /// `claim-task` for an integration fix: INTEGRATION_FAILED → CLAIMED.
    ClaimIntegrationFix,
    /// `submit-for-review`: CLAIMED → READY_FOR_REVIEW.
    SubmitForReview,
    /// `claim-review`: READY_FOR_REVIEW, status kept.
    ClaimReview,
    /// `submit-verdict … approve`: READY_FOR_REVIEW → APPROVED.
    Approve,
    /// `submit-verdict … reject`: READY_FOR_REVIEW → REJECTED.
    Reject,
    /// The reviewer's run changed the worktree: APPROVED or REJECTED → READY_FOR_REVIEW.
    VoidVerdict,
    /// `review_cycles_current` reached `max_review_cycles`: REJECTED → BLOCKED.
    ReviewDeadlock,
    /// `block` by the coder, or the supervisor at a limit: CLAIMED → BLOCKED.
    Block,
    /// `merge`: APPROVED → MERGED.
    Merge,
    /// APPROVED → BLOCKED: merging it would change nothing on integration.
    NothingToMerge,
    /// APPROVED → READY_FOR_REVIEW: the task branch moved after the approval.
    WithdrawApproval,
    /// `merge` conflicted or its checks failed: APPROVED → INTEGRATION_FAILED.
    IntegrationFailed,
    /// `reassign`: BLOCKED, REJECTED, INTEGRATION_FAILED or CLAIMED → UNCLAIMED.
    Reassign,
    /// `unblock`: BLOCKED → UNCLAIMED.
    Unblock,
    /// `rescope`: BLOCKED, DRAFT, UNCLAIMED, REJECTED or INTEGRATION_FAILED → SUPERSEDED.
    Rescope,
    /// `abandon`: any non-terminal status → ABANDONED.
    Abandon,
    /// `release-claim --role reviewer`: READY_FOR_REVIEW, status kept.
    ReleaseReview,
    /// `release-claim --role coder`: CLAIMED → UNCLAIMED.
    ReleaseCoder,
}

impl Command {
    /// The name people know the operation by.
    pub fn name(self) -> &'static str {
        match self {
            Command::AddTask => "add-task",
            Command::AmendTask => "amend-task",
            Command::FinalizeTask => "finalize-task",
            Command::ClaimTask
            | Command::ReclaimSameCoder
            | Command::ResumeSameCoder
            | Command::TakeOverRejected
            | Command::TakeOverExpired
            | Command::ClaimIntegrationFix => "claim-task",
            Command::SubmitForReview => "submit-for-review",
            Command::ClaimReview => "claim-review",
            Command::Approve | Command::Reject => "submit-verdict",
            Command::VoidVerdict => "void verdict",
            Command::ReviewDeadlock => "review deadlock block",
            Command::Block => "block",
            Command::Merge
            | Command::IntegrationFailed
            | Command::NothingToMerge
            | Command::WithdrawApproval => "merge",
            Command::Reassign => "reassign",
            Command::Unblock => "unblock",
            Command::Rescope => "rescope",
            Command::Abandon => "abandon",
            Command::ReleaseReview => "release-claim --role reviewer",
            Command::ReleaseCoder => "release-claim --role coder",
        }
    }
}

/// One row of the table. `to: None` keeps the status (claims on a task under review).
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The operation.
    pub command: Command,
    /// The statuses it applies to.
    pub from: &'static [TaskStatus],
    /// The status it moves to; `None` keeps the status.
    pub to: Option<TaskStatus>,
    /// Who may perform it.
    pub actors: &'static [Kind],
    /// The history event it writes.
    pub event: EventKind,
}

use Kind::{Coder as C, Human as H, Planner as P, Reviewer as R, Supervisor as S};

const NON_TERMINAL: &[TaskStatus] = &[
    Draft,
    Unclaimed,
    Claimed,
    ReadyForReview,
    Rejected,
    Approved,
    Blocked,
    IntegrationFailed,
];

/// Every row of specs/lifecycle.md's transition table (plus resuming one's own claim, which
/// keeps the status and only renews the lease).
pub const ROWS: &[Row] = &[
    Row {
        command: Command::AddTask,
        from: &[],
        to: Some(Draft),
        actors: &[P, H],
        event: EventKind::Created,
    },
    Row {
        command: Command::AmendTask,
        from: &[Draft, Unclaimed, Blocked],
        to: None,
        actors: &[P, H],
        event: EventKind::Amended,
    },
    Row {
        command: Command::FinalizeTask,
        from: &[Draft],
        to: Some(Unclaimed),
        actors: &[P, H],
        event: EventKind::Finalized,
    },
    Row {
        command: Command::ClaimTask,
        from: &[Unclaimed],
        to: Some(Claimed),
        actors: &[S],
        event: EventKind::Claimed,
    },
    Row {
        command: Command::ReclaimSameCoder,
        from: &[Rejected],
        to: Some(Claimed),
        actors: &[S],
        event: EventKind::ReclaimedAfterRejection,
    },
    Row {
        command: Command::ResumeSameCoder,
        from: &[Claimed],
        to: None,
        actors: &[S],
        event: EventKind::Resumed,
    },
    Row {
        command: Command::TakeOverRejected,
        from: &[Rejected],
        to: Some(Claimed),
        actors: &[S],
        event: EventKind::ReassignedAfterRejection,
    },
    Row {
        command: Command::TakeOverExpired,
        from: &[Claimed],
        to: Some(Claimed),
        actors: &[S],
        event: EventKind::LeaseExpiredReassigned,
    },
    Row {
        command: Command::ClaimIntegrationFix,
        from: &[IntegrationFailed],
        to: Some(Claimed),
        actors: &[S],
        event: EventKind::ClaimedForIntegrationFix,
    },
    Row {
        command: Command::SubmitForReview,
        from: &[Claimed],
        to: Some(ReadyForReview),
        actors: &[C],
        event: EventKind::ReadyForReview,
    },
    Row {
        command: Command::ClaimReview,
        from: &[ReadyForReview],
        to: None,
        actors: &[S],
        event: EventKind::ReviewClaimed,
    },
    Row {
        command: Command::Approve,
        from: &[ReadyForReview],
        to: Some(Approved),
        actors: &[R],
        event: EventKind::Approved,
    },
    Row {
        command: Command::Reject,
        from: &[ReadyForReview],
        to: Some(Rejected),
        actors: &[R],
        event: EventKind::Rejected,
    },
    Row {
        command: Command::VoidVerdict,
        from: &[Approved, Rejected],
        to: Some(ReadyForReview),
        actors: &[S],
        event: EventKind::VerdictVoided,
    },
    Row {
        command: Command::ReviewDeadlock,
        from: &[Rejected],
        to: Some(Blocked),
        actors: &[S],
        event: EventKind::Blocked,
    },
    Row {
        command: Command::Block,
        from: &[Claimed],
        to: Some(Blocked),
        actors: &[C, S],
        event: EventKind::Blocked,
    },
    Row {
        command: Command::Merge,
        from: &[Approved],
        to: Some(Merged),
        actors: &[S],
        event: EventKind::Merged,
    },
    Row {
        command: Command::NothingToMerge,
        from: &[Approved],
        to: Some(Blocked),
        actors: &[S],
        event: EventKind::Blocked,
    },
    Row {
        command: Command::WithdrawApproval,
        from: &[Approved],
        to: Some(ReadyForReview),
        actors: &[S],
        event: EventKind::ApprovalWithdrawn,
    },
    Row {
        command: Command::IntegrationFailed,
        from: &[Approved],
        to: Some(IntegrationFailed),
        actors: &[S],
        event: EventKind::IntegrationFailed,
    },
    Row {
        command: Command::Reassign,
        from: &[Blocked, Rejected, IntegrationFailed, Claimed],
        to: Some(Unclaimed),
        actors: &[P, H],
        event: EventKind::Reassigned,
    },
    Row {
        command: Command::Unblock,
        from: &[Blocked],
        to: Some(Unclaimed),
        actors: &[P, H],
        event: EventKind::Unblocked,
    },
    Row {
        command: Command::Rescope,
        from: &[Blocked, Draft, Unclaimed, Rejected, IntegrationFailed],
        to: Some(Superseded),
        actors: &[P, H],
        event: EventKind::Superseded,
    },
    Row {
        command: Command::Abandon,
        from: NON_TERMINAL,
        to: Some(Abandoned),
        actors: &[P, H],
        event: EventKind::Abandoned,
    },
    Row {
        command: Command::ReleaseReview,
        from: &[ReadyForReview],
        to: None,
        actors: &[H, S],
        event: EventKind::ReviewClaimReleased,
    },
    Row {
        command: Command::ReleaseCoder,
        from: &[Claimed],
        to: Some(Unclaimed),
        actors: &[H],
        event: EventKind::CoderClaimReleased,
    },
];

/// Moves that are never allowed, with the rule a refusal names.
pub const FORBIDDEN: &[(TaskStatus, TaskStatus, &str)] = &[
    (
        Draft,
        Claimed,
        "a DRAFT task is invisible to coders: finalize it first",
    ),
    (
        Claimed,
        Merged,
        "only approved work is merged: submit it for review first",
    ),
    (
        Claimed,
        Approved,
        "only a reviewer approves, and only a submitted task",
    ),
    (
        Rejected,
        Approved,
        "a rejected task must be fixed and submitted again",
    ),
];

/// The row of `command`, checked against the task's current status and the actor.
pub fn row(
    command: Command,
    from: Option<TaskStatus>,
    kind: Kind,
) -> Result<&'static Row, Refusal> {
    let row = ROWS
        .iter()
        .find(|r| r.command == command)
        .expect("every command has a row");
    if !row.actors.contains(&kind) {
        let who: Vec<String> = row.actors.iter().map(|k| k.name().to_owned()).collect();
        return Err(Refusal::new(
            RuleId::Permission,
            format!(
                "{} may not run {}: only {} may",
                kind.name(),
                command.name(),
                who.join(" or ")
            ),
            match kind {
                Kind::Human => {
                    "supervisors do this for their agents; a person uses release-claim, reassign, abandon or a hand edit"
                }
                Kind::Supervisor => "this step is an agent's own decision",
                _ => "agents act only within their role (operations.md, Commands)",
            },
        ));
    }
    if let Some(from) = from {
        if from.is_terminal() {
            return Err(Refusal::new(
                RuleId::TerminalStatus,
                format!(
                    "{} is refused: the task is {} and nothing moves out of MERGED, SUPERSEDED or ABANDONED",
                    command.name(),
                    from.as_str()
                ),
                "add a new task for further work (`liza add-task`)",
            ));
        }
        if !row.from.contains(&from) {
            if let Some(to) = row.to
                && let Some((_, _, why)) = FORBIDDEN.iter().find(|(f, t, _)| *f == from && *t == to)
            {
                return Err(Refusal::new(
                    RuleId::ForbiddenTransition,
                    format!("{} → {} is forbidden: {why}", from.as_str(), to.as_str()),
                    "see lifecycle.md, Transitions",
                ));
            }
            return Err(Refusal::new(
                RuleId::NoSuchTransition,
                format!(
                    "{} applies to a task in {}, and this one is {}",
                    command.name(),
                    statuses(row.from),
                    from.as_str()
                ),
                "check the task with `liza show <task>`",
            ));
        }
    }
    Ok(row)
}

/// Whether a person may move a task from `from` to `to` (a hand edit of `status`): a row
/// H may perform, or the forced moves to BLOCKED or ABANDONED from any non-terminal status.
pub fn human_may_move(from: TaskStatus, to: TaskStatus) -> bool {
    if from == to {
        return true;
    }
    if from.is_terminal() {
        return false;
    }
    if matches!(to, Blocked | Abandoned) {
        return true;
    }
    ROWS.iter()
        .any(|r| r.actors.contains(&H) && r.to == Some(to) && r.from.contains(&from))
}

fn statuses(list: &[TaskStatus]) -> String {
    let names: Vec<&str> = list.iter().map(|s| s.as_str()).collect();
    names.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_moves_are_in_no_row() {
        for (from, to, _) in FORBIDDEN {
            assert!(
                !ROWS
                    .iter()
                    .any(|r| r.to == Some(*to) && r.from.contains(from)),
                "{from:?} → {to:?}"
            );
        }
        for row in ROWS {
            assert!(
                row.from.iter().all(|s| !s.is_terminal()),
                "{:?}",
                row.command
            );
        }
    }

    #[test]
    fn people_may_force_blocked_and_abandoned_but_never_leave_terminal_states() {
        assert!(human_may_move(Claimed, Blocked));
        assert!(human_may_move(ReadyForReview, Abandoned));
        assert!(human_may_move(Blocked, Unclaimed));
        assert!(human_may_move(Draft, Unclaimed));
        assert!(!human_may_move(Claimed, Approved));
        assert!(
            !human_may_move(ReadyForReview, Approved),
            "verdicts are the reviewer's alone"
        );
        assert!(
            !human_may_move(Unclaimed, Claimed),
            "claims are the supervisor's"
        );
        assert!(!human_may_move(Merged, Unclaimed));
        assert!(!human_may_move(Abandoned, Blocked));
    }
}
