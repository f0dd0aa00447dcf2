//! The YAML writer: block style, two-space indentation, strings plain when that is
//! unambiguous for every common reader, literal blocks for multi-line text, double quotes
//! otherwise.
//!
//! It writes straight into a `String` without an intermediate tree, because serialising
//! the blackboard is on every transaction's path (P2/P3). Its output is read back by
//! [`crate::parse()`] to the same values; the round-trip tests and property tests below
//! guard that.

use std::collections::HashMap;
use std::ops::Range;

use super::scalar::{is_flow_plain_safe, is_plain_safe, needs_escape};
use crate::node::{Entry, Node, Value};

/// The text of list items from an earlier emission of the same document, keyed by
/// item, so unchanged items are copied instead of written again.
#[derive(Debug, Default)]
pub struct ItemTexts {
    /// The earlier document (valid UTF-8; spans are on line boundaries).
    pub text: Vec<u8>,
    /// Each item's bytes in `text`, by the caller's key for the item.
    pub spans: HashMap<usize, Range<usize>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Nothing written yet on the current line (start of document).
    Top,
    /// Just wrote `key:`; a value follows on this line or nested below.
    AfterKey,
    /// Just wrote `- `; a value follows on this line.
    AfterDash,
    /// A value was completed.
    Done,
}

#[derive(Clone, Copy)]
struct Frame {
    /// Column of this collection's keys or dashes.
    indent: usize,
    /// Whether the first key/dash goes on the current line (after a parent dash).
    inline_first: bool,
    first: bool,
}

/// Writes one YAML document.
pub struct Emitter {
    out: String,
    stack: Vec<Frame>,
    slot: Slot,
    /// Column of the key or dash that owns the value being written.
    owner_indent: usize,
    reuse: Option<ItemTexts>,
    /// Where each recorded item landed in `out`.
    recorded: Vec<(usize, Range<usize>)>,
    /// The length of the longest scalar written (copied items not counted).
    longest: usize,
}

impl Default for Emitter {
    fn default() -> Self {
        Emitter::with_capacity(0)
    }
}

impl Emitter {
    /// An empty document, its buffer sized for `bytes`.
    pub fn with_capacity(bytes: usize) -> Emitter {
        Emitter {
            out: String::with_capacity(bytes),
            stack: Vec::new(),
            slot: Slot::Top,
            owner_indent: 0,
            reuse: None,
            recorded: Vec::new(),
            longest: 0,
        }
    }

    /// Lets [`Self::reuse_item`] copy items from an earlier emission.
    pub fn with_reuse(mut self, texts: ItemTexts) -> Emitter {
        self.reuse = Some(texts);
        self
    }

    /// Gives back the earlier emission's texts (no item is copied after this).
    pub fn take_reuse(&mut self) -> Option<ItemTexts> {
        self.reuse.take()
    }

    /// The document and where each recorded item is in it.
    pub fn finish_with_items(mut self) -> (String, Vec<(usize, Range<usize>)>) {
        let recorded = std::mem::take(&mut self.recorded);
        (self.finish(), recorded)
    }

    /// Copies the earlier text of item `key` as the next item of the current sequence;
    /// returns where it starts, or `None` when there is no earlier text for it.
    pub fn reuse_item(&mut self, key: usize) -> Option<usize> {
        let reuse = self.reuse.as_ref()?;
        let span = reuse.spans.get(&key)?.clone();
        let text = std::str::from_utf8(reuse.text.get(span)?).ok()?;
        let frame = self
            .stack
            .last_mut()
            .expect("reuse_item() inside begin_seq()");
        frame.first = false;
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        let start = self.out.len();
        self.out.push_str(text);
        self.slot = Slot::Done;
        Some(start)
    }

    /// The length of the longest key or value written, copied items aside: the parser
    /// refuses scalars over its limit, so a commit needs to read back only a text where
    /// this is over it.
    pub fn longest_scalar(&self) -> usize {
        self.longest
    }

    /// Records that item `key` occupies `start..` up to the current end.
    pub fn record_item(&mut self, key: usize, start: usize) {
        self.recorded.push((key, start..self.out.len()));
    }

    /// The document text, ending in a newline.
    pub fn finish(mut self) -> String {
        if !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        self.out
    }

    /// Starts a new line at `indent`; returns where the line starts.
    fn pad(&mut self, indent: usize) -> usize {
        // A keep-chomped literal block (`|+`) already ended its last line.
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        let start = self.out.len();
        push_spaces(&mut self.out, indent);
        start
    }

    /// Separator between `key:`/`- ` and an inline value.
    fn inline_prefix(&mut self) {
        if self.slot == Slot::AfterKey {
            self.out.push(' ');
        }
    }

    fn child_indent(&self) -> usize {
        match self.slot {
            Slot::Top => 0,
            _ => self.owner_indent + 2,
        }
    }

    /// Starts a block mapping with `len` entries (`{}` when empty).
    pub fn begin_map(&mut self, len: usize) -> bool {
        self.begin(len, "{}")
    }

    /// Opens a block collection, or writes `empty` inline when it has no entries.
    fn begin(&mut self, len: usize, empty: &str) -> bool {
        if len == 0 {
            self.inline_prefix();
            self.out.push_str(empty);
            self.slot = Slot::Done;
            return false;
        }
        let frame = Frame {
            indent: self.child_indent(),
            inline_first: self.slot == Slot::AfterDash,
            first: true,
        };
        self.stack.push(frame);
        true
    }

    /// Writes a key the caller knows is a plain identifier (the model's field names).
    pub fn field(&mut self, key: &'static str) {
        let (indent, _) = self.next_line();
        self.out.push_str(key);
        self.close_key(indent);
    }

    /// Starts the next key or item of the collection being written: a new line at its
    /// indentation, unless it is the first one after a parent's dash. Returns the
    /// indentation and where the line starts.
    fn next_line(&mut self) -> (usize, usize) {
        let frame = self
            .stack
            .last_mut()
            .expect("inside begin_map() or begin_seq()");
        let inline = frame.first && frame.inline_first;
        frame.first = false;
        let indent = frame.indent;
        let start = if inline {
            self.out.len()
        } else {
            self.pad(indent)
        };
        (indent, start)
    }

    fn close_key(&mut self, indent: usize) {
        self.out.push(':');
        self.slot = Slot::AfterKey;
        self.owner_indent = indent;
    }

    /// A key of the mapping begun (a computed one; [`Emitter::field`] for a known name),
    /// quoted when it must be.
    pub fn key(&mut self, key: &str) {
        self.longest = self.longest.max(key.len());
        let (indent, _) = self.next_line();
        if key.len() < 1000 && is_plain_safe(key) {
            self.out.push_str(key);
        } else if key.len() < 1000 {
            push_double_quoted(&mut self.out, key);
        } else {
            // Implicit keys are limited to 1024 characters; use an explicit key.
            self.out.push_str("? ");
            push_double_quoted(&mut self.out, key);
            self.pad(indent);
        }
        self.close_key(indent);
    }

    /// Ends the mapping begun last.
    pub fn end_map(&mut self) {
        self.stack.pop();
        self.slot = Slot::Done;
    }

    /// Starts a block sequence with `len` items (`[]` when empty).
    pub fn begin_seq(&mut self, len: usize) -> bool {
        self.begin(len, "[]")
    }

    /// Starts the next item of the current sequence; returns where its line starts.
    pub fn item(&mut self) -> usize {
        let (indent, start) = self.next_line();
        self.out.push_str("- ");
        self.slot = Slot::AfterDash;
        self.owner_indent = indent;
        start
    }

    /// Ends the list begun last.
    pub fn end_seq(&mut self) {
        self.stack.pop();
        self.slot = Slot::Done;
    }

    /// Writes `[a, b]` for items the caller checked are plain-safe in flow context.
    pub fn flow_seq<'a>(&mut self, items: impl Iterator<Item = &'a str>) {
        self.inline_prefix();
        self.out.push('[');
        for (i, item) in items.enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.out.push_str(item);
        }
        self.out.push(']');
        self.slot = Slot::Done;
    }

    /// Writes text the caller knows is safe as a plain scalar (ids, timestamps, enums).
    pub fn plain(&mut self, text: &str) {
        self.longest = self.longest.max(text.len());
        self.inline_prefix();
        self.out.push_str(text);
        self.slot = Slot::Done;
    }

    /// `null` as the value in place.
    pub fn null(&mut self) {
        self.plain("null");
    }

    /// `true` or `false` as the value in place.
    pub fn bool(&mut self, value: bool) {
        self.plain(if value { "true" } else { "false" });
    }

    /// An integer as the value in place.
    pub fn int(&mut self, value: i64) {
        self.inline_prefix();
        self.out.push_str(itoa_buf(value).as_str());
        self.slot = Slot::Done;
    }

    /// A float as the value in place.
    pub fn float(&mut self, value: f64) {
        self.inline_prefix();
        push_float(&mut self.out, value);
        self.slot = Slot::Done;
    }

    /// Writes any string in the clearest safe style.
    pub fn str(&mut self, text: &str) {
        self.longest = self.longest.max(text.len());
        if is_plain_safe(text) {
            self.plain(text);
        } else if literal_block_fits(text) {
            self.literal_block(text);
        } else {
            self.inline_prefix();
            push_double_quoted(&mut self.out, text);
            self.slot = Slot::Done;
        }
    }

    fn literal_block(&mut self, text: &str) {
        self.inline_prefix();
        let body = text.trim_end_matches('\n');
        let trailing = text.len() - body.len();
        self.out.push('|');
        match trailing {
            0 => self.out.push('-'),
            1 => {}
            _ => self.out.push('+'),
        }
        let indent = self.child_indent();
        for line in text[..text.len() - trailing.min(1)].split('\n') {
            self.out.push('\n');
            if !line.is_empty() {
                push_spaces(&mut self.out, indent);
                self.out.push_str(line);
            }
        }
        if trailing > 1 {
            // With `|+` every trailing line break is content, including the last one.
            self.out.push('\n');
        }
        self.slot = Slot::Done;
    }

    /// Writes a generic value (keys the model does not know, free-form fields).
    pub fn node(&mut self, node: &Node) {
        match &node.value {
            Value::Null => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Int(i) => self.int(*i),
            Value::Float(f) => self.float(*f),
            Value::Str(s) => self.str(s),
            Value::Seq(items) => {
                if items.iter().all(|n| flow_item(n).is_some())
                    && items
                        .iter()
                        .map(|n| flow_item(n).map_or(0, str::len) + 2)
                        .sum::<usize>()
                        <= 72
                    && !items.is_empty()
                {
                    self.flow_seq(items.iter().filter_map(flow_item));
                } else if self.begin_seq(items.len()) {
                    for item in items {
                        self.item();
                        self.node(item);
                    }
                    self.end_seq();
                }
            }
            Value::Map(entries) => {
                if self.begin_map(entries.len()) {
                    self.entries(entries);
                    self.end_map();
                }
            }
        }
    }

    /// Writes mapping entries into the mapping currently open.
    pub fn entries(&mut self, entries: &[Entry]) {
        for e in entries {
            self.key(&e.key);
            self.node(&e.value);
        }
    }
}

fn push_spaces(out: &mut String, n: usize) {
    const SPACES: &str = "                                                                ";
    let mut left = n;
    while left > 0 {
        let take = left.min(SPACES.len());
        out.push_str(&SPACES[..take]);
        left -= take;
    }
}

fn flow_item(node: &Node) -> Option<&str> {
    node.as_str().filter(|s| is_flow_plain_safe(s))
}

/// Literal blocks are used for multi-line text only when every line survives editors and
/// readers unchanged: no trailing blanks, no tabs, no leading blank on the first line.
fn literal_block_fits(text: &str) -> bool {
    text.contains('\n')
        && !text.starts_with([' ', '\n'])
        && !text.trim_end_matches('\n').is_empty()
        && !text.contains(['\t', '\r'])
        && !text.chars().any(needs_escape)
        && text
            .trim_end_matches('\n')
            .split('\n')
            .all(|line| !line.ends_with(' '))
}

fn push_double_quoted(out: &mut String, text: &str) {
    out.push('"');
    let bytes = text.as_bytes();
    // Copy runs that need no escape in one go; only a few byte patterns start an escape:
    // ASCII controls, quote and backslash, and the UTF-8 forms of C1 controls (C2 80–9F),
    // U+2028/U+2029 (E2 80 A8/A9) and U+FEFF (EF BB BF).
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let len = match b {
            0x20..=0x7e if b != b'"' && b != b'\\' => {
                i += 1;
                continue;
            }
            0x80.. => {
                let special = match b {
                    0xc2 => bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)),
                    0xe2 => {
                        bytes.get(i + 1) == Some(&0x80)
                            && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9))
                    }
                    0xef => bytes.get(i + 1) == Some(&0xbb) && bytes.get(i + 2) == Some(&0xbf),
                    _ => false,
                };
                if !special {
                    i += 1;
                    continue;
                }
                if b == 0xc2 { 2 } else { 3 }
            }
            _ => 1,
        };
        out.push_str(&text[run..i]);
        let c = text[i..].chars().next().expect("at a char boundary");
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) <= 0xff => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
        i += len;
        run = i;
    }
    out.push_str(&text[run..]);
    out.push('"');
}

fn push_float(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str(".nan");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { ".inf" } else { "-.inf" });
    } else {
        let start = out.len();
        out.push_str(&value.to_string());
        // `1` would read back as an integer.
        if !out[start..].contains(['.', 'e', 'E']) {
            out.push_str(".0");
        }
    }
}

/// Small stack buffer for integer formatting without allocation.
struct IntBuf {
    buf: [u8; 20],
    start: usize,
}

impl IntBuf {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[self.start..]).expect("digits are ASCII")
    }
}

fn itoa_buf(value: i64) -> IntBuf {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let negative = value < 0;
    let mut v = value.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if negative {
        i -= 1;
        buf[i] = b'-';
    }
    IntBuf { buf, start: i }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Pos;
    use crate::parse;
    use proptest::prelude::*;

    fn emit(node: &Node) -> String {
        let mut e = Emitter::default();
        e.node(node);
        e.finish()
    }

    fn map(entries: Vec<(&str, Node)>) -> Node {
        Node::new(Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| Entry {
                    key: k.into(),
                    key_pos: Pos::UNKNOWN,
                    value: v,
                })
                .collect(),
        ))
    }

    fn seq(items: Vec<Node>) -> Node {
        Node::new(Value::Seq(items))
    }

    #[test]
    fn block_layout_reads_naturally() {
        let doc = map(vec![
            ("version", Node::new(Value::Int(1))),
            (
                "tasks",
                seq(vec![map(vec![
                    ("id", Node::str("t-1")),
                    ("depends_on", seq(vec![Node::str("t-0"), Node::str("t-2")])),
                    (
                        "history",
                        seq(vec![map(vec![("event", Node::str("created"))])]),
                    ),
                    ("notes", Node::str("line one\nline two\n")),
                ])]),
            ),
            ("agents", map(vec![])),
            ("empty", seq(vec![])),
            (
                "nested",
                seq(vec![seq(vec![map(vec![("k", Node::str("yes"))])])]),
            ),
        ]);
        let text = emit(&doc);
        assert_eq!(
            text,
            "version: 1\n\
             tasks:\n  \
               - id: t-1\n    \
                 depends_on: [t-0, t-2]\n    \
                 history:\n      \
                   - event: created\n    \
                 notes: |\n      \
                   line one\n      \
                   line two\n\
             agents: {}\n\
             empty: []\n\
             nested:\n  \
               - - k: \"yes\"\n"
        );
        assert_eq!(parse::parse(&text).unwrap().root.unwrap(), doc);
    }

    #[test]
    fn tricky_strings_round_trip() {
        for s in [
            "",
            " lead",
            "trail ",
            "a: b",
            "x #y",
            "multi\nline",
            "ends\n\n",
            "\n",
            "\n\nlead newlines",
            "tab\there",
            "quote\"back\\slash",
            "nul\u{0}bell\u{7}",
            "line\u{2028}sep",
            "é ü 日本",
            "0x10",
            "1e5",
            "2026-03-01",
            "null",
            "~",
            "-",
            "- item",
            "trailing spaces  \non lines",
            "   \n  x",
            "crlf\r\nline",
        ] {
            let doc = map(vec![("k", Node::str(s)), ("l", seq(vec![Node::str(s)]))]);
            let text = emit(&doc);
            let back = parse::parse(&text).unwrap_or_else(|e| panic!("{s:?}: {e}\n{text}"));
            assert_eq!(back.root.unwrap(), doc, "{s:?} via\n{text}");
        }
    }

    #[test]
    fn numbers_keep_their_kind() {
        let doc = map(vec![
            ("i", Node::new(Value::Int(-42))),
            ("big", Node::new(Value::Int(i64::MIN))),
            ("f", Node::new(Value::Float(1.0))),
            ("g", Node::new(Value::Float(0.1))),
            ("h", Node::new(Value::Float(1e300))),
            ("inf", Node::new(Value::Float(f64::NEG_INFINITY))),
            ("nan", Node::new(Value::Float(f64::NAN))),
            ("n", Node::new(Value::Null)),
            ("b", Node::new(Value::Bool(false))),
        ]);
        let text = emit(&doc);
        assert_eq!(parse::parse(&text).unwrap().root.unwrap(), doc, "{text}");
    }

    #[test]
    fn awkward_keys_are_quoted() {
        let long = "k".repeat(1200);
        let doc = map(vec![
            ("yes", Node::new(Value::Int(1))),
            ("a: b", Node::new(Value::Int(2))),
            ("1", Node::new(Value::Int(3))),
            ("<<", Node::new(Value::Int(4))),
            (long.as_str(), Node::new(Value::Int(5))),
            ("", Node::new(Value::Int(6))),
        ]);
        let text = emit(&doc);
        assert_eq!(parse::parse(&text).unwrap().root.unwrap(), doc, "{text}");
    }

    fn arb_node() -> impl Strategy<Value = Node> {
        let leaf = prop_oneof![
            Just(Node::new(Value::Null)),
            any::<bool>().prop_map(|b| Node::new(Value::Bool(b))),
            any::<i64>().prop_map(|i| Node::new(Value::Int(i))),
            any::<f64>().prop_map(|f| Node::new(Value::Float(f))),
            "\\PC{0,20}".prop_map(Node::str),
            "[ a-z0-9:#\\-\n\t\"'\\\\]{0,12}".prop_map(Node::str),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(|v| Node::new(Value::Seq(v))),
                prop::collection::vec(("[a-z_ :#-]{0,8}", inner), 0..5).prop_map(|kv| {
                    let mut entries: Vec<Entry> = Vec::new();
                    for (k, v) in kv {
                        if !entries.iter().any(|e| e.key == k) {
                            entries.push(Entry {
                                key: k,
                                key_pos: Pos::UNKNOWN,
                                value: v,
                            });
                        }
                    }
                    Node::new(Value::Map(entries))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_tree_round_trips(node in arb_node()) {
            let doc = map(vec![("root", node)]);
            let text = emit(&doc);
            let back = parse::parse(&text);
            prop_assert!(back.is_ok(), "{:?}\n{}", back.err(), text);
            prop_assert_eq!(back.unwrap().root.unwrap(), doc, "{}", text);
        }
    }
}
