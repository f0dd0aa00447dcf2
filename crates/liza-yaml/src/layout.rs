//! Where things are in a YAML text a person wrote (specs/blackboard.md *Hand edits*): the
//! byte span of each top-level entry and of each item of one top-level block list (the
//! tasks). A transaction on a commented state.yaml rewrites only the spans whose values
//! changed and copies everything else — comments, blank lines, the person's layout —
//! byte for byte.
//!
//! A span runs from the start of the line its key (or its item's dash) is on to the end of
//! the line its last value ends on. What lies between spans is comments and blank lines.

use std::ops::Range;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, StructureStyle};

/// The spans of a document whose root is a block mapping.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    /// The top-level entries, in text order.
    pub entries: Vec<LayoutEntry>,
    /// The items of the list under the key the scan was asked for, when that value is a
    /// block list of mappings; `None` otherwise.
    pub items: Option<Items>,
}

/// One top-level key of the text and where its entry lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutEntry {
    /// The key.
    pub key: String,
    /// The bytes of its entry, key to the end of its value.
    pub span: Range<usize>,
}

/// The items of one block list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Items {
    /// The list's key.
    pub key: String,
    /// The bytes of each item, in order.
    pub spans: Vec<Range<usize>>,
}

impl Layout {
    /// The top-level entry of `key`, if the text has one.
    pub fn entry(&self, key: &str) -> Option<&LayoutEntry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

/// Where the pieces of `text` are; `None` when it is not a block mapping at the root, or
/// holds something the rewriter does not attempt (merge keys, more than one document,
/// a list item that is not a mapping). `list_key` names the list whose items are located.
pub fn scan(text: &str, list_key: &str) -> Option<Layout> {
    let mut scan = Scan {
        text,
        list_key,
        layout: Layout::default(),
        styles: Vec::new(),
        expecting_key: false,
        entry: None,
        content_end: 0,
        in_list: false,
        item_start: None,
        documents: 0,
    };
    for next in Parser::new_from_str(text) {
        let (event, span) = next.ok()?;
        let range = span.byte_range()?;
        match event {
            Event::StreamStart | Event::DocumentEnd => {}
            Event::StreamEnd => break,
            Event::DocumentStart(..) => {
                scan.documents += 1;
                if scan.documents > 1 {
                    return None;
                }
            }
            // A block scalar's span runs into the indentation of the line after it.
            Event::Scalar(value, style, ..) => {
                let end = match style {
                    ScalarStyle::Literal | ScalarStyle::Folded => {
                        block_scalar_end(text, &range, &value)?
                    }
                    _ => range.end,
                };
                scan.scalar(&value, range.start..end)?
            }
            Event::Alias(..) => scan.scalar("", range)?,
            Event::SequenceStart(style, ..) => scan.open(style, false, range)?,
            Event::MappingStart(style, ..) => scan.open(style, true, range)?,
            Event::SequenceEnd | Event::MappingEnd => scan.close(range)?,
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
    scan.finish_entry();
    let layout = scan.layout;
    ordered(&layout).then_some(layout)
}

struct Scan<'t> {
    text: &'t str,
    list_key: &'t str,
    layout: Layout,
    /// The style of each open collection.
    styles: Vec<StructureStyle>,
    /// At depth 1: the next scalar is a key.
    expecting_key: bool,
    /// The open top-level entry: key and where its line starts.
    entry: Option<(String, usize)>,
    /// The end of the last content seen (scalars, aliases, flow collections).
    content_end: usize,
    /// Inside the located list's value.
    in_list: bool,
    /// Where the open item's dash line starts.
    item_start: Option<usize>,
    documents: usize,
}

impl Scan<'_> {
    fn depth(&self) -> usize {
        self.styles.len()
    }

    fn scalar(&mut self, value: &str, range: Range<usize>) -> Option<()> {
        if self.depth() == 0 {
            return None; // a scalar document
        }
        if self.depth() == 1 && self.expecting_key {
            if value == "<<" {
                return None;
            }
            self.finish_entry();
            self.entry = Some((value.to_owned(), line_start(self.text, range.start)));
            self.expecting_key = false;
            self.content_end = range.end;
            return Some(());
        }
        if self.in_list && self.depth() == 2 {
            return None; // an item that is not a mapping
        }
        self.content_end = self.content_end.max(range.end);
        if self.depth() == 1 {
            self.expecting_key = true;
        }
        Some(())
    }

    fn open(&mut self, style: StructureStyle, mapping: bool, range: Range<usize>) -> Option<()> {
        match self.depth() {
            0 if !(mapping && style == StructureStyle::Block) => return None,
            0 => self.expecting_key = true,
            1 if self.expecting_key => return None, // a collection as a key
            1 => {
                let is_list = self.entry.as_ref().is_some_and(|(k, _)| k == self.list_key);
                if is_list && !mapping && style == StructureStyle::Block {
                    self.in_list = true;
                    self.layout.items = Some(Items {
                        key: self.list_key.to_owned(),
                        spans: Vec::new(),
                    });
                }
            }
            2 if self.in_list => {
                if !mapping || style != StructureStyle::Block {
                    return None;
                }
                self.item_start = Some(dash_line(self.text, range.start)?);
            }
            _ => {}
        }
        if style == StructureStyle::Flow {
            self.content_end = self.content_end.max(range.end);
        }
        self.styles.push(style);
        Some(())
    }

    fn close(&mut self, range: Range<usize>) -> Option<()> {
        let style = self.styles.pop()?;
        if style == StructureStyle::Flow {
            self.content_end = self.content_end.max(range.end);
        }
        match self.depth() {
            2 if self.in_list => {
                let start = self.item_start.take()?;
                let end = line_end(self.text, self.content_end);
                self.layout.items.as_mut()?.spans.push(start..end);
            }
            1 => {
                self.in_list = false;
                self.expecting_key = true;
            }
            _ => {}
        }
        Some(())
    }

    fn finish_entry(&mut self) {
        if let Some((key, start)) = self.entry.take() {
            let end = line_end(self.text, self.content_end).max(start);
            self.layout.entries.push(LayoutEntry {
                key,
                span: start..end,
            });
        }
    }
}

/// Where a block scalar's content ends. Its span runs on to the next token, over the
/// blank lines and comment lines after it: those are left out (comments less indented
/// than the content are not content), so they stay between spans — except the trailing
/// blank lines a keep-chomped scalar (`|+`) holds as line breaks of its `value`.
fn block_scalar_end(text: &str, range: &Range<usize>, value: &str) -> Option<usize> {
    let slice = &text[range.clone()];
    let first_line = line_start(text, range.start);
    // The span starts at the content or at the header (`|`); its first line stays.
    let first_end = slice.find('\n').map_or(slice.len(), |i| i + 1);
    let content_indent = if text[first_line..range.start].trim().is_empty() {
        Some(range.start - first_line)
    } else {
        slice[first_end..]
            .lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
    };
    let mut end = slice.len();
    while end > first_end {
        let start = slice[..end - 1]
            .rfind('\n')
            .map_or(0, |i| i + 1)
            .max(first_end);
        let line = &slice[start..end];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let comment = trimmed.starts_with('#') && content_indent.is_none_or(|c| indent < c);
        if !(trimmed.trim_end().is_empty() || comment) {
            break;
        }
        end = start;
    }
    let mut end = line_end(text, range.start + end);
    let breaks = value.len() - value.trim_end_matches('\n').len();
    for _ in 1..breaks {
        let next = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
        if next == end || !text[end..next].trim().is_empty() {
            return None;
        }
        end = next;
    }
    Some(end)
}

/// Spans in order, none overlapping, items inside their entry.
fn ordered(layout: &Layout) -> bool {
    fn spans_ok<'a>(mut spans: impl Iterator<Item = &'a Range<usize>>) -> bool {
        let mut at = 0;
        spans.all(|s| {
            let ok = s.start >= at && s.end >= s.start;
            at = s.end;
            ok
        })
    }
    if !spans_ok(layout.entries.iter().map(|e| &e.span)) {
        return false;
    }
    match &layout.items {
        None => true,
        Some(items) => {
            let Some(entry) = layout.entry(&items.key) else {
                return false;
            };
            spans_ok(items.spans.iter())
                && items
                    .spans
                    .iter()
                    .all(|s| s.start >= entry.span.start && s.end <= entry.span.end)
        }
    }
}

/// Where the line holding byte `at` starts.
fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The end of the line whose content ends at `end` (after its newline).
fn line_end(text: &str, end: usize) -> usize {
    if end > 0 && text.as_bytes().get(end - 1) == Some(&b'\n') {
        return end;
    }
    text[end..].find('\n').map_or(text.len(), |i| end + i + 1)
}

/// The start of the line holding the dash of the list item whose content starts at
/// `at`: that line, or an earlier one past blank and comment lines (`-` alone on its line).
fn dash_line(text: &str, at: usize) -> Option<usize> {
    let mut start = line_start(text, at);
    loop {
        let line = text[start..].split('\n').next()?.trim_start();
        if line.starts_with('-') {
            return Some(start);
        }
        if start != line_start(text, at) && !line.is_empty() && !line.starts_with('#') {
            return None;
        }
        if start == 0 {
            return None;
        }
        start = line_start(text, start - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts<'t>(text: &'t str, layout: &Layout) -> (Vec<(String, &'t str)>, Vec<&'t str>) {
        let entries = layout
            .entries
            .iter()
            .map(|e| (e.key.clone(), &text[e.span.clone()]))
            .collect();
        let items = layout
            .items
            .iter()
            .flat_map(|i| i.spans.iter().map(|s| &text[s.clone()]))
            .collect();
        (entries, items)
    }

    #[test]
    fn entries_and_items_cover_their_lines_and_leave_comments_between() {
        let text = "# top\nversion: 1 # one\n\nrevision: 3\ntasks:\n  # first\n  - id: t-1\n    description: |\n      two\n      lines\n\n  -\n    id: t-2\n    tags: [a, b]  # flow\n# after tasks\nnotes:\n- a\n- b\n# end\n";
        let layout = scan(text, "tasks").unwrap();
        let (entries, items) = texts(text, &layout);
        assert_eq!(
            entries,
            vec![
                ("version".into(), "version: 1 # one\n"),
                ("revision".into(), "revision: 3\n"),
                (
                    "tasks".into(),
                    "tasks:\n  # first\n  - id: t-1\n    description: |\n      two\n      lines\n\n  -\n    id: t-2\n    tags: [a, b]  # flow\n"
                ),
                ("notes".into(), "notes:\n- a\n- b\n"),
            ]
        );
        assert_eq!(
            items,
            vec![
                "  - id: t-1\n    description: |\n      two\n      lines\n",
                "  -\n    id: t-2\n    tags: [a, b]  # flow\n",
            ]
        );
    }

    #[test]
    fn comments_after_a_block_scalar_are_not_its_content() {
        let text = "tasks:\n  - id: t-1\n    description: |\n      two\n      # content\n\n  # about t-2\n\n  - id: t-2\n    d: |+\n      kept\n\n  - id: t-3\n";
        let layout = scan(text, "tasks").unwrap();
        let (_, items) = texts(text, &layout);
        assert_eq!(
            items,
            vec![
                "  - id: t-1\n    description: |\n      two\n      # content\n",
                "  - id: t-2\n    d: |+\n      kept\n\n",
                "  - id: t-3\n",
            ]
        );
        // A kept scalar's blank lines before a comment are its own; those after are not.
        let text = "a: |+\n  x\n\n# c\n\nb: 1\n";
        let layout = scan(text, "tasks").unwrap();
        assert_eq!(texts(text, &layout).0[0].1, "a: |+\n  x\n\n");
    }

    #[test]
    fn a_last_line_without_newline_ends_the_text() {
        let text = "a: 1\ntasks:\n- id: x";
        let layout = scan(text, "tasks").unwrap();
        let (entries, items) = texts(text, &layout);
        assert_eq!(entries[1].1, "tasks:\n- id: x");
        assert_eq!(items, vec!["- id: x"]);
    }

    #[test]
    fn what_the_rewriter_does_not_attempt_has_no_layout() {
        assert!(scan("- a\n- b\n", "tasks").is_none());
        assert!(scan("{a: 1}\n", "tasks").is_none());
        assert!(scan("a: &x {b: 1}\nc:\n  <<: *x\n", "tasks").is_some());
        assert!(scan("<<: {b: 1}\n", "tasks").is_none());
        assert!(scan("tasks:\n  - one\n", "tasks").is_none());
        assert!(scan("a: 1\n---\nb: 2\n", "tasks").is_none());
        // A flow list of tasks is one entry, without items.
        let layout = scan("tasks: [{id: t}]\n", "tasks").unwrap();
        assert!(layout.items.is_none());
    }
}
