//! The backends a supervisor may run (specs/ledger.md *Fallbacks*): the one `--cli` (or
//! `config.default_cli`) names first, then its fallbacks — the rest of `--cli a,b,c`, else
//! `config.agent_tools.<first>.fallback` — each resolved and checked at start-up like the
//! first, and each one's account: the fingerprint its usage limits are shared under.

use std::path::Path;

use super::SupervisorError;
use super::ports::Spawner;
use crate::backend::Backend;
use crate::blackboard::Role;
use crate::blackboard::model::Config;

/// What resolving one backend of the chain needs.
pub(super) struct Wanted<'a> {
    pub config: &'a Config,
    /// `--model`: the first backend's (a model of one provider means nothing to another).
    pub model: Option<&'a str>,
    pub interactive: bool,
    pub role: Role,
    pub spawner: &'a dyn Spawner,
    pub root: &'a Path,
    /// Where settings files for the CLIs are written.
    pub settings_dir: &'a Path,
}

/// The names `--cli` gives, in order: `claude,codex,builtin`; a single name gains its
/// configured fallbacks. Each name once.
pub(super) fn names(cli: &str, config: &Config) -> Vec<String> {
    let mut names: Vec<String> = cli
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    if names.len() == 1 {
        let configured = config
            .agent_tools
            .iter()
            .flat_map(|t| t.0.iter())
            .find(|(name, _)| *name == names[0])
            .and_then(|(_, tool)| tool.fallback.clone())
            .unwrap_or_default();
        names.extend(configured);
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// Resolves and checks the backends named, in order.
pub(super) fn resolve(
    names: &[String],
    wanted: &Wanted<'_>,
) -> Result<Vec<Backend>, SupervisorError> {
    let mut chain = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let model = if i == 0 { wanted.model } else { None };
        let mut backend =
            Backend::resolve(name, wanted.config, model, &|var| std::env::var(var).ok())
                .map_err(SupervisorError::Backend)?;
        backend
            .check_usable_with(&|program| wanted.spawner.find(program))
            .map_err(SupervisorError::Backend)?;
        if wanted.interactive && i == 0 && !backend.has_interactive_mode() {
            return Err(SupervisorError::NoInteractiveMode { name: name.clone() });
        }
        if wanted.role == Role::Planner && !backend.runs_commands {
            // A plan is made of `liza add-task` commands; nothing can be taken from its
            // answer on its behalf.
            return Err(SupervisorError::CannotPlan { name: name.clone() });
        }
        keep_drops_out_of_git(wanted.root, &backend);
        if let Err(e) =
            backend.write_settings_file(wanted.settings_dir, &|var| std::env::var(var).ok())
        {
            tracing::warn!(error = %e, backend = %name, "could not write the backend's settings file");
        }
        chain.push(backend);
    }
    Ok(chain)
}

/// Keeps the files the backend's CLI drops in a worktree (`.aider*`, `.gemini/` …) out of
/// git through the repository's exclude file: never committed, never making a worktree
/// dirty. A failure only costs that protection, so it is logged, not fatal.
pub(super) fn keep_drops_out_of_git(root: &std::path::Path, backend: &Backend) {
    if backend.drops.is_empty() {
        return;
    }
    let patterns: Vec<&str> = backend.drops.iter().map(String::as_str).collect();
    let why = format!("files the {} agent CLI drops", backend.name);
    if let Err(e) = crate::git::Repo::open(root).and_then(|r| r.add_excludes(&patterns, &why)) {
        tracing::warn!(error = %e, "could not add the backend's files to .git/info/exclude");
    }
}

/// The account a backend runs on: 12 hex digits of a hash of the values of the variables
/// it authenticates and picks its endpoint with (those set, by name) — two keys are two
/// quotas, and the fingerprint says nothing of the key. With none set the CLI runs on a
/// login of its own, in this user's home on this host: `login-` and a hash of both, so
/// one person's subscription limit never holds another's.
pub(crate) fn account(backend: &Backend, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut vars: Vec<&String> = backend.keep_env.iter().collect();
    vars.sort();
    let mut hasher = blake3::Hasher::new();
    let mut any = false;
    for var in vars {
        let value = backend
            .env
            .iter()
            .find(|(k, _)| k == var)
            .map(|(_, v)| v.clone())
            .or_else(|| env(var))
            .filter(|v| !v.is_empty());
        if let Some(value) = value {
            any = true;
            hasher.update(var.as_bytes());
            hasher.update(b"=");
            hasher.update(value.as_bytes());
            hasher.update(b"\n");
        }
    }
    if !any {
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_default();
        let home = env("HOME").unwrap_or_default();
        let login = blake3::hash(format!("{host}\n{home}").as_bytes()).to_hex();
        return format!("login-{}", &login[..8]);
    }
    hasher.finalize().to_hex()[..12].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackboard::codec::IdMap;
    use crate::blackboard::model::AgentTool;

    #[test]
    fn a_single_backend_gains_its_configured_fallbacks_and_each_name_comes_once() {
        let config = Config {
            agent_tools: Some(IdMap(vec![(
                "claude".to_owned(),
                AgentTool {
                    fallback: Some(vec!["codex".into(), "builtin".into(), "claude".into()]),
                    ..AgentTool::default()
                },
            )])),
            ..Config::default()
        };
        assert_eq!(names("claude", &config), ["claude", "codex", "builtin"]);
        // Named on the command line, the list is the person's.
        assert_eq!(
            names("claude, gemini,,claude", &config),
            ["claude", "gemini"]
        );
        assert_eq!(names("codex", &config), ["codex"]);
    }

    #[test]
    fn two_keys_are_two_accounts_and_a_login_is_its_home_on_its_host() {
        let config = Config::default();
        let claude = Backend::resolve("claude", &config, None, &|_| None).unwrap();
        let key = |value: &'static str| {
            move |var: &str| (var == "ANTHROPIC_API_KEY").then(|| value.to_owned())
        };
        let a = account(&claude, &key("sk-ant-one"));
        let b = account(&claude, &key("sk-ant-two"));
        assert_ne!(a, b);
        assert_eq!(a, account(&claude, &key("sk-ant-one")));
        assert_eq!(a.len(), 12);
        assert!(!a.contains("sk-ant"));
        let login = account(&claude, &|_| None);
        assert!(login.starts_with("login-"), "{login}");
        let other_home = account(&claude, &|v| (v == "HOME").then(|| "/home/other".into()));
        assert_ne!(login, other_home);
    }
}
