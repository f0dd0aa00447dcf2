//! What an agent CLI's output says about its credentials: a CLI waiting for an
//! interactive or browser login (stopped at once: nobody is there to log in), or one that
//! exited for want of a key. Pure functions of the output text; the phrases are the real
//! CLIs' (`catalog`), plus a few every CLI shares.

use super::catalog::CliSpec;

/// Phrases of a missing or refused key that any CLI may print (lower case).
const COMMON_AUTH_ERRORS: &[&str] = &[
    "not logged in",
    "please log in",
    "invalid api key",
    "invalid x-api-key",
    "incorrect api key",
    "api key is missing",
    "missing api key",
    "no api key",
    "authentication_error",
    "401 unauthorized",
];

/// The line of `tail` showing that the CLI waits for a login, if any.
pub fn login_wait(spec: Option<&CliSpec>, tail: &str) -> Option<String> {
    let phrases = spec.map_or(&[][..], |s| s.login_prompts);
    matching_line(tail, phrases)
}

/// The line of `tail` saying the CLI has no usable credentials, if any. Only the last
/// lines count: a run that discussed API keys earlier did not fail for want of one.
pub fn auth_failure(spec: Option<&CliSpec>, tail: &str) -> Option<String> {
    let last: Vec<&str> = tail.lines().rev().take(12).collect();
    let last: Vec<&str> = last.into_iter().rev().collect();
    let text = last.join("\n");
    let own = spec.map_or(&[][..], |s| s.auth_errors);
    matching_line(&text, own).or_else(|| matching_line(&text, COMMON_AUTH_ERRORS))
}

fn matching_line(text: &str, phrases: &[&str]) -> Option<String> {
    text.lines()
        .find(|line| {
            let lower = line.to_ascii_lowercase();
            phrases.iter().any(|p| lower.contains(p))
        })
        .map(|line| line.trim().chars().take(300).collect())
}

#[cfg(test)]
mod tests {
    use super::super::catalog;
    use super::*;

    #[test]
    fn a_missing_key_is_recognised_in_the_last_lines_only() {
        let claude = catalog::find("claude");
        assert_eq!(
            auth_failure(claude, "Not logged in · Please run /login\n").as_deref(),
            Some("Not logged in · Please run /login")
        );
        let long_run = format!(
            "checking the invalid api key handler\n{}done\n",
            "editing src/lib.rs\n".repeat(20)
        );
        assert_eq!(auth_failure(claude, &long_run), None);
        assert_eq!(auth_failure(None, "all good\n"), None);
    }

    #[test]
    fn a_login_prompt_is_recognised_for_the_cli_that_prints_it() {
        let aider = catalog::find("aider");
        let tail = "No LLM model was specified and no API keys were provided.\nLogin to OpenRouter or create a free account? (Y)es/(N)o [Yes]: ";
        assert!(login_wait(aider, tail).is_some());
        assert_eq!(login_wait(catalog::find("claude"), "hello\n"), None);
    }
}
