//! `liza note <task|all> <message>`

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::ops::{self, Project, actor_from_env};

#[derive(clap::Args)]
pub(super) struct NoteArgs {
    /// A task id, or `all` for every agent.
    target: String,
    /// The note.
    message: String,
}

pub(super) fn cmd_note(args: NoteArgs, out: &Output) -> Result<i32, CliError> {
    let actor = actor_from_env()?;
    let project = Project::discover(&current_dir()?)?;
    let outcome = ops::note(&project.store, &actor, &args.target, &args.message)?;
    out.ok(serde_json::to_value(&outcome).unwrap_or_default(), || {
        format!(
            "{} added for {} (revision {})\n",
            outcome.id, outcome.target, outcome.revision
        )
    });
    Ok(EXIT_OK)
}
