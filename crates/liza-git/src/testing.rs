//! Fixtures for the tests of this crate and of the crates above it (feature `testing`):
//! repositories made by hand with libgit2, so that a test's setting-up does not go
//! through the git code it tests.

use std::path::Path;

use liza_model::model::CommitId;

/// Writes `text` to `path` (its folders made) in the checkout at `dir` and commits it on
/// HEAD, the repository's first commit when it has none; returns the commit.
///
/// # Panics
///
/// When the file cannot be written or libgit2 cannot commit: a fixture that fails has
/// nothing to hand to the test.
pub fn commit_file(dir: &Path, path: &str, text: &str, message: &str) -> CommitId {
    let file = dir.join(path);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).expect("the fixture's folder is writable");
    }
    std::fs::write(&file, text).expect("the fixture's file is writable");
    let repo = git2::Repository::open(dir).expect("the fixture's repository opens");
    let mut index = repo.index().expect("the fixture's index reads");
    index
        .add_path(Path::new(path))
        .expect("the fixture's file is added");
    index.write().expect("the fixture's index writes");
    let tree = repo
        .find_tree(index.write_tree().expect("the fixture's tree writes"))
        .expect("the fixture's tree reads");
    let sig = git2::Signature::now("t", "t@t").expect("a signature");
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let oid = repo
        .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .expect("the fixture commits");
    CommitId::of_object(oid.to_string())
}

/// A new repository at `dir` whose HEAD is `branch` (no commit yet).
///
/// # Panics
///
/// When libgit2 cannot create it.
pub fn init(dir: &Path, branch: &str) {
    let repo = git2::Repository::init(dir).expect("the fixture's repository is created");
    repo.set_head(&format!("refs/heads/{branch}"))
        .expect("the fixture's HEAD is set");
}
