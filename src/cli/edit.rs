//! `liza edit`: edit the blackboard safely (specs/blackboard.md *Hand edits*). A copy of
//! state.yaml goes to `$VISUAL` / `$EDITOR`; on save it is validated, and while it is
//! invalid the editor opens again with the errors as comments at the top (like
//! `crontab -e`); a valid copy is committed through the store, merged onto the latest
//! revision if the blackboard moved meanwhile, asking only about fields changed on both
//! sides. Saving the file unchanged after an error, or emptying it, abandons the edit (the
//! text is kept). Without a terminal (an `EDITOR` script) conflicts end the edit instead
//! of asking.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::document;
use crate::blackboard::finding::Finding;
use crate::blackboard::merge3::{Choices, Conflict, Side};
use crate::blackboard::store::hand_edit::Rejection;
use crate::blackboard::timestamp::Timestamp;
use crate::blackboard::validate::ValidationEnv;
use crate::error::ErrorClass;
use crate::ops::Project;

/// Lines liza puts at the top of the copy; removed before the text is read.
const HEADER: &str = "# liza edit: ";

#[derive(clap::Args)]
pub(super) struct EditArgs {}

pub(super) fn cmd_edit(_args: EditArgs, out: &Output) -> Result<i32, CliError> {
    let project = Project::discover(&current_dir()?)?;
    // A pending hand edit is settled first, so the copy is a committed revision.
    project.store.reconcile()?;
    let original = project.store.text()?;
    let copy = tempfile::Builder::new()
        .prefix("liza-edit-")
        .suffix(".yaml")
        .tempfile()
        .and_then(|f| f.keep().map_err(|e| e.error))
        .map_err(|e| CliError::blackboard(format!("cannot create the copy to edit: {e}")))?
        .1;
    write(&copy, &original)?;
    let known = errors_of(&project, &original);
    let mut shown = original.clone();
    let mut choices = Choices::new();
    loop {
        run_editor(&copy)?;
        let saved = std::fs::read(&copy)
            .map_err(|e| CliError::blackboard(format!("cannot read {}: {e}", copy.display())))?;
        let body = strip_header(&saved);
        if body == original {
            let _ = std::fs::remove_file(&copy);
            out.ok(serde_json::json!({"changed": false}), || {
                "no changes; the blackboard is as it was\n".into()
            });
            return Ok(EXIT_OK);
        }
        if saved == shown || body.iter().all(u8::is_ascii_whitespace) {
            return Err(abandoned(&copy));
        }
        let problems = problems_of(&project, &body, &known);
        if !problems.is_empty() {
            shown = with_header(&problems, &body);
            write(&copy, &shown)?;
            continue;
        }
        // Submitted again, without reopening the editor, once the conflicts are decided.
        let submitted = loop {
            match project.store.submit_edit(&body, &choices)? {
                Err(Rejection::Conflicts { conflicts, .. }) => {
                    if !ask(&conflicts, &mut choices)? {
                        let lines: Vec<String> =
                            conflicts.iter().map(|c| format!("  {c}")).collect();
                        return Err(CliError::refused(format!(
                            "the blackboard changed the same fields meanwhile:\n{}",
                            lines.join("\n")
                        ))
                        .with_hint(format!(
                            "your text is kept at {}; run `liza edit` again and redo the change on the latest revision",
                            copy.display()
                        )));
                    }
                }
                other => break other,
            }
        };
        match submitted {
            Ok(revision) => {
                let _ = std::fs::remove_file(&copy);
                let layout = layout_note(&project, &body);
                let merged = if choices.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", merged with what changed meanwhile ({} conflict(s) decided)",
                        choices.len()
                    )
                };
                out.ok(
                    serde_json::json!({"revision": revision, "conflicts_decided": choices.len()}),
                    || format!("committed as revision {revision}{merged}\n{layout}"),
                );
                return Ok(EXIT_OK);
            }
            Err(Rejection::BaseGone { .. }) => {
                return Err(CliError::refused(
                    "the revision you copied is no longer in the journal, so the edit cannot be merged"
                        .into(),
                )
                .with_hint(format!(
                    "your text is kept at {}; run `liza edit` again",
                    copy.display()
                )));
            }
            Err(why) => {
                shown = with_header(&why.lines("state.yaml"), &body);
                write(&copy, &shown)?;
            }
        }
    }
}

/// `$VISUAL`, else `$EDITOR`, else `vi`, on `file`. The editor setting may hold
/// arguments (`code -w`), so it runs through `sh` with the file as `$1` — the file name
/// is liza's own, never blackboard content.
fn run_editor(file: &Path) -> Result<(), CliError> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".into());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("liza-edit")
        .arg(file)
        .status()
        .map_err(|e| {
            CliError::new(
                ErrorClass::MissingProgram,
                format!("cannot run the editor {editor}: {e}"),
            )
        })?;
    // 127 is the shell's "command not found", 126 "found but not executable": no
    // usable editor is installed under that name.
    if matches!(status.code(), Some(126 | 127)) {
        return Err(CliError::new(
            ErrorClass::MissingProgram,
            format!("the editor {editor} was not found (or cannot be run); nothing was committed"),
        )
        .with_hint("set $VISUAL or $EDITOR to an installed editor (e.g. EDITOR=nano liza edit)")
        .with_hint(format!("the copy it was to open is {}", file.display())));
    }
    if !status.success() {
        return Err(CliError::refused(format!(
            "the editor ({editor}) exited with {status}; nothing was committed"
        ))
        .with_hint(format!("your text is kept at {}", file.display())));
    }
    Ok(())
}

/// The text without liza's header lines.
fn strip_header(saved: &[u8]) -> Vec<u8> {
    let mut rest = saved;
    while rest.starts_with(HEADER.as_bytes()) {
        match rest.iter().position(|b| *b == b'\n') {
            Some(end) => rest = &rest[end + 1..],
            None => rest = &[],
        }
    }
    rest.to_vec()
}

/// The errors a state text has (each with line and column), as identities.
fn errors_of(project: &Project, text: &[u8]) -> HashSet<(&'static str, String, String)> {
    let mut env = ValidationEnv::new(Some(&project.root), Timestamp::now());
    document::check(text, &mut env)
        .errors()
        .map(Finding::identity)
        .collect()
}

/// The errors `text` has that the original did not, as `line:column: message`.
fn problems_of(
    project: &Project,
    text: &[u8],
    known: &HashSet<(&'static str, String, String)>,
) -> Vec<String> {
    let mut env = ValidationEnv::new(Some(&project.root), Timestamp::now());
    document::check(text, &mut env)
        .errors()
        .filter(|f| !known.contains(&f.identity()))
        .map(|f| format!("state.yaml:{}:{}: {}", f.line, f.column, f.message))
        .collect()
}

/// `body` with the problems as comments above it (line numbers count from the first line
/// after them).
fn with_header(problems: &[String], body: &[u8]) -> Vec<u8> {
    let mut text = format!(
        "{HEADER}not committed yet. Fix the following and save again; save it unchanged to give up.\n\
         {HEADER}(line numbers count from the first line after these comments)\n"
    )
    .into_bytes();
    for p in problems {
        text.extend_from_slice(format!("{HEADER}{p}\n").as_bytes());
    }
    text.extend_from_slice(body);
    text
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes)
        .map_err(|e| CliError::blackboard(format!("cannot write {}: {e}", path.display())))
}

fn abandoned(copy: &Path) -> CliError {
    CliError::refused("edit abandoned; nothing was committed".into())
        .with_hint(format!("your text is kept at {}", copy.display()))
}

/// Asks, on a terminal, which side to keep for each conflict; `false` without one.
fn ask(conflicts: &[Conflict], choices: &mut Choices) -> Result<bool, CliError> {
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    let mut stderr = std::io::stderr();
    let stdin = std::io::stdin();
    let _ = writeln!(
        stderr,
        "The blackboard changed while you edited; {} field(s) changed on both sides. \
         For each, keep your value or the blackboard's; everything else is merged, and the \
         result is committed without opening the editor again.",
        conflicts.len()
    );
    for c in conflicts {
        let _ = writeln!(
            stderr,
            "{}\n  yours:      {}\n  blackboard: {}",
            c.path,
            c.theirs.as_deref().unwrap_or("(deleted)"),
            c.ours.as_deref().unwrap_or("(deleted)")
        );
        loop {
            let _ = write!(stderr, "keep [y]ours or the [b]lackboard's? ");
            let _ = stderr.flush();
            let mut line = String::new();
            if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
                return Ok(false);
            }
            match line.trim() {
                "y" | "yours" => {
                    choices.insert(c.path.clone(), Side::Theirs);
                    break;
                }
                "b" | "blackboard" => {
                    choices.insert(c.path.clone(), Side::Ours);
                    break;
                }
                _ => {}
            }
        }
    }
    Ok(true)
}

/// What to say when the committed text is not the person's layout: a state.yaml without a
/// comment is written in liza's own layout (specs/blackboard.md *Hand edits*).
fn layout_note(project: &Project, saved: &[u8]) -> String {
    if saved.contains(&b'#') {
        return String::new();
    }
    let Ok(written) = project.store.text() else {
        return String::new();
    };
    let without_revision = |text: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(text)
            .lines()
            .filter(|l| !l.starts_with("revision:"))
            .map(str::to_owned)
            .collect()
    };
    if without_revision(&written) == without_revision(saved) {
        return String::new();
    }
    "note: liza wrote it in its own layout (block style, its key order): a state.yaml without \
     any comment is not kept as written; add a comment (# …) anywhere to keep your layout\n"
        .into()
}
