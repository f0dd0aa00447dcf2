//! The activity log `.liza/log.yaml`: an append-only YAML list.
//!
//! liza writes each entry as one flow-style line (`- {timestamp: …, action: …}`) with a
//! single `write`, then fsyncs. A crash can therefore only leave a final line without its
//! newline; readers skip such a torn item and the next append cuts it off. Entries written
//! by the original tooling (block style, several lines each) are read as well.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde::Serialize;

use liza_base::failpoint;
use liza_model::codec::{Decode, Decoder, Number, record};
use liza_model::event::EventKind;
use liza_model::finding::Finding;
use liza_model::timestamp::Timestamp;
use liza_yaml::node::{Extra, Node, Value};
use liza_yaml::{self, is_flow_plain_safe};

/// One log entry: `{timestamp, agent, action, task?, detail?}` plus liza's `revision` and
/// lock timings, plus anything else an entry carries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogEntry {
    /// When it happened.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "liza_model::timestamp::rfc3339::option"
    )]
    pub timestamp: Option<Timestamp>,
    /// Who acted: an agent id, `human` or `liza`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What happened: an [`EventKind`]'s name, or whatever name a person logged.
    pub action: String,
    /// The task it concerns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// A line saying more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The blackboard revision the transaction made (`None`: an entry that records no
    /// state change).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// How long the transaction waited for the state lock (the file store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_wait_ms: Option<Number>,
    /// How long the transaction held the state lock until its commit (the file store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_hold_ms: Option<Number>,
    /// Every other field, kept in its order.
    #[serde(flatten)]
    pub extra: Extra,
}
record!(LogEntry {
    opt timestamp: "timestamp",
    opt agent: "agent",
    req action: "action",
    opt task: "task",
    opt detail: "detail",
    opt revision: "revision",
    opt lock_wait_ms: "lock_wait_ms",
    opt lock_hold_ms: "lock_hold_ms",
});

impl LogEntry {
    /// The entry's action, if liza defines it.
    pub fn kind(&self) -> Option<EventKind> {
        EventKind::parse(&self.action)
    }

    /// `agent` did `action` at `timestamp`; nothing else is said yet.
    pub fn new(timestamp: Timestamp, agent: &str, action: EventKind) -> LogEntry {
        LogEntry {
            timestamp: Some(timestamp),
            agent: Some(agent.to_owned()),
            action: action.as_str().to_owned(),
            task: None,
            detail: None,
            revision: None,
            lock_wait_ms: None,
            lock_hold_ms: None,
            extra: Extra::default(),
        }
    }

    /// The entry as one YAML list item on one line, ending in a newline.
    pub fn to_line(&self) -> String {
        let mut fields: Vec<(&str, Node)> = Vec::with_capacity(8 + self.extra.0.len());
        let texts = [
            ("agent", self.agent.as_deref()),
            ("action", Some(self.action.as_str())),
            ("task", self.task.as_deref()),
            ("detail", self.detail.as_deref()),
        ];
        for (key, text) in texts {
            if let Some(text) = text {
                fields.push((key, Node::str(text)));
            }
        }
        if let Some(rev) = self.revision {
            fields.push(("revision", Node::new(Value::Int(rev))));
        }
        for (key, value) in [
            ("lock_wait_ms", self.lock_wait_ms),
            ("lock_hold_ms", self.lock_hold_ms),
        ] {
            if let Some(v) = value {
                fields.push((key, number_node(v)));
            }
        }
        let mut out = String::with_capacity(160);
        out.push_str("- {");
        let mut first = true;
        if let Some(ts) = self.timestamp {
            // Timestamps are written plain, as in state.yaml.
            out.push_str("timestamp: ");
            ts.write_to(&mut out);
            first = false;
        }
        let extra = self.extra.iter().map(|e| (e.key.as_str(), &e.value));
        for (key, value) in fields.iter().map(|(k, v)| (*k, v)).chain(extra) {
            if !first {
                out.push_str(", ");
            }
            first = false;
            flow_str(&mut out, key);
            out.push_str(": ");
            flow_node(&mut out, value);
        }
        out.push_str("}\n");
        out
    }
}

fn number_node(n: Number) -> Node {
    Node::new(match n {
        Number::Int(i) => Value::Int(i),
        Number::Float(f) => Value::Float(f),
    })
}

/// Milliseconds with microsecond precision, for the lock timings.
pub fn millis(d: std::time::Duration) -> Number {
    Number::Float((d.as_secs_f64() * 1_000_000.0).round() / 1000.0)
}

fn flow_str(out: &mut String, text: &str) {
    if is_flow_plain_safe(text) {
        out.push_str(text);
    } else {
        // JSON string syntax is valid YAML double-quoted syntax.
        out.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into()));
    }
}

fn flow_node(out: &mut String, node: &Node) {
    match &node.value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) if f.is_nan() => out.push_str(".nan"),
        Value::Float(f) if f.is_infinite() => out.push_str(if *f > 0.0 { ".inf" } else { "-.inf" }),
        Value::Float(f) => {
            let s = f.to_string();
            out.push_str(&s);
            if !s.contains(['.', 'e', 'E']) {
                out.push_str(".0");
            }
        }
        Value::Str(s) => flow_str(out, s),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow_node(out, item);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, e) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow_str(out, &e.key);
                out.push_str(": ");
                flow_node(out, &e.value);
            }
            out.push('}');
        }
    }
}

/// What reading the log found.
#[derive(Debug, Default)]
pub struct LogRead {
    /// The entries that could be read, oldest first.
    pub entries: Vec<LogEntry>,
    /// The final item was incomplete (a crash during an append); it was skipped.
    pub torn_tail: bool,
    /// Items in the middle that could not be read.
    pub unreadable: Vec<UnreadableItem>,
}

/// Reads every entry of `path`; a missing file is an empty log.
pub fn read(path: &Path) -> io::Result<LogRead> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(LogRead::default()),
        Err(e) => return Err(e),
    };
    Ok(parse_items(&bytes, 1))
}

/// One item of the log as [`EntryReader`] reads it: an entry, or an item in the middle
/// that could not be read.
pub type Item = Result<LogEntry, UnreadableItem>;

/// An item in the middle of the log that does not read as an entry.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct UnreadableItem {
    /// The item's first line (1-based).
    pub line: usize,
    /// Why it does not read.
    pub problem: ItemProblem,
}

/// Reads a log entry by entry, holding one item at a time — memory bounded by the
/// largest entry, whatever the log's size (`liza log` on a log of 200 000 entries). Reads
/// up to `limit` bytes; an incomplete last line is a torn tail, as in [`parse_items`].
pub struct EntryReader<R> {
    reader: R,
    limit: u64,
    consumed: u64,
    line_no: usize,
    /// The item being gathered: its first line's number and its text.
    item: Option<(usize, String)>,
    /// The last line read, waiting to start the next item.
    next_line: Option<String>,
    done: bool,
    /// The log ended in an incomplete item (a transaction interrupted while logging).
    pub torn_tail: bool,
    /// Bytes read up to the end of the last complete line (where a follower goes on).
    pub complete: u64,
}

impl<R: io::BufRead> EntryReader<R> {
    /// A reader of the log text `reader` gives, up to `limit` bytes of it.
    pub fn new(reader: R, limit: u64) -> EntryReader<R> {
        EntryReader {
            reader,
            limit,
            consumed: 0,
            line_no: 0,
            item: None,
            next_line: None,
            done: false,
            torn_tail: false,
            complete: 0,
        }
    }

    /// The next complete line, or `None` at the end (an incomplete line marks the tail
    /// torn and ends the reading).
    fn line(&mut self) -> Option<String> {
        if self.consumed >= self.limit {
            return None;
        }
        let mut bytes = Vec::new();
        let mut take = io::Read::take(&mut self.reader, self.limit - self.consumed);
        let n = io::BufRead::read_until(&mut take, b'\n', &mut bytes).ok()?;
        if n == 0 {
            return None;
        }
        self.consumed += n as u64;
        if bytes.last() != Some(&b'\n') {
            self.torn_tail = true;
            return None;
        }
        self.line_no += 1;
        self.complete = self.consumed;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

fn starts_item(line: &str) -> bool {
    line.starts_with("- ") || line == "-\n" || line.starts_with("-\t")
}

impl<R: io::BufRead> Iterator for EntryReader<R> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        loop {
            if self.done {
                return None;
            }
            let line = self.next_line.take().or_else(|| self.line());
            match line {
                Some(line) if starts_item(&line) && self.item.is_some() => {
                    self.next_line = Some(line);
                    let (first, text) = self.item.take()?;
                    match parse_item(&text) {
                        Ok(Some(entry)) => return Some(Ok(entry)),
                        Ok(None) => continue,
                        Err(problem) => {
                            return Some(Err(UnreadableItem {
                                line: first,
                                problem,
                            }));
                        }
                    }
                }
                Some(line) if starts_item(&line) => self.item = Some((self.line_no, line)),
                Some(line) => {
                    if let Some((_, text)) = &mut self.item {
                        text.push_str(&line);
                    }
                }
                None => {
                    self.done = true;
                    let (first, text) = self.item.take()?;
                    return match parse_item(&text) {
                        Ok(Some(entry)) => Some(Ok(entry)),
                        Ok(None) => None,
                        // An incomplete last item that happens to end at a line break.
                        Err(_) if !self.torn_tail => {
                            self.torn_tail = true;
                            None
                        }
                        Err(problem) => Some(Err(UnreadableItem {
                            line: first,
                            problem,
                        })),
                    };
                }
            }
        }
    }
}

/// Parses log text into entries; `first_line` numbers the first line of `bytes`.
pub fn parse_items(bytes: &[u8], first_line: usize) -> LogRead {
    let mut out = LogRead::default();
    let complete = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(i) => i + 1,
        None => 0,
    };
    if complete < bytes.len() {
        out.torn_tail = true;
    }
    let text = String::from_utf8_lossy(&bytes[..complete]);
    let items = split_items(&text);
    let last = items.len().saturating_sub(1);
    for (i, (line, item)) in items.into_iter().enumerate() {
        match parse_item(item) {
            Ok(Some(entry)) => out.entries.push(entry),
            Ok(None) => {}
            Err(_) if i == last && !out.torn_tail => {
                // An incomplete last item that happens to end at a line break.
                out.torn_tail = true;
            }
            Err(problem) => out.unreadable.push(UnreadableItem {
                line: first_line + line,
                problem,
            }),
        }
    }
    out
}

/// Splits into items at lines that start a list item in column 0; returns the 0-based
/// line of each item's start.
fn split_items(text: &str) -> Vec<(usize, &str)> {
    let mut items = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    let mut offset = 0;
    for (line_no, line) in text.split_inclusive('\n').enumerate() {
        if line.starts_with("- ") || line == "-\n" || line.starts_with("-\t") {
            if let Some((l, s)) = start {
                items.push((l, &text[s..offset]));
            }
            start = Some((line_no, offset));
        }
        offset += line.len();
    }
    if let Some((l, s)) = start {
        items.push((l, &text[s..]));
    }
    items
}

/// Why a log item does not read.
#[derive(Debug, thiserror::Error)]
pub enum ItemProblem {
    /// Not YAML: the parser's message.
    #[error("{0}")]
    Yaml(String),
    /// YAML, but not an item of the log's list.
    #[error("not a list item")]
    NotAListItem,
    /// Not an entry: the first finding, its path and message.
    #[error("{0}")]
    NotAnEntry(String),
}

fn parse_item(item: &str) -> Result<Option<LogEntry>, ItemProblem> {
    let parsed = liza_yaml::parse(item).map_err(|e| ItemProblem::Yaml(e.message))?;
    let Some(Node {
        value: Value::Seq(mut list),
        ..
    }) = parsed.root
    else {
        return Err(ItemProblem::NotAListItem);
    };
    let Some(node) = list.pop() else {
        return Ok(None);
    };
    let mut d = Decoder::default();
    match LogEntry::decode(&node, &mut d) {
        Some(entry) if d.findings.is_empty() => Ok(Some(entry)),
        _ => Err(ItemProblem::NotAnEntry(d.findings.first().map_or_else(
            || "unreadable entry".to_owned(),
            Finding::path_and_message,
        ))),
    }
}

/// Appends `entries`, one `write` each, then fsyncs. A torn final item left by a crash
/// is cut off first.
pub fn append(path: &Path, entries: &[LogEntry]) -> io::Result<()> {
    append_unsynced(path, entries)?.sync_all()
}

/// Appends `entries` like [`append`] but leaves the fsync to the caller (the store does
/// it after releasing the lock), returning the file to sync.
pub fn append_unsynced(path: &Path, entries: &[LogEntry]) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    repair_torn_tail(&mut file)?;
    let entries = in_order(last_timestamp(&file)?, entries);
    for entry in &entries {
        let line = entry.to_line();
        if failpoint::is_armed("during-log") {
            let half = line.len() / 2;
            file.write_all(&line.as_bytes()[..half])?;
            let _ = file.sync_all();
            std::process::abort();
        }
        file.write_all(line.as_bytes())?;
    }
    Ok(file)
}

/// A writer whose clock is this many seconds behind the log's last entry is named in
/// its entry (`clock_behind_s`) and raises `CLOCK_SKEW` (specs/blackboard.md *Timestamps*).
pub const CLOCK_BEHIND_NOTED_S: i64 = 60;

/// `entries` stamped in order after `last`: an entry is never earlier than the one before
/// it — a clock behind the log's is lifted to the last timestamp, and when it is behind by
/// [`CLOCK_BEHIND_NOTED_S`] or more the entry says by how much. (Commands stamp `now`
/// before they wait for the lock, so a second or two of inversion is ordinary.)
pub fn in_order(last: Option<Timestamp>, entries: &[LogEntry]) -> Vec<LogEntry> {
    let mut last = last;
    entries
        .iter()
        .map(|entry| {
            let mut entry = entry.clone();
            if let (Some(ts), Some(before)) = (entry.timestamp, last)
                && ts < before
            {
                let behind = before.seconds_since(ts);
                if behind >= CLOCK_BEHIND_NOTED_S {
                    entry
                        .extra
                        .insert("clock_behind_s", Node::new(Value::Int(behind)));
                }
                entry.timestamp = Some(before);
            }
            last = entry.timestamp.or(last);
            entry
        })
        .collect()
}

/// The timestamp of the last complete entry of the log `file` (its last 4 KiB read).
pub fn last_timestamp(file: &File) -> io::Result<Option<Timestamp>> {
    let len = file.metadata()?.len();
    let start = len.saturating_sub(4096);
    let mut tail = vec![0u8; (len - start) as usize];
    file.read_exact_at(&mut tail, start)?;
    let text = String::from_utf8_lossy(&tail);
    Ok(text
        .lines()
        .rev()
        .filter(|line| line.starts_with("- {"))
        .find_map(|line| parse_item(&format!("{line}\n")).ok().flatten())
        .and_then(|entry| entry.timestamp))
}

fn repair_torn_tail(file: &mut File) -> io::Result<()> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    // Find the last newline, reading backwards in chunks.
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    let cut = loop {
        if end == 0 {
            break 0;
        }
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            break start + i as u64 + 1;
        }
        end = start;
    };
    file.set_len(cut)?;
    Ok(())
}

/// The revision of the last complete entry that has one (reads only the file's tail).
pub fn last_logged_revision(path: &Path) -> io::Result<Option<i64>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let start = len.saturating_sub(64 * 1024);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let complete = tail.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let text = String::from_utf8_lossy(&tail[..complete]);
    for line in text.lines().rev() {
        if !line.starts_with("- {") {
            continue;
        }
        if let Ok(Some(entry)) = parse_item(&format!("{line}\n"))
            && let Some(rev) = entry.revision
        {
            return Ok(Some(rev));
        }
    }
    Ok(None)
}

/// The last `n` entries of log.yaml (reads only the file's end).
pub fn tail(path: &Path, n: usize) -> Vec<LogEntry> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    // Entries are one line of ~200 bytes; read generously and drop the first partial line.
    let start = len.saturating_sub((n as u64) * 600);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    if start > 0 {
        match bytes.iter().position(|b| *b == b'\n') {
            Some(i) => {
                bytes.drain(..=i);
            }
            None => return Vec::new(),
        }
    }
    let mut entries = parse_items(&bytes, 0).entries;
    let skip = entries.len().saturating_sub(n);
    entries.drain(..skip);
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(action: &str) -> LogEntry {
        let mut e = LogEntry::new(
            Timestamp::from_unix(1_772_355_600),
            "human",
            EventKind::Note,
        );
        e.action = action.to_owned();
        e.task = Some("t-1".into());
        e.detail = Some("a \"quoted\" detail: with, commas\nand a newline".into());
        e.revision = Some(7);
        e.lock_wait_ms = Some(Number::Float(0.125));
        e.extra.insert("drift_commits", Node::new(Value::Int(2)));
        e.extra.insert("odd key: x", Node::str("yes"));
        e
    }

    #[test]
    fn lines_are_yaml_list_items_that_read_back() {
        let e = entry("note");
        let line = e.to_line();
        assert!(line.starts_with("- {timestamp: 2026-03-01T09:00:00Z, agent: human, action: note"));
        assert_eq!(line.matches('\n').count(), 1);
        let read = parse_items(line.as_bytes(), 1);
        assert_eq!(read.entries, vec![e]);
    }

    #[test]
    fn original_block_style_logs_are_read() {
        let text = "- timestamp: 2026-01-17T14:00:00Z\n  agent: system\n  action: initialized\n  detail: \"Goal\"\n- timestamp: 2026-01-17T14:05:00Z\n  agent: planner-1\n  action: task_added\n  task: t-1\n";
        let read = parse_items(text.as_bytes(), 1);
        assert_eq!(read.entries.len(), 2);
        assert_eq!(read.entries[1].task.as_deref(), Some("t-1"));
        assert!(!read.torn_tail);
    }

    #[test]
    fn a_torn_tail_is_skipped_on_read_and_cut_on_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.yaml");
        append(&path, &[entry("one")]).unwrap();
        let line = entry("two").to_line();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&line.as_bytes()[..line.len() / 2]).unwrap();
        let read = read(&path).unwrap();
        assert!(read.torn_tail);
        assert_eq!(read.entries.len(), 1);
        append(&path, &[entry("three")]).unwrap();
        let read = super::read(&path).unwrap();
        assert!(!read.torn_tail);
        let actions: Vec<_> = read.entries.iter().map(|e| e.action.as_str()).collect();
        assert_eq!(actions, ["one", "three"]);
        assert_eq!(last_logged_revision(&path).unwrap(), Some(7));
    }
}
