//! Which checkouts of a repository have a branch checked out, read from the HEAD files
//! themselves (the main checkout's and each linked worktree's under
//! `<git dir>/worktrees/<name>/`): plain reads of a few small regular files, no git
//! process, no libgit2 and no lock of git's — cheap and bounded enough for the store's
//! validation under the state lock (a hand edit setting `config.integration_branch`).

use std::path::{Path, PathBuf};

use liza_base::untrusted::read_regular;

/// A HEAD or gitdir file is a line; anything longer is not one.
const LINE: u64 = 4096;

/// The checkouts (working directories) whose HEAD is `refs/heads/<branch>`: the main one
/// at `workdir` (if any) and every linked worktree of the repository at `git_dir`.
pub fn on_branch(git_dir: &Path, workdir: Option<&Path>, branch: &str) -> Vec<PathBuf> {
    let full = format!("refs/heads/{branch}");
    let mut found = Vec::new();
    if let Some(dir) = workdir
        && head_is(&git_dir.join("HEAD"), &full)
    {
        found.push(dir.to_path_buf());
    }
    let Ok(entries) = std::fs::read_dir(git_dir.join("worktrees")) else {
        return found;
    };
    let mut linked: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    linked.sort();
    for admin in linked {
        // A worktree's HEAD is a file an agent may have swapped for a FIFO: read as a
        // regular file or not at all.
        if !head_is(&admin.join("HEAD"), &full) {
            continue;
        }
        // `gitdir` names the worktree's `.git` file: its directory is the checkout.
        if let Some(dot_git) = read_line(&admin.join("gitdir")) {
            let dot_git = PathBuf::from(dot_git);
            found.push(dot_git.parent().map_or(dot_git.clone(), Path::to_path_buf));
        }
    }
    found
}

/// The checkouts of the repository whose working directory is `root` (its `.git` a
/// directory, or a `gitdir:` file) that have `branch` checked out.
pub fn on_branch_from_root(root: &Path, branch: &str) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        match read_line(&dot_git).and_then(|l| l.strip_prefix("gitdir:").map(str::to_owned)) {
            Some(dir) => root.join(dir.trim()),
            None => return Vec::new(),
        }
    };
    // A linked worktree's git dir is `<common>/worktrees/<name>`: the branches it
    // competes with are the common repository's.
    let common = read_line(&git_dir.join("commondir"))
        .and_then(|c| git_dir.join(c).canonicalize().ok())
        .unwrap_or_else(|| git_dir.clone());
    // The root's own HEAD, whatever its layout (`.git` directory, `--separate-git-dir`,
    // a submodule's `gitdir:`, a linked worktree); then the main checkout when the root
    // is a linked worktree of a `.git` directory, and every linked worktree.
    let mut found = on_branch(&common, None, branch);
    if head_is(&git_dir.join("HEAD"), &format!("refs/heads/{branch}")) {
        found.push(root.to_path_buf());
    }
    if common != git_dir
        && common.ends_with(".git")
        && let Some(main) = common.parent()
        && head_is(&common.join("HEAD"), &format!("refs/heads/{branch}"))
    {
        found.push(main.to_path_buf());
    }
    found.sort();
    found.dedup();
    found
}

fn head_is(head: &Path, full_ref: &str) -> bool {
    read_line(head).is_some_and(|line| {
        line.strip_prefix("ref:")
            .is_some_and(|target| target.trim() == full_ref)
    })
}

fn read_line(path: &Path) -> Option<String> {
    let bytes = read_regular(path, LINE)?;
    Some(String::from_utf8_lossy(&bytes).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// As git itself writes them: the main checkout on `main`, a linked worktree on
    /// `side`, one detached; asked from the main checkout or from a linked one.
    #[test]
    fn the_checkouts_on_a_branch_are_read_from_the_head_files_git_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        git(
            &root,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "a",
            ],
        );
        let side = dir.path().join("side");
        let detached = dir.path().join("detached");
        git(
            &root,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "side",
                side.to_str().unwrap(),
            ],
        );
        git(
            &root,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                detached.to_str().unwrap(),
            ],
        );
        assert_eq!(on_branch_from_root(&root, "main"), vec![root.clone()]);
        assert_eq!(on_branch_from_root(&root, "side"), vec![side.clone()]);
        assert_eq!(on_branch_from_root(&detached, "main"), vec![root.clone()]);
        assert_eq!(on_branch_from_root(&detached, "side"), vec![side.clone()]);
        assert!(on_branch_from_root(&root, "nothing").is_empty());
        // A checkout whose git directory lives elsewhere (`--separate-git-dir`, as
        // submodules have) is read through its `gitdir:` file.
        let separate = dir.path().join("separate");
        std::fs::create_dir(&separate).unwrap();
        let store = dir.path().join("store.git");
        git(
            &separate,
            &[
                "init",
                "-q",
                "-b",
                "trunk",
                "--separate-git-dir",
                store.to_str().unwrap(),
            ],
        );
        assert_eq!(
            on_branch_from_root(&separate, "trunk"),
            vec![separate.clone()]
        );
        // A HEAD swapped for a FIFO is not waited on: it is no checkout of anything.
        let head = root.join(".git/worktrees/side/HEAD");
        std::fs::remove_file(&head).unwrap();
        nix::unistd::mkfifo(&head, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(on_branch_from_root(&root, "side").is_empty());
    }
}
