//! Why a lifecycle operation was refused: the rule, what was wrong, what to do instead.

pub use super::rule::RuleId;

/// A refused operation. `rule` names the rule of specs/lifecycle.md (or specs/git.md) that
/// refused it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} [{rule}]")]
pub struct Refusal {
    /// The rule that refused it.
    pub rule: RuleId,
    /// What was wrong.
    pub message: String,
    /// What to do instead.
    pub hint: String,
}

impl Refusal {
    /// A refusal under `rule`.
    pub fn new(rule: RuleId, message: impl Into<String>, hint: impl Into<String>) -> Refusal {
        Refusal {
            rule,
            message: message.into(),
            hint: hint.into(),
        }
    }
}
