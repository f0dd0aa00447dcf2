//! `identities.yaml` (specs/builtin-agent.md *Identities*): the
//! perspectives agents can take, `[{id, name, prompt_prefix, description?}]` at the project
//! root. Loaded and validated once per process when an agent uses one; any problem is one
//! error naming the file, the place and what to write.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::blackboard::node::{Node, Pos, Value};
use crate::blackboard::yaml;

/// The identities file's name, at the project root.
pub const FILE_NAME: &str = "identities.yaml";

/// One perspective an agent can take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// What `--identity` names it by: letters, digits, `-`, `_` and `.`, unique in the file.
    pub id: String,
    /// Its name for people (`liza retro`'s report).
    pub name: String,
    /// The text that opens every system message of an agent taking it.
    pub prompt_prefix: String,
    /// What it is for, when the file says.
    pub description: Option<String>,
}

/// Why `identities.yaml` cannot be used: the file, where, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}{at}: {problem}")]
pub struct IdentityError {
    /// The file's path.
    pub file: String,
    /// `:line:column`, or empty when the whole file is concerned.
    pub at: String,
    /// What is wrong, and what to write instead.
    pub problem: String,
}

fn error(file: &Path, pos: Pos, problem: impl Into<String>) -> IdentityError {
    IdentityError {
        file: file.display().to_string(),
        at: if pos.is_known() {
            format!(":{}:{}", pos.line, pos.column)
        } else {
            String::new()
        },
        problem: problem.into(),
    }
}

/// Parses and validates the text of an identities file (`file` only names it in errors).
pub fn parse(file: &Path, text: &str) -> Result<Vec<Identity>, IdentityError> {
    let parsed = yaml::parse(text)
        .map_err(|e| error(file, e.pos, format!("not valid YAML: {}", e.message)))?;
    let Some(root) = parsed.root else {
        return Err(error(
            file,
            Pos::UNKNOWN,
            "no identities: list at least one `- {id, name, prompt_prefix}`",
        ));
    };
    let items = match &root.value {
        Value::Seq(items) => items,
        // `identities: [...]` is accepted too.
        Value::Map(entries) => match entries.iter().find(|e| e.key == "identities") {
            Some(e) => match &e.value.value {
                Value::Seq(items) => items,
                _ => return Err(error(file, e.value.pos, "`identities` must be a list")),
            },
            None => {
                return Err(error(
                    file,
                    root.pos,
                    "expected a list of identities (`- id: …`)",
                ));
            }
        },
        _ => {
            return Err(error(
                file,
                root.pos,
                "expected a list of identities (`- id: …`)",
            ));
        }
    };
    if items.is_empty() {
        return Err(error(
            file,
            root.pos,
            "no identities: list at least one `- {id, name, prompt_prefix}`",
        ));
    }
    let mut identities: Vec<Identity> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Map(entries) = &item.value else {
            return Err(error(
                file,
                item.pos,
                format!(
                    "identity {} must be a mapping with id, name and prompt_prefix",
                    i + 1
                ),
            ));
        };
        let text = |key: &str, required: bool| -> Result<Option<String>, IdentityError> {
            match entries.iter().find(|e| e.key == key) {
                Some(e) => match &e.value.value {
                    Value::Str(s) if !s.trim().is_empty() => Ok(Some(s.clone())),
                    Value::Int(n) => Ok(Some(n.to_string())),
                    Value::Null if !required => Ok(None),
                    _ => Err(error(
                        file,
                        e.value.pos,
                        format!("`{key}` of identity {} must be non-empty text", i + 1),
                    )),
                },
                None if required => Err(error(
                    file,
                    item.pos,
                    format!(
                        "identity {} has no `{key}` (required: id, name, prompt_prefix)",
                        i + 1
                    ),
                )),
                None => Ok(None),
            }
        };
        let identity = Identity {
            id: text("id", true)?.unwrap_or_default(),
            name: text("name", true)?.unwrap_or_default(),
            prompt_prefix: text("prompt_prefix", true)?.unwrap_or_default(),
            description: text("description", false)?,
        };
        if !is_safe_id(&identity.id) {
            return Err(error(
                file,
                position_of(item),
                format!(
                    "id `{}` of identity {} cannot name files and agents: use 1-64 letters, digits, `-`, `_` and `.`, starting with a letter or digit",
                    identity.id,
                    identities.len() + 1
                ),
            ));
        }
        if let Some(first) = identities.iter().position(|x| x.id == identity.id) {
            return Err(error(
                file,
                position_of(item),
                format!(
                    "duplicate id `{}` (identity {} has it too)",
                    identity.id,
                    first + 1
                ),
            ));
        }
        identities.push(identity);
    }
    Ok(identities)
}

/// An id that can be part of a file name (artifact directories) and a log field.
fn is_safe_id(id: &str) -> bool {
    id.len() <= 64
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.contains("..")
}

fn position_of(item: &Node) -> Pos {
    match &item.value {
        Value::Map(entries) => entries
            .iter()
            .find(|e| e.key == "id")
            .map_or(item.pos, |e| e.value.pos),
        _ => item.pos,
    }
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Arc<Vec<Identity>>>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<Vec<Identity>>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The identities of the project at `root`, read once per process.
pub fn load(root: &Path) -> Result<Arc<Vec<Identity>>, IdentityError> {
    load_file(&root.join(FILE_NAME))
}

/// The identities in `file`, read once per process (`liza retro --identities FILE`).
pub fn load_file(file: &Path) -> Result<Arc<Vec<Identity>>, IdentityError> {
    let file = file.to_path_buf();
    if let Some(hit) = cache().lock().ok().and_then(|c| c.get(&file).cloned()) {
        return Ok(hit);
    }
    let text = std::fs::read_to_string(&file).map_err(|e| {
        let problem = if e.kind() == std::io::ErrorKind::NotFound {
            "missing: identities are in use, so create this file with at least one (`- id: security\\n  name: Security reviewer\\n  prompt_prefix: You review for security.`)".to_owned()
        } else {
            format!("cannot be read: {e}")
        };
        error(&file, Pos::UNKNOWN, problem)
    })?;
    let identities = Arc::new(parse(&file, &text)?);
    if let Ok(mut c) = cache().lock() {
        c.insert(file, identities.clone());
    }
    Ok(identities)
}

/// The identity `id` of the project at `root`.
pub fn find(root: &Path, id: &str) -> Result<Identity, IdentityError> {
    let all = load(root)?;
    all.iter().find(|i| i.id == id).cloned().ok_or_else(|| {
        let known: Vec<&str> = all.iter().map(|i| i.id.as_str()).collect();
        error(
            &root.join(FILE_NAME),
            Pos::UNKNOWN,
            format!("no identity `{id}` (known: {})", known.join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<Vec<Identity>, String> {
        parse(Path::new("identities.yaml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn valid_identities_with_and_without_description() {
        let ids = check("- id: security\n  name: Security\n  prompt_prefix: You look for holes.\n  description: attack surface\n- id: perf\n  name: Performance\n  prompt_prefix: You look for slow paths.\n").unwrap();
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0].description.as_deref(), Some("attack surface"));
        assert_eq!(ids[1].description, None);
        let wrapped = check("identities:\n  - id: a\n    name: A\n    prompt_prefix: P\n").unwrap();
        assert_eq!(wrapped[0].id, "a");
    }

    #[test]
    fn each_problem_is_one_clear_error() {
        let cases = [
            ("", "no identities"),
            ("[]\n", "no identities"),
            (
                "- id: a\n  name: A\n",
                "identities.yaml:1:3: identity 1 has no `prompt_prefix`",
            ),
            (
                "- id: a\n  name: ''\n  prompt_prefix: P\n",
                "identities.yaml:2:9: `name` of identity 1 must be non-empty text",
            ),
            (
                "- id: a\n  name: A\n  prompt_prefix: P\n- id: a\n  name: B\n  prompt_prefix: Q\n",
                "identities.yaml:4:7: duplicate id `a`",
            ),
            ("- id: [a\n", "not valid YAML"),
            ("just text\n", "expected a list of identities"),
            ("- plain\n", "identity 1 must be a mapping"),
            (
                "- id: ../../etc\n  name: A\n  prompt_prefix: P\n",
                "identities.yaml:1:7: id `../../etc` of identity 1 cannot name files",
            ),
            (
                "- id: a b\n  name: A\n  prompt_prefix: P\n",
                "cannot name files",
            ),
        ];
        for (text, expected) in cases {
            let err = check(text).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_missing_file_says_what_to_write_and_loading_is_cached() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("identities.yaml: missing") && err.contains("prompt_prefix"),
            "{err}"
        );
        std::fs::write(
            dir.path().join(FILE_NAME),
            "- id: a\n  name: A\n  prompt_prefix: P\n",
        )
        .unwrap();
        let first = load(dir.path()).unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "broken: [").unwrap();
        let second = load(dir.path()).unwrap();
        assert!(Arc::ptr_eq(&first, &second), "parsed once per process");
        assert_eq!(find(dir.path(), "a").unwrap().name, "A");
        assert!(
            find(dir.path(), "b")
                .unwrap_err()
                .to_string()
                .contains("known: a")
        );
    }
}
