//! `/log`: the activity log, newest first, filtered by agent, task, action and words.

use std::fmt::Write as _;

use crate::blackboard::Timestamp;
use crate::blackboard::log::LogEntry;
use crate::web::html::{E, Q, agent_link, task_link, time};

/// Entries a page shows at most; older ones are reached by narrowing the filter.
pub(crate) const SHOWN: usize = 500;

/// What the log page is filtered by (its query string).
#[derive(Default)]
pub(crate) struct Filter {
    pub agent: String,
    pub task: String,
    pub action: String,
    pub words: String,
}

impl Filter {
    pub(crate) fn from_query(query: &[(String, String)]) -> Filter {
        let get = |k: &str| {
            query
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default()
        };
        Filter {
            agent: get("agent"),
            task: get("task"),
            action: get("action"),
            words: get("q"),
        }
    }

    fn keeps(&self, e: &LogEntry) -> bool {
        let words = self.words.to_lowercase();
        (self.agent.is_empty() || e.agent.as_deref() == Some(self.agent.as_str()))
            && (self.task.is_empty() || e.task.as_deref() == Some(self.task.as_str()))
            && (self.action.is_empty() || e.action.eq_ignore_ascii_case(&self.action))
            && (words.is_empty()
                || e.detail
                    .as_deref()
                    .is_some_and(|d| d.to_lowercase().contains(&words))
                || e.action.to_lowercase().contains(&words))
    }
}

pub(crate) fn render(log: &[LogEntry], filter: &Filter, now: Timestamp) -> String {
    let mut s = String::from("<h1>Log</h1><form class=\"filter\" method=\"get\" action=\"/log\">");
    for (name, label, value) in [
        ("agent", "agent", &filter.agent),
        ("task", "task", &filter.task),
        ("action", "action", &filter.action),
        ("q", "words", &filter.words),
    ] {
        let _ = write!(
            s,
            "<label>{label} <input name=\"{name}\" value=\"{}\" size=\"12\"></label> ",
            E(value)
        );
    }
    s.push_str("<button type=\"submit\">Filter</button> <a href=\"/log\">all</a></form>");
    let kept: Vec<&LogEntry> = log.iter().rev().filter(|e| filter.keeps(e)).collect();
    let _ = write!(
        s,
        "<p class=\"meta\">{} entr{} of {}{}</p>",
        kept.len(),
        if kept.len() == 1 { "y" } else { "ies" },
        log.len(),
        if kept.len() > SHOWN {
            format!(", the newest {SHOWN} shown")
        } else {
            String::new()
        }
    );
    s.push_str(&entries(kept.into_iter().take(SHOWN), now));
    s
}

/// Log entries as a table: time, agent, action, task, what it said, revision.
pub(crate) fn entries<'a>(entries: impl Iterator<Item = &'a LogEntry>, now: Timestamp) -> String {
    let rows: Vec<String> = entries
        .map(|e| {
            format!(
                "<tr><td>{}</td><td>{}</td><td><a href=\"/log?action={}\">{}</a></td><td>{}</td><td class=\"detail\">{}</td><td class=\"opt\">{}</td></tr>",
                e.timestamp.map(|t| time(t, now)).unwrap_or_default(),
                e.agent.as_deref().map_or_else(|| "-".to_owned(), agent_link),
                Q(&e.action),
                E(&e.action),
                e.task.as_deref().map_or_else(|| "-".to_owned(), task_link),
                E(e.detail.as_deref().unwrap_or("")),
                e.revision.map(|r| r.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    if rows.is_empty() {
        return "<p>no entries</p>".into();
    }
    super::table(
        "log",
        &["when", "who", "what", "task", "detail", "~rev"],
        &rows,
    )
}
