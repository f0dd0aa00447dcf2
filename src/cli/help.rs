//! `liza help`: the documentation of docs/ compiled into the binary, one page per topic,
//! and each command's own help — so the binary and the repository's pages never differ.

use super::output::Output;
use super::reference::{self, print_all};
use super::{CliError, EXIT_OK};
use crate::error::ErrorClass;

/// A page of docs/ that `liza help <name>` prints as it is in the repository.
pub(super) struct Topic {
    pub name: &'static str,
    /// The page's path in the repository.
    pub file: &'static str,
    pub about: &'static str,
    pub text: &'static str,
}

macro_rules! topic {
    ($name:literal, $file:literal, $about:literal) => {
        Topic {
            name: $name,
            file: $file,
            about: $about,
            text: include_str!(concat!("../../", $file)),
        }
    };
}

/// The guides, in reading order.
pub(super) const GUIDES: &[Topic] = &[
    topic!(
        "getting-started",
        "docs/getting-started.md",
        "Install liza, run the demo, then a first sprint on your project"
    ),
    topic!(
        "agents",
        "docs/agents.md",
        "The agent CLIs liza runs (--cli), their keys and endpoints, your own"
    ),
    topic!(
        "blackboard",
        "docs/blackboard.md",
        "What .liza/ holds: state.yaml, log.yaml and the files beside them"
    ),
    topic!(
        "hand-editing",
        "docs/hand-editing.md",
        "Editing state.yaml while agents run: merges, rejections, liza edit"
    ),
    topic!(
        "operations",
        "docs/operations.md",
        "Running sprints: liza up, the dashboard, alarms, checkpoints, metrics"
    ),
    topic!(
        "troubleshooting",
        "docs/troubleshooting.md",
        "Every refusal rule and exit code, and what to do about it"
    ),
    topic!(
        "security",
        "docs/security.md",
        "What liza defends against, and what it does not"
    ),
    topic!(
        "several-machines",
        "docs/several-machines.md",
        "Agents on several machines: the blackboard in etcd, a shared git remote"
    ),
    topic!(
        "cli",
        "docs/cli.md",
        "The command reference: every command, option and exit code"
    ),
];

/// One page per built-in backend (`--cli <name>`).
pub(super) const BACKENDS: &[Topic] = &[
    topic!("claude", "docs/agents/claude.md", "Claude Code"),
    topic!("codex", "docs/agents/codex.md", "OpenAI Codex CLI"),
    topic!("gemini", "docs/agents/gemini.md", "Gemini CLI"),
    topic!("mistral", "docs/agents/mistral.md", "Mistral Vibe"),
    topic!("aider", "docs/agents/aider.md", "aider"),
    topic!("opencode", "docs/agents/opencode.md", "opencode"),
    topic!(
        "builtin",
        "docs/agents/builtin.md",
        "liza's own agent over any OpenAI-compatible endpoint"
    ),
];

/// Every topic: the guides, then the backends.
pub(super) fn topics() -> impl Iterator<Item = &'static Topic> {
    GUIDES.iter().chain(BACKENDS)
}

fn topic(name: &str) -> Option<&'static Topic> {
    topics().find(|t| t.name == name)
}

#[derive(clap::Args)]
pub(super) struct HelpArgs {
    /// A topic (getting-started, agents, blackboard, …, a backend such as claude), or a
    /// command and its subcommand (`liza help goal complete`); nothing lists them all.
    #[arg(value_name = "TOPIC|COMMAND")]
    words: Vec<String>,
}

pub(super) fn cmd_help(args: HelpArgs, out: &Output) -> Result<i32, CliError> {
    let Some(first) = args.words.first() else {
        let text = listing();
        out.ok(
            serde_json::json!({
                "topics": topics().map(|t| serde_json::json!({
                    "name": t.name, "file": t.file, "about": t.about,
                })).collect::<Vec<_>>(),
                "commands": reference::command()
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name().to_owned())
                    .collect::<Vec<_>>(),
            }),
            || text.clone(),
        );
        return Ok(EXIT_OK);
    };
    let root = reference::command();
    let visible = root
        .find_subcommand(first)
        .is_some_and(|c| !c.is_hide_set());
    if !visible && let Some(topic) = topic(first) {
        if let Some(extra) = args.words.get(1) {
            return Err(CliError::new(
                ErrorClass::Usage,
                format!(
                    "`{}` is a topic, not a command: it has no `{extra}`",
                    topic.name
                ),
            )
            .with_hint(format!("liza help {}", topic.name)));
        }
        if out.json {
            out.ok(
                serde_json::json!({"topic": topic.name, "file": topic.file, "text": topic.text}),
                String::new,
            );
            return Ok(EXIT_OK);
        }
        return print_all(topic.text.as_bytes());
    }
    command_help(root, &args.words, out)
}

/// Prints what `liza <words…> --help` prints, after checking each word names a command.
fn command_help(root: clap::Command, words: &[String], out: &Output) -> Result<i32, CliError> {
    let mut cmd = &root;
    for (depth, word) in words.iter().enumerate() {
        match cmd.find_subcommand(word) {
            Some(sub) => cmd = sub,
            None if depth == 0 => {
                let known = topics().map(|t| t.name.to_owned()).chain(
                    root.get_subcommands()
                        .filter(|c| !c.is_hide_set())
                        .map(|c| c.get_name().to_owned()),
                );
                let mut error = CliError::new(
                    ErrorClass::Usage,
                    format!("no help topic or command `{word}`"),
                );
                if let Some(near) = closest(word, known) {
                    error = error.with_hint(format!("did you mean `liza help {near}`?"));
                }
                return Err(error
                    .with_hint(format!(
                        "topics: {}",
                        topics().map(|t| t.name).collect::<Vec<_>>().join(", ")
                    ))
                    .with_hint("`liza help` lists the topics and the commands"));
            }
            None => {
                let path = words[..depth].join(" ");
                let subs: Vec<&str> = cmd
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name())
                    .collect();
                let err = CliError::new(
                    ErrorClass::Usage,
                    format!("`liza {path}` has no subcommand `{word}`"),
                );
                return Err(if subs.is_empty() {
                    err.with_hint(format!("liza help {path}"))
                } else {
                    err.with_hint(format!("its subcommands: {}", subs.join(", ")))
                });
            }
        }
    }
    let argv = std::iter::once("liza")
        .chain(words.iter().map(String::as_str))
        .chain(["--help"]);
    match root.clone().try_get_matches_from(argv) {
        Err(help) if help.kind() == clap::error::ErrorKind::DisplayHelp => {
            if out.json {
                let text = help.render().to_string();
                out.ok(
                    serde_json::json!({"command": words.join(" "), "text": text}),
                    String::new,
                );
            } else {
                let _ = help.print();
            }
            Ok(EXIT_OK)
        }
        _ => Err(CliError::new(
            ErrorClass::Usage,
            format!("no help for `liza {}`", words.join(" ")),
        )),
    }
}

/// `liza help` without a topic: the topics, then the commands by audience.
fn listing() -> String {
    let root = reference::command();
    let width = topics()
        .map(|t| t.name)
        .chain(root.get_subcommands().map(|c| c.get_name()))
        .map(str::len)
        .max()
        .unwrap_or(10)
        + 2;
    let mut text = String::from(
        "liza help <topic> prints a page of the documentation (docs/ in the repository);\n\
         liza help <command> [<subcommand>] prints that command's help.\n\nTopics:\n",
    );
    for t in GUIDES {
        text.push_str(&format!("  {:<width$}{}\n", t.name, t.about));
    }
    text.push_str("\nAgent CLIs (--cli <name>):\n");
    for t in BACKENDS {
        text.push_str(&format!("  {:<width$}{}\n", t.name, t.about));
    }
    text.push('\n');
    text.push_str(&reference::grouped_commands(&root));
    text.push_str("liza-agent <role> is `liza agent <role>`.\n");
    text
}

/// The name among `known` nearest `word` by edit distance, if near enough to be a slip
/// (two edits, one for a short word).
fn closest(word: &str, known: impl Iterator<Item = String>) -> Option<String> {
    let limit = if word.chars().count() <= 4 { 1 } else { 2 };
    known
        .map(|name| (edits(word, &name), name))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, name)| name)
}

/// Levenshtein distance, with a transposition counted as one edit (`statsu`).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_unique_and_shadow_no_visible_command() {
        let root = reference::command();
        let mut seen = std::collections::HashSet::new();
        for t in topics() {
            assert!(seen.insert(t.name), "{} twice", t.name);
            assert!(
                root.find_subcommand(t.name).is_none_or(|c| c.is_hide_set()),
                "the topic {} hides the command of that name",
                t.name
            );
        }
    }

    #[test]
    fn every_built_in_backend_has_a_page_and_every_page_a_backend() {
        let names = crate::backend::catalog::names();
        for name in &names {
            assert!(
                BACKENDS.iter().any(|t| t.name == *name),
                "no page for {name}"
            );
        }
        for t in BACKENDS {
            assert!(names.contains(&t.name), "{} is not a backend", t.name);
        }
    }

    #[test]
    fn a_slip_of_the_keyboard_finds_the_name_meant() {
        let known = || {
            ["status", "show", "several-machines", "log"]
                .map(String::from)
                .into_iter()
        };
        assert_eq!(closest("statsu", known()).as_deref(), Some("status"));
        assert_eq!(
            closest("sevral-machines", known()).as_deref(),
            Some("several-machines")
        );
        assert_eq!(closest("lgo", known()).as_deref(), Some("log"));
        assert_eq!(closest("frobnicate", known()), None);
    }
}
