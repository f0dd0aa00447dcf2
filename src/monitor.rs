//! `liza watch` (specs/operations.md *Watch and alarms*, *Metrics*; also run inside the planner
//! supervisor): on every change of the blackboard (file watch) and every 10 s, one cycle —
//! reconcile a hand edit, evaluate every alarm rule and fire the new occurrences
//! (`ops::alarms::fire`, once across processes), checkpoint the sprint at its deadline,
//! run the circuit breaker's analysis, recording it only when its result changed, and
//! archive terminal tasks older than `config.archive_after`.
//! `/metrics` is served from the same tally of log.yaml.

pub mod delivery;
pub mod http;
pub mod metrics;
pub mod rules;
pub mod webhook;

use crate::blackboard::control::Control;
use crate::blackboard::store::changes::Topic;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::blackboard::log_tally::ActivityReader;
use crate::blackboard::model::SprintStatus;
use crate::blackboard::{Actor, State, Timestamp};
use crate::ops::alarms::{self, Alarm, Fired, Level};
use crate::ops::{self, OpsError, Project};
use delivery::{Echo, Outlets};
use metrics::Numbers;

/// The default period of the rule evaluation when nothing changes.
pub const INTERVAL: Duration = Duration::from_secs(10);

/// The watcher that runs beside a planner's supervisor (`supervisor::ports::Beside`),
/// until `stop` is raised; its alarms echo on the supervisor's console.
pub fn beside_planner(
    root: std::path::PathBuf,
    stop: Arc<std::sync::atomic::AtomicBool>,
    console: Arc<dyn crate::supervisor::Console>,
) {
    let echo: Echo = Box::new(move |line| console.info(&format!("alarm: {line}")));
    match Monitor::open(&root, echo) {
        Ok(monitor) => {
            monitor.run(INTERVAL, None, &stop);
        }
        Err(e) => tracing::warn!(error = %e, "the watcher could not start"),
    }
}

/// What one cycle did.
#[derive(Debug, Default)]
pub struct Cycle {
    pub fired: Vec<Fired>,
    /// Why the cycle checkpointed the sprint, when it did.
    pub checkpointed: Option<String>,
}

pub struct Monitor {
    project: Arc<Project>,
    /// Alarms the store raised in this process (hand edits reconciled by a cycle).
    raised_here: Receiver<Fired>,
    reader: Arc<Mutex<ActivityReader>>,
    outlets: Outlets,
    /// The alarm log as this watcher has read it.
    log: AlarmLogSeen,
}

/// The alarm log's lines as one watcher has seen them, and what it knows of each alarm.
#[derive(Default)]
struct AlarmLogSeen {
    /// The keys of the lines seen: any other line is an alarm raised since, by this
    /// watcher or by another process.
    seen: HashSet<String>,
    /// The keys of the alarms this watcher fired (delivered when fired).
    own: HashSet<String>,
    /// Every alarm this watcher's rules produced, by key, whether its line was this
    /// watcher's or another's: another watcher evaluates the same rules, and a line it
    /// wrote first is delivered here with what the line does not say (its task, agent and
    /// revision), whichever watcher wins the delivery.
    evaluated: HashMap<String, Alarm>,
}

impl AlarmLogSeen {
    /// The alarms of `lines` raised elsewhere since the last look, each as this watcher's
    /// rules know it when they produced it, else as its line says.
    fn raised_elsewhere(&mut self, lines: &[String]) -> Vec<Fired> {
        lines
            .iter()
            .filter_map(|l| alarms::parse_line(l))
            .filter(|f| self.seen.insert(f.alarm.key.clone()) && !self.own.contains(&f.alarm.key))
            .map(|mut f| {
                if let Some(alarm) = self.evaluated.get(&f.alarm.key) {
                    f.alarm = alarm.clone();
                }
                f
            })
            .collect()
    }
}

impl Monitor {
    /// The watcher of the project `dir` is in (any directory of the repository).
    pub fn open(dir: &Path, echo: Echo) -> Result<Monitor, OpsError> {
        let (project, raised_here) = Project::discover_forwarding_alarms(dir)?;
        let reader = ActivityReader::new(&project.store);
        let outlets = Outlets::new(&project.root, echo);
        let seen = project
            .store
            .alarm_lines()
            .unwrap_or_default()
            .iter()
            .filter_map(|l| alarms::key_of(l).map(str::to_owned))
            .collect();
        Ok(Monitor {
            project: Arc::new(project),
            raised_here,
            reader: Arc::new(Mutex::new(reader)),
            outlets,
            log: AlarmLogSeen {
                seen,
                ..AlarmLogSeen::default()
            },
        })
    }

    pub fn with_outlets(mut self, outlets: impl FnOnce(Outlets) -> Outlets) -> Monitor {
        self.outlets = outlets(self.outlets);
        self
    }

    /// Serves `/metrics` on `addr`; returns the bound address.
    pub fn serve_metrics(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let (project, reader) = (self.project.clone(), self.reader.clone());
        http::serve(
            addr,
            Arc::new(move || match numbers(&project, &reader) {
                Ok(n) => metrics::prometheus(&n),
                Err(e) => format!("# the blackboard cannot be read: {}\n", one_line(&e)),
            }),
        )
    }

    /// One evaluation, then the alarms other processes raised since the last one
    /// delivered like this watcher's own (specs/operations.md *Watch and alarms*).
    pub fn cycle(&mut self) -> Cycle {
        let cycle = self.evaluate();
        self.log
            .own
            .extend(cycle.fired.iter().map(|f| f.alarm.key.clone()));
        self.deliver_raised_elsewhere();
        cycle
    }

    /// Delivers the alarm lines that appeared since the last look and that this watcher
    /// did not fire: a supervisor's, an agent's, a command's that set a hand edit aside.
    fn deliver_raised_elsewhere(&mut self) {
        let Ok(lines) = self.project.store.alarm_lines() else {
            return;
        };
        let others = self.log.raised_elsewhere(&lines);
        self.deliver(&others);
    }

    /// Delivers `fired`; notify-send and the webhook only by the one watcher that claims
    /// each alarm (the store's claim, across processes and hosts).
    fn deliver(&self, fired: &[Fired]) {
        let store = &self.project.store;
        self.outlets
            .deliver(fired, |key| store.claim_delivery(key).unwrap_or(false));
    }

    fn evaluate(&mut self) -> Cycle {
        let paths = self.project.store.paths();
        let read = read_state(&self.project);
        // The webhook of the state just read, before anything is delivered (a readable
        // state; else the last one's).
        if let Ok(state) = &read {
            self.outlets
                .set_webhook(state.config.escalation_webhook.as_deref());
        }
        let mut fired: Vec<Fired> = self.raised_here.try_iter().collect();
        self.deliver(&fired);
        let state = match read {
            Ok(state) => state,
            Err(e) => {
                let alarm = invalid_state(&paths.state(), &e);
                fired.extend(self.fire(vec![alarm]));
                return Cycle {
                    fired,
                    checkpointed: None,
                };
            }
        };
        let now = Timestamp::now();
        let facts = facts(&self.project);
        let (alarms, matches) = {
            let mut reader = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            reader.refresh(&self.project.store);
            let activity = &reader.activity;
            (
                rules::evaluate(&state, activity, &facts, now),
                ops::all_matches(&state, &activity.run_ends),
            )
        };
        fired.extend(self.fire(alarms));
        let mut checkpointed = None;
        if state.sprint.status == SprintStatus::InProgress
            && let Some(deadline) = state.sprint.timeline.as_ref().and_then(|t| t.deadline)
            && deadline <= now
            && done(ops::deadline_checkpoint(&self.project))
        {
            checkpointed = Some(format!("the sprint deadline ({deadline}) was reached"));
        }
        if !ops::analysis_recorded(&state, &matches) {
            let run_ends = {
                let reader = self.reader.lock().unwrap_or_else(|p| p.into_inner());
                reader.activity.run_ends.clone()
            };
            match ops::analyze_with(&self.project, &Actor::Liza, &run_ends) {
                Ok(analysis) => {
                    if let Some(pattern) = analysis.checkpointed_by {
                        checkpointed = Some(format!("circuit breaker: {pattern}"));
                    }
                }
                Err(e) => tracing::warn!(error = %e, "circuit-breaker analysis not recorded"),
            }
        }
        if let Some(after) = state.config.archive_after.filter(|a| *a > 0) {
            let archived = ops::archive_terminal(
                &self.project,
                &Actor::Liza,
                ops::Authority::Supervisor,
                &state.sprint.id,
                ops::ArchiveSelect::OlderThan(after),
            );
            if let Err(e) = archived {
                tracing::warn!(error = %e, "terminal tasks not archived");
            }
        }
        Cycle {
            fired,
            checkpointed,
        }
    }

    fn fire(&mut self, alarms: Vec<Alarm>) -> Vec<Fired> {
        for alarm in &alarms {
            self.log.evaluated.insert(alarm.key.clone(), alarm.clone());
        }
        match alarms::fire(&self.project.store, alarms) {
            Ok(fired) => {
                self.deliver(&fired);
                fired
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not raise the alarms");
                Vec::new()
            }
        }
    }

    /// Cycles on every change and every `interval` until `stop` is set, or `cycles` ran;
    /// returns how many cycles ran and the keys of the alarms this watcher fired.
    pub fn run(
        mut self,
        interval: Duration,
        cycles: Option<u64>,
        stop: &AtomicBool,
    ) -> (u64, Vec<String>) {
        let mut changes = self.project.store.changes(
            &[Topic::State, Topic::Log, Topic::Control, Topic::Alerts],
            Duration::from_millis(50),
        );
        let mut ran = 0u64;
        let mut keys = Vec::new();
        loop {
            keys.extend(self.cycle().fired.into_iter().map(|f| f.alarm.key));
            ran += 1;
            if cycles.is_some_and(|c| ran >= c) || stop.load(Ordering::SeqCst) {
                break;
            }
            // In slices, so a stop is seen within a fraction of a second.
            let until = std::time::Instant::now() + interval;
            while !stop.load(Ordering::SeqCst) {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() || changes.wait(left.min(Duration::from_millis(200))) {
                    break;
                }
            }
            if stop.load(Ordering::SeqCst) {
                break;
            }
        }
        self.outlets.finish();
        (ran, keys)
    }
}

/// The numbers of `/metrics` and `liza status --json` for `project`, read now.
pub fn numbers(project: &Project, reader: &Mutex<ActivityReader>) -> Result<Numbers, String> {
    let state = project.store.snapshot().map_err(|e| e.to_string())?.state;
    let mut reader = reader.lock().unwrap_or_else(|p| p.into_inner());
    reader.refresh(&project.store);
    let mut numbers = metrics::collect(
        &state,
        &reader.activity,
        alarms::counts_by_category(&project.store),
    );
    numbers.usage = metrics::usage(&project.store.ledger().unwrap_or_default());
    Ok(numbers)
}

/// The snapshot, a pending hand edit reconciled first (as supervisors do).
fn read_state(project: &Project) -> Result<State, String> {
    let snapshot = project.store.snapshot().map_err(|e| e.to_string())?;
    if !snapshot.pending_hand_edit {
        return Ok(snapshot.state);
    }
    if let Err(e) = project.store.reconcile() {
        tracing::warn!(error = %e, "could not reconcile the hand edit of state.yaml");
    }
    Ok(project.store.snapshot().map_err(|e| e.to_string())?.state)
}

fn invalid_state(path: &Path, error: &str) -> Alarm {
    let hash = std::fs::read(path)
        .map(|b| blake3::hash(&b).to_hex()[..16].to_owned())
        .unwrap_or_else(|_| "unreadable".into());
    Alarm {
        level: Level::Error,
        category: "INVALID_STATE".into(),
        message: format!(
            "the blackboard cannot be read: {}; `liza validate` lists every problem",
            one_line(error)
        ),
        task: None,
        agent: None,
        revision: None,
        key: format!("invalid-state:{hash}"),
    }
}

fn one_line(text: &str) -> String {
    text.lines().collect::<Vec<_>>().join("; ")
}

/// Whether an automatic step happened; "someone else did it first" is not an error.
fn done<T>(result: Result<T, OpsError>) -> bool {
    match result {
        Ok(_) => true,
        Err(OpsError::Refused { .. } | OpsError::Nothing) => false,
        Err(e) => {
            tracing::warn!(error = %e, "automatic checkpoint failed");
            false
        }
    }
}

fn facts(project: &Project) -> rules::Facts {
    let paths = project.store.paths();
    let flags = project.store.control_flags().unwrap_or_default();
    let mut rejected_edits: Vec<String> = std::fs::read_dir(paths.rejected())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| paths.display(&p))
        .collect();
    rejected_edits.sort();
    rules::Facts {
        paused_since: flags.since(Control::Pause),
        checkpoint_file_since: flags.since(Control::Checkpoint),
        rejected_edits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::alarms::Level;

    fn blocked_alarm() -> Alarm {
        Alarm {
            level: Level::Warn,
            category: "TASK_BLOCKED".into(),
            message: "t-1 is BLOCKED".into(),
            task: Some("t-1".into()),
            agent: Some("coder-1".into()),
            revision: Some(7),
            key: "blocked:t-1:2026-11-27T10:00:00Z".into(),
        }
    }

    const LINE: &str =
        "2026-11-27T10:00:01Z WARN TASK_BLOCKED t-1 is BLOCKED [blocked:t-1:2026-11-27T10:00:00Z]";

    /// Another watcher wrote the line first: this one, whose rules produced the same alarm,
    /// delivers it with its task, agent and revision, not as the bare line says.
    #[test]
    fn an_alarm_another_watcher_wrote_first_is_delivered_as_the_rules_know_it() {
        let mut log = AlarmLogSeen::default();
        log.evaluated
            .insert(blocked_alarm().key.clone(), blocked_alarm());
        let delivered = log.raised_elsewhere(&[LINE.to_owned()]);
        assert_eq!(delivered.len(), 1);
        assert_eq!(delivered[0].alarm, blocked_alarm());
        assert_eq!(delivered[0].line, LINE);
        // Seen once: never delivered again.
        assert!(log.raised_elsewhere(&[LINE.to_owned()]).is_empty());
    }

    /// An alarm no rule of the watcher produced (a supervisor's) is what its line says;
    /// one this watcher fired itself is not delivered again.
    #[test]
    fn an_alarm_raised_outside_the_watchers_is_its_line_and_its_own_are_not_repeated() {
        let mut log = AlarmLogSeen::default();
        let delivered = log.raised_elsewhere(&[LINE.to_owned()]);
        assert_eq!(delivered[0].alarm.task, None);
        assert_eq!(delivered[0].alarm.key, blocked_alarm().key);
        let mut log = AlarmLogSeen::default();
        log.own.insert(blocked_alarm().key);
        assert!(log.raised_elsewhere(&[LINE.to_owned()]).is_empty());
    }
}
