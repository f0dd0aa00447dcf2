//! Mapping between the [`Node`] tree and the typed model, both ways.
//!
//! Decoding is lenient in one precise sense: it never stops at the first problem. Every
//! field of the wrong type, unknown status or malformed id becomes a [`Finding`] with its
//! position, and decoding goes on, so `liza validate` reports all of them. A state with
//! any decoding finding cannot be used by a transaction (it is not representable).
//!
//! Records (structs with known keys plus preserved unknown keys) are described once with
//! `record!`; enums with `yaml_enum!`.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::finding::{FieldPath, Finding, Seg};
use super::ids::{AgentId, IdError, TaskId};
use super::node::{Entry, Node, Pos, Value};
use super::timestamp::Timestamp;
use super::yaml::{Emitter, is_flow_plain_safe};

/// What `record!` and `yaml_enum!` name from the YAML engine, for the crates that use them.
#[doc(hidden)]
pub mod macro_support {
    pub use liza_yaml::Emitter;
    pub use liza_yaml::node::{Extra, Node};
}

/// Collects findings while walking the tree, with the current path.
#[derive(Default)]
pub struct Decoder {
    path: Vec<Seg>,
    /// The findings recorded so far, in the order they were found.
    pub findings: Vec<Finding>,
}

impl Decoder {
    /// The path of the field being decoded.
    pub fn path(&self) -> FieldPath {
        FieldPath(self.path.clone())
    }

    /// Enters the value of mapping key `key`.
    pub fn push_key(&mut self, key: &str) {
        self.path.push(Seg::Key(key.to_owned()));
    }

    /// Enters item `index` of a list.
    pub fn push_index(&mut self, index: usize) {
        self.path.push(Seg::Index(index));
    }

    /// Leaves the key or item entered last.
    pub fn pop(&mut self) {
        self.path.pop();
    }

    /// Records an error at `pos` for the current path.
    pub fn error(&mut self, rule: Option<u8>, check: &'static str, pos: Pos, message: String) {
        let finding = Finding::error(rule, check, self.path(), message).at(pos);
        self.findings.push(finding);
    }

    /// Records an error at `pos` for the current path, with a hint saying how to fix it.
    pub fn error_with_hint(
        &mut self,
        rule: Option<u8>,
        check: &'static str,
        pos: Pos,
        message: String,
        hint: String,
    ) {
        let finding = Finding::error(rule, check, self.path(), message)
            .at(pos)
            .with_hint(hint);
        self.findings.push(finding);
    }

    /// Records "expected X, found Y" for `node`.
    pub fn expected<T>(&mut self, node: &Node, what: &str) -> Option<T> {
        let found = match &node.value {
            Value::Str(s) if s.len() <= 40 => format!("{s:?}"),
            _ => node.kind_name().to_owned(),
        };
        self.error(
            None,
            "type",
            node.pos,
            format!("expected {what}, found {found}"),
        );
        None
    }

    /// The entries of `node`, or a finding when it is not a mapping.
    pub fn mapping<'n>(&mut self, node: &'n Node) -> Option<&'n [Entry]> {
        match &node.value {
            Value::Map(entries) => Some(entries),
            _ => self.expected(node, "a mapping"),
        }
    }

    /// Decodes `entry.value` as a required field: `Absent` is not possible here, `Invalid`
    /// when it is null or does not decode.
    pub fn required<T: Decode>(
        &mut self,
        entry: &Entry,
        rule: Option<u8>,
        check: &'static str,
    ) -> Slot<T> {
        self.push_key(&entry.key);
        let slot = if entry.value.is_null() {
            self.error(
                rule,
                check,
                entry.key_pos,
                format!("{} must not be null", entry.key),
            );
            Slot::Invalid
        } else {
            match T::decode(&entry.value, self) {
                Some(v) => Slot::Present(v),
                None => Slot::Invalid,
            }
        };
        self.pop();
        slot
    }

    /// Decodes `entry.value` as an optional field (null means absent).
    pub fn optional<T: Decode>(&mut self, entry: &Entry) -> Option<T> {
        if entry.value.is_null() {
            return None;
        }
        self.push_key(&entry.key);
        let value = T::decode(&entry.value, self);
        self.pop();
        value
    }

    /// Records that the required `key` is absent from the mapping at `pos`.
    pub fn missing(&mut self, rule: Option<u8>, check: &'static str, pos: Pos, key: &str) {
        self.push_key(key);
        self.error(rule, check, pos, format!("required key {key} is missing"));
        self.pop();
    }
}

/// A required field while decoding a record.
pub enum Slot<T> {
    /// The key is not in the mapping.
    Absent,
    /// The key is there but its value is null or does not decode (a finding says why).
    Invalid,
    /// The key's value, decoded.
    Present(T),
}

impl<T> Slot<T> {
    /// The decoded value, if there is one.
    pub fn take(self) -> Option<T> {
        match self {
            Slot::Present(v) => Some(v),
            _ => None,
        }
    }
}

/// Reads a model value from a node, recording findings for what does not fit.
pub trait Decode: Sized {
    /// The value `node` holds, recording in `d` a finding for each part that does not fit;
    /// `None` when no value can be made of it.
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self>;
}

/// Writes a model value as YAML.
pub trait Emit {
    /// Writes the value at the emitter's current position.
    fn emit(&self, e: &mut Emitter);

    /// The text of this value when it can sit in a flow list (`[a, b]`).
    fn flow_item(&self) -> Option<&str> {
        None
    }
}

impl Decode for String {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.value {
            Value::Str(s) => Some(s.clone()),
            _ => d.expected(
                node,
                "text (quote it if it looks like a number or a boolean)",
            ),
        }
    }
}

impl Emit for String {
    fn emit(&self, e: &mut Emitter) {
        e.str(self);
    }
    fn flow_item(&self) -> Option<&str> {
        is_flow_plain_safe(self).then_some(self.as_str())
    }
}

impl Decode for i64 {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.value {
            Value::Int(i) => Some(*i),
            _ => d.expected(node, "an integer"),
        }
    }
}

impl Emit for i64 {
    fn emit(&self, e: &mut Emitter) {
        e.int(*self);
    }
}

impl Decode for bool {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.value {
            Value::Bool(b) => Some(*b),
            _ => d.expected(node, "true or false"),
        }
    }
}

impl Emit for bool {
    fn emit(&self, e: &mut Emitter) {
        e.bool(*self);
    }
}

/// A number that keeps whether it was written as an integer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Number {
    /// Written as an integer.
    Int(i64),
    /// Written as a float.
    Float(f64),
}

impl Number {
    /// The value as a float, whichever way it was written.
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

impl Decode for Number {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.value {
            Value::Int(i) => Some(Number::Int(*i)),
            Value::Float(f) => Some(Number::Float(*f)),
            _ => d.expected(node, "a number"),
        }
    }
}

impl Emit for Number {
    fn emit(&self, e: &mut Emitter) {
        match self {
            Number::Int(i) => e.int(*i),
            Number::Float(f) => e.float(*f),
        }
    }
}

impl Decode for Timestamp {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        match &node.value {
            Value::Str(s) => match Timestamp::parse(s) {
                Ok(ts) => Some(ts),
                Err(err) => {
                    d.error_with_hint(
                        Some(11),
                        "timestamp",
                        node.pos,
                        err.to_string(),
                        "write UTC RFC 3339 with seconds and Z, e.g. 2026-03-01T09:00:00Z".into(),
                    );
                    None
                }
            },
            _ => {
                d.error(
                    Some(11),
                    "timestamp",
                    node.pos,
                    format!("expected an RFC 3339 timestamp, found {}", node.kind_name()),
                );
                None
            }
        }
    }
}

impl Emit for Timestamp {
    fn emit(&self, e: &mut Emitter) {
        match self.canonical() {
            Some(buf) => e.plain(std::str::from_utf8(&buf).expect("ASCII digits")),
            None => e.plain(&self.to_string()),
        }
    }
}

/// Ids are text; a bare number (`id: 7`) is accepted as the id `"7"`.
fn id_text(node: &Node) -> Option<String> {
    match &node.value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

impl Decode for TaskId {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let Some(text) = id_text(node) else {
            return d.expected(node, "a task id");
        };
        match TaskId::parse(&text) {
            Ok(id) => Some(id),
            Err(err) => {
                d.error(Some(2), "task-id", node.pos, err.to_string());
                None
            }
        }
    }
}

impl Emit for TaskId {
    fn emit(&self, e: &mut Emitter) {
        e.str(self.as_str());
    }
    fn flow_item(&self) -> Option<&str> {
        is_flow_plain_safe(self.as_str()).then_some(self.as_str())
    }
}

impl Decode for AgentId {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let Some(text) = id_text(node) else {
            return d.expected(node, "an agent id");
        };
        match AgentId::parse(&text) {
            Ok(id) => Some(id),
            Err(err) => {
                d.error(Some(8), "agent-id", node.pos, err.to_string());
                None
            }
        }
    }
}

impl Emit for AgentId {
    fn emit(&self, e: &mut Emitter) {
        e.plain(self.as_str());
    }
    fn flow_item(&self) -> Option<&str> {
        Some(self.as_str())
    }
}

impl Decode for Node {
    fn decode(node: &Node, _: &mut Decoder) -> Option<Self> {
        Some(node.clone())
    }
}

impl Emit for Node {
    fn emit(&self, e: &mut Emitter) {
        e.node(self);
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let Value::Seq(items) = &node.value else {
            return d.expected(node, "a list");
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            d.push_index(i);
            if let Some(v) = T::decode(item, d) {
                out.push(v);
            }
            d.pop();
        }
        // Items that did not decode are left out (their findings are recorded), so the
        // rest of the document can still be checked.
        Some(out)
    }
}

impl<T: Emit> Emit for Vec<T> {
    fn emit(&self, e: &mut Emitter) {
        emit_list(self, e);
    }
}

/// A list: in flow style (`[a, b]`) when its items are short scalars, else one per line.
pub fn emit_list<T: Emit>(items: &[T], e: &mut Emitter) {
    let flow: Option<Vec<&str>> = items.iter().map(Emit::flow_item).collect();
    match flow {
        Some(flow) if !flow.is_empty() && flow.iter().map(|s| s.len() + 2).sum::<usize>() <= 72 => {
            e.flow_seq(flow.into_iter());
        }
        _ => {
            if e.begin_seq(items.len()) {
                for item in items {
                    e.item();
                    item.emit(e);
                }
                e.end_seq();
            }
        }
    }
}

/// A mapping keyed by ids, in file order (agents, handoff, archived).
#[derive(Clone, PartialEq)]
pub struct IdMap<K, V>(pub Vec<(K, V)>);

impl<K, V> Default for IdMap<K, V> {
    fn default() -> Self {
        IdMap(Vec::new())
    }
}

impl<K: PartialEq, V> IdMap<K, V> {
    /// The value for `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value for `key`, to change it.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` is in the map.
    pub fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces, keeping the position of an existing key.
    pub fn insert(&mut self, key: K, value: V) {
        match self.get_mut(&key) {
            Some(slot) => *slot = value,
            None => self.0.push((key, value)),
        }
    }

    /// Removes `key`, returning its value; the others keep their order.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }

    /// The entries in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for IdMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

/// Keys of an [`IdMap`]: parsed from the key text with a finding on failure.
pub trait MapKey: Sized + PartialEq + AsRef<str> {
    /// The key written as `text`, or why it is not one.
    fn parse_key(text: &str) -> Result<Self, IdError>;
    /// The validation rule a malformed key is reported under (`None`: none of the
    /// numbered ones).
    const RULE: Option<u8>;
    /// The `check` a malformed key is reported under.
    const CHECK: &'static str;
}

impl MapKey for TaskId {
    fn parse_key(text: &str) -> Result<Self, IdError> {
        TaskId::parse(text)
    }
    const RULE: Option<u8> = Some(2);
    const CHECK: &'static str = "task-id";
}

impl MapKey for String {
    fn parse_key(text: &str) -> Result<Self, IdError> {
        Ok(text.to_owned())
    }
    const RULE: Option<u8> = None;
    const CHECK: &'static str = "key";
}

impl MapKey for AgentId {
    fn parse_key(text: &str) -> Result<Self, IdError> {
        AgentId::parse(text)
    }
    const RULE: Option<u8> = Some(8);
    const CHECK: &'static str = "agent-id";
}

impl<K: MapKey, V: Decode> Decode for IdMap<K, V> {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let entries = d.mapping(node)?;
        let mut out = Vec::with_capacity(entries.len());
        for entry in entries {
            d.push_key(&entry.key);
            let key = match K::parse_key(&entry.key) {
                Ok(k) => Some(k),
                Err(e) => {
                    d.error(K::RULE, K::CHECK, entry.key_pos, e.to_string());
                    None
                }
            };
            let value = if entry.value.is_null() {
                d.error(
                    None,
                    "type",
                    entry.key_pos,
                    format!("{} has no value (null)", entry.key),
                );
                None
            } else {
                V::decode(&entry.value, d)
            };
            d.pop();
            if let (Some(k), Some(v)) = (key, value) {
                out.push((k, v));
            }
        }
        Some(IdMap(out))
    }
}

impl<K: AsRef<str>, V: Emit> Emit for IdMap<K, V> {
    fn emit(&self, e: &mut Emitter) {
        if e.begin_map(self.0.len()) {
            for (k, v) in &self.0 {
                e.key(k.as_ref());
                v.emit(e);
            }
            e.end_map();
        }
    }
}

impl<K: AsRef<str>, V: Serialize> Serialize for IdMap<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k.as_ref(), v)?;
        }
        map.end()
    }
}

impl<'de, K, V> Deserialize<'de> for IdMap<K, V>
where
    K: Deserialize<'de>,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<K, V>(PhantomData<(K, V)>);
        impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for MapVisitor<K, V> {
            type Value = IdMap<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map keyed by id")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((k, v)) = map.next_entry::<K, V>()? {
                    out.push((k, v));
                }
                Ok(IdMap(out))
            }
        }
        d.deserialize_map(MapVisitor(PhantomData))
    }
}

/// Implements [`Decode`] and [`Emit`] for a struct with named YAML keys and an
/// `extra: Extra` field that keeps every key not listed.
///
/// Fields are listed in the order they are written: `req field: "key"` for required
/// fields (type `T`), `opt field: "key"` for optional ones (type `Option<T>`).
/// `missing = (rule, check)` sets how an absent required key is reported.
#[macro_export]
macro_rules! record {
    ($ty:ident $(missing = ($rule:expr, $check:expr))? {
        $($kind:ident $field:ident : $key:literal),* $(,)?
    }) => {
        impl $crate::codec::Decode for $ty {
            fn decode(
                node: &$crate::codec::macro_support::Node,
                d: &mut $crate::codec::Decoder,
            ) -> Option<Self> {
                let entries = d.mapping(node)?;
                #[allow(unused_variables)]
                let (rule, check): (Option<u8>, &'static str) = (None, "required");
                $(let (rule, check): (Option<u8>, &'static str) = ($rule, $check);)?
                $(let mut $field = record!(@slot $kind);)*
                let mut extra = $crate::codec::macro_support::Extra::default();
                for entry in entries {
                    match entry.key.as_str() {
                        $($key => { $field = record!(@decode $kind d, entry, rule, check); })*
                        _ => extra.0.push(entry.clone()),
                    }
                }
                $(record!(@check_missing $kind $field, d, node, $key, rule, check);)*
                Some($ty { $($field: record!(@take $kind $field),)* extra })
            }
        }

        impl $crate::codec::Emit for $ty {
            fn emit(&self, e: &mut $crate::codec::macro_support::Emitter) {
                let len = self.extra.0.len() $(+ record!(@present $kind self.$field))*;
                if e.begin_map(len) {
                    $(record!(@emit $kind e, self.$field, $key);)*
                    e.entries(&self.extra.0);
                    e.end_map();
                }
            }
        }
    };
    (@slot req) => { $crate::codec::Slot::Absent };
    (@slot opt) => { None };
    (@decode req $d:ident, $entry:ident, $rule:ident, $check:ident) => { $d.required($entry, $rule, $check) };
    (@decode opt $d:ident, $entry:ident, $rule:ident, $check:ident) => { $d.optional($entry) };
    (@check_missing req $field:ident, $d:ident, $node:ident, $key:literal, $rule:ident, $check:ident) => {
        if let $crate::codec::Slot::Absent = $field {
            $d.missing($rule, $check, $node.pos, $key);
        }
    };
    (@check_missing opt $field:ident, $d:ident, $node:ident, $key:literal, $rule:ident, $check:ident) => {};
    (@take req $field:ident) => { $field.take()? };
    (@take opt $field:ident) => { $field };
    (@present req $value:expr) => { 1usize };
    (@present opt $value:expr) => { usize::from($value.is_some()) };
    (@emit req $e:ident, $value:expr, $key:literal) => {
        $e.field($key);
        $crate::codec::Emit::emit(&$value, $e);
    };
    (@emit opt $e:ident, $value:expr, $key:literal) => {
        if let Some(v) = &$value {
            $e.field($key);
            $crate::codec::Emit::emit(v, $e);
        }
    };
}
pub use crate::record;

/// Declares an enum of YAML names with [`Decode`], [`Emit`], serde and `as_str`.
/// Unknown names are reported under `rule`/`check` with the list of valid ones.
#[macro_export]
macro_rules! yaml_enum {
    ($(#[$meta:meta])* $vis:vis enum $ty:ident ($rule:expr, $check:literal, $what:literal) {
        $($(#[$vmeta:meta])* $variant:ident = $name:literal),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        $vis enum $ty {
            $($(#[$vmeta])* #[serde(rename = $name)] $variant,)*
        }

        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),*];

            /// The name written in the YAML.
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $name,)* }
            }

            /// The value named `text` (exactly, case-sensitive), if there is one.
            pub fn parse(text: &str) -> Option<$ty> {
                match text { $($name => Some($ty::$variant),)* _ => None }
            }

            /// The valid names, for messages.
            pub fn names() -> String {
                [$($name),*].join(", ")
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::codec::Decode for $ty {
            fn decode(
                node: &$crate::codec::macro_support::Node,
                d: &mut $crate::codec::Decoder,
            ) -> Option<Self> {
                let parsed = node.as_str().and_then($ty::parse);
                if parsed.is_none() {
                    let found = match node.as_str() {
                        Some(s) => format!("{s:?}"),
                        None => node.kind_name().to_owned(),
                    };
                    d.error($rule, $check, node.pos, format!(
                        "{} {found} is not one of {} (names are case-sensitive)",
                        $what, $ty::names()
                    ));
                }
                parsed
            }
        }

        impl $crate::codec::Emit for $ty {
            fn emit(&self, e: &mut $crate::codec::macro_support::Emitter) {
                e.plain(self.as_str());
            }
            fn flow_item(&self) -> Option<&str> {
                Some(self.as_str())
            }
        }
    };
}
pub use crate::yaml_enum;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Extra;
    use crate::yaml;

    #[derive(Debug, PartialEq)]
    struct Point {
        x: i64,
        label: Option<String>,
        extra: Extra,
    }
    record!(Point missing = (Some(1), "point-key") { req x: "x", opt label: "label" });

    fn decode<T: Decode>(text: &str) -> (Option<T>, Vec<Finding>) {
        let root = yaml::parse(text).unwrap().root.unwrap();
        let mut d = Decoder::default();
        let v = T::decode(&root, &mut d);
        (v, d.findings)
    }

    #[test]
    fn records_keep_unknown_keys_in_order() {
        let (p, findings) = decode::<Point>("zz: 1\nx: 3\nnote: {a: b}\n");
        assert!(findings.is_empty());
        let p = p.unwrap();
        assert_eq!(p.x, 3);
        let keys: Vec<_> = p.extra.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["zz", "note"]);
        let mut e = Emitter::default();
        p.emit(&mut e);
        assert_eq!(e.finish(), "x: 3\nzz: 1\nnote:\n  a: b\n");
    }

    #[test]
    fn every_problem_is_reported_with_its_position() {
        let (p, findings) = decode::<Point>("label: 7\ny: 1\n");
        assert!(p.is_none());
        assert_eq!(findings.len(), 2, "{findings:?}");
        assert_eq!(findings[0].check, "type");
        assert_eq!((findings[0].line, findings[0].column), (1, 8));
        assert_eq!(findings[0].path.to_string(), "label");
        assert_eq!(findings[1].check, "point-key");
        assert_eq!(findings[1].rule, Some(1));
        assert_eq!(findings[1].path.to_string(), "x");
    }

    #[test]
    fn null_required_fields_are_reported_and_null_optionals_are_absent() {
        let (p, findings) = decode::<Point>("x: ~\nlabel: null\n");
        assert!(p.is_none());
        assert_eq!(findings[0].message, "x must not be null");
        let (p, findings) = decode::<Point>("x: 1\nlabel: null\n");
        assert!(findings.is_empty());
        assert_eq!(p.unwrap().label, None);
    }

    #[test]
    fn id_maps_report_bad_keys() {
        let (m, findings) = decode::<IdMap<AgentId, i64>>("coder-1: 1\ncoder1: 2\n");
        assert_eq!(m.unwrap().len(), 1);
        assert_eq!(findings[0].check, "agent-id");
        assert_eq!(findings[0].line, 2);
    }
}
