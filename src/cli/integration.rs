//! `liza integration accept-rewind`: a person accepts that merged work left the
//! integration branch (specs/git.md *Integration keeps what was merged*).

use super::output::Output;
use super::report::{context, show};
use super::{CliError, EXIT_OK};
use crate::ops::integration_check;

#[derive(clap::Subcommand)]
pub(super) enum IntegrationCommand {
    /// Accept that MERGED work left the integration branch (it was rewound): each commit
    /// that left is kept as liza/attic/<task>-<n>, and merges publish again.
    AcceptRewind,
}

pub(super) fn cmd_integration(command: IntegrationCommand, out: &Output) -> Result<i32, CliError> {
    match command {
        IntegrationCommand::AcceptRewind => {
            let (project, actor) = context()?;
            let done = integration_check::accept_rewind(&project, &actor)?;
            show(out, &done, |left| {
                let tasks: Vec<String> = left.iter().map(|l| l.task.to_string()).collect();
                format!(
                    "accepted: the work of {} left integration; each commit is kept under liza/attic/",
                    tasks.join(", ")
                )
            })?;
            Ok(EXIT_OK)
        }
    }
}
