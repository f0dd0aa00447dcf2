//! A YAML document as a tree of values with source positions.
//!
//! The parser produces this tree; the typed model is decoded from it, keys the model does
//! not know are kept as subtrees (so they are written back unchanged in meaning), and
//! findings are located in it by path. Positions never take part in equality.

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A 1-based line and column in the source text; `0:0` when the node was not parsed.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// 1-based; 0 when unknown.
    pub line: u32,
    /// 1-based; 0 when unknown.
    pub column: u32,
}

impl Pos {
    /// A node that was not parsed from text (made by liza, or from JSON).
    pub const UNKNOWN: Pos = Pos { line: 0, column: 0 };

    /// The position at `line`, `column` (both 1-based).
    pub fn new(line: u32, column: u32) -> Pos {
        Pos { line, column }
    }

    /// Whether it comes from parsed text.
    pub fn is_known(self) -> bool {
        self.line > 0
    }
}

impl fmt::Debug for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One node of the tree: a value and where it starts.
#[derive(Clone, Debug)]
pub struct Node {
    /// What it holds.
    pub value: Value,
    /// Where it starts in the text it was parsed from.
    pub pos: Pos,
}

/// A YAML value under the core schema.
#[derive(Clone, Debug)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer that fits 64 bits.
    Int(i64),
    /// A number with a fraction or exponent, `.inf` or `.nan`.
    Float(f64),
    /// Any other scalar, quoted or not.
    Str(String),
    /// A list, in order.
    Seq(Vec<Node>),
    /// A mapping, in the text's key order.
    Map(Vec<Entry>),
}

/// One `key: value` pair of a mapping; keys are kept as their scalar text.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The key's scalar text.
    pub key: String,
    /// Where the key starts.
    pub key_pos: Pos,
    /// Its value.
    pub value: Node,
}

impl Node {
    /// `value` at no position (made, not parsed).
    pub fn new(value: Value) -> Node {
        Node {
            value,
            pos: Pos::UNKNOWN,
        }
    }

    /// `value` parsed at `pos`.
    pub fn at(value: Value, pos: Pos) -> Node {
        Node { value, pos }
    }

    /// A string node at no position.
    pub fn str(text: impl Into<String>) -> Node {
        Node::new(Value::Str(text.into()))
    }

    /// The value under `key` when this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|e| e.key == key).map(|e| &e.value),
            _ => None,
        }
    }

    /// The entry (with its key position) under `key` when this node is a mapping.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    /// The text, when this node is a string.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether it is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// A short name of the value's kind, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// Converts to JSON for `--json` output (mapping order kept).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.value == other.value
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.key == other.key && self.value == other.value
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            // Bitwise, so NaN equals itself and a value always equals its own copy.
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Seq(a), Value::Seq(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => a == b,
            _ => false,
        }
    }
}

/// Keys of a record the model does not know, kept in their original order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extra(pub Vec<Entry>);

impl Extra {
    /// Whether no unknown key was kept.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value kept under `key`.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.0.iter().find(|e| e.key == key).map(|e| &e.value)
    }

    /// The entries, in their original order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.0.iter()
    }

    /// Sets `key` (replacing an existing entry in place, or appending).
    pub fn insert(&mut self, key: &str, value: Node) {
        match self.0.iter_mut().find(|e| e.key == key) {
            Some(entry) => entry.value = value,
            None => self.0.push(Entry {
                key: key.to_owned(),
                key_pos: Pos::UNKNOWN,
                value,
            }),
        }
    }
}

// JSON form (parse cache and --json output): plain JSON, mappings as objects in order.
// JSON cannot hold non-finite floats, so those become {"$float": "inf" | "-inf" | "nan"}.
const FLOAT_TAG: &str = "$float";

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.value {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) if f.is_finite() => s.serialize_f64(*f),
            Value::Float(f) => {
                let text = if f.is_nan() {
                    "nan"
                } else if *f > 0.0 {
                    "inf"
                } else {
                    "-inf"
                };
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(FLOAT_TAG, text)?;
                map.end()
            }
            Value::Str(t) => s.serialize_str(t),
            Value::Seq(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Map(entries) => serialize_entries(entries, s),
        }
    }
}

fn serialize_entries<S: Serializer>(entries: &[Entry], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(entries.len()))?;
    for e in entries {
        map.serialize_entry(&e.key, &e.value)?;
    }
    map.end()
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_entries(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Extra, D::Error> {
        match Node::deserialize(d)?.value {
            Value::Map(entries) => Ok(Extra(entries)),
            _ => Err(de::Error::custom("expected a mapping of extra keys")),
        }
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::new(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::new(Value::Null))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::new(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::new(Value::Int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::new(match i64::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Float(v as f64),
        }))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::new(Value::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::str(v))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::new(Value::Seq(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<Node>()?;
            entries.push(Entry {
                key,
                key_pos: Pos::UNKNOWN,
                value,
            });
        }
        if let [only] = entries.as_slice()
            && only.key == FLOAT_TAG
            && let Some(text) = only.value.as_str()
        {
            let f = match text {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                _ => f64::NAN,
            };
            return Ok(Node::new(Value::Float(f)));
        }
        Ok(Node::new(Value::Map(entries)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_ignores_positions() {
        let a = Node::at(Value::Str("x".into()), Pos::new(1, 2));
        let b = Node::at(Value::Str("x".into()), Pos::new(9, 9));
        assert_eq!(a, b);
    }

    #[test]
    fn json_round_trip_keeps_kinds_and_order() {
        let node = Node::new(Value::Map(vec![
            Entry {
                key: "z".into(),
                key_pos: Pos::UNKNOWN,
                value: Node::new(Value::Float(1.0)),
            },
            Entry {
                key: "a".into(),
                key_pos: Pos::UNKNOWN,
                value: Node::new(Value::Int(1)),
            },
            Entry {
                key: "inf".into(),
                key_pos: Pos::UNKNOWN,
                value: Node::new(Value::Float(f64::NEG_INFINITY)),
            },
            Entry {
                key: "nan".into(),
                key_pos: Pos::UNKNOWN,
                value: Node::new(Value::Float(f64::NAN)),
            },
        ]));
        let json = serde_json::to_string(&node).unwrap();
        assert_eq!(
            json,
            r#"{"z":1.0,"a":1,"inf":{"$float":"-inf"},"nan":{"$float":"nan"}}"#
        );
        let back: Node = serde_json::from_str(&json).unwrap();
        assert_eq!(back, node);
    }
}
