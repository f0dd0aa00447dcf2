//! Rules about text: path globs (`paths`, `protected_paths`, `allow_protected`), the
//! `path:line` a rejection must cite, and a falsifiable `done_when`.

/// Whether `path` (relative, `/`-separated) matches `pattern`: `**` matches any run of
/// path segments (including none), `*` anything within one segment, `?` one character.
/// As in git, a pattern naming a directory (`src/report`, `src/report/`, `src/*/gen/`)
/// covers everything in it — when its last segment is a name, not a wildcard: `*` or
/// `*.md` never stand for a directory and what is inside it.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    let pattern = pattern.as_bytes();
    let path = path.as_bytes();
    if matches(pattern, path) {
        return true;
    }
    let directory = pattern.strip_suffix(b"/").unwrap_or(pattern);
    let last = directory.rsplit(|b| *b == b'/').next().unwrap_or(directory);
    !last.is_empty()
        && !last.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
        && path
            .iter()
            .enumerate()
            .any(|(i, &b)| b == b'/' && matches(directory, &path[..i]))
}

fn matches(p: &[u8], s: &[u8]) -> bool {
    match p {
        [] => s.is_empty(),
        [b'*', b'*', rest @ ..] => {
            // `**/` may match nothing; `**` at the end matches everything.
            let rest = rest.strip_prefix(b"/").unwrap_or(rest);
            if rest.is_empty() {
                return true;
            }
            (0..=s.len()).any(|i| (i == 0 || s[i - 1] == b'/') && matches(rest, &s[i..]))
        }
        [b'*', rest @ ..] => {
            let segment = s.iter().position(|&b| b == b'/').unwrap_or(s.len());
            (0..=segment).any(|i| matches(rest, &s[i..]))
        }
        [b'?', rest @ ..] => matches!(s, [c, tail @ ..] if *c != b'/' && matches(rest, tail)),
        [c, rest @ ..] => matches!(s, [d, tail @ ..] if c == d && matches(rest, tail)),
    }
}

/// Whether `path` matches any of `patterns`.
pub fn any_match(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|p| glob_match(p, path))
}

/// The `path:line` citations in a rejection reason (`src/lib.rs:12`, `a.py:3-9`): a path
/// holding a `.` or a `/`, a colon, and a line number.
pub fn citations(reason: &str) -> Vec<&str> {
    reason
        .split(|c: char| {
            c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | ',' | ';' | '`' | '"' | '\'')
        })
        .map(|w| w.trim_end_matches(['.', ':']))
        .filter(|w| {
            let Some((path, line)) = w.rsplit_once(':') else {
                return false;
            };
            let line = line.split_once('-').map_or(line, |(a, _)| a);
            !path.is_empty()
                && (path.contains('.') || path.contains('/'))
                && !path.contains("://")
                && !line.is_empty()
                && line.bytes().all(|b| b.is_ascii_digit())
        })
        .collect()
}

/// Words that make an acceptance criterion unfalsifiable on their own.
const VAGUE: &[&str] = &[
    "works",
    "work",
    "working",
    "done",
    "complete",
    "completed",
    "good",
    "better",
    "fine",
    "ok",
    "okay",
    "implemented",
    "finished",
    "it",
    "is",
    "the",
    "feature",
    "task",
    "properly",
    "correctly",
    "well",
    "all",
    "should",
    "be",
    "nice",
];

/// Why `done_when` is not a falsifiable criterion, if it is not: too short, or made only
/// of words like "works" and "done".
pub fn unfalsifiable(done_when: &str) -> Option<&'static str> {
    let words: Vec<String> = done_when
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-' && c != '.' && c != '/')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.len() < 3 {
        return Some("it has fewer than three words");
    }
    if words.iter().all(|w| VAGUE.contains(&w.as_str())) {
        return Some("it says nothing checkable (only words like \"works\" and \"done\")");
    }
    None
}

/// Whether a task reads as only adding tests (worth a warning: tests belong with the code
/// they check).
pub fn only_about_tests(description: &str, scope: &str) -> bool {
    let text = format!("{description} {scope}").to_lowercase();
    let mentions_tests = text.contains("test");
    let mentions_code = [
        "implement",
        "fix",
        "add a",
        "add the",
        "feature",
        "refactor",
        "support",
        "flag",
        "option",
        "endpoint",
        "command",
    ]
    .iter()
    .any(|w| text.contains(w));
    mentions_tests && !mentions_code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_follow_the_documented_meaning() {
        assert!(glob_match("tests/**", "tests/a/b.rs"));
        assert!(glob_match("tests/**", "tests/x"));
        assert!(!glob_match("tests/**", "src/tests.rs"));
        assert!(glob_match("**/*_test.*", "a_test.go"));
        assert!(glob_match("**/*_test.*", "pkg/x/a_test.go"));
        assert!(glob_match("**/test_*", "py/test_x.py"));
        assert!(glob_match(".ci/**", ".ci/run"));
        assert!(glob_match(
            "scripts/integration-test.sh",
            "scripts/integration-test.sh"
        ));
        assert!(!glob_match(
            "scripts/integration-test.sh",
            "scripts/integration-test.shx"
        ));
        assert!(glob_match("src/*.rs", "src/lib.rs"));
        assert!(!glob_match("src/*.rs", "src/a/lib.rs"));
        assert!(glob_match("src/?.rs", "src/a.rs"));
        assert!(!glob_match("src/?.rs", "src/ab.rs"));
        assert!(glob_match("**", "anything/at/all"));
        // A pattern naming a directory covers what is in it, as in git.
        assert!(glob_match("liza-dry-run/", "liza-dry-run/note.md"));
        assert!(glob_match("src/report", "src/report/a/b.rs"));
        assert!(!glob_match("src/report", "src/reporter.rs"));
        assert!(!glob_match("src/report/", "src/report"));
        assert!(!glob_match("src/report/", "src/reporter/a.rs"));
        // A wildcard never stands for a directory and its contents.
        assert!(!glob_match("*", ".liza/state.yaml"));
        assert!(!glob_match("*.md", "notes.md/evil.rs"));
        assert!(!glob_match("**/test_*.*", "src/test_x.d/prod.rs"));
        assert!(glob_match("src/*/gen/", "src/a/gen/x.rs"));
    }

    #[test]
    fn rejections_must_cite_a_path_and_line() {
        assert_eq!(citations("off by one at src/lib.rs:12."), ["src/lib.rs:12"]);
        assert_eq!(citations("see (report.py:3-9)"), ["report.py:3-9"]);
        assert!(citations("the tests fail").is_empty());
        assert!(citations("step:1 went wrong").is_empty());
        assert!(citations("https://example.com:443 is down").is_empty());
        assert!(citations("main.rs: wrong").is_empty());
    }

    #[test]
    fn vague_acceptance_criteria_are_caught() {
        assert!(unfalsifiable("works").is_some());
        assert!(unfalsifiable("it works fine").is_some());
        assert!(unfalsifiable("feature is done").is_some());
        assert!(unfalsifiable("report --json prints valid JSON with a totals key").is_none());
    }

    #[test]
    fn test_only_tasks_are_recognised() {
        assert!(only_about_tests(
            "Write tests for the parser",
            "tests/parser.rs"
        ));
        assert!(!only_about_tests("Implement --json", "with tests"));
    }
}
