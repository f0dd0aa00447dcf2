//! The project a command works on, found from the current directory, and who is acting.

use super::hand_edits::HandEditRules;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, channel};

use super::alarms::Fired;

use super::OpsError;
use crate::blackboard::{Actor, AgentId, Store};
use crate::git::{GitError, find_project_root};

/// A project: a repository's main checkout and its blackboard.
pub struct Project {
    /// The main checkout's root.
    pub root: PathBuf,
    /// The blackboard, opened with the lifecycle's rules for hand edits.
    pub store: Store,
}

impl Project {
    /// Finds the repository's main checkout from `cwd` (any subdirectory or worktree)
    /// and opens its blackboard.
    pub fn discover(cwd: &Path) -> Result<Project, OpsError> {
        Project::discover_with(cwd, HandEditRules::new)
    }

    /// [`Project::discover`], with the alarms its hand-edit reconciliations raise also
    /// sent to the returned receiver (the watcher shows them like its own).
    pub fn discover_forwarding_alarms(cwd: &Path) -> Result<(Project, Receiver<Fired>), OpsError> {
        let (to, from) = channel();
        let project = Project::discover_with(cwd, |dir| HandEditRules::new(dir).forwarding(to))?;
        Ok((project, from))
    }

    fn discover_with(
        cwd: &Path,
        rules: impl FnOnce(PathBuf) -> HandEditRules,
    ) -> Result<Project, OpsError> {
        let root = match find_project_root(cwd) {
            Ok(root) => root,
            Err(GitError::NotARepository { .. }) => {
                return Err(OpsError::NoProject {
                    cwd: cwd.display().to_string(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let rules = rules(crate::blackboard::LizaPaths::new(&root).dir);
        let store = Store::open(&root, std::sync::Arc::new(rules))?;
        Ok(Project { root, store })
    }
}

/// The blackboard of the project at `root`, with the lifecycle's rules for hand edits
/// (what a person may change, the alarms of a rejected save): the one way to open it.
pub fn open_store(root: &Path) -> Result<Store, OpsError> {
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let dir = crate::blackboard::LizaPaths::new(&root).dir;
    Ok(Store::open(
        &root,
        std::sync::Arc::new(HandEditRules::new(dir)),
    )?)
}

/// The actor from `LIZA_AGENT_ID` + `LIZA_AGENT_GENERATION`; a person when unset.
pub fn actor_from_env() -> Result<Actor, OpsError> {
    match std::env::var("LIZA_AGENT_ID") {
        Ok(id) if !id.is_empty() => {
            let id = AgentId::parse(&id).map_err(OpsError::BadIdentity)?;
            let generation = std::env::var("LIZA_AGENT_GENERATION")
                .ok()
                .filter(|g| !g.is_empty());
            Ok(Actor::Agent { id, generation })
        }
        _ => Ok(Actor::Human),
    }
}
