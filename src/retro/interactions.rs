//! The sprint's interactions as the coder agents read them: one per task — its thread of
//! messages `msg_0..n` in time order (history events with their text fields, such as
//! rejection reasons and block questions; the handoff; human notes for it; anomalies on
//! it) — plus one for the sprint itself (notes for everyone, anomalies on no task). Each
//! message keeps its own text: quotes are located in a message, so a quote id can name it
//! (`<interaction>:msg_<n>:…`).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crate::blackboard::State;
use crate::blackboard::model::{Anomaly, HistoryEvent, Task};
use crate::blackboard::node::{Node, Value};
use crate::blackboard::{TaskId, Timestamp};

/// One message of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    pub time: Option<Timestamp>,
    /// Who wrote or caused it (an agent id, `human`, `liza`).
    pub author: String,
    /// What it is: the history event, `handoff`, `note`, `anomaly:<type>`.
    pub kind: String,
    pub text: String,
}

/// A task's thread, or the sprint's (`id` = the sprint id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interaction {
    pub id: String,
    pub task: Option<TaskId>,
    pub messages: Vec<Message>,
}

/// The interactions of the current sprint: every live task of its scope (every live task
/// when the scope is empty) with at least one message, then the sprint's own.
#[cfg(test)]
pub(crate) fn collect(state: &State) -> Vec<Interaction> {
    gather(state, &[], true)
}

/// The interactions of a sprint whose terminal tasks were archived as `archived` (its
/// `.liza/archive/<sprint>.yaml`): those tasks' threads, then — for the current sprint —
/// the live tasks of its scope and the sprint's own thread. A past sprint's notes and
/// anomalies are those that name its tasks.
pub(crate) fn gather(state: &State, archived: &[Arc<Task>], current: bool) -> Vec<Interaction> {
    let mut out: Vec<Interaction> = Vec::new();
    let mut seen: HashSet<&TaskId> = HashSet::new();
    if current {
        let scope: Vec<&TaskId> = state
            .sprint
            .planned()
            .iter()
            .chain(state.sprint.stretch())
            .collect();
        for t in state
            .tasks
            .iter()
            .filter(|t| scope.is_empty() || scope.contains(&&t.id))
        {
            seen.insert(&t.id);
            out.push(task_thread(state, t));
        }
    }
    for t in archived {
        if seen.insert(&t.id) {
            out.push(task_thread(state, t));
        }
    }
    out.retain(|i| !i.messages.is_empty());
    out.sort_by(|a, b| a.id.cmp(&b.id));
    if current {
        out.extend(sprint_thread(state));
    }
    out
}

/// Notes for everyone and anomalies on no task since the sprint started.
fn sprint_thread(state: &State) -> Option<Interaction> {
    let since = state.sprint.timeline.as_ref().and_then(|t| t.started);
    let mut sprint = Vec::new();
    for note in state.human_notes() {
        if note.target.as_deref().is_none_or(|t| t == "all") {
            sprint.push(Message {
                time: note.timestamp,
                author: "human".into(),
                kind: "note".into(),
                text: note.message.clone(),
            });
        }
    }
    for a in state.anomalies() {
        if a.task.is_none() && since.is_none_or(|s| a.timestamp.is_none_or(|t| t >= s)) {
            sprint.push(anomaly_message(a));
        }
    }
    if sprint.is_empty() {
        return None;
    }
    sort(&mut sprint);
    Some(Interaction {
        id: state.sprint.id.clone(),
        task: None,
        messages: sprint,
    })
}

/// Adds the agents' saved transcripts of each task (`.liza/agent-logs/<agent>-<task>-<ts>.log`,
/// the last `limit` bytes of each) to its thread as `transcript` messages, in time order.
pub(crate) fn add_transcripts(interactions: &mut [Interaction], dir: &Path, limit: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let files: Vec<(String, std::path::PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_suffix(".log")?.to_owned();
            Some((name, e.path()))
        })
        .collect();
    for interaction in interactions.iter_mut() {
        let Some(task) = &interaction.task else {
            continue;
        };
        for (name, path) in &files {
            // `<agent>-<task>-<stamp>`: agent and task ids hold `-` too, the stamp not.
            let Some((rest, stamp)) = name.rsplit_once('-') else {
                continue;
            };
            let Some(agent) = rest
                .strip_suffix(&format!("-{task}"))
                .filter(|a| crate::blackboard::AgentId::parse(a).is_ok())
            else {
                continue;
            };
            let Some(text) = read_tail(path, limit).filter(|t| !t.trim().is_empty()) else {
                continue;
            };
            interaction.messages.push(Message {
                time: stamp_time(stamp),
                author: agent.to_owned(),
                kind: "transcript".into(),
                text,
            });
        }
        sort(&mut interaction.messages);
    }
}

/// The last `limit` bytes of a file as text, starting at a line when it was cut.
fn read_tail(path: &Path, limit: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let cut = len > limit;
    if cut {
        file.seek(SeekFrom::Start(len - limit)).ok()?;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Some(match (cut, text.find('\n')) {
        (true, Some(nl)) => text[nl + 1..].to_owned(),
        _ => text,
    })
}

/// `20260301T091500Z` (a timestamp without its `-` and `:`, perhaps with a `.<n>` run
/// number) as a time.
fn stamp_time(stamp: &str) -> Option<Timestamp> {
    let stamp = stamp.split_once('.').map_or(stamp, |(s, _)| s);
    let (date, time) = stamp.split_once('T')?;
    if date.len() != 8 || time.len() < 7 {
        return None;
    }
    let text = format!(
        "{}-{}-{}T{}:{}:{}",
        &date[..4],
        &date[4..6],
        &date[6..],
        &time[..2],
        &time[2..4],
        &time[4..]
    );
    Timestamp::parse(&text).ok()
}

fn task_thread(state: &State, task: &Task) -> Interaction {
    let mut messages: Vec<Message> = task.history().iter().filter_map(event_message).collect();
    // The task's own words where its history event does not carry them (files written
    // by other tools keep the reason on the task only).
    let blocked = task.blocked_reason.as_ref().map(|r| {
        let mut text = r.clone();
        for q in task.blocked_questions.iter().flatten() {
            text.push_str(&format!("\n\nquestion: {q}"));
        }
        text
    });
    for (field, event) in [
        (task.rejection_reason.clone(), "rejected"),
        (blocked, "blocked"),
        (task.rescope_reason.clone(), "superseded"),
    ] {
        let Some(text) = field.filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        if messages.iter().any(|m| m.text.contains(text.trim())) {
            continue;
        }
        let last = task.history().iter().rev().find(|e| e.event == event);
        messages.push(Message {
            time: last.map(|e| e.time).or(task.status_changed_at),
            author: last
                .and_then(|e| e.agent.clone())
                .unwrap_or_else(|| "agent".into()),
            kind: event.to_owned(),
            text: text.trim().to_owned(),
        });
    }
    if let Some(h) = state.handoff.as_ref().and_then(|h| h.get(&task.id)) {
        let text = [h.summary.as_deref(), h.next_action.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n\n");
        if !text.trim().is_empty() {
            messages.push(Message {
                time: h.timestamp,
                author: h.agent.clone().unwrap_or_else(|| "agent".into()),
                kind: "handoff".into(),
                text,
            });
        }
    }
    for note in state.human_notes() {
        if note.target.as_deref() == Some(task.id.as_str()) {
            messages.push(Message {
                time: note.timestamp,
                author: "human".into(),
                kind: "note".into(),
                text: note.message.clone(),
            });
        }
    }
    for a in state.anomalies() {
        if a.task.as_deref() == Some(task.id.as_str()) {
            messages.push(anomaly_message(a));
        }
    }
    sort(&mut messages);
    Interaction {
        id: task.id.to_string(),
        task: Some(task.id.clone()),
        messages,
    }
}

/// Time order; messages without a time keep their place after the timed ones (stable).
fn sort(messages: &mut [Message]) {
    messages.sort_by_key(|m| (m.time.is_none(), m.time));
}

/// A history event as a message: its text fields (reason, questions, summary…), one per
/// paragraph; events that carry no words of anyone (claims, leases) are left out.
fn event_message(event: &HistoryEvent) -> Option<Message> {
    let mut paragraphs = Vec::new();
    for entry in event.extra.iter() {
        if let Some(text) = words(&entry.value) {
            paragraphs.push(format!("{}: {text}", entry.key));
        }
    }
    if paragraphs.is_empty() {
        return None;
    }
    Some(Message {
        time: Some(event.time),
        author: event.agent.clone().unwrap_or_else(|| "liza".into()),
        kind: event.event.clone(),
        text: paragraphs.join("\n\n"),
    })
}

fn anomaly_message(a: &Anomaly) -> Message {
    let details = a
        .details
        .as_ref()
        .and_then(|d| match &d.value {
            Value::Map(entries) => Some(
                entries
                    .iter()
                    .filter_map(|e| words(&e.value).map(|t| format!("{}: {t}", e.key)))
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            ),
            _ => words(d),
        })
        .unwrap_or_default();
    Message {
        time: a.timestamp,
        author: a.reporter.clone().unwrap_or_else(|| "agent".into()),
        kind: format!("anomaly:{}", a.kind.as_str()),
        text: details,
    }
}

/// The prose in a value: a string with letters in it (not a SHA or a number), or the
/// strings of a list, one per line.
fn words(node: &Node) -> Option<String> {
    match &node.value {
        Value::Str(s) if is_prose(s) => Some(s.trim().to_owned()),
        Value::Seq(items) => {
            let lines: Vec<String> = items.iter().filter_map(words).collect();
            (!lines.is_empty()).then(|| lines.join("\n"))
        }
        _ => None,
    }
}

/// Words rather than an identifier: contains a space and a letter.
fn is_prose(text: &str) -> bool {
    let t = text.trim();
    t.contains(' ') && t.chars().any(char::is_alphabetic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackboard::document;

    fn state() -> State {
        let text = include_str!("../../tests/fixtures/mid-sprint.yaml");
        document::decode(text.as_bytes()).unwrap().state
    }

    #[test]
    fn a_rejected_task_has_its_reason_as_a_message_in_time_order() {
        let s = state();
        let all = collect(&s);
        let rejected = all
            .iter()
            .find(|i| i.id == "t-rejected")
            .expect("t-rejected has a thread");
        let texts: Vec<&str> = rejected.messages.iter().map(|m| m.text.as_str()).collect();
        let reason = s
            .task(&TaskId::parse("t-rejected").unwrap())
            .and_then(|t| t.rejection_reason.clone())
            .unwrap();
        assert!(texts.contains(&reason.trim()), "{rejected:#?}");
        let m = rejected
            .messages
            .iter()
            .find(|m| m.text == reason.trim())
            .unwrap();
        assert_eq!(
            (m.kind.as_str(), m.author.as_str()),
            ("rejected", "code-reviewer-1")
        );
        let times: Vec<_> = rejected.messages.iter().filter_map(|m| m.time).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }

    #[test]
    fn events_without_words_are_left_out_and_identifiers_are_not_prose() {
        assert!(!is_prose("0123456789abcdef0123456789abcdef01234567"));
        assert!(!is_prose("coder-1"));
        assert!(is_prose("the totals key is missing"));
        let quiet = HistoryEvent {
            time: Timestamp::parse("2026-03-01T09:00:00Z").unwrap(),
            event: "claimed".into(),
            agent: Some("coder-1".into()),
            extra: Default::default(),
        };
        assert!(event_message(&quiet).is_none());
    }

    #[test]
    fn notes_for_everyone_and_task_less_anomalies_form_the_sprints_thread() {
        let mut s = state();
        s.human_notes = Some(vec![crate::blackboard::model::HumanNote {
            id: Some("note-9".into()),
            timestamp: None,
            message: "Prefer small commits please".into(),
            target: Some("all".into()),
            seen_by: None,
            extra: Default::default(),
        }]);
        let all = collect(&s);
        let sprint = all.last().unwrap();
        assert_eq!(sprint.id, s.sprint.id);
        assert!(sprint.task.is_none());
        assert_eq!(sprint.messages[0].text, "Prefer small commits please");
    }

    #[test]
    fn a_reason_in_both_the_event_and_the_task_is_one_message() {
        let mut s = state();
        let id = TaskId::parse("t-rejected").unwrap();
        let t = s.task_mut(&id).unwrap();
        let reason = t.rejection_reason.clone().unwrap();
        let mut extra = crate::blackboard::node::Extra::default();
        extra.insert("reason", Node::str(reason.clone()));
        extra.insert(
            "commit",
            Node::str("0123456789abcdef0123456789abcdef01234567"),
        );
        t.history = Some(crate::blackboard::model::History::from(vec![
            HistoryEvent {
                time: Timestamp::parse("2026-03-01T11:40:00Z").unwrap(),
                event: "rejected".into(),
                agent: Some("code-reviewer-1".into()),
                extra,
            },
        ]));
        let all = collect(&s);
        let thread = all.iter().find(|i| i.id == "t-rejected").unwrap();
        let with_reason = thread
            .messages
            .iter()
            .filter(|m| m.text.contains(reason.trim()))
            .count();
        assert_eq!(with_reason, 1, "{thread:#?}");
        assert_eq!(
            thread.messages[0].text,
            format!("reason: {}", reason.trim())
        );
    }
}
