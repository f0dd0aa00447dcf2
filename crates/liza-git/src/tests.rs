//! The git wrapper on real repositories in temporary directories: commit ids, branches,
//! merge candidates of every kind, the compare-and-swap publish, WIP commits, task
//! worktrees and what retiring one saves.

use std::path::Path;

use super::testing::commit_file;
use super::*;
use liza_model::ids::TaskId;

/// A repository with one commit on `main` (`a.txt`), and its path.
fn repo() -> (tempfile::TempDir, Repo) {
    let dir = tempfile::tempdir().unwrap();
    testing::init(dir.path(), "main");
    let repo = Repo::open(dir.path()).unwrap();
    commit_file(dir.path(), "a.txt", "one\n", "first");
    (dir, repo)
}

fn task(id: &str) -> TaskId {
    TaskId::parse(id).unwrap()
}

#[test]
fn commit_ids_come_back_typed_and_full_length() {
    let (dir, repo) = repo();
    let head = head_of(dir.path()).unwrap();
    assert_eq!(head.len(), 40);
    assert_eq!(repo.resolve_commit("HEAD").unwrap(), head);
    assert_eq!(repo.resolve_commit(&head[..8]).unwrap(), head);
    assert_eq!(repo.branch_tip("main").unwrap(), Some(head));
    assert_eq!(repo.branch_tip("nope").unwrap(), None);
    assert!(matches!(
        repo.resolve_commit("no-such-thing"),
        Err(GitError::UnknownRevision { .. })
    ));
}

#[test]
fn merge_candidates_fast_forward_merge_conflict_or_already_merged() {
    let (dir, repo) = repo();
    let base = head_of(dir.path()).unwrap();
    repo.create_branch("integration", &base).unwrap();
    let ahead = commit_file(dir.path(), "b.txt", "two\n", "ahead");
    assert_eq!(
        repo.merge_candidate(&base, &ahead, "m").unwrap(),
        Candidate::FastForward {
            commit: ahead.clone()
        }
    );
    assert_eq!(
        repo.merge_candidate(&ahead, &base, "m").unwrap(),
        Candidate::AlreadyMerged {
            commit: ahead.clone()
        }
    );
    // Integration moves on elsewhere: a merge commit with both parents.
    let wt = tempfile::tempdir().unwrap();
    let other = git2::Repository::clone(dir.path().to_str().unwrap(), wt.path()).unwrap();
    other
        .reset(
            &other
                .find_object(git2::Oid::from_str(&base).unwrap(), None)
                .unwrap(),
            git2::ResetType::Hard,
            None,
        )
        .unwrap();
    let side = commit_file(wt.path(), "c.txt", "three\n", "side");
    let fetched = std::process::Command::new("git")
        .args(["fetch", "-q"])
        .arg(wt.path())
        .arg(format!("{side}:refs/heads/side"))
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(fetched.success());
    let Candidate::MergeCommit { commit } = repo.merge_candidate(&side, &ahead, "m").unwrap()
    else {
        panic!("not a merge commit");
    };
    assert_eq!(repo.count_commits(&base, &commit).unwrap(), 3);
    assert_eq!(
        repo.file_at(&commit, "c.txt").unwrap().as_deref(),
        Some(&b"three\n"[..])
    );
    // The same file changed on both sides: a conflict, nothing written to a ref.
    let left = commit_file(dir.path(), "a.txt", "left\n", "left");
    std::fs::write(wt.path().join("a.txt"), "right\n").unwrap();
    let right = commit_file(wt.path(), "a.txt", "right\n", "right");
    let fetched = std::process::Command::new("git")
        .args(["fetch", "-q"])
        .arg(wt.path())
        .arg(format!("{right}:refs/heads/right"))
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(fetched.success());
    assert_eq!(
        repo.merge_candidate(&left, &right, "m").unwrap(),
        Candidate::Conflict {
            paths: vec!["a.txt".to_owned()]
        }
    );
}

#[test]
fn publish_is_a_compare_and_swap_of_the_branch() {
    let (dir, repo) = repo();
    let base = head_of(dir.path()).unwrap();
    repo.create_branch("integration", &base).unwrap();
    let next = commit_file(dir.path(), "b.txt", "two\n", "next");
    let later = commit_file(dir.path(), "b.txt", "three\n", "later");
    assert_eq!(
        repo.publish("integration", &base, &next, "test").unwrap(),
        Published::Done
    );
    assert_eq!(repo.branch_tip("integration").unwrap(), Some(next.clone()));
    // Expecting the old tip again: refused, and told where the branch is now.
    assert_eq!(
        repo.publish("integration", &base, &later, "test").unwrap(),
        Published::Moved {
            tip: Some(next.clone())
        }
    );
    assert_eq!(repo.branch_tip("integration").unwrap(), Some(next));
}

#[test]
fn a_wip_commit_takes_every_change_and_nothing_when_clean() {
    let (dir, repo) = repo();
    assert_eq!(repo.commit_wip(dir.path(), "a test").unwrap(), None);
    std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
    std::fs::write(dir.path().join("new.txt"), "new\n").unwrap();
    assert_eq!(dirty_files(dir.path()).unwrap(), ["a.txt", "new.txt"]);
    let wip = repo.commit_wip(dir.path(), "a test").unwrap().unwrap();
    assert_eq!(head_of(dir.path()).unwrap(), wip);
    assert!(dirty_files(dir.path()).unwrap().is_empty());
    let message = git2::Repository::open(dir.path())
        .unwrap()
        .find_commit(git2::Oid::from_str(&wip).unwrap())
        .unwrap()
        .message()
        .unwrap()
        .to_owned();
    assert_eq!(message, "WIP: saved by liza before a test");
}

#[test]
fn a_task_worktree_is_made_on_its_branch_and_retiring_it_saves_its_work() {
    let (dir, repo) = repo();
    let base = head_of(dir.path()).unwrap();
    repo.create_branch("integration", &base).unwrap();
    let id = task("t-1");
    let saved = repo
        .create_task_worktree(dir.path(), &id, &base, "integration", "a fresh claim")
        .unwrap();
    assert_eq!(saved, SavedWork::default());
    let wt = worktree_dir(dir.path(), &id);
    assert_eq!(head_of(&wt).unwrap(), base);
    assert!(repo.worktree_present(dir.path(), &id));
    // Work: a commit on the task branch, and an uncommitted file.
    let work = commit_file(&wt, "w.txt", "work\n", "work");
    std::fs::write(wt.join("draft.txt"), "draft\n").unwrap();
    assert_eq!(repo.changed_files(&base, &work).unwrap(), ["w.txt"]);
    assert!(repo.is_ancestor(&base, &work).unwrap());
    assert!(!repo.is_ancestor(&work, &base).unwrap());
    // Claimed afresh: the old worktree's files become a WIP commit on an attic branch.
    let saved = repo
        .create_task_worktree(dir.path(), &id, &base, "integration", "a takeover")
        .unwrap();
    let wip = saved.wip_commit.clone().expect("the draft was saved");
    let attic = saved.attic.clone().expect("the unmerged commits were kept");
    assert_eq!(repo.branch_tip(&attic).unwrap(), Some(wip.clone()));
    assert_eq!(
        repo.file_at(&wip, "draft.txt").unwrap().as_deref(),
        Some(&b"draft\n"[..])
    );
    assert_eq!(repo.attic_refs(&id), vec![(attic, wip)]);
    assert_eq!(
        head_of(&wt).unwrap(),
        base,
        "the new worktree starts at the base"
    );
}

#[test]
fn branch_names_are_checked_before_they_are_made() {
    let (dir, repo) = repo();
    let base = head_of(dir.path()).unwrap();
    assert!(Repo::is_valid_branch_name("task/t-1"));
    assert!(!Repo::is_valid_branch_name("bad..name"));
    assert!(matches!(
        repo.create_branch("bad..name", &base),
        Err(GitError::InvalidBranchName { .. })
    ));
    repo.create_branch("one", &base).unwrap();
    assert!(
        repo.create_branch("one", &base).is_err(),
        "never moves a branch"
    );
    repo.delete_branch("one").unwrap();
    assert_eq!(repo.branch_tip("one").unwrap(), None);
}

/// A second repository's objects dir holding `text` as a blob, its id, and the dir.
fn private_store_with(text: &str) -> (tempfile::TempDir, git2::Oid, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let other = git2::Repository::init_bare(dir.path()).unwrap();
    let id = other.blob(text.as_bytes()).unwrap();
    (dir, id, other.path().join("objects"))
}

#[test]
fn a_private_stores_objects_come_in_checked_and_a_forged_one_is_refused() {
    let (_dir, repo) = repo();
    let (_other, real, objects) = private_store_with("real content\n");
    // A forged object: another blob's bytes under the name of content it is not.
    let claimed = git2::Oid::hash_object(git2::ObjectType::Blob, b"what it claims\n").unwrap();
    let hex = |o: git2::Oid| o.to_string();
    let from = objects.join(&hex(real)[..2]).join(&hex(real)[2..]);
    let to = objects.join(&hex(claimed)[..2]).join(&hex(claimed)[2..]);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(&from, &to).unwrap();
    let imported = repo.import_objects(&objects).unwrap();
    assert_eq!(imported.copied, 1);
    assert_eq!(imported.forged, [hex(claimed)]);
    assert!(repo.inner.odb().unwrap().exists(real));
    assert!(!repo.inner.odb().unwrap().exists(claimed));
    // Copying again copies nothing.
    assert_eq!(repo.import_objects(&objects).unwrap().copied, 0);
}

#[test]
fn a_private_branch_is_replayed_by_compare_and_swap_or_kept_in_the_attic() {
    let (dir, repo) = repo();
    let base = head_of(dir.path()).unwrap();
    let id = task("t-1");
    repo.create_branch("task/t-1", &base).unwrap();
    let first = commit_file(dir.path(), "b.txt", "two\n", "second");
    let second = commit_file(dir.path(), "c.txt", "three\n", "third");
    let log = format!(
        "{base} {first} a <a@a> 1 +0000\tcommit: second\n{first} {second} a <a@a> 2 +0000\tcommit: third\n"
    );
    let moved = repo
        .replay_task_branch(&id, Some(&base), &second, &log, 0, "coder-1")
        .unwrap();
    assert_eq!(
        moved,
        BranchSync::Moved {
            to: second.clone(),
            steps: 2
        }
    );
    assert_eq!(repo.branch_tip("task/t-1").unwrap(), Some(second.clone()));
    let reflog = repo.inner.reflog("refs/heads/task/t-1").unwrap();
    assert_eq!(reflog.len(), 3, "each private step is in the real reflog");
    assert_eq!(
        reflog.get(0).unwrap().message(),
        Some("coder-1 (sandboxed): commit: third")
    );
    // The real branch moved meanwhile: the private tip goes to the attic, the branch stays.
    let kept = repo
        .replay_task_branch(&id, Some(&base), &first, "", 0, "coder-1")
        .unwrap();
    assert!(
        matches!(&kept, BranchSync::Diverged { kept_as, .. } if kept_as == "liza/attic/t-1-1"),
        "{kept:?}"
    );
    assert_eq!(repo.branch_tip("task/t-1").unwrap(), Some(second));
    assert_eq!(repo.branch_tip("liza/attic/t-1-1").unwrap(), Some(first));
    // A tip that names nothing the repository has is left alone.
    assert!(matches!(
        repo.replay_task_branch(&id, None, &"f".repeat(40), "", 0, "coder-1")
            .unwrap(),
        BranchSync::Unusable { .. }
    ));
}

#[test]
fn a_worktree_head_pointed_at_another_branch_is_put_back_on_its_task_branch() {
    let (dir, repo) = repo();
    let id = task("t-1");
    let base = head_of(dir.path()).unwrap();
    repo.create_task_worktree(dir.path(), &id, &base, "main", "test")
        .unwrap();
    let wt = worktree_dir(dir.path(), &id);
    let head_file = repo.inner.path().join("worktrees/t-1/HEAD");
    std::fs::write(&head_file, "ref: refs/heads/main\n").unwrap();
    assert_eq!(
        repo.keep_head_on_task_branch(&wt, &id).unwrap().as_deref(),
        Some("refs/heads/main")
    );
    assert_eq!(
        std::fs::read_to_string(&head_file).unwrap(),
        "ref: refs/heads/task/t-1\n"
    );
    // A detached HEAD (the agent's own commit) stays.
    std::fs::write(&head_file, format!("{base}\n")).unwrap();
    assert_eq!(repo.keep_head_on_task_branch(&wt, &id).unwrap(), None);
    // A FIFO in its place is not waited on: HEAD is written anew.
    std::fs::remove_file(&head_file).unwrap();
    nix::unistd::mkfifo(&head_file, nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert_eq!(
        repo.keep_head_on_task_branch(&wt, &id).unwrap().as_deref(),
        Some("no readable HEAD")
    );
    assert_eq!(
        std::fs::read_to_string(&head_file).unwrap(),
        "ref: refs/heads/task/t-1\n"
    );
}

/// What a check or an agent leaves in one of liza's worktrees never leads liza's git out
/// of it: a FIFO is removed before git reads (it would wait for ever), and a checkout
/// replaces a link in its way instead of writing through it.
#[test]
fn liza_git_never_waits_on_a_fifo_nor_writes_through_a_link_in_a_worktree() {
    let (dir, repo) = repo();
    let id = task("t-1");
    let base = head_of(dir.path()).unwrap();
    repo.create_task_worktree(dir.path(), &id, &base, "main", "test")
        .unwrap();
    let wt = worktree_dir(dir.path(), &id);
    let outside = tempfile::tempdir().unwrap();
    let fifo = |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::create_dir_all(wt.join("sub")).unwrap();
    fifo(&wt.join("sub/.gitignore"));
    fifo(&outside.path().join("pipe"));
    std::os::unix::fs::symlink(outside.path().join("pipe"), wt.join("to-a-pipe")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("pipe"), wt.join(".gitattributes")).unwrap();
    let own = own_git_dir(&wt).unwrap();
    std::fs::remove_file(own.join("index")).ok();
    fifo(&own.join("index"));
    // Each of these would hang git for ever: the test fails instead of waiting with it.
    let (done, finished) = std::sync::mpsc::channel();
    let reading = wt.clone();
    std::thread::spawn(move || done.send(dirty_files(&reading).is_ok()));
    assert!(
        finished
            .recv_timeout(std::time::Duration::from_secs(30))
            .is_ok(),
        "git waited on a FIFO in the worktree"
    );
    for gone in ["sub/.gitignore", "to-a-pipe", ".gitattributes"] {
        assert!(std::fs::symlink_metadata(wt.join(gone)).is_err(), "{gone}");
    }
    assert!(std::fs::symlink_metadata(own.join("index")).is_err());
    repo.reset_worktree(&wt, base.as_str()).unwrap();
    assert!(dirty_files(&wt).unwrap().is_empty());
    // A checkout writes no file through a link a check left in the worktree.
    std::fs::write(wt.join("f.txt"), "x").unwrap();
    std::fs::create_dir_all(wt.join("dir")).unwrap();
    std::fs::write(wt.join("dir/g.txt"), "y").unwrap();
    let with_files = repo.commit_all(&wt, "files").unwrap().unwrap();
    std::fs::remove_file(wt.join("f.txt")).unwrap();
    std::fs::remove_dir_all(wt.join("dir")).unwrap();
    let without = repo.commit_all(&wt, "none").unwrap().unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim"), wt.join("f.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), wt.join("dir")).unwrap();
    assert_ne!(with_files, without);
    repo.reset_worktree(&wt, with_files.as_str()).unwrap();
    assert!(!outside.path().join("victim").exists());
    assert!(!outside.path().join("g.txt").exists());
    assert_eq!(std::fs::read_to_string(wt.join("dir/g.txt")).unwrap(), "y");
    assert_eq!(std::fs::read_to_string(wt.join("f.txt")).unwrap(), "x");
}

/// A stale index lock of git's in a worktree is named — the exact file, and the fix — when
/// liza's git needs that index (specs/git.md *Git's locks*).
#[test]
fn a_stale_index_lock_in_a_worktree_is_named_with_its_file() {
    let (dir, repo) = repo();
    let id = task("t-1");
    let base = head_of(dir.path()).unwrap();
    repo.create_task_worktree(dir.path(), &id, &base, "main", "test")
        .unwrap();
    let wt = worktree_dir(dir.path(), &id);
    std::fs::write(wt.join("wip.txt"), "work\n").unwrap();
    let lock = repo.inner.path().join("worktrees/t-1/index.lock");
    std::fs::write(&lock, "").unwrap();
    let err = repo.commit_all(&wt, "WIP").unwrap_err();
    match &err {
        GitError::Locked { lock: found, .. } => {
            assert_eq!(
                found.path.canonicalize().unwrap(),
                lock.canonicalize().unwrap()
            );
            assert!(found.holders.is_empty());
        }
        other => panic!("not named as a lock: {other:?}"),
    }
    let text = liza_base::error::Diagnostic::hints(&err).join(" ");
    assert!(text.contains("rm '"), "{text}");
    assert!(err.to_string().contains("index.lock"), "{err}");
    std::fs::remove_file(&lock).unwrap();
    assert!(repo.commit_all(&wt, "WIP").unwrap().is_some());
}

/// The locks a commit in a worktree takes are removed when no process holds them and they
/// are older than the caller's quiet time; a younger one may be a live git's between
/// closing its lock and renaming it (a hook, an editor), and is kept; one held open is
/// kept (specs/git.md *Git's locks*).
#[test]
fn stale_commit_locks_are_removed_only_when_unheld_and_older_than_the_quiet_time() {
    let (dir, repo) = repo();
    let id = task("t-1");
    let base = head_of(dir.path()).unwrap();
    repo.create_task_worktree(dir.path(), &id, &base, "main", "test")
        .unwrap();
    let admin = repo.inner.path().join("worktrees/t-1");
    let refs = repo.inner.path().join("refs/heads/task");
    let locks = [
        admin.join("index.lock"),
        admin.join("HEAD.lock"),
        admin.join("AUTO_MERGE.lock"),
        refs.join("t-1.lock"),
    ];
    for lock in &locks {
        std::fs::write(lock, "").unwrap();
    }
    let hour = std::time::Duration::from_secs(3600);
    assert!(repo.clear_stale_commit_locks(&id, hour).is_empty());
    assert!(locks.iter().all(|l| l.exists()));

    let held = std::fs::File::open(&locks[0]).unwrap();
    let removed = repo.clear_stale_commit_locks(&id, std::time::Duration::ZERO);
    assert_eq!(removed.len(), 3, "{removed:?}");
    assert!(locks[0].exists(), "a lock held open is kept");
    assert!(locks[1..].iter().all(|l| !l.exists()));
    drop(held);
    assert_eq!(
        repo.clear_stale_commit_locks(&id, std::time::Duration::ZERO)
            .len(),
        1
    );
    assert!(!locks[0].exists());
}
