//! What the dashboard shows, read once per refresh: the status report (the same one
//! `liza status` prints), the tail of log.yaml and the open alarms, plus the selected
//! task's record for the detail pane.

use crate::blackboard::codec::Emit;
use crate::blackboard::liveness::LiveRecords;
use crate::blackboard::log::LogEntry;
use crate::blackboard::store::{Snapshot, Store};
use crate::blackboard::yaml::Emitter;
use crate::blackboard::{LizaPaths, Timestamp};
use crate::status::Report;

/// Log entries kept for the log pane.
pub(crate) const LOG_TAIL: usize = 200;

pub(crate) struct View {
    pub report: Report,
    /// `HH:MM:SS agent action task detail`, oldest first.
    pub log: Vec<String>,
    /// The alarms whose cause is still there, oldest first (`report.alarms_cleared` counts
    /// the others).
    pub alarms: Vec<String>,
    /// Each task's YAML, in the order of `report.tasks`.
    pub task_yaml: Vec<String>,
}

impl View {
    pub(crate) fn read(snapshot: &Snapshot, store: &Store, now: Timestamp) -> View {
        let paths = store.paths();
        let entries = store.log_tail(LOG_TAIL);
        let mut view = View::new(
            snapshot,
            &store.live_records().unwrap_or_default(),
            paths,
            now,
            entries,
            store.recent_alarms(crate::status::ALARMS_READ),
        );
        view.report = view
            .report
            .with_controls(&store.control_flags().unwrap_or_default())
            .with_usage(
                &snapshot.state.sprint.id,
                &store.ledger().unwrap_or_default(),
                store.quotas().unwrap_or_default(),
                now,
            );
        view
    }

    pub(crate) fn new(
        snapshot: &Snapshot,
        live: &LiveRecords,
        paths: &LizaPaths,
        now: Timestamp,
        log: Vec<LogEntry>,
        alarms: Vec<String>,
    ) -> View {
        let task_yaml = snapshot
            .state
            .tasks
            .iter()
            .map(|t| {
                let mut e = Emitter::default();
                t.emit(&mut e);
                shown(e.finish())
            })
            .collect();
        let report = Report::new(snapshot, live, paths, now, alarms.clone());
        let open = alarms
            .into_iter()
            .filter(|line| crate::ops::alarms::still_current(line, &snapshot.state))
            .map(shown)
            .collect();
        View {
            report,
            log: log.iter().map(|e| shown(log_line(e))).collect(),
            alarms: open,
            task_yaml,
        }
    }
}

/// Blackboard text with its control characters shown (the rendered buffer is cleaned
/// as well; cleaning the text first keeps the characters around them in place).
fn shown(text: String) -> String {
    match crate::terminal_text::visible(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

fn log_line(e: &LogEntry) -> String {
    let time = e
        .timestamp
        .map(|t| t.to_string().get(11..19).unwrap_or("").to_owned())
        .unwrap_or_default();
    let mut line = format!("{time} {} {}", e.agent.as_deref().unwrap_or("-"), e.action);
    if let Some(task) = &e.task {
        line.push(' ');
        line.push_str(task);
    }
    if let Some(detail) = &e.detail {
        line.push_str(": ");
        line.push_str(&detail.replace('\n', " "));
    }
    line
}
