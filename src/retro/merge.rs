//! Merging the identities' codes: the same code (its name compared without case,
//! spacing or punctuation) found by several identities is one code marked as such, with
//! every quote once and the identities that cited it; codes are ordered by frequency.

use std::collections::BTreeMap;

use serde::Serialize;

use super::coding::{CoderResult, GroundedQuote};

/// One identity's description of a code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Description {
    pub identity: String,
    pub text: String,
}

/// A quote of a merged code, with the identities that cited it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct CitedQuote {
    #[serde(flatten)]
    pub quote: GroundedQuote,
    pub identities: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct MergedCode {
    /// The name as first given.
    pub code: String,
    /// How many times it was assigned (chunks × identities).
    pub frequency: usize,
    pub identities: Vec<String>,
    /// Whether more than one identity found it.
    pub agreement: bool,
    pub descriptions: Vec<Description>,
    pub tasks: Vec<String>,
    pub quotes: Vec<CitedQuote>,
}

/// The key codes are matched by: lowercase letters and digits, words joined by `-`.
pub(crate) fn code_key(name: &str) -> String {
    name.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The codes of all identities, merged; most frequent first, then most quoted, then by
/// name.
pub(crate) fn merge(results: &[CoderResult]) -> Vec<MergedCode> {
    let mut by_key: BTreeMap<String, MergedCode> = BTreeMap::new();
    for result in results {
        let who = &result.identity;
        for code in &result.codes {
            let key = code_key(&code.code);
            let merged = by_key.entry(key).or_insert_with(|| MergedCode {
                code: code.code.clone(),
                frequency: 0,
                identities: Vec::new(),
                agreement: false,
                descriptions: Vec::new(),
                tasks: Vec::new(),
                quotes: Vec::new(),
            });
            merged.frequency += 1;
            if !merged.identities.contains(who) {
                merged.identities.push(who.clone());
            }
            if !code.description.is_empty()
                && !merged.descriptions.iter().any(|d| &d.identity == who)
            {
                merged.descriptions.push(Description {
                    identity: who.clone(),
                    text: code.description.clone(),
                });
            }
            for q in &code.quotes {
                if let Some(task) = &q.task
                    && !merged.tasks.contains(task)
                {
                    merged.tasks.push(task.clone());
                }
                match merged.quotes.iter_mut().find(|c| c.quote.id == q.id) {
                    Some(cited) if !cited.identities.contains(who) => {
                        cited.identities.push(who.clone())
                    }
                    Some(_) => {}
                    None => merged.quotes.push(CitedQuote {
                        quote: q.clone(),
                        identities: vec![who.clone()],
                    }),
                }
            }
        }
    }
    let mut codes: Vec<MergedCode> = by_key.into_values().collect();
    for c in &mut codes {
        c.agreement = c.identities.len() > 1;
        c.tasks.sort();
    }
    codes.sort_by(|a, b| {
        b.frequency
            .cmp(&a.frequency)
            .then(b.quotes.len().cmp(&a.quotes.len()))
            .then(code_key(&a.code).cmp(&code_key(&b.code)))
    });
    codes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::client::Usage;
    use crate::retro::coding::Code;

    fn quote(id: &str, task: &str) -> GroundedQuote {
        GroundedQuote {
            id: id.into(),
            interaction: task.into(),
            task: Some(task.into()),
            message: 0,
            chunk_index: 0,
            start_pos: 0,
            end_pos: 1,
            text: "x".into(),
        }
    }

    fn result(identity: &str, codes: Vec<(&str, GroundedQuote)>) -> CoderResult {
        CoderResult {
            identity: identity.into(),
            codes: codes
                .into_iter()
                .map(|(name, q)| Code {
                    code: name.into(),
                    description: format!("{name} as {identity} sees it"),
                    quotes: vec![q],
                })
                .collect(),
            token_usage: Usage::default(),
            tally: Default::default(),
        }
    }

    #[test]
    fn names_match_without_case_spacing_or_punctuation() {
        assert_eq!(code_key("Missing tests"), "missing-tests");
        assert_eq!(code_key("missing_tests "), "missing-tests");
        assert_eq!(code_key("MISSING-TESTS!"), "missing-tests");
        assert_ne!(code_key("missing test"), code_key("missing tests"));
    }

    #[test]
    fn codes_found_by_several_identities_are_marked_and_ordered_by_frequency() {
        let a = quote("t-1:msg_0:0:0-1", "t-1");
        let b = quote("t-2:msg_1:0:0-1", "t-2");
        let merged = merge(&[
            result(
                "security",
                vec![("Missing tests", a.clone()), ("scope creep", b.clone())],
            ),
            result(
                "performance",
                vec![("missing_tests", a.clone()), ("missing-tests", b.clone())],
            ),
        ]);
        assert_eq!(merged.len(), 2);
        let top = &merged[0];
        assert_eq!(top.code, "Missing tests");
        assert_eq!(top.frequency, 3);
        assert!(top.agreement);
        assert_eq!(top.identities, ["security", "performance"]);
        assert_eq!(top.tasks, ["t-1", "t-2"]);
        assert_eq!(top.quotes.len(), 2);
        assert_eq!(top.quotes[0].identities, ["security", "performance"]);
        assert_eq!(top.quotes[1].identities, ["performance"]);
        assert_eq!(top.descriptions.len(), 2);
        let other = &merged[1];
        assert_eq!(other.code, "scope creep");
        assert!(!other.agreement);
    }
}
