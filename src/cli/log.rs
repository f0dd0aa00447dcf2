//! `liza log [--task ID] [--follow]`: the activity log, whole or followed.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::log::{self as activity, LogEntry};
use crate::ops::Project;
use crate::watch::DirWatch;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LogArgs {
    #[command(subcommand)]
    command: Option<LogCommand>,
    /// Only entries about this task.
    #[arg(long, value_name = "ID")]
    task: Option<String>,
    /// Keep printing entries as they are appended (with --json: one JSON object per line).
    #[arg(short, long)]
    follow: bool,
}

#[derive(clap::Subcommand)]
enum LogCommand {
    /// Append an entry to the activity log.
    Add {
        /// What happened, one word (e.g. `decision`); kept as written.
        #[arg(long)]
        action: String,
        /// What happened, in a sentence.
        #[arg(long)]
        detail: String,
        /// The task it is about.
        #[arg(long)]
        task: Option<String>,
    },
}

pub fn cmd_log(args: LogArgs, out: &Output) -> Result<i32, CliError> {
    if let Some(LogCommand::Add {
        action,
        detail,
        task,
    }) = args.command
    {
        let task = task.as_deref().map(super::report::task_id).transpose()?;
        let (project, actor) = super::report::context()?;
        let done = crate::ops::log_add(&project, &actor, &action, &detail, task.as_ref())?;
        return super::report::show(out, &done, |_| format!("logged {action}"));
    }
    let project = Project::discover(&current_dir()?)?;
    let path = project.store.paths().log();
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Err(CliError::blackboard(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    let read = activity::parse_items(&bytes, 1);
    // A task id is checked like everywhere else (`--task ../x` is not one).
    let task = args
        .task
        .as_deref()
        .map(super::report::task_id)
        .transpose()?;
    let wanted = |e: &LogEntry| {
        task.as_ref()
            .is_none_or(|t| e.task.as_deref() == Some(t.as_str()))
    };
    let entries: Vec<&LogEntry> = read.entries.iter().filter(|e| wanted(e)).collect();
    for (line, message) in &read.unreadable {
        eprintln!("warning: log.yaml line {line}: unreadable entry skipped ({message})");
    }
    if args.follow {
        let mut stdout = std::io::stdout().lock();
        for e in &entries {
            let _ = writeln!(stdout, "{}", render(e, out.json));
        }
        let _ = stdout.flush();
        drop(stdout);
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        follow(&path, complete as u64, &wanted, out.json);
    }
    let result = serde_json::json!({
        "entries": entries,
        "torn_tail": read.torn_tail,
    });
    out.ok(result, || {
        let mut text = String::new();
        for e in &entries {
            text.push_str(&render(e, false));
            text.push('\n');
        }
        if read.torn_tail {
            text.push_str(
                "(the last entry is incomplete: a transaction was interrupted while logging)\n",
            );
        }
        text
    });
    Ok(EXIT_OK)
}

fn render(e: &LogEntry, json: bool) -> String {
    if json {
        return serde_json::to_string(e).unwrap_or_default();
    }
    let ts = e
        .timestamp
        .map_or_else(|| "-".repeat(20), |t| t.to_string());
    let rev = e.revision.map_or_else(|| "-".into(), |r| format!("r{r}"));
    let line = format!(
        "{ts}  {rev:<6} {:<16} {:<26} {:<12} {}",
        e.agent.as_deref().unwrap_or("-"),
        e.action,
        e.task.as_deref().unwrap_or("-"),
        e.detail.as_deref().unwrap_or("").replace('\n', " ⏎ ")
    );
    crate::terminal_text::visible(&line).into_owned()
}

/// Prints entries appended after `offset` until the process is interrupted. Woken by
/// file events; checks every 2 s as well in case events are lost.
fn follow(path: &Path, mut offset: u64, wanted: &dyn Fn(&LogEntry) -> bool, json: bool) -> ! {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("log.yaml");
    let watch = DirWatch::new(dir, &[name], Duration::from_millis(50)).ok();
    loop {
        match &watch {
            Some(w) => {
                w.wait(Duration::from_secs(2));
            }
            None => std::thread::sleep(Duration::from_secs(1)),
        }
        let Ok(mut file) = std::fs::File::open(path) else {
            continue;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < offset {
            // A torn final entry was cut off by the next append.
            offset = len;
        }
        if len == offset || file.seek(SeekFrom::Start(offset)).is_err() {
            continue;
        }
        let mut chunk = Vec::new();
        if file.read_to_end(&mut chunk).is_err() {
            continue;
        }
        let complete = chunk.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let read = activity::parse_items(&chunk[..complete], 1);
        let mut stdout = std::io::stdout().lock();
        for e in read.entries.iter().filter(|e| wanted(e)) {
            let _ = writeln!(stdout, "{}", render(e, json));
        }
        let _ = stdout.flush();
        offset += complete as u64;
    }
}
