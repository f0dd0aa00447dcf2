//! Whether what a process runs is confined (specs/sandbox.md *Modes*): `config.sandbox.mode`,
//! a supervisor's `--no-sandbox` and the machine decide it once; liveness records,
//! `liza status`, the dashboard, `liza doctor`, agent logs and `agent_run_ended` entries
//! say which it is.

use super::mechanism::{Availability, Bwrap, availability};
use crate::blackboard::model::{SandboxConfig, SandboxMode};

/// How the agents and checks of this process run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// Inside a bubblewrap sandbox.
    Sandboxed(Bwrap),
    /// Unconfined: `state` says whether by choice (`off`) or for want of the mechanism
    /// (`unavailable`).
    Unconfined {
        /// By choice, or for want of the mechanism.
        state: Unconfined,
        /// Why, in a person's words.
        why: String,
        /// What to do about it: set when the mechanism is unavailable.
        fix: Option<String>,
    },
}

/// Why agents and checks run unconfined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unconfined {
    /// Turned off: `config.sandbox.mode: off`, or `--no-sandbox`.
    Off,
    /// `auto` found no working mechanism on this machine.
    Unavailable,
}

/// `config.sandbox.mode: required`, and no sandbox can be started here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config.sandbox.mode is required, and no sandbox can be started here: {reason}")]
pub struct SandboxRequired {
    /// What is missing or refused, in a person's words.
    pub reason: String,
    /// What to do about it.
    pub fix: String,
}

impl Confinement {
    /// The confinement `config` asks for on this machine; `off_by` names a person's choice
    /// that turns it off for this process (`--no-sandbox`).
    pub fn decide(
        config: &SandboxConfig,
        off_by: Option<&str>,
    ) -> Result<Confinement, SandboxRequired> {
        if let Some(who) = off_by {
            return Ok(Confinement::off(format!("turned off by {who}")));
        }
        if config.mode() == SandboxMode::Off {
            return Ok(Confinement::off("config.sandbox.mode is off".into()));
        }
        match availability() {
            Availability::Available(bwrap) => Ok(Confinement::Sandboxed(bwrap.clone())),
            Availability::Unavailable { reason, fix } => match config.mode() {
                SandboxMode::Required => Err(SandboxRequired {
                    reason: reason.clone(),
                    fix: fix.clone(),
                }),
                _ => Ok(Confinement::Unconfined {
                    state: Unconfined::Unavailable,
                    why: reason.clone(),
                    fix: Some(fix.clone()),
                }),
            },
        }
    }

    fn off(why: String) -> Confinement {
        Confinement::Unconfined {
            state: Unconfined::Off,
            why,
            fix: None,
        }
    }

    /// `on`, `off` or `unavailable`: the word liveness records, `--json` and the
    /// `agent_run_ended` entries carry.
    pub fn state_name(&self) -> &'static str {
        match self {
            Confinement::Sandboxed(_) => "on",
            Confinement::Unconfined {
                state: Unconfined::Off,
                ..
            } => "off",
            Confinement::Unconfined {
                state: Unconfined::Unavailable,
                ..
            } => "unavailable",
        }
    }

    /// The mechanism's version, or why there is none and the fix: one line for people.
    pub fn note(&self) -> String {
        match self {
            Confinement::Sandboxed(bwrap) => bwrap.version.clone(),
            Confinement::Unconfined { why, fix, .. } => match fix {
                Some(fix) => format!("{why}; fix: {fix}"),
                None => why.clone(),
            },
        }
    }

    /// bubblewrap, when sandboxed.
    pub fn bwrap(&self) -> Option<&Bwrap> {
        match self {
            Confinement::Sandboxed(bwrap) => Some(bwrap),
            Confinement::Unconfined { .. } => None,
        }
    }
}
