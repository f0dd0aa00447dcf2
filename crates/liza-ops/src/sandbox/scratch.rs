//! liza's scratch directories for sandboxed processes: an agent's under
//! `.liza/sandbox/<agent>/` (its `$HOME` kept across its runs, caches and all; `/tmp`
//! emptied before each run), a check's in a temporary directory removed after it.

use std::path::{Path, PathBuf};

use super::layout::Scratch;
use crate::git::Repo;

impl Scratch {
    /// The directories under `dir`, `/tmp` emptied, the git configurations written from
    /// `repo`.
    pub fn prepare(dir: &Path, repo: &Repo) -> std::io::Result<Scratch> {
        let scratch = Scratch {
            home: dir.join("home"),
            tmp: dir.join("tmp"),
            repo_config: dir.join("git-config"),
            run: dir.join("run"),
        };
        match std::fs::remove_dir_all(&scratch.tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        for d in [&scratch.home, &scratch.tmp] {
            std::fs::create_dir_all(d)?;
        }
        // The mount points inside `run`: the repository's objects, a socket made elsewhere.
        std::fs::create_dir_all(scratch.run.join("git-objects"))?;
        if std::fs::symlink_metadata(scratch.socket()).is_err() {
            std::fs::write(scratch.socket(), "")?;
        }
        let repo_config = repo.sandbox_repo_config().map_err(std::io::Error::other)?;
        std::fs::write(&scratch.repo_config, repo_config)?;
        std::fs::write(scratch.global_config(), repo.sandbox_global_config())?;
        Ok(scratch)
    }
}

/// `.liza/sandbox/<agent>`: an agent's scratch directory.
pub fn agent_dir(liza_dir: &Path, agent: &str) -> PathBuf {
    liza_dir.join("sandbox").join(agent)
}
