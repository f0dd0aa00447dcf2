//! `liza log [--task ID] [--follow]`: the activity log, whole or followed.

use std::io::Write;
use std::time::Duration;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::log::LogEntry;
use crate::ops::Project;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(super) struct LogArgs {
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

pub(super) fn cmd_log(args: LogArgs, out: &Output) -> Result<i32, CliError> {
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
    // Entries are written as they are read, one at a time: memory stays bounded whatever
    // the log's size. With --json (and no --follow) they stand inside the one object
    // every command prints, written piece by piece.
    let envelope = out.json && !args.follow;
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    if envelope {
        let _ = write!(stdout, "{{\"ok\":true,\"result\":{{\"entries\":[");
    }
    let mut first = true;
    let (torn, feed) = project
        .store
        .stream_log(args.follow, &mut |item| match item {
            Ok(e) if wanted(&e) => {
                if envelope {
                    let comma = if first { "" } else { "," };
                    let _ = write!(
                        stdout,
                        "{comma}{}",
                        serde_json::to_string(&e).unwrap_or_default()
                    );
                } else {
                    let _ = writeln!(stdout, "{}", render(&e, out.json));
                }
                first = false;
            }
            Ok(_) => {}
            Err(item) => {
                eprintln!(
                    "warning: log.yaml line {}: unreadable entry skipped ({})",
                    item.line, item.problem
                );
            }
        })?;
    if envelope {
        let _ = writeln!(stdout, "],\"torn_tail\":{torn}}}}}");
    } else if torn && !out.json {
        let _ = writeln!(
            stdout,
            "(the last entry is incomplete: a transaction was interrupted while logging)"
        );
    }
    let _ = stdout.flush();
    drop(stdout);
    if let Some(mut feed) = feed {
        loop {
            let entries = feed.next(Duration::from_secs(2));
            let mut stdout = std::io::stdout().lock();
            for e in entries.iter().filter(|e| wanted(e)) {
                let _ = writeln!(stdout, "{}", render(e, out.json));
            }
            let _ = stdout.flush();
        }
    }
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
