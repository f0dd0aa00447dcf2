//! The docs live in the repository and are checked like code: every relative link
//! resolves (anchors into markdown pages included), every command the docs show exists,
//! docs/cli.md is what the binary generates, docs/troubleshooting.md names every refusal
//! rule and exit code, spec citations in the code name real headings, nothing points at
//! the old location of the spec, and `liza help <topic>` prints each page as it is.
//! Each failure lists every problem with its file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;

use crate::common::markdown::{self, Kind};
use crate::common::{LIZA, assert_exit, assert_success, json, stderr, stdout};

const LIZA_AGENT: &str = env!("CARGO_BIN_EXE_liza-agent");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The path of `file` as the repository names it.
fn shown(file: &Path) -> String {
    file.strip_prefix(root())
        .unwrap_or(file)
        .display()
        .to_string()
}

/// Fails with every problem, one per line, under `what`.
fn report(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{what} ({} problems):\n  {}\n",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The markdown files of `dir` and below, sorted.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The pages whose links are checked: the root's, docs/ and specs/.
fn linked_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = ["README.md", "AGENTS.md", "ARCHITECTURE.md"]
        .iter()
        .map(|p| root().join(p))
        .collect();
    pages.extend(markdown_under(&root().join("docs")));
    let specs = root().join("specs");
    pages.extend(
        markdown_under(&specs)
            .into_iter()
            .filter(|p| p.parent() == Some(&specs)),
    );
    pages
}

/// The pages whose commands are checked: README.md and docs/.
fn command_pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    pages.extend(markdown_under(&root().join("docs")));
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", shown(path)))
}

/// `path` with `.` and `..` resolved, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What is wrong with the link `target` written in `page`, if anything. Anchors into
/// markdown pages are checked against the page's GitHub heading anchors; anchors into
/// other files (`#L10`) are not.
fn broken_link(page: &Path, page_text: &str, target: &str) -> Option<String> {
    let scheme = Regex::new(r"^[A-Za-z][A-Za-z0-9+.-]*:").unwrap();
    if target.is_empty() || scheme.is_match(target) || target.starts_with("//") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let path = percent_decoded(path.split('?').next().unwrap_or(""));
    let file = if path.is_empty() {
        page.to_path_buf()
    } else if let Some(absolute) = path.strip_prefix('/') {
        root().join(absolute)
    } else {
        normalise(&page.parent().unwrap().join(&path))
    };
    if !file.starts_with(root()) {
        return Some(format!("{target} points outside the repository"));
    }
    if !file.exists() {
        return Some(format!("{target}: no such file {}", shown(&file)));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if file.extension().is_none_or(|e| e != "md") || file.is_dir() {
        return None;
    }
    let text = if file == page {
        page_text.to_owned()
    } else {
        read(&file)
    };
    let anchors = markdown::anchors(&text);
    let anchor = percent_decoded(anchor);
    (!anchors.contains(&anchor.to_lowercase())).then(|| {
        format!(
            "{target}: {} has no heading with the anchor #{anchor}",
            shown(&file)
        )
    })
}

#[test]
fn every_relative_link_resolves() {
    let mut problems = Vec::new();
    let pages = linked_pages();
    for page in &pages {
        let Ok(text) = std::fs::read_to_string(page) else {
            problems.push(format!("{}: missing", shown(page)));
            continue;
        };
        for line in markdown::lines(&text) {
            if line.kind != Kind::Prose {
                continue;
            }
            for target in markdown::links(line.text) {
                if let Some(why) = broken_link(page, &text, &target) {
                    problems.push(format!("{}:{}: {why}", shown(page), line.number));
                }
            }
        }
    }
    assert!(pages.len() > 10, "{pages:?}");
    report("broken links", &problems);
}

/// A shell line split into words, quotes removed, stopping at a comment or `\`.
pub(crate) fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '\\') => {}
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

static ASSIGNMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*=").unwrap());
static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[a-z][a-z0-9-]*$").unwrap());

/// A command a docs line shows, as the argv to check it with (`--help` added), or `None`
/// for a line that shows no liza command: `liza <cmd> [<sub>] …`, `$ liza …`,
/// `cargo run -- <cmd> …`, `liza-agent <role> …`, after any `VAR=value` words.
fn shown_command(line: &str) -> Option<Vec<String>> {
    let line = line.trim_start();
    let line = line.strip_prefix("$ ").unwrap_or(line);
    let words = shell_words(line);
    let mut words = words
        .iter()
        .skip_while(|w| ASSIGNMENT.is_match(w))
        .map(String::as_str)
        .peekable();
    let program = words.next()?;
    let program = if program == "cargo" {
        let rest: Vec<&str> = words.by_ref().take_while(|w| *w != "--").collect();
        if rest.first() != Some(&"run") {
            return None;
        }
        "liza"
    } else {
        program
    };
    let word = |w: Option<&&str>| w.filter(|w| WORD.is_match(w)).map(|w| w.to_string());
    match program {
        "liza" => {
            let command = word(words.next().as_ref())?;
            let help = command == "help";
            let mut argv = vec!["liza".to_owned(), command];
            if help {
                argv.extend(words.map_while(|w| word(Some(&w))));
            } else {
                argv.extend(word(words.peek()));
            }
            Some(argv)
        }
        "liza-agent" => {
            let role = word(words.next().as_ref())?;
            Some(vec!["liza-agent".to_owned(), role])
        }
        _ => None,
    }
}

#[test]
fn every_command_the_docs_show_exists() {
    let mut shown_at: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    for page in command_pages() {
        let text = read(&page);
        for line in markdown::lines(&text) {
            if line.kind != Kind::Code {
                continue;
            }
            if let Some(argv) = shown_command(line.text) {
                shown_at
                    .entry(argv)
                    .or_default()
                    .push(format!("{}:{}", shown(&page), line.number));
            }
        }
    }
    assert!(
        shown_at.keys().any(|a| a[1] == "demo"),
        "README.md shows no `cargo run --release -- demo`"
    );
    let home = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for (argv, places) in &shown_at {
        let role = match argv[0].as_str() {
            "liza-agent" => argv.get(1),
            _ if argv[1] == "agent" => argv.get(2),
            _ => None,
        };
        if let Some(role) = role
            && liza::blackboard::ids::Role::from_yaml_name(role).is_none()
        {
            problems.push(format!(
                "{}: `{}`: {role} is not a role (coder, code-reviewer, planner)",
                places.join(", "),
                argv.join(" ")
            ));
            continue;
        }
        // `liza help <topic>` is run as it is: its topic must exist.
        let (program, args) = match argv[0].as_str() {
            "liza-agent" => (LIZA_AGENT, vec!["--help"]),
            _ if argv[1] == "help" => (LIZA, argv[1..].iter().map(String::as_str).collect()),
            _ => {
                let mut args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
                args.push("--help");
                (LIZA, args)
            }
        };
        let out = Command::new(program)
            .args(&args)
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(home.path())
            .output()
            .unwrap();
        if !out.status.success() {
            let why = stderr(&out);
            problems.push(format!(
                "{}: `{}` exits {:?}: {}",
                places.join(", "),
                std::iter::once(argv[0].as_str())
                    .chain(args.iter().copied())
                    .collect::<Vec<_>>()
                    .join(" "),
                out.status.code(),
                why.lines().next().unwrap_or("")
            ));
        }
    }
    report(
        "commands shown in the docs that liza does not have",
        &problems,
    );
}

/// How docs/cli.md is regenerated, said when it is out of date.
const REGENERATE: &str =
    "cargo run -q -- man --markdown > docs/cli.md (or LIZA_BLESS=1 cargo test --test it docs::)";

#[test]
fn the_cli_reference_is_what_the_binary_generates() {
    let out = Command::new(LIZA)
        .args(["man", "--markdown"])
        .output()
        .unwrap();
    assert_success(&out);
    let generated = stdout(&out);
    let path = root().join("docs/cli.md");
    if std::env::var_os("LIZA_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    if written == generated {
        return;
    }
    let mut problems = Vec::new();
    let (old, new): (Vec<&str>, Vec<&str>) =
        (written.lines().collect(), generated.lines().collect());
    if let Some(i) = (0..old.len().max(new.len())).find(|&i| old.get(i) != new.get(i)) {
        problems.push(format!(
            "docs/cli.md:{}: is {:?}, the binary generates {:?}",
            i + 1,
            old.get(i).copied().unwrap_or("(end of file)"),
            new.get(i).copied().unwrap_or("(end of file)")
        ));
    } else {
        problems.push("docs/cli.md: differs in its last newline".into());
    }
    problems.push(format!("regenerate it: {REGENERATE}"));
    report("docs/cli.md is out of date", &problems);
}

/// Whether `word` occurs in `text` on its own (not inside a longer kebab-case word).
fn has_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(word)
        .any(|(i, _)| !text[..i].ends_with(part) && !text[i + word.len()..].starts_with(part))
}

/// Whether troubleshooting's `text` documents the exit code `code`: on a line that says
/// "exit", or as the first cell of a table row or the start of a list item.
fn documents_exit(text: &str, code: i32) -> bool {
    let number = Regex::new(&format!(r"(^|[^0-9A-Za-z.-]){code}($|[^0-9A-Za-z-])")).unwrap();
    let first_cell = Regex::new(&format!(
        r"^\s*(\|\s*|[-*]\s+|\d+\.\s+)`?{code}`?(\s|\||:|$)"
    ))
    .unwrap();
    text.lines().any(|line| {
        first_cell.is_match(line) || (number.is_match(line) && line.to_lowercase().contains("exit"))
    })
}

#[test]
fn troubleshooting_names_every_refusal_rule_and_exit_code() {
    let path = root().join("docs/troubleshooting.md");
    let text = read(&path);
    let mut problems = Vec::new();
    for rule in liza::ops::RuleId::ALL {
        if !has_word(&text, rule.as_str()) {
            problems.push(format!(
                "docs/troubleshooting.md: the refusal rule `{rule}` is not named"
            ));
        }
    }
    let codes = liza::cli::EXITS
        .iter()
        .map(|(code, what)| ("liza", code, what))
        .chain(
            liza::supervisor::EXITS
                .iter()
                .map(|(code, what)| ("liza-agent", code, what)),
        );
    for (program, code, what) in codes {
        if !documents_exit(&text, *code) {
            problems.push(format!(
                "docs/troubleshooting.md: {program}'s exit code {code} ({what}) is not documented"
            ));
        }
    }
    report("docs/troubleshooting.md is incomplete", &problems);
}

/// The text files of `dir` and below with the extensions given.
fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target" && name != ".git" {
                    dirs.push(path);
                }
            } else if extensions.is_empty()
                || path
                    .extension()
                    .is_some_and(|e| extensions.iter().any(|x| e == *x))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A cited section matches a heading written as it, or as it followed by a parenthesis
/// or a colon (`Merge (\`liza merge <task>\`, …)` is cited as *Merge*); a citation in
/// code style (*\`agents.<id>\`*, which rustdoc would otherwise read as a tag) as the same
/// without its backticks.
fn heading_matches(heading: &str, section: &str) -> bool {
    let section = section
        .strip_prefix('`')
        .and_then(|s| s.strip_suffix('`'))
        .unwrap_or(section);
    let heading = heading.trim();
    let title = heading
        .split(" (")
        .next()
        .unwrap_or(heading)
        .split(": ")
        .next()
        .unwrap_or(heading)
        .trim();
    heading.eq_ignore_ascii_case(section) || title.eq_ignore_ascii_case(section)
}

static CITATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"((?:[A-Za-z0-9_.-]+/)+)?([a-z0-9-]+)\.md \*([^*\n]+(?:\n\s*//[/!]?\s*[^*\n]+)?)\*((?:,\s*(?:\n\s*//[/!]?\s*)?\*[^*\n]+\*)*)")
        .unwrap()
});

#[test]
fn spec_citations_name_headings_and_nothing_points_at_the_old_spec() {
    let continuation = Regex::new(r"\s*\n\s*//[/!]?\s*").unwrap();
    let more = Regex::new(r"\*([^*\n]+)\*").unwrap();
    let mut problems = Vec::new();
    let mut cited = 0;
    for dir in ["src", "tests", "benches", "crates"] {
        for file in files_under(&root().join(dir), &["rs"]) {
            let text = read(&file);
            for c in CITATION.captures_iter(&text) {
                let line = text[..c.get(0).unwrap().start()].matches('\n').count() + 1;
                let dir = c.get(1).map_or("specs/", |m| m.as_str());
                let page = root().join(dir).join(format!("{}.md", &c[2]));
                let mut sections = vec![continuation.replace_all(&c[3], " ").into_owned()];
                sections.extend(
                    more.captures_iter(&c[4])
                        .map(|m| continuation.replace_all(&m[1], " ").into_owned()),
                );
                let Ok(spec) = std::fs::read_to_string(&page) else {
                    problems.push(format!(
                        "{}:{line}: cites {}, which does not exist",
                        shown(&file),
                        shown(&page)
                    ));
                    continue;
                };
                let headings = markdown::headings(&spec);
                for section in sections {
                    cited += 1;
                    if !headings.iter().any(|(_, h)| heading_matches(h, &section)) {
                        problems.push(format!(
                            "{}:{line}: {} has no heading *{section}*",
                            shown(&file),
                            shown(&page)
                        ));
                    }
                }
            }
        }
    }
    assert!(
        cited > 50,
        "only {cited} citations found: is the pattern right?"
    );
    let old = [concat!("..", "/shared"), concat!("shared", "/spec")];
    for file in files_under(root(), &[]) {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in text.lines().enumerate() {
            for old in old.iter().filter(|o| line.contains(*o)) {
                problems.push(format!(
                    "{}:{}: mentions {old} (the spec is specs/ in this repository)",
                    shown(&file),
                    i + 1
                ));
            }
        }
    }
    report("citations of the spec", &problems);
}

/// The topics `liza help` must offer.
/// Every page of docs/ a person may ask `liza help` for: each guide and backend page,
/// by its file's name (docs/README.md is the index `liza help` itself is).
fn doc_pages() -> Vec<String> {
    let mut pages = Vec::new();
    for dir in ["docs", "docs/agents"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".md")
                && stem != "README"
            {
                pages.push(stem.to_owned());
            }
        }
    }
    pages.sort();
    pages
}

#[test]
fn liza_help_prints_each_topics_page_as_it_is_in_docs() {
    let listing = json(
        &Command::new(LIZA)
            .args(["help", "--json"])
            .output()
            .unwrap(),
    );
    let topics = listing["result"]["topics"].as_array().unwrap();
    let names: BTreeSet<&str> = topics.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut problems = Vec::new();
    for name in doc_pages() {
        if !names.contains(name.as_str()) {
            problems.push(format!("`liza help` has no topic {name}"));
        }
    }
    for topic in topics {
        let (name, file) = (
            topic["name"].as_str().unwrap(),
            topic["file"].as_str().unwrap(),
        );
        let page = std::fs::read(root().join(file)).unwrap_or_default();
        let out = Command::new(LIZA).args(["help", name]).output().unwrap();
        if !out.status.success() {
            problems.push(format!("`liza help {name}` exits {:?}", out.status.code()));
        } else if out.stdout != page {
            let first = out
                .stdout
                .split(|b| *b == b'\n')
                .zip(page.split(|b| *b == b'\n'))
                .position(|(a, b)| a != b)
                .map_or_else(|| "its length".to_owned(), |i| format!("line {}", i + 1));
            problems.push(format!(
                "{file}: `liza help {name}` prints something else (from {first}): rebuild the binary"
            ));
        }
    }
    report("liza help and docs/ differ", &problems);
}

#[test]
fn liza_help_lists_topics_and_commands_and_prints_a_commands_help() {
    let out = Command::new(LIZA).arg("help").output().unwrap();
    assert_success(&out);
    let text = stdout(&out);
    for expected in [
        "getting-started",
        "troubleshooting",
        "opencode",
        "Setup:",
        "  submit-verdict",
        "  help",
    ] {
        assert!(text.contains(expected), "{expected} missing:\n{text}");
    }
    for argv in [&["status"][..], &["goal", "complete"], &["help"]] {
        let help = Command::new(LIZA).arg("help").args(argv).output().unwrap();
        let direct = Command::new(LIZA)
            .args(argv)
            .arg("--help")
            .output()
            .unwrap();
        assert_success(&help);
        assert_eq!(stdout(&help), stdout(&direct), "{argv:?}");
    }
    let grouped = stdout(&Command::new(LIZA).arg("--help").output().unwrap());
    let setup = grouped
        .split("Setup:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    assert!(setup.contains("  help "), "{grouped}");

    let unknown = Command::new(LIZA)
        .args(["help", "getting-startd"])
        .output()
        .unwrap();
    assert_exit(&unknown, 64);
    let why = stderr(&unknown);
    assert!(why.contains("getting-startd"), "{why}");
    for topic in doc_pages() {
        assert!(why.contains(topic.as_str()), "{topic} not listed:\n{why}");
    }
    assert!(
        why.contains("did you mean `liza help getting-started`?"),
        "{why}"
    );
    let slip = Command::new(LIZA)
        .args(["help", "statsu"])
        .output()
        .unwrap();
    assert!(
        stderr(&slip).contains("did you mean `liza help status`?"),
        "{}",
        stderr(&slip)
    );
    let sub = Command::new(LIZA)
        .args(["help", "goal", "finish"])
        .output()
        .unwrap();
    assert_exit(&sub, 64);
    assert!(stderr(&sub).contains("complete"), "{}", stderr(&sub));
}

#[test]
fn commands_are_read_from_docs_lines_as_a_shell_would() {
    let argv = |line: &str| shown_command(line).map(|a| a.join(" "));
    let cases = [
        ("$ liza status --watch", Some("liza status")),
        ("liza goal complete", Some("liza goal complete")),
        (
            "  liza log add --action x   # a comment",
            Some("liza log add"),
        ),
        (
            "liza init \"Add a --json flag\" --spec specs/vision.md",
            Some("liza init"),
        ),
        (
            "LIZA_AGENT_ID=coder-1 liza-agent coder --cli claude",
            Some("liza-agent coder"),
        ),
        ("A='x y' B=2 liza show t-1", Some("liza show t-1")),
        (
            "cargo run --release -- demo   # the demo",
            Some("liza demo"),
        ),
        ("liza help goal complete", Some("liza help goal complete")),
        ("liza demo: sprint complete in 0.4 s", None),
        ("liza --help", None),
        ("git log --oneline", None),
        ("# liza status", None),
    ];
    for (line, expected) in cases {
        assert_eq!(argv(line).as_deref(), expected, "{line}");
    }
}

/// Every source file AGENTS.md, ARCHITECTURE.md and docs/security.md name (`table.rs`, `llm/scrub.rs`,
/// `tests/it/docs.rs`) is there: the map names no file that moved.
#[test]
fn the_map_names_files_that_exist() {
    let file = Regex::new(r"[A-Za-z0-9_/.-]*[A-Za-z0-9_]\.rs\b").unwrap();
    let mut sources: Vec<String> = Vec::new();
    for dir in ["src", "tests", "benches", "crates"] {
        let mut stack = vec![root().join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    sources.push(shown(&path));
                }
            }
        }
    }
    let mut problems = Vec::new();
    for page in ["AGENTS.md", "ARCHITECTURE.md", "docs/security.md"] {
        let text = read(&root().join(page));
        for (n, line) in text.lines().enumerate() {
            for named in file.find_iter(line) {
                let named = named.as_str().trim_start_matches("./");
                // A path from the repository's root is that file; a shorter one, a file
                // whose path ends so.
                let from_root = ["src/", "crates/", "tests/", "benches/"]
                    .iter()
                    .any(|top| named.starts_with(top));
                let found = sources
                    .iter()
                    .any(|s| s == named || (!from_root && s.ends_with(&format!("/{named}"))));
                if !found {
                    problems.push(format!(
                        "{page}:{}: `{named}` is no file of src/, crates/, tests/ or benches/",
                        n + 1
                    ));
                }
            }
        }
    }
    report("files the map names that are not there", &problems);
}
