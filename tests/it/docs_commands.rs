//! Every command line README.md and docs/ show, run the way a person following the page
//! would: page by page, in the page's order, each page in a scratch project of its own —
//! the documented fixture: a git repository with `specs/vision.md` and `specs/csv.md`
//! committed, `liza init "A docs walkthrough"` run first unless the page runs `init`
//! itself, files a page writes with `cat > FILE <<'EOF'` written, and a file a command
//! reads (`backup.yaml`, `/tmp/copy.yaml`) a copy of state.yaml. Each must exit 0, or the
//! code this file lists for it with the reason; the fragments a page says a command
//! prints must be in what it printed. Lines that need what a scratch project has not — an
//! agent CLI, tmux, etcd, an editor, a terminal, a model, or that run until stopped — are
//! named with the test that runs them for real; `docs::every_command_the_docs_show_exists`
//! checks their arguments.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::LIZA;
use crate::common::markdown::{self, Kind};

/// A command line a page shows.
#[derive(Debug)]
struct Shown {
    /// Where the page runs it (a `cd` before it in its block).
    place: Place,
    page: String,
    line: usize,
    text: String,
    env: Vec<(String, String)>,
    /// `liza` or `liza-agent`, then its arguments.
    argv: Vec<String>,
}

/// Where a page runs a command: the person's project, the demo's (after `cd
/// /tmp/liza-demo`), or a fresh checkout the block `cd`s into at that line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Project,
    Demo,
    Fresh(usize),
}

/// Lines not run here, by what they need, and where they are run for real.
fn not_here(argv: &[String]) -> Option<&'static str> {
    let has = |w: &str| argv.iter().any(|a| a == w);
    let command = argv.get(1).map(String::as_str).unwrap_or("");
    if argv[0] == "liza-agent" || command == "agent" {
        return Some(
            "a supervisor runs an agent CLI until stopped (supervisor.rs, cli_backends.rs)",
        );
    }
    if argv.iter().any(|a| a.contains('<') || a.contains('…')) {
        return Some("a syntax description, not a command");
    }
    if has("--attach") || has("--watch") || has("--follow") {
        return Some("needs a terminal and runs until stopped (tmux.rs)");
    }
    match command {
        "up" => Some("a tmux session of agents (tmux.rs)"),
        "watch" => Some("runs until stopped (watch.rs)"),
        "serve" => Some("serves until stopped (web.rs)"),
        "edit" => Some("opens an editor (hand_edits.rs)"),
        "demo" => Some("its own test (demo.rs)"),
        "retro" => Some("asks a model (retro.rs)"),
        "join" => Some("needs etcd (shared_store.rs)"),
        _ if argv
            .iter()
            .any(|a| a.starts_with("--store") || a == "--git-remote") =>
        {
            Some("needs etcd and a shared remote (shared_store.rs, several_hosts.rs)")
        }
        _ => None,
    }
}

/// Exit codes other than 0 that a line has in its page's scratch project, and why; `*`
/// for any page. The fragments of `PRINTS` say what the refusal must be.
const EXPECTED: &[(&str, &str, i32, &str)] = &[
    (
        "*",
        "liza doctor",
        1,
        "the default backend, claude, is not installed here: the FAIL the pages show",
    ),
    (
        "docs/troubleshooting.md",
        "liza submit-verdict t-1 approve --commit abcd",
        1,
        "the page's example of a refusal",
    ),
    (
        "docs/troubleshooting.md",
        "liza --json submit-verdict t-1 approve --commit abcd",
        1,
        "the same refusal as JSON",
    ),
    (
        "docs/troubleshooting.md",
        "liza release-claim t-2 --reason \"reviewer gone\"",
        1,
        "no reviewer holds t-2 here: the page's case of a reviewer gone",
    ),
    (
        "docs/operations.md",
        "liza sprint next",
        1,
        "the alternative to the `liza resume` above it: the sprint runs again",
    ),
    (
        "docs/operations.md",
        "liza goal next \"Add CSV export\"",
        1,
        "the alternative for a goal completed or aborted; here it was resumed",
    ),
];

/// What a page's scratch project has before its first line, besides `liza init`: the
/// state its commands are about.
fn prelude(page: &str) -> Vec<Vec<&'static str>> {
    match page {
        "docs/troubleshooting.md" => {
            let task = |id: &'static str| {
                vec![
                    "liza",
                    "add-task",
                    "--id",
                    id,
                    "--desc",
                    "d",
                    "--spec",
                    "specs/vision.md",
                    "--done",
                    "report --json prints a totals key",
                    "--scope",
                    "s",
                    "--finalize",
                ]
            };
            vec![
                task("t-1"),
                task("t-2"),
                vec!["liza", "register", "coder-1"],
                vec!["liza", "claim-task", "t-1", "coder-1"],
            ]
        }
        // Revisions to look at.
        "docs/hand-editing.md" => (0..4)
            .map(|_| vec!["liza", "note", "all", "a fixture note"])
            .collect(),
        _ => Vec::new(),
    }
}

/// The command lines of `page`, `\` continuations joined, `a && b` and `a; b` split, the
/// part of a pipe or redirection that is liza's kept; and the files the page writes with
/// `cat > FILE <<'EOF'`.
fn shown_on(page: &Path, name: &str) -> (Vec<Shown>, Vec<(String, String)>) {
    let text = std::fs::read_to_string(page).unwrap();
    let lines = markdown::lines(&text);
    let mut shown = Vec::new();
    let mut files = Vec::new();
    let mut place = Place::Project;
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        i += 1;
        if line.kind == Kind::Fence {
            place = Place::Project;
        }
        if line.kind != Kind::Code {
            continue;
        }
        let mut joined = line.text.to_owned();
        while joined.trim_end().ends_with('\\') && i < lines.len() {
            joined = format!(
                "{} {}",
                joined.trim_end().trim_end_matches('\\'),
                lines[i].text.trim()
            );
            i += 1;
        }
        if let Some(file) = joined
            .trim()
            .strip_prefix("cat > ")
            .and_then(|r| r.split_whitespace().next())
            && joined.contains("<<")
        {
            let mut body = String::new();
            while i < lines.len() && lines[i].text.trim() != "EOF" {
                body.push_str(lines[i].text);
                body.push('\n');
                i += 1;
            }
            files.push((file.to_owned(), body));
            continue;
        }
        for part in joined.split("&&").flat_map(|p| p.split(';')) {
            let part = part.split(['|', '>']).next().unwrap_or("");
            if let Some(target) = part.trim().strip_prefix("cd ") {
                let target = target.trim();
                place = match target {
                    "your-project" => Place::Project,
                    t if t.contains("liza-demo") => Place::Demo,
                    _ => Place::Fresh(line.number),
                };
                continue;
            }
            let words = crate::docs::shell_words(part);
            let env: Vec<(String, String)> = words
                .iter()
                .take_while(|w| w.contains('=') && !w.starts_with('-'))
                .filter_map(|w| w.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
                .collect();
            let argv: Vec<String> = words[env.len()..].to_vec();
            let Some(program) = argv.first() else {
                continue;
            };
            if program != "liza" && program != "liza-agent" {
                continue;
            }
            // Output a page shows (`liza demo: sprint complete…`) is not a command.
            if argv.get(1).is_some_and(|w| w.ends_with(':')) {
                continue;
            }
            shown.push(Shown {
                place,
                page: name.to_owned(),
                line: line.number,
                text: part.trim().to_owned(),
                env,
                argv,
            });
        }
    }
    (shown, files)
}

/// The scratch project of a page: a repository with its specs committed.
fn scratch() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("project");
    std::fs::create_dir_all(home.join(".local/share/bash-completion/completions")).unwrap();
    std::fs::create_dir_all(repo.join("specs")).unwrap();
    std::fs::write(
        repo.join("specs/vision.md"),
        "# Vision\n\nA report CLI with --json.\n\n## json\n\nThe totals key.\n",
    )
    .unwrap();
    std::fs::write(repo.join("specs/csv.md"), "# CSV\n\nA --csv flag.\n").unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&[
        "-c",
        "user.name=p",
        "-c",
        "user.email=p@example.org",
        "add",
        ".",
    ]);
    git(&[
        "-c",
        "user.name=p",
        "-c",
        "user.email=p@example.org",
        "commit",
        "-qm",
        "the specs",
    ]);
    (dir, home, repo)
}

/// Runs `argv` in `repo` (a minute at most); its exit code (`None`: killed) and output.
fn run(
    repo: &Path,
    home: &Path,
    env: &[(String, String)],
    argv: &[String],
) -> (Option<i32>, String) {
    let bin = Path::new(LIZA).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let program = bin.join(&argv[0]);
    let args: Vec<String> = argv[1..]
        .iter()
        .map(|a| match a.strip_prefix("~/") {
            Some(rest) => home.join(rest).display().to_string(),
            None => a.clone(),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(program)
        .args(&args)
        .current_dir(repo)
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "p")
        .env("GIT_AUTHOR_EMAIL", "p@example.org")
        .env("GIT_COMMITTER_NAME", "p")
        .env("GIT_COMMITTER_EMAIL", "p@example.org")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(out).unwrap_or_default()
        + &std::fs::read_to_string(err).unwrap_or_default();
    (code, text)
}

/// The fragments a page says a command prints: `liza status` after a completed demo, etc.
/// Each is `(page, command, fragment)`.
const PRINTS: &[(&str, &str, &str)] = &[
    ("docs/getting-started.md", "liza status", "Goal goal-1"),
    ("docs/getting-started.md", "liza show t-1", "id: t-1"),
    (
        "docs/getting-started.md",
        "liza goal next \"Add CSV export to the report CLI\" --spec specs/csv.md",
        "goal-2",
    ),
    (
        "docs/hand-editing.md",
        "liza history",
        "r1     human init: ",
    ),
    ("docs/hand-editing.md", "liza diff 3 4", "~ revision: 3 → 4"),
    ("docs/hand-editing.md", "liza validate", "is valid"),
    ("*", "liza doctor", "FAIL backend claude"),
    ("*", "liza doctor", "1 problem(s)"),
    ("docs/operations.md", "liza status --json", "\"ok\":true"),
    (
        "docs/troubleshooting.md",
        "liza submit-verdict t-1 approve --commit abcd",
        "[verdict-claim]",
    ),
];

#[test]
fn every_command_line_the_docs_show_runs_in_a_scratch_project() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .chain(std::fs::read_dir(root.join("docs/agents")).unwrap())
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && !p.ends_with("docs/cli.md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut problems = Vec::new();
    let (mut ran, mut skipped) = (0, 0);
    for page in &pages {
        let name = page.strip_prefix(root).unwrap().display().to_string();
        let (shown, files) = shown_on(page, &name);
        if shown.is_empty() {
            continue;
        }
        let (_dir, home, repo) = scratch();
        for (file, body) in &files {
            std::fs::write(repo.join(file), body).unwrap();
        }
        let runs_init = shown
            .iter()
            .any(|s| s.place == Place::Project && s.argv.get(1).is_some_and(|c| c == "init"));
        let fixture = |repo: &Path, init: bool| {
            let mut steps: Vec<Vec<&str>> = Vec::new();
            if init {
                steps.push(vec!["liza", "init", "A docs walkthrough"]);
            }
            steps.extend(prelude(&name));
            for step in steps {
                let argv: Vec<String> = step.iter().map(|w| w.to_string()).collect();
                let (code, text) = run(repo, &home, &[], &argv);
                assert_eq!(
                    code,
                    Some(0),
                    "{name}: the fixture's `{}`: {text}",
                    step.join(" ")
                );
            }
        };
        fixture(&repo, !runs_init);
        let mut fresh: Option<(usize, tempfile::TempDir, PathBuf)> = None;
        for s in &shown {
            if not_here(&s.argv).is_some() || s.place == Place::Demo {
                skipped += 1;
                continue;
            }
            let repo = match s.place {
                Place::Fresh(at) => {
                    if fresh.as_ref().is_none_or(|(since, _, _)| *since != at) {
                        let (dir, _, checkout) = scratch();
                        fresh = Some((at, dir, checkout));
                    }
                    fresh.as_ref().map(|(_, _, c)| c.clone()).unwrap()
                }
                _ => repo.clone(),
            };
            // `goal complete` comes once the page's tasks are done: what agents do, the
            // fixture does by abandoning them.
            if s.argv.get(1).is_some_and(|c| c == "goal")
                && s.argv.get(2).is_some_and(|c| c == "complete")
            {
                abandon_open_tasks(&repo, &home);
            }
            // A file the command reads is a copy of the blackboard.
            for arg in s
                .argv
                .iter()
                .filter(|a| a.ends_with(".yaml") && *a != "plan.yaml")
            {
                let target = repo.join(arg.trim_start_matches('/'));
                if !target.exists() {
                    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                    let _ = std::fs::copy(repo.join(".liza/state.yaml"), &target);
                }
            }
            let argv: Vec<String> = s
                .argv
                .iter()
                .map(|a| match a.strip_prefix("/tmp/") {
                    Some(rest) if a.ends_with(".yaml") => {
                        repo.join("tmp").join(rest).display().to_string()
                    }
                    _ => a.clone(),
                })
                .collect();
            ran += 1;
            let (code, text) = run(&repo, &home, &s.env, &argv);
            let command = s.text.split(" #").next().unwrap_or("").trim();
            let expected = EXPECTED
                .iter()
                .find(|(p, t, _, _)| (*p == s.page || *p == "*") && *t == command)
                .map_or(0, |(_, _, c, _)| *c);
            let place = format!("{}:{}: `{}`", s.page, s.line, s.text);
            if code != Some(expected) {
                problems.push(format!(
                    "{place} exits {code:?}, not {expected}: {}",
                    text.lines().take(3).collect::<Vec<_>>().join(" / ")
                ));
            }
            for (_, _, fragment) in PRINTS
                .iter()
                .filter(|(p, t, _)| (*p == s.page || *p == "*") && *t == command)
            {
                if !text.contains(fragment) {
                    problems.push(format!("{place} does not print {fragment:?}: {text}"));
                }
            }
        }
    }
    eprintln!("docs commands: {ran} run, {skipped} named as run elsewhere");
    assert!(ran > 40, "only {ran} command lines ran");
    assert!(
        problems.is_empty(),
        "command lines the docs show that do not do what they show:\n{}",
        problems.join("\n")
    );
}

/// Abandons every task of `repo` that is not terminal.
fn abandon_open_tasks(repo: &Path, home: &Path) {
    let (_, text) = run(
        repo,
        home,
        &[],
        &["liza".into(), "--json".into(), "status".into()],
    );
    let status: serde_json::Value =
        serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap_or_default();
    for task in status["result"]["tasks"].as_array().into_iter().flatten() {
        let open = !matches!(
            task["status"].as_str(),
            Some("MERGED" | "ABANDONED" | "SUPERSEDED")
        );
        if open && let Some(id) = task["id"].as_str() {
            let argv: Vec<String> = [
                "liza",
                "abandon",
                id,
                "--reason",
                "done by the agents the page runs",
            ]
            .iter()
            .map(|w| w.to_string())
            .collect();
            let (code, text) = run(repo, home, &[], &argv);
            assert_eq!(code, Some(0), "abandon {id}: {text}");
        }
    }
}
