//! A state.yaml a person wrote comments in (specs/blackboard.md *Hand edits*): the next
//! revision is written as edits of their text, so comments, blank lines, key order and
//! quoting survive every transaction.
//!
//! The fast way, once liza knows where things are in the text ([`Layout`]) and which
//! state it reads as: only the top-level entries and tasks the transaction changed are
//! rewritten — each as a minimal edit of its own small text (`yaml::patch`, checked to
//! read back as the new value), new ones are appended in the person's indentation — and
//! everything else is copied byte for byte. Nothing liza wrote is parsed again, and the
//! layout of the result is known without a scan, so the parse cache can hold it like the
//! plain state. The slow way (a hand edit just adopted, or a document the fast way does
//! not handle) patches the whole document and scans the result once.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use liza_model::codec::Emit;
use liza_model::model::{State, Task, TaskList};
use liza_yaml::layout::{self, Items, Layout, LayoutEntry};
use liza_yaml::{self, Emitter, patch};

/// The top-level key whose list items the layout tracks.
const TASKS: &str = "tasks";

/// A state.yaml text holding a person's comments.
#[derive(Debug, Clone)]
pub struct Commented {
    /// The text.
    pub text: String,
    /// Where its entries and tasks are, when known (always after liza wrote it).
    pub layout: Option<Layout>,
}

/// A new revision written as edits of a commented text.
pub struct Rewritten {
    /// The new revision's state.yaml text.
    pub text: String,
    /// Where its entries and tasks are (`None` unless every task's span is known).
    pub layout: Option<Layout>,
    /// Where each task is in `text`, keyed by its `Arc` address (the parse cache's spans).
    pub task_spans: Vec<(usize, Range<usize>)>,
    /// The longest scalar in the text that was not read back (see
    /// [`Emitter::longest_scalar`]).
    pub longest_scalar: usize,
}

impl Commented {
    /// `bytes` when they hold comments (a cheap scan first: most files have no `#`).
    pub fn of(bytes: &[u8]) -> Option<Commented> {
        if !bytes.contains(&b'#') {
            return None;
        }
        let text = std::str::from_utf8(bytes).ok()?;
        liza_yaml::parse(text)
            .ok()?
            .has_comments
            .then(|| Commented {
                text: text.to_owned(),
                layout: None,
            })
    }

    /// `bytes` when their decoding found comments (`has_comments`): no second parse,
    /// only the scan for the layout.
    pub fn decoded(bytes: &[u8], has_comments: bool) -> Option<Commented> {
        if !has_comments {
            return None;
        }
        let text = String::from_utf8(bytes.to_vec()).ok()?;
        let layout = layout::scan(&text, TASKS);
        Some(Commented { text, layout })
    }

    /// `new` written as edits of this text. `before` is the state the text reads as,
    /// when known (the fast way needs it); `full` is `new` as liza writes it, rendered
    /// only if the slow way needs it. `None`: the comments cannot be kept faithfully.
    pub fn rewrite(
        &self,
        before: Option<&State>,
        new: &mut State,
        full: impl FnOnce(&State) -> String,
    ) -> Option<Rewritten> {
        if let (Some(layout), Some(before)) = (&self.layout, before)
            && let Some(done) = Splice::new(&self.text, layout).run(before, new)
        {
            debug_assert_reads_as(&done.text, new);
            return Some(done);
        }
        self.rewrite_whole(new, &full(new))
    }

    /// The slow way: the whole document patched, then scanned once.
    fn rewrite_whole(&self, new: &State, rendered: &str) -> Option<Rewritten> {
        let old_tree = liza_yaml::parse(&self.text).ok()?.root?;
        let new_tree = liza_yaml::parse(rendered).ok()?.root?;
        let text = patch::patch(&self.text, &old_tree, &new_tree)?;
        let layout = layout::scan(&text, TASKS);
        let task_spans = match layout.as_ref().and_then(|l| l.items.as_ref()) {
            Some(items) if items.spans.len() == new.tasks.len() => new
                .tasks
                .iter()
                .zip(&items.spans)
                .map(|(task, span)| (task_key(task), span.clone()))
                .collect(),
            _ => Vec::new(),
        };
        // Without the spans of every task the cache could not describe the text.
        let layout = layout.filter(|_| task_spans.len() == new.tasks.len());
        // The patch read the whole text back: every scalar is within the parser's limits.
        Some(Rewritten {
            text,
            layout,
            task_spans,
            longest_scalar: 0,
        })
    }
}

fn task_key(task: &Arc<Task>) -> usize {
    Arc::as_ptr(task) as usize
}

/// Tests build with debug assertions: every fast rewrite is read back whole there.
fn debug_assert_reads_as(text: &str, state: &State) {
    if cfg!(debug_assertions) {
        let decoded = liza_model::document::decode(text.as_bytes()).unwrap_or_else(|f| {
            panic!("a rewritten commented state.yaml does not read: {f:?}\n{text}")
        });
        assert!(
            decoded.state == *state,
            "a rewritten commented state.yaml reads as another state:\n{text}"
        );
    }
}

/// One fast rewrite: the new text built piece by piece, with its layout.
struct Splice<'t> {
    text: &'t str,
    layout: &'t Layout,
    out: String,
    entries: Vec<LayoutEntry>,
    items: Vec<Range<usize>>,
    task_spans: Vec<(usize, Range<usize>)>,
    /// The longest scalar of liza's text that goes in unread.
    longest: usize,
}

impl<'t> Splice<'t> {
    fn new(text: &'t str, layout: &'t Layout) -> Splice<'t> {
        Splice {
            text,
            layout,
            out: String::with_capacity(text.len() + text.len() / 16 + 1024),
            entries: Vec::new(),
            items: Vec::new(),
            task_spans: Vec::new(),
            longest: 0,
        }
    }

    fn run(mut self, before: &State, new: &mut State) -> Option<Rewritten> {
        let old_top = top_level(&mut before.clone())?;
        let new_top = top_level(new)?;
        self.longest = new_top.longest;
        let mut at = 0;
        for entry in &self.layout.entries {
            self.out.push_str(&self.text[at..entry.span.start]);
            at = entry.span.end;
            let person = &self.text[entry.span.clone()];
            let start = self.out.len();
            if entry.key == TASKS {
                self.tasks(entry, &before.tasks, &new.tasks)?;
            } else {
                match (old_top.get(&entry.key), new_top.get(&entry.key)) {
                    (old, new) if old == new => self.out.push_str(person),
                    // Gone from the state: the entry goes, what is around it stays.
                    (_, None) => continue,
                    (Some(old), Some(new)) if let Some(tail) = appended(person, old, new) => {
                        self.out.push_str(person);
                        self.end_line();
                        let (_, column) = tail;
                        shift(&mut self.out, tail.0, column);
                    }
                    (_, Some(new)) => self.out.push_str(&patch_fragment(person, new, "")?),
                }
            }
            self.end_line();
            self.entries.push(LayoutEntry {
                key: entry.key.clone(),
                span: start..self.out.len(),
            });
        }
        // Keys the person's text does not have go after its last entry.
        for (key, text) in &new_top.order {
            if key != TASKS && self.layout.entry(key).is_none() {
                self.end_line();
                let start = self.out.len();
                self.out.push_str(text);
                self.entries.push(LayoutEntry {
                    key: key.clone(),
                    span: start..self.out.len(),
                });
            }
        }
        self.out.push_str(&self.text[at..]);
        let items = (self.task_spans.len() == new.tasks.len()).then_some(Items {
            key: TASKS.into(),
            spans: self.items,
        })?;
        Some(Rewritten {
            text: self.out,
            layout: Some(Layout {
                entries: self.entries,
                items: Some(items),
            }),
            task_spans: self.task_spans,
            longest_scalar: self.longest,
        })
    }

    /// The tasks entry: unchanged tasks copied, changed ones patched in place, removed
    /// ones dropped (the comments around them stay), new ones inserted after the task
    /// before them. Kept tasks must keep their order.
    fn tasks(&mut self, entry: &LayoutEntry, old: &TaskList, new: &TaskList) -> Option<()> {
        let spans = &self.layout.items.as_ref()?.spans;
        if spans.len() != old.len() || spans.is_empty() || new.is_empty() {
            return None;
        }
        let by_key: HashMap<usize, usize> = old
            .iter()
            .enumerate()
            .map(|(i, t)| (task_key(t), i))
            .collect();
        let by_id: HashMap<&str, usize> = old
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        let column = indentation(&self.text[spans[0].clone()]);
        self.out
            .push_str(&self.text[entry.span.start..spans[0].start]);
        // The old items whose preceding gap is written: 0..next.
        let mut next = 1;
        for task in new.iter() {
            let found = by_key
                .get(&task_key(task))
                .or_else(|| by_id.get(task.id.as_str()))
                .copied();
            let start = match found {
                Some(i) if i + 1 >= next => {
                    for gap in next..=i {
                        self.out
                            .push_str(&self.text[spans[gap - 1].end..spans[gap].start]);
                    }
                    next = i + 1;
                    self.end_line();
                    let start = self.out.len();
                    let person = &self.text[spans[i].clone()];
                    if Arc::ptr_eq(task, &old[i]) || **task == *old[i] {
                        self.out.push_str(person);
                    } else {
                        let (new_text, _) = task_fragment(task);
                        let patched =
                            patch_fragment(&format!("{TASKS}:\n{person}"), &new_text, "tasks:\n")?;
                        self.out.push_str(&patched);
                    }
                    start
                }
                Some(_) => return None, // reordered
                None => {
                    self.end_line();
                    let start = self.out.len();
                    let (text, longest) = task_fragment(task);
                    self.longest = self.longest.max(longest);
                    shift(&mut self.out, &text[TASKS.len() + 2..], column);
                    start
                }
            };
            self.end_line();
            self.items.push(start..self.out.len());
            self.task_spans
                .push((task_key(task), start..self.out.len()));
        }
        for gap in next..spans.len() {
            self.out
                .push_str(&self.text[spans[gap - 1].end..spans[gap].start]);
        }
        let last = spans.last()?;
        self.out.push_str(&self.text[last.end..entry.span.end]);
        Some(())
    }

    /// Ends the text written so far with a newline, so the next piece starts a line.
    fn end_line(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }
}

/// `person`'s text (one top-level entry, after `prefix`) edited to read as liza's `new`
/// text of it; without the prefix. Checked by `patch` to read back as `new`.
fn patch_fragment(person: &str, new: &str, prefix: &str) -> Option<String> {
    let old_tree = liza_yaml::parse(person).ok()?.root?;
    let new_tree = liza_yaml::parse(new).ok()?.root?;
    let patched = patch::patch(person, &old_tree, &new_tree)?;
    let mut text = patched.strip_prefix(prefix)?.to_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Some(text)
}

/// When a top-level list only grew at its end (liza's `old` text is the start of its
/// `new` one) and the person's text of it is a block list: the new items as liza wrote
/// them (dashes at column 2), and the column of the person's dashes. Appending them
/// needs no patch, and no parse of a list that grows with every note.
fn appended<'n>(person: &str, old: &str, new: &'n str) -> Option<(&'n str, usize)> {
    let tail = new.strip_prefix(old)?;
    if !tail.starts_with("  - ") || !old.ends_with('\n') {
        return None;
    }
    let mut lines = person.lines();
    // `key:` alone on its line (a comment may follow): the value is a block below it.
    let (_, rest) = lines.next()?.split_once(':')?;
    let rest = rest.trim_start();
    if !(rest.is_empty() || rest.starts_with('#')) {
        return None;
    }
    let first = lines.find(|l| {
        let t = l.trim_start();
        !t.is_empty() && !t.starts_with('#')
    })?;
    let dash = first.trim_start();
    if !(dash == "-" || dash.starts_with("- ")) {
        return None;
    }
    Some((tail, indentation(first)))
}

/// `tasks:` and one task as its item, as liza writes them; with its longest scalar.
fn task_fragment(task: &Task) -> (String, usize) {
    let mut e = Emitter::with_capacity(4096);
    e.begin_map(1);
    e.field(TASKS);
    e.begin_seq(1);
    e.item();
    task.emit(&mut e);
    e.end_seq();
    e.end_map();
    let longest = e.longest_scalar();
    (e.finish(), longest)
}

/// Appends liza's `text` of a list item (its dash at column 2) with its dash at `column`.
fn shift(out: &mut String, text: &str, column: usize) {
    for line in text.split_inclusive('\n') {
        if line == "\n" {
            out.push('\n');
        } else if column >= 2 {
            out.extend(std::iter::repeat_n(' ', column - 2));
            out.push_str(line);
        } else {
            out.push_str(&line[2 - column..]);
        }
    }
}

/// The column of the first line's first character.
fn indentation(text: &str) -> usize {
    text.len() - text.trim_start_matches(' ').len()
}

/// Liza's text of each top-level entry of `state` except the tasks, by key.
struct TopLevel {
    order: Vec<(String, String)>,
    longest: usize,
}

impl TopLevel {
    fn get(&self, key: &str) -> Option<&String> {
        self.order.iter().find(|(k, _)| k == key).map(|(_, t)| t)
    }
}

fn top_level(state: &mut State) -> Option<TopLevel> {
    let tasks = std::mem::take(&mut state.tasks);
    let mut e = Emitter::with_capacity(4096);
    state.emit(&mut e);
    state.tasks = tasks;
    let longest = e.longest_scalar();
    let text = e.finish();
    let mut order: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        match line.as_bytes().first() {
            Some(b' ' | b'\n') => order.last_mut()?.1.push_str(line),
            _ => {
                // liza writes every top-level key of the model plain: anything else
                // (a quoted or explicit key of the person's) is left to the slow way.
                let key = line.split(':').next()?;
                if key.is_empty()
                    || !key
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                {
                    return None;
                }
                order.push((key.to_owned(), line.to_owned()));
            }
        }
    }
    Some(TopLevel { order, longest })
}

#[cfg(test)]
mod tests {
    use super::*;
    use liza_model::document;
    use liza_model::model::{HumanNote, TaskStatus};
    use liza_model::timestamp::Timestamp;

    /// A commented text, with the state it reads as and its layout.
    fn commented(text: &str) -> (Commented, State) {
        let decoded = document::decode(text.as_bytes()).unwrap();
        let c = Commented::decoded(text.as_bytes(), decoded.has_comments).unwrap();
        assert!(c.layout.is_some(), "no layout for\n{text}");
        (c, decoded.state)
    }

    fn base() -> String {
        let mut state = liza_model::bench::generate_state(6, 300, Timestamp::now());
        state.human_notes = Some(vec![note("note-1", "hello")]);
        let text = document::emit(&state, 0);
        let mut out = String::from("# the plan, by Ann\n\n");
        for line in text.lines() {
            if line.trim_start().starts_with("- id: task-") {
                out.push_str("  # watch this one\n");
            }
            if line == "human_notes:" {
                out.push_str("\n# what people said\n");
            }
            out.push_str(line);
            out.push('\n');
        }
        out.push_str("# the end\n");
        out
    }

    fn note(id: &str, message: &str) -> HumanNote {
        HumanNote {
            id: Some(id.into()),
            timestamp: Some(Timestamp::now()),
            message: message.into(),
            target: Some("all".into()),
            seen_by: Some(Vec::new()),
            extra: Default::default(),
        }
    }

    fn rewrite(c: &Commented, before: &State, new: &mut State) -> Rewritten {
        let done = c
            .rewrite(Some(before), new, |_| panic!("the fast way handles this"))
            .expect("rewritten");
        let reread = document::decode(done.text.as_bytes()).unwrap().state;
        assert!(
            reread == *new,
            "reads back as the new state:\n{}",
            done.text
        );
        assert_eq!(
            done.layout,
            layout::scan(&done.text, TASKS),
            "the layout computed while writing is the one a scan finds"
        );
        done
    }

    fn comment_lines(text: &str) -> Vec<&str> {
        text.lines()
            .filter(|l| l.trim_start().starts_with('#') || l.is_empty())
            .collect()
    }

    #[test]
    fn only_what_changed_is_rewritten_and_comments_stay_where_they_were() {
        let text = base();
        let (c, before) = commented(&text);
        let mut new = before.clone();
        new.revision = Some(before.revision() as i64 + 1);
        new.human_notes
            .as_mut()
            .unwrap()
            .push(note("note-2", "yes: no # not a comment"));
        let task = new.tasks.get_mut(2).unwrap();
        task.status = TaskStatus::Blocked;
        task.blocked_reason = Some("waiting for Ann".into());
        let done = rewrite(&c, &before, &mut new);
        assert_eq!(comment_lines(&done.text), comment_lines(&text));
        // Untouched tasks are the same bytes.
        let items = |t: &str, l: &Layout| -> Vec<String> {
            l.items
                .as_ref()
                .unwrap()
                .spans
                .iter()
                .map(|s| t[s.clone()].to_owned())
                .collect()
        };
        let (old_items, new_items) = (
            items(&text, c.layout.as_ref().unwrap()),
            items(&done.text, done.layout.as_ref().unwrap()),
        );
        for i in [0, 1, 3, 4, 5] {
            assert_eq!(old_items[i], new_items[i]);
        }
        assert_ne!(old_items[2], new_items[2]);
    }

    #[test]
    fn new_tasks_take_the_persons_indentation_and_removed_ones_leave_their_comments() {
        // The person indents list items at column 0.
        let text = base().replace("\n  - id: task-", "\n- id: task-");
        let text = reindent_items(&text);
        let (c, before) = commented(&text);
        let mut new = before.clone();
        let mut added = (*new.tasks.0[0]).clone();
        added.id = liza_model::ids::TaskId::parse("task-new").unwrap();
        new.tasks.0.remove(1);
        new.tasks.0.push(Arc::new(added));
        let done = rewrite(&c, &before, &mut new);
        assert_eq!(comment_lines(&done.text), comment_lines(&text));
        assert!(done.text.contains("\n- id: task-new\n"), "{}", done.text);
        // Once more on the result, from the layout computed while writing.
        let again_before = new.clone();
        let mut again = new.clone();
        again.tasks.get_mut(0).unwrap().priority = Some(9);
        let c2 = Commented {
            text: done.text.clone(),
            layout: done.layout.clone(),
        };
        rewrite(&c2, &again_before, &mut again);
    }

    /// `text` with the keys of list items that start at column 0 indented to column 2.
    fn reindent_items(text: &str) -> String {
        let mut out = String::new();
        let mut in_item = false;
        for line in text.split_inclusive('\n') {
            if line.starts_with("- id: task-") {
                in_item = true;
            } else if !line.starts_with("  ") && !line.starts_with('#') && line != "\n" {
                in_item = false;
            }
            if in_item && line.starts_with("    ") {
                out.push_str(&line[2..]);
            } else {
                out.push_str(line);
            }
        }
        out
    }

    /// Layouts a person may write: whatever the fast way does with them (or leaves to
    /// the slow way), the result reads as the new state and every comment stays.
    #[test]
    fn odd_layouts_are_rewritten_faithfully() {
        let plain = base();
        let variants: Vec<(&str, String)> = vec![
            ("crlf", plain.replace('\n', "\r\n")),
            ("document markers", format!("%YAML 1.2\n---\n{plain}...\n")),
            (
                "quoted top-level keys",
                plain
                    .replace("\ntasks:", "\n\"tasks\":")
                    .replace("\nhuman_notes:", "\n'human_notes':"),
            ),
            (
                "items at column 0",
                reindent_items(&plain.replace("\n  - id: task-", "\n- id: task-")),
            ),
            (
                "dash alone on its line",
                plain.replace(
                    "\n  - id: task-3\n",
                    "\n  -   # the third\n    id: task-3\n",
                ),
            ),
            (
                "a comment after a list key",
                plain.replacen("human_notes:\n", "human_notes: # the notes\n", 1),
            ),
            (
                "comments at column 0 inside a task",
                plain.replacen("\n    status:", "\n# about the status\n    status:", 2),
            ),
            (
                "trailing comments everywhere",
                plain
                    .lines()
                    .map(|l| {
                        if l.ends_with(':')
                            || l.trim().is_empty()
                            || l.trim_start().starts_with('#')
                            || l.contains('|')
                        {
                            format!("{l}\n")
                        } else {
                            format!("{l} # c\n")
                        }
                    })
                    .collect(),
            ),
        ];
        for (name, text) in variants {
            let Ok(decoded) = document::decode(text.as_bytes()) else {
                panic!("{name}: the variant must be a valid blackboard:\n{text}");
            };
            let c = Commented::decoded(text.as_bytes(), decoded.has_comments).unwrap();
            let before = decoded.state;
            let mut new = before.clone();
            new.revision = Some(before.revision() as i64 + 1);
            new.human_notes
                .get_or_insert_with(Vec::new)
                .push(note("note-9", "a # b"));
            new.tasks.get_mut(3).unwrap().priority = Some(7);
            let mut added = (*new.tasks.0[1]).clone();
            added.id = liza_model::ids::TaskId::parse("task-new").unwrap();
            new.tasks.0.push(Arc::new(added));
            let done = c
                .rewrite(Some(&before), &mut new, |s| document::emit(s, 0))
                .unwrap_or_else(|| panic!("{name}: rewritten"));
            let reread = document::decode(done.text.as_bytes())
                .unwrap_or_else(|f| panic!("{name}: reads back: {f:?}\n{}", done.text))
                .state;
            assert!(
                reread == new,
                "{name}: reads as the new state:\n{}",
                done.text
            );
            let comments = |t: &str| -> Vec<String> {
                t.lines()
                    .filter_map(|l| {
                        let at = if l.trim_start().starts_with('#') {
                            l.find('#')
                        } else {
                            l.find(" #")
                        };
                        at.map(|i| l[i..].trim().to_owned())
                    })
                    .filter(|c| !c.starts_with("# b"))
                    .collect()
            };
            assert_eq!(
                comments(&done.text),
                comments(&text),
                "{name}:\n{}",
                done.text
            );
        }
    }

    #[test]
    fn keys_the_person_left_out_are_added_after_their_last_entry() {
        let text = base().replace("human_notes:", "human_notes: # none yet\n# x\nfoo:");
        let text = text.replacen("\n# x\nfoo:", "", 1);
        let (c, before) = commented(&text);
        let mut new = before.clone();
        assert!(before.archived.is_none());
        new.archived = Some(Default::default());
        new.human_notes = None;
        let done = rewrite(&c, &before, &mut new);
        assert!(
            done.text.ends_with("archived: {}\n# the end\n"),
            "{}",
            done.text
        );
        assert!(!done.text.contains("human_notes"), "{}", done.text);
        assert!(done.text.contains("# what people said\n"), "{}", done.text);
    }
}
