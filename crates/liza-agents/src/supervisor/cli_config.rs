//! A CLI's configuration as its sandboxed runs see it (specs/sandbox.md *What a run may
//! touch*): hooks, MCP servers, plugins, memory — what the CLI runs or reads at its next
//! start, a person's unsandboxed session included. A run may change none of it, nor create
//! any for another run to load: the person's configuration is shown read-only, a missing
//! one is made empty first (a run would otherwise create it in the state directory every
//! run of the CLI shares), and a reviewer's run does not see the configuration the coder
//! could leave in the worktree it reviews.

use std::path::{Path, PathBuf};

use crate::backend::Backend;
use crate::sandbox::layout::Mount;

/// The CLI's configuration in the person's home, prepared for one run.
#[derive(Debug, Default)]
pub(super) struct UserConfig {
    /// Shown read-only.
    pub protected: Vec<PathBuf>,
    /// Missing and not made (the CLI's own program, or outside a state directory): one
    /// the run creates is moved aside after it.
    pub watched: Vec<PathBuf>,
    /// Made empty before this run.
    pub made: Vec<PathBuf>,
}

/// The configuration of `backend` on this machine (`lookup` reads its environment):
/// what exists protected, what is missing inside a state directory made empty, the rest
/// watched.
pub(super) fn user_config(
    backend: &Backend,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> UserConfig {
    let states: Vec<PathBuf> = backend
        .state_paths(lookup)
        .into_iter()
        .filter_map(|(path, dir)| dir.then_some(path))
        .collect();
    let installs = backend.install_paths(lookup);
    let mut config = UserConfig::default();
    for (path, dir) in backend.config_paths(lookup) {
        let missing = std::fs::symlink_metadata(&path).is_err();
        let shared = path.parent().is_some_and(|p| states.iter().any(|s| s == p));
        let install = installs.iter().any(|(p, _)| *p == path);
        if missing && shared && !install && make_empty(&path, dir).is_ok() {
            config.made.push(path.clone());
        }
        if std::fs::symlink_metadata(&path).is_ok() {
            config.protected.push(path);
        } else {
            config.watched.push(path);
        }
    }
    config
}

/// Makes `path` an empty directory, or a file with nothing in it a CLI would act on
/// (`{}` for JSON): never through a link (`path`'s parent is a state directory, which
/// no run can replace).
fn make_empty(path: &Path, dir: bool) -> std::io::Result<()> {
    if dir {
        return std::fs::create_dir(path);
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    std::io::Write::write_all(&mut file, empty_text(path).as_bytes())
}

/// What an empty configuration file of `path`'s kind holds.
fn empty_text(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json" | "jsonc") => "{}\n",
        _ => "",
    }
}

/// The configuration of `backend` that `worktree` holds, masked for a reviewer's run:
/// an empty writable directory over a directory (what the CLI writes there is thrown
/// away), an empty file of liza's (in `scratch`) over a file. Only what leads to files
/// in the worktree is masked: elsewhere the coder wrote nothing.
pub(super) fn reviewer_masks(
    backend: &Backend,
    worktree: &Path,
    scratch: &Path,
) -> std::io::Result<Vec<Mount>> {
    let Ok(root) = worktree.canonicalize() else {
        return Ok(Vec::new());
    };
    let mut masks = Vec::new();
    for (rel, _) in backend.project_config() {
        // A link there leads the CLI to what it names: that is masked (bubblewrap
        // mounts where the link leads), when it is the coder's.
        let Ok(real) = worktree.join(&rel).canonicalize() else {
            continue;
        };
        if !real.starts_with(&root) {
            continue;
        }
        if real.is_dir() {
            masks.push(Mount::Shadow(real));
        } else {
            let empty = scratch.join(format!("empty-config{}", dot_extension(&real)));
            if !empty.is_file() {
                std::fs::write(&empty, empty_text(&real))?;
            }
            masks.push(Mount::ReadOnly {
                from: empty,
                to: real,
            });
        }
    }
    Ok(masks)
}

fn dot_extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .map(|e| format!(".{e}"))
        .unwrap_or_default()
}

/// Moves the configuration a run created at `watched` paths aside, beside where it was
/// (`<name>.liza-moved-<ts>`): a person's next session of the CLI does not load it, and
/// nothing is lost. The paths moved, and where to.
pub(super) fn move_aside_created(watched: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    watched
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            let aside = (0..)
                .map(|n| {
                    let suffix = if n == 0 {
                        String::new()
                    } else {
                        format!(".{n}")
                    };
                    path.with_file_name(format!("{name}.liza-moved-{stamp}{suffix}"))
                })
                .find(|p| std::fs::symlink_metadata(p).is_err())?;
            std::fs::rename(path, &aside).ok()?;
            Some((path.clone(), aside))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_configuration_says_nothing_in_its_format() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("settings.json");
        make_empty(&json, false).unwrap();
        assert_eq!(std::fs::read_to_string(&json).unwrap(), "{}\n");
        let toml = dir.path().join("config.toml");
        make_empty(&toml, false).unwrap();
        assert_eq!(std::fs::read_to_string(&toml).unwrap(), "");
        make_empty(&dir.path().join("hooks"), true).unwrap();
        assert!(dir.path().join("hooks").is_dir());
        // Never over what is there, a link included.
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link.json")).unwrap();
        assert!(make_empty(&dir.path().join("link.json"), false).is_err());
    }

    #[test]
    fn created_configuration_is_moved_aside_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("settings.json");
        std::fs::write(&made, "{\"hooks\": {}}").unwrap();
        let absent = dir.path().join("hooks");
        let moved = move_aside_created(&[made.clone(), absent]);
        assert_eq!(moved.len(), 1);
        assert!(!made.exists());
        assert_eq!(
            std::fs::read_to_string(&moved[0].1).unwrap(),
            "{\"hooks\": {}}"
        );
    }
}
