//! Agent backends (supervisor.md *Backends*): what turns a prompt, a worktree and an
//! environment into an agent process. The built-in CLI backends (`claude`, `codex`,
//! `gemini`, `mistral`, `aider`, `opencode`) with arguments that let each work unattended
//! inside its worktree, and the user's own from `config.agent_tools`. Always an argv
//! vector; blackboard content reaches the agent only as the prompt (stdin, one argument,
//! or a file), never through a shell.

use std::path::{Path, PathBuf};

use crate::blackboard::model::{Config, PromptMode};

/// One resolved backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub name: String,
    pub executable: String,
    /// Arguments before the prompt; `{prompt_file}`, `{worktree}`, `{task_id}`,
    /// `{git_dir}` (the repository's shared `.git`) and `{liza_dir}` are replaced.
    pub args: Vec<String>,
    pub prompt: PromptMode,
    /// Extra environment (e.g. the provider key a user backend needs).
    pub env: Vec<(String, String)>,
    /// Arguments for `-i` (interactive) runs, replacing `args`.
    pub interactive_args: Vec<String>,
    /// Secret variables this backend needs from liza's own environment (the built-in
    /// agent's model key); every other secret is removed from the agent's environment.
    pub keep_env: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("unknown agent backend {name:?}: not built in and not in config.agent_tools")]
    Unknown { name: String },
    #[error("the {name} backend needs `{executable}`, which is not on PATH")]
    Missing { name: String, executable: String },
}

impl BackendError {
    pub fn hint(&self) -> String {
        match self {
            BackendError::Unknown { .. } => format!(
                "use --cli with one of {}, or add it to config.agent_tools",
                BUILT_IN.iter().map(|b| b.0).collect::<Vec<_>>().join(", ")
            ),
            BackendError::Missing { executable, .. } => {
                format!(
                    "install {executable}, put it on PATH, or choose another backend with --cli"
                )
            }
        }
    }
}

/// name, executable, unattended arguments, how the prompt is passed.
type BuiltIn = (
    &'static str,
    &'static str,
    &'static [&'static str],
    PromptMode,
);

/// The built-in CLI backends. The arguments follow each tool's documentation for
/// non-interactive runs that may edit files and run commands (git, tests, `liza`) in the
/// worktree without permission prompts; `config.agent_tools.<name>` overrides them.
const BUILT_IN: &[BuiltIn] = &[
    (
        "claude",
        "claude",
        &[
            "-p",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash,Edit,MultiEdit,Write,Read,Glob,Grep,LS",
        ],
        PromptMode::Stdin,
    ),
    (
        "codex",
        "codex",
        &[
            "exec",
            "--sandbox",
            "workspace-write",
            "--cd",
            "{worktree}",
            // Commits write to the shared .git, and `liza` to .liza/: both must be
            // writable roots of the sandbox.
            "--add-dir",
            "{git_dir}",
            "--add-dir",
            "{liza_dir}",
            "-",
        ],
        PromptMode::Stdin,
    ),
    ("gemini", "gemini", &["--yolo", "-p"], PromptMode::Stdin),
    ("mistral", "vibe", &["-p"], PromptMode::Arg),
    (
        "aider",
        "aider",
        &["--yes-always", "--message-file", "{prompt_file}"],
        PromptMode::File,
    ),
    ("opencode", "opencode", &["run"], PromptMode::Arg),
];

impl Backend {
    /// The backend named `name`: the user's `config.agent_tools` first (so built-ins can
    /// be overridden), then the built-in table.
    pub fn resolve(name: &str, config: &Config) -> Result<Backend, BackendError> {
        if let Some(tool) = config
            .agent_tools
            .as_ref()
            .and_then(|tools| tools.get(&name.to_owned()))
        {
            return Ok(Backend {
                name: name.to_owned(),
                executable: tool.executable.clone(),
                args: tool.args.clone().unwrap_or_default(),
                prompt: tool.prompt.unwrap_or(PromptMode::Stdin),
                env: tool.env.as_ref().map(|e| e.0.clone()).unwrap_or_default(),
                interactive_args: tool.interactive_args.clone().unwrap_or_default(),
                keep_env: Vec::new(),
            });
        }
        if name == "builtin" {
            return Ok(builtin());
        }
        let (_, executable, args, prompt) =
            BUILT_IN
                .iter()
                .find(|b| b.0 == name)
                .ok_or_else(|| BackendError::Unknown {
                    name: name.to_owned(),
                })?;
        Ok(Backend {
            name: name.to_owned(),
            executable: (*executable).to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            prompt: *prompt,
            env: Vec::new(),
            interactive_args: Vec::new(),
            keep_env: Vec::new(),
        })
    }

    /// The executable's path, if it can be run (an absolute or relative path that exists,
    /// or a name found on `PATH`).
    pub fn check_usable(&self) -> Result<PathBuf, BackendError> {
        find_executable(&self.executable).ok_or_else(|| BackendError::Missing {
            name: self.name.clone(),
            executable: self.executable.clone(),
        })
    }

    /// Whether this backend can write a structured run report (`config.codex_report`).
    pub fn reports(&self) -> bool {
        self.name == "codex"
    }

    /// Whether its exit codes 3 and 4 mean SOFT_FAIL and HARD_FAIL (the built-in agent's
    /// protocol) rather than a crash.
    pub fn reports_soft_and_hard_failures(&self) -> bool {
        self.name == "builtin"
    }

    /// Whether it runs the `on_review` checks itself and reads their output (the built-in
    /// reviewer), so the supervisor need not run them for its prompt.
    pub fn runs_review_checks(&self) -> bool {
        self.name == "builtin"
    }

    /// The argv and stdin of one run.
    pub fn invocation(&self, run: &RunInput<'_>, interactive: bool) -> Invocation {
        let fill = |arg: &str| {
            arg.replace("{prompt_file}", &run.prompt_file.display().to_string())
                .replace("{role}", run.role)
                .replace("{worktree}", &run.workdir.display().to_string())
                .replace("{task_id}", run.task.unwrap_or(""))
                .replace("{git_dir}", &run.git_dir.display().to_string())
                .replace("{liza_dir}", &run.liza_dir.display().to_string())
        };
        let template = if interactive && !self.interactive_args.is_empty() {
            &self.interactive_args
        } else {
            &self.args
        };
        let mut argv = vec![self.executable.clone()];
        argv.extend(template.iter().map(|a| fill(a)));
        if let Some(report) = run.report.filter(|_| !interactive) {
            // Right after the `exec` subcommand (or the program): before the `-` that
            // reads the prompt from stdin.
            let at = argv.iter().position(|a| a == "exec").map_or(1, |i| i + 1);
            let flags = [
                "--output-schema".to_owned(),
                report.schema.display().to_string(),
                "--output-last-message".to_owned(),
                report.output.display().to_string(),
            ];
            argv.splice(at..at, flags);
        }
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
        }
    }
}

/// The built-in agent (builtin-agent.md): this same executable's hidden `builtin`
/// subcommand, which reads its task from the blackboard and the supervisor's prompt from
/// the prompt file, and needs the model key.
fn builtin() -> Backend {
    // `liza` beside the running executable (the supervisor may be `liza-agent`).
    let executable = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("liza")))
        .filter(|p| p.is_file())
        .map_or_else(|| "liza".to_owned(), |p| p.display().to_string());
    Backend {
        name: "builtin".into(),
        executable,
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
        env: Vec::new(),
        interactive_args: Vec::new(),
        keep_env: vec!["LIZA_LLM_API_KEY".into(), "OPENAI_API_KEY".into()],
    }
}

/// What one run is given.
pub struct RunInput<'a> {
    /// The role's CLI name: `planner`, `coder` or `code-reviewer` (`{role}`).
    pub role: &'a str,
    pub prompt: &'a str,
    pub prompt_file: &'a Path,
    pub workdir: &'a Path,
    pub task: Option<&'a str>,
    pub git_dir: &'a Path,
    pub liza_dir: &'a Path,
    /// The structured run report asked of a backend that supports it (codex).
    pub report: Option<ReportFiles<'a>>,
}

/// Where the report's schema is and where the agent writes its report.
#[derive(Clone, Copy)]
pub struct ReportFiles<'a> {
    pub schema: &'a Path,
    pub output: &'a Path,
}

/// An agent process to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub argv: Vec<String>,
    pub stdin: Option<String>,
    /// Secret variables passed through (see [`Backend::keep_env`]).
    pub keep_env: Vec<String>,
}

/// Looks `name` up like a shell would, without a shell.
pub fn find_executable(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let path = PathBuf::from(name);
        return runnable(&path).then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| runnable(p))
    })
}

/// Environment variables that hold secrets meant for liza itself (or a provider), removed
/// from every agent's environment unless the backend's `env` lists them.
pub fn is_secret(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "LIZA_LLM_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "MISTRAL_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENROUTER_API_KEY",
    ];
    EXACT.contains(&name) || (name.starts_with("LIZA_") && name.ends_with("_KEY"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<'a>(file: &'a Path, dir: &'a Path) -> RunInput<'a> {
        RunInput {
            role: "coder",
            prompt: "do the task",
            prompt_file: file,
            workdir: dir,
            task: Some("t-1"),
            git_dir: Path::new("/r/.git"),
            liza_dir: Path::new("/r/.liza"),
            report: None,
        }
    }

    #[test]
    fn built_in_backends_pass_the_prompt_their_way() {
        let config = Config::default();
        let (file, dir) = (Path::new("/p/prompt.md"), Path::new("/w"));
        let claude = Backend::resolve("claude", &config).unwrap();
        let inv = claude.invocation(&run(file, dir), false);
        assert_eq!(inv.argv[..2], ["claude".to_owned(), "-p".to_owned()]);
        assert_eq!(inv.stdin.as_deref(), Some("do the task"));
        let mistral = Backend::resolve("mistral", &config).unwrap();
        let inv = mistral.invocation(&run(file, dir), false);
        assert_eq!(inv.argv.last().map(String::as_str), Some("do the task"));
        assert!(inv.stdin.is_none());
        let aider = Backend::resolve("aider", &config).unwrap();
        let inv = aider.invocation(&run(file, dir), false);
        assert!(inv.argv.contains(&"/p/prompt.md".to_owned()));
        let codex = Backend::resolve("codex", &config).unwrap();
        assert!(
            codex
                .invocation(&run(file, dir), false)
                .argv
                .contains(&"/w".to_owned())
        );
        assert!(matches!(
            Backend::resolve("nope", &config),
            Err(BackendError::Unknown { .. })
        ));
    }

    #[test]
    fn codex_may_write_git_and_liza_and_is_asked_for_its_report_before_the_prompt() {
        let codex = Backend::resolve("codex", &Config::default()).unwrap();
        assert!(codex.reports());
        let (file, dir) = (Path::new("/p/prompt.md"), Path::new("/w"));
        let mut input = run(file, dir);
        let plain = codex.invocation(&input, false).argv;
        let writable: Vec<&str> = plain
            .windows(2)
            .filter(|w| w[0] == "--add-dir")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(writable, ["/r/.git", "/r/.liza"]);
        input.report = Some(ReportFiles {
            schema: Path::new("/o/schema.json"),
            output: Path::new("/o/report.json"),
        });
        let argv = codex.invocation(&input, false).argv;
        assert_eq!(
            argv[..6],
            [
                "codex",
                "exec",
                "--output-schema",
                "/o/schema.json",
                "--output-last-message",
                "/o/report.json"
            ]
        );
        assert_eq!(argv.last().map(String::as_str), Some("-"));
        assert!(
            !Backend::resolve("claude", &Config::default())
                .unwrap()
                .reports()
        );
    }

    #[test]
    fn secrets_are_recognised() {
        assert!(is_secret("LIZA_LLM_API_KEY"));
        assert!(is_secret("OPENAI_API_KEY"));
        assert!(!is_secret("PATH"));
        assert!(!is_secret("LIZA_AGENT_ID"));
    }

    #[test]
    fn builtin_is_this_executable_with_role_task_and_prompt_file_and_keeps_the_model_key() {
        let builtin = Backend::resolve("builtin", &Config::default()).unwrap();
        let file = Path::new("/tmp/prompt.md");
        let dir = Path::new("/tmp/wt");
        let inv = builtin.invocation(&run(file, dir), false);
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
        let claude = Backend::resolve("claude", &Config::default()).unwrap();
        assert!(
            claude
                .invocation(&run(file, dir), false)
                .keep_env
                .is_empty()
        );
    }
}
