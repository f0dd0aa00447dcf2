//! The merge queue's schedule (specs/git.md *A batch*), pure: which batches are checked
//! together in a round, on what, and what a round's verdicts mean — what is published,
//! what is bisected, what failed. No git, no blackboard: the merger carries it out.
//!
//! A round is either a **stack** of fresh batches, each on top of the one before it (the
//! first on the integration tip): speculation, published as far as they pass in order; or
//! **halves** of failing batches, each on the tip by itself (one of two halves holds the
//! failure, so neither is built on the other): the first that passes is published.

use std::collections::VecDeque;

use crate::blackboard::TaskId;

/// A batch checked in a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unit {
    /// Its tasks, in queue order.
    pub tasks: Vec<TaskId>,
    /// Built on the batch before it in the round (speculation), or on the tip.
    pub stacked: bool,
    /// Half of a batch that failed, checked on the tip by itself.
    pub half: bool,
}

/// How a batch's checks ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UnitVerdict {
    Passed,
    Failed,
    /// Not checked to the end: a batch under it failed, so its result means nothing.
    Stopped,
}

/// What a round's verdicts decide.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Resolution {
    /// The rounds' batches to publish, by index, each on the one before (the first on the
    /// tip): integration moves to the last one's commit.
    pub publish: Vec<usize>,
    /// Tasks whose own batch of one failed: INTEGRATION_FAILED.
    pub failed: Vec<TaskId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A task not yet known to fail.
    Fresh(TaskId),
    /// Half of a batch that failed, to be checked on the tip by itself.
    Half(Vec<TaskId>),
}

/// The merger's line of tasks: fresh ones in queue order, and the halves of failed
/// batches, which come first.
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    line: VecDeque<Entry>,
    max_batch: usize,
    parallel: usize,
}

impl Schedule {
    pub(super) fn new(max_batch: usize, parallel: usize) -> Schedule {
        Schedule {
            line: VecDeque::new(),
            max_batch: max_batch.max(1),
            parallel: parallel.max(1),
        }
    }

    /// Takes the settings as they are now (a person may change them mid-drain).
    pub(super) fn configure(&mut self, max_batch: usize, parallel: usize) {
        self.max_batch = max_batch.max(1);
        self.parallel = parallel.max(1);
    }

    /// Adds a task that joined the queue (at its end).
    pub(super) fn push(&mut self, task: TaskId) {
        if !self.contains(&task) {
            self.line.push_back(Entry::Fresh(task));
        }
    }

    /// Whether `task` waits in the line.
    pub(super) fn contains(&self, task: &TaskId) -> bool {
        self.line.iter().any(|e| match e {
            Entry::Fresh(t) => t == task,
            Entry::Half(tasks) => tasks.contains(task),
        })
    }

    /// Takes `task` out of the line (it left the queue: withdrawn, failed, gone).
    pub(super) fn remove(&mut self, task: &TaskId) {
        self.line.retain_mut(|e| match e {
            Entry::Fresh(t) => t != task,
            Entry::Half(tasks) => {
                tasks.retain(|t| t != task);
                !tasks.is_empty()
            }
        });
    }

    /// Whether nothing waits.
    pub(super) fn is_empty(&self) -> bool {
        self.line.is_empty()
    }

    /// The tasks waiting, in order.
    pub(super) fn tasks(&self) -> Vec<TaskId> {
        let mut all = Vec::new();
        for e in &self.line {
            match e {
                Entry::Fresh(t) => all.push(t.clone()),
                Entry::Half(tasks) => all.extend(tasks.iter().cloned()),
            }
        }
        all
    }

    /// The next round's batches, taken out of the line. Empty when nothing waits.
    pub(super) fn round(&mut self) -> Vec<Unit> {
        let mut units = Vec::new();
        if matches!(self.line.front(), Some(Entry::Half(_))) {
            while units.len() < self.parallel {
                let Some(Entry::Half(tasks)) = self.line.front().cloned() else {
                    break;
                };
                self.line.pop_front();
                units.push(Unit {
                    tasks,
                    stacked: false,
                    half: true,
                });
            }
            return units;
        }
        while units.len() < self.parallel {
            let mut tasks = Vec::new();
            while tasks.len() < self.max_batch {
                match self.line.front() {
                    Some(Entry::Fresh(t)) => {
                        tasks.push(t.clone());
                        self.line.pop_front();
                    }
                    _ => break,
                }
            }
            if tasks.is_empty() {
                break;
            }
            let stacked = !units.is_empty();
            units.push(Unit {
                tasks,
                stacked,
                half: false,
            });
        }
        units
    }

    /// Puts a round's batches back, unchecked (integration moved under them, or the
    /// merger stops): their tasks go back to the front of the line in their order.
    pub(super) fn put_back(&mut self, units: &[Unit]) {
        for unit in units.iter().rev() {
            if unit.half {
                self.line.push_front(Entry::Half(unit.tasks.clone()));
            } else {
                for t in unit.tasks.iter().rev() {
                    self.line.push_front(Entry::Fresh(t.clone()));
                }
            }
        }
    }

    /// What the verdicts of `units` (the last round) decide; the line gets the batches to
    /// check again: halves of each failing batch first, then what must be checked again
    /// on what was published.
    pub(super) fn resolve(&mut self, units: &[Unit], verdicts: &[UnitVerdict]) -> Resolution {
        let mut resolution = Resolution::default();
        let mut front: Vec<Entry> = Vec::new();
        let mut again: Vec<Entry> = Vec::new();
        if units.iter().any(|u| u.half) {
            // Each on the tip: the first that passes is published; the others that pass
            // were checked without it and are checked again on top of it.
            for (i, (unit, verdict)) in units.iter().zip(verdicts).enumerate() {
                match verdict {
                    UnitVerdict::Passed if resolution.publish.is_empty() => {
                        resolution.publish.push(i)
                    }
                    UnitVerdict::Passed | UnitVerdict::Stopped => {
                        again.extend(unit.tasks.iter().cloned().map(Entry::Fresh))
                    }
                    UnitVerdict::Failed => self.failed(unit, &mut front, &mut resolution),
                }
            }
        } else {
            // A stack: published as far as it passes in order; the first failure is
            // bisected, and what was built on it is checked again.
            let mut broken = false;
            for (i, (unit, verdict)) in units.iter().zip(verdicts).enumerate() {
                match verdict {
                    UnitVerdict::Passed if !broken => resolution.publish.push(i),
                    UnitVerdict::Failed if !broken => {
                        broken = true;
                        self.failed(unit, &mut front, &mut resolution);
                    }
                    _ => {
                        broken = true;
                        again.extend(unit.tasks.iter().cloned().map(Entry::Fresh));
                    }
                }
            }
        }
        for e in front.into_iter().chain(again).rev() {
            self.line.push_front(e);
        }
        resolution
    }

    fn failed(&self, unit: &Unit, front: &mut Vec<Entry>, resolution: &mut Resolution) {
        if let [task] = unit.tasks.as_slice() {
            resolution.failed.push(task.clone());
            return;
        }
        let middle = unit.tasks.len().div_ceil(2);
        let (left, right) = unit.tasks.split_at(middle);
        front.push(Entry::Half(left.to_vec()));
        front.push(Entry::Half(right.to_vec()));
    }
}

#[cfg(test)]
mod tests;
