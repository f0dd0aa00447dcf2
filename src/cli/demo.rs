//! `liza demo [--dir PATH]`: a whole sprint with the built-in agent, offline.

use std::path::PathBuf;

use super::output::Output;
use super::progress::Progress;
use super::{CliError, EXIT_OK};

#[derive(clap::Args)]
pub(super) struct DemoArgs {
    /// Where to create the demo repository (new or empty); default a fresh temporary
    /// folder, kept afterwards so you can look around.
    #[arg(long)]
    dir: Option<PathBuf>,
}

pub(super) fn cmd_demo(args: DemoArgs, out: &Output) -> Result<i32, CliError> {
    // Before any folder is made: a refusal leaves nothing behind.
    crate::demo::preflight(args.dir.as_deref())
        .map_err(|(why, hint)| CliError::refused(why).with_hint(hint))?;
    let dir = match args.dir {
        Some(d) => d,
        None => tempfile::Builder::new()
            .prefix("liza-demo-")
            .tempdir()
            .map_err(|e| CliError::refused(format!("cannot create a temporary folder: {e}")))?
            .keep(),
    };
    let liza = std::env::current_exe()
        .map_err(|e| CliError::refused(format!("cannot find the liza executable: {e}")))?;
    println!(
        "liza demo: a planner, two coders and a reviewer (the built-in agent) on a tiny shell project"
    );
    let started = dir.join(".liza/demo").exists();
    let progress = Progress::start(out.json);
    progress.status("the sprint is running");
    let report = crate::demo::run(&dir, &liza, |line| {
        progress.println(&format!("  {line}"));
        progress.status(line);
    });
    progress.finish();
    let report = report.map_err(|e| {
        let err = CliError::refused(e);
        if !started && dir.join(".liza/demo").exists() {
            let logs = dir.join(".liza");
            err.with_hint(format!(
                "the supervisors' output is in {}/demo/ and their agents' in {}/agent-logs/",
                logs.display(),
                logs.display()
            ))
        } else {
            err
        }
    })?;
    println!(
        "\nliza demo: sprint complete in {:.1} s; merged on integration: {}",
        report.elapsed.as_secs_f64(),
        report.merged.join(", ")
    );
    let d = report.dir.display();
    println!("Look around:");
    println!("  cd {d}");
    println!("  git log --oneline --graph integration");
    println!("  liza status          # the board");
    println!("  liza log             # every transition");
    println!("  ls .liza/runs/ .liza/agent-outputs/   # the built-in agent's run log and prompts");
    Ok(EXIT_OK)
}
