//! `liza merge [<task>]` and the reviewer's merges (specs/git.md *Merge*): the merge queue,
//! drained batch after batch under the integration lock. Each round builds its batches
//! (`merge_batch`), records their candidates, checks them side by side
//! (`merge_round`), and publishes what passed in one compare-and-swap; the schedule
//! (`merge_plan`) decides what is bisected and what is checked again. The state lock is
//! held only for the short transactions; git and the checks run outside it. Interrupted
//! merges are recovered first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use serde::Serialize;

use super::integration_lock::IntegrationLock;
use super::merge_batch::{LeftOut, Member, Merged, build, first_lost};
use super::merge_checks::Verdict;
use super::merge_outcome::{Committed, drift, finish_merged, short};
use super::merge_plan::{Decision, Schedule, Unit, UnitVerdict};
use super::merge_recovery::{Recovery, recover_locked};
use super::merge_round::{Checked, Stopper, check};
use super::merger::{pid_alive, this_merger};
use super::task_lock::TaskLock;
use super::{OpsError, Project, Transition, still_current, supervisor_only};
use crate::blackboard::model::{CommitId, FailureKind, State, TaskStatus};
use crate::blackboard::{Actor, TaskId};
use crate::error::{Diagnostic, ErrorClass};
use crate::failpoint;
use crate::git::{GitError, Published, Repo, SavedWork, integration_worktree_dir, task_branch};
use crate::lifecycle::{self, MergeFailure, MergeRecord, Merger, RuleId};

pub use super::merge_outcome::MergeResult;

/// How many times a task goes back to be built on a new tip when integration moved under
/// its batch before it gives up.
pub const PUBLISH_RETRIES: u32 = 3;

/// Whether a merger waits for another that holds the integration lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeWait {
    /// Wait, then merge (a person's `liza merge`).
    Wait,
    /// Leave the queue to the merger at work (a reviewer's supervisor: it reviews
    /// meanwhile).
    Leave,
}

/// What `liza merge` did.
#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    /// The task asked for, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// How the task asked for ended (or stands).
    #[serde(flatten)]
    pub result: Option<MergeResult>,
    /// Every task whose merge this merger ended, in the order they ended.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskMerge>,
    /// Tasks left in the queue by this merger, and why: each is still APPROVED.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<PassedOver>,
    /// Interrupted merges finished or dropped first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recovered: Vec<Recovery>,
    /// Files the task's worktree still held, saved before its removal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved: Option<SavedWork>,
}

/// A task this merger left in the queue.
#[derive(Debug, Clone, Serialize)]
pub struct PassedOver {
    /// The task.
    pub task: TaskId,
    /// Why it was not merged now (its task lock busy, another merger has it, it
    /// cannot be merged as it stands).
    pub reason: String,
}

/// One task's merge, as this merger ended it.
#[derive(Debug, Clone, Serialize)]
pub struct TaskMerge {
    /// The task.
    pub task: TaskId,
    /// How it ended.
    #[serde(flatten)]
    pub result: MergeResult,
}

/// `merge [<task>]`: people and scripts on the CLI (agents refused), or a supervisor.
/// Drains the queue until `target` has left APPROVED, or until it is empty.
pub fn merge(
    project: &Project,
    actor: &Actor,
    target: Option<&TaskId>,
    wait: MergeWait,
    progress: &mut dyn FnMut(&str),
) -> Result<Transition<MergeReport>, OpsError> {
    supervisor_only(actor, "merge")?;
    let snapshot = project.store.snapshot()?;
    if let Some(id) = target {
        refuse_unless_queued(&snapshot.state, id)?;
    }
    let integration = snapshot.state.config.integration_branch().to_owned();
    let repo = Repo::open(&project.root)?;
    refuse_checked_out(&repo, &integration)?;
    // Checks run sandboxed (specs/sandbox.md *Checks*): where `required` cannot be met,
    // the merge is refused before it records anything.
    crate::sandbox::Confinement::for_process(&snapshot.state.config.sandbox())
        .map_err(|e| OpsError::refused(RuleId::SandboxRequired, e.to_string(), e.fix.clone()))?;
    let holder = target
        .cloned()
        .unwrap_or_else(|| TaskId::parse("queue").expect("a valid id"));
    let dir = integration_worktree_dir(&project.root);
    let mut committed = Committed::default();
    let mut drain = Drain::new(project, actor, &repo, &integration, target);
    loop {
        let lock = match wait {
            MergeWait::Wait => Some(IntegrationLock::acquire(
                &project.store,
                &holder,
                &dir,
                progress,
            )?),
            MergeWait::Leave => IntegrationLock::try_acquire(&project.store, &holder, &dir)?,
        };
        let Some(mut lock) = lock else {
            // The merger at work takes this task too: it drains until the queue is empty
            // and looks again after it lets the lock go.
            progress("another merge is running; it merges the queue");
            break;
        };
        let recovered = recover_locked(project, actor, &repo, &integration, None, &mut committed)?;
        drain.recovered.extend(recovered);
        let drained = drain.run(&mut lock, &mut committed, progress);
        // Tasks still in the line (left for later, or stopped by an error) keep no
        // intent of a merge that is over.
        drain.drop_intents(&mut committed);
        drop(lock);
        drained?;
        // Anything approved while the lock was held and not taken is merged now, by this
        // merger or by the one that holds the lock by then.
        if drain.done() || !drain.more_waiting()? {
            if wait == MergeWait::Wait
                && let Some(id) = target
                && drain.merged_elsewhere(id)
            {
                // Another host's merger has it: its end is waited for, then the queue
                // looked at again.
                progress(&format!(
                    "{id} is being merged on another host; waiting for it"
                ));
                drain.wait_for_other_merger(id)?;
                continue;
            }
            break;
        }
    }
    drain.report(committed)
}

/// A task that cannot be merged as asked: not APPROVED.
fn refuse_unless_queued(state: &State, id: &TaskId) -> Result<(), OpsError> {
    let Some(task) = state.task(id) else {
        return Err(OpsError::refused(
            RuleId::TaskExists,
            format!("there is no task {id}"),
            "`liza status` lists the tasks",
        ));
    };
    if task.status != TaskStatus::Approved {
        lifecycle::table::row(
            lifecycle::Command::Merge,
            Some(task.status),
            lifecycle::Kind::Supervisor,
        )?;
    }
    Ok(())
}

/// A batch in flight: what was merged into it, and how to stop its checks.
struct InFlight {
    /// Its integration worktree.
    #[allow(dead_code)]
    slot: usize,
    /// What it was built on: the tip, or the last commit of the batch under it.
    base: CommitId,
    /// Its last merge commit: what integration moves to when it is published.
    last: CommitId,
    merged: Vec<Merged>,
    stopper: Stopper,
    /// Its check log, once it ended.
    log: Option<String>,
    /// The check that failed, and how.
    reason: Option<String>,
}

/// What carrying out a decision came to.
enum Carried {
    Done,
    /// Integration moved under the publish of a batch: what was merged into it.
    Moved(Vec<Merged>),
}

/// What a check's thread tells the merger.
enum Message {
    Progress(String),
    Ended {
        id: u64,
        slot: usize,
        outcome: Result<(Verdict, Option<String>), OpsError>,
    },
}

/// A task admitted to the line: what its merge needs.
struct Admitted {
    member: Member,
    base_commit: Option<CommitId>,
    allow_protected: Vec<String>,
    _lock: TaskLock,
}

/// One merger's work on the queue.
struct Drain<'a> {
    project: &'a Project,
    actor: &'a Actor,
    repo: &'a Repo,
    integration: &'a str,
    target: Option<&'a TaskId>,
    schedule: Schedule,
    admitted: BTreeMap<TaskId, Admitted>,
    /// Tasks passed over in this drain (their task lock was busy, or they cannot be
    /// merged): not taken again by it.
    passed_over: BTreeMap<TaskId, String>,
    retries: BTreeMap<TaskId, u32>,
    ended: Vec<TaskMerge>,
    recovered: Vec<Recovery>,
    saved: Option<SavedWork>,
    /// An error that concerns the target alone (it cannot be merged).
    target_error: Option<OpsError>,
    /// This process, as it names itself in the intents it records.
    merger: Merger,
    /// Tasks another host's merger has (their intent says so).
    elsewhere: Vec<TaskId>,
    /// When the intents of the tasks in flight were last renewed (or first recorded).
    intents_renewed: Option<crate::blackboard::Timestamp>,
}

impl<'a> Drain<'a> {
    fn new(
        project: &'a Project,
        actor: &'a Actor,
        repo: &'a Repo,
        integration: &'a str,
        target: Option<&'a TaskId>,
    ) -> Drain<'a> {
        Drain {
            project,
            actor,
            repo,
            integration,
            target,
            schedule: Schedule::new(8, 2),
            admitted: BTreeMap::new(),
            passed_over: BTreeMap::new(),
            retries: BTreeMap::new(),
            ended: Vec::new(),
            recovered: Vec::new(),
            saved: None,
            target_error: None,
            merger: this_merger(project),
            elsewhere: Vec::new(),
            intents_renewed: None,
        }
    }

    /// Whether the task asked for has left the queue (or could not be merged).
    fn done(&self) -> bool {
        self.target.is_some_and(|t| {
            self.ended.iter().any(|e| &e.task == t) || self.passed_over.contains_key(t)
        })
    }

    /// Whether `id` was passed over because another host's merger has it.
    fn merged_elsewhere(&self, id: &TaskId) -> bool {
        self.elsewhere.contains(id)
    }

    /// Waits until `id` leaves APPROVED, or its other merger's intent is gone; then it is
    /// this drain's to take again.
    fn wait_for_other_merger(&mut self, id: &TaskId) -> Result<(), OpsError> {
        loop {
            let snapshot = self.project.store.snapshot()?;
            let Some(task) = snapshot.state.task(id) else {
                break;
            };
            let at_work = task.merge_intent.as_ref().is_some_and(|i| {
                self.merger
                    .other_at_work(i, crate::blackboard::Timestamp::now(), pid_alive)
            });
            if task.status != TaskStatus::Approved || !at_work {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        self.passed_over.remove(id);
        self.elsewhere.retain(|t| t != id);
        self.target_error = None;
        Ok(())
    }

    /// Whether the queue holds a task this drain has not taken yet.
    fn more_waiting(&self) -> Result<bool, OpsError> {
        let snapshot = self.project.store.snapshot()?;
        Ok(lifecycle::merge_queue(&snapshot.state)
            .iter()
            .any(|id| !self.passed_over.contains_key(id)))
    }

    /// Drains the queue until it is empty (or the target's merge ended): batches start
    /// as soon as a slot is free — a new approval is built on the batch in flight —, and
    /// each check's end is settled as it comes.
    fn run(
        &mut self,
        lock: &mut IntegrationLock,
        committed: &mut Committed,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(), OpsError> {
        let lock = Mutex::new(lock);
        let root = self.project.root.clone();
        std::thread::scope(|scope| {
            let (send, receive) = mpsc::channel::<Message>();
            let mut flights: BTreeMap<u64, InFlight> = BTreeMap::new();
            let mut busy: BTreeSet<usize> = BTreeSet::new();
            let mut tip: Option<CommitId> = None;
            let drained = (|| -> Result<(), OpsError> {
                loop {
                    let snapshot = self.project.store.snapshot()?;
                    let state = &snapshot.state;
                    self.schedule
                        .configure(state.config.max_batch(), state.config.parallel_batches());
                    if !self.done() {
                        self.admit(state, committed, progress)?;
                    }
                    let gone: Vec<TaskId> = self
                        .schedule
                        .tasks()
                        .into_iter()
                        .filter(|id| {
                            state
                                .task(id)
                                .is_none_or(|t| t.status != TaskStatus::Approved)
                        })
                        .collect();
                    for id in gone {
                        self.forget(&id, "it left APPROVED meanwhile".into());
                    }
                    if self.done() && !self.schedule.flying() || self.schedule.is_empty() {
                        return Ok(());
                    }
                    while !self.done() {
                        if !self.schedule.flying() || tip.is_none() {
                            tip = Some(self.integration_tip(state)?);
                        }
                        let Some((id, unit)) = self.schedule.start() else {
                            break;
                        };
                        let current = tip.clone().unwrap_or_else(|| unreachable!());
                        let slot = (0..).find(|s| !busy.contains(s)).unwrap_or(0);
                        let Some(flight) = self.launch(
                            id, &unit, slot, &current, &flights, state, committed, progress,
                        )?
                        else {
                            continue;
                        };
                        let job = Checked {
                            slot,
                            tasks: flight.merged.iter().map(|m| m.task.clone()).collect(),
                            base: flight.base.clone(),
                            candidate: flight.last.clone(),
                            allow_protected: flight
                                .merged
                                .iter()
                                .filter_map(|m| {
                                    self.admitted
                                        .get(&m.task)
                                        .map(|a| a.allow_protected.clone())
                                })
                                .collect(),
                        };
                        let checks = state.config.checks.clone().unwrap_or_default();
                        let sandbox = state.config.sandbox();
                        let (stopper, send, lock, root) =
                            (flight.stopper.clone(), send.clone(), &lock, &root);
                        busy.insert(slot);
                        flights.insert(id, flight);
                        scope.spawn(move || {
                            let say = |line: &str| {
                                let _ = send.send(Message::Progress(line.to_owned()));
                            };
                            let outcome =
                                check(root, &job, &checks, &sandbox, &stopper, lock, &say);
                            let _ = send.send(Message::Ended { id, slot, outcome });
                        });
                    }
                    if flights.is_empty() {
                        continue;
                    }
                    self.renew_intents_when_due(&flights, committed);
                    // A check's end, or a look at the queue for new approvals.
                    match receive.recv_timeout(Duration::from_millis(200)) {
                        Ok(Message::Progress(line)) => progress(&line),
                        Ok(Message::Ended { id, slot, outcome }) => {
                            busy.remove(&slot);
                            let Some(flight) = flights.get_mut(&id) else {
                                continue;
                            };
                            let verdict = match outcome {
                                Ok((verdict, log)) => {
                                    flight.log = log;
                                    match verdict {
                                        Verdict::Passed => UnitVerdict::Passed,
                                        Verdict::Stopped => UnitVerdict::Stopped,
                                        Verdict::Failed { reason } => {
                                            flight.reason = Some(reason);
                                            UnitVerdict::Failed
                                        }
                                    }
                                }
                                Err(e) => return Err(e),
                            };
                            // Once integration moved under a publish, the batches to be
                            // published after it were built on what is no longer the
                            // tip: they go back in the line behind it, in order.
                            // A verdict that failed a task was about the same old
                            // tip: it is checked again as well.
                            let mut moved: Option<Vec<Vec<Merged>>> = None;
                            let mut carried = Ok(());
                            for decision in self.schedule.finished(id, verdict) {
                                if let (
                                    Some(behind),
                                    Decision::Publish(next) | Decision::Failed(next, _),
                                ) = (moved.as_mut(), &decision)
                                {
                                    if let Some(flight) = flights.remove(next) {
                                        behind.push(flight.merged);
                                    }
                                    continue;
                                }
                                match self.carry_out(
                                    decision,
                                    &mut flights,
                                    &mut tip,
                                    state,
                                    committed,
                                    progress,
                                ) {
                                    Ok(Carried::Moved(merged)) => moved = Some(vec![merged]),
                                    Ok(Carried::Done) => {}
                                    Err(e) => {
                                        carried = Err(e);
                                        break;
                                    }
                                }
                            }
                            // Put back even when a decision failed: an error ends the
                            // drain, which drops the intents of what is in the line.
                            if let Some(batches) = moved {
                                self.merge_again(batches, &mut flights, committed)?;
                            }
                            carried?;
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => {}
                    }
                }
            })();
            // Whatever ends the drain, no check of it goes on.
            for flight in flights.values() {
                flight.stopper.stop();
            }
            drained
        })
    }

    /// The integration tip, synced with the shared remote, checked to hold what was
    /// merged before anything is published on it.
    fn integration_tip(&self, state: &State) -> Result<CommitId, OpsError> {
        super::shared_git::sync_integration(self.project, self.repo, state)?;
        // Nothing is published on a branch that lost merged work (specs/git.md
        // *Integration keeps what was merged*).
        super::integration_check::refuse_if_rewound(self.project, self.repo, state)?;
        self.repo
            .branch_tip(self.integration)?
            .ok_or_else(|| no_integration(self.integration))
    }

    /// Builds flight `id` on the tip or on the flight under it, and records its
    /// candidates; `None` when none of its tasks is left to check.
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &mut self,
        id: u64,
        unit: &Unit,
        slot: usize,
        tip: &CommitId,
        flights: &BTreeMap<u64, InFlight>,
        state: &State,
        committed: &mut Committed,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Option<InFlight>, OpsError> {
        // A stacked batch goes on the top flight; what the stack holds is verified again
        // at each of its merges.
        let (base, below): (CommitId, Vec<Merged>) = match flights.values().last() {
            Some(top) if unit.stacked => (
                top.last.clone(),
                flights
                    .values()
                    .flat_map(|f| f.merged.iter().cloned())
                    .collect(),
            ),
            _ => (tip.clone(), Vec::new()),
        };
        let members: Vec<Member> = unit
            .tasks
            .iter()
            .filter_map(|t| self.admitted.get(t).map(|a| a.member.clone()))
            .collect();
        progress(&format!(
            "merging {} onto {}{}",
            names(&unit.tasks),
            if unit.stacked {
                "the batch in flight at "
            } else {
                ""
            },
            short(base.as_str())
        ));
        let built = build(self.repo, &base, &members, &below);
        let (merged, left) = match built {
            Ok(built) => built,
            Err(e) => {
                self.schedule.abort(id);
                return Err(e.into());
            }
        };
        self.schedule
            .built(id, merged.iter().map(|m| m.task.clone()).collect());
        for out in left {
            self.left_out(out, committed)?;
        }
        if merged.is_empty() {
            return Ok(None);
        }
        // The candidates, before any check runs: a crash from here on is recovered by
        // what integration holds (specs/git.md *A batch*, crash safety).
        let merger = self.merger.clone();
        let recorded = committed.run(self.project, self.actor, |s, now| {
            let mut outcome = lifecycle::Outcome::default();
            for m in &merged {
                if s.task(&m.task).is_some_and(|t| t.merge_intent.is_none()) {
                    let (o, _) = lifecycle::begin_merge(
                        s,
                        &m.task,
                        &m.approved,
                        &m.base,
                        &merger,
                        &pid_alive,
                        now,
                    )?;
                    outcome.merge(o);
                }
                outcome.merge(lifecycle::set_merge_candidate(
                    s, &m.task, &m.commit, &m.base, &merger, &pid_alive, now,
                )?);
            }
            Ok(outcome)
        });
        if let Err(e) = recorded {
            // Another host's merger took a task since the snapshot, or a task left
            // APPROVED: the flight is built again without what is no longer this
            // merger's.
            self.schedule.abort(id);
            if e.class() != ErrorClass::Refused {
                return Err(e);
            }
            let tasks: Vec<TaskId> = merged.iter().map(|m| m.task.clone()).collect();
            self.forget_taken(&tasks)?;
            // Refused for another reason (a superseded registration, a review_commit
            // edited by hand, a blackboard the change would make invalid): building the
            // same flight again would be refused again. The drain stops, saying why.
            if tasks.iter().all(|t| !self.passed_over.contains_key(t)) {
                return Err(e);
            }
            return Ok(None);
        }
        let _ = state;
        let last = merged
            .last()
            .map_or_else(|| base.clone(), |m| m.commit.clone());
        Ok(Some(InFlight {
            slot,
            base,
            last,
            merged,
            stopper: Stopper::default(),
            log: None,
            reason: None,
        }))
    }

    /// Carries out what the schedule decided when a check ended.
    fn carry_out(
        &mut self,
        decision: Decision,
        flights: &mut BTreeMap<u64, InFlight>,
        tip: &mut Option<CommitId>,
        state: &State,
        committed: &mut Committed,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Carried, OpsError> {
        match decision {
            Decision::Stop(id) => {
                if let Some(flight) = flights.remove(&id) {
                    flight.stopper.stop();
                }
            }
            Decision::Done(id) => {
                flights.remove(&id);
            }
            Decision::Failed(id, task) => {
                let flight = flights.remove(&id);
                let failure = MergeFailure {
                    kind: FailureKind::Tests,
                    paths: Vec::new(),
                    log: flight.as_ref().and_then(|f| f.log.clone()),
                    reason: flight.and_then(|f| f.reason).unwrap_or_default(),
                };
                self.fail(&task, failure, committed)?;
            }
            Decision::Publish(id) => {
                let Some(flight) = flights.remove(&id) else {
                    return Ok(Carried::Done);
                };
                let from = flight.base.clone();
                // Nothing lost: every change about to be published is at the commit
                // published (each merge was verified as it was built; this is the last
                // word before integration moves).
                if let Some((lost, paths)) =
                    first_lost(self.repo, flight.merged.iter(), &flight.last)?
                {
                    return Err(OpsError::refused(
                        RuleId::MergeIntent,
                        format!(
                            "the change of {lost} is not at {} in {}; nothing was published",
                            short(flight.last.as_str()),
                            paths.join(", ")
                        ),
                        "run `liza merge` again",
                    ));
                }
                failpoint::hit("merge-before-publish");
                still_current(&self.project.store, self.actor)?;
                // A drain may run for hours: a person may have checked integration out
                // since it started.
                refuse_checked_out(self.repo, self.integration)?;
                let tasks: Vec<TaskId> = flight.merged.iter().map(|m| m.task.clone()).collect();
                let reason = format!("liza: merge {}", names(&tasks));
                let outcome = waiting_for_git_locks(state, progress, || {
                    super::shared_git::publish(
                        self.project,
                        self.repo,
                        state,
                        from.as_str(),
                        flight.last.as_str(),
                        &reason,
                    )
                })?;
                match outcome {
                    Published::Done => {
                        failpoint::hit("merge-after-publish");
                        *tip = Some(flight.last.clone());
                        let batch = flight.merged.len();
                        for m in &flight.merged {
                            self.record_merged(m, batch, committed)?;
                        }
                    }
                    Published::Moved { tip: moved } => {
                        let Some(moved) = moved else {
                            return Err(no_integration(self.integration));
                        };
                        progress(&format!(
                            "{} moved to {} during the merge; merging again",
                            self.integration,
                            short(moved.as_str())
                        ));
                        *tip = None;
                        return Ok(Carried::Moved(flight.merged));
                    }
                }
            }
        }
        Ok(Carried::Done)
    }

    /// Integration moved under the publish of `batches` (in queue order): they, and
    /// every batch in flight (built on what is no longer the tip), go back to the front
    /// of the line in order; a task that saw integration move more than
    /// [`PUBLISH_RETRIES`] times fails.
    fn merge_again(
        &mut self,
        batches: Vec<Vec<Merged>>,
        flights: &mut BTreeMap<u64, InFlight>,
        committed: &mut Committed,
    ) -> Result<(), OpsError> {
        let mut again: Vec<Merged> = batches.iter().flatten().cloned().collect();
        for d in self.schedule.integration_moved() {
            if let Decision::Stop(other) = d
                && let Some(f) = flights.remove(&other)
            {
                f.stopper.stop();
                again.extend(f.merged);
            }
        }
        let units: Vec<Unit> = batches
            .iter()
            .map(|merged| Unit {
                tasks: merged.iter().map(|m| m.task.clone()).collect(),
                stacked: false,
                half: false,
            })
            .collect();
        self.schedule.put_back(&units);
        for m in &again {
            let n = self.retries.entry(m.task.clone()).or_default();
            *n += 1;
            if *n > PUBLISH_RETRIES {
                let failure = MergeFailure {
                    kind: FailureKind::Conflict,
                    paths: Vec::new(),
                    log: None,
                    reason: format!(
                        "{} moved {n} times while the merge was checked; nothing was published",
                        self.integration
                    ),
                };
                self.fail(&m.task, failure, committed)?;
            }
        }
        Ok(())
    }

    /// Takes the queue's new tasks into the line, each under its task lock, after
    /// checking its branch still points at what was approved.
    fn admit(
        &mut self,
        state: &State,
        committed: &mut Committed,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(), OpsError> {
        for id in lifecycle::merge_queue(state) {
            if self.admitted.contains_key(&id) || self.passed_over.contains_key(&id) {
                continue;
            }
            let lock = match TaskLock::try_acquire(&self.project.store, &id) {
                Ok(lock) => lock,
                Err(OpsError::TaskBusy { .. }) => {
                    self.pass_over(
                        &id,
                        OpsError::TaskBusy {
                            task: id.to_string(),
                        },
                    );
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(task) = state.task(&id) else {
                continue;
            };
            let Some(review) = task.review_commit.clone() else {
                self.pass_over(
                    &id,
                    OpsError::refused(
                        RuleId::ReviewCommit,
                        format!("task {id} is APPROVED but has no review_commit to merge"),
                        "a reviewer approves a specific commit; reassign the task or set review_commit by hand",
                    ),
                );
                continue;
            };
            // The approved commit may have been made on another host.
            super::shared_git::sync_task(self.project, self.repo, state, &id)?;
            let tip = self.repo.branch_tip(self.integration)?;
            let tip = tip.as_ref().map_or("", CommitId::as_str);
            match approved_commit(self.repo, &id, review.as_str(), tip, committed) {
                Ok(Branch::Approved(approved)) => {
                    let message = format!(
                        "Merge {}: {}",
                        task_branch(&id),
                        task.description
                            .as_deref()
                            .unwrap_or("")
                            .lines()
                            .next()
                            .unwrap_or("")
                            .trim()
                    );
                    self.admitted.insert(
                        id.clone(),
                        Admitted {
                            member: Member {
                                task: id.clone(),
                                approved,
                                message,
                            },
                            base_commit: task.base_commit.clone(),
                            allow_protected: task.allow_protected.clone().unwrap_or_default(),
                            _lock: lock,
                        },
                    );
                    self.schedule.push(id.clone());
                }
                Ok(Branch::Moved { head }) => {
                    progress(&format!(
                        "{} moved after its approval; {id} goes back to review",
                        task_branch(&id)
                    ));
                    let reason = committed.run(self.project, self.actor, |s, now| {
                        lifecycle::withdraw_approval(s, &id, &head, now)
                    });
                    reason?;
                    let reason = format!(
                        "{} moved from the approved {} to {} after the approval; it goes back to review",
                        task_branch(&id),
                        short(review.as_str()),
                        short(head.as_str())
                    );
                    self.end(&id, MergeResult::Withdrawn { reason });
                }
                Err(e) => self.pass_over(&id, e),
            }
        }
        Ok(())
    }

    fn pass_over(&mut self, id: &TaskId, why: OpsError) {
        self.passed_over.insert(id.clone(), why.to_string());
        if self.target == Some(id) {
            self.target_error = Some(why);
        }
    }

    fn end(&mut self, id: &TaskId, result: MergeResult) {
        self.admitted.remove(id);
        self.schedule.remove(id);
        self.ended.push(TaskMerge {
            task: id.clone(),
            result,
        });
    }

    /// Takes out of the line the tasks of `ids` that left APPROVED or that another host's
    /// merger has now.
    fn forget_taken(&mut self, ids: &[TaskId]) -> Result<(), OpsError> {
        let snapshot = self.project.store.snapshot()?;
        let now = crate::blackboard::Timestamp::now();
        for id in ids {
            let Some(task) = snapshot.state.task(id) else {
                self.forget(id, "it is gone from the blackboard".into());
                continue;
            };
            if task.status != TaskStatus::Approved {
                self.forget(id, format!("it is {} now", task.status));
            } else if let Some(intent) = &task.merge_intent
                && self.merger.other_at_work(intent, now, pid_alive)
            {
                self.elsewhere.push(id.clone());
                self.forget(
                    id,
                    format!(
                        "it is being merged by {}",
                        intent.merger.as_deref().unwrap_or("another merger")
                    ),
                );
            }
        }
        Ok(())
    }

    fn forget(&mut self, id: &TaskId, why: String) {
        self.admitted.remove(id);
        self.schedule.remove(id);
        self.passed_over.insert(id.clone(), why);
    }

    /// A task left out of its batch while it was built.
    fn left_out(&mut self, out: LeftOut, committed: &mut Committed) -> Result<(), OpsError> {
        match out {
            LeftOut::Conflict { task, paths } => {
                let reason = format!(
                    "conflicts with {} in {}",
                    self.integration,
                    paths.join(", ")
                );
                let failure = MergeFailure {
                    kind: FailureKind::Conflict,
                    paths,
                    log: None,
                    reason,
                };
                self.fail(&task, failure, committed)
            }
            LeftOut::Loses { task, lost, paths } => {
                let whose = if lost == task {
                    "its own change".to_owned()
                } else {
                    format!("the change of {lost}, merged before it")
                };
                let failure = MergeFailure {
                    kind: FailureKind::Conflict,
                    reason: format!(
                        "merging it would lose {whose} in {}: its branch undoes or rewrites it",
                        paths.join(", ")
                    ),
                    paths,
                    log: None,
                };
                self.fail(&task, failure, committed)
            }
            LeftOut::NothingReaches { task } => {
                let integration = self.integration;
                committed.run(self.project, self.actor, |s, now| {
                    if s.task(&task).is_some_and(|t| t.merge_intent.is_some()) {
                        lifecycle::drop_merge_intent(
                            s,
                            &task,
                            "nothing of it reaches integration",
                            now,
                        )?;
                    }
                    lifecycle::nothing_to_merge(s, &task, integration, now)
                })?;
                self.end(&task, MergeResult::NothingToMerge);
                Ok(())
            }
        }
    }

    fn fail(
        &mut self,
        id: &TaskId,
        failure: MergeFailure,
        committed: &mut Committed,
    ) -> Result<(), OpsError> {
        committed.run(self.project, self.actor, |s, now| {
            lifecycle::integration_failed(s, id, &failure, now)
        })?;
        self.end(
            id,
            MergeResult::IntegrationFailed {
                kind: failure.kind.as_str().to_owned(),
                paths: failure.paths.clone(),
                log: failure.log.clone(),
                reason: failure.reason.clone(),
            },
        );
        Ok(())
    }

    fn record_merged(
        &mut self,
        m: &Merged,
        batch: usize,
        committed: &mut Committed,
    ) -> Result<(), OpsError> {
        let base = self
            .admitted
            .get(&m.task)
            .and_then(|a| a.base_commit.clone());
        let record = MergeRecord {
            commit: m.commit.clone(),
            merge_type: m.merge_type.to_owned(),
            drift_commits: drift(self.repo, base.as_ref(), m.onto.as_str()),
            retries: self.retries.get(&m.task).copied().unwrap_or(0),
            batch,
        };
        let saved = finish_merged(
            self.project,
            self.actor,
            self.repo,
            self.integration,
            &m.task,
            &record,
            committed,
        )?;
        if self.target == Some(&m.task) {
            self.saved = saved;
        }
        self.end(
            &m.task,
            MergeResult::Merged {
                merge_commit: record.commit.to_string(),
                merge_type: record.merge_type,
                drift_commits: record.drift_commits,
                retries: record.retries,
            },
        );
        Ok(())
    }

    /// While checks run, the intents of the tasks in flight and in the line are renewed every
    /// [`lifecycle::INTENT_RENEWED_EVERY`]: a check may outlast
    /// [`lifecycle::FOREIGN_INTENT_LIVES`], after which another host's merger would take
    /// this one for dead. A renewal that fails is tried again at the next look.
    fn renew_intents_when_due(
        &mut self,
        flights: &BTreeMap<u64, InFlight>,
        committed: &mut Committed,
    ) {
        let now = crate::blackboard::Timestamp::now();
        let due = self
            .intents_renewed
            .is_none_or(|at| now.seconds_since(at) >= lifecycle::INTENT_RENEWED_EVERY);
        if !due {
            return;
        }
        if self.intents_renewed.is_none() {
            // Recorded as the flights were built.
            self.intents_renewed = Some(now);
            return;
        }
        // The tasks waiting in the line hold the intents recorded when they last flew.
        let mut tasks: Vec<TaskId> = flights
            .values()
            .flat_map(|f| f.merged.iter().map(|m| m.task.clone()))
            .collect();
        tasks.extend(self.schedule.all_tasks());
        tasks.sort();
        tasks.dedup();
        let merger = self.merger.clone();
        match committed.run(self.project, self.actor, |s, now| {
            Ok(lifecycle::renew_merge_intents(s, &tasks, &merger, now))
        }) {
            Ok(_) => self.intents_renewed = Some(now),
            Err(e) => tracing::warn!(error = %e, "could not renew the merge intents; trying again"),
        }
    }

    /// After an error: the intents of tasks still in the line are dropped (they stay
    /// APPROVED, in the queue).
    fn drop_intents(&mut self, committed: &mut Committed) {
        let me = self.merger.name();
        for id in self.schedule.all_tasks() {
            let dropped = committed.run(self.project, self.actor, |s, now| {
                // Only this merger's own: another's intent is its claim on the task.
                let own = s
                    .task(&id)
                    .and_then(|t| t.merge_intent.as_ref())
                    .is_some_and(|i| i.merger.as_deref().is_none_or(|m| m == me));
                if own {
                    lifecycle::drop_merge_intent(s, &id, "merge stopped", now)
                } else {
                    Ok(lifecycle::Outcome::default())
                }
            });
            if let Err(e) = dropped {
                tracing::warn!(task = %id, error = %e, "could not drop the merge intent; the next merge recovers it");
            }
        }
    }

    fn report(mut self, committed: Committed) -> Result<Transition<MergeReport>, OpsError> {
        let result = match self.target {
            None => None,
            Some(id) => {
                if let Some(e) = self.target_error.take() {
                    return Err(e);
                }
                match self.ended.iter().find(|e| &e.task == id) {
                    Some(e) => Some(e.result.clone()),
                    None => Some(standing(self.project, id)?),
                }
            }
        };
        // Only those still waiting: another merger may have ended one meanwhile.
        let queue = lifecycle::merge_queue(&self.project.store.snapshot()?.state);
        let passed_over = std::mem::take(&mut self.passed_over)
            .into_iter()
            .filter(|(task, _)| queue.contains(task) && !self.ended.iter().any(|e| &e.task == task))
            .map(|(task, reason)| PassedOver { task, reason })
            .collect();
        Ok(Transition {
            value: MergeReport {
                task: self.target.cloned(),
                result,
                tasks: self.ended,
                passed_over,
                recovered: self.recovered,
                saved: self.saved,
            },
            outcome: committed.outcome,
            revision: committed.revision,
        })
    }
}

/// How a task this merger did not end stands: merged by another merger, or still queued.
fn standing(project: &Project, id: &TaskId) -> Result<MergeResult, OpsError> {
    let snapshot = project.store.snapshot()?;
    let Some(task) = snapshot.state.task(id) else {
        return Ok(MergeResult::Queued);
    };
    match task.status {
        TaskStatus::Merged => super::merge_recovery::merged_result(
            project,
            id,
            task.merge_commit.as_ref().map_or("", CommitId::as_str),
        ),
        TaskStatus::IntegrationFailed => {
            let f = task.integration_failure.as_ref();
            Ok(MergeResult::IntegrationFailed {
                kind: f.map_or("tests", |f| f.kind.as_str()).to_owned(),
                paths: f.and_then(|f| f.paths.clone()).unwrap_or_default(),
                log: f.and_then(|f| f.log.clone()),
                reason: f
                    .and_then(|f| f.extra.get("reason"))
                    .and_then(|n| n.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            })
        }
        TaskStatus::Blocked => Ok(MergeResult::NothingToMerge),
        TaskStatus::ReadyForReview => Ok(MergeResult::Withdrawn {
            reason: "its branch moved after the approval; it went back to review".into(),
        }),
        _ => Ok(MergeResult::Queued),
    }
}

fn names(tasks: &[TaskId]) -> String {
    match tasks {
        [one] => task_branch(one),
        many => format!(
            "{} tasks ({})",
            many.len(),
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Where a task branch stands against the approval.
enum Branch {
    Approved(CommitId),
    /// It moved after the approval: the task goes back to review.
    Moved {
        head: CommitId,
    },
}

/// The approved commit, after checking the task branch still points at it. A branch
/// deleted by hand is recreated at the approved commit (nothing was lost).
fn approved_commit(
    repo: &Repo,
    id: &TaskId,
    review: &str,
    integration_tip: &str,
    committed: &mut Committed,
) -> Result<Branch, OpsError> {
    let branch = task_branch(id);
    // What the task brings is read by git first: a damaged object fails there with a
    // message, where libgit2 would loop for ever (git::cli::unreadable_object). A commit
    // that is not there at all is said below.
    if let Some(why) = crate::git::cli::unreadable_object(
        &repo.common_dir(),
        review,
        Some(integration_tip).filter(|t| !t.is_empty()),
    ) && !why.contains("bad object")
        && !why.contains("unknown revision")
    {
        return Err(OpsError::Git(GitError::Unreadable {
            spec: review.to_owned(),
            detail: why,
        }));
    }
    let approved = repo.resolve_commit(review).map_err(|e| {
        if let GitError::DamagedObject { .. } = e {
            return OpsError::Git(e);
        }
        OpsError::refused(
            RuleId::ReviewCommit,
            format!("the approved commit {review} of task {id} is not in the repository"),
            format!(
                "look for the work in {branch} or liza/attic/{id}-*; reassign the task to redo it"
            ),
        )
    })?;
    match repo.branch_tip(&branch)? {
        Some(head) if head == approved => Ok(Branch::Approved(approved)),
        Some(head) => Ok(Branch::Moved { head }),
        None => {
            repo.create_branch(&branch, approved.as_str())?;
            committed.outcome.warnings.push(format!(
                "{branch} was missing; recreated it at the approved commit {}",
                short(approved.as_str())
            ));
            Ok(Branch::Approved(approved))
        }
    }
}

fn no_integration(integration: &str) -> OpsError {
    OpsError::refused(
        RuleId::IntegrationBranch,
        format!("the integration branch {integration} does not exist"),
        format!(
            "recreate it where it was (git reflog show {integration}), or set config.integration_branch"
        ),
    )
}

/// Moving the integration branch under a checkout that has it checked out would change
/// that checkout's files and index — a person's, since liza's own are detached.
fn refuse_checked_out(repo: &Repo, integration: &str) -> Result<(), OpsError> {
    if let Some(path) = repo.checkouts_on_branch(integration).first() {
        return Err(OpsError::refused(
            RuleId::IntegrationCheckedOut,
            format!(
                "{integration} is checked out in {}; liza never moves a branch under someone's checkout",
                path.display()
            ),
            format!(
                "switch that checkout to another branch (git -C {} switch main), then merge again",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Runs `step` again while a lock file of git's is in the way, for up to the lock timeout
/// (specs/git.md *Git's locks*): a live git finishes and takes its lock away; one that
/// died left it, and the error names it with its age and the fix. Never a conflict.
pub(super) fn waiting_for_git_locks<T>(
    state: &State,
    progress: &mut dyn FnMut(&str),
    mut step: impl FnMut() -> Result<T, OpsError>,
) -> Result<T, OpsError> {
    let limit = Duration::from_secs(state.config.lock_timeout().unsigned_abs());
    let started = std::time::Instant::now();
    let mut told = false;
    loop {
        match step() {
            // A lock gone by the time it was looked at (a busy writer) is tried again
            // too, but never past twice the timeout.
            Err(OpsError::Git(GitError::Locked { lock, .. }))
                if started.elapsed() < limit
                    || (!lock.present() && started.elapsed() < limit * 2) =>
            {
                if !told && lock.present() {
                    told = true;
                    progress(&format!(
                        "git's lock {} is in the way; waiting up to {} s",
                        lock.describe(),
                        limit.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            done => return done,
        }
    }
}
