//! Where the built-in agent's model lives and how long a call may take
//! (specs/builtin-agent.md *Configuration*): the environment first for the endpoint and the key,
//! `config.builtin` for the model per role.

use std::time::Duration;

use crate::blackboard::ids::Role;
use crate::blackboard::model::{BuiltinConfig, ValidationMode};

/// The endpoint when `LIZA_LLM_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model when no setting names one.
pub const DEFAULT_MODEL: &str = "gpt-4o";
/// The request timeout when `LIZA_LLM_TIMEOUT` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Attempts per question when `config.builtin.max_attempts` is not set.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 2;
/// The context budget, in estimated tokens, when `config.builtin.context_tokens` is not set.
pub const DEFAULT_CONTEXT_TOKENS: usize = 8_000;

/// One endpoint and model, with the rules a role's calls follow.
#[derive(Clone)]
pub struct Endpoint {
    /// Without the trailing `/`; `/chat/completions` is appended.
    pub base_url: String,
    /// Sent as a bearer token; never written anywhere (see [`super::scrub`]).
    pub api_key: Option<String>,
    /// The model asked, sent as the request's `model`.
    pub model: String,
    /// The whole request, body included: a trickling server is cut off here.
    pub timeout: Duration,
    /// How strictly an answer is held to the role's schema (`config.builtin.validation_mode`).
    pub validation_mode: ValidationMode,
    /// How many times a role asks again for an answer that fails its schema.
    pub max_attempts: u32,
    /// The budget for the context a role sends, in estimated tokens (at least 256).
    pub context_tokens: usize,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[set]"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The environment a process reads its endpoint from (a function, so tests and the demo
/// can give their own without touching the process environment).
pub trait Env {
    /// The value of variable `name`, if it is set.
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

impl<F: Fn(&str) -> Option<String>> Env for F {
    fn var(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// Why the model endpoint cannot be used as set, or its client set up.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// `LIZA_LLM_BASE_URL` is no HTTP URL.
    #[error(
        "LIZA_LLM_BASE_URL is `{0}`: it must start with http:// or https:// (e.g. http://127.0.0.1:11434/v1 for Ollama)"
    )]
    BaseUrl(String),
    /// `LIZA_LLM_TIMEOUT` is no number of seconds.
    #[error("LIZA_LLM_TIMEOUT is `{0}`: give the request timeout in seconds, e.g. 120")]
    Timeout(String),
    /// The HTTP client could not be set up.
    #[error("could not set up the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

impl Endpoint {
    /// The endpoint for `role`. The model is the most specific setting:
    /// `config.builtin.<role>.model`, then `LIZA_LLM_MODEL`, then `config.builtin.model`,
    /// then `gpt-4o`. The timeout is `LIZA_LLM_TIMEOUT` seconds (default 120).
    pub fn resolve(
        env: &dyn Env,
        config: &BuiltinConfig,
        role: Role,
    ) -> Result<Endpoint, EndpointError> {
        let role_model = match role {
            Role::Planner => config.planner.as_ref(),
            Role::Coder => config.coder.as_ref(),
            Role::CodeReviewer => config.code_reviewer.as_ref(),
        }
        .and_then(|r| r.model.clone());
        Endpoint::resolve_model(env, config, role_model)
    }

    /// The endpoint for model work that belongs to no agent role (`liza retro`'s coder
    /// agents): the model is `LIZA_LLM_MODEL`, then `config.builtin.model`, then gpt-4o.
    pub fn resolve_roleless(
        env: &dyn Env,
        config: &BuiltinConfig,
    ) -> Result<Endpoint, EndpointError> {
        Endpoint::resolve_model(env, config, None)
    }

    fn resolve_model(
        env: &dyn Env,
        config: &BuiltinConfig,
        role_model: Option<String>,
    ) -> Result<Endpoint, EndpointError> {
        let base_url = env
            .var("LIZA_LLM_BASE_URL")
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let base_url = base_url.trim().trim_end_matches('/').to_owned();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(EndpointError::BaseUrl(base_url));
        }
        let api_key = env
            .var("LIZA_LLM_API_KEY")
            .or_else(|| env.var("OPENAI_API_KEY"));
        let model = role_model
            .or_else(|| env.var("LIZA_LLM_MODEL"))
            .or_else(|| config.model.clone())
            .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let timeout = match env.var("LIZA_LLM_TIMEOUT") {
            None => DEFAULT_TIMEOUT,
            Some(text) => match text.trim().parse::<f64>() {
                Ok(secs) if secs.is_finite() && secs > 0.0 => Duration::from_secs_f64(secs),
                _ => return Err(EndpointError::Timeout(text)),
            },
        };
        Ok(Endpoint {
            base_url,
            api_key,
            model,
            timeout,
            validation_mode: config.validation_mode.unwrap_or(ValidationMode::Strict),
            max_attempts: config
                .max_attempts
                .map_or(DEFAULT_MAX_ATTEMPTS, |n| n.clamp(1, 10) as u32),
            context_tokens: config
                .context_tokens
                .map_or(DEFAULT_CONTEXT_TOKENS, |n| n.max(256) as usize),
        })
    }

    /// The URL requests are posted to: the base URL and `/chat/completions`.
    pub fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// Whether the endpoint is on this machine (no proxy is used for it).
    pub fn is_loopback(&self) -> bool {
        let rest = self
            .base_url
            .split_once("://")
            .map_or(self.base_url.as_str(), |(_, r)| r);
        let host = rest.split(['/', ':']).next().unwrap_or("");
        host == "localhost" || host.starts_with("127.") || rest.starts_with("[::1]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackboard::model::BuiltinRoleConfig;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn defaults() {
        let e = Endpoint::resolve(&env(&[]), &BuiltinConfig::default(), Role::Coder).unwrap();
        assert_eq!(e.chat_url(), "https://api.openai.com/v1/chat/completions");
        assert_eq!(e.model, "gpt-4o");
        assert_eq!(e.timeout, Duration::from_secs(120));
        assert_eq!(e.validation_mode, ValidationMode::Strict);
        assert!(e.api_key.is_none());
        assert!(!e.is_loopback());
    }

    #[test]
    fn the_most_specific_model_wins_and_the_key_falls_back_to_openai() {
        let config = BuiltinConfig {
            model: Some("from-config".into()),
            code_reviewer: Some(BuiltinRoleConfig {
                model: Some("reviewer-model".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let e = env(&[
            ("LIZA_LLM_MODEL", "from-env"),
            ("OPENAI_API_KEY", "sk-fallback-key"),
            ("LIZA_LLM_BASE_URL", "http://127.0.0.1:8080/v1/"),
        ]);
        let reviewer = Endpoint::resolve(&e, &config, Role::CodeReviewer).unwrap();
        assert_eq!(reviewer.model, "reviewer-model");
        assert_eq!(reviewer.api_key.as_deref(), Some("sk-fallback-key"));
        assert_eq!(
            reviewer.chat_url(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert!(reviewer.is_loopback());
        let coder = Endpoint::resolve(&e, &config, Role::Coder).unwrap();
        assert_eq!(coder.model, "from-env");
        let none = Endpoint::resolve(&env(&[]), &config, Role::Planner).unwrap();
        assert_eq!(none.model, "from-config");
    }

    #[test]
    fn bad_settings_say_what_to_write() {
        let err = Endpoint::resolve(
            &env(&[("LIZA_LLM_BASE_URL", "localhost:8080")]),
            &BuiltinConfig::default(),
            Role::Coder,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("http://"), "{err}");
        let err = Endpoint::resolve(
            &env(&[("LIZA_LLM_TIMEOUT", "soon")]),
            &BuiltinConfig::default(),
            Role::Coder,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("seconds"), "{err}");
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let e = Endpoint::resolve(
            &env(&[("LIZA_LLM_API_KEY", "canary-123456789")]),
            &BuiltinConfig::default(),
            Role::Coder,
        )
        .unwrap();
        assert!(!format!("{e:?}").contains("canary"));
    }
}
