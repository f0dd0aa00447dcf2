//! The parse cache: the last committed state as JSON, keyed by the content hash of the
//! state.yaml bytes it belongs to (`state.cache.<hash>.json`).
//!
//! YAML liza wrote itself is never parsed again: a transaction or a snapshot read hashes
//! state.yaml and, when a cache file for that hash exists, loads the model from it
//! (specs/quality.md P1/P2/P10). A missing, stale or damaged cache only means a full parse.
//!
//! Layout (JSON lines, so tasks decode in parallel and unchanged tasks are copied):
//!
//! ```text
//! liza-state-cache/5/<liza version> <hash> lock_timeout=<s> tasks=<n> layout=<m>
//! <start> <end> "<key>"                 m lines: a commented text's top-level entries
//! {the state as JSON, without its tasks}
//! <start> <end> <s>/<a>/<r> <n> {task 0 as JSON, n bytes, without its history}[history]
//! ...
//! ```
//!
//! `<start>..<end>` is the task's text in state.yaml, `<s>/<a>/<r>` the submissions,
//! approvals and rejections its history counts, and the history's JSON follows the task's
//! (nothing when the task has none). A history is handed over as that range of the file,
//! undecoded until something reads it (`model/history.rs`); the counts are what every
//! commit's sprint metrics need of it. Everything after `<end> ` belongs to the task alone,
//! so an unchanged task's is copied as it is.
//!
//! `layout=0`: liza's own rendering (task texts are copied by the next commit). Otherwise
//! the text holds a person's comments, and the entry lines with the task spans are its
//! [`Layout`]: the next commit edits only what it changes (`store/commented.rs`).
//!
//! Each commit writes a new file and removes the old ones rather than replacing a file in
//! place: on ext4, replacing by rename or truncation forces the new data to disk at the
//! next fsync, which would put the whole cache on every transaction's critical path.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use super::hash::ContentHash;
use liza_model::model::{
    CachedJson, History, HistoryEvent, ReviewCounts, State, Task, TaskList, without_histories,
};
use liza_yaml::ItemTexts;
use liza_yaml::layout::{Items, Layout, LayoutEntry};

/// Changes whenever the model's JSON form may change, so an old cache is ignored.
const FORMAT: &str = concat!("liza-state-cache/5/", env!("CARGO_PKG_VERSION"));
const PREFIX: &str = "state.cache.";
const SUFFIX: &str = ".json";

/// Where each task's text is in the committed state.yaml and in its cache file, keyed by
/// the task's `Arc` address: what a transaction copies for the tasks it did not change.
#[derive(Debug, Default)]
pub struct TaskTexts {
    /// The committed state.yaml text and each task's span in it.
    pub yaml: ItemTexts,
    /// The cache file's bytes.
    pub json_text: Arc<Vec<u8>>,
    /// Each task's own part of its cache line in `json_text` (everything after its
    /// state.yaml span).
    pub json: HashMap<usize, Range<usize>>,
}

/// The parse cache files in one directory (`.liza/`).
pub struct ParseCache {
    dir: PathBuf,
}

impl ParseCache {
    /// The cache kept in `dir`.
    pub fn new(dir: PathBuf) -> ParseCache {
        ParseCache { dir }
    }

    /// The cache file of the state.yaml text hashing to `hash`.
    pub fn path_for(&self, hash: ContentHash) -> PathBuf {
        self.dir
            .join(format!("{PREFIX}{}{SUFFIX}", &hash.to_hex()[..32]))
    }

    /// The state for `hash` (the hash of `state_bytes`), with the texts of its tasks and,
    /// for a commented text, its layout; `state_bytes` back when the cache does not have it.
    pub fn load(&self, hash: ContentHash, state_bytes: Vec<u8>) -> Result<Loaded, Vec<u8>> {
        match self.load_unconfirmed(hash, &state_bytes) {
            Some(mut loaded) => {
                loaded.texts.yaml.text = state_bytes;
                Ok(loaded)
            }
            None => Err(state_bytes),
        }
    }

    /// [`Self::load`] while `state_bytes` are still being hashed: the caller uses the
    /// result only once their hash is known to be `hash`, and then gives it the text.
    pub fn load_unconfirmed(&self, hash: ContentHash, state_bytes: &[u8]) -> Option<Loaded> {
        let (state, texts, layout) = self.read(hash, state_bytes)?;
        Some(Loaded {
            state,
            texts,
            layout,
        })
    }

    fn read(
        &self,
        hash: ContentHash,
        state_bytes: &[u8],
    ) -> Option<(State, TaskTexts, Option<Layout>)> {
        let bytes = Arc::new(fs::read(self.path_for(hash)).ok()?);
        // Lines are found as text (the search for a newline is vectorised for `str`).
        let text = std::str::from_utf8(&bytes).ok()?;
        let mut lines = text.split_inclusive('\n').map(str::as_bytes);
        let header = std::str::from_utf8(lines.next()?).ok()?;
        let (cached_hash, _, count, entry_count) = parse_header(header.trim_end())?;
        if cached_hash != hash {
            return None;
        }
        let mut offset = header.len();
        let mut entries = Vec::with_capacity(entry_count);
        for _ in 0..entry_count {
            let line = lines.next()?;
            offset += line.len();
            entries.push(parse_entry_line(line, state_bytes.len())?);
        }
        let top = lines.next()?;
        let mut state: State = serde_json::from_slice(top).ok()?;
        offset += top.len();
        let mut task_lines = Vec::with_capacity(count);
        for line in lines {
            let task_line = parse_task_line(line, offset)?;
            if task_line.yaml.end > state_bytes.len() {
                return None;
            }
            task_lines.push(task_line);
            offset += line.len();
        }
        if task_lines.len() != count {
            return None;
        }
        let tasks = decode_tasks(&bytes, &task_lines)?;
        let layout = (entry_count > 0).then(|| Layout {
            entries,
            items: Some(Items {
                key: "tasks".into(),
                spans: task_lines.iter().map(|t| t.yaml.clone()).collect(),
            }),
        });
        let mut texts = TaskTexts::default();
        for (task, line) in tasks.iter().zip(task_lines) {
            let key = Arc::as_ptr(task) as usize;
            texts.yaml.spans.insert(key, line.yaml);
            texts.json.insert(key, line.own);
        }
        state.tasks = TaskList(tasks);
        texts.json_text = bytes;
        Some((state, texts, layout))
    }

    /// The lock timeout recorded by the last commit, from a cache header.
    pub fn lock_timeout(&self) -> Option<u64> {
        let path = self.files().ok()?.into_iter().next()?;
        let mut head = [0u8; 512];
        let n = fs::File::open(path).ok()?.read(&mut head).ok()?;
        let text = std::str::from_utf8(&head[..n]).ok()?;
        parse_header(text.lines().next()?).map(|(_, timeout, _, _)| timeout)
    }

    fn files(&self) -> io::Result<Vec<PathBuf>> {
        Ok(fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str().is_some_and(Self::is_cache_file))
            .map(|e| e.path())
            .collect())
    }

    /// Serialises `state` for the cache; `yaml_spans` are where its tasks are in the
    /// committed text, `previous` the texts of the state it was changed from, `layout`
    /// the text's when it holds a person's comments.
    pub fn encode(
        &self,
        hash: ContentHash,
        state: &mut State,
        yaml_spans: &[(usize, Range<usize>)],
        previous: Option<&TaskTexts>,
        layout: Option<&Layout>,
        lock_timeout: u64,
    ) -> Encoded {
        let previous_len = previous.map_or(0, |p| p.json_text.len());
        let mut out = Vec::with_capacity(previous_len + previous_len / 8 + 4096);
        let entries = layout.map_or(&[][..], |l| &l.entries[..]);
        let _ = writeln!(
            out,
            "{FORMAT} {} lock_timeout={lock_timeout} tasks={} layout={}",
            hash.to_hex(),
            state.tasks.len(),
            entries.len()
        );
        for entry in entries {
            let _ = write!(out, "{} {} ", entry.span.start, entry.span.end);
            let _ = serde_json::to_writer(&mut out, &entry.key);
            out.push(b'\n');
        }
        // The tasks go on lines of their own.
        let tasks = std::mem::take(&mut state.tasks);
        let _ = serde_json::to_writer(&mut out, &*state);
        state.tasks = tasks;
        out.push(b'\n');
        let mut json = HashMap::with_capacity(state.tasks.len());
        let mut readable = true;
        for (task, (key, yaml)) in state.tasks.iter().zip(yaml_spans) {
            let _ = write!(out, "{} {} ", yaml.start, yaml.end);
            let start = out.len();
            let reused = previous
                .and_then(|p| Some((p, p.json.get(key)?)))
                .and_then(|(p, range)| p.json_text.get(range.clone()));
            match reused {
                Some(text) => out.extend_from_slice(text),
                None => readable &= encode_task(&mut out, task),
            }
            json.insert(*key, start..out.len());
            out.push(b'\n');
        }
        Encoded {
            path: self.path_for(hash),
            bytes: out,
            json,
            readable,
        }
    }

    /// Writes an encoded cache and removes the one of `previous` (the state the commit
    /// replaced). Strays left by crashes are removed by the store's cleanup.
    pub fn store(&self, encoded: &Encoded, previous: ContentHash) -> io::Result<()> {
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&encoded.path)
        {
            Ok(mut file) => file.write_all(&encoded.bytes)?,
            // Same hash, same content.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let old = self.path_for(previous);
        if old != encoded.path {
            let _ = fs::remove_file(old);
        }
        Ok(())
    }

    /// Removes the cache of `hash`, if any.
    pub fn remove(&self, hash: ContentHash) {
        let _ = fs::remove_file(self.path_for(hash));
    }

    /// Whether a file name in `.liza/` is a parse cache file.
    pub fn is_cache_file(name: &str) -> bool {
        name.starts_with(PREFIX) && name.ends_with(SUFFIX)
    }
}

/// What the cache holds for one state.yaml text.
pub struct Loaded {
    /// The state (task histories decoded only when read).
    pub state: State,
    /// Where its tasks are in state.yaml and in the cache file.
    pub texts: TaskTexts,
    /// Where things are in the text, when it holds a person's comments.
    pub layout: Option<Layout>,
}

/// A serialised cache, ready to be written.
pub struct Encoded {
    path: PathBuf,
    /// The file's content.
    pub bytes: Vec<u8>,
    /// Each task's own part of its line in `bytes`, by the task's key (the next
    /// commit's [`TaskTexts::json`]).
    pub json: HashMap<usize, Range<usize>>,
    /// Every history written reads back as the same events. When one does not (a
    /// person's text JSON cannot tell apart, such as a mapping whose one key is
    /// `$float`), the cache is not written: the next reader parses state.yaml, as it
    /// would have to for a task that does not decode.
    pub readable: bool,
}

/// The header's hash, lock timeout, task count and layout entry count.
fn parse_header(line: &str) -> Option<(ContentHash, u64, usize, usize)> {
    let mut parts = line.split(' ');
    if parts.next()? != FORMAT {
        return None;
    }
    let hash = ContentHash::from_hex(parts.next()?)?;
    let timeout = parts.next()?.strip_prefix("lock_timeout=")?.parse().ok()?;
    let count = parts.next()?.strip_prefix("tasks=")?.parse().ok()?;
    let entries = parts.next()?.strip_prefix("layout=")?.parse().ok()?;
    Some((hash, timeout, count, entries))
}

/// `<start> <end> "<key>"\n` → a layout entry inside a text of `len` bytes.
fn parse_entry_line(line: &[u8], len: usize) -> Option<LayoutEntry> {
    let line = std::str::from_utf8(line.strip_suffix(b"\n")?).ok()?;
    let mut parts = line.splitn(3, ' ');
    let start: usize = parts.next()?.parse().ok()?;
    let end: usize = parts.next()?.parse().ok()?;
    let key: String = serde_json::from_str(parts.next()?).ok()?;
    (start <= end && end <= len).then_some(LayoutEntry {
        key,
        span: start..end,
    })
}

/// One task line of a cache file; ranges are into the file.
struct TaskLine {
    /// The task's text in state.yaml.
    yaml: Range<usize>,
    counts: ReviewCounts,
    /// The task's JSON, without its history.
    task: Range<usize>,
    /// The history's JSON (empty: the task has none).
    history: Range<usize>,
    /// Everything after `<end> `: what a commit copies for an unchanged task.
    own: Range<usize>,
}

/// `<start> <end> <counts> <n> <task JSON><history JSON>\n`, at `offset` in the file.
fn parse_task_line(line: &[u8], offset: usize) -> Option<TaskLine> {
    let line = line.strip_suffix(b"\n")?;
    let mut fields = [0..0, 0..0, 0..0, 0..0];
    let mut at = 0;
    for field in &mut fields {
        let len = line[at..].iter().position(|b| *b == b' ')?;
        *field = at..at + len;
        at += len + 1;
    }
    let text = |range: &Range<usize>| std::str::from_utf8(&line[range.clone()]).ok();
    let start: usize = text(&fields[0])?.parse().ok()?;
    let end: usize = text(&fields[1])?.parse().ok()?;
    let counts = ReviewCounts::parse_field(text(&fields[2])?)?;
    let task_len: usize = text(&fields[3])?.parse().ok()?;
    let task_end = at.checked_add(task_len).filter(|e| *e <= line.len())?;
    if start > end {
        return None;
    }
    Some(TaskLine {
        yaml: start..end,
        counts,
        task: offset + at..offset + task_end,
        history: offset + task_end..offset + line.len(),
        own: offset + fields[2].start..offset + line.len(),
    })
}

/// `<counts> <n> {task without its history}[history]`: everything of a task line that
/// belongs to the task alone. False when the history written does not read back as the
/// same events (a cached history is copied as the text it was read from).
fn encode_task(out: &mut Vec<u8>, task: &Task) -> bool {
    let _ = write!(out, "{} ", task.review_counts().to_field());
    let json = without_histories(|| serde_json::to_vec(task)).unwrap_or_default();
    let _ = write!(out, "{} ", json.len());
    out.extend_from_slice(&json);
    let Some(history) = &task.history else {
        return true;
    };
    if let Some(text) = history.cached_json() {
        out.extend_from_slice(text);
        return true;
    }
    let start = out.len();
    if serde_json::to_writer(&mut *out, history).is_err() {
        return false;
    }
    serde_json::from_slice::<Vec<HistoryEvent>>(&out[start..])
        .is_ok_and(|back| back.as_slice() == history.events())
}

/// Decodes the task lines (each history left as its range of `file`), on several threads
/// for big blackboards.
fn decode_tasks(file: &Arc<Vec<u8>>, lines: &[TaskLine]) -> Option<Vec<Arc<Task>>> {
    let decode = |chunk: &[TaskLine]| -> Option<Vec<Arc<Task>>> {
        chunk
            .iter()
            .map(|line| {
                let mut task: Task = serde_json::from_slice(&file[line.task.clone()]).ok()?;
                if task.history.is_some() {
                    return None;
                }
                if !line.history.is_empty() {
                    let json = CachedJson::new(Arc::clone(file), line.history.clone())?;
                    task.history = Some(History::cached(json, line.counts));
                }
                Some(Arc::new(task))
            })
            .collect()
    };
    // Threads pay off only for big blackboards: starting one costs about as much as
    // decoding a few dozen kilobytes.
    let json_bytes: usize = lines.iter().map(|line| line.task.len()).sum();
    if json_bytes < 512 * 1024 {
        return decode(lines);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if threads < 2 {
        return decode(lines);
    }
    let per = lines.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = lines
            .chunks(per)
            .map(|chunk| s.spawn(move || decode(chunk)))
            .collect();
        let mut tasks = Vec::with_capacity(lines.len());
        for h in handles {
            tasks.extend(h.join().ok()??);
        }
        Some(tasks)
    })
}
