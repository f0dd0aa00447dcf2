//! The pages, rendered on the server from one read of the blackboard per request: the
//! sprint at a glance, a task, the log, the person's inbox, a commit.

pub(crate) mod commit;
pub(crate) mod inbox;
pub(crate) mod log;
pub(crate) mod sprint;
pub(crate) mod task;

use std::path::PathBuf;

use crate::blackboard::model::TaskStatus;
use crate::blackboard::{Snapshot, Timestamp};
use crate::ops::Project;
use crate::status::Report;

/// One read of the blackboard: what every page starts from.
pub(crate) struct Board {
    pub snapshot: Snapshot,
    pub report: Report,
    /// The alarms whose cause is still there, newest first.
    pub open_alarms: Vec<String>,
    /// Hand edits set aside under `rejected/`, newest first.
    pub rejected: Vec<Rejected>,
    pub now: Timestamp,
}

/// A hand edit liza did not apply: the file kept and the note saying why.
pub(crate) struct Rejected {
    pub name: String,
    pub note: String,
    pub at: Option<Timestamp>,
}

/// How many set-aside hand edits the inbox shows.
const REJECTED_SHOWN: usize = 10;
/// The largest note of a set-aside edit read.
const NOTE_LIMIT: u64 = 16 * 1024;

impl Board {
    pub(crate) fn read(
        project: &Project,
        now: Timestamp,
    ) -> Result<Board, crate::blackboard::StoreError> {
        let snapshot = project.store.snapshot()?;
        let report = Report::read(&snapshot, &project.store, now)?;
        let mut open_alarms: Vec<String> = project
            .store
            .recent_alarms(crate::status::ALARMS_READ)
            .into_iter()
            .filter(|line| crate::ops::alarms::still_current(line, &snapshot.state))
            .collect();
        open_alarms.reverse();
        let rejected = rejected(project.store.paths().rejected());
        Ok(Board {
            snapshot,
            report,
            open_alarms,
            rejected,
            now,
        })
    }

    /// What waits for a person: BLOCKED tasks, failed integrations, open alarms, set-aside
    /// hand edits, and the sprint states that need a person.
    pub(crate) fn inbox_count(&self) -> usize {
        let tasks = self
            .snapshot
            .state
            .tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.status,
                    TaskStatus::Blocked | TaskStatus::IntegrationFailed
                )
            })
            .count();
        tasks
            + self.open_alarms.len()
            + self.rejected.len()
            + self.report.attention.len()
            + usize::from(self.report.plan_waiting > 0)
    }
}

fn rejected(dir: PathBuf) -> Vec<Rejected> {
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<Rejected> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let kept = name.strip_suffix(".note.txt")?.to_owned();
            let bytes = liza_base::untrusted::read_regular(&e.path(), NOTE_LIMIT)?;
            let at = e
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| Timestamp::from_unix(d.as_secs() as i64));
            Some(Rejected {
                name: kept,
                note: String::from_utf8_lossy(&bytes).into_owned(),
                at,
            })
        })
        .collect();
    found.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| b.name.cmp(&a.name)));
    found.truncate(REJECTED_SHOWN);
    found
}

/// A table with its header (`~name`: a column a phone leaves out); `rows` already escaped. It scrolls sideways on a phone.
pub(crate) fn table(class: &str, header: &[&str], rows: &[String]) -> String {
    let mut s = format!("<div class=\"scroll\"><table class=\"{class}\"><thead><tr>");
    // `~name`: a column a phone leaves out.
    for h in header {
        match h.strip_prefix('~') {
            Some(h) => {
                s.push_str("<th class=\"opt\">");
                s.push_str(h);
            }
            None => {
                s.push_str("<th>");
                s.push_str(h);
            }
        }
        s.push_str("</th>");
    }
    s.push_str("</tr></thead><tbody>");
    for r in rows {
        s.push_str(r);
    }
    s.push_str("</tbody></table></div>");
    s
}
