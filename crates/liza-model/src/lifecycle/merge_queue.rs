//! The merge queue's order (specs/git.md *The queue*): `merge_queue` lists task ids; the
//! queue a merger works from is the listed APPROVED tasks in list order, then every
//! APPROVED task the list misses, in task order. Entries whose task left APPROVED another
//! way are passed over, and dropped whenever the list is written.

use crate::TaskId;
use crate::model::{State, TaskStatus};

/// The APPROVED tasks in the order they are merged.
pub fn merge_queue(state: &State) -> Vec<TaskId> {
    let approved = |id: &TaskId| {
        state
            .task(id)
            .is_some_and(|t| t.status == TaskStatus::Approved)
    };
    let mut order: Vec<TaskId> = Vec::new();
    for id in state.merge_queue.iter().flatten() {
        if approved(id) && !order.contains(id) {
            order.push(id.clone());
        }
    }
    for task in state.tasks.iter() {
        if task.status == TaskStatus::Approved && !order.contains(&task.id) {
            order.push(task.id.clone());
        }
    }
    order
}

/// Appends `id` (just approved) to the queue.
pub(crate) fn enqueue(state: &mut State, id: &TaskId) {
    let mut order = merge_queue(state);
    if !order.contains(id) {
        order.push(id.clone());
    }
    state.merge_queue = Some(order);
}

/// Takes `id` out of the queue (its merge ended, whichever way).
pub(crate) fn dequeue(state: &mut State, id: &TaskId) {
    if state.merge_queue.is_none() {
        return;
    }
    let order: Vec<TaskId> = merge_queue(state).into_iter().filter(|t| t != id).collect();
    state.merge_queue = (!order.is_empty()).then_some(order);
}
