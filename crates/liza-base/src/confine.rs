//! Paths that come from the blackboard or an agent (a task's `spec_ref` and `paths`, a
//! planner's artifacts) stay inside the repository: one check for all of them, so a
//! hostile hand edit or agent cannot make liza read `/etc/passwd` into a prompt or copy
//! it into `.liza/specs/`.

use std::path::{Component, Path, PathBuf};

/// Why a path is not let through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Escape {
    /// An empty path names no file.
    #[error("`{0}` is empty")]
    Empty(String),
    /// A path from the file system's root, not the repository's.
    #[error("`{0}` is absolute; name files relative to the repository root")]
    Absolute(String),
    /// A path that climbs out with `..`.
    #[error("`{0}` goes up with `..`; name files inside the repository")]
    ParentDir(String),
    #[error("`{path}` leads outside the repository (to {resolved}) through a symbolic link")]
    /// A path whose symbolic link leads out of the repository.
    Outside {
        /// The path as it was given.
        path: String,
        /// Where its links lead.
        resolved: String,
    },
    /// Liza's and git's own places, which sandboxed agents do not see: a spec there would
    /// hand one agent another's worktree or the repository's credentials.
    #[error(
        "`{0}` is in liza's or git's own files (.liza/, .worktrees/, .git/); name a file of the project"
    )]
    Private(String),
}

/// The top-level directories of the repository that are liza's or git's, not the
/// project's.
const PRIVATE_TOP: &[&str] = &[".liza", ".worktrees", ".git"];

fn private(normal: &Path) -> bool {
    normal
        .components()
        .next()
        .is_some_and(|c| PRIVATE_TOP.iter().any(|p| c.as_os_str() == *p))
}

/// `rel` as a plain relative path (no root, no `..`, `.` dropped): the check that needs
/// no file system, for the transition rules.
pub fn relative(rel: &str) -> Result<PathBuf, Escape> {
    let trimmed = rel.trim();
    let mut normal = PathBuf::new();
    for component in Path::new(trimmed).components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(Escape::ParentDir(rel.to_owned())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(Escape::Absolute(rel.to_owned()));
            }
        }
    }
    if normal.as_os_str().is_empty() {
        return Err(Escape::Empty(rel.to_owned()));
    }
    if private(&normal) {
        return Err(Escape::Private(rel.to_owned()));
    }
    Ok(normal)
}

/// Where `rel` is under `root`, symbolic links resolved, if that is still inside `root`.
/// A path that does not exist yet is judged by its deepest existing ancestor.
pub fn inside(root: &Path, rel: &str) -> Result<PathBuf, Escape> {
    let normal = relative(rel)?;
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let joined = root.join(&normal);
    // The deepest part that exists decides where the path really leads.
    let mut existing = joined.as_path();
    let resolved = loop {
        match existing.canonicalize() {
            Ok(real) => match joined.strip_prefix(existing) {
                // `join("")` would add a trailing slash, which no file has.
                Ok(rest) if !rest.as_os_str().is_empty() => break real.join(rest),
                _ => break real,
            },
            Err(_) => match existing.parent() {
                Some(parent) => existing = parent,
                None => break joined.clone(),
            },
        }
    };
    let Ok(within) = resolved.strip_prefix(&root) else {
        return Err(Escape::Outside {
            path: rel.to_owned(),
            resolved: resolved.display().to_string(),
        });
    };
    if private(within) {
        return Err(Escape::Private(rel.to_owned()));
    }
    Ok(resolved)
}

/// The text of the file `rel` under `root`, if it is inside and readable.
pub fn read_inside(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(inside(root, rel).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_relative_paths_pass_and_are_normalised() {
        assert_eq!(
            relative("./specs/x.md").unwrap(),
            PathBuf::from("specs/x.md")
        );
        assert!(matches!(relative("/etc/passwd"), Err(Escape::Absolute(_))));
        assert!(matches!(
            relative("specs/../../x"),
            Err(Escape::ParentDir(_))
        ));
        assert!(matches!(relative(" "), Err(Escape::Empty(_))));
        for private in [
            ".git/config",
            ".worktrees/t-2/secret.txt",
            "./.liza/state.yaml",
        ] {
            assert!(
                matches!(relative(private), Err(Escape::Private(_))),
                "{private}"
            );
        }
        assert!(relative("docs/.git-notes.md").is_ok());
    }

    #[test]
    fn a_link_into_liza_or_git_files_is_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".worktrees/t-2")).unwrap();
        std::fs::write(root.path().join(".worktrees/t-2/secret.txt"), "s").unwrap();
        std::fs::create_dir(root.path().join("specs")).unwrap();
        std::os::unix::fs::symlink(
            "../.worktrees/t-2/secret.txt",
            root.path().join("specs/other.md"),
        )
        .unwrap();
        assert!(matches!(
            inside(root.path(), "specs/other.md"),
            Err(Escape::Private(_))
        ));
        assert_eq!(read_inside(root.path(), "specs/other.md"), None);
    }

    #[test]
    fn symlinks_out_of_the_root_are_refused_and_inside_ones_followed() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::fs::create_dir(root.path().join("specs")).unwrap();
        std::fs::write(root.path().join("specs/real.md"), "r").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            root.path().join("specs/evil.md"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("away")).unwrap();
        std::os::unix::fs::symlink("real.md", root.path().join("specs/alias.md")).unwrap();
        assert!(matches!(
            inside(root.path(), "specs/evil.md"),
            Err(Escape::Outside { .. })
        ));
        assert!(matches!(
            inside(root.path(), "away/secret"),
            Err(Escape::Outside { .. })
        ));
        assert!(matches!(
            inside(root.path(), "away/not-yet"),
            Err(Escape::Outside { .. })
        ));
        assert_eq!(
            read_inside(root.path(), "specs/alias.md").as_deref(),
            Some("r")
        );
        assert!(inside(root.path(), "specs/new/file.md").is_ok());
        assert_eq!(read_inside(root.path(), "specs/evil.md"), None);
    }
}
