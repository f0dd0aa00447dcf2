//! A task's `history`: its events, and the list of them, decoded the first time something
//! reads it.
//!
//! Histories are most of a blackboard's bytes (97 % of the 300-task benchmark's), and most
//! transactions read none of them: a `liza note` changes no task, a claim one. A task the
//! parse cache hands over keeps its history as the JSON text the cache stored (a range of
//! the cache file in memory, neither copied nor scanned), plus the review counts the sprint
//! metrics need, so a transaction pays for decoding only the
//! histories it reads or changes (specs/quality.md P1/P2), and an unchanged history is
//! written back to the next cache as the same text.
//!
//! The cache is liza's own output, keyed by the hash of the state.yaml it describes, and
//! liza writes none whose histories do not read back as the same events
//! (`store/cache.rs`), so its histories decode. Should one not (a file changed by
//! something else), it reads as empty and is marked damaged: the store refuses to commit
//! or archive what holds it and discards the cache, so a history is never written out
//! from what could not be read.

use std::cell::Cell;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::EventKind;
use crate::codec::{Decode, Decoder, Emit, emit_list, record};
use crate::node::Extra;
use crate::node::Node;
use crate::timestamp::Timestamp;
use crate::yaml::Emitter;

/// One entry of a task's `history`: `{time, event, agent, ...}`; event-specific fields are
/// kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    /// When it happened.
    pub time: Timestamp,
    /// What happened: an [`EventKind`] name, or one liza does not define, kept as written.
    pub event: String,
    /// Who acted: an agent id, `human` or `liza`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The event's own fields, in file order.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}
impl HistoryEvent {
    /// The event, if liza defines it.
    pub fn kind(&self) -> Option<EventKind> {
        EventKind::parse(&self.event)
    }
}

record!(HistoryEvent {
    req time: "time",
    req event: "event",
    opt agent: "agent",
});

/// How many times a task was submitted for review, approved and rejected, by its history
/// (what `sprint.metrics` counts per task).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReviewCounts {
    /// `ready_for_review` events.
    pub submissions: i64,
    /// `approved` events.
    pub approvals: i64,
    /// `rejected` events.
    pub rejections: i64,
}

impl ReviewCounts {
    fn of(events: &[HistoryEvent]) -> ReviewCounts {
        let mut counts = ReviewCounts::default();
        for event in events {
            match event.kind() {
                Some(EventKind::ReadyForReview) => counts.submissions += 1,
                Some(EventKind::Approved) => counts.approvals += 1,
                Some(EventKind::Rejected) => counts.rejections += 1,
                _ => {}
            }
        }
        counts
    }

    /// `<submissions>/<approvals>/<rejections>`, as the parse cache stores them.
    pub fn to_field(self) -> String {
        format!(
            "{}/{}/{}",
            self.submissions, self.approvals, self.rejections
        )
    }

    /// Reads counts written by [`ReviewCounts::to_field`].
    pub fn parse_field(text: &str) -> Option<ReviewCounts> {
        let mut parts = text.split('/');
        let counts = ReviewCounts {
            submissions: parts.next()?.parse().ok()?,
            approvals: parts.next()?.parse().ok()?,
            rejections: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(counts)
    }
}

#[derive(Clone, Debug)]
struct Decoded {
    events: Vec<HistoryEvent>,
    /// The stored JSON did not decode: `events` holds only what was added since.
    damaged: bool,
}

/// A history's JSON text inside a parse cache file read into memory, shared by every task
/// read from that file: nothing is copied or scanned until the history is read.
#[derive(Clone)]
pub struct CachedJson {
    file: Arc<Vec<u8>>,
    range: Range<usize>,
}

impl CachedJson {
    /// The `range` of `file`, or `None` when `file` does not hold it.
    pub fn new(file: Arc<Vec<u8>>, range: Range<usize>) -> Option<CachedJson> {
        file.get(range.clone())?;
        Some(CachedJson { file, range })
    }

    /// The JSON text.
    pub fn bytes(&self) -> &[u8] {
        &self.file[self.range.clone()]
    }
}

/// A task's history events, in order.
#[derive(Clone, Default)]
pub struct History {
    decoded: OnceLock<Decoded>,
    /// The JSON text the parse cache stored, kept while the events are unchanged.
    cached: Option<CachedJson>,
    /// The review counts the cache stored with `cached`.
    counts: Option<ReviewCounts>,
}

impl History {
    /// A history the parse cache stored: its JSON text and the counts stored with it.
    pub fn cached(json: CachedJson, counts: ReviewCounts) -> History {
        History {
            decoded: OnceLock::new(),
            cached: Some(json),
            counts: Some(counts),
        }
    }

    /// The events, decoded on first use.
    pub fn events(&self) -> &[HistoryEvent] {
        &self.decoded().events
    }

    /// The events to change: decoded, and no longer tied to the stored text.
    pub fn events_mut(&mut self) -> &mut Vec<HistoryEvent> {
        self.decoded();
        self.counts = None;
        let decoded = self.decoded.get_mut().expect("decoded just above");
        if !decoded.damaged {
            self.cached = None;
        }
        &mut decoded.events
    }

    /// The stored text did not decode (see the module docs).
    pub fn is_damaged(&self) -> bool {
        self.decoded.get().is_some_and(|d| d.damaged)
    }

    /// Whether the events were decoded.
    pub fn is_decoded(&self) -> bool {
        self.decoded.get().is_some()
    }

    /// The JSON text the cache stored, while the events are unchanged: the next cache
    /// copies it.
    pub fn cached_json(&self) -> Option<&[u8]> {
        self.cached.as_ref().map(CachedJson::bytes)
    }

    /// How many times the task was submitted, approved and rejected: the counts the cache
    /// stored while the history is not decoded, else counted from its events.
    pub fn review_counts(&self) -> ReviewCounts {
        match (self.counts, self.decoded.get()) {
            (Some(counts), None) => counts,
            _ => ReviewCounts::of(self.events()),
        }
    }

    fn decoded(&self) -> &Decoded {
        self.decoded.get_or_init(|| match &self.cached {
            None => Decoded {
                events: Vec::new(),
                damaged: false,
            },
            Some(json) => match serde_json::from_slice(json.bytes()) {
                Ok(events) => Decoded {
                    events,
                    damaged: false,
                },
                Err(err) => {
                    tracing::warn!(%err, "a task history in the parse cache does not decode");
                    Decoded {
                        events: Vec::new(),
                        damaged: true,
                    }
                }
            },
        })
    }
}

impl From<Vec<HistoryEvent>> for History {
    fn from(events: Vec<HistoryEvent>) -> History {
        History {
            decoded: OnceLock::from(Decoded {
                events,
                damaged: false,
            }),
            cached: None,
            counts: None,
        }
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.events()).finish()
    }
}

impl PartialEq for History {
    fn eq(&self, other: &History) -> bool {
        match (self.cached_json(), other.cached_json()) {
            (Some(a), Some(b)) if a == b => true,
            _ => self.events() == other.events(),
        }
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Not yet decoded (or damaged): the stored text, if it is JSON at all, so nothing
        // is lost before the store refuses a damaged one.
        let stored = || {
            let text = std::str::from_utf8(self.cached_json()?).ok()?;
            RawValue::from_string(text.to_owned()).ok()
        };
        match stored() {
            Some(raw) if !self.is_decoded() || self.is_damaged() => raw.serialize(serializer),
            _ => self.events().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<History, D::Error> {
        Vec::<HistoryEvent>::deserialize(deserializer).map(History::from)
    }
}

thread_local! {
    static WITHOUT_HISTORIES: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with task histories left out of what serde writes of tasks: the parse cache
/// stores each history beside its task's JSON, where it can be handed over undecoded.
pub fn without_histories<R>(f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            WITHOUT_HISTORIES.set(false);
        }
    }
    WITHOUT_HISTORIES.set(true);
    let _reset = Reset;
    f()
}

/// `skip_serializing_if` of `Task::history`.
pub(crate) fn history_skipped(history: &Option<History>) -> bool {
    history.is_none() || WITHOUT_HISTORIES.get()
}

impl Decode for History {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        Vec::<HistoryEvent>::decode(node, d).map(History::from)
    }
}

impl Emit for History {
    fn emit(&self, e: &mut Emitter) {
        emit_list(self.events(), e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> HistoryEvent {
        HistoryEvent {
            time: Timestamp::from_unix(1_700_000_000),
            event: name.into(),
            agent: Some("coder-1".into()),
            extra: Default::default(),
        }
    }

    /// A history as the cache hands it over, from `json` inside a larger file.
    fn from_cache(json: &str, counts: ReviewCounts) -> History {
        let file = format!("1 2 0/0/0 {{}}{json}\n");
        let start = file.find(json).unwrap();
        let file = Arc::new(file.into_bytes());
        History::cached(
            CachedJson::new(file, start..start + json.len()).unwrap(),
            counts,
        )
    }

    #[test]
    fn a_cached_history_is_decoded_only_when_read_and_written_back_as_its_text() {
        let events = vec![
            event("claimed"),
            event("ready_for_review"),
            event("approved"),
        ];
        let json = serde_json::to_string(&events).unwrap();
        let counts = ReviewCounts::of(&events);
        let history = from_cache(&json, counts);
        assert!(!history.is_decoded());
        assert_eq!(history.review_counts(), counts);
        assert!(!history.is_decoded(), "the stored counts answer");
        assert_eq!(serde_json::to_string(&history).unwrap(), json);
        assert!(!history.is_decoded(), "serialising copies the text");
        assert_eq!(history.cached_json(), Some(json.as_bytes()));
        assert_eq!(history.events(), &events[..]);
        assert!(history.is_decoded() && !history.is_damaged());
        assert_eq!(serde_json::to_string(&history).unwrap(), json);
    }

    #[test]
    fn a_changed_history_is_serialised_from_its_events_and_recounted() {
        let events = vec![event("ready_for_review")];
        let json = serde_json::to_string(&events).unwrap();
        let mut history = from_cache(&json, ReviewCounts::of(&events));
        history.events_mut().push(event("rejected"));
        assert_eq!(history.cached_json(), None, "the text no longer says it");
        let again: Vec<HistoryEvent> =
            serde_json::from_str(&serde_json::to_string(&history).unwrap()).unwrap();
        assert_eq!(again, vec![event("ready_for_review"), event("rejected")]);
        assert_eq!(
            history.review_counts(),
            ReviewCounts {
                submissions: 1,
                approvals: 0,
                rejections: 1
            }
        );
    }

    #[test]
    fn a_history_that_does_not_decode_is_damaged_and_keeps_its_text() {
        let json = r#"[{"no_time":1}]"#;
        let mut history = from_cache(json, ReviewCounts::default());
        assert!(history.events().is_empty());
        assert!(history.is_damaged());
        history.events_mut().push(event("claimed"));
        assert!(history.is_damaged(), "stays damaged once changed");
        assert_eq!(serde_json::to_string(&history).unwrap(), json);
    }

    #[test]
    fn tasks_are_serialised_without_histories_only_inside_without_histories() {
        let mut task = crate::model::Task::new(
            crate::TaskId::parse("t-1").unwrap(),
            crate::model::TaskStatus::Draft,
        );
        task.history = Some(History::from(vec![event("created")]));
        let whole = serde_json::to_string(&task).unwrap();
        let bare = without_histories(|| serde_json::to_string(&task).unwrap());
        assert!(whole.contains("\"history\""), "{whole}");
        assert!(!bare.contains("\"history\""), "{bare}");
        assert_eq!(serde_json::to_string(&task).unwrap(), whole, "reset after");
    }

    #[test]
    fn the_cache_field_of_review_counts_round_trips_and_rejects_other_text() {
        let counts = ReviewCounts {
            submissions: 3,
            approvals: 1,
            rejections: 2,
        };
        assert_eq!(ReviewCounts::parse_field(&counts.to_field()), Some(counts));
        for bad in ["", "1/2", "1/2/3/4", "a/b/c", "1//3"] {
            assert_eq!(ReviewCounts::parse_field(bad), None, "{bad:?}");
        }
    }
}
