//! Applying the built-in coder's edits to its worktree, and nothing else
//! (specs/builtin-agent.md *Roles*, specs/quality.md S4): every path is checked before anything is
//! written — relative, no `..`, nothing under `.git/` or `.liza/`, no symlink on the way,
//! inside the task's `paths` when it has any. One bad path refuses the whole answer.
//! Edits come as full files (written in path order) or a unified diff (`git apply`,
//! retried once with trailing whitespace stripped).

use std::path::{Path, PathBuf};

use crate::confine::Escape;
use crate::lifecycle::task_scope::TaskScope;

use crate::sandbox::Jail;

/// One file to write, whole.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Edit {
    /// Where, relative to the worktree.
    pub path: String,
    /// The file's full new content.
    pub content: String,
}

/// Why an edit's path is refused.
#[expect(missing_docs, reason = "each variant's message is its documentation")]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    #[error("`{0}` is empty or not a file path")]
    Empty(String),
    #[error("`{0}` is absolute: edits name files relative to the worktree")]
    Absolute(String),
    #[error("`{0}` goes up with `..`: edits stay inside the worktree")]
    ParentDir(String),
    #[error("`{0}` is under `.git/` or `.liza/`, which agents never write")]
    Protected(String),
    #[error("`{0}` passes through a symbolic link, which could lead outside the worktree")]
    Symlink(String),
    #[error("`{path}` is outside what the task may change ({scope}); {hint}")]
    OutOfScope {
        path: String,
        scope: String,
        hint: String,
    },
}

/// The checked location of `rel` in `worktree`.
pub fn check_path(worktree: &Path, rel: &str, scope: &TaskScope) -> Result<PathBuf, PathRefusal> {
    if rel.trim().ends_with('/') {
        return Err(PathRefusal::Empty(rel.to_owned()));
    }
    let normal = crate::confine::relative(rel).map_err(|e| match e {
        Escape::Empty(_) | Escape::Outside { .. } => PathRefusal::Empty(rel.to_owned()),
        Escape::Private(_) => PathRefusal::Protected(rel.to_owned()),
        Escape::Absolute(_) => PathRefusal::Absolute(rel.to_owned()),
        Escape::ParentDir(_) => PathRefusal::ParentDir(rel.to_owned()),
    })?;
    let parts: Vec<&std::ffi::OsStr> = normal.iter().collect();
    if parts.iter().any(|p| *p == ".git" || *p == ".liza") {
        return Err(PathRefusal::Protected(rel.to_owned()));
    }
    let mut at = worktree.to_path_buf();
    for part in &parts {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(PathRefusal::Symlink(rel.to_owned()));
        }
    }
    // A path is a glob, or a folder or file given plainly (`src/`, `README.md`).
    let in_scope = scope.admits(&normal.to_string_lossy())
        || scope.globs().iter().any(|s| {
            let s = s.trim().trim_start_matches("./").trim_end_matches('/');
            s.is_empty() || normal == Path::new(s) || normal.starts_with(s)
        });
    if !in_scope {
        let shown = normal.to_string_lossy();
        return Err(PathRefusal::OutOfScope {
            path: rel.to_owned(),
            scope: scope.describe(),
            hint: scope.widen_hint(&shown),
        });
    }
    Ok(worktree.join(normal))
}

/// Writes full-file edits after checking every path; returns the paths written. A refused
/// path writes nothing.
pub fn apply_edits(
    worktree: &Path,
    edits: &[Edit],
    scope: &TaskScope,
) -> Result<Vec<String>, NotApplied> {
    let mut checked = Vec::with_capacity(edits.len());
    for edit in edits {
        checked.push((check_path(worktree, &edit.path, scope)?, edit));
    }
    checked.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    let mut written = Vec::new();
    for (path, edit) in checked {
        let unwritable = |folder, source| NotApplied::Unwritable {
            path: edit.path.clone(),
            folder,
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| unwritable(true, e))?;
        }
        std::fs::write(&path, &edit.content).map_err(|e| unwritable(false, e))?;
        written.push(edit.path.trim().to_owned());
    }
    Ok(written)
}

/// Why the model's edits or diff were not applied; the text is what the model is told.
#[derive(Debug, thiserror::Error)]
pub enum NotApplied {
    /// A path in them is refused (nothing applied).
    #[error(transparent)]
    Refused(#[from] PathRefusal),
    /// A file (or its folder) could not be written.
    #[error("could not {} {path}: {source}", if *.folder { "create the folder of" } else { "write" })]
    Unwritable {
        /// The path as the model gave it.
        path: String,
        /// It is the file's folder that could not be made.
        folder: bool,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// `git apply` rejected the diff, also with trailing whitespace stripped.
    #[error("{said}")]
    Rejected {
        /// git's own words (or why git could not run).
        said: String,
    },
}

/// The files a unified diff touches (`--- a/…` / `+++ b/…`, `/dev/null` skipped).
pub fn diff_paths(diff: &str) -> Vec<String> {
    let mut paths: Vec<String> = diff
        .lines()
        .filter_map(|l| l.strip_prefix("+++ ").or_else(|| l.strip_prefix("--- ")))
        .map(|p| p.split('\t').next().unwrap_or(p).trim())
        .filter(|p| *p != "/dev/null")
        .map(|p| {
            p.strip_prefix("a/")
                .or_else(|| p.strip_prefix("b/"))
                .unwrap_or(p)
                .to_owned()
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// Applies a unified diff in `worktree` after checking its paths, `git apply` running in
/// `jail` (the model wrote the diff).
pub fn apply_diff(
    worktree: &Path,
    diff: &str,
    scope: &TaskScope,
    jail: &Jail,
) -> Result<Vec<String>, NotApplied> {
    let paths = diff_paths(diff);
    if paths.is_empty() {
        return Err(NotApplied::Rejected {
            said: "the diff names no file".into(),
        });
    }
    for p in &paths {
        check_path(worktree, p, scope)?;
    }
    match git_apply(worktree, diff, jail) {
        Ok(()) => Ok(paths),
        Err(_) => {
            let stripped: String = diff
                .lines()
                .map(|l| format!("{}\n", l.trim_end()))
                .collect();
            git_apply(worktree, &stripped, jail)
                .map(|()| paths)
                .map_err(|e| NotApplied::Rejected {
                    // What the model is shown of a refused patch: git's own words.
                    said: match e {
                        crate::git::GitError::Refused { said, .. } => said,
                        other => other.to_string(),
                    },
                })
        }
    }
}

/// The diff applied in the task's sandbox, through the git wrapper.
fn git_apply(worktree: &Path, diff: &str, jail: &Jail) -> Result<(), crate::git::GitError> {
    crate::git::cli::apply_patch(worktree, diff, |argv| jail.argv(argv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn worktree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            assert!(
                Command::new("git")
                    .args(args)
                    .current_dir(dir.path())
                    .output()
                    .unwrap()
                    .status
                    .success()
            );
        };
        run(&["init", "-q"]);
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "fn a() {}\n").unwrap();
        dir
    }

    fn limited(paths: &[&str]) -> TaskScope {
        TaskScope {
            task: "t-1".into(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
            tests: crate::blackboard::model::Config::default().test_paths(),
        }
    }

    fn open() -> TaskScope {
        limited(&[])
    }

    #[test]
    fn s4_paths_that_leave_the_worktree_or_touch_git_or_liza_are_refused() {
        let dir = worktree();
        let wt = dir.path();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), wt.join("link")).unwrap();
        let refused = [
            ("/etc/passwd", "absolute"),
            ("../escape.txt", "`..`"),
            ("src/../../escape.txt", "`..`"),
            (".git/config", ".git/"),
            ("sub/.git/hooks/pre-commit", ".git/"),
            (".liza/state.yaml", ".liza/"),
            ("link/owned.txt", "symbolic link"),
            ("", "empty"),
            ("src/", "empty"),
        ];
        for (path, says) in refused {
            let err = check_path(wt, path, &open()).unwrap_err().to_string();
            assert!(err.contains(says), "{path}: {err}");
        }
        // One bad path refuses the whole answer: nothing is written.
        let edits = [
            Edit {
                path: "src/new.rs".into(),
                content: "x".into(),
            },
            Edit {
                path: "link/owned.txt".into(),
                content: "x".into(),
            },
        ];
        assert!(apply_edits(wt, &edits, &open()).is_err());
        assert!(!wt.join("src/new.rs").exists());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn scope_limits_edits_to_the_task_paths() {
        let dir = worktree();
        let scope = limited(&["src/", "README.md"]);
        assert!(check_path(dir.path(), "src/deep/x.rs", &scope).is_ok());
        assert!(check_path(dir.path(), "./README.md", &scope).is_ok());
        // Tests go with the task's files.
        assert!(check_path(dir.path(), "tests/x.rs", &scope).is_ok());
        let err = check_path(dir.path(), "docs/x.md", &scope).unwrap_err();
        assert!(matches!(err, PathRefusal::OutOfScope { .. }));
        let said = err.to_string();
        assert!(said.contains("`docs/**` would admit docs/x.md"), "{said}");
        assert!(
            said.contains("liza amend-task t-1 --paths src/,README.md,docs/**"),
            "{said}"
        );
    }

    #[test]
    fn full_files_are_written_and_diffs_applied_even_with_trailing_whitespace() {
        let dir = worktree();
        let wt = dir.path();
        let written = apply_edits(
            wt,
            &[Edit {
                path: "src/b/c.rs".into(),
                content: "fn c() {}\n".into(),
            }],
            &open(),
        )
        .unwrap();
        assert_eq!(written, ["src/b/c.rs"]);
        assert_eq!(
            std::fs::read_to_string(wt.join("src/b/c.rs")).unwrap(),
            "fn c() {}\n"
        );
        let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1,2 @@\n fn a() {}   \n+fn b() {}\n";
        assert_eq!(
            apply_diff(wt, diff, &open(), &Jail::Unconfined).unwrap(),
            ["src/lib.rs"]
        );
        assert_eq!(
            std::fs::read_to_string(wt.join("src/lib.rs")).unwrap(),
            "fn a() {}\nfn b() {}\n"
        );
        let bad = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-fn zzz() {}\n+fn y() {}\n";
        assert!(matches!(
            apply_diff(wt, bad, &open(), &Jail::Unconfined),
            Err(NotApplied::Rejected { .. })
        ));
        let escape = "--- a/../x\n+++ b/../x\n@@ -0,0 +1 @@\n+x\n";
        assert!(matches!(
            apply_diff(wt, escape, &open(), &Jail::Unconfined),
            Err(NotApplied::Refused(_))
        ));
    }
}
