//! Startup steps 1–2 of specs/supervisor.md: the role named on the command line, normalised,
//! and the agent identity checked against it — each failure one line saying exactly what
//! is wrong, with a command that works.

use crate::blackboard::{AgentId, Role};

/// Why the role or identity given cannot be used.
#[expect(missing_docs, reason = "each variant's message is its documentation")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("unknown role {0:?}: the roles are coder, code-reviewer and planner")]
    UnknownRole(String),
    #[error("LIZA_AGENT_ID is not set: every agent needs an identity")]
    Unset { role: Role },
    #[error("LIZA_AGENT_ID={given} is not a {role} identity: {problem}")]
    Malformed {
        given: String,
        role: Role,
        problem: String,
    },
}

impl IdentityError {
    /// A command that works for this role.
    pub fn example(&self) -> String {
        match self {
            IdentityError::UnknownRole(_) => "LIZA_AGENT_ID=coder-1 liza-agent coder".into(),
            IdentityError::Unset { role } | IdentityError::Malformed { role, .. } => {
                let prefix = role.id_prefix();
                format!(
                    "LIZA_AGENT_ID={prefix}-1 liza-agent {prefix}   (or: liza-agent {prefix} --auto-id)"
                )
            }
        }
    }
}

/// `code_reviewer`, `Code Reviewer`, `CODE_REVIEWER`, `code-reviewer` → the code reviewer.
pub fn normalise_role(text: &str) -> Result<Role, IdentityError> {
    let normal: String = text
        .trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    match normal.as_str() {
        "coder" => Ok(Role::Coder),
        "code-reviewer" | "reviewer" => Ok(Role::CodeReviewer),
        "planner" => Ok(Role::Planner),
        _ => Err(IdentityError::UnknownRole(text.to_owned())),
    }
}

/// Checks `LIZA_AGENT_ID` (`given`) for `role`.
pub fn check_identity(given: Option<&str>, role: Role) -> Result<AgentId, IdentityError> {
    let Some(given) = given.filter(|g| !g.is_empty()) else {
        return Err(IdentityError::Unset { role });
    };
    let malformed = |problem: String| IdentityError::Malformed {
        given: given.to_owned(),
        role,
        problem,
    };
    let prefix = role.id_prefix();
    match AgentId::parse(given) {
        Ok(id) if id.role() == role => Ok(id),
        Ok(id) => Err(malformed(format!(
            "it names a {} but this supervisor runs a {role}",
            id.role()
        ))),
        Err(_) if given == prefix => Err(malformed(format!("it lacks the number: use {prefix}-1"))),
        Err(_) if given.starts_with(prefix) => Err(malformed(format!(
            "the form is {prefix}-<number>, e.g. {prefix}-1"
        ))),
        Err(_) => Err(malformed(format!(
            "it must be {prefix}-<number> (^(coder|code-reviewer|planner)-[0-9]+$), e.g. {prefix}-1"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_normalised() {
        for text in [
            "code_reviewer",
            "Code Reviewer",
            "CODE_REVIEWER",
            "code-reviewer",
        ] {
            assert_eq!(normalise_role(text), Ok(Role::CodeReviewer), "{text}");
        }
        assert_eq!(normalise_role("Coder"), Ok(Role::Coder));
        assert_eq!(normalise_role("PLANNER"), Ok(Role::Planner));
        assert!(normalise_role("tester").is_err());
    }

    #[test]
    fn identities_that_must_fail_say_why() {
        let why = |given: Option<&str>, role| check_identity(given, role).unwrap_err().to_string();
        assert!(why(None, Role::Coder).contains("not set"));
        assert!(why(Some("coder"), Role::Coder).contains("lacks the number"));
        assert!(why(Some("coder1"), Role::Coder).contains("coder-<number>"));
        assert!(why(Some("my-coder-1"), Role::Coder).contains("must be coder-<number>"));
        assert!(why(Some("planner-1"), Role::Coder).contains("names a planner"));
        assert!(why(Some("coder-1"), Role::CodeReviewer).contains("names a coder"));
        assert_eq!(
            check_identity(Some("code-reviewer-2"), Role::CodeReviewer)
                .unwrap()
                .as_str(),
            "code-reviewer-2"
        );
        assert!(
            check_identity(None, Role::Planner)
                .unwrap_err()
                .example()
                .contains("LIZA_AGENT_ID=planner-1 liza-agent planner")
        );
    }
}
