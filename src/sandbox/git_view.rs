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

/// A coder's private git store for one run.
pub struct PrivateStore {
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
    pub imported: Imported,
    pub branch: Option<BranchSync>,
    /// The branch the worktree's HEAD named before it was put back.
    pub head_was: Option<String>,
    /// The worktree's `config.worktree` was changed and is put back.
    pub config_restored: bool,
    /// Branches it made in its private `refs/heads/task/` besides its own: ignored.
    pub stray_refs: Vec<String>,
}

impl Synced {
    /// What the run did that it may not, as phrases for a role-boundary alarm.
    pub fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.imported.forged.is_empty() {
            out.push(format!(
                "wrote {} git object(s) whose content does not match their name (refused: {})",
                self.imported.forged.len(),
                self.imported.forged.join(", ")
            ));
        }
        if let Some(was) = &self.head_was {
            out.push(format!(
                "pointed its worktree's HEAD at {was} (put back on its task branch)"
            ));
        }
        if self.config_restored {
            out.push("changed its worktree's git config.worktree (put back)".into());
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
            alternates: dir.join("alternates"),
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
        // The mount point of the alternates file shown inside; empty on the host.
        std::fs::write(info.join("alternates"), "").map_err(io("write", &info))?;
        std::fs::write(&paths.alternates, alternates(&common))
            .map_err(io("write", &paths.alternates))?;
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
        std::fs::read_to_string(self.paths.refs.join(self.task.as_str()))
            .ok()
            .map(|t| t.trim().to_owned())
    }

    /// Brings the run's work into the repository: its objects (checked), its branch
    /// (replayed by compare-and-swap), its worktree's HEAD kept on the task branch, its
    /// `config.worktree` as it was.
    pub fn sync(&mut self, repo: &Repo) -> Result<Synced, GitError> {
        let mut synced = Synced {
            imported: repo.import_objects(&self.paths.objects)?,
            ..Synced::default()
        };
        if let Some(tip) = self.private_tip().filter(|t| !t.starts_with("ref:")) {
            let log = std::fs::read_to_string(self.paths.logs.join(self.task.as_str()))
                .unwrap_or_default();
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
                        let _ = std::fs::write(
                            self.paths.refs.join(self.task.as_str()),
                            format!("{tip}\n"),
                        );
                    }
                    let _ = std::fs::write(self.paths.logs.join(self.task.as_str()), &log);
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
            let now = std::fs::read(&file).ok();
            if now != self.config_worktree {
                synced.config_restored = true;
                let restored = match &self.config_worktree {
                    Some(bytes) => std::fs::write(&file, bytes),
                    None => std::fs::remove_file(&file),
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

    /// Empties the private object store (its objects are in the repository now).
    pub fn finish(self) {
        let _ = std::fs::remove_dir_all(&self.paths.objects);
    }

    pub fn branch(&self) -> String {
        task_branch(&self.task)
    }
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
