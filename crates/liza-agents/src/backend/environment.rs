//! The agent's environment (specs/supervisor.md *Backends*): the supervisor's, minus every
//! secret except the variables the backend's CLI documents for its own authentication and
//! endpoint (and the user's `pass_env`), plus `env` values with `${VAR}` taken from the
//! supervisor's environment.

/// Whether the variable `name` holds a secret: liza's own keys, the providers' keys and
/// anything whose name says it is a key, token, secret or password. Removed from every
/// agent's environment unless its backend passes it through.
pub fn is_secret(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "LIZA_LLM_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "CODEX_API_KEY",
        "MISTRAL_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "OPENROUTER_API_KEY",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ];
    if EXACT.contains(&name) {
        return true;
    }
    let upper = name.to_ascii_uppercase();
    [
        "API_KEY",
        "APIKEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "ACCESS_KEY",
        "PRIVATE_KEY",
    ]
    .iter()
    .any(|word| upper.contains(word))
        || ["_KEY", "_TOKEN", "_CREDENTIALS"]
            .iter()
            .any(|end| upper.ends_with(end))
}

/// A `${VAR}` whose variable is not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("${{{0}}} is not set")]
pub struct UnsetVar(pub String);

/// `value` with every `${VAR}` replaced by `lookup(VAR)`; also returns the values used
/// (they are secrets to scrub when the variable is one). Err: the first variable that is
/// not set. `$$` is a literal `$`.
pub fn expand_vars(
    value: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, Vec<String>), UnsetVar> {
    let mut out = String::with_capacity(value.len());
    let mut used = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('{')
            && let Some(end) = inner.find('}')
        {
            let var = &inner[..end];
            let found = lookup(var).ok_or_else(|| UnsetVar(var.to_owned()))?;
            if is_secret(var) && found.len() >= 8 {
                used.push(found.clone());
            }
            out.push_str(&found);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok((out, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_recognised_by_name() {
        for name in [
            "LIZA_LLM_API_KEY",
            "OPENAI_API_KEY",
            "CODEX_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "AIDER_OPENAI_API_KEY",
            "DEEPSEEK_API_KEY",
            "MY_SERVICE_TOKEN",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "GH_TOKEN",
        ] {
            assert!(is_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "LIZA_AGENT_ID",
            "ANTHROPIC_BASE_URL",
            "OPENAI_BASE_URL",
            "KEYTIMEOUT",
            "TERM",
        ] {
            assert!(!is_secret(name), "{name}");
        }
    }

    #[test]
    fn variables_are_expanded_from_the_environment_and_secret_values_remembered() {
        let lookup = |name: &str| match name {
            "MY_KEY" => Some("k-123456789".to_owned()),
            "REGION" => Some("eu".to_owned()),
            _ => None,
        };
        let (text, used) =
            expand_vars("Bearer ${MY_KEY} in ${REGION} for $$5 $x", &lookup).unwrap();
        assert_eq!(text, "Bearer k-123456789 in eu for $5 $x");
        assert_eq!(used, ["k-123456789"]);
        assert_eq!(
            expand_vars("${NOPE}", &lookup).unwrap_err(),
            UnsetVar("NOPE".into())
        );
        assert_eq!(expand_vars("plain", &lookup).unwrap().0, "plain");
    }
}
