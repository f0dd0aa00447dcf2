//! Which agent CLI a backend is: the six liza knows by name, its own built-in agent, or
//! one a project defines in `config.agent_tools`. Decisions that depend on the CLI go by
//! this kind, never by comparing names.

/// The kind of a backend, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// Anthropic's `claude`.
    Claude,
    /// OpenAI's `codex`.
    Codex,
    /// Google's `gemini`.
    Gemini,
    /// Mistral's `vibe`.
    Mistral,
    /// `aider`.
    Aider,
    /// `opencode`.
    Opencode,
    /// liza's own agent (`liza builtin`).
    Builtin,
    /// A CLI the project defines.
    Other,
}

impl BackendKind {
    /// The kind of the backend named `name` (`config.default_cli`, `--cli`).
    pub fn of(name: &str) -> BackendKind {
        match name {
            "claude" => BackendKind::Claude,
            "codex" => BackendKind::Codex,
            "gemini" => BackendKind::Gemini,
            "mistral" => BackendKind::Mistral,
            "aider" => BackendKind::Aider,
            "opencode" => BackendKind::Opencode,
            "builtin" => BackendKind::Builtin,
            _ => BackendKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_cli_has_its_own_kind() {
        let mut kinds: Vec<BackendKind> = crate::backend::catalog::CLIS
            .iter()
            .map(|c| BackendKind::of(c.name))
            .collect();
        assert!(!kinds.contains(&BackendKind::Other));
        kinds.dedup();
        assert_eq!(kinds.len(), crate::backend::catalog::CLIS.len());
        assert_eq!(BackendKind::of("builtin"), BackendKind::Builtin);
        assert_eq!(BackendKind::of("my-agent"), BackendKind::Other);
    }
}
