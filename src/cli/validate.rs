//! `liza validate [FILE] [--json] [--skip-spec-check]`

use std::path::{Path, PathBuf};

use serde_json::json;

use super::output::{Output, finding_line};
use super::{CliError, EXIT_OK, current_dir};
use crate::blackboard::document::{self, read_limited};
use crate::blackboard::validate::{ValidationEnv, skip_spec_check_from_env};
use crate::blackboard::{LizaPaths, Timestamp};
use crate::error::ErrorClass;
use crate::git::{GitError, find_project_root};

#[derive(clap::Args)]
pub(super) struct ValidateArgs {
    /// A state.yaml to check; the project root is then the parent of its directory and
    /// no git repository is needed. Default: this repository's .liza/state.yaml.
    file: Option<PathBuf>,
    /// Do not check that spec_ref files exist (also SKIP_SPEC_FILE_CHECK=true).
    #[arg(long)]
    skip_spec_check: bool,
}

pub(super) fn cmd_validate(args: ValidateArgs, out: &Output) -> Result<i32, CliError> {
    let cwd = current_dir()?;
    // On a blackboard in etcd: its text as committed (the mirror shows the same), and
    // the live records there.
    let mut shared_live = None;
    let mut shared_text = None;
    let (file, root, shown) = match &args.file {
        Some(_) if super::channel::ChannelMode::get().is_some() => {
            return Err(CliError::refused(
                "a sandboxed agent validates the blackboard, not a file of its own".into(),
            )
            .with_hint("run `liza validate` without a file"));
        }
        Some(file) => {
            let file = cwd.join(file);
            let root = file
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_else(|| cwd.clone());
            let shown = args
                .file
                .as_ref()
                .map(|f| f.display().to_string())
                .unwrap_or_default();
            (file, root, shown)
        }
        None => {
            let root = find_project_root(&cwd).map_err(|e| match e {
                GitError::NotARepository { .. } => CliError::blackboard(format!(
                    "{} is not inside a git repository",
                    cwd.display()
                ))
                .with_hint("pass the file to check: liza validate path/to/state.yaml"),
                other => other.into(),
            })?;
            let paths = LizaPaths::new(&root);
            let mut shown = paths.display(&paths.state());
            if let Some(address) = crate::blackboard::store::locate(&root)? {
                let store = crate::ops::open_store(&root)?;
                shared_text = Some(store.text()?);
                shared_live = Some(store.live_records()?);
                shown = address.to_string();
            }
            (paths.state(), root, shown)
        }
    };
    let read = match shared_text {
        Some(text) => Ok(text),
        None => read_limited(&file),
    };
    let bytes = read.map_err(|e| {
        CliError::new(ErrorClass::Blackboard, format!("cannot read {shown}: {e}"))
            .with_hint("run liza init to create a blackboard, or name an existing state.yaml")
    })?;
    let mut env = ValidationEnv::new(Some(&root), Timestamp::now());
    env.skip_spec_check |= args.skip_spec_check || skip_spec_check_from_env();
    // Heartbeats renew leases in liveness records beside the file: effective leases.
    env.live_records = shared_live.or_else(|| {
        file.parent()
            .map(|dir| crate::blackboard::liveness::read_all(&dir.join("live")))
    });
    let mut checked = document::check(&bytes, &mut env);
    // With the repository at hand: merged work that left the integration branch.
    // With a shared remote, this checkout's integration may just be behind the remote's:
    // the merger checks after it synced (specs/git.md *Integration keeps what was merged*).
    if args.file.is_none()
        && let Some(decoded) = &checked.decoded
        && decoded.state.config.git_remote.is_none()
        && let Ok(repo) = crate::git::Repo::open(&root)
        && let Ok(left) = crate::ops::integration_check::work_that_left(&repo, &decoded.state)
        && !left.is_empty()
    {
        let integration = decoded.state.config.integration_branch();
        let fix = crate::ops::integration_check::fix(&left, integration);
        for l in &left {
            let index = decoded
                .state
                .tasks
                .iter()
                .position(|t| t.id == l.task)
                .unwrap_or(0);
            let path = crate::blackboard::finding::FieldPath::root()
                .key("tasks")
                .index(index)
                .key("merge_commit");
            let pos = path.locate(&decoded.root);
            let mut finding = crate::blackboard::finding::Finding::error(
                None,
                "integration-rewound",
                path,
                format!(
                    "task {} is MERGED but its merge commit {} is not on {integration}: the branch was rewound",
                    l.task, l.merge_commit
                ),
            )
            .at(pos);
            finding.id = Some(l.task.to_string());
            finding.hint = Some(fix.clone());
            checked.findings.push(finding);
        }
    }
    let errors = checked.errors().count();
    let warnings = checked.findings.len() - errors;
    let tasks = checked.decoded.as_ref().map(|d| d.state.tasks.len());
    let result = json!({
        "file": shown,
        "valid": errors == 0,
        "errors": errors,
        "warnings": warnings,
        "revision": checked.decoded.as_ref().map(|d| d.state.revision()),
        "findings": checked.findings,
    });
    let human = || {
        let mut text = String::new();
        for f in &checked.findings {
            text.push_str(&finding_line(Some(&shown), f));
            text.push('\n');
        }
        if errors == 0 {
            let what = tasks.map_or_else(String::new, |n| format!(" ({n} task{})", plural(n)));
            text.push_str(&format!("{shown} is valid{what}"));
            if warnings > 0 {
                text.push_str(&format!(", {warnings} warning{}", plural(warnings)));
            }
        } else {
            text.push_str(&format!(
                "{shown}: {errors} error{}, {warnings} warning{}",
                plural(errors),
                plural(warnings)
            ));
        }
        text.push('\n');
        text
    };
    if errors == 0 {
        out.ok(result, human);
        Ok(EXIT_OK)
    } else {
        let err = CliError::refused(format!("{shown} has {errors} error{}", plural(errors)));
        Ok(out.fail_with_result(result, &err, human))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
