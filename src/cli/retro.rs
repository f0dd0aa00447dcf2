//! `liza retro`: the sprint's interactions coded by one agent per identity, each code
//! grounded in verbatim quotes (specs/builtin-agent.md *Retrospective coding*).

use std::path::PathBuf;

use serde_json::json;

use super::output::Output;
use super::progress::Progress;
use super::{CliError, EXIT_OK, current_dir};
use crate::ops::Project;
use crate::retro::{self, Options};

#[derive(clap::Args)]
pub(super) struct RetroArgs {
    /// The sprint to code (default: the current one; a past one is read from its archive).
    #[arg(long, value_name = "ID")]
    sprint: Option<String>,
    /// The identities file (default: identities.yaml at the project root).
    #[arg(long, value_name = "FILE")]
    identities: Option<PathBuf>,
    /// Also code the agents' saved transcripts (.liza/agent-logs/) of each task.
    #[arg(long)]
    include_transcripts: bool,
    /// Model calls in flight at once.
    #[arg(long, default_value_t = retro::DEFAULT_JOBS, value_name = "N")]
    jobs: usize,
    /// The largest chunk of a message sent in one call, in estimated tokens.
    #[arg(long, default_value_t = retro::DEFAULT_CHUNK_TOKENS, value_name = "TOKENS")]
    chunk_tokens: usize,
}

pub(super) fn cmd_retro(args: RetroArgs, out: &Output) -> Result<i32, CliError> {
    if args.jobs == 0 || args.chunk_tokens < 16 {
        return Err(CliError::usage(
            "--jobs must be at least 1 and --chunk-tokens at least 16".into(),
        ));
    }
    let cwd = current_dir()?;
    let project = Project::discover(&cwd)?;
    let identities = args.identities.map(|p| cwd.join(p));
    let options = Options {
        sprint: args.sprint,
        identities,
        include_transcripts: args.include_transcripts,
        jobs: args.jobs,
        chunk_tokens: args.chunk_tokens,
    };
    let progress = Progress::start(out.json);
    progress.step("coding the sprint's interactions");
    let result = retro::run(&project, &options);
    progress.finish();
    let done = result?;
    let r = &done.report;
    let t = &r.totals;
    let shown = |p: &std::path::Path| project.store.paths().display(p);
    let result = json!({
        "sprint": r.sprint,
        "model": r.model,
        "dry_run": r.dry_run,
        "codes": r.codes.len(),
        "agreed": r.codes.iter().filter(|c| c.agreement).count(),
        "interactions": t.interactions,
        "chunks": t.chunks,
        "calls": t.calls,
        "token_usage": t.token_usage,
        "tally": t.tally,
        "identities": r.identities.iter().map(|i| json!({
            "id": i.id,
            "codes": i.codes.len(),
            "token_usage": i.token_usage,
            "tally": i.tally,
        })).collect::<Vec<_>>(),
        "yaml": shown(&done.yaml),
        "markdown": shown(&done.markdown),
    });
    out.ok(result, || {
        let q = t.tally.quotes;
        let mut text = format!(
            "retro of sprint {}: {} codes ({} found by several identities) from {} interactions, {} chunks × {} identities\n",
            r.sprint,
            r.codes.len(),
            r.codes.iter().filter(|c| c.agreement).count(),
            t.interactions,
            t.chunks,
            r.identities.len()
        );
        text.push_str(&format!(
            "quotes: {} verified, {} repaired, {} dropped · codes dropped: {} · calls without an answer: {}\n",
            q.verified,
            q.repaired,
            q.dropped,
            t.tally.codes_dropped,
            t.tally.calls_failed + t.tally.answers_unreadable
        ));
        text.push_str(&format!(
            "tokens: {} prompt, {} completion{}\n",
            t.token_usage.prompt_tokens,
            t.token_usage.completion_tokens,
            if r.dry_run { " (DRY_RUN)" } else { "" }
        ));
        for c in r.codes.iter().take(5) {
            text.push_str(&format!(
                "  {:>3}×  {}{}\n",
                c.frequency,
                c.code,
                if c.agreement { "  (agreed)" } else { "" }
            ));
        }
        text.push_str(&format!("→ {}\n", shown(&done.markdown)));
        text
    });
    Ok(EXIT_OK)
}
