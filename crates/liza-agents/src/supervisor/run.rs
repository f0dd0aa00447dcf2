//! Running the agent once (specs/supervisor.md *Running the agent*, *Exit codes*): spawn, heartbeat
//! with its process group, watch for progress (output, worktree HEAD and status, state
//! changes) and the execution timeout, stop it on ABORT or a signal; then the structured
//! run report (codex) and the role-boundary snapshot compared before and after the run.

use crate::blackboard::control::Control;
use crate::lifecycle::RuleId;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::SupervisorError;
use super::policy::run_report;
use super::policy::watchdog::{self, Finished, Limits, RunWatch, Seen};
use super::ports::Spawn;
use super::session::Session;
use crate::backend::usage::Transcript;
use crate::backend::{ReportFiles, RunInput};
use crate::blackboard::log::LogEntry;
use crate::blackboard::log_tally;
use crate::blackboard::model::{CommitId, ValidationMode};
use crate::blackboard::node::Node;
use crate::blackboard::{State, TaskId};
use crate::git::{Repo, dirty_files, head_of};
use crate::off_runtime::off_runtime;
use crate::ops::{self, alarms::Level};

pub(super) use super::policy::RunEnd;

/// What the human's checkout and the integration ref looked like (role boundaries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Boundaries {
    main_head: Option<CommitId>,
    main_branch: Option<String>,
    main_index: Option<blake3::Hash>,
    integration: Option<CommitId>,
}

impl Boundaries {
    pub(super) fn read(root: &Path, integration_branch: &str) -> Boundaries {
        let repo = Repo::open(root).ok();
        let integration = repo.and_then(|r| r.branch_tip(integration_branch).ok().flatten());
        Boundaries {
            main_head: head_of(root).ok(),
            main_branch: std::fs::read_to_string(root.join(".git/HEAD")).ok(),
            main_index: std::fs::read(root.join(".git/index"))
                .ok()
                .map(|b| blake3::hash(&b)),
            integration,
        }
    }

    /// What changed, as phrases for the anomaly and the alarm. `state`, read after
    /// `after`, tells liza's own merges (a reviewer's supervisor merging meanwhile) from
    /// an agent moving the integration branch.
    pub(super) fn changes(&self, after: &Boundaries, state: &State) -> Vec<String> {
        let mut out = Vec::new();
        if self.main_head != after.main_head || self.main_branch != after.main_branch {
            out.push("the main checkout's HEAD or branch changed".to_owned());
        }
        if self.main_index != after.main_index {
            out.push("the main checkout's index changed".to_owned());
        }
        if self.integration != after.integration
            && !after
                .integration
                .as_deref()
                .is_some_and(|tip| merged_by_liza(state, tip))
        {
            out.push("the integration branch moved".to_owned());
        }
        out
    }
}

/// Whether `tip` is a merge liza made or is making: a task's recorded merge commit, or
/// the candidate of a merge in progress (recorded before it is published).
fn merged_by_liza(state: &State, tip: &str) -> bool {
    state.tasks.iter().any(|t| {
        t.merge_commit.as_ref().is_some_and(|m| m.as_str() == tip)
            || t.merge_intent
                .as_ref()
                .is_some_and(|i| i.candidate.as_str() == tip)
    })
}

/// A worktree's HEAD and uncommitted files.
pub(super) fn worktree_state(dir: &Path) -> (Option<CommitId>, Vec<String>) {
    (head_of(dir).ok(), dirty_files(dir).unwrap_or_default())
}

impl Session {
    /// One agent turn with everything around it: the prompt saved as
    /// `.liza/agent-prompts/<agent>-<what>-<ts>.md`, the run, and the role boundaries
    /// compared before and after; returns how it ended and the state after it.
    pub(super) async fn run_turn(
        &mut self,
        task: Option<&TaskId>,
        workdir: &Path,
        text: &str,
        what: &str,
        state: &State,
    ) -> Result<(RunEnd, State), SupervisorError> {
        let (liza_dir, agent, saved_as, prompt) = (
            self.project.store.paths().dir.clone(),
            self.agent.clone(),
            what.to_owned(),
            text.to_owned(),
        );
        let file = off_runtime(move || super::prompt::save(&liza_dir, &agent, &saved_as, &prompt))
            .await
            .map_err(|e| {
                SupervisorError::Ops(crate::ops::OpsError::refused(
                    RuleId::FileWrite,
                    format!("cannot save the prompt: {e}"),
                    "check that .liza/ is writable",
                ))
            })?;
        let dir = self.run_dir(what, state);
        let files = RunFiles {
            report: dir.as_deref().and_then(|d| self.report_files(d, state)),
            dir,
        };
        let bounds = self.boundaries(state).await;
        let mut end = self
            .run_agent(task, workdir, text, &file, &files, state)
            .await?;
        if let (Some(files), RunEnd::Exited(Some(0))) = (&files.report, &end) {
            let refused = self.take_report(task, &files.output, state).await;
            end = watchdog::with_report(end, refused.as_ref());
        }
        let after = self.snapshot().await?;
        self.log_run_end(task, &end, &after).await;
        self.check_boundaries(&bounds, &after, task).await;
        Ok((end, after))
    }

    /// Logs how the run ended (`agent_run_ended`: role, exit class, the revision seen),
    /// for the metrics and the watcher's crash-loop and usage-limit rules.
    async fn log_run_end(&mut self, task: Option<&TaskId>, end: &RunEnd, state: &State) {
        let now = crate::blackboard::Timestamp::now();
        let class = end.exit_class(self.backend.reports_soft_and_hard_failures());
        let mut entry = LogEntry::new(now, self.agent.as_str(), log_tally::RUN_ENDED);
        entry.task = task.map(ToString::to_string);
        entry.detail = Some(format!("{end:?}"));
        entry
            .extra
            .insert("role", Node::str(self.role().yaml_name()));
        entry.extra.insert("exit_class", Node::str(class));
        entry
            .extra
            .insert("sandbox", Node::str(self.confinement.state_name()));
        entry.extra.insert(
            "seen_revision",
            Node::new(crate::blackboard::node::Value::Int(state.revision() as i64)),
        );
        self.last_run_end = Some(now);
        self.quiet_since = self.clock.now().at;
        self.append_log(entry).await;
        if let RunEnd::UsageLimited(limit) = end {
            self.record_quota_hit(limit).await;
        }
        self.record_in_ledger(task, class, state).await;
    }

    /// Compares the role boundaries before and after a run.
    async fn check_boundaries(&self, before: &Boundaries, state: &State, task: Option<&TaskId>) {
        let after = self.boundaries(state).await;
        // Read after the refs, so a merge published meanwhile is already recorded; from
        // the journal head, because state.yaml may hold a person's stale, unreconciled
        // save that predates the merge.
        // A journal head caught mid-write does not read: then a snapshot, never the
        // state from before the run (that took liza's own merges for an agent's).
        let fresh = self
            .blocking(|project| {
                project
                    .store
                    .committed_state()
                    .or_else(|| project.store.snapshot().ok().map(|s| s.state))
            })
            .await
            .unwrap_or_else(|| state.clone());
        let changes = before.changes(&after, &fresh);
        if changes.is_empty() {
            return;
        }
        let message = format!(
            "{} broke a role boundary: {}",
            self.agent,
            changes.join("; ")
        );
        let key = format!("boundary:{}:{}", self.agent, state.revision.unwrap_or(0));
        self.role_boundary_violation(&message, task, &key).await;
    }

    /// Logs a role-boundary violation, then alarms (so whoever sees the alarm finds the
    /// log entry).
    pub(super) async fn role_boundary_violation(
        &self,
        message: &str,
        task: Option<&TaskId>,
        key: &str,
    ) {
        let (detail, id) = (message.to_owned(), task.cloned());
        let logged = self
            .write(move |project, actor| {
                ops::log_add(
                    project,
                    actor,
                    "role_boundary_violation",
                    &detail,
                    id.as_ref(),
                )
            })
            .await;
        if let Err(e) = logged {
            tracing::warn!(error = %e, "could not log the role-boundary violation");
        }
        self.alarm(Level::Error, "ROLE_BOUNDARY", message, key)
            .await;
    }

    /// Whether the run is asked for a structured report (`config.codex_report` and a
    /// backend that writes one).
    fn wants_report(&self, state: &State) -> bool {
        state.config.codex_report == Some(true) && self.backend.reports()
    }

    /// The run's own directory, `.liza/agent-outputs/<agent>-<what>-<ts>/`, writable in
    /// the sandbox: made for a run asked for a structured report, or of a backend that
    /// leaves its usage there (vibe, the built-in agent). `None`: not needed, or it
    /// could not be made (the run goes on without it, and reports no usage).
    fn run_dir(&self, what: &str, state: &State) -> Option<PathBuf> {
        let needed = self.wants_report(state)
            || self
                .backend
                .usage_args
                .iter()
                .any(|a| a.contains("{run_dir}"));
        if !needed || self.options.interactive {
            return None;
        }
        let stamp = crate::blackboard::Timestamp::now()
            .to_string()
            .replace(['-', ':'], "");
        let outputs = self.project.store.paths().dir.join("agent-outputs");
        for n in 1..1000 {
            let name = match n {
                1 => format!("{}-{what}-{stamp}", self.agent),
                _ => format!("{}-{what}-{stamp}.{n}", self.agent),
            };
            let dir = outputs.join(name);
            match std::fs::create_dir_all(&outputs).and_then(|()| std::fs::create_dir(&dir)) {
                Ok(()) => return Some(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    tracing::warn!(error = %e, dir = %dir.display(), "cannot make the run's directory; running without it");
                    return None;
                }
            }
        }
        None
    }

    /// With `config.codex_report` and a backend that reports: the schema written to
    /// `report-schema.json` in the run's directory, and where the report goes
    /// (`report.json` beside it).
    fn report_files(&self, dir: &Path, state: &State) -> Option<ReportPaths> {
        if !self.wants_report(state) {
            return None;
        }
        let schema = dir.join("report-schema.json");
        let written = std::fs::write(
            &schema,
            serde_json::to_string_pretty(&run_report::schema()).unwrap_or_default(),
        );
        if let Err(e) = written {
            tracing::warn!(error = %e, "cannot write the run report schema; running without it");
            return None;
        }
        Some(ReportPaths {
            schema,
            output: dir.join("report.json"),
        })
    }

    /// Reads the run report after an exit-0 run and records it in the task's history;
    /// returns why validation refused it (strict mode), which fails the run.
    async fn take_report(
        &mut self,
        task: Option<&TaskId>,
        output: &Path,
        state: &State,
    ) -> Option<run_report::ReportProblem> {
        let mode = state
            .config
            .builtin
            .as_ref()
            .and_then(|b| b.validation_mode)
            .unwrap_or(ValidationMode::Strict);
        let text = read_bounded(output, run_report::MAX_REPORT_BYTES + 1);
        match run_report::read(text.as_deref(), mode) {
            Err(problem) => {
                let detail = format!("{}: {problem}", self.agent);
                self.console.info(&detail);
                let id = task.cloned();
                let line: String = detail.chars().take(4000).collect();
                let _ = self
                    .write(move |project, actor| {
                        ops::log_add(project, actor, "run_report_invalid", &line, id.as_ref())
                    })
                    .await;
                Some(problem)
            }
            Ok(None) => {
                self.console.info(&format!(
                    "{}: no usable run report ({} validation); nothing recorded",
                    self.agent,
                    mode.as_str()
                ));
                None
            }
            Ok(Some(report)) => {
                let (task, agent) = (task.cloned(), self.agent.clone());
                let node: Node = serde_json::from_value(serde_json::Value::Object(report.fields))
                    .unwrap_or_else(|_| Node::new(crate::blackboard::node::Value::Null));
                let summary = crate::lifecycle::run_reports::summary(&node);
                let errors = report.errors;
                // A task's report goes into its history; the planner's (no task) into the log.
                let recorded = self
                    .write(move |project, actor| match &task {
                        Some(task) => {
                            ops::record_run_report(project, actor, task, &agent, node, &errors)
                                .map(drop)
                        }
                        None => ops::log_add(
                            project,
                            actor,
                            "run_report",
                            &format!("{agent}: {summary}"),
                            None,
                        )
                        .map(drop),
                    })
                    .await;
                if let Err(e) = recorded {
                    tracing::warn!(error = %e, "could not record the run report");
                }
                None
            }
        }
    }

    /// Runs the agent once for `task` (or the planner's turn) in `workdir`.
    pub(super) async fn run_agent(
        &mut self,
        task: Option<&TaskId>,
        workdir: &Path,
        prompt: &str,
        prompt_file: &Path,
        files: &RunFiles,
        state: &State,
    ) -> Result<RunEnd, SupervisorError> {
        let (run_dir, report) = (files.dir.as_deref(), files.report.as_ref());
        let git_dir = self.project.root.join(".git");
        let worktree_git_dir = {
            let workdir = workdir.to_path_buf();
            off_runtime(move || crate::git::own_git_dir(&workdir)).await
        };
        let liza_dir = self.project.store.paths().dir.clone();
        let input = RunInput {
            role: self.role().id_prefix(),
            prompt,
            prompt_file,
            workdir,
            task: task.map(TaskId::as_str),
            git_dir: &git_dir,
            worktree_git_dir: worktree_git_dir.as_deref(),
            liza_dir: &liza_dir,
            report: report.map(|r| ReportFiles {
                schema: &r.schema,
                output: &r.output,
            }),
            run_dir,
        };
        if let Err(why) = self.update_confinement(state) {
            return Ok(RunEnd::NotStarted(why.to_string()));
        }
        let sandboxed = self.sandbox_for_agent().is_some();
        let invocation =
            self.backend
                .invocation_in(&input, self.options.interactive, sandboxed, &|var| {
                    std::env::var(var).ok()
                });
        let env = self.agent_env(task, workdir);
        let report_dir = run_dir;
        let sandbox = match self
            .confine_run(
                task,
                workdir,
                &invocation.argv,
                &env,
                prompt_file,
                report_dir,
                state,
            )
            .await
        {
            Ok(sandbox) => sandbox,
            Err(why) => return Ok(RunEnd::NotStarted(why.to_string())),
        };
        if self.options.interactive {
            // Recorded too (no usage: a person's terminal is not read).
            self.run_started = Some((
                crate::blackboard::Timestamp::now(),
                std::time::Instant::now(),
            ));
            self.console
                .info(&format!("prompt saved to {}", prompt_file.display()));
            let argv = match &sandbox {
                Some(run) => run.argv_interactive(),
                None => invocation.argv.clone(),
            };
            let end = self.run_interactive(&argv, workdir, &env).await;
            if let Some(run) = sandbox {
                self.finish_sandbox(run, task).await;
            }
            return Ok(end);
        }
        // Spawned on the runtime's own thread, where the output readers it starts run
        // (fork/exec is brief; their last lines decide how the run ended).
        let log = {
            let (liza_dir, agent, task, header) = (
                liza_dir.clone(),
                self.agent.clone(),
                task.cloned(),
                self.run_header(&sandbox),
            );
            off_runtime(move || agent_log(&liza_dir, agent.as_str(), task.as_ref(), &header)).await
        };
        let (invocation, info) = match &sandbox {
            Some(run) => match crate::sandbox::info_pipe::InfoPipe::new() {
                Ok(info) => (
                    crate::backend::Invocation {
                        argv: run.argv(&info),
                        ..invocation
                    },
                    Some(info),
                ),
                Err(e) => return Ok(RunEnd::NotStarted(format!("cannot start the sandbox: {e}"))),
            },
            None => (invocation, None),
        };
        // Read before the agent starts: while it runs, only a process liza can stop reads
        // its worktree.
        let mut last_seen = self.progress_marks(workdir, sandbox.as_ref(), false).await;
        let spawned = self.spawner.spawn(Spawn {
            invocation: &invocation,
            cwd: workdir,
            env: &env,
            log,
            console: self.console.clone(),
            info,
            transcript: self
                .backend
                .usage
                .map(|format| Transcript::new(format, self.backend.model.clone())),
        });
        let mut process = match spawned {
            Ok(p) => p,
            Err(e) => {
                if let Some(run) = sandbox {
                    self.finish_sandbox(run, task).await;
                }
                return Ok(RunEnd::NotStarted(e.to_string()));
            }
        };
        self.run_started = Some((
            crate::blackboard::Timestamp::now(),
            std::time::Instant::now(),
        ));
        // The execution limit counts from the spawn.
        let limits = Limits::of(&state.config, self.role());
        let mut watch = RunWatch::new(limits, self.clock.now().at);
        self.pulse.set_pgid(i64::from(process.pgid()));
        self.heartbeat_now().await;
        let mut look = tokio::time::interval(limits.look_every());
        let stop = self.stop.clone();
        let grace = Duration::from_secs(10);
        let spec = self.backend.spec;
        // The output's end is read every half second: a CLI waiting for a login is
        // stopped within a second.
        let mut read_output = tokio::time::interval(Duration::from_millis(500));
        let end = loop {
            let seen = tokio::select! {
                status = process.wait() => {
                    break match status {
                        Ok(code) => RunEnd::Exited(code),
                        Err(e) => RunEnd::NotStarted(e.to_string()),
                    };
                }
                _ = read_output.tick() => {
                    let tail = process.output_tail();
                    let now = self.clock.now();
                    Seen::Output {
                        login_wait: crate::backend::auth::login_wait(spec, &tail),
                        usage_limit: crate::backend::signals::usage_limit(spec, &tail, now.local()),
                    }
                }
                _ = look.tick() => {
                    let abort = self
                        .blocking(|project| {
                            project.store.control_flags().is_ok_and(|f| f.is_raised(Control::Abort))
                        })
                        .await;
                    // ABORT stops the run at once: the worktree is not read first (a live
                    // read may take up to LIVE_READ_LIMIT).
                    let changed = !abort && {
                        let mut now_seen =
                            self.progress_marks(workdir, sandbox.as_ref(), true).await;
                        if now_seen.0.is_none() {
                            // Unread is no news.
                            now_seen.0.clone_from(&last_seen.0);
                        }
                        let changed = now_seen != last_seen;
                        last_seen = now_seen;
                        changed
                    };
                    let now = self.clock.now().at;
                    Seen::Look {
                        abort,
                        changed,
                        last_output: process.last_output().map(|out| now.before(out.elapsed())),
                    }
                }
                _ = stop.asked() => {
                    process.stop(grace).await;
                    break RunEnd::Signalled;
                }
            };
            if let Some(end) = watch.saw(seen, self.clock.now().at) {
                process.stop(grace).await;
                break end;
            }
        };
        self.pulse.set_pgid(0);
        self.last_output = process.output_tail();
        let usage_report = run_dir
            .zip(self.backend.usage.and_then(|f| f.report_file()))
            .and_then(|(dir, file)| {
                crate::untrusted::read_regular(&dir.join(file), MAX_USAGE_FILE)
            });
        self.last_usage = process.usage(usage_report.as_deref());
        let private_tip = match &sandbox {
            Some(run) => run.private_tip().await,
            None => None,
        };
        if let Some(run) = sandbox {
            // The run's commits reach the task branch before anything reads it.
            self.finish_sandbox(run, task).await;
        }
        let mut now_seen = self.progress_marks(workdir, None, false).await;
        now_seen.2.clone_from(&private_tip);
        Ok(watchdog::ended(Finished {
            end,
            changed_nothing: !watch.changed_anything() && now_seen == last_seen,
            auth_failure: crate::backend::auth::auth_failure(spec, &self.last_output),
            usage_limit: self.usage_limit(),
        }))
    }

    /// What shows a run's progress: the worktree's HEAD and status, and state.yaml's
    /// modification time (read off the runtime's thread: `git status` of a large
    /// worktree takes a while).
    /// A sandboxed coder's commits count before they reach the task branch: its private
    /// branch's tip is read too. While the agent runs (`live`), the worktree is read by
    /// a process of its own ([`live_worktree_state`]).
    async fn progress_marks(
        &self,
        workdir: &Path,
        sandbox: Option<&super::sandboxed::SandboxedRun>,
        live: bool,
    ) -> ProgressMarks {
        let state = self.project.store.paths().dir.join("state.yaml");
        let dir = workdir.to_path_buf();
        // The blackboard's time and the private branch's tip are read off the runtime's
        // thread; a live run's worktree by a child process it waits for.
        let written = off_runtime(move || state.metadata().and_then(|m| m.modified()).ok()).await;
        let private = match sandbox {
            Some(run) => run.private_tip().await,
            None => None,
        };
        let worktree = if live {
            live_worktree_state(&self.liza, &dir).await
        } else {
            Some(self.blocking(move |_| worktree_state(&dir)).await)
        };
        (worktree, written, private)
    }

    /// The role boundaries as they are now, read off the runtime's thread.
    async fn boundaries(&self, state: &State) -> Boundaries {
        let (root, integration) = (
            self.project.root.clone(),
            state.config.integration_branch().to_owned(),
        );
        self.blocking(move |_| Boundaries::read(&root, &integration))
            .await
    }

    async fn run_interactive(
        &self,
        argv: &[String],
        workdir: &Path,
        env: &[(String, String)],
    ) -> RunEnd {
        let (argv, workdir, env) = (argv.to_vec(), workdir.to_path_buf(), env.to_vec());
        let status = off_runtime(move || {
            let (program, args) = argv.split_first()?;
            std::process::Command::new(program)
                .args(args)
                .current_dir(workdir)
                .envs(env)
                .status()
                .ok()
        })
        .await;
        match status {
            Some(s) => RunEnd::Exited(s.code()),
            None => RunEnd::NotStarted("the interactive agent could not be started".into()),
        }
    }
}

/// The worktree (`None`: a live run's worktree that could not be read in time), the
/// blackboard's modification time, a sandboxed coder's private branch tip.
type ProgressMarks = (
    Option<(Option<CommitId>, Vec<String>)>,
    Option<std::time::SystemTime>,
    Option<String>,
);

/// How long reading a live run's worktree may take before the reading process is
/// stopped (a `git status` of a large worktree takes seconds; a FIFO, for ever).
const LIVE_READ_LIMIT: Duration = Duration::from_secs(30);

/// A live run's worktree state, read by `liza worktree-state` in a child process that is
/// killed after [`LIVE_READ_LIMIT`]: the run may put a FIFO where git reads, and a read
/// of liza's own would wait on it for ever. `None`: not read in time.
async fn live_worktree_state(liza: &Path, dir: &Path) -> Option<(Option<CommitId>, Vec<String>)> {
    let mut reader = tokio::process::Command::new(liza);
    reader
        .arg("worktree-state")
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let read = tokio::time::timeout(LIVE_READ_LIMIT, reader.output()).await;
    let Ok(Ok(out)) = read else {
        tracing::warn!(worktree = %dir.display(), "the worktree could not be read in time");
        return None;
    };
    let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let head = parsed["head"].as_str().and_then(CommitId::parse);
    let dirty = parsed["dirty"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Some((head, dirty))
}

/// The largest usage file read from a run's directory (vibe's export holds its whole
/// configuration).
const MAX_USAGE_FILE: u64 = 16 * 1024 * 1024;

/// A run's own directory and what is in it.
pub(super) struct RunFiles {
    /// `.liza/agent-outputs/<agent>-<what>-<ts>/`, when the run needs one.
    dir: Option<PathBuf>,
    /// The structured report asked for, in it.
    report: Option<ReportPaths>,
}

/// Where a run's report schema and report are.
pub(super) struct ReportPaths {
    schema: PathBuf,
    output: PathBuf,
}

/// At most `limit` bytes of `path` as text (`None`: no such regular file).
/// The report is the agent's to write: a link there (to a credentials file of the
/// person's) is not followed, a FIFO not waited on.
fn read_bounded(path: &Path, limit: usize) -> Option<String> {
    let bytes = crate::untrusted::read_regular(path, limit as u64)?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A new `.liza/agent-logs/<agent>-<task>-<ts>.log` (`<ts>.<n>` for the n-th run of the
/// same second: an earlier run's output is never overwritten), opening with `header`.
fn agent_log(
    liza: &Path,
    agent: &str,
    task: Option<&TaskId>,
    header: &str,
) -> Option<std::fs::File> {
    let dir = liza.join("agent-logs");
    std::fs::create_dir_all(&dir).ok()?;
    let stamp = crate::blackboard::Timestamp::now()
        .to_string()
        .replace(['-', ':'], "");
    let what = task.map_or("turn", TaskId::as_str);
    for n in 1..1000 {
        let name = match n {
            1 => format!("{agent}-{what}-{stamp}.log"),
            _ => format!("{agent}-{what}-{stamp}.{n}.log"),
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(name))
        {
            Ok(mut file) => {
                use std::io::Write;
                let _ = writeln!(file, "{header}");
                return Some(file);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}
