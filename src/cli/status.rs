//! `liza status [--json]`: the status report ([`crate::status`]) of a snapshot read, or
//! with `--watch` the dashboard.

use crate::blackboard::log_tally::ActivityReader;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::Timestamp;
use crate::ops::Project;
use crate::status::Report;

#[derive(clap::Args)]
pub struct StatusArgs {
    /// A live dashboard redrawn on every change (keys: ↑↓ ⏎ p r e q).
    #[arg(long)]
    watch: bool,
}

pub fn cmd_status(args: StatusArgs, out: &Output) -> Result<i32, CliError> {
    let project = Project::discover(&current_dir()?)?;
    if args.watch {
        if out.json {
            return Err(CliError::usage(
                "--watch draws a dashboard; --json prints one report (run it in a loop)".into(),
            ));
        }
        let actor = crate::ops::actor_from_env()?;
        crate::dashboard::run(&project, &actor).map_err(|e| {
            CliError::refused(e)
                .with_hint("run it in a terminal, or use `liza status` without --watch")
        })?;
        return Ok(EXIT_OK);
    }
    let snapshot = project.store.snapshot()?;
    let mut report = Report::read(&snapshot, &project.store, Timestamp::now())?;
    if out.json {
        // The numbers of `liza watch --metrics-addr` (`/metrics`), from the same tally.
        let activity = ActivityReader::read_all(&project.store);
        let mut numbers = crate::monitor::metrics::collect(
            &snapshot.state,
            &activity,
            crate::ops::alarms::counts_by_category(&project.store),
        );
        numbers.usage = crate::monitor::metrics::usage(&project.store.ledger().unwrap_or_default());
        report.operations = Some(numbers);
    }
    out.ok(serde_json::to_value(&report).unwrap_or_default(), || {
        report.render()
    });
    Ok(EXIT_OK)
}
