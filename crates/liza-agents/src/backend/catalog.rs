//! The built-in CLI backends as data (specs/supervisor.md *Backends*): for each agent CLI, the
//! arguments of an unattended run that may edit, run commands (git, tests, `liza`) and
//! commit inside its worktree, how the prompt reaches it, the variables it reads for its
//! key and endpoint, its model flag, its interactive mode, the files it drops in a
//! worktree, and the release range these were verified against by running the real CLI
//! (`scripts/e2e-real-clis`). `liza doctor` checks the installed version against it.

use super::usage::UsageFormat;
use crate::blackboard::model::PromptMode;

/// One built-in agent CLI.
#[derive(Debug, PartialEq, Eq)]
pub struct CliSpec {
    /// The backend's name (`--cli NAME`).
    pub name: &'static str,
    /// The program.
    pub executable: &'static str,
    /// Arguments of an unattended run. Placeholders: `{worktree}`, `{git_dir}` (the shared
    /// `.git`), `{worktree_git_dir}` (`.git/worktrees/<name>` of this worktree),
    /// `{liza_dir}`, `{prompt_file}`, `{task_id}`, `{role}`.
    pub args: &'static [&'static str],
    /// How the prompt is passed (never as one argument: Linux refuses an argument over
    /// 128 KiB, and prompts can be larger).
    pub prompt: PromptMode,
    /// The unattended arguments when liza's sandbox confines the run, for a CLI whose own
    /// sandbox cannot work inside it (`None`: `args`).
    pub sandboxed_args: Option<&'static [&'static str]>,
    /// The interactive arguments when liza's sandbox confines the run (`None`:
    /// `interactive_args`).
    pub sandboxed_interactive_args: Option<&'static [&'static str]>,
    /// Arguments of an interactive run (`liza-agent -i`); the prompt is pointed to by
    /// [`INTERACTIVE_PROMPT`] where `{interactive_prompt}` appears. Empty: no interactive
    /// mode.
    pub interactive_args: &'static [&'static str],
    /// The model flag: `{model}` is replaced by the chosen model.
    pub model_args: &'static [&'static str],
    /// The variable that chooses the model, for a CLI without a model flag.
    pub model_env: Option<&'static str>,
    /// Arguments added only when a variable is set in the supervisor's environment, for
    /// CLIs that no longer read it themselves (`{value}` is its value).
    pub env_args: &'static [(&'static str, &'static [&'static str])],
    /// Secret-looking variables the CLI documents for its authentication and endpoint:
    /// passed through although liza strips every other secret.
    pub pass_env: &'static [&'static str],
    /// Whether it can run shell commands (git, `liza`) itself. A backend that cannot gets
    /// its work submitted by the supervisor, and reviews with a verdict line.
    pub runs_commands: bool,
    /// Files and directories it drops in its working directory: excluded through git's
    /// exclude file so they are never committed nor make a worktree dirty.
    pub drops: &'static [&'static str],
    /// The releases these arguments were verified against (inclusive; `x.y.z`).
    pub tested: (&'static str, &'static str),
    /// Printed when it waits for an interactive login instead of failing: a run that
    /// prints one of these is stopped at once and reported as an authentication error.
    pub login_prompts: &'static [&'static str],
    /// Printed when it has no usable credentials (lower case).
    pub auth_errors: &'static [&'static str],
    /// Its own usage-limit messages beyond the common phrases (lower case).
    pub limit_messages: &'static [&'static str],
    /// Where its key comes from, for the authentication error's hint.
    pub auth_hint: &'static str,
    /// A settings file liza writes for it when some variables are set, to work around
    /// what its environment variables alone cannot select.
    pub settings_file: Option<SettingsFile>,
    /// Its own state — logins, sessions, caches — writable inside the sandbox
    /// (specs/sandbox.md *What a run may touch*): `~/` is `$HOME`, `{config}`, `{data}`,
    /// `{cache}` and `{state}` the XDG directories, `${VAR}` a variable's value (the entry
    /// is skipped when it is not set); a trailing `/` marks a directory, made when missing
    /// so what the CLI writes there is kept.
    pub state: &'static [&'static str],
    /// Its configuration: shown read-only where it exists, so a run cannot change what
    /// the CLI does the next time a person runs it — hooks, MCP servers, plugins, memory
    /// files are commands and instructions that run outside any sandbox — nor what a run
    /// of another agent sharing the state does meanwhile. Where one is missing inside a
    /// state directory, an empty one (`{}` for JSON) is made before the run, so no run
    /// can create it.
    pub config: &'static [&'static str],
    /// The entries of `config` that are the CLI's own program or the packages it
    /// installs: protected where they exist, never made empty where they do not (an empty
    /// one would pass for an install); one a run creates is moved aside after it, with a
    /// role-boundary alarm.
    pub installs: &'static [&'static str],
    /// Its configuration in the project (relative to the worktree): hooks, MCP servers,
    /// tools a coder could leave in its worktree for the reviewer's CLI to run. A
    /// reviewer's run sees none of it — an empty directory, an empty file in its place.
    pub project_config: &'static [&'static str],
    /// Files each agent gets a copy of at every run (what it writes there stays its
    /// own), and directories each agent gets one of its own: what agents sharing the CLI's
    /// state would otherwise fight over, or a file the CLI replaces by renaming over it
    /// (a file shown at its path cannot be).
    pub private: &'static [&'static str],
    /// How it reports the tokens and dollars of a run (specs/ledger.md *What each CLI
    /// reports*; `None`: it does not).
    pub usage: Option<UsageFormat>,
    /// The arguments that make an unattended run report them (`{run_dir}`: a directory of
    /// the run's own, writable in the sandbox).
    pub usage_args: &'static [&'static str],
}

/// A settings file for a CLI: written to `~/.cache/liza/backends/<name>` and named to the CLI by
/// the variable `var`, when every variable of `when_set` is set.
#[derive(Debug, PartialEq, Eq)]
pub struct SettingsFile {
    /// The variables that must all be set, and not empty, for the file to be written.
    pub when_set: &'static [&'static str],
    /// The variable that gives the CLI the file's path; a user who sets it keeps their own.
    pub var: &'static str,
    /// The file's name in the settings directory.
    pub name: &'static str,
    /// What the file holds.
    pub content: &'static str,
    /// Why it is needed (in the file's neighbourhood and in the docs).
    pub why: &'static str,
}

/// The short text an interactive run starts with: the prompt itself may be far larger
/// than one argument may be.
pub const INTERACTIVE_PROMPT: &str =
    "Read the file {prompt_file} and do exactly what it says. It is your whole assignment.";

/// Every built-in CLI backend.
pub const CLIS: &[CliSpec] = &[
    CliSpec {
        name: "claude",
        executable: "claude",
        args: &[
            "-p",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash,Edit,MultiEdit,Write,Read,Glob,Grep,LS",
        ],
        prompt: PromptMode::Stdin,
        sandboxed_args: None,
        sandboxed_interactive_args: None,
        interactive_args: &[
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash,Edit,MultiEdit,Write,Read,Glob,Grep,LS",
            "{interactive_prompt}",
        ],
        model_args: &["--model", "{model}"],
        model_env: None,
        env_args: &[],
        pass_env: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ],
        runs_commands: true,
        drops: &[".claude/"],
        tested: ("2.1.0", "2.1.999"),
        login_prompts: &[],
        auth_errors: &["not logged in", "invalid api key", "please run /login"],
        limit_messages: &["request rejected (429)"],
        auth_hint: "set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint), or log in once with `claude` in a terminal",
        settings_file: None,
        state: &["~/.claude/", "${CLAUDE_CONFIG_DIR}/"],
        config: &[
            "~/.claude/settings.json",
            "~/.claude/settings.local.json",
            "~/.claude/CLAUDE.md",
            "~/.claude/plugins/",
            "~/.claude/hooks/",
            "~/.claude/agents/",
            "~/.claude/commands/",
            "~/.claude/skills/",
            "~/.claude/rules/",
            // Its own program, when it was installed there (`claude install --local`).
            "~/.claude/local/",
        ],
        private: &["~/.claude.json", "~/.claude/sessions/"],
        usage: Some(UsageFormat::ClaudeStreamJson),
        usage_args: &["--output-format", "stream-json", "--verbose"],
        installs: &["~/.claude/local/"],
        project_config: &[".claude/", ".mcp.json"],
    },
    CliSpec {
        name: "codex",
        executable: "codex",
        args: &[
            "exec",
            "--sandbox",
            "workspace-write",
            "--skip-git-repo-check",
            "--cd",
            "{worktree}",
            // Commits write to the worktree's own git dir and the shared objects and
            // refs, and `liza` to .liza/: all must be writable roots of the sandbox.
            "--add-dir",
            "{git_dir}",
            "--add-dir",
            "{worktree_git_dir}",
            "--add-dir",
            "{liza_dir}",
            // A login shell rebuilds PATH and loses liza's directory.
            "-c",
            "allow_login_shell=false",
            "-",
        ],
        prompt: PromptMode::Stdin,
        // Inside liza's sandbox codex's own cannot start (it is bubblewrap too, and
        // liza's forbids nesting user namespaces: "Creating new namespace failed … (ENOSPC)",
        // every command failing while codex exits 0), and its seccomp filter refuses the
        // Unix socket liza's commands go through (tests/fixtures/clis/codex-0.169.0-nested-sandbox.txt).
        sandboxed_args: Some(&[
            "exec",
            "--sandbox",
            "danger-full-access",
            "--skip-git-repo-check",
            "--cd",
            "{worktree}",
            "-c",
            "allow_login_shell=false",
            "-",
        ]),
        sandboxed_interactive_args: Some(&[
            "--sandbox",
            "danger-full-access",
            "--cd",
            "{worktree}",
            "-c",
            "allow_login_shell=false",
            "{interactive_prompt}",
        ]),
        interactive_args: &[
            "--sandbox",
            "workspace-write",
            "--cd",
            "{worktree}",
            "--add-dir",
            "{git_dir}",
            "--add-dir",
            "{worktree_git_dir}",
            "--add-dir",
            "{liza_dir}",
            "-c",
            "allow_login_shell=false",
            "{interactive_prompt}",
        ],
        model_args: &["--model", "{model}"],
        model_env: None,
        env_args: &[("OPENAI_BASE_URL", &["-c", "openai_base_url=\"{value}\""])],
        pass_env: &["CODEX_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"],
        runs_commands: true,
        drops: &[".codex/"],
        tested: ("0.169.0", "0.169.999"),
        login_prompts: &[],
        auth_errors: &[
            "no codex credentials were found",
            "missing api key",
            "not logged in",
            "401 unauthorized",
            "incorrect api key",
        ],
        limit_messages: &["429 too many requests"],
        auth_hint: "set CODEX_API_KEY (or OPENAI_API_KEY) and OPENAI_BASE_URL for another endpoint, or log in once with `codex login`",
        settings_file: None,
        state: &["~/.codex/", "${CODEX_HOME}/"],
        config: &[
            "~/.codex/config.toml",
            "~/.codex/hooks.json",
            "~/.codex/rules/",
            "~/.codex/AGENTS.md",
            "${CODEX_HOME}/config.toml",
            "${CODEX_HOME}/hooks.json",
            "${CODEX_HOME}/rules/",
            "${CODEX_HOME}/AGENTS.md",
        ],
        // The links to its own helpers it makes at each start, then runs (arg0).
        private: &["~/.codex/tmp/"],
        usage: Some(UsageFormat::CodexJson),
        usage_args: &["--json"],
        installs: &[],
        project_config: &[".codex/"],
    },
    CliSpec {
        name: "gemini",
        executable: "gemini",
        args: &["--approval-mode", "yolo", "--skip-trust"],
        prompt: PromptMode::Stdin,
        sandboxed_args: None,
        sandboxed_interactive_args: None,
        interactive_args: &[
            "--approval-mode",
            "yolo",
            "--skip-trust",
            "--prompt-interactive",
            "{interactive_prompt}",
        ],
        model_args: &["--model", "{model}"],
        model_env: None,
        env_args: &[],
        pass_env: &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ],
        runs_commands: true,
        drops: &[".gemini/"],
        tested: ("0.61.0", "0.61.999"),
        login_prompts: &[],
        auth_errors: &[
            "please set an auth method",
            "invalid auth method selected",
            "you must specify the gemini_api_key",
            "api key not valid",
        ],
        limit_messages: &["failed with status 429"],
        auth_hint: "set GEMINI_API_KEY (and GOOGLE_GEMINI_BASE_URL for another endpoint); with a base URL, liza selects the API key in ~/.cache/liza/backends/gemini-system-settings.json, which gemini ignores when a parent directory is writable by others",
        settings_file: Some(SettingsFile {
            when_set: &["GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"],
            var: "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            name: "gemini-system-settings.json",
            content: "{\"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}}\n",
            why: "gemini 0.61 takes GOOGLE_GEMINI_BASE_URL for a `gateway` login that its headless mode then refuses (\"Invalid auth method selected.\", exit 41); selecting the API key keeps the base URL",
        }),
        state: &["~/.gemini/"],
        config: &[
            "~/.gemini/settings.json",
            "~/.gemini/GEMINI.md",
            "~/.gemini/extensions/",
            "~/.gemini/policies/",
            "~/.gemini/skills/",
            "~/.gemini/trustedFolders.json",
        ],
        private: &[],
        usage: Some(UsageFormat::GeminiStreamJson),
        usage_args: &["--output-format", "stream-json"],
        installs: &[],
        project_config: &[".gemini/"],
    },
    CliSpec {
        name: "mistral",
        executable: "vibe",
        // Headless with the prompt from a file; every tool call approved; the worktree
        // trusted for this run (3.0.2).
        args: &[
            "--auto-approve",
            "--trust",
            "--prompt-file",
            "{prompt_file}",
        ],
        prompt: PromptMode::File,
        sandboxed_args: None,
        sandboxed_interactive_args: None,
        interactive_args: &["--auto-approve", "--trust", "{interactive_prompt}"],
        // No model flag: `VIBE_ACTIVE_MODEL` chooses it.
        model_args: &[],
        model_env: Some("VIBE_ACTIVE_MODEL"),
        env_args: &[],
        // The endpoint is a provider in ~/.vibe/config.toml or `VIBE_PROVIDERS` (any
        // config field is a VIBE_* variable); those are not secrets and pass anyway.
        pass_env: &["MISTRAL_API_KEY"],
        runs_commands: true,
        drops: &[".vibe/"],
        tested: ("3.0.2", "3.0.999"),
        login_prompts: &[],
        auth_errors: &["missing mistral_api_key"],
        limit_messages: &["status 429"],
        auth_hint: "set MISTRAL_API_KEY",
        settings_file: None,
        state: &["~/.vibe/", "${VIBE_HOME}/"],
        config: &[
            "~/.vibe/config.toml",
            "~/.vibe/hooks.toml",
            "~/.vibe/tools/",
            "~/.vibe/agents/",
            "~/.vibe/skills/",
            "~/.vibe/prompts/",
            "~/.vibe/AGENTS.md",
            "${VIBE_HOME}/config.toml",
            "${VIBE_HOME}/hooks.toml",
            "${VIBE_HOME}/tools/",
            "${VIBE_HOME}/agents/",
            "${VIBE_HOME}/skills/",
            "${VIBE_HOME}/prompts/",
            "${VIBE_HOME}/AGENTS.md",
        ],
        private: &[],
        usage: Some(UsageFormat::VibeExport),
        usage_args: &["--output-dir", "{run_dir}"],
        installs: &[],
        project_config: &[".vibe/"],
    },
    CliSpec {
        name: "aider",
        executable: "aider",
        args: &[
            "--yes-always",
            "--no-gitignore",
            "--no-check-update",
            "--no-show-release-notes",
            "--no-analytics",
            "--no-pretty",
            "--message-file",
            "{prompt_file}",
        ],
        prompt: PromptMode::File,
        sandboxed_args: None,
        sandboxed_interactive_args: None,
        // Interactive aider takes no first message: the prompt is added read-only.
        interactive_args: &[
            "--no-gitignore",
            "--no-check-update",
            "--no-show-release-notes",
            "--no-analytics",
            "--read",
            "{prompt_file}",
        ],
        model_args: &["--model", "{model}"],
        model_env: None,
        env_args: &[],
        pass_env: &[
            "OPENAI_API_KEY",
            "OPENAI_API_BASE",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "MISTRAL_API_KEY",
            "OPENROUTER_API_KEY",
            "DEEPSEEK_API_KEY",
            "AIDER_OPENAI_API_KEY",
            "AIDER_OPENAI_API_BASE",
            "AIDER_ANTHROPIC_API_KEY",
            "AIDER_API_KEY",
            "AIDER_MODEL",
        ],
        runs_commands: false,
        drops: &[".aider*"],
        tested: ("0.86.2", "0.86.999"),
        login_prompts: &["login to openrouter", "openrouter.ai/auth"],
        auth_errors: &["no llm model was specified", "api key"],
        limit_messages: &["ratelimiterror", "rate limited you"],
        auth_hint: "set OPENAI_API_KEY and OPENAI_API_BASE (or the key of your provider) and choose a model with --model",
        settings_file: None,
        state: &["~/.aider/"],
        config: &[
            "~/.aider.conf.yml",
            "~/.aider.model.settings.yml",
            "~/.aider.model.metadata.json",
        ],
        private: &[],
        usage: Some(UsageFormat::AiderText),
        usage_args: &["--no-stream"],
        installs: &[],
        project_config: &[
            ".aider.conf.yml",
            ".aider.model.settings.yml",
            ".aider.model.metadata.json",
        ],
    },
    CliSpec {
        name: "opencode",
        executable: "opencode",
        // Without --auto, `opencode run` auto-rejects every path outside its directory —
        // the repository's spec, `.liza/` — and exits 0 (1.18.33).
        args: &["run", "--auto"],
        prompt: PromptMode::Stdin,
        sandboxed_args: None,
        sandboxed_interactive_args: None,
        interactive_args: &["--auto", "--prompt", "{interactive_prompt}"],
        model_args: &["--model", "{model}"],
        model_env: None,
        env_args: &[],
        pass_env: &[
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "GEMINI_API_KEY",
            "GOOGLE_GENERATIVE_AI_API_KEY",
            "MISTRAL_API_KEY",
            "OPENROUTER_API_KEY",
            "OPENCODE_CONFIG",
            "OPENCODE_CONFIG_CONTENT",
        ],
        runs_commands: true,
        drops: &[".opencode/"],
        tested: ("1.18.33", "1.18.999"),
        login_prompts: &[],
        auth_errors: &["api key is missing"],
        limit_messages: &[],
        auth_hint: "set the key of your provider (e.g. OPENAI_API_KEY) and its base URL",
        settings_file: None,
        state: &[
            "{config}/opencode/",
            "{data}/opencode/",
            "{state}/opencode/",
            "{cache}/opencode/",
        ],
        config: &[
            "{config}/opencode/opencode.json",
            "{config}/opencode/opencode.jsonc",
            "{config}/opencode/package.json",
            "{config}/opencode/node_modules/",
            "{config}/opencode/plugin/",
            "{config}/opencode/plugins/",
            "{config}/opencode/agent/",
            "{config}/opencode/agents/",
            "{config}/opencode/command/",
            "{config}/opencode/commands/",
            "{config}/opencode/AGENTS.md",
        ],
        // The programs and plugins it fetches and then runs: each agent's own, never the
        // person's.
        private: &["{data}/opencode/bin/", "{cache}/opencode/node_modules/"],
        usage: Some(UsageFormat::OpencodeJson),
        // A title of liza's own: without one it makes a session-title call it never
        // reports (tests/fixtures/clis/usage/opencode-1.18.33-json-notitle.*).
        usage_args: &["--format", "json", "--title", "liza {role} {task_id}"],
        installs: &[
            "{config}/opencode/package.json",
            "{config}/opencode/node_modules/",
        ],
        project_config: &[".opencode/", "opencode.json", "opencode.jsonc"],
    },
];

/// The built-in CLI named `name`.
pub fn find(name: &str) -> Option<&'static CliSpec> {
    CLIS.iter().find(|c| c.name == name)
}

/// Every built-in backend's name (the CLIs and `builtin`).
pub fn names() -> Vec<&'static str> {
    CLIS.iter()
        .map(|c| c.name)
        .chain(std::iter::once("builtin"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_built_in_backend_passes_the_prompt_as_one_argument() {
        // Linux refuses a single argument over 128 KiB (MAX_ARG_STRLEN).
        for cli in CLIS {
            assert_ne!(cli.prompt, PromptMode::Arg, "{}", cli.name);
        }
    }

    #[test]
    fn every_cli_has_a_model_flag_and_a_tested_range() {
        for cli in CLIS {
            assert!(
                cli.model_args.contains(&"{model}") || cli.model_env.is_some(),
                "{}",
                cli.name
            );
            assert!(cli.tested.0 <= cli.tested.1, "{}", cli.name);
        }
    }
}
