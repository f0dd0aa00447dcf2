//! Finding the project root — the repository's main checkout, where `.liza/` lives —
//! from any directory inside it or inside one of its linked worktrees.
//!
//! Done with plain file reads (no libgit2 open) because every command starts with it.

use std::fs;
use std::path::{Path, PathBuf};

use super::GitError;

/// The main checkout of the repository containing `start`.
pub fn find_project_root(start: &Path) -> Result<PathBuf, GitError> {
    let start = fs::canonicalize(start).map_err(|source| GitError::Io {
        action: "resolve",
        path: start.to_path_buf(),
        source,
    })?;
    for dir in start.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = fs::metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            return Ok(dir.to_path_buf());
        }
        if meta.is_file() {
            return root_from_gitfile(dir, &dot_git);
        }
    }
    Err(GitError::NotARepository { path: start })
}

/// A `.git` file points at the git directory (`gitdir: …`); a linked worktree's git
/// directory names the repository's common directory in its `commondir` file.
fn root_from_gitfile(dir: &Path, dot_git: &Path) -> Result<PathBuf, GitError> {
    let io = |source| GitError::Io {
        action: "read",
        path: dot_git.to_path_buf(),
        source,
    };
    let text = fs::read_to_string(dot_git).map_err(io)?;
    let Some(target) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) else {
        return Err(GitError::NotARepository {
            path: dir.to_path_buf(),
        });
    };
    let gitdir = dir.join(target.trim());
    let common = match fs::read_to_string(gitdir.join("commondir")) {
        Ok(rel) => gitdir.join(rel.trim()),
        // Not a linked worktree: a main checkout whose git directory lives elsewhere.
        Err(_) => return Ok(dir.to_path_buf()),
    };
    let common = fs::canonicalize(&common).map_err(|source| GitError::Io {
        action: "resolve",
        path: common.clone(),
        source,
    })?;
    if common.file_name().is_some_and(|n| n == ".git")
        && let Some(parent) = common.parent()
    {
        return Ok(parent.to_path_buf());
    }
    // A separate git directory: ask libgit2 where the main working tree is.
    let repo = git2::Repository::open(&common).map_err(|source| GitError::Git2 {
        action: format!("open {}", common.display()),
        source,
    })?;
    repo.workdir()
        .map(Path::to_path_buf)
        .ok_or(GitError::Bare { path: common })
}
