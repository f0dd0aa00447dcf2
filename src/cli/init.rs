//! `liza init <goal> [--spec PATH] [--integration-branch NAME] [--base REF] [--store URL]`
//! and `liza join URL`.

use std::path::PathBuf;

use super::output::Output;
use super::{CliError, EXIT_OK, current_dir};
use crate::ops::{self, InitRequest};

#[derive(clap::Args)]
pub(super) struct InitArgs {
    /// The goal, in one sentence.
    goal: String,
    /// The goal's spec file (must exist).
    #[arg(long, value_name = "PATH", default_value = "specs/vision.md")]
    spec: PathBuf,
    /// Branch that receives approved work (created if missing).
    #[arg(long, value_name = "NAME")]
    integration_branch: Option<String>,
    /// Commit a new integration branch starts from.
    #[arg(long, value_name = "REF")]
    base: Option<String>,
    /// A bare repository every host reaches, for agents on several machines: task
    /// branches are pushed there and the integration branch moves there.
    #[arg(long, value_name = "URL")]
    git_remote: Option<String>,
}

/// `liza join etcd://HOST:PORT/PREFIX`
#[derive(clap::Args)]
pub(super) struct JoinArgs {
    /// The blackboard's address: etcd://HOST:PORT[,HOST:PORT…]/PREFIX.
    address: String,
}

pub(super) fn cmd_join(args: JoinArgs, out: &Output) -> Result<i32, CliError> {
    let outcome = ops::join(&current_dir()?, &args.address)?;
    out.ok(serde_json::to_value(&outcome).unwrap_or_default(), || {
        format!(
            "joined {} (revision {}); commands in {} use it from now on\n",
            outcome.address,
            outcome.revision,
            outcome.root.display()
        )
    });
    Ok(EXIT_OK)
}

pub(super) fn cmd_init(args: InitArgs, out: &Output) -> Result<i32, CliError> {
    let outcome = ops::init(InitRequest {
        goal: args.goal,
        spec: Some(args.spec),
        integration_branch: args.integration_branch,
        base: args.base,
        git_remote: args.git_remote,
        cwd: current_dir()?,
    })?;
    out.ok(serde_json::to_value(&outcome).unwrap_or_default(), || {
        let branch = if outcome.branch_created {
            format!("created branch {} at {}", outcome.integration_branch, &outcome.integration_tip[..12])
        } else {
            format!("using existing branch {} at {}", outcome.integration_branch, &outcome.integration_tip[..12])
        };
        format!(
            "initialized {}/.liza ({}, {}, spec {})\n{branch}\nnext: add tasks (liza add-task …) or start agents (liza up); liza status shows the board\n",
            outcome.root.display(),
            outcome.goal_id,
            outcome.sprint_id,
            outcome.spec_ref,
        )
    });
    Ok(EXIT_OK)
}
