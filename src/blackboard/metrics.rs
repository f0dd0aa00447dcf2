//! `sprint.metrics`, recomputed by every transaction so it is never stale.

use super::codec::Number;
use super::model::{Metrics, State, TaskStatus};

/// Recomputes the sprint metrics from the tasks (and archived tasks of this sprint),
/// keeping any metric keys liza does not know.
pub fn recompute(state: &mut State) {
    let mut done = 0i64;
    let mut in_progress = 0i64;
    let mut blocked = 0i64;
    let mut iterations = 0i64;
    let mut review_cycles = 0i64;
    let mut approvals = 0i64;
    let mut rejections = 0i64;
    let mut submissions = 0i64;
    for task in &state.tasks {
        match task.status {
            s if s.is_terminal() => done += 1,
            TaskStatus::Claimed
            | TaskStatus::ReadyForReview
            | TaskStatus::Rejected
            | TaskStatus::Approved => in_progress += 1,
            TaskStatus::Blocked | TaskStatus::IntegrationFailed => blocked += 1,
            _ => {}
        }
        iterations += task.iteration.unwrap_or(0).max(0);
        review_cycles += task.review_cycles_total.unwrap_or(0).max(0);
        for event in task.history() {
            match event.event.as_str() {
                "approved" => approvals += 1,
                "rejected" => rejections += 1,
                "ready_for_review" => submissions += 1,
                _ => {}
            }
        }
    }
    if let Some(archived) = &state.archived {
        done += archived
            .iter()
            .filter(|(_, a)| a.sprint.as_deref() == Some(state.sprint.id.as_str()))
            .count() as i64;
    }
    let verdicts = approvals + rejections;
    let rate = if verdicts == 0 {
        Number::Int(0)
    } else {
        Number::Float((approvals as f64 * 1000.0 / verdicts as f64).round() / 10.0)
    };
    let metrics = state.sprint.metrics.get_or_insert_with(Metrics::default);
    metrics.tasks_done = Some(done);
    metrics.tasks_in_progress = Some(in_progress);
    metrics.tasks_blocked = Some(blocked);
    metrics.iterations_total = Some(iterations);
    metrics.review_cycles_total = Some(review_cycles);
    metrics.review_verdict_approvals = Some(approvals);
    metrics.review_verdict_rejections = Some(rejections);
    metrics.review_verdict_count = Some(verdicts);
    metrics.review_verdict_approval_rate_percent = Some(rate);
    metrics.task_submitted_for_review_count = Some(submissions);
}
