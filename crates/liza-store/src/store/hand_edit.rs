//! Hand edits of state.yaml (specs/blackboard.md *Hand edits*), reconciled under the state lock
//! before any other change, so neither side loses anything:
//!
//! - valid and made on the latest revision → committed as a `human_edit` transaction;
//! - made on an older revision → three-way merged (base: that revision's journal entry)
//!   onto the latest revision and committed;
//! - conflicting fields, a base gone from the journal, invalid YAML or state rules, or a
//!   status change a person may not make → the latest revision is restored and the human's
//!   file kept under `rejected/` with a note saying why and how to redo it;
//! - saved while a commit ran (swapped out by it) → judged the same way from where the
//!   swap left it, never put back in state.yaml, where the person's next save could replace
//!   it unread; every save a swap brings out is judged in turn.
//!
//! Which status changes a person may make is the transition table's business, and alarms
//! belong to operations: both come from the [`HandEditPolicy`] the `ops` layer installs.

use std::collections::HashSet;
use std::path::Path;

use liza_model::codec::{Decode, Decoder};
use liza_model::document;
use liza_model::finding::Finding;
use liza_model::model::State;
use liza_model::summary;
use liza_model::timestamp::Timestamp;
use liza_model::validate::{ValidationEnv, validate};
use liza_yaml::merge3::{self, Choices, Conflict};

/// What the store cannot decide itself about a hand edit.
pub trait HandEditPolicy: Send + Sync {
    /// The status changes from `before` to `after` a person may not make, one line each.
    fn forbidden_changes(&self, before: &State, after: &State) -> Vec<String>;
    /// Told what became of a hand edit (the state lock is held: be quick, no waiting).
    fn reconciled(&self, outcome: &HandEditOutcome);
}

/// What became of a hand edit.
#[derive(Debug, Clone)]
pub enum HandEditOutcome {
    /// Committed.
    Applied {
        /// The revision it was committed as.
        revision: u64,
        /// Its log line: what changed, and where it was merged (see
        /// [`hand_edit_detail`]).
        summary: String,
        /// The older revision it was made on, when it was merged onto a newer one.
        merged_from: Option<u64>,
        /// The state it produced.
        state: Box<State>,
    },
    /// Not applied.
    Rejected {
        /// The latest revision, restored.
        revision: u64,
        /// Why.
        why: Rejection,
        /// Where the human's file is kept.
        kept_as: Option<String>,
    },
}

/// Why a hand edit was not applied.
#[derive(Debug, Clone)]
pub enum Rejection {
    /// YAML or state rules, each finding located in the human's file.
    Invalid(Vec<Finding>),
    /// Fields both the human and the blackboard changed.
    Conflicts {
        /// The revision it was made on.
        edited: u64,
        /// The fields, each with both sides' values.
        conflicts: Vec<Conflict>,
    },
    /// The revision it was made on is no longer in the journal.
    BaseGone {
        /// That revision.
        edited: u64,
    },
    /// Status changes a person may not make by editing.
    Forbidden(Vec<String>),
}

impl Rejection {
    /// One line per problem, for the note, the log and the alarm.
    pub fn lines(&self, file: &str) -> Vec<String> {
        match self {
            Rejection::Invalid(findings) => findings
                .iter()
                .map(|f| format!("{file}:{}:{}: {}", f.line, f.column, f.message))
                .collect(),
            Rejection::Conflicts { conflicts, .. } => {
                conflicts.iter().map(ToString::to_string).collect()
            }
            Rejection::BaseGone { edited } => vec![format!(
                "it was edited from revision {edited}, which is no longer in the journal, so it cannot be merged"
            )],
            Rejection::Forbidden(moves) => moves.clone(),
        }
    }

    /// A short label for the kept file's name.
    pub(super) fn label(&self) -> &'static str {
        match self {
            Rejection::Invalid(_) => "invalid",
            Rejection::Conflicts { .. } => "conflict",
            Rejection::BaseGone { .. } => "base-gone",
            Rejection::Forbidden(_) => "forbidden",
        }
    }

    pub(super) fn summary(&self) -> String {
        match self {
            Rejection::Invalid(f) => format!("it is not a valid blackboard ({} errors)", f.len()),
            Rejection::Conflicts { edited, conflicts } => format!(
                "it was edited from revision {edited} and {} field(s) changed on both sides",
                conflicts.len()
            ),
            Rejection::BaseGone { edited } => {
                format!("revision {edited}, which it was edited from, is gone from the journal")
            }
            Rejection::Forbidden(m) => {
                format!("{} status change(s) a person may not make", m.len())
            }
        }
    }
}

/// The latest revision a hand edit is judged against, and how to read an older one
/// (the base of a three-way merge).
pub struct Head<'a> {
    /// The latest revision's number.
    pub revision: u64,
    /// Its text, decoded.
    pub decoded: &'a document::Decoded,
    /// The text of a revision, if it is still kept.
    pub text_of: &'a dyn Fn(u64) -> Option<Vec<u8>>,
}

/// The state a hand edit leads to (and the older revision it was merged from), or why
/// it cannot be applied.
pub fn judge(
    bytes: &[u8],
    head: &Head<'_>,
    root: &Path,
    policy: &dyn HandEditPolicy,
    choices: &Choices,
) -> Result<(State, Option<u64>), Rejection> {
    let head_decoded = head.decoded;
    let theirs = document::decode(bytes).map_err(Rejection::Invalid)?;
    let edited = theirs.state.revision();
    let (candidate, merged_from) = if edited >= head.revision {
        (theirs.state.clone(), None)
    } else {
        let base = (head.text_of)(edited)
            .and_then(|b| document::decode(&b).ok())
            .ok_or(Rejection::BaseGone { edited })?;
        let merged = merge3::merge_resolving(&base.root, &head_decoded.root, &theirs.root, choices)
            .map_err(|conflicts| Rejection::Conflicts { edited, conflicts })?;
        let mut d = Decoder::default();
        let state = match State::decode(&merged, &mut d) {
            Some(state) if d.findings.is_empty() => state,
            _ => return Err(Rejection::Invalid(d.findings)),
        };
        (state, Some(edited))
    };
    let env = ValidationEnv::new(Some(root), Timestamp::now());
    let known: HashSet<_> = validate(&head_decoded.state, &env)
        .iter()
        .filter(|f| f.is_error())
        .map(Finding::identity)
        .collect();
    let introduced: Vec<Finding> = validate(&candidate, &env)
        .into_iter()
        .filter(|f| f.is_error() && !known.contains(&f.identity()))
        .map(|f| {
            let pos = f.path.locate(&theirs.root);
            f.at(pos)
        })
        .collect();
    if !introduced.is_empty() {
        return Err(Rejection::Invalid(introduced));
    }
    let forbidden = policy.forbidden_changes(&head_decoded.state, &candidate);
    if !forbidden.is_empty() {
        return Err(Rejection::Forbidden(forbidden));
    }
    Ok((candidate, merged_from))
}

/// The log line of an applied hand edit: what changed, and where it was merged.
pub fn hand_edit_detail(
    before: &State,
    after: &State,
    merged_from: Option<u64>,
    head: u64,
) -> String {
    let summary = summary::summarize(before, after);
    match merged_from {
        Some(edited) => format!("{summary} (edited on revision {edited}, merged onto {head})"),
        None => summary,
    }
}
