//! YAML text → [`Node`] tree with positions, from the event parser of `serde-saphyr`
//! (`granit-parser`, re-exported by it).
//!
//! Building the tree from events rather than through serde's data model keeps the full
//! parse of a 4 MB blackboard within the validate budget (P8) and gives every node its
//! line and column for findings.

use std::collections::HashSet;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, Span, Tag};

use super::scalar::{resolve_float, resolve_int, resolve_plain};
use crate::node::{Entry, Node, Pos, Value};

/// Deepest nesting accepted; deeper documents are refused rather than risking the stack
/// in the recursive decoder, emitter and drop.
const MAX_DEPTH: usize = 128;

/// Most nodes a document may hold, aliases expanded.
const MAX_NODES: usize = 20_000_000;

/// Most aliases (`*name`) in one document. liza never writes one; a person's hand edit
/// needs a handful.
const MAX_ALIASES: usize = 10_000;

/// Longest scalar accepted (a task description of 8 MiB is already absurd).
pub const MAX_SCALAR_BYTES: usize = 8 * 1024 * 1024;

/// What aliases may add to a document, in [`weight`] units (nodes plus text bytes): no
/// more than the document's own size, with a floor so small edits can use them freely.
/// A string reached through an alias is copied at every use, so a "billion laughs" of
/// long strings is as dangerous as one of deep lists: both are counted by what they copy.
fn alias_budget(text_len: usize) -> usize {
    text_len.max(256 * 1024)
}

/// A YAML syntax or structure error at a position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// What is wrong, in a person's words.
    pub message: String,
    /// Where: line and column.
    pub pos: Pos,
}

/// The result of parsing one document.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// `None` for a file with no document at all (empty or only comments).
    pub root: Option<Node>,
    /// Whether the text holds comments (a human wrote it; see specs/blackboard.md *Hand edits*).
    pub has_comments: bool,
}

enum Frame {
    Seq {
        items: Vec<Node>,
        pos: Pos,
        anchor: usize,
    },
    Map {
        entries: Vec<Entry>,
        key: Option<(String, Pos, bool)>,
        merges: Vec<Node>,
        /// The keys of a large mapping, so a duplicate is found without rescanning it
        /// (a hand edit with a million keys in one mapping must not take hours).
        seen: Option<HashSet<String>>,
        pos: Pos,
        anchor: usize,
    },
}

/// Mappings up to this many keys are checked for duplicates by scanning them.
const SCAN_KEYS: usize = 16;

/// Parses exactly one YAML document.
pub fn parse(text: &str) -> Result<Parsed, YamlError> {
    let parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: Vec<Option<Node>> = Vec::new();
    let mut root: Option<Node> = None;
    let mut has_comments = false;
    let mut documents = 0usize;
    let mut nodes = 0usize;
    let mut aliases = 0usize;
    let mut expanded = 0usize;
    let budget = alias_budget(text.len());

    for next in parser {
        let (event, span) = next.map_err(|e| YamlError {
            message: e.info(),
            pos: Pos::new(e.marker().line().max(1) as u32, e.marker().col() as u32 + 1),
        })?;
        let pos = pos_of(&span);
        let node = match event {
            Event::StreamStart | Event::DocumentEnd => continue,
            Event::StreamEnd => break,
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError {
                        message: "the file holds more than one YAML document; state.yaml is a single document".into(),
                        pos,
                    });
                }
                continue;
            }
            #[allow(unreachable_patterns)]
            Event::Comment(..) => {
                has_comments = true;
                continue;
            }
            Event::Alias(id) => {
                let Some(Some(target)) = anchors.get(id) else {
                    return Err(err("alias to an anchor that is not defined before it", pos));
                };
                aliases += 1;
                if aliases > MAX_ALIASES {
                    return Err(err(
                        &format!("more than {MAX_ALIASES} aliases; write the values out"),
                        pos,
                    ));
                }
                let (count, copied) = weight(target);
                nodes += count;
                expanded += copied;
                if nodes > MAX_NODES || expanded > budget {
                    return Err(err(
                        "alias expansion makes the document too large (an alias bomb?); \
                         write the values out instead of repeating aliases",
                        pos,
                    ));
                }
                Node::at(target.value.clone(), pos)
            }
            Event::Scalar(text, style, anchor, tag) => {
                nodes += 1;
                if text.len() > MAX_SCALAR_BYTES {
                    return Err(err(
                        &format!(
                            "a value of {} bytes is longer than the {} MiB liza accepts",
                            text.len(),
                            MAX_SCALAR_BYTES >> 20
                        ),
                        pos,
                    ));
                }
                let value = resolve_scalar(&text, style, tag.as_deref(), pos)?;
                // Keys are kept as their source text, so remember it for the map frame.
                if let Some(Frame::Map {
                    key: key @ None, ..
                }) = stack.last_mut()
                {
                    let is_merge = style == ScalarStyle::Plain && text == "<<" && tag.is_none();
                    *key = Some((text.into_owned(), pos, is_merge));
                    if anchor != 0 {
                        remember(&mut anchors, anchor, Node::at(value, pos));
                    }
                    continue;
                }
                let node = Node::at(value, pos);
                if anchor != 0 {
                    remember(&mut anchors, anchor, node.clone());
                }
                node
            }
            Event::SequenceStart(_, anchor, tag) => {
                check_collection_tag(tag.as_deref(), "seq", pos)?;
                check_key_position(&stack, pos)?;
                nodes += 1;
                stack.push(Frame::Seq {
                    items: Vec::new(),
                    pos,
                    anchor,
                });
                check_depth(&stack, pos)?;
                continue;
            }
            Event::MappingStart(_, anchor, tag) => {
                check_collection_tag(tag.as_deref(), "map", pos)?;
                check_key_position(&stack, pos)?;
                nodes += 1;
                stack.push(Frame::Map {
                    entries: Vec::new(),
                    key: None,
                    merges: Vec::new(),
                    seen: None,
                    pos,
                    anchor,
                });
                check_depth(&stack, pos)?;
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq { items, pos, anchor }) => {
                    let node = Node::at(Value::Seq(items), pos);
                    if anchor != 0 {
                        remember_within(&mut anchors, anchor, node.clone(), &mut expanded, budget)?;
                    }
                    node
                }
                _ => return Err(err("unbalanced sequence end", pos)),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map {
                    mut entries,
                    merges,
                    pos,
                    anchor,
                    ..
                }) => {
                    apply_merges(&mut entries, merges)?;
                    let node = Node::at(Value::Map(entries), pos);
                    if anchor != 0 {
                        remember_within(&mut anchors, anchor, node.clone(), &mut expanded, budget)?;
                    }
                    node
                }
                _ => return Err(err("unbalanced mapping end", pos)),
            },
            _ => {
                return Err(err(
                    "unsupported YAML construct (unresolved alias or anchor metadata)",
                    pos,
                ));
            }
        };
        attach(&mut stack, &mut root, node)?;
    }
    Ok(Parsed { root, has_comments })
}

fn err(message: &str, pos: Pos) -> YamlError {
    YamlError {
        message: message.to_owned(),
        pos,
    }
}

fn pos_of(span: &Span) -> Pos {
    Pos::new(span.start.line().max(1) as u32, span.start.col() as u32 + 1)
}

/// Keeps an anchored node for its aliases. The copy counts against the alias budget, so
/// anchors on every level of a deep document cannot multiply its size either.
fn remember_within(
    anchors: &mut Vec<Option<Node>>,
    id: usize,
    node: Node,
    expanded: &mut usize,
    budget: usize,
) -> Result<(), YamlError> {
    *expanded += weight(&node).1;
    if *expanded > budget {
        return Err(err(
            "anchors and aliases copy more than the document holds (an alias bomb?); write the values out",
            node.pos,
        ));
    }
    remember(anchors, id, node);
    Ok(())
}

fn remember(anchors: &mut Vec<Option<Node>>, id: usize, node: Node) {
    if anchors.len() <= id {
        anchors.resize(id + 1, None);
    }
    anchors[id] = Some(node);
}

/// A node's size: (nodes, nodes plus the bytes of its texts and keys).
fn weight(node: &Node) -> (usize, usize) {
    match &node.value {
        Value::Seq(items) => items.iter().map(weight).fold((1, 1), add),
        Value::Map(entries) => entries
            .iter()
            .map(|e| {
                let (n, w) = weight(&e.value);
                (n, w + e.key.len())
            })
            .fold((1, 1), add),
        Value::Str(s) => (1, 1 + s.len()),
        _ => (1, 1),
    }
}

fn add(a: (usize, usize), b: (usize, usize)) -> (usize, usize) {
    (a.0 + b.0, a.1 + b.1)
}

fn check_depth(stack: &[Frame], pos: Pos) -> Result<(), YamlError> {
    if stack.len() > MAX_DEPTH {
        return Err(err("nesting is deeper than 128 levels", pos));
    }
    Ok(())
}

/// Collections as mapping keys (`? [a, b]: x`) have no place in a blackboard.
fn check_key_position(stack: &[Frame], pos: Pos) -> Result<(), YamlError> {
    if let Some(Frame::Map { key: None, .. }) = stack.last() {
        return Err(err(
            "a list or mapping is used as a mapping key; keys must be plain text",
            pos,
        ));
    }
    Ok(())
}

fn check_collection_tag(tag: Option<&Tag>, expected: &str, pos: Pos) -> Result<(), YamlError> {
    match tag {
        None => Ok(()),
        Some(t) if t.core_suffix() == Some(expected) => Ok(()),
        Some(t) => Err(YamlError {
            message: format!("tag {} is not supported in a blackboard", t.original()),
            pos,
        }),
    }
}

fn resolve_scalar(
    text: &str,
    style: ScalarStyle,
    tag: Option<&Tag>,
    pos: Pos,
) -> Result<Value, YamlError> {
    let Some(tag) = tag else {
        return Ok(if style == ScalarStyle::Plain {
            resolve_plain(text)
        } else {
            Value::Str(text.to_string())
        });
    };
    let wrong = |what: &str| YamlError {
        message: format!("{:?} is not {what} but is tagged {}", text, tag.original()),
        pos,
    };
    match tag.core_suffix() {
        Some("str") => Ok(Value::Str(text.to_string())),
        Some("null") => match text {
            "" | "~" | "null" | "Null" | "NULL" => Ok(Value::Null),
            _ => Err(wrong("null")),
        },
        Some("bool") => match resolve_plain(text) {
            v @ Value::Bool(_) => Ok(v),
            _ => Err(wrong("a boolean")),
        },
        Some("int") => resolve_int(text).ok_or_else(|| wrong("an integer")),
        Some("float") => resolve_float(text)
            .or_else(|| match resolve_int(text) {
                Some(Value::Int(i)) => Some(i as f64),
                Some(Value::Str(digits)) => digits.parse().ok(),
                _ => None,
            })
            .map(Value::Float)
            .ok_or_else(|| wrong("a number")),
        // Timestamps are text in the core schema; the model parses them itself.
        Some("timestamp") => Ok(Value::Str(text.to_string())),
        _ => Err(YamlError {
            message: format!("tag {} is not supported in a blackboard", tag.original()),
            pos,
        }),
    }
}

/// Hangs a finished node under its parent (or makes it the root).
fn attach(stack: &mut [Frame], root: &mut Option<Node>, node: Node) -> Result<(), YamlError> {
    match stack.last_mut() {
        None => {
            *root = Some(node);
            Ok(())
        }
        Some(Frame::Seq { items, .. }) => {
            items.push(node);
            Ok(())
        }
        Some(Frame::Map {
            entries,
            key,
            merges,
            seen,
            ..
        }) => {
            let Some((key, key_pos, is_merge)) = key.take() else {
                // Non-scalar keys are refused when they start; an alias used as a key
                // lands here.
                return Err(err(
                    "an alias is used as a mapping key; write the key out",
                    node.pos,
                ));
            };
            if is_merge {
                merges.push(node);
                return Ok(());
            }
            let duplicate = match seen {
                Some(seen) => !seen.insert(key.clone()),
                None if entries.len() < SCAN_KEYS => entries.iter().any(|e| e.key == key),
                None => {
                    let mut all: HashSet<String> = entries.iter().map(|e| e.key.clone()).collect();
                    let duplicate = !all.insert(key.clone());
                    *seen = Some(all);
                    duplicate
                }
            };
            if duplicate {
                return Err(YamlError {
                    message: format!("duplicate key {key:?} in the same mapping"),
                    pos: key_pos,
                });
            }
            entries.push(Entry {
                key,
                key_pos,
                value: node,
            });
            Ok(())
        }
    }
}

/// Applies `<<` merge keys: explicit keys win, earlier merge sources win over later ones.
fn apply_merges(entries: &mut Vec<Entry>, merges: Vec<Node>) -> Result<(), YamlError> {
    for source in merges {
        let pos = source.pos;
        let maps = match source.value {
            Value::Map(map) => vec![map],
            Value::Seq(items) => items
                .into_iter()
                .map(|n| match n.value {
                    Value::Map(map) => Ok(map),
                    _ => Err(err(
                        "a merge key (<<) takes a mapping or a list of mappings",
                        n.pos,
                    )),
                })
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(err(
                    "a merge key (<<) takes a mapping or a list of mappings",
                    pos,
                ));
            }
        };
        for map in maps {
            for entry in map {
                if !entries.iter().any(|e| e.key == entry.key) {
                    entries.push(entry);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Node {
        parse(text).unwrap().root.unwrap()
    }

    #[test]
    fn builds_a_tree_with_positions() {
        let n = root("a: 1\nb:\n  - x\n  - {c: true}\n");
        assert_eq!(n.get("a").unwrap().value, Value::Int(1));
        let b = n.get("b").unwrap();
        assert_eq!(b.pos, Pos::new(3, 3));
        let Value::Seq(items) = &b.value else {
            panic!()
        };
        assert_eq!(items[0].pos, Pos::new(3, 5));
        assert_eq!(items[1].get("c").unwrap().value, Value::Bool(true));
        assert_eq!(n.entry("b").unwrap().key_pos, Pos::new(2, 1));
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let e = parse("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
        assert_eq!(e.pos.line, 3, "{e:?}");
        let e = parse("a: 1\n  b: 2\n").unwrap_err();
        assert_eq!(e.pos.line, 2, "{e:?}");
    }

    #[test]
    fn duplicate_keys_are_errors_at_the_second_key() {
        let e = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.pos, Pos::new(3, 1));
        assert!(e.message.contains("duplicate key \"a\""));
    }

    #[test]
    fn quoted_scalars_stay_strings_and_tags_resolve() {
        let n = root("a: '12'\nb: !!str 12\nc: !!int '7'\nd: \"true\"\ne: !!float 1\n");
        assert_eq!(n.get("a").unwrap().value, Value::Str("12".into()));
        assert_eq!(n.get("b").unwrap().value, Value::Str("12".into()));
        assert_eq!(n.get("c").unwrap().value, Value::Int(7));
        assert_eq!(n.get("d").unwrap().value, Value::Str("true".into()));
        assert_eq!(n.get("e").unwrap().value, Value::Float(1.0));
        assert!(parse("a: !custom x\n").is_err());
        assert!(parse("a: !!int x\n").is_err());
    }

    #[test]
    fn anchors_aliases_and_merges_expand() {
        let n = root("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\nlist: [*b]\n");
        let other = n.get("other").unwrap();
        assert_eq!(other.get("x").unwrap().value, Value::Int(1));
        assert_eq!(other.get("y").unwrap().value, Value::Int(3));
        let Value::Seq(list) = &n.get("list").unwrap().value else {
            panic!()
        };
        assert_eq!(list[0].get("y").unwrap().value, Value::Int(2));
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let prev = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("alias bomb"), "{e:?}");
    }

    /// The reviewed attack: a 2–3 KB hand edit whose aliases reach long strings, each
    /// alias one node but copying the whole string (it grew state.yaml to 7.5 MB).
    #[test]
    fn alias_bombs_of_long_strings_are_refused() {
        let mut text = format!("s0: &s0 {}\n", "x".repeat(1000));
        for i in 1..6 {
            let p = i - 1;
            text.push_str(&format!(
                "s{i}: &s{i} [*s{p}, *s{p}, *s{p}, *s{p}, *s{p}, *s{p}, *s{p}, *s{p}, *s{p}, *s{p}]\n"
            ));
        }
        assert!(text.len() < 3000, "{}", text.len());
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("alias bomb"), "{e:?}");
        assert!(e.pos.line > 1, "{e:?}");
        // One level less of the same thing is refused as well: 10 000 copies of 1 KB.
        let flat = format!(
            "s: &s {}\nl: [{}]\n",
            "x".repeat(1000),
            vec!["*s"; 1000].join(", ")
        );
        assert!(parse(&flat).is_err());
    }

    #[test]
    fn a_few_aliases_of_small_values_are_fine() {
        let text = format!(
            "d: &d {{a: 1, b: two}}\nl: [{}]\n",
            vec!["*d"; 500].join(", ")
        );
        let n = root(&text);
        let Value::Seq(items) = &n.get("l").unwrap().value else {
            panic!()
        };
        assert_eq!(items.len(), 500);
    }

    #[test]
    fn too_many_aliases_are_refused() {
        let text = format!("a: &a 1\nl: [{}]\n", vec!["*a"; MAX_ALIASES + 1].join(", "));
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("aliases"), "{e:?}");
    }

    #[test]
    fn anchors_on_every_level_count_their_copies() {
        // Each anchor copies everything below it: 120 levels of a 1 MB leaf would copy
        // 120 MB without the budget.
        let depth = 120;
        let mut text = String::new();
        for i in 0..depth {
            text.push_str(&format!("{}k{i}: &a{i}\n", "  ".repeat(i)));
        }
        text.push_str(&format!(
            "{}leaf: {}\n",
            "  ".repeat(depth),
            "y".repeat(600_000)
        ));
        assert!(parse(&text).unwrap_err().message.contains("copy more"));
    }

    #[test]
    fn huge_scalars_are_refused() {
        let text = format!("a: {}\n", "z".repeat(MAX_SCALAR_BYTES + 1));
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("MiB"), "{e:?}");
    }

    #[test]
    fn a_duplicate_key_in_a_large_mapping_is_found() {
        let mut text: String = (0..100).map(|i| format!("k{i}: {i}\n")).collect();
        assert!(parse(&text).is_ok());
        text.push_str("k42: again\n");
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("duplicate key \"k42\""), "{e:?}");
        assert_eq!(e.pos.line, 101);
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse(&text).unwrap_err().message.contains("deeper"));
    }

    #[test]
    fn comments_are_noticed_and_empty_files_have_no_root() {
        let p = parse("# hello\na: 1\n").unwrap();
        assert!(p.has_comments);
        assert!(!parse("a: 1\n").unwrap().has_comments);
        assert!(parse("").unwrap().root.is_none());
        assert!(parse("# only a comment\n").unwrap().root.is_none());
    }

    #[test]
    fn several_documents_are_refused() {
        assert!(parse("a: 1\n---\nb: 2\n").is_err());
    }

    #[test]
    fn collection_keys_are_refused() {
        assert!(parse("? [a, b]\n: x\n").is_err());
        assert!(parse("{[a]: 1}\n").is_err());
    }
}
