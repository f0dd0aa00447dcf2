//! One question to the model, answered in the role's schema (specs/builtin-agent.md *Calling the
//! model*): the call (with the client's transport retries), the JSON parse, and schema
//! validation by mode — `strict`: a violation is a failed attempt, asked again up to
//! `max_attempts`; `lenient`: the valid parts are kept, the errors recorded; `none`: the
//! reader takes what it can without judging. Every attempt leaves debug artifacts.

use serde_json::{Value, json};

use super::artifacts::Artifacts;
use crate::blackboard::model::ValidationMode;
use crate::llm::client::{Call, ChatClient, Transient, Usage};
use crate::llm::response::{self, Expect};

/// A role's reader: the typed answer and the schema errors it tolerated, or the errors
/// that make it unusable. `mode` tells it how much to tolerate.
pub type Reader<T> = dyn Fn(&Value, ValidationMode) -> Result<(T, Vec<String>), Vec<String>>;

/// What asking produced.
pub struct Asked<T> {
    /// The typed answer, when one could be read.
    pub answer: Option<T>,
    /// Tolerated (lenient) or final (strict) schema errors.
    pub errors: Vec<String>,
    /// The tokens every attempt used, added up.
    pub usage: Usage,
    /// How many times the question was asked.
    pub attempts: u32,
    /// Retries and their reasons: `transport`, `parse`, `schema`.
    pub retries: Vec<&'static str>,
    /// Why there is no answer, when there is none.
    pub failure: Option<String>,
}

/// One question to the model: the messages, the shape of the answer, and what a dry run
/// answers.
pub struct Question<'a> {
    /// The system message: the identity's prefix, then the role's rules.
    pub system: &'a str,
    /// The user message: the role's prompt and the expected shape. An attempt after an
    /// unusable answer adds what was wrong with it.
    pub user: String,
    /// What the answer's JSON must be at the top level.
    pub expect: Expect,
    /// The answer under `DRY_RUN=1`.
    pub dry_run_answer: &'a str,
    /// Artifact file prefix (`plan`, `draft-2`, `review`…).
    pub label: &'a str,
}

/// Asks `question` until `read` accepts an answer in the endpoint's validation mode, at
/// most `max_attempts` times; an unreadable answer or a schema violation is asked again
/// with what was wrong, a call that fails after the client's retries ends it. Each
/// attempt's prompt, response and validation go to `artifacts`.
pub async fn ask<T>(
    client: &ChatClient,
    artifacts: &Artifacts,
    question: Question<'_>,
    read: &Reader<T>,
) -> Asked<T> {
    let endpoint = client.endpoint();
    let mode = endpoint.validation_mode;
    let max = endpoint.max_attempts.max(1);
    let mut asked = Asked {
        answer: None,
        errors: Vec::new(),
        usage: Usage::default(),
        attempts: 0,
        retries: Vec::new(),
        failure: None,
    };
    let mut user = question.user.clone();
    for attempt in 1..=max {
        asked.attempts = attempt;
        let label = format!("{}-attempt-{attempt}", question.label);
        artifacts.write(
            &format!("{label}-prompt.md"),
            &format!("# system\n\n{}\n\n# user\n\n{user}\n", question.system),
        );
        let outcome = client
            .complete(&Call {
                system: question.system,
                user: &user,
                dry_run_answer: question.dry_run_answer,
            })
            .await;
        asked
            .retries
            .extend(outcome.retries.iter().map(|_: &Transient| "transport"));
        let answer = match outcome.result {
            Ok(a) => a,
            Err(failure) => {
                asked.failure = Some(failure.to_string());
                artifacts.write(&format!("{label}-failure.txt"), &failure.to_string());
                return asked;
            }
        };
        if let Some(u) = answer.usage {
            asked.usage.add(u);
        }
        artifacts.write(&format!("{label}-response.txt"), &answer.content);
        let value = match response::parse(&answer.content, question.expect) {
            Ok(parsed) => parsed.value,
            Err(why) => {
                asked.failure = Some(format!("the answer could not be read: {why}"));
                artifacts.write(
                    &format!("{label}-validation.json"),
                    &json!({"mode": mode.as_str(), "parse_error": why.to_string()}).to_string(),
                );
                if attempt < max {
                    asked.retries.push("parse");
                    user = again(&question.user, &[why.to_string()]);
                }
                continue;
            }
        };
        match read(&value, mode) {
            Ok((typed, errors)) => {
                artifacts.write(
                    &format!("{label}-validation.json"),
                    &json!({"mode": mode.as_str(), "errors": errors, "parsed": value}).to_string(),
                );
                asked.answer = Some(typed);
                asked.errors = errors;
                asked.failure = None;
                return asked;
            }
            Err(errors) => {
                artifacts.write(
                    &format!("{label}-validation.json"),
                    &json!({"mode": mode.as_str(), "errors": errors, "parsed": value}).to_string(),
                );
                tracing::warn!(
                    count = errors.len(),
                    attempt,
                    "the model's answer does not match the schema"
                );
                asked.failure = Some(format!(
                    "the answer does not match the schema: {}",
                    errors.join("; ")
                ));
                asked.errors = errors.clone();
                if attempt < max {
                    asked.retries.push("schema");
                    user = again(&question.user, &errors);
                }
            }
        }
    }
    asked
}

/// The question again, with what was wrong with the last answer.
fn again(user: &str, problems: &[String]) -> String {
    format!(
        "{user}\n\n# Your previous answer could not be used\n\n{}\n\nAnswer again with JSON only, in exactly the schema above.\n",
        problems
            .iter()
            .map(|p| format!("- {p}"))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

/// Schema-reading helpers shared by the roles.
pub mod read {
    use serde_json::Value;

    /// A field of the model's answer that is not what the schema asks; its text is what
    /// the model is told to fix.
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    pub enum FieldProblem {
        /// The field is absent.
        #[error("{0} is missing")]
        Missing(String),
        /// The field is there but is not non-empty text.
        #[error("{0} must be non-empty text")]
        NotText(String),
    }

    /// `value[key]` as non-empty text, or a problem naming where (`at.key`).
    pub fn text(value: &Value, key: &str, at: &str) -> Result<String, FieldProblem> {
        match value.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(_) => Err(FieldProblem::NotText(format!("{at}.{key}"))),
            None => Err(FieldProblem::Missing(format!("{at}.{key}"))),
        }
    }

    /// `value[key]` as non-empty text; when it is not, the error goes to `errors`.
    pub fn text_noted(
        value: &Value,
        key: &str,
        at: &str,
        errors: &mut Vec<String>,
    ) -> Option<String> {
        text(value, key, at)
            .map_err(|e| errors.push(e.to_string()))
            .ok()
    }

    /// `value[key]` as text when present.
    pub fn opt_text(value: &Value, key: &str) -> Option<String> {
        value
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .filter(|s| !s.trim().is_empty())
    }

    /// `value[key]` as a list of texts (a single text is one item).
    pub fn texts(value: &Value, key: &str) -> Vec<String> {
        match value.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read::{FieldProblem, text};
    use serde_json::json;

    #[test]
    fn a_field_that_is_not_text_is_named_with_where_it_is() {
        let item = json!({"path": "src/a.rs", "empty": "  ", "number": 3});
        assert_eq!(text(&item, "path", "answer.edits[0]").unwrap(), "src/a.rs");
        for (key, problem, said) in [
            (
                "empty",
                FieldProblem::NotText("answer.edits[0].empty".into()),
                "answer.edits[0].empty must be non-empty text",
            ),
            (
                "number",
                FieldProblem::NotText("answer.edits[0].number".into()),
                "answer.edits[0].number must be non-empty text",
            ),
            (
                "content",
                FieldProblem::Missing("answer.edits[0].content".into()),
                "answer.edits[0].content is missing",
            ),
        ] {
            let got = text(&item, key, "answer.edits[0]").unwrap_err();
            assert_eq!(got, problem);
            assert_eq!(got.to_string(), said);
        }
    }
}
