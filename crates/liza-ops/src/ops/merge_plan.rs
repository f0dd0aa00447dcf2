//! The merge queue's schedule (specs/git.md *A batch*), pure: which batches are checked
//! together in a round, on what, and what a round's verdicts mean — what is published,
//! what is bisected, what failed. No git, no blackboard: the merger carries it out.
//!
//! Batches in flight are either a **stack** of fresh batches, each on top of the one
//! before it (the first on the integration tip): speculation, published from the bottom
//! as they pass; or **halves** of failing batches, each on the tip by itself (one of two
//! halves holds the failure, so neither is built on the other): the first that passes is
//! published, and the others that pass are checked again on top of it.

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
    /// The batches in flight, bottom first.
    flights: Vec<Flight>,
    next_id: u64,
    max_batch: usize,
    parallel: usize,
}

/// A batch in flight: checked now, or checked and waiting for those under it.
#[derive(Debug, Clone)]
struct Flight {
    id: u64,
    unit: Unit,
    verdict: Option<UnitVerdict>,
    /// A half beside it was published: it was checked on what is no longer the tip.
    stale: bool,
}

/// What the schedule asks of the merger once a check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decision {
    /// Publish this flight: integration moves to its last commit.
    Publish(u64),
    /// This flight's only task fails the checks: INTEGRATION_FAILED.
    Failed(u64, TaskId),
    /// Stop this flight's checks: what it was built on failed. Its tasks are back in the
    /// line.
    Stop(u64),
    /// This flight ended without a publication (bisected, or back in the line).
    Done(u64),
}

impl Schedule {
    pub(super) fn new(max_batch: usize, parallel: usize) -> Schedule {
        Schedule {
            line: VecDeque::new(),
            flights: Vec::new(),
            next_id: 1,
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

    /// Whether nothing waits and nothing flies.
    pub(super) fn is_empty(&self) -> bool {
        self.line.is_empty() && self.flights.is_empty()
    }

    /// Every task the schedule holds, waiting or in flight.
    pub(super) fn all_tasks(&self) -> Vec<TaskId> {
        let mut all = self.tasks();
        for f in &self.flights {
            all.extend(f.unit.tasks.iter().cloned());
        }
        all
    }

    /// Whether a batch is in flight.
    pub(super) fn flying(&self) -> bool {
        !self.flights.is_empty()
    }

    /// The unit of flight `id`.
    #[cfg(test)]
    pub(super) fn unit(&self, id: u64) -> Option<&Unit> {
        self.flights.iter().find(|f| f.id == id).map(|f| &f.unit)
    }

    /// Starts the next batch, if one may start now: its flight id and unit.
    pub(super) fn start(&mut self) -> Option<(u64, Unit)> {
        let flying: Vec<Unit> = self.flights.iter().map(|f| f.unit.clone()).collect();
        let unit = self.next_unit(&flying)?;
        let id = self.next_id;
        self.next_id += 1;
        self.flights.push(Flight {
            id,
            unit: unit.clone(),
            verdict: None,
            stale: false,
        });
        Some((id, unit))
    }

    /// Flight `id` as it was built: the tasks merged into it (those left out — a
    /// conflict, nothing to merge, a lost change — ended on their own). A flight left
    /// with none is gone.
    pub(super) fn built(&mut self, id: u64, tasks: Vec<TaskId>) {
        if tasks.is_empty() {
            self.flights.retain(|f| f.id != id);
        } else if let Some(f) = self.flights.iter_mut().find(|f| f.id == id) {
            f.unit.tasks = tasks;
        }
    }

    /// Takes back flight `id` before its check started (it could not be built or
    /// recorded): its tasks go back to the front of the line.
    pub(super) fn abort(&mut self, id: u64) {
        if let Some(i) = self.flights.iter().position(|f| f.id == id) {
            let flight = self.flights.remove(i);
            self.put_back(std::slice::from_ref(&flight.unit));
        }
    }

    /// Integration moved under every flight (someone outside liza committed to it): all
    /// stop, their tasks back in the line in order.
    pub(super) fn integration_moved(&mut self) -> Vec<Decision> {
        let flights = std::mem::take(&mut self.flights);
        let units: Vec<Unit> = flights.iter().map(|f| f.unit.clone()).collect();
        self.put_back(&units);
        flights.iter().map(|f| Decision::Stop(f.id)).collect()
    }

    /// Flight `id`'s checks ended with `verdict`: what the merger does now, in order.
    pub(super) fn finished(&mut self, id: u64, verdict: UnitVerdict) -> Vec<Decision> {
        let Some(flight) = self.flights.iter_mut().find(|f| f.id == id) else {
            return Vec::new();
        };
        flight.verdict = Some(verdict);
        let mut decisions = Vec::new();
        if self.flights.iter().any(|f| f.unit.half) {
            // Halves: each settles on its own.
            let done: Vec<Flight> = self
                .flights
                .iter()
                .filter(|f| f.verdict.is_some())
                .cloned()
                .collect();
            self.flights.retain(|f| f.verdict.is_none());
            let mut published = false;
            for f in done {
                let verdict = f.verdict.unwrap_or(UnitVerdict::Stopped);
                match self.settle(&f.unit, verdict, !f.stale && !published) {
                    Settled::Publish => {
                        published = true;
                        for other in &mut self.flights {
                            other.stale = true;
                        }
                        decisions.push(Decision::Publish(f.id));
                    }
                    Settled::Failed(task) => decisions.push(Decision::Failed(f.id, task)),
                    Settled::Bisected | Settled::Again => decisions.push(Decision::Done(f.id)),
                }
            }
            return decisions;
        }
        // A stack: from the bottom, as far as verdicts are in.
        while self.flights.first().is_some_and(|f| f.verdict.is_some()) {
            let bottom = self.flights.remove(0);
            let verdict = bottom.verdict.unwrap_or(UnitVerdict::Stopped);
            if verdict != UnitVerdict::Passed {
                // What was built on it means nothing now: back in the line, behind the
                // halves of the failing batch.
                let above = std::mem::take(&mut self.flights);
                let units: Vec<Unit> = above.iter().map(|f| f.unit.clone()).collect();
                self.put_back(&units);
                decisions.extend(above.iter().map(|f| Decision::Stop(f.id)));
            }
            match self.settle(&bottom.unit, verdict, true) {
                Settled::Publish => decisions.push(Decision::Publish(bottom.id)),
                Settled::Failed(task) => decisions.push(Decision::Failed(bottom.id, task)),
                Settled::Bisected | Settled::Again => decisions.push(Decision::Done(bottom.id)),
            }
        }
        decisions
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

    /// The next batch to start beside `flying` (the batches in flight, bottom first), if
    /// one may: fresh batches stack on the fresh ones in flight (the first on the tip);
    /// halves go beside halves, each on the tip. The two never fly together: a half's
    /// verdict is about the tip, a stack's about what is under it.
    fn next_unit(&mut self, flying: &[Unit]) -> Option<Unit> {
        if flying.len() >= self.parallel {
            return None;
        }
        let halves_flying = flying.iter().any(|u| u.half);
        match self.line.front()? {
            Entry::Half(tasks) if halves_flying || flying.is_empty() => {
                let tasks = tasks.clone();
                self.line.pop_front();
                Some(Unit {
                    tasks,
                    stacked: false,
                    half: true,
                })
            }
            Entry::Fresh(_) if !halves_flying => {
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
                Some(Unit {
                    tasks,
                    stacked: !flying.is_empty(),
                    half: false,
                })
            }
            _ => None,
        }
    }

    /// Puts batches back unsettled (integration moved, a batch under them failed): their
    /// tasks go back to the front of the line in their order; a half stays a half (its
    /// batch failed: one of the halves holds the failure).
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

    /// What the verdict of `unit`, settled once every batch under it is, decides. `valid`:
    /// it was checked on what integration is now (its base was published, or is the tip).
    /// A failing batch's halves go to the front of the line; a batch that passed on what
    /// is no longer the tip is checked again, as a fresh batch.
    fn settle(&mut self, unit: &Unit, verdict: UnitVerdict, valid: bool) -> Settled {
        match verdict {
            UnitVerdict::Passed if valid => Settled::Publish,
            UnitVerdict::Failed if valid || unit.half => {
                if let [task] = unit.tasks.as_slice() {
                    return Settled::Failed(task.clone());
                }
                let middle = unit.tasks.len().div_ceil(2);
                let (left, right) = unit.tasks.split_at(middle);
                self.line.push_front(Entry::Half(right.to_vec()));
                self.line.push_front(Entry::Half(left.to_vec()));
                Settled::Bisected
            }
            _ => {
                for t in unit.tasks.iter().rev() {
                    self.line.push_front(Entry::Fresh(t.clone()));
                }
                Settled::Again
            }
        }
    }
}

/// What a settled batch's verdict decided.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Settled {
    /// Publish it.
    Publish,
    /// Its only task fails the checks: INTEGRATION_FAILED.
    Failed(TaskId),
    /// Split in two halves, at the front of the line.
    Bisected,
    /// Back in the line, to be checked again.
    Again,
}

#[cfg(test)]
mod tests;
