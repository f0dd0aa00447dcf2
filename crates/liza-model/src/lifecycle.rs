//! The task, agent, sprint and goal state machines of specs/lifecycle.md: one transition table
//! ([`table`]) as data, plus pure functions over the in-memory [`State`] — no I/O, no
//! clock (the caller passes `now`), no git (the caller passes what git said). Every path
//! that changes a task's status — CLI commands, the supervisor, the built-in agent, the
//! hand-edit reconciler — goes through these functions, so each rule lives here once.
//!
//! Contract of every transition function: it checks all its guards before it changes
//! anything, so a refusal leaves the state exactly as it was; on success it sets
//! `status_changed_at`, appends the history event of its row and returns the log entries
//! ([`Outcome`]) for the store to append.
//!
//! [`State`]: crate::State

pub mod agents;
pub mod archiving;
pub mod circuit_breaker;
pub mod claims;
pub mod context;
pub mod idle;
pub mod leases;
pub mod limits;
pub mod merge_queue;
pub mod merging;
pub mod planner_moves;
pub mod planner_triggers;
pub mod planning;
pub mod refusal;
pub mod rule;
pub mod run_reports;
pub mod sprint;
pub mod table;
pub mod task_scope;
pub mod text_rules;
pub mod work;
pub mod work_done;

pub use agents::{Registration, check_generation, register, unregister};
pub use claims::{
    ClaimKind, WorktreePlan, claim, claim_review, clear_stale, plan_claim, release_review,
    worktree_path,
};
pub use context::{Outcome, Who};
pub use leases::{LeaseKey, LeaseWatch, Leases};
pub use limits::{RunStart, iteration_limit, start_run};
pub use merge_queue::merge_queue;
pub use merging::{
    FOREIGN_INTENT_LIVES, INTENT_RENEWED_EVERY, MergeFailure, MergeRecord, MergeStart, Merger,
    begin_merge, drop_merge_intent, integration_failed, merged, nothing_to_merge,
    renew_merge_intents, set_merge_candidate, withdraw_approval,
};
pub use planner_moves::{abandon, reassign, release_coder, rescope, unblock};
pub use planner_triggers::{Trigger, TriggerKind, acknowledge, planner_triggers};
pub use planning::{Amendment, NewTask, SpecFacts, add_tasks, amend_task, finalize, spec_file};
pub use refusal::{Refusal, RuleId};
pub use run_reports::{RunResult, record_builtin_result, record_run_report};
pub use sprint::{
    DECISIONS, abort, checkpoint, checkpoint_at_deadline, complete_if_done, goal_complete,
    goal_next, resume, sprint_next,
};
pub use table::{Command, Kind};
pub use work::{
    ReviewWork, coder_work, coder_work_frees_in, reviewer_work, reviewer_work_frees_in,
};
pub use work_done::{
    BlockCause, SubmitFacts, Verdict, block, handoff, submit, verdict, void_verdict,
};
#[cfg(test)]
pub use {context::Field, planning::add_task, work::WorkClass};

#[cfg(test)]
mod tests;
