//! Fixtures for the tests of this crate and of the crates above it (feature `testing`).

use liza_git::testing::{commit_file, init};

use crate::ops::{self, InitRequest, Project};

/// A git repository on `main` with one commit (`specs/vision.md`), initialised as a liza
/// project whose goal is "Add a --json flag"; the directory lives as long as the
/// `TempDir`.
///
/// # Panics
///
/// When the directory, the repository or the project cannot be made.
pub fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    init(dir.path(), "main");
    commit_file(dir.path(), "specs/vision.md", "# Vision\n", "spec");
    ops::init(InitRequest {
        goal: "Add a --json flag".into(),
        spec: None,
        integration_branch: None,
        base: None,
        git_remote: None,
        cwd: dir.path().to_path_buf(),
    })
    .expect("the fixture's project initialises");
    let project = Project::discover(dir.path()).expect("the fixture's project is found");
    (dir, project)
}
