//! One resolved backend: a built-in CLI (`catalog`) adjusted by the user's
//! `config.agent_tools.<name>` entry, a backend of the user's own, or the built-in agent;
//! and the argv and stdin of one run of it.

use super::kind::BackendKind;
use std::path::{Path, PathBuf};

pub use crate::program::find_executable;

use super::catalog::{self, CliSpec, INTERACTIVE_PROMPT};
use super::environment::expand_vars;
use super::usage::UsageFormat;
use crate::blackboard::model::{AgentTool, Config, PromptMode};

/// One resolved backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// Its name (`--cli NAME`, `config.default_cli`, the key in `config.agent_tools`).
    pub name: String,
    /// The program, looked up on PATH unless it is a path.
    pub executable: String,
    /// Arguments before the prompt; `{prompt_file}`, `{worktree}`, `{worktree_git_dir}`,
    /// `{task_id}`, `{role}`, `{git_dir}` (the repository's shared `.git`) and
    /// `{liza_dir}` are replaced.
    pub args: Vec<String>,
    /// How the prompt reaches the agent: on stdin, in a file, or as the last argument.
    pub prompt: PromptMode,
    /// Extra environment, `${VAR}` already taken from the supervisor's environment.
    pub env: Vec<(String, String)>,
    /// Arguments for `-i` (interactive) runs, replacing `args`; empty: none.
    pub interactive_args: Vec<String>,
    /// `args` and `interactive_args` when liza's sandbox confines the run (a CLI whose
    /// own sandbox cannot work inside it).
    pub sandboxed_args: Option<(Vec<String>, Vec<String>)>,
    /// Secret variables passed through from liza's own environment (the CLI's key and
    /// endpoint); every other secret is removed from the agent's environment.
    pub keep_env: Vec<String>,
    /// The model flag with `{model}` replaced, when a model is chosen.
    pub model_args: Vec<String>,
    /// Arguments added when a variable is set in the supervisor's environment.
    pub env_args: Vec<(String, Vec<String>)>,
    /// Whether the agent can run shell commands (`liza …`) itself.
    pub runs_commands: bool,
    /// Paths the CLI drops in its working directory (git exclude patterns).
    pub drops: Vec<String>,
    /// The built-in CLI this backend is, or adjusts.
    pub spec: Option<&'static CliSpec>,
    /// The values of the variables `${VAR}` took from the environment: scrubbed from
    /// the agent's saved output like every other secret.
    pub expanded_secrets: Vec<String>,
    /// Its own state (logins, sessions, caches), writable inside the sandbox; as the
    /// catalog writes them (`~/.claude/`, `{data}/opencode/`).
    pub state: Vec<String>,
    /// Its configuration, read-only inside the sandbox.
    pub config: Vec<String>,
    /// What each agent gets a copy or a directory of its own of.
    pub private: Vec<String>,
    /// How it reports a run's tokens and dollars (specs/ledger.md), and the arguments
    /// that make an unattended run do so (`{run_dir}`: the run's own directory).
    pub usage: Option<UsageFormat>,
    /// See [`Backend::usage`].
    pub usage_args: Vec<String>,
    /// The model chosen for it (`--model`, `config.agent_tools.<name>.model`), for the
    /// ledger when the CLI's report does not name one.
    pub model: Option<String>,
}

/// Why a backend cannot be resolved or is not usable (specs/supervisor.md *Startup*), with
/// what to do about it ([`BackendError::hint`]).
#[expect(missing_docs, reason = "each variant's message is its documentation")]
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("unknown agent backend {name:?}: not built in and not in config.agent_tools")]
    Unknown { name: String },
    #[error("the {name} backend needs `{executable}`, which is not on PATH")]
    Missing { name: String, executable: String },
    #[error("config.agent_tools.{name} names no executable, and {name} is not a built-in backend")]
    NoExecutable { name: String },
    #[error("config.agent_tools.{name}.env.{key} uses ${{{var}}}, which is not set")]
    UnsetVariable {
        name: String,
        key: String,
        var: String,
    },
}

impl BackendError {
    /// What a person can do about it: the error's `hint:` line.
    pub fn hint(&self) -> String {
        match self {
            BackendError::Unknown { .. } => format!(
                "use --cli with one of {}, or add it to config.agent_tools",
                catalog::names().join(", ")
            ),
            BackendError::Missing { executable, .. } => {
                format!(
                    "install {executable} and put it on PATH, or choose another backend: config.default_cli (`liza edit`) for every agent, `--cli NAME` for one (`builtin` needs no install; `liza doctor` checks them all)"
                )
            }
            BackendError::NoExecutable { name } => format!(
                "add `executable: /path/to/program` to config.agent_tools.{name} (`liza edit`)"
            ),
            BackendError::UnsetVariable { var, .. } => {
                format!(
                    "export {var} in the supervisor's environment, or remove it from the config"
                )
            }
        }
    }
}

impl Backend {
    /// The backend named `name`: a built-in CLI, the built-in agent, or a user backend,
    /// each adjusted by `config.agent_tools.<name>`; `model` (`liza-agent --model`) wins
    /// over the config's. `${VAR}` in env values comes from `lookup`.
    pub fn resolve(
        name: &str,
        config: &Config,
        model: Option<&str>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Backend, BackendError> {
        let tool = config
            .agent_tools
            .as_ref()
            .and_then(|tools| tools.get(&name.to_owned()));
        let mut backend = match (catalog::find(name), name) {
            (Some(spec), _) => from_spec(spec),
            (None, "builtin") => builtin(),
            (None, _) => match tool {
                Some(tool) => Backend::bare(
                    name,
                    tool.executable
                        .clone()
                        .ok_or_else(|| BackendError::NoExecutable {
                            name: name.to_owned(),
                        })?,
                ),
                None => {
                    return Err(BackendError::Unknown {
                        name: name.to_owned(),
                    });
                }
            },
        };
        let model_flag = backend.model_args.clone();
        let model_env = backend.spec.and_then(|s| s.model_env);
        backend.model_args.clear();
        if let Some(tool) = tool {
            backend.adjust(tool, lookup)?;
        }
        let chosen = model
            .map(str::to_owned)
            .or_else(|| tool.and_then(|t| t.model.clone()));
        backend.model.clone_from(&chosen);
        if let Some(chosen) = chosen {
            if backend.kind() == BackendKind::Builtin {
                backend.env.push(("LIZA_LLM_MODEL".into(), chosen));
            } else if let (true, Some(var)) = (model_flag.is_empty(), model_env) {
                backend.env.push((var.to_owned(), chosen));
            } else {
                backend.model_args = model_flag
                    .iter()
                    .map(|a| a.replace("{model}", &chosen))
                    .collect();
            }
        }
        Ok(backend)
    }

    /// A backend that runs `executable` with the prompt on stdin and nothing else.
    fn bare(name: &str, executable: String) -> Backend {
        Backend {
            name: name.to_owned(),
            executable,
            args: Vec::new(),
            prompt: PromptMode::Stdin,
            env: Vec::new(),
            interactive_args: Vec::new(),
            keep_env: Vec::new(),
            model_args: Vec::new(),
            env_args: Vec::new(),
            runs_commands: true,
            drops: Vec::new(),
            spec: None,
            expanded_secrets: Vec::new(),
            state: Vec::new(),
            config: Vec::new(),
            private: Vec::new(),
            sandboxed_args: None,
            usage: None,
            usage_args: Vec::new(),
            model: None,
        }
    }

    /// Applies the user's entry: what it gives replaces or extends, what it leaves out
    /// stays.
    fn adjust(
        &mut self,
        tool: &AgentTool,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), BackendError> {
        if let Some(executable) = &tool.executable {
            self.executable.clone_from(executable);
        }
        // The user's own way of asking for a report (or for streamed estimates) wins:
        // its output is not read for usage then.
        let own_report = self.usage_args.first().is_some_and(|flag| {
            tool.args
                .iter()
                .flatten()
                .chain(tool.extra_args.iter().flatten())
                .any(|a| a == flag || a.starts_with(&format!("{flag}=")) || a == "--stream")
        });
        if own_report {
            self.usage = None;
            self.usage_args.clear();
        }
        if let Some(args) = &tool.args {
            self.args.clone_from(args);
            // The user's arguments are theirs, sandboxed or not.
            self.sandboxed_args = None;
        }
        self.args.extend(tool.extra_args.iter().flatten().cloned());
        if let Some((args, _)) = &mut self.sandboxed_args {
            args.extend(tool.extra_args.iter().flatten().cloned());
        }
        if let Some(prompt) = tool.prompt {
            self.prompt = prompt;
        }
        if let Some(args) = &tool.interactive_args {
            self.interactive_args.clone_from(args);
        }
        if let Some(runs) = tool.runs_commands {
            self.runs_commands = runs;
        }
        for path in tool.state.iter().flatten() {
            if !self.state.contains(path) {
                self.state.push(path.clone());
            }
        }
        for var in tool.pass_env.iter().flatten() {
            if !self.keep_env.contains(var) {
                self.keep_env.push(var.clone());
            }
        }
        for (key, value) in tool.env.iter().flat_map(|e| e.0.iter()) {
            let (text, used) =
                expand_vars(value, lookup).map_err(|super::environment::UnsetVar(var)| {
                    BackendError::UnsetVariable {
                        name: self.name.clone(),
                        key: key.clone(),
                        var,
                    }
                })?;
            self.expanded_secrets.extend(used);
            self.env.retain(|(k, _)| k != key);
            self.env.push((key.clone(), text));
        }
        Ok(())
    }

    /// The executable's path, if it can be run (an absolute or relative path that exists,
    /// or a name found on `PATH`).
    pub fn check_usable(&self) -> Result<PathBuf, BackendError> {
        self.check_usable_with(&find_executable)
    }

    /// The same, with `find` saying where a program is (the supervisor asks its spawner).
    pub fn check_usable_with(
        &self,
        find: &dyn Fn(&str) -> Option<PathBuf>,
    ) -> Result<PathBuf, BackendError> {
        find(&self.executable).ok_or_else(|| BackendError::Missing {
            name: self.name.clone(),
            executable: self.executable.clone(),
        })
    }

    /// Its state paths on this machine, with whether each is a directory.
    pub fn state_paths(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<(PathBuf, bool)> {
        on_this_machine(&self.state, lookup)
    }

    /// Its configuration's paths on this machine, with whether each is a directory.
    pub fn config_paths(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<(PathBuf, bool)> {
        on_this_machine(&self.config, lookup)
    }

    /// Its configuration's entries that are its own program or installed packages
    /// ([`CliSpec::installs`]), on this machine.
    pub fn install_paths(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<(PathBuf, bool)> {
        let installs: Vec<String> = self
            .spec
            .map(|s| s.installs.iter().map(|e| (*e).to_owned()).collect())
            .unwrap_or_default();
        on_this_machine(&installs, lookup)
    }

    /// Its configuration inside the project, relative to a worktree, with whether each is
    /// a directory ([`CliSpec::project_config`]).
    pub fn project_config(&self) -> Vec<(PathBuf, bool)> {
        self.spec
            .map(|s| {
                s.project_config
                    .iter()
                    .map(|e| (PathBuf::from(e.trim_end_matches('/')), e.ends_with('/')))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Its private paths on this machine, with whether each is a directory.
    pub fn private_paths(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<(PathBuf, bool)> {
        on_this_machine(&self.private, lookup)
    }

    /// Which CLI this is.
    pub fn kind(&self) -> BackendKind {
        BackendKind::of(&self.name)
    }

    /// Whether this backend can write a structured run report (`config.codex_report`).
    pub fn reports(&self) -> bool {
        self.kind() == BackendKind::Codex
    }

    /// Whether its exit codes 3 and 4 mean SOFT_FAIL and HARD_FAIL (the built-in agent's
    /// protocol) rather than a crash.
    pub fn reports_soft_and_hard_failures(&self) -> bool {
        self.kind() == BackendKind::Builtin
    }

    /// Whether it runs the `on_review` checks itself and reads their output (the built-in
    /// reviewer), so the supervisor need not run them for its prompt.
    pub fn runs_review_checks(&self) -> bool {
        self.kind() == BackendKind::Builtin
    }

    /// Writes the CLI's settings file under `dir` (`.liza/backends/`) when its
    /// conditions hold, and names it in the agent's environment.
    pub fn write_settings_file(
        &mut self,
        dir: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> std::io::Result<()> {
        let Some(file) = self.spec.and_then(|s| s.settings_file.as_ref()) else {
            return Ok(());
        };
        if self.env.iter().any(|(k, _)| k == file.var)
            || lookup(file.var).is_some()
            || !file
                .when_set
                .iter()
                .all(|v| lookup(v).is_some_and(|x| !x.is_empty()))
        {
            // The user chose their own settings, or the case does not arise.
            return Ok(());
        }
        std::fs::create_dir_all(dir)?;
        let path = dir.join(file.name);
        std::fs::write(&path, file.content)?;
        self.env
            .push((file.var.to_owned(), path.display().to_string()));
        Ok(())
    }

    /// Whether `-i` can start it interactively.
    pub fn has_interactive_mode(&self) -> bool {
        !self.interactive_args.is_empty() || self.spec.is_none() && self.name != "builtin"
    }

    /// The argv and stdin of one run. `env_value` reads the supervisor's environment
    /// (for [`Backend::env_args`]).
    pub fn invocation(
        &self,
        run: &RunInput<'_>,
        interactive: bool,
        env_value: &dyn Fn(&str) -> Option<String>,
    ) -> Invocation {
        self.invocation_in(run, interactive, false, env_value)
    }

    /// The argv and stdin of one run; `sandboxed`: inside liza's sandbox (a CLI whose own
    /// sandbox cannot work there gets its `sandboxed_args`).
    pub fn invocation_in(
        &self,
        run: &RunInput<'_>,
        interactive: bool,
        sandboxed: bool,
        env_value: &dyn Fn(&str) -> Option<String>,
    ) -> Invocation {
        let worktree_git_dir = run.worktree_git_dir.unwrap_or(run.git_dir);
        let fill = |arg: &str| {
            let interactive_prompt =
                INTERACTIVE_PROMPT.replace("{prompt_file}", &run.prompt_file.display().to_string());
            arg.replace("{interactive_prompt}", &interactive_prompt)
                .replace("{prompt_file}", &run.prompt_file.display().to_string())
                .replace("{role}", run.role)
                .replace(
                    "{worktree_git_dir}",
                    &worktree_git_dir.display().to_string(),
                )
                .replace("{worktree}", &run.workdir.display().to_string())
                .replace("{task_id}", run.task.unwrap_or(""))
                .replace("{git_dir}", &run.git_dir.display().to_string())
                .replace("{liza_dir}", &run.liza_dir.display().to_string())
        };
        let interactive = interactive && !self.interactive_args.is_empty();
        let (args, interactive_args) = match (&self.sandboxed_args, sandboxed) {
            (Some((args, interactive_args)), true) => (args, interactive_args),
            _ => (&self.args, &self.interactive_args),
        };
        let template = if interactive { interactive_args } else { args };
        let mut argv = vec![self.executable.clone()];
        argv.extend(template.iter().map(|a| fill(a)));
        // Options go before a trailing `-` (read the prompt from stdin) or a positional
        // prompt, and right after a subcommand such as `exec`, `run` or liza's `builtin`.
        let mut options: Vec<String> = self.model_args.clone();
        for (var, args) in &self.env_args {
            if let Some(value) = env_value(var).filter(|v| !v.is_empty() && !v.contains('"')) {
                options.extend(args.iter().map(|a| a.replace("{value}", &value)));
            }
        }
        if !interactive {
            let needs_dir = self.usage_args.iter().any(|a| a.contains("{run_dir}"));
            let dir = run.run_dir.map(|d| d.display().to_string());
            if dir.is_some() || !needs_dir {
                options.extend(self.usage_args.iter().map(|a| {
                    fill(a)
                        .replace("{run_dir}", dir.as_deref().unwrap_or_default())
                        .trim_end()
                        .to_owned()
                }));
            }
        }
        if let Some(report) = run.report.filter(|_| !interactive) {
            options.extend([
                "--output-schema".to_owned(),
                report.schema.display().to_string(),
                "--output-last-message".to_owned(),
                report.output.display().to_string(),
            ]);
        }
        let at = argv
            .iter()
            .position(|a| a == "exec" || a == "run" || a == "builtin")
            .filter(|i| *i == 1)
            .map_or(1, |i| i + 1);
        argv.splice(at..at, options);
        let mut stdin = None;
        if !interactive {
            match self.prompt {
                PromptMode::Stdin => stdin = Some(run.prompt.to_owned()),
                PromptMode::Arg => argv.push(run.prompt.to_owned()),
                PromptMode::File => {
                    if !template.iter().any(|a| a.contains("{prompt_file}")) {
                        argv.push(run.prompt_file.display().to_string());
                    }
                }
            }
        }
        Invocation {
            argv,
            stdin,
            keep_env: self.keep_env.clone(),
            scrub: self.expanded_secrets.clone(),
        }
    }
}

fn from_spec(spec: &'static CliSpec) -> Backend {
    let strings = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    Backend {
        name: spec.name.to_owned(),
        executable: spec.executable.to_owned(),
        args: strings(spec.args),
        prompt: spec.prompt,
        env: Vec::new(),
        interactive_args: strings(spec.interactive_args),
        keep_env: strings(spec.pass_env),
        model_args: strings(spec.model_args),
        env_args: spec
            .env_args
            .iter()
            .map(|(var, args)| ((*var).to_owned(), strings(args)))
            .collect(),
        runs_commands: spec.runs_commands,
        drops: strings(spec.drops),
        spec: Some(spec),
        expanded_secrets: Vec::new(),
        state: strings(spec.state),
        config: strings(spec.config),
        private: strings(spec.private),
        sandboxed_args: spec.sandboxed_args.map(|args| {
            (
                strings(args),
                strings(
                    spec.sandboxed_interactive_args
                        .unwrap_or(spec.interactive_args),
                ),
            )
        }),
        usage: spec.usage,
        usage_args: strings(spec.usage_args),
        model: None,
    }
}

/// The built-in agent (specs/builtin-agent.md): this same executable's hidden `builtin`
/// subcommand, which reads its task from the blackboard and the supervisor's prompt from
/// the prompt file, and needs the model key.
fn builtin() -> Backend {
    let executable = crate::program::liza_executable().display().to_string();
    Backend {
        args: [
            "builtin",
            "{role}",
            "--task",
            "{task_id}",
            "--prompt-file",
            "{prompt_file}",
        ]
        .map(String::from)
        .to_vec(),
        prompt: PromptMode::File,
        keep_env: vec!["LIZA_LLM_API_KEY".into(), "OPENAI_API_KEY".into()],
        usage: Some(UsageFormat::LizaUsageFile),
        usage_args: vec!["--usage-file".into(), "{run_dir}/usage.json".into()],
        ..Backend::bare("builtin", executable)
    }
}

/// Catalog paths (`~/x`, `{config}/x`, `${VAR}/x`, `/abs`) as paths of this machine, with
/// whether each is a directory (a trailing `/`); entries that do not resolve are left out.
fn on_this_machine(
    entries: &[String],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Vec<(PathBuf, bool)> {
    let home = lookup("HOME").map(PathBuf::from);
    let xdg = |var: &str, default: &str| {
        lookup(var)
            .filter(|v| v.starts_with('/'))
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(default)))
    };
    entries
        .iter()
        .filter_map(|entry| {
            let dir = entry.ends_with('/');
            let entry = entry.trim_end_matches('/');
            let (base, rest) = if let Some(rest) = entry.strip_prefix("~/") {
                (home.clone(), rest)
            } else if let Some((var, rest)) =
                entry.strip_prefix("${").and_then(|e| e.split_once('}'))
            {
                // `${VAR}` alone names the directory itself.
                let base = lookup(var)
                    .filter(|v| v.starts_with('/'))
                    .map(PathBuf::from);
                (base, rest.trim_start_matches('/'))
            } else if let Some((place, rest)) =
                entry.strip_prefix('{').and_then(|e| e.split_once("}/"))
            {
                let base = match place {
                    "config" => xdg("XDG_CONFIG_HOME", ".config"),
                    "data" => xdg("XDG_DATA_HOME", ".local/share"),
                    "cache" => xdg("XDG_CACHE_HOME", ".cache"),
                    "state" => xdg("XDG_STATE_HOME", ".local/state"),
                    _ => None,
                };
                (base, rest)
            } else if entry.starts_with('/') {
                (Some(PathBuf::from("/")), entry.trim_start_matches('/'))
            } else {
                (None, entry)
            };
            let rest = Path::new(rest);
            let plain = rest
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            let named = !rest.as_os_str().is_empty() || entry.starts_with("${");
            (plain && named)
                .then(|| base.map(|b| (b.join(rest), dir)))
                .flatten()
        })
        .collect()
}

/// What one run is given.
pub struct RunInput<'a> {
    /// The role's CLI name: `planner`, `coder` or `code-reviewer` (`{role}`).
    pub role: &'a str,
    /// The prompt, for a backend that reads it on stdin or as an argument.
    pub prompt: &'a str,
    /// Where the prompt is saved (`{prompt_file}`).
    pub prompt_file: &'a Path,
    /// Where the agent runs: the task's worktree, or the project root for the planner
    /// (`{worktree}`).
    pub workdir: &'a Path,
    /// The task's id (`{task_id}`); `None` for the planner.
    pub task: Option<&'a str>,
    /// The repository's shared `.git` (`{git_dir}`).
    pub git_dir: &'a Path,
    /// The worktree's own git dir (`.git/worktrees/<name>`), when it is a worktree.
    pub worktree_git_dir: Option<&'a Path>,
    /// The blackboard's directory, `.liza/` (`{liza_dir}`).
    pub liza_dir: &'a Path,
    /// The structured run report asked of a backend that supports it (codex).
    pub report: Option<ReportFiles<'a>>,
    /// A directory of the run's own, writable in the sandbox (`{run_dir}`: where vibe
    /// and the built-in agent leave their usage).
    pub run_dir: Option<&'a Path>,
}

/// Where the report's schema is and where the agent writes its report.
#[derive(Clone, Copy)]
pub struct ReportFiles<'a> {
    /// The JSON schema of the report (`--output-schema`).
    pub schema: &'a Path,
    /// Where the agent writes its final message, the report (`--output-last-message`).
    pub output: &'a Path,
}

/// An agent process to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// What is written to its stdin: the prompt, for a backend that reads it there.
    pub stdin: Option<String>,
    /// Secret variables passed through (see [`Backend::keep_env`]).
    pub keep_env: Vec<String>,
    /// Secret values to scrub from the output beyond the environment's secrets (those
    /// `${VAR}` put into other variables).
    pub scrub: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackboard::codec::IdMap;

    fn run<'a>(file: &'a Path, dir: &'a Path) -> RunInput<'a> {
        RunInput {
            role: "coder",
            prompt: "do the task",
            prompt_file: file,
            workdir: dir,
            task: Some("t-1"),
            git_dir: Path::new("/r/.git"),
            worktree_git_dir: Some(Path::new("/r/.git/worktrees/t-1")),
            liza_dir: Path::new("/r/.liza"),
            report: None,
            run_dir: None,
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn resolve(name: &str, config: &Config) -> Backend {
        Backend::resolve(name, config, None, &no_env).unwrap()
    }

    fn config_with(name: &str, tool: AgentTool) -> Config {
        Config {
            agent_tools: Some(IdMap(vec![(name.to_owned(), tool)])),
            ..Config::default()
        }
    }

    #[test]
    fn built_in_backends_pass_the_prompt_on_stdin_or_in_a_file() {
        let config = Config::default();
        let (file, dir) = (Path::new("/p/prompt.md"), Path::new("/w"));
        let claude = resolve("claude", &config).invocation(&run(file, dir), false, &no_env);
        assert_eq!(claude.argv[0], "claude");
        assert!(claude.argv.contains(&"-p".to_owned()), "{:?}", claude.argv);
        assert_eq!(claude.stdin.as_deref(), Some("do the task"));
        for name in ["aider", "mistral"] {
            let inv = resolve(name, &config).invocation(&run(file, dir), false, &no_env);
            assert!(inv.argv.contains(&"/p/prompt.md".to_owned()), "{name}");
            assert!(inv.stdin.is_none(), "{name}");
        }
        for name in ["gemini", "opencode", "codex"] {
            let inv = resolve(name, &config).invocation(&run(file, dir), false, &no_env);
            assert!(!inv.argv.iter().any(|a| a == "do the task"), "{name}");
            assert_eq!(inv.stdin.as_deref(), Some("do the task"), "{name}");
        }
        assert!(matches!(
            Backend::resolve("nope", &config, None, &no_env),
            Err(BackendError::Unknown { .. })
        ));
    }

    #[test]
    fn codex_may_write_the_worktrees_git_dir_and_liza_and_is_asked_for_its_report_first() {
        let codex = resolve("codex", &Config::default());
        assert!(codex.reports());
        let (file, dir) = (Path::new("/p/prompt.md"), Path::new("/w"));
        let mut input = run(file, dir);
        let plain = codex.invocation(&input, false, &no_env).argv;
        let writable: Vec<&str> = plain
            .windows(2)
            .filter(|w| w[0] == "--add-dir")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(writable, ["/r/.git", "/r/.git/worktrees/t-1", "/r/.liza"]);
        input.report = Some(ReportFiles {
            schema: Path::new("/o/schema.json"),
            output: Path::new("/o/report.json"),
        });
        let argv = codex.invocation(&input, false, &no_env).argv;
        assert_eq!(
            argv[..6],
            [
                "codex",
                "exec",
                "--json",
                "--output-schema",
                "/o/schema.json",
                "--output-last-message",
            ]
        );
        assert_eq!(argv.last().map(String::as_str), Some("-"));
    }

    /// specs/ledger.md *What each CLI reports*: an unattended run is asked for its
    /// usage report (vibe's in the run's directory, only when it has one); an interactive
    /// run is left as a person runs it; a user's own output flag wins, and that backend
    /// then reports nothing.
    #[test]
    fn unattended_runs_are_asked_for_their_usage_report() {
        let config = Config::default();
        let (file, dir) = (Path::new("/p/prompt.md"), Path::new("/w"));
        let argv = |name: &str, input: &RunInput<'_>, interactive: bool| {
            resolve(name, &config)
                .invocation(input, interactive, &no_env)
                .argv
        };
        let plain = run(file, dir);
        let claude = argv("claude", &plain, false);
        assert!(
            claude
                .windows(2)
                .any(|w| w == ["--output-format", "stream-json"])
                && claude.contains(&"--verbose".to_owned()),
            "{claude:?}"
        );
        assert!(
            !argv("claude", &plain, true)
                .iter()
                .any(|a| a == "--output-format")
        );
        let opencode = argv("opencode", &plain, false);
        assert!(
            opencode
                .windows(2)
                .any(|w| w == ["--title", "liza coder t-1"]),
            "{opencode:?}"
        );
        assert!(argv("aider", &plain, false).contains(&"--no-stream".to_owned()));
        // vibe's report needs a directory of the run's own.
        assert!(
            !argv("mistral", &plain, false)
                .iter()
                .any(|a| a == "--output-dir")
        );
        let with_dir = RunInput {
            run_dir: Some(Path::new("/r/.liza/agent-outputs/coder-1-t-1-x")),
            ..run(file, dir)
        };
        let vibe = argv("mistral", &with_dir, false);
        assert!(
            vibe.windows(2)
                .any(|w| w == ["--output-dir", "/r/.liza/agent-outputs/coder-1-t-1-x"]),
            "{vibe:?}"
        );
        // The built-in agent writes what the endpoint served in the run's directory.
        let builtin = argv("builtin", &with_dir, false);
        assert_eq!(
            builtin[1..4],
            [
                "builtin",
                "--usage-file",
                "/r/.liza/agent-outputs/coder-1-t-1-x/usage.json"
            ],
            "{builtin:?}"
        );
        // The user's own output format.
        let own = config_with(
            "claude",
            AgentTool {
                extra_args: Some(vec!["--output-format".into(), "json".into()]),
                ..AgentTool::default()
            },
        );
        let mine = resolve("claude", &own);
        assert_eq!(mine.usage, None);
        let argv = mine.invocation(&plain, false, &no_env).argv;
        assert_eq!(
            argv.iter().filter(|a| *a == "--output-format").count(),
            1,
            "{argv:?}"
        );
    }

    #[test]
    fn codex_gets_the_base_url_from_the_environment_as_its_config_key() {
        let codex = resolve("codex", &Config::default());
        let (file, dir) = (Path::new("/p/prompt.md"), Path::new("/w"));
        let env = |v: &str| (v == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".to_owned());
        let argv = codex.invocation(&run(file, dir), false, &env).argv;
        let at = argv
            .iter()
            .position(|a| a.starts_with("openai_base_url="))
            .unwrap();
        assert_eq!(argv[at - 1], "-c");
        assert_eq!(argv[at], "openai_base_url=\"http://127.0.0.1:9/v1\"");
        assert!(
            at < argv.len() - 1,
            "before the `-` that reads stdin: {argv:?}"
        );
    }

    #[test]
    fn a_config_entry_named_like_a_built_in_adjusts_it() {
        let tool = AgentTool {
            extra_args: Some(vec!["--verbose".into()]),
            env: Some(IdMap(vec![(
                "ANTHROPIC_API_KEY".into(),
                "${MY_KEY}".into(),
            )])),
            pass_env: Some(vec!["MY_PROXY_TOKEN".into()]),
            model: Some("sonnet".into()),
            ..AgentTool::default()
        };
        let config = config_with("claude", tool);
        let lookup = |v: &str| (v == "MY_KEY").then(|| "sk-test-0123456789".to_owned());
        let claude = Backend::resolve("claude", &config, None, &lookup).unwrap();
        assert_eq!(claude.executable, "claude");
        let (file, dir) = (Path::new("/p/prompt.md"), Path::new("/w"));
        let argv = claude.invocation(&run(file, dir), false, &no_env).argv;
        assert_eq!(argv[1..3], ["--model".to_owned(), "sonnet".to_owned()]);
        assert!(
            argv.contains(&"--permission-mode".to_owned()),
            "built-in args kept"
        );
        assert_eq!(argv.last().map(String::as_str), Some("--verbose"));
        assert_eq!(
            claude.env,
            [(
                "ANTHROPIC_API_KEY".to_owned(),
                "sk-test-0123456789".to_owned()
            )]
        );
        assert_eq!(claude.expanded_secrets, ["sk-test-0123456789"]);
        assert!(claude.keep_env.contains(&"MY_PROXY_TOKEN".to_owned()));
        assert!(claude.keep_env.contains(&"ANTHROPIC_API_KEY".to_owned()));
        // --model on the command line wins over the config's.
        let chosen = Backend::resolve("claude", &config, Some("opus"), &lookup).unwrap();
        assert_eq!(chosen.model_args, ["--model", "opus"]);
        // An unset variable is a configuration error naming it.
        let err = Backend::resolve("claude", &config, None, &no_env).unwrap_err();
        assert!(err.to_string().contains("${MY_KEY}"), "{err}");
    }

    #[test]
    fn a_user_backend_needs_an_executable_and_defaults_to_stdin() {
        let config = config_with("mine", AgentTool::default());
        assert!(matches!(
            Backend::resolve("mine", &config, None, &no_env),
            Err(BackendError::NoExecutable { .. })
        ));
        let config = config_with(
            "mine",
            AgentTool {
                executable: Some("/bin/mine".into()),
                args: Some(vec!["--auto".into()]),
                ..AgentTool::default()
            },
        );
        let mine = resolve("mine", &config);
        let inv = mine.invocation(&run(Path::new("/p"), Path::new("/w")), false, &no_env);
        assert_eq!(inv.argv, ["/bin/mine", "--auto"]);
        assert_eq!(inv.stdin.as_deref(), Some("do the task"));
        assert!(mine.runs_commands);
    }

    #[test]
    fn interactive_runs_point_at_the_saved_prompt_in_one_short_argument() {
        let (file, dir) = (Path::new("/p/prompt.md"), Path::new("/w"));
        for cli in catalog::CLIS {
            let backend = resolve(cli.name, &Config::default());
            assert!(backend.has_interactive_mode(), "{}", cli.name);
            let inv = backend.invocation(&run(file, dir), true, &no_env);
            assert!(inv.stdin.is_none(), "{}", cli.name);
            assert!(
                !inv.argv.contains(&"-p".to_owned()),
                "{}: {:?}",
                cli.name,
                inv.argv
            );
            assert!(
                inv.argv.iter().any(|a| a.contains("/p/prompt.md")),
                "{}: {:?}",
                cli.name,
                inv.argv
            );
        }
        assert!(!resolve("builtin", &Config::default()).has_interactive_mode());
    }

    #[test]
    fn builtin_is_this_executable_with_role_task_and_prompt_file_and_keeps_the_model_key() {
        let builtin = resolve("builtin", &Config::default());
        let (file, dir) = (Path::new("/tmp/prompt.md"), Path::new("/tmp/wt"));
        let inv = builtin.invocation(&run(file, dir), false, &no_env);
        assert_eq!(
            inv.argv[1..],
            [
                "builtin",
                "coder",
                "--task",
                "t-1",
                "--prompt-file",
                "/tmp/prompt.md"
            ]
            .map(String::from)
        );
        assert!(inv.argv[0].ends_with("liza"), "{:?}", inv.argv);
        assert_eq!(inv.stdin, None);
        assert_eq!(inv.keep_env, ["LIZA_LLM_API_KEY", "OPENAI_API_KEY"]);
        let chosen = Backend::resolve("builtin", &Config::default(), Some("m-1"), &no_env).unwrap();
        assert_eq!(
            chosen.env,
            [("LIZA_LLM_MODEL".to_owned(), "m-1".to_owned())]
        );
    }
}
