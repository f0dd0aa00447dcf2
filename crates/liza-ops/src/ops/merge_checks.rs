//! The integration checks of a batch (specs/git.md *A batch*, step 4), run in an
//! integration worktree of its own: `scripts/integration-test.sh` as it is at the batch's
//! base (a task cannot change the test that judges it unless its `allow_protected` covers
//! the script — then the reviewer saw the change and the batch's version runs), then every
//! `config.checks` entry with `on_merge: true`. All output goes to one log,
//! `.liza/integration-test-<first task>[-and-<n>-more]-<timestamp>.log`; the first failure
//! stops the run.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::OpsError;
use super::command::{self, Bounded};
use crate::blackboard::model::{Check, SandboxConfig};
use crate::blackboard::{StoreError, TaskId, Timestamp};
use crate::failpoint;
use crate::git::Repo;
use crate::lifecycle::text_rules::any_match;
use crate::sandbox::Jail;

/// The project's integration test script, relative to the root.
pub(super) const INTEGRATION_SCRIPT: &str = "scripts/integration-test.sh";
/// How long the integration script may run.
pub(super) const SCRIPT_TIMEOUT: Duration = Duration::from_secs(1800);
/// How long a `config.checks` entry without its own `timeout` may run.
pub(super) const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(600);

/// The checks of one batch (specs/git.md *A batch*, step 4), in integration worktree
/// `slot`, with one log.
pub(super) struct MergeChecks<'a> {
    pub root: &'a Path,
    /// The batch's tasks, in order.
    pub tasks: &'a [TaskId],
    /// Whether a task of the batch may change the integration script (its
    /// `allow_protected` covers it): then the batch's version runs.
    pub script_allowed: bool,
    pub checks: &'a [Check],
    pub sandbox: &'a SandboxConfig,
    pub slot: usize,
    log: Option<(File, String)>,
}

/// How a candidate fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    Passed,
    /// The first check that failed, and how.
    Failed {
        reason: String,
    },
    /// Stopped before the end: a batch under it failed.
    Stopped,
}

impl<'a> MergeChecks<'a> {
    pub(super) fn new(
        root: &'a Path,
        tasks: &'a [TaskId],
        allow_protected: &[&[String]],
        checks: &'a [Check],
        sandbox: &'a SandboxConfig,
        slot: usize,
    ) -> MergeChecks<'a> {
        MergeChecks {
            root,
            tasks,
            script_allowed: allow_protected
                .iter()
                .any(|globs| any_match(globs, INTEGRATION_SCRIPT)),
            checks,
            sandbox,
            slot,
            log: None,
        }
    }

    /// The log written so far, relative to the project root.
    pub(super) fn log_path(&self) -> Option<&str> {
        self.log.as_ref().map(|(_, p)| p.as_str())
    }

    /// Checks out `candidate` in the batch's integration worktree and runs the checks
    /// there. `record` is told the process group of the check running (`None` when it
    /// ended); `stop` set by another thread ends the run before its next check.
    pub(super) fn run(
        &mut self,
        repo: &Repo,
        tip: &str,
        candidate: &str,
        record: &(dyn Fn(Option<i32>) + Sync),
        stop: &AtomicBool,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<Verdict, OpsError> {
        let mut steps: Vec<(String, Vec<String>, Duration)> = Vec::new();
        let script_source = if self.script_allowed { candidate } else { tip };
        let script = repo.file_at(script_source, INTEGRATION_SCRIPT)?;
        for check in self.checks.iter().filter(|c| c.on_merge == Some(true)) {
            if let Some(argv) = command::argv(&check.run) {
                let timeout = check
                    .timeout
                    .and_then(|t| u64::try_from(t).ok())
                    .map_or(DEFAULT_CHECK_TIMEOUT, Duration::from_secs);
                steps.push((check.name.clone(), argv, timeout));
            }
        }
        if script.is_none() && steps.is_empty() {
            return Ok(Verdict::Passed);
        }
        progress(&format!(
            "checking out {} for the integration checks",
            short(candidate)
        ));
        let dir = repo.checkout_integration_slot(self.root, self.slot, candidate)?;
        if let Some(script) = &script {
            let path = install_script(&dir, script)?;
            let argv = if script.starts_with(b"#!") {
                vec![path.display().to_string()]
            } else {
                vec!["sh".into(), path.display().to_string()]
            };
            let name = format!("{INTEGRATION_SCRIPT} (as at {})", short(script_source));
            steps.insert(0, (name, argv, SCRIPT_TIMEOUT));
        }
        self.open_log()?;
        let jail = Jail::for_checks(self.root, &dir, self.sandbox);
        let names: Vec<String> = self.tasks.iter().map(ToString::to_string).collect();
        let env = [
            ("LIZA_TASK", names.first().cloned().unwrap_or_default()),
            ("LIZA_TASKS", names.join(" ")),
            ("LIZA_CANDIDATE", candidate.to_owned()),
            ("LIZA_INTEGRATION_TIP", tip.to_owned()),
        ];
        for (name, argv, timeout) in steps {
            if stop.load(Ordering::SeqCst) {
                return Ok(Verdict::Stopped);
            }
            progress(&format!("running {name}"));
            self.write_log(&format!(
                "==> {name}: candidate {candidate} ({}) onto {tip}\n",
                names.join(", ")
            ))?;
            let (file, _) = self.log.as_ref().expect("the log was opened above");
            let run = Bounded {
                dir: &dir,
                jail: &jail,
                timeout,
                output: Some(file),
                env: &env,
            };
            let started = Instant::now();
            let exit = run.run(&argv, |pgid| record(Some(pgid)));
            record(None);
            failpoint::hit("merge-checking");
            if stop.load(Ordering::SeqCst) {
                self.write_log(&format!(
                    "==> {name} stopped: a batch under this one failed\n\n"
                ))?;
                return Ok(Verdict::Stopped);
            }
            self.write_log(&format!(
                "==> {name} {} after {:.1} s\n\n",
                exit.describe(),
                started.elapsed().as_secs_f64()
            ))?;
            if !exit.success() {
                return Ok(Verdict::Failed {
                    reason: format!("{name} {}", exit.describe()),
                });
            }
        }
        Ok(Verdict::Passed)
    }

    fn open_log(&mut self) -> Result<(), OpsError> {
        if self.log.is_some() {
            return Ok(());
        }
        let stamp = Timestamp::now().to_string().replace(['-', ':'], "");
        let dir = self.root.join(".liza");
        let first = self
            .tasks
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        let who = match self.tasks.len() {
            0 | 1 => first,
            n => format!("{first}-and-{}-more", n - 1),
        };
        let mut n = 1;
        loop {
            let suffix = if n == 1 {
                String::new()
            } else {
                format!("-{n}")
            };
            let name = format!(".liza/integration-test-{who}-{stamp}{suffix}.log");
            let path = self.root.join(&name);
            match OpenOptions::new().append(true).create_new(true).open(&path) {
                Ok(file) => {
                    self.log = Some((file, name));
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(source) => {
                    return Err(OpsError::Store(StoreError::Io {
                        action: "create the check log in",
                        path: dir.display().to_string(),
                        source,
                    }));
                }
            }
        }
    }

    fn write_log(&mut self, text: &str) -> Result<(), OpsError> {
        let (file, name) = self.log.as_mut().expect("the log is open");
        file.write_all(text.as_bytes()).map_err(|source| {
            OpsError::Store(StoreError::Io {
                action: "write",
                path: name.clone(),
                source,
            })
        })
    }
}

/// Writes the script that judges the candidate over the candidate's own copy. The
/// candidate's tree is an agent's: a `scripts` link or a script that is a link is
/// replaced, never written through (it could lead anywhere on this machine).
fn install_script(dir: &Path, script: &[u8]) -> Result<PathBuf, OpsError> {
    let path = dir.join(INTEGRATION_SCRIPT);
    let io = |source| {
        OpsError::Store(StoreError::Io {
            action: "write",
            path: path.display().to_string(),
            source,
        })
    };
    if let Some(parent) = path.parent() {
        if fs::symlink_metadata(parent).is_ok_and(|m| !m.is_dir()) {
            fs::remove_file(parent).map_err(io)?;
        }
        fs::create_dir_all(parent).map_err(io)?;
    }
    if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
        fs::remove_file(&path).map_err(io)?;
    }
    fs::write(&path, script).map_err(io)?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).map_err(io)?;
    Ok(path)
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// One check's result: whether it passed, how it exited, and its whole output.
#[derive(Clone, Debug)]
pub struct CheckRun {
    /// The check's name (`config.checks`).
    pub name: String,
    /// Whether it exited with success.
    pub passed: bool,
    /// How it ended, for a person: `passed`, `exited with status 1`, `timed out after
    /// 30 s`, …
    pub exit: String,
    /// Its stdout and stderr together.
    pub output: String,
}

/// Runs one check in `dir` with its timeout; `None` when it has no command. Output goes
/// to a temporary file outside `dir`, so the worktree is left as it was.
pub fn run_check(check: &Check, dir: &Path, jail: &Jail) -> Option<CheckRun> {
    let argv = command::argv(&check.run)?;
    let timeout = check
        .timeout
        .and_then(|t| u64::try_from(t).ok())
        .map_or(DEFAULT_CHECK_TIMEOUT, Duration::from_secs);
    let Ok(mut output) = tempfile::tempfile() else {
        return Some(CheckRun {
            name: check.name.clone(),
            passed: false,
            exit: "not run (no temporary file)".into(),
            output: String::new(),
        });
    };
    let exit = Bounded {
        dir,
        jail,
        timeout,
        output: Some(&output),
        env: &[],
    }
    .run(&argv, |_| {});
    let mut text = String::new();
    use std::io::{Read, Seek};
    let _ = output
        .rewind()
        .and_then(|_| output.read_to_string(&mut text));
    Some(CheckRun {
        name: check.name.clone(),
        passed: exit.success(),
        exit: if exit.success() {
            "passed".to_owned()
        } else {
            exit.describe()
        },
        output: text,
    })
}

/// Runs `checks` (the `on_review` ones) in `dir` and reports each result with the tail of
/// its output, for the review prompt.
pub fn run_review_checks(checks: &[Check], dir: &Path, jail: &Jail) -> String {
    let mut report = Vec::new();
    for run in checks.iter().filter_map(|c| run_check(c, dir, jail)) {
        let tail: Vec<&str> = run.output.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        report.push(format!(
            "- {}: {}\n{}",
            run.name,
            run.exit,
            tail.iter()
                .map(|l| format!("    {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    report.join("\n")
}
