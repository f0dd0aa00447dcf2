//! Reading a model's answer as JSON (specs/builtin-agent.md *Calling the model*): direct JSON,
//! then a ```json fenced block, then a bare ``` fenced block, then the first balanced JSON
//! object or array in the text; an object wrapping the expected list under a known key is
//! unwrapped. The strategy that worked is reported so the run log can say so.

use serde_json::Value;

/// What the role expects at the top level.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    /// A JSON object.
    Object,
    /// A JSON array; an object holding it under one of these keys is unwrapped.
    List(&'static [&'static str]),
}

/// Which strategy found the JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// The whole answer is JSON.
    Direct,
    /// A ```json fenced block.
    JsonFence,
    /// A fenced block with no language tag.
    BareFence,
    /// The first balanced JSON object or array in the text.
    Balanced,
}

impl Strategy {
    /// Its name in the run log and the artifacts (`direct`, `json_fence`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Direct => "direct",
            Strategy::JsonFence => "json_fence",
            Strategy::BareFence => "bare_fence",
            Strategy::Balanced => "balanced",
        }
    }
}

/// The JSON read from an answer, of the expected shape.
#[derive(Debug)]
pub struct Parsed {
    /// The value, unwrapped when it came inside a wrapping object.
    pub value: Value,
    /// The strategy that found it.
    pub strategy: Strategy,
    /// The key a wrapping object held the expected list under, when it was unwrapped.
    pub unwrapped: Option<&'static str>,
}

/// Why no JSON of the expected shape was found (never the content itself: that goes to
/// the debug artifacts only).
#[derive(Debug, PartialEq, Eq)]
pub enum ParseFailure {
    /// The answer is empty or only whitespace.
    Empty,
    /// No strategy found JSON in it.
    NoJson,
    /// JSON was found, but not of the expected shape.
    WrongShape {
        /// What the first JSON found was (`an object`, `a string`, …).
        found: &'static str,
    },
}

impl std::fmt::Display for ParseFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseFailure::Empty => f.write_str("the answer was empty"),
            ParseFailure::NoJson => {
                f.write_str("no JSON found in the answer (direct, fenced or embedded)")
            }
            ParseFailure::WrongShape { found } => {
                write!(f, "the answer's JSON is {found}, not the expected shape")
            }
        }
    }
}

/// Parses `text` as the role expects; on a wrapper or failure a WARNING is logged.
pub fn parse(text: &str, expect: Expect) -> Result<Parsed, ParseFailure> {
    let text = text.trim();
    if text.is_empty() {
        tracing::warn!("model answer empty");
        return Err(ParseFailure::Empty);
    }
    let mut wrong_shape = None;
    for (strategy, candidate) in candidates(text) {
        let Some(value) = candidate else { continue };
        match shape(value, expect) {
            Ok((value, unwrapped)) => {
                if let Some(key) = unwrapped {
                    tracing::warn!(
                        key,
                        "model answer wrapped the expected list in an object; unwrapped"
                    );
                }
                return Ok(Parsed {
                    value,
                    strategy,
                    unwrapped,
                });
            }
            Err(wrong) => wrong_shape = wrong_shape.or(Some(wrong)),
        }
    }
    let failure = wrong_shape.unwrap_or(ParseFailure::NoJson);
    tracing::warn!(%failure, "could not read the model answer");
    Err(failure)
}

/// The strategies in order, each lazily producing a JSON value if it finds one.
fn candidates(text: &str) -> impl Iterator<Item = (Strategy, Option<Value>)> + '_ {
    [
        Strategy::Direct,
        Strategy::JsonFence,
        Strategy::BareFence,
        Strategy::Balanced,
    ]
    .into_iter()
    .map(move |s| {
        let value = match s {
            Strategy::Direct => serde_json::from_str(text).ok(),
            Strategy::JsonFence => fenced(text, true).and_then(|b| serde_json::from_str(b).ok()),
            Strategy::BareFence => fenced(text, false).and_then(|b| serde_json::from_str(b).ok()),
            Strategy::Balanced => first_balanced(text),
        };
        (s, value)
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `value` as `expect` asks, a list unwrapped from its object (and the key it was under);
/// else what the value was.
fn shape(value: Value, expect: Expect) -> Result<(Value, Option<&'static str>), ParseFailure> {
    match (expect, value) {
        (Expect::Object, v @ Value::Object(_)) => Ok((v, None)),
        (Expect::List(_), v @ Value::Array(_)) => Ok((v, None)),
        (Expect::List(keys), Value::Object(mut map)) => {
            for key in keys {
                if map.get(*key).is_some_and(Value::is_array) {
                    return Ok((map.remove(*key).unwrap_or_default(), Some(*key)));
                }
            }
            Err(ParseFailure::WrongShape { found: "an object" })
        }
        (_, v) => Err(ParseFailure::WrongShape { found: kind(&v) }),
    }
}

/// The body of the first fenced block: ```json (any case) when `json`, else a bare ```
/// fence with no language tag.
fn fenced(text: &str, json: bool) -> Option<&str> {
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let line_end = after.find('\n')?;
        let tag = after[..line_end].trim();
        let body_and_more = &after[line_end + 1..];
        let end = body_and_more.find("```")?;
        let wanted = if json {
            tag.eq_ignore_ascii_case("json")
        } else {
            tag.is_empty()
        };
        if wanted {
            return Some(&body_and_more[..end]);
        }
        rest = &body_and_more[end + 3..];
    }
    None
}

/// How many opening brackets are tried before giving up: each try scans to its matching
/// bracket, so a hostile answer of nothing but `{` must not cost quadratic time.
const BALANCED_TRIES: usize = 64;

/// The first `{…}` or `[…]` that is balanced (outside strings) and parses as JSON.
fn first_balanced(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    let mut start = 0;
    for _ in 0..BALANCED_TRIES {
        let offset = text[start..].find(['{', '['])?;
        let open = start + offset;
        if let Some(close) = matching_close(bytes, open)
            && let Ok(value) = serde_json::from_str(&text[open..=close])
        {
            return Some(value);
        }
        start = open + 1;
    }
    None
}

/// The index of the bracket closing the one at `open`, skipping strings and escapes.
fn matching_close(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FINDINGS: Expect = Expect::List(&["findings", "codes"]);

    #[test]
    fn direct_json_first() {
        let p = parse(r#" {"verdict": "approve"} "#, Expect::Object).unwrap();
        assert_eq!(p.strategy, Strategy::Direct);
        assert_eq!(p.value, json!({"verdict": "approve"}));
    }

    #[test]
    fn a_json_fence_then_a_bare_fence() {
        let text = "Here you go:\n```JSON\n{\"a\": 1}\n```\nand\n```\n{\"a\": 2}\n```";
        let p = parse(text, Expect::Object).unwrap();
        assert_eq!(
            (p.strategy, p.value),
            (Strategy::JsonFence, json!({"a": 1}))
        );
        let text = "```python\nprint(1)\n```\n```\n[1, 2]\n```";
        let p = parse(text, FINDINGS).unwrap();
        assert_eq!((p.strategy, p.value), (Strategy::BareFence, json!([1, 2])));
    }

    #[test]
    fn the_first_balanced_value_in_prose() {
        let text = "I think {this is not json} but this is: {\"x\": \"a } in a string\", \"y\": [1]} and more {\"z\": 0}";
        let p = parse(text, Expect::Object).unwrap();
        assert_eq!(p.strategy, Strategy::Balanced);
        assert_eq!(p.value, json!({"x": "a } in a string", "y": [1]}));
    }

    #[test]
    fn a_wrapped_list_is_unwrapped_under_a_known_key_only() {
        let p = parse(r#"{"findings": [{"issue": "x"}]}"#, FINDINGS).unwrap();
        assert_eq!(p.unwrapped, Some("findings"));
        assert_eq!(p.value, json!([{"issue": "x"}]));
        assert_eq!(
            parse(r#"{"other": []}"#, FINDINGS).unwrap_err(),
            ParseFailure::WrongShape { found: "an object" }
        );
    }

    #[test]
    fn failures_say_why() {
        assert_eq!(
            parse("  \n", Expect::Object).unwrap_err(),
            ParseFailure::Empty
        );
        assert_eq!(
            parse("no json here {", Expect::Object).unwrap_err(),
            ParseFailure::NoJson
        );
        assert_eq!(
            parse("[1, 2]", Expect::Object).unwrap_err(),
            ParseFailure::WrongShape { found: "an array" }
        );
        assert_eq!(
            parse("```json\n{broken\n```", Expect::Object).unwrap_err(),
            ParseFailure::NoJson
        );
        assert_eq!(
            parse("]]]{{{", Expect::Object).unwrap_err(),
            ParseFailure::NoJson
        );
    }
}
