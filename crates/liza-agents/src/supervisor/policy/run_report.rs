//! The codex backend's structured run report (specs/supervisor.md *Backends*): the JSON schema
//! liza hands to `codex exec --output-schema`, and the agent's final message read back
//! against it with the validation modes of specs/builtin-agent.md — `strict` (an unusable report
//! fails the run), `lenient` (keep the valid parts, fill the rest with empty values),
//! `none` (keep whatever JSON object came back).

use serde_json::{Map, Value, json};

use crate::blackboard::model::ValidationMode;

/// The longest report kept (the agent's final message is model output of any size).
pub const MAX_REPORT_BYTES: usize = 64 * 1024;

const STEP_STATUSES: &[&str] = &["completed", "partial", "skipped"];

/// The report's fields and what each holds.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    TextList,
    Steps,
}

const FIELDS: &[(&str, Kind)] = &[
    ("implementation_summary", Kind::Text),
    ("commit_message", Kind::Text),
    ("step_results", Kind::Steps),
    ("tests_executed", Kind::TextList),
    ("tests_recommended", Kind::TextList),
    ("follow_up_items", Kind::TextList),
    ("notes", Kind::Text),
];

const STEP_FIELDS: &[(&str, Kind)] = &[
    ("step_id", Kind::Text),
    ("status", Kind::Text),
    ("summary", Kind::Text),
    ("files", Kind::TextList),
    ("commands", Kind::TextList),
];

/// The JSON schema passed with `--output-schema` (structured-output rules: every property
/// required, no others).
pub fn schema() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let step = json!({
        "type": "object",
        "additionalProperties": false,
        "required": STEP_FIELDS.iter().map(|f| f.0).collect::<Vec<_>>(),
        "properties": {
            "step_id": {"type": "string"},
            "status": {"type": "string", "enum": STEP_STATUSES},
            "summary": {"type": "string"},
            "files": strings,
            "commands": strings,
        }
    });
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": FIELDS.iter().map(|f| f.0).collect::<Vec<_>>(),
        "properties": {
            "implementation_summary": {"type": "string"},
            "commit_message": {"type": "string"},
            "step_results": {"type": "array", "items": step},
            "tests_executed": strings,
            "tests_recommended": strings,
            "follow_up_items": strings,
            "notes": {"type": "string"},
        }
    })
}

/// A report as kept: the fields, and what validation found (lenient mode keeps going).
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The report: every field of the schema, empty where it was missing or wrong; in
    /// `none` mode, the object as it came.
    pub fields: Map<String, Value>,
    /// What was wrong with it, one line per problem (none in `none` mode).
    pub errors: Vec<String>,
}

/// Why there is no usable report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportProblem {
    /// The agent wrote no final message.
    Missing,
    /// The final message holds no JSON object.
    Unparseable(String),
    /// Strict mode: the object does not match the schema.
    Invalid(Vec<String>),
}

impl std::fmt::Display for ReportProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReportProblem::Missing => write!(f, "the agent wrote no run report"),
            ReportProblem::Unparseable(why) => write!(f, "the run report is not JSON: {why}"),
            ReportProblem::Invalid(errors) => {
                write!(
                    f,
                    "the run report does not match its schema: {}",
                    errors.join("; ")
                )
            }
        }
    }
}

/// Reads the agent's final message (`None`: no file) in `mode`. `Ok(None)`: nothing to
/// keep, which only strict mode counts against the run.
pub fn read(text: Option<&str>, mode: ValidationMode) -> Result<Option<RunReport>, ReportProblem> {
    let strict = mode == ValidationMode::Strict;
    let parsed = match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Err(ReportProblem::Missing),
        Some(t) if t.len() > MAX_REPORT_BYTES => Err(ReportProblem::Unparseable(format!(
            "{} bytes, more than the {MAX_REPORT_BYTES} kept",
            t.len()
        ))),
        Some(t) => json_object(t),
    };
    let object = match parsed {
        Ok(object) => object,
        Err(problem) if strict => return Err(problem),
        Err(_) => return Ok(None),
    };
    match mode {
        ValidationMode::None => Ok(Some(RunReport {
            fields: object,
            errors: Vec::new(),
        })),
        _ => {
            let (fields, errors) = validate(&object);
            if strict && !errors.is_empty() {
                return Err(ReportProblem::Invalid(errors));
            }
            Ok(Some(RunReport { fields, errors }))
        }
    }
}

/// The JSON object in `text`: the whole text, or the first fenced block.
fn json_object(text: &str) -> Result<Map<String, Value>, ReportProblem> {
    let direct = serde_json::from_str::<Value>(text);
    let value = match direct {
        Ok(v) => v,
        Err(e) => fenced(text)
            .and_then(|block| serde_json::from_str::<Value>(block).ok())
            .ok_or_else(|| ReportProblem::Unparseable(e.to_string()))?,
    };
    match value {
        Value::Object(map) => Ok(map),
        other => Err(ReportProblem::Unparseable(format!(
            "a JSON {} instead of an object",
            kind(&other)
        ))),
    }
}

/// The body of the first fenced code block.
fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    Some(&body[..body.find("```")?])
}

/// The valid fields (empty values for missing or wrong ones) and one error per problem.
fn validate(object: &Map<String, Value>) -> (Map<String, Value>, Vec<String>) {
    let mut errors = Vec::new();
    for key in object.keys() {
        if !FIELDS.iter().any(|f| f.0 == key) {
            errors.push(format!("unknown field `{key}`"));
        }
    }
    let fields = checked(object, FIELDS, "", &mut errors);
    (fields, errors)
}

fn checked(
    object: &Map<String, Value>,
    fields: &[(&str, Kind)],
    at: &str,
    errors: &mut Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, kind) in fields {
        let path = format!("{at}{name}");
        let value = match object.get(*name) {
            None => {
                errors.push(format!("`{path}` is missing"));
                empty(*kind)
            }
            Some(value) => check(value, *kind, &path, errors),
        };
        out.insert((*name).to_owned(), value);
    }
    out
}

fn check(value: &Value, kind: Kind, path: &str, errors: &mut Vec<String>) -> Value {
    match (kind, value) {
        (Kind::Text, Value::String(_)) => value.clone(),
        (Kind::TextList, Value::Array(items)) => {
            let mut kept = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(_) => kept.push(item.clone()),
                    other => {
                        errors.push(format!("`{path}[{i}]` is {}, not a string", kind_of(other)))
                    }
                }
            }
            Value::Array(kept)
        }
        (Kind::Steps, Value::Array(items)) => {
            let mut kept = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let at = format!("{path}[{i}].");
                let Value::Object(step) = item else {
                    errors.push(format!("`{path}[{i}]` is {}, not an object", kind_of(item)));
                    continue;
                };
                let before = errors.len();
                let mut step = checked(step, STEP_FIELDS, &at, errors);
                let status = step.get("status").and_then(Value::as_str).unwrap_or("");
                if !STEP_STATUSES.contains(&status) {
                    errors.push(format!(
                        "`{at}status` is {status:?}, not one of {}",
                        STEP_STATUSES.join(", ")
                    ));
                    step.insert("status".into(), Value::String("partial".into()));
                }
                // A step whose id is lost cannot be told apart from others: dropped.
                let has_id = step
                    .get("step_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| !id.is_empty());
                if errors.len() == before || has_id {
                    kept.push(Value::Object(step));
                }
            }
            Value::Array(kept)
        }
        (_, other) => {
            errors.push(format!(
                "`{path}` is {}, not {}",
                kind_of(other),
                match kind {
                    Kind::Text => "a string",
                    Kind::TextList => "a list of strings",
                    Kind::Steps => "a list of steps",
                }
            ));
            empty(kind)
        }
    }
}

fn empty(kind: Kind) -> Value {
    match kind {
        Kind::Text => Value::String(String::new()),
        Kind::TextList | Kind::Steps => Value::Array(Vec::new()),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn kind_of(value: &Value) -> String {
    let k = kind(value);
    match k {
        "null" => k.to_owned(),
        "array" | "object" => format!("an {k}"),
        _ => format!("a {k}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Value {
        json!({
            "implementation_summary": "added t-1.txt",
            "commit_message": "t-1: add the file",
            "step_results": [{"step_id": "1", "status": "completed", "summary": "wrote it",
                              "files": ["t-1.txt"], "commands": ["sh test.sh"]}],
            "tests_executed": ["sh test.sh"],
            "tests_recommended": [],
            "follow_up_items": [],
            "notes": ""
        })
    }

    #[test]
    fn the_schema_requires_every_field_and_forbids_others() {
        let schema = schema();
        assert_eq!(schema["additionalProperties"], false);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(required.len(), properties.len());
        assert!(properties.iter().all(|p| required.contains(&p.as_str())));
        let step = &schema["properties"]["step_results"]["items"];
        assert_eq!(step["properties"]["status"]["enum"], json!(STEP_STATUSES));
    }

    #[test]
    fn a_valid_report_is_kept_as_is_in_every_mode() {
        let text = full().to_string();
        for mode in [
            ValidationMode::Strict,
            ValidationMode::Lenient,
            ValidationMode::None,
        ] {
            let report = read(Some(&text), mode).unwrap().unwrap();
            assert_eq!(Value::Object(report.fields), full(), "{mode:?}");
            assert!(report.errors.is_empty());
        }
    }

    #[test]
    fn a_fenced_report_is_read() {
        let text = format!("Here it is:\n```json\n{}\n```\n", full());
        let report = read(Some(&text), ValidationMode::Strict).unwrap().unwrap();
        assert_eq!(Value::Object(report.fields), full());
    }

    #[test]
    fn strict_mode_fails_on_a_missing_unparseable_or_invalid_report() {
        assert_eq!(
            read(None, ValidationMode::Strict),
            Err(ReportProblem::Missing)
        );
        assert!(matches!(
            read(Some("I did it!"), ValidationMode::Strict),
            Err(ReportProblem::Unparseable(_))
        ));
        assert!(matches!(
            read(Some("[1, 2]"), ValidationMode::Strict),
            Err(ReportProblem::Unparseable(why)) if why.contains("array")
        ));
        let mut wrong = full();
        wrong["tests_executed"] = json!("sh test.sh");
        wrong["extra"] = json!(1);
        let Err(ReportProblem::Invalid(errors)) =
            read(Some(&wrong.to_string()), ValidationMode::Strict)
        else {
            panic!("an invalid report passed strict validation");
        };
        assert_eq!(
            errors,
            [
                "unknown field `extra`",
                "`tests_executed` is a string, not a list of strings"
            ]
        );
    }

    #[test]
    fn lenient_mode_keeps_the_valid_parts_and_fills_the_rest() {
        let text = json!({
            "implementation_summary": "added it",
            "commit_message": 7,
            "step_results": [
                {"step_id": "1", "status": "done", "summary": "x", "files": ["a", 3], "commands": []},
                "not a step"
            ],
            "tests_executed": ["sh test.sh"]
        })
        .to_string();
        let report = read(Some(&text), ValidationMode::Lenient).unwrap().unwrap();
        assert_eq!(report.fields["implementation_summary"], "added it");
        assert_eq!(report.fields["commit_message"], "");
        assert_eq!(
            report.fields["step_results"],
            json!([{"step_id": "1", "status": "partial", "summary": "x", "files": ["a"], "commands": []}])
        );
        assert_eq!(report.fields["tests_executed"], json!(["sh test.sh"]));
        assert_eq!(report.fields["notes"], "");
        assert_eq!(report.errors.len(), 7, "{:#?}", report.errors);
        assert_eq!(read(Some("no json"), ValidationMode::Lenient), Ok(None));
        assert_eq!(read(None, ValidationMode::Lenient), Ok(None));
    }

    #[test]
    fn mode_none_keeps_any_object_unchecked() {
        let report = read(Some(r#"{"whatever": [1]}"#), ValidationMode::None)
            .unwrap()
            .unwrap();
        assert_eq!(Value::Object(report.fields), json!({"whatever": [1]}));
        assert_eq!(read(Some("nope"), ValidationMode::None), Ok(None));
    }

    #[test]
    fn an_oversized_report_is_not_kept() {
        let big = format!("{{\"notes\": \"{}\"}}", "x".repeat(MAX_REPORT_BYTES));
        assert!(matches!(
            read(Some(&big), ValidationMode::Strict),
            Err(ReportProblem::Unparseable(why)) if why.contains("bytes")
        ));
        assert_eq!(read(Some(&big), ValidationMode::Lenient), Ok(None));
    }
}
