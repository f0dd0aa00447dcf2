//! Reading and writing state.yaml text: bytes → tree → typed state with every finding
//! located, and typed state → bytes.

use std::collections::HashSet;

use super::codec::{Decode, Decoder, Emit};
use super::finding::{FieldPath, Finding, Seg, sort_findings};
use super::model::State;
use super::node::{Node, Pos, Value};
use super::validate::{ValidationEnv, validate};
use super::yaml::{self, Emitter};

/// Largest state.yaml liza reads. Terminal-task archiving keeps real blackboards far
/// below this (a 1000-task blackboard is about 13 MB); a bigger file is refused with a
/// clear error rather than parsed for seconds.
pub const MAX_STATE_BYTES: usize = 64 * 1024 * 1024;

/// A state.yaml that decoded without errors.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The typed state.
    pub state: State,
    /// The tree it was decoded from, with positions.
    pub root: Node,
    /// Whether the text holds comments (a person's text, kept on every later write).
    pub has_comments: bool,
}

/// Everything known about one state.yaml text: the state when it decoded, and all
/// findings (decoding and validation), located and sorted.
#[derive(Debug)]
pub struct Checked {
    /// The state, when it decoded without errors.
    pub decoded: Option<Decoded>,
    /// Every finding, decoding and validation, located and sorted.
    pub findings: Vec<Finding>,
}

impl Checked {
    /// The findings that are errors.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.is_error())
    }

    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }
}

/// Decodes `bytes`; `Err` holds the findings (with positions) when anything does not fit
/// the model. No validation rules beyond types run here.
pub fn decode(bytes: &[u8]) -> Result<Decoded, Vec<Finding>> {
    let (root, has_comments) = parse_root(bytes)?;
    let mut d = Decoder::default();
    let state = State::decode(&root, &mut d);
    let mut findings = d.findings;
    for f in &mut findings {
        classify_type_finding(f);
    }
    match state {
        Some(state) if findings.is_empty() => Ok(Decoded {
            state,
            root,
            has_comments,
        }),
        _ => {
            sort_findings(&mut findings);
            Err(findings)
        }
    }
}

/// Decodes and validates `bytes`: what `liza validate` reports.
pub fn check(bytes: &[u8], env: &mut ValidationEnv<'_>) -> Checked {
    let (root, has_comments) = match parse_root(bytes) {
        Ok(parsed) => parsed,
        Err(findings) => {
            return Checked {
                decoded: None,
                findings,
            };
        }
    };
    let mut d = Decoder::default();
    let state = State::decode(&root, &mut d);
    let mut findings = d.findings;
    for f in &mut findings {
        classify_type_finding(f);
    }
    let decode_failed = !findings.is_empty();
    if let Some(state) = &state {
        env.undecoded_task_ids = raw_task_ids(&root);
        if let Some(records) = &env.live_records {
            env.live_leases = records.agent_leases(state);
        }
        for mut f in validate(state, env) {
            let pos = f.path.locate(&root);
            f = f.at(pos);
            findings.push(f);
        }
    }
    sort_findings(&mut findings);
    let decoded = match state {
        Some(state) if !decode_failed => Some(Decoded {
            state,
            root,
            has_comments,
        }),
        _ => None,
    };
    Checked { decoded, findings }
}

/// Reads a state file, at most one byte past [`MAX_STATE_BYTES`], so a huge file is
/// reported as too large without being loaded whole.
pub fn read_limited(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(len.min(MAX_STATE_BYTES as u64 + 1) as usize);
    file.take(MAX_STATE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Decodes `bytes` as another record liza keeps in the same YAML form (an archive).
pub fn decode_record<T: Decode>(bytes: &[u8]) -> Result<T, Vec<Finding>> {
    let (root, _) = parse_root(bytes)?;
    let mut d = Decoder::default();
    match T::decode(&root, &mut d) {
        Some(value) if d.findings.is_empty() => Ok(value),
        _ => Err(d.findings),
    }
}

/// Serialises a record as liza writes state.yaml.
pub fn emit_record<T: Emit>(value: &T) -> String {
    let mut e = Emitter::with_capacity(4096);
    value.emit(&mut e);
    e.finish()
}

/// Serialises a state as liza writes it.
pub fn emit(state: &State, size_hint: usize) -> String {
    let mut e = Emitter::with_capacity(size_hint + size_hint / 8 + 4096);
    state.emit(&mut e);
    e.finish()
}

fn file_finding(check: &'static str, message: String, pos: Pos) -> Vec<Finding> {
    vec![Finding::error(None, check, FieldPath::root(), message).at(pos)]
}

fn parse_root(bytes: &[u8]) -> Result<(Node, bool), Vec<Finding>> {
    if bytes.len() > MAX_STATE_BYTES {
        return Err(vec![
            Finding::error(
                None,
                "file-size",
                FieldPath::root(),
                format!(
                    "the file is larger than {} MB, the most liza reads as a blackboard",
                    MAX_STATE_BYTES / (1024 * 1024)
                ),
            )
            .with_hint("this is not a blackboard liza wrote; restore one from .liza/journal/ or archive terminal tasks")
            .at(Pos::new(1, 1)),
        ]);
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            let pos = position_of_byte(bytes, err.valid_up_to());
            return Err(file_finding(
                "utf8",
                "the file is not UTF-8 text (binary data or another encoding)".into(),
                pos,
            ));
        }
    };
    let parsed = yaml::parse(text)
        .map_err(|e| file_finding("yaml-syntax", format!("invalid YAML: {}", e.message), e.pos))?;
    let Some(root) = parsed.root else {
        return Err(vec![
            Finding::error(Some(1), "top-level-key", FieldPath::root(), "the file holds no YAML document (it is empty)".into())
                .with_hint("restore the blackboard from .liza/journal/ (liza history) or run liza init in a fresh repository")
                .at(Pos::new(1, 1)),
        ]);
    };
    Ok((root, parsed.has_comments))
}

/// Gives type findings on `version`, `revision` and `config` the rule they belong to.
fn classify_type_finding(f: &mut Finding) {
    if f.check != "type" && f.check != "required" {
        return;
    }
    match f.path.0.first() {
        Some(Seg::Key(k)) if k == "version" && f.path.0.len() == 1 => {
            f.rule = Some(1);
            f.check = "version-int";
        }
        Some(Seg::Key(k)) if k == "revision" && f.path.0.len() == 1 => {
            f.rule = Some(12);
            f.check = "revision-int";
        }
        Some(Seg::Key(k)) if k == "config" && f.check == "type" => {
            f.rule = Some(11);
            f.check = "config-type";
        }
        _ => {}
    }
}

/// The `id` strings of every task in the tree, decoded or not.
fn raw_task_ids(root: &Node) -> HashSet<String> {
    let mut ids = HashSet::new();
    if let Some(Node {
        value: Value::Seq(tasks),
        ..
    }) = root.get("tasks")
    {
        for task in tasks {
            match task.get("id").map(|n| &n.value) {
                Some(Value::Str(s)) => {
                    ids.insert(s.clone());
                }
                Some(Value::Int(i)) => {
                    ids.insert(i.to_string());
                }
                _ => {}
            }
        }
    }
    ids
}

/// 1-based line and column (in characters) of byte `offset`.
fn position_of_byte(bytes: &[u8], offset: usize) -> Pos {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    Pos::new(line as u32, column as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_junk_is_located() {
        let err = decode(b"version: 1\ngoal: \xff\xfe\n").unwrap_err();
        assert_eq!(err[0].check, "utf8");
        assert_eq!((err[0].line, err[0].column), (2, 7));
    }

    #[test]
    fn empty_files_are_rule_one() {
        let err = decode(b"").unwrap_err();
        assert_eq!(err[0].rule, Some(1));
        let err = decode(b"# nothing\n").unwrap_err();
        assert_eq!(err[0].rule, Some(1));
    }

    #[test]
    fn oversized_files_are_refused_before_parsing() {
        let big = vec![b'#'; MAX_STATE_BYTES + 1];
        assert_eq!(decode(&big).unwrap_err()[0].check, "file-size");
    }
}
