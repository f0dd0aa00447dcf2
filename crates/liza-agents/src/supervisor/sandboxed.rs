//! An agent run in its sandbox (specs/sandbox.md): before the run, liza's scratch
//! directories, a coder's private git store, the channel its `liza` commands reach this
//! supervisor through, and the mounts of what the run may touch; after it, the run's git
//! work brought in (checked) and anything it did to its git metadata that it may not,
//! raised as a role-boundary violation.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::SupervisorError;
use super::channel_server::{ChannelContext, ChannelServer};
use super::session::Session;
use crate::blackboard::model::State;
use crate::blackboard::store::Document;
use crate::blackboard::{Role, TaskId};
use crate::git::Repo;
use crate::lifecycle::{RuleId, spec_file};
use crate::ops::OpsError;
use crate::sandbox::git_view::PrivateStore;
use crate::sandbox::info_pipe::InfoPipe;
use crate::sandbox::mechanism::Bwrap;
use crate::sandbox::{self, Layout, Plan, Scratch, View};

/// What one sandboxed run needs, prepared before the agent starts.
pub(super) struct SandboxedRun {
    /// bubblewrap's whole command line, the agent's argv at its end.
    argv: Vec<String>,
    /// Serves the agent's `liza` commands until the run ends.
    _channel: ChannelServer,
    /// A coder's private git store.
    store: Option<Arc<Mutex<PrivateStore>>>,
    /// The network the run has, for its log line.
    pub network: &'static str,
    /// The CLI's configuration files that did not exist when the run started: one there
    /// after it was written by the run, for the person's next use of the CLI.
    absent_config: Vec<PathBuf>,
}

/// What the run is handed: the prompt, its report's directory, the CLI's settings file.
pub(super) struct Handed<'a> {
    pub prompt_file: &'a Path,
    pub report_dir: Option<&'a Path>,
}

impl SandboxedRun {
    /// The command line that starts the agent in its sandbox; `info` says where its
    /// processes are.
    pub(super) fn argv(&self, info: &InfoPipe) -> Vec<String> {
        let at = self
            .argv
            .iter()
            .position(|a| a == "--")
            .unwrap_or(self.argv.len());
        let mut argv = self.argv.clone();
        argv.splice(at..at, info.args());
        argv
    }

    /// The command line of an interactive run (no information pipe: it keeps the
    /// terminal and is stopped through bubblewrap).
    pub(super) fn argv_interactive(&self) -> Vec<String> {
        self.argv
            .iter()
            .filter(|a| *a != "--new-session")
            .cloned()
            .collect()
    }

    /// The private branch's tip, for progress (the real branch moves at a sync).
    pub(super) async fn private_tip(&self) -> Option<String> {
        let store = self.store.clone()?;
        crate::off_runtime::off_runtime(move || store.lock().ok().and_then(|s| s.private_tip()))
            .await
    }
}

/// Why a run may not start confined as the configuration asks.
#[derive(Debug, thiserror::Error)]
pub(super) enum CannotConfine {
    /// `config.sandbox.mode: required`, and no sandbox here.
    #[error("{0}; fix: {fix}", fix = .0.fix)]
    Required(sandbox::SandboxRequired),
    /// The sandbox could not be prepared.
    #[error("cannot prepare the sandbox: {0}")]
    Prepare(Box<SupervisorError>),
}

impl Session {
    /// How this run is confined (config.sandbox as it is now): the prepared sandbox, none
    /// (unconfined, said in the heartbeats and the run's log), or why the run cannot start
    /// (`required` and no sandbox here, or the sandbox could not be prepared).
    #[expect(clippy::too_many_arguments, reason = "one run's whole context")]
    pub(super) async fn confine_run(
        &mut self,
        task: Option<&TaskId>,
        workdir: &Path,
        argv: &[String],
        env: &[(String, String)],
        prompt_file: &Path,
        report_dir: Option<&Path>,
        state: &State,
    ) -> Result<Option<SandboxedRun>, CannotConfine> {
        let Some(bwrap) = self.sandbox_for_agent().cloned() else {
            return Ok(None);
        };
        let handed = Handed {
            prompt_file,
            report_dir,
        };
        let interactive = self.options.interactive;
        self.prepare_sandbox(&bwrap, task, workdir, argv, env, handed, state, interactive)
            .await
            .map(Some)
            .map_err(|e| CannotConfine::Prepare(Box::new(e)))
    }

    /// Decides how the next run is confined, from `config.sandbox` as it is now; `Err`:
    /// why no run may start (`required`, and no sandbox here).
    pub(super) fn update_confinement(&mut self, state: &State) -> Result<(), CannotConfine> {
        let confinement = sandbox::Confinement::for_process(&state.config.sandbox())
            .map_err(CannotConfine::Required)?;
        if confinement != self.confinement {
            self.console
                .info(&super::session::confinement_line(&self.agent, &confinement));
            self.pulse.set_sandbox(&confinement);
            self.confinement = confinement;
        }
        Ok(())
    }

    /// bubblewrap, when the agent process itself runs in a sandbox: not the built-in
    /// agent, which is liza — it runs no command of the model's choosing, writes only
    /// through its confined edits, and sandboxes every command it runs (its checks,
    /// `git apply`) itself.
    pub(super) fn sandbox_for_agent(&self) -> Option<&Bwrap> {
        if self.backend.kind() == crate::backend::BackendKind::Builtin {
            return None;
        }
        self.confinement.bwrap()
    }

    /// The first line of a run's log: whether it ran sandboxed.
    pub(super) fn run_header(&self, sandbox: &Option<SandboxedRun>) -> String {
        if self.backend.kind() == crate::backend::BackendKind::Builtin {
            return match &self.confinement {
                sandbox::Confinement::Sandboxed(bwrap) => format!(
                    "[liza: the built-in agent; the commands it runs are sandboxed by {}]",
                    bwrap.version
                ),
                other => format!(
                    "[liza: the built-in agent; NOT sandboxed: {}]",
                    other.note()
                ),
            };
        }
        match (sandbox, &self.confinement) {
            (Some(run), sandbox::Confinement::Sandboxed(bwrap)) => format!(
                "[liza: sandboxed by {} (network {})]",
                bwrap.version, run.network
            ),
            (_, other) => format!("[liza: NOT sandboxed: {}]", other.note()),
        }
    }

    /// Prepares the sandbox of a run of `argv` for `task` (the planner: none) in `workdir`.
    #[expect(clippy::too_many_arguments, reason = "one run's whole context")]
    pub(super) async fn prepare_sandbox(
        &self,
        bwrap: &Bwrap,
        task: Option<&TaskId>,
        workdir: &Path,
        argv: &[String],
        env: &[(String, String)],
        handed: Handed<'_>,
        state: &State,
        interactive: bool,
    ) -> Result<SandboxedRun, SupervisorError> {
        let liza_dir = self.project.store.paths().dir.clone();
        let scratch_dir = sandbox::agent_dir(&liza_dir, self.agent.as_str());
        let (root, agent, role) = (
            self.project.root.clone(),
            self.agent.to_string(),
            self.role(),
        );
        let (task_owned, workdir_owned) = (task.cloned(), workdir.to_path_buf());
        let specs = handed_specs(state, task);
        let scratch_at = scratch_dir.clone();
        let prepared = self
            .blocking(move |project| {
                let scratch_dir = scratch_at;
                let repo = Repo::open(&root).map_err(OpsError::from)?;
                let scratch = Scratch::prepare(&scratch_dir, &repo)
                    .map_err(|e| io_refusal(&scratch_dir, &e))?;
                let store = match (&task_owned, role) {
                    (Some(task), Role::Coder) => Some(
                        PrivateStore::prepare(
                            &repo,
                            &scratch_dir.join("git"),
                            task,
                            &workdir_owned,
                            &agent,
                        )
                        .map_err(OpsError::from)?,
                    ),
                    _ => None,
                };
                let handed_dir = scratch_dir.join("handed");
                let _ = std::fs::remove_dir_all(&handed_dir);
                let mut specs_shown = Vec::new();
                for (n, (path, text)) in specs_text(project, &root, &specs).into_iter().enumerate()
                {
                    std::fs::create_dir_all(&handed_dir)
                        .map_err(|e| io_refusal(&handed_dir, &e))?;
                    let copy = handed_dir.join(format!("spec-{n}"));
                    std::fs::write(&copy, text).map_err(|e| io_refusal(&copy, &e))?;
                    specs_shown.push((copy, path));
                }
                Ok::<_, OpsError>((scratch, store, specs_shown, repo.common_dir()))
            })
            .await?;
        let (scratch, store, specs_shown, common) = prepared;
        let store = store.map(|s| Arc::new(Mutex::new(s)));
        // The socket: in the agent's scratch directory (hidden with the project) when its
        // path fits a socket address, else in a private temporary directory hidden too.
        let socket = self.channel_socket(&scratch)?;
        let _ = std::fs::remove_file(&socket);
        let listener =
            tokio::net::UnixListener::bind(&socket).map_err(|e| io_refusal(&socket, &e))?;
        let lookup = |var: &str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == var)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var(var).ok())
        };
        let channel_env = self.channel_env(env);
        let before: Arc<dyn Fn() + Send + Sync> = match &store {
            Some(store) => {
                let (store, root) = (store.clone(), self.project.root.clone());
                Arc::new(move || {
                    if let (Ok(repo), Ok(mut store)) = (Repo::open(&root), store.lock()) {
                        let _ = store.sync(&repo);
                    }
                })
            }
            None => Arc::new(|| {}),
        };
        let channel = ChannelServer::start(
            listener,
            Arc::new(ChannelContext {
                exe: crate::program::liza_executable(),
                env: channel_env,
                workdir: workdir.to_path_buf(),
                before,
            }),
        );
        let config = state.config.sandbox();
        let home = lookup("HOME").map(PathBuf::from);
        let mounts = {
            let ask = MountsAsked {
                backend: self.backend.clone(),
                env: env.to_vec(),
                config: config.clone(),
                home: home.clone(),
                root: self.project.root.clone(),
                workdir: workdir.to_path_buf(),
                scratch_dir: scratch_dir.clone(),
                scratch_home: scratch.home.clone(),
                prompt_file: handed.prompt_file.to_path_buf(),
                report_dir: handed.report_dir.map(Path::to_path_buf),
                specs_shown,
                program: argv.first().cloned().unwrap_or_default(),
                reviewer: role == Role::CodeReviewer,
            };
            self.blocking(move |_| prepare_mounts(ask)).await?
        };
        if !mounts.made.is_empty() {
            let made: Vec<String> = mounts
                .made
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            self.console.info(&format!(
                "{}: made empty so that no sandboxed run can create them (specs/sandbox.md): {}",
                self.agent,
                made.join(", ")
            ));
        }
        let Mounts {
            read_only,
            writable,
            protected,
            absent_config,
            masks,
            program,
            git_dir,
            ..
        } = mounts;
        let env_path = lookup("PATH").unwrap_or_default();
        let paths = store
            .as_ref()
            .and_then(|s| s.lock().ok().map(|s| s.paths.clone()));
        let view = match role {
            Role::Planner => View::Checkout,
            _ => View::Worktree {
                dir: workdir,
                git_dir: git_dir.as_deref(),
                private: paths.as_ref(),
            },
        };
        let network = config.network();
        let hidden = socket.parent().map(Path::to_path_buf).into_iter().collect();
        let layout = Layout::build(&Plan {
            root: &self.project.root,
            common_git_dir: &common,
            home: home.as_deref(),
            env_path: std::ffi::OsStr::new(&env_path),
            rustup_home: sandbox::rustup_home(home.as_deref()),
            program: &program,
            view,
            scratch: &scratch,
            read_only,
            writable,
            protected,
            hidden,
            masks,
            channel: Some(&socket),
            network,
            interactive,
            chdir: workdir,
        });
        let mut full = vec![bwrap.path.display().to_string()];
        full.extend(layout.bwrap_args());
        full.push("--".into());
        full.extend(argv.iter().cloned());
        Ok(SandboxedRun {
            argv: full,
            _channel: channel,
            store,
            network: network.as_str(),
            absent_config,
        })
    }

    /// After a sandboxed run: the channel closed, the run's git work brought in, and what
    /// it did to its git metadata that it may not, raised as a role-boundary violation.
    pub(super) async fn finish_sandbox(&self, run: SandboxedRun, task: Option<&TaskId>) {
        let SandboxedRun {
            _channel,
            store,
            absent_config,
            ..
        } = run;
        drop(_channel);
        let moved = crate::off_runtime::off_runtime(move || {
            super::cli_config::move_aside_created(&absent_config)
        })
        .await;
        if !moved.is_empty() {
            let listed: Vec<String> = moved
                .iter()
                .map(|(from, to)| format!("{} (moved to {})", from.display(), to.display()))
                .collect();
            let message = format!(
                "{} broke a role boundary: it wrote its CLI's configuration, which would have run outside any sandbox the next time a person uses the CLI: {}",
                self.agent,
                listed.join(", ")
            );
            let key = format!("sandbox-config:{}:{}", self.agent, listed.join(","));
            self.role_boundary_violation(&message, task, &key).await;
        }
        let Some(store) = store else { return };
        let root = self.project.root.clone();
        let synced = self
            .blocking(move |_| {
                let repo = Repo::open(&root)?;
                let mut guard = store.lock().map_err(|_| crate::git::GitError::Io {
                    action: "lock",
                    path: root.clone(),
                    source: std::io::Error::other("the private store's lock is poisoned"),
                })?;
                let synced = guard.sync(&repo).map(|_| guard.take_violations());
                drop(guard);
                // The channel is gone, so this is the last holder: its objects are in.
                if let Ok(mutex) = Arc::try_unwrap(store)
                    && let Ok(store) = mutex.into_inner()
                {
                    store.finish();
                }
                synced
            })
            .await;
        match synced {
            Ok(violations) => {
                if !violations.is_empty() {
                    let message = format!(
                        "{} broke a role boundary: {}",
                        self.agent,
                        violations.join("; ")
                    );
                    let key = format!("sandbox-git:{}:{}", self.agent, self.generation);
                    self.role_boundary_violation(&message, task, &key).await;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not bring the sandboxed run's git work in");
                self.console.info(&format!(
                    "{}: could not bring the run's commits in from its sandbox: {e} (they stay in .liza/sandbox/{}/git)",
                    self.agent, self.agent
                ));
            }
        }
    }

    /// Where this supervisor's channel socket is.
    fn channel_socket(&self, scratch: &Scratch) -> Result<PathBuf, SupervisorError> {
        let socket = scratch.socket();
        // A Unix socket's address holds at most 107 bytes.
        if socket.as_os_str().len() < 100 {
            return Ok(socket);
        }
        let dir = match self.socket_dir.get() {
            Some(dir) => dir,
            None => {
                let made = tempfile::Builder::new()
                    .prefix("liza-")
                    .tempdir()
                    .map_err(|e| io_refusal(&std::env::temp_dir(), &e))?;
                let _ = self.socket_dir.set(made);
                self.socket_dir.get().expect("just set")
            }
        };
        Ok(dir.path().join("channel.sock"))
    }

    /// The environment of a command the agent sent: the supervisor's without secrets,
    /// with the agent's identity and the channel mode.
    fn channel_env(&self, agent_env: &[(String, String)]) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| !crate::backend::is_secret(k))
            .collect();
        for (key, value) in agent_env {
            if key.starts_with("LIZA_") || key == "PATH" {
                env.retain(|(k, _)| k != key);
                env.push((key.clone(), value.clone()));
            }
        }
        env.retain(|(k, _)| {
            k != crate::ops::CHANNEL_ROLE_VAR && k != crate::ops::CHANNEL_FILES_VAR
        });
        env.push((
            crate::ops::CHANNEL_ROLE_VAR.to_owned(),
            self.role().yaml_name().to_owned(),
        ));
        env
    }
}

/// The spec files a coder's or reviewer's prompt names (the task's, the goal's), with the
/// blob the task was finalized against.
fn handed_specs(state: &State, task: Option<&TaskId>) -> Vec<(String, Option<String>)> {
    let mut specs = Vec::new();
    if let Some(t) = task.and_then(|id| state.task(id))
        && let Some(spec) = &t.spec_ref
    {
        specs.push((spec_file(spec).to_owned(), t.spec_hash.clone()));
    }
    if let Some(goal) = &state.goal.spec_ref {
        let goal = spec_file(goal).to_owned();
        if !specs.iter().any(|(s, _)| *s == goal) {
            specs.push((goal, None));
        }
    }
    specs
}

/// Each spec's text and where the run sees it (its place in the project): the copy kept
/// at finalize, else the file in the checkout; only paths inside the repository.
fn specs_text(
    project: &crate::ops::Project,
    root: &Path,
    specs: &[(String, Option<String>)],
) -> Vec<(PathBuf, Vec<u8>)> {
    specs
        .iter()
        .filter_map(|(path, blob)| {
            let shown = root.join(path);
            let plain = Path::new(path)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !plain {
                return None;
            }
            let kept = blob
                .as_deref()
                .and_then(|b| project.store.document(&Document::SpecText { blob: b }).ok())
                .flatten();
            let text =
                kept.or_else(|| crate::confine::read_inside(root, path).map(String::into_bytes))?;
            Some((shown, text))
        })
        .collect()
}

/// What a sandboxed run's mounts are made from (owned: they are prepared off the
/// runtime's thread).
struct MountsAsked {
    backend: crate::backend::Backend,
    /// The agent's environment, over this process's.
    env: Vec<(String, String)>,
    config: crate::blackboard::model::SandboxConfig,
    home: Option<PathBuf>,
    root: PathBuf,
    workdir: PathBuf,
    scratch_dir: PathBuf,
    scratch_home: PathBuf,
    prompt_file: PathBuf,
    report_dir: Option<PathBuf>,
    /// The specs handed over: each copy and where the run sees it.
    specs_shown: Vec<(PathBuf, PathBuf)>,
    /// The agent's program, as its argv names it.
    program: String,
    reviewer: bool,
}

/// What a run may see and touch besides its worktree, made ready on disk.
struct Mounts {
    read_only: Vec<(PathBuf, PathBuf)>,
    writable: Vec<(PathBuf, PathBuf)>,
    /// The CLI's configuration, shown read-only.
    protected: Vec<PathBuf>,
    /// The CLI's configuration files that do not exist yet (see [`SandboxedRun`]).
    absent_config: Vec<PathBuf>,
    /// A reviewer's view of the project's CLI configuration, masked.
    masks: Vec<crate::sandbox::layout::Mount>,
    /// The CLI's configuration made empty for this run, for the console.
    made: Vec<PathBuf>,
    program: PathBuf,
    git_dir: Option<PathBuf>,
}

/// The mounts of a run: the paths config adds, the prompt and the specs handed over,
/// the CLI's settings file, its state directories (made) and what each agent has of its
/// own (a private directory, a copy of a file in its scratch `$HOME`), its configuration
/// read-only — made empty first where a run could create it — and, for a reviewer, the
/// project's masked; the report's directory. File work: called off the runtime.
fn prepare_mounts(ask: MountsAsked) -> Result<Mounts, SupervisorError> {
    let lookup = |var: &str| {
        ask.env
            .iter()
            .rev()
            .find(|(k, _)| k == var)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(var).ok())
    };
    let home = ask.home.as_deref();
    let (mut read_only, mut writable) = sandbox::extra_paths(&ask.config, home, &ask.root);
    read_only.push((ask.prompt_file.clone(), ask.prompt_file.clone()));
    read_only.extend(ask.specs_shown);
    for (var, value) in &ask.backend.env {
        // A settings file liza wrote for the CLI (gemini's), named in its environment.
        let path = PathBuf::from(value);
        if var.ends_with("_PATH") && path.is_file() {
            read_only.push((path.clone(), path));
        }
    }
    for (path, is_dir) in ask.backend.state_paths(&lookup) {
        if is_dir {
            let _ = std::fs::create_dir_all(&path);
        }
        writable.push((path.clone(), path));
    }
    // What each agent has of its own: a copy of a file (in its scratch $HOME), a
    // directory of its own over the shared one.
    for (n, (path, is_dir)) in ask.backend.private_paths(&lookup).into_iter().enumerate() {
        if is_dir {
            let own = ask.scratch_dir.join("private").join(n.to_string());
            let made = std::fs::create_dir_all(&own).and_then(|()| std::fs::create_dir_all(&path));
            if made.is_ok() {
                writable.push((own, path));
            }
        } else if let (Some(home), Ok(bytes)) = (home, std::fs::read(&path))
            && let Ok(inside) = path.strip_prefix(home)
        {
            copy_into_scratch(&ask.scratch_home, inside, &bytes);
        }
    }
    // Its configuration: read-only, made empty first where a run could create it.
    let config_view = super::cli_config::user_config(&ask.backend, &lookup);
    let masks = if ask.reviewer {
        super::cli_config::reviewer_masks(&ask.backend, &ask.workdir, &ask.scratch_dir)
            .map_err(|e| io_refusal(&ask.scratch_dir, &e))?
    } else {
        Vec::new()
    };
    if let Some(dir) = ask.report_dir {
        writable.push((dir.clone(), dir));
    }
    Ok(Mounts {
        read_only,
        writable,
        protected: config_view.protected,
        absent_config: config_view.watched,
        masks,
        made: config_view.made,
        program: crate::program::find_executable(&ask.program).unwrap_or_default(),
        git_dir: crate::git::own_git_dir(&ask.workdir),
    })
}

/// Writes `bytes` as `relative` under the agent's scratch `$HOME`, which the agent writes
/// too: whatever it left at that path (a link to a file of the person's) is removed
/// first, and the copy is made only when its directory is inside the scratch home.
fn copy_into_scratch(home: &Path, relative: &Path, bytes: &[u8]) {
    let copy = home.join(relative);
    let Some(parent) = copy.parent() else { return };
    let _ = std::fs::create_dir_all(parent);
    let inside = match (parent.canonicalize(), home.canonicalize()) {
        (Ok(parent), Ok(home)) => parent.starts_with(home),
        _ => false,
    };
    if !inside {
        return;
    }
    let _ = std::fs::remove_file(&copy);
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&copy)
    {
        let _ = std::io::Write::write_all(&mut file, bytes);
    }
}

fn io_refusal(path: &Path, e: &std::io::Error) -> OpsError {
    OpsError::refused(
        RuleId::FileWrite,
        format!("cannot prepare the sandbox at {}: {e}", path.display()),
        "check that .liza/ is writable; `liza doctor` tries the sandbox",
    )
}
