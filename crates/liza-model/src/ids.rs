//! Validated identifiers: task ids, agent ids and the roles agent ids encode.
//!
//! Ids become directory names (`.worktrees/<id>`), git branch names (`task/<id>`) and
//! file names (`live/<agent>.<generation>.yaml`), so they are checked once, when they are
//! parsed, and a value of these types can be used in a path or a ref without further
//! checks (security requirement S1).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a string is not a valid id; rendered as a lowercase fragment after the id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[expect(missing_docs, reason = "each variant's message is its documentation")]
pub enum IdError {
    #[error("task id {0:?} is empty")]
    Empty(String),
    #[error("task id {0:?} is longer than 64 characters")]
    TooLong(String),
    #[error("task id {0:?} holds a character other than ASCII letters, digits, '-', '_' and '.'")]
    BadCharacter(String),
    #[error("task id {0:?} must start with a letter or a digit")]
    BadStart(String),
    #[error("task id {0:?} contains '..'")]
    DotDot(String),
    #[error("task id {0:?} ends in '.' or '.lock', which git refuses in branch names")]
    BadEnd(String),
    #[error("task id {0:?} is reserved (it means every task)")]
    Reserved(String),
    #[error(
        "agent id {0:?} does not match ^(coder|code-reviewer|planner)-[0-9]+$ (e.g. coder-1, code-reviewer-2, planner-1)"
    )]
    BadAgentId(String),
}

/// A task id: 1–64 ASCII letters, digits, `-`, `_`, `.`; starts with a letter or digit;
/// no `..`; does not end in `.` or `.lock`; not `all`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

impl TaskId {
    /// Checks `text` against the task id rules of specs/blackboard.md.
    pub fn parse(text: &str) -> Result<TaskId, IdError> {
        let owned = || text.to_owned();
        if text.is_empty() {
            return Err(IdError::Empty(owned()));
        }
        if text.len() > 64 {
            return Err(IdError::TooLong(owned()));
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(IdError::BadCharacter(owned()));
        }
        if !text.as_bytes()[0].is_ascii_alphanumeric() {
            return Err(IdError::BadStart(owned()));
        }
        if text.contains("..") {
            return Err(IdError::DotDot(owned()));
        }
        if text.ends_with('.') || text.ends_with(".lock") {
            return Err(IdError::BadEnd(owned()));
        }
        if text == "all" {
            return Err(IdError::Reserved(owned()));
        }
        Ok(TaskId(text.to_owned()))
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TaskId {
    type Error = IdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        TaskId::parse(&value)
    }
}

impl From<TaskId> for String {
    fn from(value: TaskId) -> Self {
        value.0
    }
}

/// The three agent roles. The YAML identifiers are `planner`, `coder` and
/// `code_reviewer`; agent ids use the prefixes `planner-`, `coder-`, `code-reviewer-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// Writes the plan: adds, finalizes, rescopes and abandons tasks.
    #[serde(rename = "planner")]
    Planner,
    /// Claims tasks and does the work.
    #[serde(rename = "coder")]
    Coder,
    /// Reviews submitted work and merges what it approved.
    #[serde(rename = "code_reviewer", alias = "code-reviewer")]
    CodeReviewer,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 3] = [Role::Planner, Role::Coder, Role::CodeReviewer];

    /// The YAML identifier liza writes in `agents.<id>.role`.
    pub fn yaml_name(self) -> &'static str {
        match self {
            Role::Planner => "planner",
            Role::Coder => "coder",
            Role::CodeReviewer => "code_reviewer",
        }
    }

    /// The agent id prefix (without the trailing `-`).
    pub fn id_prefix(self) -> &'static str {
        match self {
            Role::Planner => "planner",
            Role::Coder => "coder",
            Role::CodeReviewer => "code-reviewer",
        }
    }

    /// Reads a role's YAML identifier; `code-reviewer` (written by the original scripts)
    /// is accepted as well.
    pub fn from_yaml_name(text: &str) -> Option<Role> {
        match text {
            "planner" => Some(Role::Planner),
            "coder" => Some(Role::Coder),
            "code_reviewer" | "code-reviewer" => Some(Role::CodeReviewer),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.yaml_name())
    }
}

/// An agent id matching `^(coder|code-reviewer|planner)-[0-9]+$`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AgentId(String);

impl AgentId {
    /// Checks `text` against the agent id regex (specs/blackboard.md *`agents.<id>`*).
    pub fn parse(text: &str) -> Result<AgentId, IdError> {
        let role_of = |prefix: &str| {
            text.strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('-'))
                .filter(|n| !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit()))
        };
        if Role::ALL.iter().any(|r| role_of(r.id_prefix()).is_some()) {
            Ok(AgentId(text.to_owned()))
        } else {
            Err(IdError::BadAgentId(text.to_owned()))
        }
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The role its prefix names.
    pub fn role(&self) -> Role {
        if self.0.starts_with("code-reviewer-") {
            Role::CodeReviewer
        } else if self.0.starts_with("coder-") {
            Role::Coder
        } else {
            Role::Planner
        }
    }
}

impl TryFrom<String> for AgentId {
    type Error = IdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        AgentId::parse(&value)
    }
}

impl From<AgentId> for String {
    fn from(value: AgentId) -> Self {
        value.0
    }
}

macro_rules! string_id_traits {
    ($ty:ty) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }
        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}
string_id_traits!(TaskId);
string_id_traits!(AgentId);

/// Who performs a transaction: a person (no agent identity), an agent presenting its id
/// and generation, the supervisor of a registration, or liza itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A person: a command run without an agent identity, logged as `human`.
    Human,
    /// liza's own automatic acts — a checkpoint at the deadline or by the circuit
    /// breaker, the breaker's analysis, archiving — with a supervisor's authority, logged
    /// as `liza`, never as a person.
    Liza,
    /// An agent acting under its own identity.
    Agent {
        /// `LIZA_AGENT_ID`.
        id: AgentId,
        /// `LIZA_AGENT_GENERATION`, if the agent presented one.
        generation: Option<String>,
    },
    /// `liza-agent` acting for the registration it made: every write it makes is fenced
    /// by that generation, so a supervisor whose agent was registered anew (or
    /// unregistered) changes nothing more.
    Supervisor {
        /// The agent it registered.
        id: AgentId,
        /// The generation that registration was given.
        generation: String,
    },
}

impl Actor {
    /// The name written in log entries and history events.
    pub fn name(&self) -> &str {
        match self {
            Actor::Human => "human",
            Actor::Liza => "liza",
            Actor::Agent { id, .. } | Actor::Supervisor { id, .. } => id.as_str(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_accept_the_documented_alphabet() {
        for good in ["t-1", "a", "9", "feat_x.v2", "A-b_c.d", &"x".repeat(64)] {
            assert!(TaskId::parse(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn hostile_task_ids_are_refused() {
        let long = "x".repeat(65);
        type Expect = fn(&IdError) -> bool;
        let cases: &[(&str, Expect)] = &[
            ("", |e| matches!(e, IdError::Empty(_))),
            (&long, |e| matches!(e, IdError::TooLong(_))),
            ("../x", |e| matches!(e, IdError::BadCharacter(_))),
            ("a/b", |e| matches!(e, IdError::BadCharacter(_))),
            ("-rf", |e| matches!(e, IdError::BadStart(_))),
            (".hidden", |e| matches!(e, IdError::BadStart(_))),
            ("a..b", |e| matches!(e, IdError::DotDot(_))),
            ("x.lock", |e| matches!(e, IdError::BadEnd(_))),
            ("x.", |e| matches!(e, IdError::BadEnd(_))),
            ("all", |e| matches!(e, IdError::Reserved(_))),
            ("tab\there", |e| matches!(e, IdError::BadCharacter(_))),
            ("nl\n", |e| matches!(e, IdError::BadCharacter(_))),
            ("é", |e| matches!(e, IdError::BadCharacter(_))),
            ("a b", |e| matches!(e, IdError::BadCharacter(_))),
        ];
        for (text, check) in cases {
            let err = TaskId::parse(text).expect_err(text);
            assert!(check(&err), "{text:?} gave {err:?}");
        }
    }

    #[test]
    fn agent_ids_follow_the_seed_regex() {
        for good in ["coder-1", "code-reviewer-2", "planner-10"] {
            assert!(AgentId::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "coder",
            "coder1",
            "my-coder-1",
            "coder-",
            "coder-1a",
            "code_reviewer-1",
            "Coder-1",
            " coder-1",
            "coder-1\n",
            "reviewer-1",
        ] {
            assert!(AgentId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn agent_id_roles_come_from_the_prefix() {
        assert_eq!(AgentId::parse("coder-3").unwrap().role(), Role::Coder);
        assert_eq!(
            AgentId::parse("code-reviewer-3").unwrap().role(),
            Role::CodeReviewer
        );
        assert_eq!(AgentId::parse("planner-1").unwrap().role(), Role::Planner);
    }

    #[test]
    fn roles_accept_both_reviewer_spellings() {
        assert_eq!(
            Role::from_yaml_name("code_reviewer"),
            Some(Role::CodeReviewer)
        );
        assert_eq!(
            Role::from_yaml_name("code-reviewer"),
            Some(Role::CodeReviewer)
        );
        assert_eq!(Role::from_yaml_name("reviewer"), None);
    }
}
