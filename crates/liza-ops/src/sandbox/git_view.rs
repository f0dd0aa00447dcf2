//! The git of a sandboxed coder's run (specs/sandbox.md *Git in the sandbox*): its
//! commits go to a private object store, its task branch and that branch's reflog are a
//! private copy — nothing it does reaches the repository's objects, `integration` or
//! another task's branch. [`PrivateStore::sync`] brings its work in, checked: before every
//! `liza` command it sends through the channel and when the run ends.

use std::path::{Path, PathBuf};

use super::layout::{PrivateGit, SHARED_OBJECTS};
use crate::blackboard::TaskId;
use crate::blackboard::model::CommitId;
use crate::git::{BranchSync, GitError, Imported, Repo, own_git_dir, task_branch};
use crate::untrusted;

/// A coder's private git store for one run.
pub struct PrivateStore {
    /// Where its objects, its task ref and its reflog are on the host.
    pub paths: PrivateGit,
    task: TaskId,
    worktree: PathBuf,
    /// The branch tip the real branch had at the last sync (`None`: no branch yet).
    baseline: Option<CommitId>,
    /// Reflog lines already replayed.
    known_lines: usize,
    /// The worktree's `config.worktree` before the run (absent: `None`).
    config_worktree: Option<Vec<u8>>,
    who: String,
    /// Stray branches already reported.
    reported: Vec<String>,
    /// What the syncs so far found the run doing that it may not, not yet reported.
    found: Vec<String>,
}

/// What one sync did that a person must hear of.
#[derive(Debug, Default)]
pub struct Synced {
    /// The objects copied into the repository, and those refused.
    pub imported: Imported,
    /// What replaying the private task branch did; `None` when the private copy names
    /// no tip.
    pub branch: Option<BranchSync>,
    /// The branch the worktree's HEAD named before it was put back.
    pub head_was: Option<String>,
    /// The worktree's `config.worktree` was changed and is put back.
    pub config_restored: bool,
    /// Branches it made in its private `refs/heads/task/` besides its own: ignored.
    pub stray_refs: Vec<String>,
    /// Links and FIFOs it planted in its object store or its worktree's git metadata:
    /// removed.
    pub planted: Vec<String>,
    /// Its branch's ref was gone (packed into a `packed-refs` that went with its
    /// sandbox): its tip was taken from its reflog.
    pub lost_ref: bool,
}

impl Synced {
    /// What the run did that it may not, as phrases for a role-boundary alarm.
    pub fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.imported.forged.is_empty() {
            out.push(format!(
                "wrote {} git object file(s) liza refused — content that does not match its name, or not an object file: {}",
                self.imported.forged.len(),
                self.imported.forged.join(", ")
            ));
        }
        if self.lost_ref {
            out.push(
                "removed its branch's ref (git pack-refs or gc): its tip was taken from its reflog"
                    .into(),
            );
        }
        if let Some(was) = &self.head_was {
            out.push(format!(
                "pointed its worktree's HEAD at {was} (put back on its task branch)"
            ));
        }
        if self.config_restored {
            out.push("changed its worktree's git config.worktree (put back)".into());
        }
        if !self.planted.is_empty() {
            out.push(format!(
                "planted links or FIFOs in its git metadata (removed): {}",
                self.planted.join(", ")
            ));
        }
        if !self.stray_refs.is_empty() {
            out.push(format!(
                "made branches other than its task's (ignored): task/{}",
                self.stray_refs.join(", task/")
            ));
        }
        if let Some(BranchSync::Diverged { kept_as, .. }) = &self.branch {
            out.push(format!(
                "committed while the task branch moved elsewhere (its commits are kept as {kept_as})"
            ));
        }
        out
    }
}

impl PrivateStore {
    /// A fresh private store under `dir` for a run of `who` on `task` in `worktree`: an
    /// empty object store whose alternate is the repository's, the task branch's ref and
    /// reflog copied.
    pub fn prepare(
        repo: &Repo,
        dir: &Path,
        task: &TaskId,
        worktree: &Path,
        who: &str,
    ) -> Result<PrivateStore, GitError> {
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| GitError::Io {
                action,
                path,
                source,
            }
        };
        let common = repo.common_dir();
        let mut paths = PrivateGit {
            objects: dir.join("objects"),
            refs: dir.join("refs"),
            other_tasks: Vec::new(),
            logs: dir.join("logs"),
        };
        for d in [&paths.objects, &paths.refs, &paths.logs] {
            match std::fs::remove_dir_all(d) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("empty", d)(e));
                }
                _ => {}
            }
        }
        let info = paths.objects.join("info");
        for d in [&info, &paths.refs, &paths.logs] {
            std::fs::create_dir_all(d).map_err(io("create", d))?;
        }
        // Its own to change: only what the run sees depends on it (liza copies object
        // files out of the store and reads nothing else there).
        std::fs::write(info.join("alternates"), alternates(&common)).map_err(io("write", &info))?;
        let (tip, log) = repo.task_ref_and_log(task);
        let name = task.as_str();
        if let Some(tip) = &tip {
            std::fs::write(paths.refs.join(name), format!("{tip}\n"))
                .map_err(io("write", &paths.refs))?;
        }
        std::fs::write(paths.logs.join(name), &log).map_err(io("write", &paths.logs))?;
        // The other tasks' loose branches: mount points here, shown read-only.
        let real_refs = common.join("refs/heads/task");
        for entry in std::fs::read_dir(&real_refs)
            .into_iter()
            .flatten()
            .flatten()
        {
            let other = entry.file_name().to_string_lossy().into_owned();
            if other != name && entry.path().is_file() && TaskId::parse(&other).is_ok() {
                std::fs::write(paths.refs.join(&other), "").map_err(io("write", &paths.refs))?;
                paths.other_tasks.push(other);
            }
        }
        // Mount points inside the (read-only) git directory.
        for d in [
            common.join("refs/heads/task"),
            common.join("logs/refs/heads/task"),
        ] {
            std::fs::create_dir_all(&d).map_err(io("create", &d))?;
        }
        let config_worktree =
            own_git_dir(worktree).and_then(|d| std::fs::read(d.join("config.worktree")).ok());
        Ok(PrivateStore {
            paths,
            task: task.clone(),
            worktree: worktree.to_path_buf(),
            baseline: tip,
            known_lines: log.lines().count(),
            config_worktree,
            who: who.to_owned(),
            reported: Vec::new(),
            found: Vec::new(),
        })
    }

    /// The private branch's tip as the run left it (progress is seen before a sync).
    pub fn private_tip(&self) -> Option<String> {
        read_plain(&self.paths.refs.join(self.task.as_str()), 4096).map(|t| t.trim().to_owned())
    }

    /// The private branch's tip, or — when the run's git packed its refs into a
    /// `packed-refs` that went with its sandbox (`git pack-refs`, `git gc`) — the last one
    /// its reflog names.
    fn tip_or_last_logged(&self, log: &str) -> Option<(String, bool)> {
        if let Some(tip) = self.private_tip().filter(|t| !t.starts_with("ref:")) {
            return Some((tip, false));
        }
        let last = log.lines().skip(self.known_lines).last()?;
        let (head, _) = last.split_once('\t').unwrap_or((last, ""));
        Some((head.split_whitespace().nth(1)?.to_owned(), true))
    }

    /// Brings the run's work into the repository: its objects (checked), its branch
    /// (replayed by compare-and-swap), its worktree's HEAD kept on the task branch, its
    /// `config.worktree` as it was.
    pub fn sync(&mut self, repo: &Repo) -> Result<Synced, GitError> {
        // What the run planted where liza reads or writes next — a link, a FIFO — is
        // removed first: liza follows and waits on none of it (a reflog appended through a
        // link would write anywhere on the machine).
        let mut planted = untrusted::remove_specials(&self.paths.objects, 4);
        if let Some(own) = own_git_dir(&self.worktree) {
            planted.extend(untrusted::remove_specials(&own, 4));
        }
        let mut synced = Synced {
            imported: self.import(repo)?,
            planted,
            ..Synced::default()
        };
        let log = read_plain(&self.paths.logs.join(self.task.as_str()), 16 * 1024 * 1024)
            .unwrap_or_default();
        if let Some((tip, from_log)) = self.tip_or_last_logged(&log) {
            synced.lost_ref = from_log;
            let result = repo.replay_task_branch(
                &self.task,
                self.baseline.as_ref().map(|c| c.as_str()),
                &tip,
                &log,
                self.known_lines,
                &self.who,
            )?;
            match &result {
                BranchSync::Moved { to, .. } => {
                    self.baseline = Some(to.clone());
                    self.known_lines = log.lines().count();
                }
                BranchSync::Diverged { .. } => {
                    // The private copy starts again from the real branch.
                    let (tip, log) = repo.task_ref_and_log(&self.task);
                    if let Some(tip) = &tip {
                        let _ = untrusted::write_new(
                            &self.paths.refs.join(self.task.as_str()),
                            format!("{tip}\n").as_bytes(),
                        );
                    }
                    let _ = untrusted::write_new(
                        &self.paths.logs.join(self.task.as_str()),
                        log.as_bytes(),
                    );
                    self.baseline = tip;
                    self.known_lines = log.lines().count();
                }
                BranchSync::Unchanged | BranchSync::Unusable { .. } => {}
            }
            synced.branch = Some(result);
        }
        if self.worktree.join(".git").exists() {
            synced.head_was = repo.keep_head_on_task_branch(&self.worktree, &self.task)?;
        }
        for entry in std::fs::read_dir(&self.paths.refs)
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != self.task.as_str()
                && !self.paths.other_tasks.contains(&name)
                && !name.ends_with(".lock")
                && !self.reported.contains(&name)
            {
                self.reported.push(name.clone());
                synced.stray_refs.push(name);
            }
        }
        if let Some(dir) = own_git_dir(&self.worktree) {
            let file = dir.join("config.worktree");
            let now = std::fs::symlink_metadata(&file)
                .ok()
                .map(|_| untrusted::read_regular(&file, 1024 * 1024).unwrap_or_default());
            if now != self.config_worktree {
                synced.config_restored = true;
                // Removed, then written anew: never written through what the run left.
                let restored = match &self.config_worktree {
                    Some(bytes) => untrusted::write_new(&file, bytes),
                    None => match std::fs::symlink_metadata(&file) {
                        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&file),
                        Ok(_) => std::fs::remove_file(&file),
                        Err(_) => Ok(()),
                    },
                };
                restored.map_err(|source| GitError::Io {
                    action: "restore",
                    path: file.clone(),
                    source,
                })?;
            }
        }
        self.found.extend(synced.violations());
        Ok(synced)
    }

    /// What every sync so far found the run doing that it may not (a sync before one of
    /// its `liza` commands undoes it as well), once.
    pub fn take_violations(&mut self) -> Vec<String> {
        std::mem::take(&mut self.found)
    }

    /// The run's objects, copied out of its store (regular object files only, no link
    /// followed) into a directory of liza's, and from there into the repository, each
    /// checked against its name.
    fn import(&self, repo: &Repo) -> Result<Imported, GitError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| GitError::Io {
                action: "copy the run's objects from",
                path,
                source,
            }
        };
        let copy = tempfile::Builder::new()
            .prefix("liza-objects-")
            .tempdir()
            .map_err(io(&self.paths.objects))?;
        let refused = untrusted::copy_objects(&self.paths.objects, copy.path())
            .map_err(io(&self.paths.objects))?;
        let mut imported = repo.import_objects(copy.path())?;
        imported.forged.extend(
            refused
                .into_iter()
                .map(|r| format!("{r} (not an object file)")),
        );
        Ok(imported)
    }

    /// Empties the private object store (its objects are in the repository now).
    pub fn finish(self) {
        let _ = std::fs::remove_dir_all(&self.paths.objects);
    }

    /// The task branch the run commits to: `task/<id>`.
    pub fn branch(&self) -> String {
        task_branch(&self.task)
    }
}

/// `path`'s text, when it is a regular file (no link followed, no FIFO waited on), at
/// most `limit` bytes.
fn read_plain(path: &Path, limit: u64) -> Option<String> {
    untrusted::read_regular(path, limit).and_then(|b| String::from_utf8(b).ok())
}

/// The alternates a private store is given: the repository's objects as shown inside,
/// and the repository's own alternates as absolute paths.
fn alternates(common: &Path) -> String {
    let objects = common.join("objects");
    let mut text = format!("{SHARED_OBJECTS}\n");
    if let Ok(own) = std::fs::read_to_string(objects.join("info/alternates")) {
        for line in own
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let path = objects.join(line);
            if let Ok(path) = path.canonicalize() {
                text.push_str(&format!("{}\n", path.display()));
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A repository with a commit on `main` and task t-1's worktree.
    fn project() -> (tempfile::TempDir, Repo, TaskId, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        liza_git::testing::init(dir.path(), "main");
        liza_git::testing::commit_file(dir.path(), "a.txt", "a\n", "one");
        let repo = Repo::open(dir.path()).unwrap();
        let task = TaskId::parse("t-1").unwrap();
        let base = repo.resolve_commit("HEAD").unwrap();
        repo.create_task_worktree(dir.path(), &task, &base, "main", "test")
            .unwrap();
        let worktree = crate::git::worktree_dir(dir.path(), &task);
        (dir, repo, task, worktree)
    }

    /// What a run leaves where liza reads and writes next is never followed: a link in
    /// place of `config.worktree`, of its reflog, in its object store.
    #[test]
    fn links_a_run_plants_in_its_git_metadata_are_removed_not_followed() {
        let (dir, repo, task, worktree) = project();
        let own = own_git_dir(&worktree).unwrap();
        std::fs::write(own.join("config.worktree"), "[core]\n").unwrap();
        let scratch = dir.path().join(".liza/sandbox/coder-1/git");
        let mut store =
            PrivateStore::prepare(&repo, &scratch, &task, &worktree, "coder-1").unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "the person's file\n").unwrap();
        // The run: config.worktree and its HEAD reflog become links to the person's file,
        // its object store holds a link too.
        std::fs::remove_file(own.join("config.worktree")).unwrap();
        symlink(&victim, own.join("config.worktree")).unwrap();
        std::fs::create_dir_all(own.join("logs")).unwrap();
        let _ = std::fs::remove_file(own.join("logs/HEAD"));
        symlink(&victim, own.join("logs/HEAD")).unwrap();
        std::fs::create_dir_all(store.paths.objects.join("ab")).unwrap();
        symlink(&victim, store.paths.objects.join("ab/cdef")).unwrap();
        let synced = store.sync(&repo).unwrap();
        assert_eq!(synced.planted.len(), 3, "{:?}", synced.planted);
        assert!(synced.config_restored);
        let found = store.take_violations().join("; ");
        assert!(found.contains("planted links"), "{found}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "the person's file\n"
        );
        let config = own.join("config.worktree");
        assert!(!std::fs::symlink_metadata(&config).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(config).unwrap(), "[core]\n");
        // liza's own commit in the worktree writes a fresh reflog, not the person's file.
        std::fs::write(worktree.join("b.txt"), "b\n").unwrap();
        repo.commit_wip(&worktree, "test").unwrap();
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "the person's file\n"
        );
    }
}
